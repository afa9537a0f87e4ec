"""The campaign artifacts as typed JSON models: member manifests, split scores, lineage,
constraints, the frontier file; plus the small helpers they use (time stamps, versions, diffs)."""

from __future__ import annotations

import difflib
import math
import platform
import re
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from importlib import metadata
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator

Sense = Literal["max", "min"]
Strategy = Literal["knee", "max_quality", "min_cost"]

QUALITY_COST: dict[str, Sense] = {"quality": "max", "cost_usd": "min"}
"""The default objectives: quality (maximize) against cost per document in USD (minimize)."""

FRONTIER_FILE = "frontier.json"
MANIFEST_FILE = "manifest.json"
PROGRAMS_FILE = "programs.json"

_MEMBER_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")

StageModelTokens = dict[str, dict[str, dict[str, float]]]
"""Tokens by pipeline stage and model: ``{stage: {model: {"input": n, "output": n}}}`` (list tokens: a call
served from the cache counts the tokens of the original call). What ``optimizers.frontier.pricing`` prices."""


# --------------------------------------------------------------------------------------------
# Artifact models
# --------------------------------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SplitScores(_Strict):
    """Scores of one candidate on one data split ("val" or "test"), averaged per document."""

    n: int = Field(ge=0, description="number of examples (documents) scored")
    quality: float = Field(description="mean quality in [0, 1] (higher is better)")
    quality_ci: tuple[float, float] | None = Field(
        default=None, description="percentile-bootstrap CI of the mean quality (see bootstrap_ci), or None")
    cost_usd: float = Field(default=0.0, ge=0, description="mean cost per document in USD (0 for local models)")
    cost_usd_ci: tuple[float, float] | None = Field(default=None, description="bootstrap CI of the mean cost, or None")
    tokens: float = Field(default=0.0, ge=0, description="mean tokens (prompt + completion) per document")
    latency_s: float | None = Field(default=None, description="mean wall-clock seconds per document of the deployment "
                                                               "runs, measured as they ran (on `machine`, `num_threads` "
                                                               "documents at once), if measured")
    machine: dict[str, Any] | None = Field(
        default=None, description="where latency_s was measured: host, cpus, platform, processor (None: not recorded)")
    num_threads: int | None = Field(default=None, description="documents deployed at once when latency_s was measured")
    per_example: dict[str, float] = Field(
        default_factory=dict, description="example (document) id -> quality of that example (for win/loss analysis)")
    tokens_ci: tuple[float, float] | None = Field(default=None, description="bootstrap CI of the mean tokens per document")
    doc_ids: list[str] = Field(default_factory=list, description="the documents scored, in order")
    per_document: dict[str, dict[str, float]] = Field(
        default_factory=dict,
        description='document id -> {"quality", "cost_usd", "tokens", "calls", "seconds"} of the deployment run on it')
    per_document_tokens: dict[str, StageModelTokens] | None = Field(
        default=None,
        description='document id -> {stage: {model: {"input", "output"}}} tokens of the deployment run on it (what '
                    "`argus frontier reprice` prices); None in manifests written before they were recorded")

    def point(self) -> dict[str, float]:
        """This split's objective values, keyed like ``MemberManifest.objectives``."""
        out = {"quality": self.quality, "cost_usd": self.cost_usd, "tokens": self.tokens}
        if self.latency_s is not None:
            out["latency_s"] = self.latency_s
        return out


class Lineage(_Strict):
    """Where a candidate came from: its parent and what changed relative to it."""

    parent: str | None = Field(default=None, description="member id of the parent candidate; None for a seed")
    changed_programs: list[str] = Field(
        default_factory=list, description='programs whose prompt or settings changed vs the parent, e.g. ["stage1"]')
    instruction_diff_chars: int = Field(
        default=0, ge=0, description="characters changed in the instructions vs the parent (instruction_diff_size)")
    iteration: int = Field(default=0, ge=0, description="outer-search iteration that produced the candidate")
    origin: str = Field(default="seed", description='what produced it: "seed", "gepa", "default" (what `argus extract` '
                                                    'runs), ...')


class MemberManifest(_Strict):
    """Everything about one compiled candidate, stored as ``<campaign>/<member_id>/manifest.json``.

    Read by ``Frontier`` (selection, tables), by ``optimizers.report`` and by whoever loads the
    member into a runnable pipeline (``programs_file`` next to this manifest).
    """

    campaign: str = Field(description="campaign name (the folder under compiled/)")
    member_id: str = Field(description="unique id within the campaign; also the folder name")
    created: str = Field(default_factory=lambda: utc_now(), description="ISO-8601 UTC time the manifest was made")
    objectives: dict[str, float] = Field(
        description="validation objectives: quality (max), cost_usd and tokens per document (min), latency_s (min, optional)")
    splits: dict[str, SplitScores] = Field(default_factory=dict, description='scores per split: "val", "test"')
    val_only_win: bool = Field(
        default=False, description="on the validation frontier but dominated on the test split (flag_val_only_wins)")
    lineage: Lineage = Field(default_factory=Lineage, description="parent and change vs the parent")
    default: bool = Field(
        default=False, description="the configuration `argus extract` runs with the campaign's models (its defaults, "
                                   "no evolved program): a candidate of every campaign")
    settings: dict[str, Any] = Field(
        default_factory=dict,
        description='discrete settings of the candidate: "models" (stage -> litellm model), temperature, tau, framenet_hints, ...')
    prompts: dict[str, str] = Field(default_factory=dict, description="predictor name -> instruction text (for diffs)")
    stage_costs: dict[str, dict[str, float]] = Field(
        default_factory=dict,
        description='pipeline stage -> {"usd": ..., "tokens": ..., "calls": ...} per document on the val split, from '
                    "the deployment runs' own ledgers (list price)")
    model_tokens: StageModelTokens | None = Field(
        default=None,
        description='pipeline stage -> {model: {"input": ..., "output": ...}} tokens per document on the val split '
                    "(what `argus frontier reprice` prices); None in manifests written before they were recorded")
    documents: dict[str, list[str]] = Field(
        default_factory=dict, description='split -> the document ids its scores are over ("val", "test")')
    dataset_hash: str = Field(description="hash of the train/val/test example ids and contents the scores refer to")
    metric_hash: str = Field(description="hash of the metric (name, version, parameters) that produced quality")
    versions: dict[str, str] = Field(default_factory=lambda: dependency_versions(),
                                     description="python and package versions (dependency_versions)")
    programs_file: str = Field(default=PROGRAMS_FILE, description="DSPy program state next to this manifest")

    @field_validator("member_id")
    @classmethod
    def _safe_id(cls, v: str) -> str:
        if not _MEMBER_ID.match(v):
            raise ValueError(f"member_id {v!r} must be a plain folder name (letters, digits, '.', '_', '-')")
        return v

    @field_validator("settings")
    @classmethod
    def _settings(cls, v: dict[str, Any]) -> dict[str, Any]:
        """The settings a deployment reads (``optimizers.deploy.member_overrides``) have their types: a
        hand-edited or damaged manifest is refused when read, not with a traceback when deployed."""
        def fail(key: str, want: str) -> None:
            raise ValueError(f"settings.{key} must be {want}, got {type(v[key]).__name__} {str(v[key])[:60]!r}")

        for key in ("task_model", "stage2_model", "reflection_model", "judge_model", "extraction"):
            if v.get(key) is not None and not isinstance(v[key], str):
                fail(key, "a string")
        for key in ("models", "pipeline"):
            if v.get(key) is not None and not (isinstance(v[key], Mapping) and all(isinstance(k, str) for k in v[key])):
                fail(key, "an object")
        if isinstance(v.get("models"), Mapping) and not all(isinstance(m, str) for m in v["models"].values()):
            fail("models", "an object of stage -> model string")
        if v.get("temperature") is not None and (isinstance(v["temperature"], bool)
                                                 or not isinstance(v["temperature"], (int, float))):
            fail("temperature", "a number")
        if v.get("max_retries") is not None and (isinstance(v["max_retries"], bool)
                                                 or not isinstance(v["max_retries"], int) or v["max_retries"] < 0):
            fail("max_retries", "a whole number >= 0")
        if v.get("framenet_hints") is not None and not isinstance(v["framenet_hints"], bool):
            fail("framenet_hints", "true or false")
        for key in ("sentence.llm", "facts.mode"):
            if v.get(key) is not None and not isinstance(v[key], str):
                fail(key, "a string")
        for key in ("sentence.tau", "facts.tau"):
            if v.get(key) is not None and (isinstance(v[key], bool) or not isinstance(v[key], (int, float))):
                fail(key, "a number")
        return v

    @field_validator("objectives", mode="before")
    @classmethod
    def _drop_unmeasured(cls, v: Any) -> Any:
        return {k: x for k, x in v.items() if x is not None} if isinstance(v, Mapping) else v

    @field_validator("objectives")
    @classmethod
    def _objectives(cls, v: dict[str, float]) -> dict[str, float]:
        missing = {"quality", "cost_usd"} - set(v)
        if missing:
            raise ValueError(f"objectives lack {sorted(missing)}")
        bad = [k for k, x in v.items() if not math.isfinite(x)]
        if bad:
            raise ValueError(f"objectives {bad} are not finite numbers")
        return v

    @field_validator("programs_file")
    @classmethod
    def _plain_file(cls, v: str) -> str:
        if "/" in v or "\\" in v or v in ("", ".", "..") or not v.endswith(".json"):
            raise ValueError(f"programs_file {v!r} must be a .json file name inside the member folder")
        return v


class Constraints(_Strict):
    """Feasibility bounds on the validation objectives; infeasible candidates never join the frontier."""

    max_cost_per_doc: float | None = Field(default=None, description="upper bound on cost_usd per document")
    max_tokens_per_doc: float | None = Field(default=None, description="upper bound on tokens per document")
    max_latency_s: float | None = Field(default=None, description="upper bound on latency_s per document")
    min_quality: float | None = Field(default=None, description="lower bound on quality")

    def feasible(self, point: Mapping[str, float]) -> bool:
        """True when ``point`` satisfies every bound that is set (a bound on a missing objective fails)."""
        checks = (("cost_usd", self.max_cost_per_doc, 1), ("tokens", self.max_tokens_per_doc, 1),
                  ("latency_s", self.max_latency_s, 1), ("quality", self.min_quality, -1))
        for name, bound, sign in checks:
            if bound is None:
                continue
            value = point.get(name)
            if value is None or not math.isfinite(value) or sign * (value - bound) > 0:
                return False
        return True


class CandidateRow(_Strict):
    """Summary of one evaluated candidate (frontier member or not): the grey points of the report."""

    id: str = Field(description="candidate id (member id when on the frontier)")
    quality: float = Field(description="validation quality")
    cost_usd: float = Field(description="validation cost per document in USD")
    tokens: float = Field(default=0.0, description="validation tokens per document")
    latency_s: float | None = Field(default=None, description="validation latency per document, if measured")
    feasible: bool = Field(default=True, description="satisfies the campaign constraints")
    on_frontier: bool = Field(description="non-dominated and feasible")
    dominated_by: list[str] = Field(default_factory=list, description="frontier members that dominate it")
    parent: str | None = Field(default=None, description="id of the parent candidate (Lineage.parent)")
    iteration: int = Field(default=0, ge=0, validation_alias=AliasChoices("iteration", "trial"),
                           description='outer-search iteration (Lineage.iteration; "trial" is accepted on input)')
    origin: str = Field(default="", description="what produced it (Lineage.origin); empty when not recorded")
    default: bool = Field(default=False, description="MemberManifest.default: what `argus extract` runs by default")
    changed_programs: list[str] = Field(default_factory=list, description="Lineage.changed_programs")
    instruction_diff_chars: int = Field(default=0, ge=0, description="Lineage.instruction_diff_chars")
    model_tokens: StageModelTokens | None = Field(
        default=None, description="MemberManifest.model_tokens: validation tokens per document by stage and model "
                                  "(None when not recorded)")

    @property
    def lineage(self) -> Lineage:
        return Lineage(parent=self.parent, changed_programs=self.changed_programs,
                       instruction_diff_chars=self.instruction_diff_chars, iteration=self.iteration, origin=self.origin)


class ModelPrice(_Strict):
    """List price of one model in USD per million tokens."""

    input: float = Field(ge=0, description="USD per million input (prompt) tokens")
    output: float = Field(ge=0, description="USD per million output (completion) tokens")


class Pricing(_Strict):
    """The prices a frontier's USD figures are computed at (``argus frontier reprice``)."""

    source: str = Field(description='where the prices come from: "litellm model_cost (litellm <version>)" or '
                                    '"file <path>"')
    prices: dict[str, ModelPrice] = Field(default_factory=dict, description="model -> its price (every model priced)")
    timestamp: str = Field(default_factory=lambda: utc_now(), description="ISO-8601 UTC time of the repricing")


class PricingHistoryEntry(_Strict):
    """The figures of an earlier pricing of the frontier, kept when it was repriced."""

    pricing: Pricing | None = Field(
        description="the earlier pricing; None: the list prices the campaign's calls were booked at when it ran")
    updated: str = Field(description="the frontier file's time stamp under that pricing")
    members: list[str] = Field(default_factory=list, description="the frontier members under that pricing")
    cost_usd: dict[str, float] = Field(default_factory=dict, description="candidate id -> its USD per document then")
    reference: dict[str, float] = Field(default_factory=dict, description="the hypervolume reference then")


class HypervolumePoint(_Strict):
    """Hypervolume of the feasible frontier after one iteration."""

    iteration: int
    hypervolume: float
    frontier_size: int


class FrontierFile(_Strict):
    """``<campaign>/frontier.json``: the frontier of a campaign and what it was computed over."""

    campaign: str = Field(description="campaign name")
    updated: str = Field(default_factory=lambda: utc_now(), description="ISO-8601 UTC time of the last write")
    objectives: dict[str, Sense] = Field(
        default_factory=lambda: dict(QUALITY_COST), description='objective -> "max" or "min"')
    reference: dict[str, float] = Field(
        default_factory=dict, description="hypervolume reference point per objective (default_reference)")
    constraints: Constraints = Field(default_factory=Constraints, description="feasibility bounds")
    members: list[str] = Field(default_factory=list, description="ids of the frontier members (folders beside this file)")
    all_candidates: list[CandidateRow] = Field(default_factory=list, description="every evaluated candidate")
    hypervolume_history: list[HypervolumePoint] = Field(default_factory=list, description="hypervolume per iteration")
    optimization_spend: dict[str, Any] = Field(
        default_factory=dict,
        description="what the campaign itself spent (GEPA's task and reflection calls, metric and judge calls, "
                    "deployment runs of candidates): never part of a member's cost; "
                    '{"total": {...}, "by_trial": {...}, "by_phase": {...}}')
    search: dict[str, Any] = Field(
        default_factory=dict,
        description="the outer search over the settings: the sampler and its settings, the trial positions, how many "
                    "were planned by enumeration and how many completed ones the sampler drew, and how many of those "
                    'draws were random; {"sampler": "TPESampler", "multivariate": true, "n_startup_trials": 10, "seed": 0, '
                    '"positions": 12, "planned": 0, "drawn": 12, "random_draws": 10}; empty in older files')
    pricing: Pricing | None = Field(
        default=None, description="the prices of the USD figures after `argus frontier reprice`; None: the list "
                                  "prices the campaign's calls were booked at")
    pricing_history: list[PricingHistoryEntry] = Field(
        default_factory=list, description="earlier pricings with the candidates' USD figures under them, oldest first")

    @field_validator("members")
    @classmethod
    def _member_folders(cls, v: list[str]) -> list[str]:
        """Members are folders beside the file: a damaged or hand-made file never points a reader elsewhere."""
        bad = [m for m in v if not _MEMBER_ID.match(m)]
        if bad:
            raise ValueError(f"member ids {bad[:3]!r} are not plain folder names (letters, digits, '.', '_', '-')")
        return v


# --------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------


def utc_now() -> str:
    """Current time as ISO-8601 UTC with seconds precision."""
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


def dependency_versions(packages: Iterable[str] = ("dspy", "gepa", "litellm", "optuna", "argus-kg", "pydantic",
                                                   "numpy")) -> dict[str, str]:
    """Python and installed package versions (``"missing"`` for a package that is not installed)."""
    out = {"python": platform.python_version()}
    for name in packages:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "missing"
    return out


def instruction_diff_size(a: str, b: str) -> int:
    """Characters changed between two instruction texts: deleted plus inserted (difflib opcodes)."""
    if a == b:
        return 0
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    size = 0
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            size += (i2 - i1) + (j2 - j1)
    return size


