"""The graph build is pinned: canonical hashes of small graphs and of the 83-code subset, and
builds in worker processes equal builds in one."""

from __future__ import annotations

import os
from dataclasses import asdict

import networkx as nx
import pytest

from argus.paths import data_root
from argus.statutes import packed
from argus.statutes.corpus import XmlSource, subset_sources
from argus.statutes.digest import graph_digest, layout_digest
from argus.statutes.graph import ROOT_ID, build_statute_graph
from argus.statutes.model import Level, contains_edge
from argus.statutes.parser import parse_code, read_code_info

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
#: The 83-code subset (194,104 nodes, 296,058 edges), by the build before the one-pass workers
#: (commit ad1a93e): ``graph_digest`` and ``layout_digest`` (every order and the side tables too).
SUBSET_DIGEST = "cdd1c12070444c7a43c07447f30f7eca385772a8871f488ebe0e19b99fce14ed"
SUBSET_LAYOUT_DIGEST = "459827187adcace55d2b817141714aebf7a9ca845c66aee7e1fe56ed9b57d500"


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


def test_subset_graph_is_pinned():
    sg = build_statute_graph(subset_sources())
    assert (sg.graph.number_of_nodes(), sg.graph.number_of_edges()) == (194_104, 296_058)
    assert graph_digest(sg.graph) == SUBSET_DIGEST
    assert layout_digest(sg) == SUBSET_LAYOUT_DIGEST


def test_packs_insert_what_the_public_networkx_calls_would():
    src = subset_sources(["KSchG"])[0]
    parsed = parse_code(src.read(), src.name)
    fast = build_statute_graph([src], workers=1, link_citations=False).graph
    slow = nx.MultiDiGraph()
    slow.add_node(ROOT_ID, type="root", label="Root", code="", order=-1)
    slow.add_nodes_from(parsed.nodes)
    code_key = contains_edge(Level.CODE)
    for u, v, k in [(ROOT_ID, parsed.info.node_id, code_key), *parsed.edges]:
        slow.add_edge(u, v, key=k, type=k)
    assert [(n, list(a.items())) for n, a in fast.nodes(data=True)] == [
        (n, list(a.items())) for n, a in slow.nodes(data=True)
    ]
    assert list(fast.edges(keys=True, data=True)) == list(slow.edges(keys=True, data=True))
    assert [(v, list(p)) for v, p in fast._pred.items()] == [(v, list(p)) for v, p in slow._pred.items()]
    assert all(fast._pred[v][u] is keydict for u, nbrs in fast._succ.items() for v, keydict in nbrs.items())


def test_workers_pack_the_files(monkeypatch, tmp_path):
    real = packed.pack_source

    def pack_and_note(source, registry):
        (tmp_path / str(os.getpid())).touch()
        return real(source, registry)

    monkeypatch.setattr("argus.statutes.parallel.pack_source", pack_and_note)
    sources = subset_sources(FIVE_CODES)
    sg = build_statute_graph(sources, workers=2)
    assert graph_digest(sg.graph) == FIVE_CODES_DIGEST
    assert {p.name for p in tmp_path.iterdir()} - {str(os.getpid())}, "no file was packed in a worker"


def test_the_build_leaves_its_objects_to_the_collectors_oldest_generation():
    # Left young, all of them would be walked by the first collections after the build.
    import gc

    assert gc.isenabled()
    sg = build_statute_graph(subset_sources(FIVE_CODES), workers=1)
    assert gc.isenabled()
    oldest = {id(o) for o in gc.get_objects(generation=2)}
    store = sg._store  # what the build made: the codes' columns, the § attribute dicts
    made = [store.large, store.codes, *store.codes, *(a for a in store.large.values() if gc.is_tracked(a))]
    assert store.codes and all(id(o) in oldest for o in made)
    # so are the networkx dicts made from the store on first use
    graph = sg.graph
    assert gc.isenabled()
    oldest = {id(o) for o in gc.get_objects(generation=2)}
    tracked = [kd for nbrs in graph._succ.values() for kd in nbrs.values()]  # the keydicts hold dicts
    assert tracked and all(id(kd) in oldest for kd in tracked)


def test_a_failing_worker_fails_the_build(monkeypatch):
    def broken(source, registry):
        raise ValueError(f"cannot pack {source.name}")

    monkeypatch.setattr("argus.statutes.parallel.pack_source", broken)
    with pytest.raises(ValueError, match="cannot pack"):
        build_statute_graph(subset_sources(FIVE_CODES), workers=2)


@pytest.mark.timeout(120)
def test_a_failing_worker_fails_the_build_under_a_sigterm_handler_that_does_not_raise(monkeypatch):
    # the pool terminates its workers with SIGTERM; a handler they inherited that only notes the signal kept
    # one waiting for work forever, and the build hung instead of failing
    import signal

    def broken(source, registry):
        raise ValueError(f"cannot pack {source.name}")

    monkeypatch.setattr("argus.statutes.parallel.pack_source", broken)
    noted = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: noted.append(signum))
    try:
        with pytest.raises(ValueError, match="cannot pack"):
            build_statute_graph(subset_sources(FIVE_CODES), workers=2)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert noted == []  # the parent was never signalled


@pytest.mark.parametrize("workers", [1, 2])
def test_a_file_broken_after_its_header_leaves_the_registry(workers):
    # The header names the BetrVG, so the first, header-only pass makes it a citable code; the file
    # does not parse, so the graph has no BetrVG and "§ 87 des Betriebsverfassungsgesetzes" must
    # count as a reference to a law outside it, as when the file is not there at all.
    broken = XmlSource(
        "broken-betrvg.xml",
        data=b'<dokumente doknr="BJNR000130972"><norm doknr="BJNR000130972"><metadaten><jurabk>BetrVG</jurabk>'
        b"<langue>Betriebsverfassungsgesetz</langue></metadaten></norm><norm><metadaten><enbez>&#167; 1",
    )
    assert read_code_info(broken.read(), broken.name).key == "BetrVG"
    sources = subset_sources(FIVE_CODES)
    with_broken = build_statute_graph([broken, *sources], workers=workers)
    without = build_statute_graph(sources, workers=workers)
    assert [i.kind for i in with_broken.issues] == ["malformed_xml"] + [i.kind for i in without.issues]
    assert graph_digest(with_broken.graph) == graph_digest(without.graph)
    assert with_broken.citation_report.as_dict() == without.citation_report.as_dict()
    assert without.citation_report.unknown_designators["des Betriebsverfassungsgesetzes"] > 0


def test_header_pass_reads_what_the_parser_reads():
    for src in subset_sources():
        parsed = parse_code(src.read(), src.name)
        head = read_code_info(src.read(), src.name)
        assert (head.key, head.node_id, head.jurabk, head.amtabk, head.title, head.short_title) == (
            parsed.info.key,
            parsed.info.node_id,
            parsed.info.jurabk,
            parsed.info.amtabk,
            parsed.info.title,
            parsed.info.short_title,
        ), src.name


def test_the_store_answers_node_lookups_as_the_graph_does():
    # the building process resolves references into other codes on the store, before any graph exists
    from argus.statutes.resolve import GraphNodes
    from argus.statutes.store import StoreNodes

    sg = build_statute_graph(subset_sources(FIVE_CODES), workers=1)
    table = StoreNodes(sg._store)
    assert sg.number_of_nodes() == len(table.ids)
    graph = GraphNodes(sg.graph)
    assert list(table.ids) == list(graph.ids)
    for node in graph.ids:
        assert table.type(node) == graph.type(node), node
        assert table.parent(node) == graph.parent(node), node
        assert table.children(node) == graph.children(node), node
        if node != ROOT_ID:
            assert table.code(node) == graph.code(node), node
        if table.type(node) in ("section", "unit", "code"):
            assert table.attrs(node) is graph.attrs(node), node


def test_a_code_whose_node_ids_another_code_has_is_recorded_and_skipped():
    # A second file with another code name but the AGG's norms (their doknr are node ids)
    agg = subset_sources(["AGG"])[0].read()
    copy = agg.replace(b"<jurabk>AGG</jurabk>", b"<jurabk>AGGKOPIE</jurabk>", 1)
    copy = copy.replace(b'doknr="BJNR189710006"', b'doknr="BJNR999999999"', 1)
    assert copy.count(b"AGGKOPIE") == 1 and b"BJNR999999999" in copy
    sources = [*subset_sources(["AGG", "KSchG"]), XmlSource("agg-kopie.xml", data=copy)]
    sg = build_statute_graph(sources, workers=1)
    assert list(sg.codes) == ["AGG", "KSchG"]
    clash = [i for i in sg.issues if i.source == "agg-kopie.xml"]
    assert [i.kind for i in clash] == ["duplicate_code"] and "node ids" in clash[0].message
    alone = build_statute_graph(subset_sources(["AGG", "KSchG"]), workers=1)
    assert graph_digest(sg.graph) == graph_digest(alone.graph)
    assert sg.number_of_nodes() == sg.graph.number_of_nodes()

