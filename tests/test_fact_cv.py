"""Measuring the fact gate: calibration error, cross-validation over complaints, and the routing
that keeps a fallback model out where it was measured no better than the classifier."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from argus.config import ArgusConfig
from argus.gate.fact_eval import cross_validate, expected_calibration_error, labeled_documents, tau_curve
from argus.pipeline import ArgusPipeline
from tests.conftest import _split_dirs, needs_data


def test_expected_calibration_error_on_known_values():
    p = np.array([0.1, 0.1, 0.9, 0.9])
    y = np.array([0, 1, 1, 1])
    # bin 0.1: confidence 0.1, frequency 0.5; bin 0.9: confidence 0.9, frequency 1.0; each half the data
    assert expected_calibration_error(p, y) == pytest.approx(0.5 * 0.4 + 0.5 * 0.1)
    rng = np.random.default_rng(0)
    q = rng.uniform(size=20000)
    assert expected_calibration_error(q, rng.uniform(size=20000) < q) < 0.02  # calibrated by construction
    assert expected_calibration_error(q, q > 0.5) > 0.2  # overconfident labels, underconfident scores


class _Measured:
    """A classifier whose fallback report is given."""

    name = "measured"

    def __init__(self, fallback):
        self.meta = {"fallback": fallback}

    def predict_proba(self, texts):
        return np.full(len(texts), 0.6)


def _pipeline(tmp_path, report, **facts):
    cfg = ArgusConfig.load(None, {"cache_dir": str(tmp_path / "c"), **{f"facts.{k}": v for k, v in facts.items()}})
    return ArgusPipeline(cfg, classifier=_Measured(report))


def test_the_gate_calls_a_fallback_only_where_it_was_measured_to_help(tmp_path, caplog):
    measured = {"local/smollm2": {"tau": None, "f1_classifier": 0.98, "f1_best_fallback": 0.97}}
    mode, _, why = _pipeline(tmp_path, measured).fact_routing()
    assert mode == "classifier" and "measured no better" in why
    # an unmeasured embedded fallback is left out too, and the run says so once
    pipe = _pipeline(tmp_path, {})
    assert pipe.fact_routing()[0] == "classifier"
    from argus.text.documents import RawDocument
    from tests.conftest import DEMO

    doc = pipe.preprocess(RawDocument(doc_id="d", text=DEMO.read_text(), source="demo"))
    with caplog.at_level(logging.WARNING, logger="argus"):
        pipe.gate_facts(doc)
        _, report = pipe.gate_facts(doc)
    assert report.sent_to_llm == 0
    assert sum("not measured to beat the classifier" in r.message for r in caplog.records) <= 1
    # a model measured to help is called below its own tau
    helps = {"openai/gpt-4o-mini": {"tau": 0.7, "f1_classifier": 0.95, "f1_best_fallback": 0.97}}
    pipe = _pipeline(tmp_path, helps)
    pipe.config.lm.default.model = "openai/gpt-4o-mini"
    assert pipe.fact_routing() == ("hybrid", 0.7, "")
    # facts.fallback: always restores the configured behaviour
    assert _pipeline(tmp_path, measured, fallback="always", tau=0.9).fact_routing() == ("hybrid", 0.9, "")
    assert _pipeline(tmp_path, measured, mode="llm").fact_routing()[0] == "llm"


@needs_data
def test_cross_validation_over_complaints_on_the_dev_split():
    docs = labeled_documents(["dev"])
    assert len(docs) == len(_split_dirs("dev")) and all(len(d.labels) == len(d.features) for d in docs)
    docs = docs[:6]  # six of them, one held out per fold: the suite's time stays flat as the corpus grows
    cv = cross_validate(docs)
    table = cv.per_document
    assert list(table["complaint"]) == [d.doc_id for d in docs]
    assert cv.ci95[0] <= cv.mean_f1 <= cv.ci95[1]
    assert cv.mean_f1 == pytest.approx(table["fact_f1"].mean())
    assert cv.pooled["n"] == sum(len(d.labels) for d in docs)
    assert cv.pooled["f1"] > 0.9 and cv.ece < 0.1  # five training complaints per fold
    curve = tau_curve(docs, cv.probs)
    assert curve["share_sent"].is_monotonic_increasing
    assert (curve["f1_oracle_fallback"] >= curve["f1_classifier"] - 1e-12).all()


@needs_data
def test_cross_validation_in_folds_trains_one_head_a_fold():
    docs = labeled_documents(["dev"])[:6]
    cv = cross_validate(docs, folds=3)
    assert list(cv.per_document["complaint"]) == [d.doc_id for d in docs]
    assert cv.pooled["n"] == sum(len(d.labels) for d in docs) and cv.pooled["f1"] > 0.85
    # every complaint was held out by a head that never saw it: two held out per fold
    assert len({id(v) for v in cv.probs.values()}) == 6 and set(cv.probs) == {d.doc_id for d in docs}
