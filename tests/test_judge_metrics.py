"""Judge metrics with the scripted test LM: scores, feedback, both-order pairwise, ledger attribution,
quality weighting, GEPA wrapper signature and per-predictor feedback."""

from __future__ import annotations

import dspy
import pytest

from argus.models.ledger import CostLedger
from argus.graph.schema import EventGraph
from metrics.gepa import GraphMetric, chunker_metric, fact_fallback_metric
from metrics.judge import Judge, PairwiseResult, judge_result
from metrics.quality import DEFAULT_QUALITY_WEIGHTS, quality_score
from metrics.structural import structural_score
from programs.judge import render_graph
from tests.scripted_lm import ScriptedEngine, scripted_lm

SENTENCES = [("S1", "Acme hired Maria Torres in 2016."), ("S2", "Two weeks later Palmer fired her."),
             ("S3", "She complained to HR.")]


def _graph(evidence=("S1", "S2", "S3"), causal_self_loop=False) -> EventGraph:
    events = [
        {"id": f"EV{i}", "type": t, "verb": v, "trigger": v, "participants": [{"entity": "E1", "role": "patient"}],
         "time": {"kind": "unknown"}, "evidence": [sid]}
        for i, (t, v, sid) in enumerate(zip(("hiring", "termination", "complaint"), ("hire", "fire", "complain"), evidence), 1)
    ]
    causal = [{"source": "EV1", "target": "EV1", "relation": "CAUSES", "evidence": ["S1"]}] if causal_self_loop else []
    return EventGraph.model_validate({
        "entities": [{"id": "E1", "name": "Maria Torres", "kind": "person", "role": "plaintiff", "aliases": ["Plaintiff"]}],
        "events": events,
        "temporal_edges": [{"source": "EV1", "target": "EV2", "relation": "BEFORE", "evidence": ["S2"]}],
        "causal_edges": causal,
    })


@pytest.fixture()
def judge():
    engine = ScriptedEngine()
    j = Judge(lm=scripted_lm(engine), name="scripted", ledger=CostLedger())
    j.engine = engine
    return j


def test_absolute_judge_scores_and_names_criteria(judge):
    good = judge.score(_graph(), SENTENCES, doc_id="d1")
    assert good.score == 1.0
    assert set(good.components) == {"factual_accuracy", "completeness", "relevance", "faithfulness", "coherence", "overall"}
    bad = judge.score(_graph(evidence=("S1", "S8", "S9")), SENTENCES, doc_id="d1")
    assert bad.score < good.score
    assert "1 of 3 events cite sentences that exist" in bad.feedback
    # every call is in the ledger, attributed to the judge stage and the document
    entries = judge.ledger.entries
    assert len(entries) == 2 and {e.stage for e in entries} == {"judge"} and {e.doc_id for e in entries} == {"d1"}
    assert all(e.cost_usd > 0 for e in entries)


def test_pairwise_judges_both_orders_and_unswaps(judge):
    res = judge.compare(_graph(), _graph(evidence=("S1", "S8", "S9")), SENTENCES, doc_id="d1")
    assert isinstance(res, PairwiseResult)
    assert res.winners == {d: "A" for d in ("event_grounding", "evidence_grounding", "edge_correctness", "overall")}
    assert len(res.raw) == 2 and res.raw[0] == res.raw[1]
    rev = judge.compare(_graph(evidence=("S1", "S8", "S9")), _graph(), SENTENCES)
    assert set(rev.winners.values()) == {"B"}
    assert [e.program for e in judge.ledger.entries] == ["pairwise_judge"] * 4


def test_position_bias_becomes_a_tie():
    from metrics.judge import _combine, _unswap

    # a judge that always prefers the first graph: "A" in order (A, B), "A" → unswapped "B" in (B, A)
    assert _combine(["A", _unswap("A", True)]) == "tie"
    assert _combine(["B", _unswap("A", True)]) == "B"


def test_failed_judge_scores_zero_with_a_message():
    r = judge_result(None, ["not valid JSON"], judge="m")
    assert r.score == 0.0 and "not valid JSON" in r.feedback


def test_quality_is_the_documented_mean():
    s = structural_score(_graph(causal_self_loop=True), allowed_sentences=["S1", "S2", "S3"])
    j = judge_result({c: {"score": 3, "rationale": "ok"} for c in ("factual_accuracy", "completeness", "relevance", "faithfulness", "coherence", "overall")})
    q = quality_score(s, j)
    assert DEFAULT_QUALITY_WEIGHTS == {"structural": 0.5, "judge": 0.5}
    assert q.score == pytest.approx(0.5 * s.score + 0.5 * 0.5)
    assert quality_score(s).score == pytest.approx(s.score)
    # the paper's Table 3: judge 0.6642, structural 0.9902 → 0.8272
    from metrics.base import MetricResult

    assert quality_score(MetricResult("s", 0.9902), MetricResult("j", 0.6642)).score == pytest.approx(0.8272)


def test_gepa_metric_signature_and_per_predictor_feedback(judge):
    metric = GraphMetric(judge=judge)
    example = dspy.Example(sentence_ids=["S1", "S2", "S3"], sentences=SENTENCES).with_inputs("sentence_ids")
    pred = dspy.Prediction(**_graph(causal_self_loop=True).model_dump())
    out = metric(example, pred, None, None, None)
    assert isinstance(out, dspy.Prediction) and 0 < out.score < 1
    assert "self-loop" in out.feedback
    assert "self-loop" in metric(example, pred, None, "stage2.relate.predict", None).feedback
    assert "self-loop" not in metric(example, pred, None, "stage1.extract.predict", None).feedback
    # a Stage 2 prediction (edges only) is scored with the example's Stage 1 events
    g = _graph().model_dump()
    ex2 = dspy.Example(sentence_ids=["S1", "S2", "S3"], stage1={"entities": g["entities"], "events": g["events"]})
    edges_only = dspy.Prediction(temporal_edges=[{"source": "EV2", "target": "EV1", "relation": "AFTER", "evidence": ["S2"]}],
                                 causal_edges=[])
    assert GraphMetric(weights={"structural": 1.0})(ex2, edges_only).score == 1.0


def test_fact_and_chunker_metrics_name_defects():
    ex = dspy.Example(sentences=SENTENCES + [("S4", "Defendant's conduct was willful.")], gold_fact_ids=["S1", "S2", "S3"])
    out = fact_fallback_metric(ex, dspy.Prediction(fact_ids=["S1", "S4"]))
    assert out.score == pytest.approx(0.4)
    assert "S2 states a fact but was not selected" in out.feedback and "S4 is not a fact" in out.feedback
    ex = dspy.Example(sentence_ids=["S1", "S2", "S3", "S4"], max_chunk_sentences=3)
    ok = chunker_metric(ex, {"chunks": [{"sentence_ids": ["S1", "S2", "S3"]}, {"sentence_ids": ["S2", "S3", "S4"]}]})
    assert ok.score == 1.0
    bad = chunker_metric(ex, {"chunks": [{"sentence_ids": ["S1", "S2"]}]})
    assert bad.score < 1.0 and "S3" in bad.feedback


def test_render_graph_is_compact_and_complete():
    text = render_graph(_graph(causal_self_loop=True))
    assert "EV2 [termination] fire" in text and "EV1 BEFORE EV2 (S2)" in text and "EV1 CAUSES EV1" in text


def test_resolver_metric_names_the_wrong_decision():
    from metrics.gepa import resolver_metric

    ex = dspy.Example(gold_same=False, gold_relation="CAUSES")
    assert resolver_metric(ex, {"same_occurrence": False, "relation": "CAUSES"}).score == 1.0
    half = resolver_metric(ex, {"same_occurrence": False, "relation": "BEFORE"})
    assert half.score == 0.5 and "the text supports CAUSES" in half.feedback
    wrong = resolver_metric(ex, {"same_occurrence": True, "relation": "NONE"})
    assert wrong.score == 0.0 and "different occurrences" in wrong.feedback


def test_qa_metric_is_token_f1_with_the_reference_in_the_feedback():
    from metrics.gepa import qa_metric

    ex = dspy.Example(gold_answer="She was terminated on June 3.")
    assert qa_metric(ex, {"answer": "she was terminated on june 3"}).score == 1.0
    out = qa_metric(ex, {"answer": "Plaintiff complained"})
    assert out.score == 0.0 and "She was terminated" in out.feedback


def test_member_programs_load_predictor_by_predictor(tmp_path):
    import json

    from optimizers.deploy import load_member_programs
    from programs import ArgusPrograms

    progs = ArgusPrograms()
    progs.stage1.extract.predict.signature = progs.stage1.extract.predict.signature.with_instructions("EVOLVED")
    progs.save(str(tmp_path / "p.json"))
    state = json.loads((tmp_path / "p.json").read_text())
    state.pop("qa.answer.predict")  # compiled before the QA program existed
    (tmp_path / "programs.json").write_text(json.dumps(state))
    loaded = load_member_programs(tmp_path, max_retries=1)
    assert loaded.stage1.extract.predict.signature.instructions == "EVOLVED"
    assert loaded.qa.answer.predict.signature.instructions == ArgusPrograms().qa.answer.predict.signature.instructions


def test_judge_criticism_reaches_the_predictors_that_can_fix_it():
    from metrics.base import MetricResult

    scores = {"factual_accuracy": 2, "completeness": 5, "relevance": 5, "faithfulness": 5, "coherence": 2, "overall": 3}
    j = judge_result({c: {"score": s, "rationale": f"why {c}"} for c, s in scores.items()})
    result = MetricResult("quality", j.score, j.components, j.defects)
    stage1, stage2 = result.feedback_for("stage1"), result.feedback_for("stage2")
    assert "why factual_accuracy" in stage1 and "why coherence" not in stage1
    assert "why coherence" in stage2 and "why factual_accuracy" not in stage2
    assert "why overall" in stage1 and "why overall" in stage2  # the overall verdict reaches both


def test_gepa_metric_runs_the_judge_once_per_prediction(judge):
    metric = GraphMetric(judge=judge)
    example = dspy.Example(example_id="d:C1", sentence_ids=["S1", "S2", "S3"], sentences=SENTENCES).with_inputs("sentence_ids")
    pred = dspy.Prediction(**_graph(causal_self_loop=True).model_dump())
    calls = len(judge.ledger.entries)
    first = metric(example, pred)
    for name in ("programs.stage1.extract.predict", "programs.stage2.relate.predict"):
        metric(example, pred, None, name, None)
    assert len(judge.ledger.entries) == calls + 1 and metric.evaluations == 1
    other = dspy.Prediction(**_graph().model_dump())  # a different prediction is judged anew
    assert metric(example, other).score != first.score or len(judge.ledger.entries) == calls + 2
    assert metric.evaluations == 2
