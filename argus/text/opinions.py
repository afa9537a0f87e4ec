"""What kind of document a text is, and where a court opinion tells what happened.

A complaint's narrative sits under a FACTS heading; an opinion's under "Background", "Factual
background", "Facts" or "Procedural history", or, where its parts carry numerals only ("I.", "II."),
in its first part, before the court's discussion. The rest of an opinion (the syllabus, the
discussion, the analysis, the concurrences and dissents, the footnotes) is argument about what
happened, not what happened, and is read as ``other``.

``document_kind`` tells a complaint, an opinion, an EEOC charge and a motion (or brief) apart by the
words their genre prints (a court's "delivered the opinion of the Court", "Circuit Judge.", "we
affirm"; a charge's "CHARGE OF DISCRIMINATION"; a motion's "MEMORANDUM OF LAW IN SUPPORT"), counted
in the opening pages.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import get_args

from argus.text.documents import DocumentKind

DOCUMENT_KINDS: tuple[str, ...] = get_args(DocumentKind)

_CUES: dict[str, tuple[re.Pattern, ...]] = {
    "opinion": tuple(re.compile(p, re.I | re.M) for p in (
        r"\bdelivered\s+the\s+opinion\s+of\s+the\s+Court\b",
        r"^[ \t]*[A-Z][A-Za-z'’.\- ]{1,40},\s+(?:Senior\s+|Chief\s+)?(?:Circuit|District|Magistrate)\s+Judges?\.?[ \t]*$",
        r"\bPER\s+CURIAM\b",
        r"\bON\s+WRIT\s+OF\s+CERTIORARI\b|\bCERTIORARI\s+TO\b",
        r"\b(?:United\s+States\s+)?Court\s+of\s+Appeals\b",
        r"\b(?:we|We)\s+(?:will\s+)?(?:affirm|reverse|vacate|remand)\b",
        r"\b(?:Plaintiff|Defendant)s?-Appell(?:ant|ee)s?\b|\bAppell(?:ant|ee)s?\b",
        r"\b(?:the\s+)?district\s+court\s+(?:granted|erred|held|concluded|dismissed)\b",
        r"^[ \t]*(?:OPINION|MEMORANDUM\s+OPINION(?:\s+AND\s+ORDER)?|OPINION\s+AND\s+ORDER)[ \t]*$",
    )),
    "charge": tuple(re.compile(p, re.I | re.M) for p in (
        r"\bCHARGE\s+OF\s+DISCRIMINATION\b",
        r"\bEEOC\s+Form\s+5\b",
        r"\bCharge\s+(?:No|Number)\b",
        r"\bI\s+believe\s+(?:that\s+)?I\s+(?:have\s+been|was)\s+(?:discriminated|retaliated)\b",
        r"\bTHE\s+PARTICULARS\s+ARE\b",
    )),
    "motion": tuple(re.compile(p, re.I | re.M) for p in (
        r"\bMEMORANDUM\s+(?:OF\s+LAW|OF\s+POINTS\s+AND\s+AUTHORITIES|IN\s+(?:SUPPORT|OPPOSITION))\b",
        r"\bMOTION\s+(?:TO|FOR)\s+(?:DISMISS|SUMMARY\s+JUDGMENT|JUDGMENT)\b",
        r"\bSTATEMENT\s+OF\s+(?:UNDISPUTED|MATERIAL)\s+(?:MATERIAL\s+)?FACTS\b",
        r"\b(?:Defendant|Plaintiff)s?\s+(?:respectfully\s+)?(?:moves?|submits?\s+this\s+memorandum)\b",
    )),
    "complaint": tuple(re.compile(p, re.I | re.M) for p in (
        r"^[ \t]*(?:(?:FIRST\s+)?AMENDED\s+)?(?:CIVIL\s+)?COMPLAINT\b",
        r"\bJURY\s+(?:TRIAL\s+)?DEMAND(?:ED)?\b|\bDEMAND\s+FOR\s+(?:A\s+)?JURY\b",
        r"\bWHEREFORE\b",
        r"\b(?:complains?|alleges?)\s+(?:and\s+(?:says|states|alleges)\s+)?as\s+follows\b",
        r"\b(?:repeats|realleges|re-alleges|incorporates)\b[^.]{0,80}\bparagraphs?\b",
    )),
}


def document_kind(text: str, pleading: bool = True, window: int = 30000) -> DocumentKind:
    """The kind of the document ``text`` (its first ``window`` characters read): the genre whose cues
    it prints most (two at least), else ``complaint`` for a pleading (a caption, numbered paragraphs)
    and ``other`` for the rest (a memo, an excerpt)."""
    head = text[:window]
    hits = {kind: sum(bool(rx.search(head)) for rx in cues) for kind, cues in _CUES.items()}
    best = max(hits, key=lambda k: (hits[k], k == "complaint"))
    # a pleading is a complaint unless another genre's cues outnumber the complaint's by two (a complaint
    # names the EEOC charge it followed, and an opinion quotes the complaint)
    if best != "complaint" and hits[best] >= 2 and hits[best] >= hits["complaint"] + (2 if pleading else 1):
        return best  # type: ignore[return-value]
    if hits["complaint"] >= 1 or pleading:
        return "complaint"
    return "other"


# ----------------------------------------------------------------------------- an opinion's parts

_NARRATIVE_HEADING = re.compile(
    r"^(?:(?:factual|procedural|relevant)\s+(?:and\s+procedural\s+)?)?background\b|^(?:the\s+)?facts\b|"
    r"^statement\s+of\s+(?:the\s+)?(?:facts|case)\b|^facts?\s+and\s+procedural\s+(?:history|background)\b|"
    r"^(?:factual|procedural)\s+history\b|^(?:the\s+)?underlying\s+facts\b|^history\b", re.I)
_ARGUMENT_HEADING = re.compile(
    r"^(?:discussion|analysis|standards?\s+of\s+review|legal\s+standards?|conclusion|jurisdiction|"
    r"applicable\s+law|summary\s+of\s+(?:the\s+)?argument|argument|syllabus|footnotes?|notes|dissent|"
    r"concurrence|order)\b", re.I)
_NUMERAL_LINE = re.compile(r"^[ \t]*(?P<n>[IVXL]{1,5}|[A-H]|\d{1,2})[.)]?[ \t]*(?P<rest>[^\n]{0,80})$")
_OPINION_START = re.compile(
    r"delivered\s+the\s+opinion\s+of\s+the\s+Court|^[ \t]*[A-Z][A-Za-z'’.\- ]{1,40},\s+(?:Senior\s+|Chief\s+)?"
    r"(?:Circuit|District|Magistrate)\s+Judges?\.?[ \t]*$|^[ \t]*PER\s+CURIAM\b|^[ \t]*OPINION[ \t]*$", re.I | re.M)
# another opinion in the same text: "JUSTICE THOMAS, concurring.", "GINSBURG, J., dissenting."
_SEPARATE_OPINION = re.compile(r"^[ \t]*(?:JUSTICE\s+|CHIEF\s+JUSTICE\s+)?[A-Z][A-Za-z'’\-]+(?:,\s+(?:C\.\s*)?J\.)?,\s+"
                               r"(?:concurring|dissenting)\b[^\n]{0,60}\.[ \t]*$", re.M)
_ROMAN = re.compile(r"^(?:I{1,3}|IV|VI{0,3}|IX|XI{0,3})$")


@dataclass(frozen=True)
class Part:
    """A stretch [start, end) of an opinion's text and whether it narrates what happened."""

    start: int
    end: int
    heading: str
    narrative: bool


def _division(line: str) -> tuple[str, str] | None:
    """(numeral, title) of a line that divides an opinion ("I.", "II. DISCUSSION", "A", "Background"),
    else None."""
    s = line.strip()
    if not s or len(s) > 80 or s.endswith((",", ";")) or " v. " in s or "\f" in line:  # a page's running head
        return None
    m = _NUMERAL_LINE.match(s)
    if m and (not m.group("rest") or not m.group("rest")[0].islower()):
        rest = m.group("rest").strip()
        if not rest or _NARRATIVE_HEADING.match(rest) or _ARGUMENT_HEADING.match(rest) or \
                (rest[0].isupper() and not rest.endswith(".") and len(rest.split()) <= 8):
            return m.group("n"), rest
    if _NARRATIVE_HEADING.match(s.rstrip(".:")) or _ARGUMENT_HEADING.match(s.rstrip(".:")):
        words = s.rstrip(".:").split()
        if len(words) <= 6 and (s.isupper() or all(w[0].isupper() or w.lower() in ("of", "and", "the") for w in words)):
            return "", s.rstrip(".:")
    return None


def opinion_parts(text: str) -> list[Part]:
    """The parts of the (first) opinion in ``text`` that narrate what happened.

    The parts under a narrative heading ("Background", "Facts", "Procedural History"), with their
    lettered sub-parts; where the opinion's parts carry numerals only, its first part ("I."), up to the
    second ("II."). Only the opinion of the court is read: what precedes it (a syllabus, the case title)
    and the separate opinions after it are left out. Empty when the opinion shows no such part."""
    start = 0
    m = _OPINION_START.search(text)
    if m:
        start = m.end()
    sep = _SEPARATE_OPINION.search(text, start)
    end = sep.start() if sep else len(text)
    lines, pos = [], start
    for line in text[start:end].split("\n"):
        lines.append((pos, line))
        pos += len(line) + 1
    divisions = [(p, *d) for p, line in lines if (d := _division(line)) is not None]
    named = [(p, n, t) for p, n, t in divisions if t and _NARRATIVE_HEADING.match(t)]
    parts: list[Part] = []
    top = [(p, n, t) for p, n, t in divisions if not n or _ROMAN.match(n) or n.isdigit()]
    if named:
        for p, n, t in named:
            # until the next division of the same or a higher level that is not a sub-part of this one
            nxt = next((q for q, m_, u in divisions if q > p and (
                (n and (_ROMAN.match(m_) or m_.isdigit()) == (_ROMAN.match(n) or n.isdigit()) and not _sub(n, m_))
                or (not m_ and u) or (u and _ARGUMENT_HEADING.match(u)))), end)
            parts.append(Part(p, nxt, t, True))
        return parts
    first = next(((p, n) for p, n, _ in top if n in ("I", "1")), None)
    if first is None:
        return []
    nxt = next((q for q, n, t in top if q > first[0] and (n not in ("I", "1") or (t and _ARGUMENT_HEADING.match(t)))), end)
    return [Part(first[0], nxt, "I", True)]


def _sub(parent: str, numeral: str) -> bool:
    """Whether ``numeral`` is a sub-part's under ``parent`` (a letter under a roman numeral)."""
    return bool(_ROMAN.match(parent)) and len(numeral) == 1 and numeral.isalpha() and not _ROMAN.match(numeral)


__all__ = ["DOCUMENT_KINDS", "DocumentKind", "Part", "document_kind", "opinion_parts"]
