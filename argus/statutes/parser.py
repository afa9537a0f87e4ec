"""Parse gesetze-im-internet.de XML (gii-norm.dtd 1.01) into statute-graph nodes and edges.

One XML file is one code (``<dokumente>``), made of ``<norm>`` elements in reading order: a header
norm with the code's metadata, structural-unit norms (``gliederungseinheit`` with a
``gliederungskennzahl`` of 3 digits per level) and provision norms (``enbez``: "§ 622", "Art 3",
"Anlage 1" …). A provision's content is read by :mod:`argus.statutes.render` (every ``<P>`` is an
Absatz, usually printed "(1)"; ``<DL>`` lists are Nummern / Buchstaben / Doppelbuchstaben), and its
Sätze are found by :mod:`argus.statutes.sentences`.

Text lives once per § (the ``text`` attribute of the section node); every node below carries
``start``/``end`` offsets into it, so a node's text always contains its children's text and the
graph stays small enough for the whole federal corpus.
"""

from __future__ import annotations

import re
from array import array
from dataclasses import dataclass, field

from lxml import etree

from argus.statutes.model import Level, contains_edge
from argus.statutes.render import AbsatzDraft, ListItem, norm_ws, render_provision
from argus.statutes.sentences import split_sentences, trim_span

# --------------------------------------------------------------------------------------------
# Records handed to the graph builder


@dataclass
class CodeInfo:
    """Metadata of one code (one XML file)."""

    key: str  #: corpus key = ``jurabk`` ("SGB 5", "UWG 2004"); unique in a graph
    node_id: str  #: the code's BJNR number, also its node id
    jurabk: str
    amtabk: str | None
    title: str | None  #: ``langue``: the long title
    short_title: str | None  #: ``kurzue``
    source: str  #: file the code was read from
    stand: str | None = None
    sections: int = 0


@dataclass
class ParseIssue:
    """A problem met while reading the corpus: recorded and reported, never fatal for the batch."""

    source: str
    kind: str  #: malformed_xml | no_code_metadata | duplicate_code | duplicate_id | empty_norm | unknown_list
    message: str
    code: str | None = None
    doknr: str | None = None


@dataclass
class SectionLayout:
    """What the citation pass needs about one § after parsing: its Sätze and list items."""

    section_id: str
    code_key: str
    saetze: list[tuple[int, int, str]]  #: (start, end, satz id) in reading order
    items: list[tuple[int, int, str]]  #: (start, end, node id) of Nummern/Buchstaben, outer first


#: An Absatz's flags in ``ParsedCode.flags``
PRINTED, IMPLICIT, REPEALED = 1, 2, 4


@dataclass
class ParsedCode:
    """A parsed code as columns, one entry per node in document order (the node's ``order``).

    Every node has an id, a :class:`Level` and a parent (its position; -1 for the code node, whose
    parent is the graph's root). The few large nodes (the code, its units and §§) keep their
    attribute dicts in ``large``; the many small ones (Absätze, Sätze, list items) are columns:
    label (index into ``label_table``), § (position), start and end offsets into the §'s text, and
    an Absatz's :data:`PRINTED`, :data:`IMPLICIT`, :data:`REPEALED` flags. Hierarchy edges are
    implied: one ``contains_<child type>`` edge from each parent.
    """

    info: CodeInfo
    ids: list[str]
    types: bytearray
    parents: array
    large: list[dict]
    labels: array
    label_table: list[str]
    secs: array
    starts: array
    ends: array
    flags: bytearray
    layouts: list[SectionLayout]
    sections: dict[tuple[str, str], str]  #: (kind, number) -> section id, incl. aliases
    issues: list[ParseIssue] = field(default_factory=list)
    index: dict[str, int] = field(default_factory=dict)  #: node id -> position
    containers: dict[str, dict] = field(default_factory=dict)  #: node id -> attributes, of units and §§

    @property
    def nodes(self) -> list[tuple[str, dict]]:
        """(id, attributes) of every node, as the graph holds them (built on each call)."""
        out = []
        large = iter(self.large)
        ids, code = self.ids, self.info.key
        j = 0
        for i, (nid, t) in enumerate(zip(ids, self.types)):
            if t < _ABSATZ:
                out.append((nid, next(large)))
                continue
            attrs = {"label": self.label_table[self.labels[j]]}
            if t == _ABSATZ:
                f = self.flags[j]
                attrs["printed"] = f & PRINTED != 0
                attrs["implicit"] = f & IMPLICIT != 0
            attrs.update(section=ids[self.secs[j]], start=self.starts[j], end=self.ends[j])
            if t == _ABSATZ:
                attrs["repealed"] = self.flags[j] & REPEALED != 0
            attrs.update(type=_TYPE_NAME[t], code=code, order=i, parent=ids[self.parents[i]])
            out.append((nid, attrs))
            j += 1
        return out

    @property
    def edges(self) -> list[tuple[str, str, str]]:
        """(parent, child, edge type) of the hierarchy edges, in document order of the children."""
        ids = self.ids
        return [(ids[p], ids[i], _CONTAINS[t]) for i, (p, t) in enumerate(zip(self.parents, self.types)) if p >= 0]


# --------------------------------------------------------------------------------------------
# Patterns

_NUMBER_GROUP = re.compile(r"\b(?:bis|und|u\.)\b|,")
_NUMBER_TOKEN = re.compile(r"\d+[a-z]?|bis")
_LEADING_DIGITS = re.compile(r"\d+")
_SECTION_ENBEZ = re.compile(r"^\s*(?:\(XXXX\)\s*)?(§§?|Art\.?|Artikel)\s*(.+?)\s*$")
_REPEALED_TEXT = re.compile(
    r"^\s*(?:(?:bis|und|u\.)\s*\(\d+[a-z]?\)\s*)?(?:[-–]+|\(?\s*(?:weggefallen|aufgehoben|gestrichen)\s*\)?\s*[-–]?)\s*$",
    re.I,
)
_ARTICLE_BEZ = re.compile(r"^\s*(Art\.?|Artikel|§)\s*(\d+[a-z]?)\s*$")
_RANGE_SPLIT = re.compile(r"\s*(?:,|und|u\.|bis|-|–)\s*")
_MOVED_TITLE = re.compile(r"^\(\s*(?:jetzt|nunmehr|künftig)\b.*\)$")
_SEGMENT = {
    Level.ABSATZ: "abs",
    Level.SATZ: "s",
    Level.NUMMER: "nr",
    Level.BUCHSTABE: "bst",
    Level.DOPPELBUCHSTABE: "dbst",
}

_TYPE_NAME = {lvl: lvl.type_name for lvl in Level}
_CONTAINS = {lvl: contains_edge(lvl) for lvl in Level}
_ABSATZ, _SATZ = Level.ABSATZ, Level.SATZ
_NUMBERS = [str(n) for n in range(100)]  #: Satz labels, one string each

TOC_KINDS = frozenset({"inhaltsübersicht", "inhaltsverzeichnis"})


def _first_children(el: etree._Element, *tags: str) -> list[etree._Element | None]:
    """The first child of ``el`` with each of ``tags`` (None where there is none), in one scan of
    the children: ElementPath's ``find`` costs several µs a call."""
    found: dict[str, etree._Element | None] = dict.fromkeys(tags)
    for ch in el:
        tag = ch.tag
        if tag in found and found[tag] is None:
            found[tag] = ch
    return [found[t] for t in tags]


def _code_info(metadaten: etree._Element, jurabk: str, node_id: str, source: str, stand: str | None = None) -> CodeInfo:
    """A code's ``CodeInfo`` from the ``<metadaten>`` of its first norm."""
    return CodeInfo(
        key=jurabk,
        node_id=node_id,
        jurabk=jurabk,
        amtabk=norm_ws(metadaten.findtext("amtabk")) or None,
        title=norm_ws(metadaten.findtext("langue")) or None,
        short_title=norm_ws(metadaten.findtext("kurzue")) or None,
        source=source,
        stand=stand,
    )


def _norm_content(norm: etree._Element) -> etree._Element | None:
    """``norm.find("textdaten/text/Content")`` as a child scan (ElementPath's first match)."""
    for td in norm:
        if td.tag == "textdaten":
            for tx in td:
                if tx.tag == "text":
                    for c in tx:
                        if c.tag == "Content":
                            return c
    return None


def section_kind_and_number(enbez: str) -> tuple[str, str | None, list[str]]:
    """Split an ``enbez`` into (kind, number, extra numbers covered).

    ``"§ 622"`` → ("§", "622", []); ``"Art 3"`` → ("Art", "3", []);
    ``"(XXXX) §§ 2354 bis 2359"`` → ("§", "2354 bis 2359", ["2354", …, "2359"]);
    ``"Anlage 1"`` → ("anlage", "1", []); ``"Inhaltsübersicht"`` → ("inhaltsübersicht", None, []).
    """
    m = _SECTION_ENBEZ.match(enbez)
    if m:
        kind = "§" if m.group(1).startswith("§") else "Art"
        number = m.group(2).strip()
        covered: list[str] = []
        if m.group(1) == "§§" or _NUMBER_GROUP.search(number):
            covered = _expand_number_group(number)
        return kind, number, covered
    words = enbez.replace("(XXXX)", "").split(None, 1)
    if not words:
        return "other", None, []
    kind = words[0].lower()
    return kind, (words[1].strip() if len(words) > 1 else None), []


def _expand_number_group(number: str) -> list[str]:
    """Numbers covered by a grouped enbez: "16 und 17", "2354 bis 2359", "31 bis 33a und 34"."""
    covered: list[str] = []
    tokens = _NUMBER_TOKEN.findall(number)
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok == "bis":
            i += 1
            continue
        if i + 2 < len(tokens) and tokens[i + 1] == "bis":
            lo, hi = tokens[i], tokens[i + 2]
            lo_n, hi_n = int(_LEADING_DIGITS.match(lo).group()), int(_LEADING_DIGITS.match(hi).group())
            covered.append(lo)
            if hi_n - lo_n <= 500:
                covered.extend(str(n) for n in range(lo_n + 1, hi_n + 1) if str(n) not in (lo,))
            if hi not in covered:
                covered.append(hi)
            i += 3
            continue
        covered.append(tok)
        i += 1
    return covered


# --------------------------------------------------------------------------------------------
# The parser


class _CodeParser:
    def __init__(self, root: etree._Element, source: str) -> None:
        self.root = root
        self.source = source
        # the node columns of ParsedCode
        self.index: dict[str, int] = {}  #: node id -> position (``order``)
        self.ids: list[str] = []
        self.types = bytearray()
        self.parents = array("i")
        self.large: list[dict] = []
        self.labels = array("i")
        self.label_index: dict[str, int] = {}
        self.secs = array("i")
        self.starts = array("i")
        self.ends = array("i")
        self.flags = bytearray()
        self.layouts: list[SectionLayout] = []
        self.sections: dict[tuple[str, str], str] = {}
        self.issues: list[ParseIssue] = []
        self.containers: dict[str, dict] = {}  #: attrs of units and sections, for nesting decisions
        self.section_count = 0

    # -- helpers ------------------------------------------------------------------------------
    def _issue(self, kind: str, message: str, doknr: str | None = None) -> None:
        self.issues.append(ParseIssue(self.source, kind, message, self.key, doknr))

    def _unique(self, node_id: str) -> str:
        """``node_id``, or ``node_id~2``, ``~3`` … where a node has it already (an issue)."""
        if node_id not in self.index:
            return node_id
        n = 2
        while f"{node_id}~{n}" in self.index:
            n += 1
        self._issue("duplicate_id", f"label repeated: {node_id} (kept as ~{n})", node_id.split("/")[0])
        return f"{node_id}~{n}"

    def _add(self, node_id: str, parent: str | None, level: Level, attrs: dict) -> None:
        """A large node (code, unit, §) with its attributes."""
        order = len(self.ids)
        attrs["type"] = _TYPE_NAME[level]
        attrs["code"] = self.key
        attrs["order"] = order
        if parent is not None:
            attrs["parent"] = parent
        self.index[node_id] = order
        self.ids.append(node_id)
        self.types.append(level)
        self.parents.append(-1 if parent is None else self.index[parent])
        self.large.append(attrs)
        if level is Level.UNIT or level is Level.SECTION:
            if level is Level.SECTION:
                self.section_count += 1
            self.containers[node_id] = attrs
            holder = self.containers.get(parent) if parent is not None else None
            if holder is not None and holder["type"] == "section":
                holder["nested"] = True  # an article holding §§ (EGBGB): its text includes theirs

    # -- code ---------------------------------------------------------------------------------
    def parse(self) -> ParsedCode | None:
        norms = self.root.findall("norm")
        if not norms:
            self.key = None
            self._issue("no_code_metadata", "no <norm> elements: not a gii-norm document")
            return None
        header = norms[0].find("metadaten")
        jurabk = norm_ws(header.findtext("jurabk")) if header is not None else ""
        if not jurabk:
            self.key = None
            self._issue("no_code_metadata", "the first <norm> has no <jurabk>")
            return None
        self.key = jurabk
        bjnr = self.root.get("doknr") or norms[0].get("doknr") or jurabk
        stand = None
        if header is not None:
            stand_el = header.find("standangabe/standkommentar")
            stand = norm_ws("".join(stand_el.itertext())) if stand_el is not None else None
        self.info = _code_info(header, jurabk, bjnr, self.source, stand)
        code_attrs = {
            "label": jurabk,
            "jurabk": jurabk,
            "amtabk": self.info.amtabk or "",
            "title": self.info.title or "",
            "short_title": self.info.short_title or "",
            "source": self.source,
            "stand": stand or "",
        }
        self._add(bjnr, None, Level.CODE, code_attrs)

        by_kennzahl: dict[str, str] = {}
        container = bjnr
        first = True
        for norm in norms:
            md, textdaten = _first_children(norm, "metadaten", "textdaten")
            if md is None:
                continue
            enbez_el, unit, titel = _first_children(md, "enbez", "gliederungseinheit", "titel")
            enbez = norm_ws(enbez_el.text) if enbez_el is not None else ""
            doknr = norm.get("doknr") or ""
            if first:
                first = False
                if not enbez and unit is None:
                    continue  # header norm
            if unit is not None:
                kz = (unit.findtext("gliederungskennzahl") or "").strip()
                bez = norm_ws(unit.findtext("gliederungsbez"))
                parent = self._unit_parent(kz, by_kennzahl, bjnr)
                if enbez:
                    # A provision carrying its enclosing unit (EGBGB: "Art 229" › "§ 5").
                    holder = by_kennzahl.get(kz, parent)
                    self._section(textdaten, titel, doknr, enbez, holder)
                    continue
                title_el = unit.find("gliederungstitel")
                title = norm_ws("".join(title_el.itertext())) if title_el is not None else ""
                art = _ARTICLE_BEZ.match(bez)
                if art:
                    sid = self._section(
                        textdaten,
                        titel,
                        doknr,
                        f"{'§' if art.group(1) == '§' else 'Art'} {art.group(2)}",
                        parent,
                        title=title,
                    )
                    if sid is not None and kz:
                        by_kennzahl[kz] = sid
                    container = parent
                    continue
                uid = self._unique(doknr or f"{bjnr}/unit{kz}")
                content = _norm_content(norm)
                note = norm_ws("".join(content.itertext())) if content is not None else ""
                self._add(
                    uid,
                    parent,
                    Level.UNIT,
                    {
                        "label": bez,
                        "title": title,
                        "kennzahl": kz,
                        "repealed": bool(_REPEALED_TEXT.match(title) or (note and _REPEALED_TEXT.match(note))),
                        "note": note,
                    },
                )
                if kz:
                    by_kennzahl[kz] = uid
                container = uid
                continue
            if enbez or _norm_content(norm) is not None:
                self._section(textdaten, titel, doknr, enbez, container)
        self.info.sections = self.section_count
        return ParsedCode(
            self.info,
            self.ids,
            self.types,
            self.parents,
            self.large,
            self.labels,
            list(self.label_index),
            self.secs,
            self.starts,
            self.ends,
            self.flags,
            self.layouts,
            self.sections,
            self.issues,
            self.index,
            self.containers,
        )

    def _article_holder(self, parent: str) -> dict | None:
        """The enclosing article-section of a § (through units such as "Art 248 › Abschnitt 1")."""
        node = parent
        while node is not None:
            attrs = self.containers.get(node)
            if attrs is None:
                return None
            if attrs["type"] == "section":
                return attrs if attrs["kind"] == "Art" else None
            node = attrs.get("parent")
        return None

    @staticmethod
    def _unit_parent(kz: str, by_kennzahl: dict[str, str], code_id: str) -> str:
        cut = len(kz) - 3
        while cut > 0:
            parent = by_kennzahl.get(kz[:cut])
            if parent is not None:
                return parent
            cut -= 3
        return code_id

    # -- sections -----------------------------------------------------------------------------
    def _section(
        self,
        textdaten: etree._Element | None,
        titel: etree._Element | None,
        doknr: str,
        enbez: str,
        parent: str,
        title: str | None = None,
    ) -> str | None:
        """One provision norm: ``textdaten`` and ``titel`` are its (first) children of those names."""
        if title is None:
            title = norm_ws("".join(titel.itertext())) if titel is not None else ""
        if enbez:
            kind, number, covered = section_kind_and_number(enbez)
        else:
            kind, number, covered = "other", None, []
        holder = self._article_holder(parent) if kind == "§" else None
        if holder is not None:
            # § nested in an article (EGBGB "Art 229 § 5"): its number carries the article's.
            number = f"{holder['number']} § {number}"
            covered = [f"{holder['number']} § {c}" for c in covered]
        sid = self._unique(doknr or f"{self.info.node_id}/{kind}{number}")
        label = enbez.replace("(XXXX)", "").strip()
        heading = f"{label} {title}".strip() if label and title else (label or title)
        render, drafts = render_provision(heading, textdaten)
        text = render.buf.value().rstrip()
        body = text[len(heading) :].strip() if heading else text.strip()
        repealed = (
            "(XXXX)" in enbez
            or bool(not body and title and (_REPEALED_TEXT.match(title) or _MOVED_TITLE.match(title)))
            or bool(len(body) < 40 and _REPEALED_TEXT.match(body))
        )
        if not body and not repealed:
            self._issue("empty_norm", f"{label or title or doknr}: no text", doknr)
        attrs = {
            "label": label or title,
            "kind": kind,
            "number": number or "",
            "title": title,
            "text": text,
            "repealed": repealed,
            "footnotes": "\n".join(f for f in render.footnotes if f),
            "notes": "\n".join(n for n in render.notes if n),
            "doknr": doknr,
            "tables": render.tables,
        }
        self._add(sid, parent, Level.SECTION, attrs)
        if kind in ("§", "Art"):
            if number:
                self.sections.setdefault((kind, number), sid)
                for alias in covered:
                    self.sections.setdefault((kind, alias), sid)
        elif kind != "other":
            self.sections.setdefault((kind, number or ""), sid)  # "Anlage 1", "Präambel"
        layout = SectionLayout(sid, self.key, [], [])
        if drafts:
            self._emit_absaetze(drafts, text, sid, layout)
        self.layouts.append(layout)
        return sid

    def _label(self, label: str) -> int:
        li = self.label_index.get(label)
        if li is None:
            li = self.label_index[label] = len(self.label_index)
        return li

    def _emit_absaetze(self, drafts: list[AbsatzDraft], text: str, sid: str, layout: SectionLayout) -> None:
        """Absatz, Satz and list nodes of one § (most of the graph: straight into the columns)."""
        index = self.index
        ids = self.ids
        types_append = self.types.append
        parents_append = self.parents.append
        labels_append = self.labels.append
        secs_append = self.secs.append
        starts_append = self.starts.append
        ends_append = self.ends.append
        flags_append = self.flags.append
        label_index = self.label_index
        si = index[sid]
        only_one = len(drafts) == 1 and not drafts[0].printed
        text_len = len(text)
        saetze = layout.saetze
        for draft in drafts:
            if draft.end > text_len:
                draft.end = text_len
            end = draft.end
            label_end = draft.label_end
            aid = f"{sid}/abs{draft.label}"
            if aid in index:
                aid = self._unique(aid)
            a_body = text[label_end:end]
            a_repealed = len(a_body) < 40 and bool(_REPEALED_TEXT.match(a_body))
            ai = index[aid] = len(ids)
            ids.append(aid)
            types_append(_ABSATZ)
            parents_append(si)
            labels_append(self._label(draft.label))
            secs_append(si)
            starts_append(draft.start)
            ends_append(end)
            flags_append(
                (PRINTED if draft.printed else 0) | (IMPLICIT if only_one else 0) | (REPEALED if a_repealed else 0)
            )
            if a_repealed or a_body.isspace() or not a_body:
                continue
            markers = draft.markers
            if len(markers) > 1 or (markers and markers[0] > label_end + 2):
                spans = _spans_from_markers(text, label_end, end, markers)
            else:
                spans = split_sentences(text, label_end, end, draft.blocks)
            satz_ids: list[tuple[int, int, str]] = []
            prefix = aid + "/s"
            for n, (s, e) in enumerate(spans, 1):
                label = _NUMBERS[n] if n < 100 else str(n)
                zid = prefix + label
                if zid in index:
                    zid = self._unique(zid)
                index[zid] = len(ids)
                ids.append(zid)
                types_append(_SATZ)
                parents_append(ai)
                li = label_index.get(label)
                labels_append(li if li is not None else self._label(label))
                secs_append(si)
                starts_append(s)
                ends_append(e)
                flags_append(0)
                satz_ids.append((s, e, zid))
            saetze.extend(satz_ids)
            for item in draft.items:
                holder = satz_ids[-1][2]
                start = item.start
                for s, e, zid in satz_ids:
                    if s <= start < e:
                        holder = zid
                        break
                self._emit_item(item, holder, si, layout.items)

    def _emit_item(self, item: ListItem, parent: str, si: int, layout_items: list[tuple[int, int, str]]) -> None:
        level = item.level
        nid = f"{parent}/{_SEGMENT[level]}{item.label}"
        if nid in self.index:
            nid = self._unique(nid)
        self.parents.append(self.index[parent])
        self.index[nid] = len(self.ids)
        self.ids.append(nid)
        self.types.append(level)
        self.labels.append(self._label(item.label))
        self.secs.append(si)
        self.starts.append(item.start)
        self.ends.append(item.end)
        self.flags.append(0)
        layout_items.append((item.start, item.end, nid))
        for child in item.children:
            self._emit_item(child, nid, si, layout_items)


def _spans_from_markers(text: str, start: int, end: int, markers: list[int]) -> list[tuple[int, int]]:
    """Sätze from printed sentence numbers (EStG prints them as ``<SUP class="Rec">``)."""
    cuts = [start] + [m for m in markers if start < m < end] + [end]
    spans = []
    for s, e in zip(cuts, cuts[1:]):
        s, e = trim_span(text, s, e)
        if e > s:
            spans.append((s, e))
    return spans


def parse_code(xml: bytes | str, source: str) -> ParsedCode | list[ParseIssue]:
    """Parse one gii-norm XML document; on failure return the issues instead of raising.

    ``xml`` is the raw document (bytes) or a filesystem path (str). A malformed file yields a
    ``malformed_xml`` issue so a corpus build can record it and go on.
    """
    try:
        if isinstance(xml, bytes):
            root = etree.fromstring(xml, parser=_xml_parser())
        else:
            root = etree.parse(xml, parser=_xml_parser()).getroot()
    except (etree.XMLSyntaxError, OSError) as exc:
        return [ParseIssue(source, "malformed_xml", f"cannot parse XML: {exc}")]
    if root is None or root.tag != "dokumente":
        tag = None if root is None else root.tag
        return [ParseIssue(source, "no_code_metadata", f"root element is <{tag}>, expected <dokumente>")]
    parser = _CodeParser(root, source)
    parsed = parser.parse()
    if parsed is None:
        return parser.issues
    return parsed


def read_code_info(xml: bytes, source: str) -> CodeInfo | None:
    """Only the header of a code (abbreviations and titles), without parsing its norms.

    The first ``<metadaten>`` ends within the first few kB, so only the bytes up to it are fed to a
    pull parser (a tenth of the cost of ``iterparse`` over the whole file)."""
    cut = xml.find(b"</metadaten>")
    head = xml if cut < 0 else xml[: cut + len(b"</metadaten>")]
    parser = etree.XMLPullParser(events=("end",), tag="metadaten", resolve_entities=False, huge_tree=True)
    try:
        parser.feed(head)
        for _, el in parser.read_events():
            jurabk = norm_ws(el.findtext("jurabk"))
            if not jurabk:
                return None
            root = el.getparent().getparent()
            bjnr = (root.get("doknr") if root is not None else None) or el.getparent().get("doknr") or jurabk
            return _code_info(el, jurabk, bjnr, source)
    except etree.XMLSyntaxError:
        return None
    return None


def _xml_parser() -> etree.XMLParser:
    return etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=True, remove_comments=True)
