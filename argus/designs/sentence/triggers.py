"""Trigger words of the sentence design: what the trigger head reads of every word of a sentence,
its contextual vector (the mean of the encoder's token embeddings inside the word) and its verb form
(past tense or participle, auxiliary, first past-tense verb, the word before it)."""

from __future__ import annotations

import numpy as np

from argus.text.words import AUXILIARIES, verb_form, word_spans


def _verb_features(words: list[tuple[str, int, int]]) -> np.ndarray:
    rows, seen = [], 0
    n = max(1, len(words) - 1)
    for i, (w, _, _) in enumerate(words):
        form = verb_form(w)
        lw = w.lower()
        aux = lw in AUXILIARIES
        past = form in ("VBD", "VBN") and not aux
        prev = words[i - 1][0].lower() if i else ""
        rows.append([past, form == "VBG", form in ("VB", "VBZ"), aux, past and seen == 0, min(seen, 3) / 3.0,
                     prev in AUXILIARIES, prev == "to", w[:1].isupper(), i / n, i == 0, bool(form)])
        seen += past
    return np.asarray(rows, dtype="float32").reshape(len(words), 12)


def word_features(texts: list[str], encoder: str = "embedded") -> list[tuple[list[tuple[str, int, int]], np.ndarray]]:
    """(words, feature rows) of each text for the trigger head."""
    from argus.models.embeddings import encode_words

    words = [word_spans(t) for t in texts]
    vectors = encode_words(list(texts), [[(a, b) for _, a, b in ws] for ws in words], encoder)
    return [(ws, np.hstack([v, _verb_features(ws)]).astype("float32")) for ws, v in zip(words, vectors)]


__all__ = ["word_features"]
