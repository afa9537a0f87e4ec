"""Preprocessing on the real annotated complaints: spans, cleanup, sections, segmentation."""

from __future__ import annotations

import json
import re

import pytest

from argus.paths import data_root
from argus.text.documents import RawDocument
from argus.text.preprocess import SEGMENTERS, heading_kind, heading_strength, is_page_furniture, preprocess, segment_legal
from tests.conftest import DEMO, gold_sentences, load_gold, needs_data


def _norm(s: str) -> str:
    return " ".join(s.split())


def _doc(d):
    return preprocess(RawDocument(doc_id=d.name, text=(d / "complaint.txt").read_text(encoding="utf-8"), source=str(d)))


@needs_data
def test_every_span_slices_the_original_and_matches_the_cleaned_text(all_dirs):
    for d in all_dirs:
        text = (d / "complaint.txt").read_text(encoding="utf-8")
        doc = _doc(d)
        assert [s.id for s in doc.sentences] == [f"S{i}" for i in range(1, len(doc.sentences) + 1)]
        for s in doc.sentences:
            a, b = s.span
            raw = text[a:b]
            assert raw and not raw[0].isspace() and not raw[-1].isspace()
            assert raw[0] == s.text[0] and raw[-1] == s.text[-1]
            # the cleaned text is the raw slice minus page furniture, line breaks and hyphenation
            letters = re.sub(r"[^A-Za-z0-9]", "", s.text)
            raw_letters = re.sub(r"[^A-Za-z0-9]", "", raw)
            assert letters in raw_letters or len(letters) <= len(raw_letters)


@needs_data
def test_facts_section_detection_matches_gold_exactly(all_dirs):
    for d in all_dirs:
        gold = load_gold(d)
        gs = gold_sentences(gold)
        gold_facts = {tuple(s["span"]) for s in gs if s["section"] == "facts"}
        doc = _doc(d)
        assert doc.facts_section_found
        narrative = [s for s in doc.sentences if s.id in set(doc.narrative_ids)]
        # every narrative sentence overlaps a gold facts-section sentence, and vice versa
        for s in narrative:
            assert any(a < s.span[1] and s.span[0] < b for a, b in gold_facts), (d.name, s.text[:60])
        for a, b in gold_facts:
            assert any(s.span[0] < b and a < s.span[1] for s in narrative), (d.name, a, b)


@needs_data
def test_segmentation_agrees_with_gold_in_facts_sections(all_dirs):
    hits = total = 0
    for d in all_dirs:
        gs = [s for s in gold_sentences(load_gold(d)) if s["section"] == "facts"]
        pred = {tuple(s.span) for s in _doc(d).sentences}
        hits += sum(1 for s in gs if tuple(s["span"]) in pred)
        total += len(gs)
    assert hits / total > 0.93  # measured 0.97+ with the default segmenter


@needs_data
def test_cleanup_removes_headers_hyphenation_and_paragraph_numbers(all_dirs):
    for d in all_dirs[:6]:
        doc = _doc(d)
        for s in doc.sentences:
            assert "Document 1 Filed" not in s.text
            assert "\n" not in s.text and "\f" not in s.text
            assert not re.match(r"^\d{1,3}\.\s", s.text)
    # de-hyphenated, de-headered FACTS sentences come out verbatim as annotated (measured: 99.1%)
    hit = total = 0
    for d in all_dirs:
        gold = {_norm(g["text"]) for g in gold_sentences(load_gold(d)) if g["section"] == "facts"}
        ours = {_norm(s.text) for s in _doc(d).sentences}
        hit += len(gold & ours)
        total += len(gold)
    assert hit / total > 0.97


def test_page_furniture_and_heading_kinds():
    assert is_page_furniture("Case 1:21-cv-04417-JPO Document 1 Filed 05/17/21 Page 3 of 14")
    assert is_page_furniture("Case 2:23-cv-03418 Document 1 Filed 08/04/23 Page 3 of 14 PageID #: 3")
    assert is_page_furniture("                                  12")
    assert not is_page_furniture("12.     Plaintiff was hired in 2016.")
    assert heading_kind("FACTUAL ALLEGATIONS", None) == "facts"
    assert heading_kind("STATEMENT OF FACTS: B. CAROL MARCHETTI'S CANCER", None) == "facts"
    assert heading_kind("FACTUAL BACKGROUND", None) == "facts"
    assert heading_kind("COUNT II - RETALIATION IN VIOLATION OF TITLE VII", None) == "count"
    assert heading_kind("FIRST CAUSE OF ACTION (RETALIATION)", None) == "count"
    assert heading_kind("EXHAUSTION OF ADMINISTRATIVE REMEDIES", None) == "procedural"
    assert heading_kind("PRAYER FOR RELIEF", None) == "prayer"
    assert heading_kind("DEMAND FOR JURY TRIAL", None) == "other"
    assert heading_kind("B. THE HARASSMENT BEGINS", "facts") is None  # stays in the current section


def test_demo_complaint_preprocesses_with_a_paragraph_across_a_page_break():
    raw = RawDocument(doc_id="demo", text=DEMO.read_text(encoding="utf-8"), source=str(DEMO))
    doc = preprocess(raw)
    assert doc.facts_section_found
    texts = [s.text for s in doc.narrative]
    assert any(t.startswith("Briarwood hired Ms. Quintero-Hale as an inventory coordinator on April 3, 2021.") for t in texts)
    assert any("writing her up" in t for t in texts)  # "writ-\n ing" de-hyphenated
    assert any("instructions" in w for w in doc.warnings)  # the injection sentence is flagged


def test_no_facts_heading_falls_back_to_the_body_with_a_warning():
    text = "JURISDICTION\n\n1.     This Court has jurisdiction.\n\n2.     On May 1, 2020, Acme fired Jane Roe. She had complained a week earlier.\n"
    doc = preprocess(RawDocument(doc_id="x", text=text, source="x"))
    assert not doc.facts_section_found
    assert any("no FACTS heading" in w for w in doc.warnings)
    assert doc.narrative_ids  # the body is used


def test_large_input_is_processed_linearly():
    block = DEMO.read_text(encoding="utf-8")
    text = block * (5_000_000 // len(block) + 1)
    doc = preprocess(RawDocument(doc_id="big", text=text, source="big"))
    assert len(text) >= 5_000_000
    assert len(doc.sentences) > 1000
    a, b = doc.sentences[-1].span
    assert text[a:b].strip()


def test_a_title_or_rank_before_a_name_ends_no_sentence():
    text = "In 2014, Sgt. Mulqueen bid into the post. Capt. Gabbard designated Det. Quintanilla. Lt. Garrity said no."
    assert [text[a:b].strip() for a, b in segment_legal(text)] == [
        "In 2014, Sgt. Mulqueen bid into the post.", "Capt. Gabbard designated Det. Quintanilla.", "Lt. Garrity said no."]


@pytest.mark.parametrize("name", sorted(SEGMENTERS))
def test_every_segmenter_returns_ordered_spans(name):
    text = 'Mr. Smith met Ms. Jones on Jan. 5, 2020. She said, "Stop. Now." He left. See 42 U.S.C. § 2000e et seq. Done.'
    spans = SEGMENTERS[name](text)
    assert spans and all(a < b for a, b in spans)
    assert all(spans[i][1] <= spans[i + 1][0] for i in range(len(spans) - 1))


# ----------------------------------------------------------------------------- headings by layout


@pytest.mark.parametrize("line", [
    "STATEMENT OF FACTS", "Statement of Facts", "IV. Factual Allegations", "1. Introduction", "Statement of Claim:",
    "F A C T S", "S T A T E M E N T   O F   F A C T S", "B. Plaintiff complains to HR", "Count II: Retaliation",
    "Jurisdiction and Venue", "SUBSTANTIVE ALLEGATI ONS", "D. The Noose in Truck 14",
    "Count I: Violation of the Pennsylvania Whistleblower Law, 43 P.S. § 1421 Et Seq.",
])
def test_a_heading_is_recognized_in_any_case_numbered_or_letter_spaced(line):
    assert heading_strength(line) > 0


@pytest.mark.parametrize("line", [
    "Plaintiff was fired.", "She complained to Human Resources.", "Respectfully submitted,", "Dated: May 5, 2023",
    "/s/ Jane Doe", "1525 Locust Street", "Philadelphia, PA 19102", "12.     Plaintiff repeats and realleges.",
    "KENDRA L. ASHWORTH,                       )", "she was told to leave the building",
])
def test_a_short_sentence_or_a_signature_line_alone_is_no_heading(line):
    assert heading_strength(line) == 0


def test_heading_kinds_read_any_layout():
    assert heading_kind("IV. Factual Allegations", None) == "facts"
    assert heading_kind("F A C T S", None) == "facts"
    assert heading_kind("S T A T E M E N T   O F   F A C T S", None) == "facts"
    assert heading_kind("SUBSTANTIVE ALLEGATI ONS", None) == "facts"
    assert heading_kind("STATEMENT OF FAC TS", None) == "facts"
    assert heading_kind("Statement of Claim", None) == "facts"
    assert heading_kind("II. Jurisdiction and Venue", None) == "jurisdiction"
    assert heading_kind("Count I: Retaliation in Violation of Title VII", "facts") == "count"
    assert heading_kind("C. The EEOC Charge", "facts") is None  # a lettered sub-heading stays in the FACTS
    assert heading_kind("ACCOUNTING", None) is None
    assert heading_kind("FAC TS: A. THE JUNE 11, 2024 VOTE", None) == "facts"


def test_a_pro_se_complaint_names_its_counts_and_its_prayer_in_plain_words():
    assert heading_kind("CLAIM ONE: DISABILITY DISCRIMINATION UNDER THE ADA", "facts") == "count"
    assert heading_kind("CLAIM 2: RETALIATION (TITLE VII)", "count") == "count"
    assert heading_kind("V. CLAIMS – CLAIM ONE: Disability Discrimination (ADA)", "facts") == "count"
    assert heading_kind("VII. RELIEF", "count") == "prayer"
    assert heading_kind("WHAT PLAINTIFF ASKS THE COURT TO DO", "count") == "prayer"
    assert heading_kind("Statement of Claim", None) == "facts"  # the pro se form's FACTS, no count
    assert heading_kind("B. Plaintiff Asks for Leave", "facts") is None


def test_a_section_that_incorporates_what_precedes_it_is_a_count():
    text = ("STATEMENT OF FACTS\n\n1.     Acme hired Jane Roe in 2019. On May 1, 2022, Acme fired her.\n\n\n"
            "V. DISABILITY DISCRIMINATION UNDER THE ADA\n\n2.     Plaintiff repeats everything written above.\n\n"
            "3.     Acme fired Plaintiff because of her disability.\n")
    doc = preprocess(RawDocument(doc_id="x", text=text, source="x"))
    assert [s.kind for s in doc.sections] == ["facts", "count"]
    assert [doc.sentence(i).text for i in doc.narrative_ids] == ["Acme hired Jane Roe in 2019.", "On May 1, 2022, Acme fired her."]


_EXHAUSTION = ("ADMINISTRATIVE EXHAUSTION\n\n1.     On May 1, 2022, Plaintiff filed a charge of discrimination with "
               "the EEOC. The EEOC issued a Notice of Right to Sue on June 1, 2023.\n\n\n")


def test_a_lettered_sub_heading_that_tells_the_narrative_does_not_inherit_the_exhaustion_kind():
    text = _EXHAUSTION + ("A. Plaintiff's Employment at Acme\n\n2.     Acme hired Jane Roe in 2019 as a welder.\n\n"
                          "3.     Her reviews rated her highly.\n\n\nB. The Termination\n\n4.     On May 1, 2022, Acme fired her."
                          "\n\n\nCOUNT I: RETALIATION\n\n5.     Plaintiff incorporates the preceding paragraphs.\n")
    doc = preprocess(RawDocument(doc_id="x", text=text, source="x"))
    assert [s.kind for s in doc.sections] == ["procedural", "facts", "facts", "count"]
    assert doc.facts_section_found
    assert [doc.sentence(i).text for i in doc.narrative_ids] == [
        "Acme hired Jane Roe in 2019 as a welder.", "Her reviews rated her highly.", "On May 1, 2022, Acme fired her."]
    # a lettered part of the exhaustion, or of the parties, keeps their kind: its sentences say so
    charge = _EXHAUSTION + "A. Plaintiff's Second Charge\n\n2.     Plaintiff filed a second charge of retaliation with the EEOC.\n"
    assert [s.kind for s in preprocess(RawDocument(doc_id="x", text=charge, source="x")).sections] == ["procedural"] * 2
    parties = "PARTIES\n\nA. Plaintiff\n\n1.     Plaintiff Jane Roe lives in Providence.\n"
    assert [s.kind for s in preprocess(RawDocument(doc_id="x", text=parties, source="x")).sections] == ["parties"] * 2


@needs_data
def test_lettered_narrative_after_the_exhaustion_section_is_read_as_facts(all_dirs):
    """The complaints written with sub-headings; some give the FACTS no heading of their own and open the
    narrative with "A. ... Employment at ..." right after the exhaustion section."""
    path = data_root() / "us_complaints" / "styles.json"
    if not path.exists():
        pytest.skip("no styles.json beside the complaints")
    styles = json.loads(path.read_text(encoding="utf-8"))
    dirs = [d for d in all_dirs if styles.get(d.name, {}).get("style") == "medium, sub-headings"]
    assert dirs
    headless = 0
    for d in dirs:
        gold = load_gold(d)
        kinds = [sec["kind"] for sec in gold["sections"]]
        first = gold["sections"][kinds.index("facts")]
        headless += bool(re.match(r"[A-H]\. ", first["heading"])) and kinds[kinds.index("facts") - 1] == "procedural"
        facts = [s.span for s in _doc(d).sentences if s.section == "facts"]
        for g in gold_sentences(gold):
            if g["section"] == "facts":
                a, b = g["span"]
                assert any(x < b and a < y for x, y in facts), (d.name, g["text"][:60])
    assert headless  # the case this test is about is among them


_CAPTION = ("UNITED STATES DISTRICT COURT\nFOR THE DISTRICT OF RHODE ISLAND\n\nJANE ROE,            )\n"
            "Plaintiff,           )   Civil Action No. 1:24-cv-00001\nv.                   )\n"
            "ACME WIDGETS, INC.,  )\nDefendant.           )\n\n")
_BODY = ("1.     Plaintiff Jane Roe brings this action for retaliation.\n\n"
         "2.     This Court has jurisdiction under 28 U.S.C. § 1331.\n\n"
         "3.     Acme hired Ms. Roe in 2019. On May 1, 2022, Acme fired her.\n")


def test_with_no_headings_the_caption_ends_at_the_first_numbered_paragraph():
    doc = preprocess(RawDocument(doc_id="x", text=_CAPTION + _BODY, source="x"))
    assert doc.sections[0].kind == "caption" and doc.sections[1].kind == "unknown"
    assert doc.sentences[0].text.startswith("Plaintiff Jane Roe brings")
    assert {s.section for s in doc.sentences} == {"unknown"}  # never "caption": the caption does not run on
    assert not doc.facts_section_found and doc.narrative_ids == [s.id for s in doc.sentences]
    assert doc.pleading and [p.name for p in doc.caption.parties] == ["JANE ROE", "ACME WIDGETS, INC."]
    assert any("no FACTS heading" in w and "no section headings" in w for w in doc.warnings)


def test_the_caption_ends_at_its_title_or_at_the_preamble():
    titled = _CAPTION + "                         COMPLAINT AND JURY DEMAND\n\n" + _BODY.replace("1.     ", "")
    doc = preprocess(RawDocument(doc_id="x", text=titled, source="x"))
    assert doc.sections[0].kind == "caption" and doc.sentences[0].text.startswith("Plaintiff Jane Roe brings")
    preamble = _CAPTION + "Plaintiff Jane Roe, by her attorneys, alleges as follows:\n\nAcme hired Ms. Roe in 2019.\n"
    doc = preprocess(RawDocument(doc_id="x", text=preamble, source="x"))
    assert doc.sentences[0].text.startswith("Plaintiff Jane Roe, by her attorneys")


def test_text_without_a_caption_is_all_body():
    memo = "MEMORANDUM\n\nTo: File\n\nBackground\n\nAcme hired Jane Roe in 2019. Acme fired her in 2022.\n"
    doc = preprocess(RawDocument(doc_id="m", text=memo, source="m"))
    assert not doc.pleading and doc.caption is None
    assert [s.section for s in doc.sentences] == ["unknown", "facts", "facts"]  # "Background" opens the facts


def test_title_case_headings_with_an_underline_or_a_colon_open_sections():
    text = _CAPTION + ("Jurisdiction and Venue\n----------------------\n\n1.     This Court has jurisdiction.\n\n"
                       "Statement of Facts:\n2.     Acme hired Ms. Roe in 2019. On May 1, 2022, Acme fired her.\n")
    doc = preprocess(RawDocument(doc_id="x", text=text, source="x"))
    assert [s.kind for s in doc.sections] == ["caption", "jurisdiction", "facts"]
    assert [doc.sentence(i).text for i in doc.narrative_ids] == ["Acme hired Ms. Roe in 2019.", "On May 1, 2022, Acme fired her."]


@needs_data
def test_facts_sections_are_found_in_every_layout_with_headings(all_dirs):
    from argus.experiments.layouts import LAYOUTS, load_complaint, render

    for d in all_dirs:
        text, gold = load_complaint(d)
        gold_facts = {tuple(s["span"]) for s in gold_sentences(gold) if s["section"] == "facts"}
        for layout in LAYOUTS:
            doc = preprocess(RawDocument(doc_id=d.name, text=render(text, gold, layout), source=str(d)))
            if layout == "no_headings":
                assert not doc.facts_section_found and {s.section for s in doc.sentences} == {"unknown"}, d.name
                continue
            assert doc.facts_section_found, (d.name, layout)
            narrative = {tuple(doc.sentence(i).span) for i in doc.narrative_ids}
            covered = [any(a < z and y < b for y, z in narrative) for a, b in gold_facts]
            assert all(covered) and all(any(a < z and y < b for a, b in gold_facts) for y, z in narrative), (d.name, layout)


def test_headings_in_text_taken_from_a_pdf_without_blank_lines():
    text = ("19. Defendant SandRidge and the Individual Defendants are referred to herein as the \u201cDefendants.\u201d\n"
            "SUBSTANTIVE ALLEGATI ONS\nBackground\n"
            "20. SandRidge Energy, Inc. explores and produces natural gas and crude oil.\n"
            "21. Defendant Russell Ball (\u201cBall\u201d) has been CFO and Executive Vice\n"
            "\n"
            "President of Goldcorp since March 9, 2016.\n")
    doc = preprocess(RawDocument(doc_id="p", text=text, source="p"))
    assert [s.heading for s in doc.sections if s.heading] == ["SUBSTANTIVE ALLEGATI ONS Background"]
    assert doc.facts_section_found
    told = [doc.sentence(i).text for i in doc.narrative_ids]
    assert told[0].startswith("SandRidge Energy") and told[1].startswith("Defendant Russell Ball")  # a sentence, no heading
