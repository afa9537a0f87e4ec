"""The annotated complaints in other layouts, as test data for heading detection.

Most annotated complaints were typed the same way: centred or flush-left headings in capitals,
two blank lines before a heading and one after. Real filings vary (Title Case, numbered
"I. Introduction" headings, no headings at all, words split by PDF extraction), and a heading
parser tuned on one layout can fail on the others. ``render`` prints a complaint in another layout
while keeping EVERY character offset, so the gold sentence spans stay valid and the same gold
scores every layout: only heading lines change, and where a layout needs more room than the
heading line has, one of two blank lines next to it (never the last blank line that separates a
heading from a paragraph) or the separator of a combined heading ("STATEMENT OF FACTS - A. ...")
gives it.

``gold_headings`` reads the printed headings off the gold (the non-blank lines between one gold
section's last sentence and the next one's first, page furniture left out), ``heading_scores``
scores a parser's heading starts against them, ``render_corpus`` writes the rendered complaints
beside their unchanged gold, and ``layout_heading_scores`` runs a parser over every layout
(``bench/layouts.py``).
"""

from __future__ import annotations

import json
import logging
import re
import tempfile
from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Literal

from argus.io import write_bytes_atomic, write_text_atomic
from argus.paths import complaints_dir
from argus.text.preprocess import is_page_furniture

log = logging.getLogger(__name__)

LAYOUTS = ("as_filed", "title_centred", "title_flush", "numbered", "no_headings", "pdf_split")
Level = Literal["top", "sub", "count"]

# "COUNT I", "SECOND CAUSE OF ACTION", and a pro se "CLAIM ONE" / "Claim 2"
_COUNT = re.compile(r"(COUNT\b|CLAIM\s+(\d+|ONE|TWO|THREE|FOUR|FIVE|SIX|SEVEN|EIGHT|NINE|TEN)\b|"
                    r"\S+\s+(CLAIM\s+FOR\s+RELIEF|CAUSE\s+OF\s+ACTION)\b)", re.I)
_SUB = re.compile(r"[A-Z]\.\s")
_OWN_NUMERAL = re.compile(r"(?:[IVXL]+|\d{1,2})\.\s+")  # a top heading the filing numbered: "II. Basis for Jurisdiction"
# a combined heading: "FACTUAL ALLEGATIONS: A. ...", "STATEMENT OF FACTS - A. ...", "... — A. ..."
_COMBINED = re.compile(r"(?P<top>.*?\S)(?P<sep>\s*:\s+|\s+[-–—]\s+)(?P<sub>[A-Z]\.\s.*)")
_SMALL = {"a", "an", "the", "and", "or", "of", "in", "on", "to", "for", "by", "at", "as", "with", "v.", "vs."}
_CLITICS = {"s", "t", "re", "ll", "ve", "d", "m"}  # after an apostrophe: lower case ("Ashworth's")
_ROMAN = re.compile(r"(?=[IVXL])L?X{0,3}(IX|IV|V?I{0,3})")
_INITIALS = re.compile(r"([A-Za-z]\.)+")  # "A.", "U.S.C.", "R.I."
_WORD = re.compile(r"([^\w§]*)(.*?)([^\w.'’]*)")  # leading punctuation, core, trailing punctuation
_DASHES = {"-", "–", "—"}


@dataclass
class GoldHeading:
    """A heading printed in a complaint's body: from the first to the last non-space character of
    its line(s); ``lines`` are the whole lines it occupies (indentation included, newline excluded)."""

    span: tuple[int, int]
    text: str
    level: Level
    lines: tuple[tuple[int, int], ...] = ()

    @property
    def extent(self) -> tuple[int, int]:
        """From the start of its first line to the end of its last (its span when no lines)."""
        return (self.lines[0][0], self.lines[-1][1]) if self.lines else self.span


@dataclass
class Rendering:
    """A complaint printed in one layout, and the headings it could not print as the layout asks."""

    text: str
    layout: str
    notes: list[str] = field(default_factory=list)


# ----------------------------------------------------------------------------- gold headings


def _line_spans(text: str) -> list[tuple[int, int]]:
    out, pos = [], 0
    for line in text.split("\n"):
        out.append((pos, pos + len(line)))
        pos += len(line) + 1
    return out


def _sentences(section: dict) -> list[dict]:
    return [s for p in section["paragraphs"] for s in p]


def heading_level(heading: str, kind: str | None = None, previous: str | None = None) -> Level:
    """``count`` for a cause of action (the gold ``kind`` of its section when given, else by its words),
    ``sub`` for a lettered sub-heading, else ``top``.

    "I.", "V." and "X." open a lettered sub-heading only where they continue the letters before them
    (``previous``: the letter of the sub-heading right before, "H." before "I."); elsewhere they are
    Roman numerals of a top heading ("I. THE PARTIES", "V. RELIEF REQUESTED").
    """
    h = heading.strip()
    if (kind == "count") if kind else _COUNT.match(h):
        return "count"
    if _SUB.match(h) and (h[0] not in "IVX" or (previous is not None and ord(h[0]) == ord(previous) + 1)):
        return "sub"
    return "top"


def gold_headings(text: str, gold: dict) -> list[GoldHeading]:
    """The headings printed in the body, one per gold section whose heading is printed, in order."""
    lines = _line_spans(text)
    starts = [a for a, _ in lines]

    def line_of(pos: int) -> int:
        return bisect_right(starts, pos) - 1

    def blank(i: int) -> bool:
        return not text[slice(*lines[i])].strip()

    def furniture(i: int) -> bool:
        return is_page_furniture(text[slice(*lines[i])])

    out, prev_end = [], None
    letter = None  # the letter of the last lettered sub-heading ("A." ... "H."), to read an "I." after "H."
    for section in gold["sections"]:
        sentences = _sentences(section)
        if not sentences:
            continue
        first = line_of(sentences[0]["span"][0])  # its paragraph-number prefix is on this line
        if prev_end is None:  # back from the first sentence to the blank line above the heading run
            i, blanks = first - 1, 0
            while i >= 0 and blanks <= 2 and (blank(i) or furniture(i)):
                blanks, i = blanks + blank(i), i - 1
            if blanks > 2:  # no heading right above the first paragraph (only the caption is)
                i = -1
            found = []
            while i >= 0 and not blank(i):
                found.insert(0, i)
                i -= 1
        else:
            found = list(range(line_of(prev_end - 1) + 1, first))
        prev_end = sentences[-1]["span"][1]
        found = [i for i in found if not blank(i) and not furniture(i)]
        if not found:
            continue
        spans = tuple(lines[i] for i in found)
        texts = [text[slice(*s)] for s in spans]
        start = spans[0][0] + len(texts[0]) - len(texts[0].lstrip())
        end = spans[-1][1] - len(texts[-1]) + len(texts[-1].rstrip())
        joined = " ".join(t.strip() for t in texts)
        level = heading_level(joined, section.get("kind"), letter)
        combined = _COMBINED.fullmatch(joined)
        letter = joined[0] if level == "sub" else combined["sub"][0] if combined and level == "top" else None
        out.append(GoldHeading(span=(start, end), text=joined, level=level, lines=spans))
    return out


# ----------------------------------------------------------------------------- Title Case


def body_acronyms(gold: dict) -> frozenset[str]:
    """Words the complaint's sentences print only in capitals (ADA, FMLA, EEOC, HR, ...); the
    signature and jury-demand sections (``other``) are left out: they print names in capitals."""
    caps, lower = set(), set()
    for section in gold["sections"]:
        if section["kind"] == "other":
            continue
        for s in _sentences(section):
            for w in re.findall(r"[A-Za-z]{2,}", s["text"]):
                (caps if w.isupper() else lower).add(w.upper())
    return frozenset(caps - lower)


def _title_part(part: str, acronyms: frozenset[str]) -> str:
    """One hyphen-free piece of a word: an acronym stays upper, else "Word", "Word's", "O'Brien"."""
    if part.upper() in acronyms:
        return part.upper()
    pieces = re.split(r"(['’])", part)
    out = [pieces[0].capitalize()]
    for k in range(2, len(pieces), 2):
        out += [pieces[k - 1], pieces[k].lower() if pieces[k].lower() in _CLITICS else pieces[k].capitalize()]
    return "".join(out)


def _title_word(token: str, capital: bool, acronyms: frozenset[str]) -> str:
    lead, core, tail = _WORD.fullmatch(token).groups()
    if not any(c.isalpha() for c in core):
        return token
    if any(c.isdigit() for c in core) or (len(core) == 1 and lead.endswith("(") and tail.startswith(")")):
        return token.lower()  # "2000E-2(A)" -> "2000e-2(a)", "(D)" -> "(d)"
    if core.lower() in _SMALL and not capital:
        return lead + core.lower() + tail
    if _INITIALS.fullmatch(core) or _ROMAN.fullmatch(core.rstrip(".")):  # "A.", "U.S.C.", "IV", "IV."
        return lead + core.upper() + tail
    return lead + "-".join(_title_part(p, acronyms) for p in core.split("-")) + tail


def title_case(line: str, acronyms: frozenset[str] = frozenset()) -> str:
    """A heading line in Title Case, spacing kept (same length): small words lower case except the
    first and last word and after ": ", " - ", " — ", a leading "A." or an opening quote or
    parenthesis; Roman
    numerals, initials ("A.", "U.S.C.") and ``acronyms`` upper; letters of tokens with digits lower."""
    parts = re.split(r"(\s+)", line)
    words = [k for k, p in enumerate(parts) if p and not p.isspace()]
    capital = True
    for n, k in enumerate(words):
        token = parts[k]
        capital = capital or n == len(words) - 1 or token[0] in "\"“'‘("
        parts[k] = _title_word(token, capital, acronyms)
        capital = token.endswith(":") or token in _DASHES or (capital and bool(_SUB.fullmatch(token + " ")))
    out = "".join(parts)
    assert len(out) == len(line), (line, out)
    return out


def roman(n: int) -> str:
    """``n`` (1-49) in Roman numerals."""
    out = ""
    for value, letters in ((40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")):
        while n >= value:
            out, n = out + letters, n - value
    return out


# ----------------------------------------------------------------------------- rendering


def _pdf_split(line: str) -> str | None:
    """A stray space two letters before the end of the line's longest word ("ALLEGATI ONS")."""
    words = list(re.finditer(r"[A-Za-z]{4,}", line))
    if not words:
        return None
    word = max(words, key=lambda m: len(m.group()))  # the first of the longest
    return line[: word.end() - 2] + " " + line[word.end() - 2 :]


class _Page:
    """The rendered text as a list of characters, written line by line into fixed-width slots."""

    def __init__(self, text: str):
        self.text, self.chars, self.lines = text, list(text), _line_spans(text)
        self.starts = [a for a, _ in self.lines]
        self.taken: set[int] = set()  # blank lines given to a heading

    def _blank(self, i: int) -> bool:
        return 0 <= i < len(self.lines) and i not in self.taken and not self.text[slice(*self.lines[i])].strip()

    def _slots(self, span: tuple[int, int], first: bool, last: bool) -> list[tuple[tuple[int, int], set[int]]]:
        """Where a heading line can be written, and the blank lines that takes: the line itself,
        then with one of two blank lines before it (first line) or after it (last line), then both."""
        i = bisect_right(self.starts, span[0]) - 1
        before = {i - 1} if first and self._blank(i - 1) and self._blank(i - 2) else set()
        after = {i + 1} if last and self._blank(i + 1) and self._blank(i + 2) else set()
        a0 = self.lines[i - 1][0] if before else span[0]
        b1 = self.lines[i + 1][1] if after else span[1]
        return [(span, set()), ((a0, span[1]), before), ((span[0], b1), after), ((a0, b1), before | after)]

    def put(self, slot: tuple[int, int], line: str) -> None:
        a, b = slot
        assert len(line) <= b - a, (line, slot)
        self.chars[a:b] = line.ljust(b - a)

    def fit(self, span: tuple[int, int], candidates: Iterable[str | None], first: bool = True, last: bool = True) -> bool:
        """Write the first candidate that fits a slot of the line (slots tried in order); False
        when none fits."""
        for line in candidates:
            for slot, taken in self._slots(span, first, last):
                if line is not None and len(line) <= slot[1] - slot[0]:
                    self.put(slot, line)
                    self.taken |= taken
                    return True
        return False


def render_layout(text: str, gold: dict, layout: str) -> Rendering:
    """``text`` in ``layout``, the same length with every gold sentence where it was; only heading
    lines change (and, for room, one of two blank lines next to a heading):

    - ``as_filed``: unchanged; ``no_headings``: heading lines blanked;
    - ``title_centred``: Title Case where the heading was; ``title_flush``: Title Case, flush left;
    - ``numbered``: Title Case, flush left, top-level headings numbered "I. ", "II. ", ... (a
      combined "FACTUAL ALLEGATIONS: A. ..." split over two lines when its line has no room; a
      repeat of the previous top heading, "STATEMENT OF FACTS: B. ...", printed as its "B. ..."
      alone, as a numbered complaint prints it; a numeral the filing gave a top heading, "II. BASIS
      FOR JURISDICTION", replaced; a heading with no room left unnumbered, the next one taking its
      numeral); sub-headings and counts keep their letters and numbers ("Count I", "CLAIM ONE");
    - ``pdf_split``: capitals, flush left, a stray space two letters before the end of the
      heading's longest word ("ALLEGATI ONS"), where there is a character of room.
    """
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}; one of {', '.join(LAYOUTS)}")
    out = Rendering(text=text, layout=layout)
    if layout == "as_filed":
        return out
    acronyms = body_acronyms(gold)
    page = _Page(text)
    numeral, last_top = 0, None
    for h in gold_headings(text, gold):
        raw = [text[slice(*s)] for s in h.lines]
        if any("\f" in line for line in raw):
            out.notes.append(f"{layout}: {h.text!r} holds a page break; left as filed")
            continue
        if layout == "title_centred":
            new = [title_case(line, acronyms) for line in raw]
        elif layout == "pdf_split":
            new = [line.strip().upper() for line in raw]
        else:
            new = ["" if layout == "no_headings" else title_case(line, acronyms).strip() for line in raw]
        for s, line in zip(h.lines, new):
            page.put(s, line)
        last = len(new) - 1
        if layout == "pdf_split":
            k = max(range(len(new)), key=lambda j: max(map(len, re.findall(r"[A-Za-z]+", new[j])), default=0))
            if not page.fit(h.lines[k], [_pdf_split(new[k])], first=k == 0, last=k == last):
                out.notes.append(f"pdf_split: no room for a stray space in {h.text!r}; left unsplit")
        elif layout == "numbered" and h.level == "top":
            own = _OWN_NUMERAL.match(new[0])  # the filing's own numeral gives way to the layout's
            line = new[0][own.end():] if own else new[0]
            m = _COMBINED.fullmatch(line)
            top = m["top"] if m else line
            if m and last_top is not None and top.lower() == last_top.lower():
                page.put(h.lines[0], m["sub"])
                continue
            last_top, prefix = top, f"{roman(numeral + 1)}. "
            if page.fit(h.lines[0], [prefix + line, f"{prefix}{top}\n{m['sub']}" if m else None], last=last == 0):
                numeral += 1  # a heading left unnumbered takes no numeral: the next one gets it
            else:
                out.notes.append(f"numbered: no room for {prefix.strip()!r} before {h.text!r}; left unnumbered")
    out.text = "".join(page.chars)
    _check(text, out.text, gold)
    for note in out.notes:
        log.info("%s: %s", gold.get("doc_id", "?"), note)
    return out


def render(text: str, gold: dict, layout: str) -> str:
    """``text`` in ``layout`` (see ``render_layout``)."""
    return render_layout(text, gold, layout).text


def _check(text: str, rendered: str, gold: dict) -> None:
    assert len(rendered) == len(text)
    for section in gold["sections"]:
        for s in _sentences(section):
            a, b = s["span"]
            assert rendered[a:b] == text[a:b], (gold.get("doc_id"), s["id"])


# ----------------------------------------------------------------------------- scoring


def heading_scores(predicted: list[int], gold: list[GoldHeading], body_start: int | None = None) -> dict:
    """Precision and recall of predicted heading starts: a start matches a gold heading when it
    lies on the heading's line(s) (indentation included), each gold heading at most once. Starts
    before ``body_start`` (default: the first gold heading's line) are the caption's, not scored.
    Precision is None without predictions, recall None without gold headings."""
    if body_start is None:
        body_start = gold[0].extent[0] if gold else 0
    preds = sorted(p for p in predicted if p >= body_start)
    free = list(gold)
    tp = 0
    for p in preds:
        hit = next((g for g in free if g.extent[0] <= p < g.extent[1]), None)
        if hit is not None:
            free.remove(hit)
            tp += 1
    fp, fn = len(preds) - tp, len(gold) - tp
    return {
        "precision": tp / len(preds) if preds else None,
        "recall": tp / len(gold) if gold else None,
        "tp": tp,
        "fp": fp,
        "fn": fn,
    }


# ----------------------------------------------------------------------------- corpus


def annotated_complaints(split: str = "all") -> list[Path]:
    """The folders of the annotated complaints of ``split`` (train, dev or all)."""
    splits = ("train", "dev") if split == "all" else (split,)
    roots = [complaints_dir(s) for s in splits]
    return [d for root in roots if root.exists() for d in sorted(root.iterdir()) if (d / "gold.json").exists()]


def load_complaint(folder: Path) -> tuple[str, dict]:
    """(complaint text exactly as stored, gold) of a complaint folder."""
    text = (folder / "complaint.txt").read_bytes().decode("utf-8")  # no newline translation: offsets
    return text, json.loads((folder / "gold.json").read_text(encoding="utf-8"))


def render_corpus(folders: list[Path], out_root: Path, layouts: Iterable[str] = LAYOUTS) -> dict[str, list[Path]]:
    """Write ``out_root/<layout>/<doc>/complaint.txt`` (rendered) and ``gold.json`` (copied
    unchanged) for every complaint and layout; the written folders per layout."""
    written: dict[str, list[Path]] = {}
    for folder in folders:
        text, gold = load_complaint(folder)
        for layout in layouts:
            d = Path(out_root) / layout / folder.name
            write_text_atomic(d / "complaint.txt", render(text, gold, layout), newline="")
            write_bytes_atomic(d / "gold.json", (folder / "gold.json").read_bytes())
            written.setdefault(layout, []).append(d)
    return written


def preprocess_heading_starts(path: Path) -> list[int]:
    """Where ``argus.text.preprocess`` (today's heading parser) finds headings in a complaint file."""
    from argus.ingest.files import read_text_document
    from argus.text.preprocess import preprocess

    return [s.span[0] for s in preprocess(read_text_document(path)).sections if s.heading]


def layout_heading_scores(
    folders: list[Path],
    layouts: Iterable[str] = LAYOUTS,
    parse: Callable[[Path], list[int]] = preprocess_heading_starts,
    out_root: Path | None = None,
) -> dict[str, dict]:
    """Per layout, ``parse``'s heading starts on every rendered complaint scored against the gold
    headings of that rendering, summed over complaints: gold, predicted, tp, fp, fn, precision,
    recall. The rendered corpus is written to ``out_root`` (a temporary folder when None)."""
    # the caption ends where the first heading's line starts, as filed (or earlier, where a
    # layout moved that heading into the blank line above it)
    caption_ends = [next((h.extent[0] for h in gold_headings(*load_complaint(f))), 0) for f in folders]
    with tempfile.TemporaryDirectory() as tmp:
        rendered = render_corpus(folders, Path(out_root or tmp), layouts)
        rows = {}
        for layout, docs in rendered.items():
            total = {"gold": 0, "predicted": 0, "tp": 0, "fp": 0, "fn": 0}
            for d, caption_end in zip(docs, caption_ends):
                heads = gold_headings(*load_complaint(d))
                body_start = min(caption_end, heads[0].extent[0]) if heads else caption_end
                scores = heading_scores(parse(d / "complaint.txt"), heads, body_start)
                total["gold"] += len(heads)
                total["predicted"] += scores["tp"] + scores["fp"]
                for k in ("tp", "fp", "fn"):
                    total[k] += scores[k]
            total["precision"] = total["tp"] / total["predicted"] if total["predicted"] else None
            total["recall"] = total["tp"] / total["gold"] if total["gold"] else None
            rows[layout] = total
    return rows


def markdown_table(rows: dict[str, dict]) -> str:
    """The heading scores per layout as a Markdown table."""

    def pct(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.3f}"

    out = ["| layout | gold headings | predicted | tp | fp | fn | precision | recall |", "|---|" + "---:|" * 7]
    for layout, r in rows.items():
        counts = " | ".join(str(r[k]) for k in ("gold", "predicted", "tp", "fp", "fn"))
        out.append(f"| {layout} | {counts} | {pct(r['precision'])} | {pct(r['recall'])} |")
    return "\n".join(out)
