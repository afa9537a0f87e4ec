"""The ARGUS pipeline: complaint text → source-grounded document Event Knowledge Graph.

Stages (each callable on its own, typed in and out):

    preprocess     RawDocument → Document (sections, sentences with spans)
    gate_facts     Document → Document with Fact / Non-Fact decisions (classifier, LLM fallback)
    chunk          Document → list[Chunk] (chunker program + deterministic repair)
    extract_chunk  Document, Chunk → MiniGraph (Stage 1, then Stage 2, each validated and repaired)
    merge          Document, list[MiniGraph] → DocumentGraph + merge log (deterministic + resolver)
    ground         Document, DocumentGraph → the graph with mentions and trigger spans + what was rejected
    extract        any source → DocumentEKG by the configured design (``extraction.design``):
      extract_chunked      chunk, extract_chunk per chunk, merge, ground (the chunked design)
      extract_by_sentence  entity list, event heads, extract_sentences per batch of fact sentences
                           (choices; Stage 2 where configured), merge, date order, ground
    extract_oneshot  any source → DocumentEKG from the one-shot baseline program
    extract_floor    any source → DocumentEKG with no language model (``argus.floor``)

Every LM call runs under ``dspy.context(lm=<the stage's LM>)`` and a ledger context naming the
document, stage and program, so the ledger attributes each call.
"""

from __future__ import annotations

import contextlib
import copy
import datetime as _dt
import json
import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import dspy
from dspy.utils.exceptions import LMError

from argus.chunking import repair_chunks, with_themes
from argus.concurrency import ProviderFault, Slots, parallel_map
from argus.config import PIPELINE_STAGES, SENTENCE_STAGES, ArgusConfig
from argus.documents import Document, RawDocument
from argus.errors import ArgusError, ConfigError, InputError, LMCallError
from argus.facts import FactGateReport, gate_facts, load_fact_classifier
from argus.entities import document_entities, known_parties
from argus.event_heads import EventHeads, load_event_heads
from argus.floor import floor_graph
from argus.grounding import Aligner, chunk_phrases, ground_document, ground_items
from argus.ingest.files import read_text_document
from argus.ledger import CostLedger, Totals, ledger_context
from argus.lm import EMBEDDED_MODEL, MeteredLM, SchemaJSONAdapter, build_lm, configure_usage_store
from argus.merge import (
    Resolution,
    add_date_edges,
    apply_resolutions,
    candidate_pairs,
    describe_event,
    merge_minigraphs,
)
from argus.sentence_design import DatedEvent, date_edges, participants_of, sentence_time
from argus.sentence_design import suggestions as sentence_suggestions
from argus.words import lemma
from argus.preprocess import preprocess
from argus.schema import (
    FRAME_HINTS,
    CausalEdge,
    TemporalEdge,
    Chunk,
    DocumentEKG,
    DocumentGraph,
    Event,
    EventGraph,
    EventTime,
    LedgerSection,
    MergeDecision,
    MiniGraph,
    SentenceRecord,
    StageStats,
)
from argus.validation import repair_graph, repair_stage1, repair_stage2
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


class ArgusPipeline(dspy.Module):
    """The staged pipeline (and the one-shot baseline) with one configuration, as one ``dspy.Module``.

    ``forward(document) → DocumentEKG`` runs every stage; ``forward(document, chunk) → MiniGraph``
    runs Stage 1 and Stage 2 on one chunk of a preprocessed document (what an optimizer's cheap
    chunk-level minibatches call). Its named predictors are the programs' (``programs.stage1.
    extract.predict``, ``programs.chunker.plan.predict``, …), so the instructions an optimizer
    evolves are the ones deployment runs. ``deepcopy`` copies the programs and shares the rest
    (configuration, models, fact classifier).

    ``lm_builder`` (``LMSpec → dspy.LM``, default ``argus.lm.build_lm``) builds each stage's model.

    Safe to call from several threads at once (documents in flight). Within a document the chunks
    (Stage 1, then Stage 2 of the same chunk), the resolver's pairs and the fact-fallback batches
    run in parallel, with at most ``config.concurrency.max_in_flight`` LM calls in flight across
    everything this pipeline (and its ``deepcopy``s) does; results are gathered in input order, so
    the graph is the one a sequential run builds from the same answers (``argus.concurrency``).
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

    def _map(self, fn, items):
        return parallel_map(fn, items, self.workers)

    @contextlib.contextmanager
    def _calling(self, stage: str, program: str, run: DocumentRun | None):
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
            raw = read_text_document(source)
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
        measured = (getattr(self.classifier, "meta", None) or {}).get("fallback", {}).get(model)
        if measured is not None:
            if measured.get("tau") is None:
                return "classifier", cfg.tau, (
                    f"fact gate: the fallback model {model} was measured no better than the classifier on the sentences "
                    f"it would see (narrative Fact F1 {measured.get('f1_best_fallback', float('nan')):.4f} at best vs "
                    f"{measured.get('f1_classifier', float('nan')):.4f}); the classifier decides alone "
                    "(facts.fallback: always sends them anyway)")
            return "hybrid", float(measured["tau"]), ""
        if model == EMBEDDED_MODEL:
            return "classifier", cfg.tau, (
                f"fact gate: the fallback model is the embedded {model}, which is not measured to beat the classifier; "
                "the classifier decides alone (measure a model with 'argus train-facts --fallback-report MODEL', "
                "or set facts.fallback: always)")
        return "hybrid", cfg.tau, ""

    def gate_facts(self, doc: Document, run: DocumentRun | None = None) -> tuple[Document, FactGateReport]:
        cfg = self.config.facts
        mode, tau, why = self.fact_routing()
        if why and why not in _SAID:  # once per process, not once per document
            _SAID.add(why)
            logging.getLogger("argus").warning(why)

        def ask(batch: list[tuple[str, str]]) -> tuple[set[str] | None, str | None]:
            """The fact ids the model chose in ``batch`` (None: no usable answer) and why it failed."""
            try:
                with self._calling("fact_fallback", "FactFallback", run):
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
            answers = self._map(ask, batches)
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
        cfg = self.config.chunking
        facts = self.fact_sentences(doc)
        ids = [s.id for s in facts]
        plan: list[list[str]] = []
        themes: list[tuple[list[str], str]] = []
        issues: list[str] = []
        if cfg.use_llm and len(ids) > cfg.max_sentences:
            try:
                with self._calling("chunker", "SemanticChunker", run):
                    res = self.programs.chunker(sentences=[(s.id, s.text) for s in facts], max_chunk_sentences=cfg.max_sentences)
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

    def extract_chunk(self, doc: Document, chunk: Chunk, run: DocumentRun | None = None) -> MiniGraph:
        """The mini-graph of one chunk by the configured design (what an optimizer's minibatches run)."""
        if self.design == "sentence":
            return self.extract_sentences(doc, chunk, run)
        return self.extract_chunk_staged(doc, chunk, run)

    def extract_chunk_staged(self, doc: Document, chunk: Chunk, run: DocumentRun | None = None) -> MiniGraph:
        """Stage 1, grounding, then Stage 2 on one chunk (the chunked design)."""
        idx = doc.index()
        text = doc.labeled([idx[sid] for sid in chunk.sentence_ids])
        allowed = set(chunk.sentence_ids)
        hints = ""
        if self.config.extraction.framenet_hints:
            hints = "\n".join(f"{k}: {v}" for k, v in FRAME_HINTS.items())
        phrases = None
        if self.grounded_decoding:
            phrases = chunk_phrases(idx[sid].text for sid in chunk.sentence_ids)
        with self._calling("stage1", "Stage1Extractor", run):
            r1 = self.programs.stage1(chunk_text=text, sentence_ids=chunk.sentence_ids, frame_hints=hints, phrases=phrases,
                                      known_entities=known_parties(doc.caption))
        issues = [f"stage1: {e}" for e in r1.errors]
        out1 = r1.outputs or {"entities": [], "events": []}
        if r1.outputs is None:
            issues.append("stage1: no usable output after retries; the chunk has no events")
        entities, events, _, fixes = repair_stage1(out1["entities"], out1["events"], allowed)
        issues += [f"stage1 repair: {f}" for f in fixes]
        # ground before Stage 2, so that relations are only ever drawn between events the text states
        grounded = ground_items(EventGraph(entities=entities, events=events), self._aligner(doc), chunk.sentence_ids,
                                stage="stage1", prefix=f"{chunk.id}:", keep_ungrounded=self.config.extraction.keep_ungrounded)
        entities, events = grounded.graph.entities, grounded.graph.events
        attempts = {"stage1": r1.attempts}
        temporal, causal = self._relate(text, chunk, entities, events, run, attempts, issues)
        graph = EventGraph(entities=entities, events=events, temporal_edges=temporal, causal_edges=causal)
        return MiniGraph(chunk_id=chunk.id, graph=graph, attempts=attempts, issues=issues, spans=grounded.spans,
                         rejected=grounded.rejected, ungrounded=grounded.ungrounded)

    def _relate(self, text: str, chunk: Chunk, entities, events, run: DocumentRun | None, attempts: dict,
                issues: list[str]) -> tuple[list, list]:
        """Stage 2 over ``events`` of one chunk (labeled ``text``): its repaired temporal and causal edges."""
        if len(events) < 2:
            return [], []
        allowed = set(chunk.sentence_ids)
        stage1_json = json.dumps(
            {"entities": [e.model_dump() for e in entities], "events": [e.model_dump(exclude={"confidence"}) for e in events]},
            ensure_ascii=False,
        )
        with self._calling("stage2", "Stage2Extractor", run):
            r2 = self.programs.stage2(chunk_text=text, stage1_json=stage1_json, sentence_ids=chunk.sentence_ids,
                                      event_ids=[e.id for e in events])
        attempts["stage2"] = r2.attempts
        issues += [f"stage2: {e}" for e in r2.errors]
        out2 = r2.outputs or {"temporal_edges": [], "causal_edges": []}
        temporal, causal, fixes = repair_stage2(out2["temporal_edges"], out2["causal_edges"], events, allowed)
        issues += [f"stage2 repair: {f}" for f in fixes]
        return temporal, causal

    # ------------------------------------------------------------------ the sentence-level design

    @property
    def event_heads(self) -> EventHeads:
        if self._event_heads is None:
            with self._building:
                if self._event_heads is None:
                    self._event_heads = load_event_heads(self.config.sentence.heads)
        return self._event_heads

    def sentence_routing(self) -> tuple[str, float, str]:
        """(mode, τ, why) the sentence design runs with: ``never`` (the heads decide alone) or
        ``model`` (sentences whose type confidence is below τ go to the choice program).
        ``sentence.llm: measured`` keeps the model out where the heads' report found it no better, or
        where the model is the embedded one and was never measured."""
        cfg = self.config.sentence
        if cfg.llm == "never":
            return "never", cfg.tau, ""
        if cfg.llm == "always":
            return "model", cfg.tau, ""
        model = self.config.lm.for_stage("sentence").model
        measured = (self.event_heads.meta.get("fallback") or {}).get(model)
        if measured is not None:
            if measured.get("tau") is None:
                return "never", cfg.tau, (
                    f"sentence design: the choice model {model} was measured no better than the event heads on the "
                    f"sentences it would decide (relaxed event F1 {measured.get('f1_model', float('nan')):.3f} with the model on every "
                    f"sentence vs "
                    f"{measured.get('f1_heads', float('nan')):.3f}); the heads decide alone (sentence.llm: always sends "
                    "them anyway)")
            return "model", float(measured["tau"]), ""
        if model == EMBEDDED_MODEL:
            return "never", cfg.tau, (
                f"sentence design: the choice model is the embedded {model}, which is not measured to beat the event "
                "heads; the heads decide alone (measure a model with 'python bench/sentence_fallback.py --model MODEL', "
                "or set sentence.llm: always)")
        return "model", cfg.tau, ""

    @property
    def sentence_resolver(self) -> bool:
        """Whether the sentence design asks the resolver which events of different batches state one
        occurrence (``sentence.resolver``, within ``merge.resolver``'s pairs and limits)."""
        return bool(self.config.sentence.resolver and self.config.merge.resolver)

    @property
    def sentence_stage2(self) -> bool:
        """Whether the sentence design runs Stage 2 over each batch (``sentence.stage2``; by default on
        unless Stage 2 runs on a ``local/`` engine)."""
        on = self.config.sentence.stage2
        return not self.config.lm.for_stage("stage2").model.startswith("local/") if on is None else on

    def sentence_entities(self, doc: Document) -> list:
        """The document's entity list (``argus.entities``): caption parties, defined terms, proper names
        of the fact sentences."""
        body = next((s.span[0] for s in doc.sections if s.kind != "caption"), 0)
        facts = self.fact_sentences(doc)
        return document_entities(doc.caption, doc.text[body:], [(s.id, s.text) for s in facts])

    def sentence_times(self, doc: Document) -> dict[str, EventTime]:
        """The time each fact sentence states, a year carried from earlier sentences (``sentence_time``)."""
        times, year = {}, None
        for s in self.fact_sentences(doc):
            times[s.id], year = sentence_time(s.text, year)
        return times

    def extract_sentences(self, doc: Document, chunk: Chunk, run: DocumentRun | None = None,
                          entities: list | None = None, readings: dict | None = None,
                          times: dict | None = None) -> MiniGraph:
        """One event per sentence of ``chunk`` (a batch of consecutive fact sentences), by choices:
        the heads' type and trigger, the choice program where they are unsure, participants from the
        entity list, time from the sentence; grounded; then Stage 2 over the batch's events."""
        cfg = self.config.sentence
        idx = doc.index()
        sents = [idx[sid] for sid in chunk.sentence_ids]
        entities = self.sentence_entities(doc) if entities is None else entities
        times = self.sentence_times(doc) if times is None else times
        if readings is None:
            readings = dict(zip(chunk.sentence_ids, self.event_heads.read([s.text for s in sents])))
        issues: list[str] = []
        attempts: dict[str, int] = {}
        picks: dict[str, list[dict]] = {}
        for s in sents:
            r = readings[s.id]
            if r.p_event < cfg.min_event_probability or not r.words:
                continue
            etype, conf = r.best_type()
            word, a, b, _ = r.ranked_words(1)[0]
            picks[s.id] = [{"type": etype, "trigger": (word, a, b), "confidence": conf}]
        mode, tau, why = self.sentence_routing()
        if why and why not in _SAID:
            _SAID.add(why)
            logging.getLogger("argus").warning(why)
        unsure = [sid for sid in chunk.sentence_ids if mode == "model"
                  and (sid not in picks or picks[sid][0]["confidence"] < tau)
                  and readings[sid].p_event >= cfg.min_event_probability * 0.5]
        if unsure:
            chosen, more = self._choose(doc, chunk, entities, readings, unsure, run, attempts)
            issues += more
            picks.update(chosen)
        events = []
        text_of = {s.id: s.text for s in sents}
        for sid in chunk.sentence_ids:
            for p in picks.get(sid, []):
                word, a, b = p["trigger"]
                parts = p.get("participants")
                if parts is None:
                    parts = participants_of(text_of[sid], a, entities)
                events.append(Event(id=f"EV{len(events) + 1}", type=p["type"], verb=lemma(word.split()[0]), trigger=word,
                                    participants=parts, time=p.get("time") or times.get(sid) or EventTime(kind="unknown"),
                                    evidence=[sid], confidence=round(float(p["confidence"]), 4)))
        named = {p.entity for e in events for p in e.participants}
        joined = "\n".join(text_of.values())
        ents = [e for e in entities if e.id in named or any(_mentions(n, joined) for n in (e.name, *e.aliases))]
        # the list's entities are sought in every fact sentence (an alias the batch does not use is still
        # the entity's); events in their own sentence
        every = [s.id for s in self.fact_sentences(doc)]
        grounded = ground_items(EventGraph(entities=ents, events=events), self._aligner(doc), chunk.sentence_ids,
                                stage="sentence", prefix=f"{chunk.id}:", scope_of=lambda _: every,
                                keep_ungrounded=self.config.extraction.keep_ungrounded)
        ents, events = grounded.graph.entities, grounded.graph.events
        temporal, causal = [], []
        if self.sentence_stage2:
            temporal, causal = self._relate(doc.labeled(sents), chunk, ents, events, run, attempts, issues)
        graph = EventGraph(entities=ents, events=events, temporal_edges=temporal, causal_edges=causal)
        return MiniGraph(chunk_id=chunk.id, graph=graph, attempts=attempts, issues=issues, spans=grounded.spans,
                         rejected=grounded.rejected, ungrounded=grounded.ungrounded)

    def _choose(self, doc: Document, chunk: Chunk, entities, readings, unsure: list[str], run, attempts: dict
                ) -> tuple[dict[str, list[dict]], list[str]]:
        """The choice program's events for the ``unsure`` sentences of ``chunk`` (the whole batch is shown
        for context); choices that break the rules (a trigger not in its sentence) are dropped."""
        idx = doc.index()
        sents = [idx[sid] for sid in chunk.sentence_ids]
        words = {s.id: chunk_phrases([s.text], max_words=3) for s in sents}
        issues: list[str] = []
        try:
            with self._calling("sentence", "SentenceEventChooser", run):
                res = self.programs.sentence_events(
                    sentences=[(s.id, s.text) for s in sents], entities=[(e.id, e.name, e.role) for e in entities],
                    suggestions=sentence_suggestions(readings, chunk.sentence_ids), words=words)
        except ProviderFault:
            raise
        except LMCallError as exc:
            return {}, [f"sentence choices failed ({exc}); the heads decide"]
        attempts["sentence"] = res.attempts
        issues += [f"sentence: {e}" for e in res.errors]
        known = {e.id for e in entities}
        out: dict[str, list[dict]] = {}
        for ev in (res.outputs or {}).get("events", []):
            if ev.sentence not in unsure or len(out.get(ev.sentence, [])) >= 2:
                continue
            s = idx[ev.sentence]
            at = _find_word(s.text, ev.trigger)
            if at is None:
                issues.append(f"sentence: {ev.sentence} trigger {ev.trigger!r} is not in the sentence; the heads' pick stays")
                continue
            time = ev.time if _time_ok(ev.time, s.text) else None
            # the event's confidence: how probable the heads found the type the model chose
            out.setdefault(ev.sentence, []).append({
                "type": ev.type, "trigger": (ev.trigger, at, at + len(ev.trigger)),
                "confidence": readings[ev.sentence].type_probs.get(ev.type, 0.0),
                "participants": [p for p in ev.participants if p.entity in known] or None, "time": time})
        return out, issues

    def extract_by_sentence(self, source: RawDocument | str | Path, ledger: CostLedger | None = None) -> DocumentEKG:
        """The sentence-level design on one document (``extract_sentences`` per batch, then merging,
        date order and grounding)."""
        raw = self.read(source)
        run = DocumentRun(raw.doc_id, CostLedger())
        cfg = self.config.sentence
        try:
            with run.timed("preprocess"):
                doc = self.preprocess(raw)
            if not doc.sentences:
                raise InputError(f"{raw.source}: no sentences found after cleanup (is this a complaint?)")
            with run.timed("fact_gate"):
                doc, report = self.gate_facts(doc, run)
            run.warnings += report.warnings
            facts = self.fact_sentences(doc)
            ids = [s.id for s in facts]
            chunks = [Chunk(id=f"C{k + 1}", sentence_ids=ids[i:i + cfg.batch_size],
                            theme=f"sentences {ids[i]}–{ids[min(i + cfg.batch_size, len(ids)) - 1]}")
                      for k, i in enumerate(range(0, len(ids), cfg.batch_size))]
            with run.timed("extraction"):
                entities = self.sentence_entities(doc)
                readings = dict(zip(ids, self.event_heads.read([s.text for s in facts])))
                times = self.sentence_times(doc)
                minigraphs = self._map(lambda ch: self.extract_sentences(doc, ch, run, entities, readings, times), chunks)
            with run.timed("merge"):
                graph, log = self.merge(doc, minigraphs, run) if self.sentence_resolver else merge_minigraphs(minigraphs)
                if cfg.date_edges:
                    add_date_edges(graph, date_edges([DatedEvent(e.id, e.time.value or "", tuple(e.evidence))
                                                      for e in graph.events if e.time.kind == "explicit"]), log)
                graph, rejected = self.ground(doc, graph, chunks, stage="sentence")
            if not facts:
                run.warnings.append("no fact sentences in the narrative: the graph is empty")
            return self._assemble(doc, run, "sentence", chunks, minigraphs, graph, log, rejected)
        finally:
            if ledger is not None:
                ledger.extend(run.ledger.entries)

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

    @staticmethod
    def _aligner(doc: Document) -> Aligner:
        return Aligner(doc.text, {s.id: tuple(s.span) for s in doc.sentences})

    def ground(self, doc: Document, graph: DocumentGraph, chunks: list[Chunk], stage: str = "merge"
               ) -> tuple[DocumentGraph, list]:
        """Mentions and trigger spans of the document graph, each entity sought in the sentences of the
        chunks it came from; what cannot be grounded leaves (``argus.grounding``)."""
        g = ground_document(graph, self._aligner(doc), chunks, stage=stage,
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
                with self._calling("resolver", "CrossChunkResolver", run):
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
        for outcome in self._map(resolve, pairs):  # in pair order, whatever order the calls finished in
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
        """The chunked design: LLM chunking, Stage 1 and Stage 2 per chunk, merging and the resolver."""
        raw = self.read(source)
        run = DocumentRun(raw.doc_id, CostLedger())
        try:
            with run.timed("preprocess"):
                doc = self.preprocess(raw)
            if not doc.sentences:
                raise InputError(f"{raw.source}: no sentences found after cleanup (is this a complaint?)")
            with run.timed("fact_gate"):
                doc, report = self.gate_facts(doc, run)
            run.warnings += report.warnings
            with run.timed("chunker"):
                chunks, chunk_issues = self.chunk(doc, run)
            run.warnings += [f"chunking: {i}" for i in chunk_issues if "failed" in i]
            with run.timed("extraction"):  # chunks in parallel; each runs Stage 1, then its Stage 2
                minigraphs = self._map(lambda ch: self.extract_chunk_staged(doc, ch, run), chunks)
            with run.timed("merge"):
                graph, log = self.merge(doc, minigraphs, run)
                graph, rejected = self.ground(doc, graph, chunks)
            if not self.fact_sentences(doc):
                run.warnings.append("no fact sentences in the narrative: the graph is empty")
            return self._assemble(doc, run, "staged", chunks, minigraphs, graph, log, rejected)
        finally:
            if ledger is not None:
                ledger.extend(run.ledger.entries)

    def extract_oneshot(self, source: RawDocument | str | Path, ledger: CostLedger | None = None) -> DocumentEKG:
        """The one-shot baseline: the whole sentence-labeled FACTS text in one call."""
        raw = self.read(source)
        run = DocumentRun(raw.doc_id, CostLedger())
        try:
            with run.timed("preprocess"):
                doc = self.preprocess(raw)
            with run.timed("fact_gate"):
                doc, report = self.gate_facts(doc, run)
            run.warnings += report.warnings
            facts = self.fact_sentences(doc)
            ids = [s.id for s in facts]
            with run.timed("oneshot"):
                with self._calling("oneshot", "OneShotExtractor", run):
                    res = self.programs.oneshot(facts_text=doc.labeled(facts), sentence_ids=ids)
            out = res.outputs or {"entities": [], "events": [], "temporal_edges": [], "causal_edges": []}
            g = EventGraph.model_construct(
                entities=out["entities"], events=out["events"],
                # unvalidated on purpose: repair_graph grounds evidence-less edges in their events
                temporal_edges=[TemporalEdge.model_construct(**e.model_dump()) for e in out["temporal_edges"]],
                causal_edges=[CausalEdge.model_construct(**e.model_dump()) for e in out["causal_edges"]],
            )
            g, issues = repair_graph(g, set(ids))
            return self._one_graph(doc, run, "oneshot", g, ids, {"oneshot": res.attempts},
                                   [f"oneshot: {e}" for e in res.errors] + issues, "whole narrative (one-shot)")
        finally:
            if ledger is not None:
                ledger.extend(run.ledger.entries)

    def extract_floor(self, source: RawDocument | str | Path, ledger: CostLedger | None = None) -> DocumentEKG:
        """The floor (``argus.floor``): no language model; one keyword-typed event per fact sentence and
        the caption's parties. The fact gate runs its classifier alone."""
        raw = self.read(source)
        run = DocumentRun(raw.doc_id, CostLedger())
        with run.timed("preprocess"):
            doc = self.preprocess(raw)
        with run.timed("fact_gate"):
            doc, report = gate_facts(doc, self.classifier, mode="classifier", tau=self.config.facts.tau)
        run.warnings += report.warnings
        ids = [s.id for s in self.fact_sentences(doc)]
        with run.timed("floor"):
            g = floor_graph(doc, ids)
        return self._one_graph(doc, run, "floor", g, ids, {}, [], "whole narrative (floor)")

    def _one_graph(self, doc: Document, run: DocumentRun, method: str, g: EventGraph, ids: list[str],
                   attempts: dict, issues: list[str], theme: str) -> DocumentEKG:
        """An EKG from one graph over the whole narrative (one chunk C1), grounded like any mini-graph."""
        grounded = ground_items(g, self._aligner(doc), ids, stage=method, prefix="C1:",
                                keep_ungrounded=self.config.extraction.keep_ungrounded)
        mg = MiniGraph(chunk_id="C1", graph=grounded.graph, attempts=attempts, issues=issues, spans=grounded.spans,
                       rejected=grounded.rejected, ungrounded=grounded.ungrounded)
        chunks = [Chunk(id="C1", sentence_ids=ids, theme=theme)] if ids else []
        with run.timed("merge"):
            graph, log = merge_minigraphs([mg])
            graph, rejected = self.ground(doc, graph, chunks, stage=method)
        return self._assemble(doc, run, method, chunks, [mg], graph, log, rejected)

    def _models(self, method: str) -> dict[str, str]:
        if method == "floor":
            return {}
        stages = {"oneshot": ("fact_fallback", "oneshot"), "sentence": SENTENCE_STAGES}.get(method, PIPELINE_STAGES)
        return {s: self.config.lm.for_stage(s).model for s in stages}

    def _assemble(self, doc: Document, run: DocumentRun, method: str, chunks, minigraphs, graph, log,
                  rejected=()) -> DocumentEKG:
        narrative = set(doc.narrative_ids)
        sentences = [
            SentenceRecord(
                id=s.id, text=s.text, span=s.span, section=s.section, section_heading=s.section_heading,
                paragraph=s.paragraph, fact=s.fact, fact_probability=s.fact_probability, fact_path=s.fact_path,
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
            method=method,
            created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            models=self._models(method),
            facts_section_found=doc.facts_section_found,
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


def _mentions(name: str, text: str) -> bool:
    import re

    return re.search(r"(?<!\w)" + r"\s+".join(re.escape(w) for w in name.split()) + r"(?!\w)", text) is not None


def _find_word(text: str, phrase: str) -> int | None:
    """Where ``phrase`` stands in ``text`` as whole words (first occurrence), or None."""
    import re

    m = re.search(r"(?<!\w)" + re.escape(phrase) + r"(?!\w)", text) if phrase.strip() else None
    return m.start() if m else None


def _time_ok(time, text: str) -> bool:
    """A chosen time is kept when it is unknown, an ISO date, or a phrase of the sentence."""
    import re

    if time.kind == "unknown" or not time.value:
        return time.kind == "unknown"
    if time.kind == "explicit":
        return re.fullmatch(r"\d{4}(?:-\d{2}){0,2}", time.value) is not None
    return time.value.lower() in text.lower()


def configure_cache(cache_dir: Path) -> None:
    """Point DSPy's disk cache at a project-local directory (once per process per directory)."""
    global _CACHE_DIR
    target = str(Path(cache_dir).expanduser().resolve() / "dspy")
    if _CACHE_DIR == target:
        return
    dspy.configure_cache(enable_disk_cache=True, enable_memory_cache=True, disk_cache_dir=target)
    # the original usage of cached answers (their list price), beside DSPy's cache
    configure_usage_store(Path(target).parent / "usage")
    _CACHE_DIR = target


_CACHE_DIR: str | None = None
_SAID: set[str] = set()


def iter_sources(paths) -> Iterator[tuple[str, RawDocument | ArgusError]]:
    """(label, document or the error reading it) for every file given or found in folders."""
    from argus.ingest.files import iter_paths

    for p in iter_paths(paths):
        try:
            yield str(p), read_text_document(p)
        except ArgusError as exc:
            yield str(p), exc
