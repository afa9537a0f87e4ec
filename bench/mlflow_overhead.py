"""What MLflow tracking costs a campaign: the test campaign of ``tests/test_campaign.py`` (2 trials, the
simulated LM, one validation and one test document) run with and without ``tracking.mlflow``.

Runs alternate (without, with, without, …) after one untimed warm-up run, each in a fresh run and
compiled folder (and, with tracking, its own experiment), all in this process. Printed: each run's
wall seconds, the mean of each kind and their difference, and how long the tracked runs waited on the
tracker itself: at the start (``CampaignTracker.connect``: experiment and parent run) and at the end
(``CampaignTracker.finish``: the queued calls, the report and the artifacts). Importing mlflow, which a
tracked campaign does once per process, is timed apart in a fresh interpreter.

    python bench/mlflow_overhead.py [--mlflow URI] [--repeats 3]

Without ``--mlflow`` a server is started on loopback for the measurement (``tests/mlflow_server.py``).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def import_seconds() -> float:
    code = ("import time; t = time.perf_counter(); from mlflow.tracking import MlflowClient; "
            "print(time.perf_counter() - t)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mlflow", help="tracking URI (default: start a server on loopback)")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs of each kind")
    args = ap.parse_args(argv)

    from rich.console import Console

    from optimizers import tracking
    from optimizers.campaign import Campaign, CampaignConfig
    from tests.mlflow_server import MlflowServer
    from tests.simulated_lm import SimulatedEngine, simulated_lm_builder
    from tests.test_campaign import CAMPAIGN

    waits: dict[str, list[float]] = {"connect": [], "finish": []}
    for name in waits:
        original = getattr(tracking.CampaignTracker, name)

        def timed(self, *a, _original=original, _name=name, **k):
            t0 = time.perf_counter()
            try:
                return _original(self, *a, **k)
            finally:
                waits[_name].append(time.perf_counter() - t0)

        setattr(tracking.CampaignTracker, name, timed)

    server = None
    uri = args.mlflow
    if not uri:
        server = MlflowServer(Path(tempfile.mkdtemp(prefix="argus-mlflow-bench-"))).start()
        uri = server.uri
    seconds: dict[str, list[float]] = {"without": [], "with": []}
    try:
        def run(kind: str) -> float:
            tmp = Path(tempfile.mkdtemp(prefix=f"argus-bench-{kind}-"))
            experiment = f"bench-{uuid.uuid4().hex[:8]}"
            cfg = CampaignConfig(**{**CAMPAIGN, **({"tracking": {"mlflow": uri, "experiment": experiment}}
                                                   if kind == "with" else {})})
            t0 = time.perf_counter()
            result = Campaign(cfg, tmp / "run", tmp / "compiled", lm_builder=simulated_lm_builder(SimulatedEngine()),
                              console=Console(file=open("/dev/null", "w"))).run()
            took = time.perf_counter() - t0
            assert result.frontier and not result.stopped, result.stopped
            return took

        run("without")  # warm-up: imports, the encoder, the data
        for i in range(args.repeats):
            for kind in ("without", "with"):
                took = run(kind)
                seconds[kind].append(took)
                print(f"run {i + 1} {kind:>7} tracking: {took:6.2f} s", flush=True)
    finally:
        if server is not None:
            server.stop()
    mean = {k: statistics.mean(v) for k, v in seconds.items()}
    sd = {k: statistics.stdev(v) if len(v) > 1 else 0.0 for k, v in seconds.items()}
    print(f"without tracking: {mean['without']:.2f} ± {sd['without']:.2f} s; with: {mean['with']:.2f} ± "
          f"{sd['with']:.2f} s; difference {mean['with'] - mean['without']:+.2f} s "
          f"({(mean['with'] / mean['without'] - 1) * 100:+.1f} %), {args.repeats} runs each")
    # the first tracked run also imports mlflow (before connect): in its wall seconds, timed apart below
    print(f"waited on the tracker per tracked run: connect {statistics.mean(waits['connect']):.2f} s "
          f"(max {max(waits['connect']):.2f}), finish {statistics.mean(waits['finish']):.2f} s "
          f"(max {max(waits['finish']):.2f})")
    print(f"importing mlflow (once per process, a fresh interpreter): {import_seconds():.2f} s")


if __name__ == "__main__":
    main()
