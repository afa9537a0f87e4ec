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

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice
from typing import IO, TYPE_CHECKING, Any

import networkx as nx
import orjson

from argus.statutes.model import Level
from argus.statutes.packed import _TYPE_OF_LEVEL
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

    keys = _store_keys(store, node_text)
    _write_head(fh, keys, True, {})
    parts: list[str] = []
    write = fh.write
    root = store.large[ROOT_ID]
    parts.append(_element("node", f'id="{_attr(ROOT_ID)}"', root.items()))
    extra = ("text",) if node_text else ()
    absatz_tpl = _template('id="%s"', "node", _ABSATZ_KEYS + extra)
    below_tpl = _template('id="%s"', "node", _BELOW_KEYS + extra)
    for parsed in store.codes:
        _code_graphml(parsed, node_text, absatz_tpl, below_tpl, parts)
        if len(parts) > 4_000:
            write("".join(parts))
            parts.clear()
    write("".join(parts))
    parts.clear()
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

    for batch in _batches(store.edge_walk(contains, cite), 5_000):
        write("".join(batch))
    write("</graph></graphml>")


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


def _code_graphml(parsed: ParsedCode, node_text: bool, absatz_tpl: str, below_tpl: str, parts: list[str]) -> None:
    """One code's nodes as GraphML elements, appended to ``parts``."""
    ids, types, parents = parsed.ids, parsed.types, parsed.parents
    unit, absatz = int(Level.UNIT), int(Level.ABSATZ)
    type_of = _TYPE_OF_LEVEL
    esc_ids = ids if not _ATTR_SPECIAL.search("".join(ids)) else [_attr(x) for x in ids]
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
