"""DSPy programs, one per LLM step. The prompt of each lives in its Signature (what GEPA evolves).

``ArgusPrograms`` bundles the pipeline's programs as one ``dspy.Module`` so that a compiled state
(``save``/``load`` as JSON) covers every step, and optimizers can address each predictor by name
(``stage1.extract.predict``, …).
"""

from __future__ import annotations

import dspy

from programs.chunker import SemanticChunker
from programs.fact_fallback import FactFallback
from programs.judge import EventMatchJudge, GraphJudge, PairwiseJudge
from programs.oneshot import OneShotExtractor
from programs.pair_relations import PairRelationChooser
from programs.qa import DocumentQA
from programs.resolver import CrossChunkResolver
from programs.sentence_events import SentenceEventChooser
from programs.stage1 import Stage1Extractor
from programs.stage2 import Stage2Extractor


class ArgusPrograms(dspy.Module):
    """The LLM steps of the chunked and sentence-level designs, the one-shot baseline and document QA."""

    def __init__(self, max_retries: int = 2):
        super().__init__()
        self.fact_fallback = FactFallback(max_retries=min(1, max_retries))
        self.chunker = SemanticChunker(max_retries=min(1, max_retries))
        self.stage1 = Stage1Extractor(max_retries=max_retries)
        self.stage2 = Stage2Extractor(max_retries=max_retries)
        self.resolver = CrossChunkResolver(max_retries=min(1, max_retries))
        self.sentence_events = SentenceEventChooser(max_retries=min(1, max_retries))
        self.pair_relations = PairRelationChooser(max_retries=min(1, max_retries))
        self.oneshot = OneShotExtractor(max_retries=min(1, max_retries))
        self.qa = DocumentQA(max_retries=min(1, max_retries))

    def forward(self, *args, **kwargs):  # the pipeline drives the steps one by one
        raise TypeError("ArgusPrograms is a container; call its programs through argus.pipeline.ArgusPipeline")


__all__ = [
    "ArgusPrograms",
    "CrossChunkResolver",
    "DocumentQA",
    "EventMatchJudge",
    "GraphJudge",
    "PairwiseJudge",
    "FactFallback",
    "OneShotExtractor",
    "PairRelationChooser",
    "SemanticChunker",
    "SentenceEventChooser",
    "Stage1Extractor",
    "Stage2Extractor",
]
