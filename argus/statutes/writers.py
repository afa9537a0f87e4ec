"""Writing the statute graph as JSON and GraphML, streamed: a batch of nodes or edges at a time.

Neither writer builds the whole document: ``networkx.node_link_data`` would copy every attribute
dict of a graph of a million nodes before ``json.dump`` encoded them with the pure-Python encoder,
and ``networkx.write_graphml`` would need a copy of the graph to give every node its text. Here
each batch is encoded (JSON: by ``orjson``; GraphML: by plain string formatting) and written out,
so memory stays flat and the write takes seconds. The JSON is what ``json.dump`` of the
node-link document wrote, without the blanks after ``,`` and ``:``; the GraphML is byte for byte
what ``networkx.write_graphml(…, named_key_ids=True)`` writes.
"""

from __future__ import annotations

import contextlib
import io
import mmap
import os
import re
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import count, islice
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import networkx as nx
import orjson

from argus.statutes.model import Level
from argus.statutes.packed import _INTS, _TYPE_OF_LEVEL
from argus.statutes.parallel import default_workers
from argus.statutes.parser import IMPLICIT, PRINTED, REPEALED, ParsedCode
from argus.statutes.resolve import CROSS_CODE, PARTIAL, RELATIVE

if TYPE_CHECKING:
    from argus.statutes.store import GraphStore

_BATCH = 20_000  #: nodes or edges encoded at a time


def _batches(items: Iterable, size: int = _BATCH) -> Iterator[list]:
    it = iter(items)
    while batch := list(islice(it, size)):
        yield batch


def write_json(fh: IO[bytes], head: dict, graph: nx.MultiDiGraph | GraphStore) -> None:
    """Write ``{**head, "graph": node_link_data(graph, edges="edges")}`` as UTF-8 JSON into the
    binary file ``fh``, one batch of nodes or edges at a time. Values must be what JSON holds (str
    keys; str, int, float, bool, None, lists and dicts of them), else ``TypeError``.

    ``graph`` is a networkx graph or a build's :class:`~argus.statutes.store.GraphStore`, written
    as the networkx graph it stands for (:meth:`~argus.statutes.store.GraphStore.to_networkx`).
    A large graph's edges are written by a forked helper meanwhile (:class:`_EdgeHelper`); the
    bytes are the same."""
    if isinstance(graph, nx.Graph):
        directed, multigraph, attrs = graph.is_directed(), graph.is_multigraph(), graph.graph
        n_edges = graph.number_of_edges()
        nodes: Iterable[dict] = ({**a, "id": n} for n, a in graph._node.items())
        edges: Iterable[dict] = (
            {**a, "source": u, "target": v, "key": k}
            for u, nbrs in graph._succ.items()
            for v, keydict in nbrs.items()
            for k, a in keydict.items()
        )
    else:
        directed, multigraph, attrs = True, True, {}
        nodes, edges = graph.json_nodes(), graph.json_edges()
        n_edges = graph.number_of_edges()
    dumps = orjson.dumps
    fh.write(memoryview(dumps(head))[:-1] if head else b"{")
    fh.write(b"," if head else b"")
    fh.write(b'"graph":{"directed":%s,"multigraph":%s,"graph":%s,"nodes":[' % (
        dumps(directed), dumps(multigraph), dumps(attrs)
    ))  # fmt: skip

    def write_edges(out: IO[bytes]) -> None:
        _write_list(out, edges, "mention", _EDGE_TEXTS)

    helper = _EdgeHelper.start(write_edges, n_edges)
    try:
        _write_list(fh, nodes, "title", _NODE_TEXTS)  # a code, unit or §: its words
        fh.write(b'],"edges":[')
        if helper is None or not helper.finish(fh):
            write_edges(fh)
    finally:
        if helper is not None:
            helper.stop()
    fh.write(b"]}}")


def _write_list(fh: IO[bytes], records: Iterable[dict], mark: str, texts: tuple[str, ...]) -> None:
    """The items of a JSON list (without its brackets), a batch at a time; the non-ASCII strings
    under ``texts`` of a record with a ``mark`` key from fresh copies (:func:`_fresh_strings`)."""
    out = _ListWriter(fh)
    batch = out.batch
    for record in records:
        if mark in record:
            _fresh_strings(record, texts)
        batch.append(record)
        if len(batch) >= _BATCH:
            out.flush()
    out.flush()


#: Edges from which :func:`write_json` has a forked helper process write the edges
_HELPER_MIN_EDGES = 200_000


class _EdgeHelper:
    """A forked process that encodes the edge list into a temporary file while this one encodes
    the nodes; its file is then copied in after them (in the kernel, where it can).

    On two cores the full corpus's JSON is written in about two thirds of the time. The helper
    reads the graph it was forked with (copy-on-write: nothing is sent to it). Used on Linux only,
    and only when this process runs no other thread (a fork copies one thread; a lock another
    thread held would stay held in the copy)."""

    def __init__(self, pid: int, spool: IO[bytes]) -> None:
        self.pid: int | None = pid
        self.spool = spool

    @classmethod
    def start(cls, write: Callable[[IO[bytes]], None], n_edges: int) -> _EdgeHelper | None:
        """A helper that runs ``write(spool)`` (the edges into a binary temporary file), or None
        where there is none: a small graph, other threads, or where a build would not fork two
        workers (:func:`~argus.statutes.parallel.default_workers`: not Linux, one usable CPU, a
        daemonic process)."""
        if n_edges < _HELPER_MIN_EDGES or threading.active_count() > 1 or default_workers() < 2:
            return None
        spool = tempfile.TemporaryFile()
        try:
            pid = os.fork()
        except OSError:
            spool.close()
            return None
        if pid == 0:  # the helper: write, then leave without running this process's exit handlers
            code = 1
            try:
                write(spool)
                spool.flush()
                code = 0
            except BaseException:  # noqa: BLE001 - reported by the exit status; the caller writes the edges itself
                pass
            finally:
                os._exit(code)
        return cls(pid, spool)

    def finish(self, fh: IO[bytes]) -> bool:
        """Wait for the helper and copy what it wrote into ``fh``; False (nothing written) when it
        failed: the caller writes the edges itself, and meets the error, if any, itself."""
        assert self.pid is not None
        _, status = os.waitpid(self.pid, 0)
        self.pid = None
        if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
            return False
        size = os.fstat(self.spool.fileno()).st_size
        self.spool.seek(0)
        try:
            out = fh.fileno()
            fh.flush()
        except (AttributeError, OSError, io.UnsupportedOperation):
            shutil.copyfileobj(self.spool, fh, 1 << 22)
            return True
        done = 0
        while done < size:
            sent = os.sendfile(out, self.spool.fileno(), done, size - done)
            if sent == 0:
                raise OSError("the edges of the graph could not be copied into the output file")
            done += sent
        with contextlib.suppress(OSError, io.UnsupportedOperation):
            fh.seek(0, os.SEEK_END)  # the buffered writer learns where the file now ends
        return True

    def stop(self) -> None:
        """Stop a helper still running (this process failed meanwhile) and drop its file."""
        if self.pid is not None:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            self.pid = None
        self.spool.close()


def node_link_multidigraph(data: dict) -> nx.MultiDiGraph:
    """``networkx.node_link_graph(data, directed=True, multigraph=True, edges="edges")`` of node-link
    records as :func:`write_json` writes them (``"id"``; ``"source"``, ``"target"``, ``"key"``), made
    in place: each record, less those fields, becomes the node's or edge's attribute dict
    (:class:`_NodeLinkGraph`). ``data`` is consumed: its records are the graph's now."""
    made = _NodeLinkGraph(data.get("graph", {}))
    made.add_nodes(data.get("nodes", ()))
    made.add_edges(data.get("edges", ()))
    return made.graph


class _NodeLinkGraph:
    """A ``networkx.MultiDiGraph`` made from node-link records, in place, batch by batch.

    The same graph, attribute order and insertion orders (nodes, successors, predecessors)
    included, as ``networkx.node_link_graph`` makes by copying every record into ``add_node`` and
    ``add_edge``, for a fraction of the time and memory. Repeated strings are shared: the
    graph's node ids wherever a node is named (``parent``, ``section``, edge ends, ``origin``),
    one object per distinct ``type``, ``code``, ``label``, designator or edge key, and offsets
    from the table of small ints the build uses."""

    def __init__(self, graph_attrs: dict) -> None:
        self.graph = nx.MultiDiGraph()
        self.graph.graph = graph_attrs
        self.canon: dict[str, str] = {}  #: node id -> the graph's own string of it
        self.shared: dict = {}  #: one object per distinct value of the attributes that repeat
        self.unnamed = count()  #: networkx numbers nodes without an id

    def add_nodes(self, records: Iterable[dict]) -> None:
        node, succ, pred = self.graph._node, self.graph._succ, self.graph._pred
        canon, shared = self.canon, self.shared
        ints, n_ints = _INTS, len(_INTS)
        for rec in records:
            nid = rec.pop("id") if "id" in rec else next(self.unnamed)
            if nid.__class__ is list:
                nid = _to_tuple(nid)
            for k in _SHARED_NODE_VALUES:
                v = rec.get(k)
                if v.__class__ is str:
                    rec[k] = shared.setdefault(v, v)
            for k in _NODE_IDS:
                v = rec.get(k)
                if v.__class__ is str:
                    rec[k] = canon.get(v, v)
            for k in _NODE_INTS:
                v = rec.get(k)
                if v.__class__ is int and 0 <= v < n_ints:
                    rec[k] = ints[v]
            if nid in node:  # as add_node: a node named again gets the new attributes
                node[nid].update(rec)
                continue
            if nid.__class__ is str:
                nid = canon.setdefault(nid, nid)
            node[nid] = rec
            succ[nid] = {}
            pred[nid] = {}

    def add_edges(self, records: Iterable[dict]) -> None:
        node, succ, pred = self.graph._node, self.graph._succ, self.graph._pred
        canon, shared = self.canon, self.shared
        for rec in records:
            u, v, key = rec.pop("source"), rec.pop("target"), rec.pop("key", None)
            u = _to_tuple(u) if u.__class__ is list else canon.get(u, u)
            v = _to_tuple(v) if v.__class__ is list else canon.get(v, v)
            if key.__class__ is str:
                key = shared.setdefault(key, key)
            for k in _SHARED_EDGE_VALUES:
                x = rec.get(k)
                if x.__class__ is str:
                    rec[k] = shared.setdefault(x, x)
            x = rec.get("origin")
            if x.__class__ is str:
                rec["origin"] = canon.get(x, x)
            for w in (u, v):
                if w not in node:  # as add_edge: an edge's end that is no node yet becomes one
                    node[w] = {}
                    succ[w] = {}
                    pred[w] = {}
            keydict = succ[u].get(v)
            if keydict is None:
                keydict = succ[u][v] = {}
                pred[v][u] = keydict
            if key in keydict:
                keydict[key].update(rec)
            else:
                keydict[key] = rec


def read_json(path: str | Path) -> tuple[dict, nx.MultiDiGraph]:
    """The document :func:`write_json` wrote to ``path``: its head (every key but ``"graph"``) and
    its graph, ``networkx.node_link_graph(doc["graph"], directed=True, multigraph=True,
    edges="edges")``.

    Read from a memory map a batch of records at a time (:class:`_NodeLinkGraph`): neither the
    file nor the whole document is ever in memory, only the graph and one batch. A document laid
    out otherwise (not from :func:`write_json`, not a directed multigraph) is parsed whole.
    Raises ``orjson.JSONDecodeError`` (a ``ValueError``) for text that is not JSON or not UTF-8, and
    ``ValueError`` for a document without a ``"graph"`` object."""
    with open(path, "rb") as fh:
        if os.fstat(fh.fileno()).st_size == 0:
            raise orjson.JSONDecodeError("the file is empty", "", 0)
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            try:
                return _read_streamed(mm)
            except (_Layout, orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
                pass  # read it whole: the same graph, or the error that says what is wrong
            doc = orjson.loads(memoryview(mm))
    if not isinstance(doc, dict) or not isinstance(doc.get("graph"), dict):
        raise ValueError('not a document with a node-link graph under "graph"')
    data = doc.pop("graph")
    if data.get("directed", True) and data.get("multigraph", True):
        return doc, node_link_multidigraph(data)
    return doc, nx.node_link_graph(data, directed=True, multigraph=True, edges="edges")


class _Layout(Exception):
    """The document is not laid out as :func:`write_json` writes it."""


_READ_BATCH = 1 << 23  #: bytes of records parsed at a time
_GRAPH_KEY = b'"graph":{"directed":'
_RECORD_SEP = b'},{"'  #: between two records: never inside a string (its quote would be escaped)


def _read_streamed(mm: mmap.mmap) -> tuple[dict, nx.MultiDiGraph]:
    at = mm.find(_GRAPH_KEY)
    if at < 1 or mm[at - 1 : at] not in (b"{", b","):
        raise _Layout
    head = orjson.loads(mm[: at - 1] + b"}") if at > 1 else {}
    nodes_at = mm.find(b',"nodes":[', at)
    if nodes_at < 0:
        raise _Layout
    meta = orjson.loads(mm[at + 8 : nodes_at] + b"}")  # {"directed":…,"multigraph":…,"graph":{…}}
    if meta.get("directed") is not True or meta.get("multigraph") is not True or len(meta) != 3:
        raise _Layout
    made = _NodeLinkGraph(meta["graph"])
    end = _read_records(mm, nodes_at + 10, b'],"edges":[', made.add_nodes)
    end = _read_records(mm, end + 11, b"]}}", made.add_edges)
    if end + 3 != len(mm):
        raise _Layout
    return head, made.graph


def _read_records(mm: mmap.mmap, start: int, closing: bytes, add: Callable[[list], None]) -> int:
    """Parse the records of the JSON list that begins at ``start`` (after its ``[``) and ends with
    ``closing``, a batch at a time, handing each batch to ``add``; where ``closing`` begins."""
    if mm[start : start + len(closing)] == closing:
        return start  # an empty list
    last = b"}" + closing
    pos = start
    page = mmap.PAGESIZE
    advised = 0  #: the file's pages before this have been handed back
    while True:
        cut = mm.find(_RECORD_SEP, pos + _READ_BATCH)
        limit = cut if cut >= 0 else len(mm)
        stop = mm.find(last, pos, limit + len(last))
        if stop >= 0 and (cut < 0 or stop < cut):
            add(orjson.loads(b"[" + mm[pos : stop + 1] + b"]"))
            return stop + 1
        if cut < 0:
            raise _Layout
        add(orjson.loads(b"[" + mm[pos : cut + 1] + b"]"))
        done = (cut // page) * page
        if done > advised and hasattr(mmap, "MADV_DONTNEED"):
            mm.madvise(mmap.MADV_DONTNEED, advised, done - advised)  # pages read: out of this process
            advised = done
        pos = cut + 2


def _to_tuple(x: list) -> tuple:
    """A node id that JSON wrote as a list: the tuple it was (nested lists too, as networkx reads them)."""
    return tuple(_to_tuple(e) if e.__class__ is list else e for e in x)


_SHARED_NODE_VALUES = ("type", "code", "label")
_NODE_IDS = ("parent", "section")
_NODE_INTS = ("start", "end", "order")
_SHARED_EDGE_VALUES = ("type", "designator")


#: Attributes that hold the graph's non-ASCII text (most of it): written from fresh copies
_NODE_TEXTS = ("label", "title", "short_title", "text", "footnotes", "notes", "note", "number", "stand")
_EDGE_TEXTS = ("mention",)


def _fresh_strings(record: dict, keys: tuple[str, ...]) -> None:
    """Put copies of the record's non-ASCII strings under ``keys`` in place of the graph's own.

    orjson encodes a non-ASCII string through its UTF-8 form, which CPython then keeps with the
    string for as long as it lives: writing the graph's own § texts and mentions would leave a
    UTF-8 copy of all of them in memory (160 MB for the full corpus). A copy takes its UTF-8 form
    with it when the batch is written."""
    for key in keys:
        value = record.get(key)
        if value.__class__ is str and not value.isascii():
            record[key] = "".join((value, ""))  # noqa: FLY002 - a new string (f"{value}" is value itself)


class _ListWriter:
    """Writes the items of a JSON list a batch at a time (without the brackets)."""

    __slots__ = ("batch", "fh", "first")

    def __init__(self, fh: IO[bytes]) -> None:
        self.fh = fh
        self.batch: list = []
        self.first = True

    def flush(self) -> None:
        if not self.batch:
            return
        if not self.first:
            self.fh.write(b",")
        self.fh.write(memoryview(orjson.dumps(self.batch))[1:-1])
        self.batch.clear()
        self.first = False


# --------------------------------------------------------------------------------------------
# GraphML

_GRAPHML_HEAD = (
    "<?xml version='1.0' encoding='utf-8'?>\n"
    '<graphml xmlns="http://graphml.graphdrawing.org/xmlns" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
    'xsi:schemaLocation="http://graphml.graphdrawing.org/xmlns '
    'http://graphml.graphdrawing.org/xmlns/1.0/graphml.xsd">'
)
#: Python type -> GraphML ``attr.type``, as networkx writes them
_XML_TYPES = {str: "string", int: "long", float: "double", bool: "boolean"}


def _text(value: str) -> str:
    """``value`` escaped as XML character data (as lxml serializes it)."""
    if "&" in value:
        value = value.replace("&", "&amp;")
    if "<" in value:
        value = value.replace("<", "&lt;")
    if ">" in value:
        value = value.replace(">", "&gt;")
    if "\r" in value:
        value = value.replace("\r", "&#13;")
    return value


def _attr(value: str) -> str:
    """``value`` escaped as an XML attribute value in double quotes (as lxml serializes it)."""
    value = _text(value)
    if '"' in value:
        value = value.replace('"', "&quot;")
    if "\n" in value:
        value = value.replace("\n", "&#10;")
    if "\t" in value:
        value = value.replace("\t", "&#9;")
    return value


#: Node types whose ``text`` attribute is their own (a § holds its text; the root and codes none)
_OWN_TEXT = frozenset({"section", "root", "code"})


def write_graphml(fh: IO[str], graph: nx.MultiDiGraph, node_text: Callable[[str], str] | None = None) -> None:
    """Write ``graph`` as ``networkx.write_graphml(graph, named_key_ids=True)`` would, node by node.

    With ``node_text`` every node but §§, codes and the root gets ``text = node_text(node)``, as
    if set on a copy of the graph first (after its other attributes). Only the value types
    networkx writes (str, int, float, bool) are supported; others raise ``TypeError`` as there.
    """

    def attrs_of(n: str, attrs: dict, text: bool) -> Iterable[tuple[str, Any]]:
        if node_text is None or attrs.get("type") in _OWN_TEXT:
            return attrs.items()
        value = node_text(n) if text else ""
        if "text" in attrs:
            return ((k, value if k == "text" else v) for k, v in attrs.items())
        return [*attrs.items(), ("text", value)]

    keys: dict[tuple[str, str, str], None] = {}  #: (name, attr.type, for) in order of first use
    for k, v in graph.graph.items():
        if k not in ("node_default", "edge_default"):
            keys.setdefault((str(k), _xml_type(v), "graph"))
    for n, attrs in graph._node.items():
        for k, v in attrs_of(n, attrs, False):
            keys.setdefault((str(k), _xml_type(v), "node"))
    for nbrs in graph._succ.values():
        for keydict in nbrs.values():
            for attrs in keydict.values():
                for k, v in attrs.items():
                    keys.setdefault((str(k), _xml_type(v), "edge"))
    _write_head(fh, keys, graph.is_directed(), graph.graph)
    for batch in _batches(graph._node.items(), 2_000):
        fh.write("".join(_element("node", f'id="{_attr(str(n))}"', attrs_of(n, a, True)) for n, a in batch))
    edges = (
        (u, v, k, attrs)
        for u, nbrs in graph._succ.items()
        for v, keydict in nbrs.items()
        for k, attrs in keydict.items()
    )
    for batch in _batches(edges, 2_000):
        fh.write(
            "".join(
                _element("edge", f'source="{_attr(str(u))}" target="{_attr(str(v))}" id="{_attr(str(k))}"', a.items())
                for u, v, k, a in batch
            )
        )
    fh.write("</graph></graphml>")


def _write_head(fh: IO[str], keys: dict[tuple[str, str, str], None], directed: bool, graph_attrs: dict) -> None:
    """The document up to the first node: the keys (``(name, attr.type, for)`` in order of first
    use; networkx writes them last first) and the graph's own data."""
    fh.write(_GRAPHML_HEAD)
    for name, xml_type, scope in reversed(keys):
        a = _attr(name)
        fh.write(f'<key id="{a}" for="{scope}" attr.name="{a}" attr.type="{xml_type}"/>\n')
    fh.write('<graph edgedefault="directed">' if directed else '<graph edgedefault="undirected">')
    for k, v in graph_attrs.items():
        if k not in ("node_default", "edge_default"):
            fh.write(f'<data key="{_attr(str(k))}">{_text(str(v))}</data>\n')


_ATTR_SPECIAL = re.compile('[&<>\r"\n\t]')  #: what :func:`_attr` escapes
_TEXT_SPECIAL = re.compile("[&<>\r]")  #: what :func:`_text` escapes


def _a(value: str) -> str:
    """:func:`_attr` of a string, with one scan for the common case of nothing to escape."""
    return _attr(value) if _ATTR_SPECIAL.search(value) else value


def _t(value: str) -> str:
    """:func:`_text` of a string, with one scan for the common case of nothing to escape."""
    return _text(value) if _TEXT_SPECIAL.search(value) else value


#: The attributes of a build's small nodes (below the §), in the order the graph holds them
_ABSATZ_KEYS = (
    "label",
    "printed",
    "implicit",
    "section",
    "start",
    "end",
    "repealed",
    "type",
    "code",
    "order",
    "parent",
)
_BELOW_KEYS = ("label", "section", "start", "end", "type", "code", "order", "parent")
_ABSATZ_TYPES = (str, bool, bool, str, int, int, bool, str, str, int, str)
_BELOW_TYPES = (str, str, int, int, str, str, int, str)


def _template(tag_head: str, tag: str, keys: tuple[str, ...]) -> str:
    """A ``%``-format of an element whose data are ``keys`` in that order (one ``%s`` each, after
    the ones of ``tag_head``)."""
    data = "".join(f'  <data key="{_attr(k)}">%s</data>\n' for k in keys)
    return f"<{tag} {tag_head}>\n{data}</{tag}>\n"


def write_graphml_store(fh: IO[str], store: GraphStore, node_text: bool = True) -> None:
    """Write a build's :class:`~argus.statutes.store.GraphStore` as GraphML: byte for byte what
    :func:`write_graphml` writes of the networkx graph it stands for
    (:meth:`~argus.statutes.store.GraphStore.to_networkx`), with ``node_text`` the text of
    :meth:`argus.statutes.graph.StatuteGraph.text` for every node but §§, codes and the root.

    The networkx graph is never made. The nodes below the § (nine in ten) and the edges have the
    same attributes each: they are written from their columns through one format string per
    kind, not an f-string per attribute."""
    from argus.statutes.store import ROOT_ID

    contains_tpl = '<edge source="%s" target="%s" id="%s">\n  <data key="type">%s</data>\n</edge>\n'
    cite_tpl = _template('source="%s" target="%s" id="%s"', "edge", _CITE_KEYS)
    cite_u, cite_v, cite_key = store.cite_u, store.cite_v, store.cite_key
    mention, origin, designator, flags = store.cite_mention, store.cite_origin, store.cite_designator, store.cite_flags
    # node ids with a character to escape are rare (none in the federal corpus): one scan per code
    ids_plain = not any(_ATTR_SPECIAL.search("".join(parsed.ids)) for parsed in store.codes)
    a = str if ids_plain else _a
    t = str if ids_plain else _t

    def contains(u: str, v: str, key: str) -> str:
        return contains_tpl % (a(u), a(v), key, key)

    def cite(j: int) -> str:
        f = flags[j]
        key = cite_key[j]
        return cite_tpl % (
            a(cite_u[j]), a(cite_v[j]), key, key, _t(mention[j]), t(origin[j]),
            f & CROSS_CODE != 0, f & PARTIAL != 0, _t(designator[j]), f & RELATIVE != 0,
        )  # fmt: skip

    def write_edges(write: Callable[[str], object]) -> None:
        for batch in _batches(store.edge_walk(contains, cite), 5_000):
            write("".join(batch))

    keys = _store_keys(store, node_text)
    _write_head(fh, keys, True, {})
    helper = _EdgeHelper.start(lambda spool: _as_text(spool, write_edges), store.number_of_edges())
    try:
        parts: list[str] = []
        write = fh.write
        root = store.large[ROOT_ID]
        parts.append(_element("node", f'id="{_attr(ROOT_ID)}"', root.items()))
        extra = ("text",) if node_text else ()
        absatz_tpl = _template('id="%s"', "node", _ABSATZ_KEYS + extra)
        below_tpl = _template('id="%s"', "node", _BELOW_KEYS + extra)
        for parsed in store.codes:
            _code_graphml(parsed, node_text, ids_plain, absatz_tpl, below_tpl, parts)
            if len(parts) > 4_000:
                write("".join(parts))
                parts.clear()
        write("".join(parts))
        parts.clear()
        if helper is None or not helper.finish(fh):
            write_edges(write)
    finally:
        if helper is not None:
            helper.stop()
    fh.write("</graph></graphml>")


def _as_text(spool: IO[bytes], fill: Callable[[Callable[[str], object]], None]) -> None:
    """``fill(write)`` with ``write`` writing text into the binary ``spool`` as UTF-8."""
    text = io.TextIOWrapper(spool, encoding="utf-8")
    fill(text.write)
    text.flush()
    text.detach()


#: A citation edge's attributes, in the order the graph holds them, and their types
_CITE_KEYS = ("type", "mention", "origin", "cross_code", "partial", "designator", "relative")
_CITE_TYPES = (str, str, str, bool, bool, str, bool)


def _store_keys(store: GraphStore, node_text: bool) -> dict[tuple[str, str, str], None]:
    """The GraphML keys of a store's graph in order of first use, as :func:`write_graphml` finds
    them going through the networkx graph's nodes and edges."""
    from argus.statutes.store import ROOT_ID

    keys: dict[tuple[str, str, str], None] = {}
    for k, v in store.large[ROOT_ID].items():
        keys.setdefault((str(k), _xml_type(v), "node"))
    unit, absatz = int(Level.UNIT), int(Level.ABSATZ)
    small_seen: set[bool] = set()  #: whether the layout of Absätze / of the other small nodes is in
    for parsed in store.codes:
        large = iter(parsed.large)
        for t in parsed.types:
            if t < absatz:
                attrs = next(large)
                for k, v in attrs.items():
                    keys.setdefault((str(k), _xml_type(v), "node"))
                if node_text and t == unit:
                    keys.setdefault(("text", "string", "node"))
            elif (t == absatz) not in small_seen:
                small_seen.add(t == absatz)
                names, types = (_ABSATZ_KEYS, _ABSATZ_TYPES) if t == absatz else (_BELOW_KEYS, _BELOW_TYPES)
                for k, tp in zip(names, types):
                    keys.setdefault((k, _XML_TYPES[tp], "node"))
                if node_text:
                    keys.setdefault(("text", "string", "node"))
    if store.codes:  # the root's edges to the codes come first
        keys.setdefault(("type", "string", "edge"))
    if store.cite_u:
        for k, tp in zip(_CITE_KEYS, _CITE_TYPES):
            keys.setdefault((k, _XML_TYPES[tp], "edge"))
    return keys


def _code_graphml(
    parsed: ParsedCode, node_text: bool, ids_plain: bool, absatz_tpl: str, below_tpl: str, parts: list[str]
) -> None:
    """One code's nodes as GraphML elements, appended to ``parts`` (``ids_plain``: no node id of
    the graph has a character to escape)."""
    ids, types, parents = parsed.ids, parsed.types, parsed.parents
    unit, absatz = int(Level.UNIT), int(Level.ABSATZ)
    type_of = _TYPE_OF_LEVEL
    esc_ids = ids if ids_plain or not _ATTR_SPECIAL.search("".join(ids)) else [_attr(x) for x in ids]
    data_ids = ids if esc_ids is ids else [_text(x) for x in ids]
    code = _t(parsed.info.key)
    table = [_t(label) for label in parsed.label_table]
    large = iter(parsed.large)
    small = zip(parsed.labels, parsed.secs, parsed.starts, parsed.ends, parsed.flags)
    positions = [i for i, t in enumerate(types) if t < absatz]  #: of the nodes with attribute dicts
    attrs_at = dict(zip(positions, parsed.large))
    unit_texts = _unit_texts(types, parents, positions, attrs_at) if node_text else {}
    sec_text = ""  #: the text of the § the small nodes that follow belong to, and whether it needs escaping
    sec_at, sec_special = -1, False
    for i, (t, p) in enumerate(zip(types, parents)):
        if t < absatz:
            attrs = next(large)
            if t == unit and node_text:
                value = unit_texts.get(i, "")
                items: Iterable[tuple[str, Any]] = (
                    ((k, value if k == "text" else v) for k, v in attrs.items())
                    if "text" in attrs
                    else [*attrs.items(), ("text", value)]
                )
            else:
                items = attrs.items()
            parts.append(_element("node", f'id="{esc_ids[i]}"', items))
            continue
        label, sec, start, end, f = next(small)
        if node_text:
            if sec != sec_at:
                sec_at = sec
                sec_text = attrs_at[sec]["text"]
                sec_special = _TEXT_SPECIAL.search(sec_text) is not None
            text = sec_text[start:end]
            tail: tuple = ((_text(text) if sec_special else text),)
        else:
            tail = ()
        if t == absatz:
            parts.append(
                absatz_tpl % (
                    esc_ids[i], table[label], f & PRINTED != 0, f & IMPLICIT != 0, data_ids[sec], start, end,
                    f & REPEALED != 0, "absatz", code, i, data_ids[p], *tail,
                )
            )  # fmt: skip
        else:
            parts.append(
                below_tpl
                % (esc_ids[i], table[label], data_ids[sec], start, end, type_of[t], code, i, data_ids[p], *tail)
            )


def _unit_texts(
    types: bytearray, parents: Sequence[int], positions: list[int], attrs_at: dict[int, dict]
) -> dict[int, str]:
    """The text of each unit of a code (by position), as :meth:`argus.statutes.graph.StatuteGraph.text`
    gives it: its children's texts, a nested § its own text followed by its children's.
    ``positions`` are those of the code's nodes with attribute dicts (``attrs_at``)."""
    unit = int(Level.UNIT)
    kids: dict[int, list[int]] = {}
    for i in positions:
        p = parents[i]
        if p >= 0:
            kids.setdefault(p, []).append(i)
    texts: dict[int, str] = {}
    for i in reversed(positions):  # children before their parents
        t = types[i]
        if t == unit:
            texts[i] = "\n\n".join(x for x in (texts[c] for c in kids.get(i, ())) if x)
        elif t > unit:  # a §
            attrs = attrs_at[i]
            if attrs.get("nested"):
                texts[i] = "\n\n".join([attrs["text"], *(texts[c] for c in kids.get(i, ()))])
            else:
                texts[i] = attrs["text"]
    return {i: texts[i] for i in positions if types[i] == unit}


def _xml_type(value: Any) -> str:
    try:
        return _XML_TYPES[type(value)]
    except KeyError:
        raise TypeError(f"GraphML does not support type {type(value)} as data values.") from None


def _element(tag: str, head: str, attrs: Iterable[tuple[str, Any]]) -> str:
    data = "".join(f'  <data key="{_attr(str(k))}">{_text(str(v))}</data>\n' for k, v in attrs)
    if not data:
        return f"<{tag} {head}/>\n"
    return f"<{tag} {head}>\n{data}</{tag}>\n"
