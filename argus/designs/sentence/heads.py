"""Encoder heads for the sentence-level design: what event a fact sentence states, and which word states it.

Two logistic heads on the frozen embedded sentence encoder (all-MiniLM-L6-v2, ``argus.models.embeddings``),
trained on the gold graphs of the annotated complaints like the fact gate's head, stored as JSON
(``argus/resources/event_heads_minilm.json``, no pickle):

- the **type head** reads the sentence's embedding plus which keyword rule of the floor fires
  (``argus.designs.floor.RULES``) and gives a distribution over the schema's event types and ``none`` (the
  sentence states no event);
- the **trigger head** scores every word of the sentence from its contextual vector (the mean of the
  encoder's token embeddings inside the word, ``argus.models.embeddings.encode_words``) and its verb form
  (``argus.text.words``: past tense or participle, auxiliary, first past-tense verb, the word before it).

This module reads the heads (``EventHeads.read``, ``load_event_heads``). Their training, the learned parts
of the heads file and their cross-validation by complaint live above the pipeline, in
``argus.training.heads`` (``argus train-events``): a part learns from the design's own graphs of the
training complaints, which the whole pipeline makes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from argus.designs.sentence.triggers import word_features
from argus.designs.sentence.types import type_features
from argus.errors import ConfigError
from argus.io import write_json_atomic
from argus.paths import RESOURCES

EMBEDDED_EVENT_HEADS = RESOURCES / "event_heads_minilm.json"
FORMAT = "argus-event-heads/1"
NONE = "none"
TYPE_FEATURES = "sentence+floor-rules/1"
WORD_FEATURES = "word-tokens+verb-form/1"


@dataclass
class SentenceReading:
    """What the heads read in one sentence."""

    type_probs: dict[str, float]
    words: list[tuple[str, int, int]]
    word_probs: list[float]

    @property
    def p_event(self) -> float:
        return 1.0 - self.type_probs.get(NONE, 0.0)

    def best_type(self) -> tuple[str, float]:
        """The most probable event type (``none`` left out) and its probability among event types."""
        events = {k: v for k, v in self.type_probs.items() if k != NONE}
        if not events:
            return "other", 0.0
        k = max(events, key=events.get)
        total = sum(events.values()) or 1.0
        return k, events[k] / total

    def ranked_types(self, n: int = 3) -> list[tuple[str, float]]:
        return sorted(((k, v) for k, v in self.type_probs.items() if k != NONE), key=lambda kv: -kv[1])[:n]

    def ranked_words(self, n: int = 3) -> list[tuple[str, int, int, float]]:
        order = np.argsort(-np.asarray(self.word_probs)) if self.word_probs else []
        return [(*self.words[i], float(self.word_probs[i])) for i in list(order)[:n]]


@dataclass
class EventHeads:
    """The two heads, as stored (``to_json`` / ``from_json``)."""

    encoder: str
    classes: list[str]
    type_weights: np.ndarray  # (k, d)
    type_bias: np.ndarray  # (k,)
    trigger_weights: np.ndarray  # (d',)
    trigger_bias: float
    meta: dict = field(default_factory=dict)
    #: the design's other learned parts, each JSON trained on the same complaints (``argus.training.heads.PARTS``):
    #: name → what its training module's ``fit_part`` returned
    parts: dict = field(default_factory=dict)

    def type_probs(self, features: np.ndarray) -> np.ndarray:
        if features.shape[1] != self.type_weights.shape[1]:
            raise ConfigError(f"event type head expects {self.type_weights.shape[1]} features, got {features.shape[1]} "
                              f"(encoder {self.encoder!r}, features {TYPE_FEATURES})")
        z = features @ self.type_weights.T + self.type_bias
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)

    def word_probs(self, features: np.ndarray) -> np.ndarray:
        if len(features) == 0:
            return np.zeros(0)
        return 1.0 / (1.0 + np.exp(-(features @ self.trigger_weights + self.trigger_bias)))

    def read(self, texts: list[str]) -> list[SentenceReading]:
        """What the heads read in each text."""
        if not texts:
            return []
        probs = self.type_probs(type_features(list(texts), self.encoder))
        out = []
        for p, (ws, f) in zip(probs, word_features(list(texts), self.encoder)):
            out.append(SentenceReading({c: float(v) for c, v in zip(self.classes, p)}, ws,
                                       [float(x) for x in self.word_probs(f)]))
        return out

    def to_json(self) -> dict:
        r = lambda a: [round(float(x), 6) for x in np.ravel(a)]  # noqa: E731
        return {
            "format": FORMAT, "encoder": self.encoder, "type_features": TYPE_FEATURES, "word_features": WORD_FEATURES,
            "classes": list(self.classes), "type_dim": int(self.type_weights.shape[1]),
            "type_weights": r(self.type_weights), "type_bias": r(self.type_bias),
            "trigger_dim": int(self.trigger_weights.shape[0]), "trigger_weights": r(self.trigger_weights),
            "trigger_bias": float(self.trigger_bias), "parts": self.parts, "meta": self.meta,
        }

    @classmethod
    def from_json(cls, data: dict) -> "EventHeads":
        if data.get("format") != FORMAT or data.get("type_features") != TYPE_FEATURES \
                or data.get("word_features") != WORD_FEATURES:
            raise ConfigError(f"not an argus event-heads file (format {FORMAT!r}, features {TYPE_FEATURES}, {WORD_FEATURES})")
        k, d = len(data["classes"]), int(data["type_dim"])
        tw = np.asarray(data["type_weights"], dtype="float32")
        trw = np.asarray(data["trigger_weights"], dtype="float32")
        if tw.size != k * d or trw.size != int(data["trigger_dim"]) or len(data["type_bias"]) != k:
            raise ConfigError("event-heads file is corrupt: weight counts do not match its dimensions")
        return cls(encoder=data["encoder"], classes=list(data["classes"]), type_weights=tw.reshape(k, d),
                   type_bias=np.asarray(data["type_bias"], dtype="float32"), trigger_weights=trw,
                   trigger_bias=float(data["trigger_bias"]), meta=data.get("meta", {}),
                   parts=data.get("parts", {}))

    def save(self, path: str | Path) -> Path:
        return write_json_atomic(Path(path), self.to_json())


def load_event_heads(ref: str = "embedded") -> EventHeads:
    """``embedded`` (the shipped heads) or a heads JSON file written by ``argus train-events``."""
    path = EMBEDDED_EVENT_HEADS if ref == "embedded" else Path(ref)
    if not path.is_file():
        raise ConfigError(f"event heads {ref!r}: no file at {path}" + (
            "; run 'argus train-events' to build it" if ref == "embedded" else ""))
    try:
        return EventHeads.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, KeyError) as exc:
        raise ConfigError(f"event heads {path}: not a readable heads file ({exc})") from exc


__all__ = ["EMBEDDED_EVENT_HEADS", "EventHeads", "NONE", "SentenceReading", "load_event_heads"]
