"""Character grounding: alignment tiers, what leaves the graph, span checks, the metric, schema upgrades."""

from __future__ import annotations

import json

import pytest

from argus.errors import InputError
from argus.output.export import load_ekg
from argus.graph.grounding import (
    Aligner,
    chunk_phrases,
    ground_items,
    normalize_with_map,
    span_problems,
)
from argus.graph.schema import SCHEMA_VERSION, EventGraph, Mention
from metrics.structural import structural_for_ekg, structural_score
from tests.conftest import DEMO

SENTENCES = [
    "12. On March 3, 2019, Ms. Jane Torres complained to her supervisor, Mr. Al Brandt.",
    "13. Two weeks later Defendant  ACME\n   Corp. terminated her employ-\nment without warning.",
    "14. Brandt called Ms. Torres “a liability” under the employer’s policy.",
]
TEXT = "CAPTION\n" + "\n".join(SENTENCES) + "\n"


def _spans(text: str) -> dict[str, tuple[int, int]]:
    starts = [text.index(s) for s in SENTENCES]
    return {f"S{k}": (a, a + len(s)) for k, (a, s) in enumerate(zip(starts, SENTENCES), 1)}


@pytest.fixture()
def aligner() -> Aligner:
    return Aligner(TEXT, _spans(TEXT))


def test_tiers_exact_then_normalized_then_fuzzy(aligner):
    exact = aligner.find_all("Jane Torres", ["S1", "S2", "S3"])
    assert [(m.match, m.text, m.sentence_id) for m in exact] == [("exact", "Jane Torres", "S1")]
    assert TEXT[exact[0].span[0]:exact[0].span[1]] == "Jane Torres"
    # case, a line break inside the name, a double space
    norm = aligner.find_all("defendant acme corp", ["S2"])
    assert [m.match for m in norm] == ["normalized"] and norm[0].text == "Defendant  ACME\n   Corp"
    # a word hyphenated across a line break, as the cleaned sentence shows it to the model
    assert aligner.find_all("employment", ["S2"])[0].text == "employ-\nment"
    # typographic quotes written plainly; quotes around a string are not part of it
    assert aligner.find_all("employer's policy", ["S3"])[0].text == "employer’s policy"
    assert aligner.find_all('"a liability"', ["S3"])[0].text == "a liability"
    fz = aligner.find_fuzzy("terminate", ["S2"])
    assert fz is not None and fz.match == "fuzzy" and fz.text == "terminated"
    assert aligner.find_best("terminated", ["S2"]).match == "exact"


def test_whole_words_only_and_no_fuzzy_for_short_or_invented_strings(aligner):
    assert aligner.find_all("Al", ["S1"])[0].text == "Al"  # the word, not the "Al" inside other words
    assert all(m.text == "Al" for m in aligner.find_all("Al", ["S1", "S2", "S3"]))
    assert aligner.find_all("rand", ["S1"]) == []  # inside "Brandt": not a word of the text
    for junk in ("event_role_name", "event_event", "M1", "SHOPPING",
                 "event_event_event_event_event_event_event_event_event_event_"):
        assert aligner.find_best(junk, ["S1", "S2", "S3"]) is None, junk
    assert aligner.find_fuzzy("Ms.", ["S1"]) is None  # shorter than MIN_FUZZY_CHARS


def test_normalize_map_points_back_into_the_original():
    s = "Employ-\n  ment  of “Ms.\tX”"
    norm, where = normalize_with_map(s)
    assert norm == 'employment of "ms. x"'
    assert len(norm) == len(where) and all(s[w].lower() == c or c in "\"' -" for c, w in zip(norm, where))


def _graph(**over) -> EventGraph:
    g = {
        "entities": [
            {"id": "E1", "name": "Jane Torres", "kind": "person", "role": "plaintiff", "aliases": ["Ms. Torres", "the employee"]},
            {"id": "E2", "name": "event_role_name", "kind": "person", "role": "other", "aliases": []},
            {"id": "E3", "name": "Albert Brandt", "kind": "person", "role": "supervisor", "aliases": ["Brandt"]},
        ],
        "events": [
            {"id": "EV1", "type": "complaint", "verb": "complain", "trigger": "complained",
             "participants": [{"entity": "E1", "role": "agent"}, {"entity": "E2", "role": "recipient"}],
             "time": {"kind": "explicit", "value": "2019-03-03"}, "evidence": ["S1"]},
            {"id": "EV2", "type": "other", "verb": "SHOPPING", "trigger": "SHOPPING", "participants": [],
             "time": {"kind": "unknown"}, "evidence": ["S2"]},
            {"id": "EV3", "type": "termination", "verb": "terminate", "trigger": "terminated",
             "participants": [{"entity": "E1", "role": "patient"}], "time": {"kind": "relative", "value": "two weeks later"},
             "evidence": ["S2"]},
        ],
        "temporal_edges": [{"source": "EV1", "target": "EV3", "relation": "BEFORE", "evidence": ["S2"]},
                           {"source": "EV2", "target": "EV3", "relation": "BEFORE", "evidence": ["S2"]}],
        "causal_edges": [{"source": "EV1", "target": "EV2", "relation": "CAUSES", "evidence": ["S2"]}],
    }
    g.update(over)
    return EventGraph.model_validate(g)


def test_ungrounded_items_leave_with_their_edges_and_are_listed(aligner):
    g = ground_items(_graph(), aligner, ["S1", "S2", "S3"], stage="stage1", prefix="C1:")
    assert [e.id for e in g.graph.entities] == ["E1", "E3"]
    assert [e.id for e in g.graph.events] == ["EV1", "EV3"]
    assert [(e.source, e.target) for e in g.graph.temporal_edges] == [("EV1", "EV3")]
    assert g.graph.causal_edges == []
    kinds = {(r.kind, r.id) for r in g.rejected}
    assert {("entity", "C1:E2"), ("event", "C1:EV2"), ("participant", "C1:EV1/E2"), ("alias", "C1:E1"),
            ("name", "C1:E3"), ("temporal_edge", "C1:EV2-BEFORE->EV3"), ("causal_edge", "C1:EV1-CAUSES->EV2")} == kinds
    assert all(r.stage == "stage1" and r.reason for r in g.rejected)
    assert "SHOPPING" in next(r.reason for r in g.rejected if r.kind == "event")
    # the name the text never uses gives way to the alias it does use
    e3 = g.graph.entities[1]
    assert e3.name == "Brandt" and e3.aliases == []
    assert g.graph.entities[0].aliases == ["Ms. Torres"]  # "the employee" is not in the text
    # every mention and trigger slices the text to the form it stands for
    for item_id, ms in g.spans.items():
        for m in ms:
            assert TEXT[m.span[0]:m.span[1]] == m.text
    assert [(m.text, m.sentence_id) for m in g.spans["E1"]] == [("Jane Torres", "S1"), ("Ms. Torres", "S3")]
    assert [(m.text, m.sentence_id) for m in g.spans["E3"]] == [("Brandt", "S1"), ("Brandt", "S3")]
    assert [m.text for m in g.spans["EV3"]] == ["terminated"]


def test_keep_ungrounded_keeps_them_flagged(aligner):
    g = ground_items(_graph(), aligner, ["S1", "S2", "S3"], stage="stage1", keep_ungrounded=True)
    assert [e.id for e in g.graph.events] == ["EV1", "EV2", "EV3"]
    assert sorted(g.ungrounded) == ["E2", "EV2"]
    assert len(g.graph.temporal_edges) == 2 and len(g.graph.causal_edges) == 1
    assert {r.kind for r in g.rejected} <= {"alias", "name"}


def test_grounding_component_names_each_ungrounded_item_for_its_stage(aligner):
    g = ground_items(_graph(), aligner, ["S1", "S2", "S3"], stage="stage1", prefix="C1:")
    r = structural_score(g.graph, allowed_sentences=["S1", "S2", "S3"], rejected=g.rejected)
    assert r.components["grounding"] == pytest.approx(1 - 2 / 6)  # E2 and EV2 of 3 entities + 3 events
    feedback = r.feedback_for("stage1")
    assert "C1:E2" in feedback and "C1:EV2" in feedback and "SHOPPING" in feedback
    assert "C1:E2" not in r.feedback_for("stage2")
    clean = structural_score(g.graph, allowed_sentences=["S1", "S2", "S3"], rejected=[])
    assert clean.components["grounding"] == 1.0
    kept = ground_items(_graph(), aligner, ["S1", "S2", "S3"], stage="stage1", keep_ungrounded=True)
    flagged = structural_score(kept.graph, rejected=kept.rejected, ungrounded=kept.ungrounded)
    assert flagged.components["grounding"] == pytest.approx(1 - 2 / 6)


def test_chunk_phrases_offer_word_runs_as_written():
    phrases = chunk_phrases(["Ms. Torres was terminated, without notice."], max_words=3)
    assert {"Ms. Torres", "terminated", "was terminated", "Torres was terminated", "without notice"} <= set(phrases)
    assert "notice." not in phrases and all(p == p.strip() for p in phrases)
    # the engine's grammar conversion mis-escapes straight double quotes inside enum values
    quoted = chunk_phrases(['the Plan (the "PIP") said'], max_words=3)
    assert "PIP" in quoted and "the Plan (the" in quoted and not any('"' in p for p in quoted)


def test_grounded_decoding_constrains_names_aliases_and_triggers():
    from argus.models.lm import signature_output_schema
    from programs.stage1 import ExtractEntitiesAndEvents

    schema = signature_output_schema(ExtractEntitiesAndEvents, None,
                                     {"evidence": ["S1"], "name": ["Ms. Torres"], "aliases": ["Torres"], "trigger": ["fired"]})
    ent = schema["properties"]["entities"]["items"]["properties"]
    ev = schema["properties"]["events"]["items"]["properties"]
    assert ent["name"]["enum"] == ["Ms. Torres"] and ent["aliases"]["items"]["enum"] == ["Torres"]
    assert ev["trigger"]["enum"] == ["fired"] and ev["evidence"]["items"]["enum"] == ["S1"]
    assert "enum" not in ev["verb"]


def test_many_choices_become_a_prefix_tree_pattern_the_engine_reads():
    import re

    from llama_cpp.llama_grammar import LlamaGrammar, json_schema_to_gbnf

    from argus.models.lm import ENUM_LIMIT, signature_output_schema
    from programs.stage1 import ExtractEntitiesAndEvents

    phrases = chunk_phrases(SENTENCES + ["Under 42 U.S.C. § 2000e-5(f)(3), she filed (on time) a charge? $5 & 10%."])
    assert len(phrases) > ENUM_LIMIT
    schema = signature_output_schema(ExtractEntitiesAndEvents, None, {"trigger": phrases, "evidence": ["S1"]})
    trig = schema["properties"]["events"]["items"]["properties"]["trigger"]
    assert "enum" not in trig
    rx = re.compile(trig["pattern"])
    assert all(rx.match(p) for p in phrases)
    for near in ("Jane Torre", "terminated her employ", "ACME Corp", "complained to her supervisor, Mr. Al Brandt. 13"):
        assert (rx.match(near) is not None) == (near in phrases), near
    LlamaGrammar.from_string(json_schema_to_gbnf(json.dumps(schema)), verbose=False)  # parses


@pytest.fixture()
def demo_ekg(scripted_pipeline):
    return scripted_pipeline.extract(DEMO)


def test_pipeline_graphs_carry_spans_that_slice_the_filing(demo_ekg):
    ekg = demo_ekg
    assert ekg.text == DEMO.read_text(encoding="utf-8") and ekg.schema_version == SCHEMA_VERSION
    assert ekg.graph.entities and ekg.graph.events
    sent = {s.id: s.span for s in ekg.sentences}
    for ent in ekg.graph.entities:
        assert ent.grounded and ent.mentions
        for m in ent.mentions:
            assert ekg.text[m.span[0]:m.span[1]] == m.text
            assert sent[m.sentence_id][0] <= m.span[0] < m.span[1] <= sent[m.sentence_id][1]
    for ev in ekg.graph.events:
        a, b = ev.trigger_span
        assert any(sent[s][0] <= a < b <= sent[s][1] for s in ev.evidence)
        if ev.trigger_match == "exact":
            assert ekg.text[a:b] == ev.trigger
    assert span_problems(ekg) == []
    assert structural_for_ekg(ekg).components["grounding"] == 1.0


def test_validate_catches_a_span_that_does_not_slice_its_name(demo_ekg):
    from argus.output.contract import contract_problems

    ekg = demo_ekg.model_copy(deep=True)
    assert contract_problems(ekg) == []
    m = ekg.graph.entities[0].mentions[0]
    ekg.graph.entities[0].mentions[0] = Mention(sentence_id=m.sentence_id, span=(m.span[0] + 1, m.span[1] + 1),
                                                text=m.text, match=m.match)
    ev = ekg.graph.events[0]
    ev.trigger_span = (0, 3)
    problems = contract_problems(ekg)
    assert any(ekg.graph.entities[0].id in p and "slices" in p for p in problems), problems
    assert any(ev.id in p and "none of its evidence sentences" in p for p in problems), problems


def test_load_ekg_says_what_is_wrong_and_upgrades_schema_1_0(demo_ekg, tmp_path):
    not_ekg = tmp_path / "frontier.json"
    not_ekg.write_text(json.dumps({"members": []}))
    with pytest.raises(InputError, match="not an EKG"):
        load_ekg(not_ekg)
    broken = tmp_path / "broken.ekg.json"
    broken.write_text("{not json")
    with pytest.raises(InputError, match="not a JSON file"):
        load_ekg(broken)
    data = demo_ekg.model_dump(mode="json")
    newer = tmp_path / "newer.ekg.json"
    newer.write_text(json.dumps({**data, "schema_version": "9.0"}))
    with pytest.raises(InputError, match="schema 9.0"):
        load_ekg(newer)

    old = {k: v for k, v in data.items() if k not in ("text", "rejected")}
    old["schema_version"] = "1.0"
    old["source"] = str(DEMO)
    for e in old["graph"]["entities"]:
        e.pop("mentions"), e.pop("grounded")
    for e in old["graph"]["events"]:
        e.pop("trigger_span"), e.pop("trigger_match"), e.pop("grounded")
    for mg in old["minigraphs"]:
        mg.pop("spans"), mg.pop("rejected"), mg.pop("ungrounded")
    f = tmp_path / "old.ekg.json"
    f.write_text(json.dumps(old))
    up = load_ekg(f)
    assert up.schema_version == SCHEMA_VERSION and up.text == demo_ekg.text
    assert [e.mentions for e in up.graph.entities] == [e.mentions for e in demo_ekg.graph.entities]
    assert [e.trigger_span for e in up.graph.events] == [e.trigger_span for e in demo_ekg.graph.events]
    assert span_problems(up) == []
    old["source"] = str(tmp_path / "moved.txt")
    f.write_text(json.dumps(old))
    with pytest.raises(InputError, match="re-run 'argus extract'"):
        load_ekg(f)



def test_grounded_decoding_is_on_by_default_for_local_engines_only(tmp_path):
    from argus.config import ArgusConfig
    from argus.pipeline import ArgusPipeline

    def pipe(**over):
        return ArgusPipeline(ArgusConfig.load(None, {"cache_dir": str(tmp_path), **over}))

    assert pipe().grounded_decoding  # local/smollm2, the default
    assert not pipe(**{"lm.default.model": "openai/gpt-4o-mini"}).grounded_decoding
    assert not pipe(**{"extraction.grounded_decoding": False}).grounded_decoding
    assert pipe(**{"lm.default.model": "openai/gpt-4o-mini", "extraction.grounded_decoding": True}).grounded_decoding


def test_stage1_is_offered_the_chunks_word_runs(scripted_pipeline):
    from argus.graph.schema import Chunk

    doc = scripted_pipeline.preprocess(scripted_pipeline.read(DEMO))
    seen = {}
    original = scripted_pipeline.programs.stage1.forward

    def record(**kwargs):
        seen.update(kwargs)
        return original(**kwargs)

    scripted_pipeline.programs.stage1.forward = record
    ids = [s.id for s in doc.sentences][5:9]
    scripted_pipeline.extract_chunk(doc, Chunk(id="C1", sentence_ids=ids))
    assert seen["phrases"] == chunk_phrases(doc.sentence(i).text for i in ids)


def test_document_grounding_counts_what_each_chunk_wrote(demo_ekg):
    """Merging folds restatements together; the share is over what the chunks' Stage 1 wrote."""
    from argus.graph.schema import RejectedItem

    ekg = demo_ekg.model_copy(deep=True)
    written = sum(len(mg.graph.entities) + len(mg.graph.events) for mg in ekg.minigraphs)
    assert written > len(ekg.graph.entities) + len(ekg.graph.events)  # the scripted chunks overlap
    ekg.rejected = [RejectedItem(kind="entity", id="C1:E9", stage="stage1", reason="name 'M1' is not in its sentences"),
                    RejectedItem(kind="alias", id="C1:E1", stage="stage1", reason="alias dropped")]
    r = structural_for_ekg(ekg)
    assert r.components["grounding"] == pytest.approx(1 - 1 / (written + 1))
    assert "C1:E9" in r.feedback_for("stage1")
