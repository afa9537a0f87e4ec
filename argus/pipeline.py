"""The ARGUS pipeline: complaint text → source-grounded document Event Knowledge Graph.

Stages (each callable on its own, typed in and out):

    preprocess     RawDocument → Document (sections, sentences with spans)
    gate_facts     Document → Document with Fact / Non-Fact decisions (classifier, LLM fallback)
    chunk          Document → list[Chunk] (chunker program + deterministic repair)
    extract_chunk  Document, Chunk → MiniGraph (Stage 1, then Stage 2, each validated and repaired)
    merge          Document, list[MiniGraph] → DocumentGraph + merge log (deterministic + resolver)
    ground         Document, DocumentGraph → the graph with mentions and trigger spans + what was rejected
    extract        any source → DocumentEKG by the configured design (``extraction.design``):
      extract_chunked      chunk, extract_chunk per chunk, merge, ground (``argus.designs.chunked``)
      extract_by_sentence  entity list, event heads, a batch of fact sentences at a time (choices;
                           Stage 2 where configured), merge, date order, ground (``argus.designs.sentence``)
    extract_oneshot  any source → DocumentEKG from the one-shot baseline program (``argus.designs.baselines``)
    extract_floor    any source → DocumentEKG with no language model (``argus.designs.floor``, ``argus.designs.baselines``)

Every LM call runs under ``dspy.context(lm=<the stage's LM>)`` and a ledger context naming the
document, stage and program, so the ledger attributes each call.
"""

from __future__ import annotations

import contextlib
import copy
import threading
from pathlib import Path
from typing import Iterator

import dspy
from dspy.utils.exceptions import LMError

from argus.models.concurrency import ProviderFault, Slots, parallel_map
from argus.config import ArgusConfig
from argus.designs import baselines, chunked, sentence
from argus.designs.run import DocumentRun, warn_once
from argus.text.documents import Document, RawDocument
from argus.models.embeddings import configure_embedding_store, configure_encoder_runtime
from argus.errors import ArgusError, ConfigError, InputError, LMCallError
from argus.gate.facts import FactGateReport, gate_facts, load_fact_classifier
from argus.designs.sentence.heads import EventHeads, load_event_heads
from argus.graph.grounding import Aligner, ground_document
from argus.ingest.common import replace_surrogates
from argus.ingest.files import read_document
from argus.models.ledger import CostLedger, ledger_context
from argus.models.lm import MeteredLM, SchemaJSONAdapter, build_lm
from argus.graph.merge import Resolution, apply_resolutions, candidate_pairs, describe_event, merge_minigraphs
from argus.text.preprocess import preprocess
from argus.models.response_cache import configure_plain_response_cache
from argus.models.routing import measured_route
from argus.graph.schema import Chunk, DocumentEKG, DocumentGraph, MergeDecision, MiniGraph
from programs import ArgusPrograms

__all__ = ["ArgusPipeline", "DocumentRun", "configure_cache", "iter_sources"]


class ArgusPipeline(dspy.Module):
    """The staged pipeline (and the one-shot baseline) with one configuration, as one ``dspy.Module``.

    ``forward(document) → DocumentEKG`` runs every stage; ``forward(document, chunk) → MiniGraph``
    runs Stage 1 and Stage 2 on one chunk of a preprocessed document (what an optimizer's cheap
    chunk-level minibatches call). Its named predictors are the programs' (``programs.stage1.
    extract.predict``, ``programs.chunker.plan.predict``, …), so the instructions an optimizer
    evolves are the ones deployment runs. ``deepcopy`` copies the programs and shares the rest
    (configuration, models, fact classifier).

    ``lm_builder`` (``LMSpec → dspy.LM``, default ``argus.models.lm.build_lm``) builds each stage's model.

    Safe to call from several threads at once (documents in flight). Within a document the chunks
    (Stage 1, then Stage 2 of the same chunk), the resolver's pairs and the fact-fallback batches
    run in parallel, with at most ``config.concurrency.max_in_flight`` LM calls in flight across
    everything this pipeline (and its ``deepcopy``s) does; results are gathered in input order, so
    the graph is the one a sequential run builds from the same answers (``argus.models.concurrency``).
    """

    def __init__(self, config: ArgusConfig | None = None, programs: ArgusPrograms | None = None, classifier=None,
                 lm_builder=None):
        super().__init__()
        self.config = config or ArgusConfig()
        self.programs = programs or ArgusPrograms(max_retries=self.config.extraction.max_retries)
        self._classifier = classifier
        self._event_heads: EventHeads | None = None
        self._lms: dict[str, MeteredLM] = {}
        self._lm_builder = lm_builder or build_lm
        self.adapter = SchemaJSONAdapter()
        #: LM calls in flight across this pipeline and its copies
        self.slots = Slots(self.config.concurrency.max_in_flight)
        self._building = threading.Lock()
        configure_cache(self.config.cache_dir)
        configure_encoder_runtime(None if self.config.encoder.runtime == "auto" else self.config.encoder.runtime)

    def forward(self, document, chunk: Chunk | None = None):
        if chunk is not None:
            if not isinstance(document, Document):
                raise TypeError("forward(document, chunk) needs a preprocessed Document")
            return self.extract_chunk(document, chunk)
        return self.extract(document)

    def deepcopy(self) -> "ArgusPipeline":
        new = copy.copy(self)  # a new __dict__ holding the same configuration, models and classifier
        new.programs = self.programs.deepcopy()
        new.callbacks = list(getattr(self, "callbacks", []))
        new.history = []
        return new

    # ------------------------------------------------------------------ plumbing

    @property
    def classifier(self):
        if self._classifier is None:
            with self._building:
                if self._classifier is None:
                    self._classifier = load_fact_classifier(self.config.facts.classifier)
        return self._classifier

    def lm(self, stage: str) -> MeteredLM:
        if stage not in self._lms:
            with self._building:
                if stage not in self._lms:
                    self._lms[stage] = self._lm_builder(self.config.lm.for_stage(stage))
        return self._lms[stage]

    @property
    def workers(self) -> int:
        """Threads a document fans its calls out to (the in-flight bound holds across all of them)."""
        return self.slots.limit or 1

    def set_concurrency(self, max_in_flight: int) -> None:
        """Bound the LM calls in flight across this pipeline (and its copies) to ``max_in_flight``."""
        if max_in_flight < 1:
            raise ConfigError(f"concurrency must be at least 1, not {max_in_flight}")
        self.slots.set_limit(max_in_flight)

    def in_parallel(self, fn, items) -> list:
        """``fn`` of each item on the pipeline's threads, the results in item order."""
        return parallel_map(fn, items, self.workers)

    @contextlib.contextmanager
    def calling(self, stage: str, program: str, run: DocumentRun | None):
        """Where ``program`` calls the ``stage``'s model: a slot of the in-flight bound, the stage's LM
        and the ledger context of ``run``'s document; a failed call is an ``LMCallError``."""
        ledger = run.ledger if run else None
        lm = self.lm(stage)
        with self.slots.hold(), dspy.context(lm=lm, adapter=self.adapter), ledger_context(
            ledger, doc_id=run.doc_id if run else None, stage=stage, program=program
        ):
            try:
                yield
            except ProviderFault:
                raise
            except (LMError, OSError, TimeoutError) as exc:  # provider, network, engine failures
                raise LMCallError(
                    f"{stage} ({self.config.lm.for_stage(stage).model}) failed: {type(exc).__name__}: {exc}"
                ) from exc

    # ------------------------------------------------------------------ stages

    def read(self, source: RawDocument | str | Path) -> RawDocument:
        if isinstance(source, RawDocument):
            raw = source
        else:
            raw = read_document(source)
        text, notes = replace_surrogates(raw.text)
        if notes:  # a str given as text or as a RawDocument: the encoders and the EKG's JSON take no surrogate
            raw = raw.model_copy(update={"text": text, "warnings": [*raw.warnings, *notes]})
        if len(raw.text) > self.config.limits.max_document_chars:
            raise InputError(
                f"{raw.source}: {len(raw.text):,} characters exceeds limits.max_document_chars="
                f"{self.config.limits.max_document_chars:,}; a complaint is rarely above 300,000 characters — "
                "check the file, or raise the limit (--max-chars) to process it anyway"
            )
        return raw

    def preprocess(self, raw: RawDocument) -> Document:
        return preprocess(raw, segmenter=self.config.segmenter)

    def fact_routing(self) -> tuple[str, float, str]:
        """(mode, τ, why) the gate runs with: ``facts.fallback: measured`` keeps the LLM out where the
        classifier's fallback report (``argus train-facts --fallback-report MODEL``) found it no
        better, or where the model is the embedded one and was never measured."""
        cfg = self.config.facts
        if cfg.mode != "hybrid" or cfg.fallback == "always":
            return cfg.mode, cfg.tau, ""
        model = self.config.lm.for_stage("fact_fallback").model
        return measured_route(
            model, (getattr(self.classifier, "meta", None) or {}).get("fallback", {}), cfg.tau,
            asked="hybrid", alone="classifier",
            no_better=lambda m: (
                f"fact gate: the fallback model {model} was measured no better than the classifier on the sentences "
                f"it would see (narrative Fact F1 {m.get('f1_best_fallback', float('nan')):.4f} at best vs "
                f"{m.get('f1_classifier', float('nan')):.4f}); the classifier decides alone "
                "(facts.fallback: always sends them anyway)"),
            unmeasured=(
                f"fact gate: the fallback model is the embedded {model}, which is not measured to beat the classifier; "
                "the classifier decides alone (measure a model with 'argus train-facts --fallback-report MODEL', "
                "or set facts.fallback: always)"))

    def gate_facts(self, doc: Document, run: DocumentRun | None = None) -> tuple[Document, FactGateReport]:
        cfg = self.config.facts
        mode, tau, why = self.fact_routing()
        warn_once(why)

        def ask(batch: list[tuple[str, str]]) -> tuple[set[str] | None, str | None]:
            """The fact ids the model chose in ``batch`` (None: no usable answer) and why it failed."""
            try:
                with self.calling("fact_fallback", "FactFallback", run):
                    res = self.programs.fact_fallback(sentences=batch)
            except ProviderFault:
                raise  # a call that kept meeting provider faults fails the document
            except LMCallError as exc:
                return None, str(exc)
            if res.outputs is None:
                return None, None
            allowed = {sid for sid, _ in batch}
            return {i for i in res.outputs["fact_ids"] if i in allowed}, None

        def each(batches):
            answers = self.in_parallel(ask, batches)
            if run:  # in batch order, whatever order the calls finished in
                run.warnings.extend(why for _, why in answers if why)
            return [chosen for chosen, _ in answers]

        return gate_facts(doc, self.classifier, mode=mode, tau=tau,
                          fallback=(lambda batch: each([batch])[0]) if mode != "classifier" else None,
                          batch_size=cfg.batch_size, map_batches=each)

    def fact_sentences(self, doc: Document):
        narrative = set(doc.narrative_ids)
        facts = [s for s in doc.sentences if s.id in narrative and s.fact]
        return facts[: self.config.limits.max_narrative_sentences]

    def chunk(self, doc: Document, run: DocumentRun | None = None) -> tuple[list[Chunk], list[str]]:
        """The chunks of the fact sentences (``argus.designs.chunked.plan_chunks``) and what was reported."""
        return chunked.plan_chunks(self, doc, run)

    def extract_chunk(self, doc: Document, chunk: Chunk, run: DocumentRun | None = None) -> MiniGraph:
        """The mini-graph of one chunk by the configured design (what an optimizer's minibatches run)."""
        if self.design == "sentence":
            return sentence.extract_batch(self, doc, chunk, run, edges=True)
        return chunked.extract_chunk(self, doc, chunk, run)

    # ------------------------------------------------------------------ the sentence-level design

    @property
    def event_heads(self) -> EventHeads:
        if self._event_heads is None:
            with self._building:
                if self._event_heads is None:
                    self._event_heads = load_event_heads(self.config.sentence.heads)
        return self._event_heads

    def sentence_routing(self) -> tuple[str, float, str]:
        """(mode, τ, why) the sentence design runs with (``argus.designs.sentence.routing``)."""
        return sentence.routing(self)

    def pair_routing(self) -> tuple[str, float, str]:
        """(mode, τ, why) of the sentence design's edges (``argus.designs.sentence.pair_routing``)."""
        return sentence.pair_routing(self)

    @property
    def sentence_stage2(self) -> bool:
        """Whether the sentence design runs Stage 2 over each batch (``sentence.stage2``; by default on
        unless Stage 2 runs on a ``local/`` engine)."""
        on = self.config.sentence.stage2
        return not self.config.lm.for_stage("stage2").model.startswith("local/") if on is None else on

    def sentence_entities(self, doc: Document) -> list:
        """The document's entity list (``argus.designs.sentence.entity_list``)."""
        return sentence.entity_list(self, doc)

    @property
    def design(self) -> str:
        """The extraction design ``extract`` runs (``extraction.design``; by default the sentence design
        when the sentence stage runs on a ``local/`` engine, the chunked one otherwise)."""
        d = self.config.extraction.design
        if d is None:
            return "sentence" if self.config.lm.for_stage("sentence").model.startswith("local/") else "chunked"
        return d

    @property
    def grounded_decoding(self) -> bool:
        """Whether Stage 1 is offered the chunk's word runs as the only names, aliases and triggers
        (``extraction.grounded_decoding``; by default on for ``local/`` engines)."""
        on = self.config.extraction.grounded_decoding
        return self.config.lm.for_stage("stage1").model.startswith("local/") if on is None else on

    def ground(self, doc: Document, graph: DocumentGraph, chunks: list[Chunk], stage: str = "merge"
               ) -> tuple[DocumentGraph, list]:
        """Mentions and trigger spans of the document graph, each entity sought in the sentences of the
        chunks it came from; what cannot be grounded leaves (``argus.graph.grounding``)."""
        g = ground_document(graph, Aligner.for_document(doc), chunks, stage=stage,
                            keep_ungrounded=self.config.extraction.keep_ungrounded)
        return g.graph, g.rejected

    def merge(self, doc: Document, minigraphs: list[MiniGraph], run: DocumentRun | None = None) -> tuple[DocumentGraph, list[MergeDecision]]:
        graph, log = merge_minigraphs(minigraphs)
        cfg = self.config.merge
        if not cfg.resolver or len(minigraphs) < 2:
            return graph, log
        text = {s.id: s.text for s in doc.sentences}
        pairs = candidate_pairs(graph, text, top_k=cfg.top_k, min_similarity=cfg.min_similarity,
                                max_pairs=cfg.max_pairs, encoder=cfg.embedding_model)
        by_id = {e.id: e for e in graph.events}
        model = self.config.lm.for_stage("resolver").model

        def resolve(pair) -> Resolution | str | None:
            try:
                with self.calling("resolver", "CrossChunkResolver", run):
                    res = self.programs.resolver(
                        event_a=describe_event(by_id[pair.a], graph, text),
                        event_b=describe_event(by_id[pair.b], graph, text),
                    )
            except ProviderFault:
                raise
            except LMCallError as exc:
                return f"resolver skipped {pair.a}/{pair.b}: {exc}"
            if res.outputs is None:
                return None
            o = res.outputs
            return Resolution(pair.a, pair.b, bool(o["same_occurrence"]), str(o["relation"]), str(o["reason"])[:300],
                              model)

        resolutions: list[Resolution] = []
        for outcome in self.in_parallel(resolve, pairs):  # in pair order, whatever order the calls finished in
            if isinstance(outcome, Resolution):
                resolutions.append(outcome)
            elif outcome and run:
                run.warnings.append(outcome)
        graph, more = apply_resolutions(graph, resolutions)
        return graph, log + more

    # ------------------------------------------------------------------ whole documents

    def extract(self, source: RawDocument | str | Path, ledger: CostLedger | None = None) -> DocumentEKG:
        """Run every stage of the configured design (``extraction.design``) on one document and return
        its EKG.

        LM calls are also appended to ``ledger`` (when given) even if the document fails midway.
        """
        if self.design == "sentence":
            return self.extract_by_sentence(source, ledger)
        return self.extract_chunked(source, ledger)

    def extract_chunked(self, source: RawDocument | str | Path, ledger: CostLedger | None = None) -> DocumentEKG:
        """The chunked design (``argus.designs.chunked``): LLM chunking, Stage 1 and Stage 2 per chunk,
        merging and the resolver."""
        return chunked.extract(self, source, ledger)

    def extract_by_sentence(self, source: RawDocument | str | Path, ledger: CostLedger | None = None) -> DocumentEKG:
        """The sentence-level design (``argus.designs.sentence``): a batch of fact sentences at a time,
        then merging, date order and grounding."""
        return sentence.extract(self, source, ledger)

    def extract_oneshot(self, source: RawDocument | str | Path, ledger: CostLedger | None = None) -> DocumentEKG:
        """The one-shot baseline: the whole sentence-labeled FACTS text in one call."""
        return baselines.oneshot(self, source, ledger)

    def extract_floor(self, source: RawDocument | str | Path, ledger: CostLedger | None = None) -> DocumentEKG:
        """The floor (``argus.designs.floor``): no language model; one keyword-typed event per fact sentence and
        the caption's parties. The fact gate runs its classifier alone."""
        return baselines.floor(self, source)


def configure_cache(cache_dir: Path) -> None:
    """Point DSPy's disk cache at a project-local directory (once per process per directory).

    A cache database that is not a whole SQLite file (garbled, truncated) is moved aside first, with
    a warning naming it (``set_aside_damaged_caches``): that part of the cache starts afresh and its
    answers are recomputed. One that still cannot be opened is a ``ConfigError`` naming the folder
    to delete."""
    import sqlite3

    global _CACHE_DIR
    root = Path(cache_dir).expanduser().resolve()
    target = str(root / "dspy")
    if _CACHE_DIR == target:
        return
    set_aside_damaged_caches(root)
    try:
        # DSPy's cache, keeping litellm's answers as plain data (a cached re-run does not import litellm)
        # and booking a hit at the original call's usage, from DSPy's own record
        configure_plain_response_cache(target)
    except sqlite3.DatabaseError as exc:
        raise ConfigError(f"the cache under {root} cannot be opened ({exc}): it is damaged; delete that folder "
                          "(or give another with --cache-dir / cache_dir) and run again: answers are then "
                          "recomputed") from None
    # and the sentence encodings, so that a re-run loads no encoder (a damaged store is only a warning)
    configure_embedding_store(root / "embeddings")
    _CACHE_DIR = target


def _sqlite_damage(path: Path) -> str | None:
    """Why ``path`` is not a whole SQLite database (from its header and size), or None."""
    size = path.stat().st_size
    if size == 0:  # (SQLite makes an empty file a new database)
        return None
    with open(path, "rb") as fh:
        head = fh.read(100)
    if len(head) < 100 or not head.startswith(b"SQLite format 3\x00"):
        return "not a SQLite database (garbled or truncated)"
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(head[28:32], "big")
    if pages and head[24:28] == head[92:96] and size < pages * page_size:  # (the page count is valid)
        return f"truncated ({size} of its {pages * page_size} bytes)"
    return None


def set_aside_damaged_caches(root: Path) -> list[Path]:
    """Move each damaged cache database under ``root`` (``*/cache.db``, DSPy's shards and the embedding
    store) aside to ``cache.db.damaged-<time>``, each with a warning naming it; returns where."""
    import logging
    import os
    import time

    moved = []
    for db in sorted(root.glob("**/cache.db")) if root.is_dir() else []:
        try:
            reason = _sqlite_damage(db)
        except OSError:
            continue
        if reason is None:
            continue
        aside = db.with_name(f"{db.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
        try:
            os.replace(db, aside)
        except FileNotFoundError:  # (another process moved it first)
            continue
        for extra in ("-wal", "-shm"):  # the damaged database's journal goes with it
            with contextlib.suppress(FileNotFoundError):
                os.replace(f"{db}{extra}", f"{aside}{extra}")
        logging.getLogger("argus").warning(
            "cache file %s is damaged: %s; moved it to %s and started that part of the cache afresh (its answers "
            "are recomputed); delete %s when you no longer need it", db, reason, aside, aside)
        moved.append(aside)
    return moved


_CACHE_DIR: str | None = None


def iter_sources(paths, workers: int = 1) -> Iterator[tuple[str, RawDocument | ArgusError]]:
    """(label, document or the error reading it) for every file given or found in folders: text files and
    PDFs, their scanned pages OCR'd ``workers`` at a time (``argus.ingest.sources``)."""
    from argus.ingest.files import iter_paths
    from argus.ingest.sources import read_sources

    yield from read_sources(list(iter_paths(paths)), workers=workers)
