"""Scheduling a campaign's trials: the Optuna study, which trial a worker runs next, heartbeats, stale
trials, the workers' shared spend, and the lifecycle as it concerns scheduling (the status file, the
stop file, the wall clock and the USD budget, Ctrl-C).

``optimizers.campaign.Campaign.run`` asks its :class:`Scheduler` for the next trial, runs it
(``optimizers.search``), reports the result back and has the frontier written (``optimizers.assembly``).

Workers (``storage=`` / ``--storage URL``, an SQLAlchemy URL such as ``postgresql://…``): several
processes, on one machine or many, run the trials of one campaign through Optuna's ``RDBStorage``.

- **Trials are positions.** The campaign's settings are planned once (:meth:`Scheduler.plan`: the
  enumerated space in its seeded order, or one sampler draw per position, :meth:`Scheduler.sampler`);
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
import logging
import os
import signal
import socket
import sys
import threading
import time
import warnings
from pathlib import Path

from argus.errors import ConfigError, InputError
from argus.io import write_json_atomic
from argus.models.ledger import CostLedger
from optimizers.budget import SpendBook, StopConditions, merge_spend
from optimizers.config import ROUTING_KEYS, CampaignConfig
from optimizers.evaluation import CandidateEval
from optimizers.storage import (
    DRAW,
    POSITION,
    Artifacts,
    SharedArtifacts,
    content_hash,
    engine_kwargs,
    process_alive,
    rdb_url,
    redact_url,
    requeue_trial,
    schema_lock,
    schema_race,
    trial_position,
)

_log = logging.getLogger("argus")

STARTUP_TRIALS = 10
"""The outer search's random draws: TPE draws at random until this many trials are finished, then from its
model of them (Optuna's default; ``bench/sampler.py`` measured fewer as worse on the campaign's space)."""

#: the settings of the search space a trial position may fix, in the order a planned setting lists them
SPACE_KEYS = ("task_model", "temperature", "max_retries", "framenet_hints", "stage2_model", "reflection_model",
              "judge_model", "extraction", *ROUTING_KEYS)


class Scheduler:
    """The trials of one campaign (or of one worker of it) on its Optuna study.

    ``storage_url``: an SQLAlchemy URL — the trials live in that database and several workers may claim
    them at once; None: Optuna's journal file ``RUN/optuna.journal`` (one process). ``worker`` names
    this worker in the trials it claims and in its own ledger, phases and status files.
    """

    def __init__(self, config: CampaignConfig, run_dir: Path, *, storage_url: str | None, worker: str, console):
        self.config = config
        self.run_dir = run_dir
        self.storage_url = storage_url
        self.worker = worker
        self.console = console
        self.storage = None  # the Optuna storage open_study builds; its public BaseStorage methods move trials
        self._sid: int | None = None  # the study's id in it
        self._tids: dict[int, int] = {}  # trial number -> trial id in it (a trial's id never changes)

    @property
    def rdb(self) -> bool:
        """Whether the trials live in an RDB storage (which other workers may share)."""
        return self.storage_url is not None

    # -------------------------------------------------------------- lifecycle
    def file(self, stem: str, ext: str) -> Path:
        """``RUN/<stem>.<ext>``, or ``RUN/<stem>.<worker>.<ext>`` for a worker on an RDB storage."""
        return self.run_dir / (f"{stem}.{self.worker}.{ext}" if self.rdb else f"{stem}.{ext}")

    def status(self, **fields) -> None:
        """``RUN/status.json`` (one per worker on an RDB storage): the trial and phase this worker is in."""
        from optimizers.frontier import utc_now

        extra = {"worker": self.worker} if self.rdb else {}
        write_json_atomic(self.file("status", "json"), {**fields, **extra, "time": utc_now()}, indent=1)

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

    # -------------------------------------------------------------- the study
    def plan(self) -> list[dict | None]:
        """The settings of each trial position. A space of at most four times the trial budget is
        enumerated in a seeded shuffled order (no setting twice; a space smaller than the budget gives
        fewer positions, since a repeated setting would find every evaluation already done); a larger one
        gives ``budget.trials`` positions (None) each drawn by :meth:`sampler` (multivariate TPE, seeded by
        the position). Either way a re-run trial does not shift what later positions draw."""
        import itertools
        import random

        sp = self.config.space
        keys = [k for k in SPACE_KEYS if sp.choices(k)]
        grid = [dict(zip(keys, combo)) for combo in itertools.product(*(sp.choices(k) for k in keys))]
        trials = self.config.budget.trials
        if len(grid) > 4 * trials or not grid:
            return [None] * trials
        random.Random(self.config.seed).shuffle(grid)
        return grid[:trials]

    def open_study(self):
        """The campaign's study (two objectives: quality up, cost down), created by the first worker."""
        import optuna

        cfg = self.config
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        if self.rdb:
            from optuna.storages import RDBStorage

            url = rdb_url(self.storage_url)
            kwargs = engine_kwargs(url)
            try:
                with warnings.catch_warnings(), schema_lock(url):
                    warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                    for attempt in range(5):
                        try:
                            storage = RDBStorage(url, engine_kwargs=kwargs, heartbeat_interval=cfg.concurrency.heartbeat_s,
                                                 grace_period=cfg.concurrency.grace_s,
                                                 heartbeat_stale_trial_callback=requeue_trial)
                            break
                        except Exception as exc:  # noqa: BLE001 - another worker creating the tables at the same moment
                            if attempt == 4 or not schema_race(exc):
                                raise
                            time.sleep(0.3 * (attempt + 1))
            except ImportError as exc:
                raise ConfigError(f"--storage {redact_url(self.storage_url)}: the database driver is missing ({exc}); "
                                  "for PostgreSQL: pip install 'psycopg[binary]'") from exc
            except Exception as exc:  # noqa: BLE001 - say which storage could not be opened, without its password
                raise ConfigError(f"cannot open the storage {redact_url(self.storage_url)}: {type(exc).__name__}: "
                                  f"{redact_url(str(exc))}") from exc
        else:
            from optuna.storages import JournalStorage
            from optuna.storages.journal import JournalFileBackend

            journal = self.run_dir / "optuna.journal"
            if _trim_journal_tail(journal):
                self.console.print(f"[yellow]note: the last record of {journal} was cut short (the process ended while "
                                   "writing it); it is dropped and its work done again[/yellow]")
            try:
                storage = JournalStorage(JournalFileBackend(str(journal)))
                return self._create_study(storage)
            except (ValueError, KeyError, TypeError, AssertionError, UnicodeDecodeError) as exc:
                # Optuna replays the journal here; a damaged one fails with whatever its parser met
                raise InputError(f"{journal} is not a journal Optuna can replay ({type(exc).__name__}: "
                                 f"{str(exc)[:200]}); move the run directory {self.run_dir} aside to start the "
                                 "campaign afresh") from exc
        return self._create_study(storage)

    def _create_study(self, storage):
        """The study on ``storage``, an Optuna storage object this scheduler built and keeps: the claims,
        heartbeats and requeues below call its public ``BaseStorage`` methods."""
        import optuna

        study = optuna.create_study(study_name=self.config.name, storage=storage, directions=["maximize", "minimize"],
                                    sampler=self.sampler(0), load_if_exists=True)
        self.storage, self._sid, self._tids = storage, None, {}
        return study

    def _store(self, study):
        """This scheduler's storage, which holds ``study`` (opened by :meth:`open_study`)."""
        if self.storage is None:
            raise RuntimeError("Scheduler.open_study() has not been called: there is no storage to move trials on")
        if self._sid is None:
            self._sid = self.storage.get_study_id_from_name(study.study_name)
        return self.storage

    def trial_id(self, study, trial) -> int:
        """The storage's id of a trial (a ``FrozenTrial``) of ``study``, from its number (cached)."""
        storage = self._store(study)
        tid = self._tids.get(trial.number)
        if tid is None:
            tid = self._tids[trial.number] = storage.get_trial_id_from_study_id_trial_number(self._sid, trial.number)
        return tid

    def artifacts(self) -> Artifacts:
        """The campaign's finished work: files under RUN and, with an RDB storage, the shared table
        ``argus_artifacts`` in the same database (``SharedArtifacts``, created when missing)."""
        if not self.rdb:
            return Artifacts(self.run_dir)
        try:
            shared = SharedArtifacts(rdb_url(self.storage_url), self.config.name)
        except Exception as exc:  # noqa: BLE001 - say which storage, without its password
            raise ConfigError(f"cannot open the artifacts table of the storage {redact_url(self.storage_url)}: "
                              f"{type(exc).__name__}: {redact_url(str(exc))}") from exc
        return Artifacts(self.run_dir, shared)

    def fingerprint(self) -> str:
        """What makes two campaign files the same campaign for workers sharing a storage: everything but
        the threads, the wall clock, the USD budget, the estimate's pace, the models' servers and tracking."""
        def drop(obj):
            if isinstance(obj, dict):
                return {k: drop(v) for k, v in obj.items() if k not in ("api_base", "api_key", "base_url")}
            return [drop(v) for v in obj] if isinstance(obj, list) else obj

        data = self.config.model_dump(mode="json")
        data.pop("concurrency", None)
        data.pop("tracking", None)
        for k in ("wall_clock_s", "max_usd", "seconds_per_call"):
            data["budget"].pop(k, None)
        data["models"] = drop(data["models"])
        return content_hash(data, 16)

    def check_fingerprint(self, art: Artifacts) -> None:
        """Share this campaign file's fingerprint; refuse a storage that holds another configuration under
        the campaign's name."""
        mine = self.fingerprint()
        art.share("config.json", {"fingerprint": mine, "campaign": self.config.name})  # no keys in the database
        theirs = (art.get("config.json") or {}).get("fingerprint")
        if theirs != mine:
            raise ConfigError(f"the storage holds campaign {self.config.name!r} with another configuration "
                              f"(fingerprint {theirs}, this file {mine}); give the campaign another name or use "
                              "another database")

    def recover(self, study) -> None:
        """One process owns a journal: a RUNNING trial there was killed mid-trial; it is closed as failed and
        queued again with the same settings (what it finished is on disk and is reused)."""
        from optuna.trial import TrialState

        storage = self._store(study)
        for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            storage.set_trial_state_values(self.trial_id(study, t), TrialState.FAIL)
            requeue_trial(study, t)

    def done(self, study, plan) -> set[int]:
        """The positions with a complete trial."""
        from optuna.trial import TrialState

        return {p for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
                if (p := trial_position(t)) is not None and p < len(plan)}

    # -------------------------------------------------------------- claims, heartbeats, stale trials
    def next_trial(self, study, plan):
        """("done", n) when every position is complete; ("wait", n) when the n open positions all run in
        other workers; else ("trial", (trial_id, position)) — a position this worker has claimed."""
        from optuna.trial import TrialState

        if self.rdb:
            self._fail_stale(study)
        by_pos: dict[int, list] = {}
        for t in study.get_trials(deepcopy=False):
            p = trial_position(t)
            if p is not None and p < len(plan):
                by_pos.setdefault(p, []).append(t)
        done = {p for p, ts in by_pos.items() if any(t.state == TrialState.COMPLETE for t in ts)}
        if len(done) >= len(plan):
            return "done", len(done)
        for p in range(len(plan)):  # a position nobody queued yet (or lost): queued, with its planned settings
            if p not in done and not any(t.state in (TrialState.WAITING, TrialState.RUNNING) for t in by_pos.get(p, [])):
                study.enqueue_trial(dict(plan[p] or {}), user_attrs={POSITION: p}, skip_if_exists=False)
        claimed = self._claim(study, plan)
        if claimed is not None:
            return "trial", claimed
        running = {p for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
                   if (p := trial_position(t)) is not None and p < len(plan)}
        if not self.rdb:
            self.console.print(f"[yellow]trial position(s) {sorted(running)} are running in another process on this "
                               "run's journal; several workers need an RDB storage (--storage)[/yellow]")
            return "done", len(done)
        return "wait", len(running - done)

    def _claim(self, study, plan):
        """Claim the open position with the lowest number: its WAITING trial moved to RUNNING (atomic in the
        storage). A duplicate (two workers queued one position at once) is given up by the later trial."""
        from optuna.exceptions import UpdateFinishedTrialError
        from optuna.trial import TrialState

        storage = self._store(study)
        waiting = sorted((t for t in study.get_trials(deepcopy=False, states=(TrialState.WAITING,))
                          if (p := trial_position(t)) is not None and p < len(plan)), key=lambda t: (trial_position(t), t.number))
        for t in waiting:
            tid = self.trial_id(study, t)
            if self.rdb:  # an RDBStorage (a heartbeat storage)
                storage.record_heartbeat(tid)  # before the claim: a worker killed right after it still goes stale
            try:
                if not storage.set_trial_state_values(tid, state=TrialState.RUNNING):
                    continue  # another worker claimed it first
            except UpdateFinishedTrialError:
                continue
            pos = trial_position(t)
            others = [o for o in study.get_trials(deepcopy=False) if o.number != t.number and trial_position(o) == pos]
            if any(o.state == TrialState.COMPLETE or (o.state in (TrialState.RUNNING, TrialState.WAITING)
                                                      and o.number < t.number) for o in others):
                storage.set_trial_system_attr(tid, "argus:duplicate", True)
                storage.set_trial_state_values(tid, state=TrialState.FAIL)
                continue
            storage.set_trial_user_attr(tid, "argus:worker", self.worker)
            storage.set_trial_system_attr(tid, "argus:host", socket.gethostname())
            storage.set_trial_system_attr(tid, "argus:pid", os.getpid())
            return tid, pos
        return None

    def _fail_stale(self, study) -> None:
        """Queue again the trials whose worker is gone: at once when it ran on this machine and its process
        has exited, else after ``concurrency.grace_s`` without a heartbeat (Optuna's ``fail_stale_trials``,
        whose callback is ``requeue_trial``). A live worker's trial is never taken."""
        import optuna
        from optuna.exceptions import UpdateFinishedTrialError
        from optuna.trial import TrialState

        storage = self._store(study)
        host = socket.gethostname()
        for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            pid = t.system_attrs.get("argus:pid")
            if t.system_attrs.get("argus:host") == host and pid is not None and pid != os.getpid() and not process_alive(int(pid)):
                try:
                    if storage.set_trial_state_values(self.trial_id(study, t), state=TrialState.FAIL):
                        requeue_trial(study, t)
                except UpdateFinishedTrialError:
                    pass
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            optuna.storages.fail_stale_trials(study)

    def release(self, study, trial_id: int) -> None:
        """A trial this worker stops: failed and its position queued again (a resumed or another worker runs
        it, reusing what is finished)."""
        from optuna.exceptions import UpdateFinishedTrialError
        from optuna.trial import TrialState

        try:
            storage = self._store(study)
            if storage.set_trial_state_values(trial_id, state=TrialState.FAIL):
                requeue_trial(study, storage.get_trial(trial_id))
        except UpdateFinishedTrialError:
            pass
        except Exception:  # noqa: BLE001 - the storage is gone: the heartbeat's grace period queues it again
            _log.warning("campaign %s: could not queue trial %s again", self.config.name, trial_id, exc_info=True)

    @contextlib.contextmanager
    def heartbeat(self, study, trial_id: int):
        """Record this worker's heartbeat for its trial every ``concurrency.heartbeat_s`` (RDB storage)."""
        if not self.rdb:
            yield
            return
        storage = self._store(study)
        stopped = threading.Event()

        def beat():
            while not stopped.wait(self.config.concurrency.heartbeat_s):
                try:
                    storage.record_heartbeat(trial_id)
                except Exception:  # noqa: BLE001 - a missed beat; after grace_s another worker takes the trial over
                    _log.warning("campaign %s: heartbeat of trial %s failed", self.config.name, trial_id, exc_info=True)

        thread = threading.Thread(target=beat, name="argus-heartbeat", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stopped.set()
            thread.join()

    # -------------------------------------------------------------- one claimed trial
    def sampler(self, position: int):
        """The study's sampler for the trial at ``position``: Optuna's multivariate TPE, the same settings for
        every trial, its random stream seeded by the campaign seed plus the position. TPE keeps no state of
        its own (it models the study's finished trials), so this is one sampler for the whole study whose
        draws do not depend on which process makes them: a resumed campaign, or another worker, draws what
        an uninterrupted one would. Its first :data:`STARTUP_TRIALS` draws are random."""
        import optuna

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)  # multivariate
            return optuna.samplers.TPESampler(multivariate=True, n_startup_trials=STARTUP_TRIALS,
                                              seed=self.config.seed + position)

    def search_summary(self, study, plan) -> dict:
        """The outer search as the frontier file and the report state it: the sampler, the positions planned
        by enumeration, and of the completed positions how many the sampler drew and how many of those draws
        were random (``argus:draw`` of each position's complete trial)."""
        from optuna.trial import TrialState

        draws: dict[int, str] = {}
        for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
            p = trial_position(t)
            if p is not None and p < len(plan) and DRAW in t.user_attrs:
                draws[p] = t.user_attrs[DRAW]
        return {"sampler": type(self.sampler(0)).__name__, "multivariate": True, "n_startup_trials": STARTUP_TRIALS,
                "seed": self.config.seed, "positions": len(plan), "planned": sum(p is not None for p in plan),
                "drawn": len(draws), "random_draws": sum(d == "random" for d in draws.values())}

    def trial(self, study, trial_id: int, position: int):
        """The claimed trial, its sampler seeded by its position (a resumed campaign draws what an
        uninterrupted one would). It is a trial of a study object loaded afresh on this scheduler's storage:
        a new ``Study`` has no trials cached (``Study.ask`` drops its cache for the same reason), so the
        sampler models the study's latest trials, whatever this process's ``study`` read before. ``study``
        gets the same sampler (its ``tell`` calls the sampler's ``after_trial``)."""
        import optuna

        sampler = self.sampler(position)
        study.sampler = sampler
        fresh = optuna.load_study(study_name=study.study_name, storage=self._store(study), sampler=sampler)
        fresh.get_trials(deepcopy=False)  # read its trials first, as Study.ask does (an RDB study caches them)
        return optuna.trial.Trial(fresh, trial_id)

    def settings(self, trial) -> dict:
        """The trial's settings: its planned (or drawn) point of the search space and the campaign's
        pipeline settings."""
        from optuna.trial import TrialState

        cfg = self.config
        study = trial.study
        # drawn: no planned settings (a planned position, or a re-run, carries them as fixed params); the
        # sampler draws at random until STARTUP_TRIALS trials are finished (what TPESampler counts)
        frozen = next(t for t in study.get_trials(deepcopy=False) if t.number == trial.number)
        drawn = not frozen.system_attrs.get("fixed_params")
        finished = len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED))) if drawn else 0
        settings = {
            "task_model": trial.suggest_categorical("task_model", cfg.space.task_model),
            "temperature": trial.suggest_categorical("temperature", cfg.space.temperature),
            "max_retries": trial.suggest_categorical("max_retries", cfg.space.max_retries),
            "framenet_hints": trial.suggest_categorical("framenet_hints", cfg.space.framenet_hints),
        }
        for key in ("stage2_model", "reflection_model", "judge_model", "extraction", *ROUTING_KEYS):
            choices = cfg.space.choices(key)
            if choices:
                settings[key] = trial.suggest_categorical(key, choices)
        if drawn and DRAW not in trial.user_attrs:  # a re-run of a drawn trial carries its draw (requeue_trial)
            trial.set_user_attr(DRAW, "random" if finished < STARTUP_TRIALS else "model")
        if cfg.pipeline:
            settings["pipeline"] = dict(cfg.pipeline)
        return settings

    def finish(self, study, trial, evals: list[CandidateEval], cost_key: str) -> None:
        """Tell the study how a trial ended: its best candidate's (quality, cost), or failed without one."""
        from optuna.trial import TrialState

        if not evals:
            study.tell(trial, state=TrialState.FAIL, skip_if_finished=True)
            return
        best = max(evals, key=lambda e: (e.quality, -getattr(e, cost_key)))
        study.tell(trial, [best.quality, getattr(best, cost_key)], skip_if_finished=True)


def _trim_journal_tail(journal: Path) -> bool:
    """Drop a last journal record that was cut short (no newline: the process ended while writing it); whether
    one was. Optuna skips such a record when it reads, but appends its next record to it, and the journal could
    not be read again."""
    if not journal.is_file():
        return False
    with open(journal, "rb+") as f:
        end = f.seek(0, os.SEEK_END)
        if end == 0:
            return False
        f.seek(end - 1)
        if f.read(1) == b"\n":
            return False
        pos = end
        while pos > 0:  # back to the newline that ends the last whole record
            step = min(65536, pos)
            f.seek(pos - step)
            chunk = f.read(step)
            i = chunk.rfind(b"\n")
            if i >= 0:
                pos = pos - step + i + 1
                break
            pos -= step
        f.truncate(pos)
        f.flush()
        os.fsync(f.fileno())
    return True


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


class WorkerSpend:
    """The campaign's optimization spend across its workers. With an RDB storage each worker shares its
    book's summary (``spend/<worker>.json``) and the campaign's spend is the sum of them all; without,
    this worker's book is the campaign's."""

    def __init__(self, art: Artifacts, worker: str, *, rdb: bool):
        self.art = art
        self.worker = worker
        self.rdb = rdb
        self._others: tuple[float, float] | None = None  # (when read, USD) of the other workers

    def share(self, book: SpendBook) -> None:
        self.art.share(f"spend/{self.worker}.json", book.summary(), replace=True)

    def others_usd(self) -> float:
        """USD billed by the other workers (their shared summaries; read at most every 10 s)."""
        now = time.monotonic()
        if self._others is None or now - self._others[0] > 10:
            total = 0.0
            for name, book in self.art.items("spend/").items():
                if name != f"spend/{self.worker}.json":
                    total += float(((book or {}).get("total") or {}).get("billed_usd", 0.0))
            self._others = (now, total)
        return self._others[1]

    def summary(self, book: SpendBook) -> dict:
        """The campaign's optimization spend: this worker's book, or with an RDB storage every worker's."""
        if not self.rdb:
            return book.summary()
        self.share(book)
        return merge_spend([summary for _, summary in sorted(self.art.items("spend/").items())])
