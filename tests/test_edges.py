"""Temporal and causal edges of the sentence design, sieve by sieve, on small hand-made texts."""

from __future__ import annotations

import json

import numpy as np
import pytest

from argus.designs.sentence import causal, temporal
from argus.designs.sentence.pairs import PairEvent, PairHead, date_order, pair_events
from argus.designs.floor import floor_edges
from argus.graph.schema import Event, EventTime, Participant
from tests.conftest import needs_data


def _event(eid: str, sid: str, etype: str = "other", trigger: str = "did", date: str | None = None,
           who: tuple[str, ...] = ()) -> Event:
    time = EventTime(kind="explicit", value=date) if date else EventTime(kind="unknown")
    return Event(id=eid, type=etype, verb=trigger, trigger=trigger, evidence=[sid], confidence=0.9, time=time,
                 participants=[Participant(entity=e, role="agent") for e in who])


def _read(events: list[Event], texts: list[str]) -> list[PairEvent]:
    sids = [e.evidence[0] for e in events]
    return pair_events(events, dict(zip(sids, texts)), {s: i for i, s in enumerate(sids)})


def test_pair_events_are_in_narrative_order_with_their_dates():
    evs = [_event("EV2", "S9", date="2020-03-05"), _event("EV1", "S3", date="2020-01")]
    read = pair_events(evs, {"S3": "In January 2020 she was hired.", "S9": "On March 5, 2020 she left."},
                       {"S3": 3, "S9": 9})
    assert [e.id for e in read] == ["EV1", "EV2"] and read[0].date == (2020, 1) and read[1].date == (2020, 3, 5)
    assert date_order(read[0], read[1]) == -1 and date_order(read[1], read[0]) == 1


def test_a_before_that_contradicts_the_dates_is_dropped():
    evs = _read([_event("EV1", "S1", date="2021-05-02"), _event("EV2", "S2", date="2021-04-01")],
                ["On May 2, 2021, she complained.", "On April 1, 2021, she was hired."])
    kept = temporal.consistent([("EV1", "EV2", "BEFORE", 0.9), ("EV2", "EV1", "BEFORE", 0.6)], {e.id: e for e in evs})
    assert kept == [("EV2", "EV1", "BEFORE", 0.6)]


def test_a_cycle_of_before_edges_is_broken_at_its_least_probable_edge():
    evs = _read([_event(f"EV{i}", f"S{i}") for i in (1, 2, 3)], ["A met.", "B met.", "C met."])
    edges = [("EV1", "EV2", "BEFORE", 0.9), ("EV2", "EV3", "BEFORE", 0.8), ("EV3", "EV1", "BEFORE", 0.4),
             ("EV1", "EV3", "OVERLAP", 0.7)]
    kept = temporal.consistent(edges, {e.id: e for e in evs})
    assert ("EV3", "EV1", "BEFORE", 0.4) not in kept and len(kept) == 3


def _head(features: list[str], classes: list[str], fire: dict[str, dict[str, float]], threshold: float = 0.5) -> PairHead:
    """A head that writes a relation when the named features are on (weights set by hand)."""
    w = np.zeros((len(classes), len(features)))
    for rel, by_feature in fire.items():
        for name, value in by_feature.items():
            w[classes.index(rel), features.index(name)] = value
    bias = np.array([2.0 if c == "none" else 0.0 for c in classes])
    return PairHead(classes, features, w, bias, threshold)


def test_the_temporal_head_reads_a_cue_in_the_later_sentence():
    names = temporal.feature_names()
    head = _head(names, list(temporal.CLASSES), {"BEFORE": {"b_opening:next_day": 5.0, "distance=1": 1.0}})
    evs = _read([_event("EV1", "S1", "complaint", "complained"), _event("EV2", "S2", "termination", "fired")],
                ["Plaintiff complained to Human Resources.", "The next day, Palmer fired her."])
    assert temporal.edges(head, evs) == [("EV1", "EV2", "BEFORE", pytest.approx(0.95, abs=0.05))]
    quiet = _read([_event("EV1", "S1", "complaint", "complained"), _event("EV2", "S2", "termination", "fired")],
                  ["Plaintiff complained to Human Resources.", "Palmer is the regional manager."])
    assert temporal.edges(head, quiet) == []


def test_the_causal_head_links_an_effect_to_the_earlier_event_its_sentence_names():
    names = causal.feature_names()
    head = _head(names, list(causal.CLASSES), {"CAUSES": {"b:retaliation": 2.5, "names_earlier": 2.5}})
    evs = _read([_event("EV1", "S1", "complaint", "complained"), _event("EV2", "S2", "communication", "met"),
                 _event("EV3", "S3", "termination", "fired")],
                ["On May 1, 2020, Plaintiff complained to HR about Palmer.", "Palmer met with his team.",
                 "In retaliation for her complaint, Palmer fired Plaintiff."])
    drawn = causal.edges(head, evs)
    assert [(s, t, r) for s, t, r, _ in drawn] == [("EV1", "EV3", "CAUSES")]


def test_the_cue_sieve_links_each_cause_an_effect_names_after_a_connective():
    evs = _read([_event("EV1", "S1", "complaint", "submitted"), _event("EV2", "S2", "harassment", "grabbed"),
                 _event("EV3", "S3", "communication", "met"), _event("EV4", "S4", "demotion", "demoted"),
                 _event("EV5", "S5", "medical", "diagnosed")],
                ["On May 1, 2020, she submitted a written complaint to HR.", "Palmer grabbed her arm in the crib.",
                 "Palmer met with his team.", "In retaliation for her complaint, Palmer demoted her.",
                 "As a result of the assault and the demotion, her physician diagnosed an anxiety disorder."])
    # "complaint" names EV1 (no trigger of that lemma: its type), "demotion" its trigger's nominalization
    # (EV4), "assault" a harassment event (EV2); a head that links every adjacent pair adds its one
    # cause per effect beside them, once where the cues drew the same pair (EV4 → EV5)
    head = _head(causal.feature_names(), list(causal.CLASSES), {"CAUSES": {"distance<=1": 9.0}})
    drawn = sorted((s, t, r) for s, t, r, _ in causal.edges(head, evs))
    assert drawn == [("EV1", "EV2", "CAUSES"), ("EV1", "EV4", "CAUSES"), ("EV2", "EV3", "CAUSES"),
                     ("EV2", "EV5", "CAUSES"), ("EV3", "EV4", "CAUSES"), ("EV4", "EV5", "CAUSES")]
    assert sorted((s, t, r) for s, t, r, _ in causal.cue_edges(evs)) == [
        ("EV1", "EV4", "CAUSES"), ("EV2", "EV5", "CAUSES"), ("EV4", "EV5", "CAUSES")]


def test_the_cue_sieve_reads_emboldened_as_enables_and_a_clause_after_because():
    evs = _read([_event("EV1", "S1", "investigation", "closed"), _event("EV2", "S2", "complaint", "complained"),
                 _event("EV3", "S3", "harassment", "called"), _event("EV4", "S4", "termination", "fired")],
                ["HR closed its investigation without findings.", "She complained again to HR.",
                 "Emboldened by the investigation's outcome, Palmer called her a slur.",
                 "Palmer fired her because she complained."])
    assert sorted((s, t, r) for s, t, r, _ in causal.cue_edges(evs)) == [
        ("EV1", "EV3", "ENABLES"), ("EV2", "EV4", "CAUSES")]
    # nothing named, or the named cause dated after its effect: no edge
    late = _read([_event("EV1", "S1", "termination", "fired", "2020-03-01"),
                  _event("EV2", "S2", "complaint", "complained", "2020-06-01"),
                  _event("EV3", "S3", "medical", "diagnosed", "2020-02-01")],
                 ["On March 1, 2020, Palmer fired her.", "On June 1, 2020, she complained.",
                  "As a result of her complaint, on February 1, 2020, she was diagnosed with anxiety."])
    assert causal.cue_edges(late) == []


def test_the_temporal_head_draws_at_most_one_edge_to_each_event():
    names = temporal.feature_names()
    head = _head(names, list(temporal.CLASSES), {"BEFORE": {"distance=1": 4.0, "distance=2": 3.0}})
    evs = _read([_event(f"EV{i}", f"S{i}") for i in (1, 2, 3)], ["A met.", "B met.", "C met."])
    drawn = temporal.edges(head, evs)
    assert [(s, t, r) for s, t, r, _ in drawn] == [("EV1", "EV2", "BEFORE"), ("EV2", "EV3", "BEFORE")]


def test_a_cause_is_never_dated_after_its_effect():
    evs = _read([_event("EV1", "S1", "complaint", "complained", "2020-06-01"),
                 _event("EV2", "S2", "termination", "fired", "2020-03-01")],
                ["On June 1, 2020, she complained.", "Because she complained, on March 1, 2020, he fired her."])
    assert causal.candidates(evs) == []


def test_pair_heads_round_trip_through_json():
    head = _head(temporal.feature_names(), list(temporal.CLASSES), {"OVERLAP": {"b:overlap": 3.0}}, 0.7)
    again = PairHead.from_json(json.loads(json.dumps(head.to_json())))
    x = np.random.default_rng(0).integers(0, 2, size=(5, len(head.features))).astype(float)
    assert np.allclose(head.probs(x), again.probs(x)) and again.threshold == 0.7


def test_the_floor_draws_date_order_and_the_adjacent_chain():
    evs = [_event(f"EV{i}", f"S{i}") for i in (1, 2, 3, 4)]
    edges = floor_edges(evs, ["On March 5, 2020, she was hired.", "On March 1, 2020, she interviewed.",
                              "Later she complained.", "He fired her."])
    got = {(e.source, e.relation, e.target) for e in edges}
    # the dates put EV2 first, so no chain edge EV1 -> EV2; the rest is the chain
    assert got == {("EV2", "BEFORE", "EV1"), ("EV2", "BEFORE", "EV3"), ("EV3", "BEFORE", "EV4")}


# ----------------------------------------------------------------------------- the pair-choice program


def _unsure_head(threshold: float = 0.7) -> PairHead:
    return PairHead(["none", "BEFORE", "AFTER"], ["f"], np.zeros((3, 1)), np.zeros(3), threshold)


def test_unsure_pairs_are_those_near_the_heads_threshold_closest_first():
    from argus.designs.sentence.design import unsure_pairs

    probs = np.array([[0.65, 0.30, 0.05], [0.95, 0.03, 0.02], [0.72, 0.20, 0.08], [0.10, 0.85, 0.05]])
    assert unsure_pairs(_unsure_head(), probs, 0.1) == [2, 0]
    assert unsure_pairs(_unsure_head(), probs, 0.0) == []
    assert sorted(unsure_pairs(_unsure_head(), probs, 1.0)) == [0, 1, 2, 3]


def test_pair_routing_follows_the_measurement():
    from argus.config import ArgusConfig
    from argus.pipeline import ArgusPipeline

    pipe = ArgusPipeline()
    heads = pipe.event_heads
    mode, _, why = pipe.pair_routing()
    assert mode == "never" and "measured no better" in why  # the embedded model (bench/pair_fallback.py)
    pipe._event_heads = heads.__class__(**{**heads.__dict__, "meta": {}})
    mode, _, why = pipe.pair_routing()
    assert mode == "never" and "not measured" in why
    assert ArgusPipeline(ArgusConfig.load(None, {"sentence.pair_llm": "always"})).pair_routing()[0] == "model"
    assert ArgusPipeline(ArgusConfig.load(None, {"sentence.pair_llm": "never"})).pair_routing()[0] == "never"
    for row, want in (({"tau": None, "f1_heads": 0.3, "f1_model": 0.2}, ("never", "measured no better")),
                      ({"tau": 0.2, "f1_heads": 0.3, "f1_model": 0.4}, ("model", ""))):
        pipe._event_heads = heads.__class__(**{**heads.__dict__, "meta": {"pair_fallback": {"local/smollm2": row}}})
        mode, tau, why = pipe.pair_routing()
        assert mode == want[0] and want[1] in why
        assert tau == (0.2 if row["tau"] else pipe.config.sentence.pair_tau)


def test_the_pair_choice_program_decides_the_unsure_pairs_and_only_those(tmp_path):
    """With every candidate pair unsure (τ 1.0), the scripted program's answers replace the heads' (it reads
    BEFORE for every pair, CAUSES where the later sentence says "because" or "retaliation"); with τ 0 no pair
    goes to it and the graph is the heads' own."""
    from tests.conftest import DEMO, make_scripted_pipeline

    base = {"extraction.design": "sentence", "sentence.llm": "never", "sentence.stage2": False}
    heads_only = make_scripted_pipeline(tmp_path / "h", **base, **{"sentence.pair_llm": "never"}).extract(DEMO)
    none_unsure = make_scripted_pipeline(tmp_path / "z", **base, **{"sentence.pair_llm": "always", "sentence.pair_tau": 0.0})
    zero = none_unsure.extract(DEMO)
    assert not any("relations" in c["fields"] for c in none_unsure.engine.calls)
    edges = lambda g: sorted((e.source, e.target, e.relation) for e in g.temporal_edges + g.causal_edges)  # noqa: E731
    assert edges(zero.graph) == edges(heads_only.graph)

    pipe = make_scripted_pipeline(tmp_path / "m", **base, **{"sentence.pair_llm": "always", "sentence.pair_tau": 1.0,
                                                              "sentence.pair_batch": 5, "sentence.pair_max": 30})
    ekg = pipe.extract(DEMO)
    calls = [c for c in pipe.engine.calls if "relations" in c["fields"]]
    asked = [line for c in calls for line in c["inputs"]["pairs"].splitlines()]
    assert calls and all(len(c["inputs"]["pairs"].splitlines()) <= 5 for c in calls) and len(asked) <= 30
    assert len(set(asked)) == len(asked) or len(calls) > 1  # a pair is asked once (labels restart per call)
    assert edges(ekg.graph) != edges(heads_only.graph)
    order = {e.id: min(int(s[1:]) for s in e.evidence) for e in ekg.graph.events}
    temporal_rel = {e.relation for e in ekg.graph.temporal_edges}
    assert temporal_rel and temporal_rel <= {"BEFORE", "SAME_TIME"}  # the program's BEFORE, the dates' SAME_TIME
    assert all(order[e.source] <= order[e.target] for e in ekg.graph.temporal_edges if e.relation == "BEFORE"
               and e.origin == "heads")


def test_a_campaign_may_search_the_pair_routing_and_a_member_deploys_it():
    from argus.config import ArgusConfig
    from optimizers.config import SpaceSpec
    from optimizers.deploy import member_overrides

    space = SpaceSpec.model_validate({"sentence.pair_llm": ["always", "never"], "sentence.pair_tau": [0.1, 0.3]})
    assert space.choices("sentence.pair_tau") == [0.1, 0.3] and space.choices("sentence.pair_llm") == ["always", "never"]
    with pytest.raises(ValueError, match="τ"):
        SpaceSpec.model_validate({"sentence.pair_tau": [1.5]})
    overrides = member_overrides({"sentence.pair_llm": "always", "sentence.pair_tau": 0.3})
    cfg = ArgusConfig.load(None, overrides)
    assert (cfg.sentence.pair_llm, cfg.sentence.pair_tau) == ("always", 0.3)


# ----------------------------------------------------------------------------- retraining one part


@needs_data
def test_train_events_retrains_only_the_named_parts_and_drops_their_measurements(tmp_path):
    from typer.testing import CliRunner

    from argus.cli import app
    from argus.designs.sentence.heads import EMBEDDED_EVENT_HEADS

    base = json.loads(EMBEDDED_EVENT_HEADS.read_text())
    assert "pair_fallback" in base["meta"] and "fallback" in base["meta"]
    out = tmp_path / "heads.json"
    res = CliRunner().invoke(app, ["train-events", "--parts", "edges", "--splits", "dev", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "meta.pair_fallback dropped" in res.output
    new = json.loads(out.read_text())
    # the heads, the other parts and the type heads' measurement are the base file's, byte for byte
    assert {k: v for k, v in new.items() if k not in ("parts", "meta")} == \
        {k: v for k, v in base.items() if k not in ("parts", "meta")}
    assert {k: new["parts"][k] for k in ("entities", "types", "occurrences")} == \
        {k: base["parts"][k] for k in ("entities", "types", "occurrences")}
    assert new["meta"]["fallback"] == base["meta"]["fallback"] and "pair_fallback" not in new["meta"]
    assert "edges" in new["meta"]["retrained_parts"]
    # trained on the 6 dev complaints, not the shipped 12: other edge heads
    assert new["parts"]["edges"]["temporal"]["meta"]["rows"] != base["parts"]["edges"]["temporal"]["meta"]["rows"]
    bad = CliRunner().invoke(app, ["train-events", "--parts", "edges,nonsense", "--out", str(tmp_path / "x.json")])
    assert bad.exit_code == 2 and "no learned part nonsense" in bad.output and not (tmp_path / "x.json").exists()


def test_a_part_retrained_alone_learns_from_the_design_with_only_the_parts_before_it(monkeypatch):
    """Retraining occurrences and edges on a full heads file: the same-occurrence head must not learn from
    graphs its old version already joined (it then learned to join ever more), nor the edges from graphs
    without the new occurrences part; the parts not named are kept as they were."""
    import importlib

    from argus.designs.sentence.heads import load_event_heads
    from argus.training.heads import PARTS, fit_parts

    heads = load_event_heads()
    old = dict(heads.parts)
    seen: dict[str, tuple] = {}
    for name, module in PARTS:
        def fake(folders, design, name=name):
            seen[name] = tuple(sorted(design.parts))
            return {"retrained": name}
        monkeypatch.setattr(importlib.import_module(module), "fit_part", fake)
    fit_parts(heads, [], only=("occurrences", "edges"))
    assert seen == {"occurrences": ("entities", "types"), "edges": ("entities", "occurrences", "types")}
    assert heads.parts["occurrences"] == {"retrained": "occurrences"} and heads.parts["edges"] == {"retrained": "edges"}
    assert heads.parts["entities"] is old["entities"] and heads.parts["types"] is old["types"]


def test_a_bench_records_its_measurement_in_the_heads_file_and_keeps_the_rest(tmp_path):
    from argus.errors import ConfigError
    from argus.designs.sentence.heads import EMBEDDED_EVENT_HEADS
    from argus.training.heads import record_measurement

    path = tmp_path / "heads.json"
    path.write_text(EMBEDDED_EVENT_HEADS.read_text())
    before = json.loads(path.read_text())
    assert record_measurement("pair_fallback", "openai/x", {"tau": 0.1}, path) == path
    after = json.loads(path.read_text())
    assert after["meta"]["pair_fallback"]["openai/x"] == {"tau": 0.1}
    assert after["meta"]["pair_fallback"]["local/smollm2"] == before["meta"]["pair_fallback"]["local/smollm2"]
    assert {k: v for k, v in after.items() if k != "meta"} == {k: v for k, v in before.items() if k != "meta"}
    with pytest.raises(ConfigError, match="no measurement 'typo'"):
        record_measurement("typo", "openai/x", {}, path)
