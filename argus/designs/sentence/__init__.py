"""The sentence-level design: at most one event per fact sentence, by choices, then a graph.

One module per thing the design reads, so that a reader finds each by name:

``types``      event types: the keyword rules and the type head's features;
``triggers``   the word that states the event: the trigger head's features;
``heads``      the encoder heads as stored (``argus/resources/event_heads_minilm.json``) and read;
``entities``   the document's entity list without a model, and the participants a sentence names;
``time``       the time a sentence states;
``temporal``   temporal edges (date order, the temporal head, consistency);
``causal``     causal edges (the causal head);
``pairs``      what the pair heads share; ``occurrences``: one event per occurrence;
``design``     the design itself: routing (sentences and pairs), one batch of sentences, the whole
               document; the pairs the edge heads are unsure of go to the pair-choice program
               (``programs.pair_relations``).

The heads and the learned parts of the heads file are trained above the pipeline (``argus.training``):
a part learns from the design's own graphs of the training complaints, which the whole pipeline makes.

It may import the layers below the designs (``argus.text.documents``, ``argus.text.preprocess``, ``argus.text.words``,
``argus.models.embeddings``), the schema and ``argus.designs.run``; nothing above the designs.
The design's entry points (``extract``, ``extract_batch``, ``routing``, ...) are read from
``design`` on first use, so that the heads and rules load without the pipeline.
"""

from __future__ import annotations

_DESIGN = ("asks_resolver", "entity_list", "extract", "extract_batch", "pair_routing", "routing", "sentence_times",
           "suggestions")


def __getattr__(name: str):
    if name in _DESIGN:
        from argus.designs.sentence import design

        return getattr(design, name)
    raise AttributeError(f"module 'argus.designs.sentence' has no attribute {name!r}")


__all__ = list(_DESIGN)
