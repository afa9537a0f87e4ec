"""The chunked design: the fact sentences cut into chunks, each extracted in two stages, then merged.

``plan_chunks``    the chunker program proposes episode boundaries; ``argus.designs.chunking`` repairs the plan
                   (fixed windows where the program fails or the narrative is short);
``extract_chunk``  Stage 1 (entities and events, repaired, then grounded in the chunk's sentences) and
                   Stage 2 (``relate``: temporal and causal edges between those events, repaired);
``extract``        the whole document: chunks in parallel, merging with the resolver, grounding.

``relate`` also serves the sentence design, which runs Stage 2 over each batch of sentences.
"""

from __future__ import annotations

import json
from pathlib import Path

from argus.designs.chunking import repair_chunks, with_themes
from argus.models.concurrency import ProviderFault
from argus.designs.run import DocumentRun, Pipeline, assemble, document_run
from argus.text.documents import Document, RawDocument
from argus.designs.sentence.entities import known_parties
from argus.errors import LMCallError
from argus.graph.grounding import Aligner, chunk_phrases, ground_items
from argus.models.ledger import CostLedger
from argus.graph.schema import FRAME_HINTS, Chunk, DocumentEKG, EventGraph, MiniGraph
from argus.graph.validation import repair_stage1, repair_stage2


def plan_chunks(pipe: Pipeline, doc: Document, run: DocumentRun | None = None) -> tuple[list[Chunk], list[str]]:
    """The chunks of the document's fact sentences, with what the chunker and the repair reported."""
    cfg = pipe.config.chunking
    facts = pipe.fact_sentences(doc)
    ids = [s.id for s in facts]
    plan: list[list[str]] = []
    themes: list[tuple[list[str], str]] = []
    issues: list[str] = []
    if cfg.use_llm and len(ids) > cfg.max_sentences:
        try:
            with pipe.calling("chunker", "SemanticChunker", run):
                res = pipe.programs.chunker(sentences=[(s.id, s.text) for s in facts], max_chunk_sentences=cfg.max_sentences)
            if res.outputs is not None:
                plan = [list(c.sentence_ids) for c in res.outputs["chunks"]]
                themes = [(list(c.sentence_ids), c.theme) for c in res.outputs["chunks"]]
            issues += [f"chunker: {e}" for e in res.errors]
        except ProviderFault:
            raise
        except LMCallError as exc:
            issues.append(f"chunker failed ({exc}); using fixed windows")
    chunks, repairs = repair_chunks(plan, ids, max_sentences=cfg.max_sentences, min_sentences=cfg.min_sentences, overlap=cfg.overlap)
    return with_themes(chunks, themes), issues + repairs


def extract_chunk(pipe: Pipeline, doc: Document, chunk: Chunk, run: DocumentRun | None = None) -> MiniGraph:
    """Stage 1, grounding, then Stage 2 on one chunk."""
    idx = doc.index()
    text = doc.labeled([idx[sid] for sid in chunk.sentence_ids])
    allowed = set(chunk.sentence_ids)
    hints = ""
    if pipe.config.extraction.framenet_hints:
        hints = "\n".join(f"{k}: {v}" for k, v in FRAME_HINTS.items())
    phrases = None
    if pipe.grounded_decoding:
        phrases = chunk_phrases(idx[sid].text for sid in chunk.sentence_ids)
    with pipe.calling("stage1", "Stage1Extractor", run):
        r1 = pipe.programs.stage1(chunk_text=text, sentence_ids=chunk.sentence_ids, frame_hints=hints, phrases=phrases,
                                  known_entities=known_parties(doc.caption))
    issues = [f"stage1: {e}" for e in r1.errors]
    out1 = r1.outputs or {"entities": [], "events": []}
    if r1.outputs is None:
        issues.append("stage1: no usable output after retries; the chunk has no events")
    entities, events, _, fixes = repair_stage1(out1["entities"], out1["events"], allowed)
    issues += [f"stage1 repair: {f}" for f in fixes]
    # ground before Stage 2, so that relations are only ever drawn between events the text states
    grounded = ground_items(EventGraph(entities=entities, events=events), Aligner.for_document(doc), chunk.sentence_ids,
                            stage="stage1", prefix=f"{chunk.id}:", keep_ungrounded=pipe.config.extraction.keep_ungrounded)
    entities, events = grounded.graph.entities, grounded.graph.events
    attempts = {"stage1": r1.attempts}
    temporal, causal = relate(pipe, text, chunk, entities, events, run, attempts, issues)
    graph = EventGraph(entities=entities, events=events, temporal_edges=temporal, causal_edges=causal)
    return MiniGraph(chunk_id=chunk.id, graph=graph, attempts=attempts, issues=issues, spans=grounded.spans,
                     rejected=grounded.rejected, ungrounded=grounded.ungrounded)


def relate(pipe: Pipeline, text: str, chunk: Chunk, entities, events, run: DocumentRun | None, attempts: dict,
           issues: list[str]) -> tuple[list, list]:
    """Stage 2 over ``events`` of one chunk (labeled ``text``): its repaired temporal and causal edges.
    Its attempts go into ``attempts``, what it reported and repaired into ``issues``."""
    if len(events) < 2:
        return [], []
    allowed = set(chunk.sentence_ids)
    stage1_json = json.dumps(
        {"entities": [e.model_dump() for e in entities], "events": [e.model_dump(exclude={"confidence"}) for e in events]},
        ensure_ascii=False,
    )
    with pipe.calling("stage2", "Stage2Extractor", run):
        r2 = pipe.programs.stage2(chunk_text=text, stage1_json=stage1_json, sentence_ids=chunk.sentence_ids,
                                  event_ids=[e.id for e in events])
    attempts["stage2"] = r2.attempts
    issues += [f"stage2: {e}" for e in r2.errors]
    out2 = r2.outputs or {"temporal_edges": [], "causal_edges": []}
    temporal, causal, fixes = repair_stage2(out2["temporal_edges"], out2["causal_edges"], events, allowed)
    issues += [f"stage2 repair: {f}" for f in fixes]
    return temporal, causal


def extract(pipe: Pipeline, source: RawDocument | str | Path, ledger: CostLedger | None = None) -> DocumentEKG:
    """The chunked design on one document: LLM chunking, Stage 1 and Stage 2 per chunk, merging and the resolver."""
    with document_run(pipe, source, ledger) as (doc, run):
        with run.timed("chunker"):
            chunks, chunk_issues = pipe.chunk(doc, run)
        run.warnings += [f"chunking: {i}" for i in chunk_issues if "failed" in i]
        with run.timed("extraction"):  # chunks in parallel; each runs Stage 1, then its Stage 2
            minigraphs = pipe.in_parallel(lambda ch: extract_chunk(pipe, doc, ch, run), chunks)
        with run.timed("merge"):
            graph, log = pipe.merge(doc, minigraphs, run)
            graph, rejected = pipe.ground(doc, graph, chunks)
        if not pipe.fact_sentences(doc):
            run.warnings.append("no fact sentences in the narrative: the graph is empty")
        return assemble(pipe.config, doc, run, "staged", chunks, minigraphs, graph, log, rejected)
