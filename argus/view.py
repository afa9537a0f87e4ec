"""``argus view``: a document EKG as one self-contained HTML page a lawyer can open.

One file: inline CSS, a few lines of inline JS, the graph as inline SVG laid out here in Python,
no external URL of any kind; every text is HTML-escaped, and the data the script needs travels in a
``<script type="application/json">`` block in which every ``<`` is written ``\\u003c`` (so neither
``</script>`` nor ``<!--`` in a complaint can end the block).

The page shows:

- a header: doc id, source, method, models per stage, created, counts and warnings;
- the filing text exactly as read (``DocumentEKG.text``; the text pane's ``textContent`` *is* that
  text), each sentence an element with ``data-sentence-id``, fact sentences marked, text outside the
  narrative dimmed, section headings emphasized; event triggers as ``<mark class="trigger"
  data-event-id>`` and entity mentions as ``<mark class="mention" data-entity-id>``
  (:func:`render_text`: spans that overlap are nested where one contains the other and split where
  they cross);
- the events (each element with ``data-event-id``): clicking one, in the list, the timeline, the
  graph or its trigger in the text, highlights its evidence sentences, its trigger and its
  participants' mentions (class ``active``), scrolls the text to it and fills the detail panel
  with its 5W1H fields;
- a timeline (:func:`timeline_order`), the event graph (temporal and causal edges), the entities with
  their mentions, the merge log, the rejected items and the per-stage cost.

:func:`write_view` writes one page beside its EKG, :func:`write_index` the pages of a batch folder and
an ``index.html`` listing them (a file that does not load is listed with its error).
"""

from __future__ import annotations

import heapq
import html
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from argus.errors import ArgusError
from argus.export import load_ekg
from argus.io import write_text_atomic
from networkx.utils import UnionFind
from argus.schema import DocEvent, DocumentEKG, id_order

AGENT_ROLES = frozenset({
    "agent", "actor", "speaker", "sender", "author", "complainant", "requester", "filer", "initiator",
    "decision_maker", "perpetrator", "harasser", "employer", "supervisor", "reporter", "accuser",
})
"""Participant roles shown as *who* (the rest are *whom*, with their role, or *where*)."""

PLACE_ROLES = frozenset({"place", "location", "site", "venue", "where"})
"""Participant roles shown as *where* (so is any participant whose entity is a location)."""

GRAPH_COLUMNS = 6
"""Event-graph nodes per row (nodes follow the timeline order, row by row, snaking)."""

_MONTHS = {m: i for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
     "november", "december"], start=1)}
_MONTHS.update({k[:3]: v for k, v in list(_MONTHS.items())})
_MONTHS["sept"] = 9
_MON = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
_DATE_FORMS = [
    (re.compile(r"^\s*(\d{4})(?:-(\d{1,2})(?:-(\d{1,2}))?)?\b"), ("y", "m", "d")),
    (re.compile(rf"\b{_MON}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I), ("M", "d", "y")),
    (re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MON},?\s+(\d{{4}})\b", re.I), ("d", "M", "y")),
    (re.compile(rf"\b{_MON},?\s+(\d{{4}})\b", re.I), ("M", "y")),
    (re.compile(r"\b(\d{1,2})/(\d{1,2})/(\d{4}|\d{2})\b"), ("m", "d", "y")),
    (re.compile(r"\b((?:19|20)\d{2})\b"), ("y",)),
]


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def parse_date(value: str | None) -> tuple[int, int, int] | None:
    """``(year, month, day)`` of an explicit time value (0 for a missing month or day), else None.

    ISO forms first ('2019', '2019-03', '2019-03-03'), then 'March 3, 2019', '3 March 2019',
    'March 2019', '03/03/2019' and a bare year.
    """
    if not value:
        return None
    for rx, parts in _DATE_FORMS:
        m = rx.search(value)
        if not m:
            continue
        got = {"y": 0, "m": 0, "d": 0}
        for name, raw in zip(parts, m.groups()):
            if raw is None:
                continue
            if name == "M":
                got["m"] = _MONTHS.get(raw.lower().rstrip("."), 0)
            else:
                got[name] = int(raw)
        y = got["y"] + (2000 if got["y"] < 100 and len(str(got["y"])) <= 2 and got["y"] else 0)
        if not 1000 <= y <= 2999 or not 0 <= got["m"] <= 12 or not 0 <= got["d"] <= 31:
            continue
        return (y, got["m"], got["d"])
    return None


def _iso(d: tuple[int, int, int]) -> str:
    y, m, day = d
    return f"{y:04d}" + (f"-{m:02d}" if m else "") + (f"-{day:02d}" if m and day else "")


# ----------------------------------------------------------------------------- timeline order


@dataclass
class Timeline:
    """Events in time order: ``groups`` of event ids that share a rank (SAME_TIME / OVERLAP)."""

    groups: list[list[str]]
    rank: dict[str, int]
    dates: dict[str, tuple[int, int, int]]
    ignored: list[str] = field(default_factory=list)
    """Temporal edges left out of the order to break a cycle (or a contradiction with the dates)."""


def _text_order(ekg: DocumentEKG) -> dict[str, tuple[int, tuple[int, str]]]:
    """Each event's position in the text: (index of its first evidence sentence, its id's order)."""
    sidx = {s.id: i for i, s in enumerate(ekg.sentences)}
    out = {}
    for ev in ekg.graph.events:
        first = min((sidx.get(s, len(sidx)) for s in ev.evidence), default=len(sidx))
        out[ev.id] = (first, id_order(ev.id))
    return out


def timeline_order(ekg: DocumentEKG) -> Timeline:
    """The order of the events in time, from the temporal edges and the explicit dates.

    - SAME_TIME and OVERLAP join events into one group (one rank);
    - ``a BEFORE b`` orders a's group before b's, ``a AFTER b`` b's before a's;
    - events with an explicit date (``time.kind == "explicit"`` and a parseable value) are ordered by
      date: every group of a date precedes every group of the next later date;
    - the groups are then taken in a topological order (Kahn), the ready group that comes first in
      the text going first, so undated events without edges keep their narrative position;
    - where no group is ready (a cycle), the remaining group first in the text that no remaining
      *date* constraint holds back goes next and its remaining incoming edges are ignored (recorded
      in ``ignored``): dates win over the model's edges, and the choice is deterministic.
    """
    events = ekg.graph.events
    ids = [ev.id for ev in events]
    known = set(ids)
    pos = _text_order(ekg)
    same = UnionFind(ids)
    for e in ekg.graph.temporal_edges:
        if e.relation in ("SAME_TIME", "OVERLAP") and e.source in known and e.target in known:
            same.union(e.source, e.target)
    # a group is named by its member first in the text (whichever the union-find made its root)
    group_of = {m: min(g, key=pos.__getitem__) for g in same.to_sets() for m in g}

    def find(x: str) -> str:
        return group_of[x]

    members: dict[str, list[str]] = {}
    for i in ids:
        members.setdefault(find(i), []).append(i)
    for g in members.values():
        g.sort(key=lambda x: pos[x])
    key = {g: pos[m[0]] for g, m in members.items()}

    edge_succ: dict[str, dict[str, list[str]]] = {g: {} for g in members}  # g → successor → edge labels
    for e in ekg.graph.temporal_edges:
        if e.relation not in ("BEFORE", "AFTER") or e.source not in known or e.target not in known:
            continue
        a, b = find(e.source), find(e.target)
        if e.relation == "AFTER":
            a, b = b, a
        if a != b:
            edge_succ[a].setdefault(b, []).append(f"{e.source} {e.relation} {e.target}")

    dates: dict[str, tuple[int, int, int]] = {}
    for ev in events:
        if ev.time.kind == "explicit":
            d = parse_date(ev.time.value)
            if d is not None:
                dates[ev.id] = d
    gdate: dict[str, tuple[int, int, int]] = {}
    for g, ms in members.items():
        ds = [dates[m] for m in ms if m in dates]
        if ds:
            gdate[g] = min(ds)
    date_succ: dict[str, set[str]] = {g: set() for g in members}
    levels = sorted(set(gdate.values()))
    by_level: dict[tuple[int, int, int], list[str]] = {}
    for g, d in gdate.items():
        by_level.setdefault(d, []).append(g)
    for lo, hi in zip(levels, levels[1:]):
        for a in by_level[lo]:
            for b in by_level[hi]:
                date_succ[a].add(b)

    indeg_edge = {g: 0 for g in members}
    indeg_date = {g: 0 for g in members}
    for a, succ in edge_succ.items():
        for b in succ:
            indeg_edge[b] += 1
    for a, succ in date_succ.items():
        for b in succ:
            indeg_date[b] += 1
    preds_edge: dict[str, set[str]] = {g: set() for g in members}
    for a, succ in edge_succ.items():
        for b in succ:
            preds_edge[b].add(a)

    ready = [(key[g], g) for g in members if indeg_edge[g] == 0 and indeg_date[g] == 0]
    heapq.heapify(ready)
    done: set[str] = set()
    order: list[str] = []
    ignored: list[str] = []
    while len(order) < len(members):
        if not ready:
            rest = [g for g in members if g not in done]
            free = [g for g in rest if indeg_date[g] == 0] or rest
            g = min(free, key=lambda x: key[x])
            for p in sorted(preds_edge[g] - done, key=lambda x: key[x]):
                ignored.extend(edge_succ[p][g])
                edge_succ[p].pop(g)
            indeg_edge[g] = 0
            indeg_date[g] = 0
            heapq.heappush(ready, (key[g], g))
        _, g = heapq.heappop(ready)
        if g in done:
            continue
        done.add(g)
        order.append(g)
        for b in edge_succ[g]:
            indeg_edge[b] -= 1
        for b in date_succ[g]:
            indeg_date[b] -= 1
        for b in set(edge_succ[g]) | date_succ[g]:
            if b not in done and indeg_edge[b] <= 0 and indeg_date[b] <= 0:
                heapq.heappush(ready, (key[b], b))
    groups = [members[g] for g in order]
    rank = {eid: i + 1 for i, grp in enumerate(groups) for eid in grp}
    return Timeline(groups=groups, rank=rank, dates=dates, ignored=ignored)


# ----------------------------------------------------------------------------- text with marks


@dataclass
class _Span:
    start: int
    end: int
    layer: int  # 0 sentence / heading, 1 trigger, 2 mention: the outer one first where spans coincide
    tag: str
    attrs: dict[str, str]
    before: str = ""  # HTML emitted just before the element opens (first piece only)


def _open(s: _Span, part: int | None) -> str:
    attrs = dict(s.attrs)
    if part is not None:
        attrs["data-part"] = str(part)
    inner = "".join(f' {k}="{_e(v)}"' for k, v in attrs.items())
    return f"<{s.tag}{inner}>"


def _text_html(seg: str) -> str:
    return html.escape(seg, quote=False).replace("\f", '<span class="pb" aria-hidden="true">\f</span>')


def nest_spans(text: str, spans: list[_Span]) -> str:
    """HTML of ``text`` with every span an element, correctly nested whatever the overlaps.

    Layer-0 spans (sentences, headings) never overlap each other (a later one is clipped to start
    where the earlier ends) and are never split: every other span is first cut at their boundaries.
    Then, in order of (start, longer first, layer), each span opens inside the innermost open one;
    a span that runs past the end of the innermost open span is cut there and its remainder goes
    back in the queue, so one that *contains* another stays one element and only spans that *cross*
    become several pieces (each piece carries ``data-part``, 1, 2, …; all pieces keep the span's
    ``data-span``). The concatenated text of the pieces is ``text[start:end]``; the text content
    of the whole result is ``text``.
    """
    n = len(text)
    outer: list[_Span] = []
    last = 0
    for s in sorted((s for s in spans if s.layer == 0), key=lambda s: (s.start, s.end)):
        a, b = max(s.start, last, 0), min(s.end, n)
        if a < b:
            s.start, s.end = a, b
            outer.append(s)
            last = b
    cuts = sorted({p for s in outer for p in (s.start, s.end)})
    pieces: list[tuple[int, int, _Span]] = [(s.start, s.end, s) for s in outer]
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
    opened: list[tuple[int, _Span, int]] = []  # (index in out, span, piece number): tags written at the end
    stack: list[tuple[int, _Span]] = []
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
            out.append(s.before)
        opened.append((len(out), s, count[id(s)]))
        out.append("")
        stack.append((b, s))
    close_to(n)
    emit_to(n)
    for i, s, k in opened:
        out[i] = _open(s, k if total[id(s)] > 1 else None)
    return "".join(out)


def _text_spans(ekg: DocumentEKG) -> list[_Span]:
    spans: list[_Span] = []
    text = ekg.text
    evidence_of: dict[str, list[str]] = {}
    for ev in ekg.graph.events:
        for s in ev.evidence:
            evidence_of.setdefault(s, []).append(ev.id)
    prev_key: tuple[str, str] | None = None
    prev_end = 0
    for s in ekg.sentences:
        a, b = s.span
        classes = ["sent"]
        if s.fact is True:
            classes.append("fact")
        elif s.fact is False:
            classes.append("nonfact")
        if not s.in_narrative:
            classes.append("outside")
        if s.id in evidence_of:
            classes.append("evidence")
        title = f"{s.id} · {s.section}" + (f" · {s.section_heading}" if s.section_heading else "")
        if s.fact is not None:
            title += " · fact" if s.fact else " · not a fact"
            if s.fact_probability is not None:
                title += f" (p={s.fact_probability:.2f}, {s.fact_path})"
        if s.id in evidence_of:
            title += " · evidence of " + ", ".join(evidence_of[s.id])
        before = ""
        key = (s.section, s.section_heading)
        if key != prev_key:
            heading = s.section_heading.strip()
            found = -1
            if heading:
                gap = text[prev_end:a].lower()
                found = gap.rfind(heading.lower())
            if found >= 0:
                h0 = prev_end + found
                spans.append(_Span(h0, h0 + len(heading), 0, "span",
                                   {"class": "heading", "data-section": s.section}))
            else:
                label = heading or s.section
                before = f'<span class="section-label" data-label="{_e(label)}" data-section="{_e(s.section)}"></span>'
            prev_key = key
        prev_end = max(prev_end, b)
        spans.append(_Span(a, b, 0, "span", {"class": " ".join(classes), "data-sentence-id": s.id,
                                             "id": f"sent-{s.id}", "title": title}, before=before))
    for ev in ekg.graph.events:
        if ev.trigger_span is None:
            continue
        a, b = ev.trigger_span
        spans.append(_Span(a, b, 1, "mark", {
            "class": "trigger", "data-event-id": ev.id, "data-span": f"{a}-{b}",
            "title": f"{ev.id} · {ev.type} · {ev.verb} (trigger, {ev.trigger_match or 'unknown'} match)"}))
    for ent in ekg.graph.entities:
        for m in ent.mentions:
            a, b = m.span
            spans.append(_Span(a, b, 2, "mark", {
                "class": f"mention m-{m.match}", "data-entity-id": ent.id, "data-span": f"{a}-{b}",
                "title": f"{ent.id} · {ent.name} ({ent.kind}, {ent.role}) · {m.match} match"}))
    return spans


def render_text(ekg: DocumentEKG) -> str:
    """The filing text as HTML: sentences, headings, trigger and mention marks (see :func:`nest_spans`)."""
    return nest_spans(ekg.text, _text_spans(ekg))


# ----------------------------------------------------------------------------- data for the script


def _participant_slots(ekg: DocumentEKG, ev: DocEvent) -> dict[str, list[dict]]:
    ents = {e.id: e for e in ekg.graph.entities}
    slots: dict[str, list[dict]] = {"who": [], "whom": [], "where": []}
    for p in ev.participants:
        ent = ents.get(p.entity)
        item = {"entity": p.entity, "role": p.role, "name": ent.name if ent else p.entity,
                "kind": ent.kind if ent else "", "legal_role": ent.role if ent else ""}
        role = p.role.lower().strip()
        if role in PLACE_ROLES or (ent is not None and ent.kind == "location"):
            slots["where"].append(item)
        elif role in AGENT_ROLES:
            slots["who"].append(item)
        else:
            slots["whom"].append(item)
    return slots


def _time_text(ev: DocEvent, tl: Timeline) -> str:
    if ev.time.kind == "explicit":
        d = tl.dates.get(ev.id)
        v = ev.time.value or ""
        return v if d is None or _iso(d) == v else f"{v} ({_iso(d)})"
    if ev.time.kind == "relative":
        return f"“{ev.time.value}”" if ev.time.value else "relative"
    return "—"


def view_data(ekg: DocumentEKG, tl: Timeline | None = None) -> dict:
    """What the page's script needs: events (5W1H, edges, rank), entities, sentences."""
    tl = tl or timeline_order(ekg)
    g = ekg.graph
    ents = {e.id: e for e in g.entities}
    events = {}
    for ev in g.events:
        slots = _participant_slots(ekg, ev)
        events[ev.id] = {
            "id": ev.id, "type": ev.type, "verb": ev.verb, "trigger": ev.trigger, "frame": ev.frame,
            "trigger_span": list(ev.trigger_span) if ev.trigger_span else None,
            "trigger_text": ekg.text[ev.trigger_span[0]:ev.trigger_span[1]] if ev.trigger_span else None,
            "trigger_match": ev.trigger_match, "grounded": ev.grounded, "confidence": ev.confidence,
            "time": {"kind": ev.time.kind, "value": ev.time.value, "text": _time_text(ev, tl),
                     "iso": _iso(tl.dates[ev.id]) if ev.id in tl.dates else None},
            "rank": tl.rank.get(ev.id), "evidence": list(ev.evidence), "sources": list(ev.sources),
            "participants": [p.entity for p in ev.participants if p.entity in ents],
            **slots,
            "causes_in": [{"source": e.source, "relation": e.relation, "evidence": e.evidence}
                          for e in g.causal_edges if e.target == ev.id],
            "causes_out": [{"target": e.target, "relation": e.relation, "evidence": e.evidence}
                           for e in g.causal_edges if e.source == ev.id],
            "temporal_in": [{"source": e.source, "relation": e.relation} for e in g.temporal_edges if e.target == ev.id],
            "temporal_out": [{"target": e.target, "relation": e.relation} for e in g.temporal_edges if e.source == ev.id],
        }
    entities = {}
    for ent in g.entities:
        entities[ent.id] = {
            "id": ent.id, "name": ent.name, "kind": ent.kind, "role": ent.role, "aliases": list(ent.aliases),
            "grounded": ent.grounded, "mentions": len(ent.mentions),
            "events": [{"event": ev.id, "role": p.role} for ev in g.events for p in ev.participants if p.entity == ent.id],
        }
    return {
        "doc_id": ekg.doc_id,
        "events": events,
        "entities": entities,
        "sentences": {s.id: {"section": s.section, "fact": s.fact} for s in ekg.sentences},
    }


def json_script(data: object, element_id: str) -> str:
    """``data`` as a ``<script type="application/json">`` block; every ``<`` is ``\\u003c``."""
    raw = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    raw = raw.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return f'<script type="application/json" id="{_e(element_id)}">{raw}</script>'


# ----------------------------------------------------------------------------- page sections


def _short(s: str, n: int) -> str:
    s = " ".join(str(s).split())
    return s if len(s) <= n else s[: n - 1] + "…"


def _event_sort_key(ekg: DocumentEKG):
    pos = _text_order(ekg)
    return lambda ev: pos[ev.id]


def _events_list(ekg: DocumentEKG, tl: Timeline) -> str:
    if not ekg.graph.events:
        return '<p class="empty">No events in the graph.</p>'
    rows = []
    for ev in sorted(ekg.graph.events, key=_event_sort_key(ekg)):
        flags = "" if ev.grounded else ' <span class="badge warn">ungrounded</span>'
        trig = f'“{_e(_short(ev.trigger, 60))}”'
        rows.append(
            f'<li class="event-item" data-event-id="{_e(ev.id)}" tabindex="0">'
            f'<span class="eid">{_e(ev.id)}</span> <span class="etype t-{_e(ev.type)}">{_e(ev.type)}</span> '
            f'<b>{_e(ev.verb)}</b> {trig}{flags}'
            f'<div class="sub">time: {_e(_time_text(ev, tl))} · rank {tl.rank.get(ev.id, "–")} · '
            f'evidence {_e(", ".join(ev.evidence))}</div></li>')
    return f'<ul class="event-list">{"".join(rows)}</ul>'


def _timeline(ekg: DocumentEKG, tl: Timeline) -> str:
    if not ekg.graph.events:
        return '<p class="empty">No events, so no timeline.</p>'
    evs = {ev.id: ev for ev in ekg.graph.events}
    rows = []
    for i, grp in enumerate(tl.groups, start=1):
        items = []
        for eid in grp:
            ev = evs[eid]
            date = ""
            if ev.time.kind == "explicit":
                iso = _iso(tl.dates[eid]) if eid in tl.dates else ""
                date = f'<span class="date" title="{_e(iso)}">{_e(ev.time.value or iso)}</span>'
            elif ev.time.kind == "relative":
                date = f'<span class="reltime">{_e(_time_text(ev, tl))}</span>'
            cls = "timeline-item" + (" dated" if ev.time.kind == "explicit" else "")
            items.append(
                f'<div class="{cls}" data-event-id="{_e(eid)}" tabindex="0">{date}'
                f'<span class="eid">{_e(eid)}</span> <span class="etype t-{_e(ev.type)}">{_e(ev.type)}</span> '
                f'{_e(ev.verb)} <span class="muted">“{_e(_short(ev.trigger, 50))}”</span></div>')
        same = '<span class="muted same">same time:</span>' if len(grp) > 1 else ""
        rows.append(f'<li class="timeline-rank"><span class="rank">{i}</span>{same}{"".join(items)}</li>')
    note = ""
    if tl.ignored:
        note = (f'<p class="note">{len(tl.ignored)} temporal edge(s) contradicted the rest of the order '
                f'(a cycle, or the dates) and were left out of it: {_e(", ".join(tl.ignored))}.</p>')
    dated = sum(1 for ev in ekg.graph.events if ev.time.kind == "explicit")
    return (f'<p class="muted">Order: the BEFORE/AFTER edges (SAME_TIME and OVERLAP share a rank) and the '
            f'explicit dates ({dated} dated event(s)); events without either keep their place in the text.</p>'
            f'{note}<ol class="timeline">{"".join(rows)}</ol>')


def _clip(cx: float, cy: float, dx: float, dy: float, hw: float, hh: float) -> tuple[float, float]:
    """The point where a ray from the centre of a (2hw × 2hh) box in direction (dx, dy) leaves it."""
    t = min(hw / abs(dx) if dx else float("inf"), hh / abs(dy) if dy else float("inf"))
    return cx + dx * t, cy + dy * t


def _graph_svg(ekg: DocumentEKG, tl: Timeline) -> str:
    evs = {ev.id: ev for ev in ekg.graph.events}
    order = [eid for grp in tl.groups for eid in grp]
    if not order:
        return '<p class="empty">No events, so no graph.</p>'
    cols = min(GRAPH_COLUMNS, len(order))
    w, h, hg, vg, m, top = 178, 58, 46, 66, 28, 52  # top: room for the arcs over the first row
    rows = (len(order) + cols - 1) // cols
    width = 2 * m + cols * w + (cols - 1) * hg
    height = top + m + rows * h + (rows - 1) * vg
    centre: dict[str, tuple[float, float]] = {}
    cell: dict[str, tuple[int, int]] = {}
    for i, eid in enumerate(order):
        r, c = divmod(i, cols)
        if r % 2:
            c = cols - 1 - c
        centre[eid] = (m + c * (w + hg) + w / 2, top + r * (h + vg) + h / 2)
        cell[eid] = (r, c)

    parts = [
        f'<svg class="graph" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
        f'aria-label="event graph" style="max-width:{width}px">',
        '<defs>'
        '<marker id="arr-t" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
        '<path d="M0,0L10,5L0,10z" fill="#5b6b7f"/></marker>'
        '<marker id="arr-c" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
        '<path d="M0,0L10,5L0,10z" fill="#c0392b"/></marker></defs>',
    ]
    edges: list[tuple[str, str, str, str, list[str], str]] = []
    for e in ekg.graph.temporal_edges:
        edges.append(("temporal", e.source, e.target, e.relation, list(e.evidence), e.origin))
    for e in ekg.graph.causal_edges:
        edges.append(("causal", e.source, e.target, e.relation, list(e.evidence), e.origin))
    seen_pairs: dict[frozenset, int] = {}
    for kind, s, t, rel, evidence, origin in edges:
        if s not in centre or t not in centre or s == t:
            continue
        pair = frozenset((s, t))
        k = seen_pairs.get(pair, 0)
        seen_pairs[pair] = k + 1
        (x1, y1), (x2, y2) = centre[s], centre[t]
        (r1, c1), (r2, c2) = cell[s], cell[t]
        dx, dy = x2 - x1, y2 - y1
        dist = max((dx * dx + dy * dy) ** 0.5, 1.0)
        nx_, ny_ = -dy / dist, dx / dist
        adjacent = abs(r1 - r2) + abs(c1 - c2) <= 1
        bend = 0.0 if adjacent else min(0.22 * dist, 90.0)
        if r1 == r2 and not adjacent and ny_ > 0:
            bend = -bend  # arcs along a row bow upwards, whichever way they run
        bend += 16.0 * ((k + 1) // 2) * (1 if k % 2 else -1)  # a second edge between the same pair bows apart
        qx, qy = (x1 + x2) / 2 + nx_ * bend, (y1 + y2) / 2 + ny_ * bend
        sx, sy = _clip(x1, y1, qx - x1, qy - y1, w / 2 + 2, h / 2 + 2)
        ex, ey = _clip(x2, y2, qx - x2, qy - y2, w / 2 + 3, h / 2 + 3)
        lx, ly = 0.25 * sx + 0.5 * qx + 0.25 * ex, 0.25 * sy + 0.5 * qy + 0.25 * ey
        directed = rel not in ("SAME_TIME", "OVERLAP")
        marker = f' marker-end="url(#arr-{"c" if kind == "causal" else "t"})"' if directed else ""
        tip = f"{s} {rel} {t} · {kind} · evidence {', '.join(evidence)} · from {origin}"
        parts.append(
            f'<g class="edge {kind} rel-{_e(rel.lower())}" data-source="{_e(s)}" data-target="{_e(t)}">'
            f'<title>{_e(tip)}</title>'
            f'<path d="M{sx:.1f},{sy:.1f} Q{qx:.1f},{qy:.1f} {ex:.1f},{ey:.1f}"{marker}/>'
            f'<text x="{lx:.1f}" y="{ly - 3:.1f}" text-anchor="middle">{_e(rel.lower().replace("_", " "))}</text></g>')
    for eid in order:
        ev = evs[eid]
        cx, cy = centre[eid]
        x, y = cx - w / 2, cy - h / 2
        when = ""
        if ev.time.kind == "explicit":
            when = _iso(tl.dates[eid]) if eid in tl.dates else (ev.time.value or "")
        elif ev.time.kind == "relative":
            when = ev.time.value or ""
        cls = "node" + ("" if ev.grounded else " ungrounded") + (" dated" if ev.time.kind == "explicit" else "")
        tip = f"{eid} · {ev.type} · {ev.verb} · “{ev.trigger}” · rank {tl.rank.get(eid)} · time {_time_text(ev, tl)}"
        parts.append(
            f'<g class="{cls}" data-event-id="{_e(eid)}" tabindex="0"><title>{_e(tip)}</title>'
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{w}" height="{h}" rx="7"/>'
            f'<text x="{x + 8:.1f}" y="{y + 17:.1f}" class="n1">{_e(tl.rank.get(eid, ""))}. {_e(eid)} · {_e(_short(ev.type, 16))}</text>'
            f'<text x="{x + 8:.1f}" y="{y + 33:.1f}" class="n2">{_e(_short(ev.verb + " “" + ev.trigger + "”", 27))}</text>'
            f'<text x="{x + 8:.1f}" y="{y + 49:.1f}" class="n3">{_e(_short(when, 28))}</text></g>')
    parts.append("</svg>")
    legend = ('<p class="legend"><span class="lg-t">—▶ temporal (before/after; plain line: same time/overlap)</span> '
              '<span class="lg-c">- -▶ causal (causes/enables/prevents)</span> '
              '<span class="muted">nodes in timeline order, row by row (alternate rows run right to left); '
              'click a node to select its event</span></p>')
    return legend + '<div class="graph-wrap">' + "".join(parts) + "</div>"


def _entities(ekg: DocumentEKG) -> str:
    if not ekg.graph.entities:
        return '<p class="empty">No entities in the graph.</p>'
    rows = []
    for ent in ekg.graph.entities:
        chips = []
        for mn in ent.mentions:
            a, b = mn.span
            tip = f"{mn.sentence_id} [{a}, {b}) · {mn.match} match"
            chips.append(
                f'<button type="button" class="mention-chip m-{_e(mn.match)}" data-entity-id="{_e(ent.id)}" '
                f'data-span="{a}-{b}" title="{_e(tip)}">{_e(mn.sentence_id)} “{_e(_short(mn.text, 40))}”'
                + (f' <small>{_e(mn.match)}</small>' if mn.match != "exact" else "") + "</button>")
        flag = "" if ent.grounded and ent.mentions else ' <span class="badge warn">ungrounded</span>'
        n_ev = sum(1 for ev in ekg.graph.events for p in ev.participants if p.entity == ent.id)
        rows.append(
            f'<tr data-entity-row="{_e(ent.id)}"><td><button type="button" class="entity-link" data-entity-id="{_e(ent.id)}">'
            f'{_e(ent.id)}</button></td><td class="wrap"><b>{_e(ent.name)}</b>{flag}</td><td>{_e(ent.kind)}</td>'
            f'<td>{_e(ent.role)}</td><td class="wrap">{_e(", ".join(ent.aliases)) or "–"}</td><td class="num">{n_ev}</td>'
            f'<td class="wrap chips">{"".join(chips) or "<span class=muted>none</span>"}</td></tr>')
    return ('<table class="entities"><colgroup><col style="width:4.5rem"><col style="width:14%"><col style="width:6.5rem">'
            '<col style="width:7.5rem"><col style="width:13%"><col style="width:4.5rem"><col></colgroup>'
            '<thead><tr><th>id</th><th>name</th><th>kind</th><th>role</th><th>aliases</th><th>events</th>'
            '<th>mentions (click to find in the text)</th></tr></thead><tbody>' + "".join(rows) + "</tbody></table>")


def _merge_log(ekg: DocumentEKG) -> str:
    if not ekg.merge_log:
        return '<p class="empty">No merge decisions.</p>'
    rows = "".join(
        f'<tr><td>{_e(d.action)}</td><td class="wrap">{_e(", ".join(d.items))}</td><td class="wrap">{_e(d.rule)}</td>'
        f'<td class="wrap">{_e(d.reason)}</td></tr>' for d in ekg.merge_log)
    return ('<table class="merge"><colgroup><col style="width:10rem"><col style="width:24%"><col style="width:14%"><col></colgroup>'
            f'<thead><tr><th>action</th><th>items</th><th>rule</th><th>reason</th></tr></thead><tbody>{rows}</tbody></table>')


def _rejected(ekg: DocumentEKG) -> str:
    kept = _ungrounded_kept(ekg)
    if not ekg.rejected:
        if kept:
            return (f'<p class="empty">Nothing was rejected, but {kept} ungrounded item(s) were kept in the graph, '
                    'flagged “ungrounded” (extraction.keep_ungrounded).</p>')
        return '<p class="empty">Nothing was rejected: every item was grounded in the text.</p>'
    rows = []
    for r in ekg.rejected:
        item = json.dumps(r.item, ensure_ascii=False)
        rows.append(f'<tr class="rejected-item"><td>{_e(r.kind)}</td><td class="wrap">{_e(r.id)}</td><td>{_e(r.stage)}</td>'
                    f'<td class="wrap">{_e(r.reason)}</td><td class="wrap"><details><summary>as written</summary>'
                    f'<code>{_e(item)}</code></details></td></tr>')
    return ('<table class="rejected"><colgroup><col style="width:7rem"><col style="width:8rem"><col style="width:6rem">'
            '<col><col style="width:24%"></colgroup>'
            '<thead><tr><th>kind</th><th>id</th><th>stage</th><th>reason</th><th>item</th></tr></thead><tbody>'
            + "".join(rows) + "</tbody></table>")


def _ungrounded_kept(ekg: DocumentEKG) -> int:
    g = ekg.graph
    return sum(1 for e in g.entities if not e.grounded) + sum(1 for e in g.events if not e.grounded)


def _money(v: float) -> str:
    return f"${v:.4f}" if v < 1 else f"${v:.2f}"


def _cost(ekg: DocumentEKG) -> str:
    out = []
    if ekg.stages:
        rows = "".join(f'<tr><td>{_e(s.stage)}</td><td class="num">{s.seconds:.2f}</td><td class="num">{s.lm_calls}</td>'
                       f'<td class="num">{s.tokens:,}</td><td class="num">{_money(s.cost_usd)}</td></tr>' for s in ekg.stages)
        tot = (f'<tr class="total"><td>total</td><td class="num">{sum(s.seconds for s in ekg.stages):.2f}</td>'
               f'<td class="num">{sum(s.lm_calls for s in ekg.stages)}</td><td class="num">{sum(s.tokens for s in ekg.stages):,}</td>'
               f'<td class="num">{_money(sum(s.cost_usd for s in ekg.stages))}</td></tr>')
        out.append('<h3>Pipeline stages</h3><table class="cost"><thead><tr><th>stage</th><th>seconds</th><th>LM calls</th>'
                   f'<th>tokens</th><th>cost (USD)</th></tr></thead><tbody>{rows}{tot}</tbody></table>')
    else:
        out.append('<p class="empty">No per-stage statistics recorded.</p>')
    led = ekg.ledger
    rows = "".join(
        f'<tr><td>{_e(st)}</td><td class="num">{t.calls}</td><td class="num">{t.prompt_tokens:,}</td>'
        f'<td class="num">{t.completion_tokens:,}</td><td class="num">{t.tokens:,}</td><td class="num">{_money(t.cost_usd)}</td>'
        f'<td class="num">{t.cache_hits}</td><td class="num">{t.latency_s:.2f}</td></tr>' for st, t in sorted(led.by_stage.items()))
    t = led.totals
    rows += (f'<tr class="total"><td>total</td><td class="num">{t.calls}</td><td class="num">{t.prompt_tokens:,}</td>'
             f'<td class="num">{t.completion_tokens:,}</td><td class="num">{t.tokens:,}</td><td class="num">{_money(t.cost_usd)}</td>'
             f'<td class="num">{t.cache_hits}</td><td class="num">{t.latency_s:.2f}</td></tr>')
    out.append('<h3>LM calls (cost ledger)</h3><table class="cost ledger"><thead><tr><th>ledger stage</th><th>calls</th>'
               '<th>prompt tokens</th><th>completion tokens</th><th>tokens</th><th>cost (USD)</th><th>cache hits</th>'
               f'<th>latency (s)</th></tr></thead><tbody>{rows}</tbody></table>')
    models = sorted({e.model for e in led.entries})
    if models:
        out.append(f'<p class="muted">Models called: {_e(", ".join(models))}.</p>')
    return "".join(out)


def _header(ekg: DocumentEKG) -> str:
    g = ekg.graph
    n_fact = sum(1 for s in ekg.sentences if s.fact)
    n_narr = sum(1 for s in ekg.sentences if s.in_narrative)
    counts = [
        ("sentences", len(ekg.sentences)), ("in the narrative", n_narr), ("facts", n_fact),
        ("events", len(g.events)), ("entities", len(g.entities)), ("temporal edges", len(g.temporal_edges)),
        ("causal edges", len(g.causal_edges)), ("rejected", len(ekg.rejected)),
        *([("ungrounded, kept", _ungrounded_kept(ekg))] if _ungrounded_kept(ekg) else []),
        ("merge decisions", len(ekg.merge_log)),
        ("LM calls", ekg.ledger.totals.calls), ("tokens", f"{ekg.ledger.totals.tokens:,}"),
        ("cost", _money(ekg.ledger.totals.cost_usd)),
    ]
    chips = "".join(f'<span class="count" data-count="{_e(k)}"><b>{_e(v)}</b> {_e(k)}</span>' for k, v in counts)
    by_model: dict[str, list[str]] = {}
    for stage, model in ekg.models.items():
        by_model.setdefault(model, []).append(stage)
    models = "; ".join(f"{_e(', '.join(stages))}: <code>{_e(model)}</code>" for model, stages in by_model.items()) or "–"
    warn = ""
    if ekg.warnings:
        warn = '<ul class="warnings">' + "".join(f"<li>{_e(w)}</li>" for w in ekg.warnings) + "</ul>"
    facts_note = "" if ekg.facts_section_found else ' · <span class="badge warn">no FACTS section found</span>'
    return (f'<header><h1>{_e(ekg.doc_id)} <span class="muted small">document event knowledge graph</span></h1>'
            f'<p class="meta">source <code>{_e(ekg.source)}</code> · method <b>{_e(ekg.method)}</b> · created {_e(ekg.created)}'
            f' · schema {_e(ekg.schema_version)}{facts_note}</p>'
            f'<p class="meta">models: {models}</p><div class="counts">{chips}</div>{warn}</header>')


_CSS = """
*{box-sizing:border-box}
html,body{margin:0;padding:0}
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;color:#222;background:#f4f5f7;font-size:14px;overflow-x:hidden}
header{background:#fff;border-bottom:1px solid #d8dbe0;padding:10px 20px}
h1{font-size:1.35rem;margin:.2rem 0}h2{font-size:1.1rem;margin:0 0 .5rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}
h3{font-size:.95rem;margin:.8rem 0 .3rem}
.small{font-size:.8rem;font-weight:normal}.muted{color:#777}.meta{margin:.2rem 0;overflow-wrap:anywhere}
code{font-size:.85em;background:#f1f1f1;padding:0 .2em;border-radius:3px;overflow-wrap:anywhere}
.counts{display:flex;flex-wrap:wrap;gap:6px;margin:.4rem 0}
.count{background:#eef2f7;border:1px solid #d5dde8;border-radius:12px;padding:1px 9px;font-size:.82rem}
ul.warnings{margin:.3rem 0;padding:.4rem .8rem .4rem 1.8rem;background:#fff4d6;border:1px solid #f0d48a;border-radius:4px;overflow-wrap:anywhere}
main{padding:12px 20px 40px}
.top{display:grid;grid-template-columns:minmax(0,7fr) minmax(0,5fr);gap:14px}
.panel{background:#fff;border:1px solid #d8dbe0;border-radius:5px;padding:10px 14px;min-width:0}
.panel>h2{display:flex;justify-content:space-between;align-items:baseline;gap:8px}
#text-pane{height:calc(100vh - 90px);min-height:420px;overflow-y:auto;overflow-x:hidden;white-space:pre-wrap;overflow-wrap:anywhere;
 font-family:Georgia,'Times New Roman',serif;font-size:14px;line-height:1.6;padding:8px 12px;border:1px solid #eee;background:#fffefb}
.text-legend{font-size:.75rem;font-weight:normal;display:flex;flex-wrap:wrap;gap:8px}
.text-legend span{padding:0 4px;border-radius:3px}
.sent{border-radius:2px;transition:background .15s}
.sent::before{content:attr(data-sentence-id);font:9px system-ui,sans-serif;color:#9aa3ad;vertical-align:super;margin-right:1px}
.sent.fact{background:#eef7e8;border-left:3px solid #6aa84f;padding-left:2px}
.sent.outside{color:#8a8f96}
#text-pane{color:#8a8f96}#text-pane .sent:not(.outside){color:#1d1f22}
.heading{font-weight:bold;color:#1d1f22;letter-spacing:.02em;background:#e9edf3}
.section-label{display:block;font:bold 11px system-ui,sans-serif;color:#4a5a6e;border-top:1px solid #c9d2dd;margin:6px 0 2px;padding-top:2px}
.section-label::before{content:"§ " attr(data-label)}
.pb{display:block;border-top:1px dashed #c3c7cc;margin:6px 0;height:0;overflow:hidden;font-size:0}
mark{background:none;color:inherit;padding:0;border-radius:2px;cursor:pointer}
mark.mention{border-bottom:2px solid #7fa7d9}
mark.mention.m-fuzzy,mark.mention.m-normalized{border-bottom-style:dotted}
mark.trigger{background:#ffe3b3;border-bottom:2px solid #e69500}
.sent.active{background:#fff2a8 !important;outline:2px solid #f1c40f;outline-offset:1px}
mark.trigger.active{background:#ff9f1a;color:#000;font-weight:bold;outline:2px solid #c76b00}
mark.mention.active{background:#b8d4ff;border-bottom-color:#1f5fbf}
mark.mention.focus{outline:2px solid #1f5fbf;background:#8fbaff}
.side{display:flex;flex-direction:column;gap:14px;height:calc(100vh - 44px);min-height:500px;min-width:0}
#detail{flex:0 0 auto;max-height:52%;overflow:auto}
#detail.empty-detail .hint{color:#777}
#events{flex:1 1 0;overflow:auto;min-height:160px}
dl.w5{display:grid;grid-template-columns:6.5rem minmax(0,1fr);gap:3px 10px;margin:.3rem 0}
dl.w5 dt{font-weight:bold;color:#4a5a6e}dl.w5 dd{margin:0;overflow-wrap:anywhere}
.link{color:#1f5fbf;cursor:pointer;text-decoration:underline;background:none;border:0;padding:0;font:inherit}
ul.event-list{list-style:none;margin:0;padding:0}
.event-item{padding:4px 6px;border-bottom:1px solid #eee;cursor:pointer;overflow-wrap:anywhere}
.event-item:hover,.timeline-item:hover{background:#f2f6fb}
.event-item.active,.timeline-item.active{background:#fff2a8}
.sub{font-size:.78rem;color:#666}
.eid{font:bold 11px ui-monospace,monospace;color:#555}
.etype{font-size:.75rem;background:#e7ecf3;border-radius:3px;padding:0 4px}
.badge{display:inline-block;padding:0 .35rem;border-radius:.3rem;font-size:.72rem;background:#eee}
.badge.warn{background:#ffd6d6;color:#8a1c1c}
section.below{margin-top:14px}
ol.timeline{list-style:none;margin:0;padding:0;columns:2 420px;column-gap:24px}
.timeline-rank{break-inside:avoid;border-left:3px solid #9fb3c8;padding:2px 0 2px 6px;margin:0 0 4px;display:grid;grid-template-columns:2rem minmax(0,1fr);align-items:start}
.timeline-rank>.same{grid-column:2;font-size:.75rem}.timeline-rank>.timeline-item{grid-column:2}
.rank{grid-column:1;grid-row:1 / span 9;font:bold 12px ui-monospace,monospace;color:#4a5a6e;padding-top:3px}
.timeline-item{display:block;padding:2px 4px;cursor:pointer;overflow-wrap:anywhere;border-radius:3px}
.timeline-item .date{display:inline-block;background:#234;color:#fff;border-radius:3px;padding:0 5px;margin-right:6px;font-size:.78rem}
.timeline-item .reltime{display:inline-block;background:#e8e2f5;border-radius:3px;padding:0 5px;margin-right:6px;font-size:.78rem}
.note{background:#fff4d6;padding:4px 8px;border-radius:3px;overflow-wrap:anywhere}
.graph-wrap{overflow:hidden}
svg.graph{width:100%;height:auto;display:block}
svg.graph .node rect{fill:#fff;stroke:#6d7f94;stroke-width:1.2}
svg.graph .node.dated rect{fill:#f0f5ff}
svg.graph .node.ungrounded rect{stroke-dasharray:4 3;stroke:#b03a2e}
svg.graph .node{cursor:pointer}
svg.graph .node:hover rect{stroke:#1f5fbf;stroke-width:2}
svg.graph .node.active rect{fill:#fff2a8;stroke:#c79a00;stroke-width:2.5}
svg.graph text{font:11px system-ui,sans-serif;fill:#222}
svg.graph .n1{font-weight:bold}svg.graph .n3{fill:#556;font-size:10px}
svg.graph .edge path{fill:none;stroke:#8796a8;stroke-width:1.3}
svg.graph .edge.causal path{stroke:#c0392b;stroke-dasharray:6 4;stroke-width:1.6}
svg.graph .edge text{font-size:9.5px;fill:#5b6b7f;paint-order:stroke;stroke:#fff;stroke-width:3px}
svg.graph .edge.causal text{fill:#c0392b}
svg.graph .edge.active path{stroke:#e69500;stroke-width:2.6}
.legend{font-size:.8rem}.lg-t{color:#5b6b7f;margin-right:12px}.lg-c{color:#c0392b;margin-right:12px}
table{border-collapse:collapse;width:100%;table-layout:fixed;font-size:.84rem}
th,td{border:1px solid #dde1e6;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f1f3f6}td.wrap{overflow-wrap:anywhere}td.num{text-align:right;white-space:nowrap}
tr.total td{font-weight:bold;background:#fafbfc}
table.cost{width:auto;min-width:50%;table-layout:auto}
tr.active td{background:#eef5ff}
.mention-chip{font:inherit;font-size:.78rem;border:1px solid #c5d5ea;background:#f3f8ff;border-radius:10px;padding:0 7px;margin:1px 2px;cursor:pointer;max-width:100%;overflow-wrap:anywhere;text-align:left}
.mention-chip.m-fuzzy,.mention-chip.m-normalized{border-style:dashed}
.entity-link{font:bold 12px ui-monospace,monospace;color:#1f5fbf;background:none;border:0;cursor:pointer;padding:0}
details code{display:block;white-space:pre-wrap;overflow-wrap:anywhere}
.empty{color:#777;font-style:italic}
"""

_JS = r"""
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('ekg-data').textContent);
  var pane = document.getElementById('text-pane');
  var detail = document.getElementById('detail-body');
  function all(sel, root) { return Array.prototype.slice.call((root || document).querySelectorAll(sel)); }
  function attr(name, value) { return '[' + name + '="' + CSS.escape(value) + '"]'; }
  function clear() {
    all('.active').forEach(function (el) { el.classList.remove('active'); });
    all('.focus').forEach(function (el) { el.classList.remove('focus'); });
  }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function link(text, kind, id) {
    var b = el('button', 'link', text);
    b.type = 'button';
    b.setAttribute(kind, id);
    return b;
  }
  function scrollToText(target) {
    if (!target) return;
    var top = target.getBoundingClientRect().top - pane.getBoundingClientRect().top + pane.scrollTop;
    pane.scrollTop = Math.max(0, top - pane.clientHeight / 3);
    var r = pane.getBoundingClientRect();
    if (r.bottom < 0 || r.top > window.innerHeight) pane.scrollIntoView({block: 'start'});
  }
  function row(dl, label, content) {
    dl.appendChild(el('dt', null, label));
    var dd = el('dd');
    if (typeof content === 'string') dd.textContent = content || '—';
    else if (!content || (content.length === 0)) dd.textContent = '—';
    else content.forEach(function (c, i) { if (i) dd.appendChild(document.createTextNode('; ')); dd.appendChild(c); });
    dl.appendChild(dd);
  }
  function people(list, withRole) {
    return list.map(function (p) {
      var s = el('span');
      s.appendChild(link(p.name, 'data-entity-id', p.entity));
      s.appendChild(document.createTextNode(' (' + (withRole ? p.role + ', ' : '') + p.legal_role + ')'));
      return s;
    });
  }
  function edges(list, key, dir) {
    return list.map(function (e) {
      var s = el('span');
      if (dir === 'in') { s.appendChild(link(e[key], 'data-event-id', e[key])); s.appendChild(document.createTextNode(' ' + e.relation + ' this')); }
      else { s.appendChild(document.createTextNode('this ' + e.relation + ' ')); s.appendChild(link(e[key], 'data-event-id', e[key])); }
      return s;
    });
  }
  function showEvent(ev) {
    detail.textContent = '';
    detail.parentNode.classList.remove('empty-detail');
    var h = el('h3', null, ev.id + ' · ' + ev.type + ' · ' + ev.verb);
    h.setAttribute('data-detail-event', ev.id);
    detail.appendChild(h);
    if (!ev.grounded) detail.appendChild(el('p', 'badge warn', 'ungrounded: its trigger was not found in its evidence'));
    var dl = el('dl', 'w5');
    row(dl, 'Who', people(ev.who, true));
    var what = ev.type + ' — ' + ev.verb + ' — “' + ev.trigger + '”';
    if (ev.trigger_text !== null && ev.trigger_text !== ev.trigger) what += ' (in the text: “' + ev.trigger_text + '”)';
    if (ev.trigger_match) what += ' [' + ev.trigger_match + ' match]';
    if (ev.frame) what += ' · frame ' + ev.frame;
    row(dl, 'What', what);
    row(dl, 'Whom', people(ev.whom, true));
    row(dl, 'When', ev.time.kind + (ev.time.kind === 'unknown' ? '' : ': ' + ev.time.text) + ' · timeline rank ' + ev.rank);
    row(dl, 'Where', people(ev.where, true));
    row(dl, 'Why (caused by)', edges(ev.causes_in, 'source', 'in'));
    row(dl, 'How (leads to)', edges(ev.causes_out, 'target', 'out'));
    row(dl, 'Before / after', edges(ev.temporal_in, 'source', 'in').concat(edges(ev.temporal_out, 'target', 'out')));
    row(dl, 'Evidence', ev.evidence.map(function (s) { return link(s, 'data-goto-sentence', s); }));
    row(dl, 'Sources', ev.sources.join(', ') + ' · confidence ' + ev.confidence);
    detail.appendChild(dl);
  }
  function showEntity(en) {
    detail.textContent = '';
    detail.parentNode.classList.remove('empty-detail');
    var h = el('h3', null, en.id + ' · ' + en.name);
    h.setAttribute('data-detail-entity', en.id);
    detail.appendChild(h);
    var dl = el('dl', 'w5');
    row(dl, 'Kind', en.kind);
    row(dl, 'Role', en.role);
    row(dl, 'Aliases', en.aliases.join(', '));
    row(dl, 'Mentions', String(en.mentions) + (en.grounded ? '' : ' (ungrounded)'));
    row(dl, 'Events', en.events.map(function (x) {
      var s = el('span'); s.appendChild(link(x.event, 'data-event-id', x.event));
      s.appendChild(document.createTextNode(' as ' + x.role)); return s;
    }));
    detail.appendChild(dl);
  }
  function selectEvent(id) {
    var ev = data.events[id];
    if (!ev) return;
    clear();
    ev.evidence.forEach(function (s) { all(attr('data-sentence-id', s), pane).forEach(function (x) { x.classList.add('active'); }); });
    all('mark.trigger' + attr('data-event-id', id), pane).forEach(function (x) { x.classList.add('active'); });
    ev.participants.forEach(function (e) {
      ev.evidence.forEach(function (s) {
        all(attr('data-sentence-id', s) + ' mark.mention' + attr('data-entity-id', e), pane).forEach(function (x) { x.classList.add('active'); });
      });
    });
    all('.event-item' + attr('data-event-id', id) + ',.timeline-item' + attr('data-event-id', id) + ',svg .node' + attr('data-event-id', id))
      .forEach(function (x) { x.classList.add('active'); });
    all('svg .edge' + attr('data-source', id) + ',svg .edge' + attr('data-target', id)).forEach(function (x) { x.classList.add('active'); });
    var item = document.querySelector('.event-item' + attr('data-event-id', id));
    if (item) { var list = document.getElementById('events'); list.scrollTop = item.offsetTop - list.offsetTop - 40; }
    showEvent(ev);
    scrollToText(pane.querySelector('mark.trigger' + attr('data-event-id', id)) ||
                 pane.querySelector(attr('data-sentence-id', ev.evidence[0])));
  }
  function selectEntity(id, span) {
    var en = data.entities[id];
    if (!en) return;
    clear();
    var marks = all('mark.mention' + attr('data-entity-id', id), pane);
    marks.forEach(function (x) { x.classList.add('active'); });
    all('tr' + attr('data-entity-row', id)).forEach(function (x) { x.classList.add('active'); });
    var target = marks[0];
    if (span) {
      var hit = all('mark.mention' + attr('data-entity-id', id) + attr('data-span', span), pane);
      hit.forEach(function (x) { x.classList.add('focus'); });
      target = hit[0] || target;
    }
    showEntity(en);
    scrollToText(target);
  }
  function gotoSentence(id) {
    var s = pane.querySelector(attr('data-sentence-id', id));
    if (s) { s.classList.add('active'); scrollToText(s); }
  }
  function activate(target) {
    // in the text, a trigger wins over a mention on the same characters: the event is what one looks for
    var t = (pane.contains(target) && target.closest('mark.trigger')) ||
            target.closest('[data-goto-sentence],[data-event-id],[data-entity-id]');
    if (!t) return false;
    if (t.hasAttribute('data-goto-sentence')) gotoSentence(t.getAttribute('data-goto-sentence'));
    else if (t.hasAttribute('data-event-id')) selectEvent(t.getAttribute('data-event-id'));
    else selectEntity(t.getAttribute('data-entity-id'), t.classList.contains('mention-chip') ? t.getAttribute('data-span') : null);
    return true;
  }
  document.addEventListener('click', function (e) { if (activate(e.target)) e.preventDefault(); });
  document.addEventListener('keydown', function (e) {
    if ((e.key === 'Enter' || e.key === ' ') && e.target.closest && e.target.closest('[tabindex]')) {
      if (activate(e.target)) e.preventDefault();
    }
  });
})();
"""


def render_view(ekg: DocumentEKG) -> str:
    """The whole page (see the module docstring)."""
    tl = timeline_order(ekg)
    g = ekg.graph
    legend = ('<span class="text-legend"><span style="background:#eef7e8;border-left:3px solid #6aa84f">fact sentence</span>'
              '<span style="color:#8a8f96">outside the narrative</span>'
              '<span style="background:#ffe3b3;border-bottom:2px solid #e69500">event trigger</span>'
              '<span style="border-bottom:2px solid #7fa7d9">entity mention</span></span>')
    text_html = render_text(ekg) if ekg.text else '<span class="empty">This EKG carries no original text (schema 1.0 file?).</span>'
    body = [
        _header(ekg),
        "<main>",
        '<div class="top">',
        f'<section class="panel" id="text"><h2>Complaint text {legend}</h2><div id="text-pane">{text_html}</div></section>',
        '<div class="side">',
        '<section class="panel empty-detail" id="detail"><h2>Detail</h2><div id="detail-body">'
        '<p class="hint">Click an event (here, in the text, the timeline or the graph) or an entity to see its '
        'who / what / whom / when / where / why and its evidence.</p></div></section>',
        f'<section class="panel" id="events"><h2>Events <span class="muted small">{len(g.events)}, in text order</span></h2>'
        f'{_events_list(ekg, tl)}</section>',
        "</div></div>",
        f'<section class="panel below" id="timeline"><h2>Timeline</h2>{_timeline(ekg, tl)}</section>',
        f'<section class="panel below" id="graph"><h2>Event graph <span class="muted small">{len(g.events)} events, '
        f'{len(g.temporal_edges)} temporal and {len(g.causal_edges)} causal edges</span></h2>{_graph_svg(ekg, tl)}</section>',
        f'<section class="panel below" id="entities"><h2>Entities <span class="muted small">{len(g.entities)}</span></h2>'
        f'{_entities(ekg)}</section>',
        f'<section class="panel below" id="merge-log"><h2>Merge log <span class="muted small">{len(ekg.merge_log)} decisions'
        f'</span></h2>{_merge_log(ekg)}</section>',
        f'<section class="panel below" id="rejected"><h2>Rejected items <span class="muted small">{len(ekg.rejected)}, '
        f'not grounded in the text</span></h2>{_rejected(ekg)}</section>',
        f'<section class="panel below" id="cost"><h2>Cost per stage</h2>{_cost(ekg)}</section>',
        "</main>",
        json_script(view_data(ekg, tl), "ekg-data"),
        f"<script>{_JS}</script>",
    ]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{_e(ekg.doc_id)} · ARGUS view</title><style>{_CSS}</style></head><body>"
            + "\n".join(body) + "</body></html>\n")


# ----------------------------------------------------------------------------- files


def _safe_name(doc_id: str) -> str:
    return re.sub(r"[^\w.-]+", "_", doc_id).strip("._") or "document"


def view_path_for(ekg: DocumentEKG, folder: str | Path) -> Path:
    return Path(folder) / f"{_safe_name(ekg.doc_id)}.view.html"


def write_view(ekg_path: str | Path, out_path: str | Path | None = None) -> Path:
    """Write the view of one EKG file (default ``<doc_id>.view.html`` beside it); returns its path."""
    ekg = load_ekg(ekg_path)
    out = Path(out_path) if out_path else view_path_for(ekg, Path(ekg_path).parent)
    return write_text_atomic(out, render_view(ekg))


@dataclass
class IndexEntry:
    file: Path
    view: Path | None = None
    error: str | None = None
    ekg: DocumentEKG | None = None


def index_documents(out_dir: str | Path, out_path: str | Path | None = None) -> tuple[Path, list[IndexEntry]]:
    """Write one view per ``*.ekg.json`` of ``out_dir`` and an index page; returns it and the entries.

    The views go beside the index (default ``out_dir/index.html``). A file that does not load (or
    does not render) is listed in the index with its error; the others are written regardless.
    """
    folder = Path(out_dir)
    out = Path(out_path) if out_path else folder / "index.html"
    entries: list[IndexEntry] = []
    for f in sorted(folder.glob("*.ekg.json")):
        entry = IndexEntry(file=f)
        try:
            ekg = load_ekg(f)
            entry.ekg = ekg
            entry.view = write_text_atomic(view_path_for(ekg, out.parent), render_view(ekg))
        except Exception as exc:  # noqa: BLE001 - one bad file must not stop the index
            entry.error = str(exc) if isinstance(exc, ArgusError) else f"{type(exc).__name__}: {exc}"
        entries.append(entry)
    write_text_atomic(out, render_index(entries, out.parent, folder))
    return out, entries


def write_index(out_dir: str | Path, out_path: str | Path | None = None) -> Path:
    """One view per ``*.ekg.json`` in ``out_dir`` plus ``index.html`` linking to them; returns the index path."""
    return index_documents(out_dir, out_path)[0]


def render_index(entries: list[IndexEntry], base: Path, folder: Path) -> str:
    rows = []
    tot = {"events": 0, "entities": 0, "edges": 0, "rejected": 0, "calls": 0, "tokens": 0, "cost": 0.0}
    for en in entries:
        if en.ekg is None:
            rows.append(f'<tr class="failed"><td class="wrap">{_e(en.file.name)}</td>'
                        f'<td colspan="8" class="wrap error">could not be loaded: {_e(en.error)}</td></tr>')
            continue
        ekg, g = en.ekg, en.ekg.graph
        try:
            href = en.view.relative_to(base).as_posix() if en.view else ""
        except ValueError:
            href = en.view.resolve().as_uri() if en.view else ""
        name = f'<a href="{_e(href)}">{_e(ekg.doc_id)}</a>' if en.view else _e(ekg.doc_id)
        if en.error:
            name += f' <span class="error">view failed: {_e(en.error)}</span>'
        t = ekg.ledger.totals
        warn = "".join(f"<li>{_e(w)}</li>" for w in ekg.warnings)
        rows.append(
            f'<tr><td class="wrap">{name}<div class="muted small">{_e(en.file.name)}</div></td>'
            f'<td class="num">{len(g.events)}</td><td class="num">{len(g.entities)}</td>'
            f'<td class="num">{len(g.temporal_edges)} + {len(g.causal_edges)}</td><td class="num">{len(ekg.rejected)}</td>'
            f'<td class="num">{t.calls}</td><td class="num">{t.tokens:,}</td><td class="num">{_money(t.cost_usd)}</td>'
            f'<td class="wrap">{f"<ul>{warn}</ul>" if warn else "–"}</td></tr>')
        tot["events"] += len(g.events)
        tot["entities"] += len(g.entities)
        tot["edges"] += len(g.temporal_edges) + len(g.causal_edges)
        tot["rejected"] += len(ekg.rejected)
        tot["calls"] += t.calls
        tot["tokens"] += t.tokens
        tot["cost"] += t.cost_usd
    ok = sum(1 for en in entries if en.ekg is not None)
    total_row = (f'<tr class="total"><td>{ok} of {len(entries)} loaded</td><td class="num">{tot["events"]}</td>'
                 f'<td class="num">{tot["entities"]}</td><td class="num">{tot["edges"]}</td><td class="num">{tot["rejected"]}</td>'
                 f'<td class="num">{tot["calls"]}</td><td class="num">{tot["tokens"]:,}</td><td class="num">{_money(tot["cost"])}</td>'
                 '<td></td></tr>')
    body = (f'<header><h1>ARGUS batch <span class="muted small">{_e(folder)}</span></h1>'
            f'<p class="meta">{len(entries)} EKG file(s); click a document to open its view.</p></header><main>'
            '<section class="panel"><table class="index"><colgroup><col style="width:24%"><col style="width:6%">'
            '<col style="width:6%"><col style="width:8%"><col style="width:6%"><col style="width:6%"><col style="width:8%">'
            '<col style="width:8%"><col></colgroup><thead><tr><th>document</th><th>events</th><th>entities</th>'
            '<th>edges (temporal + causal)</th><th>rejected</th><th>LM calls</th><th>tokens</th><th>cost</th><th>warnings</th>'
            f'</tr></thead><tbody>{"".join(rows)}{total_row}</tbody></table></section></main>')
    css = _CSS + ".error{color:#8a1c1c}tr.failed td{background:#fff0f0}table.index ul{margin:0;padding-left:1.1rem}"
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>ARGUS batch · {_e(folder.name)}</title><style>{css}</style></head><body>{body}</body></html>\n")
