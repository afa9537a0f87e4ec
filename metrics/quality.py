"""Quality = a weighted combination of the structural and the judge score; cost from the ledger.

Default weights: structural 0.5, judge 0.5, the combination the ARGUS paper's Table 3 reports
(e.g. GPT-OSS: judge 0.6642, structural 0.9902 → quality 0.8272). Without a judge the quality is the
structural score alone (and says so in its notes).
"""

from __future__ import annotations

from dataclasses import dataclass

from metrics.base import MetricResult, weighted_mean

DEFAULT_QUALITY_WEIGHTS: dict[str, float] = {"structural": 0.5, "judge": 0.5}


def quality_score(
    structural: MetricResult, judge: MetricResult | None = None, weights: dict[str, float] | None = None
) -> MetricResult:
    weights = dict(DEFAULT_QUALITY_WEIGHTS if weights is None else weights)
    parts = {"structural": structural.score}
    notes = []
    if judge is not None:
        parts["judge"] = judge.score
    elif weights.get("judge", 0) > 0:
        notes.append("no judge score: quality is the structural score alone")
    score = weighted_mean(parts, weights)
    defects = list(structural.defects) + (list(judge.defects) if judge is not None else [])
    return MetricResult(
        name="quality",
        score=score,
        components=parts,
        defects=defects,
        notes=notes + structural.notes + (judge.notes if judge is not None else []),
        details={"weights": weights},
    )


@dataclass(frozen=True)
class Cost:
    """Cost of producing one document: USD, tokens, LM calls (from the document's ledger)."""

    usd: float
    tokens: int
    prompt_tokens: int
    completion_tokens: int
    calls: int
    cost_known: bool

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def document_cost(ekg, stages: tuple[str, ...] | None = None) -> Cost:
    """Cost of a ``DocumentEKG`` from its embedded ledger; ``stages`` restricts to those stages."""
    entries = [e for e in ekg.ledger.entries if stages is None or e.stage in stages]
    return Cost(
        usd=sum(e.cost_usd for e in entries),
        tokens=sum(e.prompt_tokens + e.completion_tokens for e in entries),
        prompt_tokens=sum(e.prompt_tokens for e in entries),
        completion_tokens=sum(e.completion_tokens for e in entries),
        calls=len(entries),
        cost_known=all(e.cost_known for e in entries),
    )
