"""Real legal prose: a court opinion is read as an opinion (its narrative from its background part, the
discussion left out, the parties from its title with their roles), and a trigger is always a verb or an
event noun (issue 48, items 2 and 3)."""

from __future__ import annotations

from pathlib import Path

import pytest

import argus
from argus.designs.sentence.design import trigger_pick
from argus.designs.sentence.heads import SentenceReading
from argus.paths import data_root
from argus.text.caption import read_case_title
from argus.text.documents import RawDocument
from argus.text.opinions import document_kind, opinion_parts
from argus.text.preprocess import preprocess
from argus.text.words import event_word, event_words, word_spans

OPINIONS = data_root() / "us_real" / "opinions"
BONENBERGER = OPINIONS / "opinion_bonenberger_v_plymouth_township_1997.txt"
FISHER = OPINIONS / "opinion_fisher_v_ut_austin_2013.txt"
needs_opinions = pytest.mark.skipif(not BONENBERGER.exists(), reason="needs ../shared/data/us_real/opinions")


# ----------------------------------------------------------------------------- event words


@pytest.mark.parametrize("word", ["terminated", "told", "complained", "texted", "complaint", "termination", "leave",
                                  "suspension", "harassment", "dismissal", "meeting", "resigned"])
def test_verbs_and_event_nouns_can_be_triggers(word):
    assert event_word(word, 3)


@pytest.mark.parametrize("word,index", [("Miller", 2), ("Cpt", 0), ("In", 0), ("either", 4), ("or", 2), ("one", 1),
                                        ("temporary", 3), ("the", 0), ("three", 1), ("2019", 2), ("would", 1),
                                        ("summary", 2), ("dispatcher", 3), ("Sgt", 0), ("EEOC", 3), ("I", 0), ("is", 1), ("was", 2), ("did", 1)])
def test_names_titles_numbers_and_function_words_never_are(word, index):
    assert not event_word(word, index)


def test_a_capitalised_word_inside_a_sentence_is_a_name_unless_the_sentence_shouts():
    assert not event_word("Bill", 3) and event_word("Bill", 0)
    assert [w for w, _, _ in event_words("HE FIRED HER IN THE HALLWAY.")] == ["FIRED"]
    assert [w for w, _, _ in event_words("Cpt.")] == [] and [w for w, _, _ in event_words("Miller.")] == []


def test_a_word_after_a_determiner_names_an_event_only_as_an_event_noun():
    # Fisher v. UT Austin: "below the line" gave an event triggered by "line" (a verb reading)
    words = lambda t: [w for w, _, _ in event_words(t)]  # noqa: E731
    assert words("All students below the line are not.") == []
    assert words("Brunner issued Ms. Vasko a written warning.") == ["issued", "warning"]
    assert words("Ms. Asante reported the attempted kiss.") == ["reported", "kiss"]
    assert words("Defendant announced the termination.") == ["announced", "termination"]
    # "that" and "her" stand before verbs: "the policy that required", "made her sign"
    assert "required" in words("the policy that required a note") and "sign" in words("Tull made her sign it.")
    assert words("At 9:14 a.m. she emailed HR.") == ["emailed"]  # "a.m." is no determiner
    assert words("At 9:14 a.m., Mr. Echeverría emailed HR.") == ["emailed"]  # nor the accent-split tail "a"
    assert words("On July 22, Intern A ended her internship.") == ["ended"]  # a name's letter
    assert words("Plaintiffs each filed a charge.") == ["filed", "charge"]
    assert words("The line formed.") == ["formed"] and words("A line formed.") == ["formed"]
    assert words("ALL STUDENTS BELOW THE LINE ARE NOT.") == [] and words("HE FIRED HER.") == ["FIRED"]


def test_the_trigger_is_the_heads_best_word_that_names_an_event():
    text = "In 2005, Sgt. Mys filed a complaint."
    words = word_spans(text)
    probs = {"In": 0.9, "Sgt": 0.8, "Mys": 0.7, "filed": 0.5, "complaint": 0.6}
    reading = SentenceReading(type_probs={"complaint": 0.9, "none": 0.1}, words=words,
                              word_probs=[probs.get(w, 0.0) for w, _, _ in words])
    assert trigger_pick(reading, text)[0] == "complaint"
    fragment = "Cpt."
    r = SentenceReading(type_probs={"other": 0.9, "none": 0.1}, words=word_spans(fragment), word_probs=[0.99])
    assert trigger_pick(r, fragment) is None


# ----------------------------------------------------------------------------- document kinds


def test_every_annotated_complaint_reads_as_a_complaint():
    from argus.paths import complaints_dir

    kinds = {d.name: document_kind((d / "complaint.txt").read_text(encoding="utf-8"))
             for split in ("train", "dev") for d in complaints_dir(split).iterdir() if (d / "complaint.txt").exists()}
    assert kinds and set(kinds.values()) == {"complaint"}, {k: v for k, v in kinds.items() if v != "complaint"}


def test_a_charge_and_a_motion_read_as_what_they_are():
    charge = ("CHARGE OF DISCRIMINATION\nEEOC Form 5\nCharge No. 530-2021-01234\nTHE PARTICULARS ARE:\n"
              "I was hired in 2019. I believe I have been discriminated against because of my sex.")
    motion = ("DEFENDANT'S MEMORANDUM OF LAW IN SUPPORT OF ITS MOTION FOR SUMMARY JUDGMENT\n\n"
              "STATEMENT OF UNDISPUTED MATERIAL FACTS\n\nPlaintiff was hired in 2019.")
    assert document_kind(charge, pleading=False) == "charge"
    assert document_kind(motion, pleading=False) == "motion"
    assert document_kind("A memo. Nothing happened here.", pleading=False) == "other"


@needs_opinions
@pytest.mark.parametrize("path", [BONENBERGER, FISHER])
def test_real_opinions_read_as_opinions_with_their_narrative_part(path):
    text = path.read_text(encoding="utf-8")
    assert document_kind(text, pleading=False) == "opinion"
    parts = opinion_parts(text)
    assert len(parts) == 1 and parts[0].narrative
    doc = preprocess(RawDocument(doc_id=path.stem, text=text, source=str(path)))
    assert doc.kind == "opinion" and doc.facts_section_found
    facts = [s for s in doc.sentences if s.section == "facts"]
    # the narrative is a small part of the opinion, told in the past, and the court's own voice is left out
    assert 5 <= len(facts) <= len(doc.sentences) // 3
    assert not any(s.text.startswith(("We ", "For the reasons")) for s in facts)
    assert any("denied admission" in s.text or "worked as a dispatcher" in s.text for s in facts)


@needs_opinions
def test_an_opinion_title_in_its_own_spelling_names_the_parties_and_their_roles():
    cap = read_case_title(BONENBERGER.read_text(encoding="utf-8"))
    assert [p.name for p in cap.plaintiffs] == ["Cheryl Bonenberger"] and "Appellant" in cap.plaintiffs[0].aliases
    assert [(p.name, p.kind) for p in cap.defendants] == [("Plymouth Township", "organization")]
    one_line = read_case_title("Linda Mys v. Michigan Department of State Police\n\nOPINION\n\nPlaintiff-Appellant Linda "
                               "Mys appeals. The Department transferred Mys. Later the Department denied it.")
    assert [p.name for p in one_line.plaintiffs] == ["Linda Mys"] and one_line.plaintiffs[0].aliases == ["Appellant"]
    assert one_line.defendants[0].aliases == ["Department"]
    assert read_case_title("The court held that the claim fails. See Smith v. Jones, 123 F.3d 4 (1999).") is None


@needs_opinions
def test_the_graph_of_a_real_opinion_comes_from_its_narrative_with_the_parties_roles(tmp_path):
    cfg = argus.ArgusConfig.load(None, {"cache_dir": str(tmp_path)})
    ekg = argus.extract(BONENBERGER, cfg)
    assert ekg.document_kind == "opinion"
    sections = {s.id: s.section for s in ekg.sentences}
    texts = {s.id: s.text for s in ekg.sentences}
    assert ekg.graph.events and all(sections[e.evidence[0]] == "facts" for e in ekg.graph.events)
    for e in ekg.graph.events:
        a = texts[e.evidence[0]].find(e.trigger)
        assert a >= 0 and any(a <= x < a + len(e.trigger) for _, x, _ in event_words(texts[e.evidence[0]])), e
    roles = {e.name: e.role for e in ekg.graph.entities}
    assert "plaintiff" in roles.values() and "employer" in roles.values(), roles
    assert any("Bonenberger" in n and r == "plaintiff" for n, r in roles.items())
    assert any("Plymouth Township" in n and r == "employer" for n, r in roles.items())


def test_an_ekg_names_its_document_kind(tmp_path):
    from tests.conftest import DEMO

    cfg = argus.ArgusConfig.load(None, {"cache_dir": str(tmp_path)})
    assert argus.extract(Path(DEMO), cfg).document_kind == "complaint"
