"""The embedding store: encodings kept beside DSPy's cache, so that a re-run of the same documents loads no
encoder and imports no torch; a store that cannot be read never fails an encoding."""

from __future__ import annotations

import json
import logging
import subprocess
import sys

import numpy as np
import pytest

from argus.models import embeddings
from tests.conftest import PROJECT

TEXTS = ["Plaintiff was hired as a line supervisor in March 2019.",
         "On June 3, 2020, her manager told her that she was too old for the role.",
         "She was terminated two weeks after filing a complaint with human resources."]

ENCODE = """
import json, sys
import numpy as np
from argus.models.embeddings import configure_embedding_store, encode
configure_embedding_store(sys.argv[1])
vectors = encode(json.loads(sys.argv[2]))
np.save(sys.argv[3], vectors)
print(json.dumps({"runtime": "onnxruntime" in sys.modules or "openvino" in sys.modules, "torch": "torch" in sys.modules}))
"""


def _encode_in_a_process(store, out) -> dict:
    done = subprocess.run([sys.executable, "-c", ENCODE, str(store), json.dumps(TEXTS), str(out)], cwd=PROJECT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_second_process_reads_the_encodings_without_loading_the_encoder(tmp_path):
    store = tmp_path / "embeddings"
    first = _encode_in_a_process(store, tmp_path / "first.npy")
    assert first == {"runtime": True, "torch": False}  # computed: the encoder was loaded (no torch)
    again = _encode_in_a_process(store, tmp_path / "again.npy")
    assert again == {"runtime": False, "torch": False}  # read back: no runtime was imported
    a, b = np.load(tmp_path / "first.npy"), np.load(tmp_path / "again.npy")
    assert a.dtype == b.dtype == np.float32 and a.shape == (3, 384)
    assert np.array_equal(a, b)


@pytest.fixture
def fresh_store(tmp_path, monkeypatch):
    """A process-wide store of its own under ``tmp_path``, and the in-memory encodings forgotten."""
    store = embeddings.EmbeddingStore()
    store.configure(tmp_path / "embeddings")
    monkeypatch.setattr(embeddings, "EMBEDDING_STORE", store)
    monkeypatch.setattr(embeddings, "_RECENT", embeddings.OrderedDict())
    return store


def test_an_entry_of_the_wrong_shape_is_recomputed_with_one_warning(fresh_store, monkeypatch, caplog):
    reference = embeddings.encode(TEXTS)
    key = embeddings._key(TEXTS, embeddings.EMBEDDED_ENCODER, 64)
    fresh_store.put(key, np.ones((2, 5), dtype="float32"))  # not what three texts encode to
    monkeypatch.setattr(embeddings, "_RECENT", embeddings.OrderedDict())
    with caplog.at_level(logging.WARNING, logger="argus"):
        found = embeddings.encode(TEXTS)
        embeddings._RECENT.clear()
        embeddings.encode(TEXTS)
    assert np.array_equal(found, reference)
    warnings = [r.getMessage() for r in caplog.records if r.name == "argus"]
    assert len(warnings) == 1 and str(fresh_store.directory) in warnings[0] and "(2, 5)" in warnings[0]


def test_a_corrupt_store_file_never_fails_an_encoding(fresh_store, tmp_path, caplog):
    """The store's SQLite file overwritten with garbage: encodings are computed as without a store."""
    reference = embeddings.encode(TEXTS)
    fresh_store.configure(None)  # closes this process's connection
    db = tmp_path / "embeddings" / "cache.db"
    assert db.exists()
    db.write_bytes(b"this is not a database" * 100)
    for sidecar in db.parent.glob("cache.db-*"):
        sidecar.unlink()
    fresh_store.configure(tmp_path / "embeddings")
    embeddings._RECENT.clear()
    with caplog.at_level(logging.WARNING, logger="argus"):
        again = embeddings.encode(TEXTS)
    assert np.array_equal(again, reference)
    assert [r for r in caplog.records if r.name == "argus" and "embedding store" in r.getMessage()]


def test_the_key_names_the_encoder_and_the_versions_that_compute_it():
    identity = embeddings._encoder_identity("embedded")
    runtime = embeddings.runtime_of("embedded")
    assert identity.startswith("embedded@") and f"|{runtime}|" in identity
    assert ("openvino " if runtime.startswith("openvino") else "onnxruntime ") in identity
    assert embeddings._identity("embedded", "torch") != identity
    assert "sentence-transformers " in embeddings._identity("embedded", "torch")
    assert embeddings._identity("embedded", "onnx-int8") != embeddings._identity("embedded", "onnx")
    assert embeddings._key(TEXTS, "embedded", 64) != embeddings._key(TEXTS, "intfloat/e5-small", 64)
    assert embeddings._key(TEXTS, "embedded", 64) != embeddings._key(TEXTS, "embedded", 32)
    assert embeddings._key(TEXTS, "embedded", 64) == embeddings._key(list(TEXTS), "minilm", 64)
