"""OCR cleanup, section detection and sentence segmentation with spans into the original text.

The input is the text of a filed complaint as OCR produces it: running page headers
("Case 1:21-cv-04417-JPO Document 1 Filed 05/17/21 Page 3 of 14"), page numbers, form feeds,
words hyphenated across line breaks, numbered paragraphs, a caption block and centered headings.

Nothing is deleted from the original: cleaning builds a reading text together with an offset
map (reading-text index -> original index), so every sentence gets the span of its first and
last character in the original text.

Pipeline: lines are classified (page furniture, blank, heading, paragraph text), a heading by its
form in any layout (``heading_strength``: capitals, Title Case, numbered, letter-spaced, with a
colon or an underline, standing alone); headings are mapped to section kinds (``heading_kind``: the
FACTS narrative and its lettered sub-headings, jurisdiction, parties, exhaustion, counts, prayer,
jury demand / signature); a heading that names no kind is a sub-heading of the section before it
unless its sentences say otherwise (``settled_kind``: a count that opens by incorporating what
precedes it, a lettered narrative right after the exhaustion); the caption ends at its title, the
first numbered paragraph, the preamble or the first recognized heading; body text under no
recognized heading stands in section ``unknown``; paragraph text is joined and de-hyphenated; a
sentence segmenter splits each paragraph.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable, Iterable

from argus.text.caption import read_case_title, read_caption
from argus.text.documents import Document, RawDocument, Section, Sentence, SectionKind, page_at, page_starts
from argus.text.opinions import document_kind, opinion_parts

# ----------------------------------------------------------------------------- page furniture

_PAGE_HEADER = re.compile(
    r"^\s*Case[:\s]+\S*\d+[:\-]\d{2}[-\s]?[a-z]{2}[-\s]?\d+\S*\s+.*\b(?:Document|Doc\.?|ECF)\b.*"
    r"(?:Page\s*\d+\s*of\s*\d+|Filed\s+\S+).*$",
    re.IGNORECASE,
)
# a slip opinion's running heads: "Cite as: 570 U. S. ____ (2013)  5", "2   FISHER v. UNIVERSITY OF TEXAS AT AUSTIN"
_RUNNING_HEAD = re.compile(r"^\s*(?:Cite\s+as:\s+\d+\s+U\.\s?S\.\s+\S+\s+\(\d{4}\)(?:\s+\d{1,4})?|"
                           r"\d{1,4}\s{2,}[A-Z][A-Z0-9 .,'’&\-]{2,80}\s+v\.\s+[A-Z][A-Z0-9 .,'’&\-]{2,80}|"
                           r"Opinion\s+of\s+the\s+Court|[A-Z]+,\s+(?:C\.\s*)?J\.,\s+(?:concurring|dissenting)[a-z ,]*)\s*$")
_PAGE_NUMBER = re.compile(r"^\s*(?:-\s*)?(?:Page\s+)?\d{1,4}(?:\s*-)?(?:\s+of\s+\d{1,4})?\s*$", re.IGNORECASE)
_PARA_NUMBER = re.compile(r"^(\s*)(\d{1,4})\.(\s+|$)")

# Heading keywords → section kind. Checked in order; the first match wins.
_HEADING_RULES: list[tuple[SectionKind, re.Pattern]] = [
    # a pro se complaint numbers its counts in words ("CLAIM ONE: ...", "Claim 2 - ...")
    ("count", re.compile(r"\b((?:COUNT|CLAIM)\s+(?:[IVXLC\d]+|ONE|TWO|THREE|FOUR|FIVE|SIX|SEVEN|EIGHT|NINE|TEN)|"
                         r"CAUSE\s+OF\s+ACTION|CLAIMS?\s+FOR\s+RELIEF)\b", re.I)),
    # ... and asks for relief in plain words ("VII. RELIEF", "WHAT PLAINTIFF ASKS THE COURT TO DO")
    ("prayer", re.compile(r"\b(PRAYER|WHEREFORE|RELIEF\s+REQUESTED|REQUEST\s+FOR\s+RELIEF|DEMAND\s+FOR\s+RELIEF)\b|"
                          r"^(?:RELIEF(?:\s+SOUGHT)?|WHAT\b.*\b(?:ASKS?|ASKING|WANTS?|SEEKS?)\b.*)$", re.I)),
    ("other", re.compile(r"\b(JURY\s+(TRIAL\s+)?DEMAND|DEMAND\s+FOR\s+(A\s+)?JURY|SIGNATURE|VERIFICATION|CERTIFICATE\s+OF\s+SERVICE|EXHIBITS?)\b", re.I)),
    ("facts", re.compile(r"\b(FACTS|FACTUAL|STATEMENT\s+OF\s+(THE\s+)?CLAIMS?|ALLEGATIONS\s+COMMON|SUBSTANTIVE\s+ALLEGATIONS)\b", re.I)),
    ("jurisdiction", re.compile(r"\b(JURISDICTION|VENUE)\b", re.I)),
    ("procedural", re.compile(r"\b(ADMINISTRATIVE|EXHAUSTION|PROCEDURAL\s+(HISTORY|REQUIREMENTS|PREREQUISITES)|PREREQUISITES|CONDITIONS?\s+PRECEDENT|EEOC|CHARGE\s+OF\s+DISCRIMINATION|CLASS\s+(ACTION\s+)?ALLEGATIONS|TIMELINESS)\b", re.I)),
    ("parties", re.compile(r"\bPARTIES\b", re.I)),
    ("intro", re.compile(r"\b(NATURE\s+OF\s+(THE\s+)?(ACTION|CASE|CLAIMS?)|INTRODUCTION|PRELIMINARY\s+STATEMENT|SUMMARY\s+OF\s+(THE\s+)?(ACTION|CLAIMS?|CASE)|OVERVIEW)\b", re.I)),
]
_BACKGROUND = re.compile(r"\bBACKGROUND\b", re.I)

INJECTION_PATTERNS = re.compile(
    r"(ignore|disregard|forget)\s+(all\s+|any\s+)?(the\s+)?(previous|prior|above|earlier)\s+(instructions|prompts?|directions)"
    r"|\b(system\s+prompt|you\s+are\s+(now\s+)?(an?\s+)?(ai|assistant|language\s+model|chatgpt))\b"
    r"|\b(output|respond\s+with|return|print)\s+(only\s+)?(the\s+following|this)\s+(json|text|string)\b",
    re.IGNORECASE,
)


# ----------------------------------------------------------------------------- data shapes


@dataclass
class _Line:
    start: int  # original offset of the first character of the line (after any form feed)
    end: int  # original offset of the line's end (the newline or end of text)
    text: str

    @property
    def stripped(self) -> str:
        return self.text.strip()


@dataclass
class _Paragraph:
    """A run of body lines between blank lines / headings / numbered starts."""

    lines: list[_Line]
    number: int | None = None
    number_end: int | None = None  # original offset after "12.   "


@dataclass
class _Block:
    kind: str  # "heading" | "paragraph"
    paragraph: _Paragraph | None = None
    heading: str = ""
    span: tuple[int, int] = (0, 0)


@dataclass
class CleanText:
    """Reading text with its map back into the original."""

    text: str
    offsets: list[int] = field(default_factory=list)

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        return self.offsets[start], self.offsets[end - 1] + 1


# ----------------------------------------------------------------------------- segmenters

Segmenter = Callable[[str], list[tuple[int, int]]]


def _spans_from_pieces(text: str, pieces: Iterable[str]) -> list[tuple[int, int]]:
    """Locate segmenter output pieces in ``text`` in order; trims whitespace."""
    spans: list[tuple[int, int]] = []
    pos = 0
    for piece in pieces:
        piece = piece.strip()
        if not piece:
            continue
        idx = text.find(piece, pos)
        if idx < 0:  # the segmenter normalized something: fall back to a whitespace-tolerant search
            m = re.search(r"\s*".join(re.escape(t) for t in piece.split()), text[pos:])
            if not m:
                continue
            idx, end = pos + m.start(), pos + m.end()
        else:
            end = idx + len(piece)
        spans.append((idx, end))
        pos = end
    return spans


@lru_cache(maxsize=1)
def _pysbd():
    import pysbd

    return pysbd.Segmenter(language="en", clean=False, char_span=False)


def segment_pysbd(text: str) -> list[tuple[int, int]]:
    return _spans_from_pieces(text, _pysbd().segment(text))


@lru_cache(maxsize=1)
def _nupunkt():
    import nupunkt

    return nupunkt


def segment_nupunkt(text: str) -> list[tuple[int, int]]:
    return [(a, b) for a, b in _nupunkt().sent_spans(text)]


_ABBREV = (
    r"Mr|Mrs|Ms|Dr|Jr|Sr|St|No|Nos|Inc|Corp|Co|Ltd|LLC|L\.L\.C|P\.C|U\.S|U\.S\.C|C\.F\.R|Gen|Stat|Ann|Admin|Code"
    r"|Cir|Ct|Supp|App|Cal|N\.Y|Pa|Ky|R\.I|v|vs|e\.g|i\.e|et\s+seq|etc|approx|Dept|Dep't|Assn|Ave|Blvd|Rd|Ste|Jan|Feb|Mar"
    r"|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec|Ex|Exh|Par|para|p|pp|§"
    r"|Sgt|Lt|Lieut|Det|Capt|Cpl|Ofc|Insp|Supt|Dep|Cmdr|Col|Maj|Hon|Prof"
)
_RULE_BOUNDARY = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+(?=[\"'“‘(\[]?[A-Z0-9])")
_ABBREV_END = re.compile(rf"(?:\b(?:{_ABBREV})|\b[A-Z])\.[\"'”’)\]]*$")


def segment_rules(text: str) -> list[tuple[int, int]]:
    """A transparent baseline: split after . ! ? unless the token is a known abbreviation or initial."""
    spans, start = [], 0
    for m in _RULE_BOUNDARY.finditer(text):
        head = text[start : m.start()]
        if _ABBREV_END.search(head.rstrip()):
            continue
        spans.append((start, m.start()))
        start = m.end()
    if text[start:].strip():
        spans.append((start, len(text.rstrip())))
    return [(a, b) for a, b in spans if text[a:b].strip()]


# A sentence of legal text ends where nupunkt ends it, repaired where legal writing misleads it. nupunkt learns the
# abbreviations of ranks, titles and citation words its model lacks through its own mechanism (its abbreviation
# set, in an instance of its own); eyecite, the Free Law Project's citation finder, marks the citations no boundary
# may cut. Every repair was measured on the annotated complaints (bench/measure_preprocess.py) and on the hand-marked
# boundaries of real opinions and complaint excerpts (datasets/boundaries, bench/boundaries.py).
_LEGAL_ABBREVIATIONS = frozenset((
    "mr", "mrs", "ms", "dr", "sgt", "lt", "lieut", "det", "cpt", "capt", "cpl", "maj", "col", "gen", "ofc", "insp",
    "cmdr", "supt", "dep", "hon", "rev", "prof", "gov", "sen", "rep", "atty", "asst", "mgr",  # before a name
    "cf", "cert", "id", "ibid", "n", "nn", "p", "pp", "fed", "civ", "crim", "evid", "juris", "intl", "pltf",
    "o.t",  # citation words
))
_MISSED_BOUNDARY = re.compile(r"(?<=[.!?])([\"”’)\]]*)\s+(?=[\"“(]?[A-Z])")
_CODE_ABBREV_END = re.compile(r"\b(?:Exec|Civ|Lab|Prac|Proc|Rev|Educ|Emp|Bus|Gov|Admin|Gen|Stat|Ann|Pub|Cons|Mun|Regs?|Ins|Fin|Jud|Penal|Code)\.$")
_CODE_CONTINUATION = re.compile(r"\s*(?:Law|Laws|Code|Stat|Ann|Prac|Proc|Reg|§|\d)")
_INITIAL_AFTER_REFERENCE = re.compile(r"\b(?:Exhibits?|Appendix|Attachment|and|Tab)\s+[A-Z]\.$")
# a title or rank always stands before a name ("Sgt. Mulqueen", "Det. Quintanilla", "Dep. Warden Brannigan"), a
# citation signal or "v." before what it cites ("Cf. David, 101 F.3d at 1354")
_TITLE_END = re.compile(r"\b(?:Mr|Mrs|Ms|Dr|Sgt|Lt|Lieut|Det|Capt|Cpt|Cpl|Ofc|Insp|Supt|Dep|Cmdr|Col|Maj|Gen|Hon|Rev|"
                        r"Prof|Gov|Sen|Rep|Atty|Asst|Mgr|Cf|cf|v|vs)\.$")
# a word of a rule's or a record's citation, which goes on ("Fed. R. Civ. P. 56", "Juris. Statement", "for Pltf.")
_CITATION_WORD_END = re.compile(r"\b(?:Fed|Civ|Crim|Evid|Bankr|Juris|Pltf|Intl|Univ|Dist|Cty|Educ|Supp)\.$")
# "Id." or "Ibid." alone is a citation sentence ("... the department. Id. Unlike La Penta, ..."); "Id. at 5" is not
_ID_SENTENCE = re.compile(r"(?<![\w.])(?:Id|Ibid)\.[\"”’)\]]*(?=\s+[\"“(]?[A-Z])")
# a footnote's call after a sentence's end ("plans.2 As for", "(1996).5 These", "Id., at 216.1 Aside")
_FOOTNOTE_CALL = re.compile(r"[.!?][\"”’)\]]*\d{1,2}(?=\s+[\"“(]?[A-Z])")
_FOOTNOTE_AFTER = re.compile(r"(?:[a-z\])”\"’]|\bat \d{1,3}|\bof \d{4})$")  # a word, a pin cite, a year: not "2.5"
# what ends the left part without ending a sentence: a paragraph number or a part's numeral ("thereby. 7. Defendant",
# "”. IV. CLASS ACTION"), an omission mark or a row of stars after the sentence ("work. [...] There", "* * *")
_ENUMERATOR_END = re.compile(r"(?:^|(?<=\s))(?:\d{1,3}|[IVXLC]{1,6})\.$")
_MARK_END = re.compile(r"(?:\[\.\.\.\]|\*(?:\s*\*)*)$")
_SENTENCE_END = re.compile(r"[.!?](?:\s?[\"”’)\]])*$")
_NOT_SENTENCE_END = re.compile(r"(?:\b(?:n|nn|No|Nos|p|pp|at|para)\.|\b[A-Z]\.|[§¶])$")
_PIN_CITE_END = re.compile(r"(?:\b(?:at|n|nn|p|pp|para|No|Nos)\.?|[§¶]|\bBrief\b[^.]{0,80})$")
_SPACED_INITIAL = re.compile(r"(?:^|\s)[A-Z] \.$")  # "Richard M . Reynolds"
_ABBREVIATION_END = re.compile(r"\b[A-Z][A-Za-z]{0,7}\.$")
_CITATION_HINT = re.compile(r"\b\d{1,4}\s+[A-Z][A-Za-z]*\.|§")
_QUOTE_MARK = re.compile(r"[“”\"]")
_CLOSING_MARKS = re.compile(r"[\"”’)\]]+")
_HEADING_SMALL_WORDS = frozenset("a an the and or of in on to for by at as with from v vs".split())


@lru_cache(maxsize=1)
def _legal_nupunkt():
    import nupunkt

    tokenizer = nupunkt.load_default_model()  # an instance of its own: the plain "nupunkt" segmenter stays as shipped
    for abbreviation in _LEGAL_ABBREVIATIONS:
        tokenizer.parameters.add_abbreviation(abbreviation)
    tokenizer.parameters.freeze_sets()
    return tokenizer


def _quotations(text: str) -> tuple[list[int], list[bool]]:
    """Where the text enters and leaves quotations: offsets and, from each on, whether it lies inside one.
    “ ” nest; a straight " opens after a space or bracket before a word and closes at the next one; a pair
    read half curly, half straight (OCR) opens and closes as a pair."""
    where, inside = [0], [False]
    curly, straight = 0, False
    for m in _QUOTE_MARK.finditer(text):
        i, ch = m.start(), m.group()
        if ch == "“":
            curly += 1
        elif ch == "”":
            if curly:
                curly -= 1
            else:  # a straight opening closed by a curly mark (an OCR reading mixes them)
                straight = False
        elif straight:
            straight = False
        elif curly and (i + 1 == len(text) or text[i + 1].isspace() or text[i + 1] in ".,;:!?)]"):
            curly -= 1  # “… closed by a straight mark: OCR reads one of a pair curly, the other straight
        elif (i == 0 or text[i - 1].isspace() or text[i - 1] in "([{—–-") \
                and i + 1 < len(text) and not text[i + 1].isspace():
            straight = True
        now = bool(curly or straight)
        if now != inside[-1]:
            where.append(i + 1)
            inside.append(now)
    return where, inside


def _citation_spans(text: str, near: int | None = None) -> list[tuple[int, int]]:
    """The citations eyecite finds (in the 800 characters around ``near`` where given): volume, reporter and
    page of a case, a statute, a journal, an "Id." or a short cite; a case's name with it where eyecite reads
    the name right before ("Seattle School Dist. No. 1, 551 U. S. 701")."""
    from eyecite import get_citations

    offset = 0 if near is None else max(0, near - 400)
    if near is not None:
        text = text[offset : near + 400]
    out = []
    for c in get_citations(text):
        a, b = c.span()
        start = getattr(c, "full_span_start", None)
        defendant = getattr(c.metadata, "defendant", None)
        if start is not None and defendant and a - start < 200 \
                and text[:a].rstrip().rstrip(",").endswith(defendant.strip()):
            a = start
        out.append((offset + a, offset + b))
    return out


def _heading_like(s: str) -> bool:
    """Words that read as a heading: each but the small ones capitalized, a dozen at most ("B. Defendants")."""
    words = [w for w in re.findall(r"[A-Za-z][\w’'-]*", s) if w.lower() not in _HEADING_SMALL_WORDS]
    return 0 < len(words) <= 12 and all(w[0].isupper() for w in words)


def segment_legal(text: str) -> list[tuple[int, int]]:
    """nupunkt, repaired for legal writing: pleadings, opinions and their citations.

    nupunkt (with the ranks, titles and citation words of ``_LEGAL_ABBREVIATIONS``) proposes the ends; a
    boundary it missed after a closing parenthesis or quote, a reference letter ("attached as Exhibit B.
    Ms. Ashworth"), a lone "Id." or a footnote's call ("plans.2 As") is added. Each end then takes the closing
    quotes that follow it (also after a space: "legitimate.’ ”"), moves before a paragraph number or a part's
    numeral that opens the next sentence ("thereby. 7. Defendant"), and is dropped (1) inside a quotation, which
    stays one sentence however many it quotes ("He said, \"Stop. Now.\""), (2) after a title, rank or citation
    signal ("Det. Quintanilla", "Cf. David"), an initial ("Richard M . Reynolds") or a code's abbreviation
    ("Tex. Educ. Code"), (3) inside a citation eyecite finds ("Seattle School Dist. No. 1, 551 U. S. 701"),
    (4) after a paragraph number that follows a heading or a page's header.
    """
    from bisect import bisect_right

    tokenizer = _legal_nupunkt()
    n = len(text.rstrip())
    cuts: set[int] = set()
    for _, (a, b) in tokenizer.tokenize_with_spans(text):
        end = a + len(text[a:b].rstrip())
        start = a
        for m in _MISSED_BOUNDARY.finditer(text, a, end):
            left = text[start : m.start() + len(m.group(1))].rstrip()
            if len(left) < 12:
                continue
            if _ABBREV_END.search(left) and not _INITIAL_AFTER_REFERENCE.search(left):
                continue
            last = re.search(r"(\S+)\.[\"”’)\]]*$", left)
            if last and last.group(1).lower().lstrip("(“\"‘[") in _LEGAL_ABBREVIATIONS:
                continue
            cuts.add(start + len(left))
            start = m.end()
        if 0 < end < n:
            cuts.add(end)
    cuts.update(m.end() for m in _ID_SENTENCE.finditer(text))
    cuts.update(m.end() for m in _FOOTNOTE_CALL.finditer(text)
                if _FOOTNOTE_AFTER.search(text, max(0, m.start() - 12), m.start()))

    quote_at, quoted = _quotations(text)
    cites: list[tuple[int, int]] | None = None
    hint: bool | None = None
    ends: list[int] = []
    for e in sorted(cuts):
        prev = ends[-1] if ends else 0
        m = _CLOSING_MARKS.match(text, e)  # the closing quotes stay with the sentence
        if m:
            e = m.end()
        inside = quoted[bisect_right(quote_at, e) - 1]
        if text.startswith(" ”", e) or (inside and text.startswith(' "', e)):  # "legitimate.’ ”"
            if e + 2 >= len(text) or text[e + 2].isspace():
                e += 2
        if e >= n or text[e] in ".,;:":  # '(... such a someone.").': the sentence goes on
            continue
        left = text[prev:e].rstrip()
        m = _ENUMERATOR_END.search(left) or _MARK_END.search(left)
        if m:
            before = left[: m.start()].rstrip()
            if before and _SENTENCE_END.search(before) and not _NOT_SENTENCE_END.search(before):
                e = prev + len(before)  # "thereby. | 7. Defendant", "work. | [...] There"
            elif m.re is _MARK_END:
                if not before:
                    continue  # the mark after a sentence that already ended stays with it
            elif _PIN_CITE_END.search(before):
                pass  # "Id., at 333. | It is", "and n. 4. | Blacks"
            elif not before or re.search(r"(?:^|\s)(?:\d+|[-–])$", before):
                continue  # "Page 2 of 29 3 9. Defendant": a number after a page's header
            elif m.re is _ENUMERATOR_END and not m.group(0)[0].isdigit():
                pass  # "under Title VII. | Andrews"
            elif re.search(r"\b[A-Z]{2,}$", before) or _heading_like(before):
                continue  # "B. Defendants 15. Chemours is"
        if e <= prev or quoted[bisect_right(quote_at, e) - 1]:
            continue
        left = text[prev:e].rstrip()
        if _TITLE_END.search(left) or _SPACED_INITIAL.search(left) or _CITATION_WORD_END.search(left):
            continue
        if _CODE_ABBREV_END.search(left) and _CODE_CONTINUATION.match(text, e):
            continue
        if _ABBREVIATION_END.search(left):
            if hint is None:
                hint = bool(_CITATION_HINT.search(text))
            if hint and cites is None:  # once a paragraph; a window around the end in a very long one
                cites = _citation_spans(text) if len(text) <= 20_000 else None
            if hint and any(a < e < b for a, b in (cites if cites is not None else _citation_spans(text, e))):
                continue
        ends.append(e)
    spans, start = [], 0
    for e in ends + [len(text)]:
        a = start + len(text[start:e]) - len(text[start:e].lstrip())
        if text[a:e].strip():
            spans.append((a, e))
        start = e
    return spans


# what opens a citation sentence: a signal, "Id.", a reference to the record or to the opinion's other parts
_CITATION_OPENING = re.compile(
    r"[\"“(\[]?(?:(?:See|But\s+see|Cf\.|But\s+cf\.|Accord|Compare|Contra)"
    r"(?:,?\s+(?:e\.g\.,|also|generally))?(?=[\s,])|"
    r"(?:Id|Ibid)\.(?=[\s,]|$)|(?:Ante|Post|Supra|Infra),\s+at\b|Pet\.\s+for\s+Cert\.|Tr\.\s+of\s+Oral\s+Arg\.|"
    r"Brief\s+for\b|(?:Supp\.\s+)?App\.\s+\d)")
_CITATION_LETTERS = re.compile(r"[A-Za-z0-9]")
_CASE_NAME_BEFORE = re.compile(r"[A-Z][^.;:()]{0,80},\s*$")
_PARENTHETICAL = re.compile(r"\([^()]*\)")


def citation_sentence(text: str) -> bool:
    """Whether a sentence is a citation rather than a statement of what happened: it opens with a citation
    signal, "Id." or a reference to the record ("See Faragher v. City of Boca Raton, 524 U.S. 775, 807 (1998).",
    "Id. at 5.", "Cf. David, 101 F.3d at 1354.", "Tr. of Oral Arg. 8–9."), or the citations eyecite finds in
    it, with their case names, make up most of it ("Andrews, 895 F.2d at 1486.", "West v. Atkins, 487 U.S. 42,
    49 (1988)."). Such a sentence states no fact."""
    s = text.strip()
    if not s:
        return False
    if _CITATION_OPENING.match(s):
        return True
    if not _CITATION_HINT.search(s) and "supra" not in s:
        return False
    from eyecite import get_citations

    covered = bytearray(len(s))
    first = len(s)
    for c in get_citations(s):
        try:
            a, b = c.full_span()
        except Exception:  # a citation eyecite could not place fully: its core
            a, b = c.span()
        a, b = max(0, a), min(len(s), b)
        covered[a:b] = b"\x01" * (b - a)
        first = min(first, a)
    if first == len(s):  # eyecite finds no citation in it
        return False
    name = _CASE_NAME_BEFORE.match(s[:first])  # "Bakke, " before "438 U. S., at 315"
    if name:
        covered[: name.end()] = b"\x01" * name.end()
    for m in _PARENTHETICAL.finditer(s):  # "(separate opinion)", "(3d Cir. 1997)"
        covered[m.start() : m.end()] = b"\x01" * (m.end() - m.start())
    letters = [m.start() for m in _CITATION_LETTERS.finditer(s)]
    return bool(letters) and sum(covered[i] for i in letters) >= 0.6 * len(letters)


SEGMENTERS: dict[str, Segmenter] = {
    "legal": segment_legal,
    "nupunkt": segment_nupunkt,
    "pysbd": segment_pysbd,
    "rules": segment_rules,
}
DEFAULT_SEGMENTER = "legal"


# ----------------------------------------------------------------------------- line analysis


def _lines(text: str) -> list[_Line]:
    out, pos = [], 0
    for raw in text.split("\n"):
        start = pos
        body = raw
        # form feeds start a new page: skip them (they stay in the original text)
        while body.startswith("\f"):
            body = body[1:]
            start += 1
        body = body.replace("\f", " ").replace("\r", "")
        out.append(_Line(start, pos + len(raw), body))
        pos += len(raw) + 1
    return out


def is_page_furniture(line: str) -> bool:
    s = line.strip()
    return bool(s) and (bool(_PAGE_HEADER.match(s)) or bool(_PAGE_NUMBER.match(s)) or bool(_RUNNING_HEAD.match(s)))


def _upper_ratio(s: str) -> float:
    letters = [c for c in s if c.isalpha()]
    if not letters:
        return 0.0
    return sum(c.isupper() for c in letters) / len(letters)


# Words a Title Case heading leaves in lower case ("Statement of the Facts", "Plaintiff v. Acme").
_SMALL_WORDS = frozenset("a an the and or nor but of in on to for by at as with from into upon under v vs et al per via "
                         "its his her their".split())
_NUMERAL = re.compile(r"^(?:(?P<n>[IVXLC]{1,6}|[A-Z]|\d{1,2})[.)]|\((?:[A-Za-z]|\d{1,2}|[ivx]{1,4})\))\s+")
_LETTER = re.compile(r"^[A-H][.)]\s")  # a lettered sub-heading: "A. Plaintiff's Employment"
_RULE_LINE = re.compile(r"^[-_=*~.\s]{3,}$")  # an underline or a rule between parts
_LETTER_SPACED = re.compile(r"^(?:[A-Za-z&][ \t]{1,4}){2,}[A-Za-z][.:]?$")  # "F A C T S", "S T A T E M E N T   O F …"
_COLUMN_LINE = re.compile(r"\s{2,}[)§|]\s|\s{2,}[)§|]$")  # a caption's column separator
_NOT_HEADING = re.compile(r"^(?:Dated?|Respectfully|By|/s/|s/|Tel(?:ephone)?|Phone|Fax|E-?mail|Attorneys?\s+for|"
                          r"Counsel\s+for|Of\s+Counsel|cc|Re|From|To|Subject|Sent|Signed|Sincerely)\b", re.I)
_WORD = re.compile(r"[A-Za-z][\w'’\-]*")
_ET_SEQ_END = re.compile(r"\bet\s+seq\.$", re.I)


def _title_case(s: str, strict: bool = False) -> bool:
    """Whether the words of ``s`` other than small words start with a capital, all but one at most
    (and three in four at least; all of them when ``strict``): "Statement of Facts", "Plaintiff's
    Employment and Strong Performance", "B. Plaintiff Complains to HR"."""
    words = [w for w in _WORD.findall(s) if w.lower().rstrip(".") not in _SMALL_WORDS and len(w) > 1]
    lower = sum(not w[0].isupper() for w in words)
    return bool(words) and lower <= (0 if strict else 1) and lower <= len(words) / 4


def heading_strength(line: str, continuation: bool = False) -> int:
    """How surely a line is (part of) a heading by its form, whatever its case or place on the line.

    0: no heading (a sentence, a numbered paragraph, a caption column, a signature line);
    1: a heading when it stands alone, a blank line or a numbered paragraph after it (Title Case
    "Statement of Facts", a lettered "B. Plaintiff complains to HR");
    2: a heading even when text follows on the next line (capitals, letter-spaced "F A C T S",
    numbered "IV. Factual Allegations", a trailing colon "Statement of Claim:").
    ``continuation``: the line continues a heading begun above (its first word may be small).
    """
    s = line.strip()
    if not s or len(s) > 220 or _COLUMN_LINE.search(s) or _NOT_HEADING.match(s):
        return 0
    m = _NUMERAL.match(s)
    rest = s[m.end():] if m else s
    letters = list(filter(str.isalpha, rest))
    if len(letters) + (sum(map(str.isalpha, s[: m.end()])) if m else 0) < 3:
        return 0
    if _LETTER_SPACED.match(s):
        return 2
    if not m and s[0].isdigit():  # a street address, a statute, a date
        return 0
    arabic = bool(m and (m.group("n") or "").isdigit())
    if len(letters) >= 3 and sum(map(str.isupper, letters)) >= 0.85 * len(letters):  # capitals
        return 0 if s.endswith((",", ";")) or (arabic and len(s) > 120) else 2
    # a sentence ends so, not a count heading's statute ("Count I: ... 43 P.S. § 1421 et seq.")
    if (s.endswith((".", ";", ",", "!", "?")) and not _ET_SEQ_END.search(s)) or len(_WORD.findall(rest)) > 24:
        return 0
    # an address, a date, a telephone number; not a lettered heading ("D. The Noose in Truck 14")
    if s[-1].isdigit() and heading_kind(s, None) is None and not (m and not arabic):
        return 0
    first = _WORD.search(rest)
    # "12." numbers paragraphs: it numbers a heading only in full Title Case ("4. Factual Allegations")
    title = _title_case(rest, strict=arabic) and first is not None and (continuation or first.group(0)[0].isupper())
    if title:
        return 2 if (m and not arabic) or s.endswith(":") else 1
    if m and not arabic and len(s) < 160:  # a lettered or Roman sub-heading in sentence case
        return 1
    return 0


def _despace(heading: str) -> str:
    """A letter-spaced heading as words ("F A C T S" → "FACTS"); other headings unchanged."""
    if not _LETTER_SPACED.match(heading.strip()):
        return heading
    return " ".join(w.replace(" ", "").replace("\t", "") for w in re.split(r"\s{2,}", heading.strip()))


def heading_kind(heading: str, current: SectionKind | None) -> SectionKind | None:
    """Map a heading to a section kind; ``None`` when unrecognized.

    The heading is read in any case, letter-spaced ("F A C T S"), with its numeral ("IV.") and with
    words that PDF extraction split ("ALLEGATI ONS"). A lettered sub-heading ("B. The EEOC Charge")
    under the FACTS stays there unless it opens counts, the prayer or the closing parts.
    """
    h = _repair_split_words(re.sub(r"\s+", " ", _despace(heading)).strip())
    h = _NUMERAL.sub("", h, count=1)
    kind = _heading_rule(h)
    if current == "facts" and _LETTER.match(heading.strip()) and kind not in ("count", "prayer", "other"):
        return None
    return kind


def _heading_rule(h: str) -> SectionKind | None:
    head_part = re.split(r"\s[-–—:]\s|:\s", h, maxsplit=1)[0]
    for kind, rx in _HEADING_RULES:
        if rx.search(head_part):
            return kind
    if _BACKGROUND.search(head_part):
        return "facts"
    for kind, rx in _HEADING_RULES:
        if rx.search(h) and kind in ("count", "facts"):
            return kind
    return None


def _heading_words() -> frozenset[str]:
    words = set()
    for _, rx in _HEADING_RULES:
        words.update(w.lower() for w in re.findall(r"[A-Z]{3,}", rx.pattern))
    return frozenset(words | {"background", "allegations", "substantive"})


_HEADING_WORDS = _heading_words()


def _repair_split_words(h: str) -> str:
    """Join the pieces of a heading word that PDF extraction split with a space ("ALLEGATI ONS")."""
    words = h.split(" ")
    out: list[str] = []
    for w in words:
        core = w.rstrip(".:,;")  # the second piece may carry the heading's punctuation ("FAC TS: A. ...")
        if out and out[-1].isalpha() and core.isalpha() and (out[-1] + core).lower() in _HEADING_WORDS \
                and not (out[-1].lower() in _HEADING_WORDS and core.lower() in _HEADING_WORDS):
            out[-1] += w
        else:
            out.append(w)
    return " ".join(out)


# A count opens by incorporating what precedes it, in a lawyer's or in plain words ("Plaintiff repeats and
# realleges each allegation above", "incorporates paragraphs 1 through 30", "repeats everything written above").
_INCORPORATION = re.compile(r"^[^.]{0,80}?\b(?:repeats?|re-?alleges?|incorporates?|restates?|adopts?|re-?avers?|reasserts?)\b"
                            r"[^.]{0,100}?\b(?:above|foregoing|preceding|paragraphs?\s+\d+|by\s+reference)\b", re.I)
# What a sub-heading of the narrative names: someone's story (a possessive), work, an event, a date.
_STORY_HEADING = re.compile(
    r"\w['’]s?(?:\s|$)|\b(?:employ\w*|hir(?:e|es|ed|ing)|years?|tenure|career|job|work\w*|harass\w*|complain\w*|"
    r"terminat\w*|fir(?:es|ed|ing)|discharg\w*|retaliat\w*|promot\w*|demot\w*|disciplin\w*|leave|accommodat\w*|"
    r"begins?|began|arriv\w*|escalat\w*|incidents?|(?:19|20)\d\d|January|February|March|April|May|June|July|August|"
    r"September|October|November|December)\b", re.I)
# What the parts before the narrative say: the charge and its notice, statutes, residence, corporate form.
_PLEADING_SENTENCE = re.compile(
    r"\bcharge\s+(?:of|with|no\b|number)|\b(?:filed|file|filing)\s+(?:a|an|her|his|their|the|this)\s+(?:[\w-]+\s+){0,3}"
    r"charge\b|\b(?:EEOC|right[- ]to[- ]sue|exhaust\w*|administrative\w*|timely|jurisdiction|venue|U\.S\.C|resides?|"
    r"resident|citizen|principal\s+place\s+of\s+business|corporation|organized\s+under|within\s+the\s+meaning|"
    r"at\s+all\s+(?:relevant|material)\s+times|this\s+action|prerequisites?|conditions?\s+precedent)\b|§", re.I)


def settled_kind(heading: str, inherited: SectionKind, sentences: list[str]) -> SectionKind:
    """The kind of a section whose heading names none, read off its heading's words and its sentences.

    Such a section inherits the kind of the one before it, as a sub-heading does, except (1) where its
    first sentence incorporates what precedes it: counts open that way, whatever their heading says;
    (2) where a lettered sub-heading comes after the intro, jurisdiction, parties or exhaustion and
    both its words (someone's story, work, an event, a date: "A. Plaintiff's Employment at Acme") and
    its sentences (fewer than a third read like a charge, a statute or a party's residence) tell the
    narrative: complaints that give the FACTS no heading of their own start it that way.
    """
    if not sentences:
        return inherited
    if inherited != "count" and _INCORPORATION.search(sentences[0]):
        return "count"
    if inherited in ("intro", "jurisdiction", "parties", "procedural") and _LETTER.match(heading.strip()) \
            and _STORY_HEADING.search(_NUMERAL.sub("", heading.strip(), count=1)) \
            and 3 * sum(bool(_PLEADING_SENTENCE.search(s)) for s in sentences) < len(sentences):
        return "facts"
    return inherited


# ----------------------------------------------------------------------------- blocks


def _blocks(lines: list[_Line]) -> list[_Block]:
    """Group body lines into headings and paragraphs, ignoring page furniture.

    A paragraph continues across a page break: blank lines that only surround page furniture
    do not end it.
    """
    content: list[tuple[_Line, bool, bool]] = []  # (line, after a real blank line, after a page break)
    gap: list[bool] = []  # a blank line before the line, page break or not: what a heading stands alone by
    blank_pending = any_blank = False
    furniture_since_text = False
    for ln in lines:
        s = ln.stripped
        if not s or _RULE_LINE.match(s):  # an underline or a rule reads as a blank line
            blank_pending = any_blank = True
            continue
        if is_page_furniture(s):
            furniture_since_text = True
            blank_pending = False
            continue
        # Blank lines that surround page furniture belong to the page break, not to the text.
        content.append((ln, blank_pending and not furniture_since_text, furniture_since_text))
        gap.append(any_blank)
        blank_pending = any_blank = False
        furniture_since_text = False

    blocks: list[_Block] = []
    i = 0
    cur: _Paragraph | None = None

    def flush():
        nonlocal cur
        if cur and cur.lines:
            blocks.append(_Block("paragraph", paragraph=cur, span=(cur.lines[0].start, cur.lines[-1].end)))
        cur = None

    while i < len(content):
        ln, real_blank, after_break = content[i]
        s = ln.stripped
        next_blank = i + 1 >= len(content) or gap[i + 1]
        starts_block = real_blank or cur is None or (after_break and _ends_sentence(cur))
        strength = 0
        if starts_block:
            strength = heading_strength(s)
        elif _ends_sentence(cur) and s[0].isalnum() and not s.endswith((".", ")", "\"", "”")):
            # text taken from a PDF has no blank lines: a heading may follow a sentence's end directly,
            # in Title Case only before a numbered paragraph
            strength = heading_strength(s)
            if strength == 1 and not (i + 1 < len(content) and _PARA_NUMBER.match(content[i + 1][0].text)):
                strength = 0
        if strength:
            # Gather heading continuation lines (wrapped headings) until a blank line.
            heading_lines = [ln]
            j = i + 1
            while j < len(content) and not content[j][1] and heading_strength(content[j][0].stripped, continuation=True) \
                    and not _PARA_NUMBER.match(content[j][0].text):
                heading_lines.append(content[j][0])
                j += 1
            after = content[j][0].stripped if j < len(content) else ""
            block_ends = j >= len(content) or gap[j] or _PARA_NUMBER.match(content[j][0].text)
            # a strong heading may run straight into its first paragraph (text taken from a PDF)
            runs_on = strength == 2 and len(heading_lines) == 1 and (len(s) <= 60 or s.endswith(":")) \
                and bool(re.match(r"[\"“(\[]?[A-Z0-9]", after))
            if block_ends or next_blank or runs_on:
                flush()
                text = " ".join(h.stripped for h in heading_lines)
                blocks.append(_Block("heading", heading=text, span=(heading_lines[0].start, heading_lines[-1].end)))
                i = j
                continue
        m = _PARA_NUMBER.match(ln.text)
        if m and (cur is None or real_blank or _ends_sentence(cur)):  # a numbered paragraph starts
            flush()
            cur = _Paragraph([ln], number=int(m.group(2)), number_end=ln.start + m.end())
        elif real_blank or cur is None:
            flush()
            cur = _Paragraph([ln])
        else:
            cur.lines.append(ln)
        i += 1
    flush()
    return blocks


def _ends_sentence(p: _Paragraph) -> bool:
    last = p.lines[-1].stripped
    return bool(re.search(r"[.!?:;\"”')]$", last))


def _clean_paragraph(p: _Paragraph, original: str) -> CleanText:
    """Join a paragraph's lines into reading text: de-hyphenate, collapse whitespace, map offsets."""
    chars: list[str] = []
    offs: list[int] = []
    for k, ln in enumerate(p.lines):
        begin = ln.start
        if k == 0 and p.number_end is not None:
            begin = p.number_end
        # leading indentation
        line_text = original[begin : ln.end].replace("\r", "")
        lead = len(line_text) - len(line_text.lstrip())
        begin += lead
        seg = original[begin : ln.end].rstrip()
        if not seg:
            continue
        if chars:
            if chars[-1] == "-" and len(chars) >= 2 and chars[-2].isalnum() and seg[0].isalnum():
                chars.pop()
                offs.pop()
            else:
                chars.append(" ")
                offs.append(offs[-1] + 1)
        for j, c in enumerate(seg):
            if c in "\t\f\r":
                c = " "
            if c == " " and chars and chars[-1] == " ":
                continue
            chars.append(c)
            offs.append(begin + j)
    return CleanText("".join(chars), offs)


_TITLE_LINE = re.compile(r"^(?:(?:CIVIL|CLASS)\s+ACTION\s+)?(?:(?:FIRST|SECOND|THIRD)\s+)?(?:VERIFIED\s+|AMENDED\s+)*"
                         r"(?:COMPLAINT|PETITION)\b", re.I)
_PREAMBLE = re.compile(r"\b(?:alleges?|avers?|states?|complains?)\b[^.]{0,120}?\b(?:as\s+follows|upon\s+(?:personal\s+)?"
                       r"knowledge|on\s+information\s+and\s+belief)", re.I)
_CAPTION_CUES = (
    re.compile(r"\b(?:DISTRICT|SUPERIOR|SUPREME|CIRCUIT|COUNTY)\s+COURT\b|\bCOURT\s+OF\b", re.I),
    re.compile(r"^\s*(?:v\.?|vs\.?|versus|-\s*against\s*-)\s*$|\S\s+v\.\s+\S", re.I | re.M),
    re.compile(r"(?:^|\s)(?:Plaintiffs?|Defendants?|Petitioners?|Respondents?)[.,;]?\s*(?:\)|$)", re.I | re.M),
    re.compile(r"\b(?:Case|Civil\s+Action|Docket|Index|Cause)\s*(?:No|Number|#)|\b\d{1,2}:\d{2}-?[a-z]{2}-?\d{3,6}", re.I),
)


def _caption_end(blocks: list[_Block], text: str) -> int:
    """Index of the first block of the body; 0 when the text opens with no caption.

    The caption ends at the title ("COMPLAINT AND JURY DEMAND", on a line of its own), the first
    numbered paragraph, the preamble ("Plaintiff …, by counsel, alleges as follows") or the first
    recognized heading, whichever comes first, and only when what precedes reads as a caption
    (at least two of: a court, "v.", a party label, a case number).
    """
    end = None
    for k, b in enumerate(blocks):
        if b.kind == "heading":
            if _TITLE_LINE.match(_despace(b.heading)):
                end = k + 1
                break
            if heading_kind(b.heading, None) is not None:
                end = k
                break
        elif b.paragraph is not None and (b.paragraph.number is not None or _PREAMBLE.search(
                " ".join(ln.stripped for ln in b.paragraph.lines[:4]))):
            end = k
            break
    if not end:
        return 0
    opening = text[: blocks[end].span[0] if end < len(blocks) else len(text)]
    return end if sum(bool(rx.search(opening)) for rx in _CAPTION_CUES) >= 2 else 0


# ----------------------------------------------------------------------------- public API


def _opinion_sections(text: str, sections: list[Section], sentences: list[Sentence]) -> list[Section]:
    """An opinion's sections: the parts that narrate what happened (``argus.text.opinions.opinion_parts``)
    are ``facts``, the rest (syllabus, discussion, separate opinions, footnotes) ``other``; the sections
    as read where the opinion shows no narrative part."""
    parts = opinion_parts(text)
    if not parts:
        return sections
    out: list[Section] = []
    pos = 0
    for p in parts:
        if p.start > pos:
            out.append(Section(heading="", kind="other", span=(pos, p.start)))
        out.append(Section(heading=p.heading, kind="facts", span=(p.start, p.end)))
        pos = p.end
    if pos < len(text):
        out.append(Section(heading="", kind="other", span=(pos, len(text))))
    for s in sentences:
        sec = next((x for x in out if x.span[0] <= s.span[0] < x.span[1]), out[-1])
        s.section, s.section_heading = sec.kind, sec.heading
        if s.section == "facts" and _COURT_VOICE.search(_QUOTED.sub("", s.text)):  # the court speaking: "We will affirm"
            s.section = "other"
    return out


# the court speaks in the first person plural; what it says is its ruling, not what happened
_COURT_VOICE = re.compile(r"\b(?:[Ww]e|[Oo]ur|[Uu]s)\b|\b[Tt]his\s+[Cc]ourt\b")
_QUOTED = re.compile(r"[\"“][^\"“”]*[\"”]")


def find_injection_sentences(sentences: list[Sentence]) -> list[str]:
    """Ids of sentences that look like instructions aimed at a language model."""
    return [s.id for s in sentences if INJECTION_PATTERNS.search(s.text)]


def preprocess(raw: RawDocument, segmenter: str | Segmenter = DEFAULT_SEGMENTER) -> Document:
    """Turn a raw complaint text into a ``Document`` with sections and spanned sentences."""
    seg = SEGMENTERS[segmenter] if isinstance(segmenter, str) else segmenter
    text = raw.text
    blocks = _blocks(_lines(text))
    warnings = list(raw.warnings)

    first_body = _caption_end(blocks, text)
    sections: list[Section] = []
    sentences: list[Sentence] = []
    current: SectionKind = "unknown"
    current_heading = ""
    sec_start = 0
    saw_heading = False
    inherited_from: int | None = None  # the first sentence of the open section when its heading named no kind

    def settle():
        """Give the open section whose heading named no kind the kind its words and sentences say."""
        nonlocal current
        if inherited_from is None:
            return
        kind = settled_kind(current_heading, current, [s.text for s in sentences[inherited_from:]])
        if kind != current:
            sections[-1].kind = current = kind
            for s in sentences[inherited_from:]:
                s.section = kind

    def open_section(kind: SectionKind, heading: str, start: int):
        nonlocal current, current_heading, sec_start
        if sections:
            sections[-1] = sections[-1].model_copy(update={"span": (sections[-1].span[0], start)})
        sections.append(Section(heading=heading, kind=kind, span=(start, len(text))))
        current, current_heading, sec_start = kind, heading, start

    if first_body > 0:
        sections.append(Section(heading="", kind="caption", span=(0, len(text))))

    for k, b in enumerate(blocks):
        if k < first_body:
            continue
        if b.kind == "heading":
            settle()
            # Unrecognized: a sub-heading of the current section (e.g. "A. The Harassment Begins"), unless
            # its sentences say otherwise (``settled_kind``).
            named = heading_kind(b.heading, current)
            saw_heading = True
            open_section(named or current, b.heading, b.span[0])
            inherited_from = None if named else len(sentences)
            continue
        if not sections or sections[-1].kind == "caption":  # body text before any heading
            open_section(current, current_heading, b.span[0])
        para = b.paragraph
        assert para is not None
        clean = _clean_paragraph(para, text)
        if not clean.text.strip():
            continue
        for a, z in seg(clean.text):
            while a < z and clean.text[a].isspace():
                a += 1
            while z > a and clean.text[z - 1].isspace():
                z -= 1
            if z <= a:
                continue
            span = clean.original_span(a, z)
            sentences.append(
                Sentence(
                    id=f"S{len(sentences) + 1}",
                    text=clean.text[a:z],
                    span=span,
                    section=current,
                    section_heading=current_heading,
                    paragraph=para.number,
                )
            )
    settle()

    if raw.metadata.get("pages") or "\f" in text:  # a paged source: each sentence's page, for citing the filing
        starts = page_starts(text)
        for s in sentences:
            s.page = page_at(starts, s.span[0])
    pleading = first_body > 0 or sum(b.paragraph is not None and b.paragraph.number is not None for b in blocks) >= 3
    kind = document_kind(text, pleading)
    if kind == "opinion":
        sections = _opinion_sections(text, sections, sentences)
    facts = [s.id for s in sentences if s.section == "facts"]
    found = bool(facts)
    if not found:
        excluded = {"caption", "jurisdiction", "procedural", "count", "prayer", "other"}
        facts = [s.id for s in sentences if s.section not in excluded] or [s.id for s in sentences]
        warnings.append(
            "no FACTS heading found (like 'FACTUAL ALLEGATIONS', 'STATEMENT OF FACTS', 'Statement of Claim'"
            + ("" if saw_heading else "; no section headings at all")
            + f"): the fact gate reads all {len(facts)} body sentences"
            + (f" of {len(sentences)}" if len(facts) != len(sentences) else "")
            + " by what each one says"
        )
    suspicious = find_injection_sentences(sentences)
    if suspicious:
        warnings.append(
            "sentences that read like instructions to a language model were found and are treated as "
            f"complaint content only: {', '.join(suspicious[:20])}"
        )
    caption_end = next((s.span[0] for s in sections if s.kind != "caption"), None) if sections else None
    # no caption: an opinion or a brief still names its parties in its case title
    caption = read_caption(text, caption_end) if sections and sections[0].kind == "caption" else read_case_title(text)
    if caption is not None:
        warnings.extend(caption.notes)
    return Document(
        doc_id=raw.doc_id,
        source=raw.source,
        text=text,
        sections=sections,
        sentences=sentences,
        facts_section_found=found,
        pleading=pleading,
        kind=kind,
        narrative_ids=facts,
        warnings=warnings,
        metadata=dict(raw.metadata),
        caption=caption,
    )
