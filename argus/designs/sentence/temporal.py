"""Temporal edges of the sentence design, sieve by sieve, most precise first.

1. ``date_edges``: BEFORE / SAME_TIME between events with explicit dates, each to the next one in
   date order;
2. the **temporal head** (``edges``): a pair head (``argus.designs.sentence.pairs``, trained by
   ``argus.training.edges``) over the pairs of events at most ``WINDOW`` apart in narrative order,
   which is how the gold graphs are annotated (two thirds of gold BEFORE edges join adjacent events;
   almost none reach further than four). It reads their distance, what their dates say, the cue
   words that open and fill both sentences ("after", "later", "the next day", "while", "during",
   "prior to", "had been"), whether either states a relative time, their types and the participants
   they share, and writes BEFORE (earlier event first), AFTER (read as BEFORE the other way), OVERLAP
   or SAME_TIME, or nothing; each event gets at most one edge from the events before it, the most
   probable (the head's threshold is chosen under that rule);
3. ``consistent``: the edges made consistent at the end: a BEFORE that contradicts the two events'
   dates is dropped, and every cycle of BEFORE edges is broken at its least probable edge
   (networkx), so the order is a partial order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from argus.designs.sentence.pairs import (PairEvent, PairHead, asked_decisions as _asked, cue_flags, date_order,
                                         one_per_target, opening)
from argus.graph.schema import EVENT_TYPES

KIND = "temporal"  # what the pair-choice program is asked (``pairs.asked_decisions``)
#: how far apart in narrative order two events may be for the temporal head to relate them
WINDOW = 4
CLASSES = ("none", "BEFORE", "AFTER", "OVERLAP", "SAME_TIME")
_C = re.compile
#: cue words, each group one feature, read in the later sentence's opening, in the whole later
#: sentence, and in the earlier sentence
CUES: tuple[tuple[str, re.Pattern], ...] = (
    ("after", _C(r"\b(?:after(?:wards?)?|later|then|thereafter|subsequently|following|next|eventually|ultimately|"
                 r"soon|by the time|upon)\b", re.I)),
    ("before", _C(r"\b(?:before|prior to|earlier|previously|had (?:been|already)|already|until)\b", re.I)),
    ("overlap", _C(r"\b(?:while|during|throughout|meanwhile|at the same time|continu\w*|ongoing|repeatedly|"
                   r"again|also|still)\b", re.I)),
    ("same", _C(r"\b(?:same (?:day|meeting|conversation|call|email|time)|that (?:day|meeting|conversation|call)|"
                r"in (?:the|that) (?:meeting|conversation|email|call|letter)|at (?:the|that) meeting|when)\b", re.I)),
    ("next_day", _C(r"\b(?:the (?:next|following) (?:day|morning|week|month)|days? later|weeks? later|months? later|"
                    r"the day after)\b", re.I)),
    ("date", _C(r"\b(?:on|in|by) (?:or about )?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)\w*\b", re.I)),
)


@dataclass(frozen=True)
class DatedEvent:
    event_id: str
    value: str
    evidence: tuple[str, ...]


def date_edges(events: list[DatedEvent]) -> list[tuple[str, str, str, list[str]]]:
    """(source, target, relation, evidence) between events with explicit dates: each event to the next
    one in date order (BEFORE), or SAME_TIME when both name the same day. Only full dates (year, month
    and day) or months are compared, at the precision both share."""
    def key(v: str) -> tuple[int, ...]:
        return tuple(int(x) for x in v.split("-"))

    dated = [e for e in events if re.fullmatch(r"\d{4}(?:-\d{2}){0,2}", e.value or "")]
    dated.sort(key=lambda e: key(e.value))
    out = []
    for a, b in zip(dated, dated[1:]):
        ka, kb = key(a.value), key(b.value)
        n = min(len(ka), len(kb))
        if n < 2:  # years alone order too coarsely
            continue
        if ka[:n] == kb[:n]:
            if len(ka) == len(kb) == 3:
                out.append((a.event_id, b.event_id, "SAME_TIME", list(dict.fromkeys(a.evidence + b.evidence))))
            continue
        out.append((a.event_id, b.event_id, "BEFORE", list(dict.fromkeys(a.evidence + b.evidence))))
    return out




def feature_names() -> list[str]:
    names = [f"distance={d}" for d in range(1, WINDOW + 1)] + ["sentence_gap", "same_sentence",
             "date_before", "date_same", "date_after", "one_dated", "a_relative", "b_relative",
             "shared_participants", "same_type", "a_p_event", "b_p_event", "between_p_event_max", "between_count"]
    for where in ("b_opening", "b", "a"):
        names += [f"{where}:{name}" for name, _ in CUES]
    names += [f"a_type={t}" for t in EVENT_TYPES] + [f"b_type={t}" for t in EVENT_TYPES]
    return names


def features(a: PairEvent, b: PairEvent, events: list[PairEvent] | None = None) -> list[float]:
    """The temporal head's features of the pair (``a`` earlier in narrative order)."""
    d = b.index - a.index
    order = date_order(a, b)
    row = [float(d == k) for k in range(1, WINDOW + 1)]
    row += [float(np.log1p(max(0, b.position - a.position))), float(a.position == b.position),
            float(order == -1), float(order == 0), float(order == 1), float((a.date is None) != (b.date is None)),
            float(a.relative), float(b.relative), float(bool(a.participants & b.participants)), float(a.type == b.type),
            a.p_event, b.p_event]
    between = events[a.index + 1:b.index] if events else []
    row += [max((e.p_event for e in between), default=0.0), float(len(between))]
    row += cue_flags(opening(b.text), CUES) + cue_flags(b.text, CUES) + cue_flags(a.text, CUES)
    row += [float(a.type == t) for t in EVENT_TYPES] + [float(b.type == t) for t in EVENT_TYPES]
    return row


def candidates(events: list[PairEvent]) -> list[tuple[PairEvent, PairEvent]]:
    """Pairs at most ``WINDOW`` apart in narrative order, the earlier first."""
    return [(a, b) for i, a in enumerate(events) for b in events[i + 1:i + 1 + WINDOW]]


def edges(head: PairHead, events: list[PairEvent], ask=None) -> list[tuple[str, str, str, float]]:
    """(source, target, relation, probability) the head draws among ``events`` (narrative order): at
    most one edge to each event from the events before it, the most probable (the gold graphs hold
    about one temporal edge per event); AFTER written as BEFORE the other way; then made
    ``consistent``."""
    pairs = candidates(events)
    if not pairs:
        return []
    x = np.asarray([features(a, b, events) for a, b in pairs])
    drawn = one_per_target(pairs, _asked(ask, KIND, pairs, head, x))
    return consistent([(b.id, a.id, "BEFORE", p) if rel == "AFTER" else (a.id, b.id, rel, p) for a, b, rel, p in drawn],
                      {e.id: e for e in events})


def consistent(edges: list[tuple[str, str, str, float]], events: dict[str, PairEvent]
               ) -> list[tuple[str, str, str, float]]:
    """``edges`` without a BEFORE that contradicts its events' dates, and without cycles of BEFORE
    (each cycle loses its least probable edge)."""
    import networkx as nx

    kept = []
    for s, t, rel, p in edges:
        if rel == "BEFORE" and s in events and t in events and date_order(events[s], events[t]) in (0, 1):
            continue
        kept.append((s, t, rel, p))
    g = nx.DiGraph()
    for s, t, rel, p in kept:
        if rel == "BEFORE":
            g.add_edge(s, t, p=p)
    while True:
        try:
            cycle = nx.find_cycle(g)
        except nx.NetworkXNoCycle:
            break
        u, v = min(((u, v) for u, v, *_ in cycle), key=lambda uv: g.edges[uv]["p"])
        g.remove_edge(u, v)
        kept = [e for e in kept if not (e[0] == u and e[1] == v and e[2] == "BEFORE")]
    return kept


__all__ = ["CUES", "DatedEvent", "WINDOW", "candidates", "consistent", "date_edges", "edges", "features"]
