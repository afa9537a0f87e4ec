"""One engine per model file per machine: the registry (no engine needed) and real processes sharing
a real engine (SmolLM2-135M GGUF in ``argus.models.engine_server``), each test with its own registry folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import dspy
import pytest

from argus.models.engine_registry import EngineRecord, Registry, compute_turn, engine_key, process_start_time
from tests.conftest import PROJECT
from tests.engine_tools import engine_processes, wait_gone

CLIENT = textwrap.dedent("""
    import json, sys
    from argus.config import LMSpec
    from argus.models.lm import build_lm
    lm = build_lm(LMSpec(model="local/smollm2", max_tokens=8, cache=False))
    for line in sys.stdin:          # "call": one completion, report the engine; "exit": leave
        if line.strip() != "call":
            break
        text = lm("Say hi")[0]
        print(json.dumps({"pid": lm.server.pid, "starts": lm.server.starts, "text": text}), flush=True)
""")


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


# ------------------------------------------------------------------------------------ the registry


def test_engine_key_is_one_per_model_file_and_context(tmp_path):
    a, b = tmp_path / "m.gguf", tmp_path / "sub" / ".." / "m.gguf"
    assert engine_key(a, 8192) == engine_key(b, 8192)  # the same file, however it is written
    assert engine_key(a, 8192) != engine_key(a, 2048) and engine_key(a, 8192) != engine_key(tmp_path / "n.gguf", 8192)
    assert engine_key(a, 8192).startswith("m-8192-")


def test_clients_are_counted_by_live_process_and_dead_ones_pruned(tmp_path):
    reg = Registry("k", tmp_path)
    reg.register()  # this process
    reg.register(_dead_pid())  # a client killed without leaving
    (reg.clients_dir / str(os.getppid())).write_text("123")  # a live pid with another start time: a reused pid
    assert reg.clients() == [os.getpid()]
    assert sorted(p.name for p in reg.clients_dir.iterdir()) == [str(os.getpid())]
    reg.unregister()
    assert reg.clients() == []


def test_an_entry_whose_engine_is_gone_is_removed(tmp_path):
    reg = Registry("k", tmp_path)
    reg.write(EngineRecord(pid=_dead_pid(), port=1, model="m.gguf", n_ctx=8192, threads=2, started=0.0))
    assert reg.read() is not None and reg.live() is None and not reg.record_path.exists()
    # a live process that is not an engine (a reused pid) is not taken for one either
    reg.write(EngineRecord(pid=os.getpid(), port=1, model="m.gguf", n_ctx=8192, threads=2, started=0.0))
    assert reg.live() is None


def test_the_entry_lock_excludes_other_holders(tmp_path):
    reg = Registry("k", tmp_path)
    with reg.locked() as held:
        assert held
        with reg.locked(timeout=0.2) as other:  # another open file: flock excludes it like another process
            assert not other
    with reg.locked(timeout=0.2) as again:
        assert again


def test_process_start_time_tells_a_zombie_from_a_live_process():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 10
    while process_start_time(proc.pid) is not None and time.monotonic() < deadline:  # exited, not yet reaped
        time.sleep(0.05)
    assert process_start_time(proc.pid) is None
    proc.wait()
    assert process_start_time(os.getpid())


# ------------------------------------------------------------------------------------ real engines


@pytest.fixture
def engines(tmp_path, monkeypatch):
    from argus.models.engine import stop_all

    folder = tmp_path / "engines"
    monkeypatch.setenv("ARGUS_ENGINE_DIR", str(folder))
    monkeypatch.setenv("ARGUS_ENGINE_IDLE_S", "1")
    yield folder
    stop_all()
    assert wait_gone(engine_processes(folder), timeout=20) == [], "an engine process was left behind"


def _client(folder: Path) -> subprocess.Popen:
    env = {**os.environ, "ARGUS_ENGINE_DIR": str(folder), "ARGUS_ENGINE_IDLE_S": "1"}
    return subprocess.Popen([sys.executable, "-c", CLIENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, cwd=PROJECT, env=env)


def _ask(proc: subprocess.Popen) -> dict:
    proc.stdin.write("call\n")
    proc.stdin.flush()
    line = proc.stdout.readline()
    assert line, "the client died"
    return json.loads(line)


@pytest.mark.integration
def test_three_processes_share_one_engine_which_leaves_after_the_last(engines):
    clients = [_client(engines) for _ in range(3)]
    try:
        for c in clients:  # all asking at once: one of them starts the engine, the others wait for it
            c.stdin.write("call\n")
            c.stdin.flush()
        answers = [json.loads(c.stdout.readline()) for c in clients]
        pids = {a["pid"] for a in answers}
        assert len(pids) == 1 and engine_processes(engines) == list(pids)
        assert sum(a["starts"] for a in answers) == 1  # one process started it
        assert len({a["text"] for a in answers}) == 1  # the same request, the same answer
        (key,) = [p.stem for p in engines.glob("*.json")]
        assert sorted(int(p.name) for p in (engines / f"{key}.clients").iterdir()) == sorted(c.pid for c in clients)
        clients[0].kill()  # no exit handlers: its pid is noticed gone
        clients[1].stdin.write("exit\n")
        clients[1].stdin.flush()
        clients[1].wait(timeout=30)
        time.sleep(2.5)  # beyond the idle time: the third client still holds the engine
        assert engine_processes(engines) == list(pids)
        assert _ask(clients[2])["pid"] in pids
        clients[2].stdin.write("exit\n")
        clients[2].stdin.flush()
        clients[2].wait(timeout=30)
        assert wait_gone(list(pids), timeout=15) == []
        assert not (engines / f"{key}.json").exists()
    finally:
        for c in clients:
            c.kill()


@pytest.mark.integration
def test_an_engine_killed_under_two_clients_is_restarted_once_for_both(engines):
    import signal

    a, b = _client(engines), _client(engines)
    try:
        first = _ask(a)
        assert _ask(b)["pid"] == first["pid"]
        os.kill(first["pid"], signal.SIGKILL)
        wait_gone([first["pid"]])
        again_a, again_b = _ask(a), _ask(b)
        assert again_a["pid"] == again_b["pid"] != first["pid"]
        assert engine_processes(engines) == [again_a["pid"]]
        assert again_a["starts"] + again_b["starts"] == 2  # the first start and one restart, by either client
    finally:
        for c in (a, b):
            c.kill()


@pytest.mark.integration
def test_a_cached_call_starts_no_engine(engines, tmp_path):
    from argus.config import LMSpec
    from argus.models.engine import stop_all
    from argus.models.lm import build_lm

    dspy.configure_cache(enable_disk_cache=True, enable_memory_cache=False, disk_cache_dir=str(tmp_path / "cache"))
    lm = build_lm(LMSpec(model="local/smollm2", max_tokens=8, cache=True))
    first = lm("Say hi")
    used = lm.server.pid
    stop_all()
    assert wait_gone([used], timeout=15) == []
    again = lm("Say hi")
    assert again == first
    assert lm.server.pid is None and engine_processes(engines) == []  # answered without an engine
    assert lm("Say hello") and lm.server.pid is not None  # a miss starts one


@pytest.mark.integration
def test_the_engine_computes_only_in_its_turn(engines):
    """While the machine-wide compute lock is held elsewhere (another engine computing), a completion waits."""
    from argus.config import LMSpec
    from argus.models.lm import build_lm

    lm = build_lm(LMSpec(model="local/smollm2", max_tokens=8, cache=False))
    lm("Say hi")  # started and warm
    done = threading.Event()
    with compute_turn(engines):
        worker = threading.Thread(target=lambda: (lm("Say hello"), done.set()), daemon=True)
        worker.start()
        assert not done.wait(3.0)
    assert done.wait(60.0)
    worker.join(timeout=5)
