"""The one-shot baseline: the whole sentence-labeled FACTS text in one call, one document graph.

Follows the configuration of the ARGUS paper's Appendix B.1 baseline (no chunking, no mini-graphs,
no merging; strict JSON with entities, events, temporal and causal edges; ids E1..En and
EV1..EVn; temporal relations BEFORE / SAME_TIME, causal relations CAUSES / ENABLES), written in
this project's own words. It exists for comparison with the staged pipeline.
"""

from __future__ import annotations

from typing import Literal

import dspy
from pydantic import BaseModel, ConfigDict

from argus.graph.schema import Entity, Event, EventId, SentenceId
from programs.common import FEEDBACK_DESC, Attempted, RetryingPredict


class OneShotTemporalEdge(BaseModel):
    model_config = ConfigDict(extra="forbid")
    source: EventId
    target: EventId
    relation: Literal["BEFORE", "SAME_TIME"]
    evidence: list[SentenceId]


class OneShotCausalEdge(BaseModel):
    model_config = ConfigDict(extra="forbid")
    source: EventId
    target: EventId
    relation: Literal["CAUSES", "ENABLES"]
    evidence: list[SentenceId]


class ExtractDocumentGraph(dspy.Signature):
    """You are a legal event-extraction analyst. The input is one complete legal document whose fact
    sentences are labeled [S<n>]. Produce a single event graph for the whole document, extracting
    whatever you judge to be events. Answer in strict JSON with four lists: entities, events,
    temporal_edges and causal_edges, with consistent ids (entities E1..En, events EV1..EVn). Events
    are the only nodes; entities are attached to events as participants. Temporal relations are
    BEFORE or SAME_TIME; causal relations are CAUSES or ENABLES."""

    facts: str = dspy.InputField(desc="The sentence-labeled FACTS narrative")
    feedback: str = dspy.InputField(desc=FEEDBACK_DESC)
    entities: list[Entity] = dspy.OutputField()
    events: list[Event] = dspy.OutputField()
    temporal_edges: list[OneShotTemporalEdge] = dspy.OutputField()
    causal_edges: list[OneShotCausalEdge] = dspy.OutputField()


class OneShotExtractor(dspy.Module):
    def __init__(self, max_retries: int = 1):
        super().__init__()
        self.extract = RetryingPredict(ExtractDocumentGraph, max_retries=max_retries)

    def forward(self, facts_text: str, sentence_ids: list[str]) -> Attempted:
        from argus.graph.validation import stage1_errors, stage2_errors

        allowed = set(sentence_ids)

        def validate(out):
            errs = stage1_errors(out["entities"], out["events"], allowed)
            events = {e.id for e in out["events"]}
            return errs + stage2_errors(out["temporal_edges"], out["causal_edges"], events, allowed)

        return self.extract(facts=facts_text, validate=validate, choices={"evidence": list(sentence_ids)})
