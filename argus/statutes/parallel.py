"""Parsing statute files and reading their references with helper processes.

``build_statute_graph`` shares its per-file work with forked helper processes: parsing the XML
(with the Satz split) and, once every code is known, reading the references in each § (the
:class:`~argus.statutes.citations.ReferenceParser` needs the registry of all code names). What
depends on more than one file stays in the building process: skipping duplicate codes, the
registry, the graph itself and the resolution of references against it.

The files are cut into chunks. The building process works through them from the front, in source
order; the helpers take chunks from the back. Where they meet, the building process receives the
helpers' chunks, pickled, in order. The reference phase runs the same way (a helper reads the
references of the chunks it parsed, from the back, unless the building process gets there first).
So the build never waits for a busy or slow helper (at most for the chunk in its hands where they
meet), and the graph is the serial build's, node for node and edge for edge, however the chunks
were shared.

Helpers are forked (Linux): they inherit the sources without copying them, and keep the § texts
they parsed for the reference phase.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import pickle
import queue
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Sequence

from argus.statutes.corpus import XmlSource
from argus.statutes.parser import CodeInfo, ParsedCode, ParseIssue, parse_code
from argus.statutes.tree import code_tree

#: Chunks per process: small enough that the building process and its helpers stay busy to the end
#: (BGB is 50 times a small law), large enough that messages stay few.
CHUNKS_PER_PROCESS = 64
_POLL_S = 0.5
_FREE, _TAKEN = 0, 1


def default_workers() -> int:
    """Processes for a build (the building one included): the CPUs this process may use, at most 8;
    1 (serial) where forking is unavailable or unsafe (not Linux, or inside a daemonic process)."""
    if not sys.platform.startswith("linux") or multiprocessing.current_process().daemon:
        return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, 8))


def read_and_parse(source: XmlSource) -> tuple[ParsedCode | list[ParseIssue], float]:
    """One source parsed (or its issues) and the seconds it took."""
    t0 = time.perf_counter()
    try:
        data = source.read()
    except OSError as exc:
        return [ParseIssue(source.name, "unreadable", f"cannot read: {exc}")], 0.0
    parsed = parse_code(data, source.name)
    return parsed, time.perf_counter() - t0


class SharedBuild:
    """The helper processes of one build, seen from the building process.

    :meth:`parsed` yields every source's parse result in source order; then
    :meth:`start_references` and :meth:`references`, or :meth:`close`.
    A helper runs :func:`_help`.
    """

    def __init__(self, sources: Sequence[XmlSource], helpers: int) -> None:
        ctx = multiprocessing.get_context("fork")
        n = len(sources)
        per_chunk = max(1, -(-n // ((helpers + 1) * CHUNKS_PER_PROCESS)))
        self.sources = sources
        self.chunks = [(lo, min(lo + per_chunk, n)) for lo in range(0, n, per_chunk)]
        #: [next chunk from the front (this process), next chunk from the back (helpers)]
        self._ends = ctx.Array("l", [0, len(self.chunks) - 1])
        self._claims = ctx.Array("b", len(self.chunks))  #: reference phase: chunk taken by someone
        self._mine: set[int] = set()  #: chunks this process parsed
        self._results = ctx.Queue()
        self._commands = []
        self._procs = []
        for hid in range(helpers):
            recv, send = ctx.Pipe(duplex=False)
            proc = ctx.Process(
                target=_help,
                args=(sources, self.chunks, self._ends, self._claims, recv, self._results),
                name=f"statute-build-{hid}",
                daemon=True,
            )
            proc.start()
            recv.close()
            self._commands.append(send)
            self._procs.append(proc)
        self._pending: dict[int, bytes] = {}
        self.wait_s = 0.0  #: seconds spent waiting for helpers
        self.local_parse_s = 0.0  #: seconds this process spent parsing chunks itself
        self.parsed_here = 0  #: chunks this process parsed
        self.claimed_here = 0  #: chunks whose references this process read
        self._accepted: set[int] = set()

    # -- parse phase ------------------------------------------------------------------------
    def parsed(self) -> Iterator[tuple[int, ParsedCode | list[ParseIssue], float, tuple | None]]:
        """(source index, parse result, seconds, the code's ``tree.code_tree``) in source order.

        A code a helper parsed comes without its ``nodes`` and ``edges`` lists (its tree holds
        them); a code parsed here comes with its lists and no tree.
        """
        ends = self._ends
        for ci, (lo, hi) in enumerate(self.chunks):
            with ends.get_lock():
                mine = ends[0] <= ends[1]  # then ends[0] == ci: the chunks before are done
                if mine:
                    ends[0] = ci + 1
            if mine:
                self._mine.add(ci)
                self.parsed_here += 1
                for idx in range(lo, hi):
                    t0 = time.perf_counter()
                    parsed, seconds = read_and_parse(self.sources[idx])
                    self.local_parse_s += time.perf_counter() - t0
                    yield idx, parsed, seconds, None
            else:
                yield from self._receive(ci)

    # -- reference phase --------------------------------------------------------------------
    def start_references(self, infos: list[CodeInfo], accepted: set[int]) -> None:
        """Let the helpers read references: ``infos`` are the graph's codes in registry order (every
        helper builds the same :class:`~argus.statutes.codes.CodeRegistry` from them), ``accepted``
        the sources that became codes of the graph."""
        self._accepted = accepted
        for conn in self._commands:
            conn.send((infos, accepted))

    def references(self, read_here: Callable[[int], list]) -> Iterator[tuple[int, list]]:
        """(source index, [(layout index, references)]) for the accepted sources, in source order.

        ``read_here(source index)`` reads a source's references in this process, for the chunks
        it parsed or gets to before a helper.
        """
        accepted = self._accepted
        claims = self._claims
        for ci, (lo, hi) in enumerate(self.chunks):
            here = ci in self._mine
            if not here:
                with claims.get_lock():
                    here = claims[ci] == _FREE
                    if here:
                        claims[ci] = _TAKEN
            if here:
                self.claimed_here += 1
                for idx in range(lo, hi):
                    if idx in accepted:
                        yield idx, read_here(idx)
            else:
                yield from self._receive(ci)
        self._join()

    def close(self) -> None:
        """Stop the helpers after :meth:`parsed` when no references are wanted."""
        for conn in self._commands:
            try:
                conn.send(None)
            except OSError:
                pass
        self._join()

    def terminate(self) -> None:
        """Stop the helpers at once (the build failed)."""
        for proc in self._procs:
            if proc.is_alive():
                proc.terminate()
        for proc in self._procs:
            proc.join()

    # -- plumbing ---------------------------------------------------------------------------
    def _receive(self, ci: int) -> list:
        pending = self._pending
        t0 = time.perf_counter()
        try:
            while ci not in pending:
                try:
                    msg = self._results.get(timeout=_POLL_S)
                except queue.Empty:
                    dead = [p for p in self._procs if p.exitcode not in (None, 0)]
                    if dead:
                        self.terminate()
                        raise RuntimeError(
                            f"statute build helper {dead[0].name} died (exit code {dead[0].exitcode})"
                        ) from None
                    continue
                if msg[0] == "error":
                    self.terminate()
                    raise RuntimeError(f"statute build helper failed:\n{msg[1]}")
                pending[msg[0]] = msg[1]
        finally:
            self.wait_s += time.perf_counter() - t0
        return pickle.loads(pending.pop(ci))

    def _join(self) -> None:
        for conn in self._commands:
            conn.close()
        for proc in self._procs:
            proc.join()
        self._results.close()


# --------------------------------------------------------------------------------------------
# Helper side


def _help(sources, chunks, ends, claims, commands, results) -> None:
    """A helper: parse chunks from the back while any is left, then read the references of its
    codes on request."""
    gc.disable()  # as in the building process: millions of small acyclic objects
    try:
        from argus.statutes.citations import ReferenceParser, Style
        from argus.statutes.codes import CodeRegistry
        from argus.statutes.resolve import reference_scan_start

        done: list[int] = []
        #: source index -> [(layout index, code key, § text, scan start)]
        scans: dict[int, list[tuple[int, str, str, int]]] = {}
        while True:
            with ends.get_lock():
                ci = ends[1]
                if ci < ends[0]:
                    break
                ends[1] = ci - 1
            lo, hi = chunks[ci]
            batch = []
            for idx in range(lo, hi):
                parsed, seconds = read_and_parse(sources[idx])
                if not isinstance(parsed, ParsedCode):
                    batch.append((idx, parsed, seconds, None))
                    continue
                attrs = dict(parsed.nodes)
                scans[idx] = [
                    (li, layout.code_key, attrs[layout.section_id]["text"], start)
                    for li, layout in enumerate(parsed.layouts)
                    if (start := reference_scan_start(layout, attrs[layout.section_id])) is not None
                ]
                tree = code_tree(parsed)
                parsed.nodes, parsed.edges = [], []  # shipped as the tree
                batch.append((idx, parsed, seconds, tree))
            results.put((ci, pickle.dumps(batch, protocol=pickle.HIGHEST_PROTOCOL)))
            done.append(ci)
        request = commands.recv()
        if request is None:
            return
        infos, accepted = request
        parser = ReferenceParser(CodeRegistry(infos), Style.STATUTE)
        for ci in done:
            with claims.get_lock():
                if claims[ci] != _FREE:
                    continue  # the building process got there first
                claims[ci] = _TAKEN
            lo, hi = chunks[ci]
            batch = []
            for idx in range(lo, hi):
                if idx not in accepted:
                    continue
                found = []
                for li, code_key, text, start in scans.pop(idx, ()):
                    refs = parser.parse(text, citing_code=code_key, start=start)
                    if refs:
                        found.append((li, refs))
                batch.append((idx, found))
            results.put((ci, pickle.dumps(batch, protocol=pickle.HIGHEST_PROTOCOL)))
    except BaseException:  # noqa: BLE001 - reported to the building process, which raises
        results.put(("error", traceback.format_exc()))
