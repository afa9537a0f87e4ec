"""One document's run through any design: what a design asks of the pipeline, its bookkeeping, its EKG.

``Pipeline`` is what a design calls on the pipeline that runs it (``argus.pipeline.ArgusPipeline``);
``DocumentRun`` holds what a document gathers while it runs (its own ledger, warnings, stage
timings); ``document_run`` opens one the way every LLM design does (read, preprocess, fact gate) and
hands its calls on to the caller's ledger even if the document fails midway; ``assemble`` builds the
``DocumentEKG`` from the parts, with one stage row per timing and every ledger call counted in one row.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, ContextManager, Iterator, Protocol

from argus.config import PIPELINE_STAGES, SENTENCE_STAGES, ArgusConfig
from argus.text.documents import Document, RawDocument, Sentence
from argus.errors import InputError
from argus.designs.sentence.heads import EventHeads
from argus.gate.facts import FactClassifier, FactGateReport
from argus.models.ledger import CostLedger, Totals
from argus.graph.schema import (
    Chunk,
    DocumentEKG,
    DocumentGraph,
    LedgerSection,
    MergeDecision,
    MiniGraph,
    SentenceRecord,
    StageStats,
)
from programs import ArgusPrograms


@dataclass
class DocumentRun:
    """Per-document bookkeeping while the pipeline runs: its ledger, warnings and stage timings.

    Pass one to the stage methods (``gate_facts``, ``chunk``, …) to meter calls made outside ``extract``.
    """

    doc_id: str
    ledger: CostLedger
    warnings: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)

    @contextlib.contextmanager
    def timed(self, stage: str):
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[stage] = self.seconds.get(stage, 0.0) + time.perf_counter() - t0


class Pipeline(Protocol):
    """What a design calls on the pipeline that runs it: its configuration, programs and models, the
    stages every design shares, and the way its LM calls are made (``argus.pipeline.ArgusPipeline``)."""

    config: ArgusConfig
    programs: ArgusPrograms

    @property
    def classifier(self) -> FactClassifier: ...

    @property
    def event_heads(self) -> EventHeads: ...

    @property
    def grounded_decoding(self) -> bool: ...

    @property
    def sentence_stage2(self) -> bool: ...

    def calling(self, stage: str, program: str, run: DocumentRun | None) -> ContextManager[None]: ...

    def in_parallel(self, fn: Callable, items: list) -> list: ...

    def read(self, source: RawDocument | str | Path) -> RawDocument: ...

    def preprocess(self, raw: RawDocument) -> Document: ...

    def gate_facts(self, doc: Document, run: DocumentRun | None = None) -> tuple[Document, FactGateReport]: ...

    def fact_sentences(self, doc: Document) -> list[Sentence]: ...

    def chunk(self, doc: Document, run: DocumentRun | None = None) -> tuple[list[Chunk], list[str]]: ...

    def merge(self, doc: Document, minigraphs: list[MiniGraph], run: DocumentRun | None = None
              ) -> tuple[DocumentGraph, list[MergeDecision]]: ...

    def ground(self, doc: Document, graph: DocumentGraph, chunks: list[Chunk], stage: str = "merge"
               ) -> tuple[DocumentGraph, list]: ...

    def sentence_routing(self) -> tuple[str, float, str]: ...

    def sentence_entities(self, doc: Document) -> list: ...


@contextlib.contextmanager
def document_run(pipe: Pipeline, source: RawDocument | str | Path, ledger: CostLedger | None = None, *,
                 need_sentences: bool = True) -> Iterator[tuple[Document, DocumentRun]]:
    """``(doc, run)``: ``source`` read, preprocessed and fact-gated under a new run. Its LM calls are
    appended to ``ledger`` (when given) on the way out, even if the document fails midway.
    ``need_sentences``: a document with no sentences after cleanup is an ``InputError``."""
    raw = pipe.read(source)
    run = DocumentRun(raw.doc_id, CostLedger())
    try:
        with run.timed("preprocess"):
            doc = pipe.preprocess(raw)
        if need_sentences and not doc.sentences:
            raise InputError(f"{raw.source}: no sentences found after cleanup (is this a complaint?)")
        with run.timed("fact_gate"):
            doc, report = pipe.gate_facts(doc, run)
        run.warnings += report.warnings
        yield doc, run
    finally:
        if ledger is not None:
            ledger.extend(run.ledger.entries)


def warn_once(why: str) -> None:
    """Log ``why`` as a warning once per process (a routing decision, not one line per document)."""
    if why and why not in _SAID:
        _SAID.add(why)
        logging.getLogger("argus").warning(why)


_SAID: set[str] = set()


def stage_models(config: ArgusConfig, method: str) -> dict[str, str]:
    """The model of each stage that ``method`` runs (none for the floor)."""
    if method == "floor":
        return {}
    stages = {"oneshot": ("fact_fallback", "oneshot"), "sentence": SENTENCE_STAGES}.get(method, PIPELINE_STAGES)
    return {s: config.lm.for_stage(s).model for s in stages}


def assemble(config: ArgusConfig, doc: Document, run: DocumentRun, method: str, chunks, minigraphs, graph, log,
             rejected=()) -> DocumentEKG:
    """The document's EKG from its parts: sentences with their fact decisions, chunks, mini-graphs, the
    graph and merge log, what grounding rejected, per-stage time and cost, and the ledger."""
    narrative = set(doc.narrative_ids)
    sentences = [
        SentenceRecord(
            id=s.id, text=s.text, span=s.span, section=s.section, section_heading=s.section_heading,
            paragraph=s.paragraph, page=s.page, fact=s.fact, fact_probability=s.fact_probability, fact_path=s.fact_path,
            in_narrative=s.id in narrative,
        )
        for s in doc.sentences
    ]
    stage_map = {"fact_gate": ["fact_fallback"], "chunker": ["chunker"], "extraction": ["stage1", "stage2", "sentence"],
                 "merge": ["resolver"], "oneshot": ["oneshot"]}
    owner = {name: stage for stage, names in stage_map.items() for name in names}
    totals = {stage: Totals() for stage in run.seconds}
    for entry in run.ledger.entries:  # every call counts in exactly one row: the rows add up to the ledger
        stage = owner.get(entry.stage, entry.stage)
        totals.setdefault(stage, Totals()).add(entry)
    stages = [
        StageStats(stage=stage, seconds=round(run.seconds.get(stage, 0.0), 3), lm_calls=t.calls, tokens=t.tokens,
                   cost_usd=round(t.cost_usd, 8))
        for stage, t in totals.items()
    ]
    return DocumentEKG(
        doc_id=doc.doc_id,
        source=doc.source,
        source_sha256=doc.metadata.get("sha256"),
        pages=doc.metadata.get("pages") or ((doc.text.count("\f") + 1) if "\f" in doc.text else None),
        ocr_pages=list(doc.metadata.get("ocr_pages") or []),
        method=method,
        created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        models=stage_models(config, method),
        facts_section_found=doc.facts_section_found,
        document_kind=doc.kind,
        caption=doc.caption,
        text=doc.text,
        warnings=list(dict.fromkeys(doc.warnings + run.warnings)),
        sentences=sentences,
        chunks=chunks,
        minigraphs=minigraphs,
        graph=graph,
        merge_log=log,
        rejected=[r for mg in minigraphs for r in mg.rejected] + list(rejected),
        stages=stages,
        ledger=LedgerSection.model_validate(run.ledger.to_json()),
    )
