"""Every CLI error exits non-zero: config errors, missing files, invalid campaign files."""

from __future__ import annotations

import subprocess
import sys

import pytest
from typer.testing import CliRunner

from argus.cli import app
from tests.conftest import DEMO, PROJECT


def _run_optimize(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(PROJECT / "run_optimize.py"), *args], capture_output=True, text=True,
                          cwd=PROJECT, timeout=120)


def test_run_optimize_exits_non_zero_on_an_invalid_campaign_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: broken\nbogus_key: 1\n")
    res = _run_optimize(str(bad))
    assert res.returncode == 2, res.stdout + res.stderr
    assert "bogus_key" in res.stderr and "Error" not in res.stdout


def test_run_optimize_exits_non_zero_on_a_missing_or_unparsable_campaign_file(tmp_path):
    res = _run_optimize(str(tmp_path / "missing.yaml"))
    assert res.returncode == 2 and "does not exist" in res.stderr
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: [unclosed\n")
    assert _run_optimize(str(broken)).returncode == 2
    assert _run_optimize().returncode == 2  # no campaign given: usage, non-zero
    assert _run_optimize("--help").returncode == 0


@pytest.mark.parametrize(
    "args, code, says",
    [
        (["extract", str(DEMO), "--config", "{tmp}/missing.yaml", "--out", "{tmp}/o"], 2, "does not exist"),
        (["extract", "{tmp}/missing.txt", "--out", "{tmp}/o"], 1, "1 failed"),
        (["optimize", "{tmp}/missing.yaml"], 2, "does not exist"),
        (["eval", "{tmp}/nothing", "--out", "{tmp}/e", "--no-judge"], 2, "not an annotated document folder"),
        (["validate", "{tmp}/nothing"], 1, "nothing: no such file"),
        (["annotate", "export", "{tmp}/nothing", "--out", "{tmp}/s.csv"], 2, "no *.ekg.json"),
        (["annotate", "report", "{tmp}/nothing.csv"], 2, "cannot read the annotation sheet"),
        (["frontier", "show", "{tmp}/nothing"], 2, "not found"),
        (["frontier", "verify", "{tmp}/nothing"], 2, "not found"),
        (["experiment", "clustering"], 2, "no annotated complaints"),
        (["train-facts", "--out", "{tmp}/head.json"], 2, "no annotated complaints"),
    ],
)
def test_argus_commands_exit_non_zero_with_a_message(args, code, says, tmp_path, monkeypatch):
    monkeypatch.setenv("ARGUS_DATA_ROOT", str(tmp_path / "no-data"))
    res = CliRunner().invoke(app, [a.replace("{tmp}", str(tmp_path)) for a in args])
    assert res.exit_code == code, res.output
    assert says in res.output
    assert not isinstance(res.exception, Exception) or isinstance(res.exception, SystemExit)
