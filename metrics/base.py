"""The result type every metric returns: a score in [0, 1], named components, and feedback text.

``feedback`` is written for two readers: a person auditing a graph, and GEPA's reflection model,
which rewrites a program's instructions from it. So it names concrete defects ("EV3 cites S99,
which is not a sentence of this chunk") rather than restating the score. ``by_stage`` splits the
feedback by the program responsible (``stage1`` for entities, events and evidence; ``stage2`` for
edges), so an optimizer can give each predictor only the defects it can fix.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

FEEDBACK_MAX_LINES = 40


def precision_recall_f1(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    """Precision, recall and F1 from counts — the one rule of the project for empty sides:

    - nothing predicted and nothing to find (tp = fp = fn = 0): P = R = F1 = 1.0;
    - otherwise a ratio of 0/0 is 0.0: nothing predicted → precision 0.0, nothing in gold →
      recall 0.0 (scikit-learn's ``precision_recall_fscore_support(..., zero_division=0.0)``,
      which ``tests/test_gold_metrics.py`` checks it against).
    """
    if tp + fp + fn == 0:
        return 1.0, 1.0, 1.0
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


@dataclass
class Defect:
    """One concrete problem: the component it lowers, the program responsible, a readable message."""

    component: str
    stage: str
    message: str


@dataclass
class MetricResult:
    """``score`` in [0, 1]; ``components`` (each in [0, 1]); ``defects`` in the order found."""

    name: str
    score: float
    components: dict[str, float] = field(default_factory=dict)
    defects: list[Defect] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def feedback(self) -> str:
        return render_feedback(self.name, self.score, self.components, self.defects, self.notes)

    def feedback_for(self, stage: str) -> str:
        """Feedback restricted to the defects that ``stage`` (``stage1``/``stage2``/…) can fix."""
        mine = [d for d in self.defects if d.stage == stage]
        comps = {c: v for c, v in self.components.items() if any(d.component == c for d in mine)}
        return render_feedback(self.name, self.score, comps or self.components, mine, self.notes)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "score": self.score,
            "components": dict(self.components),
            "defects": [d.__dict__ for d in self.defects],
            "notes": list(self.notes),
            "feedback": self.feedback,
        }


def render_feedback(name: str, score: float, components: dict[str, float], defects: list[Defect], notes: list[str]) -> str:
    head = f"{name} {score:.3f}"
    if components:
        head += " (" + ", ".join(f"{k} {v:.2f}" for k, v in components.items()) + ")"
    lines = [head]
    if not defects:
        lines.append("No defects found." if not notes else "")
    shown = defects[:FEEDBACK_MAX_LINES]
    lines += [f"- [{d.component}] {d.message}" for d in shown]
    if len(defects) > len(shown):
        lines.append(f"- … and {len(defects) - len(shown)} more")
    lines += [f"Note: {n}" for n in notes]
    return "\n".join(line for line in lines if line)


def weighted_mean(values: dict[str, float], weights: dict[str, float]) -> float:
    """Σ wᵢ·vᵢ / Σ wᵢ over the components present in both (weights ≤ 0 drop a component)."""
    used = [(values[k], w) for k, w in weights.items() if k in values and w > 0]
    total = sum(w for _, w in used)
    if total <= 0:
        return 0.0
    return sum(v * w for v, w in used) / total
