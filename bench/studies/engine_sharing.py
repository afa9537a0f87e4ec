"""Benchmark: several ``argus`` processes on one machine, one local engine.

Runs the real CLI (``argus extract --design chunked``: every chunk goes to the embedded engine;
the sentence design calls no model with the embedded engine) in separate processes, each with a
fresh DSPy cache unless said otherwise and the first ``--max-sentences`` narrative sentences, and samples ``/proc`` every 0.1 s for
``argus.models.engine_server`` processes. Phases:

1. **back to back**: complaint A, then complaint B;
2. **concurrent**: A and B started together; the wall time until both are done, ÷ phase 1;
3. **a third process**: A and B started together, C started 3 s later; the engine processes seen
   (distinct pids, and the most alive at once);
4. **cached re-run**: the demo complaint into a cache, then again with the same cache (after the
   first run's engine has exited): its wall time and the engine processes seen during it.

``--checkout DIR`` runs another checkout's code (``PYTHONPATH=DIR``), e.g. the commit before the
shared engine, for the before/after table:

    git worktree add /tmp/before <commit> && python bench/studies/engine_sharing.py --checkout /tmp/before
    python bench/studies/engine_sharing.py

Never run it beside another engine: the figures are the point.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]


def engine_pids() -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if b"argus.models.engine_server" in argv and state not in ("Z", "X"):
            found.add(int(entry.name))
    return found


class Sampler(threading.Thread):
    """Engine processes seen while it runs: distinct pids and the most alive at once."""

    def __init__(self):
        super().__init__(daemon=True)
        self.seen: set[int] = set()
        self.most = 0
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            now = engine_pids()
            self.seen |= now
            self.most = max(self.most, len(now))
            time.sleep(0.1)

    def stop(self) -> None:
        self._halt.set()
        self.join()


class Runner:
    def __init__(self, checkout: Path, work: Path, design: str, max_sentences: int):
        self.checkout, self.work, self.design = checkout, work, design
        self.config = work / "argus.yaml"
        self.config.write_text(f"limits: {{max_narrative_sentences: {max_sentences}}}\n", encoding="utf-8")
        self.env = {**os.environ, "PYTHONPATH": str(checkout), "HF_HUB_OFFLINE": "1",
                    "ARGUS_ENGINE_DIR": str(work / "engines")}
        self.n = 0

    def start(self, doc: Path, cache: Path | None = None) -> subprocess.Popen:
        self.n += 1
        out = self.work / f"out{self.n}"
        cache = cache or self.work / f"cache{self.n}"
        cmd = [sys.executable, "-c", "from argus.cli import main; main()", "extract", str(doc), "--out", str(out),
               "--cache-dir", str(cache), "--no-graphml", "--design", self.design, "--config", str(self.config)]
        return subprocess.Popen(cmd, cwd=self.checkout, env=self.env, stdout=subprocess.DEVNULL,
                                stderr=open(self.work / f"run{self.n}.log", "w"))

    limit_s: float | None = None

    @classmethod
    def wait(cls, *procs: subprocess.Popen) -> bool:
        """Wait for all; False (and all killed) if they ran past ``--limit``."""
        deadline = None if cls.limit_s is None else time.monotonic() + cls.limit_s
        for p in procs:
            try:
                code = p.wait(None if deadline is None else max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                for q in procs:
                    q.kill()
                    q.wait()
                return False
            if code != 0:
                raise SystemExit(f"an extraction failed (exit {code}); see its log under the work folder")
        return True


def quiet(timeout: float = 60.0) -> None:
    """Wait until no engine process runs (an idle engine exits after ARGUS_ENGINE_IDLE_S)."""
    deadline = time.monotonic() + timeout
    while engine_pids() and time.monotonic() < deadline:
        time.sleep(0.2)
    if engine_pids():
        raise SystemExit(f"engine processes still running: {sorted(engine_pids())}; the benchmark needs a quiet machine")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkout", type=Path, default=PROJECT, help="the code to run (default: this checkout)")
    ap.add_argument("--docs", nargs=3, default=["nysd-1-24-cv-03572", "kyed-5-23-cv-00318", "rid-1-23-cv-00412"],
                    help="three dev complaints: A, B and the third process's")
    ap.add_argument("--design", default="chunked", choices=["chunked", "sentence"])
    ap.add_argument("--max-sentences", type=int, default=10,
                    help="narrative sentences extracted per complaint (limits.max_narrative_sentences)")
    ap.add_argument("--phases", default="1234", help="which phases to run (default: all four)")
    ap.add_argument("--limit", type=float, default=None, help="seconds a phase may run before it is stopped")
    args = ap.parse_args()
    sys.path.insert(0, str(PROJECT))
    from argus.paths import complaints_dir

    a, b, c = (complaints_dir("dev") / d / "complaint.txt" for d in args.docs)
    demo = PROJECT / "datasets" / "demo" / "complaint.txt"
    quiet(5)
    work = Path(tempfile.mkdtemp(prefix="argus-bench-engine-"))
    run = Runner(args.checkout.resolve(), work, args.design, args.max_sentences)
    print(f"code: {args.checkout.resolve()}  ({os.cpu_count()} cores)")
    print("| figure | value |\n|---|---|", flush=True)

    class Rows(list):
        def append(self, row: tuple[str, str]) -> None:
            super().append(row)
            print(f"| {row[0]} | {row[1]} |", flush=True)

    rows = Rows()
    Runner.limit_s = args.limit

    def timed(*procs) -> str:
        t0 = time.perf_counter()
        done = Runner.wait(*procs)
        return f"{time.perf_counter() - t0:.1f}" if done else f"> {args.limit:g} (stopped)"

    try:
        if "1" in args.phases or "2" in args.phases:
            t0 = time.perf_counter()
            done = Runner.wait(run.start(a)) and Runner.wait(run.start(b))
            back_to_back = time.perf_counter() - t0 if done else None
            rows.append(("back to back, A then B (s)", f"{back_to_back:.1f}" if done else f"> {args.limit:g} (stopped)"))
            quiet()
        if "2" in args.phases:
            sampler = Sampler()
            sampler.start()
            t0 = time.perf_counter()
            done = Runner.wait(run.start(a), run.start(b))
            concurrent = time.perf_counter() - t0
            sampler.stop()
            rows.append(("concurrent, A and B (s)", f"{concurrent:.1f}" if done else f"> {args.limit:g} (stopped)"))
            if done and back_to_back:
                rows.append(("concurrent ÷ back to back", f"{concurrent / back_to_back:.2f}"))
            rows.append(("engine processes seen (concurrent)", f"{len(sampler.seen)} (at most {sampler.most} at once)"))
            quiet()
        if "3" in args.phases:
            sampler = Sampler()
            sampler.start()
            first = [run.start(a), run.start(b)]
            time.sleep(3.0)
            third = run.start(c)
            done = Runner.wait(*first, third)
            sampler.stop()
            rows.append(("engine processes seen with a third process",
                         f"{len(sampler.seen)} (at most {sampler.most} at once)" + ("" if done else " (stopped)")))
            quiet()
        if "4" in args.phases:
            cache = work / "demo-cache"
            Runner.wait(run.start(demo, cache))
            quiet()
            sampler = Sampler()
            sampler.start()
            rows.append(("cached re-run of the demo (s)", timed(run.start(demo, cache))))
            sampler.stop()
            rows.append(("engine processes seen (cached re-run)", str(len(sampler.seen))))
    finally:
        quiet()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
