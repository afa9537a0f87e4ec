"""A provision's text, as the statute graph stores it: one string with offsets for its parts.

A provision norm's ``<Content>`` is mixed XML: every ``<P>`` is an Absatz (usually printed "(1)"),
``<DL>`` lists hold Nummern / Buchstaben / Doppelbuchstaben (the level read from the printed labels,
the list's ``Type`` only where they print none), tables become rows with cells joined by " | ", and
footnotes and editorial ``noindex`` notes are set aside. :func:`render_provision` turns it into the
§'s text (heading line, then the Absätze) with the offsets of each Absatz, list item, list or table
block and printed sentence number, from which the parser makes the Absatz, Satz and list nodes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import islice

from lxml import etree

from argus.statutes.model import Level

# --------------------------------------------------------------------------------------------
# Patterns

_ABSATZ_LABEL = re.compile(r"\s*\((\d{1,3}[a-z]{0,2})\)")
#: Every proper prefix of an ``_ABSATZ_LABEL`` match ("", "  (", "(12", "(3a"): a first text node of
#: this shape leaves the label match to the text nodes after it.
_ABSATZ_LABEL_PREFIX = re.compile(r"\s*(?:\((?:\d{1,3}[a-z]{0,2})?)?")
_NUMMER_LABEL = re.compile(r"^(\d{1,4}[a-z]{0,3})\.?$")
_BUCHSTABE_LABEL = re.compile(r"^([a-zäöü])\)$")
_DOPPEL_LABEL = re.compile(r"^(([a-zäöü])\2{1,2})\)$")
_ROMAN_LABEL = re.compile(r"^([IVXLC]+)\.$")

_SKIP_TAGS = frozenset({"FnR", "IMG", "colspec", "kommentar"})
_INLINE_TAGS = frozenset({"B", "I", "U", "F", "NB", "small", "SUB", "Ident", "DD"})
_BLOCK_TAGS = frozenset({"P", "pre", "Title", "Subtitle", "TOC", "SP"})
_FOOTNOTE_TAGS = frozenset({"Footnotes", "Footnote", "FnArea"})
# How ``ProvisionRender.element`` treats a child, by tag (the sets above are disjoint); others recurse.
_RECURSE, _LA, _BLOCK, _BR, _DL, _SUP, _SKIP, _FOOTNOTE, _NOINDEX, _TABLE, _NOT_ELEMENT = (
    "recurse", "LA", "block", "BR", "DL", "SUP", "skip", "footnote", "noindex", "table", "not-element"
)  # fmt: skip
_TAG_KIND: dict = {
    **{t: _RECURSE for t in _INLINE_TAGS},
    **{t: _SKIP for t in _SKIP_TAGS},
    **{t: _FOOTNOTE for t in _FOOTNOTE_TAGS},
    **{t: _BLOCK for t in _BLOCK_TAGS},
    "SUP": _SUP,
    "noindex": _NOINDEX,
    "BR": _BR,
    "DL": _DL,
    "table": _TABLE,
    "LA": _LA,
    etree.Comment: _NOT_ELEMENT,
    etree.PI: _NOT_ELEMENT,
    etree.Entity: _NOT_ELEMENT,
}
_LIST_LEVEL_BY_TYPE = {
    "arabic": Level.NUMMER,
    "alpha": Level.BUCHSTABE,
    "a-alpha": Level.DOPPELBUCHSTABE,
    "a3-alpha": Level.DOPPELBUCHSTABE,
    "Roman": Level.NUMMER,
}


def norm_ws(s: str | None) -> str:
    """``s`` with every run of whitespace folded to one space and none at either end."""
    return " ".join(s.split()) if s else ""


def _label_level(label: str) -> Level | None:
    """The list level a printed label names: "1." or "IV." Nummer, "a)" Buchstabe, "aa)" Doppelbuchstabe."""
    if _NUMMER_LABEL.match(label):
        return Level.NUMMER
    if _BUCHSTABE_LABEL.match(label):
        return Level.BUCHSTABE
    if _DOPPEL_LABEL.match(label):
        return Level.DOPPELBUCHSTABE
    if _ROMAN_LABEL.match(label):
        return Level.NUMMER
    return None


def _clean_label(label: str) -> str:
    """A printed list label as the node's label: "1." → "1", "a)" → "a"."""
    return label.strip().rstrip(".)").strip()


# --------------------------------------------------------------------------------------------
# Text buffer with offsets


class TextBuffer:
    """Accumulates normalized text and hands out exact offsets into the final string."""

    __slots__ = ("parts", "pos", "pending_space", "line_start")

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.pos = 0
        self.pending_space = False
        self.line_start = True

    def text(self, s: str | None) -> None:
        """Append ``s`` with each run of whitespace folded to one space; whitespace at its edges (or a
        pending space) parts it from the text before on the same line."""
        if not s:
            return
        if s.isprintable() and "  " not in s:
            # Only single plain spaces (every other whitespace character is unprintable): the
            # split/join below would just drop a leading and a trailing space.
            core = s.strip(" ")
        else:
            core = " ".join(s.split())
        if not core:
            if not self.line_start:
                self.pending_space = True
            return
        if (self.pending_space or s[0].isspace()) and not self.line_start:
            self.parts.append(" ")
            self.pos += 1
        self.parts.append(core)
        self.pos += len(core)
        self.pending_space = s[-1].isspace()
        self.line_start = False

    def newline(self) -> None:
        """End the current line (nothing when it is empty: no blank lines)."""
        if not self.line_start:
            self.parts.append("\n")
            self.pos += 1
            self.line_start = True
        self.pending_space = False

    def value(self) -> str:
        """The text so far."""
        return "".join(self.parts)

    @property
    def content_end(self) -> int:
        """Offset after the last non-newline character (a span should not end in a line break)."""
        return self.pos - 1 if self.line_start and self.parts and self.parts[-1] == "\n" else self.pos


@dataclass
class ListItem:
    """A Nummer, Buchstabe or Doppelbuchstabe: its printed label and span, its sub-items."""

    level: Level
    label: str
    start: int
    end: int
    children: list[ListItem]


@dataclass
class AbsatzDraft:
    """One Absatz as rendered: its span, where its printed label ends, and what lies inside it."""

    label: str
    printed: bool
    start: int
    label_end: int
    end: int
    blocks: list[tuple[int, int]]  #: spans of its lists and tables (atomic for the Satz split)
    items: list[ListItem]
    markers: list[int]  #: printed sentence numbers at Absatz level (EStG)


# --------------------------------------------------------------------------------------------
# Rendering


class ProvisionRender:
    """Renders a provision's mixed content into one text with offsets for lists, tables, Sätze."""

    __slots__ = ("buf", "footnotes", "notes", "tables", "images", "unlabelled_items")

    def __init__(self) -> None:
        self.buf = TextBuffer()
        self.footnotes: list[str] = []
        self.notes: list[str] = []
        self.tables = 0
        self.images = 0
        self.unlabelled_items = 0

    def absaetze(self, content: etree._Element) -> list[AbsatzDraft]:
        """Render a provision's ``<Content>`` Absatz by Absatz: a labelled ``<P>`` ("(2)") opens an
        Absatz that runs to the next one; without any label each block is an Absatz of its own."""
        blocks: list[tuple[etree._Element, str | None, str | None]] = []  #: (element, label, element.text)
        for child in content:
            tag = child.tag
            if not isinstance(tag, str):
                continue
            if tag in _FOOTNOTE_TAGS:
                self.footnotes.append(norm_ws(" ".join(child.itertext())))
                continue
            if tag == "noindex":
                self.notes.append(norm_ws(" ".join(child.itertext())))
                continue
            first = head = child.text
            if not head or _ABSATZ_LABEL_PREFIX.fullmatch(head):
                # The label or the text may continue in the next text nodes; only then is
                # walking the subtree needed (the first text node decides everything else).
                head = "".join(islice(child.itertext(), 4))
                if not head.strip() and not "".join(child.itertext()).strip():
                    continue
            m = _ABSATZ_LABEL.match(head) if tag == "P" else None
            blocks.append((child, m.group(1) if m else None, first))
        if not blocks:
            return []
        labelled = any(label for _, label, _ in blocks)
        groups: list[tuple[str, bool, list[tuple[etree._Element, str | None]]]] = []
        if not labelled:
            for i, (el, _, first) in enumerate(blocks, 1):
                groups.append((str(i), False, [(el, first)]))
        else:
            pending: list[tuple[etree._Element, str | None]] = []
            for el, label, first in blocks:
                if label:
                    groups.append((label, True, pending + [(el, first)]))
                    pending = []
                elif groups:
                    groups[-1][2].append((el, first))
                else:
                    pending.append((el, first))  # text before "(1)": joins the first Absatz
            if pending:
                groups.append((str(len(groups) + 1), False, pending))
        drafts: list[AbsatzDraft] = []
        buf = self.buf
        element = self.element
        for label, printed, elements in groups:
            buf.newline()
            start = buf.pos
            draft = AbsatzDraft(label, printed, start, start, start, [], [], [])
            for k, (el, first) in enumerate(elements):
                if k:
                    buf.newline()
                element(el, first, draft.items, draft.blocks, draft.markers, 0, False)
            draft.end = buf.content_end
            drafts.append(draft)
        text = buf.value()
        for draft in drafts:
            if draft.printed:
                m = _ABSATZ_LABEL.match(text, draft.start, draft.end)
                draft.label_end = m.end() if m else draft.start
        return drafts

    def element(
        self,
        el: etree._Element,
        text: str | None,
        items: list[ListItem],
        blocks: list[tuple[int, int]] | None,
        markers: list[int] | None,
        depth: int,
        in_table: bool,
    ) -> None:
        """Emit ``el``'s text (``el.text``, which the caller has read) and children (not its tail);
        lists and tables become blocks/items."""
        buf = self.buf
        if text:
            buf.text(text)
        prev_tag = None
        for child in el:
            tag = child.tag
            kind = _TAG_KIND.get(tag, _RECURSE)
            if kind is _RECURSE:
                if not isinstance(tag, str):  # processing instructions, entities
                    tail = child.tail
                    if tail:
                        buf.text(tail)
                    continue
                if len(child):
                    self.element(child, child.text, items, blocks, markers, depth, in_table)
                else:  # a leaf (most are): its text is all there is
                    t = child.text
                    if t:
                        buf.text(t)
            elif kind is _LA:
                if prev_tag == "LA":
                    buf.newline()
                if len(child):
                    self.element(child, child.text, items, blocks, markers, depth, in_table)
                else:
                    t = child.text
                    if t:
                        buf.text(t)
            elif kind is _BLOCK:
                buf.newline()
                if len(child):
                    self.element(child, child.text, items, blocks, markers, depth, in_table)
                else:
                    t = child.text
                    if t:
                        buf.text(t)
                buf.newline()
            elif kind is _BR:
                buf.newline()
            elif kind is _DL:
                buf.newline()
                b_start = buf.pos
                self.dlist(child, items, depth, in_table)
                buf.newline()
                if blocks is not None and depth == 0:
                    blocks.append((b_start, buf.pos))
            elif kind is _SUP:
                if child.get("class") == "Rec":
                    if markers is not None and depth == 0:
                        markers.append(buf.pos)
                    buf.pending_space = True
                else:
                    self.element(child, child.text, items, blocks, markers, depth, in_table)
            elif kind is _SKIP:
                if tag == "IMG":
                    self.images += 1
            elif kind is _FOOTNOTE:
                self.footnotes.append(norm_ws(" ".join(child.itertext())))
            elif kind is _NOINDEX:
                self.notes.append(norm_ws(" ".join(child.itertext())))
            elif kind is _TABLE:
                self.tables += 1
                buf.newline()
                b_start = buf.pos
                self.table(child)
                buf.newline()
                if blocks is not None and depth == 0:
                    blocks.append((b_start, buf.pos))
            elif kind is _NOT_ELEMENT:
                tail = child.tail
                if tail:
                    buf.text(tail)
                continue
            prev_tag = tag
            tail = child.tail
            if tail:
                buf.text(tail)

    def dlist(self, dl: etree._Element, items: list[ListItem], depth: int, in_table: bool) -> None:
        """Emit a ``<DL>``, one item a line, at the level most of its labels name (its ``Type`` where
        none is printed). Items without a level or a label, or inside a table, stay plain text: only
        their sub-items become items."""
        pairs: list[tuple[str, etree._Element | None]] = []
        label = ""
        for child in dl:
            tag = child.tag
            if tag == "DT":
                if label:
                    pairs.append((label, None))
                # a DT without child nodes: its text is all of its itertext()
                label = norm_ws(child.text if not len(child) else "".join(child.itertext())) or "?"
            elif tag == "DD":
                pairs.append((label, child))
                label = ""
        if label:
            pairs.append((label, None))
        votes: dict[Level | None, int] = {}
        for lab, _ in pairs:
            lvl = _label_level(lab)
            votes[lvl] = votes.get(lvl, 0) + 1
        level = max(votes, key=lambda k: (votes[k], k is not None)) if votes else None
        if level is None and not any(_clean_label(lab) not in ("", "?") for lab, _ in pairs):
            level = _LIST_LEVEL_BY_TYPE.get(dl.get("Type") or "")  # unlabelled items: trust the Type
        buf = self.buf
        for ordinal, (lab, dd) in enumerate(pairs, 1):
            buf.newline()
            start = buf.pos
            if lab != "?":
                buf.text(lab)
            child_items: list[ListItem] = []
            if dd is not None:
                buf.pending_space = True
                self.element(dd, dd.text, child_items, None, None, depth + 1, in_table)
            end = buf.content_end
            clean = _clean_label(lab)
            if level is not None and clean in ("", "?"):
                clean = str(ordinal) if level is Level.NUMMER else ""
            if level is None or in_table or not clean:
                self.unlabelled_items += 1
                items.extend(child_items)
                continue
            items.append(ListItem(level, clean, start, end, child_items))

    def table(self, table: etree._Element) -> None:
        """Emit a table, one row a line, its cells joined by " | "."""
        buf = self.buf
        for row in table.iter("row"):
            buf.newline()
            first = True
            for entry in row.iterchildren("entry"):  # = iterfind("entry"), without ElementPath
                if not first:
                    buf.text(" | ")
                first = False
                if len(entry):
                    self.element(entry, entry.text, [], None, None, 1, True)
                else:  # a leaf cell (most are): its text is all there is
                    t = entry.text
                    if t:
                        buf.text(t)
            buf.newline()


def render_provision(heading: str, textdaten: etree._Element | None) -> tuple[ProvisionRender, list[AbsatzDraft]]:
    """Render one provision norm from its ``textdaten``: the heading line, then the Absätze of
    ``text/Content``. The footnotes of ``text/Footnotes`` and ``fussnoten`` follow those found in
    the content, so the render holds all that the § node keeps besides its text."""
    render = ProvisionRender()
    render.buf.text(heading)
    render.buf.newline()
    content = fus = None
    footnote_els: list[etree._Element] = []
    if textdaten is not None:
        for tx in textdaten:  # "text/Content" (first), "text/Footnotes" (all), "fussnoten" (first)
            tag = tx.tag
            if tag == "text":
                for c in tx:
                    ctag = c.tag
                    if ctag == "Content":
                        if content is None:
                            content = c
                    elif ctag == "Footnotes":
                        footnote_els.append(c)
            elif tag == "fussnoten":
                if fus is None:
                    fus = tx
    drafts = render.absaetze(content) if content is not None else []
    for fn in footnote_els:
        render.footnotes.append(norm_ws(" ".join(fn.itertext())))
    if fus is not None and len(fus):
        fus_text = norm_ws(" ".join(fus.itertext()))
        if fus_text:
            render.footnotes.append(fus_text)
    return render, drafts
