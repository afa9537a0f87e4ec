"""DSPy/GEPA-facing metric wrappers: ``metric(gold, pred, trace=None, pred_name=None, pred_trace=None)``
returning ``dspy.Prediction(score=…, feedback=…)``.

GEPA calls a metric with the example (``gold``), the program's prediction, and — when it asks for
the feedback of one predictor — that predictor's name. The wrappers here score what the programs
emit (a ``dspy.Prediction``, a dict, or the ``Attempted`` record of ``RetryingPredict``) and, for
a named predictor, return only the defects that predictor can fix (Stage 1 owns entities, events,
evidence and coverage; Stage 2 owns the edges).

Fields read from the example (``dspy.Example``):

- graph metrics: ``sentence_ids`` (the sentences evidence may cite), optional ``fact_ids`` (the
  coverage denominator), ``stage1`` (a dict with ``entities``/``events``, for Stage 2 predictions
  that carry only edges), ``sentences`` (``[(id, text)]``, for the judge) and ``gold_graph`` (a
  gold ``EventGraph`` dict in the same sentence ids, for the gold component);
- fact fallback: ``sentences`` and ``gold_fact_ids``;
- chunker: ``sentence_ids`` and ``max_chunk_sentences``.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import dspy

from metrics.base import Defect, MetricResult, precision_recall_f1, weighted_mean
from metrics.structural import structural_score

#: predictor-name fragments → the stage whose defects it can fix
#: (the sentence design's choice program writes the events, so the Stage 1 defects are its to fix)
_STAGE_OF_PREDICTOR = (("pair_relations", "stage2"), ("stage2", "stage2"), ("relate", "stage2"), ("stage1", "stage1"), ("extract", "stage1"),
                       ("sentence_events", "stage1"))


def _get(example: Any, key: str, default=None):
    if example is None:
        return default
    if isinstance(example, dict):
        return example.get(key, default)
    try:
        return example.get(key, default)
    except AttributeError:
        return getattr(example, key, default)


def prediction_outputs(pred: Any) -> dict:
    """The output fields of a prediction: a ``dspy.Prediction``, a dict, or an ``Attempted``."""
    if pred is None:
        return {}
    if hasattr(pred, "graph") and hasattr(pred, "chunk_id"):  # argus.graph.schema.MiniGraph (the pipeline's chunk output)
        out = {k: list(getattr(pred.graph, k)) for k in ("entities", "events", "temporal_edges", "causal_edges")}
        return {**out, "rejected": list(pred.rejected), "ungrounded": list(pred.ungrounded)}
    if hasattr(pred, "outputs") and hasattr(pred, "attempts"):  # programs.common.Attempted
        return dict(pred.outputs or {})
    if isinstance(pred, dict):
        return dict(pred)
    if hasattr(pred, "toDict"):
        return dict(pred.toDict())
    return {k: getattr(pred, k) for k in ("entities", "events", "temporal_edges", "causal_edges") if hasattr(pred, k)}


def stage_of_predictor(pred_name: str | None) -> str | None:
    if not pred_name:
        return None
    for fragment, stage in _STAGE_OF_PREDICTOR:
        if fragment in pred_name:
            return stage
    return None


class GraphMetric:
    """Quality of an extracted (mini-)graph for GEPA: structural score, optionally a judge and gold F1.

    ``score = Σ wᵢ·componentᵢ / Σ wᵢ`` over ``structural`` (always), ``judge`` (when a
    ``metrics.judge.Judge`` is given and the example has ``sentences``) and ``gold`` (relaxed event
    F1 averaged with temporal-edge F1, when the example has ``gold_graph`` and its weight is > 0).

    Evaluations are memoized per (example, prediction): GEPA asks for the score, then for the
    feedback of each predictor on the same prediction, and the judge runs once for all of them.
    """

    def __init__(
        self,
        *,
        weights: dict[str, float] | None = None,
        structural_weights: dict[str, float] | None = None,
        coverage_target: float = 0.7,
        judge=None,
    ):
        self.weights = {"structural": 0.5, "judge": 0.5, "gold": 0.0} if weights is None else dict(weights)
        self.structural_weights = structural_weights
        self.coverage_target = coverage_target
        self.judge = judge
        self._memo: dict[str, MetricResult] = {}
        self.evaluations = 0  #: evaluations actually computed (memo misses)

    def _memo_key(self, gold: Any, outputs: dict) -> str | None:
        example_id = _get(gold, "example_id")
        if example_id is None:
            return None
        try:
            body = json.dumps(_as_plain(outputs, ("rejected",)), sort_keys=True, default=str)
        except (TypeError, ValueError):
            return None
        return f"{example_id}:{hashlib.sha256(body.encode()).hexdigest()}"

    def evaluate(self, gold: Any, pred: Any) -> MetricResult:
        outputs = prediction_outputs(pred)
        key = self._memo_key(gold, outputs)
        if key is not None and key in self._memo:
            return self._memo[key]
        result = self._evaluate(gold, outputs)
        self.evaluations += 1
        if key is not None:
            if len(self._memo) > 4096:
                self._memo.clear()
            self._memo[key] = result
        return result

    def _evaluate(self, gold: Any, outputs: dict) -> MetricResult:
        stage1 = _get(gold, "stage1")
        if "events" not in outputs and stage1:
            outputs = {**{k: stage1.get(k, []) for k in ("entities", "events")}, **outputs}
        allowed = _get(gold, "sentence_ids")
        structural = structural_score(
            outputs,
            allowed_sentences=allowed,
            fact_sentences=_get(gold, "fact_ids", allowed),
            weights=self.structural_weights,
            coverage_target=self.coverage_target,
            rejected=outputs.get("rejected"),
            ungrounded=outputs.get("ungrounded") or (),
        )
        parts = {"structural": structural.score}
        defects = list(structural.defects)
        notes = list(structural.notes)
        sentences = _get(gold, "sentences")
        if self.judge is not None and sentences and self.weights.get("judge", 0) > 0:
            from argus.graph.schema import EventGraph

            try:
                graph = EventGraph.model_validate(_as_plain(outputs))
            except Exception:
                graph = None
            if graph is not None:
                j = self.judge.score(graph, sentences)
                parts["judge"] = j.score
                defects += j.defects
                notes += j.notes
        gold_graph = _get(gold, "gold_graph")
        if gold_graph is not None and self.weights.get("gold", 0) > 0:
            from metrics.gold import gold_component

            g = gold_component(outputs, gold_graph)
            parts["gold"] = g.score
            defects += g.defects
        score = weighted_mean(parts, self.weights)
        return MetricResult("quality", score, parts, defects, notes, details=structural.details)

    def __call__(self, gold, pred, trace=None, pred_name=None, pred_trace=None):
        result = self.evaluate(gold, pred)
        stage = stage_of_predictor(pred_name)
        feedback = result.feedback_for(stage) if stage else result.feedback
        return dspy.Prediction(score=result.score, feedback=feedback)


def _as_plain(outputs: dict, extra: tuple[str, ...] = ()) -> dict:
    """The graph's item lists (and the ``extra`` lists, e.g. ``rejected``) as plain dicts."""
    plain = {}
    for k in ("entities", "events", "temporal_edges", "causal_edges", *extra):
        items = outputs.get(k) or []
        plain[k] = [i.model_dump() if hasattr(i, "model_dump") else i for i in items]
    return plain


def fact_selection_result(predicted: list[str], gold_fact_ids: list[str], candidates: list[tuple[str, str]] | list[str]) -> MetricResult:
    """F1 of the fact class over the candidate sentences, naming each missed and spurious sentence."""
    text = {c[0]: c[1] for c in candidates if isinstance(c, (tuple, list))} if candidates else {}
    ids = [c[0] if isinstance(c, (tuple, list)) else c for c in candidates]
    pred, gold_set = set(predicted) & set(ids), set(gold_fact_ids) & set(ids)
    tp, fp, fn = len(pred & gold_set), len(pred - gold_set), len(gold_set - pred)
    p, r, f1 = precision_recall_f1(tp, fp, fn)
    defects = []
    for sid in ids:
        snippet = text.get(sid, "")[:80]
        if sid in gold_set and sid not in pred:
            defects.append(Defect("recall", "fact_fallback", f"{sid} states a fact but was not selected: \"{snippet}\""))
        elif sid in pred and sid not in gold_set:
            defects.append(Defect("precision", "fact_fallback", f"{sid} is not a fact (conclusion, boilerplate or procedure) but was selected: \"{snippet}\""))
    return MetricResult("fact_f1", f1, {"precision": p, "recall": r}, defects)


def fact_fallback_metric(gold, pred, trace=None, pred_name=None, pred_trace=None):
    """GEPA metric for the fact fallback program: F1 of its ``fact_ids`` against ``gold_fact_ids``."""
    out = prediction_outputs(pred)
    result = fact_selection_result(list(out.get("fact_ids") or []), list(_get(gold, "gold_fact_ids", [])), list(_get(gold, "sentences", [])))
    return dspy.Prediction(score=result.score, feedback=result.feedback)


def chunk_plan_result(plan: list[list[str]], ids: list[str], max_sentences: int) -> MetricResult:
    """Chunk plan validity: 1 − (problems ÷ checks) over coverage, order and size; problems named."""
    from argus.designs.chunking import chunk_plan_errors

    errors = chunk_plan_errors(plan, ids, max_sentences)
    checks = max(1, len(plan) + 2)
    score = max(0.0, 1.0 - len(errors) / checks)
    return MetricResult("chunk_plan", score, {"validity": score}, [Defect("validity", "chunker", e) for e in errors])


def chunker_metric(gold, pred, trace=None, pred_name=None, pred_trace=None):
    out = prediction_outputs(pred)
    plan = [list(c.sentence_ids if hasattr(c, "sentence_ids") else c.get("sentence_ids", [])) for c in out.get("chunks") or []]
    result = chunk_plan_result(plan, list(_get(gold, "sentence_ids", [])), int(_get(gold, "max_chunk_sentences", 8)))
    return dspy.Prediction(score=result.score, feedback=result.feedback)


def resolver_result(same: bool | None, relation: str | None, gold_same: bool, gold_relation: str) -> MetricResult:
    """1 when both the same-occurrence decision and the relation are right, 0.5 for the decision alone."""
    defects = []
    ok_same = bool(same) == bool(gold_same)
    ok_rel = (relation or "NONE") == gold_relation
    if not ok_same:
        defects.append(Defect("same_occurrence", "resolver", f"said same_occurrence={bool(same)}, but the records are "
                              + ("one occurrence stated twice" if gold_same else "different occurrences")))
    if not ok_rel:
        defects.append(Defect("relation", "resolver", f"said relation {relation or 'NONE'}, the text supports {gold_relation}"))
    score = (0.5 if ok_same else 0.0) + (0.5 if ok_same and ok_rel else 0.0)
    return MetricResult("resolver", score, {"same_occurrence": float(ok_same), "relation": float(ok_rel)}, defects)


def resolver_metric(gold, pred, trace=None, pred_name=None, pred_trace=None):
    """GEPA metric for the cross-chunk resolver against gold-derived pairs (``gold_same``, ``gold_relation``)."""
    out = prediction_outputs(pred)
    result = resolver_result(out.get("same_occurrence"), out.get("relation"), bool(_get(gold, "gold_same", False)),
                             str(_get(gold, "gold_relation", "NONE")))
    return dspy.Prediction(score=result.score, feedback=result.feedback)


def qa_metric(gold, pred, trace=None, pred_name=None, pred_trace=None):
    """GEPA metric for the QA program: token F1 of the answer against ``gold_answer``."""
    from argus.text.answers import token_f1

    answer = str(prediction_outputs(pred).get("answer") or "")
    reference = str(_get(gold, "gold_answer", ""))
    score = token_f1(answer, reference)
    feedback = (f"token F1 {score:.2f}: the answer was \"{answer[:200]}\"; the complaint supports \"{reference[:200]}\"."
                + (" Answer with the complaint's own words, briefly." if score < 1 else ""))
    return dspy.Prediction(score=score, feedback=feedback)
