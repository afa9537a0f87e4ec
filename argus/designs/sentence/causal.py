"""Causal edges of the sentence design: CAUSES and ENABLES, the cause never after its effect.

A complaint alleges causation in the effect's sentence ("because she complained", "in retaliation
for her report", "as a result", "which allowed him to continue"), and the cause is often far
earlier: the protected activity of a retaliation claim (a complaint, a charge, a leave) and the
adverse action that follows it. Two sieves, the more precise first:

1. ``cue_edges``: an effect sentence that names its causes after a causal connective ("in
   retaliation for her complaint and her EEOC charge", "as a result of the assault and the
   demotion", "emboldened by its outcome", "because she complained") gets an edge from each cause it
   names: the nearest earlier event whose trigger the noun (or verb) nominalizes ("complaint" ←
   "complained", "termination" ← "terminated"), else the nearest earlier event of the type the noun
   names ("assault" → harassment). "Emboldened by" is ENABLES, every other connective CAUSES.
2. the **causal head** (a pair head, ``argus.designs.sentence.pairs``), which may add one more cause to
   each effect. It reads every pair of events at most ``WINDOW`` apart in narrative order, the
   earlier as the cause:

- the cue phrases of the later sentence (its opening and the whole), and of the earlier one
  ("which led to", "resulting in");
- whether the later sentence names the earlier event ("in retaliation for her complaint" names a
  ``complaint``): the earlier event's trigger lemma or its type's words among the later sentence's;
- the type pair, as a smoothed rate learned from the training complaints (protected activity →
  adverse action, complaint → investigation), and each type;
- distance, shared participants, and date order (a cause is never dated after its effect).

Each effect gets at most one cause from the head, the most probable; the head's threshold on "no
edge" is chosen inside the training complaints (``argus.training.edges`` trains it). The cue sieve is
written, not learned; cross-validated by complaint it adds causal edges at a higher precision than
the head's (docs/figures.md).
"""

from __future__ import annotations

import re
from functools import lru_cache

import numpy as np

from argus.designs.sentence.pairs import (PairEvent, PairHead, asked_decisions as _asked, cue_flags, date_order,
                                         one_per_target, opening)
from argus.graph.schema import EVENT_TYPES
from argus.text.words import lemma

KIND = "causal"  # what the pair-choice program is asked (``pairs.asked_decisions``)
#: how far back in narrative order a cause is sought
WINDOW = 40
CLASSES = ("none", "CAUSES", "ENABLES")
_C = re.compile
CUES: tuple[tuple[str, re.Pattern], ...] = (
    ("because", _C(r"\b(?:because|since|due to|on account of|for (?:having|her|his|their) )\b", re.I)),
    ("retaliation", _C(r"\bretaliat\w*", re.I)),
    ("result", _C(r"\b(?:as a (?:direct |proximate )?(?:result|consequence)|result\w*|consequen\w*|therefore|thus|"
                  r"accordingly)\b", re.I)),
    ("cause", _C(r"\b(?:caus\w*|led to|lead to|leading to|prompt\w*|trigger\w*|in response to|responded|"
                 r"in light of|based on)\b", re.I)),
    ("enable", _C(r"\b(?:allow\w*|enabl\w*|permit\w*|let|free to|continu\w*|without (?:any )?(?:investigat|"
                  r"consequence|discipline)\w*|failed to|never)\b", re.I)),
    ("after", _C(r"\b(?:after|following|shortly|soon|within|days? later|weeks? later|the next day)\b", re.I)),
    ("adverse", _C(r"\b(?:terminat\w*|fired|demot\w*|disciplin\w*|suspend\w*|reduc\w*|remov\w*|denied|"
                   r"warning|write-?up|cut|transferr\w*)\b", re.I)),
)
#: words that name an event of a type in a later sentence ("her complaint", "his leave")
TYPE_WORDS = {
    "complaint": ("complaint", "complain", "report", "grievance", "concern", "protest", "object"),
    "charge_filing": ("charge", "eeoc", "lawsuit", "file"),
    "leave": ("leave", "fmla", "absence"),
    "accommodation_request": ("accommodation", "request"),
    "medical": ("medical", "injury", "diagnos", "condition", "disability", "pregnan"),
    "investigation": ("investigation", "investigat"),
    "harassment": ("harass", "comment", "remark", "conduct"),
    "discrimination": ("discriminat",),
    "communication": ("email", "told", "said", "statement", "meeting"),
}
_DIST = (1, 2, 3, 5, 8, 15)

#: a causal connective and the noun phrases after it, in the effect's sentence ("in retaliation for her
#: complaint and her charge"); the phrases end at the clause's end
_CONNECTIVE = _C(r"\b(in (?:further |direct )?(?:retaliation|reprisal|response) (?:for|to)|as a (?:direct |proximate )?"
                 r"(?:result|consequence) of|because of|caused by|emboldened by|prompted by|in light of|on account of|"
                 r"due to|resulting from|citing)\s+([^.;:]{1,90})", re.I)
#: a causal conjunction before the plaintiff's own act ("because she complained", "after he had reported")
_CLAUSE = _C(r"\b(?:because|after|since|for having|for)\s+(?:she|he|they|plaintiffs?|(?:ms|mrs|mr|dr)\.? \w+)\s+"
             r"(?:had\s+)?(complained|reported|requested|asked|filed|took|opposed|objected|protested|sought|raised|"
             r"submitted)\b", re.I)
#: where a noun phrase after a connective ends ("her complaints | about Eversole")
_PHRASE_END = _C(r"\s(?:of|about|against|to|with|by|on|at|in|from|that|which|who|when|while|during|because|as|or|but)\s",
                 re.I)
#: nouns that name an event of a type ("the assault" names a harassment event)
NOUN_TYPES = {
    "complaint": "complaint", "report": "complaint", "grievance": "complaint", "concern": "complaint",
    "objection": "complaint", "opposition": "complaint", "protest": "complaint", "charge": "charge_filing",
    "lawsuit": "charge_filing", "leave": "leave", "absence": "leave", "assault": "harassment",
    "harassment": "harassment", "remark": "harassment", "comment": "harassment", "conduct": "harassment",
    "abuse": "harassment", "demotion": "demotion", "termination": "termination", "firing": "termination",
    "discharge": "termination", "investigation": "investigation", "finding": "investigation",
    "outcome": "investigation", "request": "accommodation_request", "pregnancy": "medical", "injury": "medical",
    "diagnosis": "medical", "condition": "medical", "disability": "medical", "surgery": "medical",
    "email": "communication", "letter": "communication", "announcement": "communication", "suspension": "discipline",
    "warning": "discipline", "pip": "discipline", "discipline": "discipline", "resignation": "resignation",
    "transfer": "schedule_change", "reassignment": "schedule_change", "removal": "schedule_change",
    "denial": "accommodation_denial", "refusal": "accommodation_denial", "revocation": "accommodation_denial",
    "exclusion": "discrimination",
}
#: the plaintiff's acts after a causal conjunction, by the type of event they name
VERB_TYPES = {"complain": "complaint", "report": "complaint", "object": "complaint", "oppose": "complaint",
              "protest": "complaint", "raise": "complaint", "submit": "complaint", "file": "charge_filing",
              "request": "accommodation_request", "ask": "accommodation_request", "seek": "accommodation_request",
              "take": "leave"}
#: how far back in narrative order a named cause is sought
CUE_WINDOW = 40


def _names(a: PairEvent, b: PairEvent) -> bool:
    """Whether ``b``'s sentence names ``a``: its trigger lemma or its type's words."""
    return _named(a.trigger, a.type, b.text, b.lemmas)


@lru_cache(maxsize=16384)
def _named(trigger: str, etype: str, text: str, lemmas: frozenset[str]) -> bool:
    # (kept per pair of texts: the features of one pair ask it of every event between them)
    trig = lemma(trigger.split()[0]) if trigger.split() else ""
    low = text.lower()
    if trig and len(trig) > 3 and (trig in lemmas or trig in low):
        return True
    return any(w in low for w in TYPE_WORDS.get(etype, ()))


def feature_names() -> list[str]:
    names = [f"distance<={d}" for d in _DIST] + ["distance_far", "same_sentence", "date_before", "date_after",
                                                  "shared_participants", "names_earlier", "type_pair_rate",
                                                  "a_p_event", "b_p_event", "nearest_named", "latest_of_its_type",
                                                  "named_between"]
    for where in ("b_opening", "b", "a"):
        names += [f"{where}:{name}" for name, _ in CUES]
    names += [f"a_type={t}" for t in EVENT_TYPES] + [f"b_type={t}" for t in EVENT_TYPES]
    return names


def features(a: PairEvent, b: PairEvent, rates: dict[str, float] | None = None,
             events: list[PairEvent] | None = None) -> list[float]:
    """The causal head's features of the pair (``a`` the earlier event, the candidate cause; ``events``
    the graph's events in narrative order, for what stands between them)."""
    d = b.index - a.index
    between = events[a.index + 1:b.index] if events else []
    named = _names(a, b)
    named_between = sum(_names(e, b) for e in between)
    order = date_order(a, b)
    row = [float(d <= k) for k in _DIST] + [float(d > _DIST[-1]), float(a.position == b.position),
                                            float(order == -1), float(order == 1),
                                            float(bool(a.participants & b.participants)), float(_names(a, b)),
                                            float((rates or {}).get(f"{a.type}>{b.type}", 0.0)), a.p_event, b.p_event,
                                            float(named and named_between == 0),
                                            float(not any(e.type == a.type for e in between)), float(min(named_between, 3)) / 3]
    row += cue_flags(opening(b.text), CUES) + cue_flags(b.text, CUES) + cue_flags(a.text, CUES)
    row += [float(a.type == t) for t in EVENT_TYPES] + [float(b.type == t) for t in EVENT_TYPES]
    return row


def candidates(events: list[PairEvent]) -> list[tuple[PairEvent, PairEvent]]:
    """Every pair at most ``WINDOW`` apart, the earlier (the candidate cause) first; a pair whose
    dates put the cause after its effect is no candidate."""
    return [(a, b) for i, a in enumerate(events) for b in events[i + 1:i + 1 + WINDOW] if date_order(a, b) != 1]


def _head_nouns(phrase: str, most: int = 3) -> list[str]:
    """The head noun of each of the first ``most`` noun phrases of ``phrase`` ("the assault and the
    demotion" → assault, demotion; "her complaints about Eversole" → complaints)."""
    out = []
    for part in re.split(r"\s+and\s+|,\s*(?:and\s+)?", phrase):
        words = re.findall(r"[A-Za-z]+", _PHRASE_END.split(f" {part} ")[0])
        if words:
            out.append(words[-1].lower())
        if len(out) >= most:
            break
    return out


def _named_cause(events: list[PairEvent], b: PairEvent, word: str, kinds: dict[str, str]) -> PairEvent | None:
    """The nearest event before ``b`` (not dated after it) that ``word`` names: its trigger's lemma, or the
    lemma's first five letters ("complaint" ← "complained"), else its type (``kinds``: word → type)."""
    w = lemma(word)
    want = kinds.get(w) or kinds.get(word)
    earlier = [a for a in events[max(0, b.index - CUE_WINDOW):b.index] if date_order(a, b) != 1]
    for a in reversed(earlier):
        trig = lemma(a.trigger.split()[0].lower()) if a.trigger.split() else ""
        if len(w) >= 4 and trig and (trig == w or (len(trig) >= 5 and trig[:5] == w[:5])):
            return a
    return next((a for a in reversed(earlier) if want and a.type == want), None)


def cue_edges(events: list[PairEvent]) -> list[tuple[str, str, str, float]]:
    """(cause, effect, relation, 1.0) for every cause an effect's sentence names after a causal
    connective or conjunction (the first sieve; see the module docstring)."""
    out: list[tuple[str, str, str, float]] = []
    for b in events:
        for m in _CONNECTIVE.finditer(b.text):
            rel = "ENABLES" if m.group(1).lower().startswith("emboldened") else "CAUSES"
            for noun in _head_nouns(m.group(2)):
                a = _named_cause(events, b, noun, NOUN_TYPES)
                if a is not None:
                    out.append((a.id, b.id, rel, 1.0))
        for m in _CLAUSE.finditer(b.text):
            a = _named_cause(events, b, m.group(1).lower(), VERB_TYPES)
            if a is not None:
                out.append((a.id, b.id, "CAUSES", 1.0))
    return list(dict.fromkeys(out))


def edges(head: PairHead, events: list[PairEvent], ask=None, cues: bool = True) -> list[tuple[str, str, str, float]]:
    """(cause, effect, relation, probability): the causes the effects' sentences name (``cue_edges``, where
    ``cues``), and for each effect its most probable cause where the head draws one (a pair the cues link
    keeps the cues' relation)."""
    named = cue_edges(events) if cues else []
    done = {(s, t) for s, t, _, _ in named}
    pairs = candidates(events)
    if not pairs:
        return named
    rates = head.meta.get("type_pair_rates", {})
    x = np.asarray([features(a, b, rates, events) for a, b in pairs])
    drawn = one_per_target(pairs, _asked(ask, KIND, pairs, head, x))
    return named + [(a.id, b.id, rel, p) for a, b, rel, p in drawn if (a.id, b.id) not in done]


__all__ = ["CUES", "CUE_WINDOW", "NOUN_TYPES", "VERB_TYPES", "WINDOW", "candidates", "cue_edges", "edges", "features"]
