"""Event types of the sentence design: the floor's keyword rules and the type head's features.

``RULES``            six keyword rules (hire; terminate / fire / discharge; promote; resign; discriminate /
                     harass; tell / say / email / complain / report), tried in order;
``rule_type``        the type of the first rule that fires in a sentence;
``type_features``    what the type head reads: the sentence's embedding and which rules fire.
"""

from __future__ import annotations

import re

import numpy as np

from argus.words import word_spans

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
    from argus.embeddings import encode

    if not texts:
        return np.zeros((0, 0), dtype="float32")
    return np.hstack([encode(list(texts), encoder), _rule_features(texts)]).astype("float32")


__all__ = ["RULES", "rule_type", "type_features"]
