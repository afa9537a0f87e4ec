"""Event-graph linearization and the annotated complaints the QA tasks read.

Shared by the document-QA experiment (:mod:`argus.experiments.qa`) and the QA optimizer examples
(:func:`optimizers.examples.qa_examples`); it imports neither.

The linearized EKG (:func:`linearize_graph`) lists entities (name, kind, role, aliases), events
(type, verb, participants with roles, time, and the text of each sentence the event cites), then
the temporal and causal edges between events, as :class:`Block` s that remember the sentences
they quote. :func:`fit_ekg` renders it within a word budget: when it does not fit, its events are
kept in a given order of relevance (then shown in graph order) with the edges among the kept
events. :func:`load_qa_documents` reads the annotated complaints of a split that carry FAQ
questions, each with its gold graph or a pipeline graph from a folder of ``*.ekg.json`` files.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from argus.errors import InputError

__all__ = [
    "Sentence", "QADocument", "load_ekg_folder", "load_qa_documents",
    "Block", "block_of", "LinearizedEKG", "linearize_graph", "fit_ekg",
]


# ----------------------------------------------------------------------------- documents


@dataclass(frozen=True)
class Sentence:
    id: str
    text: str
    span: tuple[int, int] | None


@dataclass
class QADocument:
    """One annotated complaint: its FACTS sentences, FAQ questions and the graph used for it.

    ``sentences`` is the gold sentence index (what FAQ evidence ids name); ``graph_sentences`` the
    index the graph's evidence ids name (the gold one, or the DocumentEKG's own sentences).
    """

    doc_id: str
    split: str
    facts: list[Sentence]
    sentences: dict[str, Sentence]
    questions: list[dict]
    graph: dict | None
    graph_sentences: dict[str, Sentence] = field(default_factory=dict)


def _sentence(s: dict) -> Sentence:
    span = s.get("span")
    return Sentence(str(s["id"]), str(s.get("text") or ""), (int(span[0]), int(span[1])) if span else None)


def load_ekg_folder(folder: str | Path) -> dict[str, tuple[dict, dict[str, Sentence]]]:
    """``doc_id → (graph, sentence index)`` from every ``*.ekg.json`` (DocumentEKG) in ``folder``."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(f"--graphs: {folder} is neither 'gold' nor a folder of *.ekg.json files")
    out: dict[str, tuple[dict, dict[str, Sentence]]] = {}
    for path in sorted(folder.glob("*.ekg.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            out[data["doc_id"]] = (data["graph"], {s["id"]: _sentence(s) for s in data.get("sentences") or []})
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise InputError(f"{path}: not a DocumentEKG JSON file ({exc})") from exc
    if not out:
        raise InputError(f"no *.ekg.json files in {folder}")
    return out


def load_qa_documents(split: str = "dev", graphs: str | Path = "gold") -> list[QADocument]:
    """The annotated complaints of ``split`` that have FAQ questions, each with the chosen graph
    (``None`` when a graph folder has no EKG for it)."""
    from argus.paths import complaints_dir

    root = complaints_dir(split)
    if not root.exists():
        raise InputError(f"no annotated complaints at {root} (set ARGUS_DATA_ROOT)")
    folder = None if str(graphs) == "gold" else load_ekg_folder(graphs)
    docs: list[QADocument] = []
    for d in sorted(p for p in root.iterdir() if (p / "gold.json").exists()):
        gold = json.loads((d / "gold.json").read_text(encoding="utf-8"))
        if not gold.get("faq"):
            continue
        sentences: dict[str, Sentence] = {}
        facts: list[Sentence] = []
        for sec in gold.get("sections") or []:
            for para in sec.get("paragraphs") or []:
                for s in para:
                    sent = _sentence(s)
                    sentences[sent.id] = sent
                    if sec.get("kind") == "facts" or s.get("section") == "facts":
                        facts.append(sent)
        if folder is None:
            graph, graph_sentences = gold.get("graph"), sentences
        else:
            graph, graph_sentences = folder.get(gold["doc_id"], (None, {}))
        docs.append(QADocument(gold["doc_id"], split, facts, sentences, list(gold["faq"]), graph, graph_sentences))
    return docs


# ----------------------------------------------------------------------------- linearized EKG


@dataclass(frozen=True)
class Block:
    """A piece of context text and the sentences (spans into complaint.txt, and texts) it quotes."""

    text: str
    spans: tuple[tuple[int, int], ...] = ()
    quoted: tuple[str, ...] = ()

    @property
    def words(self) -> int:
        return len(self.text.split())


def block_of(sentences: Sequence[Sentence], text: str) -> Block:
    """A block of ``text`` that quotes ``sentences`` (their spans, where known, and texts)."""
    return Block(text, tuple(s.span for s in sentences if s.span), tuple(s.text for s in sentences))


@dataclass
class LinearizedEKG:
    header: list[Block]
    events: list[tuple[str, Block]]  # (event id, its block) in graph order
    edges: list[tuple[str, str, Block]]  # (source, target, line)


def linearize_graph(graph: dict | Any, sentences: dict[str, Sentence]) -> LinearizedEKG:
    """The EKG as text blocks: entities, one block per event (with the sentences it cites), edges."""
    g = graph.model_dump() if hasattr(graph, "model_dump") else (graph or {})
    names = {e["id"]: e.get("name") or e["id"] for e in g.get("entities") or []}
    header = []
    ent_lines = []
    for e in g.get("entities") or []:
        aliases = [a for a in e.get("aliases") or [] if a]
        extra = f"; also called {', '.join(aliases)}" if aliases else ""
        ent_lines.append(f"{e['id']} {e.get('name', '')} ({e.get('kind', 'other')}, {e.get('role', 'other')}{extra})")
    if ent_lines:
        header.append(Block("Entities:\n" + "\n".join(ent_lines)))
    events = []
    verbs = {}
    for ev in g.get("events") or []:
        verbs[ev["id"]] = ev.get("verb") or ev.get("type") or ev["id"]
        parts = [f"{p.get('role', 'participant')} {names.get(p.get('entity'), p.get('entity'))}" for p in ev.get("participants") or []]
        t = ev.get("time") or {}
        when = f"time {t['value']}" if t.get("value") else "time unknown"
        line = f"{ev['id']} {ev.get('type', 'other')}: {ev.get('verb', '')}" + (f" — {', '.join(parts)}" if parts else "") + f"; {when}"
        cited = [sentences[sid] for sid in ev.get("evidence") or [] if sid in sentences]
        quotes = "".join(f'\n  [{s.id}] "{s.text}"' for s in cited)
        events.append((ev["id"], block_of(cited, line + quotes)))
    edges = []
    for kind in ("temporal_edges", "causal_edges"):
        for e in g.get(kind) or []:
            s, t = e.get("source"), e.get("target")
            edges.append((s, t, Block(f"{s} ({verbs.get(s, s)}) {e.get('relation', 'RELATED')} {t} ({verbs.get(t, t)})")))
    return LinearizedEKG(header, events, edges)


def _render_ekg(lin: LinearizedEKG, keep: set[str]) -> tuple[str, list[Block]]:
    blocks = list(lin.header)
    ev = [b for eid, b in lin.events if eid in keep]
    if ev:
        blocks.append(Block("Events:"))
        blocks += ev
    ed = [b for s, t, b in lin.edges if s in keep and t in keep]
    if ed:
        blocks.append(Block("Relations between events:"))
        blocks += ed
    return "\n".join(b.text for b in blocks), blocks


def fit_ekg(lin: LinearizedEKG, budget: int, event_order: Sequence[str] | None) -> tuple[str, list[Block], bool]:
    """The linearized EKG within ``budget`` words: everything when it fits; otherwise events are
    added in ``event_order`` (most relevant first) while the rendering fits."""
    all_ids = [eid for eid, _ in lin.events]
    text, blocks = _render_ekg(lin, set(all_ids))
    if len(text.split()) <= budget:
        return text, blocks, False
    keep: set[str] = set()
    for eid in event_order or all_ids:
        trial = keep | {eid}
        t, _ = _render_ekg(lin, trial)
        if len(t.split()) <= budget:
            keep = trial
    text, blocks = _render_ekg(lin, keep)
    if len(text.split()) > budget:  # even the entity list alone is too long
        words = text.split()[:budget]
        text, blocks = " ".join(words), []
    return text, blocks, True
