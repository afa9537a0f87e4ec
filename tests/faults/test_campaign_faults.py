"""Fault injection for optimization campaigns (``argus optimize``, ``optimizers.campaign``): a provider that
rate-limits, fails, hangs and resets connections; a provider gone mid-deployment; SIGTERM mid-trial; an
extraction running beside a campaign; damaged ``frontier.json``, manifests and run records; the password of a
storage URL.

The campaign is ``tests/test_campaign.py``'s, cut to one trial; its models are the simulated LM
(``tests/simulated_lm.py``) or a real loopback HTTP server (``tests/latency_server.py``). Processes,
signals, servers and files are real; nothing about a fault is mocked.

Run as ``python -m tests.faults.test_campaign_faults campaign CAMPAIGN.yaml RUN_ROOT COMPILED [options]`` this
module is the test-only campaign process: it installs the simulated LM as ``argus.models.lm.build_lm`` (each call
slowed by ``--delay`` seconds, and by 0.25 s more while the file ``--slow-while FILE`` exists, the 11th
such call and later ones held until it is gone) and runs
``run_optimize.main`` (``argus optimize``) with ``--no-preflight``; ``--log FILE`` writes every log
record (DEBUG and up) to FILE.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.conftest import PROJECT, needs_data
from tests.test_campaign import CAMPAIGN as BASE_CAMPAIGN
from tests.test_campaign import _frontier_view

pytestmark = needs_data

NAME = BASE_CAMPAIGN["name"]
CAMPAIGN = {**BASE_CAMPAIGN, "budget": {**BASE_CAMPAIGN["budget"], "trials": 1}}  # one trial: fast, still mid-trial faults
PG_ENV = "ARGUS_TEST_POSTGRES"


# ----------------------------------------------------------------------------- helpers


def _write_cfg(tmp: Path, cfg: dict | None = None) -> Path:
    import yaml

    path = tmp / f"{NAME}.yaml"
    path.write_text(yaml.safe_dump(cfg or CAMPAIGN))
    return path


def _child(tmp: Path, name: str, *extra: str, env: dict | None = None) -> subprocess.Popen:
    """The campaign as a process of its own (this module's ``campaign`` entry), output to ``tmp/<name>.log``."""
    cfg = tmp / f"{NAME}.yaml"
    if not cfg.exists():
        _write_cfg(tmp)
    args = [sys.executable, "-m", "tests.faults.test_campaign_faults", "campaign", str(cfg), str(tmp / "runs"),
            str(tmp / "compiled"), *extra]
    log = open(tmp / f"{name}.log", "ab")
    return subprocess.Popen(args, cwd=PROJECT, stdout=log, stderr=subprocess.STDOUT,
                            env={**os.environ, **(env or {})})


def _status(run: Path) -> dict:
    """status.json (a worker on a storage writes status.<worker>.json)."""
    for path in sorted(run.glob("status*.json")):
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            pass
    return {}


def _wait_phase(proc: subprocess.Popen, run: Path, log: Path, phase: str | tuple, timeout: float = 240) -> dict:
    """Wait until status.json names ``phase`` (or one of them)."""
    phases = (phase,) if isinstance(phase, str) else phase
    deadline = time.time() + timeout
    while time.time() < deadline:
        assert proc.poll() is None, f"the campaign ended before phase {phase}:\n{log.read_text()[-3000:]}"
        now = _status(run)
        if now.get("phase") in phases:
            return now
        time.sleep(0.02)
    proc.kill()
    raise AssertionError(f"phase {phase} not reached in {timeout} s:\n{log.read_text()[-3000:]}")


def _finish(proc: subprocess.Popen, log: Path, timeout: float = 300) -> int:
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError(f"the campaign did not finish in {timeout} s:\n{log.read_text()[-3000:]}")


def _spend(compiled: Path) -> dict:
    from tests.test_campaign_workers import _spend as spend

    return spend(compiled)


def _ledger(run: Path) -> list[dict]:
    return [json.loads(x) for p in sorted(run.glob("ledger*.jsonl")) for x in p.read_text().splitlines() if x.strip()]


def _no_partial_files(*roots: Path) -> None:
    """Every JSON file under the roots parses, every ledger line parses, no temporary file is left."""
    for root in roots:
        for p in root.rglob("*"):
            if not p.is_file() or "cache" in p.relative_to(root).parts:
                continue
            assert not p.name.endswith((".tmp", ".partial")) and not p.name.startswith(".tmp"), p
            if p.suffix == ".json":
                json.loads(p.read_text(encoding="utf-8"))
            elif p.suffix == ".jsonl":
                for line in p.read_text(encoding="utf-8").splitlines():
                    if line.strip():
                        json.loads(line)


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    """The one-trial campaign, uninterrupted, in this process (the simulated LM): what every faulty run must
    end with. Laid out as ``argus optimize`` lays it out (``runs/<name>``, ``compiled/<name>``)."""
    from optimizers.campaign import Campaign, CampaignConfig
    from tests.simulated_lm import SimulatedEngine, simulated_lm_builder

    root = tmp_path_factory.mktemp("baseline")
    result = Campaign(CampaignConfig(**CAMPAIGN), root / "runs" / NAME, root / "compiled",
                      lm_builder=simulated_lm_builder(SimulatedEngine())).run()
    assert not result.stopped and not result.failed and result.frontier
    return root


# ----------------------------------------------------------------------------- 1. provider faults


def _served_campaign(server_url: str) -> dict:
    """The campaign with every model an ``openai/`` model on the loopback server: no cache (every call reaches
    the server), a short timeout, retries enough for the fault rates below."""
    return {**CAMPAIGN, "space": {"task_model": ["openai/fake"], "framenet_hints": [False]},
            "models": {"reflection": "openai/fake",
                       "defaults": {"api_base": server_url, "structured_output": "json_object_schema",
                                    "cache": False, "num_retries": 10, "timeout_s": 1.5}},
            "concurrency": {"num_threads": 4}}


FAULTS = dict(fail_rate_429=0.15, retry_after_s=0.3, fail_rate_500=0.15, fail_rate_timeout=0.2, timeout_delay_s=5,
              fail_rate_reset=0.25)


@pytest.fixture(scope="module")
def served_clean(tmp_path_factory):
    """The served campaign against the loopback server without faults: (root, result, server stats)."""
    from optimizers.campaign import Campaign, CampaignConfig
    from tests.latency_server import LatencyServer

    root = tmp_path_factory.mktemp("served-clean")
    with LatencyServer(latency_s=0.0, seed=5) as server:
        result = Campaign(CampaignConfig(**_served_campaign(server.url)), root / "run", root / "compiled").run()
        stats = server.stats()
    assert not result.stopped and not result.failed and result.frontier
    return root, result, stats


def _fast_backoff(monkeypatch) -> None:
    """For speed: the backoff after a fault without Retry-After is at most 0.05 s; a 429's wait is the real one."""
    import argus.models.concurrency as concurrency

    real_wait = concurrency.retry_wait
    monkeypatch.setattr(concurrency, "retry_wait", lambda exc, attempt, retries: real_wait(exc, attempt, retries)
                        if concurrency.fault_status(exc) == 429 else min(0.05, real_wait(exc, attempt, retries)))


def test_provider_faults_leave_the_frontier_and_spend_of_a_clean_run(tmp_path, served_clean, monkeypatch):
    """Fault: the campaign's task and reflection models are served by a real loopback server that answers
    15 % of requests with 429 (Retry-After 0.3 s), 15 % with 500, holds 20 % of the rest past the client's
    1.5 s timeout and resets 25 % of the rest mid-response (half a body, then a TCP RST). Must hold: the
    campaign finishes; its frontier (members, every candidate, hypervolume, each member's figures per
    document) and its optimization spend equal those of a clean run against the same server, since a failed
    attempt is never booked (the retry cost is server requests, not ledger lines: asserted); every 429 was
    retried no sooner than its Retry-After; a resume of the finished campaign makes no request."""
    from optimizers.campaign import Campaign, CampaignConfig
    from tests.latency_server import LatencyServer

    _fast_backoff(monkeypatch)
    clean_root, clean, cs = served_clean
    with LatencyServer(latency_s=0.0, seed=5, **FAULTS) as server:
        cfg = CampaignConfig(**_served_campaign(server.url))
        t0 = time.monotonic()
        faulty = Campaign(cfg, tmp_path / "run", tmp_path / "compiled").run()
        took = time.monotonic() - t0
        fs = server.stats()
        # the finished campaign, started again: nothing to do, no request
        again = Campaign(cfg, tmp_path / "run", tmp_path / "compiled").run()
        assert server.stats().total_requests == fs.total_requests
    assert not faulty.stopped and not faulty.failed and faulty.frontier
    print(f"\nclean: {cs.total_requests} requests; faulty: {fs.total_requests} requests ({fs.sent_429} 429, "
          f"{fs.sent_500} 500, {fs.timeouts} timeouts, {fs.resets} resets) in {took:.1f} s")
    # the faults hit many calls, each kind several times
    assert fs.sent_429 >= 3 and fs.sent_500 >= 3 and fs.timeouts >= 2 and fs.resets >= 3, fs
    assert cs.sent_429 == cs.sent_500 == cs.timeouts == cs.resets == 0
    # the same answered calls, each booked once; the faults cost requests only
    assert fs.answered == cs.answered == len(_ledger(tmp_path / "run")) == len(_ledger(clean_root / "run"))
    assert fs.total_requests == cs.total_requests + fs.sent_429 + fs.sent_500 + fs.timeouts + fs.resets
    assert faulty.calls == clean.calls
    assert _frontier_view(tmp_path / "compiled") == _frontier_view(clean_root / "compiled")
    assert _spend(tmp_path / "compiled") == _spend(clean_root / "compiled")
    # Retry-After honoured: a request answered 429 is asked again no sooner than 0.3 s later
    by_key: dict[str, list] = {}
    for r in sorted(fs.requests, key=lambda r: r.arrival_s):
        by_key.setdefault(r.key, []).append(r)
    retried = [(a, b) for rs in by_key.values() for a, b in zip(rs, rs[1:]) if a.status == 429]
    assert retried and all(b.arrival_s - a.arrival_s >= 0.3 - 0.02 for a, b in retried)
    # the resume: no new call, the same frontier
    assert not again.stopped and not again.failed and again.calls == faulty.calls
    assert _frontier_view(tmp_path / "compiled") == _frontier_view(clean_root / "compiled")


@pytest.mark.parametrize("phase", ["val", "gepa"])
def test_the_provider_gone_mid_deployment_stops_the_campaign_and_keeps_no_score(tmp_path, served_clean, monkeypatch,
                                                                                phase):
    """Fault: the model server is stopped (connection refused) as soon as the validation deployment run
    starts (``val``), or as soon as GEPA's search starts (``gepa``: its metric would score the failed calls 0
    and its reflections keep their parents, and the seed alone was kept as the search's result, for good). The deployment runs here use the served models, not the local llama engine (the simulated-LM
    campaigns use none), so this stands in for the engine killed mid-deployment. Must hold: the campaign
    ends failed with a red line naming the candidate, the document and the fault and saying how to resume;
    status.json ``stopped`` with that reason; no evaluation and no frontier kept (before the fix the candidate
    was kept with quality 0 at no cost: the cheapest frontier member, for good); the server back on its
    port, the same campaign resumes to the clean run's frontier."""
    import threading

    from optimizers.campaign import Campaign, CampaignConfig
    from tests.latency_server import LatencyServer

    _fast_backoff(monkeypatch)
    clean_root, _, _ = served_clean
    run = tmp_path / "run"
    server = LatencyServer(latency_s=0.05, seed=5).start()
    cfg = _served_campaign(server.url)
    cfg["models"]["defaults"]["num_retries"] = 2
    stopped = threading.Event()

    def stop_at_validation():
        deadline = time.time() + 240
        while time.time() < deadline and not stopped.is_set():
            if _status(run).get("phase") == phase:
                server.stop()
                stopped.set()
            time.sleep(0.01)

    threading.Thread(target=stop_at_validation, daemon=True).start()
    from rich.console import Console

    console = Console(file=open(tmp_path / "console.txt", "w"), width=200)
    result = Campaign(CampaignConfig(**cfg), run, tmp_path / "compiled", console=console).run()
    console.file.close()
    shown = (tmp_path / "console.txt").read_text()
    assert stopped.is_set()
    print(f"\nthe user sees: {[line for line in shown.splitlines() if 'could not reach' in line][0]}")
    assert result.failed and "could not reach its model" in result.stopped and "run the same command again" in result.stopped
    assert "ProviderFault" in result.stopped
    if phase == "val":
        assert CAMPAIGN["data"]["val"]["ids"][0] in result.stopped
    else:
        assert "GEPA search could not reach its model" in result.stopped
        assert not list(run.glob("trials/*/gepa_candidates.json"))  # the search is not kept
    status = _status(run)
    assert status["phase"] == "stopped" and "could not reach" in status["reason"]
    assert not list((run / "evals").glob("*.json")) and not (tmp_path / "compiled" / NAME / "frontier.json").exists()
    with LatencyServer(latency_s=0.0, seed=5, port=server.port):
        resumed = Campaign(CampaignConfig(**cfg), run, tmp_path / "compiled").run()
    assert not resumed.stopped and not resumed.failed
    assert _frontier_view(tmp_path / "compiled") == _frontier_view(clean_root / "compiled")


# ----------------------------------------------------------------------------- 2. SIGTERM, 3. beside an extraction


def test_sigterm_mid_trial_stops_cleanly_and_the_resume_runs_beside_an_extraction(tmp_path, baseline, dev_dirs):
    """Faults: (a) SIGTERM to a running ``argus optimize`` process while GEPA runs (mid-trial); (b) contention:
    the same command, resuming, runs while ``argus extract`` (three dev complaints, ``--method floor``) runs
    as a second process (the campaign's LM calls slowed while the extraction runs, so that it is still
    running when the extraction ends: asserted). Must hold: (a) it exits within 30 s with status 143, a line
    saying it was terminated and how to resume, status.json ``stopped`` with that reason, no traceback, and
    no frontier written; (b) both processes exit 0, the extraction wrote a valid EKG for every document, the
    campaign ends with the frontier of the uninterrupted run, and every JSON file and ledger line of both
    parses, with no temporary file left."""
    from argus.graph.schema import DocumentEKG

    first_hold = tmp_path / "hold-first"
    first_hold.write_text("")  # the 11th LM call and later ones wait while it exists: the trial cannot end first
    proc = _child(tmp_path, "first", "--delay", "0.05", "--slow-while", str(first_hold))
    run = tmp_path / "runs" / NAME
    _wait_phase(proc, run, tmp_path / "first.log", "gepa")
    time.sleep(0.5)  # a few GEPA calls in
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    first_hold.unlink()  # the held call returns; the stop must still come before the trial's end
    code = _finish(proc, tmp_path / "first.log", timeout=60)
    took = time.monotonic() - t0
    out = (tmp_path / "first.log").read_text()
    print(f"\nSIGTERM -> exit {code} after {took:.2f} s; last line: {out.strip().splitlines()[-1]}")
    assert code == 143, out[-3000:]
    assert took < 30
    assert "stopped: terminated (SIGTERM); run the same command again to resume" in " ".join(out.split())
    assert "Traceback" not in out
    status = _status(run)
    assert status["phase"] == "stopped" and "SIGTERM" in status["reason"]
    assert not (tmp_path / "compiled" / NAME / "frontier.json").exists()  # the one trial never finished

    hold = tmp_path / "slow"
    hold.write_text("")
    again = _child(tmp_path, "again", "--slow-while", str(hold))
    # GEPA's calls before the stop come from the cache (not slowed): the resumed trial may be in val already
    _wait_phase(again, run, tmp_path / "again.log", ("gepa", "val"))
    docs = [d / "complaint.txt" for d in dev_dirs[:3]]
    out_dir = tmp_path / "out"
    extraction = subprocess.run(
        [sys.executable, "-m", "argus.cli", "extract", *map(str, docs), "--out", str(out_dir), "--method", "floor",
         "--cache-dir", str(tmp_path / "xcache"), "--no-preflight"],
        cwd=PROJECT, capture_output=True, text=True, timeout=300)
    still_running = again.poll() is None
    hold.unlink()
    code = _finish(again, tmp_path / "again.log")
    assert extraction.returncode == 0, extraction.stderr[-3000:]
    assert still_running, "the campaign ended before the extraction: they did not run at once"
    assert code == 0, (tmp_path / "again.log").read_text()[-3000:]
    assert _status(run)["phase"] == "done"
    ekgs = sorted(out_dir.glob("*.ekg.json"))
    assert len(ekgs) == len(docs)
    for p in ekgs:
        assert DocumentEKG.model_validate_json(p.read_text(encoding="utf-8")).graph.events, p
    assert _frontier_view(tmp_path / "compiled") == _frontier_view(baseline / "compiled")
    _no_partial_files(run, tmp_path / "compiled", out_dir)


# ----------------------------------------------------------------------------- 4. damaged files


def _damage(path: Path, kind: str) -> None:
    data = path.read_bytes()
    if kind == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif kind == "not_json":
        path.write_bytes(b"\x00\xff<html>502 Bad Gateway</html>")
    elif kind == "wrong_shape" and path.name == "frontier.json":
        path.write_text(json.dumps(json.loads(data)["members"]))  # a list where an object belongs
    elif kind == "wrong_shape":  # a manifest whose settings a deployment cannot use
        manifest = json.loads(data)
        manifest["settings"]["models"] = list(manifest["settings"]["models"].values())
        manifest["settings"]["temperature"] = "hot"
        path.write_text(json.dumps(manifest))
    elif kind == "foreign_member":  # a member id that leads out of the campaign folder
        frontier = json.loads(data)
        frontier["members"] = ["../../elsewhere"]
        path.write_text(json.dumps(frontier))
    else:
        raise ValueError(kind)


def _one_error_line(output: str, path: Path) -> str:
    assert "Traceback" not in output, output[-3000:]
    errors = [line for line in output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, output[-3000:]
    assert str(path) in " ".join(output.split()), output[-3000:]  # rich may wrap the line: the path is named
    return errors[0]


DAMAGE = [("frontier", "truncated"), ("frontier", "not_json"), ("frontier", "wrong_shape"),
          ("frontier", "foreign_member"), ("manifest", "truncated"), ("manifest", "not_json"),
          ("manifest", "wrong_shape")]


@pytest.mark.parametrize("target,kind", DAMAGE)
def test_a_damaged_frontier_file_is_named_in_one_line(tmp_path, baseline, target, kind):
    """Fault: ``frontier.json`` or the chosen member's ``manifest.json`` truncated, not JSON, or JSON of the wrong
    shape (a list; settings a deployment cannot use; a member id leading out of the folder). Must hold:
    ``argus frontier show/select/verify`` and ``argus extract --frontier`` each exit 2 with one ``error:`` line
    naming the file, no traceback, and write nothing."""
    from typer.testing import CliRunner

    from argus.cli import app

    root = tmp_path / "compiled" / NAME
    shutil.copytree(baseline / "compiled" / NAME, root)
    member = json.loads((root / "frontier.json").read_text())["members"][0]
    path = root / "frontier.json" if target == "frontier" else root / member / "manifest.json"
    _damage(path, kind)
    doc = tmp_path / "doc.txt"
    doc.write_text("The plaintiff was fired on May 2. She had complained to her manager on April 30.\n")
    commands = [["frontier", "show", str(root)], ["frontier", "select", str(root), "--member", member],
                ["frontier", "verify", str(root), "--member", member],
                ["extract", str(doc), "--out", str(tmp_path / "out"), "--frontier", str(root), "--member", member,
                 "--no-preflight", "--cache-dir", str(tmp_path / "cache")]]
    runner = CliRunner()
    for args in commands:
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output[-3000:], result.exception)
        line = _one_error_line(result.output, path)
        print(f"\nargus {' '.join(args[:2])} ({target} {kind}): {line}")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("target,kind", [("frontier", "truncated"), ("manifest", "wrong_shape")])
def test_a_resume_rewrites_a_damaged_compiled_folder(tmp_path, baseline, target, kind, monkeypatch, capsys):
    """Fault: ``frontier.json`` truncated, or a member's manifest of the wrong shape, then ``argus optimize``
    run again on the finished campaign. Must hold: exit 0, no LM call, and the compiled folder rewritten
    from the run directory: the frontier of the uninterrupted run, readable again."""
    from optimizers.frontier import Frontier

    shutil.copytree(baseline, tmp_path / "c")
    root = tmp_path / "c" / "compiled" / NAME
    member = json.loads((root / "frontier.json").read_text())["members"][0]
    _damage(root / "frontier.json" if target == "frontier" else root / member / "manifest.json", kind)
    code, output, engine = _resume_cli(tmp_path, monkeypatch, capsys)
    assert code == 0, output[-3000:]
    assert engine.calls == []
    Frontier.load(root)
    assert _frontier_view(tmp_path / "c" / "compiled") == _frontier_view(baseline / "compiled")


def _resume_cli(tmp_path: Path, monkeypatch, capsys) -> tuple[int, str, object]:
    """``argus optimize`` (``run_optimize.main``) in this process on the copy ``tmp_path/c`` of the baseline, with
    the simulated LM: (exit status, stdout + stderr, the engine)."""
    import argus.models.lm
    import run_optimize
    from tests.simulated_lm import SimulatedEngine, simulated_lm_builder

    builder = simulated_lm_builder(SimulatedEngine())
    monkeypatch.setattr(argus.models.lm, "build_lm", builder)
    code = run_optimize.main([str(_write_cfg(tmp_path)), "--run-root", str(tmp_path / "c" / "runs"),
                              "--compiled", str(tmp_path / "c" / "compiled"), "--no-preflight"])
    captured = capsys.readouterr()
    return code, captured.out + captured.err, builder.engine


def test_a_journal_cut_mid_record_is_trimmed_and_the_campaign_resumes(tmp_path, baseline, monkeypatch, capsys):
    """Fault: Optuna's journal cut in the middle of a record (as a crash while it is written leaves it; here at
    half its bytes). Optuna skips a last record without its newline but then appends to it, which made the
    journal unreadable for good. Must hold: the resume drops the partial record with a note, exits 0, and
    ends with the uninterrupted run's frontier; the journal is readable afterwards."""
    shutil.copytree(baseline, tmp_path / "c")
    journal = tmp_path / "c" / "runs" / NAME / "optuna.journal"
    _damage(journal, "truncated")
    assert not journal.read_bytes().endswith(b"\n")
    code, output, _ = _resume_cli(tmp_path, monkeypatch, capsys)
    assert code == 0, output[-3000:]
    assert "was cut short" in " ".join(output.split()) and "Traceback" not in output
    assert _frontier_view(tmp_path / "c" / "compiled") == _frontier_view(baseline / "compiled")
    for line in journal.read_text().splitlines():
        json.loads(line)


@pytest.mark.parametrize("record,kind", [("evals", "truncated"), ("evals", "wrong_shape"),
                                         ("objectives.json", "truncated"), ("objectives.json", "wrong_shape"),
                                         ("optuna.journal", "wrong_shape")])
def test_a_damaged_run_record_stops_a_resume_with_one_line(tmp_path, baseline, record, kind, monkeypatch, capsys):
    """Fault: a record of finished work in the run directory (a validation evaluation, ``objectives.json``)
    truncated or replaced by JSON of another shape, or Optuna's journal holding JSON that is not a journal;
    then ``argus optimize`` run again. Must hold: exit 2, one ``error:`` line naming the file, no traceback,
    no LM call."""
    shutil.copytree(baseline, tmp_path / "c")
    run = tmp_path / "c" / "runs" / NAME
    path = sorted((run / "evals").glob("val-*.json"))[0] if record == "evals" else run / record
    if kind == "truncated":
        _damage(path, "truncated")
    else:
        path.write_text('["a list"]\n')
    code, output, engine = _resume_cli(tmp_path, monkeypatch, capsys)
    assert code == 2, output[-3000:]
    line = _one_error_line(output, path)
    print(f"\nargus optimize with {record} {kind}: {line}")
    assert engine.calls == []


# ----------------------------------------------------------------------------- 5. the storage password


needs_postgres = pytest.mark.skipif(
    not os.environ.get(PG_ENV),
    reason=f"{PG_ENV} is not set (a PostgreSQL URL of a role that may create roles and databases; .ci/run sets it)")


@pytest.fixture()
def pg_secret_url():
    """A throwaway role with a unique password and a database it owns, on the server of $ARGUS_TEST_POSTGRES;
    (url, password); both dropped afterwards."""
    import psycopg

    base = os.environ[PG_ENV].replace("postgresql+psycopg://", "postgresql://")
    tag = uuid.uuid4().hex[:10]
    role, db, password = f"argus_secret_{tag}", f"argus_secret_{tag}", f"Pw-{uuid.uuid4().hex}"
    try:
        admin = psycopg.connect(base, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        pytest.fail(f"{PG_ENV} is set but its server cannot be reached: {str(exc).strip()[:300]}")
    with admin:
        admin.execute(f"CREATE ROLE \"{role}\" LOGIN PASSWORD '{password}'")
        admin.execute(f'CREATE DATABASE "{db}" OWNER "{role}"')
    hostport = base.split("@", 1)[1].rsplit("/", 1)[0]
    try:
        yield f"postgresql://{role}:{password}@{hostport}/{db}", password
    finally:
        with psycopg.connect(base, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
            admin.execute(f'DROP ROLE IF EXISTS "{role}"')


@needs_postgres
def test_the_storage_password_appears_nowhere(tmp_path, pg_secret_url):
    """Fault: a secret in the storage URL (``postgresql://role:PASSWORD@…``), given as ``ARGUS_STORAGE`` (the
    documented place; ``--storage`` on a command line is readable by every user). Must hold: the campaign
    finishes; the password is not in the running process's ``/proc/PID/cmdline``, nor in any file under the
    run and compiled folders (status.json, campaign.json, ledgers, manifests, frontier.json), the HTML report,
    the process's stdout/stderr or its log records (DEBUG and up)."""
    url, password = pg_secret_url
    log = tmp_path / "records.log"
    proc = _child(tmp_path, "campaign", "--delay", "0.02", "--log", str(log), env={"ARGUS_STORAGE": url})
    _wait_phase(proc, tmp_path / "runs" / NAME, tmp_path / "campaign.log", "gepa", timeout=300)
    cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    assert password not in cmdline and "--storage" not in cmdline
    assert _finish(proc, tmp_path / "campaign.log") == 0, (tmp_path / "campaign.log").read_text()[-3000:]
    assert "***@" in (tmp_path / "campaign.log").read_text()  # the worker line names the storage, redacted
    from typer.testing import CliRunner

    from argus.cli import app

    report = CliRunner().invoke(app, ["frontier", "report", str(tmp_path / "compiled" / NAME),
                                      "--out", str(tmp_path / "report.html")])
    assert report.exit_code == 0, (report.output[-3000:], report.exception)
    (tmp_path / "report.out").write_text(report.output)
    assert (tmp_path / "report.html").exists() and log.exists()
    grep = ["grep", "-r", "-l", "-a", "-F", password, str(tmp_path)]
    found = subprocess.run(grep, capture_output=True, text=True)
    shown = " ".join(grep).replace(password, "PASSWORD")
    print(f"\n$ {shown}   # over {sum(1 for p in tmp_path.rglob('*') if p.is_file())} files: run, compiled, "
          f"report.html, the process's output and log records\n(exit {found.returncode}: "
          f"{'no file holds the password' if found.returncode == 1 else found.stdout})")
    print(f"/proc/{proc.pid}/cmdline while running: {cmdline}")
    assert found.returncode == 1, f"the password is in: {found.stdout}"
    # the same grep finds the password where it is (the environment the process was given)
    control = tmp_path.parent / f"{tmp_path.name}-control"
    control.mkdir()
    (control / "env").write_text(f"ARGUS_STORAGE={url}\n")
    assert subprocess.run([*grep[:-1], str(control)], capture_output=True).returncode == 0
    assert log.stat().st_size > 0


# ----------------------------------------------------------------------------- the campaign process


def _campaign_main(argv: list[str]) -> int:
    import argparse
    import logging
    import threading

    ap = argparse.ArgumentParser()
    ap.add_argument("campaign")
    ap.add_argument("run_root")
    ap.add_argument("compiled")
    ap.add_argument("--delay", type=float, default=0.0)
    ap.add_argument("--slow-while", default=None)
    ap.add_argument("--log", default=None)
    args = ap.parse_args(argv)
    if args.log:
        handler = logging.FileHandler(args.log)
        handler.setLevel(logging.DEBUG)
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        logging.getLogger().addHandler(handler)
        logging.getLogger().setLevel(logging.DEBUG)
    import argus.models.lm
    from tests.simulated_lm import SimulatedEngine, simulated_lm_builder

    engine = SimulatedEngine()
    answer = engine.complete
    lock = threading.Lock()

    slowed = [0]

    def complete(request):
        if args.delay:
            time.sleep(args.delay)
        if args.slow_while and os.path.exists(args.slow_while):
            slowed[0] += 1
            time.sleep(0.25)
            while slowed[0] > 10 and os.path.exists(args.slow_while):  # never done before the file is gone
                time.sleep(0.05)
        with lock:
            return answer(request)

    engine.complete = complete
    argus.models.lm.build_lm = simulated_lm_builder(engine)  # the campaign's default builder (``argus optimize`` passes none)
    import run_optimize

    return run_optimize.main([args.campaign, "--run-root", args.run_root, "--compiled", args.compiled, "--no-preflight"])


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "campaign":
        sys.exit(_campaign_main(sys.argv[2:]))
    sys.exit("usage: python -m tests.faults.test_campaign_faults campaign CAMPAIGN.yaml RUN_ROOT COMPILED "
             "[--delay S] [--slow-while FILE] [--log FILE]")
