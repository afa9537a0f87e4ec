"""Gold scores in the shapes the rest of the project reads: ``score_document`` puts every score
of one document (tiered matching, fact classification, merge statistics) in one flat row for a
DataFrame; ``gold_component`` turns gold agreement into one optimizer component with defects."""

from __future__ import annotations

from typing import Any, Sequence

from argus.graph.schema import DocumentEKG
from metrics.base import Defect, MetricResult
from metrics.gold.document import GoldDocument
from metrics.gold.facts import fact_scores
from metrics.gold.matching import EventJudge, match_graphs
from metrics.gold.merge import merge_stats
from metrics.gold.views import to_gold_space


def score_document(ekg: DocumentEKG, gold: GoldDocument, *, tiers: Sequence[str] = ("exact", "relaxed"),
                   event_judge: EventJudge | None = None) -> dict:
    """A flat row for a DataFrame.

    Keys: ``doc_id``, ``gold_doc_id``, ``method``; ``<tier>_<element>_{p,r,f1}`` (element: entities,
    events, temporal, causal, and temporal_any / causal_any outside the exact tier);
    ``fact_{acc,p,r,f1}`` (whole complaint) and ``fact_facts_{acc,p,r,f1}`` (facts sections only);
    ``merge_<MergeStats field>`` (pre_events, post_events, event_loss, …); ``notes``.
    """
    scores = match_graphs(to_gold_space(ekg, gold), gold, tiers=tiers, event_judge=event_judge)
    row: dict[str, Any] = {"doc_id": ekg.doc_id, "gold_doc_id": gold.doc_id, "method": ekg.method}
    for tier, ts in scores.tiers.items():
        for elem in ("entities", "events", "temporal", "causal", "temporal_any", "causal_any"):
            prf = getattr(ts, elem)
            if prf is None:
                continue
            row[f"{tier}_{elem}_p"] = prf.precision
            row[f"{tier}_{elem}_r"] = prf.recall
            row[f"{tier}_{elem}_f1"] = prf.f1
    fs = fact_scores(ekg, gold)
    for name, prf in (("fact", fs.whole), ("fact_facts", fs.facts_section)):
        row[f"{name}_acc"] = prf.accuracy
        row[f"{name}_p"] = prf.precision
        row[f"{name}_r"] = prf.recall
        row[f"{name}_f1"] = prf.f1
    ms = merge_stats(ekg)
    for k in ("pre_events", "post_events", "event_loss", "merged_events", "lost_events", "pre_entities",
              "post_entities", "entity_loss", "merged_entities", "lost_entities", "pre_temporal", "post_temporal",
              "pre_causal", "post_causal"):
        row[f"merge_{k}"] = getattr(ms, k)
    row["notes"] = "; ".join(scores.notes)
    return row


def gold_component(pred: Any, gold_graph: Any, tier: str = "relaxed") -> MetricResult:
    """Gold agreement as one optimizer component: the mean of ``tier`` event F1 and temporal-edge F1.

    ``pred`` and ``gold_graph`` use the same sentence ids (e.g. a chunk's gold mini-graph in the
    pipeline's numbering). Returns a ``metrics.base.MetricResult`` whose defects are the missed,
    spurious and partial matches named by :func:`match_graphs`' feedback.
    """
    scores = match_graphs(pred, gold_graph, tiers=(tier,))
    t = scores[tier]
    components = {"events_f1": t.events.f1, "temporal_f1": t.temporal.f1, "entities_f1": t.entities.f1, "causal_f1": t.causal.f1}
    score = (t.events.f1 + t.temporal.f1) / 2
    defects = []
    for line in scores.feedback.splitlines()[len(scores.tiers):]:
        stage = "stage2" if ("edge" in line or "temporal" in line or "causal" in line) else "stage1"
        defects.append(Defect("gold", stage, line))
    return MetricResult("gold", score, components, defects, list(scores.notes))
