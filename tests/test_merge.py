"""Deterministic merging and the application of resolver decisions."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from argus.graph.merge import Resolution, apply_resolutions, merge_minigraphs, normalize_name
from argus.graph.schema import EventGraph, MiniGraph


def ev(i, verb, evidence, participants=(), etype="other", time=None):
    return {"id": f"EV{i}", "type": etype, "verb": verb, "trigger": verb, "participants": [
        {"entity": e, "role": r} for e, r in participants], "time": time or {"kind": "unknown", "value": None},
        "evidence": evidence, "confidence": 0.9}


def mg(chunk, entities, events, temporal=(), causal=()):
    return MiniGraph(chunk_id=chunk, graph=EventGraph.model_validate({
        "entities": entities, "events": events, "temporal_edges": list(temporal), "causal_edges": list(causal)}))


def test_entities_merge_by_name_or_alias_and_events_by_key():
    a = mg("C1", [
        {"id": "E1", "name": "Maria Torres", "kind": "person", "role": "plaintiff", "aliases": ["Ms. Torres"]},
        {"id": "E2", "name": "HVL", "kind": "organization", "role": "employer", "aliases": []},
    ], [ev(1, "hire", ["S1"], [("E2", "agent"), ("E1", "patient")], "hiring"),
        ev(2, "complain", ["S3"], [("E1", "agent")], "complaint")],
        temporal=[{"source": "EV2", "target": "EV1", "relation": "AFTER", "evidence": ["S3"]}])
    b = mg("C2", [
        {"id": "E1", "name": "ms.  torres", "kind": "person", "role": "plaintiff", "aliases": []},
        {"id": "E2", "name": "Derek Palmer", "kind": "person", "role": "supervisor", "aliases": ["Palmer"]},
    ], [ev(1, "complain", ["S3"], [("E1", "agent")], "complaint"),
        ev(2, "fire", ["S5"], [("E2", "agent"), ("E1", "patient")], "termination")],
        causal=[{"source": "EV1", "target": "EV2", "relation": "CAUSES", "evidence": ["S5"]}])
    graph, log = merge_minigraphs([a, b])
    names = {e.name for e in graph.entities}
    assert names == {"Maria Torres", "HVL", "Derek Palmer"}
    torres = next(e for e in graph.entities if e.name == "Maria Torres")
    assert set(torres.sources) == {"C1:E1", "C2:E1"}
    assert len(graph.events) == 3  # the complaint event is the same key in both chunks
    complaint = next(e for e in graph.events if e.verb == "complain")
    assert complaint.sources == ["C1:EV2", "C2:EV1"]
    # AFTER normalized to BEFORE with the endpoints swapped
    (t,) = graph.temporal_edges
    hire = next(e for e in graph.events if e.verb == "hire")
    assert (t.source, t.target, t.relation) == (hire.id, complaint.id, "BEFORE")
    (c,) = graph.causal_edges
    assert c.source == complaint.id and c.relation == "CAUSES"
    actions = {d.action for d in log}
    assert {"merge_entities", "merge_events", "normalize_edge"} <= actions


def test_resolver_merge_remaps_edges_and_drops_self_loops():
    a = mg("C1", [], [ev(1, "complain", ["S2"]), ev(2, "warn", ["S3"])],
           temporal=[{"source": "EV1", "target": "EV2", "relation": "BEFORE", "evidence": ["S2", "S3"]}])
    b = mg("C2", [], [ev(1, "complained", ["S7"]), ev(2, "fire", ["S8"])],
           temporal=[{"source": "EV1", "target": "EV2", "relation": "BEFORE", "evidence": ["S7", "S8"]}])
    graph, _ = merge_minigraphs([a, b])
    ids = {e.verb: e.id for e in graph.events}
    res = [Resolution(ids["complain"], ids["complained"], True, "NONE", "restated", "m"),
           Resolution(ids["warn"], ids["fire"], False, "CAUSES", "warnings cited in the letter", "m")]
    merged, log = apply_resolutions(graph, res)
    assert len(merged.events) == 3
    kept = next(e for e in merged.events if e.id == ids["complain"])
    assert kept.evidence == ["S2", "S7"] and len(kept.sources) == 2
    assert {(e.source, e.target) for e in merged.temporal_edges} == {(ids["complain"], ids["warn"]), (ids["complain"], ids["fire"])}
    (c,) = merged.causal_edges
    assert (c.source, c.target, c.origin) == (ids["warn"], ids["fire"], "resolver")
    assert any(d.action == "merge_events" and d.rule == "resolver:m" for d in log)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["hire", "fire", "tell"]), st.sets(st.integers(1, 12), min_size=1, max_size=3)),
                min_size=1, max_size=10), st.integers(1, 3))
def test_merging_never_loses_an_evidence_id(events, n_chunks):
    mgs = []
    for c in range(n_chunks):
        evs = [ev(i + 1, verb, [f"S{k}" for k in sorted(sids)]) for i, (verb, sids) in enumerate(events) if i % n_chunks == c]
        mgs.append(mg(f"C{c + 1}", [], evs))
    graph, _ = merge_minigraphs(mgs)
    before = {s for _, sids in events for s in (f"S{k}" for k in sids)}
    after = {s for e in graph.events for s in e.evidence}
    assert before == after
    # collapsing everything through the resolver keeps them too
    res = [Resolution(graph.events[0].id, e.id, True, "NONE", "", "m") for e in graph.events[1:]]
    merged, _ = apply_resolutions(graph, res)
    assert {s for e in merged.events for s in e.evidence} == before


def test_normalize_name():
    assert normalize_name('  "Ms.   Torres," ') == "ms. torres"


def test_resolver_merges_are_guarded_by_type_and_chunk():
    """A chain of "same occurrence" answers cannot join two events of one chunk, nor two types."""
    a = mg("C1", [], [ev(1, "complain", ["S2"], etype="complaint"), ev(2, "complain again", ["S3"], etype="complaint")])
    b = mg("C2", [], [ev(1, "complained", ["S7"], etype="complaint"), ev(2, "fire", ["S8"], etype="termination")])
    graph, _ = merge_minigraphs([a, b])
    ids = {e.verb: e.id for e in graph.events}
    res = [Resolution(ids["complain"], ids["complained"], True, "NONE", "restated", "m"),
           Resolution(ids["complain again"], ids["complained"], True, "NONE", "restated too", "m"),
           Resolution(ids["complain"], ids["fire"], True, "NONE", "confused", "m")]
    merged, log = apply_resolutions(graph, res)
    assert len(merged.events) == 3  # only the first merge holds
    rejected = [d.reason for d in log if d.action == "keep_separate"]
    assert any("two events of chunk C1" in r for r in rejected)
    assert any("types differ" in r for r in rejected)


def test_resolver_groups_keep_our_representative_not_the_union_finds_root():
    """networkx's UnionFind roots a union at the heavier set; which event a group keeps is our rule:
    an accepted pair (keep, drop) joins drop's group into keep's, and the group keeps keep's event."""
    graph, _ = merge_minigraphs([mg(f"C{i}", [], [ev(1, f"complain {i}", [f"S{i}"], etype="complaint")]) for i in range(1, 5)])
    assert [e.id for e in graph.events] == ["EV1", "EV2", "EV3", "EV4"]
    same = lambda a, b: Resolution(a, b, True, "NONE", "restated", "m")  # noqa: E731
    # {EV3, EV4} is the heavier set when EV2 joins it: networkx roots the union in it, EV2 is kept
    merged, log = apply_resolutions(graph, [same("EV3", "EV4"), same("EV2", "EV4")])
    assert [e.id for e in merged.events] == ["EV1", "EV2"]
    kept = merged.events[1]
    assert (kept.verb, kept.evidence, kept.sources) == ("complain 2", ["S2", "S3", "S4"], ["C2:EV1", "C3:EV1", "C4:EV1"])
    assert [d.items for d in log if d.action == "merge_events"] == [["EV3", "EV4"], ["EV2", "EV4"]]
    # the rule follows the pairs, not the group's lowest number: after EV1 + EV3, (EV2, EV3) keeps EV2
    merged, _ = apply_resolutions(graph, [same("EV1", "EV3"), same("EV2", "EV3")])
    assert [e.id for e in merged.events] == ["EV2", "EV4"]
    assert merged.events[0].sources == ["C2:EV1", "C1:EV1", "C3:EV1"]


def test_entity_groups_are_numbered_by_first_appearance():
    """The union-find's root only names a group: a document entity lists its members, and the
    entities are numbered, in the order of their first member (chunk order, then entity order)."""
    ent = lambda i, name, *aliases: {"id": f"E{i}", "name": name, "kind": "person", "role": "other",  # noqa: E731
                                     "aliases": list(aliases)}
    a = mg("C1", [ent(1, "Alpha"), ent(2, "Beta"), ent(3, "Delta")], [])
    b = mg("C2", [ent(1, "Beta"), ent(2, "Gamma", "Beta", "Alpha")], [])
    # C2:E2 joins {C1:E2, C2:E1} by "Beta", then brings in C1:E1 by "Alpha": networkx roots that
    # last union at the heavier set {C1:E2, C2:E1, C2:E2}, yet C1:E1 comes first
    graph, log = merge_minigraphs([a, b])
    assert [(e.id, e.name, e.sources) for e in graph.entities] == [
        ("E1", "Alpha", ["C1:E1", "C1:E2", "C2:E1", "C2:E2"]), ("E2", "Delta", ["C1:E3"])]
    assert [d.items for d in log if d.action == "merge_entities"] == [
        ["C1:E2", "C2:E1"], ["C1:E2", "C2:E2"], ["C1:E1", "C2:E2"]]
