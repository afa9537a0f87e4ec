"""Layouts as test data: the annotated complaints printed in other layouts, every offset kept."""

from __future__ import annotations

import re

import pytest

from argus.experiments.layouts import (
    LAYOUTS,
    GoldHeading,
    gold_headings,
    heading_scores,
    layout_heading_scores,
    load_complaint,
    render_corpus,
    render_layout,
    roman,
    title_case,
)
from tests.conftest import gold_sentences, needs_data

_OWN_NUMERAL = re.compile(r"(?:[IVXL]+|\d{1,2})\.\s+")  # "II. BASIS FOR JURISDICTION": the filing numbered it
_COMBINED = re.compile(r"\s*:\s+(?=[A-Z]\.\s)|\s+[-–—]\s+(?=[A-Z]\.\s)")  # "STATEMENT OF FACTS - A. ..."


def _norm(s: str) -> str:
    return " ".join(s.upper().split())


def _letters(s: str) -> str:
    return re.sub(r"[^A-Z0-9]", "", s.upper())


def _lines(text: str) -> list[tuple[int, int]]:
    starts = [0] + [m.end() for m in re.finditer("\n", text)]
    return [(a, b - 1) for a, b in zip(starts, starts[1:] + [len(text) + 1])]


def _around(text: str, h: GoldHeading) -> tuple[list[tuple[int, int]], int, int]:
    """The text's lines and the indexes of the heading's first and last line."""
    lines = _lines(text)
    return lines, lines.index(h.lines[0]), lines.index(h.lines[-1])


def _neighbourhood(text: str, h: GoldHeading) -> tuple[int, int]:
    """The heading's lines with the blank lines right above and below them."""
    lines, i, j = _around(text, h)
    while i > 0 and not text[slice(*lines[i - 1])].strip():
        i -= 1
    while j + 1 < len(lines) and not text[slice(*lines[j + 1])].strip():
        j += 1
    return lines[i][0], lines[j][1]


def _room(text: str, h: GoldHeading, k: int) -> int:
    """The characters a layout may write line ``k`` of the heading into: the whole line, and the blank
    line above (first line) or below (last line) where two blank lines stand there, never the one
    blank line that separates the heading from the text."""
    lines, i, j = _around(text, h)
    i += k

    def blank(n: int) -> bool:
        return 0 <= n < len(lines) and not text[slice(*lines[n])].strip()

    room = lines[i][1] - lines[i][0]
    if k == 0 and blank(i - 1) and blank(i - 2):
        room += lines[i - 1][1] - lines[i - 1][0] + 1
    if i == j and blank(i + 1) and blank(i + 2):
        room += lines[i + 1][1] - lines[i + 1][0] + 1
    return room


def _blank_beside(text: str, h: GoldHeading, after: int) -> bool:
    """Whether the line above (after=0) or below (after=1) the heading is blank."""
    lines, i, j = _around(text, h)
    k = j + 1 if after else i - 1
    return 0 <= k < len(lines) and not text[slice(*lines[k])].strip()


@pytest.fixture(scope="module")
def corpus(all_dirs) -> dict[str, tuple[str, dict, list[GoldHeading]]]:
    out = {}
    for d in all_dirs:
        text, gold = load_complaint(d)
        out[d.name] = (text, gold, gold_headings(text, gold))
    return out


@pytest.fixture(scope="module")
def rendered(corpus):
    return {(name, layout): render_layout(text, gold, layout) for name, (text, gold, _) in corpus.items() for layout in LAYOUTS}


def test_title_case():
    acr = frozenset({"ADA", "PHRA"})
    assert title_case("STATEMENT OF FACTS") == "Statement of Facts"
    assert (title_case("COUNT I: FAILURE TO ACCOMMODATE IN VIOLATION OF THE ADA (PLAINTIFF V. CORVANE)", acr)
            == "Count I: Failure to Accommodate in Violation of the ADA (Plaintiff v. Corvane)")
    assert title_case("FACTUAL ALLEGATIONS: A. MS. ASHWORTH'S MILITARY SERVICE") == "Factual Allegations: A. Ms. Ashworth's Military Service"
    assert title_case("B. CORVANE GRANTS A QUIET-WORKSPACE ACCOMMODATION") == "B. Corvane Grants a Quiet-Workspace Accommodation"
    assert title_case("C. KESSNER SUBJECTS PLAINTIFFS TO RACE- AND SEX-BASED HARASSMENT") == "C. Kessner Subjects Plaintiffs to Race- and Sex-Based Harassment"
    assert title_case("COUNT I — RACE (TITLE VII, 42 U.S.C. § 2000E-2(A))") == "Count I — Race (Title VII, 42 U.S.C. § 2000e-2(a))"
    assert title_case("COUNT II - RETALIATION, R.I. GEN. LAWS § 28-5-7(5)") == "Count II - Retaliation, R.I. Gen. Laws § 28-5-7(5)"
    assert title_case("STATEMENT OF FACTS - A. THE JOB") == "Statement of Facts - A. The Job"
    assert title_case('C. "THE JOB IS YOURS IF YOU\'RE NICE TO ME"') == 'C. "The Job Is Yours If You\'re Nice to Me"'
    assert title_case("B. KESSLING'S HARASSMENT OF INTERN A") == "B. Kessling's Harassment of Intern A"
    assert title_case("      PRAYER FOR RELIEF  ") == "      Prayer for Relief  "
    assert [roman(n) for n in (1, 4, 8, 9, 14)] == ["I", "IV", "VIII", "IX", "XIV"]


def test_heading_scores():
    gold = [GoldHeading((10, 20), "A", "top", ((5, 20),)), GoldHeading((40, 50), "B", "sub", ((40, 50),))]
    s = heading_scores([2, 6, 12, 44, 60], gold)  # 2 is in the caption; 12 repeats the first heading
    assert s == {"precision": 2 / 4, "recall": 1.0, "tp": 2, "fp": 2, "fn": 0}
    assert heading_scores([], gold)["precision"] is None and heading_scores([], gold)["fn"] == 2
    assert heading_scores([3], [], body_start=5) == {"precision": None, "recall": None, "tp": 0, "fp": 0, "fn": 0}


def test_a_wrapped_heading_is_one_heading_in_every_layout():
    text = ("JANE ROE,      )\nDefendants.    )\n\n\n      FACTUAL ALLEGATIONS: A. MS. ROE'S LONG\n"
            "      EMPLOYMENT AT THE PLANT\n\n1.     Roe was hired in 2019.\n\n\nCOUNT I: TITLE VII\n\n2.     Roe sues.\n")
    sent = [(text.index("Roe was"), text.index("2019.") + 5), (text.index("Roe sues"), text.index("sues.") + 5)]
    gold = {"sections": [{"heading": "FACTUAL ALLEGATIONS: A. Ms. Roe's Long Employment at the Plant", "kind": "facts",
                          "paragraphs": [[{"id": "S1", "text": text[slice(*sent[0])], "span": sent[0]}]]},
                         {"heading": "COUNT I: TITLE VII", "kind": "count",
                          "paragraphs": [[{"id": "S2", "text": text[slice(*sent[1])], "span": sent[1]}]]}]}
    heads = gold_headings(text, gold)
    assert [(h.text, h.level, len(h.lines)) for h in heads] == [
        ("FACTUAL ALLEGATIONS: A. MS. ROE'S LONG EMPLOYMENT AT THE PLANT", "top", 2), ("COUNT I: TITLE VII", "count", 1)]
    assert text[slice(*heads[0].span)].startswith("FACTUAL") and text[slice(*heads[0].span)].endswith("PLANT")
    for layout in LAYOUTS:
        out = render_layout(text, gold, layout).text
        assert len(out) == len(text) and len(gold_headings(out, gold)) == (0 if layout == "no_headings" else 2)
    assert "I. Factual Allegations: A. Ms. Roe's Long   \nEmployment at the Plant" in render_layout(text, gold, "numbered").text


@needs_data
def test_gold_headings_are_the_printed_section_headings(corpus):
    for name, (text, gold, heads) in corpus.items():
        # a section's heading is printed when it stands between the previous section's last
        # sentence and its own first one
        printed, prev_end = [], 0
        for sec in gold["sections"]:
            sents = [s for p in sec["paragraphs"] for s in p]
            if _norm(sec["heading"]) in _norm(text[prev_end : sents[0]["span"][0]]):
                printed.append(sec)
            prev_end = sents[-1]["span"][1]
        # every gold section prints its heading (SIGNATURE included); a combined "STATEMENT OF FACTS -
        # A. ..." line is one heading of one section
        assert len(heads) == len(printed) == len(gold["sections"]), name
        for h, sec in zip(heads, printed):
            assert _norm(h.text) == _norm(sec["heading"]), name
            assert _norm(text[h.span[0] : h.span[1]]) == _norm(h.text)
            assert (h.level == "count") == (sec["kind"] == "count"), h.text
            # only the FACTS have lettered sub-headings here: "I. THE PARTIES", "V. RELIEF REQUESTED" are
            # Roman numerals, "I. PLAINTIFFS' DAMAGES" after "H. ..." a letter
            lettered = bool(re.match(r"[A-Z]\. ", h.text)) and sec["kind"] == "facts"
            assert (h.level == "sub") == lettered, h.text


@needs_data
def test_every_layout_keeps_length_sentences_and_paragraphs(corpus, rendered):
    for (name, layout), r in rendered.items():
        text, gold, heads = corpus[name]
        assert len(r.text) == len(text)
        for s in gold_sentences(gold):
            a, b = s["span"]
            assert r.text[a:b] == text[a:b], (name, layout, s["id"])
        # only heading lines and the blank lines around them change; a heading keeps its blank lines
        allowed = set()
        for h in heads:
            allowed.update(range(*_neighbourhood(text, h)))
        assert all(k in allowed for k, (x, y) in enumerate(zip(text, r.text)) if x != y), (name, layout)
        again = gold_headings(r.text, gold)
        assert len(again) == (0 if layout == "no_headings" else len(heads)), (name, layout)
        for h, new in zip(heads, again):
            for side in (0, 1):
                assert _blank_beside(r.text, new, side) == _blank_beside(text, h, side), (name, layout, new.text)


@needs_data
def test_title_centred_is_title_case_in_place(corpus, rendered):
    for name, (text, gold, heads) in corpus.items():
        out = rendered[name, "title_centred"].text
        for h in heads:
            piece = out[h.span[0] : h.span[1]]
            assert _norm(piece) == _norm(h.text)
            letters = [c for c in piece if c.isalpha()]
            words = re.findall(r"[A-Za-z]+", piece)
            acronyms_only = all(w.isupper() and (len(w) <= 6) for w in words)
            assert sum(c.isupper() for c in letters) / len(letters) <= 0.85 or acronyms_only, piece
        assert rendered[name, "title_flush"].text.count("\n") == text.count("\n")
        for h in gold_headings(rendered[name, "title_flush"].text, gold):
            assert h.span[0] == h.lines[0][0], h.text  # flush left


@needs_data
def test_no_headings_leaves_no_heading_text(corpus, rendered):
    for name, (text, _, heads) in corpus.items():
        out = rendered[name, "no_headings"].text
        assert all(not out[h.lines[0][0] : h.lines[-1][1]].strip() for h in heads), name


@needs_data
def test_numbered_numbers_every_top_level_heading(corpus, rendered):
    for name, (text, gold, heads) in corpus.items():
        r = rendered[name, "numbered"]
        numeral, last_top, unnumbered = 0, None, []
        for h, new in zip(heads, gold_headings(r.text, gold)):
            assert new.span[0] == new.lines[0][0], new.text  # flush left
            if h.level != "top":
                assert _norm(new.text) == _norm(h.text)  # "A. ...", "Count I: ..." as they were
                continue
            words = _OWN_NUMERAL.sub("", h.text, count=1)  # the filing's own numeral gives way to the layout's
            parts = _COMBINED.split(words, maxsplit=1)
            if len(parts) == 2 and last_top == _norm(parts[0]):  # "STATEMENT OF FACTS: B. ..." again
                assert _norm(new.text) == _norm(parts[1]), new.text
                continue
            last_top, prefix = _norm(parts[0]), f"{roman(numeral + 1)}. "
            # the shortest printing of its first line: as it is, or split after the top heading
            first = _OWN_NUMERAL.sub("", text[slice(*h.lines[0])].strip(), count=1)
            split = _COMBINED.split(first, maxsplit=1)
            need = len(prefix) + min(len(first), len(split[0]) + 1 + len(split[1]) if len(split) == 2 else len(first))
            if need > _room(text, h, 0):  # no room: printed unnumbered, the next heading takes the numeral
                unnumbered.append(h.text)
                assert _letters(new.text) == _letters(h.text), new.text
                continue
            numeral += 1
            assert new.text.startswith(prefix), (name, new.text)
            assert _letters(new.text.split(" ", 1)[1]) == _letters(words), new.text  # a split drops ":"
        assert len(r.notes) == len(unnumbered) and all(repr(t) in n for t, n in zip(unnumbered, r.notes)), name


@needs_data
def test_pdf_split_puts_a_stray_space_inside_a_word(corpus, rendered):
    unsplit, no_room = set(), set()
    for name, (text, gold, heads) in corpus.items():
        r = rendered[name, "pdf_split"]
        for k, (h, new) in enumerate(zip(heads, gold_headings(r.text, gold))):
            assert not any(c.islower() for c in new.text)  # capitals
            assert new.span[0] == new.lines[0][0]  # flush left
            assert new.text.replace(" ", "") == h.text.upper().replace(" ", "")
            spaces = new.text.count(" ") - h.text.count(" ")
            assert spaces in (0, 1)
            if spaces == 0:
                unsplit.add((name, k))
            # the line with the longest word has no character of room: flush left, with a page header
            # or a single blank line above and below it
            raw = [text[slice(*s)] for s in h.lines]
            j = max(range(len(raw)), key=lambda n: max(map(len, re.findall(r"[A-Za-z]+", raw[n])), default=0))
            if len(raw[j].strip()) + 1 > _room(text, h, j):
                no_room.add((name, k))
        assert len(r.notes) == sum(n == name for n, _ in unsplit)
    assert unsplit == no_room


@needs_data
def test_render_corpus_and_scores(all_dirs, tmp_path):
    folders = all_dirs[:2]
    written = render_corpus(folders, tmp_path, ("as_filed", "numbered"))
    assert sorted(written) == ["as_filed", "numbered"]
    for d, src in zip(written["numbered"], folders):
        assert (d / "gold.json").read_bytes() == (src / "gold.json").read_bytes()
        assert (d / "complaint.txt").read_bytes().decode() == render_layout(*load_complaint(src), "numbered").text
    assert not list(tmp_path.rglob("*.tmp"))

    def perfect(path):  # a parser that finds exactly the printed headings
        return [h.span[0] for h in gold_headings(*load_complaint(path.parent))]

    rows = layout_heading_scores(folders, ("as_filed", "pdf_split", "no_headings"), parse=perfect)
    assert rows["as_filed"]["precision"] == rows["pdf_split"]["recall"] == 1.0
    assert rows["no_headings"] == {"gold": 0, "predicted": 0, "tp": 0, "fp": 0, "fn": 0, "precision": None, "recall": None}
