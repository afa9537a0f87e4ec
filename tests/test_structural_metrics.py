"""Structural metrics: gold graphs are sound; each corruption lowers exactly its component and is named."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from argus.graph.schema import EventGraph
from metrics.structural import COMPONENTS, DEFAULT_WEIGHTS, structural_score
from tests.conftest import _split_dirs, load_gold, needs_data

pytestmark = needs_data


def _gold_case(d):
    gold = load_gold(d)
    sents = [s for sec in gold["sections"] if sec["kind"] == "facts" for p in sec["paragraphs"] for s in p]
    return {
        "doc": gold["doc_id"],
        "graph": gold["graph"],
        "allowed": [s["id"] for s in sents],
        "facts": [s["id"] for s in sents if s["fact"]],
    }


CASES = [_gold_case(d) for d in _split_dirs("dev") + _split_dirs("train")]


def _score(case, graph, **kw):
    return structural_score(graph, allowed_sentences=case["allowed"], fact_sentences=case["facts"], **kw)


def test_every_gold_graph_scores_one():
    assert CASES
    for case in CASES:
        r = _score(case, case["graph"])
        assert r.score == 1.0, (case["doc"], r.feedback)
        assert set(r.components) == set(COMPONENTS)
        assert "No defects found" in r.feedback
        # the validated model and the raw dict score the same
        assert _score(case, EventGraph.model_validate(case["graph"])).score == 1.0


def _next_id(items, prefix):
    return f"{prefix}{max(int(x['id'][len(prefix):]) for x in items) + 1}"


def _before_pairs(graph):
    out = []
    for e in graph["temporal_edges"]:
        if e["relation"] == "BEFORE":
            out.append((e["source"], e["target"], e["evidence"]))
        elif e["relation"] == "AFTER":
            out.append((e["target"], e["source"], e["evidence"]))
    return out


def corrupt(kind: str, graph: dict, draw) -> tuple[dict, str, str]:
    """Return (corrupted graph, component that must drop, text the feedback must contain)."""
    g = copy.deepcopy(graph)
    events = g["events"]
    if kind == "dangling_reference":
        ev = draw(st.sampled_from(events))
        ev["participants"].append({"entity": "E999", "role": "agent"})
        return g, "references", f"{ev['id']} ({ev['verb']}) names participant E999"
    if kind == "before_cycle":
        a, b, evidence = draw(st.sampled_from(_before_pairs(g)))
        g["temporal_edges"].append({"source": b, "target": a, "relation": "BEFORE", "evidence": evidence})
        return g, "temporal", "BEFORE cycle"
    if kind == "causal_self_loop":
        ev = draw(st.sampled_from(events))
        g["causal_edges"].append({"source": ev["id"], "target": ev["id"], "relation": "CAUSES", "evidence": ev["evidence"]})
        return g, "causal", f"{ev['id']}-CAUSES->{ev['id']} is a self-loop"
    if kind == "evidence_outside":
        ev = draw(st.sampled_from(events))
        ev["evidence"].append("S9999")
        return g, "references", f"{ev['id']} ({ev['verb']}) cites S9999"
    if kind == "duplicated_event":
        ev = draw(st.sampled_from(events))
        dup = copy.deepcopy(ev)
        dup["id"] = _next_id(events, "EV")
        events.append(dup)
        return g, "duplicates", f"{dup['id']} duplicates {ev['id']}"
    raise AssertionError(kind)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case=st.sampled_from(CASES or [None]),
    kind=st.sampled_from(["dangling_reference", "before_cycle", "causal_self_loop", "evidence_outside", "duplicated_event"]),
    data=st.data(),
)
def test_each_corruption_lowers_exactly_its_component(case, kind, data):
    assert case is not None
    base = _score(case, case["graph"])
    bad, component, needle = corrupt(kind, case["graph"], data.draw)
    r = _score(case, bad)
    assert r.components[component] < base.components[component], (kind, r.feedback)
    for other in COMPONENTS:
        if other != component:
            assert r.components[other] == base.components[other], (kind, other, r.feedback)
    assert r.score < base.score
    assert needle in r.feedback, (needle, r.feedback)
    # the defect is attributed to the program that can fix it
    stage = "stage2" if component in ("temporal", "causal") else "stage1"
    assert needle in r.feedback_for(stage)
    other_stage = "stage1" if stage == "stage2" else "stage2"
    assert needle not in r.feedback_for(other_stage)


@settings(max_examples=30, deadline=None)
@given(case=st.sampled_from(CASES or [None]), data=st.data())
def test_dropped_event_lowers_raw_coverage_and_names_its_sentences(case, data):
    """With the coverage target at 1 (raw share), dropping an event whose sentences no other event
    cites lowers coverage only; the edges touching it go with it."""
    assert case is not None
    g = copy.deepcopy(case["graph"])
    cited_by: dict[str, int] = {}
    for ev in g["events"]:
        for s in ev["evidence"]:
            cited_by[s] = cited_by.get(s, 0) + 1
    facts = set(case["facts"])
    sole = [ev for ev in g["events"] if any(cited_by[s] == 1 and s in facts for s in ev["evidence"])]
    ev = data.draw(st.sampled_from(sole))
    base = _score(case, g, coverage_target=1.0)
    g["events"] = [e for e in g["events"] if e is not ev]
    for key in ("temporal_edges", "causal_edges"):
        g[key] = [e for e in g[key] if ev["id"] not in (e["source"], e["target"])]
    r = _score(case, g, coverage_target=1.0)
    assert r.components["coverage"] < base.components["coverage"]
    for other in COMPONENTS:
        if other != "coverage":
            assert r.components[other] == base.components[other]
    lost = [s for s in ev["evidence"] if cited_by[s] == 1 and s in facts]
    assert set(lost) <= set(r.details["uncited_fact_sentences"])
    assert r.details["uncited_fact_sentences"][0] in r.feedback


def test_schema_violations_are_counted_per_item_and_named():
    case = CASES[0]
    g = copy.deepcopy(case["graph"])
    g["events"][0]["type"] = "lunch_break"
    g["temporal_edges"][0]["relation"] = "LATER"
    r = _score(case, g)
    n_items = sum(len(g[k]) for k in ("entities", "events", "temporal_edges", "causal_edges"))
    assert r.components["schema"] == pytest.approx((n_items - 2) / n_items)
    assert f"{g['events'][0]['id']}: type" in r.feedback
    assert "LATER" in r.feedback


def test_not_json_and_not_an_object():
    assert structural_score("{not json").components["schema"] == 0.0
    assert "not JSON" in structural_score("{not json").feedback
    assert structural_score([1, 2]).components["schema"] == 0.0


def test_empty_graph_scores_zero_when_there_are_facts():
    r = structural_score({"entities": [], "events": []}, allowed_sentences=["S1", "S2"], fact_sentences=["S1"])
    assert r.score == 0.0
    assert "no events were extracted" in r.feedback
    assert structural_score({"entities": [], "events": []}).score == 1.0  # nothing to cover, nothing wrong


def _mini(temporal=(), causal=()):
    events = [
        {"id": f"EV{i}", "type": "other", "verb": f"v{i}", "trigger": "t", "participants": [],
         "time": {"kind": "unknown"}, "evidence": [f"S{i}"]}
        for i in range(1, 6)
    ]
    def edges(spec):
        return [{"source": s, "target": t, "relation": r, "evidence": ["S1"]} for s, r, t in spec]
    return {"entities": [], "events": events, "temporal_edges": edges(temporal), "causal_edges": edges(causal)}


def test_after_is_read_as_reversed_before():
    # EV1 BEFORE EV2 and EV1 AFTER EV2 contradict; EV1 BEFORE EV2 and EV2 AFTER EV1 agree
    assert structural_score(_mini([("EV1", "BEFORE", "EV2"), ("EV2", "AFTER", "EV1")])).components["temporal"] == 1.0
    r = structural_score(_mini([("EV1", "BEFORE", "EV2"), ("EV1", "AFTER", "EV2")]))
    assert r.components["temporal"] == 0.0
    assert "BEFORE cycle" in r.feedback


def test_same_time_classes_and_before_overlap_conflicts():
    # EV1 = EV2 = EV3 by SAME_TIME, then EV1 BEFORE EV3 orders two simultaneous events
    r = structural_score(_mini([("EV1", "SAME_TIME", "EV2"), ("EV2", "SAME_TIME", "EV3"), ("EV1", "BEFORE", "EV3")]))
    assert r.components["temporal"] == pytest.approx(2 / 3)
    assert "SAME_TIME edges make simultaneous" in r.feedback
    # a pair both BEFORE and OVERLAP: both edges are in conflict
    r = structural_score(_mini([("EV1", "BEFORE", "EV2"), ("EV2", "OVERLAP", "EV1"), ("EV3", "BEFORE", "EV4")]))
    assert r.components["temporal"] == pytest.approx(1 / 3)
    assert "both BEFORE" in r.feedback
    # a longer cycle through a SAME_TIME class
    r = structural_score(_mini([("EV1", "BEFORE", "EV2"), ("EV2", "SAME_TIME", "EV3"), ("EV3", "BEFORE", "EV1")]))
    assert r.components["temporal"] == pytest.approx(1 / 3)
    assert "{EV2=EV3}" in r.feedback


def test_effect_placed_before_its_cause():
    r = structural_score(_mini([("EV1", "BEFORE", "EV2"), ("EV2", "BEFORE", "EV3")], causal=[("EV3", "CAUSES", "EV1")]))
    assert r.components["causal"] == 0.0
    assert "place the effect EV1 before its cause EV3" in r.feedback
    assert r.components["temporal"] == 1.0
    # the same causal edge with consistent time order is fine
    ok = structural_score(_mini([("EV1", "BEFORE", "EV2")], causal=[("EV1", "CAUSES", "EV2"), ("EV2", "ENABLES", "EV3")]))
    assert ok.components["causal"] == 1.0
    # mutual causation
    r = structural_score(_mini(causal=[("EV1", "CAUSES", "EV2"), ("EV2", "CAUSES", "EV1")]))
    assert r.components["causal"] == 0.0


def test_weights_are_a_documented_convex_combination():
    assert sum(DEFAULT_WEIGHTS.values()) == pytest.approx(1.0)
    r = structural_score(_mini(causal=[("EV1", "CAUSES", "EV1")]), weights={"causal": 1.0})
    assert r.score == 0.0
    r2 = structural_score(_mini(causal=[("EV1", "CAUSES", "EV1")]), fact_sentences=["S1"])
    assert r2.score == pytest.approx(1 - DEFAULT_WEIGHTS["causal"])


def test_feedback_is_capped():
    g = _mini()
    for i in range(60):
        g["events"][0]["participants"].append({"entity": f"E{100 + i}", "role": "agent"})
    fb = structural_score(g).feedback
    assert "… and 20 more" in fb
    json.dumps(structural_score(g).as_dict())  # serializable for ledgers and reports
