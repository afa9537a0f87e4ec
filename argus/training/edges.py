"""Training the ``edges`` part of the heads file: the temporal and the causal head
(``argus.designs.sentence.temporal``, ``argus.designs.sentence.causal``), trained together on the design's
own graphs of the training complaints (``argus.training.pairs.training_graphs``)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from argus.designs.sentence import causal, temporal
from argus.designs.sentence.pairs import PairHead
from argus.training.pairs import fit_head, labelled_rows, training_graphs


def _temporal_label(g, ga: str, gb: str) -> str:
    rel = g.temporal.get((ga, gb))
    if rel:
        return rel
    return "AFTER" if g.temporal.get((gb, ga)) == "BEFORE" else "none"


def fit_temporal(graphs) -> PairHead:
    """The temporal head, trained on the design's aligned graphs of the training complaints."""
    x, y, groups, targets = labelled_rows(graphs, temporal.candidates, temporal.features, _temporal_label)
    return fit_head(x, y, groups, temporal.feature_names(), per_target=targets)


def type_pair_rates(graphs) -> dict[str, float]:
    """P(causal edge | the types of a candidate pair), smoothed toward the overall rate, from the
    aligned training graphs."""
    pos, tot = Counter(), Counter()
    for g in graphs:
        for a, b in causal.candidates(g.events):
            key = f"{a.type}>{b.type}"
            tot[key] += 1
            ga, gb = g.alignment.get(a.id), g.alignment.get(b.id)
            pos[key] += bool(ga and gb and (ga, gb) in g.causal)
    base = sum(pos.values()) / max(1, sum(tot.values()))
    k = 20.0
    return {key: round((pos[key] + k * base) / (tot[key] + k), 5) for key in tot}


def fit_causal(graphs) -> PairHead:
    """The causal head, trained on the design's aligned graphs of the training complaints."""
    rates = type_pair_rates(graphs)
    x, y, groups, targets = labelled_rows(graphs, causal.candidates,
                                          lambda a, b, evs: causal.features(a, b, rates, evs),
                                          lambda g, ga, gb: g.causal.get((ga, gb), "none"))
    head = fit_head(x, y, groups, causal.feature_names(), per_target=targets)
    head.meta["type_pair_rates"] = rates
    return head


def fit_part(folders: list[Path], heads) -> dict | None:
    """The ``edges`` part of the heads file: the temporal and the causal head, trained on the design's
    graphs of ``folders`` (the training complaints) with ``heads``."""
    graphs = training_graphs(folders, heads)
    if len(graphs) < 2:
        return None
    return {"temporal": fit_temporal(graphs).to_json(), "causal": fit_causal(graphs).to_json()}


def edges_on_gold(pipe, gold) -> dict[str, float]:
    """The edges the design draws when it is given the gold events of ``gold`` (a ``GoldDocument``), scored
    against the gold edges: what the edge sieves (dates, cues, the pair heads of ``pipe``'s heads file) are
    worth apart from finding the events. The same function draws them as in a document
    (``argus.designs.sentence.design.document_edges``), on the gold events and sentences, each sentence read
    by ``pipe``'s heads. Returns temporal and causal F1 (precision, recall) and the gold edge counts."""
    from argus.designs.sentence.design import document_edges
    from argus.graph.schema import DocEvent, DocumentGraph
    from metrics.gold.edges import score_edges
    from metrics.gold.views import graph_view

    graph = DocumentGraph(events=[DocEvent(**e.model_dump()) for e in gold.graph.events])
    cited = [s for s in gold.sentences if any(s.id in e.evidence for e in gold.graph.events)]
    readings = dict(zip([s.id for s in cited], pipe.event_heads.read([s.text for s in cited])))
    document_edges(pipe, gold, graph, [], readings)
    pred, want = graph_view(graph), graph_view(gold.graph)
    same = {e.id: e.id for e in gold.graph.events}
    out: dict[str, float] = {}
    for kind in ("temporal", "causal"):
        got, _, _, _ = score_edges(getattr(pred, f"{kind}_edges"), getattr(want, f"{kind}_edges"), same, kind, agnostic=False)
        out.update({f"{kind}_f1": got.f1, f"{kind}_precision": got.precision, f"{kind}_recall": got.recall,
                    f"{kind}_gold": len(getattr(want, f"{kind}_edges"))})
    return out


__all__ = ["edges_on_gold", "fit_causal", "fit_part", "fit_temporal", "type_pair_rates"]
