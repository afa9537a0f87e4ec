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
                     of event sentences right against 47.4 % for the head alone (docs/figures.md);
``TriggerTypes``     the trigger's type model, the ``types`` part's ``model`` where the heads file has one
                     (``argus.training.types`` fits it on the gold events of the training complaints): a
                     multinomial logistic model that reads the chosen trigger in its sentence, not the sentence
                     alone: the trigger's lemma and word, the lemmas around it, the sentence's lemmas
                     (``trigger_context``), the trigger's contextual vector, the sentence's embedding and the
                     keyword rules. Where the part has no model (a heads file of an earlier release),
                     ``lexicon_type`` decides as before.
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


#: what the trigger's type model reads (stored with it; a model of other features is refused)
TRIGGER_TYPE_FEATURES = "trigger-context+word-vector+sentence+rules/1"
#: the weight of the sentence's bag of lemmas beside the trigger's own features
BAG_WEIGHT = 0.3
#: how many words on each side of the trigger are read
CONTEXT_WORDS = 3
#: the type head's weight beside the trigger's model: log P_model(t) + HEAD_WEIGHT · log P_head(t), so that a
#: trigger the model reads poorly (a word no gold event uses) keeps the type its sentence states
HEAD_WEIGHT = 0.5
#: the dense block's scale beside the sparse features (cross-validated by complaint: 2 reads 0.719 of the
#: gold events' types right against 0.706 at 1)
DENSE_SCALE = 2.0


def trigger_context(text: str, start: int) -> dict[str, float]:
    """The sparse features of the trigger word at ``start`` in ``text``: its lemma and form, the lemmas
    ``CONTEXT_WORDS`` words on each side (by place and as a window), the lemma with the next word's, and
    the sentence's lemmas weighted ``BAG_WEIGHT``."""
    words = word_spans(text)
    k = next((i for i, (_, a, b) in enumerate(words) if a <= start < b), None)
    out: dict[str, float] = {f"bag={lemma(w)}": BAG_WEIGHT for w, _, _ in words}
    if k is None:
        return out
    w = words[k][0]
    lw = lemma(w)
    out[f"lemma={lw}"] = 1.0
    out[f"word={w.lower()}"] = 1.0
    for off in range(1, CONTEXT_WORDS + 1):
        if k + off < len(words):
            nxt = lemma(words[k + off][0])
            out[f"next{off}={nxt}"] = 1.0
            out[f"after={nxt}"] = 1.0
        if k - off >= 0:
            prv = lemma(words[k - off][0])
            out[f"prev{off}={prv}"] = 1.0
            out[f"before={prv}"] = 1.0
    if k + 1 < len(words):
        out[f"lemma+next={lw}_{lemma(words[k + 1][0])}"] = 1.0
    return out


def context_entries(contexts: list[dict[str, float]], vocabulary: dict[str, int]
                    ) -> tuple[list[int], list[int], list[float]]:
    """(row, column, value) of every sparse feature of ``contexts`` (``trigger_context``, one per trigger) that
    ``vocabulary`` (feature → column) holds: the sparse block the trigger type model is trained and read on."""
    rows, cols, vals = [], [], []
    for i, ctx in enumerate(contexts):
        for name, v in ctx.items():
            j = vocabulary.get(name)
            if j is not None:
                rows.append(i)
                cols.append(j)
                vals.append(v)
    return rows, cols, vals


def trigger_dense(texts: list[str], spans: list[tuple[int, int]], encoder: str = "embedded") -> np.ndarray:
    """The dense features of each trigger: its contextual vector (L2-normalized), the sentence's embedding
    and the keyword rules, scaled ``DENSE_SCALE``. The vectors come from the sentence's one pass through the encoder, which the
    heads' reading already made."""
    from argus.models.embeddings import PASSES

    if not texts:
        return np.zeros((0, 0), dtype="float32")
    passes = PASSES.get(list(texts), encoder)  # the texts' one pass (the heads' reading made it): no new forward
    words = np.stack([p.word_vectors([sp])[0] for p, sp in zip(passes, spans)])
    words = words / np.clip(np.linalg.norm(words, axis=1, keepdims=True), 1e-6, None)
    dense = np.hstack([words, np.stack([p.vector for p in passes]), _rule_features(texts)])
    return (DENSE_SCALE * dense).astype("float32")


class TriggerTypes:
    """The trigger's type model of a heads file's ``types`` part (``model``), as stored."""

    def __init__(self, data: dict):
        from argus.errors import ConfigError

        if data.get("features") != TRIGGER_TYPE_FEATURES:
            raise ConfigError(f"the heads file's trigger type model reads {data.get('features')!r}, this code "
                              f"{TRIGGER_TYPE_FEATURES!r}: retrain the heads ('argus train-events') with this version")
        self.classes: list[str] = list(data["classes"])
        self.vocabulary: dict[str, int] = dict(data["vocabulary"])
        self.dense_dim = int(data["dense_dim"])
        w = np.asarray(data["weights"], dtype="float64")
        if w.shape != (len(self.classes), len(self.vocabulary) + self.dense_dim) \
                or len(data["bias"]) != len(self.classes):
            raise ConfigError("the heads file's trigger type model is corrupt: its weights do not match its "
                              "classes, vocabulary and dimensions")
        self.weights, self.bias = w, np.asarray(data["bias"], dtype="float64")
        self.head_weight = float(data.get("head_weight", HEAD_WEIGHT))

    def probs(self, texts: list[str], spans: list[tuple[int, int]], encoder: str = "embedded") -> np.ndarray:
        if not texts:
            return np.zeros((0, len(self.classes)))
        dense = trigger_dense(texts, spans, encoder)
        if dense.shape[1] != self.dense_dim:
            from argus.errors import ConfigError

            raise ConfigError(f"the heads file's trigger type model reads {self.dense_dim} dense features, encoder "
                              f"{encoder!r} gives {dense.shape[1]}: retrain the heads with this encoder")
        n = len(self.vocabulary)
        z = dense @ self.weights[:, n:].T + self.bias
        rows, cols, vals = context_entries([trigger_context(t, a) for t, (a, _) in zip(texts, spans)], self.vocabulary)
        np.add.at(z, np.asarray(rows, dtype=int), self.weights[:, cols].T * np.asarray(vals)[:, None])
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)

    def decide(self, texts: list[str], spans: list[tuple[int, int]], encoder: str = "embedded"
               ) -> list[tuple[str, float]]:
        """(type, its probability) of each trigger (``spans``: the trigger word's span in its text)."""
        return [(self.classes[int(p.argmax())], float(p.max())) for p in self.probs(texts, spans, encoder)]

    def weighed(self, texts: list[str], spans: list[tuple[int, int]], type_probs: list[dict[str, float]],
                encoder: str = "embedded") -> list[tuple[str, float]]:
        """(type, its share) of each trigger under log P_model + ``head_weight`` · log P_head, the head's
        distribution ``type_probs[i]`` taken over event types (``none`` left out; an empty one weighs nothing)."""
        out = []
        for row, head in zip(self.probs(texts, spans, encoder), type_probs):
            score = np.log(row + 1e-9)
            total = sum(v for k, v in head.items() if k != "none")
            if self.head_weight and total > 0:
                score = score + self.head_weight * np.log(np.asarray([head.get(c, 0.0) / total for c in self.classes]) + 1e-9)
            share = np.exp(score - score.max())
            share /= share.sum()
            k = int(share.argmax())
            out.append((self.classes[k], float(share[k])))
        return out


def trigger_types(part: dict | None, texts: list[str], picks: list[tuple[str, int, int]],
                  type_probs: list[dict[str, float]], encoder: str = "embedded") -> list[tuple[str, float]]:
    """(type, confidence) of each chosen trigger ``picks[i]`` = (word, start, end) in ``texts[i]``: the
    ``types`` part's trigger type model weighed with the type head's distribution ``type_probs[i]``
    (``TriggerTypes.weighed``) where the part has the model, else that distribution weighed with the
    lexicon (``lexicon_type``)."""
    model = _model(part)
    if model is None:
        return [lexicon_type(p, w, part) for p, (w, _, _) in zip(type_probs, picks)]
    return model.weighed(texts, [(a, b) for _, a, b in picks], type_probs, encoder)


def _model(part: dict | None) -> TriggerTypes | None:
    """The part's model, built once per stored dict (a heads file is read once per process)."""
    data = (part or {}).get("model")
    if not data:
        return None
    found = _MODELS.get(id(data))
    if found is None or found[0] is not data:  # (an id reused by another dict after the first was freed)
        if len(_MODELS) >= 8:
            _MODELS.clear()
        found = _MODELS[id(data)] = (data, TriggerTypes(data))
    return found[1]


_MODELS: dict[int, tuple[dict, TriggerTypes]] = {}


__all__ = ["BAG_WEIGHT", "CONTEXT_WORDS", "DENSE_SCALE", "HEAD_WEIGHT", "LEXICON_SMOOTHING", "LEXICON_WEIGHT", "RULES", "TRIGGER_TYPE_FEATURES",
           "TriggerTypes", "context_entries", "lexicon_type", "rule_type", "trigger_context", "trigger_dense", "trigger_types",
           "type_features"]
