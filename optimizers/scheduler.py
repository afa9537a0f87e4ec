"""Scheduling a campaign's trials: the Optuna study, which trial a worker runs next, heartbeats, stale
trials, the workers' shared spend, and the lifecycle as it concerns scheduling (the status file, the
stop file, the wall clock and the USD budget, Ctrl-C).

``optimizers.campaign.Campaign.run`` asks its :class:`Scheduler` for the next trial, runs it
(``optimizers.search``), reports the result back and has the frontier written (``optimizers.assembly``).

The scheduler is the face of three parts, one per thing it does, which it builds and calls:

- ``optimizers.planning`` (:class:`~optimizers.planning.TrialPlanner`) — planning the trials: the positions'
  settings, the sampler, a claimed trial's settings, the outer search as the frontier file states it;
- ``optimizers.claims`` (:class:`~optimizers.claims.TrialClaims`) — running them: the study and its storage,
  claims, heartbeats, stale trials, releases, the claimed trial;
- ``optimizers.records`` (:class:`~optimizers.records.WorkerRecords`, :class:`WorkerSpend`) — recording them:
  this worker's status and file names, the finished work and the fingerprint, how a trial ended, the spend.

The lifecycle (the stop file, the wall clock, the USD budget, Ctrl-C) stays here.

Workers (``storage=`` / ``--storage URL``, an SQLAlchemy URL such as ``postgresql://…``): several
processes, on one machine or many, run the trials of one campaign through Optuna's ``RDBStorage``.

- **Trials are positions.** The campaign's settings are planned once (:meth:`Scheduler.plan`: the
  enumerated space in its seeded order, or one sampler draw per position, :meth:`Scheduler.sampler`;
  ``optimizers.planning``);
  each position is a queued Optuna trial carrying ``argus:position``. A worker claims the open
  position with the lowest number by moving its WAITING trial to RUNNING (atomic in the storage: one
  worker wins); two workers that queued the same position at once leave a duplicate, which the later
  trial number gives up when claimed. The trial budget is the number of positions, whichever worker
  completes them.
- **Finished work lives in the storage**, in the project's own table ``argus_artifacts`` — every
  candidate evaluation (``evals/val-<key>.json``, with its lineage), each test evaluation, each
  trial's GEPA candidates and auxiliary programs, the objectives and reference point, and each
  worker's spend summary — first writer wins: an insert that does nothing on conflict
  (``optimizers.storage.Artifacts``). The files under
  ``RUN`` are this worker's cache; the frontier, hypervolume and manifests are built from the storage,
  so every worker writes the same frontier, from everything all workers evaluated.
- **Heartbeats.** A worker records a heartbeat for its trial every ``concurrency.heartbeat_s``; a
  RUNNING trial without one for ``concurrency.grace_s`` (its worker died or lost the database) is
  failed and queued again with the same settings and position (``optuna.storages.fail_stale_trials``
  with ``requeue_trial``); a trial whose worker ran on this machine and whose process is gone is queued
  again at once. A live worker's trial is never taken. A stopped worker (stop file, Ctrl-C, budget)
  queues its trial again itself. Idle workers wait while other workers run the last open trials
  (to take over a trial whose worker dies), then write the final frontier.
- **Spend.** Each worker books its calls in its own ledger and phases (``RUN/ledger.<worker>.jsonl``,
  ``RUN/phases.<worker>.json``, ``RUN/status.<worker>.json``; ``<worker>`` is host-pid unless named)
  and shares its spend summary (:class:`WorkerSpend`); the campaign's optimization spend is their sum.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
from pathlib import Path

from argus.models.ledger import CostLedger
from optimizers.budget import StopConditions
from optimizers.claims import TrialClaims
from optimizers.config import CampaignConfig
from optimizers.evaluation import CandidateEval
from optimizers.planning import SPACE_KEYS, STARTUP_TRIALS, TrialPlanner  # noqa: F401 - importable from here too
from optimizers.records import WorkerRecords, WorkerSpend  # noqa: F401 - WorkerSpend: importable from here too
from optimizers.storage import Artifacts


class Scheduler:
    """The trials of one campaign (or of one worker of it) on its Optuna study: planned by its
    :class:`~optimizers.planning.TrialPlanner` (``planner``), claimed and run on the study by its
    :class:`~optimizers.claims.TrialClaims` (``claims``), recorded by its
    :class:`~optimizers.records.WorkerRecords` (``records``); the methods below are theirs, under the names
    the campaign calls.

    ``storage_url``: an SQLAlchemy URL — the trials live in that database and several workers may claim
    them at once; None: Optuna's journal file ``RUN/optuna.journal`` (one process). ``worker`` names
    this worker in the trials it claims and in its own ledger, phases and status files.

    A subclass may override :meth:`sampler`: the study is created, each claimed trial drawn and the outer
    search summarized with that sampler.
    """

    def __init__(self, config: CampaignConfig, run_dir: Path, *, storage_url: str | None, worker: str, console):
        self.config = config
        self.run_dir = run_dir
        self.storage_url = storage_url
        self.worker = worker
        self.console = console
        self.planner = TrialPlanner(config)
        self.claims = TrialClaims(config, run_dir, storage_url=storage_url, worker=worker, console=console,
                                  sampler=lambda position: self.sampler(position))
        self.records = WorkerRecords(config, run_dir, storage_url=storage_url, worker=worker)

    @property
    def rdb(self) -> bool:
        """Whether the trials live in an RDB storage (which other workers may share)."""
        return self.storage_url is not None

    @property
    def storage(self):
        """The Optuna storage :meth:`open_study` built (None before); its public BaseStorage methods move trials."""
        return self.claims.storage

    # -------------------------------------------------------------- lifecycle
    def stop_conditions(self, ledger: CostLedger, spent_before: float, started: float, others=None) -> StopConditions:
        """What ends this run early: the stop file ``RUN/STOP``, Ctrl-C, the wall clock (counted from
        ``started``, a ``time.monotonic()`` reading) and the USD budget (``spent_before`` by earlier runs;
        ``others``: what the other workers spent, counted too)."""
        budget = self.config.budget
        return StopConditions(self.run_dir / "STOP", ledger, spent_before, budget.max_usd,
                              (started + budget.wall_clock_s) if budget.wall_clock_s else None, others=others)

    def wait(self, stop: StopConditions, *, running: int, trials_done: int) -> None:
        """Wait ``concurrency.poll_s`` (or until a stop) while the last open trials run in other workers."""
        self.status(phase="waiting", running=running, trials_done=trials_done)
        poll_s = self.config.concurrency.poll_s
        deadline = time.monotonic() + poll_s
        while time.monotonic() < deadline and not stop.check():
            time.sleep(min(0.2, poll_s))

    # -------------------------------------------------------------- planning (optimizers.planning)
    def plan(self) -> list[dict | None]:
        """The settings of each trial position (:meth:`TrialPlanner.plan <optimizers.planning.TrialPlanner.plan>`)."""
        return self.planner.plan()

    def sampler(self, position: int):
        """The study's sampler for the trial at ``position`` (:meth:`TrialPlanner.sampler
        <optimizers.planning.TrialPlanner.sampler>`: multivariate TPE seeded by the campaign seed plus the position)."""
        return self.planner.sampler(position)

    def settings(self, trial) -> dict:
        """The claimed trial's settings (:meth:`TrialPlanner.settings <optimizers.planning.TrialPlanner.settings>`)."""
        return self.planner.settings(trial)

    def search_summary(self, study, plan) -> dict:
        """The outer search as the frontier file and the report state it (:meth:`TrialPlanner.search_summary
        <optimizers.planning.TrialPlanner.search_summary>`), with this scheduler's sampler."""
        return self.planner.search_summary(study, plan, sampler=self.sampler(0))

    # -------------------------------------------------------------- running (optimizers.claims)
    def open_study(self):
        """The campaign's study (two objectives: quality up, cost down), created by the first worker."""
        return self.claims.open_study()

    def trial_id(self, study, trial) -> int:
        """The storage's id of a trial (a ``FrozenTrial``) of ``study``, from its number (cached)."""
        return self.claims.trial_id(study, trial)

    def recover(self, study) -> None:
        """A journal's RUNNING trials (killed mid-trial): failed and queued again with the same settings."""
        self.claims.recover(study)

    def done(self, study, plan) -> set[int]:
        """The positions with a complete trial."""
        return self.claims.done(study, plan)

    def next_trial(self, study, plan):
        """("done", n), ("wait", n) or ("trial", (trial_id, position)): see :meth:`TrialClaims.next_trial
        <optimizers.claims.TrialClaims.next_trial>`."""
        return self.claims.next_trial(study, plan)

    def release(self, study, trial_id: int) -> None:
        """A trial this worker stops: failed and its position queued again."""
        self.claims.release(study, trial_id)

    def heartbeat(self, study, trial_id: int):
        """A context in which this worker's heartbeat for its trial is recorded (RDB storage)."""
        return self.claims.heartbeat(study, trial_id)

    def trial(self, study, trial_id: int, position: int):
        """The claimed trial, its sampler seeded by its position (:meth:`TrialClaims.trial
        <optimizers.claims.TrialClaims.trial>`)."""
        return self.claims.trial(study, trial_id, position)

    # -------------------------------------------------------------- recording (optimizers.records)
    def file(self, stem: str, ext: str) -> Path:
        """``RUN/<stem>.<ext>``, or ``RUN/<stem>.<worker>.<ext>`` for a worker on an RDB storage."""
        return self.records.file(stem, ext)

    def status(self, **fields) -> None:
        """``RUN/status.json`` (one per worker on an RDB storage): the trial and phase this worker is in."""
        self.records.status(**fields)

    def artifacts(self) -> Artifacts:
        """The campaign's finished work: files under RUN and, with an RDB storage, the shared table."""
        return self.records.artifacts()

    def fingerprint(self) -> str:
        """What makes two campaign files the same campaign for workers sharing a storage."""
        return self.records.fingerprint()

    def check_fingerprint(self, art: Artifacts) -> None:
        """Share this campaign file's fingerprint; refuse a storage that holds another configuration."""
        self.records.check_fingerprint(art)

    def finish(self, study, trial, evals: list[CandidateEval], cost_key: str) -> None:
        """Tell the study how a trial ended: its best candidate's (quality, cost), or failed without one."""
        self.records.finish(study, trial, evals, cost_key)


@contextlib.contextmanager
def ctrl_c_stops(stop: StopConditions):
    """Ctrl-C (SIGINT) and SIGTERM mark ``stop`` interrupted (and raise ``KeyboardInterrupt`` where the run
    is): the campaign ends as after a stop file — the trial running is queued again, status.json says
    ``stopped`` with the reason — and the same command resumes it. The previous handlers are back
    afterwards. Only the main thread can install a handler: elsewhere nothing changes.

    A signal can land while a finalizer runs (a library's ``__del__`` during garbage collection), where
    Python cannot raise: it prints the ``KeyboardInterrupt`` as an ignored exception, with a traceback,
    and goes on. The stop is not lost (``stop`` is marked, and the campaign checks it between GEPA
    iterations and phases), so that report is not printed while the block runs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    previous_hook = sys.unraisablehook

    def on_signal(signum, frame):
        stop.interrupted = True
        if signum == signal.SIGTERM and not stop.reason:
            stop.reason = "terminated (SIGTERM); run the same command again to resume"
        raise KeyboardInterrupt

    def unraisable(info) -> None:
        if stop.interrupted and isinstance(info.exc_value, KeyboardInterrupt):
            return  # our interrupt, raised inside a finalizer: the stop flag carries it
        previous_hook(info)

    for sig in previous:
        signal.signal(sig, on_signal)
    sys.unraisablehook = unraisable
    try:
        yield
    finally:
        sys.unraisablehook = previous_hook
        for sig, handler in previous.items():
            signal.signal(sig, handler)
