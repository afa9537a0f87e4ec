"""The feedback text of a match against gold, written for a person auditing a graph and for GEPA's
reflection model: one score line per tier, the notes, then (in the loosest tier scored) the
spurious events, the events matched only outside the exact tier and why, the missed gold events,
the entity defects and the spurious and missed edges, each list capped."""

from __future__ import annotations

from metrics.gold.common import cap_lines, format_ids
from metrics.gold.scores import GoldScores
from metrics.gold.views import EventView, GraphView


def _event_label(e: EventView, view: GraphView, side: str) -> str:
    trig = e.trigger or e.verb
    if len(trig) > 40:
        trig = trig[:40] + "…"
    if side == "gold" or not view.translated:
        where = format_ids(e.evidence)
    else:
        where = f"{format_ids(e.source_evidence)} → gold {format_ids(e.evidence)}"
    return f"{e.id} ({e.type} '{trig}', {where})"


def _section(lines: list[str], items: list[str], what: str, limit: int = 8) -> None:
    """Append at most ``limit`` items of one kind, then '… and N more <what>'."""
    if len(items) > limit:
        lines.extend(items[: limit - 1])
        lines.append(f"… and {len(items) - (limit - 1)} more {what}")
    else:
        lines.extend(items)


def match_feedback(scores: GoldScores, pv: GraphView, gv: GraphView, details: dict) -> str:
    """The feedback of ``scores`` (predicted view ``pv`` against gold view ``gv``); ``details`` holds,
    per tier, the spurious and missed edge lines (``edge_spurious``, ``edge_missed``)."""
    lines: list[str] = []
    for t, s in scores.tiers.items():
        lines.append(f"{t}: entities {s.entities.short()}; events {s.events.short()}; "
                     f"temporal {s.temporal.short()}; causal {s.causal.short()}")
    lines.extend(scores.notes)
    if not scores.tiers:
        return cap_lines(lines)
    loose = list(scores.tiers)[-1]
    ts = scores.tiers[loose]
    matched_g = set(ts.event_alignment.values())
    missed = [f"missed gold {_event_label(g, gv, 'gold')}" for g in gv.events if g.id not in matched_g]
    spurious = [f"spurious {_event_label(p, pv, 'pred')}" for p in pv.events if p.id not in ts.event_alignment]
    near: list[str] = []
    if "exact" in scores.tiers and loose != "exact":
        exact = scores.tiers["exact"].event_alignment
        gidx = {e.id: e for e in gv.events}
        for p in pv.events:
            gid = ts.event_alignment.get(p.id)
            if gid is None or exact.get(p.id) == gid:
                continue
            g = gidx[gid]
            diffs = []
            if p.type != g.type:
                diffs.append(f"type {p.type}≠{g.type}")
            if p.norm_verb != g.norm_verb:
                diffs.append(f"verb '{p.verb}'≠'{g.verb}'")
            if p.evidence != g.evidence:
                diffs.append(f"evidence {format_ids(p.evidence)} vs {format_ids(g.evidence)}")
            if not diffs:
                diffs.append("the exact tier aligned it elsewhere")
            near.append(f"{p.id} ≈ gold {gid} only in the {loose} tier: {'; '.join(diffs)}")
    matched_ge = set(ts.entity_alignment.values())
    ents = [f"missed gold entity {g.id} '{g.name}' ({g.kind}, {g.role})" for g in gv.entities if g.id not in matched_ge]
    ents += [f"spurious entity {p.id} '{p.name}' ({p.kind}, {p.role})" for p in pv.entities if p.id not in ts.entity_alignment]
    edge_spur, edge_miss = details[loose]["edge_spurious"], details[loose]["edge_missed"]
    _section(lines, spurious, "spurious events")
    _section(lines, near, "partial matches")
    _section(lines, missed, "missed gold events")
    _section(lines, ents, "entity defects", 6)
    _section(lines, edge_spur, "spurious edges", 6)
    _section(lines, edge_miss, "missed gold edges", 6)
    return cap_lines(lines)

