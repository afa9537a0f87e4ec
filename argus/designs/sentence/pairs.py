"""Pairs of events, as the temporal and causal heads read them.

An edge head is a small multinomial logistic model over hand-made features of an ordered pair of
events (the earlier event in narrative order first): how far apart they are, what their dates say,
the cue words of both sentences, their types, the participants they share. ``temporal`` and
``causal`` each define their candidate pairs, features and classes; this module gives them what
they share:

``PairEvent`` / ``pair_events``   what a head reads of one event of a graph, in narrative order;
``PairHead``                      the fitted model, stored as JSON (weights, classes, feature names, the
                                  threshold on "no edge" chosen inside the training complaints).

The heads are trained (``argus.training.pairs``, above the pipeline) on the events the design itself
finds, labelled by the gold edge between the gold events they align to, so what they learn is what the
scorer counts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from argus.graph.schema import id_order
from argus.text.words import lemma, word_spans

_ISO = re.compile(r"\d{4}(?:-\d{2}){0,2}")


@dataclass
class PairEvent:
    """One event of a graph as the pair heads read it."""

    id: str
    index: int  # narrative order among the graph's events
    position: int  # the first evidence sentence's place in the document
    text: str  # the evidence sentences' text
    type: str
    date: tuple[int, ...] | None  # an explicit date as (year, month[, day]); None when not stated
    relative: bool
    participants: frozenset[str]
    trigger: str
    lemmas: frozenset[str] = field(default_factory=frozenset)
    p_event: float = 1.0  # how probable the type head found it that the sentence states an event at all


def _date(value: str | None) -> tuple[int, ...] | None:
    if value and _ISO.fullmatch(value):
        return tuple(int(x) for x in value.split("-"))
    return None


def pair_events(events, sentence_text: dict[str, str], order: dict[str, int],
                p_event: dict[str, float] | None = None) -> list[PairEvent]:
    """``events`` (DocEvent or Event) in narrative order, read for the pair heads; ``sentence_text`` and
    ``order`` give each sentence id's text and place in the document, ``p_event`` how probable the type
    head found it that the sentence states an event (1.0 where not given)."""
    def first(e) -> int:
        return min((order.get(s, 1 << 30) for s in e.evidence), default=1 << 30)

    out = []
    for k, e in enumerate(sorted(events, key=lambda e: (first(e), id_order(e.id)))):
        text = " ".join(sentence_text.get(s, "") for s in e.evidence)
        out.append(PairEvent(
            id=e.id, index=k, position=first(e), text=text, type=e.type,
            date=_date(e.time.value) if e.time.kind == "explicit" else None, relative=e.time.kind == "relative",
            participants=frozenset(p.entity for p in e.participants), trigger=e.trigger,
            lemmas=frozenset(lemma(w) for w, _, _ in word_spans(text) if len(w) > 3),
            p_event=max((p_event or {}).get(s, 1.0) for s in e.evidence) if e.evidence else 1.0))
    return out


def date_order(a: PairEvent, b: PairEvent) -> int | None:
    """-1 when ``a``'s date is before ``b``'s, 0 when equal at the precision both share (month at
    least), 1 when after; None when either has no date or only years are comparable."""
    if a.date is None or b.date is None:
        return None
    n = min(len(a.date), len(b.date))
    if n < 2:
        return None
    x, y = a.date[:n], b.date[:n]
    return -1 if x < y else (0 if x == y else 1)


def cue_flags(text: str, cues: tuple[tuple[str, re.Pattern], ...]) -> list[float]:
    return list(_cue_flags(text, cues))


@lru_cache(maxsize=16384)
def _cue_flags(text: str, cues: tuple[tuple[str, re.Pattern], ...]) -> tuple[float, ...]:
    # (kept per text: a sentence's cues are read for every pair it is in)
    return tuple(1.0 if p.search(text) else 0.0 for _, p in cues)


def opening(text: str, words: int = 8) -> str:
    """The first ``words`` words of ``text`` (where a sentence says how it follows the last one)."""
    return " ".join(text.split()[:words])


@dataclass
class PairHead:
    """A fitted multinomial logistic head over pair features, stored as JSON."""

    classes: list[str]
    features: list[str]
    weights: np.ndarray  # (k, d)
    bias: np.ndarray  # (k,)
    threshold: float  # an edge is drawn where P(none) is below it
    meta: dict = field(default_factory=dict)

    def probs(self, x: np.ndarray) -> np.ndarray:
        if len(x) == 0:
            return np.zeros((0, len(self.classes)))
        if x.shape[1] != len(self.features):
            from argus.errors import ConfigError

            raise ConfigError(f"an edge head of the heads file reads {len(self.features)} features, this code writes "
                              f"{x.shape[1]}: retrain the heads ('argus train-events') with this version")
        z = x @ self.weights.T + self.bias
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)

    def decide(self, x: np.ndarray) -> list[tuple[str, float]]:
        """(relation or "none", its probability) per row."""
        return self.choose(self.probs(x))

    def choose(self, p: np.ndarray) -> list[tuple[str, float]]:
        """``decide`` on probabilities already computed (``probs``)."""
        none = self.classes.index("none")
        out = []
        for row in p:
            if row[none] >= self.threshold:
                out.append(("none", float(row[none])))
                continue
            masked = row.copy()
            masked[none] = -1.0
            k = int(masked.argmax())
            out.append((self.classes[k], float(row[k])))
        return out

    def to_json(self) -> dict:
        return {"classes": self.classes, "features": self.features,
                "weights": [[round(float(v), 6) for v in row] for row in self.weights],
                "bias": [round(float(v), 6) for v in self.bias], "threshold": round(float(self.threshold), 4),
                "meta": self.meta}

    @classmethod
    def from_json(cls, data: dict) -> "PairHead":
        w = np.asarray(data["weights"], dtype="float64")
        if w.shape != (len(data["classes"]), len(data["features"])):
            from argus.errors import ConfigError

            raise ConfigError("edge head in the heads file is corrupt: weights do not match its classes and features")
        return cls(list(data["classes"]), list(data["features"]), w, np.asarray(data["bias"], dtype="float64"),
                   float(data["threshold"]), data.get("meta", {}))


def asked_decisions(ask, kind: str, pairs: list, head: PairHead, x: np.ndarray) -> list[tuple[str, float]]:
    """The head's (relation or "none", probability) per pair, those it is unsure of decided by ``ask``
    where given: ``ask(kind, pairs, head, probabilities, decisions)`` returns the decisions it keeps or
    replaces (the sentence design's pair-choice program, ``argus.designs.sentence.design.PairAsker``)."""
    if ask is None:
        return head.decide(x)
    p = head.probs(x)
    return ask(kind, pairs, head, p, head.choose(p))


def one_per_target(pairs: list, decisions: list[tuple[str, float]]) -> list[tuple[PairEvent, PairEvent, str, float]]:
    """(a, b, relation, probability) of the most probable drawn pair into each later event ``b`` of
    ``pairs`` (the first where two tie); pairs decided "none" are left out."""
    best: dict[str, tuple[PairEvent, PairEvent, str, float]] = {}
    for (a, b), (rel, p) in zip(pairs, decisions):
        if rel != "none" and (b.id not in best or p > best[b.id][3]):
            best[b.id] = (a, b, rel, p)
    return list(best.values())


__all__ = ["PairEvent", "PairHead", "asked_decisions", "cue_flags", "date_order", "one_per_target", "opening",
           "pair_events"]
