"""Benchmark: the local engine's llama.cpp settings on a quiet machine and beside other CPU work.

llama.cpp's CPU backend here runs on OpenMP (libgomp). Measured per setting: the seconds of one
completion (the demo complaint's first 3,000 characters and "summarize", 120 tokens at most, no
cache, the same request each time), the median of ``--calls`` after a warm-up call, with a fresh
engine per setting (its own registry folder). Settings: threads 2 or 1 (``n_threads``, batch
threads the same) × OpenMP waiting: libgomp's default (spin, then sleep), ``PASSIVE`` (sleep at
once), ``ACTIVE`` (spin). Conditions: ``quiet`` (nothing else running) and ``busy`` (one
process spinning on one core, as another argus process encoding sentences would).

    python bench/engine_settings.py
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
PROMPT_CHARS = 3000

CHILD = """
import json, os, sys, time
from argus.config import LMSpec
from argus.models.lm import build_lm
threads, calls = int(sys.argv[1]), int(sys.argv[2])
lm = build_lm(LMSpec(model="local/smollm2", max_tokens=120, cache=False, n_threads=threads))
prompt = open(sys.argv[3]).read()[:%d] + "\\n\\nSummarize the facts above in five sentences."
lm(prompt)
times = []
for _ in range(calls):
    t = time.perf_counter()
    lm(prompt)
    times.append(time.perf_counter() - t)
print(json.dumps(times))
""" % PROMPT_CHARS


def run(threads: int, wait: str, calls: int) -> float:
    env = {**os.environ, "PYTHONPATH": str(PROJECT), "ARGUS_ENGINE_DIR": tempfile.mkdtemp(prefix="argus-eng-"),
           "ARGUS_ENGINE_IDLE_S": "0", "OMP_WAIT_POLICY": wait}
    out = subprocess.run([sys.executable, "-c", CHILD, str(threads), str(calls),
                          str(PROJECT / "datasets" / "demo" / "complaint.txt")],
                         env=env, capture_output=True, text=True, check=True, cwd=PROJECT)
    return statistics.median(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=3)
    args = ap.parse_args()
    settings = [(2, ""), (2, "PASSIVE"), (2, "ACTIVE"), (1, "")]
    rows = []
    for condition in ("quiet", "busy"):
        hog = None
        if condition == "busy":
            hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
            time.sleep(0.5)
        try:
            for threads, wait in settings:
                rows.append((condition, threads, wait or "default", run(threads, wait, args.calls)))
        finally:
            if hog is not None:
                hog.kill()
                hog.wait()
    print(f"{os.cpu_count()} cores; seconds per completion (median of {args.calls})")
    print("| machine | threads | OpenMP wait | s / completion |\n|---|---|---|---|")
    for condition, threads, wait, seconds in rows:
        print(f"| {condition} | {threads} | {wait} | {seconds:.2f} |")


if __name__ == "__main__":
    main()
