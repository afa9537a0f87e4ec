"""Batch extraction over many documents: progress bar, per-document summary, nothing lost.

For each document: ``<out>/<doc_id>.ekg.json`` and ``<doc_id>.graphml`` are written atomically as
soon as the document is done; its ledger entries are appended to ``<out>/ledger.jsonl`` (one
document's entries together, in one locked append); a failure is recorded in ``<out>/errors.jsonl``
and the batch goes on. ``<out>/summary.csv`` is rewritten after every document: the rows an earlier
run on the folder left (a run resumed with ``--skip-existing`` keeps them), then this run's in input order.

Faults:

- Several runs on one output folder: a document is *claimed* (``<out>/<doc_id>.claim``, an
  exclusive ``fcntl.flock`` on it, holding the claimant's pid) from the start of its extraction
  until its outputs are written; a document claimed by another live process is skipped ("claimed
  by pid N") and counted, one whose EKG another run wrote since this command started is not redone, so
  no EKG is written twice. A run that is killed leaves its claim file unlocked (the kernel drops
  the lock), and the next run takes it over.
- A write that fails (a full disk, a file-size limit, permissions): that document is recorded as
  failed, with the path and the reason, and the batch goes on; nothing is left half-written (EKGs
  are replaced atomically, a failed ledger append is cut back), so the same command with
  ``--skip-existing`` later does the rest. ``argus extract`` exits 1.
- SIGTERM (and Ctrl-C): the batch stops at once, writes nothing more, releases its claims and
  raises ``BatchInterrupted``, which ``argus extract`` reports in one line ("rerun with
  --skip-existing") before exiting 143 (130 for Ctrl-C). Documents run in daemon threads, so a
  document still being extracted does not hold the exit up.

Documents run ``config.concurrency.documents`` at a time (``argus extract --concurrency N``), each
in the same pipeline, whose in-flight bound holds across all of them. ``extract_document`` is the
unit of work and ``BatchWriter`` the one writer of a batch's outputs; the Ray engine
(``argus.runs.distributed``) uses both, so its outputs are written exactly as these are.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import json
import os
import queue
import signal
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from argus.config import ArgusConfig
from argus.errors import ArgusError, ConfigError
from argus.io import append_jsonl_line, write_text_atomic
from argus.models.ledger import CostLedger, LedgerEntry
from argus.graph.schema import DocumentEKG

if TYPE_CHECKING:
    from rich.progress import Progress

SUMMARY_COLUMNS = [
    "doc_id", "status", "kind", "sentences", "facts", "facts_by", "chunks", "entities", "events", "temporal_edges",
    "causal_edges", "lm_calls", "tokens", "cost_usd", "seconds",
]


def summary_row(ekg: DocumentEKG, seconds: float) -> dict:
    t = ekg.ledger.totals
    return {
        "doc_id": ekg.doc_id,
        "status": "ok",
        "kind": ekg.document_kind,
        "sentences": len(ekg.sentences),
        "facts": sum(1 for s in ekg.sentences if s.in_narrative and s.fact),
        # "heading": the FACTS section's sentences the gate kept; "content": no FACTS heading was
        # found, and the gate judged every sentence of the body by what it says
        "facts_by": "heading" if ekg.facts_section_found else "content",
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
    #: documents not done by this run: {"doc_id", "source", "reason"} (claimed by another run, …)
    skipped: list[dict] = field(default_factory=list)
    outputs: dict[str, Path] = field(default_factory=dict)
    ledger: CostLedger = field(default_factory=CostLedger)

    @property
    def ok(self) -> bool:
        return not self.errors


def _read_summary(out: Path) -> dict[str, dict]:
    """doc_id → row of ``out/summary.csv`` as an earlier run left it (nothing where there is none, or
    where it cannot be read: it is then rewritten with this run's rows)."""
    import csv

    try:
        with open(out / "summary.csv", newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
    except (OSError, UnicodeDecodeError, csv.Error):
        return {}
    return {r["doc_id"]: {c: r.get(c, "") for c in SUMMARY_COLUMNS} for r in rows if r.get("doc_id")}


def _write_summary(out: Path, rows: list[dict]) -> None:
    lines = [",".join(SUMMARY_COLUMNS)]
    for r in rows:
        lines.append(",".join(str(r.get(c, "")).replace(",", ";") for c in SUMMARY_COLUMNS))
    write_text_atomic(out / "summary.csv", "\n".join(lines) + "\n")


def _print_stages(console: Console, ekg: DocumentEKG) -> None:
    from argus.terminal import print_table

    headers = ["stage", "seconds", "LM calls", "tokens", "USD"]
    print_table(console, f"{ekg.doc_id}: stages", headers,
                [[s.stage, f"{s.seconds:.2f}", s.lm_calls, s.tokens, f"{s.cost_usd:.6f}"] for s in ekg.stages],
                right=headers[1:])


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
    #: why the document was not run (claimed by another process, …); then ``ekg`` and ``error`` are None
    skipped: str | None = None

    def to_json(self) -> dict:
        """A plain, picklable form (what Ray actors return)."""
        return {"index": self.index, "label": self.label, "doc_id": self.doc_id,
                "ekg": self.ekg.model_dump(mode="json") if self.ekg is not None else None, "error": self.error,
                "entries": [e.model_dump(mode="json") for e in self.entries], "seconds": self.seconds,
                "skipped": self.skipped}

    @classmethod
    def from_json(cls, data: dict) -> "DocumentResult":
        return cls(index=data["index"], label=data["label"], doc_id=data["doc_id"],
                   ekg=DocumentEKG.model_validate(data["ekg"]) if data["ekg"] is not None else None,
                   error=data["error"], entries=[LedgerEntry.model_validate(e) for e in data["entries"]],
                   seconds=data["seconds"], skipped=data.get("skipped"))


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
    """Run one document through ``pipe``; any failure of the document (a project error, an
    ``OSError`` of this machine such as a full cache disk, or a defect) comes back as its ``error``,
    never raised."""
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
    except OSError as exc:  # this machine's (a full cache disk, permissions): the document fails, the batch goes on
        return DocumentResult(index, label, doc_id, None, _error(label, exc, doc_id), ledger.entries,
                              time.perf_counter() - t0)
    except Exception as exc:  # a defect must not abort the batch either: record it, go on
        err = _error(label, exc, doc_id)
        err["unexpected"] = True
        return DocumentResult(index, label, doc_id, None, err, ledger.entries, time.perf_counter() - t0)
    return DocumentResult(index, label, ekg.doc_id, ekg, None, ledger.entries, time.perf_counter() - t0)


_LIBC_TRIM: list = []  # [malloc_trim or None], looked up once


def release_free_memory() -> None:
    """Hand the C heap's free pages back to the system (glibc ``malloc_trim(0)``; elsewhere nothing).

    Called after each document of a batch. A document's extraction allocates and frees hundreds of
    megabytes in the C heap (the encoder's activations, sized by each batch of sentences; numpy
    arrays), and glibc keeps what is freed inside its heaps for reuse: with documents of varied
    lengths the free space ends up fragmented, so the resident memory of a long batch grew by about
    10 MiB per document (``bench/soak.py``: 937 → 1407 MiB from the 12th to the 50th complaint)
    though no object was kept. Trimming takes milliseconds and keeps it flat."""
    if not _LIBC_TRIM:
        trim = None
        try:
            import ctypes
            import ctypes.util

            trim = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
            trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
        except (OSError, AttributeError):  # not glibc (macOS, musl): nothing to do
            trim = None
        _LIBC_TRIM.append(trim)
    if _LIBC_TRIM[0] is not None:
        _LIBC_TRIM[0](0)


class BatchInterrupted(KeyboardInterrupt):
    """A batch stopped by SIGTERM or SIGINT (Ctrl-C): what was written stays written, nothing is
    half-written, the claims are released. ``signum`` is the signal; the message says what to do."""

    def __init__(self, message: str, signum: int = signal.SIGINT):
        super().__init__(message)
        self.signum = signum


@contextlib.contextmanager
def sigterm_as_interrupt():
    """In the main thread, SIGTERM raises ``KeyboardInterrupt("SIGTERM")`` inside the block, so a
    terminated batch takes the path of Ctrl-C (a second SIGTERM kills at once)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    fired = []

    def handler(signum, frame):
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        fired.append(signum)
        raise KeyboardInterrupt("SIGTERM")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        if not fired:  # (once it fired, a second SIGTERM kills at once, also outside the block)
            signal.signal(signal.SIGTERM, previous)


def interrupted(exc: KeyboardInterrupt, done: int, total: int) -> BatchInterrupted:
    """The ``BatchInterrupted`` for an interrupt (``exc``) after ``done`` of ``total`` documents."""
    signum = signal.SIGTERM if exc.args == ("SIGTERM",) else signal.SIGINT
    name = "SIGTERM" if signum == signal.SIGTERM else "interrupt (SIGINT)"
    return BatchInterrupted(f"{name}: the batch stopped after {done} of {total} document(s); what was written is "
                            "complete, nothing is half-written; run the same command with --skip-existing to do the rest",
                            signum)


def _process_start(pid: int) -> str | None:
    """The start time of process ``pid`` (clock ticks since boot, /proc), to tell a reused pid."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def process_started_at() -> float:
    """When this process started (epoch seconds; Linux ``/proc``, to the clock tick), else now: the
    start of an ``argus`` command, from which a run counts the EKGs other runs wrote meanwhile."""
    ticks = _process_start(os.getpid())
    if ticks is None:
        return time.time()
    try:  # (/proc counts a process's start in clock ticks since boot)
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - int(ticks) / os.sysconf("SC_CLK_TCK")
    except (ValueError, OSError, AttributeError):
        return time.time()
    return time.time() - max(0.0, age)


class Claims:
    """This process's claims on documents of one output folder: ``<out>/<doc_id>.claim`` held under
    an exclusive ``fcntl.flock`` (the file says who: pid, host, process start) from the start of a
    document's extraction until its outputs are written. The kernel drops the lock when the
    process dies however it dies, so a claim left by a killed run is taken over by the next."""

    def __init__(self, out: Path):
        self.out = out
        self._held: dict[str, int] = {}
        self._lock = threading.Lock()
        self._closed = False

    def path(self, doc_id: str) -> Path:
        return self.out / f"{doc_id}.claim"

    def take(self, doc_id: str) -> str | None:
        """Claim ``doc_id``: None when this process now holds it, else who does ("pid N", …).

        The whole take runs under this object's lock, and a closed ``Claims`` creates no file: once
        ``release_all(close=True)`` has returned, no claim file of this process can appear, even from
        a worker thread that was about to create one when the batch stopped (its process exits next,
        and a file created then would be left behind, unlocked)."""
        with self._lock:
            if self._closed:
                return "this run, which is stopping"
            return self._take(doc_id)

    def _take(self, doc_id: str) -> str | None:
        import fcntl

        path = self.path(doc_id)
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = self._holder(fd)
                os.close(fd)
                return holder
            except OSError as exc:  # a filesystem without locks: the claim file alone (no takeover test)
                if exc.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS):
                    os.close(fd)
                    raise
            try:  # the file locked must still be the claim (its last holder removes it when done)
                current = os.stat(path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                current = False
            if not current:
                os.close(fd)
                continue
            try:  # who holds it, for the message of another claimant (the lock is the claim)
                me = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "start": _process_start(os.getpid())})
                os.ftruncate(fd, 0)
                os.pwrite(fd, me.encode(), 0)
            except OSError:  # (a full disk)
                pass
            self._held[doc_id] = fd
            return None

    def _holder(self, fd: int) -> str:
        try:
            who = json.loads(os.pread(fd, 4096, 0))
            pid = int(who["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            return "another process"
        if pid == os.getpid():
            return "this run (another input with the same document id)"
        host = who.get("host")
        return f"pid {pid}" + (f" on {host}" if host and host != socket.gethostname() else "")

    @staticmethod
    def _drop(path: Path, fd: int) -> None:
        with contextlib.suppress(OSError):
            os.unlink(path)  # (unlinked while still locked: a waiting claimant sees it is gone)
        os.close(fd)

    def release(self, doc_id: str | None) -> None:
        with self._lock:
            fd = self._held.pop(doc_id, None) if doc_id is not None else None
        if fd is not None:
            self._drop(self.path(doc_id), fd)

    def release_all(self, *, close: bool = False) -> None:
        """Release every claim held; ``close``: take no more (a stopping batch)."""
        with self._lock:
            held, self._held = self._held, {}
            self._closed = self._closed or close
        for doc_id, fd in held.items():
            self._drop(self.path(doc_id), fd)


def write_failure(result: "DocumentResult", out: Path, exc: OSError) -> dict:
    """The error record of a document whose outputs could not be written (a full disk, …)."""
    where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
    reason = exc.strerror or str(exc)
    unbooked = " (its LM calls are not in ledger.jsonl)" if str(exc.filename or "").endswith("ledger.jsonl") else ""
    return {"source": result.label, "doc_id": result.doc_id, "error": type(exc).__name__,
            "message": f"its outputs could not be written to {out}/: {reason}{where}; nothing of them is left "
                       f"half-written{unbooked}. Free space (or fix the folder) and run the same command with "
                       "--skip-existing to do it"}


class BatchWriter:
    """The one writer of a batch's outputs (EKG + GraphML, ``ledger.jsonl``, ``errors.jsonl``,
    ``summary.csv``). Call ``write`` from one thread as results arrive, in any order. A write that
    fails (``OSError``) makes that document a failure and the batch goes on; ``claims``, if given,
    are released as each document is written."""

    def __init__(self, out: Path, *, graphml: bool = True, console: Console | None = None, claims: Claims | None = None):
        self.out = out
        self.graphml = graphml
        self.console = console or Console(stderr=True)
        self.claims = claims
        self.report = BatchReport(ledger=CostLedger(path=out / "ledger.jsonl"))
        self._rows: dict[int, dict] = {}
        #: the rows an earlier run left in summary.csv (a run resumed with --skip-existing keeps them: the
        #: table has one row for every EKG the runs on this folder wrote); a row of a document this run
        #: writes again is replaced
        self._earlier: dict[str, dict] = _read_summary(out)

    def write(self, result: DocumentResult) -> None:
        try:
            if result.skipped is not None:
                self.report.skipped.append({"doc_id": result.doc_id, "source": result.label, "reason": result.skipped})
                self.console.print(f"[yellow]{result.doc_id}: {result.skipped}, skipped[/yellow]")
                return
            try:
                self._write(result)
            except OSError as exc:
                self.record_error(write_failure(result, self.out, exc))
                self.console.print(f"[red]{result.doc_id}: {self.report.errors[-1]['message']}[/red]")
        finally:
            if self.claims is not None:
                self.claims.release(result.doc_id)

    def _write(self, result: DocumentResult) -> None:
        try:
            self.report.ledger.extend(result.entries)
        except OSError as exc:
            exc.filename = exc.filename or str(self.report.ledger.path)  # (a failed write names no file)
            raise
        if result.error is not None:
            self.record_error(result.error)
            if result.error.get("unexpected"):
                self.console.print(f"[red]{result.doc_id}: unexpected {result.error['error']}: "
                                   f"{result.error['message'][:300]}[/red]")
            return
        # networkx comes with it: imported when a graph is written, not when the CLI starts a run
        from argus.output.export import write_ekg

        ekg = result.ekg
        try:
            paths_written = write_ekg(ekg, self.out, graphml=self.graphml)
        except OSError as exc:
            exc.filename = exc.filename or str(self.out / f"{ekg.doc_id}.ekg.json")
            raise
        self._rows[result.index] = summary_row(ekg, result.seconds)
        self._earlier.pop(ekg.doc_id, None)
        self.report.rows = [self._rows[i] for i in sorted(self._rows)]
        self.report.outputs[ekg.doc_id] = paths_written["json"]
        try:
            _write_summary(self.out, [*self._earlier.values(), *self.report.rows])
        except OSError as exc:  # the EKG is written; only the table is behind (rewritten with the next document)
            self.console.print(f"[yellow]summary.csv not updated: {exc.strerror or exc}[/yellow]")
        _print_stages(self.console, ekg)
        for w in ekg.warnings:
            self.console.print(f"[yellow]  warning:[/yellow] {w[:300]}")

    def record_error(self, entry: dict) -> None:
        entry = {k: v for k, v in entry.items() if k != "unexpected"}
        self.report.errors.append(entry)
        try:
            append_jsonl_line(self.out / "errors.jsonl", json.dumps(entry, ensure_ascii=False))
        except OSError as exc:  # (a full disk): the error is still reported at the end of the batch
            self.console.print(f"[red]errors.jsonl not updated ({exc.strerror or exc}): {entry['source']}: "
                               f"{entry['message'][:300]}[/red]")


def pending_sources(paths, out: Path, skip_existing: bool, console: Console,
                    skipped: list[dict] | None = None, workers: int = 1) -> list[tuple[int, str, object]]:
    """(index, label, document or its read error) of every input still to do; those skipped
    because their EKG exists are added to ``skipped`` (``BatchReport.skipped``) if given, without
    being read. The scanned pages of the PDFs to do are OCR'd ``workers`` at a time (the run's bound)."""
    from argus.ingest.files import doc_id_for, iter_paths
    from argus.ingest.sources import read_sources

    wanted: list[tuple[int, Path]] = []
    for index, p in enumerate(iter_paths(paths)):
        doc_id = doc_id_for(p)
        if skip_existing and p.is_file() and (out / f"{doc_id}.ekg.json").exists():
            console.print(f"[dim]{doc_id}: exists, skipped[/dim]")
            if skipped is not None:
                skipped.append({"doc_id": doc_id, "source": str(p), "reason": "exists"})
            continue
        wanted.append((index, p))
    read = read_sources([p for _, p in wanted], workers=workers, console=console)
    return [(index, label, item) for (index, _), (label, item) in zip(wanted, read)]


def claim_document(claims: Claims, out: Path, index: int, label: str, item, *, skip_existing: bool,
                   since: float) -> DocumentResult | None:
    """Claim ``item`` for this run: None when it is this run's to do, else the result that skips it
    (claimed by another process; its EKG exists and ``skip_existing``; or another run wrote its EKG
    since ``since``, this run's start)."""
    if isinstance(item, BaseException):
        return None
    try:
        holder = claims.take(item.doc_id)
    except OSError as exc:  # the claim file cannot be created (a full disk, a read-only folder)
        result = DocumentResult(index, label, item.doc_id, None, None, [], 0.0)
        result.error = write_failure(result, out, exc)
        return result
    if holder is not None:
        return DocumentResult(index, label, item.doc_id, None, None, [], 0.0, skipped=f"claimed by {holder}")
    try:
        written = (out / f"{item.doc_id}.ekg.json").stat().st_mtime
    except FileNotFoundError:
        return None
    if skip_existing or written >= since:
        claims.release(item.doc_id)
        why = "exists" if skip_existing and written < since else "written by another run meanwhile"
        return DocumentResult(index, label, item.doc_id, None, None, [], 0.0, skipped=why)
    return None


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
    since: float | None = None,
) -> BatchReport:
    """Extract every document under ``paths`` into ``out_dir``; ``concurrency`` (default: the
    configuration's ``concurrency.max_in_flight``) bounds the LM calls in flight across the batch.
    ``since`` (epoch seconds; default: now) is this run's start: an EKG another run wrote after it is
    not redone (``argus extract`` gives its process's start, so that two commands started together
    count each other's EKGs whatever their start-up took). SIGTERM or Ctrl-C stops it with
    ``BatchInterrupted`` (see the module docstring)."""
    from argus.pipeline import ArgusPipeline

    since = time.time() if since is None else since
    console = console or Console(stderr=True)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pipe = pipeline or ArgusPipeline(config)
    if concurrency is not None:
        pipe.set_concurrency(concurrency)
    documents = concurrency or pipe.config.concurrency.documents
    claims = Claims(out)
    writer = BatchWriter(out, graphml=graphml, console=console, claims=claims)
    todo = pending_sources(paths, out, skip_existing, console, writer.report.skipped,
                           workers=max(1, min(documents, os.cpu_count() or 1)))
    if not todo and not writer.report.skipped:
        console.print("[yellow]no input files[/yellow]")
    stop = threading.Event()

    def work(index: int, label: str, item) -> DocumentResult:
        if stop.is_set():
            return DocumentResult(index, label, getattr(item, "doc_id", None), None, None, [], 0.0, skipped="stopped")
        skipped = claim_document(claims, out, index, label, item, skip_existing=skip_existing, since=since)
        return skipped if skipped is not None else extract_document(pipe, index, label, item, method)

    try:
        with sigterm_as_interrupt(), batch_progress(console) as progress:
            task = progress.add_task("documents", total=len(todo), doc="")
            writer.console = progress.console
            jobs = [(contextvars.copy_context(), (i, label, item)) for i, label, item in todo]
            for result in _in_daemon_threads(work, jobs, max(1, min(documents, len(todo) or 1)), stop):
                writer.write(result)
                progress.update(task, doc=Path(result.label).name)
                progress.advance(task)
                release_free_memory()
    except KeyboardInterrupt as exc:
        stop.set()
        claims.release_all(close=True)
        raise interrupted(exc, len(writer.report.rows), len(todo)) from None
    finally:
        stop.set()
        claims.release_all(close=True)
    print_batch_summary(console, writer.report, out)
    return writer.report


def _in_daemon_threads(fn, jobs: list, workers: int, stop: threading.Event):
    """``fn(*args)`` of every ``(context, args)`` job, each in its ``contextvars`` context, on
    ``workers`` daemon threads; yields the results as they finish. Daemon threads: an interrupted
    batch exits without waiting for the documents still running (their results are not written)."""
    pending: queue.SimpleQueue = queue.SimpleQueue()
    for job in jobs:
        pending.put(job)
    results: queue.SimpleQueue = queue.SimpleQueue()

    def worker() -> None:
        while not stop.is_set():
            try:
                ctx, args = pending.get_nowait()
            except queue.Empty:
                return
            try:
                results.put((True, ctx.run(fn, *args)))
            except BaseException as exc:  # (extract_document returns its errors; this is a defect here)
                results.put((False, exc))

    for n in range(min(workers, len(jobs))):
        threading.Thread(target=worker, name=f"argus-doc-{n}", daemon=True).start()
    for _ in range(len(jobs)):
        while True:
            try:
                ok, value = results.get(timeout=0.5)  # (a timeout: signals are handled while waiting)
                break
            except queue.Empty:
                continue
        if not ok:
            raise value
        yield value


SUMMARY_HEADERS = {"doc_id": "document", "kind": "kind", "sentences": "sentences", "facts": "facts", "facts_by": "facts by",
                   "chunks": "chunks", "entities": "entities", "events": "events", "temporal_edges": "temporal",
                   "causal_edges": "causal", "lm_calls": "LM calls", "tokens": "tokens", "cost_usd": "USD",
                   "seconds": "seconds"}
"""The summary's headers as printed (``summary.csv`` keeps the column names, every column)."""


def print_batch_summary(console: Console, report: BatchReport, out: Path) -> None:
    """The summary table: a table where it fits the console, else one line per document (``argus.terminal``)."""
    from argus.terminal import print_table

    cols = SUMMARY_COLUMNS[:1] + SUMMARY_COLUMNS[2:]
    headers = [SUMMARY_HEADERS[c] for c in cols]
    print_table(console, "ARGUS extraction summary", headers, [[r.get(c, "") for c in cols] for r in report.rows],
                right=headers[1:])
    for e in report.errors:
        console.print(f"[red]failed[/red] {e['source']}: {e['message']}")
    t = report.ledger.totals()
    claimed = sum(1 for s in report.skipped if s["reason"].startswith("claimed by"))
    others = (f"; {len(report.skipped)} skipped" + (f", {claimed} of them claimed by another run" if claimed else "")
              if report.skipped else "")
    console.print(
        f"{len(report.rows)} EKG(s) written to {out}/ ({len(report.errors)} failed{others}); "
        f"LM calls {t.calls}, tokens {t.tokens}, cost ${t.cost_usd:.6f}"
    )
    for doc_id, p in report.outputs.items():
        print(p)
