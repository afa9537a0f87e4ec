"""Loading a compiled frontier member for inference: ``argus extract --frontier compiled/<campaign>``.

A member's ``manifest.json`` holds the settings it was evaluated with (task model, temperature,
retries, FrameNet hints) and ``programs.json`` the DSPy JSON state of ``programs.ArgusPrograms``
with its evolved instructions. ``member_pipeline`` turns both into a ready ``ArgusPipeline``; the
rest of the configuration (fact gate, chunking, merging, API bases and keys from the environment)
comes from the user's config as usual.
"""

from __future__ import annotations

from pathlib import Path

from argus.config import ArgusConfig
from argus.errors import InputError

#: the pipeline stages whose programs a campaign evolves and whose model the member fixes
MEMBER_STAGES = ("stage1", "stage2")


def member_overrides(settings: dict) -> dict:
    """Dotted config overrides that reproduce a member's settings."""
    o: dict = {}
    models = settings.get("models") or {}
    for stage in MEMBER_STAGES + ("fact_fallback", "chunker"):
        model = models.get(stage) or (settings.get("task_model") if stage in MEMBER_STAGES else None)
        if model:
            o[f"lm.stages.{stage}.model"] = model
        if settings.get("temperature") is not None:
            o[f"lm.stages.{stage}.temperature"] = settings["temperature"]
    if settings.get("max_retries") is not None:
        o["extraction.max_retries"] = settings["max_retries"]
    if settings.get("framenet_hints") is not None:
        o["extraction.framenet_hints"] = bool(settings["framenet_hints"])
    return o


def load_member_programs(member_dir: Path, max_retries: int):
    from programs import ArgusPrograms

    path = Path(member_dir) / "programs.json"
    if not path.is_file():
        raise InputError(f"{path}: the member's programs are missing; rerun the campaign or pick another member")
    import json

    programs = ArgusPrograms(max_retries=max_retries)
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
        # predictor by predictor: a member compiled before a program was added keeps that program's seed
        for name, pred in programs.named_predictors():
            if name in state:
                pred.load_state(state[name])
    except Exception as exc:
        raise InputError(f"{path}: not a DSPy JSON state of ArgusPrograms ({type(exc).__name__}: {exc})") from exc
    return programs


def member_pipeline(
    frontier_dir: str | Path,
    *,
    max_cost: float | None = None,
    min_quality: float | None = None,
    strategy: str = "knee",
    config_path: str | Path | None = None,
    overrides: dict | None = None,
    frontier=None,
):
    """(pipeline, manifest) for the member that ``Frontier.select_member`` picks."""
    from argus.pipeline import ArgusPipeline
    from optimizers.frontier import Frontier

    frontier = frontier or Frontier.load(frontier_dir)
    member = frontier.select_member(max_cost=max_cost, min_quality=min_quality, strategy=strategy)
    o = dict(overrides or {})
    o.update(member_overrides(member.settings))
    cfg = ArgusConfig.load(config_path, o)
    programs = load_member_programs(frontier.member_dir(member.member_id), cfg.extraction.max_retries)
    return ArgusPipeline(cfg, programs=programs), member
