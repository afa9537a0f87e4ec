"""The cost ledger: one entry per language-model call, from every model the project uses.

Who writes: ``argus.models.lm.MeteredLM`` after each call, attributing it to the ledger, document, stage
and program of the innermost ``ledger_context``. Who reads: the pipeline summary, the EKG output
(entries and totals), the metrics (cost per document) and the optimizers (budgets).

Entries never contain prompts, keys or API bases — only counts, prices and timings.

On disk a ledger is JSONL, one entry per line, appended under an exclusive ``flock`` of the file
(``argus.io.append_jsonl_lines``): concurrent writers (threads, or processes sharing an output
folder) never interleave within a line, a write that fails midway (a full disk) is cut back so no
torn line is left, and a line torn by a killed process is skipped (with a warning) when the file is
read back.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime as _dt
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from pydantic import BaseModel, ConfigDict

from argus.io import append_jsonl_line, append_jsonl_lines, read_jsonl


class LedgerEntry(BaseModel):
    """One language-model call.

    ``cache_hit`` calls come from DSPy's cache: no tokens billed, cost 0; their ``cached_*`` fields
    hold the tokens and cost of the original call that the cached answer came from (0 when not a
    cache hit or unknown), so a method's cost per document does not depend on the cache's state.
    ``cost_known`` is False when the call's (list) cost is not known: neither a configured price nor
    litellm's price table knew the model, a live response reported no usage, or a cache hit's
    original usage is not in DSPy's cache record (see ``argus.models.response_cache``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    doc_id: str | None
    stage: str
    program: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    cost_known: bool
    cache_hit: bool
    latency_s: float
    timestamp: str
    cached_prompt_tokens: int = 0
    cached_completion_tokens: int = 0
    cached_cost_usd: float = 0.0

    @property
    def list_tokens(self) -> int:
        """Tokens of the call whether billed now or served from the cache."""
        return self.prompt_tokens + self.completion_tokens + self.cached_prompt_tokens + self.cached_completion_tokens

    @property
    def list_cost_usd(self) -> float:
        """Cost of the call at list price whether billed now or served from the cache."""
        return self.cost_usd + self.cached_cost_usd


class Totals(BaseModel):
    """Sums over ledger entries (``tokens`` = prompt + completion)."""

    model_config = ConfigDict(extra="forbid")

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    cache_hits: int = 0
    latency_s: float = 0.0

    def add(self, e: LedgerEntry) -> None:
        self.calls += 1
        self.prompt_tokens += e.prompt_tokens
        self.completion_tokens += e.completion_tokens
        self.tokens += e.prompt_tokens + e.completion_tokens
        self.cost_usd += e.cost_usd
        self.cache_hits += int(e.cache_hit)
        self.latency_s += e.latency_s

    def as_dict(self) -> dict:
        return self.model_dump()


@dataclass
class CostLedger:
    """Append-only list of ``LedgerEntry`` with totals; thread-safe.

    With ``path`` set, each entry is also appended to a JSONL file as it happens (under a ``flock``,
    safe with other appenders), so a killed run keeps its spend record. If that append fails (a full
    disk) the ``OSError`` is raised and the file keeps no part of the failed lines.
    """

    entries: list[LedgerEntry] = field(default_factory=list)
    path: Path | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, entry: LedgerEntry) -> None:
        with self._lock:
            self.entries.append(entry)
            if self.path is not None:
                append_jsonl_line(self.path, entry.model_dump_json())

    def extend(self, entries: list[LedgerEntry]) -> None:
        """Add ``entries`` together: another thread's or process's entries never land between them
        (one locked append to the file)."""
        with self._lock:
            self.entries.extend(entries)  # (spent even if the file cannot take them)
            if self.path is not None:
                append_jsonl_lines(self.path, [e.model_dump_json() for e in entries])

    def totals(self, *, doc_id: str | None = None) -> Totals:
        t = Totals()
        for e in self.entries:
            if doc_id is None or e.doc_id == doc_id:
                t.add(e)
        return t

    def totals_by(self, key: str = "stage", *, doc_id: str | None = None) -> dict[str, Totals]:
        out: dict[str, Totals] = {}
        for e in self.entries:
            if doc_id is None or e.doc_id == doc_id:
                out.setdefault(getattr(e, key), Totals()).add(e)
        return out

    def for_document(self, doc_id: str) -> "CostLedger":
        return CostLedger([e for e in self.entries if e.doc_id == doc_id])

    def to_dataframe(self):
        import pandas as pd

        return pd.DataFrame([e.model_dump() for e in self.entries])

    def to_json(self) -> dict:
        return {
            "entries": [e.model_dump() for e in self.entries],
            "totals": self.totals().as_dict(),
            "by_stage": {k: v.as_dict() for k, v in self.totals_by("stage").items()},
        }

    @classmethod
    def from_jsonl(cls, path: str | Path) -> "CostLedger":
        """Read a ledger written with ``path=``; lines that are not a ``LedgerEntry`` (a line torn
        by a killed process) are skipped with one warning naming the file and how many."""
        return cls(read_jsonl(path, LedgerEntry.model_validate_json))


@dataclass(frozen=True)
class CallContext:
    ledger: CostLedger | None = None
    doc_id: str | None = None
    stage: str = "unattributed"
    program: str = "unattributed"


_CONTEXT: contextvars.ContextVar[CallContext] = contextvars.ContextVar("argus_call_context", default=CallContext())


def current_call_context() -> CallContext:
    return _CONTEXT.get()


@contextlib.contextmanager
def ledger_context(
    ledger: CostLedger | None = None,
    *,
    doc_id: str | None = None,
    stage: str | None = None,
    program: str | None = None,
) -> Iterator[CallContext]:
    """Attribute the LM calls made inside the block; unset arguments inherit the outer context."""
    outer = _CONTEXT.get()
    ctx = CallContext(
        ledger=ledger if ledger is not None else outer.ledger,
        doc_id=doc_id if doc_id is not None else outer.doc_id,
        stage=stage if stage is not None else outer.stage,
        program=program if program is not None else outer.program,
    )
    token = _CONTEXT.set(ctx)
    try:
        yield ctx
    finally:
        _CONTEXT.reset(token)


def record_lm_call(
    *,
    model: str,
    prompt_tokens: int,
    completion_tokens: int,
    cost_usd: float,
    cost_known: bool,
    cache_hit: bool,
    latency_s: float,
    cached_prompt_tokens: int = 0,
    cached_completion_tokens: int = 0,
    cached_cost_usd: float = 0.0,
) -> LedgerEntry | None:
    """Called by ``MeteredLM`` after every call; a no-op outside any ``ledger_context``."""
    ctx = _CONTEXT.get()
    if ctx.ledger is None:
        return None
    entry = LedgerEntry(
        doc_id=ctx.doc_id,
        stage=ctx.stage,
        program=ctx.program,
        model=model,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        cost_usd=cost_usd,
        cost_known=cost_known,
        cache_hit=cache_hit,
        latency_s=round(latency_s, 4),
        cached_prompt_tokens=cached_prompt_tokens,
        cached_completion_tokens=cached_completion_tokens,
        cached_cost_usd=cached_cost_usd,
        timestamp=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds"),
    )
    ctx.ledger.add(entry)
    return entry


__all__ = [
    "CallContext",
    "CostLedger",
    "LedgerEntry",
    "Totals",
    "current_call_context",
    "ledger_context",
    "read_jsonl",
    "record_lm_call",
]
