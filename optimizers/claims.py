"""Claiming a campaign's trials on its Optuna study: the study and its storage (Optuna's journal file, or an
RDB storage several workers share), which trial position a worker runs next, heartbeats, stale trials queued
again, a stopped trial released, and the claimed trial a worker runs (see ``optimizers.scheduler``,
"Workers", for the rules).

:class:`TrialClaims` is the running part of ``optimizers.scheduler.Scheduler``; it keeps the storage object
it builds and moves trials with that storage's public ``BaseStorage`` methods.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
import warnings
from pathlib import Path
from typing import Callable

from argus.errors import ConfigError, InputError
from optimizers.config import CampaignConfig
from optimizers.storage import (
    POSITION,
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


class TrialClaims:
    """The trials of one campaign (or of one worker of it) on its Optuna study, as workers claim them.

    ``storage_url``: an SQLAlchemy URL — the trials live in that database and several workers may claim
    them at once; None: Optuna's journal file ``RUN/optuna.journal`` (one process). ``worker`` names
    this worker in the trials it claims. ``sampler``: the study's sampler for a trial position (the
    scheduler's ``sampler``; ``optimizers.planning.TrialPlanner.sampler``).
    """

    def __init__(self, config: CampaignConfig, run_dir: Path, *, storage_url: str | None, worker: str, console,
                 sampler: Callable[[int], object]):
        self.config = config
        self.run_dir = run_dir
        self.storage_url = storage_url
        self.worker = worker
        self.console = console
        self.sampler = sampler
        self.storage = None  # the Optuna storage open_study builds; its public BaseStorage methods move trials
        self._sid: int | None = None  # the study's id in it
        self._tids: dict[int, int] = {}  # trial number -> trial id in it (a trial's id never changes)

    @property
    def rdb(self) -> bool:
        """Whether the trials live in an RDB storage (which other workers may share)."""
        return self.storage_url is not None

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
