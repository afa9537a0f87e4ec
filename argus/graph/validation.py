"""Validation and deterministic repair of Stage 1 / Stage 2 outputs.

``*_errors`` return human-readable problems (fed back to the model on retry); ``repair_*`` make an
output usable when retries are spent and say what they changed. Both work on the LLM-facing models
of ``argus.graph.schema``.
"""

from __future__ import annotations

from argus.graph.schema import CausalEdge, Entity, Event, EventGraph, Participant, TemporalEdge


def stage1_errors(entities: list[Entity], events: list[Event], allowed_sentences: set[str]) -> list[str]:
    errs: list[str] = []
    ent_ids = [e.id for e in entities]
    dup = {i for i in ent_ids if ent_ids.count(i) > 1}
    if dup:
        errs.append(f"duplicate entity ids {sorted(dup)}")
    ev_ids = [e.id for e in events]
    dup = {i for i in ev_ids if ev_ids.count(i) > 1}
    if dup:
        errs.append(f"duplicate event ids {sorted(dup)}")
    known = set(ent_ids)
    for ev in events:
        bad = [s for s in ev.evidence if s not in allowed_sentences]
        if bad:
            errs.append(f"{ev.id} cites {bad} which are not sentences of this chunk")
        if not ev.evidence:
            errs.append(f"{ev.id} has no evidence sentence")
        dangling = [p.entity for p in ev.participants if p.entity not in known]
        if dangling:
            errs.append(f"{ev.id} has participants {dangling} that are not entity ids")
    return errs


def stage2_errors(
    temporal: list[TemporalEdge], causal: list[CausalEdge], event_ids: set[str], allowed_sentences: set[str]
) -> list[str]:
    errs: list[str] = []
    for kind, edges in (("temporal", temporal), ("causal", causal)):
        for e in edges:
            name = f"{kind} edge {e.source}-{e.relation}->{e.target}"
            missing = [x for x in (e.source, e.target) if x not in event_ids]
            if missing:
                errs.append(f"{name} uses {missing} which are not Stage 1 event ids")
            if e.source == e.target:
                errs.append(f"{name} links an event to itself")
            bad = [s for s in e.evidence if s not in allowed_sentences]
            if bad:
                errs.append(f"{name} cites {bad} which are not sentences of this chunk")
            if not e.evidence:
                errs.append(f"{name} has no evidence sentence")
    return errs


def _renumber(items, prefix: str, issues: list[str]) -> dict[str, str]:
    """Make ids unique in order of appearance; returns old→new for first occurrences."""
    seen: set[str] = set()
    mapping: dict[str, str] = {}
    n = 0
    for it in items:
        n += 1
        new = f"{prefix}{n}"
        if it.id in seen:
            issues.append(f"duplicate id {it.id} renamed to {new}")
        else:
            mapping.setdefault(it.id, new)
        seen.add(it.id)
        it.id = new
    return mapping


def repair_stage1(
    entities: list[Entity], events: list[Event], allowed_sentences: set[str]
) -> tuple[list[Entity], list[Event], dict[str, str], list[str]]:
    """Drop what cannot be grounded; renumber ids; never invent content.

    Returns the repaired entities and events, the map old event id → new event id (for remapping
    Stage 2 edges; dropped events are absent), and the list of changes.
    """
    issues: list[str] = []
    entities = [e.model_copy(deep=True) for e in entities]
    events = [e.model_copy(deep=True) for e in events]
    ent_map = _renumber(entities, "E", issues)
    kept: list[Event] = []
    for ev in events:
        bad = [s for s in ev.evidence if s not in allowed_sentences]
        if bad:
            issues.append(f"{ev.id}: dropped evidence ids outside the chunk {bad}")
        ev.evidence = list(dict.fromkeys(s for s in ev.evidence if s in allowed_sentences))
        if not ev.evidence:
            issues.append(f"{ev.id} ({ev.verb}): dropped, no evidence sentence in the chunk")
            continue
        parts: list[Participant] = []
        for p in ev.participants:
            if p.entity in ent_map:
                parts.append(Participant(entity=ent_map[p.entity], role=p.role))
            else:
                issues.append(f"{ev.id}: dropped participant {p.entity} (no such entity)")
        ev.participants = list({(p.entity, p.role): p for p in parts}.values())
        kept.append(ev)
    ev_map = _renumber(kept, "EV", issues)
    for old, new in ev_map.items():
        if old != new:
            issues.append(f"event {old} renumbered to {new}")
    return entities, kept, ev_map, issues


def repair_stage2(
    temporal: list[TemporalEdge],
    causal: list[CausalEdge],
    events: list[Event],
    allowed_sentences: set[str],
) -> tuple[list[TemporalEdge], list[CausalEdge], list[str]]:
    """Drop edges with unknown endpoints or self-loops; ground evidence-less edges in their endpoints."""
    issues: list[str] = []
    by_id = {e.id: e for e in events}
    out_t: list[TemporalEdge] = []
    out_c: list[CausalEdge] = []
    for kind, edges, out in (("temporal", temporal, out_t), ("causal", causal, out_c)):
        seen = set()
        for e in edges:
            name = f"{kind} {e.source}-{e.relation}->{e.target}"
            if e.source not in by_id or e.target not in by_id:
                issues.append(f"dropped {name}: unknown event id")
                continue
            if e.source == e.target:
                issues.append(f"dropped {name}: self-loop")
                continue
            key = (e.source, e.target, e.relation)
            if key in seen:
                issues.append(f"dropped duplicate {name}")
                continue
            seen.add(key)
            evidence = [s for s in e.evidence if s in allowed_sentences]
            if len(evidence) != len(e.evidence):
                issues.append(f"{name}: dropped evidence ids outside the chunk")
            if not evidence:
                evidence = list(dict.fromkeys(by_id[e.source].evidence + by_id[e.target].evidence))
                issues.append(f"{name}: no valid evidence; grounded in its events' sentences {evidence}")
            out.append(e.model_copy(update={"evidence": list(dict.fromkeys(evidence))}))
    return out_t, out_c, issues


def remap_edges(edges: list, ev_map: dict[str, str]) -> list:
    """Rename edge endpoints after ``repair_stage1``; endpoints of dropped events become 'EV0' (dropped later)."""
    return [e.model_copy(update={"source": ev_map.get(e.source, "EV0"), "target": ev_map.get(e.target, "EV0")}) for e in edges]


def repair_graph(graph: EventGraph, allowed_sentences: set[str]) -> tuple[EventGraph, list[str]]:
    """Repair a whole graph (one-shot output): Stage 1 repair, endpoint remap, Stage 2 repair."""
    entities, events, ev_map, issues = repair_stage1(graph.entities, graph.events, allowed_sentences)
    t = remap_edges(graph.temporal_edges, ev_map)
    c = remap_edges(graph.causal_edges, ev_map)
    t, c, more = repair_stage2(t, c, events, allowed_sentences)
    return EventGraph(entities=entities, events=events, temporal_edges=t, causal_edges=c), issues + more
