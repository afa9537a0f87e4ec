"""Campaigns in parallel: threads inside a campaign (same booked spend and frontier as one thread) and
several worker processes running one campaign through an Optuna RDB storage (a real PostgreSQL server:
``ARGUS_TEST_POSTGRES=postgresql://user:pw@127.0.0.1:5432/postgres``; each test makes and drops its own
throwaway database), with the simulated LM of ``tests/test_campaign.py``.

Run as ``python -m tests.test_campaign_workers worker …`` this module is the test-only worker entry: it
installs the simulated LM as ``argus.models.lm.build_lm`` and runs ``run_optimize.main`` (``argus optimize``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from tests.conftest import PROJECT, needs_data
from tests.test_campaign import CAMPAIGN as BASE_CAMPAIGN

VAL_DOCS = ["nysd-1-24-cv-03572", "kyed-5-23-cv-00318"]
# test_campaign's campaign, validated on two documents (the deployment runs have something to run at once)
CAMPAIGN = {
    **BASE_CAMPAIGN,
    "data": {**BASE_CAMPAIGN["data"], "val": {"split": "dev", "ids": VAL_DOCS}},
    "concurrency": {"num_threads": 1, "heartbeat_s": 1, "grace_s": 3, "poll_s": 0.3},
}
PG_ENV = "ARGUS_TEST_POSTGRES"
needs_postgres = pytest.mark.skipif(
    not os.environ.get(PG_ENV),
    reason=f"{PG_ENV} is not set (a PostgreSQL URL, e.g. postgresql://postgres:pw@127.0.0.1:5432/postgres; "
           ".ci/run starts a server on loopback and sets it)")


# ----------------------------------------------------------------------------- the simulated LM, shared


def simulated_builder(threads: list | None = None):
    """The simulated LM; the names of the threads that called it go to ``threads``."""
    from tests.simulated_lm import SimulatedEngine, simulated_lm_builder

    engine = SimulatedEngine()
    answer = engine.complete

    def complete(request):
        if threads is not None:
            threads.append(threading.current_thread().name)
        return answer(request)

    engine.complete = complete
    return simulated_lm_builder(engine)


def worker_main(argv: list[str]) -> int:
    """``worker CAMPAIGN.yaml RUN_ROOT COMPILED STORAGE [READY GO]``: one worker process of a campaign."""
    campaign, run_root, compiled, storage, *barrier = argv
    import argus.models.lm

    argus.models.lm.build_lm = simulated_builder()  # the campaign's default builder (``argus optimize`` passes none)
    import run_optimize
    from argus.models.embeddings import load_encoder
    from optimizers import campaign as _  # noqa: F401 - imported before the start line, as the other worker

    load_encoder()
    if barrier:  # start together: both workers are ready before either claims a trial
        ready, go = map(Path, barrier)
        ready.write_text(str(os.getpid()))
        deadline = time.time() + 120
        while not go.exists() and time.time() < deadline:
            time.sleep(0.02)
    return run_optimize.main([campaign, "--run-root", run_root, "--compiled", compiled, "--storage", storage])


# ----------------------------------------------------------------------------- fixtures


def _cfg(**changes):
    from optimizers.config import CampaignConfig

    return CampaignConfig(**{**CAMPAIGN, **changes})


def _run(root: Path, num_threads: int, threads: list | None = None, **kwargs):
    from optimizers.campaign import Campaign

    return Campaign(_cfg(), root / "run", root / "compiled", lm_builder=simulated_builder(threads),
                    num_threads=num_threads, **kwargs).run()


def _view(compiled: Path) -> dict:
    from tests.test_campaign import _frontier_view

    return _frontier_view(compiled)


def _spend(compiled: Path) -> dict:
    spend = json.loads((compiled / "simtest" / "frontier.json").read_text())["optimization_spend"]
    spend.pop("estimate", None)

    def rounded(x):
        if isinstance(x, dict):
            return {k: rounded(v) for k, v in x.items()}
        return round(x, 12) if isinstance(x, float) else x

    return rounded(spend)


def _ledger(run_dir: Path, name: str = "ledger*.jsonl") -> list[dict]:
    return [json.loads(line) for p in sorted(run_dir.glob(name)) for line in p.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def sequential(tmp_path_factory):
    """The campaign in one process with one thread: what every parallel run must reproduce."""
    root = tmp_path_factory.mktemp("sequential")
    result = _run(root, 1)
    assert not result.stopped and not result.failed
    return root, result


@pytest.fixture()
def pg_url():
    """A throwaway database on the PostgreSQL server of $ARGUS_TEST_POSTGRES, dropped afterwards. With the
    variable set, a missing driver or server fails the test (it was meant to run)."""
    base = os.environ[PG_ENV]
    try:
        import psycopg
    except ImportError:
        pytest.fail(f"{PG_ENV} is set but psycopg is not installed (pip install 'psycopg[binary]')")
    from optimizers.storage import rdb_url

    name = f"argus_test_{uuid.uuid4().hex[:12]}"
    dsn = base.replace("postgresql+psycopg://", "postgresql://")
    try:
        admin = psycopg.connect(dsn, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        pytest.fail(f"{PG_ENV} is set but its server cannot be reached: {str(exc).strip()[:300]}")
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    head, _, _ = dsn.rpartition("/")
    try:
        yield rdb_url(f"{head}/{name}")
    finally:
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _study(url: str):
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna.load_study(study_name="simtest", storage=url)


# ----------------------------------------------------------------------------- threads


@needs_data
def test_threads_book_the_same_spend_and_give_the_same_frontier(tmp_path, sequential):
    """num_threads 4 against 1: GEPA's minibatches and the deployment runs' documents run in threads, and
    every call made there lands in the same ledger, phase and trial, with the same frontier."""
    seq_root, seq = sequential
    threads: list[str] = []
    par = _run(tmp_path, 4, threads)
    assert not par.stopped and not par.failed
    # the work did run in threads: DSPy's evaluation pool (GEPA) and the deployment runs' pool
    assert any(t.startswith("argus-eval") for t in threads)
    assert any(t.startswith("ThreadPoolExecutor") for t in threads)
    assert _view(tmp_path / "compiled") == _view(seq_root / "compiled")
    assert _spend(tmp_path / "compiled") == _spend(seq_root / "compiled")
    assert par.calls == seq.calls
    # the same calls, each booked once; a deployment run's documents reach the ledger in document order
    key = ("doc_id", "stage", "program", "model", "prompt_tokens", "completion_tokens", "cached_prompt_tokens",
           "cached_completion_tokens")
    seq_ledger, par_ledger = _ledger(seq_root / "run"), _ledger(tmp_path / "run")
    assert len(par_ledger) == len(seq_ledger) == par.calls
    assert sorted(tuple(e[k] for k in key) for e in par_ledger) == sorted(tuple(e[k] for k in key) for e in seq_ledger)

    def documents(ledger):  # the documents deployed on, in ledger order (one entry per run of calls)
        runs = [e["doc_id"] for e in ledger if e["doc_id"] in VAL_DOCS]
        return [d for i, d in enumerate(runs) if i == 0 or runs[i - 1] != d]

    assert documents(par_ledger) == documents(seq_ledger)


# ----------------------------------------------------------------------------- workers on a storage


def _positions(study) -> dict:
    from optuna.trial import TrialState

    return {t.number: (t.state, t.user_attrs.get("argus:position"), t.params, t.user_attrs.get("argus:worker"),
                       t.system_attrs.get("argus:duplicate", False)) for t in study.get_trials(deepcopy=False)
            if t.state != TrialState.WAITING}


def _worker(tmp: Path, name: str, url: str, barrier: tuple[Path, Path] | None = None) -> subprocess.Popen:
    cfg = tmp / "simtest.yaml"
    if not cfg.exists():
        import yaml

        # threads in the workers too: the frontier is still the one of a single thread in a single process
        cfg.write_text(yaml.safe_dump({**CAMPAIGN, "concurrency": {**CAMPAIGN["concurrency"], "num_threads": 2}}))
    args = [sys.executable, "-m", "tests.test_campaign_workers", "worker", str(cfg), str(tmp / name / "runs"),
            str(tmp / name / "compiled"), url, *(map(str, barrier or ()))]
    log = open(tmp / f"{name}.log", "ab")
    return subprocess.Popen(args, cwd=PROJECT, stdout=log, stderr=subprocess.STDOUT)


def run_two_workers_together(tmp: Path, url: str, ready_s: float) -> None:
    """Workers ``a`` and ``b`` on ``url``, released together once both are ready (or ``ready_s`` passed),
    then waited for; a worker that exits early or fails fails the test with its log."""
    ready = [tmp / "a.ready", tmp / "b.ready"]
    go = tmp / "go"
    procs = {name: _worker(tmp, name, url, (r, go)) for name, r in zip("ab", ready)}
    deadline = time.time() + ready_s
    while not all(r.exists() for r in ready) and time.time() < deadline:
        for name, p in procs.items():
            assert p.poll() is None, (tmp / f"{name}.log").read_text()[-4000:]
        time.sleep(0.05)
    go.write_text("")
    for name, proc in procs.items():
        _wait(proc, tmp, name)


def _wait(proc: subprocess.Popen, tmp: Path, name: str, timeout: float = 240) -> None:
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        code = proc.wait()
    assert code == 0, (tmp / f"{name}.log").read_text()[-4000:]


@needs_data
@needs_postgres
def test_two_workers_run_one_campaign_through_postgresql(tmp_path, sequential, pg_url):
    """Two worker processes with nothing shared but the database (own run and compiled folders, as on two
    machines): each trial is run once, by one of them; each writes the frontier of everything both
    evaluated, the frontier one process gives; a worker started again afterwards does nothing new."""
    from optuna.trial import TrialState

    seq_root, _ = sequential
    run_two_workers_together(tmp_path, pg_url, ready_s=120)

    study = _study(pg_url)
    trials = _positions(study)
    complete = [t for t in trials.values() if t[0] == TrialState.COMPLETE]
    # the trial budget, by the two workers together: every position once, no setting twice, one each
    assert len(complete) == CAMPAIGN["budget"]["trials"]
    assert sorted(t[1] for t in complete) == [0, 1]
    assert len({json.dumps(t[2], sort_keys=True) for t in complete}) == len(complete)
    assert len({t[3] for t in complete}) == 2
    # nothing else ran: a trial that is not complete is a duplicate queue entry given up when claimed
    assert all(t[4] for t in trials.values() if t[0] != TrialState.COMPLETE)

    base = _view(seq_root / "compiled")
    for name in "ab":
        compiled = tmp_path / name / "compiled"
        assert _view(compiled) == base  # members, every candidate with its lineage, hypervolume, manifests
        ff = json.loads((compiled / "simtest" / "frontier.json").read_text())
        assert [h["iteration"] for h in ff["hypervolume_history"]] == [1, 2]
        # each worker's run folder holds only its own trial's evaluations; its frontier has both workers'
        own = {p.name[len("val-"):-len(".json")] for p in (tmp_path / name / "runs" / "simtest" / "evals").glob("val-*.json")}
        candidates = {r["id"] for r in ff["all_candidates"]}
        assert own and own < candidates
        assert {r["iteration"] for r in ff["all_candidates"] if r["id"] in own} != {1, 2}
    # the campaign's spend is both workers' ledgers, each booked once
    both = _ledger(tmp_path / "a" / "runs" / "simtest") + _ledger(tmp_path / "b" / "runs" / "simtest")
    spend = json.loads((tmp_path / "a" / "compiled" / "simtest" / "frontier.json").read_text())["optimization_spend"]
    assert spend["total"]["calls"] == len(both) and set(spend["by_trial"]) == {"1", "2"}

    # a worker started again after the campaign finished (here in this process): no new call, the same frontier
    from optimizers.campaign import Campaign

    before = {p.name for p in (tmp_path / "a" / "runs" / "simtest").glob("ledger*.jsonl")}
    again = Campaign(_cfg(), tmp_path / "a" / "runs" / "simtest", tmp_path / "a" / "compiled", storage=pg_url,
                     lm_builder=simulated_builder(), worker="again").run()
    assert not again.stopped and not again.failed and again.calls == len(both)
    new = [p for p in (tmp_path / "a" / "runs" / "simtest").glob("ledger*.jsonl") if p.name not in before]
    assert all(not p.read_text().strip() for p in new)
    assert _view(tmp_path / "a" / "compiled") == base
    assert len([t for t in _positions(_study(pg_url)).values() if t[0] == TrialState.COMPLETE]) == 2


@needs_data
@needs_postgres
def test_a_live_workers_trial_is_not_taken_a_stale_one_is(tmp_path, sequential, pg_url):
    """A trial whose worker keeps its heartbeat is left to it; once the heartbeats stop for the grace
    period, a waiting worker fails it, queues the position again and runs it to the same frontier."""
    from optuna.trial import TrialState

    from optimizers.campaign import Campaign

    seq_root, _ = sequential
    cfg = _cfg(budget={**CAMPAIGN["budget"], "trials": 1}, concurrency={**CAMPAIGN["concurrency"], "grace_s": 2})
    # another worker (on another machine) has claimed the only position and beats for longer than grace_s
    other = Campaign(cfg, tmp_path / "other", tmp_path / "other-compiled", storage=pg_url, worker="elsewhere")
    study = other._open_study()
    kind, (trial_id, position) = other._next_trial(study, other._plan())
    assert kind == "trial" and position == 0
    storage = other.scheduler.storage  # the Optuna storage the worker built
    number = storage.get_trial(trial_id).number
    storage.set_trial_system_attr(trial_id, "argus:host", "another-machine")
    beating = threading.Event()
    stopped_at: list[float] = []

    def beat():
        end = time.monotonic() + 1.75 * cfg.concurrency.grace_s
        while time.monotonic() < end:
            storage.record_heartbeat(trial_id)
            beating.set()
            time.sleep(0.3)
        stopped_at.append(time.time())

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    beating.wait(10)
    result = Campaign(cfg, tmp_path / "run", tmp_path / "compiled", lm_builder=simulated_builder(), storage=pg_url,
                      worker="live", num_threads=2).run()
    thread.join()
    assert not result.stopped and not result.failed
    trials = study.get_trials(deepcopy=False)
    theirs = next(t for t in trials if t.number == number)
    mine = [t for t in trials if t.state == TrialState.COMPLETE]
    assert theirs.state == TrialState.FAIL
    assert len(mine) == 1 and mine[0].user_attrs["argus:worker"] == "live"
    assert mine[0].user_attrs["argus:position"] == 0 and mine[0].params == theirs.system_attrs["fixed_params"]
    # taken over only after the other worker's heartbeats stopped
    assert mine[0].datetime_start.timestamp() >= stopped_at[0] - 0.5
    seq = json.loads((seq_root / "compiled" / "simtest" / "frontier.json").read_text())
    first = sorted(r["id"] for r in seq["all_candidates"] if r["iteration"] == 1)
    ff = json.loads((tmp_path / "compiled" / "simtest" / "frontier.json").read_text())
    assert sorted(r["id"] for r in ff["all_candidates"]) == first


@needs_data
@needs_postgres
def test_a_trial_of_a_dead_process_on_this_machine_is_taken_at_once(tmp_path, sequential, pg_url):
    """A worker on this machine was killed mid-trial: the next worker to start sees its process is gone and
    queues the position again at once (no grace period to wait), reusing what the storage holds."""
    from optuna.trial import TrialState

    from optimizers.campaign import Campaign

    seq_root, _ = sequential
    cfg = _cfg(budget={**CAMPAIGN["budget"], "trials": 1}, concurrency={**CAMPAIGN["concurrency"], "grace_s": 600})
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    killed = Campaign(cfg, tmp_path / "killed", tmp_path / "killed-compiled", storage=pg_url, worker="killed")
    study = killed._open_study()
    kind, (trial_id, _) = killed._next_trial(study, killed._plan())
    storage = killed.scheduler.storage  # the Optuna storage the worker built
    number = storage.get_trial(trial_id).number
    storage.set_trial_system_attr(trial_id, "argus:pid", int(dead.stdout))
    t0 = time.monotonic()
    result = Campaign(cfg, tmp_path / "run", tmp_path / "compiled", lm_builder=simulated_builder(), storage=pg_url,
                      worker="next").run()
    assert not result.stopped and time.monotonic() - t0 < 120
    trials = {t.number: t for t in study.get_trials(deepcopy=False)}
    assert trials[number].state == TrialState.FAIL
    assert [t.user_attrs["argus:worker"] for t in trials.values() if t.state == TrialState.COMPLETE] == ["next"]
    seq = json.loads((seq_root / "compiled" / "simtest" / "frontier.json").read_text())
    ff = json.loads((tmp_path / "compiled" / "simtest" / "frontier.json").read_text())
    assert sorted(r["id"] for r in ff["all_candidates"]) == sorted(r["id"] for r in seq["all_candidates"]
                                                                   if r["iteration"] == 1)


def test_positions_are_claimed_once_by_racing_workers(tmp_path):
    """Claims without any LM: several workers queue the positions at once (duplicates), then claim in turn
    on a shared SQLite storage; every position goes to exactly one of them."""
    from optuna.trial import TrialState

    from optimizers.campaign import Campaign

    cfg = _cfg(space={**CAMPAIGN["space"], "temperature": [0.0, 0.5, 1.0]}, budget={**CAMPAIGN["budget"], "trials": 5})
    url = f"sqlite:///{tmp_path / 'optuna.db'}"
    workers = [Campaign(cfg, tmp_path / f"w{i}", tmp_path / "c", storage=url, worker=f"w{i}") for i in range(3)]
    studies = [w._open_study() for w in workers]
    plan = workers[0]._plan()
    assert len(plan) == 5 and len({json.dumps(p, sort_keys=True) for p in plan}) == 5
    for w, s in zip(workers, studies):  # all queue before anyone claims: every position is queued three times
        for p in range(len(plan)):
            s.enqueue_trial(dict(plan[p]), user_attrs={"argus:position": p})
    claimed = []
    for _ in range(3):
        for w, s in zip(workers, studies):
            kind, value = w._next_trial(s, plan)
            if kind == "trial":
                claimed.append((w.worker, value[1]))
    assert sorted(p for _, p in claimed) == list(range(5))
    study = studies[0]
    running = study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
    assert sorted(t.user_attrs["argus:position"] for t in running) == list(range(5))
    for t in running:
        assert t.system_attrs["fixed_params"] == plan[t.user_attrs["argus:position"]]
    # all positions run: the next worker waits for them
    assert workers[0]._next_trial(studies[0], plan) == ("wait", 5)
    # a worker that released its trial (a stop): the position is queued again, with the same settings
    trial = running[0]
    workers[0]._release(study, workers[0].scheduler.trial_id(study, trial))
    kind, (tid, pos) = workers[1]._next_trial(studies[1], plan)
    assert kind == "trial" and pos == trial.user_attrs["argus:position"]
    assert workers[1].scheduler.storage.get_trial(tid).system_attrs["fixed_params"] == trial.system_attrs["fixed_params"]



def test_a_worker_with_another_campaign_file_is_refused(tmp_path):
    """Workers of one storage run one campaign: a file of the same name that differs in what it optimizes is
    refused; threads, wall clock and model servers may differ per worker."""
    from argus.errors import ConfigError
    from optimizers.campaign import Campaign

    url = f"sqlite:///{tmp_path / 'optuna.db'}"

    def check(cfg):
        worker = Campaign(cfg, tmp_path / "run", tmp_path / "c", storage=url)
        study = worker._open_study()
        worker._art = worker.scheduler.artifacts()
        worker._check_fingerprint(study)

    check(_cfg())
    check(_cfg(concurrency={"num_threads": 8}, models={**CAMPAIGN["models"], "defaults": {"api_base": "http://x:1"}}))
    with pytest.raises(ConfigError, match="another configuration"):
        check(_cfg(budget={**CAMPAIGN["budget"], "max_metric_calls": 9}))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "worker":
        sys.exit(worker_main(sys.argv[2:]))
    sys.exit("usage: python -m tests.test_campaign_workers worker CAMPAIGN.yaml RUN_ROOT COMPILED STORAGE [READY GO]")
