"""The yardsticks the designs are read against: the one-shot baseline and the no-model floor.

``oneshot``  the whole sentence-labeled FACTS text in one call of the one-shot program;
``floor``    no language model (``argus.designs.floor``): one keyword-typed event per fact sentence and the
             caption's parties, behind the fact classifier alone.

Each builds one graph over the whole narrative and grounds it as the single chunk ``C1``.
"""

from __future__ import annotations

from pathlib import Path

from argus.designs.run import DocumentRun, Pipeline, assemble, document_run
from argus.text.documents import Document, RawDocument
from argus.gate.facts import gate_facts
from argus.designs.floor import floor_graph
from argus.graph.grounding import Aligner, ground_items
from argus.models.ledger import CostLedger
from argus.graph.merge import merge_minigraphs
from argus.graph.schema import CausalEdge, Chunk, DocumentEKG, EventGraph, MiniGraph, TemporalEdge
from argus.graph.validation import repair_graph


def oneshot(pipe: Pipeline, source: RawDocument | str | Path, ledger: CostLedger | None = None) -> DocumentEKG:
    """The one-shot baseline: the whole sentence-labeled FACTS text in one call."""
    with document_run(pipe, source, ledger, need_sentences=False) as (doc, run):
        facts = pipe.fact_sentences(doc)
        ids = [s.id for s in facts]
        with run.timed("oneshot"):
            with pipe.calling("oneshot", "OneShotExtractor", run):
                res = pipe.programs.oneshot(facts_text=doc.labeled(facts), sentence_ids=ids)
        out = res.outputs or {"entities": [], "events": [], "temporal_edges": [], "causal_edges": []}
        g = EventGraph.model_construct(
            entities=out["entities"], events=out["events"],
            # unvalidated on purpose: repair_graph grounds evidence-less edges in their events
            temporal_edges=[TemporalEdge.model_construct(**e.model_dump()) for e in out["temporal_edges"]],
            causal_edges=[CausalEdge.model_construct(**e.model_dump()) for e in out["causal_edges"]],
        )
        g, issues = repair_graph(g, set(ids))
        return _one_graph(pipe, doc, run, "oneshot", g, ids, {"oneshot": res.attempts},
                          [f"oneshot: {e}" for e in res.errors] + issues, "whole narrative (one-shot)")


def floor(pipe: Pipeline, source: RawDocument | str | Path) -> DocumentEKG:
    """The floor (``argus.designs.floor``): no language model; one keyword-typed event per fact sentence and
    the caption's parties. The fact gate runs its classifier alone."""
    raw = pipe.read(source)
    run = DocumentRun(raw.doc_id, CostLedger())
    with run.timed("preprocess"):
        doc = pipe.preprocess(raw)
    with run.timed("fact_gate"):
        doc, report = gate_facts(doc, pipe.classifier, mode="classifier", tau=pipe.config.facts.tau)
    run.warnings += report.warnings
    ids = [s.id for s in pipe.fact_sentences(doc)]
    with run.timed("floor"):
        g = floor_graph(doc, ids)
    return _one_graph(pipe, doc, run, "floor", g, ids, {}, [], "whole narrative (floor)")


def _one_graph(pipe: Pipeline, doc: Document, run: DocumentRun, method: str, g: EventGraph, ids: list[str],
               attempts: dict, issues: list[str], theme: str) -> DocumentEKG:
    """An EKG from one graph over the whole narrative (one chunk C1), grounded like any mini-graph."""
    grounded = ground_items(g, Aligner.for_document(doc), ids, stage=method, prefix="C1:",
                            keep_ungrounded=pipe.config.extraction.keep_ungrounded)
    mg = MiniGraph(chunk_id="C1", graph=grounded.graph, attempts=attempts, issues=issues, spans=grounded.spans,
                   rejected=grounded.rejected, ungrounded=grounded.ungrounded)
    chunks = [Chunk(id="C1", sentence_ids=ids, theme=theme)] if ids else []
    with run.timed("merge"):
        graph, log = merge_minigraphs([mg])
        graph, rejected = pipe.ground(doc, graph, chunks, stage=method)
    return assemble(pipe.config, doc, run, method, chunks, [mg], graph, log, rejected)
