"""An annotated complaint as scoring reads it: ``load_gold`` turns a ``gold.json`` (or its folder,
or the parsed dict) into a ``GoldDocument``: its sentences with their character spans, fact labels
and sections, its gold ``EventGraph``, its claims, FAQ and the remaining metadata."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Mapping

from argus.graph.schema import EventGraph


@dataclass
class GoldSentence:
    id: str
    text: str
    span: tuple[int, int]
    fact: bool
    section: str  # the section kind: intro, jurisdiction, parties, procedural, facts, count, prayer, other
    heading: str = ""
    paragraph: int = 0  # index of the paragraph in the whole document (0-based)

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class GoldDocument:
    doc_id: str
    sentences: list[GoldSentence]
    graph: EventGraph
    claims: list[str] = field(default_factory=list)
    faq: list[dict] = field(default_factory=list)  # raw
    meta: dict = field(default_factory=dict)  # the other top-level keys, raw (district, court, …)
    path: str | None = None

    @property
    def sentence_text(self) -> dict[str, str]:
        return {s.id: s.text for s in self.sentences}

    @property
    def fact_section_ids(self) -> list[str]:
        return [s.id for s in self.sentences if s.section == "facts"]

    def as_dict(self) -> dict:
        return {
            "doc_id": self.doc_id, "path": self.path, "claims": list(self.claims), "faq": list(self.faq),
            "meta": dict(self.meta), "sentences": [s.as_dict() for s in self.sentences],
            "graph": self.graph.model_dump(),
        }


def load_gold(path_or_dir: str | Path | Mapping) -> GoldDocument:
    """A ``gold.json`` (a path to it, to its folder, or the parsed dict) as a ``GoldDocument``."""
    path: str | None = None
    if isinstance(path_or_dir, Mapping):
        data = dict(path_or_dir)
    else:
        p = Path(path_or_dir)
        if p.is_dir():
            p = p / "gold.json"
        data = json.loads(p.read_text(encoding="utf-8"))
        path = str(p)
    sentences: list[GoldSentence] = []
    par = 0
    for sec in data.get("sections", []):
        kind = sec.get("kind", "other")
        for paragraph in sec.get("paragraphs", []):
            for s in paragraph:
                span = s.get("span") or (0, 0)
                sentences.append(GoldSentence(
                    id=s["id"], text=s.get("text", ""), span=(int(span[0]), int(span[1])),
                    fact=bool(s.get("fact", False)), section=s.get("section", kind) or kind,
                    heading=sec.get("heading", ""), paragraph=par,
                ))
            par += 1
    meta = {k: v for k, v in data.items() if k not in ("sections", "graph", "claims", "faq", "doc_id")}
    return GoldDocument(
        doc_id=data.get("doc_id", Path(path).parent.name if path else ""),
        sentences=sentences,
        graph=EventGraph.model_validate(data.get("graph", {})),
        claims=list(data.get("claims", [])),
        faq=list(data.get("faq", [])),
        meta=meta,
        path=path,
    )
