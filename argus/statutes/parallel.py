"""Packing statute files in worker processes, for ``build_statute_graph``.

Every file is parsed, split into Sätze and read for references in one pass by
:func:`argus.statutes.packed.pack_source`, which needs nothing but the file and the registry of
every code's names (read beforehand from the files' headers). So the files are shared out to
forked worker processes in chunks, and their packs come back, in source order, as compact arrays
(:class:`~argus.statutes.packed.PackedCode`). The building process only turns those into the
graph's dicts, meanwhile, and resolves the references into other codes.

Workers are forked (Linux): they inherit the sources and the registry without copying them.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import sys
from collections.abc import Iterator, Sequence

from argus.statutes.codes import CodeRegistry
from argus.statutes.corpus import XmlSource
from argus.statutes.packed import PackedCode, pack_source
from argus.statutes.parser import ParseIssue

#: Chunks per worker: small enough that the workers stay busy to the end (BGB is 50 times a small
#: law), large enough that messages stay few.
CHUNKS_PER_WORKER = 48

#: What forked workers inherit: the sources and the registry of the build under way.
_JOB: tuple[Sequence[XmlSource], CodeRegistry | None] | None = None


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
    n = len(sources)
    per_chunk = max(1, -(-n // (workers * CHUNKS_PER_WORKER)))
    chunks = [(lo, min(lo + per_chunk, n)) for lo in range(0, n, per_chunk)]
    _JOB = (sources, registry)
    try:
        with multiprocessing.get_context("fork").Pool(workers, initializer=gc.disable) as pool:
            for (lo, _), results in zip(chunks, pool.imap(_pack_chunk, chunks)):
                for k, result in enumerate(results):
                    yield lo + k, result
            pool.close()
            pool.join()
    finally:
        _JOB = None


def _pack_chunk(chunk: tuple[int, int]) -> list[PackedCode | list[ParseIssue]]:
    """A worker: pack the sources ``chunk`` names (``_JOB`` is the fork's copy of the build's)."""
    assert _JOB is not None, "statute build worker without a job (not forked?)"
    sources, registry = _JOB
    return [pack_source(sources[idx], registry) for idx in range(*chunk)]
