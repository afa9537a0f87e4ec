"""The streamed JSON and GraphML writers: the bytes of the whole-document writers, and a graph that loads back."""

from __future__ import annotations

import io
import json
from dataclasses import asdict

import networkx as nx
import pytest

from argus.paths import data_root
from argus.statutes.corpus import subset_sources
from argus.statutes.digest import graph_digest
from argus.statutes.graph import (
    FORMAT,
    FORMAT_VERSION,
    StatuteGraph,
    build_statute_graph,
)
from argus.statutes.writers import write_graphml, write_json

DATA = data_root()
needs_data = pytest.mark.skipif(
    not (DATA / "de_statutes" / "gii" / "MANIFEST.json").exists(),
    reason=f"statute data not found under {DATA} (set ARGUS_DATA_ROOT to the shared data folder)",
)


@pytest.fixture(scope="module")
def sg():
    if not (DATA / "de_statutes" / "gii" / "MANIFEST.json").exists():
        pytest.skip("statute data not found")
    return build_statute_graph(subset_sources(["AGG", "KSchG", "BUrlG"]))


def _whole_json(sg: StatuteGraph) -> str:
    """The JSON as written before streaming: the whole document, then ``json.dump``."""
    data = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "codes": [asdict(c) for c in sg.codes.values()],
        "sections": {code: [[k[0], k[1], sid] for k, sid in idx.items()] for code, idx in sg.sections.items()},
        "issues": [asdict(i) for i in sg.issues],
        "citation_report": sg.citation_report.as_dict(),
        "graph": nx.node_link_data(sg.graph, edges="edges"),
    }
    out = io.StringIO()
    json.dump(data, out, ensure_ascii=False)
    return out.getvalue()


def _whole_graphml(graph: nx.MultiDiGraph, text_of=None) -> bytes:
    """The GraphML as written before streaming: a copy with every node's text, then networkx."""
    g = graph.copy()
    if text_of is not None:
        for n in g.nodes:
            if g.nodes[n]["type"] not in ("section", "root", "code"):
                g.nodes[n]["text"] = text_of(n)
    out = io.BytesIO()
    nx.write_graphml(g, out, named_key_ids=True)
    return out.getvalue()


def _odd_graph() -> nx.MultiDiGraph:
    """Ids and values that need escaping, every value type, an empty node, parallel edges."""
    g = nx.MultiDiGraph()
    g.add_node("a&b <c>", type="unit", label='"quoted"\tand\nnew line', n=3, x=0.5, ok=True)
    g.add_node("ä/ß\r", type="satz", label="Ä > ü &amp;", n=-1, ok=False)
    g.add_node("empty")
    g.add_edge("a&b <c>", "ä/ß\r", key="contains_satz", type="contains_satz")
    g.add_edge("a&b <c>", "ä/ß\r", key='k"2', type="cites_satz", mention="§ 1 <a>", partial=False)
    return g


@needs_data
def test_streamed_json_is_the_whole_document(sg, tmp_path):
    path = tmp_path / "g.json"
    sg.to_json(path)
    # the same document, key order included (the streamed one has no blanks after "," and ":")
    assert json.dumps(json.loads(path.read_bytes()), ensure_ascii=False) == _whole_json(sg)


@needs_data
def test_a_build_is_written_from_its_store_as_its_networkx_graph(tmp_path):
    # building and writing never make the networkx form; what they write is that form's JSON
    fresh = build_statute_graph(subset_sources(["AGG", "KSchG", "BUrlG", "BGB"]))
    assert fresh.citation_report.cross_code > 0
    from_store = tmp_path / "store.json"
    fresh.to_json(from_store)
    assert fresh._graph is None, "writing the JSON made the networkx graph"
    assert (fresh.number_of_nodes(), fresh.number_of_edges()) == (
        fresh.graph.number_of_nodes(),
        fresh.graph.number_of_edges(),
    )
    from_graph = tmp_path / "graph.json"
    fresh.to_json(from_graph)
    assert from_store.read_bytes() == from_graph.read_bytes()


@needs_data
def test_json_loads_back_to_the_same_graph(sg, tmp_path):
    path = tmp_path / "g.json"
    sg.to_json(path)
    again = StatuteGraph.from_json(path)
    assert graph_digest(again.graph) == graph_digest(sg.graph)
    # document order too (children(), text()); predecessors come back in node order, not build order
    assert [(n, list(a.items())) for n, a in again.graph.nodes(data=True)] == [
        (n, list(a.items())) for n, a in sg.graph.nodes(data=True)
    ]
    assert [(u, list(nbrs.items())) for u, nbrs in again.graph._succ.items()] == [
        (u, list(nbrs.items())) for u, nbrs in sg.graph._succ.items()
    ]
    assert again.codes == sg.codes and again.sections == sg.sections and again.issues == sg.issues
    assert again.citation_report.as_dict() == sg.citation_report.as_dict()


def _layout(g: nx.MultiDiGraph) -> tuple:
    """Everything of a graph, orders included: nodes and their attributes, successors with their
    keys and attributes, predecessors."""
    return (
        [(n, list(a.items())) for n, a in g._node.items()],
        [
            (u, [(v, [(k, list(d.items())) for k, d in kd.items()]) for v, kd in nb.items()])
            for u, nb in g._succ.items()
        ],
        [(v, list(nb)) for v, nb in g._pred.items()],
        g.graph,
    )


def _networkx_read(path) -> nx.MultiDiGraph:
    return nx.node_link_graph(json.loads(path.read_bytes())["graph"], directed=True, multigraph=True, edges="edges")


@needs_data
@pytest.mark.parametrize("batch", [300, 1 << 23])
def test_json_is_read_back_batch_by_batch_as_networkx_reads_it(sg, tmp_path, monkeypatch, batch):
    from argus.statutes import writers

    monkeypatch.setattr(writers, "_READ_BATCH", batch)  # 300 bytes: a batch per record or two
    path = tmp_path / "g.json"
    sg.to_json(path)
    head, graph = writers.read_json(path)
    assert _layout(graph) == _layout(_networkx_read(path))
    assert all(graph._pred[v][u] is kd for u, nb in graph._succ.items() for v, kd in nb.items())
    assert head["format"] == FORMAT and "graph" not in head
    # repeated strings are one object: a node's parent is the node's own id string
    ids = {n: n for n in graph}
    assert all(a["parent"] is ids[a["parent"]] for _, a in graph.nodes(data=True) if "parent" in a)


@pytest.mark.parametrize("batch", [1, 1 << 23])
def test_an_odd_graph_and_other_layouts_are_read_as_networkx_reads_them(tmp_path, monkeypatch, batch):
    import orjson

    from argus.statutes import writers

    monkeypatch.setattr(writers, "_READ_BATCH", batch)
    g = _odd_graph()
    g.graph["name"] = "odd"
    streamed = tmp_path / "streamed.json"
    with streamed.open("wb") as fh:
        write_json(fh, {"format": "x"}, g)
    head, graph = writers.read_json(streamed)
    assert head == {"format": "x"}
    assert _layout(graph) == _layout(g)
    # an edge to a node the nodes do not list (networkx adds it), in write_json's layout and in another
    doc = {"format": "x", "graph": nx.node_link_data(g, edges="edges")}
    doc["graph"]["edges"].append({"type": "cites_section", "source": "a&b <c>", "target": "no node", "key": "k"})
    compact, spaced = tmp_path / "compact.json", tmp_path / "spaced.json"
    compact.write_bytes(orjson.dumps(doc))
    spaced.write_text(json.dumps(doc, indent=1))  # not write_json's layout: read whole
    for path in (compact, spaced):
        head, graph = writers.read_json(path)
        assert head == {"format": "x"}
        assert _layout(graph) == _layout(_networkx_read(path))
        assert "no node" in graph and graph.number_of_edges() == g.number_of_edges() + 1


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "not a JSON statute graph"),
        (b'{"format": "argus-statute-graph", "graph": {"nodes": [{"id": "a"}], "edges": [{"source"', "not a JSON"),
        (b"\xff\xfe{}", "not a JSON statute graph"),
        (b"[1, 2]", "not a JSON statute graph"),
        (b'{"format": "argus-statute-graph", "graph": {"nodes": [], "edges": [{"target": "a"}]}}', "malformed"),
        (b'{"format": "other", "graph": {"nodes": [], "edges": []}}', "missing format marker"),
    ],
)
def test_a_file_that_is_no_graph_is_refused_with_what_is_wrong(tmp_path, content, message):
    from argus.errors import InputError

    path = tmp_path / "g.json"
    path.write_bytes(content)
    with pytest.raises(InputError, match=message):
        StatuteGraph.from_json(path)


@needs_data
def test_writing_json_leaves_the_graphs_strings_as_they_were(sg, tmp_path):
    # an encoder that reads a string's UTF-8 form makes CPython keep that form with the string
    import sys

    texts = [a["text"] for _, a in sg.graph.nodes(data=True) if "text" in a and not a["text"].isascii()]
    mentions = [d["mention"] for *_, d in sg.graph.edges(data=True) if "mention" in d and not d["mention"].isascii()]
    assert texts and mentions
    before = [sys.getsizeof(x) for x in texts + mentions]
    sg.to_json(tmp_path / "g.json")
    assert [sys.getsizeof(x) for x in texts + mentions] == before


def test_streamed_json_of_an_odd_graph(tmp_path):
    g = _odd_graph()
    out = io.BytesIO()
    write_json(out, {"format": "x", "n": [1, 2]}, g)
    expected = json.dumps(
        {"format": "x", "n": [1, 2], "graph": nx.node_link_data(g, edges="edges")}, ensure_ascii=False
    )
    assert json.dumps(json.loads(out.getvalue()), ensure_ascii=False) == expected
    assert graph_digest(nx.node_link_graph(json.loads(out.getvalue())["graph"], edges="edges")) == graph_digest(g)


@needs_data
def test_a_helper_process_writes_the_edges_the_bytes_being_the_same(sg, tmp_path, monkeypatch):
    import sys

    from argus.statutes import writers

    if not sys.platform.startswith("linux"):
        pytest.skip("the edge helper is forked on Linux only")
    serial = tmp_path / "serial.json"
    sg.to_json(serial)  # three codes: under the helper's threshold
    finished = []
    finish = writers._EdgeHelper.finish
    monkeypatch.setattr(writers, "_HELPER_MIN_EDGES", 0)
    monkeypatch.setattr(writers.threading, "active_count", lambda: 1)  # whatever threads the test runner has
    monkeypatch.setattr(
        writers._EdgeHelper, "finish", lambda self, fh: finished.append(finish(self, fh)) or finished[-1]
    )
    helped = tmp_path / "helped.json"
    sg.to_json(helped)
    assert finished == [True]
    assert helped.read_bytes() == serial.read_bytes()
    # a helper that fails (here: an edge value JSON cannot hold): the caller writes the edges and meets the error
    g = _odd_graph()
    g.add_edge("empty", "a&b <c>", key="bad", tags={"x"})
    finished.clear()
    with pytest.raises(TypeError):
        write_json(io.BytesIO(), {}, g)
    assert finished == [False]
    # this process fails while the helper runs: the helper is stopped and reaped, not left behind
    started = []
    start = writers._EdgeHelper.start.__func__
    monkeypatch.setattr(
        writers._EdgeHelper, "start", classmethod(lambda cls, *a: started.append(start(cls, *a)) or started[-1])
    )
    g = _odd_graph()
    g.add_node("bad", tags={"x"})
    with pytest.raises(TypeError):
        write_json(io.BytesIO(), {}, g)
    assert started and started[0].pid is None and started[0].spool.closed


def test_json_refuses_a_value_json_cannot_hold():
    g = nx.MultiDiGraph()
    g.add_node("a", tags={"x"})
    with pytest.raises(TypeError):
        write_json(io.BytesIO(), {}, g)


@needs_data
def test_streamed_graphml_is_what_networkx_writes(sg, tmp_path):
    path = tmp_path / "g.graphml"
    sg.to_graphml(path)
    assert path.read_bytes() == _whole_graphml(sg.graph, sg.text)
    sg.to_graphml(path, node_text=False)
    assert path.read_bytes() == _whole_graphml(sg.graph)


@needs_data
@pytest.mark.parametrize("node_text, helper", [(True, False), (False, False), (True, True)])
def test_a_build_is_written_as_graphml_from_its_store_as_from_its_networkx_graph(
    tmp_path, monkeypatch, node_text, helper
):
    import sys

    from argus.statutes import writers

    # BGBEG (the EGBGB): articles holding §§ (nested texts); BGB: units several levels deep, cited
    fresh = build_statute_graph(subset_sources(["AGG", "BGB", "BGBEG", "KSchG"]))
    assert fresh.citation_report.cross_code > 0
    assert any(a.get("nested") for a in fresh._store.large.values())
    finished = []
    if helper:  # the edges written by a forked helper meanwhile
        if not sys.platform.startswith("linux"):
            pytest.skip("the edge helper is forked on Linux only")
        finish = writers._EdgeHelper.finish
        monkeypatch.setattr(writers, "_HELPER_MIN_EDGES", 0)
        monkeypatch.setattr(writers.threading, "active_count", lambda: 1)
        monkeypatch.setattr(writers._EdgeHelper, "finish", lambda self, fh: finished.append(finish(self, fh)) or True)
    from_store = tmp_path / "store.graphml"
    fresh.to_graphml(from_store, node_text=node_text)
    assert finished == ([True] if helper else [])
    assert fresh._graph is None, "writing the GraphML made the networkx graph"
    assert fresh.graph is not None and fresh._store is None  # from now on, the networkx graph
    from_graph = tmp_path / "graph.graphml"
    fresh.to_graphml(from_graph, node_text=node_text)
    assert from_store.read_bytes() == from_graph.read_bytes()
    assert from_graph.read_bytes() == _whole_graphml(fresh.graph, fresh.text if node_text else None)


@needs_data
def test_graphml_loads_back_to_the_same_graph_with_texts(sg, tmp_path):
    path = tmp_path / "g.graphml"
    sg.to_graphml(path)
    back = nx.read_graphml(path)
    assert list(back.nodes) == list(sg.graph.nodes)
    for n, attrs in sg.graph.nodes(data=True):
        expected = dict(attrs)
        if attrs["type"] not in ("section", "root", "code"):
            expected["text"] = sg.text(n)
        assert back.nodes[n] == expected
    assert sorted((u, v, k, tuple(sorted(d.items()))) for u, v, k, d in back.edges(keys=True, data=True)) == sorted(
        (u, v, k, tuple(sorted(d.items()))) for u, v, k, d in sg.graph.edges(keys=True, data=True)
    )


def test_streamed_graphml_of_an_odd_graph():
    g = _odd_graph()
    out = io.StringIO()
    write_graphml(out, g)
    assert out.getvalue().encode() == _whole_graphml(g)
    back = nx.read_graphml(io.BytesIO(out.getvalue().encode()))
    assert dict(back.nodes(data=True)) == dict(g.nodes(data=True))


def test_graphml_refuses_a_value_type_it_cannot_write():
    g = nx.MultiDiGraph()
    g.add_node("a", tags=["x"])
    with pytest.raises(TypeError, match="GraphML does not support"):
        write_graphml(io.StringIO(), g)
