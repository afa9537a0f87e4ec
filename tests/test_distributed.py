"""The Ray engine writes what the local engine writes; bad inputs and dead workers are error records.

Runs on a local Ray runtime (the machine's CPUs) against the loopback latency server, which answers
every LM call with schema-valid JSON, so actors in other processes call a real HTTP model.
"""

from __future__ import annotations

import csv
import json
import os
import re
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

import argus.runs.distributed as distributed
from argus.runs.batch import DocumentResult, run_batch
from argus.cli import app
from argus.config import ArgusConfig
from argus.runs.distributed import PipelineActor, credential_env, run_batch_ray, worker_env
from argus.errors import ConfigError
from tests.latency_server import LatencyServer
from tests.conftest import DEMO, _split_dirs

try:
    import ray
    import ray.data  # noqa: F401
except ImportError:  # pragma: no cover - CI installs it
    ray = None

needs_ray = pytest.mark.skipif(ray is None, reason="the Ray engine needs ray[data] (pip install 'argus-kg[scale]')")

SECRET = "sk-argus-test-7f3c9e1d-never-in-a-file"
KEY_VAR = "ARGUS_TEST_DISTRIBUTED_KEY"


@pytest.fixture(scope="module")
def server():
    with LatencyServer(latency_s=0.0) as s:
        yield s


@pytest.fixture(scope="module")
def ray_runtime():
    """One local Ray runtime for the tests that use it (run_batch_ray joins it, and leaves it up)."""
    started = not ray.is_initialized()
    if started:
        ray.init(address="local", num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)
    yield Path(ray._private.worker._global_node.get_session_dir_path())
    if started:
        ray.shutdown()


def _config(server, tmp_path, **lm) -> ArgusConfig:
    return ArgusConfig(lm={"default": {"model": "openai/fake", "api_base": server.url,
                                       "structured_output": "json_object_schema", "cache": False, **lm}},
                       facts={"mode": "classifier"}, cache_dir=tmp_path / "cache")


def _inputs(tmp_path: Path) -> list[Path]:
    """The demo complaint, two annotated complaints (or, without the shared data, two renamed copies of
    the demo), an empty file and a missing one."""
    src = tmp_path / "in"
    src.mkdir()
    annotated = [d / "complaint.txt" for d in _split_dirs("dev")[:2]]
    if len(annotated) < 2:
        annotated = []
        for name in ("demo_b", "demo_c"):
            (src / f"{name}.txt").write_text(DEMO.read_text())
            annotated.append(src / f"{name}.txt")
    (src / "empty.txt").write_text("")
    return [DEMO, *annotated, src / "empty.txt", src / "missing.txt"]


def _graph_parts(path: Path) -> dict:
    ekg = json.loads(path.read_text())
    return {k: ekg[k] for k in ("doc_id", "source", "method", "graph", "chunks", "minigraphs", "merge_log", "sentences",
                                "facts_section_found", "warnings")}


def _summary(out: Path) -> list[dict]:
    with (out / "summary.csv").open() as f:
        return [{k: v for k, v in row.items() if k != "seconds"} for row in csv.DictReader(f)]


def _ledger(out: Path) -> Counter:
    keep = ("doc_id", "stage", "program", "model", "prompt_tokens", "completion_tokens", "cache_hit")
    return Counter(tuple(json.loads(line)[k] for k in keep) for line in (out / "ledger.jsonl").read_text().splitlines())


def _errors(out: Path) -> dict[str, dict]:
    return {Path(e["source"]).name: e for e in map(json.loads, (out / "errors.jsonl").read_text().splitlines())}


# ---------------------------------------------------------------------------- without a runtime


def test_without_ray_the_engine_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray → ImportError
    with pytest.raises(ConfigError, match=r"pip install 'argus-kg\[scale\]'"):
        run_batch_ray([DEMO], tmp_path / "out", ArgusConfig())
    res = CliRunner().invoke(app, ["extract", str(DEMO), "--out", str(tmp_path / "o"), "--engine", "ray"])
    assert res.exit_code == 2 and "argus-kg[scale]" in res.output


def test_credentials_go_to_the_actors_knobs_to_their_runtime_env():
    cfg = ArgusConfig(lm={"default": {"model": "openai/gpt-4o-mini"},
                          "stages": {"stage2": {"model": "anthropic/claude-3-5-haiku-latest", "api_key_env": "MY_KEY"},
                                     "resolver": {"model": "local/smollm2"}}})
    environ = {"OPENAI_API_KEY": "o", "OPENAI_BASE_URL": "b", "ANTHROPIC_API_KEY": "a", "MY_KEY": "m",
               "GEMINI_API_KEY": "g", "HOME": "/root", "HF_HUB_OFFLINE": "1"}
    assert credential_env(cfg, environ) == {"OPENAI_API_KEY": "o", "OPENAI_BASE_URL": "b", "ANTHROPIC_API_KEY": "a",
                                            "MY_KEY": "m"}
    env = worker_env(environ)
    assert env == {"TOKENIZERS_PARALLELISM": "false", "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1"}
    secrets = distributed._Secrets(credential_env(cfg, environ))  # what a log of the actor's arguments would show
    assert repr(secrets) == str(secrets) == "<credentials: ANTHROPIC_API_KEY, MY_KEY, OPENAI_API_KEY, OPENAI_BASE_URL>"


# ---------------------------------------------------------------------------- the CLI, on a runtime of its own


@needs_ray
def test_cli_engine_ray_runs_on_a_runtime_it_starts_and_stops(server, tmp_path):
    """``argus extract --engine ray`` with no cluster: a local runtime for the batch, stopped after it."""
    was_running = ray.is_initialized()
    out = tmp_path / "out"
    t0 = time.perf_counter()
    res = CliRunner().invoke(app, [
        "extract", str(DEMO), "--out", str(out), "--engine", "ray", "--actors", "1", "--concurrency", "4",
        "--model", "openai/fake", "--api-base", server.url, "--fact-mode", "classifier",
        "--cache-dir", str(tmp_path / "cache"),
    ])
    assert res.exit_code == 0, res.output
    assert (out / "demo.ekg.json").exists() and (out / "demo.graphml").exists()
    assert [r["doc_id"] for r in _summary(out)] == ["demo"]
    ekg = json.loads((out / "demo.ekg.json").read_text())
    assert ekg["graph"]["events"]
    assert len((out / "ledger.jsonl").read_text().splitlines()) == ekg["ledger"]["totals"]["calls"] > 0
    assert not (out / "errors.jsonl").exists()
    assert ray.is_initialized() == was_running, "run_batch_ray stops the runtime it started, and only that"
    print(f"CLI --engine ray: {time.perf_counter() - t0:.1f}s")


# ---------------------------------------------------------------------------- the engine against the local one


@needs_ray
def test_ray_engine_writes_what_the_local_engine_writes(ray_runtime, server, tmp_path, monkeypatch):
    # the key is set after the runtime started: the actors can only have it from the driver
    monkeypatch.setenv(KEY_VAR, SECRET)
    cfg = _config(server, tmp_path, api_key_env=KEY_VAR)
    paths = _inputs(tmp_path)
    local_out, ray_out = tmp_path / "local", tmp_path / "ray"

    t0 = time.perf_counter()
    local = run_batch(paths, local_out, cfg)
    t1 = time.perf_counter()
    report = run_batch_ray(paths, ray_out, cfg, actors=2)
    t2 = time.perf_counter()
    print(f"local {t1 - t0:.1f}s, ray {t2 - t1:.1f}s")
    assert ray.is_initialized(), "a runtime run_batch_ray did not start is left running"

    doc_ids = [r["doc_id"] for r in local.rows]
    assert len(doc_ids) == 3 and [r["doc_id"] for r in report.rows] == doc_ids
    assert not report.ok and len(report.errors) == 2
    for doc_id in doc_ids:
        assert _graph_parts(ray_out / f"{doc_id}.ekg.json") == _graph_parts(local_out / f"{doc_id}.ekg.json"), doc_id
        assert (ray_out / f"{doc_id}.graphml").exists()
    assert _summary(ray_out) == _summary(local_out)
    assert [r["doc_id"] for r in _summary(ray_out)] == doc_ids  # input order, whatever order they finished in

    # every LM call of every document, once
    ledger = _ledger(ray_out)
    assert ledger == _ledger(local_out)
    for doc_id in doc_ids:
        ekg = json.loads((ray_out / f"{doc_id}.ekg.json").read_text())
        assert sum(n for k, n in ledger.items() if k[0] == doc_id) == ekg["ledger"]["totals"]["calls"] > 0
    assert report.ledger.totals().calls == sum(ledger.values())

    # unreadable inputs: recorded by the driver, the others written
    errors = _errors(ray_out)
    assert set(errors) == {"empty.txt", "missing.txt"} and errors == _errors(local_out)
    assert "empty" in errors["empty.txt"]["message"] and "no such file" in errors["missing.txt"]["message"]

    # the API key reached the actors (the calls succeeded) but no file: not the outputs, not Ray's logs
    for root in (ray_out, ray_runtime, tmp_path / "cache"):
        for f in root.rglob("*"):
            if f.is_file() and f.stat().st_size < 50_000_000:
                assert SECRET.encode() not in f.read_bytes(), f


# ---------------------------------------------------------------------------- a worker that dies


class _CrashingActor(PipelineActor):
    """Kills its own process on a document labelled ``*crash*``; answers the others at once (no pipeline)."""

    def __init__(self, config_json, method="staged", concurrency=None, env=None, secrets=None):
        self.method = method

    def run(self, index, label, document_json):
        if "crash" in label:
            os._exit(1)
        time.sleep(0.5)  # in flight beside the crashing document when they share an actor
        from argus.text.documents import RawDocument

        doc = RawDocument.model_validate_json(document_json)
        return DocumentResult(index, label, doc.doc_id, None,
                              {"source": label, "doc_id": doc.doc_id, "error": "Answered", "message": "by the stub"},
                              [], 0.5).to_json()


@needs_ray
def test_a_document_that_kills_its_worker_is_an_error_record_not_the_batch(ray_runtime, server, tmp_path, monkeypatch):
    monkeypatch.setattr(distributed, "PipelineActor", _CrashingActor)
    monkeypatch.setattr(distributed, "TASK_ATTEMPTS", 1)
    src = tmp_path / "in"
    src.mkdir()
    (src / "a_crash.txt").write_text(DEMO.read_text())
    (src / "b_fine.txt").write_text(DEMO.read_text())
    out = tmp_path / "out"
    t0 = time.perf_counter()
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers need not import tests/
    try:
        report = run_batch_ray([src], out, _config(server, tmp_path), actors=1, concurrency=2)
    finally:
        ray.cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    print(f"crash: {time.perf_counter() - t0:.1f}s")
    errors = _errors(out)
    assert set(errors) == {"a_crash.txt", "b_fine.txt"} and len(report.errors) == 2
    assert errors["b_fine.txt"]["error"] == "Answered"  # its result came back (at once, or on the one-at-a-time pass)
    assert errors["a_crash.txt"]["error"] == "RayWorkerError" and "died" in errors["a_crash.txt"]["message"]
    assert errors["a_crash.txt"]["doc_id"] == "a_crash"


# ---------------------------------------------------------------------------- SIGTERM


@needs_ray
def test_sigterm_stops_a_ray_batch_as_it_stops_a_local_one(tmp_path):
    """Fault: SIGTERM to ``argus extract --engine ray`` once its runtime is up and an EKG is written.
    ``ray.init`` installs its own SIGTERM handler (``sys.exit(15)``) over the batch's, so the batch
    used to exit 15 with no word of what to do; it must stop as the local engine does: status 143, the
    line "SIGTERM: the batch stopped after …; … run the same command with --skip-existing", no claim
    or temporary file left, the runtime it started stopped; the same command with --skip-existing
    then completes the batch, each EKG written once."""
    import signal
    import subprocess

    src = tmp_path / "in"
    src.mkdir()
    ids = [f"d{i}" for i in range(6)]
    for i, d in enumerate(ids):  # distinct texts: a copy's model calls would all come from the cache at once
        (src / f"{d}.txt").write_text(DEMO.read_text().replace("Briarwood", f"Briarwood {chr(65 + i)}"))
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent), "RAY_USAGE_STATS_ENABLED": "0"}
    with LatencyServer(latency_s=0.5) as slow:
        args = [sys.executable, "-m", "argus.cli", "extract", str(src), "--out", str(out), "--engine", "ray",
                "--actors", "1", "--concurrency", "1", "--model", "openai/fake", "--api-base", slow.url,
                "--fact-mode", "classifier", "--cache-dir", str(tmp_path / "cache"), "--no-preflight"]
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        deadline = time.monotonic() + 240
        while not list(out.glob("*.ekg.json")) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        took = time.monotonic() - t0
        assert proc.returncode == 143, (proc.returncode, err[-3000:])
        assert re.search(r"SIGTERM: the batch stopped after \d+ of 6 document\(s\).*--skip-existing", err), err[-3000:]
        assert not list(out.glob("*.claim")) and not list(out.glob(".*.tmp"))
        done = {p.name for p in out.glob("*.ekg.json")}
        stamps = {name: (out / name).stat().st_mtime_ns for name in done}
        assert 1 <= len(done) < 6
        rerun = subprocess.run([*args, "--skip-existing"], capture_output=True, text=True, env=env, timeout=300)
        assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert sorted(p.name.removesuffix(".ekg.json") for p in out.glob("*.ekg.json")) == ids
    assert {name: (out / name).stat().st_mtime_ns for name in done} == stamps  # not written again
    print(f"SIGTERM to exit (ray): {took:.2f} s")


# ---------------------------------------------------------------------------- many documents


_FD_CHILD = r"""
import contextlib, json, resource, sys
from pathlib import Path
import argus.runs.distributed as d
from argus.config import ArgusConfig
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard))  # a low soft limit (1,024 is common), the hard one as it was
sent = []
d._ray_runtime = lambda ray, address: contextlib.nullcontext()  # no runtime: what reaches Ray is what counts
d._run_on_ray = lambda ray, docs, config, **kw: sent.extend(docs)
report = d.run_batch_ray([Path(sys.argv[1])], Path(sys.argv[2]), ArgusConfig())
print(json.dumps({"sent": len(sent), "errors": [e["message"] for e in report.errors], "hard": hard}))
"""


@needs_ray
def test_a_batch_of_more_documents_than_the_soft_limit_of_open_files_reaches_ray(tmp_path):
    """The driver claims every document it sends to Ray before the runtime starts, and each claim
    holds a file descriptor until its document is written: under a soft limit of open files below the
    batch's size (64 here; 1,024 is a common default) the documents beyond it failed with "Too many
    open files (OUT/<doc>.claim)". The limit is raised towards the hard limit first, as ray.init does."""
    import subprocess

    src = tmp_path / "in"
    src.mkdir()
    for i in range(100):
        (src / f"d{i:03d}.txt").write_text(f"FACTUAL ALLEGATIONS\n\n1. Acme hired Jo Smith on March {i % 28 + 1}, 2019.\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    proc = subprocess.run([sys.executable, "-c", _FD_CHILD, str(src), str(tmp_path / "out")], capture_output=True,
                          text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    if result["hard"] != -1 and result["hard"] < 200:
        pytest.skip(f"the hard limit of open files is {result['hard']}")
    assert result == {**result, "sent": 100, "errors": []}, result["errors"][:2]
