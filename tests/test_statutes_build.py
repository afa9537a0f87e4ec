"""The graph build is pinned: a canonical hash of a small graph, and parallel builds equal serial ones."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict

import networkx as nx
import pytest

from argus.paths import data_root
from argus.statutes.corpus import XmlSource, subset_sources
from argus.statutes.graph import ROOT_ID, build_statute_graph, code_tree
from argus.statutes.model import Level, contains_edge
from argus.statutes.parser import parse_code

DATA = data_root()
pytestmark = pytest.mark.skipif(
    not (DATA / "de_statutes" / "gii" / "MANIFEST.json").exists(),
    reason=f"statute data not found under {DATA} (set ARGUS_DATA_ROOT to the shared data folder)",
)

#: sha256 of the AGG + UWG 2004 graph (sorted nodes with attributes, sorted edges with keys and
#: attributes), computed with the build as it was before the speed-ups (commit df7f9e1).
AGG_UWG_DIGEST = "260d797716b91d360c127cdada8e32c43f063bb14fd443c70fc3df06bf6027fd"
#: The same for five codes, three cross-code citation edges among them.
FIVE_CODES = ["AGG", "UWG 2004", "KSchG", "BUrlG", "TzBfG"]
FIVE_CODES_DIGEST = "a349b4926d76bf65ef0058d3f2bc9a9df247c9ec6ae14ecef9a4ced6bd086844"


def graph_digest(graph: nx.MultiDiGraph) -> str:
    """Canonical hash: nodes sorted by id with their attributes, edges sorted, keys and attributes."""
    h = hashlib.sha256()
    for n, attrs in sorted(graph.nodes(data=True), key=lambda item: item[0]):
        h.update(json.dumps([n, attrs], sort_keys=True, ensure_ascii=False).encode())
    edges = sorted(
        json.dumps([u, v, k, a], sort_keys=True, ensure_ascii=False) for u, v, k, a in graph.edges(keys=True, data=True)
    )
    for line in edges:
        h.update(line.encode())
    return h.hexdigest()


def _layout(sg) -> tuple:
    """Everything order-sensitive about a build: node order, attribute order, adjacency order, side tables."""
    g = sg.graph
    return (
        [(n, list(a.items())) for n, a in g.nodes(data=True)],
        [(u, list(nbrs.items())) for u, nbrs in g._succ.items()],
        [(v, list(nbrs.items())) for v, nbrs in g._pred.items()],
        [asdict(c) for c in sg.codes.values()],
        {code: list(idx.items()) for code, idx in sg.sections.items()},
        [asdict(i) for i in sg.issues],
        sg.citation_report.as_dict(),
    )


@pytest.mark.parametrize("workers", [1, 2])
def test_two_code_graph_is_pinned(workers):
    sg = build_statute_graph(subset_sources(["AGG", "UWG 2004"]), workers=workers)
    assert graph_digest(sg.graph) == AGG_UWG_DIGEST


def test_five_code_graph_is_pinned():
    sg = build_statute_graph(subset_sources(FIVE_CODES), workers=1)
    assert sg.citation_report.cross_code == 3
    assert graph_digest(sg.graph) == FIVE_CODES_DIGEST


@pytest.mark.parametrize("workers", [2, 3])
def test_parallel_build_equals_serial_build(workers):
    # bad input and a duplicate too: issues must come in the serial order
    sources = [
        XmlSource("broken.xml", data=b"<dokumente><norm><metadaten><jurabk>X</jurabk>"),
        *subset_sources(FIVE_CODES),
        XmlSource("foreign.xml", data=b"<html><body/></html>"),
        *subset_sources(["AGG"]),
        *subset_sources(["GG", "SGB 1", "BGBEG"]),
    ]
    serial = build_statute_graph(sources, workers=1)
    parallel = build_statute_graph(sources, workers=workers)
    assert _layout(parallel) == _layout(serial)
    assert graph_digest(parallel.graph) == graph_digest(serial.graph)
    assert [i.kind for i in parallel.issues].count("duplicate_code") == 1


def test_parallel_build_without_citations():
    sources = subset_sources(FIVE_CODES)
    serial = build_statute_graph(sources, workers=1, link_citations=False)
    parallel = build_statute_graph(sources, workers=2, link_citations=False)
    assert _layout(parallel) == _layout(serial)
    assert parallel.citation_report.edges == 0


def test_code_tree_inserts_what_the_public_networkx_calls_would():
    src = subset_sources(["KSchG"])[0]
    parsed = parse_code(src.read(), src.name)
    fast = build_statute_graph([src], workers=1, link_citations=False).graph
    slow = nx.MultiDiGraph()
    slow.add_node(ROOT_ID, type="root", label="Root", code="", order=-1)
    slow.add_nodes_from(parsed.nodes)
    code_key = contains_edge(Level.CODE)
    for u, v, k in [(ROOT_ID, parsed.info.node_id, code_key), *parsed.edges]:
        slow.add_edge(u, v, key=k, type=k)
    assert list(fast.nodes(data=True)) == list(slow.nodes(data=True))
    assert list(fast.edges(keys=True, data=True)) == list(slow.edges(keys=True, data=True))
    assert [(v, list(p)) for v, p in fast._pred.items()] == [(v, list(p)) for v, p in slow._pred.items()]
    local_nodes, local_succ, local_pred, outside_succ, outside_pred = code_tree(parsed)
    assert [u for u, _, _ in outside_succ] == [ROOT_ID] and not outside_pred
    assert outside_succ[0][2] is local_pred[parsed.info.node_id][ROOT_ID]  # one key dict, both directions


def test_helpers_take_chunks_from_the_back(monkeypatch):
    # The building process starts late in both phases, so helpers surely parse and read some chunks.
    import time

    import argus.statutes.parallel as parallel

    seen: list[parallel.SharedBuild] = []

    class LateStart(parallel.SharedBuild):
        def parsed(self):
            seen.append(self)
            time.sleep(1.0)
            yield from super().parsed()

        def references(self, read_here):
            time.sleep(1.0)
            yield from super().references(read_here)

    monkeypatch.setattr(parallel, "SharedBuild", LateStart)
    sources = subset_sources(FIVE_CODES)
    parallel_sg = build_statute_graph(sources, workers=2)
    shared = seen[0]
    assert shared.parsed_here < len(shared.chunks) and shared.claimed_here < len(shared.chunks)
    assert _layout(parallel_sg) == _layout(build_statute_graph(sources, workers=1))
    assert graph_digest(parallel_sg.graph) == FIVE_CODES_DIGEST
