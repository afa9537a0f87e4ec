"""Packing statute files in worker processes, for ``build_statute_graph``.

Every file is parsed, split into Sätze and read for references in one pass by
:func:`argus.statutes.packed.pack_source`, which needs nothing but the file and the registry of
every code's names (read beforehand from the files' headers). So the files are shared out to
forked worker processes in chunks, and their packs come back, in source order, as compact arrays
(:class:`~argus.statutes.packed.PackedCode`). The building process only turns those into the
graph's dicts, meanwhile, and resolves the references into other codes.

Workers are forked (Linux): they inherit the sources and the registry without copying them. A
chunk's packs come back pickled in a file of a spool folder (in ``/dev/shm`` where there is one),
which the building process reads when it gets to that chunk.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import pickle
import signal
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from argus.statutes.codes import CodeRegistry
from argus.statutes.corpus import XmlSource
from argus.statutes.packed import PackedCode, pack_source
from argus.statutes.parser import ParseIssue

#: Chunks per worker: small enough that the workers stay busy to the end (BGB is 50 times a small
#: law), large enough that files stay few.
CHUNKS_PER_WORKER = 48

#: What forked workers inherit: the sources, the registry and the spool folder of the build under way.
_JOB: tuple[Sequence[XmlSource], CodeRegistry | None, str] | None = None


def default_workers() -> int:
    """Worker processes for a build: the CPUs this process may use, at most 8; 1 (everything in
    this process) where forking is unavailable or unsafe (not Linux, or inside a daemonic process)."""
    if not sys.platform.startswith("linux") or multiprocessing.current_process().daemon:
        return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, 8))


def _worker_start() -> None:
    """A forked worker's start: no cyclic garbage collection (it only allocates, then exits)."""
    gc.disable()


def _forked_pool(workers: int):
    """A pool of ``workers`` forked processes that a SIGTERM ends. A worker inherits the parent's Python
    handlers, and one that does not raise (an application's "stop after this document") would keep the
    worker waiting for work when the pool terminates it after a failure: the build would hang instead of
    failing. So the workers are forked while SIGTERM has its default action (in the main thread, where a
    handler can be set; the parent's handler is back as soon as they exist)."""
    import threading

    ctx = multiprocessing.get_context("fork")
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) in (None, signal.SIG_DFL):  # None: a handler set outside Python
        return ctx.Pool(workers, initializer=_worker_start)
    previous = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        return ctx.Pool(workers, initializer=_worker_start)
    finally:
        signal.signal(signal.SIGTERM, previous)


def packed_sources(
    sources: Sequence[XmlSource], registry: CodeRegistry | None, workers: int
) -> Iterator[tuple[int, PackedCode | list[ParseIssue]]]:
    """(source index, pack or the source's issues) for every source, in source order, packed by
    ``workers`` forked processes (in this process when ``workers`` is 1 or there are few sources)."""
    if workers <= 1 or len(sources) < 4:
        for idx, source in enumerate(sources):
            yield idx, pack_source(source, registry)
        return
    global _JOB
    chunks = _chunks([_size(s) for s in sources], workers * CHUNKS_PER_WORKER)
    shm = Path("/dev/shm")
    with tempfile.TemporaryDirectory(prefix="statute-build-", dir=shm if shm.is_dir() else None) as spool:
        _JOB = (sources, registry, spool)
        try:
            with _forked_pool(workers) as pool:
                for (lo, _), path in zip(chunks, pool.imap(_pack_chunk, chunks)):
                    with open(path, "rb") as fh:
                        results = pickle.load(fh)
                    os.unlink(path)
                    for k, result in enumerate(results):
                        yield lo + k, result
                pool.close()
                pool.join()
        finally:
            _JOB = None


def _size(source: XmlSource) -> int:
    if source.data is not None:
        return len(source.data)
    try:
        return os.stat(source.path).st_size if source.path is not None else 1
    except OSError:
        return 1


def _chunks(sizes: list[int], count: int) -> list[tuple[int, int]]:
    """About ``count`` runs ``(lo, hi)`` of the sources, of about equal bytes (the work grows with
    them), the last tenth of the bytes in runs a quarter of that: a large file near the end then
    keeps one worker busy while the other has nothing left."""
    total = sum(sizes) or 1
    target = total / count
    chunks: list[tuple[int, int]] = []
    lo, acc, done = 0, 0, 0
    for i, size in enumerate(sizes):
        acc += size
        limit = target if done + acc < 0.9 * total else target / 4
        if acc >= limit:
            chunks.append((lo, i + 1))
            done += acc
            lo, acc = i + 1, 0
    if lo < len(sizes):
        chunks.append((lo, len(sizes)))
    return chunks


def _pack_chunk(chunk: tuple[int, int]) -> str:
    """A worker: pack the sources ``chunk`` names (``_JOB`` is the fork's copy of the build's) into a
    file of the spool folder; its path.

    The packs go through a file, not the pool's pipe: the pool reads its pipe in a thread of the
    building process, 64 kB at a time, each read waiting for the interpreter lock that the building
    thread holds for milliseconds at a stretch; the workers would spend much of the build blocked
    on a full pipe."""
    assert _JOB is not None, "statute build worker without a job (not forked?)"
    sources, registry, spool = _JOB
    packs = [pack_source(sources[idx], registry) for idx in range(*chunk)]
    path = os.path.join(spool, f"{chunk[0]}.pickle")
    with open(path, "wb") as fh:
        pickle.dump(packs, fh, protocol=pickle.HIGHEST_PROTOCOL)
    return path
