"""Does a model's pair-choice program beat the edge heads on the pairs they are unsure of? At which τ?

For each complaint of ``--split`` (default dev), the sentence design runs as shipped with the heads alone
(``sentence.pair_llm: never``); its events are then read as the pair heads read them, and every candidate
pair whose P(no relation) lies within the largest τ of ``TAUS`` of its head's threshold (at most
``--max-pairs`` a complaint, the most unsure first) goes to the pair-choice program (``programs.pair_relations``)
on ``--model``, through the design's own asker (``argus.designs.sentence.design.PairAsker``), once. For each
τ the graph the design would write is then assembled from those answers (the heads' edges replaced by the
edges drawn at that τ, the dates' edges kept) and scored against gold: relaxed temporal-edge and causal-edge
F1 (``metrics.gold.match_graphs``), and their mean, the edge F1. The τ with the best mean edge F1 is the
model's measured τ; when no τ > 0 beats the heads alone, the model is measured no better and
``sentence.pair_llm: measured`` keeps it out. ``--write`` records the result in the heads file's
``meta.pair_fallback[MODEL]`` (what ``ArgusPipeline.pair_routing`` reads).

    python bench/pair_fallback.py --model local/smollm2 [--split dev] [--docs 6] [--max-pairs 24] [--write]
"""

from __future__ import annotations

import argparse
import datetime as _dt
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from argus.config import ArgusConfig  # noqa: E402
from argus.experiments.stats import paired_bootstrap_ci  # noqa: E402
from argus.io import write_json_atomic  # noqa: E402
from argus.training.heads import record_measurement  # noqa: E402
from argus.paths import complaints_dir  # noqa: E402
from metrics.gold import load_gold, match_graphs  # noqa: E402

TAUS = (0.0, 0.05, 0.1, 0.15, 0.2, 0.3)


def edge_scores(ekg, gold, temporal_edges, causal_edges) -> dict[str, float]:
    """Relaxed temporal and causal F1 of ``ekg`` with its heads' edges replaced by the given ones."""
    from argus.graph.merge import add_head_edges

    graph = ekg.graph.model_copy(deep=True)
    graph.temporal_edges = [e for e in graph.temporal_edges if e.origin != "heads"]
    graph.causal_edges = [e for e in graph.causal_edges if e.origin != "heads"]
    log: list = []
    add_head_edges(graph, "temporal", temporal_edges, log)
    add_head_edges(graph, "causal", causal_edges, log)
    t = match_graphs(ekg.model_copy(update={"graph": graph}), gold, tiers=("relaxed",))["relaxed"]
    return {"temporal_f1": t.temporal.f1, "causal_f1": t.causal.f1, "edge_f1": (t.temporal.f1 + t.causal.f1) / 2}


def measure(folder: Path, model: str, cache: Path, max_pairs: int) -> dict:
    from argus.designs.sentence import causal, temporal
    from argus.designs.sentence.design import PairAsker
    from argus.designs.sentence.pairs import PairHead, pair_events
    from argus.pipeline import ArgusPipeline

    base = {"cache_dir": str(cache), "lm.stages.stage2.model": model, "sentence.stage2": False}
    heads_pipe = ArgusPipeline(ArgusConfig.load(None, {**base, "sentence.pair_llm": "never"}))
    ekg = heads_pipe.extract(folder / "complaint.txt")
    gold = load_gold(folder)
    facts = [s for s in ekg.sentences if s.fact]
    readings = dict(zip([s.id for s in facts], heads_pipe.event_heads.read([s.text for s in facts])))
    events = pair_events(ekg.graph.events, {s.id: s.text for s in ekg.sentences},
                         {s.id: i for i, s in enumerate(ekg.sentences)}, {sid: r.p_event for sid, r in readings.items()})
    part = heads_pipe.event_heads.parts["edges"]
    heads = {"temporal": PairHead.from_json(part["temporal"]), "causal": PairHead.from_json(part["causal"])}
    model_pipe = ArgusPipeline(ArgusConfig.load(None, {**base, "sentence.pair_llm": "always", "sentence.pair_max": max_pairs}))
    memo: dict = {}
    issues: list[str] = []
    t0 = time.perf_counter()
    ask = PairAsker(model_pipe, None, max(TAUS), issues, answers=memo)
    temporal.edges(heads["temporal"], events, ask)
    causal.edges(heads["causal"], events, ask)
    seconds = time.perf_counter() - t0
    sent = ask.sent
    by_tau = {}
    for tau in TAUS:
        ask = PairAsker(model_pipe, None, tau, [], answers=memo) if tau > 0 else None
        by_tau[f"{tau:.2f}"] = edge_scores(ekg, gold, temporal.edges(heads["temporal"], events, ask),
                                           causal.edges(heads["causal"], events, ask))
    return {"doc": folder.name, "pairs_sent": sent, "pairs_answered": len(memo), "seconds_model": round(seconds, 1), "issues": issues[:5],
            "by_tau": by_tau}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="local/smollm2")
    ap.add_argument("--split", default="dev")
    ap.add_argument("--docs", type=int, default=6)
    ap.add_argument("--max-pairs", type=int, default=24)
    ap.add_argument("--out", type=Path, default=Path("out/bench-pair-fallback"))
    ap.add_argument("--write", action="store_true", help="record the result in the shipped heads file")
    args = ap.parse_args()
    folders = sorted(p for p in complaints_dir(args.split).iterdir() if (p / "gold.json").is_file())[:args.docs]
    rows = []
    for folder in folders:
        r = measure(folder, args.model, args.out / "cache", args.max_pairs)
        rows.append(r)
        print(f"{r['doc']}: {r['pairs_sent']} pairs sent, {r['pairs_answered']} answered in {r['seconds_model']} s; edge F1 "
              + ", ".join(f"τ {t} {v['edge_f1']:.3f}" for t, v in r["by_tau"].items()), flush=True)
    heads = [r["by_tau"]["0.00"]["edge_f1"] for r in rows]
    print("\n| τ | temporal F1 | causal F1 | edge F1 | Δ vs heads alone [95 % paired CI] |\n|---|---|---|---|---|")
    best, best_f1 = None, statistics.fmean(heads)
    for tau in (f"{t:.2f}" for t in TAUS):
        per = [r["by_tau"][tau]["edge_f1"] for r in rows]
        d, lo, hi = paired_bootstrap_ci(per, heads)
        mean = statistics.fmean(per)
        print(f"| {tau} | {statistics.fmean(r['by_tau'][tau]['temporal_f1'] for r in rows):.3f} | "
              f"{statistics.fmean(r['by_tau'][tau]['causal_f1'] for r in rows):.3f} | {mean:.3f} | "
              f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}] |")
        if tau != "0.00" and mean > best_f1 and lo > 0:
            best, best_f1 = float(tau), mean
    record = {"tau": best, "f1_heads": round(statistics.fmean(heads), 4),
              "f1_model": round(max(statistics.fmean(r["by_tau"][f"{t:.2f}"]["edge_f1"] for r in rows)
                                    for t in TAUS if t > 0), 4),
              "documents": [r["doc"] for r in rows], "pairs_sent": sum(r["pairs_sent"] for r in rows),
              "pairs_answered": sum(r["pairs_answered"] for r in rows),
              "seconds_model": round(sum(r["seconds_model"] for r in rows), 1),
              "measured": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
              "f1_by_tau": {t: round(statistics.fmean(r["by_tau"][t]["edge_f1"] for r in rows), 4)
                            for t in rows[0]["by_tau"]} if rows else {}}
    print(f"\n{args.model}: " + (f"measured τ {best}" if best is not None else "measured no better than the edge heads"))
    args.out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(args.out / "result.json", {"record": record, "rows": rows})
    if args.write:
        print(f"recorded in {record_measurement('pair_fallback', args.model, record)}")


if __name__ == "__main__":
    main()
