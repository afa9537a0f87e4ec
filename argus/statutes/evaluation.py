"""ToER and recall of structure-driven retrieval on the annotated decisions.

Definitions (the paper's, made explicit):

- A retrieved chunk decodes to citations (its node's, plus expansion nodes'); a gold citation is
  **hit at depth d** when some retrieved citation matches it under :func:`prefix_match` cut at d.
- **recall@k** at depth d, micro-averaged: hits over all queries ÷ gold citations over all queries
  (gold = the distinct in-graph provisions each decision cites).
- **ToER** (token-efficiency of retrieval) = recall × 1000 ÷ the corpus-wide mean chunk length (in
  words) of the chunking level – the paper's normalisation, which does not charge expansion.
- **token-charged ToER** = recall × 1000 ÷ the mean number of words actually handed on per query
  (the k chunks plus every expansion node, nested text counted once).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from argus.statutes.chunking import Chunk, chunks_for
from argus.statutes.decisions import Decision, gold_provisions
from argus.statutes.graph import StatuteGraph
from argus.statutes.model import CITATION_LEVELS, Level, ProvisionCitation, prefix_match
from argus.statutes.retrieval import EXPANSIONS, Expander, Retriever
from argus.statutes.stats import word_counts

DEFAULT_GRANULARITIES = ("code", "section", "absatz", "satz", "nummer", "buchstabe", "naive100")


def hits_at_depth(gold: Sequence[ProvisionCitation], retrieved: Sequence[ProvisionCitation], depth: Level) -> int:
    """How many gold citations some retrieved citation matches at ``depth``."""
    by_code: dict[str, list[ProvisionCitation]] = {}
    for r in retrieved:
        by_code.setdefault(r.code, []).append(r)
    return sum(1 for g in gold if any(prefix_match(g, r, depth) for r in by_code.get(g.code, ())))


def toer_at_k(
    gold: Sequence[ProvisionCitation],
    ranked: Sequence[Sequence[ProvisionCitation]],
    k: int,
    depth: Level,
    mean_chunk_words: float,
) -> float:
    """ToER of one query: prefix recall of the top-``k`` chunks' citations × 1000 ÷ mean chunk words."""
    if not gold or mean_chunk_words <= 0:
        return 0.0
    retrieved = [c for chunk in ranked[:k] for c in chunk]
    return hits_at_depth(gold, retrieved, depth) / len(gold) * 1000.0 / mean_chunk_words


@dataclass
class QueryRecord:
    doc_id: str
    group: str
    gold: list[ProvisionCitation]
    vector: np.ndarray


@dataclass
class EvaluationResult:
    """Long table of results plus the run's context (coverage, timings)."""

    results: pd.DataFrame  #: one row per (group, granularity, expansion, depth)
    coverage: pd.DataFrame  #: gold citations in / out of the graph per decision
    granularities: pd.DataFrame  #: chunks, mean words, embedding and search time per granularity

    def table(self, metric: str = "toer", group: str = "all", expansion: str = "none") -> pd.DataFrame:
        """Rows: chunking level; columns: evaluation depth (the paper's table shape)."""
        df = self.results[(self.results.group == group) & (self.results.expansion == expansion)]
        pivot = df.pivot_table(index="chunking", columns="depth", values=metric, aggfunc="first", sort=False)
        cols = [lvl.display for lvl in CITATION_LEVELS if lvl.display in pivot.columns]
        return pivot[cols]


def prepare_queries(
    sg: StatuteGraph, decisions: list[Decision], embedder, pooling: str = "mean"
) -> tuple[list[QueryRecord], pd.DataFrame]:
    rows = []
    queries = []
    for dec in decisions:
        gold, outside = gold_provisions(dec, sg.registry)
        n_prov = sum(1 for a in dec.laws if a.book and a.number)
        rows.append(
            {
                "doc_id": dec.doc_id,
                "group": dec.group,
                "law_annotations": len(dec.laws),
                "provision_citations": n_prov,
                "in_graph": n_prov - len(outside),
                "outside_graph": len(outside),
                "distinct_gold": len(gold),
                "outside_codes": ", ".join(sorted({a.book for a in outside if a.book})),
                "query_words": len(dec.query().split()),
            }
        )
        if gold:
            queries.append(
                QueryRecord(dec.doc_id, dec.group, gold, embedder.encode_query(dec.query(), pooling=pooling))
            )
    cov = pd.DataFrame(rows)
    total = cov["provision_citations"].sum()
    summary = pd.DataFrame(
        [
            {
                "doc_id": "all",
                "group": "",
                "law_annotations": int(cov["law_annotations"].sum()),
                "provision_citations": int(total),
                "in_graph": int(cov["in_graph"].sum()),
                "outside_graph": int(cov["outside_graph"].sum()),
                "distinct_gold": int(cov["distinct_gold"].sum()),
                "outside_codes": "",
                "query_words": int(cov["query_words"].sum()),
            }
        ]
    )
    cov = pd.concat([cov, summary], ignore_index=True)
    cov["coverage"] = cov["in_graph"] / cov["provision_citations"].where(cov["provision_citations"] > 0)
    return queries, cov


def evaluate(
    sg: StatuteGraph,
    decisions: list[Decision],
    embedder,
    *,
    granularities: Sequence[str] = DEFAULT_GRANULARITIES,
    k: int = 5,
    expansions: Sequence[str] = EXPANSIONS,
    index: str = "exact",
    pooling: str = "mean",
    max_cited: int = 20,
    progress: Callable[[str], None] | None = None,
) -> EvaluationResult:
    """Run retrieval for every decision at every granularity and expansion; score every depth."""
    for e in expansions:
        if e not in EXPANSIONS:
            raise ValueError(f"unknown expansion {e!r}")
    words = word_counts(sg)
    queries, coverage = prepare_queries(sg, decisions, embedder, pooling)
    expander = Expander(sg, max_cited=max_cited)
    groups = sorted({q.group for q in queries})
    rows = []
    gran_rows = []
    for gran in granularities:
        chunks: list[Chunk] = chunks_for(sg, gran)
        if progress:
            progress(f"{gran}: embedding {len(chunks)} chunks")
        t0 = time.perf_counter()
        retriever = Retriever(sg, chunks, embedder, index=index, words=words, expander=expander)
        t_embed = time.perf_counter() - t0
        mean_words = float(np.mean([c.words for c in chunks]))
        naive = chunks[0].nodes != (chunks[0].chunk_id,)
        t_search = []
        ranked_by_query = []
        for q in queries:
            t1 = time.perf_counter()
            found, scores = retriever.search_vector(q.vector, k)
            t_search.append(time.perf_counter() - t1)
            ranked_by_query.append((found, scores))
        gran_rows.append(
            {
                "chunking": gran,
                "chunks": len(chunks),
                "mean_words": round(mean_words, 1),
                "embed_seconds": round(t_embed, 1),
                "search_ms_per_query": round(1000 * float(np.mean(t_search)), 2) if t_search else 0.0,
            }
        )
        for exp in expansions:
            if naive and exp != "none":
                continue
            per_group: dict[str, dict] = {
                g: {"gold": 0, "hits": np.zeros(len(CITATION_LEVELS)), "ctx": []} for g in groups + ["all"]
            }
            for q, (found, scores) in zip(queries, ranked_by_query):
                res = retriever.decode(found, scores, exp)
                for gname in (q.group, "all"):
                    acc = per_group[gname]
                    acc["gold"] += len(q.gold)
                    acc["ctx"].append(res.context_words)
                    for j, depth in enumerate(CITATION_LEVELS):
                        acc["hits"][j] += hits_at_depth(q.gold, res.citations, depth)
            for gname, acc in per_group.items():
                if acc["gold"] == 0:
                    continue
                mean_ctx = float(np.mean(acc["ctx"]))
                for j, depth in enumerate(CITATION_LEVELS):
                    recall = acc["hits"][j] / acc["gold"]
                    rows.append(
                        {
                            "group": gname,
                            "chunking": gran,
                            "expansion": exp,
                            "depth": depth.display,
                            "queries": len(acc["ctx"]),
                            "gold": acc["gold"],
                            "hits": int(acc["hits"][j]),
                            "recall": recall,
                            "mean_chunk_words": mean_words,
                            "mean_context_words": mean_ctx,
                            "toer": recall * 1000.0 / mean_words,
                            "toer_charged": recall * 1000.0 / mean_ctx if mean_ctx else 0.0,
                        }
                    )
    return EvaluationResult(pd.DataFrame(rows), coverage, pd.DataFrame(gran_rows))


def evaluation_tables(result: EvaluationResult) -> dict[str, pd.DataFrame]:
    """The tables ``argus statutes eval`` writes: ToER / recall / token-charged ToER per group and expansion."""
    tables: dict[str, pd.DataFrame] = {
        "results": result.results,
        "coverage": result.coverage,
        "granularities": result.granularities,
    }
    df = result.results
    for group in sorted(df.group.unique(), key=lambda g: (g != "all", g)):
        for exp in [e for e in EXPANSIONS if e in set(df.expansion)]:
            for metric in ("toer", "recall", "toer_charged"):
                t = result.table(metric, group, exp).reset_index()
                tables[f"{metric}_{group}_{exp}"] = t
    return tables


def write_evaluation(result: EvaluationResult, out_dir) -> list:
    """Write every evaluation table as Markdown and CSV (atomically)."""
    from argus.statutes.stats import write_tables

    return write_tables(evaluation_tables(result), out_dir)
