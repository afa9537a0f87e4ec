"""Training the ``types`` part of the heads file: the trigger lexicon the sentence design weighs with the
type head (``argus.designs.sentence.types.lexicon_type``)."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

from argus.designs.sentence.types import LEXICON_SMOOTHING, LEXICON_WEIGHT
from argus.text.words import lemma, word_spans


def fit_part(folders: list[Path], heads=None) -> dict:
    """The trigger lexicon of the gold events of ``folders``: lemma of the trigger's first word →
    type → count, and each type's count over all events."""
    from metrics.gold import load_gold

    lex: dict[str, Counter] = defaultdict(Counter)
    prior: Counter = Counter()
    for folder in folders:
        for e in load_gold(folder).graph.events:
            words = word_spans(e.trigger)
            if words:
                lex[lemma(words[0][0])][e.type] += 1
                prior[e.type] += 1
    return {"lexicon": {k: dict(v) for k, v in sorted(lex.items())}, "prior": dict(prior),
            "weight": LEXICON_WEIGHT, "smoothing": LEXICON_SMOOTHING}


__all__ = ["fit_part"]
