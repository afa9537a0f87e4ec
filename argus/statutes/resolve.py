"""Resolving written references to graph nodes, and adding the ``cites_*`` edges.

A reference resolves to the most specific node that exists: "§ 5 Absatz 1 Satz 2 Nummer 3" names
a Nummer, "Absatz 2" (written inside § 5) names § 5 Abs. 2. Relative references resolve against
the citing node: a Satz reference against the citing Absatz, a Nummer reference against the
citing Absatz's Sätze, a Buchstabe reference against the citing Nummer. When a written level does
not exist (a Satz count the splitter got wrong, a repealed Absatz) the edge points to the deepest
ancestor found and is marked ``partial``.
"""

from __future__ import annotations

import bisect
import re
from array import array
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Protocol

import networkx as nx

from argus.statutes.citations import (
    Designator,
    Reference,
    ReferenceParser,
    RefPath,
    Style,
)
from argus.statutes.codes import CodeRegistry
from argus.statutes.model import Level, cites_edge
from argus.statutes.parser import TOC_KINDS, SectionLayout



class NodeTable(Protocol):
    """What resolving a reference asks about nodes: :class:`GraphNodes` answers it from a graph,
    :class:`argus.statutes.packed.CodeNodes` from one code's columns, :class:`argus.statutes.store.StoreNodes`
    from the build's store. Declared here, the lowest of the three, so none imports the others for it."""

    ids: object  #: ``in`` tells whether a node exists

    def type(self, node: str) -> str: ...
    def parent(self, node: str) -> str | None: ...
    def attrs(self, node: str) -> dict: ...
    def code(self, node: str) -> str: ...
    def children(self, node: str) -> list[str]: ...


class CiteSink(Protocol):
    """Where a building process records the ``cites_*`` edges (:class:`argus.statutes.store.GraphStore`)."""

    def begin_citing(self, code_key) -> None: ...
    def add_cite(self, satz, target, key, mention, origin, flags, kind) -> bool: ...
    def finish(self) -> None: ...

_SEG = {
    Level.ABSATZ: "/abs",
    Level.SATZ: "/s",
    Level.NUMMER: "/nr",
    Level.BUCHSTABE: "/bst",
    Level.DOPPELBUCHSTABE: "/dbst",
}
_TYPE_LEVEL = {
    "section": Level.SECTION,
    "absatz": Level.ABSATZ,
    "satz": Level.SATZ,
    "nummer": Level.NUMMER,
    "buchstabe": Level.BUCHSTABE,
    "doppelbuchstabe": Level.DOPPELBUCHSTABE,
}
_CITES_BY_TYPE = {name: cites_edge(level) for name, level in _TYPE_LEVEL.items()}
_CITES_SECTION = cites_edge(Level.SECTION)
MAX_RANGE = 200
_EXAMPLES = 200  #: unresolved references kept as examples
#: A citation edge's flags, as :class:`argus.statutes.store.GraphStore` records them
CROSS_CODE, PARTIAL, RELATIVE = 1, 2, 4
_DESCENT = tuple(
    (lvl, lvl.type_name) for lvl in (Level.ABSATZ, Level.SATZ, Level.NUMMER, Level.BUCHSTABE, Level.DOPPELBUCHSTABE)
)  #: (level, RefPath attribute) in the order ``descend`` walks them
_CONTEXT_DESIGNATOR = re.compile(r"\b(?:aus|nach|gemäß)\s+(?:dem|der|den)\s+")
_CONTEXT_UNKNOWN = re.compile(r"[A-ZÄÖÜ][\wäöüß-]*(?:gesetz|gesetzbuch|ordnung|verordnung|abkommen|übereinkommen)\b")


@dataclass
class CitationReport:
    """What the citation pass found and did, for the stats tables."""

    mentions: int = 0  #: references read in Satz text
    edges: int = 0  #: distinct cites_* edges added (after range expansion)
    intra_code: int = 0
    cross_code: int = 0
    partial: int = 0  #: edges that stop above the written depth
    relative: int = 0  #: edges from relative references ("Absatz 2", "nach Satz 1") rather than "§ …"
    unresolved: int = 0  #: references whose § (or relative anchor) was not found
    unknown_law: int = 0  #: references to laws outside the loaded corpus (counted, no edge)
    by_target: Counter = field(default_factory=Counter)
    unknown_designators: Counter = field(default_factory=Counter)
    unresolved_examples: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "mentions": self.mentions,
            "edges": self.edges,
            "intra_code": self.intra_code,
            "cross_code": self.cross_code,
            "partial": self.partial,
            "relative": self.relative,
            "unresolved": self.unresolved,
            "unknown_law": self.unknown_law,
            "by_target": dict(self.by_target),
            "unknown_designators": dict(self.unknown_designators.most_common(50)),
            "unresolved_examples": self.unresolved_examples[:50],
        }

    @classmethod
    def from_dict(cls, d: dict) -> CitationReport:
        rep = cls(
            **{
                k: d.get(k, 0)
                for k in (
                    "mentions",
                    "edges",
                    "intra_code",
                    "cross_code",
                    "partial",
                    "relative",
                    "unresolved",
                    "unknown_law",
                )
            }
        )
        rep.by_target = Counter(d.get("by_target", {}))
        rep.unknown_designators = Counter(d.get("unknown_designators", {}))
        rep.unresolved_examples = list(d.get("unresolved_examples", []))
        return rep


class GraphNodes:
    """What resolving a reference looks up about nodes, answered from a graph's dicts.

    A build's worker answers the same from one code's columns
    (:class:`argus.statutes.packed.CodeNodes`)."""

    __slots__ = ("_node", "_succ", "ids")

    def __init__(self, graph: nx.MultiDiGraph) -> None:
        # the plain dicts of networkx (``G._node``, ``G._succ``): views cost 3x more in these hot paths
        self._node = self.ids = graph._node  #: ``in`` tells whether a node exists
        self._succ = graph._succ

    def type(self, node: str) -> str:
        return self._node[node]["type"]

    def parent(self, node: str) -> str | None:
        return self._node[node].get("parent")

    def attrs(self, node: str) -> dict:
        """All attributes (asked of §§ only)."""
        return self._node[node]

    def code(self, node: str) -> str:
        return self._node[node]["code"]

    def children(self, node: str) -> list[str]:
        """Hierarchy children in document order."""
        return [v for v, keys in self._succ[node].items() if any(k.startswith("contains_") for k in keys)]


class ProvisionLocator:
    """Walks node ids downwards: ids are paths, so a child is found by composing its id.

    Works on a graph, or (``table`` instead of ``graph``) on one code of a build's worker
    (:mod:`argus.statutes.packed`)."""

    def __init__(
        self,
        graph: nx.MultiDiGraph | None,
        sections: dict[str, dict[tuple[str, str], str]],
        *,
        table: NodeTable | None = None,
    ) -> None:
        self.graph = graph
        self.table = table if table is not None else GraphNodes(graph)
        self.ids = self.table.ids
        self.sections = sections
        self._ordered: dict[str, tuple[list[int], list[str]]] = {}

    def section(self, code: str, number: str, kind: str = "§") -> str | None:
        index = self.sections.get(code)
        if index is None:
            return None
        sid = index.get((kind, number))
        if sid is None:
            sid = index.get(("Art" if kind == "§" else "§", number))  # courts mix "§" and "Art."
        return sid

    def level_of(self, node: str) -> Level:
        return _TYPE_LEVEL.get(self.table.type(node), Level.CODE)

    def _sub(self, node: str, level: Level, label: str) -> str | None:
        cand = node + _SEG[level] + label
        return cand if cand in self.ids else None

    def _ordered_children(self, node: str, level: Level) -> list[str]:
        prefix = node + _SEG[level]
        return [v for v in self.table.children(node) if v.startswith(prefix)]

    def child(self, node: str, level: Level, label: str, hint: str | None = None) -> str | None:
        """The ``level`` node labelled ``label`` under ``node``, looking through levels a citation may skip.

        Citations skip levels that are implicit in the text: "§ 4 Nr. 12" skips the single
        Absatz and the Satz holding the list. ``hint`` (the citing Satz) is searched first.
        """
        direct = self._sub(node, level, label)
        if direct is not None:
            return direct
        node_level = self.level_of(node)
        if node_level is Level.SECTION and level > Level.ABSATZ:
            absaetze = self._ordered_children(node, Level.ABSATZ)
            if hint is not None:
                absaetze.sort(key=lambda a: not hint.startswith(a + "/"))
            for a in absaetze:
                found = self.child(a, level, label, hint)
                if found is not None:
                    return found
            return None
        if node_level is Level.ABSATZ and level > Level.SATZ:
            saetze = self._ordered_children(node, Level.SATZ)
            if hint is not None:
                saetze.sort(key=lambda s: not (hint == s or hint.startswith(s + "/")))
            for s in saetze:
                found = self.child(s, level, label, hint)
                if found is not None:
                    return found
            return None
        if node_level in (Level.SATZ, Level.NUMMER) and level >= Level.BUCHSTABE:
            for n in self._ordered_children(node, Level.NUMMER):
                found = self._sub(n, level, label)
                if found is not None:
                    return found
        return None

    def descend(self, start: str, path: RefPath, from_level: Level, hint: str | None = None) -> tuple[str, bool]:
        """Follow ``path`` from ``start`` through the levels below ``from_level``; (node, complete)."""
        node = start
        for level, attr in _DESCENT:
            if level < from_level:
                continue
            label = getattr(path, attr)
            if label is None:
                continue
            nxt = self.child(node, level, label, hint)
            if nxt is None:
                return node, False
            node = nxt
        return node, True

    def siblings_range(self, first: str, last_label: str) -> list[str]:
        """Nodes from ``first`` to the sibling labelled ``last_label`` in document order ("bis")."""
        parent = self.table.parent(first)
        if parent is None:
            return [first]
        level = self.level_of(first)
        if level is Level.SECTION:
            return [first]
        siblings = self._ordered_children(parent, level)
        if first not in siblings:
            return [first]
        i = siblings.index(first)
        end_id = parent + _SEG[level] + last_label
        if end_id not in siblings:
            return [first]
        j = siblings.index(end_id)
        if j < i or j - i > MAX_RANGE:
            return [first]
        return siblings[i : j + 1]

    def section_range(self, code: str, first_sid: str, last_number: str, kind: str) -> list[str]:
        last = self.section(code, last_number, kind)
        if last is None:
            return [first_sid]
        attrs = self.table.attrs
        o1, o2 = attrs(first_sid)["order"], attrs(last)["order"]
        if o2 <= o1:
            return [first_sid]
        if code not in self._ordered:
            ordered = sorted(set(self.sections.get(code, {}).values()), key=lambda sid: attrs(sid)["order"])
            self._ordered[code] = ([attrs(sid)["order"] for sid in ordered], ordered)
        orders, sids = self._ordered[code]
        i = bisect.bisect_left(orders, o1)
        j = bisect.bisect_right(orders, o2)
        return sids[i:j][: MAX_RANGE + 1]


def reference_scan_start(layout: SectionLayout, section_attrs: dict) -> int | None:
    """Where reading references in a § starts (its first Satz), or None when it has nothing to read:
    no Sätze, or a table of contents (it lists §§, it does not cite them)."""
    if not layout.saetze or section_attrs["kind"] in TOC_KINDS:
        return None
    return layout.saetze[0][0]


#: What :meth:`CitationLinker._targets` returns, in a worker, for a reference into another code.
DEFER = None
_RESOLVED, _DEFERRED, _EXAMPLE = 0, 1, 2


@dataclass
class CodeReferences:
    """The references of one code as a build's worker read them (:meth:`CitationLinker.read_code`),
    in columns: nodes by their position in the code, strings that repeat by index into a table.

    ``ops`` has one entry per event in text order: a reference resolved within the code (its
    Satz, origin, mention, designator kind, whether it is relative, and ``count`` targets with
    their edge key and whether they are as deep as written), one into another code (a tuple in
    ``deferred``: Satz, origin, §, span, path fields, designator kind, code, text and span), or an
    unresolved reference's example (in ``examples``).
    """

    ops: bytearray = field(default_factory=bytearray)
    satz: array = field(default_factory=lambda: array("i"))
    origin: array = field(default_factory=lambda: array("i"))
    mention: list[str] = field(default_factory=list)
    kind: bytearray = field(default_factory=bytearray)
    relative: bytearray = field(default_factory=bytearray)
    count: array = field(default_factory=lambda: array("i"))
    target: array = field(default_factory=lambda: array("i"))
    key: bytearray = field(default_factory=bytearray)
    complete: bytearray = field(default_factory=bytearray)
    deferred: list[tuple] = field(default_factory=list)
    examples: list[str] = field(default_factory=list)
    kinds: dict[str, int] = field(default_factory=dict)  #: designator kind -> index in ``kind``
    keys: dict[str, int] = field(default_factory=dict)  #: edge key -> index in ``key``
    #: in the building process: ``deferred`` resolved ahead (``CitationLinker.resolve_deferred``)
    resolved: list | None = None

    def named_codes(self) -> Iterator[tuple[int, str]]:
        """(index in ``deferred``, the code it names) of each reference into another code."""
        for k, deferred in enumerate(self.deferred):
            yield k, deferred[7]


class CitationLinker:
    """Reads references in every Satz and records ``cites_*`` edges (intra- and cross-code).

    In a build's worker process (``local_code`` set, the ``table`` of that one code's nodes) it
    resolves what stays within the code and keeps the rest for the building process:
    :meth:`read_code` returns the code's :class:`CodeReferences`. In the building process (the
    ``table`` of the graph's store and the store as ``edges``) :meth:`add_code` turns them into
    edges (after :meth:`resolve_deferred` for those into other codes), codes in build order and
    each code's references in text order.
    """

    def __init__(
        self,
        registry: CodeRegistry | None,
        sections: dict[str, dict[tuple[str, str], str]],
        *,
        table: NodeTable,
        edges: CiteSink | None = None,
        local_code: str | None = None,
    ) -> None:
        self.registry = registry
        self.locator = ProvisionLocator(None, sections, table=table)
        self.table = table
        self.edges = edges  #: where the building process records the edges
        self.parser = ReferenceParser(registry, Style.STATUTE)
        self.report = CitationReport()
        self.local_code = local_code
        self._context_cache: dict[str, Designator | None] = {}
        self._out: CodeReferences | None = None  #: in :meth:`read_code`: what it will return
        self._capture = False  #: in :meth:`_resolve_deferred`: keep an unresolved example in ``_captured``
        self._captured: str | None = None
        self._out_examples = 0

    def _mentions(self, layout: SectionLayout, text: str, refs: list[Reference]) -> Iterator[tuple[Reference, str, str]]:
        """(reference, citing Satz, origin) for each reference inside a Satz; the origin is the
        deepest list item around it (else the Satz), and a reference without a designator inside a
        list item takes a code named in the item's intro."""
        saetze = layout.saetze
        items = layout.items
        starts = [s for s, _, _ in saetze]
        item_starts = [a for a, _, _ in items]
        mentions = 0
        for ref in refs:
            r_start = ref.span[0]
            i = bisect_right(starts, r_start) - 1
            if i < 0:
                continue
            s, e, satz = saetze[i]
            if r_start >= e:
                continue  # between Sätze (an Absatz label): not part of any Satz
            origin = satz
            j = bisect_right(item_starts, r_start) - 1
            while j >= 0:  # items are in document order, children after parents: the first
                a, b, item = items[j]  # enclosing one found walking back is the deepest
                if b > r_start:
                    if a >= s:
                        origin = item
                    break
                j -= 1
            mentions += 1
            if ref.designator.kind == "implicit" and origin != satz:
                context = self._list_context(layout, r_start, text)
                if context is not None:
                    ref = replace(ref, designator=context)
            yield ref, satz, origin
        self.report.mentions += mentions

    def _add_edges(
        self,
        satz: str,
        origin: str,
        mention: str,
        kind: str,
        relative: bool,
        code_key: str,
        targets: list[tuple[str, bool]],
    ) -> None:
        """The edges of one reference (designator ``kind``; ``relative`` unless it names a §)."""
        table = self.table
        for target, complete in targets:
            if target == satz:
                continue
            self._add_edge(
                satz, target, _CITES_BY_TYPE.get(table.type(target), _CITES_SECTION), mention, origin,
                table.code(target) != code_key, complete, kind, relative,
            )  # fmt: skip

    def _add_edge(
        self,
        satz: str,
        target: str,
        key: str,
        mention: str,
        origin: str,
        cross_code: bool,
        complete: bool,
        kind: str,
        relative: bool,
    ) -> None:
        """Record one ``cites_*`` edge, unless an earlier mention in the Satz gave it."""
        flags = (CROSS_CODE if cross_code else 0) | (0 if complete else PARTIAL) | (RELATIVE if relative else 0)
        if not self.edges.add_cite(satz, target, key, mention, origin, flags, kind):
            return  # the first mention of a target wins
        report = self.report
        report.edges += 1
        report.by_target[key] += 1
        if cross_code:
            report.cross_code += 1
        else:
            report.intra_code += 1
        if not complete:
            report.partial += 1
        if relative:
            report.relative += 1

    # -- a build's worker process and its building process ----------------------------------------
    def read_code(self, layouts: list[SectionLayout]) -> CodeReferences:
        """A worker's part for its code (``local_code``): read every §'s references, resolve those
        that stay within the code, and keep the rest for the building process (:meth:`add_code`)."""
        out = CodeReferences()
        self._out, self._out_examples = out, 0
        attrs_of, type_of, pos = self.table.attrs, self.table.type, self.table.ids
        parse = self.parser.parse
        code_key = self.local_code
        ops, kinds, keys = out.ops, out.kinds, out.keys
        for layout in layouts:
            sid = layout.section_id
            sec = attrs_of(sid)
            first = reference_scan_start(layout, sec)
            if first is None:
                continue
            text = sec["text"]
            refs = parse(text, citing_code=code_key, start=first)
            if not refs:
                continue
            for ref, satz, origin in self._mentions(layout, text, refs):
                targets = self._targets(ref, code_key, sid, satz, origin, text)
                if targets is DEFER:
                    p, d = ref.path, ref.designator
                    ops.append(_DEFERRED)
                    out.deferred.append(
                        (pos[satz], pos[origin], pos[sid], ref.span[0], ref.span[1],
                         (p.kind, p.article, p.section, p.absatz, p.satz, p.nummer, p.buchstabe, p.doppelbuchstabe,
                          p.range_end, p.following),
                         d.kind, d.code, d.text, d.span)
                    )  # fmt: skip
                    continue
                count = 0
                for target, complete in targets:
                    if target == satz:
                        continue
                    key = _CITES_BY_TYPE.get(type_of(target), _CITES_SECTION)
                    out.target.append(pos[target])
                    out.key.append(keys.setdefault(key, len(keys)))
                    out.complete.append(complete)
                    count += 1
                if count:
                    ops.append(_RESOLVED)
                    out.satz.append(pos[satz])
                    out.origin.append(pos[origin])
                    out.mention.append(text[ref.span[0] : ref.span[1]])
                    out.kind.append(kinds.setdefault(ref.designator.kind, len(kinds)))
                    out.relative.append(ref.path.top is not Level.SECTION)
                    out.count.append(count)
        self._out = None
        return out

    def add_code(self, code_key: str, ids: list[str], refs: CodeReferences) -> None:
        """Add a code's references (a worker's :meth:`read_code`; ``ids`` its node ids by position) in
        the building process: every code of the graph must be in it, the codes must come in build order."""
        self.edges.begin_citing(code_key)
        examples = self.report.unresolved_examples
        add_edge = self._add_edge
        kinds, keys = list(refs.kinds), list(refs.keys)
        satz_, origin_, mention_, kind_, relative_, count_ = (
            refs.satz, refs.origin, refs.mention, refs.kind, refs.relative, refs.count
        )  # fmt: skip
        target_, key_, complete_ = refs.target, refs.key, refs.complete
        i = t = d = x = 0
        for op in refs.ops:
            if op == _RESOLVED:
                satz, origin, mention = ids[satz_[i]], ids[origin_[i]], mention_[i]
                kind, relative = kinds[kind_[i]], relative_[i] != 0
                for j in range(t, t + count_[i]):
                    add_edge(satz, ids[target_[j]], keys[key_[j]], mention, origin, False, complete_[j] != 0, kind,
                             relative)  # fmt: skip
                t += count_[i]
                i += 1
            elif op == _DEFERRED:
                resolved = refs.resolved[d] if refs.resolved is not None else None
                if resolved is None:
                    resolved = self._resolve_deferred(code_key, ids, refs.deferred[d])
                d += 1
                satz, origin, mention, kind, relative, targets, example = resolved
                if example is not None and len(examples) < _EXAMPLES:
                    examples.append(example)
                if targets:
                    self._add_edges(satz, origin, mention, kind, relative, code_key, targets)
            else:
                if len(examples) < _EXAMPLES:
                    examples.append(refs.examples[x])
                x += 1

    def resolve_deferred(self, code_key: str, ids: list[str], refs: CodeReferences, k: int) -> None:
        """Resolve a code's ``k``-th reference into another code ahead of :meth:`add_code` (the
        code it names, and the citing code, are in the graph), so little is left for the end."""
        if refs.resolved is None:
            refs.resolved = [None] * len(refs.deferred)
        refs.resolved[k] = self._resolve_deferred(code_key, ids, refs.deferred[k])

    def _resolve_deferred(self, code_key: str, ids: list[str], deferred: tuple) -> tuple:
        """(Satz, origin, mention, designator kind, relative, targets, unresolved example or None) of a
        deferred reference."""
        satz, origin, sid, r_start, r_end, path, kind, code, d_text, d_span = deferred
        satz, origin, sid = ids[satz], ids[origin], ids[sid]
        ref = Reference((r_start, r_end), RefPath(*path), Designator(kind, code, d_text, d_span), 0, 0)
        text = self.table.attrs(sid)["text"]
        self._captured = None
        self._capture = True
        try:
            targets = self._targets(ref, code_key, sid, satz, origin, text)
        finally:
            self._capture = False
        relative = ref.path.top is not Level.SECTION
        return satz, origin, text[r_start:r_end] if targets else None, kind, relative, targets, self._captured

    def merge_counts(self, other: CitationReport) -> None:
        """Add a worker's counts of mentions, unresolved references and laws outside the corpus."""
        report = self.report
        report.mentions += other.mentions
        report.unresolved += other.unresolved
        report.unknown_law += other.unknown_law
        report.unknown_designators.update(other.unknown_designators)

    def finish(self) -> CitationReport:
        """The report of the edges recorded (they are in the store already)."""
        self.edges.finish()
        return self.report

    def _targets(
        self, ref: Reference, code_key: str, section_id: str, satz: str, origin: str, text: str
    ) -> list[tuple[str, bool]] | None:
        """The nodes a reference in ``satz`` (of § ``section_id`` in code ``code_key``) names, with
        whether each is as deep as written; :data:`DEFER` in a worker for another code's §."""
        des = ref.designator
        path = ref.path
        if des.kind == "unknown":
            self.report.unknown_law += 1
            self.report.unknown_designators[des.text] += 1
            return []
        code = des.code or code_key
        loc = self.locator
        top = path.top
        if top is Level.SECTION:
            if self.local_code is not None and code != self.local_code:
                return DEFER
            number = path.section_number
            sid = loc.section(code, number, path.kind) if number else None
            if sid is None and code != code_key and des.kind == "code":
                # "§ 312d Absatz 1 in Verbindung mit Artikel 246b des EGBGB": the designator binds the
                # last reference; an earlier one that only exists in the citing code belongs to it.
                sid = loc.section(code_key, number, path.kind) if number else None
                if sid is not None:
                    code = code_key
            if sid is None:
                self._unresolved(ref, code, satz, text)
                return []
            if path.range_end is not None and path.deepest is Level.SECTION:
                return [(s, True) for s in loc.section_range(code, sid, path.range_end, path.kind)]
            node, complete = loc.descend(sid, path, Level.ABSATZ, hint=satz if code == code_key else None)
        else:
            if des.kind == "code" and des.code != code_key:
                self._unresolved(ref, code, satz, text)  # "Absatz 2 des Handelsgesetzbuchs" has no § to anchor on
                return []
            anchor = self._relative_anchor(top, section_id, satz, origin)
            if anchor is None:
                self._unresolved(ref, code, satz, text)
                return []
            node, complete = loc.descend(anchor, path, top, hint=satz)
            if node == anchor and not complete and top >= Level.NUMMER and anchor != section_id:
                # "nach Nummer 3" may point into a list of another Absatz of the same §
                anchor = section_id
                node, complete = loc.descend(anchor, path, top, hint=satz)
            if node == anchor and not complete:
                self._unresolved(ref, code, satz, text)
                return []
        if path.range_end is not None and complete:
            return [(n, True) for n in loc.siblings_range(node, path.range_end)]
        return [(node, complete)]

    def _list_context(self, layout: SectionLayout, pos: int, text: str):
        """A code named in the intro of an enclosing list item ("1. aus dem Strafgesetzbuch:")."""
        containing = [(a, b, item) for a, b, item in layout.items if a <= pos < b]
        for a, b, item in reversed(containing):
            cached = self._context_cache.get(item, False)
            if cached is not False:
                if cached is not None:
                    return cached
                continue
            intro_end = b
            for c, _, other in layout.items:
                if a < c < intro_end and other != item:
                    intro_end = c
            intro = text[a:intro_end].rstrip()
            found = None
            if intro.endswith(":"):
                for m in _CONTEXT_DESIGNATOR.finditer(text, a, intro_end):
                    nm = self.registry.match_name(text, m.end())
                    if nm is not None:
                        found = Designator("code", nm.key, text[m.start() : nm.end], (m.start(), nm.end))
                        break
                    um = _CONTEXT_UNKNOWN.match(text, m.end(), intro_end)
                    if um:
                        found = Designator("unknown", None, text[m.start() : um.end()], (m.start(), um.end()))
                        break
            self._context_cache[item] = found
            if found is not None:
                return found
        return None

    def _relative_anchor(self, top: Level, section: str, satz: str, origin: str) -> str | None:
        table = self.table
        if top is Level.ABSATZ:
            return section
        absatz = table.parent(satz)
        if top in (Level.SATZ, Level.NUMMER):
            return absatz
        # Buchstabe / Doppelbuchstabe: the enclosing Nummer (or Buchstabe) of the mention
        node = origin
        want = "nummer" if top is Level.BUCHSTABE else "buchstabe"
        while node != satz and node in table.ids:
            if table.type(node) == want:
                return node
            node = table.parent(node)
        return satz

    def _unresolved(self, ref: Reference, code: str, satz: str, text: str) -> None:
        self.report.unresolved += 1
        if self._capture:
            s, e = ref.span
            self._captured = f"{satz} -> {code}: …{text[max(0, s - 40) : s]}[{text[s:e]}]{text[e : e + 30]}…".replace(
                "\n", " "
            )
            return
        if self._out is None:
            sink = self.report.unresolved_examples
            if len(sink) >= _EXAMPLES:
                return
        else:
            if self._out_examples >= _EXAMPLES:
                return
            self._out_examples += 1
            self._out.ops.append(_EXAMPLE)
            sink = self._out.examples
        s, e = ref.span
        sink.append(
            f"{satz} -> {code}: …{text[max(0, s - 40) : s]}[{text[s:e]}]{text[e : e + 30]}…".replace("\n", " ")
        )
