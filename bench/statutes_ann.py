"""Benchmark: retrieval latency per granularity, and exact top-k versus the IVF approximate index.

1. Exact search against IVF on the real Satz vectors of the retrieval corpus (the codes the
   decisions cite; run bench/statutes_retrieval.py first so the vectors are cached): build time,
   mean / p95 latency, and the overlap of the IVF top-k with the exact top-k.
2. Latency per query at every granularity at the size of the 83-code subset. Search time depends
   only on the number of vectors and their dimension, so each granularity's cached vectors are
   resampled to the chunk count that granularity has in the 83-code graph. The query embedding
   (mean of 150-word windows of a Tatbestand, uncached) is timed separately: it dominates.

    python bench/statutes_ann.py
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from argus.statutes.chunking import chunks_for
from argus.statutes.codes import registry_from_sources
from argus.statutes.corpus import subset_sources
from argus.statutes.decisions import cited_codes, load_decisions
from argus.statutes.embeddings import Embedder
from argus.statutes.evaluation import DEFAULT_GRANULARITIES
from argus.statutes.graph import build_statute_graph
from argus.statutes.retrieval import ExactIndex, IVFIndex


def _latency(index, queries, k: int, truth=None) -> dict:
    lat, overlap = [], []
    for i, q in enumerate(queries):
        t1 = time.perf_counter()
        ids, _ = index.search(q, k)
        lat.append(time.perf_counter() - t1)
        if truth is not None:
            overlap.append(len(set(ids) & truth[i]) / k)
    out = {"mean_ms": round(1000 * float(np.mean(lat)), 3), "p95_ms": round(1000 * float(np.percentile(lat, 95)), 3)}
    if truth is not None:
        out[f"recall@{k}_vs_exact"] = round(float(np.mean(overlap)), 4)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--granularity", default="satz", help="granularity for the exact-vs-IVF comparison")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--model", default=None)
    ap.add_argument("--random-queries", type=int, default=500)
    args = ap.parse_args()
    decisions = load_decisions()
    cited = cited_codes(decisions, registry_from_sources(subset_sources()))
    sg = build_statute_graph(subset_sources(cited))
    emb = Embedder(args.model)
    rng = np.random.default_rng(0)

    # 1. exact against IVF on real vectors
    chunks = chunks_for(sg, args.granularity)
    t0 = time.perf_counter()
    vectors = emb.encode([c.embedding_input for c in chunks])
    print(
        f"{len(chunks)} {args.granularity} chunks of {len(cited)} codes, vectors {vectors.shape} in {time.perf_counter() - t0:.1f} s"
    )
    queries = [emb.encode_query(d.query()) for d in decisions]
    queries += list(vectors[rng.choice(len(vectors), size=min(args.random_queries, len(vectors)), replace=False)])
    exact = ExactIndex(vectors)
    truth = [set(exact.search(q, args.k)[0]) for q in queries]
    rows = [{"index": "exact", "build_s": 0.0, **_latency(exact, queries, args.k, truth)}]
    n_lists = int(round(np.sqrt(len(vectors))))
    t2 = time.perf_counter()
    ivf = IVFIndex(vectors, n_lists=n_lists, n_probe=1)
    build = round(time.perf_counter() - t2, 2)
    for probe in (1, 4, 8, 16, 32):
        ivf.n_probe = min(probe, ivf.n_lists)
        rows.append(
            {
                "index": f"ivf lists={ivf.n_lists} probe={ivf.n_probe}",
                "build_s": build,
                **_latency(ivf, queries, args.k, truth),
            }
        )
    print(f"\n## exact vs IVF, {args.granularity}, k={args.k}, {len(queries)} queries\n")
    print(pd.DataFrame(rows).to_markdown(index=False))

    # 2. latency per granularity at the 83-code scale
    full = build_statute_graph(subset_sources(), link_citations=False)
    plain = Embedder(args.model, cache_dir=None)
    t3 = time.perf_counter()
    for d in decisions:
        plain.encode_query(d.query())
    query_ms = 1000 * (time.perf_counter() - t3) / len(decisions)
    rows = []
    for gran in DEFAULT_GRANULARITIES:
        n83 = len(chunks_for(full, gran))
        vecs = emb.encode([c.embedding_input for c in chunks_for(sg, gran)])
        big = vecs[rng.integers(0, len(vecs), size=n83)]
        qs = list(big[rng.choice(n83, size=min(200, n83), replace=False)])
        row = {"chunking": gran, "chunks (83 codes)": n83, "exact": _latency(ExactIndex(big), qs, 5)["mean_ms"]}
        if n83 >= 1000:
            row["ivf probe=8"] = _latency(IVFIndex(big, n_probe=8), qs, 5)["mean_ms"]
        rows.append(row)
    print(
        f"\n## search latency per query (ms, k=5) at the 83-code size; query embedding: {query_ms:.0f} ms per decision\n"
    )
    print(pd.DataFrame(rows).to_markdown(index=False))


if __name__ == "__main__":
    main()
