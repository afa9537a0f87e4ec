"""Faults of batch runs (``argus extract``): concurrent runs on one output folder, a full disk,
SIGTERM, a damaged cache.

Every fault is real: real ``argus extract`` processes (started with ``python -c``), real signals,
a real file-size limit (``RLIMIT_FSIZE``) and a real full filesystem (a small tmpfs, where this
machine lets us mount one), cache files really garbled and truncated on disk. What is *not* real,
for speed, is the extraction in the batches of the first three kinds: ``install_fake_pipeline``
puts a stand-in for ``argus.pipeline.ArgusPipeline`` into the child process, which builds an EKG of
the document's text (its size follows the text's), books ``CALLS`` ledger entries per document and
takes as long as the test says (``delay``), and logs every extraction it makes (pid and document
id, one line each) to ``extractions.log``. The damaged-cache test runs the real pipeline
(``--method floor``, no language model).
"""

from __future__ import annotations

import collections
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from argus.models.ledger import LedgerEntry
from argus.graph.schema import DocumentEKG

PROJECT = Path(__file__).resolve().parents[2]
CALLS = 3  # ledger entries the stand-in pipeline books per document
LONG_PROGRAM = "program-" + "x" * 5000  # ledger lines longer than PIPE_BUF (4096 bytes)

CHILD = r"""
import json, os, resource, signal, sys, time
from pathlib import Path
spec = json.loads(sys.argv[1])
from tests.faults.test_batch_faults import install_fake_pipeline
install_fake_pipeline(spec)
import argus.runs.batch, argus.cli, argus.output.export, argus.pipeline  # (imported before the start line, not after)
if spec.get("go"):
    while not Path(spec["go"]).exists():
        time.sleep(0.01)
time.sleep(spec.get("stall", 0.0))  # a command slow to start (a loaded machine)
if spec.get("fsize"):
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # past the limit a write fails with EFBIG instead
    resource.setrlimit(resource.RLIMIT_FSIZE, (spec["fsize"], spec["fsize"]))
sys.argv = ["argus", "extract", *spec["args"]]
argus.cli.main()
"""


# ----------------------------------------------------------------------------- the stand-in pipeline (in the child)


def install_fake_pipeline(spec: dict) -> None:
    """Make ``argus.pipeline.ArgusPipeline`` the stand-in described in the module docstring."""
    import datetime as dt

    import argus.pipeline
    from argus.config import ArgusConfig
    from argus.models.ledger import CostLedger
    from argus.graph.schema import DocumentGraph, LedgerSection

    delays = spec.get("delay", {})
    log = Path(spec["log"])

    class StandInPipeline:
        def __init__(self, config=None):
            self.config = config or ArgusConfig()

        def set_concurrency(self, n: int) -> None:
            pass

        def extract_floor(self, source, ledger: CostLedger | None = None) -> DocumentEKG:
            ledger = ledger if ledger is not None else CostLedger()
            fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            os.write(fd, f"{os.getpid()} {source.doc_id}\n".encode())
            os.close(fd)
            time.sleep(delays.get(source.doc_id, spec.get("delay_default", 0.0)))
            now = dt.datetime.now(dt.timezone.utc).isoformat()
            for k in range(CALLS):
                ledger.add(LedgerEntry(doc_id=source.doc_id, stage="stand-in", program=LONG_PROGRAM, model="stand-in",
                                       prompt_tokens=10 + k, completion_tokens=5, cost_usd=0.001, cost_known=True,
                                       cache_hit=False, latency_s=0.01, timestamp=now))
            return DocumentEKG(doc_id=source.doc_id, source=source.source, method="floor", created=now, models={},
                               facts_section_found=False, text=source.text, sentences=[], graph=DocumentGraph(),
                               ledger=LedgerSection.model_validate(ledger.to_json()))

        extract = extract_chunked = extract_by_sentence = extract_oneshot = extract_floor

    argus.pipeline.ArgusPipeline = StandInPipeline


# ----------------------------------------------------------------------------- helpers (in the test)


def _env() -> dict:
    env = dict(os.environ, PYTHONPATH=str(PROJECT), COLUMNS="4000", NO_COLOR="1", TOKENIZERS_PARALLELISM="false")
    env.pop("FORCE_COLOR", None)
    return env


def _start(tmp: Path, args: list[str], **spec) -> subprocess.Popen:
    spec = {"log": str(tmp / "extractions.log"), "args": [str(a) for a in args], **spec}
    return subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(spec)], cwd=tmp, env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(proc: subprocess.Popen, timeout: float = 120) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def _docs(folder: Path, sizes: dict[str, int]) -> Path:
    """Complaint files ``<doc_id>.txt`` of about ``sizes[doc_id]`` characters each."""
    folder.mkdir(parents=True, exist_ok=True)
    line = "The plaintiff was dismissed by the defendant after she complained about discrimination.\n"
    for doc_id, size in sizes.items():
        (folder / f"{doc_id}.txt").write_text(f"FACTS\n\n1. {doc_id}.\n" + line * max(1, size // len(line)))
    return folder


def _written(stdout: str) -> list[str]:
    """Document ids of the EKGs a finished batch says it wrote (its last lines: one path each)."""
    return [Path(line.strip()).name.removesuffix(".ekg.json") for line in stdout.splitlines()
            if line.strip().endswith(".ekg.json")]


def _extractions(tmp: Path) -> collections.Counter:
    log = tmp / "extractions.log"
    return collections.Counter(line.split()[1] for line in log.read_text().splitlines()) if log.exists() else collections.Counter()


def _summary(stderr: str) -> dict:
    m = re.search(r"(\d+) EKG\(s\) written to .*? \((\d+) failed(?:; (\d+) skipped(?:, (\d+) of them claimed by another run)?)?\)",
                  stderr)
    assert m, stderr[-3000:]
    return {"written": int(m[1]), "failed": int(m[2]), "skipped": int(m[3] or 0), "claimed": int(m[4] or 0)}


def _assert_nothing_torn(out: Path) -> dict:
    """Every EKG in ``out`` is whole (parses as a DocumentEKG), every ledger line parses, no
    temporary file or claim is left; returns the ledger's entries per document."""
    for p in out.glob("*.ekg.json"):
        DocumentEKG.model_validate_json(p.read_text())
    leftovers = [p.name for p in out.iterdir() if p.name.endswith(".tmp") or p.name.endswith(".claim")]
    assert not leftovers, leftovers
    per_doc = collections.Counter()
    ledger = out / "ledger.jsonl"
    if ledger.exists():
        raw = ledger.read_bytes()
        assert not raw or raw.endswith(b"\n"), "the ledger ends in a torn line"
        for line in raw.decode().splitlines():
            per_doc[LedgerEntry.model_validate_json(line).doc_id] += 1  # raises on a torn or interleaved line
    return per_doc


# ----------------------------------------------------------------------------- 1. two runs on one folder


@pytest.mark.parametrize(("skip_existing", "stall"), [(False, 0.0), (True, 0.0), (False, 1.5)],
                         ids=["redo", "skip-existing", "redo-one-slow-to-start"])
def test_two_runs_on_one_folder_write_each_ekg_once(tmp_path, skip_existing, stall):
    """Fault: two ``argus extract`` processes started at the same instant (a start file both wait
    on) on the same 14 documents and the same output folder, 2 documents at a time each, ledger
    lines longer than PIPE_BUF; with --skip-existing, 4 of the documents are done beforehand; in
    the last case the second command takes 1.5 s longer to start (a loaded machine), so the first
    has written EKGs before the second's batch begins, after the second command started.
    Must hold: every document is extracted once and its EKG written once in all (the extraction
    log, the EKGs each run lists), each run accounts for every document (written, or skipped:
    claimed by the other, done by the other meanwhile, or existing), both exit 0, every EKG and
    every ledger line parses, the ledger holds each document's entries exactly once, no claim or
    temporary file is left."""
    ids = [f"d{i:02d}" for i in range(14)]
    src = _docs(tmp_path / "in", {d: 300 for d in ids})
    out = tmp_path / "out"
    args = [src, "--out", out, "--method", "floor", "--no-preflight", "--concurrency", "2"]
    before = {}
    if skip_existing:  # 4 documents done by an earlier run
        first = _docs(tmp_path / "first", {d: 300 for d in ids[:4]})
        rc, stdout, _ = _finish(_start(tmp_path, [first, *args[1:]]))
        assert rc == 0 and sorted(_written(stdout)) == ids[:4]
        before = {d: (out / f"{d}.ekg.json").stat().st_mtime_ns for d in ids[:4]}
        (tmp_path / "extractions.log").unlink()
        args.append("--skip-existing")
    go = tmp_path / "go"
    procs = [_start(tmp_path, args, go=str(go), delay_default=0.5, stall=stall * k) for k in range(2)]
    time.sleep(0.5)
    go.touch()
    results = [_finish(p) for p in procs]
    todo = ids[4:] if skip_existing else ids
    for rc, _, err in results:
        assert rc == 0 and "Traceback" not in err, err[-3000:]
        s = _summary(err)
        assert s["failed"] == 0 and s["written"] + s["skipped"] == len(ids), s
    print("runs:", [_summary(err) for _, _, err in results])
    written = collections.Counter(d for _, stdout, _ in results for d in _written(stdout))
    assert written == collections.Counter(todo), written  # each EKG written by one run, once
    assert _extractions(tmp_path) == collections.Counter(todo)  # and extracted once
    assert any("claimed by pid" in err or "written by another run meanwhile" in err for _, _, err in results)
    per_doc = _assert_nothing_torn(out)
    assert per_doc == collections.Counter({d: CALLS for d in ids}), per_doc
    assert sorted(p.name.removesuffix(".ekg.json") for p in out.glob("*.ekg.json")) == ids
    for d, mtime in before.items():
        assert (out / f"{d}.ekg.json").stat().st_mtime_ns == mtime  # the existing ones were left alone


# ----------------------------------------------------------------------------- 2. a full disk


def _check_full_disk_run(rc: int, stdout: str, err: str, out: Path, failing: set[str], says: str) -> None:
    assert rc == 1, (rc, err[-3000:])
    assert "Traceback" not in err, err[-3000:]
    assert says in err and "--skip-existing" in err, err[-3000:]
    s = _summary(err)
    failed_lines = set(re.findall(r"^failed \S*/(\w+)\.txt: ", err, re.M))
    assert failed_lines == failing and s["failed"] == len(failing), (failed_lines, s)
    _assert_nothing_torn(out)
    assert not any((out / f"{d}.ekg.json").exists() for d in failing)


def test_a_file_size_limit_fails_its_documents_cleanly_and_a_rerun_completes(tmp_path):
    """Fault: RLIMIT_FSIZE of 40,000 bytes in the child (SIGXFSZ ignored, so writes past it fail
    with EFBIG): the EKGs of 2 large documents (about 60 kB of text) cannot be written, and the
    ledger (about 15 kB of lines per document) reaches the limit after two documents, so every
    later document fails at its ledger append, a write cut short at the limit. Must hold: exit 1,
    no traceback, each failing document named with "File too large" and the advice to rerun with
    --skip-existing; every EKG written is whole and the others absent, no temporary file, every
    ledger line parses (the cut-short append was cut back); the same command with
    --skip-existing and no limit then does exactly the failed documents and exits 0."""
    sizes = {"a_small": 300, "b_large": 60_000, "c_small": 300, "d_small": 300, "e_large": 60_000}
    src = _docs(tmp_path / "in", sizes)
    out = tmp_path / "out"
    args = [src, "--out", out, "--method", "floor", "--no-preflight", "--concurrency", "1", "--no-graphml"]
    rc, stdout, err = _finish(_start(tmp_path, args, fsize=40_000))
    failing = {"b_large", "c_small", "d_small", "e_large"}
    _check_full_disk_run(rc, stdout, err, out, failing, "File too large")
    assert (out / "ledger.jsonl").stat().st_size <= 40_000
    print("file-size limit:", re.findall(r"^failed \S*: .*$", err, re.M)[-1][-400:])
    assert sorted(_written(stdout)) == ["a_small"]
    rc, stdout, err = _finish(_start(tmp_path, [*args, "--skip-existing"]))
    assert rc == 0, err[-3000:]
    assert sorted(_written(stdout)) == sorted(failing)
    per_doc = _assert_nothing_torn(out)
    assert sorted(p.name.removesuffix(".ekg.json") for p in out.glob("*.ekg.json")) == sorted(sizes)
    assert set(per_doc) == set(sizes)  # every document's spend is in the ledger


@pytest.fixture()
def small_tmpfs(tmp_path):
    """A 192 KiB tmpfs (needs root and CAP_SYS_ADMIN; skipped otherwise), unmounted afterwards."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=192k", "tmpfs", str(mnt)], capture_output=True, text=True)
    if res.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({(res.stderr or res.stdout).strip()}); "
                    "the RLIMIT_FSIZE test covers a full disk")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_a_full_filesystem_fails_its_documents_cleanly_and_a_rerun_completes(tmp_path, small_tmpfs):
    """Fault: a real full filesystem: the output folder on a 192 KiB tmpfs, 8 documents of about
    40 kB of text each (EKG and GraphML about 40 kB each), so the disk fills after a few documents
    (ENOSPC) and every later one fails. Must hold: exit 1, no traceback, each failing document
    named with "No space left on device" and the advice to rerun with --skip-existing; every EKG
    written is whole and the others absent, no temporary file, every ledger line parses; after the
    filesystem is grown to 4 MiB, the same command with --skip-existing does exactly the failed
    documents and exits 0."""
    ids = [f"d{i}" for i in range(8)]
    src = _docs(tmp_path / "in", {d: 40_000 for d in ids})
    out = small_tmpfs / "out"
    args = [src, "--out", out, "--method", "floor", "--no-preflight", "--concurrency", "1"]
    rc, stdout, err = _finish(_start(tmp_path, args))
    done = set(_written(stdout))
    failing = set(ids) - done
    assert done and failing, (done, err[-2000:])
    _check_full_disk_run(rc, stdout, err, out, failing, "No space left on device")
    print(f"full tmpfs: {len(done)} written, {len(failing)} failed:",
          re.search(r"^failed \S*: .*$", err, re.M)[0][-400:])
    subprocess.run(["mount", "-o", "remount,size=4m", str(small_tmpfs)], check=True)
    rc, stdout, err = _finish(_start(tmp_path, [*args, "--skip-existing"]))
    assert rc == 0, err[-3000:]
    assert set(_written(stdout)) == failing
    _assert_nothing_torn(out)
    assert sorted(p.name.removesuffix(".ekg.json") for p in out.glob("*.ekg.json")) == ids


# ----------------------------------------------------------------------------- 3. SIGTERM


def _wait_for(condition, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def _terminate(proc: subprocess.Popen) -> tuple[int, str, float]:
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    rc, _, err = _finish(proc, timeout=60)
    return rc, err, time.monotonic() - t0


def test_sigterm_stops_a_batch_promptly_and_the_same_command_resumes(tmp_path):
    """Fault: SIGTERM to an ``argus extract`` process at 3 points of one batch of 12 documents
    (2 at a time): (1) while its first documents are being extracted, one of which would take
    120 s; (2) after 3 EKGs and (3) after 8 EKGs of later runs of the same command with
    --skip-existing. Must hold each time: the process exits within 8 s with status 143 and the line
    "SIGTERM: the batch stopped after …; … run the same command with --skip-existing", no traceback;
    no claim or temporary file is left, every EKG is whole, every ledger line parses. Finally the
    same command completes the batch (exit 0): all 12 EKGs, each written once after its run began."""
    ids = [f"d{i:02d}" for i in range(12)]
    src = _docs(tmp_path / "in", {d: 300 for d in ids})
    out = tmp_path / "out"
    args = [src, "--out", out, "--method", "floor", "--no-preflight", "--concurrency", "2"]
    count = lambda: len(list(out.glob("*.ekg.json")))  # noqa: E731

    timings = []
    # (1) during the first documents, one of them stuck for 120 s: no EKG written yet
    proc = _start(tmp_path, args, delay={"d00": 120.0}, delay_default=0.3)
    _wait_for(lambda: (out / "d00.claim").exists(), "the first claim")
    rc, err, seconds = _terminate(proc)
    timings.append(seconds)
    assert rc == 143 and "Traceback" not in err, err[-3000:]
    assert re.search(r"SIGTERM: the batch stopped after \d+ of 12 document\(s\).*--skip-existing", err), err[-2000:]
    _assert_nothing_torn(out)
    # (2), (3): later runs of the same command, stopped after 3 and 8 EKGs in all
    for after in (3, 8):
        proc = _start(tmp_path, [*args, "--skip-existing"], delay_default=0.3)
        _wait_for(lambda: count() >= after, f"{after} EKGs")
        rc, err, seconds = _terminate(proc)
        timings.append(seconds)
        assert rc == 143 and "Traceback" not in err and "SIGTERM: the batch stopped" in err, err[-3000:]
        _assert_nothing_torn(out)
    assert max(timings) < 8.0, timings
    # the same command completes the batch
    rc, stdout, err = _finish(_start(tmp_path, [*args, "--skip-existing"], delay_default=0.05))
    assert rc == 0, err[-3000:]
    per_doc = _assert_nothing_torn(out)
    assert sorted(p.name.removesuffix(".ekg.json") for p in out.glob("*.ekg.json")) == ids
    assert set(per_doc) == set(ids)
    print(f"SIGTERM to exit: {', '.join(f'{t:.2f} s' for t in timings)}")


# ----------------------------------------------------------------------------- 4. a damaged cache


def test_a_garbled_or_truncated_cache_is_set_aside_with_a_warning(tmp_path):
    """Fault: the batch's cache (``--cache-dir``: DSPy's 16 SQLite shards, made by ``configure_cache``
    in a first process) damaged on disk: one shard truncated to half its size, one shard's first 200 bytes
    overwritten with random bytes, a third shard replaced by 7 bytes of garbage.
    Must hold: the same real batch (``--method floor``) exits 0 and writes the EKG, with one warning
    line per damaged file naming it and where it was moved (``cache.db.damaged-…``), no traceback;
    the cache is usable again (a fresh, whole ``cache.db`` in each place)."""
    src = _docs(tmp_path / "in", {"doc": 400})
    cache = tmp_path / "cache"
    made = subprocess.run([sys.executable, "-c", "import sys, dspy; from argus.pipeline import configure_cache; "
                           "configure_cache(sys.argv[1]); dspy.cache.disk_cache  # a new cache opens on first use",
                           str(cache)], env=_env(), capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    truncated, garbled, junk = (cache / "dspy" / f"{n:03d}" / "cache.db" for n in (0, 1, 2))
    assert all(p.stat().st_size > 0 for p in (truncated, garbled, junk))
    os.truncate(truncated, truncated.stat().st_size // 2)
    with open(garbled, "r+b") as fh:
        fh.write(os.urandom(200))
    junk.write_bytes(b"garbage")
    res = subprocess.run([sys.executable, "-m", "argus.cli", "extract", str(src), "--out", str(tmp_path / "out"),
                          "--method", "floor", "--no-preflight", "--cache-dir", str(cache)],
                         cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=300)
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr[-3000:]
    flat = " ".join(res.stderr.split())
    for damaged in (truncated, garbled, junk):
        assert f"cache file {damaged} is damaged" in flat, res.stderr[-3000:]
        assert len(list(damaged.parent.glob("cache.db.damaged-*"))) == 1
        with sqlite3.connect(damaged) as db:  # a fresh one, whole
            assert db.execute("PRAGMA quick_check").fetchone() == ("ok",)
    assert "truncated (" in flat and "not a SQLite database" in flat
    assert DocumentEKG.model_validate_json((tmp_path / "out" / "doc.ekg.json").read_text()).doc_id == "doc"


def test_a_stopping_batch_leaves_no_claim_that_a_worker_was_creating(tmp_path, monkeypatch):
    """Fault: SIGTERM's cleanup (``Claims.release_all(close=True)``) runs while a worker thread is
    inside ``Claims.take``, its claim file already created but not yet locked (the thread is held
    there). The process exits right after the cleanup, so a file created then would be left behind.
    Must hold: the cleanup waits for that take and removes its file; once it has returned no claim
    file exists, and a later take of the closed claims creates none."""
    import fcntl
    import threading

    from argus.runs.batch import Claims

    claims = Claims(tmp_path)
    inside, go_on = threading.Event(), threading.Event()
    real_flock = fcntl.flock

    def held_flock(fd, op):
        inside.set()
        assert go_on.wait(10)
        return real_flock(fd, op)

    monkeypatch.setattr(fcntl, "flock", held_flock)
    taker = threading.Thread(target=claims.take, args=("d0",), daemon=True)
    taker.start()
    assert inside.wait(10) and (tmp_path / "d0.claim").exists()
    closer = threading.Thread(target=claims.release_all, kwargs={"close": True}, daemon=True)
    closer.start()
    closer.join(0.3)
    assert closer.is_alive()  # the cleanup waits for the take in progress
    go_on.set()
    closer.join(10)
    taker.join(10)
    assert not closer.is_alive() and not taker.is_alive()
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setattr(fcntl, "flock", real_flock)
    assert claims.take("d1") == "this run, which is stopping"
    assert list(tmp_path.iterdir()) == []


def test_the_claims_of_a_killed_run_are_taken_over(tmp_path):
    """Fault: SIGKILL (no handler runs) to an ``argus extract`` process while it extracts its first
    2 documents, one of which would take 120 s: their claim files stay behind. Must hold: the same
    command with --skip-existing takes those claims over (their lock died with the process; nothing
    says "claimed by"), extracts every document, exits 0, and leaves no claim or temporary file,
    every EKG and ledger line whole."""
    ids = [f"d{i}" for i in range(4)]
    src = _docs(tmp_path / "in", {d: 300 for d in ids})
    out = tmp_path / "out"
    args = [src, "--out", out, "--method", "floor", "--no-preflight", "--concurrency", "2"]
    proc = _start(tmp_path, args, delay={"d0": 120.0}, delay_default=0.5)
    _wait_for(lambda: (out / "d0.claim").exists(), "the first claim")
    proc.kill()
    proc.communicate(timeout=60)
    assert (out / "d0.claim").exists()  # left behind, unlocked
    rc, stdout, err = _finish(_start(tmp_path, [*args, "--skip-existing"]))
    assert rc == 0 and "claimed by" not in err, err[-3000:]
    assert "d0" in _written(stdout)
    _assert_nothing_torn(out)
    assert sorted(p.name.removesuffix(".ekg.json") for p in out.glob("*.ekg.json")) == ids
