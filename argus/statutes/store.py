"""The statute graph as a build makes it: every code's columns and the citation edges as columns.

A build (:func:`argus.statutes.graph.build_statute_graph`) does not put a million nodes into
networkx's dicts: it keeps each code as its worker packed it (:class:`~argus.statutes.parser.ParsedCode`:
ids, levels, parents, labels, offsets) and the ``cites_*`` edges as columns, a tenth of the memory
and of the time. The JSON writer reads this store directly (:meth:`GraphStore.json_nodes`,
:meth:`GraphStore.json_edges`: node-link records); the ``networkx.MultiDiGraph`` is made from it on first use
(:meth:`GraphStore.to_networkx`), with the same nodes, edges, attributes and insertion orders
(successors and predecessors) as adding them one by one in build order would give.

While the build resolves references into other codes, :class:`StoreNodes` answers what the
resolver asks about nodes (their level, parent, children, § attributes) from the same columns.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterator
from typing import TypeVar

import networkx as nx

from argus.statutes.model import Level
from argus.statutes.packed import (
    _CONTAINS,
    _INTS,
    _TYPE_OF_LEVEL,
    ROOT_ID,
    add_to_graph,
)
from argus.statutes.parser import IMPLICIT, PRINTED, REPEALED, ParsedCode
from argus.statutes.resolve import CROSS_CODE, PARTIAL, RELATIVE

#: The root node's attributes (the graph's one node above the codes)
ROOT_ATTRS = {"type": "root", "label": "Root", "code": "", "order": -1}
_ROOT_LEVEL = int(Level.ROOT)
_ABSATZ = int(Level.ABSATZ)
T = TypeVar("T")


class GraphStore:
    """Codes in build order plus citation edges in the order they were added.

    ``index`` maps every node id to its position in the whole graph (the root is 0, then each
    code's nodes in document order); ``types`` and ``parents`` are the graph-wide columns of
    level and parent position (-1 for the root and the codes, whose attributes name no parent). ``large`` holds the attribute dicts of the root, the codes, their
    units and §§ (the same dict objects the networkx graph will hold).
    """

    def __init__(self) -> None:
        self.codes: list[ParsedCode] = []
        self.offsets: list[int] = []  #: position of each code's first node
        self.by_key: dict[str, int] = {}  #: code key -> its place in ``codes``
        self.index: dict[str, int] = {ROOT_ID: 0}
        self.ids: list[str] = [ROOT_ID]
        self.types = bytearray([_ROOT_LEVEL])
        self.parents = array("i", [-1])
        self.large: dict[str, dict] = {ROOT_ID: dict(ROOT_ATTRS)}
        # citation edges, one entry each, in the order they were added
        self.cite_u: list[str] = []
        self.cite_v: list[str] = []
        self.cite_key: list[str] = []
        self.cite_mention: list[str] = []
        self.cite_origin: list[str] = []
        self.cite_designator: list[str] = []
        self.cite_flags = bytearray()
        self.cite_ranges: list[tuple[int, int]] = []  #: per code: its Sätze's edges ``[lo, hi)``
        self._seen: set[tuple[str, str]] = set()  #: (Satz, target) of the citing code's edges so far
        self._citing: int | None = None

    # -- building -----------------------------------------------------------------------------
    def clashes(self, parsed: ParsedCode) -> bool:
        """True when one of the code's node ids is in the store already (it cannot be added)."""
        return not self.index.keys().isdisjoint(parsed.ids)

    def add(self, parsed: ParsedCode) -> None:
        """Add a code (its ids must be new: :meth:`clashes`); its layouts are not kept."""
        base = len(self.ids)
        ids = parsed.ids
        self.by_key[parsed.info.key] = len(self.codes)
        self.codes.append(parsed)
        self.offsets.append(base)
        self.cite_ranges.append((0, 0))
        self.index.update(zip(ids, range(base, base + len(ids))))
        self.ids.extend(ids)
        self.types.extend(parsed.types)
        self.parents.extend(p + base if p >= 0 else -1 for p in parsed.parents)
        large = self.large
        for nid, attrs in zip(_large_ids(parsed), parsed.large):
            large[nid] = attrs

    def begin_citing(self, code_key: str) -> None:
        """The citation edges that follow come from the Sätze of ``code_key`` (codes in build order)."""
        self._end_citing()
        self._citing = self.by_key[code_key]
        self._seen = set()
        n = len(self.cite_u)
        self.cite_ranges[self._citing] = (n, n)

    def _end_citing(self) -> None:
        if self._citing is not None:
            lo, _ = self.cite_ranges[self._citing]
            self.cite_ranges[self._citing] = (lo, len(self.cite_u))
            self._citing = None

    def add_cite(
        self, satz: str, target: str, key: str, mention: str, origin: str, flags: int, designator: str
    ) -> bool:
        """Record a ``cites_*`` edge of the code being cited from; False (nothing recorded) when
        the Satz cites the target already: the first mention wins."""
        pair = (satz, target)
        if pair in self._seen:
            return False
        self._seen.add(pair)
        self.cite_u.append(satz)
        self.cite_v.append(target)
        self.cite_key.append(key)
        self.cite_mention.append(mention)
        self.cite_origin.append(origin)
        self.cite_designator.append(designator)
        self.cite_flags.append(flags)
        return True

    def finish(self) -> None:
        """The end of the build."""
        self._end_citing()
        self._seen = set()

    # -- reading ------------------------------------------------------------------------------
    def number_of_nodes(self) -> int:
        return len(self.ids)

    def number_of_edges(self) -> int:
        """One hierarchy edge into every node but the root, plus the citation edges."""
        return len(self.ids) - 1 + len(self.cite_u)

    def _cite_attrs(self, j: int) -> dict:
        """A citation edge's attributes, in the order the graph holds them."""
        f = self.cite_flags[j]
        key = self.cite_key[j]
        return {
            "type": key,
            "mention": self.cite_mention[j],
            "origin": self.cite_origin[j],
            "cross_code": f & CROSS_CODE != 0,
            "partial": f & PARTIAL != 0,
            "designator": self.cite_designator[j],
            "relative": f & RELATIVE != 0,
        }

    def to_networkx(self) -> nx.MultiDiGraph:
        """The graph as ``networkx.MultiDiGraph``: codes in build order, then the citation edges in
        the order they were found."""
        graph = nx.MultiDiGraph()
        graph.add_node(ROOT_ID, **self.large[ROOT_ID])
        interned: dict[str, str] = {}
        for parsed in self.codes:
            add_to_graph(graph, parsed, interned)
        succ, pred = graph._succ, graph._pred
        for j, (u, v, key) in enumerate(zip(self.cite_u, self.cite_v, self.cite_key)):
            succ_u = succ[u]
            keydict = succ_u.get(v)
            if keydict is None:
                keydict = succ_u[v] = {}
                pred[v][u] = keydict
            keydict[key] = self._cite_attrs(j)
        return graph

    def json_nodes(self) -> Iterator[dict]:
        """Every node's node-link record (its attributes, then ``"id"``) in the graph's order, as
        :meth:`to_networkx` would hold the node (made a node at a time)."""
        yield {**self.large[ROOT_ID], "id": ROOT_ID}
        absatz, ints = _ABSATZ, _INTS
        n_ints = len(ints)
        for parsed in self.codes:
            ids = parsed.ids
            code = parsed.info.key
            table = parsed.label_table
            large = iter(parsed.large)
            small = zip(parsed.labels, parsed.secs, parsed.starts, parsed.ends, parsed.flags)
            for i, (nid, t, p) in enumerate(zip(ids, parsed.types, parsed.parents)):
                if t < absatz:
                    yield {**next(large), "id": nid}
                    continue
                label, sec, start, end, f = next(small)
                if start < n_ints:
                    start = ints[start]
                if end < n_ints:
                    end = ints[end]
                if t == absatz:
                    yield {
                        "label": table[label],
                        "printed": f & PRINTED != 0,
                        "implicit": f & IMPLICIT != 0,
                        "section": ids[sec],
                        "start": start,
                        "end": end,
                        "repealed": f & REPEALED != 0,
                        "type": "absatz",
                        "code": code,
                        "order": ints[i] if i < n_ints else i,
                        "parent": ids[p],
                        "id": nid,
                    }
                else:
                    yield {
                        "label": table[label],
                        "section": ids[sec],
                        "start": start,
                        "end": end,
                        "type": _TYPE_OF_LEVEL[t],
                        "code": code,
                        "order": ints[i] if i < n_ints else i,
                        "parent": ids[p],
                        "id": nid,
                    }

    def _cite_record(self, j: int) -> dict:
        f = self.cite_flags[j]
        key = self.cite_key[j]
        return {
            "type": key,
            "mention": self.cite_mention[j],
            "origin": self.cite_origin[j],
            "cross_code": f & CROSS_CODE != 0,
            "partial": f & PARTIAL != 0,
            "designator": self.cite_designator[j],
            "relative": f & RELATIVE != 0,
            "source": self.cite_u[j],
            "target": self.cite_v[j],
            "key": key,
        }

    def json_edges(self) -> Iterator[dict]:
        """Every edge's node-link record (its attributes, then ``"source"``, ``"target"``,
        ``"key"``) in the order networkx's adjacency of :meth:`to_networkx` gives them: the root's,
        then each node's in the graph's order, its hierarchy children first, then what it cites."""
        return self.edge_walk(_contains_record, self._cite_record)

    def edge_walk(self, contains: Callable[[str, str, str], T], cite: Callable[[int], T]) -> Iterator[T]:
        """Every edge in the order of :meth:`json_edges`, as ``contains(source, target, key)`` for
        a hierarchy edge or ``cite(j)`` for the ``j``-th citation edge (its columns)."""
        contains_of = _CONTAINS
        contains_code = contains_of[int(Level.CODE)]
        for parsed in self.codes:
            yield contains(ROOT_ID, parsed.ids[0], contains_code)
        cite_u, cite_v = self.cite_u, self.cite_v
        for k, parsed in enumerate(self.codes):
            ids, types, parents = parsed.ids, parsed.types, parsed.parents
            lo, hi = self.cite_ranges[k]
            cites: dict[str, dict[str, list[int]]] = {}  #: Satz -> target -> its edges (positions)
            for j in range(lo, hi):
                cites.setdefault(cite_u[j], {}).setdefault(cite_v[j], []).append(j)
            kids: list[list[int]] = [[] for _ in ids]
            for i, p in enumerate(parents):
                if p >= 0:
                    kids[p].append(i)
            for i, u in enumerate(ids):
                mine = cites.get(u)
                for c in kids[i]:
                    v = ids[c]
                    yield contains(u, v, contains_of[types[c]])
                    if mine is not None and v in mine:
                        for j in mine.pop(v):  # a Satz that cites its own list item: one key dict
                            yield cite(j)
                if mine:
                    for edges in mine.values():
                        for j in edges:
                            yield cite(j)


def _contains_record(source: str, target: str, key: str) -> dict:
    return {"type": key, "source": source, "target": target, "key": key}


def _large_ids(parsed: ParsedCode) -> Iterator[str]:
    """The ids of a code's nodes that have attribute dicts of their own (the code, units, §§)."""
    absatz = int(Level.ABSATZ)
    return (nid for nid, t in zip(parsed.ids, parsed.types) if t < absatz)


class StoreNodes:
    """What resolving a reference looks up about nodes, answered from a :class:`GraphStore` (the
    building process's counterpart of :class:`argus.statutes.packed.CodeNodes`)."""

    __slots__ = ("_children", "_store", "ids")

    def __init__(self, store: GraphStore) -> None:
        self._store = store
        self.ids = store.index  #: ``in`` tells whether a node exists
        self._children: dict[int, list[str]] = {}  #: per code (by place): its nodes' children

    def type(self, node: str) -> str:
        return _TYPE_OF_LEVEL[self._store.types[self.ids[node]]]

    def parent(self, node: str) -> str | None:
        """The parent's id; None for the root and the codes (as their attributes have none)."""
        p = self._store.parents[self.ids[node]]
        return self._store.ids[p] if p >= 0 else None

    def attrs(self, node: str) -> dict:
        """All attributes (asked of §§ only)."""
        return self._store.large[node]

    def code(self, node: str) -> str:
        store = self._store
        return store.codes[bisect_right(store.offsets, self.ids[node]) - 1].info.key

    def children(self, node: str) -> list[str]:
        """Hierarchy children in document order."""
        store = self._store
        pos = self.ids[node]
        k = bisect_right(store.offsets, pos) - 1
        if k < 0:
            return [c.ids[0] for c in store.codes]
        children = self._children.get(k)
        if children is None:
            parsed = store.codes[k]
            ids = parsed.ids
            base = store.offsets[k]
            children = {}
            for nid, p in zip(ids, parsed.parents):
                if p >= 0:
                    children.setdefault(p + base, []).append(nid)
            self._children[k] = children
        return children.get(pos, [])
