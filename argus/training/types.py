"""Training the ``types`` part of the heads file: the trigger lexicon the sentence design weighs with the
type head (``argus.designs.sentence.types.lexicon_type``) and the trigger's type model
(``argus.designs.sentence.types.TriggerTypes``), both from the gold events of the training complaints."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from argus.designs.sentence.types import (HEAD_WEIGHT, LEXICON_SMOOTHING, LEXICON_WEIGHT, TRIGGER_TYPE_FEATURES,
                                          context_entries, trigger_context, trigger_dense)
from argus.text.words import lemma, word_spans

#: the trigger type model's regularisation (inverse strength), chosen by complaint-grouped cross-validation
#: over the 78 annotated complaints (bench/types.py --trigger-model)
C_TRIGGER_TYPES = 1.0
#: a sparse feature is kept where it occurs in at least this many training events
MIN_COUNT = 2


def gold_triggers(folders: list[Path], golds: list | None = None) -> list[tuple[str, tuple[int, int], str]]:
    """(sentence text, the trigger's first word's span in it, type) of every gold event of ``folders`` (or of
    the ``GoldDocument``s ``golds`` already read) whose trigger is found in its first evidence sentence."""
    from metrics.gold import load_gold

    out = []
    for gold in golds if golds is not None else (load_gold(f) for f in folders):
        text = {s.id: s.text for s in gold.sentences}
        for e in gold.graph.events:
            sentence = text.get(e.evidence[0], "") if e.evidence else ""
            at = sentence.lower().find(e.trigger.lower()) if e.trigger else -1
            words = word_spans(e.trigger)
            if at < 0 or not words:
                continue
            out.append((sentence, (at + words[0][1], at + words[0][2]), e.type))
    return out


def fit_trigger_types(rows: list[tuple[str, tuple[int, int], str]], encoder: str = "embedded",
                      c: float = C_TRIGGER_TYPES, min_count: int = MIN_COUNT) -> dict | None:
    """The trigger type model (``TriggerTypes``'s stored form) fitted on ``rows`` (``gold_triggers``);
    None with fewer than two types among them."""
    from scipy import sparse
    from sklearn.linear_model import LogisticRegression

    from argus.training.pairs import softmax_weights

    labels = [t for _, _, t in rows]
    if len(set(labels)) < 2:
        return None
    contexts = [trigger_context(text, span[0]) for text, span, _ in rows]
    counts = Counter(name for ctx in contexts for name in ctx)
    vocabulary = {name: j for j, name in enumerate(sorted(n for n, k in counts.items() if k >= min_count))}
    r, cidx, vals = context_entries(contexts, vocabulary)
    sp = sparse.csr_matrix((vals, (r, cidx)), shape=(len(rows), len(vocabulary)))
    dense = trigger_dense([t for t, _, _ in rows], [s for _, s, _ in rows], encoder)
    x = sparse.hstack([sp, sparse.csr_matrix(dense)]).tocsr()
    model = LogisticRegression(C=c, max_iter=5000).fit(x, np.asarray(labels))
    w, b = softmax_weights(model)
    return {"features": TRIGGER_TYPE_FEATURES, "classes": [str(k) for k in model.classes_],
            "vocabulary": vocabulary, "dense_dim": int(dense.shape[1]),
            "weights": [[round(float(v), 5) for v in row] for row in w], "bias": [round(float(v), 5) for v in b],
            "head_weight": HEAD_WEIGHT,
            "meta": {"C": c, "min_count": min_count, "events": len(rows)}}


def fit_part(folders: list[Path], heads=None) -> dict:
    """The ``types`` part: the trigger lexicon of the gold events of ``folders`` (lemma of the trigger's first
    word → type → count, and each type's count over all events), and the trigger type model fitted on the
    same events with ``heads``'s encoder."""
    from metrics.gold import load_gold

    golds = [load_gold(folder) for folder in folders]
    lex: dict[str, Counter] = defaultdict(Counter)
    prior: Counter = Counter()
    for gold in golds:
        for e in gold.graph.events:
            words = word_spans(e.trigger)
            if words:
                lex[lemma(words[0][0])][e.type] += 1
                prior[e.type] += 1
    part = {"lexicon": {k: dict(v) for k, v in sorted(lex.items())}, "prior": dict(prior),
            "weight": LEXICON_WEIGHT, "smoothing": LEXICON_SMOOTHING}
    model = fit_trigger_types(gold_triggers(folders, golds), getattr(heads, "encoder", "embedded"))
    if model is not None:
        part["model"] = model
    return part


__all__ = ["C_TRIGGER_TYPES", "MIN_COUNT", "fit_part", "fit_trigger_types", "gold_triggers"]
