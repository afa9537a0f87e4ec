"""Batch extraction over many documents: progress bar, per-document summary, nothing lost.

For each document: ``<out>/<doc_id>.ekg.json`` and ``<doc_id>.graphml`` are written atomically as
soon as the document is done; its ledger entries are appended to ``<out>/ledger.jsonl``; a failure
is recorded in ``<out>/errors.jsonl`` and the batch goes on. ``<out>/summary.csv`` is rewritten
after every document.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from argus.config import ArgusConfig
from argus.errors import ArgusError
from argus.export import write_ekg
from argus.io import write_text_atomic
from argus.ledger import CostLedger
from argus.schema import DocumentEKG

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
) -> BatchReport:
    from argus.pipeline import ArgusPipeline, iter_sources

    console = console or Console(stderr=True)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pipe = pipeline or ArgusPipeline(config)
    report = BatchReport(ledger=CostLedger(path=out / "ledger.jsonl"))
    sources = list(iter_sources(paths))
    if not sources:
        console.print("[yellow]no input files[/yellow]")
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.fields[doc]}"), console=console, transient=False) as progress:
        task = progress.add_task("documents", total=len(sources), doc="")
        for label, item in sources:
            progress.update(task, doc=Path(label).name)
            t0 = time.perf_counter()
            if isinstance(item, ArgusError):
                _record_error(report, out, label, item)
                progress.advance(task)
                continue
            target = out / f"{item.doc_id}.ekg.json"
            if skip_existing and target.exists():
                progress.console.print(f"[dim]{item.doc_id}: exists, skipped[/dim]")
                progress.advance(task)
                continue
            try:
                if method == "oneshot":
                    ekg = pipe.extract_oneshot(item, ledger=report.ledger)
                else:
                    ekg = pipe.extract(item, ledger=report.ledger)
                paths_written = write_ekg(ekg, out, graphml=graphml)
            except ArgusError as exc:
                _record_error(report, out, label, exc, doc_id=item.doc_id)
                progress.advance(task)
                continue
            except OSError:
                raise  # the machine (disk, permissions), not the document: stop, outputs so far are intact
            except Exception as exc:  # a defect must not abort the batch either: record it, go on
                _record_error(report, out, label, exc, doc_id=item.doc_id)
                progress.console.print(f"[red]{item.doc_id}: unexpected {type(exc).__name__}: {str(exc)[:300]}[/red]")
                progress.advance(task)
                continue
            row = summary_row(ekg, time.perf_counter() - t0)
            report.rows.append(row)
            report.outputs[ekg.doc_id] = paths_written["json"]
            _write_summary(out, report.rows)
            progress.console.print(_stage_table(ekg))
            for w in ekg.warnings:
                progress.console.print(f"[yellow]  warning:[/yellow] {w[:300]}")
            progress.advance(task)
    _print_summary(console, report, out)
    return report


def _record_error(report: BatchReport, out: Path, label: str, exc: Exception, doc_id: str | None = None) -> None:
    entry = {"source": label, "doc_id": doc_id, "error": type(exc).__name__, "message": str(exc)}
    report.errors.append(entry)
    with open(out / "errors.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps(entry, ensure_ascii=False) + "\n")


def _print_summary(console: Console, report: BatchReport, out: Path) -> None:
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
