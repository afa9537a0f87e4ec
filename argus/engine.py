"""Local GGUF models, out of process: a managed ``llama_cpp.server`` per model file.

A crash in native code (llama.cpp has segfaulted on particular releases, grammars and models) must
not take down the batch, the campaign or the test run that called it. So ``local/<model>`` runs in
its own process, an OpenAI-compatible ``llama_cpp.server`` on a free loopback port, and is reached
through litellm exactly like any other local server (``argus.lm``).

Lifecycle of a ``ManagedServer``:

- started on first use (``url()``), health-checked (``GET /v1/models`` answers once the model is
  loaded), its output logged to a temporary file;
- shared by every stage that uses the same file, context size and thread count;
- stopped at interpreter exit (``atexit``, which also runs after Ctrl-C and after an uncaught
  error); if this process dies without running exit handlers (SIGKILL, SIGTERM), the server sees
  its parent gone and exits by itself (``argus.engine_server``);
- if it dies during a call, ``argus.lm.LocalServerLM`` restarts it once and retries the call; a
  second death raises ``EngineCrashError``, which fails the document (a batch records it in
  ``errors.jsonl`` and goes on), never the process.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

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
    """One ``llama_cpp.server`` process for one GGUF file (see the module docstring)."""

    model_path: str
    n_ctx: int = 8192
    n_threads: int | None = None
    alias: str = "local"
    start_timeout_s: float = START_TIMEOUT_S
    #: times the process was started (1 after the first use; +1 per restart)
    starts: int = 0
    #: how the previous process ended, e.g. "killed by SIGSEGV" (empty before any death)
    last_exit: str = ""
    _proc: subprocess.Popen | None = field(default=None, repr=False)
    _port: int | None = field(default=None, repr=False)
    _log: Path | None = field(default=None, repr=False)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
    _in_flight: int = field(default=0, repr=False)

    # ------------------------------------------------------------------ state

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def in_flight(self) -> int:
        """Calls currently waiting on this server."""
        return self._in_flight

    @property
    def log_path(self) -> Path | None:
        """The server's log (a temporary file, removed when the server is stopped)."""
        return self._log

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def log_tail(self, chars: int = 1500) -> str:
        if self._log is None or not self._log.exists():
            return ""
        text = self._log.read_text(encoding="utf-8", errors="replace")
        return text[-chars:]

    # ------------------------------------------------------------------ lifecycle

    def url(self) -> str:
        """Base URL (``http://127.0.0.1:PORT/v1``) of a running, healthy server; starts it if needed."""
        with self._lock:
            if not self.alive():
                if self._proc is not None:
                    self.last_exit = describe_exit(self._proc.poll())
                self._start()
            return f"http://127.0.0.1:{self._port}/v1"

    def stop(self) -> None:
        with self._lock:
            self._terminate()
            if self._log is not None:
                with contextlib.suppress(OSError):
                    self._log.unlink()
                    self._log.parent.rmdir()
                self._log = None

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

    def _start(self) -> None:
        try:
            import llama_cpp.server.app  # noqa: F401  (fail here, with an actionable message)
        except ImportError as exc:
            raise EngineError(
                "local models run in a llama_cpp.server process, which needs llama-cpp-python[server] "
                f"(pip install 'llama-cpp-python[server]'): {exc}"
            ) from exc
        if self._log is None:
            self._log = Path(tempfile.mkdtemp(prefix="argus-engine-")) / "server.log"
        last_error = ""
        for _ in range(3):  # another process may take the port between choosing and binding it
            self._port = _free_port()
            cmd = [
                sys.executable, "-m", "argus.engine_server", "--model", self.model_path, "--alias", self.alias,
                "--port", str(self._port), "--n-ctx", str(self.n_ctx), "--n-threads", str(self.n_threads or 0),
                "--parent-pid", str(os.getpid()), "--log-dir", str(self._log.parent),
            ]
            with open(self._log, "a", encoding="utf-8") as fh:
                fh.write(f"--- start {self.starts + 1}: {' '.join(cmd)}\n")
                fh.flush()
                # Own session: Ctrl-C in the terminal reaches this process, which stops the
                # server in order, instead of killing the server under a running call.
                self._proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                              start_new_session=True)
            self.starts += 1
            ok, last_error = self._wait_healthy()
            if ok:
                return
            self._terminate()
            if "address already in use" not in self.log_tail(4000).lower():
                break
        raise EngineError(
            f"the local engine for {self.model_path} did not start ({last_error}); its log ends:\n{self.log_tail()}"
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
        proc, self._proc = self._proc, None
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
    """Stop every managed server of this process (registered with ``atexit``)."""
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
