"""Short free-text answers: SQuAD v1.1 normalization and token F1.

Shared by the QA experiment (:mod:`argus.experiments.qa`) and the GEPA QA metric
(:func:`metrics.gepa.qa_metric`); depends on the standard library only.
"""

from __future__ import annotations

import re
import string
from collections import Counter

__all__ = ["normalize_answer", "token_f1"]

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCT = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD v1.1 normalization: lowercase, drop ASCII punctuation, drop articles, squeeze spaces."""
    text = str(text).lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def token_f1(prediction: str, reference: str) -> float:
    """SQuAD-style token F1 between a predicted and a reference answer.

    Both are normalized (:func:`normalize_answer`) and split on whitespace; the overlap is the
    size of the multiset intersection of the tokens; precision = overlap / #prediction tokens,
    recall = overlap / #reference tokens, F1 their harmonic mean. Two empty answers score 1.0;
    one empty answer scores 0.0.
    """
    pred = normalize_answer(prediction).split()
    ref = normalize_answer(reference).split()
    if not pred or not ref:
        return float(pred == ref)
    overlap = sum((Counter(pred) & Counter(ref)).values())
    if overlap == 0:
        return 0.0
    precision = overlap / len(pred)
    recall = overlap / len(ref)
    return 2 * precision * recall / (precision + recall)
