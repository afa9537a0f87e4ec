"""Real text nobody here wrote, through the offline default: a Supreme Court opinion has no caption,
no numbered paragraphs and no FACTS heading; it is read as an opinion, and the first part of the Court's
opinion narrates an application, a rejection, the suit's judgments and the writ."""

from __future__ import annotations

import pytest

from argus.paths import data_root

OPINION = data_root() / "us_real" / "opinions" / "opinion_fisher_v_ut_austin_2013.txt"


@pytest.mark.skipif(not OPINION.exists(), reason=f"no opinion at {OPINION} (set ARGUS_DATA_ROOT)")
def test_a_supreme_court_opinion_yields_the_events_it_narrates_and_its_parties():
    from argus.runs.batch import summary_row
    from argus.pipeline import ArgusPipeline

    ekg = ArgusPipeline().extract(str(OPINION))
    assert ekg.document_kind == "opinion"
    assert ekg.facts_section_found and summary_row(ekg, 0.0)["facts_by"] == "heading"
    assert len(ekg.graph.events) >= 10
    roles = {n.casefold(): e.role for e in ekg.graph.entities for n in (e.name, *e.aliases)}
    assert roles.get("university") == "employer" and roles.get("petitioner") == "plaintiff", roles
    told = {ekg.sentences[int(sid[1:]) - 1].text for e in ekg.graph.events for sid in e.evidence}
    for said in ("was rejected", "granted summary judgment", "Petitioner was denied admission",
                 "Petitioner sought a writ of certiorari"):
        assert any(said in t for t in told), said
    # the syllabus, the discussion and the separate opinions tell no event of the graph
    sections = {s.id: s.section for s in ekg.sentences}
    assert all(sections[sid] == "facts" for e in ekg.graph.events for sid in e.evidence)
    citations = [t for t in told if t.startswith(("Id.,", "See ante"))]
    assert not citations
