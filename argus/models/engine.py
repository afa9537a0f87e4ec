"""Local GGUF models, out of process: one ``llama_cpp.server`` per model file per machine, shared.

A crash in native code (llama.cpp has segfaulted on particular releases, grammars and models) must
not take down the batch, the campaign or the test run that called it. So ``local/<model>`` runs in
its own process, an OpenAI-compatible ``llama_cpp.server`` on a free loopback port, and is reached
through litellm exactly like any other local server (``argus.models.lm``).

Two engines on one machine slow each other about eightfold (llama.cpp's threads spin-wait on each
other when the cores are oversubscribed), and real use runs several ``argus`` processes at once: a
campaign beside an extraction, two terminals, Ray's local actors. So the engine is the machine's,
not the process's (``argus.models.engine_registry``):

- the first process that needs a model file starts its engine and records it in the registry;
  later processes find it there and register as its clients; all of them queue on it, one
  completion at a time in arrival order, and engines of different files take turns on the cores;
- it is started on the first call that misses the cache (``argus.models.lm.LocalServerLM``), never for
  cached work; health-checked (``GET /v1/models`` answers once the model is loaded); its output
  goes to ``<registry>/<key>.log``;
- a process leaves it at interpreter exit (``atexit``, which also runs after Ctrl-C and after an
  uncaught error); a process killed without exit handlers (SIGKILL) is noticed by its pid. The
  engine exits ``ARGUS_ENGINE_IDLE_S`` (default 5) seconds after its last client is gone;
- if it dies during a call, ``argus.models.lm.LocalServerLM`` restarts it once (or adopts the engine
  another client restarted meanwhile) and retries the call; a second death raises
  ``EngineCrashError``, which fails the document (a batch records it in ``errors.jsonl`` and goes
  on), never the process.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from argus.models.engine_registry import EngineRecord, Registry, engine_key, engine_threads, idle_seconds, is_engine_process
from argus.errors import ArgusError

#: Seconds a starting server may take to load its model and answer.
START_TIMEOUT_S = 120.0

_SERVERS_LOCK = threading.Lock()


class EngineError(ArgusError):
    """The local engine could not be started (missing package, bad GGUF, no free port)."""


class EngineCrashError(ArgusError):
    """The local engine died during a call, was restarted, and died again on the retry.

    Creating one counts in ``engine_crashes()``, so a long-running loop (a campaign) can notice a
    crash even where a library between it and the call (GEPA's evaluation) catches the error.
    """

    def __init__(self, *args):
        super().__init__(*args)
        global _CRASHES
        with _SERVERS_LOCK:
            _CRASHES += 1


_CRASHES = 0


def engine_crashes() -> int:
    """How many ``EngineCrashError``s this process has raised."""
    return _CRASHES


#: loopback needs no proxy, whatever the environment says
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def describe_exit(returncode: int | None) -> str:
    """``-11`` → ``'killed by SIGSEGV'``; ``None`` → ``'running'``."""
    if returncode is None:
        return "running"
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exited with status {returncode}"


@dataclass
class ManagedServer:
    """This process's handle on the machine's engine for one GGUF file (see the module docstring)."""

    model_path: str
    n_ctx: int = 8192
    n_threads: int | None = None
    alias: str = "local"
    start_timeout_s: float = START_TIMEOUT_S
    #: engines this process started (1 after a first use that found none running; +1 per restart)
    starts: int = 0
    #: how the previous engine ended, e.g. "killed by SIGSEGV" (empty before any death)
    last_exit: str = ""
    _proc: subprocess.Popen | None = field(default=None, repr=False)  # the engine, if this process started it
    _pid: int | None = field(default=None, repr=False)
    _port: int | None = field(default=None, repr=False)
    _registered: Registry | None = field(default=None, repr=False)  # the entry this process is a client of
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
    _in_flight: int = field(default=0, repr=False)

    @property
    def registry(self) -> Registry:
        return Registry(engine_key(self.model_path, self.n_ctx))

    # ------------------------------------------------------------------ state

    @property
    def pid(self) -> int | None:
        """Pid of the engine this process last used (None before the first use)."""
        return self._pid

    @property
    def in_flight(self) -> int:
        """Calls of this process currently waiting on the engine."""
        return self._in_flight

    @property
    def log_path(self) -> Path:
        """The engine's log in the registry folder (kept after the engine exits; rotated at 2 MB)."""
        return self.registry.log_path

    def alive(self) -> bool:
        if self._pid is None:
            return False
        if self._proc is not None and self._proc.pid == self._pid:
            return self._proc.poll() is None  # also reaps it
        return is_engine_process(self._pid, self._port or 0)

    def log_tail(self, chars: int = 1500) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return text[-chars:]

    # ------------------------------------------------------------------ lifecycle

    def url(self) -> str:
        """Base URL (``http://127.0.0.1:PORT/v1``) of the machine's running engine for this model:
        the one in the registry if it is alive, else one this process starts and records."""
        with self._lock:
            if not self.alive():
                if self._pid is not None:
                    self.last_exit = self._how_it_ended()
                self._acquire()
            return f"http://127.0.0.1:{self._port}/v1"

    def stop(self) -> None:
        """Leave the engine: this process is no longer a client (the engine exits when it has none
        left, after ``ARGUS_ENGINE_IDLE_S``). An engine that never became healthy is stopped here."""
        with self._lock:
            if self._registered is not None:
                self._registered.unregister()
                self._registered = None
            self._pid = self._port = None
            if self._proc is not None and self._proc.poll() is not None:  # reaped; a live one's handle is
                self._proc = None  # kept, so that its fate is known if this process uses it again

    @contextlib.contextmanager
    def calling(self):
        """Count a call as in flight (observability, and tests that kill the engine mid-call)."""
        with self._lock:
            self._in_flight += 1
        try:
            yield
        finally:
            with self._lock:
                self._in_flight -= 1

    def _how_it_ended(self) -> str:
        if self._proc is not None and self._proc.pid == self._pid:
            return describe_exit(self._proc.poll())
        return "gone (it was started by another process)"

    def _acquire(self) -> None:
        """Under the registry lock: adopt the live engine of the entry, or start and record one."""
        registry = self.registry
        with registry.locked(timeout=self.start_timeout_s + 30) as held:
            if not held:
                raise EngineError(f"the engine registry {registry.lock_path} stayed locked for "
                                  f"{self.start_timeout_s + 30:g} s (a process starting the engine hangs?)")
            registry.register()  # before the engine starts: a fresh engine must not find itself unused
            self._registered = registry
            record = registry.live()
            if record is None:
                record = self._start(registry)
                registry.write(record)
            self._pid, self._port = record.pid, record.port

    def _start(self, registry: Registry) -> EngineRecord:
        try:
            import llama_cpp.server.app  # noqa: F401  (fail here, with an actionable message)
        except ImportError as exc:
            raise EngineError(
                "local models run in a llama_cpp.server process, which needs llama-cpp-python[server] "
                f"(pip install 'llama-cpp-python[server]'): {exc}"
            ) from exc
        threads = self.n_threads or engine_threads()
        last_error = ""
        for _ in range(3):  # another process may take the port between choosing and binding it
            self._port = _free_port()
            cmd = [
                sys.executable, "-m", "argus.models.engine_server", "--model", self.model_path, "--alias", self.alias,
                "--port", str(self._port), "--n-ctx", str(self.n_ctx), "--n-threads", str(threads),
                "--registry-dir", str(registry.dir), "--key", registry.key, "--idle-s", f"{idle_seconds():g}",
            ]
            with registry.open_log() as fh:
                fh.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} start by pid {os.getpid()}: {' '.join(cmd)}\n")
                fh.flush()
                # Own session: Ctrl-C in a terminal reaches the clients, not the shared engine;
                # the engine leaves when its last client is gone.
                self._proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                              start_new_session=True)
            self._pid = self._proc.pid
            self.starts += 1
            ok, last_error = self._wait_healthy()
            if ok:
                return EngineRecord(pid=self._proc.pid, port=self._port, model=self.model_path, n_ctx=self.n_ctx,
                                    threads=threads, started=time.time())
            self._terminate()
            if "address already in use" not in self.log_tail(4000).lower():
                break
        raise EngineError(
            f"the local engine for {self.model_path} did not start ({last_error}); its log ({self.log_path}) ends:\n"
            f"{self.log_tail()}"
        )

    def _wait_healthy(self) -> tuple[bool, str]:
        deadline = time.monotonic() + self.start_timeout_s
        url = f"http://127.0.0.1:{self._port}/v1/models"
        while time.monotonic() < deadline:
            code = self._proc.poll()
            if code is not None:
                return False, describe_exit(code)
            try:
                with _DIRECT.open(url, timeout=2) as r:
                    if r.status == 200:
                        return True, ""
            except (urllib.error.URLError, OSError):
                time.sleep(0.1)
        return False, f"no answer within {self.start_timeout_s:g} s"

    def _terminate(self) -> None:
        proc, self._proc, self._pid = self._proc, None, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


_SERVERS: dict[tuple, ManagedServer] = {}


def managed_server(model_path: str | Path, n_ctx: int = 8192, n_threads: int | None = None) -> ManagedServer:
    """The process-wide server for this GGUF file and settings (created, not yet started)."""
    key = (str(Path(model_path).resolve()), int(n_ctx), n_threads)
    with _SERVERS_LOCK:
        server = _SERVERS.get(key)
        if server is None:
            server = ManagedServer(key[0], n_ctx=n_ctx, n_threads=n_threads, alias=Path(model_path).stem)
            _SERVERS[key] = server
        return server


def stop_all() -> None:
    """Leave every engine this process uses (registered with ``atexit``); each exits once it has no
    client left, after ``ARGUS_ENGINE_IDLE_S``."""
    with _SERVERS_LOCK:
        servers = list(_SERVERS.values())
    for s in servers:
        with contextlib.suppress(Exception):
            s.stop()


atexit.register(stop_all)


__all__ = [
    "EngineCrashError",
    "EngineError",
    "ManagedServer",
    "describe_exit",
    "engine_crashes",
    "managed_server",
    "stop_all",
]
