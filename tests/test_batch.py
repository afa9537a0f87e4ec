"""Batches: bad documents are recorded and skipped, good ones are written, nothing is lost."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from argus.runs.batch import release_free_memory, run_batch
from argus.cli import app
from tests.conftest import DEMO


def test_batch_goes_on_past_bad_documents(scripted_pipeline, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "a_empty.txt").write_text("")
    (src / "b_scan.txt").write_bytes(b"%PDF-1.4 binary")
    (src / "c_good.txt").write_text(DEMO.read_text())
    (src / "d_huge.txt").write_text("FACTS\n\n1.     Acme fired Jo.\n" * 60_000)
    out = tmp_path / "out"
    scripted_pipeline.config.limits.max_document_chars = 1_000_000
    report = run_batch([src], out, pipeline=scripted_pipeline)
    assert [r["doc_id"] for r in report.rows] == ["c_good"]
    errors = {json.loads(line)["source"].rsplit("/", 1)[-1]: json.loads(line)["message"]
              for line in (out / "errors.jsonl").read_text().splitlines()}
    assert set(errors) == {"a_empty.txt", "b_scan.txt", "d_huge.txt"}
    assert "empty" in errors["a_empty.txt"] and "PDF" in errors["b_scan.txt"] and "max_document_chars" in errors["d_huge.txt"]
    ekg = json.loads((out / "c_good.ekg.json").read_text())
    assert ekg["graph"]["events"] and (out / "c_good.graphml").exists()
    ledger_lines = (out / "ledger.jsonl").read_text().splitlines()
    assert len(ledger_lines) == ekg["ledger"]["totals"]["calls"]
    assert (out / "summary.csv").read_text().startswith("doc_id,status,")


def test_an_unexpected_error_in_one_document_does_not_abort_the_batch(scripted_pipeline, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.txt").write_text(DEMO.read_text())
    (src / "b.txt").write_text(DEMO.read_text())
    real = scripted_pipeline.extract

    def flaky(item, ledger=None):
        if item.doc_id == "a":
            raise ValueError("a defect triggered by this document")
        return real(item, ledger=ledger)

    scripted_pipeline.extract = flaky
    report = run_batch([src], tmp_path / "out", pipeline=scripted_pipeline)
    assert [r["doc_id"] for r in report.rows] == ["b"]
    err = json.loads((tmp_path / "out" / "errors.jsonl").read_text().splitlines()[0])
    assert err["doc_id"] == "a" and err["error"] == "ValueError" and "defect" in err["message"]


def test_a_failure_while_writing_leaves_the_previous_output_intact(scripted_pipeline, tmp_path, monkeypatch):
    out = tmp_path / "out"
    run_batch([DEMO], out, pipeline=scripted_pipeline)
    target = next(out.glob("*.ekg.json"))
    before = target.read_text()

    import argus.io

    def broken_fsync(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(argus.io.os, "fsync", broken_fsync)  # every atomic write fails at its fsync
    report = run_batch([DEMO], out, pipeline=scripted_pipeline)  # the document fails, the batch does not raise
    monkeypatch.undo()
    assert not report.ok and report.errors[0]["error"] == "OSError", report.errors
    assert "No space left" in report.errors[0]["message"] and "--skip-existing" in report.errors[0]["message"]
    assert target.read_text() == before
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]


def test_skip_existing(scripted_pipeline, tmp_path):
    out = tmp_path / "out"
    run_batch([DEMO], out, pipeline=scripted_pipeline)
    calls = len(scripted_pipeline.engine.calls)
    report = run_batch([DEMO], out, pipeline=scripted_pipeline, skip_existing=True)
    assert len(scripted_pipeline.engine.calls) == calls and not report.rows


def test_a_resumed_run_keeps_the_summary_rows_of_the_run_before(scripted_pipeline, tmp_path):
    """summary.csv after a run and a --skip-existing run that does the rest: one row per document, the first
    run's rows kept; a document done again replaces its row (no duplicate)."""
    import csv

    src = tmp_path / "in"
    src.mkdir()
    for name in ("a", "b", "c"):
        (src / f"{name}.txt").write_text(DEMO.read_text())
    out = tmp_path / "out"
    run_batch([src / "a.txt"], out, pipeline=scripted_pipeline)
    run_batch([src], out, pipeline=scripted_pipeline, skip_existing=True)
    rows = list(csv.DictReader((out / "summary.csv").open()))
    assert [r["doc_id"] for r in rows] == ["a", "b", "c"] and {r["status"] for r in rows} == {"ok"}
    run_batch([src / "b.txt"], out, pipeline=scripted_pipeline)  # b again, not skipped
    assert sorted(r["doc_id"] for r in csv.DictReader((out / "summary.csv").open())) == ["a", "b", "c"]


def test_cli_errors_are_actionable(tmp_path):
    runner = CliRunner()
    res = runner.invoke(app, ["extract", str(DEMO), "--out", str(tmp_path), "--fact-mode", "sometimes"])
    assert res.exit_code == 2 and "invalid configuration" in res.output
    missing = ["extract", str(DEMO), "--out", str(tmp_path), "--model", "local/does/not/exist.gguf"]
    res = runner.invoke(app, missing)  # the preflight finds it before the first document
    assert res.exit_code == 2 and "no GGUF file" in res.output and not any(tmp_path.iterdir())
    res = runner.invoke(app, [*missing, "--no-preflight"])  # without it, the document fails
    assert res.exit_code == 1
    assert "no GGUF file" in (tmp_path / "errors.jsonl").read_text()
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("lm:\n  stages:\n    stage9: {model: x}\n")
    res = runner.invoke(app, ["extract", str(DEMO), "--config", str(cfg)])
    assert res.exit_code == 2 and "stage9" in res.output


def test_schema_command(tmp_path):
    res = CliRunner().invoke(app, ["schema", "--out", str(tmp_path / "s.json")])
    assert res.exit_code == 0
    schema = json.loads((tmp_path / "s.json").read_text())
    assert schema["title"] == "DocumentEKG" and "graph" in schema["properties"]


@pytest.mark.parametrize("doc_id", ["../outside", "a/b", "..", ""])
def test_a_document_id_that_is_not_a_file_name_writes_nothing(scripted_pipeline, tmp_path, doc_id):
    """An EKG whose id would leave the output folder (a library caller's id; the CLI derives ids from file
    names) is refused with an InputError; nothing is written in or beside the folder."""
    from argus.errors import InputError
    from argus.output.export import write_ekg

    out = tmp_path / "out"
    run_batch([DEMO], out, pipeline=scripted_pipeline)
    ekg = scripted_pipeline.extract(DEMO).model_copy(update={"doc_id": doc_id})
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    with pytest.raises(InputError, match="cannot be a file name"):
        write_ekg(ekg, out)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def _rss_mib() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="reads the resident memory from /proc (Linux)")
def test_release_free_memory_hands_the_freed_heap_back():
    """What a batch calls after each document: memory freed inside the C heap (below a block still in
    use, where glibc does not trim by itself) leaves the resident set. Without it, a long batch's RSS
    grew by about 10 MiB per document (bench/soak.py)."""
    import ctypes.util

    if "libc.so" not in (ctypes.util.find_library("c") or ""):
        pytest.skip("not glibc")
    blocks = [bytearray(100_000) for _ in range(2000)]  # 200 MB in the heap (below the mmap threshold)
    keep = blocks[-1]  # the heap's last block stays in use: the freed ones below it are not trimmed by free()
    del blocks
    before = _rss_mib()
    release_free_memory()
    after = _rss_mib()
    assert before - after > 150, (before, after)
    assert keep


def test_a_batch_releases_free_memory_after_each_document(scripted_pipeline, tmp_path, monkeypatch):
    import argus.runs.batch as batch

    calls = []
    monkeypatch.setattr(batch, "release_free_memory", lambda: calls.append(len(list((tmp_path / "out").glob("*.ekg.json")))))
    src = tmp_path / "in"
    src.mkdir()
    for name in ("a", "b", "c"):
        (src / f"{name}.txt").write_text(DEMO.read_text())
    run_batch([src], tmp_path / "out", pipeline=scripted_pipeline)
    assert calls == [1, 2, 3]  # once per document, after it is written


def test_an_interrupt_while_the_temporary_file_is_made_leaves_none(tmp_path, monkeypatch):
    """SIGTERM (a KeyboardInterrupt in the main thread) landing just after the temporary file was created,
    before the write began: the file is removed (CI saw a Ray batch leave '.d4.graphml.….tmp')."""
    import argus.io as io

    real = os.open

    def open_then_interrupt(*args, **kwargs):
        real(*args, **kwargs)
        raise KeyboardInterrupt("SIGTERM")

    monkeypatch.setattr(io.os, "open", open_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        io.write_text_atomic(tmp_path / "d4.graphml", "<graphml/>")
    monkeypatch.setattr(io.os, "open", real)
    assert list(tmp_path.iterdir()) == []
    io.write_text_atomic(tmp_path / "d4.graphml", "<graphml/>")
    assert [p.name for p in tmp_path.iterdir()] == ["d4.graphml"]
