"""Quality = a weighted combination of the structural and the judge score; cost from the ledger.

Default weights: structural 0.5, judge 0.5, the combination the ARGUS paper's Table 3 reports
(e.g. GPT-OSS: judge 0.6642, structural 0.9902 → quality 0.8272). Without a judge the quality is the
structural score alone (and says so in its notes).
"""

from __future__ import annotations

import math

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
    """Cost of producing one document (from the document's ledger).

    ``usd`` and ``tokens`` count every call at list price, including calls answered from DSPy's
    cache (their original cost), so a method's cost does not depend on what was cached;
    ``billed_usd`` and ``billed_tokens`` are what this run actually spent.
    """

    usd: float
    tokens: int
    prompt_tokens: int
    completion_tokens: int
    calls: int
    cost_known: bool
    billed_usd: float = 0.0
    billed_tokens: int = 0
    cache_hits: int = 0

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def document_cost(ekg, stages: tuple[str, ...] | None = None) -> Cost:
    """Cost of a ``DocumentEKG`` from its embedded ledger; ``stages`` restricts to those stages."""
    return cost_of([e for e in ekg.ledger.entries if stages is None or e.stage in stages])


def cost_of(entries) -> Cost:
    """Cost of a list of ledger entries (list price: cache hits count what the original call cost).

    USD are summed exactly rounded (``math.fsum``), so the total does not depend on the order the
    calls finished in (a concurrent run books them in another order than a sequential one)."""
    entries = list(entries)
    return Cost(
        usd=math.fsum(e.list_cost_usd for e in entries),
        tokens=sum(e.list_tokens for e in entries),
        prompt_tokens=sum(e.prompt_tokens + e.cached_prompt_tokens for e in entries),
        completion_tokens=sum(e.completion_tokens + e.cached_completion_tokens for e in entries),
        calls=len(entries),
        cost_known=all(e.cost_known for e in entries),
        billed_usd=math.fsum(e.cost_usd for e in entries),
        billed_tokens=sum(e.prompt_tokens + e.completion_tokens for e in entries),
        cache_hits=sum(e.cache_hit for e in entries),
    )


class DocumentQuality:
    """Quality of one document's EKG, as a campaign weights it: ``Σ wᵢ·componentᵢ / Σ wᵢ`` over

    - ``structural`` — ``metrics.structural.structural_for_ekg`` (evidence in the narrative,
      coverage of its fact sentences, edge consistency, …);
    - ``gold`` — agreement with the annotated graph: the mean of relaxed event F1 and temporal-edge
      F1 after aligning the EKG's sentences to the gold ones (``metrics.gold``);
    - ``judge`` — the absolute LLM judge over the narrative's fact sentences, when a
      ``metrics.judge.Judge`` is given and its weight is > 0.

    The judge's calls land in the ledger of the caller's ``ledger_context`` (an optimizer books them
    as its own spend), never in the EKG's.
    """

    def __init__(self, weights: dict[str, float], *, structural_weights: dict[str, float] | None = None,
                 coverage_target: float = 0.7, judge=None):
        self.weights = dict(weights)
        self.structural_weights = structural_weights
        self.coverage_target = coverage_target
        self.judge = judge

    def evaluate(self, ekg, gold=None) -> MetricResult:
        from metrics.structural import structural_for_ekg

        structural = structural_for_ekg(ekg, weights=self.structural_weights, coverage_target=self.coverage_target)
        parts = {"structural": structural.score}
        defects, notes = list(structural.defects), list(structural.notes)
        if gold is not None and self.weights.get("gold", 0) > 0:
            from metrics.gold import gold_component, to_gold_space

            g = gold_component(to_gold_space(ekg, gold), gold)
            parts["gold"] = g.score
            defects += g.defects
            notes += g.notes
        elif self.weights.get("gold", 0) > 0:
            notes.append("no gold annotation: quality without the gold component")
        if self.judge is not None and self.weights.get("judge", 0) > 0:
            from metrics.judge import judge_sentences

            j = self.judge.score(ekg.graph, judge_sentences(ekg), doc_id=ekg.doc_id)
            parts["judge"] = j.score
            defects += j.defects
            notes += j.notes
        return MetricResult("quality", weighted_mean(parts, self.weights), parts, defects, notes,
                            details={"weights": self.weights})
