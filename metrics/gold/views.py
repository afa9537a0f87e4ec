"""Graphs as matching sees them: light views of entities, events and edges whose evidence is in
gold sentence ids, built from any graph shape (``EventGraph``, ``DocumentGraph``, dict, gold).

``to_gold_space`` translates a ``DocumentEKG``'s evidence through ``sentence_alignment``; an event
whose evidence maps to no gold sentence keeps an empty evidence set (it can match nothing).
``describe_event_for_match`` writes one event as text for the LLM event-match judge.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

from argus.graph.schema import DocumentEKG, id_order
from metrics.gold.alignment import sentence_alignment
from metrics.gold.common import get_field, sorted_ids
from metrics.gold.document import GoldDocument
from metrics.gold.normalize import normalize_entity_name, normalize_verb


@dataclass
class EntityView:
    id: str
    name: str
    kind: str
    role: str
    aliases: tuple[str, ...] = ()

    @property
    def names(self) -> frozenset[str]:
        return frozenset(n for n in (normalize_entity_name(x) for x in (self.name, *self.aliases)) if n)

    @property
    def norm_name(self) -> str:
        return normalize_entity_name(self.name)


@dataclass
class EventView:
    id: str
    type: str
    verb: str
    trigger: str = ""
    evidence: frozenset[str] = frozenset()  # gold sentence ids (after translation)
    source_evidence: tuple[str, ...] = ()  # as written in the source graph (pred ids before translation)
    participants: tuple[tuple[str, str], ...] = ()
    time: str = ""
    frame: str | None = None

    @property
    def norm_verb(self) -> str:
        return normalize_verb(self.verb)


@dataclass
class EdgeView:
    source: str
    target: str
    relation: str
    evidence: tuple[str, ...] = ()


@dataclass
class GraphView:
    """A lightweight graph in gold sentence space (evidence may be empty; no validation)."""

    entities: list[EntityView] = field(default_factory=list)
    events: list[EventView] = field(default_factory=list)
    temporal_edges: list[EdgeView] = field(default_factory=list)
    causal_edges: list[EdgeView] = field(default_factory=list)
    sentence_text: dict[str, str] = field(default_factory=dict)  # gold id -> text
    sentence_order: dict[str, int] = field(default_factory=dict)  # gold id -> position in the document
    translated: bool = False  # evidence was mapped from another sentence numbering
    notes: list[str] = field(default_factory=list)

    def event(self, eid: str) -> EventView | None:
        return next((e for e in self.events if e.id == eid), None)

    def entity(self, eid: str) -> EntityView | None:
        return next((e for e in self.entities if e.id == eid), None)

    def position(self, sid: str) -> int:
        return self.sentence_order.get(sid, id_order(sid)[0])

    def as_dict(self) -> dict:
        return {
            "entities": [asdict(e) for e in self.entities],
            "events": [{**asdict(e), "evidence": sorted_ids(e.evidence)} for e in self.events],
            "temporal_edges": [asdict(e) for e in self.temporal_edges],
            "causal_edges": [asdict(e) for e in self.causal_edges],
            "translated": self.translated, "notes": list(self.notes),
        }


def _time_str(t: Any) -> str:
    if t is None:
        return ""
    kind, value = get_field(t, "kind", ""), get_field(t, "value")
    return f"{kind}:{value}" if value else str(kind or "")


def graph_view(graph: Any, sentence_text: Mapping[str, str] | None = None,
               evidence_map: Mapping[str, list[str]] | None = None) -> GraphView:
    """A ``GraphView`` of an ``EventGraph`` / ``DocumentGraph`` / dict graph.

    With ``evidence_map`` (source sentence id -> gold ids) the evidence is translated; without it
    the ids are taken as they are (gold against gold needs no translation).
    """
    if isinstance(graph, GraphView):
        return graph
    if isinstance(graph, GoldDocument):
        return graph_view(graph.graph, graph.sentence_text if sentence_text is None else sentence_text)
    ents = [EntityView(id=get_field(e, "id"), name=get_field(e, "name", ""), kind=get_field(e, "kind", "other"),
                       role=get_field(e, "role", "other"), aliases=tuple(get_field(e, "aliases", []) or ()))
            for e in (get_field(graph, "entities", []) or [])]
    events = []
    for e in get_field(graph, "events", []) or []:
        src = tuple(get_field(e, "evidence", []) or ())
        if evidence_map is None:
            ev = frozenset(src)
        else:
            ev = frozenset(g for s in src for g in evidence_map.get(s, ()))
        parts = tuple((get_field(p, "entity"), get_field(p, "role", "")) for p in (get_field(e, "participants", []) or []))
        events.append(EventView(id=get_field(e, "id"), type=get_field(e, "type", "other"), verb=get_field(e, "verb", ""),
                                trigger=get_field(e, "trigger", "") or "", evidence=ev, source_evidence=src,
                                participants=parts, time=_time_str(get_field(e, "time")), frame=get_field(e, "frame")))

    def edges(key: str) -> list[EdgeView]:
        return [EdgeView(get_field(x, "source"), get_field(x, "target"), get_field(x, "relation"), tuple(get_field(x, "evidence", []) or ()))
                for x in (get_field(graph, key, []) or [])]

    text = dict(sentence_text or {})
    order = {sid: i for i, sid in enumerate(sorted(text, key=id_order))} if text else {}
    return GraphView(ents, events, edges("temporal_edges"), edges("causal_edges"), text, order,
                     translated=evidence_map is not None)


def to_gold_space(ekg: DocumentEKG, gold: GoldDocument) -> GraphView:
    """The EKG's document graph with every evidence id translated into gold sentence ids.

    Events whose evidence maps to no gold sentence keep an empty evidence set (they cannot match).
    """
    alignment = sentence_alignment(ekg.sentences, gold.sentences)
    view = graph_view(ekg.graph, gold.sentence_text, alignment)
    view.sentence_order = {s.id: i for i, s in enumerate(gold.sentences)}
    empty = [e.id for e in view.events if not e.evidence]
    if empty:
        view.notes.append(f"{len(empty)} predicted event(s) with evidence aligned to no gold sentence: {', '.join(empty)}")
    return view


def as_view(x: Any, gold: GoldDocument | None = None) -> GraphView:
    """``x`` as a ``GraphView`` in gold sentence ids; a ``DocumentEKG`` needs its ``GoldDocument``."""
    if isinstance(x, GraphView):
        return x
    if isinstance(x, DocumentEKG):
        if gold is None:
            raise TypeError("a DocumentEKG can only be scored against a GoldDocument (its sentence numbering differs)")
        return to_gold_space(x, gold)
    if isinstance(x, GoldDocument):
        v = graph_view(x.graph, x.sentence_text)
        v.sentence_order = {s.id: i for i, s in enumerate(x.sentences)}
        return v
    v = graph_view(x, gold.sentence_text if gold is not None else None)
    if gold is not None:
        v.sentence_order = {s.id: i for i, s in enumerate(gold.sentences)}
    return v


def describe_event_for_match(event: Any, graph: Any = None, sentence_text_by_id: Mapping[str, str] | None = None) -> str:
    """A readable description of one event (type, verb, trigger, participants, time, evidence text).

    ``event`` is an ``EventView`` or a schema ``Event``; ``graph`` (any graph shape, optional)
    resolves participant ids to names; evidence texts come from ``sentence_text_by_id``.
    """
    ents = {}
    if graph is not None:
        for e in get_field(graph, "entities", []) or []:
            ents[get_field(e, "id")] = get_field(e, "name", "")
    if isinstance(event, EventView):
        etype, verb, trig, parts, time, ev = event.type, event.verb, event.trigger, event.participants, event.time, event.evidence
    else:
        etype, verb, trig = get_field(event, "type"), get_field(event, "verb", ""), get_field(event, "trigger", "")
        parts = tuple((get_field(p, "entity"), get_field(p, "role", "")) for p in (get_field(event, "participants", []) or []))
        time, ev = _time_str(get_field(event, "time")), get_field(event, "evidence", []) or []
    lines = [f"{etype} event: verb '{verb}', trigger '{trig}'"]
    if parts:
        lines.append("participants: " + "; ".join(f"{ents.get(eid, eid)} ({role})" for eid, role in parts))
    if time:
        lines.append(f"time: {time}")
    texts = sentence_text_by_id or {}
    for sid in sorted_ids(ev):
        lines.append(f"[{sid}] {texts.get(sid, '')}".rstrip())
    if not ev:
        lines.append("(no evidence sentence)")
    return "\n".join(lines)

