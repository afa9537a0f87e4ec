"""What MLflow tracking costs a campaign: the test campaign of ``tests/test_campaign.py`` (2 trials, the
simulated LM, one validation and one test document) run with and without ``tracking.mlflow``.

Each run is a fresh process (as ``argus optimize`` is: nothing cached in memory, mlflow imported by
the tracked runs) with a fresh run and compiled folder and, with tracking, its own experiment. Runs
alternate (without, with, without, …) after one untimed warm-up run of each kind. Printed: each run's
wall seconds of ``Campaign.run`` (from the run's start to its result, the import of mlflow included),
the mean of each kind and their difference, and how long the tracked runs waited on the tracker
itself: at the start (``open_tracker``: importing mlflow, the experiment and the parent run) and at the
end (``CampaignTracker.finish``: the queued calls, the report and the artifacts).

    python bench/studies/mlflow_overhead.py [--mlflow URI] [--repeats 3]

Without ``--mlflow`` a server is started on loopback for the measurement (``tests/mlflow_server.py``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def one_run(uri: str | None) -> dict:
    """One campaign in this process: its seconds and, when tracked, the tracker's waits."""
    from rich.console import Console

    from optimizers import campaign, tracking
    from optimizers.campaign import Campaign, CampaignConfig
    from tests.simulated_lm import SimulatedEngine, simulated_lm_builder
    from tests.test_campaign import CAMPAIGN

    waits = {"open": 0.0, "finish": 0.0}
    open_tracker, finish = campaign.open_tracker, tracking.CampaignTracker.finish

    def timed_open(*a, **k):
        t0 = time.perf_counter()
        try:
            return open_tracker(*a, **k)
        finally:
            waits["open"] += time.perf_counter() - t0

    def timed_finish(self, *a, **k):
        t0 = time.perf_counter()
        try:
            return finish(self, *a, **k)
        finally:
            waits["finish"] += time.perf_counter() - t0

    campaign.open_tracker, tracking.CampaignTracker.finish = timed_open, timed_finish
    tmp = Path(tempfile.mkdtemp(prefix="argus-bench-mlflow-"))
    tracked = {"tracking": {"mlflow": uri, "experiment": f"bench-{uuid.uuid4().hex[:8]}"}} if uri else {}
    cfg = CampaignConfig(**{**CAMPAIGN, **tracked})
    engine = SimulatedEngine()
    with open("/dev/null", "w") as devnull:
        t0 = time.perf_counter()
        result = Campaign(cfg, tmp / "run", tmp / "compiled", lm_builder=simulated_lm_builder(engine),
                          console=Console(file=devnull)).run()
        seconds = time.perf_counter() - t0
    assert result.frontier and not result.stopped, result.stopped
    return {"seconds": seconds, **waits, "calls": result.calls}


def spawn(uri: str | None) -> dict:
    args = [sys.executable, __file__, "--one"] + (["--mlflow", uri] if uri else [])
    out = subprocess.run(args, capture_output=True, text=True, cwd=ROOT)
    if out.returncode != 0:
        raise SystemExit(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mlflow", help="tracking URI (default: start a server on loopback)")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs of each kind")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # one run in this process (JSON line)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(one_run(args.mlflow)))
        return

    from tests.mlflow_server import MlflowServer

    server = None
    uri = args.mlflow
    if not uri:
        server = MlflowServer(Path(tempfile.mkdtemp(prefix="argus-mlflow-bench-"))).start()
        uri = server.uri
    runs: dict[str, list[dict]] = {"without": [], "with": []}
    try:
        spawn(None), spawn(uri)  # warm-up: the OS file cache, the server's first requests
        for i in range(args.repeats):
            for kind in ("without", "with"):
                r = spawn(uri if kind == "with" else None)
                runs[kind].append(r)
                extra = f" (waited: start {r['open']:.2f} s, end {r['finish']:.2f} s)" if kind == "with" else ""
                print(f"run {i + 1} {kind:>7} tracking: {r['seconds']:6.2f} s, {r['calls']} LM calls{extra}",
                      flush=True)
    finally:
        if server is not None:
            server.stop()
    mean = {k: statistics.mean(r["seconds"] for r in v) for k, v in runs.items()}
    sd = {k: statistics.stdev(r["seconds"] for r in v) if len(v) > 1 else 0.0 for k, v in runs.items()}
    print(f"without tracking: {mean['without']:.2f} ± {sd['without']:.2f} s; with: {mean['with']:.2f} ± "
          f"{sd['with']:.2f} s; difference {mean['with'] - mean['without']:+.2f} s "
          f"({(mean['with'] / mean['without'] - 1) * 100:+.1f} %), {args.repeats} runs each")
    start, end = (statistics.mean(r[k] for r in runs["with"]) for k in ("open", "finish"))
    print(f"the tracked runs waited on the tracker: at the start {start:.2f} s (mlflow's import included), at the "
          f"end {end:.2f} s (means)")


if __name__ == "__main__":
    main()
