"""Real text nobody here wrote, through the offline default: a Supreme Court opinion has no caption,
no numbered paragraphs and no FACTS heading, yet its syllabus narrates a rejection, a lawsuit and
two judgments."""

from __future__ import annotations

import pytest

from argus.paths import data_root

OPINION = data_root() / "us_real" / "opinions" / "opinion_fisher_v_ut_austin_2013.txt"


@pytest.mark.skipif(not OPINION.exists(), reason=f"no opinion at {OPINION} (set ARGUS_DATA_ROOT)")
def test_a_supreme_court_opinion_yields_the_events_it_narrates_and_its_parties():
    from argus.runs.batch import summary_row
    from argus.pipeline import ArgusPipeline

    ekg = ArgusPipeline().extract(str(OPINION))
    assert not ekg.facts_section_found and summary_row(ekg, 0.0)["facts_by"] == "content"
    assert any("facts chosen by content" in w for w in ekg.warnings)
    assert len(ekg.graph.events) >= 10
    names = {n.casefold() for e in ekg.graph.entities for n in (e.name, *e.aliases)}
    assert "university of texas at austin" in names and "petitioner" in names
    told = {ekg.sentences[int(sid[1:]) - 1].text for e in ekg.graph.events for sid in e.evidence}
    for said in ("was rejected for admission", "She sued the University", "granted summary judgment",
                 "Petitioner was denied admission"):
        assert any(said in t for t in told), said
    citations = [t for t in told if t.startswith(("Id.,", "See ante"))]
    assert not citations
