"""Measure preprocessing against the gold annotation of ../shared/data/us_complaints.

Prints, per split and segmenter: sentence segmentation (exact-span F1 and end-boundary F1 against
the gold sentences), FACTS-section detection (precision / recall of gold facts-section sentences),
and — with ``--facts`` — fact classification (Fact-class precision, recall, F1, accuracy) for the
``classifier`` and ``hybrid`` modes.

    python bench/measure_preprocess.py [--split dev] [--segmenters pysbd,nupunkt,rules] [--facts]
"""

from __future__ import annotations

import argparse
import json
import time

from argus.text.documents import RawDocument
from argus.paths import complaints_dir
from argus.text.preprocess import SEGMENTERS, preprocess
from metrics.base import precision_recall_f1


def gold_sentences(gold: dict) -> list[dict]:
    return [s for sec in gold["sections"] for p in sec["paragraphs"] for s in p]


def load_split(split: str):
    for d in sorted(complaints_dir(split).iterdir()):
        if (d / "gold.json").exists():
            yield d.name, (d / "complaint.txt").read_text(encoding="utf-8"), json.loads((d / "gold.json").read_text())


def prf(tp: int, n_pred: int, n_gold: int) -> tuple[float, float, float]:
    return precision_recall_f1(tp, n_pred - tp, n_gold - tp)


def align(pred_spans, gold_spans):
    """Map each predicted sentence to the gold sentence it overlaps most (by characters)."""
    out = []
    for a, b in pred_spans:
        best, best_ov = None, 0
        for k, (c, d) in enumerate(gold_spans):
            ov = min(b, d) - max(a, c)
            if ov > best_ov:
                best, best_ov = k, ov
        out.append(best)
    return out


def measure_segmentation(split: str, segmenter: str) -> dict:
    tp_span = n_pred = n_gold = tp_end = 0
    sec_tp = sec_pred = sec_gold = 0
    seconds = 0.0
    for doc_id, text, gold in load_split(split):
        t0 = time.perf_counter()
        doc = preprocess(RawDocument(doc_id=doc_id, text=text, source=doc_id), segmenter=segmenter)
        seconds += time.perf_counter() - t0
        gs = gold_sentences(gold)
        gold_spans = {tuple(s["span"]) for s in gs}
        pred_spans = {tuple(s.span) for s in doc.sentences}
        tp_span += len(gold_spans & pred_spans)
        tp_end += len({b for _, b in gold_spans} & {b for _, b in pred_spans})
        n_pred += len(pred_spans)
        n_gold += len(gold_spans)
        # FACTS detection: a predicted narrative sentence is correct when its best-overlapping gold
        # sentence lies in a facts section.
        gspans = [tuple(s["span"]) for s in gs]
        gfacts = [s["section"] == "facts" for s in gs]
        narrative = set(doc.narrative_ids)
        preds = [s for s in doc.sentences if s.id in narrative]
        mapped = align([s.span for s in preds], gspans)
        sec_pred += len(preds)
        sec_tp += sum(1 for m in mapped if m is not None and gfacts[m])
        # recall over gold facts sentences: covered by some narrative sentence
        covered = set(m for m in mapped if m is not None)
        sec_gold += sum(gfacts)
        sec_tp_recall = sum(1 for k in covered if gfacts[k])
        sec_gold_hits = locals().setdefault("_rec", [])
        sec_gold_hits.append(sec_tp_recall)
    p, r, f = prf(tp_span, n_pred, n_gold)
    pe, re_, fe = prf(tp_end, n_pred, n_gold)
    rec_hits = sum(locals()["_rec"])
    return {
        "split": split, "segmenter": segmenter, "gold_sentences": n_gold, "pred_sentences": n_pred,
        "span_P": p, "span_R": r, "span_F1": f, "boundary_P": pe, "boundary_R": re_, "boundary_F1": fe,
        "facts_section_P": sec_tp / sec_pred if sec_pred else 0.0,
        "facts_section_R": rec_hits / sec_gold if sec_gold else 0.0,
        "seconds": seconds,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--split", default="dev,train")
    ap.add_argument("--segmenters", default=",".join(SEGMENTERS))
    args = ap.parse_args()
    import pandas as pd

    rows = [measure_segmentation(sp, sg) for sp in args.split.split(",") for sg in args.segmenters.split(",")]
    df = pd.DataFrame(rows)
    with pd.option_context("display.width", 200, "display.float_format", "{:.3f}".format):
        print(df.to_string(index=False))


if __name__ == "__main__":
    main()
