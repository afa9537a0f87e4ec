"""Typed documents: the source text with sentences, sections and character spans.

Every sentence keeps a ``span`` into the ORIGINAL text (``Document.text``), so any extraction
that cites a sentence id can be shown at its place in the filing: ``text[span[0]:span[1]]``.
The span covers the sentence from its first to its last character and may include page
furniture (a running header, a page number) or a hyphenated line break that fell inside it;
``Sentence.text`` is the cleaned reading text.
"""

from __future__ import annotations

import bisect

from typing import Literal

from pydantic import BaseModel, Field, PrivateAttr

from argus.text.caption import Caption

DocumentKind = Literal["complaint", "opinion", "charge", "motion", "other"]
"""What a document is; ``argus.text.opinions.document_kind`` tells them apart."""

SectionKind = Literal[
    "caption", "intro", "jurisdiction", "parties", "procedural", "facts", "count", "prayer", "other", "unknown"
]
"""Where a sentence stands. ``unknown``: body text under no recognized heading (a complaint without
headings, an excerpt, a memo, an opinion), judged by what it says alone."""

FactPath = Literal["classifier", "llm", "section", "none"]


class RawDocument(BaseModel):
    """A source before preprocessing: what an ingest source yields."""

    doc_id: str
    text: str
    source: str = Field(description="Where the text came from: a path or a URL")
    metadata: dict = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)


class Section(BaseModel):
    heading: str = Field(description="Heading as printed (whitespace-normalized); '' for the caption")
    kind: SectionKind
    span: tuple[int, int] = Field(description="[start, end) of the section in the original text")


class Sentence(BaseModel):
    id: str = Field(description="S1..Sn in reading order over the whole complaint (caption excluded)")
    text: str = Field(description="Cleaned text: line breaks, hyphenation and page furniture removed")
    span: tuple[int, int] = Field(description="[start, end) into the original text")
    section: SectionKind
    section_heading: str = ""
    paragraph: int | None = Field(default=None, description="Printed paragraph number, when numbered")
    page: int | None = Field(default=None, description="Page of the filing the sentence starts on (from 1), when the "
                             "source is paged: a PDF, or a text with form feeds (a page break each)")
    # Filled by the fact gate.
    fact: bool | None = None
    fact_probability: float | None = Field(
        default=None, description="Classifier probability that the sentence is a Fact"
    )
    fact_path: FactPath = "none"


class Document(BaseModel):
    """A preprocessed complaint."""

    doc_id: str
    source: str
    text: str = Field(description="The original text, exactly as read")
    sections: list[Section]
    sentences: list[Sentence]
    facts_section_found: bool = True
    pleading: bool = Field(
        default=True, description="Whether the text reads as a pleading (a caption or numbered paragraphs); an opinion, "
        "a memo or an excerpt does not, and the fact gate keeps what its unheaded text narrates")
    kind: DocumentKind = Field(
        default="complaint", description="What the document is (argus.text.opinions.document_kind): a complaint, a "
        "court opinion (its narrative read from its background part), an EEOC charge, a motion or brief, other")
    narrative_ids: list[str] = Field(
        default_factory=list,
        description="Ids of the sentences that form the FACTS narrative; when no FACTS section was "
        "detected, the fallback body (see facts_section_found and warnings)",
    )
    warnings: list[str] = Field(default_factory=list)
    metadata: dict = Field(default_factory=dict)
    caption: "Caption | None" = Field(default=None, description="What the caption says (argus.text.caption.read_caption)")
    _sid_index: dict[str, Sentence] | None = PrivateAttr(default=None)

    def sentence(self, sid: str) -> Sentence:
        return self.index()[sid]

    def index(self) -> dict[str, Sentence]:
        if self._sid_index is None or len(self._sid_index) != len(self.sentences):
            self._sid_index = {s.id: s for s in self.sentences}
        return self._sid_index

    @property
    def narrative(self) -> list[Sentence]:
        """Sentences of the FACTS narrative (or of the fallback body, see ``facts_section_found``)."""
        idx = self.index()
        return [idx[i] for i in self.narrative_ids]

    def labeled(self, sentences: list[Sentence]) -> str:
        """Sentence-labeled rendering used by every program: ``[S1] text`` one per line."""
        return labeled_sentences((s.id, s.text) for s in sentences)


def labeled_sentences(pairs) -> str:
    """The one rendering of sentences every program and judge reads: ``[S<n>] text``, one per line,
    from (id, text) pairs."""
    return "\n".join(f"[{sid}] {text}" for sid, text in pairs)


# ----------------------------------------------------------------------------- pages
# A paged text (a PDF's, or OCR output with form feeds) separates its pages by form feeds.


def page_of(text: str, offset: int) -> int:
    """The page (from 1) of character ``offset`` of ``text``: one more than the form feeds before it."""
    return text.count("\f", 0, offset) + 1


def page_starts(text: str) -> list[int]:
    """Offsets at which each page of ``text`` starts (the first: 0), for many :func:`page_of` look-ups."""
    return [0] + [i + 1 for i, c in enumerate(text) if c == "\f"]


def page_at(starts: list[int], offset: int) -> int:
    return bisect.bisect_right(starts, offset)
