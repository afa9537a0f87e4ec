"""One code's part of the statute graph as compact arrays: what a build's worker sends the building process.

A worker makes everything of one file in one pass (:func:`pack_source`): it parses the XML into
columns (:class:`~argus.statutes.parser.ParsedCode`: node ids as a list of strings; types,
parents, sections and offsets as arrays; labels as indexes into a table of the code's distinct
labels; only the few large nodes, the code, its units and §§, as attribute dicts), reads the
references in every § and resolves those that stay within the code
(:meth:`~argus.statutes.resolve.CitationLinker.read_code`, on :class:`CodeNodes`). Pickled, that is a
fraction of the size and of the (un)pickling time of a dict per node.

The building process turns a pack into networkx's adjacency dicts (:func:`add_to_graph`), creating
each attribute dict once, in its final size, with shared (interned) labels and offsets.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from argus.statutes.codes import CodeRegistry
from argus.statutes.corpus import XmlSource
from argus.statutes.model import Level, contains_edge
from argus.statutes.parser import (
    IMPLICIT,
    PRINTED,
    REPEALED,
    ParsedCode,
    ParseIssue,
    parse_code,
)
from argus.statutes.resolve import CitationLinker, CitationReport, CodeReferences

ROOT_ID = "root"

_ABSATZ = int(Level.ABSATZ)
_TYPE_OF_LEVEL = {int(lvl): lvl.type_name for lvl in Level}
_CONTAINS = {int(lvl): contains_edge(lvl) for lvl in Level}
#: Shared int objects for offsets and orders (most are below this): the graph holds millions.
_INTS = list(range(1 << 17))


@dataclass
class PackedCode:
    """A parsed code (its layouts left in the worker) and its references, for :func:`add_to_graph`."""

    code: ParsedCode
    refs: CodeReferences | None  #: its references (``CitationLinker.read_code``), with citations
    counts: CitationReport | None  #: the worker's counts (mentions, unresolved, unknown laws)


class CodeNodes:
    """What resolving a reference looks up about nodes, answered from one parsed code's columns
    (the worker's counterpart of :class:`argus.statutes.resolve.GraphNodes`)."""

    __slots__ = ("_children", "_code", "attrs", "ids")

    def __init__(self, code: ParsedCode) -> None:
        self.ids = code.index  #: node id -> position; ``in`` tells whether a node exists
        self._code = code
        self._children: dict[int, list[str]] | None = None
        #: all attributes of a § (or a unit: the nodes that have a dict here besides the code)
        self.attrs = code.containers.__getitem__

    def type(self, node: str) -> str:
        return _TYPE_OF_LEVEL[self._code.types[self.ids[node]]]

    def parent(self, node: str) -> str | None:
        p = self._code.parents[self.ids[node]]
        return self._code.ids[p] if p >= 0 else None

    def code(self, node: str) -> str:
        return self._code.info.key  # a worker resolves nothing into other codes

    def children(self, node: str) -> list[str]:
        if self._children is None:
            children: dict[int, list[str]] = {}
            ids = self._code.ids
            for nid, p in zip(ids, self._code.parents):
                if p >= 0:
                    children.setdefault(p, []).append(nid)
            self._children = children
        return self._children.get(self.ids[node], [])


def pack_source(source: XmlSource, registry: CodeRegistry | None) -> PackedCode | list[ParseIssue]:
    """Parse one source and, with a ``registry`` (every code of the build), read and resolve its
    references; its issues when it does not parse."""
    try:
        data = source.read()
    except OSError as exc:
        return [ParseIssue(source.name, "unreadable", f"cannot read: {exc}")]
    parsed = parse_code(data, source.name)
    if not isinstance(parsed, ParsedCode):
        return parsed
    refs = counts = None
    if registry is not None:
        key = parsed.info.key
        table = CodeNodes(parsed)
        linker = CitationLinker(registry, {key: parsed.sections}, table=table, local_code=key)
        refs = linker.read_code(parsed.layouts)
        counts = linker.report
    parsed.layouts, parsed.index, parsed.containers = [], {}, {}  # the building process needs none of them
    return PackedCode(parsed, refs, counts)


def add_to_graph(graph: nx.MultiDiGraph, parsed: ParsedCode, interned: dict[str, str]) -> None:
    """Insert a parsed code's nodes and hierarchy edges into ``graph``.

    Goes straight to networkx's dicts (``_node``, ``_succ``, ``_pred``): the result, insertion
    order included, is what ``add_node`` and ``add_edge(parent, child, key=…, type=…)`` calls in
    document order would make, for a fraction of the cost. The code's dicts are built apart
    (:func:`code_dicts`) and merged with one ``dict.update`` per table: inserting node by node into
    graph-wide tables of a million entries misses the CPU cache at every step. ``interned`` maps
    labels to one shared string (kept across codes).
    """
    nodes, succ, pred, root_edge = code_dicts(parsed, interned)
    graph._succ[ROOT_ID].update(root_edge)
    graph._node.update(nodes)
    graph._succ.update(succ)
    graph._pred.update(pred)


def code_dicts(
    parsed: ParsedCode, interned: dict[str, str], pred: bool = True
) -> tuple[dict[str, dict], dict[str, dict], dict[str, dict], dict[str, dict]]:
    """networkx's dicts of one code: node attributes, successors, predecessors (empty without
    ``pred``) and the root's successor entry for the code node, each attribute dict created once,
    in its final size, with shared (interned) labels and offsets."""
    ids = parsed.ids
    code = parsed.info.key
    ints = _INTS
    n_ints = len(ints)
    table = [interned.setdefault(label, label) for label in parsed.label_table]
    labels, secs, starts, ends, flags = parsed.labels, parsed.secs, parsed.starts, parsed.ends, parsed.flags
    types, parents = parsed.types, parsed.parents
    large = iter(parsed.large)
    type_of = _TYPE_OF_LEVEL
    contains = _CONTAINS
    nodes: dict[str, dict] = {}
    succ: dict[str, dict] = {nid: {} for nid in ids}
    preds: dict[str, dict] = {}
    root_succ: dict[str, dict] = {}
    small = zip(map(table.__getitem__, labels), map(ids.__getitem__, secs), starts, ends, flags)
    for i, (nid, t, p) in enumerate(zip(ids, types, parents)):
        if t < _ABSATZ:
            nodes[nid] = next(large)
        else:
            label, sec, start, end, f = next(small)
            if start < n_ints:
                start = ints[start]
            if end < n_ints:
                end = ints[end]
            if t == _ABSATZ:
                nodes[nid] = {
                    "label": label,
                    "printed": f & PRINTED != 0,
                    "implicit": f & IMPLICIT != 0,
                    "section": sec,
                    "start": start,
                    "end": end,
                    "repealed": f & REPEALED != 0,
                    "type": "absatz",
                    "code": code,
                    "order": ints[i] if i < n_ints else i,
                    "parent": ids[p],
                }
            else:
                nodes[nid] = {
                    "label": label,
                    "section": sec,
                    "start": start,
                    "end": end,
                    "type": type_of[t],
                    "code": code,
                    "order": ints[i] if i < n_ints else i,
                    "parent": ids[p],
                }
        key = contains[t]
        keydict = {key: {"type": key}}
        if p >= 0:
            parent = ids[p]
            succ[parent][nid] = keydict
        else:
            parent = ROOT_ID
            root_succ[nid] = keydict
        if pred:
            preds[nid] = {parent: keydict}
    return nodes, succ, preds, root_succ
