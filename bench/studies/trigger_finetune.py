"""Event types read from the gold trigger by MiniLM with its top layers fine-tuned, against the shipped trigger
type model (``argus.designs.sentence.types.TriggerTypes``), cross-validated over the annotated complaints.

Issue 47 asked to measure the fine-tuned encoder again with three times the event sentences. Fine-tuning all six
layers for each of six folds does not fit on 2 cores (``bench/types.py --finetune`` took 498 s for 18
complaints); here the bottom layers stay frozen, their output is computed once for every sentence, and only the
top ``--layers`` layers and a linear layer are trained in each fold (AdamW 5e-5 / 2e-3, batches of 16, square-root
class weights, seeded). The classifier reads the trigger's first token and the sentence's mean-pooled vector.

On the same style-dealt folds (``argus.paths.style_folds``), for every gold event whose trigger is found in its
sentence, the type read from the gold trigger by:

``trigger model``       the ``types`` part's model, fitted on the fold's training events (shipped);
``fine-tuned``          the fine-tuned top layers;
``fine-tuned x model``  their distributions multiplied (log-linear, equal weights).

Printed: accuracy per rung (mean over complaints, 95 % bootstrap interval), and the paired difference to the
trigger model (95 % paired bootstrap interval over complaints), with the seconds each fold took.

    python bench/studies/trigger_finetune.py [--layers 2] [--epochs 4] [--folds 6] [--json out.json]
"""

from __future__ import annotations

import argparse
import collections
import copy
import json
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def _token_of(offsets, start: int) -> int:
    """The index of the first sub-word token covering the character ``start`` (the trigger's first word)."""
    for k, (a, b) in enumerate(offsets):
        if b > a and a <= start < b:
            return k
    return next((k for k, (a, b) in enumerate(offsets) if b > a and a >= start), 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=2, help="top layers fine-tuned (the rest frozen)")
    ap.add_argument("--stack", type=int, default=0,
                    help="instead: every layer frozen, and this many new layers (copies of the last) trained on top")
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--folds", type=int, default=6)
    ap.add_argument("--json", type=Path, help="write the per-complaint accuracies here")
    args = ap.parse_args()

    import torch
    from transformers import AutoModel, AutoTokenizer

    from argus.designs.sentence.types import TriggerTypes
    from argus.experiments.stats import paired_bootstrap_ci
    from argus.models.embeddings import resolve_encoder_path
    from argus.paths import style_folds
    from argus.training.heads import annotated_folders
    from argus.training.types import fit_trigger_types, gold_triggers
    from metrics.gold import load_gold
    from optimizers.frontier.pareto import bootstrap_ci

    torch.manual_seed(0)
    torch.set_num_threads(2)
    t0 = time.perf_counter()
    folders = annotated_folders(("train", "dev"))
    ids = [f.name for f in folders]
    rows = [gold_triggers([f], [load_gold(f)]) for f in folders]  # per complaint: (sentence, span, type)

    path = resolve_encoder_path("embedded")
    tok = AutoTokenizer.from_pretrained(path)
    enc = AutoModel.from_pretrained(path, attn_implementation="eager")
    enc.eval()
    n_layers = len(enc.encoder.layer)
    frozen = n_layers if args.stack else n_layers - args.layers
    trained = enc.encoder.layer[n_layers - args.stack:] if args.stack else enc.encoder.layer[frozen:]

    # every sentence's frozen layers once: (hidden states after layer ``frozen``, mask, trigger token)
    flat = [(i, text, span, t) for i, rs in enumerate(rows) for text, span, t in rs]
    cached = []
    with torch.no_grad():
        for s in range(0, len(flat), 64):
            batch = flat[s:s + 64]
            b = tok([r[1] for r in batch], padding=True, truncation=True, max_length=128, return_tensors="pt",
                    return_offsets_mapping=True)
            offsets = b.pop("offset_mapping").tolist()
            out = enc(**b, output_hidden_states=True)
            h = out.hidden_states[frozen]
            for j, r in enumerate(batch):
                n = int(b["attention_mask"][j].sum())
                cached.append((h[j, :n].clone(), _token_of(offsets[j][:n], r[2][0])))
            if s == 0 and not args.stack:  # the top layers run by hand give the model's own output
                check = _top(enc.encoder.layer[frozen:], h, b["attention_mask"])
                assert torch.allclose(check, out.last_hidden_state, atol=1e-4), "top layers by hand differ"
    print(f"frozen layers 1-{frozen} computed for {len(flat)} triggers in {time.perf_counter() - t0:.0f} s", flush=True)

    by_doc = collections.defaultdict(list)
    for k, (i, _, _, _) in enumerate(flat):
        by_doc[i].append(k)
    acc = {"trigger model": {}, "fine-tuned": {}, "fine-tuned x model": {}}
    for fold, (tr, te) in enumerate(style_folds(len(folders), args.folds, ids)):
        t1 = time.perf_counter()
        train = [k for i in tr for k in by_doc[i]]
        test = [k for i in te for k in by_doc[i]]
        # the shipped trigger model, fitted on the fold's training events
        model = TriggerTypes(fit_trigger_types([(flat[k][1], flat[k][2], flat[k][3]) for k in train]))
        pm = model.probs([flat[k][1] for k in test], [flat[k][2] for k in test])
        # the fine-tuned top layers
        classes = model.classes
        counts = collections.Counter(flat[k][3] for k in train)
        weight = torch.tensor([(len(train) / (len(classes) * max(1, counts[c]))) ** 0.5 for c in classes],
                              dtype=torch.float32)
        top = copy.deepcopy(trained)
        head = torch.nn.Linear(2 * enc.config.hidden_size, len(classes))
        opt = torch.optim.AdamW([{"params": top.parameters(), "lr": 5e-5}, {"params": head.parameters(), "lr": 2e-3}],
                                weight_decay=0.01)
        rng = random.Random(fold)
        order = list(train)
        top.train()
        for _ in range(args.epochs):
            rng.shuffle(order)
            for s in range(0, len(order), 16):
                batch = order[s:s + 16]
                logits = head(_read(top, [cached[k] for k in batch]))
                loss = torch.nn.functional.cross_entropy(
                    logits, torch.tensor([classes.index(flat[k][3]) for k in batch]), weight=weight)
                opt.zero_grad()
                loss.backward()
                opt.step()
        top.eval()
        with torch.no_grad():
            pf = torch.cat([torch.softmax(head(_read(top, [cached[k] for k in test[s:s + 64]])), -1)
                            for s in range(0, len(test), 64)]).numpy()
        both = np.log(np.clip(pf, 1e-9, 1)) + np.log(np.clip(pm, 1e-9, 1))
        for rung, p in (("trigger model", pm), ("fine-tuned", pf), ("fine-tuned x model", both)):
            for k, j in zip(test, p.argmax(axis=1)):
                acc[rung].setdefault(ids[flat[k][0]], []).append(classes[j] == flat[k][3])
        print(f"fold {fold + 1}: {len(train)} training triggers, {len(test)} held out, {time.perf_counter() - t1:.0f} s",
              flush=True)

    docs = sorted(acc["trigger model"])
    mean = {r: [statistics.fmean(acc[r][d]) for d in docs] for r in acc}
    trained_how = (f"{args.stack} new layer(s) on the frozen encoder" if args.stack
                   else f"top {args.layers} of {n_layers} layers fine-tuned")
    print(f"\n{len(docs)} complaints, {sum(len(v) for v in acc['trigger model'].values())} gold triggers; {trained_how}, "
          f"{args.epochs} epochs; {time.perf_counter() - t0:.0f} s in all\n")
    print("| rung | types right [95 % CI] | Δ vs trigger model [95 % paired CI] |\n|---|---|---|")
    for r in acc:
        lo, hi = bootstrap_ci(mean[r])
        line = f"| {r} | {statistics.fmean(mean[r]):.3f} [{lo:.3f}, {hi:.3f}] |"
        if r != "trigger model":
            d, dlo, dhi = paired_bootstrap_ci(mean[r], mean["trigger model"])
            line += f" {d:+.3f} [{dlo:+.3f}, {dhi:+.3f}] |"
        else:
            line += " – |"
        print(line)
    if args.json:
        args.json.write_text(json.dumps({"layers": args.layers, "epochs": args.epochs,
                                         "per_complaint": {r: dict(zip(docs, mean[r])) for r in mean}}, indent=1))


def _top(layers, h, mask):
    """``layers`` run on hidden states ``h`` with the attention ``mask`` (1 = token)."""
    import torch

    ext = (1.0 - mask[:, None, None, :].to(h.dtype)) * torch.finfo(h.dtype).min
    for layer in layers:
        h = layer(h, attention_mask=ext)
    return h


def _read(layers, items):
    """[trigger token vector, mean-pooled vector] of each cached sentence after ``layers``."""
    import torch

    n = max(h.shape[0] for h, _ in items)
    h = torch.zeros(len(items), n, items[0][0].shape[1])
    mask = torch.zeros(len(items), n)
    for j, (x, _) in enumerate(items):
        h[j, :x.shape[0]] = x
        mask[j, :x.shape[0]] = 1
    out = _top(layers, h, mask)
    trig = torch.stack([out[j, t] for j, (_, t) in enumerate(items)])
    m = mask.unsqueeze(-1)
    return torch.cat([trig, (out * m).sum(1) / m.sum(1)], dim=1)


if __name__ == "__main__":
    main()
