"""One event per occurrence: neighbouring sentences that state the same occurrence become one event.

A complaint often states one occurrence in two sentences ("On May 3, Palmer emailed Plaintiff.
The email stated that her position had been eliminated."); the gold graphs hold one event with both
sentences as evidence, and the sentence design, one event per sentence, would hold two. The
**same-occurrence head** (a pair head, ``argus.designs.sentence.pairs``) reads each event and the
next ``WINDOW`` events in narrative order: how far apart their sentences are, whether the later
sentence opens by pointing back ("She", "In that email", "The letter stated", "Specifically"),
whether it states a new date or moves time on ("later", "the next day"), their types and trigger
lemmas, the participants they share. Where it answers "same", the later event joins the earlier
(evidence, participants and time pooled; the earlier event's type and trigger kept).

It is trained (``argus.training.occurrences``), like the edge heads, on the design's own graphs of the
training complaints: two events are the same occurrence where one gold event has both their sentences as
evidence.
"""

from __future__ import annotations

import re

import numpy as np

from argus.designs.sentence.pairs import PairEvent, PairHead, cue_flags, date_order, one_per_target, opening
from argus.graph.schema import EVENT_TYPES
from argus.text.words import lemma

WINDOW = 2
CLASSES = ("none", "SAME")
_C = re.compile
CUES: tuple[tuple[str, re.Pattern], ...] = (
    ("pronoun", _C(r"^\W*(?:she|he|they|it|this|that|these|those|there|his|her|their)\b", re.I)),
    ("pointer", _C(r"\b(?:in|during|at) (?:that|the|this|his|her|their) (?:same )?(?:e-?mail|letter|message|memo|"
                   r"meeting|conversation|call|text|note|notice|review|evaluation|complaint|report)\b", re.I)),
    ("document_said", _C(r"\b(?:the|that|this) (?:e-?mail|letter|message|memo|notice|warning|text|note|review|"
                         r"evaluation|complaint|report|write-?up|plan|pip)\b.{0,40}\b(?:stat\w*|said|read|say\w*|"
                         r"inform\w*|explain\w*|not\w*|indicat\w*|claim\w*|assert\w*|cit\w*|accus\w*|"
                         r"describ\w*)\b", re.I)),
    ("specifically", _C(r"\b(?:specifically|in particular|among other things|for example|in addition|also|"
                        r"further|moreover|stated|added|explained|continued)\b", re.I)),
    ("quote", _C(r"[\"“”]")),
    ("moves_on", _C(r"\b(?:later|then|thereafter|subsequently|next|following|after|afterwards?|the next|"
                    r"weeks?|months?|days?|again)\b", re.I)),
    ("date", _C(r"\b(?:on|in|by) (?:or about )?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)\w*\b", re.I)),
)
_SAY = frozenset("say state tell write explain add inform claim note ask respond reply email text call".split())


def feature_names() -> list[str]:
    names = ["gap=1", "gap=2", "gap>2", "distance=1", "same_type", "same_trigger", "shared_participants",
             "date_same", "date_differs", "b_dated", "b_relative", "b_says", "a_says", "b_p_event"]
    names += [f"b_opening:{n}" for n, _ in CUES] + [f"b:{n}" for n, _ in CUES]
    names += [f"a_type={t}" for t in EVENT_TYPES] + [f"b_type={t}" for t in EVENT_TYPES]
    return names


def _lemma(word: str) -> str:
    return lemma(word.split()[0]) if word.split() else ""


def features(a: PairEvent, b: PairEvent, events=None) -> list[float]:
    gap = b.position - a.position
    order = date_order(a, b)
    row = [float(gap == 1), float(gap == 2), float(gap > 2), float(b.index - a.index == 1), float(a.type == b.type),
           float(_lemma(a.trigger) == _lemma(b.trigger)), float(bool(a.participants & b.participants)),
           float(order == 0), float(order in (-1, 1)), float(b.date is not None), float(b.relative),
           float(_lemma(b.trigger) in _SAY), float(_lemma(a.trigger) in _SAY), b.p_event]
    row += cue_flags(opening(b.text, 6), CUES) + cue_flags(b.text, CUES)
    row += [float(a.type == t) for t in EVENT_TYPES] + [float(b.type == t) for t in EVENT_TYPES]
    return row


def candidates(events: list[PairEvent]) -> list[tuple[PairEvent, PairEvent]]:
    """Each event and the next ``WINDOW`` events, the earlier first."""
    return [(a, b) for i, a in enumerate(events) for b in events[i + 1:i + 1 + WINDOW]]


def same_pairs(head: PairHead, events: list[PairEvent]) -> list[tuple[str, str, float]]:
    """(earlier, later, probability) for each later event the head joins to an earlier one (the most
    probable earlier event where several)."""
    pairs = candidates(events)
    if not pairs:
        return []
    x = np.asarray([features(a, b) for a, b in pairs])
    return [(a.id, b.id, p) for a, b, _, p in one_per_target(pairs, head.decide(x))]  # the one relation: SAME


__all__ = ["CUES", "WINDOW", "candidates", "features", "same_pairs"]
