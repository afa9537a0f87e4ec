"""The rules of the shared SPEC (``us_complaints/SPEC.md``) a ``gold.json`` must keep, as a list of problems.

:func:`gold_problems` checks a parsed gold file (and, given the complaint's text, its spans against it): every
annotated complaint of the corpus passes it (``tests/test_annotate.py``), and so must every gold file
``argus annotate serve`` writes. The rules:

- ``doc_id`` a non-empty string; ``sections`` a list, each with a ``heading`` and a ``kind`` of
  :data:`SECTION_KINDS`, its ``paragraphs`` non-empty lists of sentences;
- every sentence ``{"id", "text", "fact", "span", "section"}``: ids ``S1``, ``S2``, … consecutive through the
  whole document in reading order, ``fact`` a boolean, ``span`` ``[start, end)`` with ``0 <= start <= end``
  (inside the text when it is given), spans in reading order and not overlapping, ``section`` (where given)
  its section's kind;
- ``graph`` an ``EventGraph`` (types, roles, kinds and relations from the schema's lists; ids ``E…``,
  ``EV…``, ``S…``), entity and event ids unique, every participant an entity of the graph, every edge between
  two different events of the graph and not twice the same (source, target, relation), every evidence id the
  id of a sentence of a ``facts`` section;
- ``claims`` a list of strings; ``faq`` a list of objects whose evidence ids are sentence ids.

What the rules do not ask: that ``text`` be ``complaint.txt[start:end]`` (the corpus's sentences are cleaned
of line breaks and paragraph numbers), that a trigger occur in its evidence, the number of claims or
questions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from argus.graph.schema import EventGraph

SECTION_KINDS = ("intro", "jurisdiction", "parties", "procedural", "facts", "count", "prayer", "other")
"""The section kinds of the SPEC."""

SENTENCE_KEYS = frozenset({"id", "text", "fact", "span", "section"})

__all__ = ["SECTION_KINDS", "gold_problems"]


def _sentence_problems(data: Mapping, text: str | None, out: list[str]) -> tuple[list[str], set[str]]:
    """The sentences' problems into ``out``; returns the sentence ids in order and those of ``facts`` sections."""
    ids: list[str] = []
    facts: set[str] = set()
    prev_end = 0
    sections = data.get("sections")
    if not isinstance(sections, list):
        out.append("sections: not a list")
        return ids, facts
    for k, sec in enumerate(sections):
        where = f"sections[{k}]"
        if not isinstance(sec, Mapping):
            out.append(f"{where}: not an object")
            continue
        kind = sec.get("kind")
        if kind not in SECTION_KINDS:
            out.append(f"{where}: kind {kind!r} is not one of {', '.join(SECTION_KINDS)}")
        if not isinstance(sec.get("heading", ""), str):
            out.append(f"{where}: heading is not a string")
        paragraphs = sec.get("paragraphs")
        if not isinstance(paragraphs, list):
            out.append(f"{where}: paragraphs is not a list")
            continue
        for j, par in enumerate(paragraphs):
            if not isinstance(par, list) or not par:
                out.append(f"{where}.paragraphs[{j}]: not a non-empty list of sentences")
                continue
            for s in par:
                if not isinstance(s, Mapping):
                    out.append(f"{where}.paragraphs[{j}]: a sentence that is not an object")
                    continue
                sid = s.get("id")
                label = sid if isinstance(sid, str) else f"{where}.paragraphs[{j}]"
                extra = set(s) - SENTENCE_KEYS
                if extra:
                    out.append(f"{label}: unknown key(s) {', '.join(sorted(extra))}")
                expected = f"S{len(ids) + 1}"
                if sid != expected:
                    out.append(f"{label}: sentence id should be {expected} (ids are S1, S2, … in reading order)")
                ids.append(str(sid))
                if kind == "facts":
                    facts.add(str(sid))
                if not isinstance(s.get("text"), str):
                    out.append(f"{label}: text is not a string")
                if not isinstance(s.get("fact"), bool):
                    out.append(f"{label}: fact is not true or false")
                if "section" in s and s["section"] != kind:
                    out.append(f"{label}: section {s['section']!r} is not its section's kind {kind!r}")
                span = s.get("span")
                if not (isinstance(span, (list, tuple)) and len(span) == 2 and all(type(x) is int for x in span)):
                    out.append(f"{label}: span is not [start, end]")
                    continue
                a, b = span
                if not 0 <= a <= b:
                    out.append(f"{label}: span [{a}, {b}] is not 0 <= start <= end")
                elif text is not None and b > len(text):
                    out.append(f"{label}: span [{a}, {b}] ends after the text ({len(text)} characters)")
                elif a < prev_end:
                    out.append(f"{label}: span [{a}, {b}] starts before the previous sentence ends ({prev_end})")
                prev_end = max(prev_end, b)
    return ids, facts


def _graph_problems(raw: Any, ids: list[str], facts: set[str], out: list[str]) -> None:
    try:
        graph = EventGraph.model_validate(raw if raw is not None else {})
    except ValidationError as exc:
        for err in exc.errors()[:20]:
            loc = ".".join(str(x) for x in err["loc"])
            out.append(f"graph.{loc}: {err['msg']}")
        return
    entities = [e.id for e in graph.entities]
    events = [e.id for e in graph.events]
    for kind, seen in (("entity", entities), ("event", events)):
        dup = sorted({x for x in seen if seen.count(x) > 1})
        if dup:
            out.append(f"{kind} id(s) used twice: {', '.join(dup)}")
    known_entities, known_events, known_sentences = set(entities), set(events), set(ids)

    def evidence(owner: str, sids: list[str]) -> None:
        for sid in sids:
            if sid not in known_sentences:
                out.append(f"{owner}: evidence {sid} is not a sentence of the document")
            elif sid not in facts:
                out.append(f"{owner}: evidence {sid} is not a sentence of a facts section")
        if len(set(sids)) != len(sids):
            out.append(f"{owner}: an evidence id twice")

    for ev in graph.events:
        for p in ev.participants:
            if p.entity not in known_entities:
                out.append(f"{ev.id}: participant {p.entity} is not an entity of the graph")
        evidence(ev.id, ev.evidence)
    for kind, edges in (("temporal", graph.temporal_edges), ("causal", graph.causal_edges)):
        seen_edges: set[tuple[str, str, str]] = set()
        for e in edges:
            name = f"{kind} edge {e.source} {e.relation} {e.target}"
            for end in (e.source, e.target):
                if end not in known_events:
                    out.append(f"{name}: {end} is not an event of the graph")
            if e.source == e.target:
                out.append(f"{name}: an edge from an event to itself")
            key = (e.source, e.target, e.relation)
            if key in seen_edges:
                out.append(f"{name}: stated twice")
            seen_edges.add(key)
            evidence(name, e.evidence)


def gold_problems(data: Mapping, text: str | None = None) -> list[str]:
    """What in ``data`` (a parsed ``gold.json``) breaks the SPEC's rules (the module docstring), one line each;
    empty when it keeps them all. ``text``: the complaint's text, to check that every span lies in it."""
    out: list[str] = []
    if not isinstance(data, Mapping):
        return ["not a JSON object"]
    if not isinstance(data.get("doc_id"), str) or not data.get("doc_id"):
        out.append("doc_id: not a non-empty string")
    ids, facts = _sentence_problems(data, text, out)
    if not ids:
        out.append("no sentences")
    if not isinstance(data.get("graph"), Mapping):
        out.append("graph: not an object")
    else:
        _graph_problems(data.get("graph"), ids, facts, out)
    claims = data.get("claims", [])
    if not isinstance(claims, list) or not all(isinstance(c, str) for c in claims):
        out.append("claims: not a list of strings")
    faq = data.get("faq", [])
    if not isinstance(faq, list):
        out.append("faq: not a list")
    else:
        known = set(ids)
        for q in faq:
            if not isinstance(q, Mapping):
                out.append("faq: an item that is not an object")
                continue
            bad = [s for s in q.get("evidence", []) if s not in known]
            if bad:
                out.append(f"faq {q.get('id')}: evidence {', '.join(map(str, bad))} not sentences of the document")
    return out
