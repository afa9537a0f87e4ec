"""A real MLflow tracking server on loopback for the tracking tests, and a TCP relay that can "go down".

``MlflowServer`` runs ``mlflow server`` (the full ``mlflow`` package, in the ``dev`` extra) as
``.ci/run`` does: a SQLite backend store and ``--serve-artifacts`` with its artifact root in a
folder of its own, on 127.0.0.1 and a free port, one worker process; it is ready once ``/health``
answers. ``Relay`` forwards a loopback port to that server until ``close()``, after which the port
refuses connections the way a stopped server's does.

    with MlflowServer(tmp_path) as server:
        ... server.uri ...

    python -m tests.mlflow_server FOLDER        # prints the URI once it answers; Ctrl-C stops
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def mlflow_command() -> str:
    """The ``mlflow`` command beside this Python (the virtual environment's), else on PATH."""
    beside = Path(sys.executable).with_name("mlflow")
    found = str(beside) if beside.exists() else shutil.which("mlflow")
    if not found:
        raise RuntimeError("the mlflow command is missing: pip install mlflow (the dev extra has it)")
    return found


class MlflowServer:
    """``mlflow server`` on 127.0.0.1 with its store and artifacts under ``folder``."""

    def __init__(self, folder: Path, *, port: int | None = None, start_timeout_s: float = 180.0):
        self.folder = Path(folder)
        self.port = port or free_port()
        self.uri = f"http://127.0.0.1:{self.port}"
        self.start_timeout_s = start_timeout_s
        self.proc: subprocess.Popen | None = None

    def start(self) -> "MlflowServer":
        self.folder.mkdir(parents=True, exist_ok=True)
        log = open(self.folder / "server.log", "ab")
        # no fetch over the network: its litellm import's price map, MLflow's own telemetry
        env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "MLFLOW_DISABLE_TELEMETRY": "true"}
        self.proc = subprocess.Popen(
            [mlflow_command(), "server", "--backend-store-uri", f"sqlite:///{self.folder / 'mlflow.db'}",
             "--artifacts-destination", str(self.folder / "artifacts"), "--serve-artifacts",
             "--host", "127.0.0.1", "--port", str(self.port), "--workers", "1"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env)
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"mlflow server exited with {self.proc.returncode}: {self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.uri}/health", timeout=2) as res:
                    if res.status == 200:
                        return self
            except OSError:
                time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"mlflow server did not answer within {self.start_timeout_s:.0f} s: {self.log_tail()}")

    def log_tail(self, n: int = 2000) -> str:
        path = self.folder / "server.log"
        return path.read_text(errors="replace")[-n:] if path.exists() else ""

    def stop(self) -> None:
        """Stop the server and the worker processes it started (its own process group; what lingers after
        5 s is killed)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()

    def __enter__(self) -> "MlflowServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class Relay:
    """Forwards 127.0.0.1:``port`` to ``target_port`` until :meth:`close`; then connections are refused."""

    def __init__(self, target_port: int):
        self.target_port = target_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self._sockets: list[socket.socket] = []
        self._closed = threading.Event()
        threading.Thread(target=self._accept, daemon=True, name="relay-accept").start()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self._closed.is_set():
                client.close()
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=10)
            except OSError:
                client.close()
                continue
            self._sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True, name="relay-pump").start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        """Stop listening and cut every open connection."""
        self._closed.set()
        try:
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept() and stops listening (Linux)
        except OSError:
            pass
        self.listener.close()
        for s in self._sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()


if __name__ == "__main__":
    server = MlflowServer(Path(sys.argv[1] if len(sys.argv) > 1 else "mlflow-test")).start()
    print(server.uri, flush=True)
    try:
        server.proc.wait()
    except KeyboardInterrupt:
        server.stop()
