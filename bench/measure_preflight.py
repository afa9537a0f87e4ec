"""Benchmark: how long `argus extract | eval | optimize` take to refuse a run whose key is missing.

Each run is a fresh Python process with OPENAI_API_KEY removed from its environment, every model
``openai/gpt-4o-mini``, and prints three figures per command (median of ``--repeat`` runs):

- ``end to end``: ``python -m argus.cli <command> …`` as a user runs it, process start to exit;
- ``command``: the command from its invocation to its exit, in a process that has imported ``argus.cli``
  (the CLI's start-up, which every argus command pays, ``--help`` included);
- ``checks``: the same with litellm imported too (the preflight's own work: configuration, the checks,
  the message);
- ``server down``: the command, in a process that has imported ``argus.cli``, when every model is
  ``openai/served`` on an ``api_base`` nothing listens on (no key to check: litellm is not imported).

The start-ups are measured alone as well (``import argus.cli``; ``import litellm``).

    python bench/measure_preflight.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
MODEL = "openai/gpt-4o-mini"

COMMAND = """
import sys, time
import argus.cli
{more}
from typer.main import get_command
t0 = time.perf_counter()
try:
    code = get_command(argus.cli.app).main(args=sys.argv[1:], prog_name="argus", standalone_mode=False)
except SystemExit as exc:
    code = exc.code
except Exception as exc:
    if type(exc).__name__ != "Exit":
        raise
    code = exc.exit_code
print(f"COMMAND_SECONDS {{time.perf_counter() - t0:.3f}}", file=sys.stderr)
sys.exit(code or 0)
"""

IMPORT = ("import time; t0 = time.perf_counter(); import {module}; "
          "print(f'IMPORT_SECONDS {{time.perf_counter() - t0:.3f}}')")


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_ADMIN_KEY")}
    env["PYTHONPATH"] = str(PROJECT)
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    return env


def _closed_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


def _argv(command: str, tmp: Path, model: str = MODEL, api_base: str | None = None) -> list[str]:
    models = ["--model", model] + (["--api-base", api_base] if api_base else [])
    if command == "extract":
        return ["extract", str(PROJECT / "datasets/demo/complaint.txt"), "--out", str(tmp / "out"), *models]
    if command == "eval":
        gold = tmp / "gold" / "demo"
        gold.mkdir(parents=True, exist_ok=True)
        (gold / "complaint.txt").write_text((PROJECT / "datasets/demo/complaint.txt").read_text())
        (gold / "gold.json").write_text("{}")
        return ["eval", str(gold.parent), "--out", str(tmp / "eval"), *models]
    campaign = tmp / "camp.yaml"
    campaign.write_text(json.dumps({"name": "camp", "space": {"task_model": [model]}, "models": {
        "reflection": model, "defaults": {"api_base": api_base} if api_base else {}}}))
    return ["optimize", str(campaign), "--run-root", str(tmp / "runs"), "--compiled", str(tmp / "compiled")]


def _run(args: list[str], pattern: str | None = None) -> float:
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, *args], check=False, capture_output=True, text=True, cwd=PROJECT, env=_env())
    wall = time.perf_counter() - t0
    if pattern is None:
        if res.returncode != 2 or "preflight" not in res.stderr:
            raise SystemExit(f"expected a preflight refusal: {res.returncode} {res.stderr[-400:]}")
        return wall
    match = re.search(pattern + r" (\S+)", res.stdout + res.stderr)
    if match is None:
        raise SystemExit(f"no figure in: {res.stderr[-400:]}")
    return float(match.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; median of {args.repeat} runs, seconds")
    for module in ("argus.cli", "litellm"):
        secs = [_run(["-c", IMPORT.format(module=module)], "IMPORT_SECONDS") for _ in range(args.repeat)]
        print(f"import {module}: {statistics.median(secs):.2f}")
    for command in ("extract", "eval", "optimize"):
        figures = {"end to end": [], "command": [], "checks": [], "server down": []}
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory() as tmp:
                argv = _argv(command, Path(tmp))
                figures["end to end"].append(_run(["-m", "argus.cli", *argv]))
                figures["command"].append(_run(["-c", COMMAND.format(more=""), *argv], "COMMAND_SECONDS"))
                figures["checks"].append(_run(["-c", COMMAND.format(more="import litellm"), *argv], "COMMAND_SECONDS"))
                down = _argv(command, Path(tmp), "openai/served", _closed_url())
                figures["server down"].append(_run(["-c", COMMAND.format(more=""), *down], "COMMAND_SECONDS"))
                if any((Path(tmp) / name).exists() for name in ("out", "eval", "runs", "compiled")):
                    raise SystemExit(f"{command} wrote its output folder")
        print(f"{command}: " + ", ".join(f"{k} {statistics.median(v):.2f}" for k, v in figures.items()))


if __name__ == "__main__":
    main()
