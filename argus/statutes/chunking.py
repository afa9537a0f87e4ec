"""Retrieval units: one chunk per graph node at a chosen level, or naive fixed-size word windows.

A structural chunk decodes to a citation through its node id. A naive chunk (the paper's
100-word baseline, cut without regard to structure, within one code) decodes to every finest
node (Satz, Nummer, Buchstabe …) whose body text it overlaps; a § heading alone does not count.
Tables of contents and repealed provisions ("(weggefallen)") are not chunked by default.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from argus.statutes.graph import StatuteGraph
from argus.statutes.model import CHUNK_LEVELS, Level

NAIVE = "naive"
_WORD = re.compile(r"\S+")
_FINEST = frozenset({"satz", "nummer", "buchstabe", "doppelbuchstabe"})
_ABSATZ_LABEL = re.compile(r"^\(\d{1,3}[a-z]{0,2}\)\s*")


@dataclass(frozen=True)
class Chunk:
    """A unit of retrieval.

    ``nodes`` are the graph nodes the chunk decodes to (the node itself for structural chunks).
    """

    chunk_id: str
    granularity: str  #: a level type name ("satz") or "naive100"
    text: str
    words: int
    nodes: tuple[str, ...]
    embed_text: str | None = None  #: what is embedded when it differs from ``text``

    @property
    def embedding_input(self) -> str:
        return self.embed_text if self.embed_text is not None else self.text


def granularity_name(level: Level | str, naive_size: int = 100) -> str:
    if isinstance(level, Level):
        return level.type_name
    if level.startswith(NAIVE):
        return f"{NAIVE}{naive_size}"
    return Level.parse(level).type_name


def _excluded(sg: StatuteGraph, node: str, include_toc: bool, include_repealed: bool) -> bool:
    nodes = sg.graph._node
    sid = sg.section_of(node)
    if sid is None:
        return False
    sec = nodes[sid]
    if not include_toc and sec.get("kind") in ("inhaltsübersicht", "inhaltsverzeichnis"):
        return True
    if not include_repealed and (sec.get("repealed") or nodes[node].get("repealed")):
        return True
    return False


def level_chunks(
    sg: StatuteGraph,
    level: Level,
    *,
    codes: list[str] | None = None,
    include_toc: bool = False,
    include_repealed: bool = False,
) -> list[Chunk]:
    """One chunk per node of ``level`` (in document order), optionally limited to ``codes``."""
    if level not in CHUNK_LEVELS:
        raise ValueError(f"cannot chunk at {level.display}; use one of {[lvl.type_name for lvl in CHUNK_LEVELS]}")
    wanted = set(codes) if codes else None
    name = level.type_name
    chunks = []
    for n, a in sg.graph.nodes(data=True):
        if a["type"] != name or (wanted is not None and a["code"] not in wanted):
            continue
        if level is not Level.CODE and _excluded(sg, n, include_toc, include_repealed):
            continue
        text = sg.text(n) if level is not Level.CODE else _code_text(sg, n, include_toc, include_repealed)
        words = len(text.split())
        if words == 0:
            continue
        embed_text = None
        if level is Level.ABSATZ:
            # the printed label "(2)" carries no meaning; without it a one-Satz Absatz embeds (and
            # caches) exactly like its Satz
            stripped = _ABSATZ_LABEL.sub("", text, count=1)
            embed_text = stripped if stripped != text else None
        chunks.append(Chunk(n, name, text, words, (n,), embed_text))
    return chunks


def _code_text(sg: StatuteGraph, code_node: str, include_toc: bool, include_repealed: bool) -> str:
    parts = []
    stack = [code_node]
    order = []
    while stack:
        n = stack.pop()
        if sg.type_of(n) == "section":
            order.append(n)
            continue
        stack.extend(reversed(sg.children(n)))
    for sid in order:
        if _excluded(sg, sid, include_toc, include_repealed):
            continue
        parts.append(sg.text(sid))
    return "\n\n".join(parts)


def naive_chunks(
    sg: StatuteGraph,
    size: int = 100,
    *,
    codes: list[str] | None = None,
    include_toc: bool = False,
    include_repealed: bool = False,
) -> list[Chunk]:
    """Consecutive ``size``-word windows over each code's text (sections in order)."""
    if size < 1:
        raise ValueError("naive chunk size must be a positive number of words")
    nodes = sg.graph._node
    wanted = set(codes) if codes else None
    by_code: dict[str, list[str]] = {}
    for n, a in nodes.items():
        if a["type"] == "section" and (wanted is None or a["code"] in wanted):
            if _excluded(sg, n, include_toc, include_repealed):
                continue
            by_code.setdefault(a["code"], []).append(n)
    below: dict[str, list[str]] = {}
    for n, a in nodes.items():
        sid = a.get("section")
        # owners are the finest units; an Absatz label "(2)" or a § heading alone decodes to nothing
        if sid is not None and a["type"] in _FINEST and (wanted is None or a["code"] in wanted):
            below.setdefault(sid, []).append(n)
    chunks: list[Chunk] = []
    name = f"{NAIVE}{size}"
    for code, sections in by_code.items():
        sections.sort(key=lambda s: nodes[s]["order"])
        words: list[str] = []
        owners: list[str | None] = []
        for sid in sections:
            text = nodes[sid]["text"]
            owner: list[str | None] = [None] * len(text)
            desc = sorted(below.get(sid, ()), key=lambda n: _depth(nodes, n))
            for n in desc:
                a = nodes[n]
                owner[a["start"] : a["end"]] = [n] * (a["end"] - a["start"])
            for m in _WORD.finditer(text):
                words.append(m.group())
                owners.append(owner[m.start()])
        for i in range(0, len(words), size):
            piece = words[i : i + size]
            seen: dict[str, None] = {}
            for o in owners[i : i + size]:
                if o is not None:
                    seen[o] = None
            chunks.append(Chunk(f"{name}:{code}:{i // size}", name, " ".join(piece), len(piece), tuple(seen)))
    return chunks


def _depth(nodes: dict, n: str) -> int:
    return n.count("/")


def chunks_for(
    sg: StatuteGraph, granularity: str, naive_size: int = 100, codes: list[str] | None = None
) -> list[Chunk]:
    """Chunks at a granularity given by name ("satz", "§", "naive", "naive100")."""
    if granularity.startswith(NAIVE):
        size = int(granularity[len(NAIVE) :] or naive_size)
        return naive_chunks(sg, size, codes=codes)
    return level_chunks(sg, Level.parse(granularity), codes=codes)
