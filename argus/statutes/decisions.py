"""Court decisions as retrieval queries, and their annotated citations as gold.

The fixtures (``de_decisions/fixtures``) hold 15 real decisions with 541 annotated citations
(355 of statutes, 186 of cases). A query is the decision's Tatbestand (the facts) when it has one;
otherwise the decision text with every annotated citation span removed, so the query cannot
simply echo the answer. The two groups are reported separately.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from argus.errors import ConfigError, InputError
from argus.paths import data_root
from argus.statutes.codes import CodeRegistry
from argus.statutes.model import ProvisionCitation

_HEADING = r"(?m)^[ \t]*{}[ \t]*:?[ \t]*$"
_TATBESTAND = re.compile(_HEADING.format("Tatbestand"))
_REASONS = re.compile(_HEADING.format("(?:Entscheidungsgründe|Gründe|II\\.)"))
_ROMAN_I = re.compile(_HEADING.format("I\\."))
_ROMAN_II = re.compile(_HEADING.format("II\\."))
# § 540 ZPO: an appeal judgment may replace the Tatbestand by a reference; its section I. then states the facts.
_TATBESTAND_REPLACED = re.compile(r"Anstelle des Tatbestand(?:e?s)?\b")


@dataclass
class LawAnnotation:
    """One annotated statute citation (fields as in the fixture's annotation schema)."""

    id: str
    span: tuple[int, int]
    text: str
    kind: str
    book: str | None
    number: str | None
    structure: dict[str, str]
    unit: str | None = None


@dataclass
class Decision:
    doc_id: str
    text: str
    court: str | None
    laws: list[LawAnnotation]
    citation_spans: list[tuple[int, int]]  #: every annotated span (statutes and cases)
    tatbestand: tuple[int, int] | None = None
    metadata: dict = field(default_factory=dict)

    @property
    def group(self) -> str:
        """``tatbestand`` when the facts section exists, else ``stripped`` (citations removed)."""
        return "tatbestand" if self.tatbestand else "stripped"

    def query(self) -> str:
        """The retrieval query: the Tatbestand, or the whole text with citation spans cut out."""
        if self.tatbestand:
            s, e = self.tatbestand
            return self.text[s:e].strip()
        return strip_spans(self.text, self.citation_spans)


def strip_spans(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` without the given spans (overlaps merged), whitespace tidied."""
    out = []
    pos = 0
    for s, e in sorted(spans):
        if e <= pos:
            continue
        out.append(text[pos : max(pos, s)])
        pos = max(pos, e)
    out.append(text[pos:])
    return re.sub(r"[ \t]{2,}", " ", "".join(out)).strip()


def find_tatbestand(text: str) -> tuple[int, int] | None:
    """Span of the Tatbestand section: after its heading up to "Entscheidungsgründe"/"Gründe".

    An appeal judgment that states "Anstelle des Tatbestandes …" (§ 540 ZPO) has its facts in
    section I. of the reasons; that section is used then.
    """
    m = _TATBESTAND.search(text)
    if m:
        end = _REASONS.search(text, m.end())
        return m.end(), end.start() if end else len(text)
    rep = _TATBESTAND_REPLACED.search(text)
    if rep:
        first = None
        for h in _ROMAN_I.finditer(text, 0, rep.start()):
            first = h
        if first is not None:
            end = _ROMAN_II.search(text, rep.end())
            return first.end(), end.start() if end else len(text)
    return None


def fixtures_dir(root: Path | None = None) -> Path:
    return (root or data_root()) / "de_decisions" / "fixtures"


def _jsonl_records(path: Path) -> list[tuple[int, dict]]:
    """``(line number, record)`` for every non-blank line of a fixture JSONL file; a line that is
    not JSON is an ``InputError`` (fixtures are read strictly, unlike ``argus.io.read_jsonl``)."""
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append((n, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}:{n}: not JSON: {exc}") from exc
    return out


def load_decisions(root: Path | None = None) -> list[Decision]:
    """The 15 plain-text decisions with their statute annotations."""
    folder = fixtures_dir(root)
    docs_path, ann_path = folder / "documents.jsonl", folder / "annotations.jsonl"
    if not docs_path.exists() or not ann_path.exists():
        raise ConfigError(f"decision fixtures not found in {folder} (expected documents.jsonl and annotations.jsonl)")
    docs = {d["doc_id"]: d for _, d in _jsonl_records(docs_path)}
    decisions = []
    for n, a in _jsonl_records(ann_path):
        d = docs.get(a["doc_id"])
        if d is None:
            raise InputError(f"{ann_path}:{n}: annotation for unknown document {a['doc_id']!r}")
        laws = []
        spans = []
        for c in a["citations"]:
            span = (c["span"]["start"], c["span"]["end"])
            spans.append(span)
            if c["type"] != "law":
                continue
            laws.append(
                LawAnnotation(
                    id=c["id"],
                    span=span,
                    text=c["span"]["text"],
                    kind=c.get("kind", "full"),
                    book=c.get("book"),
                    number=c.get("number"),
                    structure={k: str(v) for k, v in (c.get("structure") or {}).items() if v is not None},
                    unit=c.get("unit"),
                )
            )
        text = d["text"]
        decisions.append(
            Decision(
                doc_id=d["doc_id"],
                text=text,
                court=d.get("court"),
                laws=laws,
                citation_spans=spans,
                tatbestand=find_tatbestand(text),
                metadata={k: v for k, v in d.items() if k not in ("text",)},
            )
        )
    return decisions


def gold_book(book: str | None, registry: CodeRegistry) -> str | None:
    """Corpus key for an annotation's ``book``; None when the law is not in the graph.

    The annotation scheme writes a Sozialgesetzbuch book cited as "SGB V" as the bare number
    "5"; that form is read as "SGB <n>".
    """
    if not book:
        return None
    if book.isdigit():
        return registry.resolve(f"SGB {book}")
    return registry.resolve(book)


def gold_provisions(decision: Decision, registry: CodeRegistry) -> tuple[list[ProvisionCitation], list[LawAnnotation]]:
    """Distinct cited provisions in the graph's codes, and the annotations outside the graph.

    Only annotations with a book and a number count as provision citations (EU directives and
    bare list fragments have neither).
    """
    inside: dict[ProvisionCitation, None] = {}
    outside: list[LawAnnotation] = []
    for ann in decision.laws:
        if not ann.book or not ann.number:
            continue
        key = gold_book(ann.book, registry)
        if key is None:
            outside.append(ann)
            continue
        inside[ProvisionCitation.at(key, ann.number, ann.structure, article=ann.unit == "article")] = None
    return list(inside), outside


def cited_codes(decisions: list[Decision], registry: CodeRegistry) -> list[str]:
    """Corpus keys of every code the decisions cite (the paper built its graph from the codes its
    case corpus cites; this is the same choice for the 15 decisions)."""
    return sorted({g.code for d in decisions for g in gold_provisions(d, registry)[0]})
