"""LLM-judge metrics: the absolute judge score of one graph and the pairwise preference of two.

A ``Judge`` binds a judge program to a model: ``Judge.from_spec(LMSpec(...), name=...)``; every call
runs under ``dspy.context`` with that model and under a ledger context (stage ``judge``), so its
tokens and USD land in the same cost ledger as the pipeline's.

Judge score = the mean over the six criteria of (score − 1) / 4, i.e. 1–5 mapped to [0, 1]. The
feedback quotes the rationales of the criteria below 4 (what an optimizer should fix) and all
others briefly.

Pairwise: with ``both_orders`` (default) each pair is judged twice, as (A, B) and as (B, A); a
dimension counts as won only when both orders agree, otherwise it is a tie. This cancels the
position bias that small judges have (the embedded model prefers whichever graph comes first).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Iterable

import dspy

from argus.text.documents import labeled_sentences
from argus.models.ledger import CostLedger, ledger_context
from metrics.base import Defect, MetricResult
from programs.judge import (
    JUDGE_CRITERIA,
    PAIRWISE_DIMENSIONS,
    EventMatchJudge,
    GraphJudge,
    PairwiseJudge,
    render_graph,
)


def judge_sentences(ekg) -> list[tuple[str, str]]:
    """The sentences a judge reads for a document EKG: the narrative's fact sentences."""
    return [(s.id, s.text) for s in ekg.sentences if s.in_narrative and s.fact]


@dataclass
class PairwiseResult:
    """Winner per dimension ("A", "B" or "tie") after combining the orders; the raw answers per order."""

    winners: dict[str, str]
    reasons: list[str] = field(default_factory=list)
    raw: list[dict[str, str]] = field(default_factory=list)
    failed: bool = False


@dataclass
class Judge:
    """A judge model with its programs. ``name`` labels it in tables (default: the model string)."""

    lm: Any
    name: str = ""
    absolute: GraphJudge = field(default_factory=GraphJudge)
    pairwise: PairwiseJudge = field(default_factory=PairwiseJudge)
    matcher: EventMatchJudge = field(default_factory=EventMatchJudge)
    ledger: CostLedger | None = None

    def __post_init__(self):
        if not self.name:
            self.name = getattr(self.lm, "model", "judge")

    @classmethod
    def from_spec(cls, spec, name: str = "", ledger: CostLedger | None = None) -> "Judge":
        from argus.models.lm import build_lm

        return cls(lm=build_lm(spec), name=name or spec.model, ledger=ledger)

    @contextlib.contextmanager
    def _calling(self, doc_id: str | None, program: str):
        from argus.models.lm import SchemaJSONAdapter

        with dspy.context(lm=self.lm, adapter=SchemaJSONAdapter()), ledger_context(
            self.ledger, doc_id=doc_id, stage="judge", program=program
        ):
            yield

    # ------------------------------------------------------------------ absolute
    def score(self, graph, sentences: Iterable[tuple[str, str]], doc_id: str | None = None) -> MetricResult:
        with self._calling(doc_id, "judge"):
            out = self.absolute(sentences=labeled_sentences(sentences), graph=render_graph(graph))
        return judge_result(out.outputs, out.errors, judge=self.name)

    # ------------------------------------------------------------------ event matching (gold tier)
    def same_event(self, predicted: str, reference: str, doc_id: str | None = None) -> bool:
        """The LLM tier of gold matching: True when the judge says the two descriptions are one occurrence."""
        with self._calling(doc_id, "match_judge"):
            out = self.matcher(predicted=predicted, reference=reference)
        return bool(out.outputs and out.outputs.get("same_occurrence"))

    # ------------------------------------------------------------------ pairwise
    def compare(
        self, graph_a, graph_b, sentences: Iterable[tuple[str, str]], doc_id: str | None = None, both_orders: bool = True
    ) -> PairwiseResult:
        text = labeled_sentences(list(sentences))
        ga, gb = render_graph(graph_a), render_graph(graph_b)
        orders = [(ga, gb, False)] + ([(gb, ga, True)] if both_orders else [])
        raw: list[dict[str, str]] = []
        reasons: list[str] = []
        for first, second, swapped in orders:
            with self._calling(doc_id, "pairwise_judge"):
                out = self.pairwise(sentences=text, graph_a=first, graph_b=second)
            if out.outputs is None:
                return PairwiseResult({d: "tie" for d in PAIRWISE_DIMENSIONS}, [f"judge failed: {'; '.join(out.errors)}"], raw, True)
            answer = {d: _unswap(out.outputs.get(d, "tie"), swapped) for d in PAIRWISE_DIMENSIONS}
            raw.append(answer)
            reasons.append(str(out.outputs.get("reason", "")))
        winners = {d: _combine([r[d] for r in raw]) for d in PAIRWISE_DIMENSIONS}
        return PairwiseResult(winners, reasons, raw)


def _unswap(winner: str, swapped: bool) -> str:
    if not swapped or winner == "tie":
        return winner
    return "B" if winner == "A" else "A"


def _combine(answers: list[str]) -> str:
    return answers[0] if len(set(answers)) == 1 else "tie"


JUDGE_CRITERION_STAGES: dict[str, tuple[str, ...]] = {
    "factual_accuracy": ("stage1",),
    "completeness": ("stage1",),
    "relevance": ("stage1",),
    "faithfulness": ("stage1",),
    "coherence": ("stage2",),
    "overall": ("stage1", "stage2"),
}
"""Which program a judge's criticism reaches as optimizer feedback: what is extracted and how it
is grounded (accuracy, completeness, relevance, faithfulness) is Stage 1's; how events hang
together (coherence: order, causes) is Stage 2's edges; the overall verdict goes to both. A
judge that gave no usable answer is the judge's own defect and reaches no program."""


def judge_result(outputs: dict | None, errors: list[str] | None = None, judge: str = "judge") -> MetricResult:
    """Turn a ``JudgeGraph`` output into a ``MetricResult`` (score 0 with the error when it failed)."""
    if not outputs:
        return MetricResult(
            name="judge",
            score=0.0,
            defects=[Defect("judge", "judge", f"the judge ({judge}) gave no usable answer: {'; '.join(errors or [])[:300]}")],
            details={"judge": judge, "failed": True},
        )
    components: dict[str, float] = {}
    defects: list[Defect] = []
    raw: dict[str, int] = {}
    notes: list[str] = []
    for c in JUDGE_CRITERIA:
        item = outputs.get(c)
        score = getattr(item, "score", None) if item is not None else None
        if score is None and isinstance(item, dict):
            score = item.get("score")
        rationale = getattr(item, "rationale", None) if item is not None else None
        if rationale is None and isinstance(item, dict):
            rationale = item.get("rationale", "")
        if score is None:
            notes.append(f"{c}: missing from the judge's answer (scored 1)")
            score = 1
        raw[c] = int(score)
        components[c] = (int(score) - 1) / 4
        if int(score) < 4:
            for stage in JUDGE_CRITERION_STAGES.get(c, ("judge",)):
                defects.append(Defect(c, stage, f"{c} {score}/5: {rationale or 'no rationale'}"))
        elif rationale:
            notes.append(f"{c} {score}/5: {rationale}")
    score = sum(components.values()) / len(components)
    return MetricResult(name="judge", score=score, components=components, defects=defects, notes=notes,
                        details={"judge": judge, "scores_1_5": raw, "failed": bool(errors)})
