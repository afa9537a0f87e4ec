"""A text with its spans as nested HTML elements, for the view's text pane.

:func:`nest_spans` turns a text and spans over it that may overlap (sentences, event triggers,
entity mentions) into correctly nested elements, escaping the text with the pages' one escaping
function (``argus.output.pages.escape``, markupsafe's, which the templates' autoescape applies too).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from argus.output.pages import Markup, escape


@dataclass
class Span:
    """One element to wrap around ``text[start:end]``: ``<tag attrs>…</tag>``."""

    start: int
    end: int
    layer: int  # 0 sentence / heading, 1 trigger, 2 mention: the outer one first where spans coincide
    tag: str
    attrs: dict[str, str]
    before: Markup = Markup()  # HTML written just before the element opens (its first piece only)


def _open(s: Span, part: int | None) -> str:
    attrs = dict(s.attrs)
    if part is not None:
        attrs["data-part"] = str(part)
    inner = "".join(f' {k}="{escape(v)}"' for k, v in attrs.items())
    return f"<{s.tag}{inner}>"


def _page_break(page: int) -> Markup:
    """A form feed as the start of page ``page``: a rule with its label ("p. 3", the style sheet's), the form
    feed itself the element's one character (so the pane's text stays the text)."""
    return Markup(f'<span class="pb" id="page-{page}" data-page="{page}" aria-hidden="true">\f</span>')


def nest_spans(text: str, spans: list[Span], *, paged: bool = False) -> Markup:
    """HTML of ``text`` with every span an element, correctly nested whatever the overlaps.

    Layer-0 spans (sentences, headings) never overlap each other (a later one is clipped to start
    where the earlier ends) and are never split: every other span is first cut at their boundaries.
    Then, in order of (start, longer first, layer), each span opens inside the innermost open one;
    a span that runs past the end of the innermost open span is cut there and its remainder goes
    back in the queue, so one that *contains* another stays one element and only spans that *cross*
    become several pieces (each piece carries ``data-part``, 1, 2, …; all pieces keep the span's
    ``data-span``). The concatenated text of the pieces is ``text[start:end]``; the text content
    of the whole result is ``text``.

    Every form feed starts a page: it becomes ``<span class="pb" data-page="N">`` (N: one more than the
    form feeds before it, plus one). ``paged`` (a paged source: a PDF, a text with form feeds) opens the
    result with the label of page 1, an empty element of the same class.
    """
    n = len(text)
    page = 1

    def _text_html(seg: str) -> str:
        nonlocal page
        parts = str(escape(seg)).split("\f")
        html = [parts[0]]
        for part in parts[1:]:
            page += 1
            html.append(str(_page_break(page)) + part)
        return "".join(html)

    outer: list[Span] = []
    last = 0
    for s in sorted((s for s in spans if s.layer == 0), key=lambda s: (s.start, s.end)):
        a, b = max(s.start, last, 0), min(s.end, n)
        if a < b:
            s.start, s.end = a, b
            outer.append(s)
            last = b
    cuts = sorted({p for s in outer for p in (s.start, s.end)})
    pieces: list[tuple[int, int, Span]] = [(s.start, s.end, s) for s in outer]
    for s in spans:
        if s.layer == 0:
            continue
        a, b = max(s.start, 0), min(s.end, n)
        if a >= b:
            continue
        inner_cuts = [c for c in cuts if a < c < b]
        for lo, hi in zip([a, *inner_cuts], [*inner_cuts, b]):
            pieces.append((lo, hi, s))

    heap = [(a, -b, s.layer, seq, s) for seq, (a, b, s) in enumerate(pieces)]
    heapq.heapify(heap)
    seq = len(heap)
    total: dict[int, int] = {}  # id(span) → its number of pieces
    for _, _, s in pieces:
        total[id(s)] = total.get(id(s), 0) + 1
    count: dict[int, int] = {}  # id(span) → pieces opened so far

    out: list[str] = []
    opened: list[tuple[int, Span, int]] = []  # (index in out, span, piece number): tags written at the end
    stack: list[tuple[int, Span]] = []
    at = 0

    def emit_to(p: int) -> None:
        nonlocal at
        if p > at:
            out.append(_text_html(text[at:p]))
            at = p

    def close_to(p: int) -> None:
        while stack and stack[-1][0] <= p:
            end, top = stack.pop()
            emit_to(end)
            out.append(f"</{top.tag}>")

    while heap:
        a, negb, layer, _, s = heapq.heappop(heap)
        b = -negb
        close_to(a)
        emit_to(a)
        if stack and stack[-1][0] < b:  # crosses the innermost open span: cut it there
            cut = stack[-1][0]
            heapq.heappush(heap, (cut, -b, layer, seq, s))
            seq += 1
            total[id(s)] += 1
            b = cut
        count[id(s)] = count.get(id(s), 0) + 1
        if count[id(s)] == 1 and s.before:
            out.append(escape(s.before))
        opened.append((len(out), s, count[id(s)]))
        out.append("")
        stack.append((b, s))
    close_to(n)
    emit_to(n)
    for i, s, k in opened:
        out[i] = _open(s, k if total[id(s)] > 1 else None)
    first = '<span class="pb first" id="page-1" data-page="1" aria-hidden="true"></span>' if paged or "\f" in text else ""
    return Markup(first + "".join(out))
