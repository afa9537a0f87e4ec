"""MLflow tracking of campaigns (``optimizers.tracking``) against a real tracking server on loopback,
read back with ``MlflowClient``: the parent and child runs, params, metrics and artifacts; a resumed
campaign continues its runs without duplicating them; a server that goes away mid-campaign costs a
warning, not the campaign; an unreachable URI is a configuration error before the first trial; two
workers on PostgreSQL log to one parent.

The server: ``$ARGUS_TEST_MLFLOW`` (``.ci/run`` starts one and sets it), else one this module starts
itself (``tests/mlflow_server.py``), so the tests run anywhere the dev extra is installed and never skip
for want of a server. The campaign is ``tests/test_campaign.py``'s, with the simulated LM.
"""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlparse

import pytest

from tests.conftest import PROJECT, needs_data
from tests.mlflow_server import MlflowServer, Relay, free_port
from tests.test_campaign import CAMPAIGN
from tests.test_campaign_workers import needs_postgres, pg_url  # noqa: F401 - pg_url: the workers' throwaway database

MLFLOW_ENV = "ARGUS_TEST_MLFLOW"
PASSWORD = "s3cret-Pa55"
VAL_KEYS = ("quality", "cost_usd", "tokens", "latency_s")
TEST_KEYS = ("quality", "cost_usd", "tokens")


@pytest.fixture(scope="module")
def mlflow_uri(tmp_path_factory):
    """The tracking server's URI: ``$ARGUS_TEST_MLFLOW``, else a server started here for this module."""
    given = os.environ.get(MLFLOW_ENV)
    if given:
        yield given.rstrip("/")
        return
    server = MlflowServer(tmp_path_factory.mktemp("mlflow-server")).start()
    try:
        yield server.uri
    finally:
        server.stop()


def _with_password(uri: str, port: int | None = None) -> str:
    """The URI with user ``argus`` and :data:`PASSWORD` in it (the server ignores them; nothing may show them)."""
    u = urlparse(uri)
    return f"{u.scheme}://argus:{PASSWORD}@{u.hostname}:{port or u.port}"


def _client(uri: str):
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=uri)


class _Records(logging.Handler):
    """Every log record of the process while attached (the campaign's warnings, MLflow's own)."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(f"{record.name} {record.levelname} {record.getMessage()}")

    def __enter__(self):
        # the campaign's INFO lines too, whatever an earlier test left the logger's level at
        self._argus = logging.getLogger("argus")
        self._level, self._propagate = self._argus.level, self._argus.propagate
        self._argus.setLevel(logging.INFO)
        self._argus.propagate = True
        logging.getLogger().addHandler(self)
        return self

    def __exit__(self, *exc):
        logging.getLogger().removeHandler(self)
        self._argus.setLevel(self._level)
        self._argus.propagate = self._propagate


def _campaign(tmp: Path, uri: str | None, experiment: str, *, trials: int = 2, worker: str = "tracked", out=None):
    """Run (or resume) the test campaign in ``tmp`` with tracking at ``uri``; (result, console text)."""
    from rich.console import Console

    from optimizers.campaign import Campaign, CampaignConfig
    from tests.simulated_lm import SimulatedEngine, simulated_lm_builder

    cfg = CampaignConfig(**{**CAMPAIGN, "budget": {**CAMPAIGN["budget"], "trials": trials},
                            "tracking": {"mlflow": uri, "experiment": experiment}})
    out = out or io.StringIO()
    console = Console(file=out, width=250)
    result = Campaign(cfg, tmp / "run", tmp / "compiled", lm_builder=simulated_lm_builder(SimulatedEngine()),
                      worker=worker, console=console).run()
    return result, out.getvalue()


def _runs(client, experiment: str) -> dict:
    """The experiment's runs: {"parent": [runs], "trials": {trial: [runs]}}."""
    exp = client.get_experiment_by_name(experiment)
    assert exp is not None, f"no experiment {experiment}"
    runs = client.search_runs([exp.experiment_id], max_results=1000)
    out: dict = {"parent": [], "trials": {}}
    for r in runs:
        if r.data.tags.get("argus.role") == "campaign":
            out["parent"].append(r)
        else:
            out["trials"].setdefault(int(r.data.tags["argus.trial"]), []).append(r)
    return out


def _history(client, run_id: str, key: str) -> list[tuple[int, float]]:
    return sorted((m.step, m.value) for m in client.get_metric_history(run_id, key))


def _git_head() -> str:
    out = subprocess.run(["git", "-C", str(PROJECT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    return out.stdout.strip()


# ----------------------------------------------------------------------------- a tracked campaign, resumed


@pytest.fixture(scope="module")
def tracked(tmp_path_factory, mlflow_uri):
    """The campaign tracked in its own experiment, in two runs of one run folder: the first with a trial
    budget of 1, then resumed with 2 (the first trial is done, the second runs); the URI has a password."""
    tmp = tmp_path_factory.mktemp("tracked")
    experiment = f"test-{uuid.uuid4().hex[:10]}"
    uri = _with_password(mlflow_uri)
    client = _client(mlflow_uri)
    out = io.StringIO()
    with _Records() as records:
        first, _ = _campaign(tmp, uri, experiment, trials=1, out=out)
        after_first = _runs(client, experiment)
        t0 = time.monotonic()
        full, text = _campaign(tmp, uri, experiment, trials=2, out=out)
        seconds = time.monotonic() - t0
    assert not first.stopped and not full.stopped and not full.failed
    return SimpleNamespace(tmp=tmp, experiment=experiment, uri=uri, client=client, first=first, full=full,
                           after_first=after_first, console=text, logs=records.lines, seconds=seconds)


@needs_data
def test_the_campaign_is_one_parent_run_with_one_child_per_trial(tracked):
    client, full = tracked.client, tracked.full
    runs = _runs(client, tracked.experiment)
    (parent,) = runs["parent"]
    assert parent.info.run_name == "simtest" and parent.info.status == "FINISHED"
    tags = parent.data.tags
    assert tags["argus.campaign"] == "simtest" and tags["argus.worker"] == "tracked"
    assert tags["argus.git_revision"] == _git_head() != "unknown"
    assert parent.data.params["name"] == "simtest" and parent.data.params["budget.max_metric_calls"] == "8"
    assert not any(k.startswith("tracking") for k in parent.data.params)
    assert sorted(runs["trials"]) == [1, 2]
    for trial, (child,) in runs["trials"].items():
        assert child.data.tags["mlflow.parentRunId"] == parent.info.run_id
        assert child.data.tags["argus.campaign"] == "simtest" and child.data.tags["argus.worker"] == "tracked"
        assert child.info.status == "FINISHED" and child.info.run_name == f"trial-{trial}"
        # params: the trial's settings
        evals = [e for e in full.evaluations if e.trial == trial]
        settings = evals[0].settings
        assert child.data.params["task_model"] == settings["task_model"] == "local/smollm2"
        assert child.data.params["framenet_hints"] == json.dumps(settings["framenet_hints"])
        assert child.data.params["pipeline.chunking.max_sentences"] == "12"
        # metrics: every candidate's validation quality and cost, by its index in the trial
        for key in VAL_KEYS:
            want = sorted((e.gepa_index, pytest.approx(getattr(e, key))) for e in evals)
            assert _history(client, child.info.run_id, f"val_{key}") == want
    # the members' test scores on their trials' runs, as their manifests have them
    root = tracked.tmp / "compiled" / "simtest"
    by_key = {e.key: e for e in full.evaluations}
    assert full.frontier
    for member in full.frontier:
        manifest = json.loads((root / member / "manifest.json").read_text())
        ev = by_key[member]
        (child,) = runs["trials"][ev.trial]
        for key in TEST_KEYS:
            history = dict(_history(client, child.info.run_id, f"test_{key}"))
            assert history[ev.gepa_index] == pytest.approx(manifest["splits"]["test"][key])
    # the hypervolume by trial, as frontier.json has it
    frontier = json.loads((root / "frontier.json").read_text())
    assert _history(client, parent.info.run_id, "hypervolume") == [
        (h["iteration"], pytest.approx(h["hypervolume"])) for h in frontier["hypervolume_history"]]
    assert [s for s, _ in _history(client, parent.info.run_id, "hypervolume")] == [1, 2]


@needs_data
def test_the_frontier_report_and_members_are_the_parents_artifacts(tracked, tmp_path):
    client = tracked.client
    (parent,) = _runs(client, tracked.experiment)["parent"]
    local = Path(client.download_artifacts(parent.info.run_id, "", str(tmp_path)))
    root = tracked.tmp / "compiled" / "simtest"
    assert (local / "frontier.json").read_bytes() == (root / "frontier.json").read_bytes()
    for member in tracked.full.frontier:
        for name in ("manifest.json", "programs.json"):
            assert (local / member / name).read_bytes() == (root / member / name).read_bytes()
    html = (local / "report.html").read_text()
    assert "Frontier report — simtest" in html and "data:image/png;base64" in html
    assert all(m in html for m in tracked.full.frontier)


@needs_data
def test_a_resumed_campaign_continues_its_runs_without_duplicates(tracked):
    """The second run found the parent and the first trial's run again (its finished trials are logged again
    on resume, adding no point); a third run of the finished campaign adds no run and no point."""
    client = tracked.client
    before = tracked.after_first
    assert len(before["parent"]) == 1 and sorted(before["trials"]) == [1]
    now = _runs(client, tracked.experiment)
    assert [r.info.run_id for r in now["parent"]] == [r.info.run_id for r in before["parent"]]
    assert [r.info.run_id for r in now["trials"][1]] == [r.info.run_id for r in before["trials"][1]]

    def points(runs) -> dict:
        out = {}
        for r in runs["parent"] + [r for rs in runs["trials"].values() for r in rs]:
            for key in r.data.metrics:
                out[(r.info.run_id, key)] = _history(client, r.info.run_id, key)
        return out

    logged = points(now)
    for (_, key), history in logged.items():
        steps = [s for s, _ in history]
        assert len(steps) == len(set(steps)), (key, history)  # one point per step: nothing logged twice
    again, _ = _campaign(tracked.tmp, tracked.uri, tracked.experiment, trials=2)
    assert not again.stopped and again.frontier == tracked.full.frontier
    later = _runs(client, tracked.experiment)
    assert len(later["parent"]) == 1 and {t: len(rs) for t, rs in later["trials"].items()} == {1: 1, 2: 1}
    assert later["parent"][0].info.status == "FINISHED"
    assert points(later) == logged


@needs_data
def test_no_password_of_the_tracking_uri_is_printed_logged_or_recorded(tracked):
    client = tracked.client
    assert "tracked in MLflow http://argus:***@127.0.0.1" in tracked.console  # the server, named, masked
    assert PASSWORD not in tracked.console
    # the log names the server too (masked), and no line anywhere carries the password
    assert [line for line in tracked.logs if line.startswith("argus INFO tracking to MLflow http://argus:***@127.0.0.1")]
    assert not [line for line in tracked.logs if PASSWORD in line]
    # and with the server up, no tracking call failed (a param logged again with another value would)
    assert not [line for line in tracked.logs if line.startswith("argus WARNING MLflow tracking")]
    for path in (tracked.tmp / "run").rglob("*.json"):
        assert PASSWORD not in path.read_text(errors="replace"), path
    record = json.loads((tracked.tmp / "run" / "campaign.json").read_text())
    assert record["tracking"]["mlflow"].startswith("http://argus:***@")
    runs = _runs(client, tracked.experiment)
    for r in runs["parent"] + [r for rs in runs["trials"].values() for r in rs]:
        assert not [v for v in {**r.data.params, **r.data.tags}.values() if PASSWORD in v]


# ----------------------------------------------------------------------------- failures


@needs_data
def test_a_server_that_goes_away_mid_campaign_costs_a_warning_not_the_campaign(tmp_path, mlflow_uri, monkeypatch):
    """The server is reached through a relay that is closed as trial 2 starts: every later call fails,
    the tracker warns and gives up, the campaign runs to its frontier without waiting on it. Resumed
    against the server itself, the campaign logs what was missed (trial 2) and duplicates nothing."""
    from optimizers import tracking

    experiment = f"test-{uuid.uuid4().hex[:10]}"
    relay = Relay(urlparse(mlflow_uri).port)
    started = tracking.CampaignTracker.trial_started
    finish = tracking.CampaignTracker.finish
    waited: list[float] = []

    def trial_started(self, iteration, settings):
        if iteration == 2:
            relay.close()
        started(self, iteration, settings)

    def timed_finish(self, compiled_dir, status):
        t0 = time.monotonic()
        finish(self, compiled_dir, status)
        waited.append(time.monotonic() - t0)

    monkeypatch.setattr(tracking.CampaignTracker, "trial_started", trial_started)
    monkeypatch.setattr(tracking.CampaignTracker, "finish", timed_finish)
    with _Records() as records:
        result, console = _campaign(tmp_path, _with_password(mlflow_uri, relay.port), experiment)
    assert not result.stopped and not result.failed and result.frontier
    assert (tmp_path / "compiled" / "simtest" / "frontier.json").exists()
    warnings = [line for line in records.lines if line.startswith("argus WARNING MLflow tracking")]
    assert any("failed" in w for w in warnings) and any("nothing more is logged" in w for w in warnings)
    assert not [line for line in records.lines if PASSWORD in line] and PASSWORD not in console
    assert waited and waited[0] < 20  # the end did not wait on the dead server
    client = _client(mlflow_uri)
    runs = _runs(client, experiment)
    assert sorted(runs["trials"]) == [1] and runs["parent"][0].info.status == "RUNNING"
    trial1 = runs["trials"][1][0].info.run_id

    monkeypatch.undo()
    resumed, _ = _campaign(tmp_path, _with_password(mlflow_uri), experiment)
    assert resumed.frontier == result.frontier
    runs = _runs(client, experiment)
    assert len(runs["parent"]) == 1 and runs["parent"][0].info.status == "FINISHED"
    assert {t: len(rs) for t, rs in runs["trials"].items()} == {1: 1, 2: 1}
    assert runs["trials"][1][0].info.run_id == trial1
    evals2 = [e for e in result.evaluations if e.trial == 2]
    (child2,) = runs["trials"][2]
    assert child2.info.status == "FINISHED"
    assert _history(client, child2.info.run_id, "val_quality") == sorted(
        (e.gepa_index, pytest.approx(e.quality)) for e in evals2)
    assert client.list_artifacts(runs["parent"][0].info.run_id, "")


@needs_data
def test_an_unreachable_tracking_server_is_a_config_error_before_any_trial(tmp_path):
    """argus optimize --mlflow URI on a closed port: exit 2 with one line naming the server (password
    masked), before any LM call."""
    import yaml
    from typer.testing import CliRunner

    from argus.cli import app

    campaign = tmp_path / "simtest.yaml"
    campaign.write_text(yaml.safe_dump(CAMPAIGN))
    uri = f"http://argus:{PASSWORD}@127.0.0.1:{free_port()}"
    t0 = time.monotonic()
    res = CliRunner().invoke(app, ["optimize", str(campaign), "--run-root", str(tmp_path / "runs"),
                                   "--compiled", str(tmp_path / "compiled"), "--mlflow", uri])
    assert res.exit_code == 2, res.output
    assert "cannot log to the MLflow tracking server http://argus:***@127.0.0.1" in res.output
    assert PASSWORD not in res.output
    assert time.monotonic() - t0 < 60
    run = tmp_path / "runs" / "simtest"
    assert not (run / "ledger.jsonl").exists()
    assert PASSWORD not in (run / "campaign.json").read_text()


def test_tracking_without_mlflow_names_the_extra(tmp_path, monkeypatch):
    from argus.errors import ConfigError
    from optimizers.config import CampaignConfig
    from optimizers.storage import Artifacts
    from optimizers.tracking import open_tracker

    monkeypatch.setitem(sys.modules, "mlflow", None)  # what a missing package looks like to an import
    cfg = CampaignConfig(**{**CAMPAIGN, "tracking": {"mlflow": f"http://argus:{PASSWORD}@127.0.0.1:5000"}})
    with pytest.raises(ConfigError, match=r"pip install 'argus-kg\[track\]'") as err:
        open_tracker(cfg, Artifacts(tmp_path), worker="w")
    assert PASSWORD not in str(err.value)


@needs_data
def test_a_campaign_without_tracking_does_not_import_mlflow(tmp_path):
    code = f"""
import sys
sys.path.insert(0, {str(PROJECT)!r})
from pathlib import Path
from optimizers.campaign import Campaign, CampaignConfig
from tests.simulated_lm import SimulatedEngine, simulated_lm_builder
run = Path({str(tmp_path / 'run')!r})
run.mkdir()
(run / "STOP").write_text("")
result = Campaign(CampaignConfig(**{CAMPAIGN!r}), run, Path({str(tmp_path / 'compiled')!r}),
                  lm_builder=simulated_lm_builder(SimulatedEngine())).run()
print("stopped:", result.stopped)
print("mlflow imported:", "mlflow" in sys.modules)
"""
    res = subprocess.run([sys.executable, "-c", code], cwd=PROJECT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "stopped: stop file" in res.stdout and "mlflow imported: False" in res.stdout


def test_params_leave_secrets_out():
    from optimizers.tracking import flat_params

    params = flat_params({"task_model": "openai/gpt-4o-mini", "temperature": 0.0, "max_retries": [0, 1],
                          "models": {"stage1": {"model": "x", "api_key": "sk-abcdefghijklmnopqrstu", "api_base": "http://h"}},
                          "note": "sk-abcdefghijklmnopqrstuvwx", "server": f"http://argus:{PASSWORD}@h:1"})
    assert params == {"task_model": "openai/gpt-4o-mini", "temperature": "0.0", "max_retries": "[0, 1]",
                      "models.stage1.model": "x"}


# ----------------------------------------------------------------------------- workers


@needs_postgres
def test_workers_starting_together_find_one_parent(tmp_path, mlflow_uri, pg_url, monkeypatch):  # noqa: F811
    """Workers that connect at the same moment (creating a run made slow, so they overlap) on one PostgreSQL
    storage end with one parent run: finding or creating it is done one worker at a time."""
    import threading

    from mlflow.tracking import MlflowClient

    from optimizers.campaign import Campaign, CampaignConfig
    from optimizers.tracking import open_tracker

    experiment = f"test-{uuid.uuid4().hex[:10]}"
    cfg = CampaignConfig(**{**CAMPAIGN, "tracking": {"mlflow": mlflow_uri, "experiment": experiment}})
    create_run = MlflowClient.create_run

    def slow_create_run(self, *args, **kwargs):
        time.sleep(1.0)
        return create_run(self, *args, **kwargs)

    monkeypatch.setattr(MlflowClient, "create_run", slow_create_run)
    arts = []
    for name in ("a", "b", "c"):
        worker = Campaign(cfg, tmp_path / name, tmp_path / "compiled", storage=pg_url, worker=name)
        worker._open_study()
        arts.append((name, worker.scheduler.artifacts()))
    parents: list[str] = []

    def connect(name, art):
        parents.append(open_tracker(cfg, art, worker=name, storage_url=pg_url).parent_id)

    threads = [threading.Thread(target=connect, args=a) for a in arts]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(parents) == 3 and len(set(parents)) == 1
    (parent,) = _runs(_client(mlflow_uri), experiment)["parent"]
    assert parent.info.run_id == parents[0]


@needs_data
@needs_postgres
def test_two_workers_on_postgresql_log_to_one_parent(tmp_path, mlflow_uri, pg_url):  # noqa: F811
    """Two worker processes of one campaign (the campaign file names the tracking server), sharing only the
    PostgreSQL database: one parent run, one child run per trial, each by the worker that ran it."""
    import yaml

    from tests import test_campaign_workers as workers

    experiment = f"test-{uuid.uuid4().hex[:10]}"
    (tmp_path / "simtest.yaml").write_text(yaml.safe_dump({
        **workers.CAMPAIGN, "concurrency": {**workers.CAMPAIGN["concurrency"], "num_threads": 2},
        "tracking": {"mlflow": mlflow_uri, "experiment": experiment}}))
    workers.run_two_workers_together(tmp_path, pg_url, ready_s=180)
    runs = _runs(_client(mlflow_uri), experiment)
    (parent,) = runs["parent"]
    assert parent.info.status == "FINISHED"
    assert {t: len(rs) for t, rs in runs["trials"].items()} == {1: 1, 2: 1}
    children = [rs[0] for rs in runs["trials"].values()]
    for c in children:
        assert c.data.tags["mlflow.parentRunId"] == parent.info.run_id and c.info.status == "FINISHED"
    assert len({c.data.tags["argus.worker"] for c in children}) == 2  # one trial each
    frontier = json.loads((tmp_path / "a" / "compiled" / "simtest" / "frontier.json").read_text())
    for trial, (child,) in runs["trials"].items():
        steps = [s for s, _ in _history(_client(mlflow_uri), child.info.run_id, "val_quality")]
        candidates = {r["id"] for r in frontier["all_candidates"] if r["iteration"] == trial}
        assert len(steps) == len(candidates) == len(set(steps))

