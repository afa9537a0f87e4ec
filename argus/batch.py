"""Batch extraction over many documents: progress bar, per-document summary, nothing lost.

For each document: ``<out>/<doc_id>.ekg.json`` and ``<doc_id>.graphml`` are written atomically as
soon as the document is done; its ledger entries are appended to ``<out>/ledger.jsonl`` (one
document's entries together); a failure is recorded in ``<out>/errors.jsonl`` and the batch goes
on. ``<out>/summary.csv`` is rewritten after every document, its rows in input order.

Documents run ``config.concurrency.documents`` at a time (``argus extract --concurrency N``), each
in the same pipeline, whose in-flight bound holds across all of them. ``extract_document`` is the
unit of work and ``BatchWriter`` the one writer of a batch's outputs; the Ray engine
(``argus.distributed``) uses both, so its outputs are written exactly as these are.
"""

from __future__ import annotations

import contextvars
import json
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from argus.config import ArgusConfig
from argus.errors import ArgusError, ConfigError
from argus.io import append_jsonl_line, write_text_atomic
from argus.ledger import CostLedger, LedgerEntry
from argus.schema import DocumentEKG

if TYPE_CHECKING:
    from rich.progress import Progress

SUMMARY_COLUMNS = [
    "doc_id", "status", "sentences", "facts", "chunks", "entities", "events", "temporal_edges",
    "causal_edges", "lm_calls", "tokens", "cost_usd", "seconds",
]


def summary_row(ekg: DocumentEKG, seconds: float) -> dict:
    t = ekg.ledger.totals
    return {
        "doc_id": ekg.doc_id,
        "status": "ok",
        "sentences": len(ekg.sentences),
        "facts": sum(1 for s in ekg.sentences if s.in_narrative and s.fact),
        "chunks": len(ekg.chunks),
        "entities": len(ekg.graph.entities),
        "events": len(ekg.graph.events),
        "temporal_edges": len(ekg.graph.temporal_edges),
        "causal_edges": len(ekg.graph.causal_edges),
        "lm_calls": t.calls,
        "tokens": t.tokens,
        "cost_usd": round(t.cost_usd, 6),
        "seconds": round(seconds, 2),
    }


@dataclass
class BatchReport:
    rows: list[dict] = field(default_factory=list)
    errors: list[dict] = field(default_factory=list)
    outputs: dict[str, Path] = field(default_factory=dict)
    ledger: CostLedger = field(default_factory=CostLedger)

    @property
    def ok(self) -> bool:
        return not self.errors


def _write_summary(out: Path, rows: list[dict]) -> None:
    lines = [",".join(SUMMARY_COLUMNS)]
    for r in rows:
        lines.append(",".join(str(r.get(c, "")).replace(",", ";") for c in SUMMARY_COLUMNS))
    write_text_atomic(out / "summary.csv", "\n".join(lines) + "\n")


def _stage_table(ekg: DocumentEKG) -> Table:
    t = Table(title=f"{ekg.doc_id}: stages", show_edge=False, title_justify="left")
    for col in ("stage", "seconds", "LM calls", "tokens", "USD"):
        t.add_column(col, justify="right" if col != "stage" else "left")
    for s in ekg.stages:
        t.add_row(s.stage, f"{s.seconds:.2f}", str(s.lm_calls), str(s.tokens), f"{s.cost_usd:.6f}")
    return t


@dataclass
class DocumentResult:
    """What one document's extraction produced: its EKG or its error, and its ledger entries either
    way (a document that failed midway still spent what it spent)."""

    index: int
    label: str
    doc_id: str | None
    ekg: DocumentEKG | None
    error: dict | None
    entries: list[LedgerEntry]
    seconds: float

    def to_json(self) -> dict:
        """A plain, picklable form (what Ray actors return)."""
        return {"index": self.index, "label": self.label, "doc_id": self.doc_id,
                "ekg": self.ekg.model_dump(mode="json") if self.ekg is not None else None, "error": self.error,
                "entries": [e.model_dump(mode="json") for e in self.entries], "seconds": self.seconds}

    @classmethod
    def from_json(cls, data: dict) -> "DocumentResult":
        return cls(index=data["index"], label=data["label"], doc_id=data["doc_id"],
                   ekg=DocumentEKG.model_validate(data["ekg"]) if data["ekg"] is not None else None,
                   error=data["error"], entries=[LedgerEntry.model_validate(e) for e in data["entries"]],
                   seconds=data["seconds"])


def _error(label: str, exc: BaseException, doc_id: str | None = None) -> dict:
    return {"source": label, "doc_id": doc_id, "error": type(exc).__name__, "message": str(exc)}


METHODS = ("staged", "chunked", "sentence", "oneshot", "floor")
"""What ``argus extract --method`` runs: ``staged`` (the configured design, ``extraction.design``),
``chunked`` or ``sentence`` (that design whatever the configuration says), ``oneshot`` (the one-call
baseline), ``floor`` (keyword rules, no language model)."""


def method_runner(pipe, method: str):
    """The pipeline method that extracts one document by ``method`` (one of ``METHODS``)."""
    runners = {"staged": pipe.extract, "chunked": pipe.extract_chunked, "sentence": pipe.extract_by_sentence,
               "oneshot": pipe.extract_oneshot, "floor": pipe.extract_floor}
    if method not in runners:
        raise ConfigError(f"unknown method {method!r}; known: {', '.join(METHODS)}")
    return runners[method]


def extract_document(pipe, index: int, label: str, item, method: str = "staged") -> DocumentResult:
    """Run one document through ``pipe``; any failure of the document (a project error, or a defect)
    comes back as its ``error``, never raised — except ``OSError`` of this machine (disk, permissions)."""
    t0 = time.perf_counter()
    ledger = CostLedger()
    doc_id = getattr(item, "doc_id", None)
    if isinstance(item, BaseException):
        return DocumentResult(index, label, None, None, _error(label, item), [], 0.0)
    try:
        ekg = method_runner(pipe, method)(item, ledger=ledger)
    except ArgusError as exc:
        return DocumentResult(index, label, doc_id, None, _error(label, exc, doc_id), ledger.entries,
                              time.perf_counter() - t0)
    except OSError:
        raise
    except Exception as exc:  # a defect must not abort the batch either: record it, go on
        err = _error(label, exc, doc_id)
        err["unexpected"] = True
        return DocumentResult(index, label, doc_id, None, err, ledger.entries, time.perf_counter() - t0)
    return DocumentResult(index, label, ekg.doc_id, ekg, None, ledger.entries, time.perf_counter() - t0)


class BatchWriter:
    """The one writer of a batch's outputs (EKG + GraphML, ``ledger.jsonl``, ``errors.jsonl``,
    ``summary.csv``). Call ``write`` from one thread as results arrive, in any order."""

    def __init__(self, out: Path, *, graphml: bool = True, console: Console | None = None):
        self.out = out
        self.graphml = graphml
        self.console = console or Console(stderr=True)
        self.report = BatchReport(ledger=CostLedger(path=out / "ledger.jsonl"))
        self._rows: dict[int, dict] = {}

    def write(self, result: DocumentResult) -> None:
        self.report.ledger.extend(result.entries)
        if result.error is not None:
            self.record_error(result.error)
            if result.error.get("unexpected"):
                self.console.print(f"[red]{result.doc_id}: unexpected {result.error['error']}: "
                                   f"{result.error['message'][:300]}[/red]")
            return
        # networkx comes with it: imported when a graph is written, not when the CLI starts a run
        from argus.export import write_ekg

        ekg = result.ekg
        paths_written = write_ekg(ekg, self.out, graphml=self.graphml)
        self._rows[result.index] = summary_row(ekg, result.seconds)
        self.report.rows = [self._rows[i] for i in sorted(self._rows)]
        self.report.outputs[ekg.doc_id] = paths_written["json"]
        _write_summary(self.out, self.report.rows)
        self.console.print(_stage_table(ekg))
        for w in ekg.warnings:
            self.console.print(f"[yellow]  warning:[/yellow] {w[:300]}")

    def record_error(self, entry: dict) -> None:
        entry = {k: v for k, v in entry.items() if k != "unexpected"}
        self.report.errors.append(entry)
        append_jsonl_line(self.out / "errors.jsonl", json.dumps(entry, ensure_ascii=False))


def pending_sources(paths, out: Path, skip_existing: bool, console: Console) -> list[tuple[int, str, object]]:
    """(index, label, document or its read error) of every input still to do."""
    from argus.pipeline import iter_sources

    todo = []
    for index, (label, item) in enumerate(iter_sources(paths)):
        if skip_existing and not isinstance(item, ArgusError) and (out / f"{item.doc_id}.ekg.json").exists():
            console.print(f"[dim]{item.doc_id}: exists, skipped[/dim]")
            continue
        todo.append((index, label, item))
    return todo


def batch_progress(console: Console) -> Progress:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    TextColumn("{task.fields[doc]}"), console=console, transient=False)


def run_batch(
    paths,
    out_dir: str | Path,
    config: ArgusConfig | None = None,
    *,
    method: str = "staged",
    skip_existing: bool = False,
    graphml: bool = True,
    console: Console | None = None,
    pipeline=None,
    concurrency: int | None = None,
) -> BatchReport:
    """Extract every document under ``paths`` into ``out_dir``; ``concurrency`` (default: the
    configuration's ``concurrency.max_in_flight``) bounds the LM calls in flight across the batch."""
    from argus.pipeline import ArgusPipeline

    console = console or Console(stderr=True)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pipe = pipeline or ArgusPipeline(config)
    if concurrency is not None:
        pipe.set_concurrency(concurrency)
    documents = concurrency or pipe.config.concurrency.documents
    writer = BatchWriter(out, graphml=graphml, console=console)
    todo = pending_sources(paths, out, skip_existing, console)
    if not todo:
        console.print("[yellow]no input files[/yellow]")
    with batch_progress(console) as progress:
        task = progress.add_task("documents", total=len(todo), doc="")
        writer.console = progress.console
        with ThreadPoolExecutor(max_workers=max(1, min(documents, len(todo) or 1)), thread_name_prefix="argus-doc") as pool:
            futures = [pool.submit(contextvars.copy_context().run, extract_document, pipe, i, label, item, method)
                       for i, label, item in todo]
            try:
                for fut in as_completed(futures):
                    result = fut.result()
                    writer.write(result)
                    progress.update(task, doc=Path(result.label).name)
                    progress.advance(task)
            except BaseException:
                for f in futures:
                    f.cancel()
                raise
    print_batch_summary(console, writer.report, out)
    return writer.report


def print_batch_summary(console: Console, report: BatchReport, out: Path) -> None:
    table = Table(title="ARGUS extraction summary", title_justify="left")
    for c in SUMMARY_COLUMNS[:1] + SUMMARY_COLUMNS[2:]:
        table.add_column(c, justify="left" if c == "doc_id" else "right")
    for r in report.rows:
        table.add_row(*[str(r[c]) for c in SUMMARY_COLUMNS[:1] + SUMMARY_COLUMNS[2:]])
    console.print(table)
    for e in report.errors:
        console.print(f"[red]failed[/red] {e['source']}: {e['message']}")
    t = report.ledger.totals()
    console.print(
        f"{len(report.rows)} EKG(s) written to {out}/ ({len(report.errors)} failed); "
        f"LM calls {t.calls}, tokens {t.tokens}, cost ${t.cost_usd:.6f}"
    )
    for doc_id, p in report.outputs.items():
        print(p)
