"""What a campaign may spend and what it spent: stop conditions (stop file, Ctrl-C, wall clock, USD
budget, a crashed engine) and the optimization-spend book (per trial and phase, from the ledger).

With several workers on one RDB storage each worker keeps its own ledger and book
(``RUN/ledger.<worker>.jsonl``, ``RUN/phases.<worker>.json``: the spans of a book are positions in
its own ledger, which no other process appends to) and shares its summary in the storage; the
campaign's spend is the sum of the workers' summaries (``merge_spend``), and the USD budget counts
every worker's spend (``StopConditions.others``)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from argus.models.engine import engine_crashes
from argus.io import write_json_atomic
from argus.models.ledger import CostLedger



@dataclass
class StopConditions:
    """Stop file, Ctrl-C, wall clock and USD budget in one place (also a GEPA stop callback)."""

    stop_file: Path
    ledger: CostLedger
    spent_before: float
    max_usd: float | None
    deadline: float | None
    interrupted: bool = False
    reason: str = ""
    crashes_before: int = field(default_factory=engine_crashes)
    failed: bool = False
    #: USD billed by the campaign's other workers (an RDB storage), counted against ``max_usd`` too
    others: Callable[[], float] | None = None

    def spent(self) -> float:
        return self.spent_before + sum(e.cost_usd for e in self.ledger.entries) + (self.others() if self.others else 0.0)

    def check(self) -> str:
        if self.reason:
            return self.reason
        if self.interrupted:
            self.reason = "interrupted (Ctrl-C)"
        elif engine_crashes() > self.crashes_before:
            self.failed = True
            self.reason = ("the local engine crashed twice in one call (see the log above); "
                           "run the same command again to resume")
        elif self.stop_file.exists():
            self.reason = f"stop file {self.stop_file}"
        elif self.deadline is not None and time.monotonic() > self.deadline:
            self.reason = "wall-clock budget reached"
        elif self.max_usd is not None and self.spent() >= self.max_usd:
            self.reason = f"USD budget reached (${self.spent():.4f} of ${self.max_usd})"
        return self.reason

    def __call__(self, gepa_state=None) -> bool:  # gepa's StopperProtocol
        return bool(self.check())




class SpendBook:
    """Optimization spend per trial and phase, from the campaign ledger.

    A phase records the span of ledger lines it wrote (``RUN/phases.json``); calls of a phase that was
    killed stay in the ledger and show as ``interrupted``. Within a phase, a call is ``metric`` when
    it is a judge call, ``reflection`` when GEPA's proposer made it, else the phase's own kind
    (``gepa`` task calls on chunk minibatches, ``aux:<program>``, ``val`` / ``test`` deployment runs).
    """

    def __init__(self, run_dir: Path, ledger: CostLedger, previous: list | tuple = (), *, file: str = "phases.json",
                 on_record: Callable[["SpendBook"], None] | None = None):
        self.path = run_dir / file
        self.ledger = ledger
        self.previous = list(previous)  #: the ledger lines earlier runs wrote (``ledger`` holds this run's)
        self.phases: list[dict] = json.loads(self.path.read_text()) if self.path.exists() else []
        self.on_record = on_record  #: called after each recorded phase (a worker shares its summary)

    def entries(self) -> list:
        """Every call of the campaign, earlier runs' and this run's, in ledger order."""
        return self.previous + self.ledger.entries

    def position(self) -> int:
        return len(self.previous) + len(self.ledger.entries)

    def record(self, trial: int, phase: str, start: int) -> None:
        end = self.position()
        if end > start:
            self.phases.append({"trial": trial, "phase": phase, "start": start, "end": end})
            write_json_atomic(self.path, self.phases, indent=1)
            if self.on_record is not None:
                self.on_record(self)

    def summary(self, entries: list | None = None) -> dict:
        """Totals (``metrics.quality.cost_of``: calls, billed and list tokens and USD, cache hits) of all
        entries (default: the campaign's), per kind of call and per trial and kind."""
        from metrics.quality import cost_of

        entries = self.entries() if entries is None else entries

        owner: dict[int, tuple[int, str]] = {}
        for p in self.phases:
            for i in range(p["start"], min(p["end"], len(entries))):
                owner[i] = (p["trial"], p["phase"])
        by_phase: dict[str, list] = {}
        by_trial: dict[str, dict[str, list]] = {}
        for i, e in enumerate(entries):
            trial, phase = owner.get(i, (None, "interrupted"))
            kind = "metric" if e.stage == "judge" else "reflection" if e.stage == "optimize" else phase
            by_phase.setdefault(kind, []).append(e)
            if trial is not None:
                by_trial.setdefault(str(trial), {}).setdefault(kind, []).append(e)

        def book(group: list) -> dict:
            c = cost_of(group)
            return {"calls": c.calls, "billed_usd": c.billed_usd, "billed_tokens": c.billed_tokens, "list_usd": c.usd,
                    "list_tokens": c.tokens, "cache_hits": c.cache_hits}

        return {"total": book(entries), "by_phase": {k: book(v) for k, v in by_phase.items()},
                "by_trial": {t: {k: book(v) for k, v in kinds.items()} for t, kinds in by_trial.items()}}


def merge_spend(summaries: list[dict]) -> dict:
    """One ``SpendBook.summary`` of several (the workers of a campaign): every figure summed, per kind
    of call and per trial and kind (trials are the campaign's positions, the same in every worker)."""

    def add(into: dict, book: dict) -> None:
        for k, v in book.items():
            into[k] = into.get(k, 0) + v

    out: dict = {"total": {}, "by_phase": {}, "by_trial": {}}
    for s in summaries:
        if not s:
            continue
        add(out["total"], s.get("total", {}))
        for kind, book in s.get("by_phase", {}).items():
            add(out["by_phase"].setdefault(kind, {}), book)
        for trial, kinds in s.get("by_trial", {}).items():
            for kind, book in kinds.items():
                add(out["by_trial"].setdefault(trial, {}).setdefault(kind, {}), book)
    if not out["total"]:
        out["total"] = {"calls": 0, "billed_usd": 0.0, "billed_tokens": 0, "list_usd": 0.0, "list_tokens": 0,
                        "cache_hits": 0}
    return out
