"""Benchmark: structure-driven retrieval and ToER on the 15 annotated decisions (83-code graph).

Builds the statute graph, embeds every chunk set (cached in .argus_cache, so reruns are fast),
retrieves top-k for each decision's query and prints the ToER / recall / token-charged ToER
tables, the gold coverage and the per-granularity retrieval latency. Tables are also written as
Markdown/CSV to --out.

    python bench/statutes_retrieval.py --out runs/statutes-eval
"""

from __future__ import annotations

import argparse
import time

from argus.statutes.corpus import subset_sources
from argus.statutes.codes import registry_from_sources
from argus.statutes.decisions import cited_codes, load_decisions
from argus.statutes.embeddings import Embedder
from argus.statutes.evaluation import DEFAULT_GRANULARITIES, evaluate, write_evaluation
from argus.statutes.graph import build_statute_graph
from argus.statutes.stats import to_markdown


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="runs/statutes-eval")
    ap.add_argument("--granularities", default=",".join(DEFAULT_GRANULARITIES))
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--model", default=None, help="sentence-transformers model (default: offline MiniLM)")
    ap.add_argument("--index", default="exact", choices=["exact", "ivf"])
    ap.add_argument("--codes", default=None, help="comma-separated codes for the retrieval corpus (overrides --corpus)")
    ap.add_argument(
        "--corpus",
        choices=["cited", "all"],
        default="cited",
        help="cited: the codes the decisions cite (27 of 83; the paper's graph likewise held the codes its cases cite); all: the 83 codes",
    )
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    args = ap.parse_args()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    if args.codes:
        codes = [c for c in args.codes.split(",")]
    elif args.corpus == "cited":
        codes = cited_codes(load_decisions(), registry_from_sources(subset_sources()))
    else:
        codes = None
    sg = build_statute_graph(subset_sources(codes))
    print(f"retrieval corpus: {len(sg.codes)} codes: {', '.join(sg.codes)}")
    print(
        f"graph: {sg.graph.number_of_nodes()} nodes, {sg.graph.number_of_edges()} edges ({time.perf_counter() - t0:.1f} s)"
    )
    embedder = Embedder(args.model)
    result = evaluate(
        sg,
        load_decisions(),
        embedder,
        granularities=[g for g in args.granularities.split(",") if g],
        k=args.k,
        index=args.index,
        progress=lambda msg: print(f"[{time.perf_counter() - t0:7.0f} s] {msg}", flush=True),
    )
    write_evaluation(result, args.out)
    print("\n## coverage\n" + to_markdown(result.coverage, ".3f"))
    print(
        "\n## granularities (chunks, mean words, embedding time, search latency)\n" + to_markdown(result.granularities)
    )
    for group in ("all", "tatbestand", "stripped"):
        for exp in ("none", "parent", "cited", "hybrid"):
            for metric in ("toer", "recall", "toer_charged"):
                if group != "all" and exp not in ("none", "hybrid"):
                    continue
                try:
                    table = result.table(metric, group, exp)
                except KeyError:
                    continue
                print(
                    f"\n## {metric} | group={group} | expansion={exp} | k={args.k}\n" + to_markdown(table.reset_index())
                )
    print(f"\ntotal {time.perf_counter() - t0:.0f} s; tables in {args.out}")


if __name__ == "__main__":
    main()
