"""Crash isolation of the embedded model: the engine is a separate process, and its death costs at
most one document, never the batch, the campaign or the test run.

Real engine (SmolLM2-135M GGUF in a managed ``llama_cpp.server``), killed with real signals.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import dspy
import pytest

from argus.config import ArgusConfig, LMSpec
from argus.models.engine import describe_exit, stop_all
from argus.models.ledger import CostLedger, ledger_context
from argus.models.lm import build_lm
from argus.models.response_cache import PlainResponseCache
from tests.conftest import PROJECT, needs_data
from tests.engine_tools import EngineKiller, engine_processes, known_engine_pids, wait_gone

pytestmark = pytest.mark.integration

COMPLAINT = """UNITED STATES DISTRICT COURT
SOUTHERN DISTRICT OF NEW YORK

{plaintiff}, Plaintiff,
v.
{employer}, Defendant.

COMPLAINT

FACTUAL ALLEGATIONS

1. On March 3, 2019, {employer} hired {plaintiff} as a {job}.
2. On June 3, 2020, her supervisor {boss} told her that she was too old to learn the new system.
3. Two weeks later, {boss} fired {plaintiff} and replaced her with a younger worker.

CLAIMS FOR RELIEF

4. Defendant violated the Age Discrimination in Employment Act.
"""

PEOPLE = [
    ("Maria Torres", "Hudson Valley Logistics", "dispatcher", "Derek Palmer"),
    ("Ann Lee", "Brightline Foods", "line cook", "Tom Grady"),
    ("Rosa Diaz", "Northway Bank", "teller", "Paul Klein"),
]


def _complaints(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, (plaintiff, employer, job, boss) in enumerate(PEOPLE, start=1):
        p = folder / f"doc{i}.txt"
        p.write_text(COMPLAINT.format(plaintiff=plaintiff, employer=employer, job=job, boss=boss), encoding="utf-8")
        paths.append(p)
    return paths


def _config(tmp_path: Path, concurrency: int = 1) -> ArgusConfig:
    # the embedded model for every stage, but only Stage 1 and Stage 2 calls: a quick document;
    # one document at a time, so that "kill during document 2" means what it says
    return ArgusConfig.load(None, {
        "cache_dir": str(tmp_path / "cache"), "facts.mode": "classifier", "chunking.use_llm": False,
        "merge.resolver": False, "lm.stages.stage1.max_tokens": 300, "lm.stages.stage2.max_tokens": 200,
        "concurrency.max_in_flight": concurrency, "extraction.design": "chunked",
    })


def test_concurrent_documents_queue_for_the_engine_and_get_the_sequential_graphs(tmp_path):
    """Two documents at 4 calls in flight: the engine (one completion at a time) is never sent two,
    never restarts, and every graph is the one a sequential run writes."""
    from argus.runs.batch import run_batch
    from argus.pipeline import ArgusPipeline

    docs = _complaints(tmp_path / "in")[:2]
    graphs = {}
    for n in (1, 4):
        pipe = ArgusPipeline(_config(tmp_path / f"c{n}", concurrency=n))
        lm = pipe.lm("stage1")
        lm.server.url()  # running (started now, or by an earlier test and still idling)
        starts = lm.server.starts
        report = run_batch(docs, tmp_path / f"out{n}", pipeline=pipe, graphml=False)
        assert report.ok, report.errors
        graphs[n] = {d: json.loads((tmp_path / f"out{n}" / f"{d}.ekg.json").read_text())["graph"]
                     for d in ("doc1", "doc2")}
        if n == 4:
            assert pipe.slots.peak > 1  # documents were in flight together …
            assert lm.limiter().peak_in_flight == 1 and lm.server.in_flight == 0  # … the engine took one call at a time
            assert lm.server.starts == starts  # no restart (the n = 1 run left it running)
    assert graphs[1] == graphs[4]


def _ledger_docs(out: Path) -> set[str]:
    path = out / "ledger.jsonl"
    if not path.exists():
        return set()
    return {json.loads(line)["doc_id"] for line in path.read_text().splitlines() if line.strip()}


@pytest.fixture(scope="module")
def _engines(tmp_path_factory):
    return tmp_path_factory.mktemp("engines")


@pytest.fixture(autouse=True)
def _no_engine_left(monkeypatch, _engines):
    # this module's own engine registry: a killed engine here is one this process started, and
    # engines started here leave one second after their last client
    monkeypatch.setenv("ARGUS_ENGINE_DIR", str(_engines))
    monkeypatch.setenv("ARGUS_ENGINE_IDLE_S", "1")
    yield
    used = known_engine_pids()
    stop_all()
    assert wait_gone(used, timeout=20) == [], "an engine process was left behind"


def test_a_batch_survives_an_engine_killed_mid_call(tmp_path):
    """SIGKILL during document 2's first call: the engine restarts, the call is retried, all 3 are written."""
    from argus.runs.batch import run_batch
    from argus.pipeline import ArgusPipeline

    docs = _complaints(tmp_path / "in")
    out = tmp_path / "out"
    pipe = ArgusPipeline(_config(tmp_path))
    server = pipe.lm("stage1").server
    server.url()  # running (started now, or by an earlier test and still idling)
    starts = server.starts
    killer = EngineKiller(server, armed=lambda: "doc1" in _ledger_docs(out), times=1)
    killer.start()
    try:
        report = run_batch(docs, out, pipe.config, pipeline=pipe)
    finally:
        killer.stop()
    assert len(killer.killed) == 1, "the engine was never killed: the test did not exercise the restart"
    assert not report.errors, report.errors
    assert sorted(report.outputs) == ["doc1", "doc2", "doc3"]
    for doc in ("doc1", "doc2", "doc3"):
        assert (out / f"{doc}.ekg.json").exists()
    assert server.starts == starts + 1 and server.last_exit == "killed by SIGKILL"  # restarted once
    assert killer.killed[0] not in engine_processes()
    assert not (out / "errors.jsonl").exists()


def test_an_engine_that_dies_again_fails_only_its_document(tmp_path):
    """Killed on the call and again on its retry: document 2 is recorded as failed, 1 and 3 are written."""
    from argus.runs.batch import run_batch
    from argus.pipeline import ArgusPipeline

    docs = _complaints(tmp_path / "in")
    out = tmp_path / "out"
    pipe = ArgusPipeline(_config(tmp_path))
    server = pipe.lm("stage1").server
    killer = EngineKiller(server, armed=lambda: "doc1" in _ledger_docs(out) and not (out / "errors.jsonl").exists(),
                          times=None, sig=signal.SIGSEGV)
    killer.start()
    try:
        report = run_batch(docs, out, pipe.config, pipeline=pipe)
    finally:
        killer.stop()
    assert len(killer.killed) == 2
    assert sorted(report.outputs) == ["doc1", "doc3"]
    (error,) = [json.loads(line) for line in (out / "errors.jsonl").read_text().splitlines()]
    assert error["doc_id"] == "doc2" and error["error"] == "EngineCrashError"
    assert "died again" in error["message"] and "SIGSEGV" in error["message"]
    assert (out / "doc3.ekg.json").exists() and not (out / "doc2.ekg.json").exists()
    assert "doc2" not in {line.split(",")[0] for line in (out / "summary.csv").read_text().splitlines()}


def test_a_killed_engine_is_restarted_for_the_next_call_and_the_cache_survives_the_new_port(tmp_path, monkeypatch):
    # argus's response cache (DSPy's, disk tier only), which books a hit at its original usage
    monkeypatch.setattr(dspy, "cache", PlainResponseCache(True, False, str(tmp_path / "c"), disk_size_limit_bytes=1 << 30))
    lm = build_lm(LMSpec(model="local/smollm2", max_tokens=24, cache=True))
    ledger = CostLedger()
    with ledger_context(ledger, doc_id="t", stage="stage1", program="p"):
        first = lm("Say hi")
        url = lm.server.url()
        os.kill(lm.server.pid, signal.SIGKILL)
        time.sleep(0.2)
        again = lm("Say hi")  # cached: no engine needed
        fresh = lm("Say hello")
    assert again == first and fresh
    assert lm.server.url() != url or lm.server.starts == 2
    a, b, c = ledger.entries
    assert a.model == b.model == c.model == "local/smollm2"
    assert not a.cache_hit and b.cache_hit and not c.cache_hit
    assert (b.cached_prompt_tokens, b.cached_completion_tokens) == (a.prompt_tokens, a.completion_tokens)
    assert "api_base" not in json.dumps(lm.dump_state()) and "127.0.0.1" not in json.dumps(lm.dump_state())


@pytest.mark.parametrize("ending", ["exit", "error", "sigint", "sigterm", "sigkill"])
def test_no_engine_outlives_its_last_client(ending, tmp_path):
    """However its only client ends — normally, on an error, Ctrl-C, SIGTERM or SIGKILL (no exit
    handlers run for the last two) — the engine is gone shortly after, and so is its registry entry."""
    script = tmp_path / "parent.py"
    script.write_text(textwrap.dedent(f"""
        import signal, sys, time
        # as in a terminal: a process started in the background by a script inherits SIGINT ignored
        signal.signal(signal.SIGINT, signal.default_int_handler)
        from argus.config import LMSpec
        from argus.models.lm import build_lm
        lm = build_lm(LMSpec(model="local/smollm2", max_tokens=8, cache=False))
        lm("Say hi")
        print(lm.server.pid, lm.server.registry.key, flush=True)
        if {ending!r} == "exit":
            sys.exit(0)
        if {ending!r} == "error":
            raise RuntimeError("a bug after the call")
        # short sleeps, as a working program: the kernel may hand the signal to another thread,
        # and then only the main thread's next check sees it
        for _ in range(6000):
            time.sleep(0.1)
    """))
    engines = tmp_path / "engines"
    env = {**os.environ, "ARGUS_ENGINE_DIR": str(engines), "ARGUS_ENGINE_IDLE_S": "1"}
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, cwd=PROJECT, env=env)
    try:
        pid_text, key = proc.stdout.readline().split()
        engine_pid = int(pid_text)
        assert engine_processes(engines) == [engine_pid]
        assert json.loads((engines / f"{key}.json").read_text())["pid"] == engine_pid
        signals = {"sigint": signal.SIGINT, "sigterm": signal.SIGTERM, "sigkill": signal.SIGKILL}
        if ending in signals:
            proc.send_signal(signals[ending])
        code = proc.wait(timeout=60)
        # an uncaught KeyboardInterrupt ends with SIGINT, or with status 1 where a library changed the handler
        assert code in {"exit": (0,), "error": (1,), "sigint": (-2, 1), "sigterm": (-15,), "sigkill": (-9,)}[ending]
        assert wait_gone([engine_pid], timeout=15) == []
        assert not (engines / f"{key}.json").exists(), "the registry entry of the engine was left behind"
        assert (engines / f"{key}.log").read_text().count("start by pid") == 1  # its log is kept
    finally:
        proc.kill()


def test_local_gguf_paths_share_the_managed_server():
    """``local/<path.gguf>`` is served the same way; one file and setting is one server."""
    from argus.models.lm import LocalServerLM, embedded_gguf_path

    by_name = build_lm(LMSpec(model="local/smollm2"))
    by_path = build_lm(LMSpec(model=f"local/{embedded_gguf_path()}"))
    assert isinstance(by_name, LocalServerLM) and isinstance(by_path, LocalServerLM)
    assert by_name.server is by_path.server and by_path.ledger_model == f"local/{embedded_gguf_path()}"
    assert by_name.structured_output == "json_object_schema" and by_name.grammar_limits["events"] == 4
    other = build_lm(LMSpec(model="local/smollm2", n_ctx=2048))
    assert other.server is not by_name.server


def test_the_test_run_survives_a_dead_engine(tmp_path):
    """A pytest session whose engine segfaults: that test fails and says why; the others run and pass."""
    (tmp_path / "test_dead_engine.py").write_text(textwrap.dedent("""
        import os, signal
        import dspy
        from argus.config import LMSpec
        from argus.models.lm import build_lm
        from tests.engine_tools import EngineKiller

        def test_calls_a_segfaulting_engine():
            lm = build_lm(LMSpec(model="local/smollm2", max_tokens=8, cache=False))
            killer = EngineKiller(lm.server, armed=lambda: True, times=None, sig=signal.SIGSEGV)
            killer.start()
            try:
                lm("Say hi")
            finally:
                killer.stop()

        def test_after_the_crash():
            assert 1 + 1 == 2
    """))
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path),
                          str(tmp_path / "test_dead_engine.py")], capture_output=True, text=True, timeout=300,
                         cwd=PROJECT, env={**os.environ, "PYTHONPATH": str(PROJECT),
                                           "ARGUS_ENGINE_DIR": str(tmp_path / "engines")})
    out = res.stdout + res.stderr
    assert res.returncode == 1, out
    assert "1 failed, 1 passed" in out
    assert "EngineCrashError" in out and "killed by SIGSEGV" in out


def test_describe_exit():
    assert describe_exit(-11) == "killed by SIGSEGV"
    assert describe_exit(-9) == "killed by SIGKILL"
    assert describe_exit(3) == "exited with status 3"
    assert describe_exit(None) == "running"


CRASH_CAMPAIGN = {
    "name": "enginecrash",
    "programs": ["stage1", "stage2"],
    "data": {
        "train": {"split": "train", "docs": 1, "chunks_per_doc": 1},
        "val": {"split": "dev", "ids": ["nysd-1-24-cv-03572"]},
        "test": {"split": "dev", "ids": ["kyed-5-23-cv-00318"]},
        "max_sentences": 3,
    },
    # whole complaints are deployed: keep each run to one small chunk on 2 cores
    "pipeline": {"limits.max_narrative_sentences": 4, "chunking.max_sentences": 8, "merge.resolver": False},
    # short answers (as in _config): the test is about the crash, and SmolLM2 often runs to the cap
    "models": {"reflection": {"model": "local/smollm2", "max_tokens": 300}, "defaults": {"max_tokens": 300}},
    "metric": {"weights": {"structural": 1.0, "judge": 0.0, "gold": 0.0}},
    "space": {"task_model": ["local/smollm2"], "framenet_hints": [False], "max_retries": [0], "temperature": [0.0]},
    "budget": {"trials": 1, "max_metric_calls": 2, "seconds_per_call": 5},
    "reflection_minibatch_size": 1,
}


@needs_data
def test_a_campaign_whose_engine_crashes_stops_cleanly_and_resumes(tmp_path):
    """The engine dies on a call and on its retry after the first candidate was evaluated: the
    campaign stops with the reason (no traceback, nothing scored from the dead engine), and the
    same command resumes it to a frontier without redoing the finished evaluation."""
    from argus.models.lm import build_lm
    from optimizers.campaign import Campaign, CampaignConfig

    run, compiled = tmp_path / "run", tmp_path / "compiled"
    cfg = CampaignConfig(**CRASH_CAMPAIGN)
    campaign = Campaign(cfg, run, compiled)
    server = build_lm(cfg.lm_spec("local/smollm2")).server
    killer = EngineKiller(server, armed=lambda: any((run / "evals").glob("val-*.json")), times=2)
    killer.start()
    try:
        first = campaign.run()
    finally:
        killer.stop()
    assert len(killer.killed) == 2, "the engine was not killed twice: the test did not exercise the stop"
    assert first.failed and "local engine crashed" in first.stopped
    before = {p.name: p.read_text() for p in (run / "evals").glob("*.json")}
    assert any(name.startswith("val-") for name in before)

    second = Campaign(CampaignConfig(**CRASH_CAMPAIGN), run, compiled).run()
    assert not second.failed and not second.stopped
    assert second.frontier
    for name, text in before.items():  # finished evaluations are reused as they were
        assert (run / "evals" / name).read_text() == text
    manifest = json.loads((compiled / "enginecrash" / second.frontier[0] / "manifest.json").read_text())
    assert "test" in manifest["splits"]  # the test re-scoring skipped at the crash is done on resume
