"""Preflight: a missing key or an unreachable server stops `extract`, `eval` and `optimize` before the first
document or trial (exit 2, one line, nothing written); a refused key on the call path is a configuration
error, never retried as a provider fault."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from argus.config import ArgusConfig, LMSpec
from argus.errors import ConfigError, CredentialsError, PreflightError
from argus.models.preflight import (
    PROVIDER_KEYS,
    _litellm_missing_credentials,
    check_models,
    eval_uses,
    missing_credentials,
    pipeline_uses,
    preflight,
    shown_url,
)
from tests.conftest import DEMO, PROJECT
from tests.latency_server import LatencyServer

HOSTED = "openai/gpt-4o-mini"


def _closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ----------------------------------------------------------------------------- the checks


def test_a_missing_key_is_named_with_its_model_and_stages(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    uses = [("stage1", LMSpec(model=HOSTED)), ("stage2", LMSpec(model=HOSTED)),
            ("judge", LMSpec(model="local/smollm2"))]
    (problem,) = check_models(uses)
    assert problem == f"model {HOSTED} (stage1, stage2) needs OPENAI_API_KEY, which is not set"
    monkeypatch.setenv("OPENAI_API_KEY", "placeholder-for-the-check")
    assert check_models(uses) == []


@pytest.mark.parametrize("provider", sorted(PROVIDER_KEYS))
def test_the_provider_key_table_agrees_with_litellm(monkeypatch, provider):
    """The table that spares the check litellm's import says what the locked litellm says: with none of the
    provider's variables set, litellm misses only them (it names its main ones; any one is enough); with
    one set, none. That every name litellm accepts is in the table: tests/test_crosschecks.py."""
    model = f"{provider}/some-model"
    names = PROVIDER_KEYS[provider]
    for variable in names:
        monkeypatch.delenv(variable, raising=False)
    assert set(_litellm_missing_credentials(model)) <= set(names) and _litellm_missing_credentials(model)
    assert missing_credentials(model) == [names[0]]
    for variable in names:
        monkeypatch.setenv(variable, "placeholder-for-the-check")
        assert _litellm_missing_credentials(model) == [] and missing_credentials(model) == []
        monkeypatch.delenv(variable)


def test_a_table_provider_is_checked_without_importing_litellm():
    """In a fresh process: a missing OpenAI key is found with litellm never imported (its import takes
    seconds); a provider outside the table still gets litellm's answer."""
    code = ("import sys; from argus.models.preflight import check_models; from argus.config import LMSpec; "
            "print(check_models([('stage1', LMSpec(model='openai/gpt-4o-mini'))])); "
            "print('litellm' in sys.modules)")
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=PROJECT, capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out == ["['model openai/gpt-4o-mini (stage1) needs OPENAI_API_KEY, which is not set']", "False"]


def test_api_key_env_and_local_gguf_are_checked(monkeypatch, tmp_path):
    monkeypatch.delenv("ARGUS_TEST_KEY", raising=False)
    problems = check_models([
        ("stage1", LMSpec(model="anthropic/claude-3-5-haiku-20241022", api_key_env="ARGUS_TEST_KEY")),
        ("chunker", LMSpec(model=f"local/{tmp_path / 'missing.gguf'}"))])
    assert problems[0].endswith("reads its API key from ARGUS_TEST_KEY, which is not set")
    assert "no GGUF file at" in problems[1] and "missing.gguf" in problems[1]
    monkeypatch.setenv("ARGUS_TEST_KEY", "x")
    assert check_models([("stage1", LMSpec(model="anthropic/x", api_key_env="ARGUS_TEST_KEY"))]) == []
    assert check_models([("stage1", LMSpec(model="local/smollm2"))]) == []  # the embedded GGUF is installed


def test_a_server_must_answer_and_its_password_is_never_shown(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with LatencyServer(latency_s=0.0) as server:
        # a local OpenAI-compatible server that answers needs no key
        assert check_models([("stage1", LMSpec(model="openai/served", api_base=server.url))]) == []
        assert server.stats().total_requests == 0  # a connection opened, no request sent
    port = _closed_port()
    url = f"http://bob:hunter2@127.0.0.1:{port}/v1?token=abc"
    t0 = time.perf_counter()
    (problem,) = check_models([("stage1", LMSpec(model="openai/served", api_base=url))])
    assert time.perf_counter() - t0 < 1.0
    assert problem == (f"model openai/served (stage1): the server at http://127.0.0.1:{port}/v1 is not reachable "
                       "(connection refused)")
    assert "hunter2" not in problem and "bob" not in problem and "abc" not in problem
    assert shown_url("https://user:pw@example.org:8443/v1") == "https://example.org:8443/v1"


def test_which_stages_a_run_calls():
    hosted = ArgusConfig.load(None, {"lm.default.model": HOSTED})
    assert pipeline_uses(hosted, ["floor"]) == []
    assert [s for s, _ in pipeline_uses(hosted, ["staged"])] == ["fact_fallback", "chunker", "stage1", "stage2",
                                                                   "resolver"]
    lean = ArgusConfig.load(None, {"lm.default.model": HOSTED, "facts.mode": "classifier", "chunking.use_llm": False,
                                   "merge.resolver": False})
    assert [s for s, _ in pipeline_uses(lean, ["staged", "oneshot"])] == ["stage1", "stage2", "oneshot"]
    local = ArgusConfig()  # local/ engines run the sentence design; Stage 2 is off there
    assert [s for s, _ in pipeline_uses(local, ["staged"])] == ["fact_fallback", "sentence"]
    assert [s for s, _ in eval_uses(hosted, ["floor"], use_judges=True)] == ["judge"]
    assert eval_uses(hosted, ["staged"], run_missing=False, use_judges=False) == []


def test_a_campaign_names_every_model_it_may_call():
    from optimizers.config import CampaignConfig

    cfg = CampaignConfig(name="c", space={"task_model": [HOSTED], "stage2_model": ["anthropic/claude-x"]},
                         models={"reflection": "openai/gpt-4o", "judge": "openai/o-judge"},
                         metric={"weights": {"structural": 0.5, "judge": 0.5}})
    uses = [(role, spec.model) for role, spec in cfg.model_uses()]
    assert ("stage1", HOSTED) in uses and ("stage2", "anthropic/claude-x") in uses and ("stage2", HOSTED) not in uses
    assert ("reflection", "openai/gpt-4o") in uses and ("judge", "openai/o-judge") in uses
    unjudged = cfg.model_copy(update={"metric": cfg.metric.model_copy(update={"weights": {"structural": 1.0}})})
    assert all(role != "judge" for role, _ in unjudged.model_uses())


def test_preflight_raises_one_line():
    with pytest.raises(PreflightError) as err:
        preflight([("stage1", LMSpec(model="openai/a", api_base=f"http://127.0.0.1:{_closed_port()}/v1")),
                   ("stage2", LMSpec(model="openai/b", api_base=f"http://127.0.0.1:{_closed_port()}/v1"))])
    message = str(err.value)
    assert "\n" not in message and "openai/a" in message and "openai/b" in message and "--no-preflight" in message
    assert isinstance(err.value, ConfigError)


# ----------------------------------------------------------------------------- through the real CLI

# the command's own time: the CLI and litellm are imported first (the CLI's start-up, paid by every argus
# command, and litellm's, paid by any run of a hosted model), then the command runs to its exit
DRIVER = """
import sys, time
import argus.cli
import litellm
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
print(f"COMMAND_SECONDS {time.perf_counter() - t0:.3f}", file=sys.stderr)
sys.exit(code or 0)
"""


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_ADMIN_KEY")}
    env["PYTHONPATH"] = str(PROJECT)
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    return env


def _commands(tmp, model_args: list[str]) -> dict[str, tuple[list[str], list]]:
    """Each command (argv, the folders it would write) with every model set by ``model_args``."""
    gold = tmp / "gold" / "demo"
    gold.mkdir(parents=True)
    shutil.copy(DEMO, gold / "complaint.txt")
    (gold / "gold.json").write_text("{}")
    campaign = tmp / "camp.yaml"
    model = model_args[1]
    defaults = {"api_base": model_args[3]} if len(model_args) > 2 else {}
    campaign.write_text(json.dumps({"name": "camp", "space": {"task_model": [model]},
                                    "models": {"reflection": model, "defaults": defaults}}))
    return {
        "extract": (["extract", str(DEMO), "--out", str(tmp / "out"), *model_args], [tmp / "out"]),
        "eval": (["eval", str(gold.parent), "--out", str(tmp / "eval"), *model_args], [tmp / "eval"]),
        "optimize": (["optimize", str(campaign), "--run-root", str(tmp / "runs"), "--compiled", str(tmp / "compiled")],
                     [tmp / "runs", tmp / "compiled"]),
    }


def _check_failure(res: subprocess.CompletedProcess, written: list, says: list[str]) -> float:
    assert res.returncode == 2, res.stdout + res.stderr
    lines = [ln for ln in res.stderr.splitlines() if not ln.startswith("COMMAND_SECONDS")]
    assert len(lines) == 1 and lines[0].startswith("error: preflight: "), res.stderr
    for s in says:
        assert s in lines[0]
    assert res.stdout == ""
    assert not any(p.exists() for p in written)  # nothing written: not even the output folder
    match = re.search(r"COMMAND_SECONDS (\S+)", res.stderr)
    return float(match.group(1)) if match else float("nan")


@pytest.mark.parametrize("command", ["extract", "eval", "optimize"])
def test_a_missing_key_stops_the_command_before_anything_runs(tmp_path, command):
    argv, written = _commands(tmp_path, ["--model", HOSTED])[command]
    # the installed entry point, as a user runs it
    res = subprocess.run([sys.executable, "-m", "argus.cli", *argv], check=False, capture_output=True, text=True,
                         cwd=PROJECT, env=_env(), timeout=300)
    _check_failure(res, written, [f"model {HOSTED}", "OPENAI_API_KEY"])
    # the command itself, from its start to its exit
    res = subprocess.run([sys.executable, "-c", DRIVER, *argv], check=False, capture_output=True, text=True,
                         cwd=PROJECT, env=_env(), timeout=300)
    _check_failure(res, written, [f"model {HOSTED}", "OPENAI_API_KEY"])
    # how long it takes is measured by bench/measure_preflight.py, not asserted on a shared machine


@pytest.mark.parametrize("command", ["extract", "eval", "optimize"])
def test_an_unreachable_server_stops_the_command_before_anything_runs(tmp_path, command):
    url = f"http://bob:hunter2@127.0.0.1:{_closed_port()}/v1"
    argv, written = _commands(tmp_path, ["--model", "openai/served", "--api-base", url])[command]
    res = subprocess.run([sys.executable, "-c", DRIVER, *argv], check=False, capture_output=True, text=True,
                         cwd=PROJECT, env=_env(), timeout=300)
    _check_failure(res, written, ["model openai/served", url.replace("bob:hunter2@", ""), "not reachable"])
    assert "hunter2" not in res.stderr


def test_no_preflight_skips_the_check(tmp_path):
    """With --no-preflight the run starts; the missing key then fails the document at its first call, as a
    configuration error and without retries (not litellm's HTTP 500 retried as a provider fault)."""
    out = tmp_path / "out"
    res = subprocess.run([sys.executable, "-m", "argus.cli", "extract", str(DEMO), "--model", HOSTED, "--out", str(out),
                          "--cache-dir", str(tmp_path / "cache"), "--no-preflight"],
                         check=False, capture_output=True, text=True, cwd=PROJECT, env=_env(), timeout=600)
    assert res.returncode == 1, res.stderr
    (error,) = [json.loads(line) for line in (out / "errors.jsonl").read_text().splitlines()]
    assert error["error"] == "CredentialsError" and "not retried" in error["message"]
    assert "provider faults" not in res.stderr


# ----------------------------------------------------------------------------- the call path


class _Refusing(BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint that refuses every key (HTTP 401), counting the requests."""

    requests = 0

    def do_POST(self):
        type(self).requests += 1
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.dumps({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error",
                                     "code": "invalid_api_key"}}).encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_a_refused_key_is_a_configuration_error_not_retried():
    from argus.models.lm import build_lm

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        lm = build_lm(LMSpec(model="openai/served", api_base=f"http://127.0.0.1:{httpd.server_address[1]}/v1",
                             api_key_env="PATH", num_retries=3, cache=False))  # some key is sent: it is refused
        with pytest.raises(CredentialsError, match="openai/served call was refused for its credentials"):
            lm(messages=[{"role": "user", "content": "hi"}])
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert _Refusing.requests == 1  # three retries allowed, none made


def test_a_missing_openai_key_is_not_a_provider_fault(monkeypatch):
    """litellm answers a call made without OPENAI_API_KEY with an HTTP 500 ("Missing credentials"), which used
    to be retried as a provider fault; it is a configuration error at once."""
    from argus.models.lm import build_lm

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_ADMIN_KEY", raising=False)
    lm = build_lm(LMSpec(model=HOSTED, num_retries=3, cache=False))
    with pytest.raises(CredentialsError):  # warm: litellm's first import is not what is measured
        lm(messages=[{"role": "user", "content": "hi"}])
    t0 = time.perf_counter()
    with pytest.raises(CredentialsError, match="OPENAI_API_KEY"):
        lm(messages=[{"role": "user", "content": "hi"}])
    assert time.perf_counter() - t0 < 1.0  # no backoff: retries would wait seconds


def test_credentials_faults_are_told_from_provider_faults():
    import litellm

    from argus.models.concurrency import credentials_fault, retryable

    auth = litellm.AuthenticationError(message="bad key", llm_provider="anthropic", model="claude")
    assert credentials_fault(auth)
    server = litellm.InternalServerError(message="upstream overloaded", llm_provider="openai", model="gpt")
    assert not credentials_fault(server) and retryable(server)
    try:
        try:
            raise ValueError("Missing Gemini API key. Set the GEMINI_API_KEY environment variable.")
        except ValueError as inner:
            raise litellm.APIConnectionError(message=str(inner), llm_provider="gemini", model="g") from inner
    except litellm.APIConnectionError as wrapped:
        assert credentials_fault(wrapped)
