"""MLflow tracking of a campaign: ``tracking: {mlflow: URI}`` in the campaign file or
``argus optimize --mlflow URI`` (off by default; ``pip install 'argus-kg[track]'``).

What a campaign logs there, in the experiment ``tracking.experiment``:

- **one parent run per campaign**, tagged ``argus.campaign`` (its name), ``argus.git_revision`` and
  ``argus.worker`` (the worker that created it), with the campaign file as params (secrets scrubbed)
  and the hypervolume and frontier size by trial as metrics (step: trial). Its id is stored with
  the campaign's finished work (``RUN/tracking.json`` and, with an RDB storage, the study), so a
  resumed campaign and every worker of it log to the same parent;
- **one child run per trial position**, tagged ``argus.trial`` (1-based) and ``argus.worker`` (the
  worker that ran it) and found again by that tag: a resumed or taken-over trial continues its run.
  Params: the trial's settings (scrubbed). Metrics per candidate (step: the candidate's index in the
  trial): ``val_quality``, ``val_cost_usd``, ``val_tokens``, ``val_latency_s``, and for a frontier
  member ``test_quality``, ``test_cost_usd``, ``test_tokens``;
- **artifacts** of the parent when this worker ends: ``frontier.json``, ``report.html`` (rendered
  from the compiled folder) and each member's ``<member>/manifest.json`` and ``<member>/programs.json``.

Every metric carries its run's start time as its timestamp, so logging a value again (a resumed
campaign, another worker, the catch-up of trials finished before) adds no point on a tracking
server with a database backend. A run left RUNNING is FINISHED when its trial (or the campaign)
completes and KILLED when it is stopped; a resumed campaign sets it RUNNING again.

Logging never slows or fails the campaign: the calls run in one background thread, in order. The
campaign waits only at the start (the server is asked for the experiment and the parent run, so an
unreachable URI is a :class:`~argus.errors.ConfigError` before the first trial) and at the end (at most
:data:`FLUSH_S` for what is queued). A failed call is a warning; after :data:`MAX_FAILURES` failures in a
row the tracker gives up and the campaign goes on without it. A tracking URI is printed and logged
only with its password masked, never recorded. ``mlflow`` is imported only here, and only when
tracking is on.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import queue
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable

from argus.errors import ConfigError
from optimizers.evaluation import CandidateEval
from optimizers.storage import TRACKING_LOCK, Artifacts, advisory_lock, rdb_url, redact_url

_log = logging.getLogger("argus")

INSTALL_HINT = "pip install 'argus-kg[track]'"
STATE = "tracking.json"
"""Finished-work name (``optimizers.storage.Artifacts``) of the experiment and parent run ids."""
FLUSH_S = 60.0
"""The longest a campaign waits at its end for queued tracking calls."""
MAX_FAILURES = 3
"""Failed tracking calls in a row after which the tracker gives up for this run."""
CLIENT_DEFAULTS = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "30",
    "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true",
    "MLFLOW_DISABLE_TELEMETRY": "true",
}
"""MLflow client settings unless the environment sets them: a dead server costs seconds, not minutes
(MLflow's defaults retry for minutes), MLflow never prints a run URL (which holds the URI), and it
sends no usage telemetry of its own."""
VAL_METRICS = ("quality", "cost_usd", "tokens", "latency_s")
TEST_METRICS = ("quality", "cost_usd", "tokens")
_PARAM_VALUE_MAX = 6000  # MLflow's limit on a param value


class NullTracker:
    """Tracking off: every call does nothing (and ``mlflow`` is never imported)."""

    where = ""

    def resume(self, done: set[int], evaluations: Callable[[str], list[CandidateEval]]) -> None:
        pass

    def trial_started(self, iteration: int, settings: dict) -> None:
        pass

    def trial_finished(self, iteration: int, evals: list[CandidateEval]) -> None:
        pass

    def trial_stopped(self, iteration: int) -> None:
        pass

    def frontier_written(self, members: list[tuple[CandidateEval, CandidateEval | None]], history: list,
                         default: dict | None = None) -> None:
        pass

    def finish(self, compiled_dir: Path, status: str) -> None:
        pass


def open_tracker(config, art: Artifacts, *, worker: str, storage_url: str | None = None):
    """The campaign's tracker: a :class:`NullTracker` when ``tracking.mlflow`` is unset, else a connected
    :class:`CampaignTracker` (``ConfigError`` when mlflow is missing or the server cannot be used).
    ``storage_url``: the workers' RDB storage; on PostgreSQL, workers starting together find or create
    the parent run one at a time (an advisory lock), so there is one."""
    uri = config.tracking.mlflow
    if not uri:
        return NullTracker()
    tracker = CampaignTracker(_client(uri), uri, config, art, worker=worker)
    if storage_url:
        tracker.connect(lambda: advisory_lock(rdb_url(storage_url), TRACKING_LOCK))
    else:
        tracker.connect(contextlib.nullcontext)
    return tracker


def _client(uri: str):
    """An ``MlflowClient`` for ``uri``; ``ConfigError`` naming the extra when mlflow is not installed."""
    for name, value in CLIENT_DEFAULTS.items():
        os.environ.setdefault(name, value)
    try:
        import mlflow  # noqa: F401 - the package itself, so a missing or broken install fails here
        from mlflow.tracking import MlflowClient
    except ImportError as exc:
        raise ConfigError(f"MLflow tracking ({redact_url(uri)}) needs mlflow: {INSTALL_HINT} ({exc})") from None
    return MlflowClient(tracking_uri=uri)


def git_revision(root: Path | None = None) -> str:
    """The git commit of the source checkout this code runs from ("unknown" outside one)."""
    root = root or Path(__file__).resolve().parent.parent
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10,
                             check=False)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"


def flat_params(obj: Any, prefix: str = "") -> dict[str, str]:
    """A JSON-like mapping as MLflow params: dotted keys, lists as JSON, values cut to MLflow's limit;
    secret-bearing keys and credential-looking values (``scrub_secrets``) are left out."""
    from optimizers.frontier import scrub_secrets

    out: dict[str, str] = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.update(flat_params(v, f"{prefix}{k}."))
        return out
    key = prefix.rstrip(".")
    try:
        value = scrub_secrets({key.rsplit(".", 1)[-1]: obj})
    except ValueError:
        return {}  # a value that looks like a credential is not logged
    if not value:
        return {}  # a secret-bearing key
    text = obj if isinstance(obj, str) else json.dumps(obj, sort_keys=True)
    return {key: text[:_PARAM_VALUE_MAX]}


class _Queue:
    """One background thread running tracking calls in order; a failure is a warning, and after
    ``MAX_FAILURES`` in a row the rest is dropped."""

    def __init__(self, uri: str):
        self.uri = uri
        self.items: queue.Queue = queue.Queue()
        self.failures = 0
        self.gave_up = False
        self.thread = threading.Thread(target=self._loop, name="argus-mlflow", daemon=True)
        self.thread.start()

    def submit(self, what: str, call: Callable[[], None]) -> None:
        self.items.put((what, call))

    def _loop(self) -> None:
        while True:
            item = self.items.get()
            if item is None:
                return
            what, call = item
            if self.gave_up:
                continue
            try:
                call()
                self.failures = 0
            except Exception as exc:  # noqa: BLE001 - tracking never fails the campaign
                self.failures += 1
                _log.warning("MLflow tracking (%s): %s failed: %s: %s; the campaign goes on", redact_url(self.uri),
                             what, type(exc).__name__, redact_url(str(exc))[:300])
                if self.failures >= MAX_FAILURES:
                    self.gave_up = True
                    _log.warning("MLflow tracking (%s): %d calls failed in a row; nothing more is logged in this "
                                 "run (a resumed campaign logs its finished trials again)", redact_url(self.uri),
                                 self.failures)

    def close(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for what is queued; what is left is dropped with a warning."""
        self.items.put(None)
        self.thread.join(timeout)
        if self.thread.is_alive():
            _log.warning("MLflow tracking (%s): gave up waiting after %.0f s; %d call(s) not logged",
                         redact_url(self.uri), timeout, self.items.qsize())


class CampaignTracker:
    """A campaign's parent run and its trials' child runs on an MLflow tracking server (module docstring).

    The methods the campaign calls queue their work and return at once, except :meth:`connect`
    (at the start) and :meth:`finish` (at the end)."""

    def __init__(self, client, uri: str, config, art: Artifacts, *, worker: str):
        self.client = client
        self.uri = uri
        self.config = config
        self.art = art
        self.worker = worker
        self.where = ""
        self.experiment_id = ""
        self.parent_id = ""
        self.parent_start = 0
        self.revision = git_revision()
        self._children: dict[int, tuple[str, int]] = {}  # trial → (run id, start time in ms)
        self._queue: _Queue | None = None

    # -------------------------------------------------------------- the start (the campaign waits)
    def connect(self, lock: Callable[[], Any]) -> None:
        """Find (or create) the experiment and the campaign's parent run; ``ConfigError`` when the
        tracking server cannot be used."""
        try:
            with lock():
                self.experiment_id = self._experiment()
                self._parent()
        except ConfigError:
            raise
        except Exception as exc:  # noqa: BLE001 - say which server failed, without its password
            raise ConfigError(
                f"cannot log to the MLflow tracking server {redact_url(self.uri)}: {type(exc).__name__}: "
                f"{redact_url(str(exc))[:400]}; start it (mlflow server --backend-store-uri sqlite:///mlflow.db "
                "--host 127.0.0.1 --port 5000) or leave tracking off") from None
        self._queue = _Queue(self.uri)
        self.where = (f"MLflow {redact_url(self.uri)}: experiment {self.config.tracking.experiment!r}, campaign run "
                      f"{self.parent_id}")
        _log.info("tracking to %s", self.where)

    def _experiment(self) -> str:
        name = self.config.tracking.experiment
        exp = self.client.get_experiment_by_name(name)
        if exp is None:
            try:
                return self.client.create_experiment(name)
            except Exception:  # another worker created it at the same moment
                exp = self.client.get_experiment_by_name(name)
                if exp is None:
                    raise
        if exp.lifecycle_stage != "active":
            raise ConfigError(f"the MLflow experiment {name!r} on {redact_url(self.uri)} is deleted: restore it "
                              "(mlflow experiments restore) or set tracking.experiment to another name")
        return exp.experiment_id

    def _parent(self) -> None:
        """The stored parent run when the server still has it (set RUNNING again), else a new one, stored."""
        stored = self.art.get(STATE) or {}
        run = None
        if stored.get("parent_run_id"):
            try:
                run = self.client.get_run(stored["parent_run_id"])
            except Exception as exc:  # noqa: BLE001 - gone (another server, a reset store): a new parent
                if getattr(exc, "error_code", "") != "RESOURCE_DOES_NOT_EXIST":
                    raise
            if run is not None and (run.info.lifecycle_stage != "active"
                                    or run.info.experiment_id != self.experiment_id):
                run = None
        if run is None:
            run = self.client.create_run(self.experiment_id, run_name=self.config.name, tags={
                **self._tags(), "argus.role": "campaign", "argus.worker": self.worker})
            data = self.config.model_dump(mode="json")
            data.pop("tracking", None)
            self._log(run.info.run_id, params=flat_params(data))
            self.art.put(STATE, {"experiment_id": self.experiment_id, "parent_run_id": run.info.run_id}, replace=True)
        elif run.info.status != "RUNNING":
            self.client.update_run(run.info.run_id, status="RUNNING")
        self.parent_id, self.parent_start = run.info.run_id, int(run.info.start_time)

    def _tags(self) -> dict[str, str]:
        return {"argus.campaign": self.config.name, "argus.git_revision": self.revision,
                "mlflow.source.git.commit": self.revision}

    # -------------------------------------------------------------- during the campaign (queued)
    def resume(self, done: set[int], evaluations: Callable[[str], list[CandidateEval]]) -> None:
        """Log the trials finished before this run (positions ``done``, 0-based) again: a run killed before
        its tracking calls went out, or a trial finished while the server was down, is complete after it
        (idempotent for what was logged)."""
        if not done:
            return
        by_trial: dict[int, list[CandidateEval]] = {}
        for ev in evaluations("val"):
            by_trial.setdefault(ev.trial, []).append(ev)
        for position in sorted(done):
            evals = by_trial.get(position + 1)
            if evals:
                self._submit(f"trial {position + 1} (finished before)", self._log_trial, position + 1,
                             evals[0].settings, evals, "FINISHED", True)

    def trial_started(self, iteration: int, settings: dict) -> None:
        self._submit(f"trial {iteration} start", self._log_trial, iteration, settings, [], "RUNNING", True)

    def trial_finished(self, iteration: int, evals: list[CandidateEval]) -> None:
        self._submit(f"trial {iteration} results", self._log_trial, iteration, None, evals,
                     "FINISHED" if evals else "FAILED", True)

    def trial_stopped(self, iteration: int) -> None:
        self._submit(f"trial {iteration} stop", self._log_trial, iteration, None, [], "KILLED", False)

    def frontier_written(self, members: list[tuple[CandidateEval, CandidateEval | None]], history: list,
                         default: dict | None = None) -> None:
        """The hypervolume history on the parent, the members' test scores on their trials' runs; the default
        candidate (what ``argus extract`` runs) as the parent's tags ``argus.default_member`` and
        ``argus.default_on_frontier`` and its metrics ``default_val_quality`` / ``_cost_usd`` / ``_tokens`` /
        ``_latency_s``."""
        points = [(int(h.iteration), float(h.hypervolume), int(h.frontier_size)) for h in history]
        tests = [(ev.trial, ev.gepa_index, test) for ev, test in members if test is not None and not ev.default]
        self._submit("frontier metrics", self._log_frontier, points, tests)
        if default:
            self._submit("the default", self._log_default, default)

    # -------------------------------------------------------------- the end (the campaign waits)
    def finish(self, compiled_dir: Path, status: str) -> None:
        """Log the frontier, its report and the members' files as the parent's artifacts and set its status
        (FINISHED, KILLED or FAILED); then wait up to ``FLUSH_S`` for everything queued."""
        self._submit("frontier artifacts", self._log_artifacts, Path(compiled_dir))
        self._submit("campaign status", self.client.set_terminated, self.parent_id, status)
        if self._queue is not None:
            self._queue.close(FLUSH_S)

    # -------------------------------------------------------------- the calls (background thread)
    def _submit(self, what: str, call: Callable, *args) -> None:
        if self._queue is not None:
            self._queue.submit(what, lambda: call(*args))

    def _child(self, iteration: int, *, create: bool) -> tuple[str, int] | None:
        """The trial's child run (found by its ``argus.trial`` tag; created when ``create``)."""
        if iteration in self._children:
            return self._children[iteration]
        found = self.client.search_runs(
            [self.experiment_id], max_results=10, order_by=["attributes.start_time ASC"],
            filter_string=f"tags.`mlflow.parentRunId` = '{self.parent_id}' and tags.`argus.trial` = '{iteration}'")
        if found:
            run = found[0]
        elif create:
            run = self.client.create_run(self.experiment_id, run_name=f"trial-{iteration}", tags={
                **self._tags(), "mlflow.parentRunId": self.parent_id, "argus.role": "trial",
                "argus.trial": str(iteration), "argus.worker": self.worker})
        else:
            return None
        self._children[iteration] = (run.info.run_id, int(run.info.start_time))
        return self._children[iteration]

    def _log_trial(self, iteration: int, settings: dict | None, evals: list[CandidateEval], status: str,
                   create: bool) -> None:
        child = self._child(iteration, create=create)
        if child is None:
            return
        run_id, start = child
        metrics = [(f"val_{name}", float(getattr(ev, name)), ev.gepa_index, start)
                   for ev in sorted(evals, key=lambda e: e.gepa_index) for name in VAL_METRICS]
        tags = {"argus.worker": self.worker} if status == "RUNNING" else {}
        self._log(run_id, params=flat_params(settings) if settings else {}, metrics=metrics, tags=tags)
        if status == "RUNNING":
            self.client.update_run(run_id, status="RUNNING")
        else:
            self.client.set_terminated(run_id, status)

    def _log_frontier(self, points: list[tuple[int, float, int]], tests: list[tuple[int, int, CandidateEval]]) -> None:
        parent = [(name, value, step, self.parent_start)
                  for step, hv, size in points for name, value in (("hypervolume", hv), ("frontier_size", size))]
        self._log(self.parent_id, metrics=parent)
        for trial, index, test in tests:
            child = self._child(trial, create=False)
            if child is not None:
                self._log(child[0], metrics=[(f"test_{name}", float(getattr(test, name)), index, child[1])
                                             for name in TEST_METRICS])

    def _log_default(self, default: dict) -> None:
        self._log(self.parent_id, tags={"argus.default_member": str(default["key"]),
                                        "argus.default_on_frontier": str(bool(default["on_frontier"])).lower()},
                  metrics=[(f"default_val_{name}", float(default[name]), 0, self.parent_start)
                           for name in VAL_METRICS if default.get(name) is not None])

    def _log_artifacts(self, compiled_dir: Path) -> None:
        frontier = compiled_dir / "frontier.json"
        if not frontier.exists():
            return
        with tempfile.TemporaryDirectory(prefix="argus-mlflow-") as tmp:
            out = Path(tmp)
            shutil.copy2(frontier, out / "frontier.json")
            for member in json.loads(frontier.read_text(encoding="utf-8")).get("members", []):
                (out / member).mkdir()
                for name in ("manifest.json", "programs.json"):
                    if (compiled_dir / member / name).exists():
                        shutil.copy2(compiled_dir / member / name, out / member / name)
            try:
                from optimizers.report import write_report

                write_report(out, out / "report.html")
            except Exception as exc:  # noqa: BLE001 - the other artifacts are still logged
                _log.warning("MLflow tracking: the frontier report could not be rendered: %s: %s",
                             type(exc).__name__, exc)
            self.client.log_artifacts(self.parent_id, str(out))

    def _log(self, run_id: str, *, params: dict[str, str] | None = None, metrics: list[tuple] = (),
             tags: dict[str, str] | None = None) -> None:
        """``log_batch`` within MLflow's limits (100 params or tags, 1000 metrics a call); metrics are
        (key, value, step, timestamp in ms)."""
        from mlflow.entities import Metric, Param, RunTag

        ps = [Param(k, v) for k, v in (params or {}).items()]
        ts = [RunTag(k, v) for k, v in (tags or {}).items()]
        ms = [Metric(k, v, ts_ms, step) for k, v, step, ts_ms in metrics]
        for i in range(0, max(len(ps), len(ts), 1), 100):
            if ps[i:i + 100] or ts[i:i + 100]:
                self.client.log_batch(run_id, params=ps[i:i + 100], tags=ts[i:i + 100])
        for i in range(0, len(ms), 1000):
            self.client.log_batch(run_id, metrics=ms[i:i + 1000])
