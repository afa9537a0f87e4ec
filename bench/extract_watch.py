"""``argus extract`` in a child process, watched: its memory and its documents done over time, its
peak RSS, and every file it moves into its output folder.

Used by ``bench/corpus.py`` and ``bench/soak.py``. Linux only (``/proc``, ``os.wait4``, inotify); no
dependency beyond the standard library (psutil is not in the lock: Ray vendors one, importable only
after ``import ray``).

- ``ExtractRun`` starts ``python -m argus.cli extract …`` from this checkout (``PYTHONPATH`` = the
  project), its stdout and stderr to files, and samples every ``interval`` seconds: the extract
  process's RSS (``VmRSS``), the RSS of it and all its descendants (the Ray runtime and its workers
  under ``--engine ray``), and the ``*.ekg.json`` files in the output folder (documents done).
  ``wait`` reaps it with ``os.wait4``, whose ``ru_maxrss`` is the peak RSS of that one process.
- ``MoveCounter`` counts, per file name, the files moved into a folder (``IN_MOVED_TO``): every
  output of ``argus extract`` is written to a temporary file and ``os.replace``d onto its name
  (``argus.io.atomic_open``), so the count of a ``.ekg.json`` is the number of times that EKG was
  written, whichever process wrote it.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import shutil
import signal
import struct
import subprocess
import tempfile
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
_PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024


def extract_command(inputs, out: Path, cache_dir: Path, *, engine: str = "local", actors: int | None = None,
                    skip_existing: bool = False, extra: tuple[str, ...] = ()) -> list[str]:
    """The argv of ``argus extract INPUTS --out OUT --cache-dir CACHE`` run by this interpreter."""
    cmd = [sys.executable, "-m", "argus.cli", "extract", *map(str, inputs), "--out", str(out),
           "--cache-dir", str(cache_dir)]
    if engine != "local":
        cmd += ["--engine", engine]
    if actors is not None:
        cmd += ["--actors", str(actors)]
    if skip_existing:
        cmd.append("--skip-existing")
    return cmd + list(extra)


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(PROJECT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    env.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    return env


# ----------------------------------------------------------------------------- /proc


def rss_kib(pid: int) -> int:
    """Resident memory of ``pid`` in KiB (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as fh:
            return int(fh.read().split()[1]) * _PAGE_KIB
    except (OSError, IndexError, ValueError):
        return 0


def descendants(pid: int) -> list[int]:
    """Every live descendant of ``pid`` (children, their children, …)."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as fh:
                ppid = int(fh.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            found.append(c)
            todo.append(c)
    return found


def start_time(pid: int) -> str | None:
    """When ``pid`` started (clock ticks since boot): a pid and its start name one process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def count_ekgs(out: Path) -> int:
    try:
        return sum(1 for e in os.scandir(out) if e.name.endswith(".ekg.json") and not e.name.startswith("."))
    except FileNotFoundError:
        return 0


# ----------------------------------------------------------------------------- the run


@dataclass
class Sample:
    t: float  #: seconds since the start
    done: int  #: EKGs in the output folder
    rss_kib: int  #: the extract process
    tree_kib: int  #: it and its descendants


@dataclass
class ExtractRun:
    """One ``argus extract`` child process, sampled while it runs (``start`` … ``wait``)."""

    cmd: list[str]
    out: Path
    log_dir: Path
    name: str = "extract"
    interval: float = 0.5
    samples: list[Sample] = field(default_factory=list)
    returncode: int | None = None
    maxrss_kib: int = 0
    started: float = 0.0  #: time.time() at the start
    wall_s: float = 0.0
    proc: subprocess.Popen | None = None
    #: every descendant seen while it ran: pid → (its start time, its command line)
    seen: dict[int, tuple[str | None, str]] = field(default_factory=dict)

    def start(self) -> "ExtractRun":
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._stdout = open(self.log_dir / f"{self.name}.out", "wb")
        self._stderr = open(self.log_dir / f"{self.name}.err", "wb")
        self.started = time.time()
        self._t0 = time.perf_counter()
        self.proc = subprocess.Popen(self.cmd, stdout=self._stdout, stderr=self._stderr, cwd=PROJECT, env=child_env())
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _sample(self) -> None:
        while True:
            pid = self.proc.pid
            main = rss_kib(pid)
            below = descendants(pid)
            for p in below:
                if p not in self.seen:
                    self.seen[p] = (start_time(p), cmdline(p))
            tree = main + sum(rss_kib(p) for p in below)
            if main:
                self.samples.append(Sample(time.perf_counter() - self._t0, count_ekgs(self.out), main, tree))
            if self._stop.wait(self.interval):
                return

    def done(self) -> int:
        return count_ekgs(self.out)

    def wait(self, timeout: float | None = None) -> int:
        """Reap the process (``os.wait4``: its own peak RSS) and stop sampling; kills it after ``timeout``."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            pid, status, usage = os.wait4(self.proc.pid, os.WNOHANG)
            if pid:
                break
            if deadline is not None and time.monotonic() > deadline:
                self.proc.kill()
                pid, status, usage = os.wait4(self.proc.pid, 0)
                break
            time.sleep(0.05)
        self.wall_s = time.perf_counter() - self._t0
        self._stop.set()
        self._thread.join()
        self.returncode = os.waitstatus_to_exitcode(status)
        self.proc.returncode = self.returncode  # (reaped here, not by Popen)
        self.maxrss_kib = usage.ru_maxrss
        self._stdout.close()
        self._stderr.close()
        return self.returncode

    def signal(self, signum: int) -> None:
        os.kill(self.proc.pid, signum)

    def stderr_tail(self, chars: int = 3000) -> str:
        return (self.log_dir / f"{self.name}.err").read_text(errors="replace")[-chars:]

    def peak_tree_kib(self) -> int:
        return max((s.tree_kib for s in self.samples), default=0)

    def leftovers(self) -> dict[int, str]:
        """Descendants seen while it ran that still run now that it has exited (pid → command line)."""
        return {p: cmd for p, (start, cmd) in self.seen.items() if start is not None and start_time(p) == start}

    def kill_leftovers(self, grace: float = 15.0) -> dict[int, str]:
        """SIGKILL what is still in ``leftovers()`` ``grace`` seconds after the exit (ours only: the same
        pid and start time; Ray's workers take a few seconds to notice their runtime is gone); what they were."""
        wait_until(lambda: not self.leftovers(), grace)
        left = self.leftovers()
        for p in left:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return left


def wait_until(predicate, timeout: float, poll: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(poll)
    return predicate()


# ----------------------------------------------------------------------------- inotify

_IN_MOVED_TO = 0x00000080
_IN_CLOSE_WRITE = 0x00000008
_IN_Q_OVERFLOW = 0x00004000
_IN_NONBLOCK = 0o4000
_EVENT = struct.Struct("iIII")


class MoveCounter:
    """Counts ``IN_MOVED_TO`` (a file renamed onto a name in ``folder``) per file name, from
    ``start`` to ``stop``. ``overflowed`` is True if the kernel dropped events (the counts are then
    incomplete and the caller must not trust them)."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.moves: dict[str, int] = {}
        self.overflowed = False
        self._libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        self._fd = self._libc.inotify_init1(_IN_NONBLOCK)
        if self._fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1 failed")
        self.folder.mkdir(parents=True, exist_ok=True)
        if self._libc.inotify_add_watch(self._fd, str(self.folder).encode(), _IN_MOVED_TO) < 0:
            raise OSError(ctypes.get_errno(), f"inotify_add_watch {self.folder} failed")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)

    def start(self) -> "MoveCounter":
        self._thread.start()
        return self

    def _read(self) -> None:
        import select

        buf = b""
        while True:
            ready, _, _ = select.select([self._fd], [], [], 0.2)
            if ready:
                try:
                    buf += os.read(self._fd, 1 << 16)
                except BlockingIOError:
                    pass
                while len(buf) >= _EVENT.size:
                    _wd, mask, _cookie, length = _EVENT.unpack_from(buf)
                    if len(buf) < _EVENT.size + length:
                        break
                    name = buf[_EVENT.size:_EVENT.size + length].rstrip(b"\0").decode(errors="replace")
                    buf = buf[_EVENT.size + length:]
                    if mask & _IN_Q_OVERFLOW:
                        self.overflowed = True
                    elif mask & _IN_MOVED_TO:
                        self.moves[name] = self.moves.get(name, 0) + 1
            elif self._stop.is_set():
                return

    def stop(self) -> dict[str, int]:
        """Stop once every pending event is read; the counts."""
        self._stop.set()
        self._thread.join()
        os.close(self._fd)
        return self.moves


def terminate(run: ExtractRun, grace: float = 60.0) -> None:
    """SIGTERM (then SIGKILL after ``grace`` seconds) a run still going, e.g. when a benchmark fails."""
    if run.proc is not None and run.returncode is None:
        try:
            run.signal(signal.SIGTERM)
        except ProcessLookupError:
            pass
        run.wait(timeout=grace)


@contextlib.contextmanager
def work_folder(keep: Path | None, prefix: str):
    """``keep`` (made if missing), or a temporary folder removed at the end: where a benchmark puts its
    corpus, outputs and logs."""
    root = keep or Path(tempfile.mkdtemp(prefix=prefix))
    root.mkdir(parents=True, exist_ok=True)
    try:
        yield root
    finally:
        if keep is None:
            shutil.rmtree(root, ignore_errors=True)
