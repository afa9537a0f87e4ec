"""From a member's settings and instructions to a runnable ``ArgusPipeline``: one code path for the
campaign's deployment runs and for ``argus extract --frontier`` / ``argus frontier verify``.

A member's ``manifest.json`` holds the settings it was evaluated with (extraction design, models
per stage, temperature, retries, FrameNet hints, the campaign's ``pipeline`` overrides) and ``programs.json``
the DSPy JSON state of ``programs.ArgusPrograms`` with its evolved instructions. A campaign prices
a candidate by running :func:`pipeline_for` on whole documents with the candidate's instructions;
deployment runs :func:`pipeline_for` with the member's ``programs.json``. The rest of the
configuration (cache folder, API bases and keys from the environment) comes from the user's config
as usual.
"""

from __future__ import annotations

import json
from pathlib import Path

from argus.config import ArgusConfig
from argus.errors import InputError
from optimizers.config import MEMBER_STAGES, ROUTING_KEYS  # MEMBER_STAGES: importable from here as before


def default_settings(task_model: str) -> dict:
    """The settings of a campaign's default candidate for a task model: what ``argus extract`` runs with it
    (every stage on that model, the configuration's defaults otherwise: no ``pipeline`` overrides)."""
    return {"task_model": task_model, "default": True}


def member_models(settings: dict) -> dict[str, str]:
    """Stage → model string of a member (or candidate) with these settings."""
    task = settings["task_model"]
    return {stage: (settings.get("stage2_model") or task) if stage == "stage2" else task for stage in MEMBER_STAGES}


def member_overrides(settings: dict) -> dict:
    """Dotted config overrides that reproduce a member's settings (its ``pipeline`` overrides first)."""
    o: dict = dict(settings.get("pipeline") or {})
    models = settings.get("models") or {}
    fixed = member_models(settings) if settings.get("task_model") else {}
    for stage in MEMBER_STAGES:
        model = models.get(stage) or fixed.get(stage)
        if model:
            o[f"lm.stages.{stage}.model"] = model
        if settings.get("temperature") is not None:
            o[f"lm.stages.{stage}.temperature"] = settings["temperature"]
    for key in ROUTING_KEYS:  # the routing a trial searched wins over the campaign's pipeline overrides
        if settings.get(key) is not None:
            o[key] = settings[key]
    if settings.get("max_retries") is not None:
        o["extraction.max_retries"] = settings["max_retries"]
    if settings.get("framenet_hints") is not None:
        o["extraction.framenet_hints"] = bool(settings["framenet_hints"])
    if settings.get("default"):
        # the campaign's default candidate: what `argus extract` runs with these models, design and routing included
        if settings.get("extraction"):
            o["extraction.design"] = settings["extraction"]
    elif settings.get("task_model") or settings.get("models"):
        # members compiled before designs could differ were chunked
        o["extraction.design"] = settings.get("extraction") or "chunked"
    return o


def programs_with(instructions: dict[str, str] | None, max_retries: int):
    """Fresh ``ArgusPrograms`` with ``instructions`` (predictor name → text) applied."""
    from optimizers.examples import apply_instructions
    from programs import ArgusPrograms

    programs = ArgusPrograms(max_retries=max_retries)
    if instructions:
        apply_instructions(programs, instructions)
    return programs


def load_member_programs(member_dir: Path, max_retries: int):
    from programs import ArgusPrograms

    path = Path(member_dir) / "programs.json"
    if not path.is_file():
        raise InputError(f"{path}: the member's programs are missing; rerun the campaign or pick another member")
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


def member_config(settings: dict, *, config_path: str | Path | None = None,
                  overrides: dict | None = None) -> ArgusConfig:
    """The configuration a member (or candidate) with these settings runs under: ``overrides`` (dotted) first,
    the member's settings winning over them, on the user's config file."""
    o = dict(overrides or {})
    o.update(member_overrides(settings))
    return ArgusConfig.load(config_path, o)


def pipeline_for(settings: dict, *, instructions: dict[str, str] | None = None, member_dir: str | Path | None = None,
                 config_path: str | Path | None = None, overrides: dict | None = None, lm_builder=None,
                 classifier=None):
    """The ``ArgusPipeline`` a member (``member_dir``) or a candidate (``instructions``) runs.

    ``overrides`` (dotted) come first, the member's settings win over them; ``lm_builder`` and
    ``classifier`` are shared objects a campaign passes to avoid rebuilding them.
    """
    from argus.pipeline import ArgusPipeline

    cfg = member_config(settings, config_path=config_path, overrides=overrides)
    if member_dir is not None:
        programs = load_member_programs(Path(member_dir), cfg.extraction.max_retries)
    else:
        programs = programs_with(instructions, cfg.extraction.max_retries)
    return ArgusPipeline(cfg, programs=programs, classifier=classifier, lm_builder=lm_builder)


def member_pipeline(
    frontier_dir: str | Path,
    *,
    max_cost: float | None = None,
    min_quality: float | None = None,
    strategy: str = "knee",
    member: str | None = None,
    max_tokens: float | None = None,
    max_seconds: float | None = None,
    config_path: str | Path | None = None,
    overrides: dict | None = None,
    frontier=None,
    lm_builder=None,
):
    """(pipeline, manifest) for the member that ``Frontier.select_member`` picks (or ``member`` by id)."""
    from optimizers.frontier import Frontier

    frontier = frontier or Frontier.load(frontier_dir)
    chosen = frontier.member(member) if member else frontier.select_member(
        max_cost=max_cost, min_quality=min_quality, strategy=strategy, max_tokens=max_tokens, max_seconds=max_seconds)
    pipeline = pipeline_for(chosen.settings, member_dir=frontier.member_dir(chosen.member_id),
                            config_path=config_path, overrides=overrides, lm_builder=lm_builder)
    pipeline.member = chosen
    return pipeline, chosen


def load_member(frontier_dir: str | Path, **selection):
    """A ready ``ArgusPipeline`` running the selected member (the manifest is ``pipeline.member``)."""
    return member_pipeline(frontier_dir, **selection)[0]
