"""Recording a campaign's trials, as one worker: its own files under RUN (status, ledger, phases), the
campaign's finished work (``optimizers.storage.Artifacts``) and the campaign file's fingerprint there, how a
trial ended (told to the study), and the workers' shared spend (:class:`WorkerSpend`).

:class:`WorkerRecords` is the recording part of ``optimizers.scheduler.Scheduler``.
"""

from __future__ import annotations

import time
from pathlib import Path

from argus.errors import ConfigError
from argus.io import write_json_atomic
from optimizers.budget import SpendBook, merge_spend
from optimizers.config import CampaignConfig
from optimizers.evaluation import CandidateEval
from optimizers.storage import Artifacts, SharedArtifacts, content_hash, rdb_url, redact_url


class WorkerRecords:
    """What one worker of a campaign writes down. ``storage_url``: an SQLAlchemy URL (the campaign's finished
    work is shared in that database too, and this worker's files carry its name); None: one process, its
    files are the campaign's."""

    def __init__(self, config: CampaignConfig, run_dir: Path, *, storage_url: str | None, worker: str):
        self.config = config
        self.run_dir = run_dir
        self.storage_url = storage_url
        self.worker = worker

    @property
    def rdb(self) -> bool:
        """Whether the trials live in an RDB storage (which other workers may share)."""
        return self.storage_url is not None

    def file(self, stem: str, ext: str) -> Path:
        """``RUN/<stem>.<ext>``, or ``RUN/<stem>.<worker>.<ext>`` for a worker on an RDB storage."""
        return self.run_dir / (f"{stem}.{self.worker}.{ext}" if self.rdb else f"{stem}.{ext}")

    def status(self, **fields) -> None:
        """``RUN/status.json`` (one per worker on an RDB storage): the trial and phase this worker is in."""
        from optimizers.frontier import utc_now

        extra = {"worker": self.worker} if self.rdb else {}
        write_json_atomic(self.file("status", "json"), {**fields, **extra, "time": utc_now()}, indent=1)

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

    def finish(self, study, trial, evals: list[CandidateEval], cost_key: str) -> None:
        """Tell the study how a trial ended: its best candidate's (quality, cost), or failed without one."""
        from optuna.trial import TrialState

        if not evals:
            study.tell(trial, state=TrialState.FAIL, skip_if_finished=True)
            return
        best = max(evals, key=lambda e: (e.quality, -getattr(e, cost_key)))
        study.tell(trial, [best.quality, getattr(best, cost_key)], skip_if_finished=True)


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
