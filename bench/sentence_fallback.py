"""Does a model's choice program beat the event heads on the sentences the heads are unsure of? At which τ?

For each complaint of ``--split`` (default dev: the shipped heads were trained on the train split),
``argus.runs.batch.run_batch`` writes two EKGs of the sentence design (Stage 2 off, so only the events
differ): ``heads`` (``sentence.llm: never``) and ``model`` (``sentence.llm: always``, τ = 1.0: the
choice program decides every sentence it answers for; the heads keep the rest). Every event of the
design has one evidence sentence, so for each τ of ``TAUS`` the graph the design would write at that
τ is assembled per sentence — the model's events where the heads read the type with confidence below
τ (or wrote none), the heads' events elsewhere — and scored against gold (relaxed event F1,
``metrics.gold.match_graphs``). The τ with the best mean F1 is the model's measured τ; when no τ
beats the heads alone (τ = 0), the model is measured no better and ``sentence.llm: measured`` keeps it
out. ``--write`` records the result in the heads file's ``meta.fallback[MODEL]`` (what
``ArgusPipeline.sentence_routing`` reads).

    python bench/sentence_fallback.py --model local/smollm2 [--split dev] [--docs 6] [--write]
"""

from __future__ import annotations

import argparse
import datetime as _dt
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from argus.runs.batch import run_batch  # noqa: E402
from argus.config import ArgusConfig  # noqa: E402
from argus.experiments.stats import paired_bootstrap_ci  # noqa: E402
from argus.output.export import load_ekg  # noqa: E402
from argus.io import write_json_atomic  # noqa: E402
from argus.training.heads import record_measurement  # noqa: E402
from argus.paths import complaints_dir  # noqa: E402
from metrics.gold import GraphView, load_gold, match_graphs, to_gold_space  # noqa: E402

TAUS = (0.0, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.01)


def _run(docs, out: Path, overrides: dict) -> float:
    shutil.rmtree(out, ignore_errors=True)
    cfg = ArgusConfig.load(None, {"cache_dir": str(out / "cache"), "sentence.stage2": False, **overrides})
    t0 = time.perf_counter()
    run_batch([d / "complaint.txt" for d in docs], out, cfg, method="sentence", graphml=False)
    return time.perf_counter() - t0


def mixed_f1(heads_ekg, model_ekg, gold, tau: float) -> float:
    """Relaxed event F1 of the graph the design writes at ``tau`` (see the module docstring)."""
    hv, mv = to_gold_space(heads_ekg, gold), to_gold_space(model_ekg, gold)
    conf = {e.evidence[0]: e.confidence for e in heads_ekg.graph.events}
    sid_of_h = {e.id: e.evidence[0] for e in heads_ekg.graph.events}
    sid_of_m = {e.id: e.evidence[0] for e in model_ekg.graph.events}
    by_model = {sid_of_m[e.id] for e in mv.events}
    events = []
    for e in hv.events:  # the heads' event stays where they are sure, or where the model wrote none
        sid = sid_of_h[e.id]
        if conf.get(sid, 0.0) >= tau or sid not in by_model:
            events.append(e)
    for e in mv.events:
        sid = sid_of_m[e.id]
        if conf.get(sid, 0.0) < tau:
            events.append(e)
    for k, e in enumerate(events):
        e.id = f"X{k + 1}"
    view = GraphView(events=events, sentence_text=hv.sentence_text, sentence_order=hv.sentence_order)
    return match_graphs(view, gold, tiers=("relaxed",))["relaxed"].events.f1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="local/smollm2")
    ap.add_argument("--split", default="dev")
    ap.add_argument("--docs", type=int, default=6)
    ap.add_argument("--out", type=Path, default=Path("out/bench-sentence-fallback"))
    ap.add_argument("--write", action="store_true", help="record the result in the shipped heads file")
    args = ap.parse_args()
    root = complaints_dir(args.split)
    docs = sorted(d for d in root.iterdir() if (d / "gold.json").exists())[: args.docs]
    out = args.out / args.model.replace("/", "-")
    t_heads = _run(docs, out / "heads", {"sentence.llm": "never"})
    t_model = _run(docs, out / "model", {"lm.default.model": args.model, "sentence.llm": "always", "sentence.tau": 1.0})
    per_tau: dict[float, list[float]] = {t: [] for t in TAUS}
    calls = tokens = 0
    for d in docs:
        h, m = load_ekg(out / "heads" / f"{d.name}.ekg.json"), load_ekg(out / "model" / f"{d.name}.ekg.json")
        calls, tokens = calls + m.ledger.totals.calls, tokens + m.ledger.totals.tokens
        gold = load_gold(d)
        for t in TAUS:
            per_tau[t].append(mixed_f1(h, m, gold, t))
    means = {t: statistics.fmean(v) for t, v in per_tau.items()}
    best = max(TAUS, key=lambda t: (round(means[t], 6), -t))
    d, lo, hi = paired_bootstrap_ci(per_tau[best], per_tau[0.0])
    print(f"{args.model} on {len(docs)} {args.split} complaints: {calls} calls, {tokens:,} tokens, "
          f"{t_model:.0f} s with the model on every sentence ({t_heads:.0f} s heads alone)")
    print("| τ | relaxed event F1 (mean) |\n|---:|---:|")
    for t in TAUS:
        print(f"| {min(t, 1.0):.2f}{' (heads alone)' if t == 0 else ''} | {means[t]:.3f} |")
    verdict = None if best == 0.0 else min(best, 1.0)
    print(f"best τ {verdict}: Δ F1 vs heads alone {d:+.3f} [{lo:+.3f}, {hi:+.3f}] (95 % paired bootstrap)")
    record = {"tau": verdict, "f1_heads": round(means[0.0], 4), "f1_model": round(means[TAUS[-1]], 4),
              "f1_best": round(means[best], 4),
              "delta_ci": [round(lo, 4), round(hi, 4)], "documents": [d_.name for d_ in docs],
              "calls": calls, "tokens": tokens, "seconds_model": round(t_model, 1),
              "measured": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
              "f1_by_tau": {f"{min(t, 1.0):.2f}": round(means[t], 4) for t in TAUS}}
    write_json_atomic(out / "result.json", record)
    if args.write:
        print(f"recorded in {record_measurement('fallback', args.model, record)}")


if __name__ == "__main__":
    main()
