"""Benchmark: how long the metrics take on a 200-event graph (target: structural < 50 ms).

The graph is built from the real gold graphs (train + dev), concatenated with renumbered entity,
event and sentence ids until it has 200 events (with all their edges), then scored:

- structural, from the raw dict (pydantic validation of every item included) and from the model;
- structural on the same graph with a BEFORE cycle and a causal self-loop added;
- gold matching (exact + relaxed tiers) of the graph against itself.

    python bench/measure_metrics.py [--events 200] [--repeat 50]
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from argus.paths import complaints_dir  # noqa: E402


def big_graph(n_events: int) -> tuple[dict, list[str]]:
    graphs = []
    for split in ("train", "dev"):
        root = complaints_dir(split)
        for d in sorted(root.iterdir()) if root.exists() else []:
            if (d / "gold.json").exists():
                graphs.append(json.loads((d / "gold.json").read_text(encoding="utf-8"))["graph"])
    if not graphs:
        raise SystemExit("no gold graphs found (set ARGUS_DATA_ROOT)")
    out = {"entities": [], "events": [], "temporal_edges": [], "causal_edges": []}
    e_off = ev_off = s_off = 0
    for g in graphs:
        if len(out["events"]) >= n_events:
            break
        sid = lambda s: f"S{int(s[1:]) + s_off}"  # noqa: E731
        for e in g["entities"]:
            out["entities"].append({**e, "id": f"E{int(e['id'][1:]) + e_off}"})
        keep = {}
        for ev in g["events"]:
            if len(out["events"]) >= n_events:
                break
            new = f"EV{int(ev['id'][2:]) + ev_off}"
            keep[ev["id"]] = new
            out["events"].append({
                **ev, "id": new, "evidence": [sid(s) for s in ev["evidence"]],
                "participants": [{**p, "entity": f"E{int(p['entity'][1:]) + e_off}"} for p in ev["participants"]],
            })
        for kind in ("temporal_edges", "causal_edges"):
            for e in g[kind]:
                if e["source"] in keep and e["target"] in keep:
                    out[kind].append({**e, "source": keep[e["source"]], "target": keep[e["target"]],
                                      "evidence": [sid(s) for s in e["evidence"]]})
        e_off += max(int(e["id"][1:]) for e in g["entities"])
        ev_off += max(int(e["id"][2:]) for e in g["events"])
        s_off += 1000
    sentences = sorted({s for ev in out["events"] for s in ev["evidence"]} | {s for k in ("temporal_edges", "causal_edges") for e in out[k] for s in e["evidence"]})
    return out, sentences


def timed(fn, repeat: int) -> dict:
    fn()  # warm-up
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return {"median_ms": round(statistics.median(times), 2), "p95_ms": round(sorted(times)[int(0.95 * (len(times) - 1))], 2),
            "max_ms": round(max(times), 2)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=50)
    args = ap.parse_args()

    from argus.graph.schema import EventGraph
    from metrics.structural import structural_score

    graph, sentences = big_graph(args.events)
    model = EventGraph.model_validate(graph)
    corrupted = copy.deepcopy(graph)
    t = [e for e in corrupted["temporal_edges"] if e["relation"] == "BEFORE"][0]
    corrupted["temporal_edges"].append({**t, "source": t["target"], "target": t["source"]})
    ev0 = corrupted["events"][0]
    corrupted["causal_edges"].append({"source": ev0["id"], "target": ev0["id"], "relation": "CAUSES", "evidence": ev0["evidence"]})
    size = {k: len(v) for k, v in graph.items()}
    print(f"graph: {size}, {len(sentences)} evidence sentences")
    rows = {
        "structural (dict, validates every item)": timed(lambda: structural_score(graph, allowed_sentences=sentences, fact_sentences=sentences), args.repeat),
        "structural (EventGraph model)": timed(lambda: structural_score(model, allowed_sentences=sentences, fact_sentences=sentences), args.repeat),
        "structural (dict, cycle + self-loop)": timed(lambda: structural_score(corrupted, allowed_sentences=sentences, fact_sentences=sentences), args.repeat),
    }
    try:
        from metrics.gold import match_graphs

        rows["gold matching exact+relaxed (vs itself)"] = timed(lambda: match_graphs(model, model), max(5, args.repeat // 5))
    except ImportError:
        pass
    width = max(map(len, rows))
    print(f"{'metric':<{width}}  median_ms  p95_ms  max_ms")
    for name, r in rows.items():
        print(f"{name:<{width}}  {r['median_ms']:>9}  {r['p95_ms']:>6}  {r['max_ms']:>6}")
    s = structural_score(corrupted, allowed_sentences=sentences, fact_sentences=sentences)
    print("corrupted graph:", s.feedback.splitlines()[0])


if __name__ == "__main__":
    main()
