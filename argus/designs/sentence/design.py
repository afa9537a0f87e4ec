"""The sentence-level design: at most one event per fact sentence, by choices, then merged.

``routing``         whether the choice program decides where the encoder heads are unsure, and below
                    which type confidence (``sentence.llm``, the heads' measured report);
``entity_list``     the document's entities without a model (``argus.designs.sentence.entities``);
``extract_batch``   one batch of consecutive fact sentences: the heads' type and trigger, the choice
                    program's where they are unsure, participants from the entity list, time from the
                    sentence (``time``); grounded; then Stage 2 over the batch where
                    configured;
``extract``         the whole document: batches in parallel, merging (with the resolver where
                    configured), BEFORE / SAME_TIME edges in date order, grounding.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from argus.models.concurrency import ProviderFault
from argus.designs.chunked import relate
from argus.designs.run import DocumentRun, Pipeline, assemble, document_run, warn_once
from argus.designs.sentence.entities import document_entities, participants_of, party_sentences, with_parties
from argus.designs.sentence.temporal import DatedEvent, date_edges
from argus.designs.sentence.time import sentence_time
from argus.designs.sentence.types import rule_type, trigger_types
from argus.text.documents import Document, RawDocument
from argus.errors import LMCallError
from argus.graph.grounding import Aligner, chunk_phrases, ground_items
from argus.models.ledger import CostLedger
from argus.graph.merge import add_date_edges, add_head_edges, merge_minigraphs, merge_same_occurrences
from argus.models.routing import measured_route
from argus.graph.schema import CausalEdge, Chunk, DocumentEKG, Event, EventGraph, EventTime, MiniGraph, TemporalEdge
from argus.text.words import event_words, lemma, mentions


def _route(pipe: Pipeline, setting: str, tau: float, stage: str, report: str, what: str, heads: str,
           items: str, measure: str, bench: str, key: str) -> tuple[str, float, str]:
    """(mode, τ, why) of a heads-or-model choice: ``never`` / ``model`` as ``setting`` says, or, for
    ``measured``, by the heads file's ``meta[report]`` row of ``stage``'s model (``measured_route``)."""
    if setting in ("never", "always"):
        return ("never" if setting == "never" else "model"), tau, ""
    model = pipe.config.lm.for_stage(stage).model
    return measured_route(
        model, pipe.event_heads.meta.get(report) or {}, tau, asked="model", alone="never",
        no_better=lambda m: (
            f"sentence design: the {what} {model} was measured no better than the {heads} on the {items} "
            f"({measure} {m.get('f1_model', float('nan')):.3f} with the model vs {m.get('f1_heads', float('nan')):.3f}); the "
            f"heads decide alone ({key}: always sends them anyway)"),
        unmeasured=(
            f"sentence design: the {what} is the embedded {model}, which is not measured to beat the {heads}; the "
            f"heads decide alone (measure a model with 'python {bench} --model MODEL', or set {key}: always)"))


def routing(pipe: Pipeline) -> tuple[str, float, str]:
    """(mode, τ, why) the sentence design runs with: ``never`` (the heads decide alone) or
    ``model`` (sentences whose type confidence is below τ go to the choice program).
    ``sentence.llm: measured`` keeps the model out where the heads' report found it no better (relaxed
    event F1), or where the model is the embedded one and was never measured."""
    cfg = pipe.config.sentence
    return _route(pipe, cfg.llm, cfg.tau, "sentence", "fallback", "choice model", "event heads",
                  "sentences it would decide", "relaxed event F1", "bench/sentence_fallback.py", "sentence.llm")


def pair_routing(pipe: Pipeline) -> tuple[str, float, str]:
    """(mode, τ, why) of the edges: ``never`` (the pair heads decide alone) or ``model`` (the pairs they are
    unsure of go to the pair-choice program, on Stage 2's model). ``sentence.pair_llm: measured`` keeps the
    model out where ``bench/pair_fallback.py`` found it no better (edge F1), or where it is the embedded one
    and was never measured."""
    cfg = pipe.config.sentence
    return _route(pipe, cfg.pair_llm, cfg.pair_tau, "stage2", "pair_fallback", "pair-choice model", "edge heads",
                  "pairs they are unsure of", "temporal + causal edge F1", "bench/pair_fallback.py", "sentence.pair_llm")


def unsure_pairs(head, probs, tau: float) -> list[int]:
    """Rows of ``probs`` (the head's probabilities per candidate pair) whose P(no relation) lies within
    ``tau`` of the head's threshold, the closest first."""
    none = head.classes.index("none")
    gap = [abs(float(row[none]) - head.threshold) for row in probs]
    return sorted((k for k, g in enumerate(gap) if g < tau or tau >= 1.0), key=lambda k: gap[k])


def describe_event(e) -> str:
    """One line of an event for the pair-choice program: type, trigger, date where stated, its sentence."""
    date = "-".join(f"{v:02d}" if i else str(v) for i, v in enumerate(e.date)) if e.date else ""
    return f"[{e.type}; {e.trigger!r}{'; ' + date if date else ''}] {' '.join(e.text.split())}"


class PairAsker:
    """The ``ask`` of ``temporal.edges`` / ``causal.edges`` (``pairs.asked_decisions``): the pairs the head is
    unsure of (``unsure_pairs``, at most ``sentence.pair_max`` a document) go to the pair-choice program in
    batches of ``sentence.pair_batch``; its answer replaces the head's decision, with the head's probability of
    the chosen relation; a pair it leaves unanswered, or answers with a relation the head does not know, keeps
    the head's. One answer serves both kinds (a pair asked for its temporal relation is not asked again for
    its causal one). What failed goes into ``issues``; ``answers`` ((A, B) → (temporal, causal)) is the memo
    of the program's answers, given where several askers share it (``bench/pair_fallback.py``)."""

    def __init__(self, pipe: Pipeline, run: DocumentRun | None, tau: float, issues: list[str],
                 answers: dict[tuple[str, str], tuple[str, str]] | None = None):
        self.pipe, self.run, self.tau, self.issues = pipe, run, tau, issues
        self.answers = {} if answers is None else answers
        self.sent = 0  # pairs sent to the program so far (``sentence.pair_max`` bounds it)

    def __call__(self, kind: str, pairs: list, head, probs, decisions: list[tuple[str, float]]) -> list[tuple[str, float]]:
        cfg = self.pipe.config.sentence
        key = lambda k: (pairs[k][0].id, pairs[k][1].id)  # noqa: E731
        rows = unsure_pairs(head, probs, self.tau)
        todo = [k for k in rows if key(k) not in self.answers][:max(0, cfg.pair_max - self.sent)]
        self.sent += len(todo)
        for i in range(0, len(todo), cfg.pair_batch):
            self._ask(kind, [(f"P{n + 1}", k) for n, k in enumerate(todo[i:i + cfg.pair_batch])], pairs, decisions, key)
        out = list(decisions)
        for k in rows:
            got = self.answers.get(key(k))
            rel = None if got is None else (got[0] if kind == "temporal" else got[1])
            rel = "none" if rel == "NONE" else rel
            if rel in head.classes:
                out[k] = (rel, float(probs[k][head.classes.index(rel)]))
        return out

    def _ask(self, kind: str, batch: list[tuple[str, int]], pairs: list, decisions, key) -> None:
        """One call of the program on ``batch`` ((label, row)); its answers go into ``answers``."""
        events = sorted({e.id: e for _, k in batch for e in pairs[k]}.values(), key=lambda e: e.index)
        try:
            with self.pipe.calling("stage2", "PairRelationChooser", self.run):
                res = self.pipe.programs.pair_relations(
                    events=[(e.id, describe_event(e)) for e in events],
                    pairs=[(lab, pairs[k][0].id, pairs[k][1].id) for lab, k in batch],
                    suggestions=[f"{kind} {decisions[k][0]} {decisions[k][1]:.2f}" for _, k in batch])
        except ProviderFault:
            raise
        except LMCallError as exc:
            self.issues.append(f"pair choices failed ({exc}); the heads decide")
            return
        self.issues.extend(f"pairs: {e}" for e in res.errors)
        by_label = {r.pair: r for r in (res.outputs or {}).get("relations", [])}
        for lab, k in batch:
            if lab in by_label:
                self.answers[key(k)] = (by_label[lab].temporal, by_label[lab].causal)


def asks_resolver(pipe: Pipeline) -> bool:
    """Whether the design asks the resolver which events of different batches state one occurrence
    (``sentence.resolver``, within ``merge.resolver``'s pairs and limits)."""
    return bool(pipe.config.sentence.resolver and pipe.config.merge.resolver)


def entity_list(pipe: Pipeline, doc: Document) -> list:
    """The document's entity list (``argus.designs.sentence.entities``): caption parties, the parties paragraphs'
    names, defined terms, proper names and unnamed people, groups and documents of the fact sentences; which are
    entities the heads file's ``entities`` part decides where it has one, the rules otherwise."""
    body = next((s.span[0] for s in doc.sections if s.kind != "caption"), 0)
    facts = pipe.fact_sentences(doc)
    return document_entities(doc.caption, doc.text[body:], [(s.id, s.text) for s in facts],
                             model=pipe.event_heads.parts.get("entities"), parties=party_sentences(doc))


def sentence_times(pipe: Pipeline, doc: Document) -> dict[str, EventTime]:
    """The time each fact sentence states, a year carried from earlier sentences (``sentence_time``)."""
    times, year = {}, None
    for s in pipe.fact_sentences(doc):
        times[s.id], year = sentence_time(s.text, year)
    return times


def extract_batch(pipe: Pipeline, doc: Document, chunk: Chunk, run: DocumentRun | None = None,
                  entities: list | None = None, readings: dict | None = None, times: dict | None = None,
                  edges: bool = False) -> MiniGraph:
    """One event per sentence of ``chunk`` (a batch of consecutive fact sentences), by choices:
    the heads' type and trigger, the choice program where they are unsure, participants from the
    entity list, time from the sentence; grounded; then Stage 2 over the batch's events.
    ``entities``, ``readings`` and ``times`` are the document's, worked out here when not given.
    ``edges``: without Stage 2, the batch's own edges by the pair heads and the pair-choice program
    (``batch_edges``: what an optimizer's minibatch of one batch runs; a document's edges are drawn
    after merging, over all its events)."""
    cfg = pipe.config.sentence
    idx = doc.index()
    sents = [idx[sid] for sid in chunk.sentence_ids]
    entities = pipe.sentence_entities(doc) if entities is None else entities
    times = sentence_times(pipe, doc) if times is None else times
    if readings is None:
        readings = dict(zip(chunk.sentence_ids, pipe.event_heads.read([s.text for s in sents])))
    issues: list[str] = []
    attempts: dict[str, int] = {}
    picks: dict[str, list[dict]] = {}
    chosen_words: dict = {}
    for s in sents:
        r = readings[s.id]
        if r.p_event < cfg.min_event_probability or not r.words:
            continue
        pick = trigger_pick(r, s.text) if cfg.event_words else r.ranked_words(1)[0][:3]
        if pick is not None:  # else a fragment, a citation, a name: no verb or event noun, no event
            chosen_words[s.id] = (s, pick)
    part = pipe.event_heads.parts.get("types")
    if part and not cfg.trigger_types:
        part = {k: v for k, v in part.items() if k != "model"}  # the lexicon's reading
    typed = trigger_types(part, [s.text for s, _ in chosen_words.values()],
                          [pick for _, pick in chosen_words.values()],
                          [readings[sid].type_probs for sid in chosen_words], pipe.event_heads.encoder)
    for (sid, (s, (word, a, b))), (etype, conf) in zip(chosen_words.items(), typed):
        if not doc.pleading:  # an opinion, a memo: an employment type only where its keywords say so
            etype = (rule_type(s.text) or ("other", ""))[0]
        picks[sid] = [{"type": etype, "trigger": (word, a, b), "confidence": conf}]
    mode, tau, why = pipe.sentence_routing()
    warn_once(why)
    unsure = [sid for sid in chunk.sentence_ids if mode == "model"
              and (sid not in picks or picks[sid][0]["confidence"] < tau)
              and readings[sid].p_event >= cfg.min_event_probability * 0.5]
    if unsure:
        chosen, more = _choose(pipe, doc, chunk, entities, readings, unsure, run, attempts)
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
    ents = [e for e in entities if e.id in named or any(mentions(n, joined) for n in (e.name, *e.aliases))]
    # the list's entities are sought in every fact sentence (an alias the batch does not use is still
    # the entity's); events in their own sentence
    every = [s.id for s in pipe.fact_sentences(doc)]
    grounded = ground_items(EventGraph(entities=ents, events=events), Aligner.for_document(doc), chunk.sentence_ids,
                            stage="sentence", prefix=f"{chunk.id}:", scope_of=lambda _: every,
                            keep_ungrounded=pipe.config.extraction.keep_ungrounded)
    ents, events = grounded.graph.entities, grounded.graph.events
    temporal, causal = [], []
    if pipe.sentence_stage2:
        temporal, causal = relate(pipe, doc.labeled(sents), chunk, ents, events, run, attempts, issues)
    elif edges:
        temporal, causal = batch_edges(pipe, doc, events, readings, run, issues)
    graph = EventGraph(entities=ents, events=events, temporal_edges=temporal, causal_edges=causal)
    return MiniGraph(chunk_id=chunk.id, graph=graph, attempts=attempts, issues=issues, spans=grounded.spans,
                     rejected=grounded.rejected, ungrounded=grounded.ungrounded)


def trigger_pick(reading, text: str) -> tuple[str, int, int] | None:
    """The trigger head's most probable word of ``text`` that can name an event (a verb or an event
    noun, ``argus.text.words.event_word``); None when the sentence has none."""
    allowed = {a for _, a, _ in event_words(text)}
    for word, a, b, _ in reading.ranked_words(len(reading.words)):
        if a in allowed:
            return word, a, b
    return None


def _names_event(text: str, a: int, b: int) -> bool:
    """Whether the span [a, b) of ``text`` holds a word that can name an event."""
    return any(a <= x < b for _, x, _ in event_words(text))


def _choose(pipe: Pipeline, doc: Document, chunk: Chunk, entities, readings, unsure: list[str], run,
            attempts: dict) -> tuple[dict[str, list[dict]], list[str]]:
    """The choice program's events for the ``unsure`` sentences of ``chunk`` (the whole batch is shown
    for context); choices that break the rules (a trigger not in its sentence) are dropped."""
    idx = doc.index()
    sents = [idx[sid] for sid in chunk.sentence_ids]
    words = {s.id: chunk_phrases([s.text], max_words=3) for s in sents}
    issues: list[str] = []
    try:
        with pipe.calling("sentence", "SentenceEventChooser", run):
            res = pipe.programs.sentence_events(
                sentences=[(s.id, s.text) for s in sents], entities=[(e.id, e.name, e.role) for e in entities],
                suggestions=suggestions(readings, chunk.sentence_ids), words=words)
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
        if pipe.config.sentence.event_words and not _names_event(s.text, at, at + len(ev.trigger)):
            issues.append(f"sentence: {ev.sentence} trigger {ev.trigger!r} is no verb or event noun; the heads' pick stays")
            continue
        time = ev.time if _time_ok(ev.time, s.text) else None
        # the event's confidence: how probable the heads found the type the model chose
        out.setdefault(ev.sentence, []).append({
            "type": ev.type, "trigger": (ev.trigger, at, at + len(ev.trigger)),
            "confidence": readings[ev.sentence].type_probs.get(ev.type, 0.0),
            "participants": [p for p in ev.participants if p.entity in known] or None, "time": time})
    return out, issues


def extract(pipe: Pipeline, source: RawDocument | str | Path, ledger: CostLedger | None = None) -> DocumentEKG:
    """The sentence-level design on one document (``extract_batch`` per batch, then merging, date
    order and grounding)."""
    cfg = pipe.config.sentence
    with document_run(pipe, source, ledger) as (doc, run):
        facts = pipe.fact_sentences(doc)
        ids = [s.id for s in facts]
        chunks = [Chunk(id=f"C{k + 1}", sentence_ids=ids[i:i + cfg.batch_size],
                        theme=f"sentences {ids[i]}–{ids[min(i + cfg.batch_size, len(ids)) - 1]}")
                  for k, i in enumerate(range(0, len(ids), cfg.batch_size))]
        with run.timed("extraction"):
            entities = optional_step(run, "entities", [], lambda: pipe.sentence_entities(doc))
            readings = dict(zip(ids, pipe.event_heads.read([s.text for s in facts])))
            times = sentence_times(pipe, doc)
            minigraphs = pipe.in_parallel(lambda ch: extract_batch(pipe, doc, ch, run, entities, readings, times), chunks)
            # parties no fact sentence names
            chunks, minigraphs = optional_step(run, "parties", (chunks, minigraphs),
                                               lambda: with_parties(doc, entities, chunks, minigraphs))
        with run.timed("merge"):
            graph, log = pipe.merge(doc, minigraphs, run) if asks_resolver(pipe) else merge_minigraphs(minigraphs)
            if cfg.edge_heads:
                graph = optional_step(run, "occurrences", graph, lambda: join_occurrences(pipe, doc, graph, log, readings))
            document_edges(pipe, doc, graph, log, readings, run)
            graph, rejected = pipe.ground(doc, graph, chunks, stage="sentence")
        if not facts:
            run.warnings.append("no fact sentences in the narrative: the graph is empty")
        return assemble(pipe.config, doc, run, "sentence", chunks, minigraphs, graph, log, rejected)


def document_edges(pipe: Pipeline, doc, graph, log: list, readings: dict | None = None, run: DocumentRun | None = None
                   ) -> None:
    """The document's temporal and causal edges, added to ``graph`` (its events merged): BEFORE / SAME_TIME
    in date order where ``sentence.date_edges``, then the pair heads' edges where ``sentence.edge_heads``
    (``head_edges``). ``doc`` needs only ``sentences`` (id, text): the edges on gold events
    (``argus.training.edges.edges_on_gold``) are drawn by this same function."""
    cfg = pipe.config.sentence
    if cfg.date_edges:
        optional_step(run, "date edges", None, lambda: add_date_edges(graph, date_edges(
            [DatedEvent(e.id, e.time.value or "", tuple(e.evidence)) for e in graph.events
             if e.time.kind == "explicit"]), log))
    if cfg.edge_heads:
        optional_step(run, "edges", None, lambda: head_edges(pipe, doc, graph, log, readings, run))


def optional_step(run: DocumentRun | None, name: str, fallback, step):
    """``step()``, or ``fallback`` with a warning naming the step where it raises an unexpected error: the
    entity list, the parties, same-occurrence joining and the edges each enrich a graph that stands without
    them, so one odd text that trips one of them costs that part, never the document. A provider's fault
    (the model is down, out of quota) still stops the run, as everywhere."""
    try:
        return step()
    except ProviderFault:
        raise
    except Exception as exc:  # noqa: BLE001 — any error of an optional step, reported and left out
        log = logging.getLogger("argus")
        log.warning("%s: the %s step failed (%s: %s); the graph is written without it",
                    run.doc_id if run else "a graph", name, type(exc).__name__, exc)
        log.debug("the %s step's error", name, exc_info=True)
        if run is not None:
            run.warnings.append(f"the {name} step failed ({type(exc).__name__}: {exc}); the graph is written without it")
        return fallback


def suggestions(readings: dict[str, object], ids: list[str], n: int = 3) -> str:
    """The heads' reading of each sentence, one line per sentence id, for the choice program."""
    lines = []
    for sid in ids:
        r = readings.get(sid)
        if r is None:
            continue
        types = ", ".join(f"{t} {p:.2f}" for t, p in r.ranked_types(n))
        words = ", ".join(f"{w!r}" for w, _, _, _ in r.ranked_words(n))
        lines.append(f"{sid}: type {types}; trigger {words}; states an event {r.p_event:.2f}")
    return "\n".join(lines)


def join_occurrences(pipe: Pipeline, doc: Document, graph, log: list, readings: dict | None = None):
    """``graph`` with the events the same-occurrence head (``occurrences``) reads as one occurrence
    joined, where the heads file has it."""
    part = pipe.event_heads.parts.get("occurrences")
    if not part or not part.get("same") or len(graph.events) < 2:
        return graph
    from argus.designs.sentence.occurrences import same_pairs
    from argus.designs.sentence.pairs import PairHead

    pairs = same_pairs(PairHead.from_json(part["same"]), _pair_events(doc, graph.events, readings))
    return merge_same_occurrences(graph, pairs, log)


def _pair_events(doc: Document, events: list, readings: dict | None):
    from argus.designs.sentence.pairs import pair_events

    return pair_events(events, {s.id: s.text for s in doc.sentences},
                       {s.id: i for i, s in enumerate(doc.sentences)},
                       {sid: r.p_event for sid, r in (readings or {}).items()})


def drawn_edges(pipe: Pipeline, doc: Document, events: list, readings: dict | None, run: DocumentRun | None,
                issues: list[str]) -> dict[str, list[tuple[str, str, str, float]]]:
    """kind ("temporal", "causal") → (source, target, relation, probability) the heads file's pair heads
    draw among ``events``, the pairs they are unsure of decided by the pair-choice program where
    ``pair_routing`` sends them ({} where the file has no edge heads)."""
    part = pipe.event_heads.parts.get("edges")
    if not part or len(events) < 2:
        return {}
    from argus.designs.sentence import causal, temporal
    from argus.designs.sentence.pairs import PairHead

    mode, tau, why = pair_routing(pipe)
    warn_once(why)
    ask = PairAsker(pipe, run, tau, issues) if mode == "model" else None
    read = _pair_events(doc, events, readings)
    out = {}
    if part.get("temporal"):
        out["temporal"] = temporal.edges(PairHead.from_json(part["temporal"]), read, ask)
    if part.get("causal"):
        out["causal"] = causal.edges(PairHead.from_json(part["causal"]), read, ask, cues=pipe.config.sentence.cue_edges)
    return out


def head_edges(pipe: Pipeline, doc: Document, graph, log: list, readings: dict | None = None,
               run: DocumentRun | None = None) -> None:
    """The document's temporal and causal edges by ``drawn_edges`` over all its events (after merging);
    ``readings``: the heads' reading of each fact sentence."""
    issues: list[str] = []
    for kind, edges in drawn_edges(pipe, doc, graph.events, readings, run, issues).items():
        add_head_edges(graph, kind, edges, log)
    if run is not None:
        run.warnings += issues


def batch_edges(pipe: Pipeline, doc: Document, events: list[Event], readings: dict, run: DocumentRun | None,
                issues: list[str]) -> tuple[list[TemporalEdge], list[CausalEdge]]:
    """The temporal and causal edges among one batch's ``events`` by ``drawn_edges`` (what an optimizer's
    minibatch of one batch runs), both events' sentences as evidence."""
    evidence = {e.id: list(e.evidence) for e in events}
    drawn = drawn_edges(pipe, doc, events, readings, run, issues)

    def made(kind: str, cls):
        return [cls(source=s, target=t, relation=rel, evidence=list(dict.fromkeys(evidence[s] + evidence[t])))
                for s, t, rel, _ in drawn.get(kind, [])]

    return made("temporal", TemporalEdge), made("causal", CausalEdge)


def _find_word(text: str, phrase: str) -> int | None:
    """Where ``phrase`` stands in ``text`` as whole words (first occurrence), or None."""
    m = re.search(r"(?<!\w)" + re.escape(phrase) + r"(?!\w)", text) if phrase.strip() else None
    return m.start() if m else None


def _time_ok(time, text: str) -> bool:
    """A chosen time is kept when it is unknown, an ISO date, or a phrase of the sentence."""
    if time.kind == "unknown" or not time.value:
        return time.kind == "unknown"
    if time.kind == "explicit":
        return re.fullmatch(r"\d{4}(?:-\d{2}){0,2}", time.value) is not None
    return time.value.lower() in text.lower()
