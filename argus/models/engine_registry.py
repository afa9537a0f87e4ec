"""The machine-wide registry of local engines: one ``llama_cpp.server`` per model file, shared by
every ``argus`` process of the user.

Layout of the registry folder (``engine_dir()``, private to the user)::

    <key>.lock           taken while a process reads or changes the entry, starts the engine, or
                         (the engine itself) decides to exit
    <key>.json           the running engine: pid, port, model, n_ctx, threads, started
    <key>.clients/<pid>  one file per process using it; it holds the process's start time, so a
                         reused pid is not mistaken for the process that registered
    <key>.log            the engine's output (kept, rotated at 2 MB, so a crash can be read later)
    compute.lock         held by an engine while it computes a completion: engines of different
                         model files take turns, so the cores are never oversubscribed

The key is the model file and context size. A process that finds a live engine in the entry
registers as a client and uses it; otherwise it starts one and records it. The engine counts its
live clients (a client killed without running its exit handlers is noticed by its pid) and exits
``idle_s`` seconds after the last one is gone, taking the lock first so that no process can
register in between. Only standard-library imports: the engine process imports this module before
llama.cpp.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

#: seconds an engine waits after its last client leaves before it exits (``ARGUS_ENGINE_IDLE_S``)
DEFAULT_IDLE_S = 5.0
LOG_ROTATE_BYTES = 2 * 1024 * 1024


def idle_seconds() -> float:
    """Idle time before an engine without clients exits: ``$ARGUS_ENGINE_IDLE_S`` or 5 s."""
    try:
        return max(0.0, float(os.environ.get("ARGUS_ENGINE_IDLE_S", DEFAULT_IDLE_S)))
    except ValueError:
        return DEFAULT_IDLE_S


def engine_dir() -> Path:
    """The registry folder: ``$ARGUS_ENGINE_DIR``, else ``$XDG_RUNTIME_DIR/argus/engines``, else
    ``~/.cache/argus/engines``; created with mode 0700."""
    env = os.environ.get("ARGUS_ENGINE_DIR")
    if env:
        path = Path(env).expanduser()
    elif os.environ.get("XDG_RUNTIME_DIR") and Path(os.environ["XDG_RUNTIME_DIR"]).is_dir():
        path = Path(os.environ["XDG_RUNTIME_DIR"]) / "argus" / "engines"
    else:
        path = Path.home() / ".cache" / "argus" / "engines"
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def engine_threads() -> int:
    """The engine's threads when the configuration sets none: every usable core but one, at least 1.

    llama.cpp's threads spin-wait on each other between the steps of a completion (OpenMP here);
    a thread descheduled by other work on its core stalls all of them. The argus processes beside
    the engine do such work (parsing, encoding sentences). On 2 cores (``bench/engine_settings.py``),
    one completion took 4.9 s with 2 threads and 34 s with 2 threads beside one busy process,
    against 6.5 s and 6.8 s with 1 thread; OpenMP's passive waiting gave 6.8 s and 9.9 s."""
    return max(1, usable_cores() - 1)


def engine_key(model_path: str | Path, n_ctx: int) -> str:
    """``<model stem>-<n_ctx>-<hash of the resolved path>``: one engine per model file and context size."""
    resolved = str(Path(model_path).resolve())
    digest = hashlib.sha256(resolved.encode()).hexdigest()[:12]
    stem = "".join(c if c.isalnum() or c in "-_." else "_" for c in Path(resolved).stem)[:40]
    return f"{stem}-{int(n_ctx)}-{digest}"


# ---------------------------------------------------------------------------------------- processes


def process_start_time(pid: int) -> str | None:
    """The kernel's start time of ``pid`` (clock ticks since boot), or None if no such live process.

    A zombie counts as gone. Where ``/proc`` does not exist, any process ``kill(pid, 0)`` reaches
    counts as live, with an empty start time."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    except OSError:
        if not Path("/proc").is_dir():
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return None
            except PermissionError:
                return ""
            return ""
        return None
    fields = stat[stat.rfind(")") + 2 :].split()  # after "pid (comm) "
    if not fields or fields[0] in ("Z", "X"):
        return None
    return fields[19] if len(fields) > 19 else ""


def is_engine_process(pid: int, port: int) -> bool:
    """``pid`` is a live ``argus.models.engine_server`` listening on ``port`` (not a reused pid)."""
    if process_start_time(pid) is None:
        return False
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except FileNotFoundError:
        return False
    except OSError:
        return True  # no /proc: the pid is live, trust the entry
    return b"argus.models.engine_server" in argv and str(port).encode() in argv


# ---------------------------------------------------------------------------------------- the entry


@dataclass
class EngineRecord:
    pid: int
    port: int
    model: str
    n_ctx: int
    threads: int
    started: float

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


class Registry:
    """The registry entry of one engine key (see the module docstring)."""

    def __init__(self, key: str, directory: Path | None = None):
        self.key = key
        self.dir = directory or engine_dir()
        self.record_path = self.dir / f"{key}.json"
        self.lock_path = self.dir / f"{key}.lock"
        self.clients_dir = self.dir / f"{key}.clients"
        self.log_path = self.dir / f"{key}.log"

    @contextlib.contextmanager
    def locked(self, timeout: float | None = None) -> Iterator[bool]:
        """Hold the entry's lock (an ``flock``, released by the kernel if the holder dies).

        ``timeout=None`` waits; otherwise yields False if the lock was not had within ``timeout``."""
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            deadline = None if timeout is None else time.monotonic() + timeout
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | (fcntl.LOCK_NB if deadline is not None else 0))
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        yield False
                        return
                    time.sleep(0.05)
            try:
                yield True
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    # -- the running engine (under the lock) --
    def read(self) -> EngineRecord | None:
        try:
            data = json.loads(self.record_path.read_text(encoding="utf-8"))
            return EngineRecord(**{k: data[k] for k in EngineRecord.__dataclass_fields__})
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def live(self) -> EngineRecord | None:
        """The recorded engine if its process is alive; a dead engine's entry is removed."""
        record = self.read()
        if record is None:
            return None
        if is_engine_process(record.pid, record.port):
            return record
        with contextlib.suppress(FileNotFoundError):
            self.record_path.unlink()
        return None

    def write(self, record: EngineRecord) -> None:
        tmp = self.record_path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(asdict(record)), encoding="utf-8")
        os.replace(tmp, self.record_path)

    def remove(self, pid: int) -> None:
        """Remove the entry if it still names ``pid``."""
        record = self.read()
        if record is not None and record.pid == pid:
            with contextlib.suppress(FileNotFoundError):
                self.record_path.unlink()

    # -- clients --
    def register(self, pid: int | None = None) -> None:
        pid = pid or os.getpid()
        self.clients_dir.mkdir(exist_ok=True, mode=0o700)
        (self.clients_dir / str(pid)).write_text(process_start_time(pid) or "", encoding="utf-8")

    def unregister(self, pid: int | None = None) -> None:
        with contextlib.suppress(FileNotFoundError):
            (self.clients_dir / str(pid or os.getpid())).unlink()

    def clients(self) -> list[int]:
        """Pids of the live registered clients; the files of dead ones are removed."""
        live = []
        try:
            entries = list(self.clients_dir.iterdir())
        except FileNotFoundError:
            return live
        for entry in entries:
            try:
                pid, started = int(entry.name), entry.read_text(encoding="utf-8")
            except (ValueError, OSError):
                continue
            now = process_start_time(pid)
            if now is not None and (not started or not now or now == started):
                live.append(pid)
            else:
                with contextlib.suppress(FileNotFoundError):
                    entry.unlink()
        return live

    # -- log --
    def open_log(self):
        """The engine's log, for appending (rotated to ``<key>.log.1`` beyond 2 MB)."""
        with contextlib.suppress(OSError):
            if self.log_path.stat().st_size > LOG_ROTATE_BYTES:
                os.replace(self.log_path, self.log_path.with_suffix(".log.1"))
        return open(self.log_path, "a", encoding="utf-8")


@contextlib.contextmanager
def compute_turn(directory: Path) -> Iterator[None]:
    """Hold the machine-wide compute lock (one completion at a time across all engines)."""
    fd = os.open(directory / "compute.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


__all__ = [
    "DEFAULT_IDLE_S",
    "EngineRecord",
    "Registry",
    "compute_turn",
    "engine_dir",
    "engine_key",
    "engine_threads",
    "idle_seconds",
    "is_engine_process",
    "process_start_time",
    "usable_cores",
]
