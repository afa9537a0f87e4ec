"""``argus view``: a document EKG as one self-contained HTML page a lawyer can open.

One file: inline CSS, a few lines of inline JS, the graph as inline SVG laid out here in Python,
no external URL of any kind; every text is HTML-escaped, and the data the script needs travels in a
``<script type="application/json">`` block in which every ``<`` is written ``\\u003c`` (so neither
``</script>`` nor ``<!--`` in a complaint can end the block).

The pages are Jinja2 templates (``argus/resources/templates``: ``base.html.j2``, the layout every page
extends, ``view.html.j2`` and ``index.html.j2``) rendered with autoescape on by ``argus.output.pages.render_page``;
their style sheets and script are files of ``argus/resources/web``, inlined by the templates. The page's
Content-Security-Policy (``argus.output.pages.content_security_policy``) runs that one script and nothing else,
loads nothing, and lets no style attribute apply: the legend's and the tables' styles are classes of
``view.css``, the graph's width a rule of the page's own style element.

The page shows:

- a header: doc id, source, method, models per stage, created, counts and warnings;
- the filing text exactly as read (``DocumentEKG.text``; the text pane's ``textContent`` *is* that
  text), each page opened by a rule labelled with its number ("p. 3": the form feeds of the text, see
  ``argus.output.spans.nest_spans``), each sentence an element with ``data-sentence-id`` (and ``data-page``, its
  page, also in its title and beside it among an event's evidence, so the filing can be cited), fact sentences marked, text outside the
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

import re
from dataclasses import dataclass, field
from pathlib import Path


from argus.errors import ArgusError
from argus.output.export import load_ekg
from argus.io import write_text_atomic
from argus.output.pages import Markup, escape, json_script, money, render_page, resource
from argus.graph.schema import DocEvent, DocumentEKG
from argus.output.spans import Span, nest_spans
from argus.graph.timeline import Timeline, iso_date, parse_date, text_order, timeline_order

__all__ = [
    "AGENT_ROLES", "GRAPH_COLUMNS", "PLACE_ROLES", "IndexEntry", "Span", "Timeline", "escape", "index_documents",
    "json_script", "nest_spans", "parse_date", "render_index", "render_page", "render_text", "render_view",
    "resource", "timeline_order", "view_context", "view_data", "view_path_for", "write_index", "write_view",
]

AGENT_ROLES = frozenset({
    "agent", "actor", "speaker", "sender", "author", "complainant", "requester", "filer", "initiator",
    "decision_maker", "perpetrator", "harasser", "employer", "supervisor", "reporter", "accuser",
})
"""Participant roles shown as *who* (the rest are *whom*, with their role, or *where*)."""

PLACE_ROLES = frozenset({"place", "location", "site", "venue", "where"})
"""Participant roles shown as *where* (so is any participant whose entity is a location)."""

GRAPH_COLUMNS = 6
"""Event-graph nodes per row (nodes follow the timeline order, row by row, snaking)."""


# ----------------------------------------------------------------------------- text with marks


def _text_spans(ekg: DocumentEKG) -> list[Span]:
    spans: list[Span] = []
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
        title = f"{s.id}" + (f" · p. {s.page}" if s.page is not None else "") + f" · {s.section}" \
            + (f" · {s.section_heading}" if s.section_heading else "")
        if s.fact is not None:
            title += " · fact" if s.fact else " · not a fact"
            if s.fact_probability is not None:
                title += f" (p={s.fact_probability:.2f}, {s.fact_path})"
        if s.id in evidence_of:
            title += " · evidence of " + ", ".join(evidence_of[s.id])
        before = Markup()
        key = (s.section, s.section_heading)
        if key != prev_key:
            heading = s.section_heading.strip()
            found = -1
            if heading:
                gap = text[prev_end:a].lower()
                found = gap.rfind(heading.lower())
            if found >= 0:
                h0 = prev_end + found
                spans.append(Span(h0, h0 + len(heading), 0, "span", {"class": "heading", "data-section": s.section}))
            else:
                label = heading or s.section
                before = Markup(f'<span class="section-label" data-label="{escape(label)}" '
                                f'data-section="{escape(s.section)}"></span>')
            prev_key = key
        prev_end = max(prev_end, b)
        attrs = {"class": " ".join(classes), "data-sentence-id": s.id, "id": f"sent-{s.id}", "title": title}
        if s.page is not None:
            attrs["data-page"] = str(s.page)
        spans.append(Span(a, b, 0, "span", attrs, before=before))
    for ev in ekg.graph.events:
        if ev.trigger_span is None:
            continue
        a, b = ev.trigger_span
        spans.append(Span(a, b, 1, "mark", {
            "class": "trigger", "data-event-id": ev.id, "data-span": f"{a}-{b}",
            "title": f"{ev.id} · {ev.type} · {ev.verb} (trigger, {ev.trigger_match or 'unknown'} match)"}))
    for ent in ekg.graph.entities:
        for m in ent.mentions:
            a, b = m.span
            spans.append(Span(a, b, 2, "mark", {
                "class": f"mention m-{m.match}", "data-entity-id": ent.id, "data-span": f"{a}-{b}",
                "title": f"{ent.id} · {ent.name} ({ent.kind}, {ent.role}) · {m.match} match"}))
    return spans


def render_text(ekg: DocumentEKG) -> Markup:
    """The filing text as HTML: sentences, headings, trigger and mention marks (see :func:`nest_spans`)."""
    return nest_spans(ekg.text, _text_spans(ekg), paged=ekg.pages is not None)


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
        return v if d is None or iso_date(d) == v else f"{v} ({iso_date(d)})"
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
                     "iso": iso_date(tl.dates[ev.id]) if ev.id in tl.dates else None},
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
        "sentences": {s.id: {"section": s.section, "fact": s.fact, "page": s.page} for s in ekg.sentences},
    }


# ----------------------------------------------------------------------------- the event graph


@dataclass
class _GraphNode:
    event: DocEvent
    x: float  # top left corner of its box
    y: float
    rank: int | str
    when: str
    classes: str
    tip: str


@dataclass
class _GraphEdge:
    kind: str  # "temporal" or "causal"
    source: str
    target: str
    relation: str
    label: str
    tip: str
    directed: bool
    sx: float  # the curve: a quadratic Bézier from (sx, sy) through the control point (qx, qy) to (ex, ey)
    sy: float
    qx: float
    qy: float
    ex: float
    ey: float
    lx: float  # where its label goes
    ly: float


@dataclass
class _GraphLayout:
    width: int
    height: int
    node_width: int
    node_height: int
    nodes: list[_GraphNode] = field(default_factory=list)
    edges: list[_GraphEdge] = field(default_factory=list)


def _clip(cx: float, cy: float, dx: float, dy: float, hw: float, hh: float) -> tuple[float, float]:
    """The point where a ray from the centre of a (2hw × 2hh) box in direction (dx, dy) leaves it."""
    t = min(hw / abs(dx) if dx else float("inf"), hh / abs(dy) if dy else float("inf"))
    return cx + dx * t, cy + dy * t


def _graph_layout(ekg: DocumentEKG, tl: Timeline) -> _GraphLayout | None:
    """Where the event graph's boxes and curves go (None without events).

    The boxes follow the timeline order row by row, alternate rows running right to left; an edge
    between neighbours is straight, a longer one bows (along a row, upwards), and a second edge
    between the same two events bows apart from the first.
    """
    evs = {ev.id: ev for ev in ekg.graph.events}
    order = [eid for grp in tl.groups for eid in grp]
    if not order:
        return None
    cols = min(GRAPH_COLUMNS, len(order))
    w, h, hg, vg, m, top = 178, 58, 46, 66, 28, 52  # top: room for the arcs over the first row
    rows = (len(order) + cols - 1) // cols
    layout = _GraphLayout(width=2 * m + cols * w + (cols - 1) * hg, height=top + m + rows * h + (rows - 1) * vg,
                          node_width=w, node_height=h)
    centre: dict[str, tuple[float, float]] = {}
    cell: dict[str, tuple[int, int]] = {}
    for i, eid in enumerate(order):
        r, c = divmod(i, cols)
        if r % 2:
            c = cols - 1 - c
        centre[eid] = (m + c * (w + hg) + w / 2, top + r * (h + vg) + h / 2)
        cell[eid] = (r, c)

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
        layout.edges.append(_GraphEdge(
            kind=kind, source=s, target=t, relation=rel, label=rel.lower().replace("_", " "),
            tip=f"{s} {rel} {t} · {kind} · evidence {', '.join(evidence)} · from {origin}",
            directed=rel not in ("SAME_TIME", "OVERLAP"), sx=sx, sy=sy, qx=qx, qy=qy, ex=ex, ey=ey,
            lx=0.25 * sx + 0.5 * qx + 0.25 * ex, ly=0.25 * sy + 0.5 * qy + 0.25 * ey))
    for eid in order:
        ev = evs[eid]
        cx, cy = centre[eid]
        when = ""
        if ev.time.kind == "explicit":
            when = iso_date(tl.dates[eid]) if eid in tl.dates else (ev.time.value or "")
        elif ev.time.kind == "relative":
            when = ev.time.value or ""
        layout.nodes.append(_GraphNode(
            event=ev, x=cx - w / 2, y=cy - h / 2, rank=tl.rank.get(eid, ""), when=when,
            classes="node" + ("" if ev.grounded else " ungrounded") + (" dated" if ev.time.kind == "explicit" else ""),
            tip=f"{eid} · {ev.type} · {ev.verb} · “{ev.trigger}” · rank {tl.rank.get(eid)} · time {_time_text(ev, tl)}"))
    return layout


# ----------------------------------------------------------------------------- the page


def _ungrounded_kept(ekg: DocumentEKG) -> int:
    g = ekg.graph
    return sum(1 for e in g.entities if not e.grounded) + sum(1 for e in g.events if not e.grounded)


def _counts(ekg: DocumentEKG) -> list[tuple[str, object]]:
    """The header's counts: (what, how many)."""
    g = ekg.graph
    kept = _ungrounded_kept(ekg)
    return [
        ("sentences", len(ekg.sentences)), ("in the narrative", sum(1 for s in ekg.sentences if s.in_narrative)),
        ("facts", sum(1 for s in ekg.sentences if s.fact)),
        ("events", len(g.events)), ("entities", len(g.entities)), ("temporal edges", len(g.temporal_edges)),
        ("causal edges", len(g.causal_edges)), ("rejected", len(ekg.rejected)),
        *([("ungrounded, kept", kept)] if kept else []),
        ("merge decisions", len(ekg.merge_log)),
        ("LM calls", ekg.ledger.totals.calls), ("tokens", f"{ekg.ledger.totals.tokens:,}"),
        ("cost", money(ekg.ledger.totals.cost_usd)),
    ]


def view_context(ekg: DocumentEKG) -> dict:
    """What ``view.html.j2`` and its panels (``view_text``, ``view_events``, ``view_timeline``, ``view_graph``,
    ``view_entities``) need to show ``ekg``; ``argus annotate serve``'s page shows its panels from the same."""
    tl = timeline_order(ekg)
    g = ekg.graph
    pos = text_order(ekg)
    stages_by_model: dict[str, list[str]] = {}
    for stage, model in ekg.models.items():
        stages_by_model.setdefault(model, []).append(stage)
    return dict(
        ekg=ekg, g=g, tl=tl,
        counts=_counts(ekg),
        stages_by_model=stages_by_model,
        text_html=render_text(ekg) if ekg.text else Markup(),
        events=sorted(g.events, key=lambda ev: pos[ev.id]),
        events_by_id={ev.id: ev for ev in g.events},
        time_text={ev.id: _time_text(ev, tl) for ev in g.events},
        iso={eid: iso_date(d) for eid, d in tl.dates.items()},
        dated=sum(1 for ev in g.events if ev.time.kind == "explicit"),
        graph=_graph_layout(ekg, tl),
        events_of_entity={ent.id: sum(1 for ev in g.events for p in ev.participants if p.entity == ent.id)
                          for ent in g.entities},
        ungrounded_kept=_ungrounded_kept(ekg),
        models_called=sorted({e.model for e in ekg.ledger.entries}),
        data_script=json_script(view_data(ekg, tl), "ekg-data"),
    )


def render_view(ekg: DocumentEKG) -> str:
    """The whole page (see the module docstring)."""
    return render_page("view.html.j2", **view_context(ekg))


# ----------------------------------------------------------------------------- files


def _safe_name(doc_id: str) -> str:
    return re.sub(r"[^\w.-]+", "_", doc_id).strip("._") or "document"


def view_path_for(ekg: DocumentEKG, folder: str | Path) -> Path:
    """Where the view of ``ekg`` goes in ``folder``: ``<doc_id>.view.html``, the id made a safe file name."""
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
    """The index page of a batch: a row per EKG file of ``folder`` with its counts and cost, linking to its
    view (relative to ``base``, the index's folder, where it can be), and a file that did not load with its
    error; the last row totals the files that loaded."""
    rows: list[tuple[IndexEntry, str | None]] = []
    total = {"events": 0, "entities": 0, "edges": 0, "rejected": 0, "calls": 0, "tokens": 0, "cost": 0.0}
    for en in entries:
        href = None
        if en.ekg is not None and en.view is not None:
            try:
                href = en.view.relative_to(base).as_posix()
            except ValueError:
                href = en.view.resolve().as_uri()
        rows.append((en, href))
        if en.ekg is None:
            continue
        g, t = en.ekg.graph, en.ekg.ledger.totals
        total["events"] += len(g.events)
        total["entities"] += len(g.entities)
        total["edges"] += len(g.temporal_edges) + len(g.causal_edges)
        total["rejected"] += len(en.ekg.rejected)
        total["calls"] += t.calls
        total["tokens"] += t.tokens
        total["cost"] += t.cost_usd
    loaded = sum(1 for en in entries if en.ekg is not None)
    return render_page("index.html.j2", rows=rows, total=total, loaded=loaded, folder=folder)
