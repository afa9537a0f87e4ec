"""The caption reader: parties, court and case number, with spans, on every annotated complaint."""

from __future__ import annotations

import json
import re

import pytest

from argus.text.caption import read_caption
from argus.ingest.files import read_text_document
from argus.text.preprocess import preprocess
from tests.conftest import _split_dirs

DEMO = "datasets/demo/complaint.txt"


def _caption_of(path):
    raw = read_text_document(path)
    doc = preprocess(raw)
    return raw.text, doc.caption


def _plain(name: str) -> str:
    """A gold party as the caption reader keeps it: qualifiers dropped, whitespace collapsed."""
    return re.sub(r",\s*individually$", "", " ".join(name.split()))


@pytest.mark.parametrize("folder", _split_dirs("train") + _split_dirs("dev"), ids=lambda d: d.name)
def test_parties_and_case_number_of_every_annotated_complaint(folder):
    text, cap = _caption_of(folder / "complaint.txt")
    gold = json.loads((folder / "gold.json").read_text(encoding="utf-8"))
    assert cap is not None and cap.case_number == gold["case_number"]
    assert text[slice(*cap.case_number_span)] == cap.case_number
    assert [p.name for p in cap.plaintiffs] == [_plain(p) for p in gold["plaintiffs"]]
    got = [p.name for p in cap.defendants]
    want = [_plain(p) for p in gold["defendants"]]
    # a name cut by the caption's column is kept as printed ("… d/b/a TACON  )")
    assert len(got) == len(want) and all(w.startswith(g) or g == w for g, w in zip(got, want)), (got, want)
    assert cap.court and gold["court"].startswith(cap.court[:40])
    for p in cap.parties:
        assert text[p.span[0]:p.span[1]] == p.name
        assert p.body_name is None or p.body_name.casefold().split()[0] == p.name.casefold().split()[0]


def test_body_spelling_and_defined_short_names():
    text, cap = _caption_of(DEMO)
    (plaintiff,), (defendant,) = cap.plaintiffs, cap.defendants
    assert plaintiff.name == "LORENA M. QUINTERO-HALE" and plaintiff.body_name == "Lorena M. Quintero-Hale"
    assert plaintiff.aliases == ["Ms. Quintero-Hale", "Plaintiff"] and plaintiff.kind == "person"
    assert defendant.kind == "organization" and "Briarwood" in defendant.aliases
    assert cap.court.startswith("UNITED STATES DISTRICT COURT")


def test_one_line_caption_and_qualifiers():
    text = ("IN THE UNITED STATES DISTRICT COURT FOR THE DISTRICT OF RHODE ISLAND\n\n"
            "JANE Q. ROE, Plaintiff, v. ACME WIDGETS, INC. and JOHN DOE, individually, Defendants.\n"
            "Case No. 1:24-cv-00099\n\n"
            "COMPLAINT\n\n1. Plaintiff Jane Q. Roe (\"Ms. Roe\") worked for Acme Widgets, Inc. (\"Acme\").\n")
    cap = read_caption(text, text.index("COMPLAINT"))
    assert [p.name for p in cap.plaintiffs] == ["JANE Q. ROE"]
    assert [p.name for p in cap.defendants] == ["ACME WIDGETS, INC.", "JOHN DOE"]
    assert [p.kind for p in cap.defendants] == ["organization", "person"]
    assert cap.case_number == "1:24-cv-00099"
    assert cap.plaintiffs[0].aliases == ["Ms. Roe"] and cap.defendants[0].aliases == ["Acme"]


def test_no_caption_says_so():
    cap = read_caption("FACTS\n\n1. She was hired in 2019.\n", 0)
    assert cap.parties == [] and any("no plaintiff/defendant labels" in n for n in cap.notes)


def test_a_document_without_a_caption_has_none():
    from argus.text.documents import RawDocument

    doc = preprocess(RawDocument(doc_id="x", source="x", text="FACTS\n\n1. She was hired in 2019. She was fired in 2020.\n"))
    assert doc.caption is None


def _column(rows: list[tuple[str, str]], width: int = 31) -> str:
    """A caption's two columns as filed: the left cell padded to ``width``, then ``  )``."""
    return "\n".join(f"{left:<{width}}  ) {right}".rstrip() for left, right in rows)


def test_names_cut_by_the_column_each_end_their_party():
    # every defendant line fills the 31-character column: what it cut off is lost, the next line is the next party
    text = ("UNITED STATES DISTRICT COURT FOR THE DISTRICT OF RHODE ISLAND\n\n" + _column([
        ("JANE ROE,", ""), ("Plaintiff,", "Civil Action No. 1:24-cv-00099"), ("v.", "COMPLAINT"), ("", ""),
        ("TOWN OF KITTERY, by and through", ""),
        ("NORTH KITTERY SCHOOL COMMITTEE,", ""),
        ("HARBOR INN PARTNERS, LLC d/b/a", ""),
        ("DELAWARE CORRUGATED BOXES, INC.", ""),
        ("LT. BRIAN GARRITY, in his indiv", ""),
        ("DET. ANGELA CHURCH, individuall", ""),
        ("JOHN DOE,", ""), ("", ""), ("Defendants.", "")]) + "\n\n1. Plaintiff Jane Roe worked for the Town.\n")
    cap = read_caption(text, text.index("\n1."))
    assert [p.name for p in cap.plaintiffs] == ["JANE ROE"]
    assert [p.name for p in cap.defendants] == [
        "TOWN OF KITTERY", "NORTH KITTERY SCHOOL COMMITTEE", "HARBOR INN PARTNERS, LLC", "DELAWARE CORRUGATED BOXES, INC.",
        "LT. BRIAN GARRITY", "DET. ANGELA CHURCH", "JOHN DOE"]
    # a rank opens a person's name, whatever words follow it
    assert [p.kind for p in cap.defendants] == ["organization"] * 4 + ["person"] * 3
    assert all(text[slice(*p.span)] == p.name for p in cap.parties) and not cap.notes


def test_wrapped_names_and_clauses_stay_with_their_party():
    text = ("UNITED STATES DISTRICT COURT\nFOR THE SOUTHERN DISTRICT OF NEW YORK\n\n"
            "JANE ROE,\n          Plaintiff,\n     v.\n"
            "WEXMOOR HOTEL OPERATING COMPANY LLC,\n"
            "RAYMOND COSTIGAN,\nindividually and in his official capacity as Fire Chief,\n"
            "CANEY HOLLOW REGIONAL WATER AND SEWER\nDISTRICT,\n"
            "ALDERWOOD HOSPITALITY PARTNERS, LLC\nd/b/a THE ALDERWOOD HOTEL,\n"
            "ACME WIDGETS,\nINC.,\n"
            "          Defendants.\n\nCase No. 1:24-cv-00099\n\nCOMPLAINT\n\n1. Plaintiff Jane Roe was a clerk.\n")
    cap = read_caption(text, text.index("COMPLAINT"))
    assert [p.name for p in cap.defendants] == [
        "WEXMOOR HOTEL OPERATING COMPANY LLC", "RAYMOND COSTIGAN", "CANEY HOLLOW REGIONAL WATER AND SEWER DISTRICT",
        "ALDERWOOD HOSPITALITY PARTNERS, LLC d/b/a THE ALDERWOOD HOTEL", "ACME WIDGETS, INC."]
    assert [text[slice(*p.span)].split() for p in cap.defendants] == [p.name.split() for p in cap.defendants]


def test_one_line_caption_with_agents_capacities_and_several_defendants():
    text = ("IN THE UNITED STATES DISTRICT COURT FOR THE DISTRICT OF RHODE ISLAND\n\n"
            "JANE Q. ROE, Plaintiff, v. TOWN OF NORTH KITTREDGE, by and through its Finance Director, "
            "MARGARET A. COSTIGAN, in her official capacity; HARBOR INN PARTNERS, LLC, d/b/a THE HARBOR INN; "
            "LT. BRIAN GARRITY, individually and in his official capacity as Chief of Police, and "
            "CAPT. ANTON VOLKOV, in his individual capacity, Defendants.\n"
            "Case No. 1:24-cv-00099\n\nCOMPLAINT\n\n1. Plaintiff Jane Q. Roe was a patrol officer.\n")
    cap = read_caption(text, text.index("COMPLAINT"))
    assert [p.name for p in cap.plaintiffs] == ["JANE Q. ROE"]
    assert [p.name for p in cap.defendants] == [
        "TOWN OF NORTH KITTREDGE", "HARBOR INN PARTNERS, LLC, d/b/a THE HARBOR INN", "LT. BRIAN GARRITY", "CAPT. ANTON VOLKOV"]
    assert [p.kind for p in cap.defendants] == ["organization", "organization", "person", "person"]


@pytest.mark.parametrize("defendants, want", [
    ("RAYMOND COSTIGAN, individually and in his official capacity as Fire Chief", ["RAYMOND COSTIGAN"]),
    ("LT. BRIAN GARRITY, in his individual capacity", ["LT. BRIAN GARRITY"]),
    ("TOWN OF NORTH KITTREDGE, by and through its Finance Director, MARGARET A. COSTIGAN", ["TOWN OF NORTH KITTREDGE"]),
    ("ALDERWOOD HOSPITALITY PARTNERS, LLC d/b/a THE ALDERWOOD HOTEL", ["ALDERWOOD HOSPITALITY PARTNERS, LLC d/b/a THE ALDERWOOD HOTEL"]),
    ("CITY OF ASHBROOK FALLS, RAYMOND COSTIGAN, individually, and DENNIS LAFLEUR, individually",
     ["CITY OF ASHBROOK FALLS", "RAYMOND COSTIGAN", "DENNIS LAFLEUR"]),
])
def test_each_caption_form_of_a_defendant(defendants, want):
    text = f"JANE ROE, Plaintiff, v. {defendants}, Defendants.\nCase No. 1:24-cv-00099\n\nCOMPLAINT\n"
    assert [p.name for p in read_caption(text, text.index("COMPLAINT")).defendants] == want
