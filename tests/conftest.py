"""Shared fixtures: the shared data root, dev complaints, a scripted-LM pipeline."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# the sentence encoder in fp32 (ONNX Runtime): the graphs the tests recorded hold on every CPU; the default
# (auto: bfloat16 where the CPU has it) is run by tests/test_encoders.py and measured by bench/encoders.py
os.environ.setdefault("ARGUS_ENCODER_RUNTIME", "onnx")

from argus.paths import complaints_dir, data_root  # noqa: E402

PROJECT = Path(__file__).resolve().parent.parent
DEMO = PROJECT / "datasets" / "demo" / "complaint.txt"


def _split_dirs(split: str) -> list[Path]:
    root = complaints_dir(split)
    return sorted(d for d in root.iterdir() if (d / "gold.json").exists()) if root.exists() else []


needs_data = pytest.mark.skipif(
    not (data_root() / "us_complaints").exists(),
    reason=f"shared data not found at {data_root()} (set ARGUS_DATA_ROOT)",
)


@pytest.fixture(scope="session")
def dev_dirs() -> list[Path]:
    dirs = _split_dirs("dev")
    if not dirs:
        pytest.skip(f"no dev complaints under {complaints_dir('dev')}")
    return dirs


@pytest.fixture(scope="session")
def all_dirs() -> list[Path]:
    dirs = _split_dirs("train") + _split_dirs("dev")
    if not dirs:
        pytest.skip("no annotated complaints")
    return dirs


def load_gold(d: Path) -> dict:
    return json.loads((d / "gold.json").read_text(encoding="utf-8"))


def gold_sentences(gold: dict) -> list[dict]:
    return [s for sec in gold["sections"] for p in sec["paragraphs"] for s in p]


def make_scripted_pipeline(tmp_path, **overrides):
    """An ArgusPipeline whose every stage LM is the scripted test double (``pipe.engine``)."""
    from argus.config import ArgusConfig
    from argus.pipeline import ArgusPipeline
    from tests.scripted_lm import ScriptedEngine, scripted_lm

    engine = ScriptedEngine()
    cfg = ArgusConfig.load(None, {"cache_dir": str(tmp_path / "cache"), "merge.min_similarity": 0.3, **overrides})
    pipe = ArgusPipeline(cfg)
    lm = scripted_lm(engine)
    for stage in ("fact_fallback", "chunker", "stage1", "stage2", "resolver", "sentence", "oneshot"):
        pipe._lms[stage] = lm
    pipe.engine = engine
    return pipe


@pytest.fixture()
def scripted_pipeline(tmp_path):
    """The chunked design with every stage LM the scripted test double."""
    return make_scripted_pipeline(tmp_path, **{"extraction.design": "chunked"})


@pytest.fixture()
def scripted_sentence_pipeline(tmp_path):
    """The sentence-level design with every stage LM the scripted test double; the choice program
    is called for every sentence (sentence.llm: always, tau 1.0) and Stage 2 runs on each batch."""
    return make_scripted_pipeline(tmp_path, **{"extraction.design": "sentence", "sentence.llm": "always",
                                               "sentence.tau": 1.0, "sentence.stage2": True})


# Real-browser tests: the browser_page fixture (Debian's headless Chromium through Playwright), see
# tests/browser_support.py
from tests.browser_support import browser_page  # noqa: E402,F401
