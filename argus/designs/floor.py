"""The floor: an event graph with no language model, the yardstick every design is read against.

One event per fact sentence, typed by six keyword rules (hire; terminate / fire / discharge;
promote; resign; discriminate / harass; tell / say / email / complain / report), ``other`` when none
fires; the caption's parties as the entities. The trigger is the word the rule matched, or the
sentence's first past-tense verb (``lemminflect``), or its first word; the verb is the trigger's
lemma. Participants are the parties the sentence names. Its edges need no model either
(``floor_edges``): BEFORE between events in explicit-date order (SAME_TIME on the same day), and
BEFORE from each event to the next one in narrative order where the dates do not say otherwise;
no causal edge.

It is deliberately simple: what twenty lines of rules score on the same documents with the same
scorer. It is not the product; ``argus eval`` and the README print it beside every method.
"""

from __future__ import annotations

from argus.designs.sentence.entities import caption_candidates
from argus.designs.sentence.temporal import DatedEvent, date_edges
from argus.designs.sentence.time import sentence_time
from argus.designs.sentence.types import RULES, rule_type
from argus.text.documents import Document
from argus.graph.schema import Entity, Event, EventGraph, EventTime, Participant, TemporalEdge
from argus.text.words import lemma, mentions, past_tense_verbs, word_spans


def floor_event(eid: str, sid: str, text: str, entities: list[Entity]) -> Event:
    """The floor's event for one fact sentence."""
    words = word_spans(text)
    etype, trigger = rule_type(text) or ("other", None)
    if trigger is None:
        verbs = past_tense_verbs(text)
        trigger = verbs[0] if verbs else (words[0][0] if words else text.split()[0])
    named = [e for e in entities if any(mentions(n, text) for n in (e.name, *e.aliases))]
    parts = [Participant(entity=e.id, role="agent" if i == 0 else "patient") for i, e in enumerate(named)]
    return Event(id=eid, type=etype, verb=lemma(trigger), trigger=trigger, participants=parts,
                 time=EventTime(kind="unknown"), evidence=[sid], confidence=0.5)


def floor_edges(events: list[Event], texts: list[str]) -> list[TemporalEdge]:
    """The floor's temporal edges over ``events`` (in narrative order; ``texts`` their sentences):
    date order between events with explicit dates, then the adjacent-event chain (each event BEFORE
    the next) wherever the two dates do not contradict it."""
    dated, year = [], None
    for e, text in zip(events, texts):
        time, year = sentence_time(text, year)
        dated.append(time.value if time.kind == "explicit" else "")
    edges = [TemporalEdge(source=s, target=t, relation=rel, evidence=ev)
             for s, t, rel, ev in date_edges([DatedEvent(e.id, v, tuple(e.evidence)) for e, v in zip(events, dated) if v])]
    drawn = {(e.source, e.target) for e in edges} | {(e.target, e.source) for e in edges}
    for (a, va), (b, vb) in zip(zip(events, dated), list(zip(events, dated))[1:]):
        n = min(len(va), len(vb)) if va and vb else 0
        if (a.id, b.id) in drawn or (n >= 7 and (va[:n] > vb[:n] or (n == 10 and va == vb))):
            continue
        edges.append(TemporalEdge(source=a.id, target=b.id, relation="BEFORE", evidence=[*a.evidence, *b.evidence]))
    return edges


def floor_graph(doc: Document, fact_ids: list[str]) -> EventGraph:
    """The floor's graph over the fact sentences ``fact_ids`` of ``doc``."""
    entities = [Entity(id=f"E{i + 1}", name=c.name, kind=c.kind, role=c.role, aliases=c.aliases)
                for i, c in enumerate(caption_candidates(doc.caption))]
    idx = doc.index()
    events = [floor_event(f"EV{k + 1}", sid, idx[sid].text, entities) for k, sid in enumerate(fact_ids)]
    return EventGraph(entities=entities, events=events,
                      temporal_edges=floor_edges(events, [idx[sid].text for sid in fact_ids]))


__all__ = ["RULES", "floor_edges", "floor_event", "floor_graph", "rule_type"]
