"""Fingerprints of a statute graph: did a change to the build (or a save and reload) alter the graph?

:func:`graph_digest` hashes what the graph *is*: every node with its attributes and every edge
with its key and attributes, in a canonical (sorted) order, so two graphs built in different
orders hash alike. :func:`layout_digest` also hashes what the graph's users see in order: node
insertion order, attribute order, adjacency order (``StatuteGraph.children`` relies on it) and the
side tables (codes, § index, issues, citation report). The tests pin builds by these hashes and
``bench/statutes_build.py`` prints them.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from typing import TYPE_CHECKING

import networkx as nx

if TYPE_CHECKING:
    from argus.statutes.graph import StatuteGraph


def _line(value: object) -> bytes:
    return json.dumps(value, sort_keys=True, ensure_ascii=False).encode()


def graph_digest(graph: nx.MultiDiGraph) -> str:
    """sha256 of the nodes sorted by id with their attributes, then the edges ``[u, v, key,
    attributes]`` sorted by their JSON text."""
    h = hashlib.sha256()
    for n in sorted(graph._node):
        h.update(_line([n, graph._node[n]]))
    edges = sorted(
        json.dumps([u, v, k, a], sort_keys=True, ensure_ascii=False)
        for u, nbrs in graph._succ.items()
        for v, keydict in nbrs.items()
        for k, a in keydict.items()
    )
    for line in edges:
        h.update(line.encode())
    return h.hexdigest()


def layout_digest(sg: StatuteGraph) -> str:
    """sha256 of everything order-sensitive about a build: nodes and their attributes in insertion
    order, successor and predecessor order, codes, the § index, issues and the citation report."""
    h = hashlib.sha256()
    g = sg.graph
    for n, attrs in g._node.items():
        h.update(json.dumps([n, list(attrs.items())], ensure_ascii=False).encode())
    for table in (g._succ, g._pred):
        h.update(b"|")
        for u, nbrs in table.items():
            h.update(json.dumps([u, [[v, list(kd.items())] for v, kd in nbrs.items()]], ensure_ascii=False).encode())
    h.update(_line([asdict(c) for c in sg.codes.values()]))
    h.update(_line({code: [[k[0], k[1], sid] for k, sid in idx.items()] for code, idx in sg.sections.items()}))
    h.update(_line([asdict(i) for i in sg.issues]))
    h.update(_line(sg.citation_report.as_dict()))
    return h.hexdigest()
