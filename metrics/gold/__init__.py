"""Scoring a predicted Event Knowledge Graph against the gold graph of an annotated complaint.

What is here (all pure functions; every result has ``.as_dict()`` and a readable ``feedback``):

- ``load_gold``: a ``gold.json`` (or its folder) as a ``GoldDocument`` (``document``).
- ``sentence_alignment``: predicted sentence id -> gold sentence ids, through character spans
  (``alignment``).
- ``to_gold_space``: a ``DocumentEKG``'s graph with its evidence translated into gold sentence ids
  (``views``; names and verbs are compared in the forms of ``normalize``).
- ``match_graphs``: REGen-style tiered matching (``exact``, ``relaxed``, optional ``llm``) of
  entities, events, temporal and causal edges, with precision / recall / F1 per tier
  (``matching``, ``edges``, ``scores``, ``feedback``).
- ``fact_scores``: Fact / Non-Fact classification scores over the gold sentences (``facts``).
- ``merge_stats``: what the document merge did (ARGUS Table 5: Pre-Ev, Post-Ev, Loss, Pre-En,
  Post-En) (``merge``).
- ``score_document``: all of it as one flat row for a pandas DataFrame; ``gold_component``: gold
  agreement as one optimizer component (``report``).
- ``gold_problems``: what in a ``gold.json`` breaks the SPEC's rules (``validate``).
- ``types_of_matched``: how many predicted events have their gold event's type, under the relaxed alignment
  and under one blind to type (``types``).

Each module's docstring states its conventions; each is tested in ``tests/test_gold_metrics.py``.
"""

from metrics.gold.alignment import MIN_SPAN_OVERLAP, sentence_alignment
from metrics.gold.common import MAX_FEEDBACK_LINES
from metrics.gold.document import GoldDocument, GoldSentence, load_gold
from metrics.gold.facts import FactPRF, FactScores, fact_scores
from metrics.gold.matching import TIERS, EventJudge, match_graphs
from metrics.gold.merge import MergeStats, merge_stats
from metrics.gold.normalize import VERB_GROUPS, normalize_entity_name, normalize_verb, verbs_compatible
from metrics.gold.report import gold_component, score_document
from metrics.gold.scores import PRF, GoldScores, TierScores
from metrics.gold.types import TypeCounts, types_of_matched
from metrics.gold.validate import SECTION_KINDS, gold_problems
from metrics.gold.views import EdgeView, EntityView, EventView, GraphView, describe_event_for_match, graph_view, to_gold_space

__all__ = [
    "GoldSentence", "GoldDocument", "load_gold", "sentence_alignment", "EntityView", "EventView",
    "EdgeView", "GraphView", "graph_view", "to_gold_space", "describe_event_for_match", "PRF",
    "TierScores", "GoldScores", "match_graphs", "FactPRF", "FactScores", "fact_scores", "MergeStats",
    "merge_stats", "score_document", "gold_component", "normalize_entity_name", "normalize_verb",
    "verbs_compatible", "VERB_GROUPS", "MIN_SPAN_OVERLAP", "MAX_FEEDBACK_LINES", "TIERS", "EventJudge",
    "gold_problems", "SECTION_KINDS", "TypeCounts", "types_of_matched",
]
