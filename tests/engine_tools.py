"""Test helpers around the managed local engine: find its processes, kill it at chosen moments."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Callable

from argus.models.engine import ManagedServer


def engine_processes(registry_dir: str | Path | None = None) -> list[int]:
    """Live (non-zombie) ``argus.models.engine_server`` processes, optionally only those of one registry folder."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            state = next((line for line in (entry / "status").read_text().splitlines() if line.startswith("State:")), "")
        except OSError:
            continue
        if b"argus.models.engine_server" not in argv or "zombie" in state:
            continue
        if registry_dir is not None:
            try:
                if Path(argv[argv.index(b"--registry-dir") + 1].decode()) != Path(registry_dir):
                    continue
            except (ValueError, IndexError):
                continue
        found.append(int(entry.name))
    return found


def known_engine_pids() -> list[int]:
    """Pids of the engines this process's servers last used."""
    from argus.models import engine
    with engine._SERVERS_LOCK:
        return [s.pid for s in engine._SERVERS.values() if s.pid is not None]


def wait_gone(pids: list[int], timeout: float = 15.0) -> list[int]:
    """Wait until none of ``pids`` is a live engine process; return those still alive."""
    deadline = time.monotonic() + timeout
    alive = list(pids)
    while alive and time.monotonic() < deadline:
        live = set(engine_processes())
        alive = [p for p in alive if p in live]
        if alive:
            time.sleep(0.1)
    return alive


class EngineKiller(threading.Thread):
    """Sends ``sig`` to the engine whenever ``armed()`` holds and a call is in flight.

    ``times`` bounds the number of kills (None: kill on sight while armed). The pids killed are
    kept in ``killed``.
    """

    def __init__(self, server: ManagedServer, armed: Callable[[], bool], *, times: int | None = 1,
                 sig: int = signal.SIGKILL):
        super().__init__(daemon=True)
        self.server, self.armed, self.times, self.sig = server, armed, times, sig
        self.killed: list[int] = []
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            if self.times is not None and len(self.killed) >= self.times:
                return
            pid = self.server.pid
            if pid is not None and self.server.in_flight > 0 and pid not in self.killed and self.armed():
                time.sleep(0.05)  # let the request reach the engine (a cache hit is over by then)
                if self.server.in_flight == 0 or self.server.pid != pid:
                    continue
                try:
                    os.kill(pid, self.sig)
                    self.killed.append(pid)
                except ProcessLookupError:
                    pass
            time.sleep(0.02)

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=5)
