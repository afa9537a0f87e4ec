"""The caption of a complaint, read deterministically: parties, court and case number, with spans.

A filed complaint opens with a caption block: the court, the parties in a left column (plaintiffs,
then ``v.``, then defendants, each side closed by its label) and, in a right column separated by
``)``, ``:`` or ``§``, the case number and the title::

     UNITED STATES DISTRICT COURT FOR THE EASTERN DISTRICT OF PENNSYLVANIA

    KENDRA L. ASHWORTH,                       )
    Plaintiff,                                ) Civil Action No. 2:23-cv-03418
    v.                                        ) COMPLAINT AND JURY DEMAND
    CORVANE CUSTOMER CARE GROUP, LLC,         )
    BRADLEY KESSELRING,                       )
    Defendants.                               )

``read_caption`` returns each party with its ``[start, end)`` span in the original text and, where
the body introduces it ("Plaintiff Kendra L. Ashworth ("Ms. Ashworth" or "Plaintiff")"), the name as
the body prints it and the short names it defines. Those parties seed the entity list of every
extraction design (``argus.designs.sentence.entities``). Nothing here calls a model.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

PartySide = Literal["plaintiff", "defendant"]

_COLUMN = re.compile(r"(?:^|\s)[)§:|](?:\s|$)")  # at a line's start too: OCR drops the indentation of a lone ")"
_SIDE_LABEL = re.compile(
    r"^\s*(?P<label>(?:Individual\s+|Corporate\s+)?(?:Plaintiffs?|Petitioners?|Defendants?|Respondents?))\s*[.,;:]?\s*$",
    re.I)
_VERSUS = re.compile(r"^\s*(?:-\s*)?(?:v\.?|vv\.|vs\.?|versus|against)(?:\s*-)?\s*$", re.I)  # "Vv.": Tesseract's "v."
_INLINE_LABEL = re.compile(r",?\s*\b(?P<label>Plaintiffs?|Petitioners?|Defendants?|Respondents?)\b\s*[.,;:]?", re.I)
_INLINE_VERSUS = re.compile(r"(?:^|\s)(?:-\s*)?(?:v\.|vv\.|vs\.?|versus|against)(?:\s*-)?(?=\s|$)", re.I)
_COURT = re.compile(r"\b(?:UNITED\s+STATES\s+DISTRICT\s+COURT|DISTRICT\s+COURT|SUPERIOR\s+COURT|COURT\s+OF|"
                    r"SUPREME\s+COURT|CIRCUIT\s+COURT)\b", re.I)
_DOCKET = re.compile(r"\b\d{1,2}:\d{2}-?[a-z]{2}-?\d{3,6}(?:-[A-Z]{1,5})*\b", re.I)
_CASE_LABEL = re.compile(r"\b(?:Civil\s+Action|Case|Civil|Docket|C\.\s?A\.|Index)\s*(?:No\.?|Number|#)\s*:?\s*"
                         r"(?P<num>[\w:.\-/]+\d)", re.I)
# A clause after the name runs to the end of the party: capacity ("individually and in his official
# capacity as Fire Chief"), agency ("by and through its Finance Director, …"), "et al."; after a comma
# any clause that opens in lower case does too (caption names are capitalized), d/b/a names excepted.
_CLAUSE = re.compile(
    r"(?:,\s*|\s+)(?i:individually|personally|in\s+(?:his|her|their|its)|by\s+and\s+through|an?\s+individual|et\s+al)\b.*$|"
    r",\s*(?!(?:d/b/a|f/k/a|a/k/a)\b)[a-z].*$")
_DANGLING = re.compile(r"\s+[dfa]/(?:[bk](?:/a?)?)?$", re.I)  # "… LLC d/b/a" with the trade name cut off
# a line or comma-piece that carries on the party before it: a clause, a trade name, a company suffix
_RUNS_ON = re.compile(r"[a-z]|(?i:d/b/a|f/k/a|a/k/a)\b|&|(?i:inc|incorporated|llc|l\.l\.c|corp|ltd|co|p\.c|n\.a|pllc|llp|lp)\.?(?:[,\s]|$)")
_AGENT_OPEN = re.compile(r"\bby\s+and\s+through\s+(?:its|their)\b[^,]*$", re.I)  # "by and through its Finance Director" + the agent next
_RANK = re.compile(r"(?:lt|lieut|lieutenant|capt|captain|sgt|sergeant|cpl|det|detective|ofc|officer|chief|sheriff|deputy|"
                   r"trooper|maj|col|cmdr|insp|supt|dr|mr|mrs|ms|hon)\.?\s+(?=[A-Z])", re.I)
_ORG_WORDS = re.compile(
    r"\b(?:inc|incorporated|llc|l\.l\.c|llp|lp|corp|corporation|company|co|ltd|plc|pllc|p\.c|n\.a|group|bank|"
    r"university|college|school|hospital|health|city|county|town|township|village|state|department|"
    r"board|authority|district|commission|agency|services?|association|partners|holdings|systems|"
    r"trust|foundation|church|club|center|centre|institute|enterprises|industries|logistics|transport)\b\.?",
    re.I)
_DEFINED = re.compile(r"\(\s*(?P<body>[^()]{1,240}?)\s*\)")
_QUOTED = re.compile(r"[\"“”]\s*(?P<term>[^\"“”]{1,60}?)\s*[,.]?\s*[\"“”]")


class CaptionParty(BaseModel):
    """One party named in the caption."""

    model_config = ConfigDict(extra="forbid")

    side: PartySide
    name: str = Field(description="As printed in the caption (qualifiers such as 'individually' dropped)")
    span: tuple[int, int] = Field(description="[start, end) of the name in the original text")
    kind: Literal["person", "organization"] = Field(description="By its form: company suffixes and public bodies are organizations")
    body_name: str | None = Field(default=None, description="The name as the body prints it, where it introduces the party")
    aliases: list[str] = Field(default_factory=list, description="Short names the body defines for it: (\"Ms. Ashworth\" or \"Plaintiff\")")


class Caption(BaseModel):
    """What the caption says: the parties, the court and the case number, each with its span."""

    model_config = ConfigDict(extra="forbid")

    court: str | None = None
    court_span: tuple[int, int] | None = None
    case_number: str | None = None
    case_number_span: tuple[int, int] | None = None
    plaintiffs: list[CaptionParty] = Field(default_factory=list)
    defendants: list[CaptionParty] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list, description="What could not be read, for the EKG's warnings")

    @property
    def parties(self) -> list[CaptionParty]:
        return [*self.plaintiffs, *self.defendants]


@dataclass
class _Cell:
    """The left-column text of one caption line, where it starts in the original, and the column of
    the separator (None when the line has none)."""

    text: str
    start: int
    right: str = ""
    right_start: int = 0
    sep: int | None = None


def _cells(text: str, start: int, end: int) -> list[_Cell]:
    cells = []
    pos = start
    for line in text[start:end].split("\n"):
        m = _COLUMN.search(line)
        left, right = (line[: m.start()], line[m.end():]) if m else (line, "")
        sep = (m.start() + line[m.start()].isspace()) if m else None
        cells.append(_Cell(left, pos, right, pos + (m.end() if m else len(line)), sep))
        pos += len(line) + 1
    return cells


def _span_of(text: str, needle: str, lo: int, hi: int) -> tuple[int, int] | None:
    """Span of ``needle`` in ``text[lo:hi]`` with any whitespace between its words."""
    words = needle.split()
    if not words:
        return None
    m = re.compile(r"\s+".join(re.escape(w) for w in words)).search(text, lo, hi)
    return (m.start(), m.end()) if m else None


def _clean_party(s: str) -> str:
    s = _CLAUSE.sub("", " ".join(s.split()))
    return _DANGLING.sub("", s.strip(" ,;")).strip(" ,;")


def _split_parties(cells: list[_Cell]) -> list[str]:
    """Parties of one side in a caption's left column: one per line, a line carrying on into the next
    where the name wraps. A line ending in a comma closes its party, and so does a line that fills the
    column without one: the column cut the rest off ("RAYMOND COSTIGAN, individually and in hi  )"),
    and what follows is the next party. A line that opens with a clause, a trade name or a company
    suffix ("individually,", "d/b/a THE ALDERWOOD HOTEL,", "INC.,") belongs to the party above it."""
    lines = [c for c in cells if c.text.strip()]
    seps = Counter(c.sep for c in cells if c.sep is not None)
    column = seps.most_common(1)[0][0] if seps else None
    parties, cur = [], []
    for i, c in enumerate(lines):
        s = c.text.strip()
        cur.append(s)
        if i + 1 < len(lines) and _RUNS_ON.match(lines[i + 1].text.strip()):
            continue
        cut = column is not None and c.sep == column and column - len(c.text.rstrip()) <= 3
        if s.endswith((",", ";")) or cut or i + 1 == len(lines):
            parties.append(" ".join(cur))
            cur = []
    out = []
    for p in parties:
        # several parties on one line: "JOHN DOE and JANE ROE" / "JOHN DOE; JANE ROE"
        for q in re.split(r";\s+|\s+and\s+(?=[A-Z][A-Z.'\- ]+$)", p):
            q = _clean_party(q)
            if q and any(c.isalpha() for c in q):
                out.append(q)
    return out


_SUFFIX_AHEAD = r"(?!\s*(?:inc|incorporated|llc|l\.l\.c|corp|ltd|co|p\.c|n\.a|pllc|llp|lp)\b)"


def _split_inline(block: str) -> list[str]:
    """Parties of one side written on one line: "ACME WIDGETS, INC. and JOHN DOE, individually"; the
    text before the side's last paragraph (the court's name, a title) is not a party. A piece between
    commas that carries on the party before it (a clause, a d/b/a) stays with it, and so does the agent
    named after "by and through its Finance Director," ; "and" joins parties only before a name."""
    block = re.split(r"\n\s*\n", block.strip())[-1]
    block = " ".join(line for line in block.split("\n") if not _COURT.search(line))
    parties: list[str] = []
    for piece in re.split(rf"(?i:,{_SUFFIX_AHEAD})|;|\s+and\s+(?=[A-Z])", block):
        piece = " ".join(piece.split())
        if not any(c.isalpha() for c in piece):
            continue
        if parties and (_RUNS_ON.match(piece) or _AGENT_OPEN.search(parties[-1])):
            parties[-1] += ", " + piece
        else:
            parties.append(piece)
    return [n for n in map(_clean_party, parties) if n and any(c.isalpha() for c in n)]


def _kind(name: str) -> Literal["person", "organization"]:
    if _RANK.match(name):  # "LT. BRIAN GARRITY", "DR. …": a rank or title opens a person's name
        return "person"
    if _ORG_WORDS.search(name) or "&" in name or re.search(r"\bof\b", name, re.I):
        return "organization"
    return "person"


def _sides_from_lines(cells: list[_Cell]) -> tuple[list[_Cell], list[_Cell]] | None:
    """(plaintiff block, defendant block) as runs of caption lines, or None."""
    labels = [(i, _SIDE_LABEL.match(c.text)) for i, c in enumerate(cells)]
    labels = [(i, m.group("label").lower()) for i, m in labels if m]
    versus = next((i for i, c in enumerate(cells) if _VERSUS.match(c.text)), None)
    first_p = next((i for i, lab in labels if lab.startswith(("plaintiff", "petitioner"))), None)
    first_d = next((i for i, lab in labels if lab.startswith(("defendant", "respondent"))), None)
    if first_p is None or first_d is None or first_d < first_p:
        return None
    top = versus if versus is not None and versus < first_d else first_p
    start = 0
    for i in range(min(first_p, top) - 1, -1, -1):  # the party block starts after the court lines
        if _COURT.search(cells[i].text) or re.search(r"\b(?:DISTRICT|DIVISION)\s+OF\b", cells[i].text) and not cells[i].text.strip().endswith(","):
            start = i + 1
            break
    plaintiffs = cells[start:first_p]
    lo = (versus + 1) if versus is not None and first_p < versus < first_d else first_p + 1
    defendants = cells[lo:first_d]
    return plaintiffs, defendants


def _inline_sides(flat: str) -> tuple[str, str] | None:
    """"JOHN DOE, Plaintiff, v. ACME CORP., Defendant." on one or a few lines."""
    labels = list(_INLINE_LABEL.finditer(flat))
    p = next((m for m in labels if m.group("label").lower().startswith(("plaintiff", "petitioner"))), None)
    d = next((m for m in labels if p and m.start() > p.end() and m.group("label").lower().startswith(("defendant", "respondent"))), None)
    if p is None or d is None:
        return None
    middle = flat[p.end(): d.start()]
    v = _INLINE_VERSUS.search(middle)
    return flat[: p.start()], (middle[v.end():] if v else middle)


def read_caption(text: str, caption_end: int | None = None, body: str | None = None) -> Caption:
    """Parties, court and case number of the caption in ``text[:caption_end]``.

    ``caption_end`` (default: the first 4,000 characters) bounds the search; ``body`` is the text
    where the parties are introduced (default: the 12,000 characters after the caption), searched
    for the body's spelling of each name and the short names it defines.
    """
    end = min(len(text), caption_end if caption_end is not None else 4000)
    cap = Caption()
    cells = _cells(text, 0, end)
    # court: the first line naming a court, with the line after it when that continues it
    for i, c in enumerate(cells):
        line = c.text.strip()
        if _COURT.search(line) and not _DOCKET.search(line):
            court = line
            if i + 1 < len(cells) and re.match(r"^\s*(?:FOR\s+THE|OF\s+THE|,)", cells[i + 1].text):
                court += " " + cells[i + 1].text.strip()
            cap.court = " ".join(court.split())
            cap.court_span = _span_of(text, cap.court, c.start, end)
            break
    # case number: a labelled docket number ("Civil Action No. …"), else any docket-shaped number
    labelled = ((m, at) for c in cells for piece, at in ((c.right, c.right_start), (c.text, c.start))
                for m in [_CASE_LABEL.search(piece)] if m)
    hit = next(labelled, None)
    if hit:
        m, at = hit
        cap.case_number = m.group("num").rstrip(".,")
        cap.case_number_span = (at + m.start("num"), at + m.start("num") + len(cap.case_number))
    else:
        m = _DOCKET.search(text, 0, end)
        if m:
            cap.case_number, cap.case_number_span = m.group(0), (m.start(), m.end())
    # parties
    sides = _sides_from_lines(cells)
    if sides is not None:
        blocks = {"plaintiff": sides[0], "defendant": sides[1]}
        for side, lines in blocks.items():
            lo = lines[0].start if lines else 0
            hi = (lines[-1].start + len(lines[-1].text)) if lines else 0
            for name in _split_parties(lines):
                span = _span_of(text, name, lo, hi + 1)
                if span is None:
                    cap.notes.append(f"caption: party {name!r} not located in the text")
                    continue
                _add(cap, side, name, span)
    else:
        flat_end = min(end, 2500)
        inline = _inline_sides(text[:flat_end])
        if inline is None:
            cap.notes.append("caption: no plaintiff/defendant labels found; parties not read")
        else:
            for side, block in zip(("plaintiff", "defendant"), inline):
                for name in _split_inline(block):
                    span = _span_of(text, name, 0, flat_end)
                    if span and not _COURT.search(name):
                        _add(cap, side, name, span)
    if body is None:
        body = text[end: end + 12000]
    for party in cap.parties:
        _introduce(party, body)
    return cap


_CASE_TITLE = re.compile(
    r"^[ \t]*(?P<left>[A-Z][A-Z0-9 .,'’&\-]{2,160}?),?[ \t]+(?:(?P<label>PETITIONERS?|PLAINTIFFS?|APPELLANTS?)[ \t]+)?"
    r"v\.[ \t]+(?P<right>[A-Z][A-Z0-9 .,'’&\-]{2,160}?)[ \t]*(?:,[ \t]*(?:RESPONDENTS?|DEFENDANTS?|APPELLEES?)\.?)?[ \t]*$",
    re.M)
_ET_AL = re.compile(r",?\s+ET\s+AL\.?$", re.I)


def read_case_title(text: str, limit: int = 10000) -> Caption | None:
    """The parties of a case title printed on a line of its own in capitals, as opinions and
    briefs print it ("ABIGAIL NOEL FISHER, PETITIONER v. UNIVERSITY OF TEXAS AT AUSTIN ET AL.",
    wrapped over two lines or not), for a text without a complaint's caption; the first such title
    in the first ``limit`` characters that names a petitioner (or plaintiff), else the first one.
    The side's label ("Petitioner") becomes the party's short name. None when there is none."""
    lines = text[:limit].split("\n")
    found = []
    pos = 0
    for i, line in enumerate(lines):
        start, pos = pos, pos + len(line) + 1
        if " v. " not in line or sum(c.islower() for c in line) > 2:
            continue
        joined, end = line, pos
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if nxt.strip() and sum(c.islower() for c in nxt) == 0 and not joined.rstrip().endswith("."):
            joined, end = line + " " + nxt.strip(), pos + len(nxt) + 1
        m = _CASE_TITLE.match(joined)
        if m:
            found.append((m, start, end))
    if not found:
        return _mixed_case_title(text, min(limit, 4000))
    m, start, end = next((f for f in found if f[0].group("label")), found[0])
    cap = Caption()
    label = (m.group("label") or "").rstrip("S").capitalize()
    for side, group in (("plaintiff", "left"), ("defendant", "right")):
        name = _clean_party(_ET_AL.sub("", m.group(group)))
        span = _span_of(text, name, start, end)
        if not name or span is None:
            continue
        _add(cap, side, name, span)
        if side == "plaintiff" and label:
            cap.plaintiffs[-1].aliases.append(label)
    for party in cap.parties:
        _introduce(party, text[start: start + 40000])
        _head_noun_alias(party, text[end: end + 40000])
    return cap if cap.parties else None


_NAME_SIDE = r"[A-Z][\w.'’&\-]*(?:,?[ \t]+(?:[A-Z][\w.'’&\-]*|of|the|and|for|de|la|van|von|&)){0,10}"
# a title in the case's own spelling, on its first lines: "Linda Mys v. Michigan Department of State Police",
# or its sides on lines of their own, "v." between them
_MIXED_TITLE = re.compile(rf"^[ \t]*(?P<left>{_NAME_SIDE})[ \t]*(?:\n[ \t]*)?\bv(?:s)?\.[ \t]*(?:\n[ \t]*)?"
                          rf"(?P<right>{_NAME_SIDE})(?:,?[ \t]+et[ \t]+al\.?)?[ \t*]*$", re.M)
# the role an opinion gives a party: "Appellant Cheryl Bonenberger", "Plaintiff-Appellant", "Petitioner"
_ROLE_WORD = re.compile(r"\b(?P<label>(?:Plaintiff|Defendant)s?-Appell(?:ant|ee)s?|Appell(?:ant|ee)s?|Petitioners?|"
                        r"Respondents?|Plaintiffs?|Defendants?)[ \t]+(?P<name>[A-Z][\w'’\-]+(?:[ \t]+[A-Z][\w'’\-]+){0,3})")


def _mixed_case_title(text: str, limit: int) -> Caption | None:
    """The parties of a case title printed in the case's own spelling on the first lines of a text (an
    opinion as a reporter or a court's site prints it), with the role words the text gives them
    ("Appellant Cheryl Bonenberger": the plaintiff's short name "Appellant")."""
    titles = []
    for m in _MIXED_TITLE.finditer(text[:limit]):
        left, right = (_clean_party(m.group(g).rstrip("*")) for g in ("left", "right"))
        if left and right and len(left.split()) <= 10 and len(right.split()) <= 10:
            titles.append((m, left, right))
    # the fullest title: "Cheryl Bonenberger v. Plymouth Township et al." over a running head's "Bonenberger v. …"
    for m, left, right in sorted(titles, key=lambda t: -len((t[1] + " " + t[2]).split())):
        cap = Caption()
        for side, name, group in (("plaintiff", left, "left"), ("defendant", right, "right")):
            span = _span_of(text, name, m.start(group), m.end(group))
            if span is not None:
                _add(cap, side, name, span)
        if len(cap.parties) < 2:
            continue
        body = text[m.end(): m.end() + 40000]
        for party in cap.parties:
            _introduce(party, body)
            first = party.name.split()[0]
            for r in _ROLE_WORD.finditer(body[:20000]):
                if r.group("name").split()[0] == first or party.name.startswith(r.group("name")):
                    label = r.group("label").split("-")[-1].rstrip("s").capitalize()
                    if label.casefold() not in {a.casefold() for a in party.aliases}:
                        party.aliases.append(label)
                    break
            _head_noun_alias(party, body)
        return cap
    return None


_HEAD_NOUN = re.compile(r"\b(?:Department|Township|University|City|County|Company|Board|Commission|District|Agency|"
                        r"Authority|Hospital|College|School|Bank|Corporation)\b", re.I)


def _head_noun_alias(party: CaptionParty, body: str) -> None:
    """An organisation's head noun as its short name where the body writes it twice with "the" ("the
    Department", "the University")."""
    if party.kind != "organization":
        return
    for m in _HEAD_NOUN.finditer(re.sub(r"\bDep[’']t\b", "Department", party.name)):  # "Mich. Dep't of State Police"
        word = m.group(0).capitalize()
        if len(re.findall(rf"\b[Tt]he {word}\b", body)) >= 2 and word not in party.aliases:
            party.aliases.append(word)


def _add(cap: Caption, side: str, name: str, span: tuple[int, int]) -> None:
    party = CaptionParty(side=side, name=name, span=span, kind=_kind(name))
    (cap.plaintiffs if side == "plaintiff" else cap.defendants).append(party)


def _name_pattern(name: str) -> re.Pattern:
    """The caption name as the body may print it: any case, any whitespace, the middle initial or
    the company suffix optional ("KENDRA L. ASHWORTH" → "Kendra L. Ashworth", "Kendra Ashworth")."""
    core = re.split(r"\s+d/b/a\s+|\s*,?\s*\b(?:f/k/a|a/k/a)\b", name, maxsplit=1, flags=re.I)[0]
    words = core.replace(",", " , ").split()
    parts = []
    for w in words:
        if w == ",":
            parts.append(r"\s*,?")
            continue
        esc = re.escape(w.rstrip(".")) + (r"\.?" if w.endswith(".") else "")
        if re.fullmatch(r"[A-Za-z]\.?", w):  # a middle initial may be left out
            parts.append(rf"(?:\s+{esc}\.?)?")
        elif re.fullmatch(r"(?:inc|llc|corp|ltd|co|l\.l\.c|p\.c|n\.a|pllc|llp)\.?", w, re.I):
            parts.append(rf"(?:\s*,?\s+{esc}\.?)?")
        else:
            parts.append(rf"\s+{esc}" if parts else esc)
    return re.compile("".join(parts), re.I)


def _introduce(party: CaptionParty, body: str) -> None:
    """The body's spelling of ``party`` and the short names it defines where it introduces it: the
    first occurrence followed by a parenthesis of quoted terms, else the first occurrence."""
    found = None
    for m in _name_pattern(party.name).finditer(body):
        text = " ".join(m.group(0).split()).strip(" ,")
        if text.isupper() and len(text) > 4:  # the caption repeated, not the body's own spelling
            continue
        found = found or text
        d = _DEFINED.match(body[m.end(): m.end() + 260].lstrip(" ,\n\t"))
        if not d:
            continue
        definition = re.split(r"\b(?:together|collectively|and\s+all\s+of)\b", d.group("body"), maxsplit=1)[0]
        terms = [" ".join(q.group("term").split()).strip(" ,.") for q in _QUOTED.finditer(definition)]
        if terms:
            found = text
            for term in terms:
                if term and term.casefold() not in {a.casefold() for a in party.aliases}:
                    party.aliases.append(term)
            break
    party.body_name = found


__all__ = ["Caption", "CaptionParty", "read_caption", "read_case_title"]
