"""Event types of the sentence design: the floor's keyword rules and the type head's features.

``RULES``            six keyword rules (hire; terminate / fire / discharge; promote; resign; discriminate /
                     harass; tell / say / email / complain / report), tried in order;
``rule_type``        the type of the first rule that fires in a sentence;
``type_features``    what the type head reads: the sentence's embedding and which rules fire;
the lexicon          the ``types`` part of the heads file (trained by ``argus.training.types``): how often
                     each trigger lemma states each type among the gold events of the training complaints;
``lexicon_type``     the type head's distribution weighed with the lexicon's for the chosen trigger:
                     log P_head(t) + ``LEXICON_WEIGHT`` · log P_lexicon(t | lemma), the lexicon smoothed
                     toward the types' overall frequency. Cross-validated by complaint, this reads 55.0 %
                     of event sentences right against 47.4 % for the head alone (docs/figures.md).
"""

from __future__ import annotations

import math
import re

import numpy as np

from argus.text.words import lemma, word_spans

#: the lexicon's weight beside the type head (``lexicon_type``)
LEXICON_WEIGHT = 0.5
#: pseudo-counts of the types' overall frequency added to each lemma's counts
LEXICON_SMOOTHING = 0.5

#: (event type, pattern on a word, base verb) in the order they are tried
RULES: tuple[tuple[str, re.Pattern, str | None], ...] = (
    ("hiring", re.compile(r"^(?:hire[ds]?|hiring|rehire[ds]?)$", re.I), "hire"),
    ("termination", re.compile(r"^(?:terminat\w*|fire[ds]?|firing|discharg\w*)$", re.I), None),
    ("promotion", re.compile(r"^promot\w*$", re.I), "promote"),
    ("resignation", re.compile(r"^resign\w*$", re.I), "resign"),
    ("harassment", re.compile(r"^(?:discriminat\w*|harass\w*)$", re.I), None),
    ("communication", re.compile(r"^(?:told|tell\w*|said|says?|email\w*|e-mail\w*|complain\w*|report\w*)$", re.I), None),
)


def rule_type(text: str) -> tuple[str, str] | None:
    """(event type, the word that fired) of the first keyword rule that fires in ``text``, or None."""
    words = word_spans(text)
    for rtype, pattern, _ in RULES:
        hit = next((w for w, _, _ in words if pattern.match(w)), None)
        if hit:
            return rtype, hit
    return None


def _rule_features(texts: list[str]) -> np.ndarray:
    rows = []
    for t in texts:
        words = [w for w, _, _ in word_spans(t)]
        rows.append([float(any(p.match(w) for w in words)) for _, p, _ in RULES])
    return np.asarray(rows, dtype="float32").reshape(len(texts), len(RULES))


def type_features(texts: list[str], encoder: str = "embedded") -> np.ndarray:
    from argus.models.embeddings import encode

    if not texts:
        return np.zeros((0, 0), dtype="float32")
    return np.hstack([encode(list(texts), encoder), _rule_features(texts)]).astype("float32")


def lexicon_type(type_probs: dict[str, float], word: str, part: dict | None) -> tuple[str, float]:
    """(type, its share) of the type head's distribution ``type_probs`` (``none`` left out) weighed with
    the lexicon's for the trigger ``word``; the head's own choice where the lemma is not in the lexicon."""
    probs = {k: v for k, v in type_probs.items() if k != "none"}
    total = sum(probs.values()) or 1.0
    counts = (part or {}).get("lexicon", {}).get(lemma(word)) if word else None
    if not counts:
        k = max(probs, key=probs.get) if probs else "other"
        return k, probs.get(k, 0.0) / total
    prior = part.get("prior", {})
    n_prior = sum(prior.values()) or 1
    n = sum(counts.values())
    alpha, weight = float(part.get("smoothing", LEXICON_SMOOTHING)), float(part.get("weight", LEXICON_WEIGHT))
    score = {}
    for k, v in probs.items():
        q = (counts.get(k, 0) + alpha * prior.get(k, 0) / n_prior) / (n + alpha)
        score[k] = math.log(v / total + 1e-9) + weight * math.log(q + 1e-9)
    z = max(score.values())
    norm = sum(math.exp(s - z) for s in score.values())
    k = max(score, key=score.get)
    return k, math.exp(score[k] - z) / norm


__all__ = ["LEXICON_SMOOTHING", "LEXICON_WEIGHT", "RULES", "lexicon_type", "rule_type", "type_features"]
