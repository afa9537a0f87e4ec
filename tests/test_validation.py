"""Validation feedback and deterministic repair of Stage 1 / Stage 2 outputs."""

from __future__ import annotations

from argus.graph.schema import CausalEdge, Entity, Event, TemporalEdge
from argus.graph.validation import remap_edges, repair_stage1, repair_stage2, stage1_errors, stage2_errors


def E(i, name="X"):
    return Entity(id=f"E{i}", name=name, kind="person", role="other")


def V(i, evidence, parts=()):
    return Event.model_validate({"id": f"EV{i}", "type": "other", "verb": "v", "trigger": "t",
                                 "participants": [{"entity": p, "role": "agent"} for p in parts],
                                 "time": {"kind": "unknown"}, "evidence": evidence})


def test_stage1_errors_and_repair():
    ents = [E(1), E(1, "Y")]
    evs = [V(1, ["S1", "S9"], ["E1", "E7"]), V(1, ["S9"]), V(3, ["S2"])]
    errs = " | ".join(stage1_errors(ents, evs, {"S1", "S2"}))
    assert "duplicate entity ids" in errs and "duplicate event ids" in errs and "S9" in errs and "E7" in errs
    ents2, evs2, ev_map, issues = repair_stage1(ents, evs, {"S1", "S2"})
    assert [e.id for e in ents2] == ["E1", "E2"]
    assert [e.id for e in evs2] == ["EV1", "EV2"]  # the event with no grounded evidence is dropped
    assert evs2[0].evidence == ["S1"] and [p.entity for p in evs2[0].participants] == ["E1"]
    assert ev_map == {"EV1": "EV1", "EV3": "EV2"}
    assert stage1_errors(ents2, evs2, {"S1", "S2"}) == []
    assert any("dropped" in i for i in issues)


def test_stage2_errors_and_repair():
    evs = [V(1, ["S1"]), V(2, ["S2"])]
    t = [TemporalEdge(source="EV1", target="EV2", relation="BEFORE", evidence=["S7"]),
         TemporalEdge(source="EV1", target="EV1", relation="OVERLAP", evidence=["S1"]),
         TemporalEdge(source="EV1", target="EV5", relation="AFTER", evidence=["S1"])]
    c = [CausalEdge(source="EV1", target="EV2", relation="CAUSES", evidence=["S2"])]
    errs = " | ".join(stage2_errors(t, c, {"EV1", "EV2"}, {"S1", "S2"}))
    assert "itself" in errs and "EV5" in errs and "S7" in errs
    t2, c2, issues = repair_stage2(t, c, evs, {"S1", "S2"})
    assert [(e.source, e.target, e.evidence) for e in t2] == [("EV1", "EV2", ["S1", "S2"])]  # grounded in its events
    assert len(c2) == 1 and stage2_errors(t2, c2, {"EV1", "EV2"}, {"S1", "S2"}) == []


def test_remap_edges_drops_edges_of_dropped_events():
    t = [TemporalEdge(source="EV1", target="EV3", relation="BEFORE", evidence=["S1"])]
    (e,) = remap_edges(t, {"EV1": "EV1"})
    assert e.target == "EV0"
