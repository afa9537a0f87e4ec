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

from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import IO, TYPE_CHECKING, Any

import networkx as nx
import orjson

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
    as the networkx graph it stands for (:meth:`~argus.statutes.store.GraphStore.to_networkx`)."""
    if isinstance(graph, nx.Graph):
        directed, multigraph, attrs = graph.is_directed(), graph.is_multigraph(), graph.graph
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
    dumps = orjson.dumps
    fh.write(memoryview(dumps(head))[:-1] if head else b"{")
    fh.write(b"," if head else b"")
    fh.write(b'"graph":{"directed":%s,"multigraph":%s,"graph":%s,"nodes":[' % (
        dumps(directed), dumps(multigraph), dumps(attrs)
    ))  # fmt: skip
    out = _ListWriter(fh)
    batch = out.batch
    for record in nodes:
        if "title" in record or "text" in record:  # a code, unit or §: its words
            _fresh_strings(record, _NODE_TEXTS)
        batch.append(record)
        if len(batch) >= _BATCH:
            out.flush()
    out.flush()
    fh.write(b'],"edges":[')
    out = _ListWriter(fh)
    batch = out.batch
    for record in edges:
        if "mention" in record:
            _fresh_strings(record, _EDGE_TEXTS)
        batch.append(record)
        if len(batch) >= _BATCH:
            out.flush()
    out.flush()
    fh.write(b"]}}")


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
    fh.write(_GRAPHML_HEAD)
    for name, xml_type, scope in reversed(keys):
        a = _attr(name)
        fh.write(f'<key id="{a}" for="{scope}" attr.name="{a}" attr.type="{xml_type}"/>\n')
    fh.write('<graph edgedefault="directed">' if graph.is_directed() else '<graph edgedefault="undirected">')
    for k, v in graph.graph.items():
        if k not in ("node_default", "edge_default"):
            fh.write(f'<data key="{_attr(str(k))}">{_text(str(v))}</data>\n')
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
