"""What the document merge did to the chunks' mini-graphs (ARGUS Table 5: Pre-Ev, Post-Ev, Loss,
Pre-En, Post-En, and a little more): ``merge_stats`` counts the events, entities and edges before
and after, the items merged into another, lost (named by no document node) or unsourced, and the
merge log's actions, with feedback naming each lost item."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from argus.graph.schema import DocumentEKG
from metrics.gold.common import cap_lines


@dataclass
class MergeStats:
    pre_events: int = 0  # events over all mini-graphs
    post_events: int = 0  # document events
    merged_events: int = 0  # mini-graph events absorbed into another (a document event with k sources absorbs k-1)
    lost_events: int = 0  # mini-graph events named in no document event's sources
    unsourced_events: int = 0  # document events naming no existing mini-graph event
    pre_entities: int = 0
    post_entities: int = 0
    merged_entities: int = 0
    lost_entities: int = 0
    unsourced_entities: int = 0
    pre_temporal: int = 0
    post_temporal: int = 0
    pre_causal: int = 0
    post_causal: int = 0
    resolver_edges: int = 0  # document edges whose origin is the resolver
    log_actions: dict[str, int] = field(default_factory=dict)
    lost_event_ids: list[str] = field(default_factory=list)  # 'C2:EV3'
    lost_entity_ids: list[str] = field(default_factory=list)
    feedback: str = ""

    @property
    def event_loss(self) -> int:
        """Table 5 'Loss': the reduction pre -> post (merges and losses together)."""
        return self.pre_events - self.post_events

    @property
    def event_loss_rate(self) -> float:
        return self.event_loss / self.pre_events if self.pre_events else 0.0

    @property
    def entity_loss(self) -> int:
        return self.pre_entities - self.post_entities

    def as_dict(self) -> dict:
        d = asdict(self)
        d.update(event_loss=self.event_loss, event_loss_rate=self.event_loss_rate, entity_loss=self.entity_loss)
        return d


def _source_stats(items: dict[str, str], nodes: list) -> tuple[int, int, int, list[str]]:
    """(merged, lost, unsourced, lost ids) for mini-graph items {'C1:EV2': label} and document nodes."""
    named: set[str] = set()
    merged = unsourced = 0
    for n in nodes:
        valid = [s for s in dict.fromkeys(n.sources) if s in items]
        if not valid:
            unsourced += 1
        merged += max(0, len(valid) - 1)
        named.update(valid)
    lost = [k for k in items if k not in named]
    return merged, len(lost), unsourced, lost


def merge_stats(ekg: DocumentEKG) -> MergeStats:
    """What the document merge did to the mini-graphs (ARGUS Table 5 and a little more)."""
    ev_items: dict[str, str] = {}
    en_items: dict[str, str] = {}
    pre_t = pre_c = 0
    for mg in ekg.minigraphs:
        for e in mg.graph.events:
            ev_items[f"{mg.chunk_id}:{e.id}"] = f"{e.type} '{e.trigger or e.verb}'"
        for e in mg.graph.entities:
            en_items[f"{mg.chunk_id}:{e.id}"] = f"'{e.name}'"
        pre_t += len(mg.graph.temporal_edges)
        pre_c += len(mg.graph.causal_edges)
    g = ekg.graph
    m_ev, l_ev, u_ev, lost_ev = _source_stats(ev_items, g.events)
    m_en, l_en, u_en, lost_en = _source_stats(en_items, g.entities)
    actions: dict[str, int] = {}
    for d in ekg.merge_log:
        actions[d.action] = actions.get(d.action, 0) + 1
    st = MergeStats(
        pre_events=len(ev_items), post_events=len(g.events), merged_events=m_ev, lost_events=l_ev, unsourced_events=u_ev,
        pre_entities=len(en_items), post_entities=len(g.entities), merged_entities=m_en, lost_entities=l_en,
        unsourced_entities=u_en, pre_temporal=pre_t, post_temporal=len(g.temporal_edges), pre_causal=pre_c,
        post_causal=len(g.causal_edges),
        resolver_edges=sum(1 for e in [*g.temporal_edges, *g.causal_edges] if e.origin == "resolver"),
        log_actions=actions, lost_event_ids=lost_ev, lost_entity_ids=lost_en,
    )
    lines = [
        f"events {st.pre_events} → {st.post_events} (merged {m_ev}, lost {l_ev}, unsourced {u_ev}); "
        f"entities {st.pre_entities} → {st.post_entities} (merged {m_en}, lost {l_en}, unsourced {u_en}); "
        f"temporal edges {pre_t} → {st.post_temporal}, causal edges {pre_c} → {st.post_causal} ({st.resolver_edges} from the resolver)",
    ]
    lines += [f"lost event {k} ({ev_items[k]})" for k in lost_ev]
    lines += [f"lost entity {k} ({en_items[k]})" for k in lost_en]
    lines += [f"document event {e.id} names no mini-graph event (sources {e.sources or '∅'})"
              for e in g.events if not any(s in ev_items for s in e.sources)]
    st.feedback = cap_lines(lines)
    return st
