"""A parsed code's part of the statute graph, as networkx stores it (shared by the building
process and the helpers of a parallel build, ``argus.statutes.parallel``)."""

from __future__ import annotations

from argus.statutes.model import Level, contains_edge
from argus.statutes.parser import ParsedCode

ROOT_ID = "root"

CodeTree = tuple[dict, dict, dict, list, list]


def code_tree(parsed: ParsedCode) -> CodeTree:
    """A parsed code's nodes and hierarchy edges (the root's edge to the code first) as networkx
    stores them: node attributes, successor and predecessor dicts of its own nodes, plus the edges
    that touch nodes outside the code (the root) as ``(u, v, keydict)`` for each side.

    Built in small dicts and merged into the graph by ``argus.statutes.graph._merge_tree`` with one ``dict.update``
    per table: inserting edge by edge into graph-wide tables of a million entries misses the CPU
    cache at every step. Workers of a parallel build run this too.
    """
    local_nodes = dict(parsed.nodes)
    local_succ: dict[str, dict] = {n: {} for n in local_nodes}
    local_pred: dict[str, dict] = {n: {} for n in local_nodes}
    outside_succ: list[tuple[str, str, dict]] = []
    outside_pred: list[tuple[str, str, dict]] = []
    root_key = contains_edge(Level.CODE)
    for u, v, k in ((ROOT_ID, parsed.info.node_id, root_key), *parsed.edges):
        keydict = {k: {"type": k}}
        adj = local_succ.get(u)
        if adj is None:
            outside_succ.append((u, v, keydict))
        else:
            adj[v] = keydict
        adj = local_pred.get(v)
        if adj is None:
            outside_pred.append((u, v, keydict))
        else:
            adj[u] = keydict
    return local_nodes, local_succ, local_pred, outside_succ, outside_pred
