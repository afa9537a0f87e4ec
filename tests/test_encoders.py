"""The encoder runtimes and the single pass: each sentence goes through the encoder once per run, and the
ONNX export of the embedded MiniLM gives the eager model's vectors without importing torch."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import numpy as np
import pytest

from argus.errors import ConfigError
from argus.models import embeddings
from argus.models.encoders import ModelFolder, choose_runtime
from tests.conftest import PROJECT

TEXTS = ["Plaintiff was hired as a line supervisor in March 2019.",
         "On June 3, 2020, her manager told her that she was too old for the role.",
         "She was terminated two weeks after filing a complaint with human resources.",
         "Defendant's stated reason — poor performance — was pretext."]


@pytest.fixture
def fresh(monkeypatch):
    """Passes and in-memory encodings of this test only, on ONNX Runtime fp32 unless the test sets another."""
    monkeypatch.setattr(embeddings, "PASSES", embeddings._Passes())
    monkeypatch.setattr(embeddings, "_RECENT", embeddings.OrderedDict())
    monkeypatch.setattr(embeddings, "_RUNTIME_ASKED", ["onnx"])
    store = embeddings.EmbeddingStore()
    monkeypatch.setattr(embeddings, "EMBEDDING_STORE", store)
    return embeddings


def _spans(text: str) -> list[tuple[int, int]]:
    from argus.text.words import word_spans

    return [(a, b) for _, a, b in word_spans(text)]


def test_auto_is_openvino_bf16_on_a_bf16_cpu_onnx_elsewhere_and_torch_for_a_hub_name(monkeypatch):
    from argus.models import encoders

    monkeypatch.setattr(embeddings, "_RUNTIME_ASKED", ["auto"])
    embeddings._runtime_of.cache_clear()
    assert embeddings.runtime_of("embedded") == ("openvino-bf16" if encoders.native_bf16() else "onnx")
    assert embeddings.runtime_of("intfloat/e5-small-v2") == "torch"
    monkeypatch.setattr(encoders, "native_bf16", lambda: False)
    assert choose_runtime("auto", embeddings._folder("embedded")) == "onnx"
    monkeypatch.setattr(encoders, "native_bf16", lambda: True)
    assert choose_runtime("auto", embeddings._folder("embedded")) == "openvino-bf16"
    assert choose_runtime("onnx", None) == "torch"  # a hub model: torch, with a warning
    with pytest.raises(ConfigError, match="must be one of"):
        choose_runtime("tensorrt", None)
    with pytest.raises(ConfigError, match="must be one of"):
        embeddings.configure_encoder_runtime("fast")


def test_the_embedded_folder_is_read_without_sentence_transformers():
    folder = ModelFolder.read(embeddings.resolve_encoder_path("embedded"), "embedded@x")
    assert folder is not None
    assert (folder.pooling, folder.dim, folder.max_seq_length) == ("mean", 384, 256)


def test_onnx_gives_the_eager_models_sentence_and_word_vectors(fresh):
    onnx_vectors = fresh.encode(TEXTS)
    onnx_words = fresh.encode_words(TEXTS, [_spans(t) for t in TEXTS])
    fresh.configure_encoder_runtime("torch")
    torch_vectors = fresh.encode(TEXTS)
    torch_words = fresh.encode_words(TEXTS, [_spans(t) for t in TEXTS])
    # and what sentence-transformers' own encode gives
    reference = fresh.load_encoder("embedded").encode(TEXTS, normalize_embeddings=True)
    assert onnx_vectors.shape == (4, 384) and onnx_vectors.dtype == np.float32
    assert np.abs(onnx_vectors - reference).max() < 1e-5
    assert np.abs(torch_vectors - reference).max() < 1e-5
    for a, b, t in zip(onnx_words, torch_words, TEXTS):
        assert a.shape == (len(_spans(t)), 384)
        assert np.abs(a - b).max() < 1e-4
        assert np.all(np.abs(a).sum(axis=1) > 0)  # every word has tokens inside it


@pytest.mark.parametrize("runtime", ["openvino", "openvino-bf16", "onnx-int8"])
def test_the_other_runtimes_give_close_vectors(fresh, runtime):
    """OpenVINO fp32 gives the fp32 vectors; bfloat16 and int8 come close (the graphs they give are measured
    by bench/encoders.py)."""
    reference = fresh.encode(TEXTS)
    fresh.configure_encoder_runtime(runtime)
    got = fresh.encode(TEXTS)
    cosine = (got * reference).sum(axis=1).min()
    assert cosine > {"openvino": 1 - 1e-6, "openvino-bf16": 0.999, "onnx-int8": 0.9}[runtime]
    words = fresh.encode_words(TEXTS, [_spans(t) for t in TEXTS])
    assert [w.shape for w in words] == [(len(_spans(t)), 384) for t in TEXTS]


def test_openvino_is_given_few_shapes_and_the_padding_changes_no_vector(fresh):
    """OpenVINO compiles kernels per input shape and keeps them: batches are padded to 120 shapes at most
    (rows to a power of two, width in steps), so a corpus's memory stops growing once they are met; the
    padding (rows of the empty text, masked tokens) leaves every text's vectors as they were."""
    import random

    from argus.models.encoders import build_runtime, shape_bucket

    shapes = {shape_bucket(r, w, 256) for r in range(1, 33) for w in range(2, 257)}
    assert len(shapes) <= 120
    assert all(shape_bucket(r, w, 256)[0] >= r and shape_bucket(r, w, 256)[1] >= w
               for r in range(1, 33) for w in range(2, 257))
    assert shape_bucket(3, 300, 256) == (4, 300)  # never cut below the batch's own width

    rt = build_runtime("openvino", fresh._folder("embedded"), None)
    fed = []
    run = rt._run
    rt._run = lambda feed: (fed.append(feed["input_ids"].shape), run(feed))[1]
    rng = random.Random(0)
    words = " ".join(TEXTS).split()
    texts = [" ".join(rng.sample(words, rng.randint(1, 40))) for _ in range(60)]
    calls = [texts[k: k + n] for k, n in zip(range(0, 60, 4), [rng.randint(1, 4) for _ in range(15)])]
    padded = [p for c in calls for p in rt.forward(c)]
    padded_shapes, fed[:] = set(fed), []
    rt.buckets = False
    plain = [p for c in calls for p in rt.forward(c)]
    assert padded_shapes <= shapes and len(padded_shapes) < len(set(fed))
    for a, b in zip(padded, plain):
        assert float(a.vector @ b.vector) > 1 - 1e-5
        assert a.tokens.shape == b.tokens.shape and a.offsets == b.offsets
        assert np.abs(a.tokens - b.tokens).max() < 1e-3


def test_each_text_goes_through_the_encoder_once(fresh):
    fresh.encode(TEXTS)
    assert fresh.PASSES.forwarded == len(TEXTS)
    fresh.encode(TEXTS[1:3])  # a subset, as the type head asks after the fact gate
    fresh.encode_words(TEXTS[1:3], [_spans(t) for t in TEXTS[1:3]])  # the trigger head's word vectors
    fresh.encode(TEXTS + TEXTS)  # a list with repeats
    assert fresh.PASSES.forwarded == len(TEXTS)
    fresh.encode(["A sentence the run has not seen."])
    assert fresh.PASSES.forwarded == len(TEXTS) + 1


def test_requests_at_once_are_served_together_and_share_their_texts(fresh):
    """Eight threads (documents of a batch) ask at once for overlapping lists: every text is encoded once and
    every caller gets its own texts' vectors, in its own order."""
    lists = [[TEXTS[(i + k) % 4] + f" ({k % 3})" for k in range(5)] for i in range(8)]
    got: dict[int, np.ndarray] = {}
    start = threading.Barrier(8)

    def ask(i):
        start.wait()
        got[i] = fresh.encode(lists[i])

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    distinct = {t for ts in lists for t in ts}
    assert fresh.PASSES.forwarded == len(distinct)
    fresh.configure_encoder_runtime("torch")
    for i, texts in enumerate(lists):
        assert np.abs(got[i] - fresh.encode(texts)).max() < 1e-5


def test_an_encoder_failure_reaches_every_caller_and_the_next_call_works(fresh, monkeypatch):
    runtime = fresh.encoder_runtime("embedded")
    real = runtime.forward
    calls = []

    def broken(texts):
        calls.append(texts)
        raise RuntimeError("the runtime fell over")

    monkeypatch.setattr(runtime, "forward", broken)
    with pytest.raises(RuntimeError, match="fell over"):
        fresh.encode(TEXTS)
    monkeypatch.setattr(runtime, "forward", real)
    assert fresh.encode(TEXTS).shape == (4, 384)


def test_the_memo_keeps_within_its_byte_budget(fresh, monkeypatch):
    monkeypatch.setattr(fresh._Passes, "MAX_BYTES", 60_000)
    for i in range(30):
        fresh.encode_words([f"Sentence number {i} tells of a meeting on May {i % 28 + 1}, 2021."], [[(0, 8)]])
    assert fresh.PASSES._bytes <= 60_000 + 40 * 384 * 4
    assert 0 < len(fresh.PASSES._memo) < 30


COLD = """
import json, sys
sys.argv = ["argus", "extract", sys.argv[1], "--out", sys.argv[2], "--cache-dir", sys.argv[3], "--no-graphml"]
from argus.cli import main  # as the argus command imports it: the argument list is known
try:
    main()
except SystemExit as stop:
    assert not stop.code, stop.code
heavy = ["torch", "transformers", "sentence_transformers", "sklearn", "scipy", "pandas"]
print(json.dumps({m: m in sys.modules for m in heavy}))
"""


def test_extracting_a_complaint_imports_no_torch(tmp_path, dev_dirs):
    """``argus extract`` with the offline default: the encoder runs on ONNX Runtime, and neither torch nor
    the libraries around it are imported."""
    doc = dev_dirs[0] / "complaint.txt"
    done = subprocess.run([sys.executable, "-c", COLD, str(doc), str(tmp_path / "out"), str(tmp_path / "cache")],
                          cwd=PROJECT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == dict.fromkeys(
        ["torch", "transformers", "sentence_transformers", "sklearn", "scipy", "pandas"], False)
    assert list((tmp_path / "out").glob("*.ekg.json"))


def test_the_default_runtime_extracts_complaints_close_to_fp32(tmp_path, dev_dirs, monkeypatch):
    """``auto`` (bfloat16 on a CPU that has it, fp32 elsewhere) against fp32 ONNX Runtime on three annotated
    complaints: valid EKGs with the same sentences kept as facts, at most one event of a complaint read
    differently (its type, trigger or sentence), and relaxed event F1 within 0.01 on average. On the 16 dev
    complaints with this release's heads, 15 graphs are the same and one differs by one event's type (F1
    −0.022); bench/encoders.py measures the paired difference over all of them."""
    import statistics

    from argus.config import ArgusConfig
    from argus.pipeline import ArgusPipeline
    from metrics.gold import load_gold, score_document

    docs = dev_dirs[:3]
    got: dict[str, list] = {}
    monkeypatch.delenv("ARGUS_ENCODER_RUNTIME", raising=False)  # (the suite's fp32 would stand in for auto)
    for runtime in ("onnx", "auto"):
        monkeypatch.setattr(embeddings, "PASSES", embeddings._Passes())
        monkeypatch.setattr(embeddings, "_RECENT", embeddings.OrderedDict())
        pipe = ArgusPipeline(ArgusConfig.load(None, {"cache_dir": str(tmp_path / runtime), "encoder.runtime": runtime}))
        for doc in docs:
            ekg = pipe.extract(doc / "complaint.txt")
            got.setdefault(runtime, []).append(
                (ekg, score_document(ekg, load_gold(doc), tiers=("relaxed",))["relaxed_events_f1"]))
        assert embeddings.runtime_of() == ("onnx" if runtime == "onnx" else choose_runtime("auto", embeddings._folder("embedded")))
    monkeypatch.setattr(embeddings, "_RUNTIME_ASKED", ["onnx"])

    def read(ekg):
        return {(tuple(e.evidence), e.type, e.trigger) for e in ekg.graph.events}

    for (fp32, _), (auto, _) in zip(got["onnx"], got["auto"]):
        assert [s.fact for s in fp32.sentences] == [s.fact for s in auto.sentences]
        assert auto.graph.events and len(read(fp32) ^ read(auto)) <= 2, read(fp32) ^ read(auto)  # one event changed
    assert abs(statistics.fmean(f for _, f in got["auto"]) - statistics.fmean(f for _, f in got["onnx"])) <= 0.01


def test_at_exit_the_encoder_thread_finishes_its_forward_and_the_runtimes_close(fresh):
    """A SIGTERM'd batch exits with documents in flight: the encoder thread must not be inside the runtime's
    native code when the interpreter tears down (that aborted the process: exit -6, not 143)."""
    fresh.encode(TEXTS)
    passes = fresh.PASSES
    assert passes._thread.is_alive() and fresh._RUNTIMES
    passes._stop()
    assert not passes._thread.is_alive() and not fresh._RUNTIMES
    fresh.PASSES = fresh._Passes()  # (the fixture restores the module's own)
