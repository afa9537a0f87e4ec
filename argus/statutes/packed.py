"""One code's part of the statute graph as compact arrays: what a build's worker sends the building process.

A worker makes everything of one file in one pass (:func:`pack_source`): it parses the XML, splits
the Sätze, reads the references in every § and resolves those that stay within the code
(:meth:`~argus.statutes.resolve.CitationLinker.read_code`), then packs the result. The pack holds
node ids as one list of strings; node types, parents, sections and offsets as arrays; labels as
indexes into a table of the code's distinct labels; only the few large nodes (the code, its units
and §§) as attribute dicts; and the references as events. Pickled, that is a fraction of the
size and of the (un)pickling time of a dict per node.

The building process turns a pack into networkx's adjacency dicts (:func:`add_to_graph`), creating
each attribute dict once, in its final size, with shared (interned) labels and offsets.
"""

from __future__ import annotations

import time
from array import array
from dataclasses import dataclass, field

import networkx as nx

from argus.statutes.codes import CodeRegistry
from argus.statutes.corpus import XmlSource
from argus.statutes.model import Level, contains_edge
from argus.statutes.parser import CodeInfo, ParsedCode, ParseIssue, parse_code
from argus.statutes.resolve import CitationLinker, CitationReport

ROOT_ID = "root"

_ABSATZ, _SATZ = int(Level.ABSATZ), int(Level.SATZ)
_LEVEL_OF_TYPE = {lvl.type_name: int(lvl) for lvl in Level}
_TYPE_OF_LEVEL = {int(lvl): lvl.type_name for lvl in Level}
_CONTAINS = {int(lvl): contains_edge(lvl) for lvl in Level}
_PRINTED, _IMPLICIT, _REPEALED = 1, 2, 4  #: an Absatz's flags
#: Shared int objects for offsets and orders (most are below this): the graph holds millions.
_INTS = list(range(1 << 17))


@dataclass
class PackedCode:
    """One parsed code, ready for :func:`add_to_graph` (see the module docstring)."""

    info: CodeInfo
    issues: list[ParseIssue]
    sections: dict[tuple[str, str], str]
    ids: list[str]  #: node ids in document order (the ``order`` attribute is the position)
    types: bytes  #: each node's :class:`Level`
    parents: array  #: each node's parent (position; -1: the root)
    large: list[dict]  #: attributes of the code, unit and § nodes, in order
    #: Absätze, Sätze and list items, in order: label (index into ``label_table``), § (position),
    #: start, end, Absatz flags
    labels: array
    label_table: list[str]
    secs: array
    starts: array
    ends: array
    flags: bytes
    events: list = field(default_factory=list)  #: references (``CitationLinker.read_code``)
    counts: CitationReport | None = None  #: the worker's counts (mentions, unresolved, unknown laws)
    seconds: float = 0.0  #: time the worker spent on the file


def pack_source(source: XmlSource, registry: CodeRegistry | None) -> PackedCode | list[ParseIssue]:
    """Parse one source and, with a ``registry`` (every code of the build), read and resolve its
    references; its issues when it does not parse."""
    t0 = time.perf_counter()
    try:
        data = source.read()
    except OSError as exc:
        return [ParseIssue(source.name, "unreadable", f"cannot read: {exc}")]
    parsed = parse_code(data, source.name)
    if not isinstance(parsed, ParsedCode):
        return parsed
    pack = _pack(parsed)
    if registry is not None:
        nodes = dict(parsed.nodes)
        succ: dict[str, dict] = {n: {} for n in nodes}
        for u, v, k in parsed.edges:
            succ[u][v] = (k,)
        linker = CitationLinker(
            None, registry, {parsed.info.key: parsed.sections}, local_code=parsed.info.key, nodes=nodes, succ=succ
        )
        pack.events = linker.read_code(parsed.layouts)
        pack.counts = linker.report
    pack.seconds = time.perf_counter() - t0
    return pack


def _pack(parsed: ParsedCode) -> PackedCode:
    ids = [n for n, _ in parsed.nodes]
    index = dict(zip(ids, range(len(ids))))
    types = bytearray()
    parents = array("i")
    large: list[dict] = []
    labels = array("i")
    label_index: dict[str, int] = {}
    secs, starts, ends = array("i"), array("i"), array("i")
    flags = bytearray()
    level_of = _LEVEL_OF_TYPE
    for _, a in parsed.nodes:
        t = level_of[a["type"]]
        types.append(t)
        parent = a.get("parent")
        parents.append(-1 if parent is None else index[parent])
        if t < _ABSATZ:
            large.append(a)
            continue
        label = a["label"]
        li = label_index.get(label)
        if li is None:
            li = label_index[label] = len(label_index)
        labels.append(li)
        secs.append(index[a["section"]])
        starts.append(a["start"])
        ends.append(a["end"])
        if t == _ABSATZ:
            flags.append(
                (_PRINTED if a["printed"] else 0) | (_IMPLICIT if a["implicit"] else 0) | (_REPEALED if a["repealed"] else 0)
            )
        else:
            flags.append(0)
    return PackedCode(
        parsed.info,
        parsed.issues,
        parsed.sections,
        ids,
        bytes(types),
        parents,
        large,
        labels,
        list(label_index),
        secs,
        starts,
        ends,
        bytes(flags),
    )


def add_to_graph(graph: nx.MultiDiGraph, pack: PackedCode, interned: dict[str, str]) -> None:
    """Insert a pack's nodes and hierarchy edges into ``graph``.

    Goes straight to networkx's dicts (``_node``, ``_succ``, ``_pred``): the result, insertion
    order included, is what ``add_node`` and ``add_edge(parent, child, key=…, type=…)`` calls in
    document order would make, for a fraction of the cost. The code's dicts are built apart and
    merged with one ``dict.update`` per table: inserting node by node into graph-wide tables of a
    million entries misses the CPU cache at every step. ``interned`` maps labels to one shared
    string (kept across packs).
    """
    ids = pack.ids
    code = pack.info.key
    ints = _INTS
    n_ints = len(ints)
    table = [interned.setdefault(label, label) for label in pack.label_table]
    labels, secs, starts, ends, flags = pack.labels, pack.secs, pack.starts, pack.ends, pack.flags
    types, parents = pack.types, pack.parents
    large = iter(pack.large)
    type_of = _TYPE_OF_LEVEL
    contains = _CONTAINS
    nodes: dict[str, dict] = {}
    succ: dict[str, dict] = {nid: {} for nid in ids}
    pred: dict[str, dict] = {}
    j = 0
    for i, nid in enumerate(ids):
        t = types[i]
        p = parents[i]
        if t < _ABSATZ:
            nodes[nid] = next(large)
        else:
            start, end = starts[j], ends[j]
            if start < n_ints:
                start = ints[start]
            if end < n_ints:
                end = ints[end]
            if t == _ABSATZ:
                f = flags[j]
                nodes[nid] = {
                    "label": table[labels[j]],
                    "printed": f & _PRINTED != 0,
                    "implicit": f & _IMPLICIT != 0,
                    "section": ids[secs[j]],
                    "start": start,
                    "end": end,
                    "repealed": f & _REPEALED != 0,
                    "type": "absatz",
                    "code": code,
                    "order": ints[i] if i < n_ints else i,
                    "parent": ids[p],
                }
            else:
                nodes[nid] = {
                    "label": table[labels[j]],
                    "section": ids[secs[j]],
                    "start": start,
                    "end": end,
                    "type": type_of[t],
                    "code": code,
                    "order": ints[i] if i < n_ints else i,
                    "parent": ids[p],
                }
            j += 1
        key = contains[t]
        keydict = {key: {"type": key}}
        if p >= 0:
            parent = ids[p]
            succ[parent][nid] = keydict
        else:
            parent = ROOT_ID
            graph._succ[ROOT_ID][nid] = keydict
        pred[nid] = {parent: keydict}
    graph._node.update(nodes)
    graph._succ.update(succ)
    graph._pred.update(pred)
