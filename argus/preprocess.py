"""OCR cleanup, section detection and sentence segmentation with spans into the original text.

The input is the text of a filed complaint as OCR produces it: running page headers
("Case 1:21-cv-04417-JPO Document 1 Filed 05/17/21 Page 3 of 14"), page numbers, form feeds,
words hyphenated across line breaks, numbered paragraphs, a caption block and centered headings.

Nothing is deleted from the original: cleaning builds a reading text together with an offset
map (reading-text index -> original index), so every sentence gets the span of its first and
last character in the original text.

Pipeline: lines are classified (page furniture, blank, heading, paragraph text); headings are
mapped to section kinds (the FACTS narrative and its lettered sub-headings, caption,
jurisdiction, parties, exhaustion, counts, prayer, jury demand / signature); paragraph text is
joined and de-hyphenated; a sentence segmenter splits each paragraph.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable, Iterable

from argus.caption import read_caption
from argus.documents import Document, RawDocument, Section, Sentence, SectionKind

# ----------------------------------------------------------------------------- page furniture

_PAGE_HEADER = re.compile(
    r"^\s*Case[:\s]+\S*\d+[:\-]\d{2}[-\s]?[a-z]{2}[-\s]?\d+\S*\s+.*\b(?:Document|Doc\.?|ECF)\b.*"
    r"(?:Page\s*\d+\s*of\s*\d+|Filed\s+\S+).*$",
    re.IGNORECASE,
)
_PAGE_NUMBER = re.compile(r"^\s*(?:-\s*)?(?:Page\s+)?\d{1,4}(?:\s*-)?(?:\s+of\s+\d{1,4})?\s*$", re.IGNORECASE)
_PARA_NUMBER = re.compile(r"^(\s*)(\d{1,4})\.(\s+|$)")
_SUBHEADING = re.compile(r"^\s*(?:[A-Z]|[IVX]{1,5}|\d{1,2})\.\s+\S")

# Heading keywords → section kind. Checked in order; the first match wins.
_HEADING_RULES: list[tuple[SectionKind, re.Pattern]] = [
    ("count", re.compile(r"\b(COUNT\s+[IVXLC\d]+|CAUSE\s+OF\s+ACTION|CLAIM\s+FOR\s+RELIEF)\b", re.I)),
    ("prayer", re.compile(r"\b(PRAYER|WHEREFORE|RELIEF\s+REQUESTED|REQUEST\s+FOR\s+RELIEF|DEMAND\s+FOR\s+RELIEF)\b", re.I)),
    ("other", re.compile(r"\b(JURY\s+(TRIAL\s+)?DEMAND|DEMAND\s+FOR\s+(A\s+)?JURY|SIGNATURE|VERIFICATION|CERTIFICATE\s+OF\s+SERVICE|EXHIBITS?)\b", re.I)),
    ("facts", re.compile(r"\b(FACTS|FACTUAL|STATEMENT\s+OF\s+(THE\s+)?CLAIMS?|ALLEGATIONS\s+COMMON)\b", re.I)),
    ("jurisdiction", re.compile(r"\b(JURISDICTION|VENUE)\b", re.I)),
    ("procedural", re.compile(r"\b(ADMINISTRATIVE|EXHAUSTION|PROCEDURAL\s+(HISTORY|REQUIREMENTS|PREREQUISITES)|PREREQUISITES|CONDITIONS?\s+PRECEDENT|EEOC|CHARGE\s+OF\s+DISCRIMINATION)\b", re.I)),
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


_OPEN_QUOTES = re.compile(r"[\"“”]")
_MISSED_BOUNDARY = re.compile(r"(?<=[.!?])([\"”’)\]]*)\s+(?=[\"“(]?[A-Z])")
_CODE_ABBREV_END = re.compile(r"\b(?:Exec|Civ|Lab|Prac|Proc|Rev|Educ|Emp|Bus|Gov|Admin|Gen|Stat|Ann|Pub|Cons|Mun|Regs?|Ins|Fin|Jud|Penal|Code)\.$")
_CODE_CONTINUATION = re.compile(r"\s*(?:Law|Laws|Code|Stat|Ann|Prac|Proc|Reg|§|\d)")
_INITIAL_AFTER_REFERENCE = re.compile(r"\b(?:Exhibits?|Appendix|Attachment|and|Tab)\s+[A-Z]\.$")


def _unbalanced_quote(s: str) -> bool:
    return len(_OPEN_QUOTES.findall(s)) % 2 == 1


def segment_legal(text: str) -> list[tuple[int, int]]:
    """nupunkt, repaired for pleadings.

    Two repairs, each measured on the annotated complaints: (1) a quotation that runs over several
    sentences stays one sentence ("He said, \"Stop. Now.\""), (2) a boundary after a reference
    letter ("attached as Exhibit B. Ms. Ashworth ...") or after a closing parenthesis/quote that
    nupunkt missed is split when the left part ends like a sentence.
    """
    spans = segment_nupunkt(text)
    split: list[tuple[int, int]] = []
    for a, b in spans:
        start = a
        for m in _MISSED_BOUNDARY.finditer(text, a, b):
            left = text[start : m.start() + len(m.group(1))].rstrip()
            if len(left) < 12 or _unbalanced_quote(left):
                continue
            if _ABBREV_END.search(left) and not _INITIAL_AFTER_REFERENCE.search(left):
                continue
            split.append((start, start + len(left)))
            start = m.end()
        split.append((start, b))
    merged: list[tuple[int, int]] = []
    for a, b in split:
        if merged and (
            _unbalanced_quote(text[merged[-1][0] : merged[-1][1]])
            or (_CODE_ABBREV_END.search(text[merged[-1][0] : merged[-1][1]]) and _CODE_CONTINUATION.match(text, a))
        ):
            merged[-1] = (merged[-1][0], b)
        else:
            merged.append((a, b))
    return merged


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
    return bool(s) and (bool(_PAGE_HEADER.match(s)) or bool(_PAGE_NUMBER.match(s)))


def _upper_ratio(s: str) -> float:
    letters = [c for c in s if c.isalpha()]
    if not letters:
        return 0.0
    return sum(c.isupper() for c in letters) / len(letters)


def _looks_like_heading(s: str) -> bool:
    if not s or len(s) > 220 or _PARA_NUMBER.match(s):
        return False
    if s.endswith(")") and "  )" in s:  # caption column
        return False
    letters = sum(c.isalpha() for c in s)
    if letters < 3:
        return False
    return _upper_ratio(s) >= 0.85 or bool(_SUBHEADING.match(s) and len(s) < 160 and not s.rstrip().endswith((".", ";", ",")))


def heading_kind(heading: str, current: SectionKind | None) -> SectionKind | None:
    """Map a heading to a section kind; ``None`` when unrecognized."""
    h = re.sub(r"\s+", " ", heading)
    # A lettered sub-heading ("B. Plaintiff Complains") stays in the current section unless it names one.
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


# ----------------------------------------------------------------------------- blocks


def _blocks(lines: list[_Line]) -> list[_Block]:
    """Group body lines into headings and paragraphs, ignoring page furniture.

    A paragraph continues across a page break: blank lines that only surround page furniture
    do not end it.
    """
    content: list[tuple[_Line, bool, bool]] = []  # (line, after a real blank line, after a page break)
    blank_pending = False
    furniture_since_text = False
    for ln in lines:
        s = ln.stripped
        if not s:
            blank_pending = True
            continue
        if is_page_furniture(s):
            furniture_since_text = True
            blank_pending = False
            continue
        # Blank lines that surround page furniture belong to the page break, not to the text.
        content.append((ln, blank_pending and not furniture_since_text, furniture_since_text))
        blank_pending = False
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
        next_blank = i + 1 >= len(content) or content[i + 1][1]
        starts_block = real_blank or cur is None or (after_break and _ends_sentence(cur))
        if starts_block and _looks_like_heading(s):
            # Gather heading continuation lines (wrapped headings) until a blank line.
            heading_lines = [ln]
            j = i + 1
            while j < len(content) and not content[j][1] and _looks_like_heading(content[j][0].stripped) and not _PARA_NUMBER.match(content[j][0].text):
                heading_lines.append(content[j][0])
                j += 1
            block_ends = j >= len(content) or content[j][1] or _PARA_NUMBER.match(content[j][0].text)
            if block_ends or next_blank:
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


# ----------------------------------------------------------------------------- public API


def find_injection_sentences(sentences: list[Sentence]) -> list[str]:
    """Ids of sentences that look like instructions aimed at a language model."""
    return [s.id for s in sentences if INJECTION_PATTERNS.search(s.text)]


def preprocess(raw: RawDocument, segmenter: str | Segmenter = DEFAULT_SEGMENTER) -> Document:
    """Turn a raw complaint text into a ``Document`` with sections and spanned sentences."""
    seg = SEGMENTERS[segmenter] if isinstance(segmenter, str) else segmenter
    text = raw.text
    blocks = _blocks(_lines(text))
    warnings = list(raw.warnings)

    # The caption ends at the first recognized top-level heading, or at the first numbered paragraph.
    first_body = None
    for k, b in enumerate(blocks):
        if b.kind == "heading" and heading_kind(b.heading, None) not in (None,):
            first_body = k
            break
        if b.kind == "paragraph" and b.paragraph and b.paragraph.number is not None:
            first_body = k
            break
    if first_body is None:
        first_body = 0

    sections: list[Section] = []
    sentences: list[Sentence] = []
    current: SectionKind = "caption" if first_body > 0 else "intro"
    current_heading = ""
    sec_start = 0
    saw_heading = False

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
            kind = heading_kind(b.heading, current)
            if kind is None:
                # Unrecognized: a sub-heading of the current section (e.g. "A. The Harassment Begins").
                kind = current if current != "caption" else "other"
            saw_heading = True
            open_section(kind, b.heading, b.span[0])
            continue
        if not sections:
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

    facts = [s.id for s in sentences if s.section == "facts"]
    found = bool(facts)
    if not found:
        excluded = {"caption", "jurisdiction", "procedural", "count", "prayer", "other"}
        facts = [s.id for s in sentences if s.section not in excluded] or [s.id for s in sentences]
        warnings.append(
            "no FACTS section detected (no heading like 'FACTUAL ALLEGATIONS', 'STATEMENT OF FACTS' or "
            f"'FACTS'); falling back to the body: {len(facts)} of {len(sentences)} sentences"
            + ("" if saw_heading else " (no section headings found at all)")
        )
    suspicious = find_injection_sentences(sentences)
    if suspicious:
        warnings.append(
            "sentences that read like instructions to a language model were found and are treated as "
            f"complaint content only: {', '.join(suspicious[:20])}"
        )
    caption_end = next((s.span[0] for s in sections if s.kind != "caption"), None) if sections else None
    caption = read_caption(text, caption_end) if sections and sections[0].kind == "caption" else None
    if caption is not None:
        warnings.extend(caption.notes)
    return Document(
        doc_id=raw.doc_id,
        source=raw.source,
        text=text,
        sections=sections,
        sentences=sentences,
        facts_section_found=found,
        narrative_ids=facts,
        warnings=warnings,
        metadata=dict(raw.metadata),
        caption=caption,
    )
