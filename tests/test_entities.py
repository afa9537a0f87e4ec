"""The sentence design's entity list (``argus.designs.sentence.entities``): parties paragraphs, forms that
name no party, unnamed entities, and the trained ``entities`` part (``argus.training.entities``)."""

from __future__ import annotations

import json

import pytest

from argus.designs.sentence.entities import (
    document_entities,
    form_flags,
    noun_phrases,
    party_candidates,
)
from argus.training.entities import fit_part
from tests.conftest import _split_dirs, needs_data

# a text with no headings at all: numbered paragraphs, the parties first
NO_HEADINGS = (
    "6. Plaintiff Jane Roe purchased the common stock of Acme during the Class Period and has been damaged thereby.\n"
    "7. Defendant Acme Holdings, Inc. (\"Acme\" or the \"Company\") is a Delaware corporation headquartered in "
    "Kansas City, Missouri.\n"
    "8. Defendant David L. Starling (\"Starling\"), at all relevant times, served as Acme's President and Chief "
    "Executive Officer (\"CEO\").\n"
    "9. Defendant Patrick J. Ottensmeye r (\"Ottensmeyer\"), at all relevant times, served as Acme's Executive "
    "Vice President.\n"
    "10. Defendants Starling and Ottensmeyer are collectively referred to herein as the \"Individual Defendants.\"\n"
)


def _names(entities) -> set[str]:
    return {n for e in entities for n in (e.name, *e.aliases)}


def test_a_parties_paragraph_gives_defendants_their_role_without_any_heading():
    from argus.text.documents import RawDocument
    from argus.graph.grounding import span_problems
    from argus.pipeline import ArgusPipeline

    ekg = ArgusPipeline().extract(RawDocument(doc_id="no-headings", source="test", text=NO_HEADINGS))
    people = {e.name: e for e in ekg.graph.entities if e.kind == "person"}
    # no fact sentence names them: they reach the graph through the parties sentences, grounded there
    assert people["David L. Starling"].role == "defendant"
    assert "Starling" in people["David L. Starling"].aliases
    assert people["Jane Roe"].role == "plaintiff"
    ottensmeyer = next(e for e in ekg.graph.entities if "Ottensmeyer" in (e.name, *e.aliases))
    assert ottensmeyer.role == "defendant" and ottensmeyer.kind == "person"
    acme = next(e for e in ekg.graph.entities if e.name.startswith("Acme"))
    assert acme.kind == "organization"
    assert all(e.grounded and e.mentions for e in ekg.graph.entities)
    assert span_problems(ekg) == []
    assert any(c.theme.startswith("parties") for c in ekg.chunks)


def test_the_parties_paragraph_reads_roles_kinds_and_ocr_breaks():
    found = {c.name: c for c in party_candidates([
        ("S1", "Defendant Bloom Energy is a Delaware corporation with principal executive offices in San Jose."),
        ("S2", "11. Defendants Glenn Alba (\"Alba\"), Alan J. Bowers (\"Bowers\") and Gary M. Sumers (\"Sumers\") each "
               "served as directors."),
        ("S3", "Individual Defendant Al bert Tylis (\"Tylis\") has served as a director since 2015."),
        ("S4", "Plaintiff Don L. Gross, as set forth in the certification incorporated by reference, purchased stock."),
    ])}
    assert found["Bloom Energy"].kind == "organization" and found["Bloom Energy"].role == "defendant"
    for name in ("Glenn Alba", "Alan J. Bowers", "Gary M. Sumers", "Albert Tylis"):
        assert found[name].kind == "person" and found[name].role == "defendant", name
    assert "Tylis" in found["Albert Tylis"].aliases and "Al bert Tylis" in found["Albert Tylis"].aliases
    assert found["Don L. Gross"].kind == "person" and found["Don L. Gross"].role == "plaintiff"


def test_parties_introduced_only_in_the_parties_section_are_listed():
    sentences = [("S5", "On March 3, 2021, Marchetti told Plaintiff that her position was eliminated.")]
    parties = [("S2", "Defendant Carol Marchetti (\"Marchetti\") is the Bank's branch manager."),
               ("S3", "Defendant Gregory Tull is the Bank's regional manager; he is sued individually.")]
    ents = document_entities(None, "", sentences, parties=parties)
    by_name = {e.name: e for e in ents}
    assert by_name["Marchetti"].role == "defendant"  # the list keeps the names the fact sentences use
    assert by_name["Gregory Tull"].role == "defendant" and by_name["Gregory Tull"].kind == "person"


COMPLAINT = """UNITED STATES DISTRICT COURT
EASTERN DISTRICT OF PENNSYLVANIA

JANE ROE,
Plaintiff,
v.
RIDGEFIELD BANK,
Defendant.

COMPLAINT

PARTIES

1. Plaintiff Jane Roe ("Ms. Roe") is an adult individual residing in Bucks County, Pennsylvania.

2. Defendant Ridgefield Bank (the "Bank") is a Pennsylvania bank that employed Ms. Roe.

3. Defendant Carol Marchetti ("Marchetti") is the Bank's branch manager and supervised Ms. Roe.

4. Defendant Gregory Tull is the Bank's regional manager; he is sued in his individual capacity.

FACTS

5. The Bank hired Ms. Roe as a teller on June 1, 2018.

6. On March 3, 2021, Ms. Roe told Marchetti that she was pregnant.

7. On March 10, 2021, Marchetti told Ms. Roe that her position had been eliminated.

8. The Bank terminated Ms. Roe on March 12, 2021.
"""


def test_the_parties_section_names_the_graph_entities_the_facts_shorten_or_never_name(tmp_path):
    from argus.graph.grounding import span_problems
    from argus.pipeline import ArgusPipeline

    path = tmp_path / "complaint.txt"
    path.write_text(COMPLAINT)
    ekg = ArgusPipeline().extract(path)
    by_name = {e.name: e for e in ekg.graph.entities}
    marchetti = by_name["Carol Marchetti"]  # the facts say "Marchetti"; the parties paragraph gives the full name
    assert "Marchetti" in marchetti.aliases and marchetti.role == "defendant"
    assert by_name["Gregory Tull"].role == "defendant"  # no fact sentence names him
    assert len([e for e in ekg.graph.entities if "Marchetti" in (e.name, *e.aliases)]) == 1
    assert span_problems(ekg) == [] and not ekg.rejected


def test_job_titles_rating_labels_and_statutes_are_not_entities():
    sentences = [
        ("S1", "In 2019 Gregory Tull, the Regional Director of Operations, rated Ms. Roe Exceeds Expectations."),
        ("S2", "In 2020 Tull gave Ms. Roe a Needs Improvement rating and named Dana Pryce Vice President of Operations."),
        ("S3", "Ms. Roe complained to Denise Carvalho, the Director of People Operations, that Title VII forbade it."),
        ("S4", "Carvalho told Ms. Roe that the Exceeds Expectations rating of 2019 no longer mattered."),
        ("S5", "Tull then transferred Ms. Roe to the Boone County warehouse as a Material Handler."),
    ]
    names = _names(document_entities(None, "", sentences))
    for no in ("Regional Director of Operations", "Exceeds Expectations", "Needs Improvement", "Vice President of Operations",
               "Director of People Operations", "Title VII", "Boone County", "Material Handler"):
        assert no not in names, no
    for yes in ("Gregory Tull", "Denise Carvalho", "Dana Pryce"):
        assert yes in names, yes
    flags = form_flags("Director of People Operations")
    assert flags["job_title"] and not flags["rating"]
    assert form_flags("Exceeds Expectations")["rating"] and form_flags("Title VII")["statute"]


def test_an_unnamed_group_or_document_named_twice_is_found_once_named_is_not():
    sentences = [
        ("S1", "In May 2021 two travel nurses told Plaintiff that the night supervisor had changed the schedule."),
        ("S2", "Plaintiff asked the travel nurses to report the change, and she saved the job listing."),
        ("S3", "The job listing stated that the position required no weekend shifts."),
        ("S4", "Plaintiff's psychiatrist wrote to Human Resources in June 2021."),
    ]
    ents = {e.name: e for e in document_entities(None, "", sentences)}
    assert ents["travel nurses"].kind == "group"
    assert ents["job listing"].kind == "document"
    assert "psychiatrist" not in ents  # named once
    assert ("travel nurses", "nurse", "group", "two") in noun_phrases(sentences[0][1])


@needs_data
def test_the_trained_part_round_trips_through_json_and_changes_a_decision():
    dirs = _split_dirs("train")
    if len(dirs) < 6:
        pytest.skip("too few annotated complaints")
    part = fit_part(dirs[:6])
    assert part is not None and json.loads(json.dumps(part)) == part
    assert set(part["np_min_sentences"]) >= {"person", "group", "document"}
    from argus.training.entities import _read_complaint

    changed = False
    for d in _split_dirs("dev"):
        c = _read_complaint(str(d))
        sentences = [(f"S{i}", t) for i, t in enumerate(c.texts)]
        rules = document_entities(c.caption, c.body, sentences, parties=c.parties)
        learned = document_entities(c.caption, c.body, sentences, parties=c.parties, model=json.loads(json.dumps(part)))
        if _names(rules) != _names(learned):
            changed = True
            break
    assert changed
    assert fit_part(dirs[:1]) is None  # one complaint: nothing to choose settings on
