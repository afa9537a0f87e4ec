"""The fact gate and its classifiers."""

from __future__ import annotations

import json

import numpy as np
import pytest

from argus.documents import RawDocument
from argus.errors import ConfigError
from argus.facts import EMBEDDED_HEAD, HeadFactClassifier, fact_metrics, gate_facts, load_fact_classifier
from argus.preprocess import preprocess
from tests.conftest import DEMO, gold_sentences, load_gold, needs_data


class FixedClassifier:
    name = "fixed"

    def __init__(self, probs):
        self.probs = probs

    def predict_proba(self, texts):
        return np.array([self.probs.get(t[:12], 0.5) for t in texts])


def _demo():
    return preprocess(RawDocument(doc_id="demo", text=DEMO.read_text(), source="demo"))


def test_modes_route_the_right_sentences_to_the_llm():
    doc = _demo()
    narrative = [doc.sentence(i) for i in doc.narrative_ids]
    probs = {s.text[:12]: (0.95 if k % 3 else 0.6) for k, s in enumerate(narrative)}
    clf = FixedClassifier(probs)
    seen = []

    def fallback(batch):
        seen.extend(sid for sid, _ in batch)
        return {sid for sid, _ in batch[:1]}

    out, rep = gate_facts(doc, clf, mode="hybrid", tau=0.8, fallback=fallback, batch_size=2)
    uncertain = [s.id for k, s in enumerate(narrative) if not k % 3]
    assert seen == uncertain and rep.sent_to_llm == len(uncertain)
    for s in out.sentences:
        if s.id in uncertain:
            assert s.fact_path == "llm"
        else:
            assert s.fact_path == "classifier" and s.fact == (s.fact_probability >= 0.5)
    out, rep = gate_facts(doc, clf, mode="llm", fallback=lambda b: set(), batch_size=50)
    assert rep.sent_to_llm == len(narrative) and not any(s.fact for s in out.sentences if s.id in doc.narrative_ids)
    out, rep = gate_facts(doc, clf, mode="classifier")
    assert rep.sent_to_llm == 0


def test_failed_fallback_keeps_the_classifier_decision():
    doc = _demo()
    clf = FixedClassifier({})
    out, rep = gate_facts(doc, clf, mode="hybrid", tau=0.9, fallback=lambda b: None)
    assert rep.llm_failures == rep.llm_calls > 0 and rep.warnings
    assert all(s.fact_path == "classifier" for s in out.sentences)


def test_head_json_roundtrip_and_bad_files(tmp_path):
    head = HeadFactClassifier(encoder="embedded", weights=np.arange(4, dtype="float32"), bias=-1.0, meta={"x": 1})
    p = head.save(tmp_path / "h.json")
    again = load_fact_classifier(str(p))
    assert np.allclose(again.weights, head.weights) and again.bias == -1.0
    (tmp_path / "bad.json").write_text(json.dumps({"format": "nope"}))
    with pytest.raises(ConfigError):
        load_fact_classifier(str(tmp_path / "bad.json"))
    with pytest.raises(ConfigError):
        load_fact_classifier(str(tmp_path / "missing"))


@needs_data
def test_embedded_classifier_is_committed_and_works_on_dev(dev_dirs):
    data = json.loads(EMBEDDED_HEAD.read_text())
    assert data["format"] == "argus-fact-head/1" and data["dim"] == 384
    clf = load_fact_classifier("embedded")
    texts, labels = [], []
    for d in dev_dirs:
        for s in gold_sentences(load_gold(d)):
            texts.append(s["text"])
            labels.append(int(s["fact"]))
    m = fact_metrics(labels, [int(p >= 0.5) for p in clf.predict_proba(texts)])
    assert m["f1"] > 0.85 and m["accuracy"] > 0.85  # measured 0.906 / 0.907


def test_fact_metrics():
    m = fact_metrics([1, 1, 0, 0], [1, 0, 1, 0])
    assert m == {"precision": 0.5, "recall": 0.5, "f1": 0.5, "accuracy": 0.5, "n": 4}
