"""The floor: an event graph with no language model, the yardstick every design is read against.

One event per fact sentence, typed by six keyword rules (hire; terminate / fire / discharge;
promote; resign; discriminate / harass; tell / say / email / complain / report), ``other`` when none
fires; the caption's parties as the entities. The trigger is the word the rule matched, or the
sentence's first past-tense verb (``lemminflect``), or its first word; the verb is the trigger's
lemma. Participants are the parties the sentence names. There are no edges.

It is deliberately simple: what twenty lines of rules score on the same documents with the same
scorer. It is not the product; ``argus eval`` and the README print it beside every method.
"""

from __future__ import annotations

from argus.designs.sentence.entities import caption_candidates
from argus.designs.sentence.types import RULES, rule_type
from argus.documents import Document
from argus.schema import Entity, Event, EventGraph, EventTime, Participant
from argus.words import lemma, mentions, past_tense_verbs, word_spans


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


def floor_graph(doc: Document, fact_ids: list[str]) -> EventGraph:
    """The floor's graph over the fact sentences ``fact_ids`` of ``doc``."""
    entities = [Entity(id=f"E{i + 1}", name=c.name, kind=c.kind, role=c.role, aliases=c.aliases)
                for i, c in enumerate(caption_candidates(doc.caption))]
    idx = doc.index()
    events = [floor_event(f"EV{k + 1}", sid, idx[sid].text, entities) for k, sid in enumerate(fact_ids)]
    return EventGraph(entities=entities, events=events)


__all__ = ["RULES", "floor_event", "floor_graph", "rule_type"]
