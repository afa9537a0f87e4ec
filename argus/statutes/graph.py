"""The statute knowledge graph: a ``networkx.MultiDiGraph`` plus the indexes that make it usable.

``build_statute_graph`` parses XML sources (one bad file is recorded and skipped), links
citations across all loaded codes and returns a :class:`StatuteGraph`. Node ids are stable: the
code's BJNR, the norm's ``doknr`` for units and §§, and ``<doknr>/abs2/s1/nr3/bsta`` below, so two
parses of the same XML give the same ids and a citation decodes from an id alone.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import networkx as nx

from argus.errors import InputError
from argus.statutes import parallel
from argus.statutes.codes import CodeRegistry
from argus.statutes.corpus import XmlSource
from argus.statutes.model import Level, ProvisionCitation
from argus.statutes.packed import ROOT_ID, PackedCode  # noqa: F401 - ROOT_ID: the root node's id, for users of the graph
from argus.statutes.parser import TOC_KINDS, CodeInfo, ParseIssue, read_code_info
from argus.statutes.resolve import (
    CitationLinker,
    CitationReport,
    CodeReferences,
    ProvisionLocator,
)
from argus.statutes.storage import atomic_open
from argus.statutes.store import GraphStore, StoreNodes
from argus.statutes.writers import (
    read_json,
    write_graphml,
    write_graphml_store,
    write_json,
)

FORMAT = "argus-statute-graph"
FORMAT_VERSION = 1


@dataclass
class BuildTimings:
    """Seconds spent per build phase (reported by ``argus statutes build`` and the benchmark)."""

    parse: float = 0.0
    assemble: float = 0.0
    citations: float = 0.0

    @property
    def total(self) -> float:
        return self.parse + self.assemble + self.citations


class StatuteGraph:
    """The graph and its side tables.

    ``graph`` nodes carry ``type`` (root, code, unit, section, absatz, satz, nummer, buchstabe,
    doppelbuchstabe), ``code``, ``label``, ``parent``, ``order``; sections carry their ``text``
    and below-§ nodes carry ``section``/``start``/``end`` offsets into it. Edges are keyed by their
    type (``contains_absatz``, ``cites_satz`` …).

    A build hands over its :class:`~argus.statutes.store.GraphStore` (``store``) instead of a
    networkx graph: ``graph`` is made from it on first use (seconds and about twice the memory for
    the whole federal corpus), and until then :meth:`to_json` and the counts read the store, so
    building and writing the graph never needs the networkx form.
    """

    def __init__(
        self,
        graph: nx.MultiDiGraph | None,
        codes: dict[str, CodeInfo],
        sections: dict[str, dict[tuple[str, str], str]],
        issues: list[ParseIssue] | None = None,
        citation_report: CitationReport | None = None,
        timings: BuildTimings | None = None,
        *,
        store: GraphStore | None = None,
    ) -> None:
        if graph is None and store is None:
            raise ValueError("a StatuteGraph needs a graph or a build's store")
        self._graph = graph
        self._store = store if graph is None else None
        self.codes = codes
        self.sections = sections
        self.issues = issues if issues is not None else []
        self.citation_report = citation_report if citation_report is not None else CitationReport()
        self.timings = timings if timings is not None else BuildTimings()
        self._registry: CodeRegistry | None = None
        self._locator: ProvisionLocator | None = None

    def __repr__(self) -> str:
        return f"StatuteGraph({len(self.codes)} codes, {self.number_of_nodes()} nodes, {self.number_of_edges()} edges)"

    @property
    def graph(self) -> nx.MultiDiGraph:
        """The ``networkx.MultiDiGraph`` (made from the build's store on first use)."""
        if self._graph is None:
            with gc_paused(settle=True):
                self._graph = self._store.to_networkx()
            self._store = None
        return self._graph

    def number_of_nodes(self) -> int:
        return self._graph.number_of_nodes() if self._graph is not None else self._store.number_of_nodes()

    def number_of_edges(self) -> int:
        return self._graph.number_of_edges() if self._graph is not None else self._store.number_of_edges()

    # -- lookups ------------------------------------------------------------------------------
    @property
    def registry(self) -> CodeRegistry:
        if self._registry is None:
            self._registry = CodeRegistry(self.codes.values())
        return self._registry

    @property
    def locator(self) -> ProvisionLocator:
        if self._locator is None:
            self._locator = ProvisionLocator(self.graph, self.sections)
        return self._locator

    def code_key(self, name: str) -> str:
        """Resolve a code name (jurabk, amtabk, title) to its key or raise a helpful InputError."""
        key = self.registry.resolve(name)
        if key is None:
            close = self.registry.suggest(name)
            hint = f" Did you mean: {', '.join(close)}?" if close else ""
            raise InputError(f"unknown code {name!r}: not among the {len(self.codes)} loaded codes.{hint}")
        return key

    def node(self, node_id: str) -> dict:
        return self.graph.nodes[node_id]

    def type_of(self, node_id: str) -> str:
        return self.graph.nodes[node_id]["type"]

    def parent(self, node_id: str) -> str | None:
        return self.graph.nodes[node_id].get("parent")

    def children(self, node_id: str) -> list[str]:
        """Hierarchy children in document order."""
        return [v for v, keys in self.graph.adj[node_id].items() if any(k.startswith("contains_") for k in keys)]

    def cited(self, node_id: str) -> list[str]:
        """Targets of citation edges leaving ``node_id`` (a Satz)."""
        return [v for v, keys in self.graph.adj[node_id].items() if any(k.startswith("cites_") for k in keys)]

    def section_of(self, node_id: str) -> str | None:
        attrs = self.graph.nodes[node_id]
        if attrs["type"] == "section":
            return node_id
        return attrs.get("section")

    def nodes_of_type(self, level: Level) -> list[str]:
        name = level.type_name
        return [n for n, t in self.graph.nodes(data="type") if t == name]

    def is_toc(self, node_id: str) -> bool:
        """True for nodes of an Inhaltsübersicht (tables of contents are not law text)."""
        sid = self.section_of(node_id)
        return sid is not None and self.graph.nodes[sid].get("kind") in TOC_KINDS

    def text(self, node_id: str) -> str:
        """The node's text; a parent's text always contains its children's text."""
        attrs = self.graph.nodes[node_id]
        kind = attrs["type"]
        if kind == "section":
            if attrs.get("nested"):
                nested = [
                    self.text(c) for c in self.children(node_id) if self.graph.nodes[c]["type"] in ("section", "unit")
                ]
                return "\n\n".join([attrs["text"], *nested])
            return attrs["text"]
        sid = attrs.get("section")
        if sid is not None:
            return self.graph.nodes[sid]["text"][attrs["start"] : attrs["end"]]
        return "\n\n".join(t for t in (self.text(c) for c in self.children(node_id)) if t)

    def citation(self, node_id: str) -> ProvisionCitation | None:
        """Decode a node id to the citation it stands for (``§ 622 Abs. 2 Nr. 1 BGB``)."""
        nodes = self.graph.nodes
        attrs = nodes[node_id]
        kind = attrs["type"]
        if kind == "root":
            return None
        if kind in ("code", "unit"):
            return ProvisionCitation(code=attrs["code"])
        values: dict[str, str] = {}
        n = node_id
        while nodes[n]["type"] != "section":
            a = nodes[n]
            t = a["type"]
            if t in ("absatz", "satz", "nummer", "buchstabe") and not (t == "absatz" and a.get("implicit")):
                values[t] = a["label"]  # walking up: the outermost label of a repeated level wins
            n = a["parent"]
        sec = nodes[n]
        kind = sec.get("kind")
        if kind in ("§", "Art"):
            number = sec.get("number") or None
        else:  # "Anlage 1", "Präambel": cited by their label
            number = sec.get("label") or None
        return ProvisionCitation(
            code=sec["code"],
            section=number,
            absatz=values.get("absatz"),
            satz=values.get("satz"),
            nummer=values.get("nummer"),
            buchstabe=values.get("buchstabe"),
            article=sec.get("kind") == "Art",
        )

    def find(self, citation: ProvisionCitation) -> str | None:
        """The most specific node matching a citation (None when its § is not in the graph)."""
        loc = self.locator
        if citation.code not in self.codes:
            return None
        if citation.section is None:
            return self.codes[citation.code].node_id
        if citation.section[:1].isdigit():
            sid = loc.section(citation.code, citation.section, "Art" if citation.article else "§")
        else:
            kind, _, number = citation.section.partition(" ")
            sid = self.sections.get(citation.code, {}).get((kind.lower(), number.strip()))
        if sid is None:
            return None
        from argus.statutes.citations import RefPath

        path = RefPath(
            section=citation.section,
            absatz=citation.absatz,
            satz=citation.satz,
            nummer=citation.nummer,
            buchstabe=citation.buchstabe,
        )
        node, _ = loc.descend(sid, path, Level.ABSATZ)
        return node

    def words(self, node_id: str) -> int:
        return len(self.text(node_id).split())

    # -- persistence --------------------------------------------------------------------------
    def to_json(self, path: str | Path) -> None:
        """Write the graph as JSON (node-link format plus codes, issues and the citation report),
        streamed a batch of nodes or edges at a time (:func:`argus.statutes.writers.write_json`)."""
        with gc_paused():
            head = {
                "format": FORMAT,
                "version": FORMAT_VERSION,
                "codes": [_fields(c) for c in self.codes.values()],
                "sections": {
                    code: [[k[0], k[1], sid] for k, sid in idx.items()] for code, idx in self.sections.items()
                },
                "issues": [_fields(i) for i in self.issues],
                "citation_report": self.citation_report.as_dict(),
            }
            with atomic_open(path, "wb") as fh:
                write_json(fh, head, self._graph if self._graph is not None else self._store)

    @classmethod
    def from_json(cls, path: str | Path) -> StatuteGraph:
        """Load a graph :meth:`to_json` wrote (read a batch of records at a time:
        :func:`argus.statutes.writers.read_json`)."""
        path = Path(path)
        with gc_paused(settle=True):
            try:
                data, graph = read_json(path)
            except FileNotFoundError as exc:
                raise InputError(f"graph file not found: {path}") from exc
            except ValueError as exc:  # not JSON, not UTF-8, no graph in it
                raise InputError(f"{path} is not a JSON statute graph: {exc}") from exc
            except (KeyError, TypeError, AttributeError) as exc:
                raise InputError(f"{path}: the graph's node-link records are malformed ({exc!r})") from exc
            if data.get("format") != FORMAT:
                raise InputError(f"{path} is not an argus statute graph (missing format marker {FORMAT!r})")
        codes = {c["key"]: CodeInfo(**c) for c in data["codes"]}
        sections = {code: {(k, n): sid for k, n, sid in rows} for code, rows in data["sections"].items()}
        issues = [ParseIssue(**i) for i in data.get("issues", [])]
        return cls(graph, codes, sections, issues, CitationReport.from_dict(data.get("citation_report", {})))

    def to_graphml(self, path: str | Path, node_text: bool = True) -> None:
        """Write GraphML; with ``node_text`` every node gets its full ``text`` (GraphML has no spans).
        Streamed node by node (:func:`argus.statutes.writers.write_graphml`); a build's graph from
        its store, without making the networkx form (:func:`~argus.statutes.writers.write_graphml_store`)."""
        with gc_paused(), atomic_open(path, "w") as fh:
            if self._graph is None:
                write_graphml_store(fh, self._store, node_text)
            else:
                write_graphml(fh, self._graph, self.text if node_text else None)


def _fields(record: CodeInfo | ParseIssue) -> dict:
    """``dataclasses.asdict`` of a record of plain values, without its recursive copying (tens of
    thousands of issues)."""
    return {f: getattr(record, f) for f in record.__dataclass_fields__}


# --------------------------------------------------------------------------------------------
# Building


def build_statute_graph(
    sources: Iterable[XmlSource],
    *,
    link_citations: bool = True,
    progress: Callable[[str], None] | None = None,
    workers: int | None = None,
) -> StatuteGraph:
    """Parse ``sources`` into one graph under a common root and link citations across codes.

    Malformed files, files without code metadata and duplicate codes are recorded in
    ``issues`` and skipped; the build goes on.

    ``workers`` processes (:mod:`argus.statutes.parallel`; default: one per usable CPU, up to 8;
    1 builds in this process) each take a file through everything that needs only that file: parse,
    Sätze, references read and resolved within the code (:mod:`argus.statutes.packed`). Reading
    references needs the names of every code of the graph: they come from a first, cheap pass over
    the files' headers. This process puts the packs into the graph in source order and resolves
    the references into other codes. The graph does not depend on ``workers``.

    The cyclic garbage collector is paused meanwhile: the build allocates millions of small dicts
    and tuples that hold no reference cycles, and the collector's repeated scans of that growing
    heap cost a fifth of the build time.
    """
    if workers is None:
        workers = parallel.default_workers()
    sources = list(sources)
    with gc_paused(settle=True):
        job: list = [None]  #: the registry, for _build to take (and let go of once the workers have it)
        expected = None
        if link_citations:
            job[0], expected = _header_registry(sources)
        sg = _build(sources, job, progress, workers)
        if expected is not None and [_registry_row(c) for c in sg.codes.values()] != expected:
            # A file whose header reads but whose body does not parse, or a code whose node id an
            # earlier code's node took: the references must be read with the graph's codes only.
            sg = _build(sources, [CodeRegistry(sg.codes.values())], progress, workers)
        return sg


@contextmanager
def gc_paused(settle: bool = False) -> Iterator[None]:
    """The cyclic garbage collector paused (and resumed if it ran before): building or writing the
    graph allocates millions of small dicts that hold no reference cycles, and each of the
    collector's passes would walk the whole growing graph (a fifth of the build time).

    With ``settle`` the objects made meanwhile join the oldest generation when the collector
    resumes (``gc.freeze`` then ``gc.unfreeze``): left young, the first collection after a build
    would walk all of them (seconds for the full corpus), at the next allocation, and pause the
    caller; in the oldest generation they are walked only by the rare full collections."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if settle:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


def _registry_row(info: CodeInfo) -> tuple:
    """What of a code the registry (and the choice of duplicate codes) depends on."""
    return info.key, info.node_id, info.jurabk, info.amtabk, info.title, info.short_title


def _header_registry(sources: list[XmlSource]) -> tuple[CodeRegistry, list[tuple]]:
    """The registry of the codes the build will have, from the files' headers alone (a first code
    of a name wins, as in the build), and its :func:`_registry_row` rows to check that against."""
    infos: list[CodeInfo] = []
    keys: set[str] = set()
    node_ids: set[str] = set()
    for source in sources:
        try:
            data = source.head()  # the header ends within the first 3 kB in the corpus
            if b"</metadaten>" not in data:
                data = source.read()
        except OSError:
            continue
        info = read_code_info(data, source.name)
        if info is None or info.key in keys or info.node_id in node_ids:
            continue
        keys.add(info.key)
        node_ids.add(info.node_id)
        infos.append(info)
    return CodeRegistry(infos), [_registry_row(i) for i in infos]


class _Assembler:
    """Adds packed codes to the store in source order (the part of a build that sees every code)."""

    def __init__(self, progress: Callable[[str], None] | None) -> None:
        self.store = GraphStore()
        self.codes: dict[str, CodeInfo] = {}
        self.sections: dict[str, dict[tuple[str, str], str]] = {}
        self.issues: list[ParseIssue] = []
        self.progress = progress

    def add(self, name: str, result: PackedCode | list[ParseIssue]) -> bool:
        """Add one source's result; False when it is skipped (parse failure or duplicate code)."""
        if not isinstance(result, PackedCode):
            self.issues.extend(result)
            return False
        parsed = result.code
        self.issues.extend(parsed.issues)
        info = parsed.info
        key = info.key
        codes = self.codes
        if key in codes or info.node_id in self.store.index:
            self.issues.append(
                ParseIssue(
                    name,
                    "duplicate_code",
                    f"code {key} already loaded from {codes[key].source if key in codes else '?'}; skipped",
                    key,
                )
            )
            return False
        if self.store.clashes(parsed):
            self.issues.append(
                ParseIssue(name, "duplicate_code", f"code {key} has node ids of a code loaded before; skipped", key)
            )
            return False
        codes[key] = info
        self.sections[key] = parsed.sections
        self.store.add(parsed)
        if self.progress is not None:
            self.progress(key)
        return True


def _build(
    sources: list[XmlSource],
    job: list[CodeRegistry | None],
    progress: Callable[[str], None] | None,
    workers: int,
) -> StatuteGraph:
    """One build: packs from ``workers`` processes into the store; with a registry (``job[0]``, taken
    out: the workers hold it, this process does not need it), citations.

    Timings are this process's wall-clock: ``parse`` is waiting for the workers (or packing here,
    with one), ``assemble`` putting the packs into the store, resolving references into other
    codes and recording the ``cites_*`` edges of codes whose references are all resolved, meanwhile;
    ``citations`` what is left of that after the last pack.
    """
    registry, job[0] = job[0], None
    timings = BuildTimings()
    asm = _Assembler(progress)
    # this process only resolves references, it reads none: its linker needs no registry
    linker = None
    if registry is not None:
        linker = CitationLinker(None, asm.sections, table=StoreNodes(asm.store), edges=asm.store)
    packs = parallel.packed_sources(sources, registry, workers)
    registry = None
    #: (code key, node ids, references) of the graph's codes, in order; None once their edges are in
    refs: list[tuple[str, list[str], CodeReferences] | None] = []
    #: per entry of ``refs``: how many of its references name a code not in the graph yet
    open_refs: list[int] = []
    added = 0  #: ``refs[:added]`` have their edges in the store
    t0 = time.perf_counter()
    #: references into codes not in the graph yet, by the code they name: (place in refs, reference)
    waiting: dict[str, list[tuple[int, int]]] = {}
    for idx, result in packs:
        t1 = time.perf_counter()
        if asm.add(sources[idx].name, result) and linker is not None:
            key, ids, code_refs = result.code.info.key, result.code.ids, result.refs
            linker.merge_counts(result.counts)
            i = len(refs)
            refs.append((key, ids, code_refs))
            open_refs.append(0)
            # resolve references into other codes as soon as those are in the graph
            for k, named in code_refs.named_codes():
                if named in asm.codes:
                    linker.resolve_deferred(key, ids, code_refs, k)
                else:
                    waiting.setdefault(named, []).append((i, k))
                    open_refs[i] += 1
            for j, k in waiting.pop(key, ()):
                linker.resolve_deferred(*refs[j], k)
                open_refs[j] -= 1
            # and record the edges of codes, in build order, as soon as all their references are resolved
            while added < len(refs) and open_refs[added] == 0:
                linker.add_code(*refs[added])
                refs[added] = None  # the memory goes to the next codes' edges
                added += 1
        timings.assemble += time.perf_counter() - t1
    t2 = time.perf_counter()
    timings.parse = t2 - t0 - timings.assemble
    sg = StatuteGraph(None, asm.codes, asm.sections, asm.issues, timings=timings, store=asm.store)
    if linker is not None:
        # codes that wait for a code whose header read but whose file did not parse (the build is redone)
        for i in range(added, len(refs)):
            linker.add_code(*refs[i])
            refs[i] = None
        sg.citation_report = linker.finish()
        timings.citations = time.perf_counter() - t2
    return sg
