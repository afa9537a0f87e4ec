"""Configuration: file + overrides, per-stage inheritance, prices, secrets."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from argus.config import ArgusConfig
from argus.errors import ConfigError
from argus.models.lm import MeteredLM, build_lm

INSTALL_DOC = Path(__file__).resolve().parent.parent / "docs" / "install.md"


def test_the_documented_example_config_loads(tmp_path):
    block = re.search(r"```yaml\n(.*?)```", INSTALL_DOC.read_text(), re.S).group(1)
    (tmp_path / "argus.yaml").write_text(block)
    cfg = ArgusConfig.load(tmp_path / "argus.yaml")
    assert cfg.lm.for_stage("stage1").model == "anthropic/claude-sonnet-4-5"
    assert cfg.lm.for_stage("stage1").max_tokens == 4000
    assert cfg.lm.for_stage("stage2").model == "openai/gpt-4o-mini"  # inherits the default
    r = cfg.lm.for_stage("resolver")
    assert r.api_base == "http://127.0.0.1:8000/v1" and r.price_per_mtok == (0.05, 0.05)


def test_overrides_and_inheritance():
    cfg = ArgusConfig.load(None, {"lm.default.model": "openai/x", "lm.default.api_base": "http://h/v1",
                                  "lm.stages.stage1.model": "openai/y", "facts.tau": 0.9})
    assert cfg.lm.for_stage("stage2").api_base == "http://h/v1"
    assert cfg.lm.for_stage("stage1").api_base is None  # another model does not inherit the server
    assert cfg.facts.tau == 0.9
    with pytest.raises(ConfigError, match="stage42"):
        ArgusConfig.load(None, {"lm.stages.stage42.model": "m"})
    with pytest.raises(ConfigError, match="tau"):
        ArgusConfig.load(None, {"facts.tau": 3})
    with pytest.raises(ConfigError, match="does not exist"):
        ArgusConfig.load("/nonexistent/argus.yaml")


def test_litellm_prices_and_unknown_models():
    known = MeteredLM("openai/gpt-4o-mini", engine="litellm")
    cost, ok = known._cost({"cost": None}, 1_000_000, 0, False)
    assert ok and cost > 0  # from litellm's bundled price table, offline
    unknown = MeteredLM("openai/some-private-model", engine="litellm")
    assert unknown._cost({"cost": None}, 1000, 1000, False) == (0.0, False)
    priced = MeteredLM("openai/some-private-model", engine="litellm", price_per_mtok=(2.0, 4.0))
    assert priced._cost({}, 1_000_000, 500_000, False) == (4.0, True)
    assert priced._cost({}, 10, 10, True) == (0.0, True)  # cache hits are free


def test_keys_come_from_the_environment_and_never_reach_state(monkeypatch):
    cfg = ArgusConfig.load(None, {"lm.default.model": "openai/m", "lm.default.api_base": "http://10.0.0.5:8000/v1",
                                  "lm.default.api_key_env": "MY_SERVER_KEY"})
    with pytest.raises(ConfigError, match="MY_SERVER_KEY"):
        build_lm(cfg.lm.for_stage("stage1"))
    monkeypatch.setenv("MY_SERVER_KEY", "sk-secret-123")
    lm = build_lm(cfg.lm.for_stage("stage1"))
    state = repr(lm.dump_state())
    assert "sk-secret-123" not in state and "10.0.0.5" not in state
