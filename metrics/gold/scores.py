"""Precision, recall and F1 of a match against gold: per element (``PRF``), per tier
(``TierScores``, with the alignments behind the counts) and for all tiers (``GoldScores``).

``P = tp / (tp + fp)`` and ``R = tp / (tp + fn)``; a 0/0 is reported as 0.0, except that when both
sides are empty P = R = F1 = 1.0 (nothing to find, nothing wrongly found). Each such case leaves a
``note`` on the score. So an empty prediction against a non-empty gold graph scores
P = R = F1 = 0.0 (tp = fp = 0), not P = 1.0.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from metrics.base import precision_recall_f1


@dataclass
class PRF:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    precision: float = 0.0
    recall: float = 0.0
    f1: float = 0.0
    note: str = ""

    @classmethod
    def from_counts(cls, tp: int, fp: int, fn: int) -> "PRF":
        p, r, f = precision_recall_f1(tp, fp, fn)
        if tp + fp + fn == 0:
            return cls(0, 0, 0, p, r, f, "both sides empty: P=R=F1=1.0 by convention")
        note = ""
        if tp + fp == 0:
            note = "nothing predicted: precision 0/0 reported as 0.0"
        elif tp + fn == 0:
            note = "nothing in gold: recall 0/0 reported as 0.0"
        return cls(tp, fp, fn, p, r, f, note)

    def as_dict(self) -> dict:
        return asdict(self)

    def short(self) -> str:
        return f"P={self.precision:.2f} R={self.recall:.2f} F1={self.f1:.2f} ({self.tp}/{self.fp}/{self.fn})"


@dataclass
class TierScores:
    tier: str
    entities: PRF
    events: PRF
    temporal: PRF
    causal: PRF
    temporal_any: PRF | None = None  # relation-agnostic (relaxed / llm tiers)
    causal_any: PRF | None = None
    entity_alignment: dict[str, str] = field(default_factory=dict)  # pred id -> gold id
    event_alignment: dict[str, str] = field(default_factory=dict)
    judge_calls: int = 0

    def as_dict(self) -> dict:
        d = {"tier": self.tier}
        for k in ("entities", "events", "temporal", "causal", "temporal_any", "causal_any"):
            v = getattr(self, k)
            d[k] = v.as_dict() if v is not None else None
        d.update(entity_alignment=dict(self.entity_alignment), event_alignment=dict(self.event_alignment),
                 judge_calls=self.judge_calls)
        return d


@dataclass
class GoldScores:
    tiers: dict[str, TierScores]
    notes: list[str] = field(default_factory=list)
    feedback: str = ""

    def __getitem__(self, tier: str) -> TierScores:
        return self.tiers[tier]

    def as_dict(self) -> dict:
        return {"tiers": {k: v.as_dict() for k, v in self.tiers.items()}, "notes": list(self.notes),
                "feedback": self.feedback}

