"""Document merging: deterministic merge of the mini-graphs, then LLM-assisted cross-chunk resolution.

Deterministic merge (``merge_minigraphs``):

1. entity ids move into a document namespace; entities that share a lowercased,
   whitespace-normalized name or alias become one entity (``networkx.utils.UnionFind`` over all
   names); the document's entities are the groups in the order of their first member (chunk
   order, then entity order within a chunk), numbered E1, E2, …;
2. participants are remapped; events with the same key — (type, normalized verb, time value,
   participant entity–role pairs, evidence ids) — are one event, accumulating their sources;
3. edges are remapped; AFTER(a, b) is written BEFORE(b, a); self-loops created by merging and
   duplicate edges are dropped, duplicates pooling their evidence.

Cross-chunk resolution (``candidate_pairs`` + ``apply_resolutions``): only pairs of events from
different chunks, ranked by embedding similarity of their descriptions with evidence, top-k per
event; the resolver program's decisions collapse duplicates and add supported relations.
Same-occurrence events are grouped with ``networkx.utils.UnionFind``; which event a group keeps is
our rule, not the union-find's root (networkx picks the heavier set's): pairs are taken in the
resolutions' order, and an accepted pair ``(keep, drop)`` (``keep`` the lower-numbered event) joins
drop's group into keep's, so the joined group keeps the event that keep's group kept. That is
usually the group's lowest-numbered event, but not always: after EV12 + EV35, the pair (EV26, EV35)
keeps EV26.

Every decision is written to the merge log (``MergeDecision``).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from networkx.utils import UnionFind

from argus.graph.schema import (
    DocCausalEdge,
    DocEntity,
    DocEvent,
    DocTemporalEdge,
    DocumentGraph,
    EventTime,
    MergeDecision,
    MiniGraph,
    Participant,
    id_order,
)

_PUNCT_EDGES = re.compile(r"^[\s\"'“”‘’(\[,.;:]+|[\s\"'“”‘’)\],.;:]+$")


def normalize_name(name: str) -> str:
    """Lowercase, collapse whitespace, trim surrounding quotes and punctuation."""
    return _PUNCT_EDGES.sub("", " ".join(name.lower().split()))


def normalize_verb(verb: str) -> str:
    """The surface form events are deduplicated by (merge, and the structural duplicate check):
    lowercase, whitespace collapsed. Matching against gold uses ``metrics.gold.normalize_verb``, a
    lemma-like form, on purpose: there a different wording of the same verb should still match."""
    return " ".join(verb.lower().split())


def _ordered_sids(ids) -> list[str]:
    return sorted(set(ids), key=id_order)


def _event_number(event_id: str) -> int:
    return int(event_id[2:])


def merge_minigraphs(minigraphs: list[MiniGraph]) -> tuple[DocumentGraph, list[MergeDecision]]:
    log: list[MergeDecision] = []

    # ---- entities
    uf = UnionFind()
    records: dict[tuple[str, str], object] = {}
    name_owner: dict[str, tuple[str, str]] = {}
    order: list[tuple[str, str]] = []
    for mg in minigraphs:
        for ent in mg.graph.entities:
            key = (mg.chunk_id, ent.id)
            records[key] = ent
            order.append(key)
            for raw, rule in [(ent.name, "name")] + [(a, "alias") for a in ent.aliases]:
                n = normalize_name(raw)
                if not n:
                    continue
                owner = name_owner.get(n)
                if owner is None:
                    name_owner[n] = key
                elif uf[owner] != uf[key]:
                    uf.union(owner, key)
                    log.append(MergeDecision(
                        action="merge_entities",
                        items=[f"{owner[0]}:{owner[1]}", f"{key[0]}:{key[1]}"],
                        rule=rule,
                        reason=f"shared {rule} {n!r}",
                    ))
    # groups in the order of their first member, members in order: the union-find's root (its
    # choice, by set weight) only names a group here
    groups: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for key in order:
        groups.setdefault(uf[key], []).append(key)
    ent_doc_id: dict[tuple[str, str], str] = {}
    entities: list[DocEntity] = []
    for k, members in enumerate(groups.values(), 1):
        doc_id = f"E{k}"
        ents = [records[m] for m in members]
        name = max((e.name for e in ents), key=lambda s: (len(s.split()), len(s)))
        kind = Counter(e.kind for e in ents).most_common(1)[0][0]
        roles = [e.role for e in ents if e.role != "other"] or ["other"]
        role = Counter(roles).most_common(1)[0][0]
        names = {normalize_name(name)}
        aliases = []
        for e in ents:
            for a in [e.name, *e.aliases]:
                n = normalize_name(a)
                if n and n not in names:
                    names.add(n)
                    aliases.append(a.strip())
        entities.append(DocEntity(
            id=doc_id, name=name, kind=kind, role=role, aliases=aliases,
            sources=[f"{c}:{i}" for c, i in members],
        ))
        for m in members:
            ent_doc_id[m] = doc_id

    # ---- events
    events: list[DocEvent] = []
    by_key: dict[tuple, DocEvent] = {}
    ev_doc_id: dict[tuple[str, str], str] = {}
    for mg in minigraphs:
        for ev in mg.graph.events:
            parts = []
            for p in ev.participants:
                doc_ent = ent_doc_id.get((mg.chunk_id, p.entity))
                if doc_ent is not None:
                    parts.append(Participant(entity=doc_ent, role=p.role))
            parts = list({(p.entity, p.role): p for p in parts}.values())
            key = (
                ev.type,
                normalize_verb(ev.verb),
                (ev.time.value or "").strip().lower(),
                frozenset((p.entity, p.role.lower()) for p in parts),
                frozenset(ev.evidence),
            )
            src = f"{mg.chunk_id}:{ev.id}"
            if key in by_key:
                kept = by_key[key]
                kept.sources.append(src)
                ev_doc_id[(mg.chunk_id, ev.id)] = kept.id
                log.append(MergeDecision(action="merge_events", items=[kept.sources[0], src], rule="dedup_key",
                                         reason=f"same type, verb, time, participants and evidence ({kept.id})"))
                continue
            doc_ev = DocEvent(
                id=f"EV{len(events) + 1}", type=ev.type, verb=ev.verb, trigger=ev.trigger, frame=ev.frame,
                participants=parts, time=ev.time, evidence=_ordered_sids(ev.evidence), confidence=ev.confidence,
                sources=[src],
            )
            events.append(doc_ev)
            by_key[key] = doc_ev
            ev_doc_id[(mg.chunk_id, ev.id)] = doc_ev.id

    graph = DocumentGraph(entities=entities, events=events)

    # ---- edges
    for mg in minigraphs:
        for e in mg.graph.temporal_edges:
            s, t = ev_doc_id.get((mg.chunk_id, e.source)), ev_doc_id.get((mg.chunk_id, e.target))
            if s is None or t is None:
                continue
            _add_edge(graph, "temporal", s, t, e.relation, e.evidence, mg.chunk_id, log)
        for e in mg.graph.causal_edges:
            s, t = ev_doc_id.get((mg.chunk_id, e.source)), ev_doc_id.get((mg.chunk_id, e.target))
            if s is None or t is None:
                continue
            _add_edge(graph, "causal", s, t, e.relation, e.evidence, mg.chunk_id, log)
    return graph, log


def _add_edge(graph: DocumentGraph, kind: str, s: str, t: str, relation: str, evidence, origin: str,
              log: list[MergeDecision]) -> bool:
    """Add an edge with normalization and dedup; returns whether a new edge was created."""
    if kind == "temporal" and relation == "AFTER":
        log.append(MergeDecision(action="normalize_edge", items=[s, t], rule="after_to_before",
                                 reason=f"AFTER({s},{t}) written as BEFORE({t},{s})"))
        s, t, relation = t, s, "BEFORE"
    if s == t:
        log.append(MergeDecision(action="drop_edge", items=[s], rule="self_loop",
                                 reason=f"{kind} {relation} edge became a self-loop after merging"))
        return False
    edges = graph.temporal_edges if kind == "temporal" else graph.causal_edges
    symmetric = relation in ("OVERLAP", "SAME_TIME")
    for e in edges:
        same = (e.source, e.target) == (s, t) or (symmetric and (e.source, e.target) == (t, s))
        if same and e.relation == relation:
            pooled = _ordered_sids(list(e.evidence) + list(evidence))
            if pooled != list(e.evidence):
                e.evidence = pooled
            log.append(MergeDecision(action="drop_edge", items=[s, t], rule="duplicate",
                                     reason=f"duplicate {relation} edge; evidence pooled"))
            return False
    cls = DocTemporalEdge if kind == "temporal" else DocCausalEdge
    edges.append(cls(source=s, target=t, relation=relation, evidence=_ordered_sids(evidence), origin=origin))
    return True


# ----------------------------------------------------------------------------- cross-chunk resolution


def _chunks_of(ev: DocEvent) -> set[str]:
    return {s.split(":", 1)[0] for s in ev.sources}


def describe_event(ev: DocEvent, graph: DocumentGraph, sentence_text: dict[str, str]) -> str:
    """A compact description with the evidence sentences, used for similarity and by the resolver."""
    names = {e.id: e.name for e in graph.entities}
    return event_description(ev.type, ev.verb, ev.trigger, [(names.get(p.entity, p.entity), p.role) for p in ev.participants],
                             ev.time.value or ev.time.kind, [(s, sentence_text.get(s, "")) for s in ev.evidence])


def event_description(etype: str, verb: str, trigger: str, participants: list[tuple[str, str]], when: str,
                      evidence: list[tuple[str, str]]) -> str:
    """The resolver's view of one event, from plain values: what deployment shows it
    (``describe_event``) and what its training examples show it (``optimizers.examples``)."""
    parts = ", ".join(f"{name} ({role})" for name, role in participants) or "none"
    quoted = " ".join(f"[{sid}] {text}" for sid, text in evidence)
    return f"{etype}: {verb} — \"{trigger}\"; participants: {parts}; time: {when}. Evidence: {quoted}"


@dataclass(frozen=True)
class CandidatePair:
    a: str
    b: str
    similarity: float


def candidate_pairs(
    graph: DocumentGraph,
    sentence_text: dict[str, str],
    *,
    top_k: int = 2,
    min_similarity: float = 0.55,
    max_pairs: int = 24,
    encoder: str = "embedded",
) -> list[CandidatePair]:
    """Cross-chunk event pairs ranked by cosine similarity of their descriptions (top-k per event)."""
    evs = graph.events
    if len(evs) < 2 or max_pairs <= 0:
        return []
    from argus.models.embeddings import encode

    emb = encode([describe_event(e, graph, sentence_text) for e in evs], encoder)
    sims = emb @ emb.T
    chunks = [_chunks_of(e) for e in evs]
    chosen: dict[tuple[int, int], float] = {}
    for i in range(len(evs)):
        ranked = sorted(
            (j for j in range(len(evs)) if j != i and not (chunks[i] & chunks[j])),
            key=lambda j: -sims[i, j],
        )
        for j in ranked[:top_k]:
            if sims[i, j] >= min_similarity:
                a, b = min(i, j), max(i, j)
                chosen[(a, b)] = float(sims[i, j])
    best = sorted(chosen.items(), key=lambda kv: -kv[1])[:max_pairs]
    return [CandidatePair(evs[a].id, evs[b].id, round(s, 4)) for (a, b), s in best]


@dataclass(frozen=True)
class Resolution:
    """The resolver's decision on one pair (a before b in document order)."""

    a: str
    b: str
    same_occurrence: bool
    relation: str  # NONE or a temporal / causal relation from a to b
    reason: str
    model: str


def apply_resolutions(graph: DocumentGraph, resolutions: list[Resolution]) -> tuple[DocumentGraph, list[MergeDecision]]:
    """Collapse same-occurrence pairs, remap edges, add accepted cross-chunk relations."""
    log: list[MergeDecision] = []
    graph = graph.model_copy(deep=True)
    by_id = {e.id: e for e in graph.events}
    uf = UnionFind(by_id)
    # by union-find root: the event the group keeps, and the chunks its events come from
    kept = {e.id: e.id for e in graph.events}
    group_chunks = {e.id: _chunks_of(e) for e in graph.events}
    for r in resolutions:
        if r.same_occurrence and r.a in by_id and r.b in by_id:
            keep, drop = sorted([r.a, r.b], key=_event_number)
            ra, rb = uf[keep], uf[drop]
            if ra == rb:
                continue
            # Guards: a restated occurrence keeps its type, and Stage 1 already told apart the
            # events of one chunk, so a merge may not join two events of the same chunk (this
            # also stops chains of "same" answers from collapsing a whole narrative into one event).
            if by_id[keep].type != by_id[drop].type:
                log.append(MergeDecision(action="keep_separate", items=[keep, drop], rule=f"resolver:{r.model}",
                                         reason=f"same occurrence proposed, rejected: types differ ({by_id[keep].type} vs {by_id[drop].type})"))
                continue
            if group_chunks[ra] & group_chunks[rb]:
                log.append(MergeDecision(action="keep_separate", items=[keep, drop], rule=f"resolver:{r.model}",
                                         reason="same occurrence proposed, rejected: the merge would join two events of chunk "
                                                + ", ".join(sorted(group_chunks[ra] & group_chunks[rb]))))
                continue
            uf.union(keep, drop)
            root = uf[keep]
            kept[root], group_chunks[root] = kept[ra], group_chunks[ra] | group_chunks[rb]
            log.append(MergeDecision(action="merge_events", items=[keep, drop], rule=f"resolver:{r.model}", reason=r.reason))
        elif r.a in by_id and r.b in by_id:
            log.append(MergeDecision(action="keep_separate", items=[r.a, r.b], rule=f"resolver:{r.model}",
                                     reason=r.reason or "not the same occurrence"))
    remap = {e.id: kept[uf[e.id]] for e in graph.events}
    merged: dict[str, DocEvent] = {}
    for ev in graph.events:
        root = remap[ev.id]
        if root not in merged:
            merged[root] = by_id[root]
        if root != ev.id:
            target = merged[root]
            target.evidence = _ordered_sids(target.evidence + ev.evidence)
            target.sources = target.sources + [s for s in ev.sources if s not in target.sources]
            seen = {(p.entity, p.role) for p in target.participants}
            target.participants = target.participants + [p for p in ev.participants if (p.entity, p.role) not in seen]
            if target.time.kind == "unknown" and ev.time.kind != "unknown":
                target.time = EventTime(kind=ev.time.kind, value=ev.time.value)
    new = DocumentGraph(entities=graph.entities, events=[e for e in graph.events if remap[e.id] == e.id])
    for e in graph.temporal_edges:
        _add_edge(new, "temporal", remap[e.source], remap[e.target], e.relation, e.evidence, e.origin, log)
    for e in graph.causal_edges:
        _add_edge(new, "causal", remap[e.source], remap[e.target], e.relation, e.evidence, e.origin, log)
    events_now = {e.id: e for e in new.events}
    for r in resolutions:
        if r.same_occurrence or r.relation == "NONE":
            continue
        a, b = remap.get(r.a), remap.get(r.b)
        if a is None or b is None or a == b:
            continue
        linked = any({e.source, e.target} == {a, b} for e in new.temporal_edges + new.causal_edges)
        if linked:
            log.append(MergeDecision(action="keep_separate", items=[a, b], rule=f"resolver:{r.model}",
                                     reason=f"{r.relation} proposed but the pair is already linked"))
            continue
        kind = "causal" if r.relation in ("CAUSES", "ENABLES", "PREVENTS") else "temporal"
        evidence = events_now[a].evidence + events_now[b].evidence
        if _add_edge(new, kind, a, b, r.relation, evidence, "resolver", log):
            log.append(MergeDecision(action="add_edge", items=[a, b], rule=f"resolver:{r.model}",
                                     reason=f"{r.relation}: {r.reason}"))
    return new, log


def merge_same_occurrences(graph: DocumentGraph, pairs, log: list[MergeDecision]) -> DocumentGraph:
    """``graph`` with each (earlier, later, probability) pair of the same-occurrence head joined: the
    later event's evidence, sources and participants pooled into the earlier one (its type, verb and
    trigger kept; its time where it had none); edges remapped."""
    by_id = {e.id: e for e in graph.events}
    uf = UnionFind(by_id)
    for a, b, p in sorted(pairs, key=lambda x: _event_number(x[1])):
        if a in by_id and b in by_id and uf[a] != uf[b]:
            keep, drop = sorted([uf[a], uf[b]], key=_event_number)
            uf.union(keep, drop)
            log.append(MergeDecision(action="merge_events", items=[a, b], rule="same_occurrence_head",
                                     reason=f"one occurrence stated in two sentences (probability {p:.2f})"))
    if not pairs:
        return graph
    root_of = {e.id: min((x for x in by_id if uf[x] == uf[e.id]), key=_event_number) for e in graph.events}
    graph = graph.model_copy(deep=True)
    by_id = {e.id: e for e in graph.events}
    for ev in graph.events:
        root = root_of[ev.id]
        if root == ev.id:
            continue
        target = by_id[root]
        target.evidence = _ordered_sids(target.evidence + ev.evidence)
        target.sources = target.sources + [s for s in ev.sources if s not in target.sources]
        seen = {p.entity for p in target.participants}
        target.participants = target.participants + [p for p in ev.participants if p.entity not in seen]
        if target.time.kind == "unknown" and ev.time.kind != "unknown":
            target.time = EventTime(kind=ev.time.kind, value=ev.time.value)
    new = DocumentGraph(entities=graph.entities, events=[e for e in graph.events if root_of[e.id] == e.id])
    for e in graph.temporal_edges:
        _add_edge(new, "temporal", root_of[e.source], root_of[e.target], e.relation, e.evidence, e.origin, log)
    for e in graph.causal_edges:
        _add_edge(new, "causal", root_of[e.source], root_of[e.target], e.relation, e.evidence, e.origin, log)
    return new


def add_head_edges(graph: DocumentGraph, kind: str, edges, log: list[MergeDecision]) -> int:
    """Add (source, target, relation, probability) ``kind`` ("temporal" or "causal") edges drawn by
    the sentence design's pair heads, origin ``heads``, with both events' sentences as evidence; an
    edge already drawn is not doubled. Returns how many were added."""
    evidence = {e.id: list(e.evidence) for e in graph.events}
    added = 0
    for s, t, relation, p in edges:
        if s not in evidence or t not in evidence:
            continue
        if _add_edge(graph, kind, s, t, relation, evidence[s] + evidence[t], "heads", log):
            log.append(MergeDecision(action="add_edge", items=[s, t], rule=f"{kind}_head",
                                     reason=f"{relation}: the {kind} head's probability {p:.2f}"))
            added += 1
    return added


def add_date_edges(graph: DocumentGraph, edges, log: list[MergeDecision]) -> int:
    """Add (source, target, relation, evidence) temporal edges read from explicit dates
    (``argus.designs.sentence.temporal.date_edges``), origin ``dates``; a relation Stage 2 already drew is
    not doubled. Returns how many were added."""
    added = 0
    for s, t, relation, evidence in edges:
        if _add_edge(graph, "temporal", s, t, relation, evidence, "dates", log):
            log.append(MergeDecision(action="add_edge", items=[s, t], rule="dates",
                                     reason=f"{relation}: both events state explicit dates"))
            added += 1
    return added
