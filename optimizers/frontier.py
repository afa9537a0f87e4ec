"""The quality–cost Pareto frontier of an optimization campaign and its pickle-free artifact store.

DSPy's GEPA keeps per-instance / per-objective maxima; this module keeps the *true* non-dominated
set over the campaign objectives (quality to maximize; cost per document in USD, tokens and
optionally latency to minimize), under optional constraints, with the lineage of every member,
its held-out test scores with bootstrap confidence intervals, and a flag on members that only win
on the validation split.

Layout of a campaign directory (``compiled/<campaign>/``)::

    frontier.json                  FrontierFile: objectives, reference point, constraints,
                                   frontier member ids, one summary row per evaluated candidate,
                                   hypervolume history
    <member_id>/manifest.json      MemberManifest of each frontier member
    <member_id>/programs.json      the member's DSPy program state (``dspy.Module.save(*.json)``),
                                   copied in by ``write_member`` after ``scrub_secrets``
    report.html                    optional, written by ``optimizers.report.write_report``

Everything is JSON; every write is atomic (``argus.io``) and goes through ``scrub_secrets``, so no
API key or secret API base reaches disk.

Conventions (who reads what):

* Objective *senses* are a mapping ``{"quality": "max", "cost_usd": "min", ...}``; a point is a
  mapping from objective name to value (or a sequence in the order of ``senses``).
* ``MemberManifest.objectives`` are the **validation** objectives; the search ranks on them. Test
  scores live only in ``splits["test"]`` and are used for reporting and ``flag_val_only_wins``.
* Hypervolume reference point (``default_reference``): 0 for maximized objectives (quality lives
  in [0, 1]), 1.1 × the largest observed value for minimized ones (1.0 when that is 0). A point
  contributes only where it is strictly better than the reference in every objective. Fix the
  reference once per campaign (it is stored in ``frontier.json``) so the history is comparable.
"""

from __future__ import annotations

import difflib
import json
import math
import platform
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, field_validator

from argus.errors import ConfigError, InputError
from argus.io import write_json_atomic

Sense = Literal["max", "min"]
Strategy = Literal["knee", "max_quality", "min_cost"]

QUALITY_COST: dict[str, Sense] = {"quality": "max", "cost_usd": "min"}
"""The default objectives: quality (maximize) against cost per document in USD (minimize)."""

FRONTIER_FILE = "frontier.json"
MANIFEST_FILE = "manifest.json"
PROGRAMS_FILE = "programs.json"

_MEMBER_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


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
    latency_s: float | None = Field(default=None, description="mean wall-clock seconds per document, if measured")
    per_example: dict[str, float] = Field(
        default_factory=dict, description="example id -> quality of that example (for win/loss analysis)")

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
    origin: str = Field(default="seed", description='what produced it: "seed", "gepa", "optuna", ...')


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
    settings: dict[str, Any] = Field(
        default_factory=dict,
        description='discrete settings of the candidate: "models" (stage -> litellm model), temperature, tau, framenet_hints, ...')
    prompts: dict[str, str] = Field(default_factory=dict, description="predictor name -> instruction text (for diffs)")
    stage_costs: dict[str, dict[str, float]] = Field(
        default_factory=dict, description='stage -> {"usd": ..., "tokens": ...} per document on the val split')
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
    changed_programs: list[str] = Field(default_factory=list, description="Lineage.changed_programs")
    instruction_diff_chars: int = Field(default=0, ge=0, description="Lineage.instruction_diff_chars")

    @property
    def lineage(self) -> Lineage:
        return Lineage(parent=self.parent, changed_programs=self.changed_programs,
                       instruction_diff_chars=self.instruction_diff_chars, iteration=self.iteration, origin=self.origin)


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


def _as_vector(point: Mapping[str, float] | Sequence[float], names: Sequence[str]) -> list[float]:
    if isinstance(point, Mapping):
        try:
            return [float(point[n]) for n in names]
        except KeyError as exc:
            raise ValueError(f"point {dict(point)!r} lacks objective {exc.args[0]!r}") from None
    values = [float(x) for x in point]
    if len(values) != len(names):
        raise ValueError(f"point {values!r} has {len(values)} values for objectives {list(names)}")
    return values


def _minimized(points: Sequence[Mapping[str, float] | Sequence[float]], senses: Mapping[str, str]) -> np.ndarray:
    """Points as an (n, d) array in which every objective is minimized (maximized ones negated)."""
    names = list(senses)
    for name, sense in senses.items():
        if sense not in ("max", "min"):
            raise ValueError(f"sense of {name!r} must be 'max' or 'min', got {sense!r}")
    sign = np.array([-1.0 if senses[n] == "max" else 1.0 for n in names])
    arr = np.array([_as_vector(p, names) for p in points], dtype=float).reshape(len(points), len(names))
    return arr * sign


_BOUNDS = {("cost_usd", "<="): "max_cost_per_doc", ("tokens", "<="): "max_tokens_per_doc",
           ("latency_s", "<="): "max_latency_s", ("quality", ">="): "min_quality"}


def _as_constraints(constraints: Constraints | Mapping[str, Any] | None) -> Constraints | None:
    """A ``Constraints`` from itself, a mapping of its fields, or ``{objective: (op, bound)}``.

    The last form accepts ``("<=", v)`` on cost_usd, tokens, latency_s and ``(">=", v)`` on quality.
    """
    if constraints is None or isinstance(constraints, Constraints):
        return constraints
    fields: dict[str, Any] = {}
    for name, value in constraints.items():
        if isinstance(value, (tuple, list)):
            if len(value) != 2 or (name, value[0]) not in _BOUNDS:
                raise ValueError(f"unsupported constraint {name!r}: {value!r}; use {sorted(_BOUNDS)}")
            fields[_BOUNDS[(name, value[0])]] = value[1]
        else:
            fields[name] = value
    return Constraints(**fields)


# --------------------------------------------------------------------------------------------
# Pareto dominance, hypervolume, knee, bootstrap
# --------------------------------------------------------------------------------------------


def dominates(a: Mapping[str, float] | Sequence[float], b: Mapping[str, float] | Sequence[float],
              senses: Mapping[str, str] = QUALITY_COST) -> bool:
    """True when ``a`` is at least as good as ``b`` in every objective and strictly better in one."""
    m = _minimized([a, b], senses)
    return bool(np.all(m[0] <= m[1]) and np.any(m[0] < m[1]))


def pareto_front(points: Sequence[Mapping[str, float] | Sequence[float]], senses: Mapping[str, str] = QUALITY_COST,
                 constraints: Constraints | Mapping[str, Any] | None = None) -> list[int]:
    """Indices (ascending) of the feasible points that no other feasible point dominates.

    Identical points do not dominate each other, so duplicates are all kept. A point with a NaN
    objective or one that violates ``constraints`` (a ``Constraints``, a mapping of its fields such
    as ``{"max_cost_per_doc": 0.01}``, or ``{"cost_usd": ("<=", 0.01)}``) is not eligible and does
    not dominate anything. O(n²).
    """
    if not points:
        return []
    cons = _as_constraints(constraints)
    m = _minimized(points, senses)
    feasible = ~np.isnan(m).any(axis=1)
    if cons is not None:
        for i, p in enumerate(points):
            if feasible[i] and not cons.feasible(p if isinstance(p, Mapping) else dict(zip(senses, p))):
                feasible[i] = False
    idx = np.flatnonzero(feasible)
    front = []
    for i in idx:
        others = m[idx]
        dominated = np.all(others <= m[i], axis=1) & np.any(others < m[i], axis=1)
        if not dominated.any():
            front.append(int(i))
    return front


def default_reference(points: Sequence[Mapping[str, float] | Sequence[float]],
                      senses: Mapping[str, str] = QUALITY_COST) -> dict[str, float]:
    """The reference point convention: 0 for maximized objectives, 1.1 × max observed for minimized ones.

    A minimized objective whose largest observed value is 0 (or that has no points) gets 1.0, so
    all-zero costs still give a positive hypervolume.
    """
    names = list(senses)
    arr = np.array([_as_vector(p, names) for p in points], dtype=float).reshape(len(points), len(names))
    ref = {}
    for j, name in enumerate(names):
        if senses[name] == "max":
            ref[name] = 0.0
        else:
            col = arr[:, j][np.isfinite(arr[:, j])] if len(arr) else np.array([])
            top = float(col.max()) if col.size else 0.0
            ref[name] = 1.1 * top if top > 0 else 1.0
    return ref


def _hv_min(points: np.ndarray, ref: np.ndarray) -> float:
    """Exact hypervolume of minimization points strictly inside ``ref`` (recursive slicing)."""
    if len(points) == 0:
        return 0.0
    d = points.shape[1]
    if d == 1:
        return float(ref[0] - points[:, 0].min())
    if d == 2:
        order = np.lexsort((points[:, 1], points[:, 0]))
        area, best_y = 0.0, ref[1]
        pts = points[order]
        for x, y in pts:  # sweep by x: each improving point adds the strip [x, ref_x] × [y, best_y]
            if y >= best_y:
                continue
            area += (ref[0] - x) * (best_y - y)
            best_y = y
        return float(area)
    # slice along the last objective: between consecutive levels the covered set is the (d-1)-D
    # hypervolume of every point at or below that level
    order = np.argsort(points[:, -1], kind="stable")
    pts = points[order]
    volume = 0.0
    for k in range(len(pts)):
        upper = pts[k + 1, -1] if k + 1 < len(pts) else ref[-1]
        depth = upper - pts[k, -1]
        if depth > 0:
            volume += depth * _hv_min(pts[: k + 1, :-1], ref[:-1])
    return float(volume)


def hypervolume(points: Sequence[Mapping[str, float] | Sequence[float]], senses: Mapping[str, str] = QUALITY_COST,
                reference: Mapping[str, float] | None = None) -> float:
    """Exact hypervolume dominated by ``points`` and bounded by ``reference``.

    Maximized objectives count upward from the reference (quality above 0), minimized ones downward
    (cost below 1.1 × max cost, see ``default_reference``, used when ``reference`` is None). Points
    not strictly better than the reference in every objective, and NaN points, contribute nothing;
    dominated points add nothing by construction. Exact for any number of objectives (sweep in 2-D,
    slicing above); meant for the 2–3 objectives of a campaign.
    """
    if not points:
        return 0.0
    if reference is None:
        reference = default_reference(points, senses)
    names = list(senses)
    m = _minimized(points, senses)
    ref = _minimized([[float(reference[n]) for n in names]], senses)[0]
    m = m[~np.isnan(m).any(axis=1)]
    m = m[np.all(m < ref, axis=1)]
    if len(m) == 0:
        return 0.0
    keep = pareto_front([list(r) for r in m], {n: "min" for n in names})
    return _hv_min(m[keep], ref)


def hypervolume_history(points: Sequence[Mapping[str, float]], iterations: Sequence[int],
                        senses: Mapping[str, str] = QUALITY_COST, reference: Mapping[str, float] | None = None,
                        constraints: Constraints | Mapping[str, Any] | None = None) -> list[HypervolumePoint]:
    """Hypervolume and frontier size of all feasible candidates evaluated up to each iteration."""
    if len(points) != len(iterations):
        raise ValueError("points and iterations differ in length")
    if reference is None:
        reference = default_reference(points, senses)
    history = []
    for it in sorted(set(int(i) for i in iterations)):
        upto = [p for p, i in zip(points, iterations) if i <= it]
        front = pareto_front(upto, senses, constraints)
        history.append(HypervolumePoint(iteration=it, hypervolume=hypervolume([upto[i] for i in front], senses, reference),
                                        frontier_size=len(front)))
    return history


def _best_index(m: np.ndarray, candidates: Sequence[int]) -> int:
    """Best of ``candidates`` lexicographically over the minimized objectives (first objective first)."""
    return min(candidates, key=lambda i: (tuple(m[i]), i))


def knee_point(points: Sequence[Mapping[str, float] | Sequence[float]], senses: Mapping[str, str] = QUALITY_COST) -> int:
    """Index of the knee of the front formed by ``points`` (the best trade-off).

    The front of ``points`` is taken first (dominated points never win). Each objective is
    normalized to [0, 1] over the front, with 1 the better end. In 2-D the knee is the front point
    farthest from the line through the two extreme points, on the side of the ideal point (1, 1).
    With one or two front points, or when no point bulges beyond that line, the knee is the best
    point in the first objective (max quality; ties go to the next objectives, then the lower
    index). With three or more objectives, the knee is the point nearest the ideal point.
    """
    if not points:
        raise ValueError("knee_point of no points")
    front = pareto_front(points, senses)
    if not front:
        raise ValueError("knee_point: every point has a NaN objective")
    m = _minimized(points, senses)
    fallback = _best_index(m, front)
    if len(front) <= 2:
        return fallback
    f = m[front]
    lo, hi = f.min(axis=0), f.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    good = (hi - f) / span  # 1 = best end of each objective
    if f.shape[1] != 2:
        dist = np.linalg.norm(1.0 - good, axis=1)
        return front[int(min(range(len(front)), key=lambda k: (dist[k], tuple(f[k]))))]
    a = good[int(np.argmax(good[:, 0]))]  # extreme in the first objective
    b = good[int(np.argmax(good[:, 1]))]  # extreme in the second objective
    direction = b - a
    norm = float(np.hypot(*direction))
    if norm == 0:
        return fallback
    normal = np.array([-direction[1], direction[0]]) / norm
    if float(np.dot(np.ones(2) - a, normal)) < 0:
        normal = -normal  # orient toward the ideal point
    signed = (good - a) @ normal
    k = int(np.argmax(signed))
    if signed[k] <= 1e-12:
        return fallback
    return front[k]


def bootstrap_ci(values: Sequence[float], n_resamples: int = 2000, level: float = 0.95,
                 seed: int = 0) -> tuple[float, float]:
    """Percentile-bootstrap confidence interval of the mean of ``values`` (numpy, reproducible by seed)."""
    x = np.asarray(list(values), dtype=float)
    if x.size == 0:
        raise ValueError("bootstrap_ci of no values")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if x.size == 1:
        return float(x[0]), float(x[0])
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, size=(n_resamples, x.size))].mean(axis=1)
    alpha = (1 - level) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    return float(lo), float(hi)


def flag_val_only_wins(members: Sequence[MemberManifest], senses: Mapping[str, str] = QUALITY_COST,
                       constraints: Constraints | Mapping[str, Any] | None = None) -> list[MemberManifest]:
    """Copies of ``members`` with ``val_only_win`` set by this rule.

    A member is flagged when (1) it is on the validation frontier of ``members`` (their
    ``objectives``, under ``constraints``) and (2) on the test split some other member with test
    scores dominates it (``splits["test"]`` values of the ``senses`` objectives; constraints are
    not applied on test). Members without test scores, or with fewer objectives on test than
    ``senses`` needs, are never flagged and never dominate; every other member gets False.
    """
    members = list(members)
    val_front = set(pareto_front([m.objectives for m in members], senses, constraints))
    test_points: dict[int, dict[str, float]] = {}
    for i, m in enumerate(members):
        test = m.splits.get("test")
        if test is not None and all(k in test.point() for k in senses):
            test_points[i] = test.point()
    out = []
    for i, m in enumerate(members):
        flag = i in val_front and i in test_points and any(
            dominates(test_points[j], test_points[i], senses) for j in test_points if j != i)
        out.append(m.model_copy(update={"val_only_win": flag}))
    return out


# --------------------------------------------------------------------------------------------
# Secrets
# --------------------------------------------------------------------------------------------

_SECRET_KEYS = {"api_key", "apikey", "api_base", "base_url", "key", "token", "secret", "password", "authorization",
                "access_token", "auth_token", "refresh_token", "client_secret"}
_SECRET_SUFFIXES = ("_api_key", "_api_base", "_secret", "_password", "_access_token", "_auth_token")
_CREDENTIAL_PREFIXES = ("sk-", "sk-ant-", "xoxb-", "xoxp-", "xoxa-", "xoxr-", "ghp_", "gho_", "ghs_", "github_pat_",
                        "AKIA", "AIza")
_CREDENTIAL_PATTERNS = [
    re.compile(r"^\s*bearer\s+\S+", re.IGNORECASE),
    re.compile(r"(?<![A-Za-z0-9_-])(sk-(ant-)?[A-Za-z0-9_-]{16,}|xox[abpr]-[A-Za-z0-9-]{10,}"
               r"|gh[pos]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
    re.compile(r"\bBearer\s+(?=[A-Za-z0-9._~+/=-]*\d)[A-Za-z0-9._~+/=-]{16,}"),
    re.compile(r"://[^/\s:@]+:[^/\s@]+@"),  # credentials inside a URL
]


def _secret_key(name: str) -> bool:
    low = name.lower()
    return low in _SECRET_KEYS or low.endswith(_SECRET_SUFFIXES)


def _looks_like_credential(value: str) -> bool:
    stripped = value.strip()
    if stripped.startswith(_CREDENTIAL_PREFIXES) and " " not in stripped:
        return True
    return any(p.search(value) for p in _CREDENTIAL_PATTERNS)


def scrub_secrets(obj: Any, _path: str = "$") -> Any:
    """A copy of a JSON-like ``obj`` without secret-bearing keys; raises if a credential remains.

    Dropped keys (any depth, case-insensitive): api_key, api_base, base_url, key, token, secret,
    password, authorization, access/auth/refresh tokens, client_secret, and names ending in
    ``_api_key``, ``_api_base``, ``_secret``, ``_password``, ``_access_token``, ``_auth_token``.
    ``ValueError`` (naming the JSON path, never the value) when a remaining string looks like a
    credential: an OpenAI/Anthropic/Slack/GitHub/AWS/Google key prefix (``sk-``, ``sk-ant-``,
    ``xoxb-``, ``ghp_``, …), a ``Bearer …`` header, or a URL with ``user:password@``.
    """
    if isinstance(obj, BaseModel):
        obj = obj.model_dump(mode="json")
    if isinstance(obj, Mapping):
        return {k: scrub_secrets(v, f"{_path}.{k}") for k, v in obj.items() if not (isinstance(k, str) and _secret_key(k))}
    if isinstance(obj, (list, tuple)):
        return [scrub_secrets(v, f"{_path}[{i}]") for i, v in enumerate(obj)]
    if isinstance(obj, str) and _looks_like_credential(obj):
        raise ValueError(f"refusing to write a value that looks like a credential at {_path}")
    return obj


# --------------------------------------------------------------------------------------------
# Building and writing a campaign directory
# --------------------------------------------------------------------------------------------


def build_frontier_file(campaign: str, candidates: Sequence[MemberManifest],
                        senses: Mapping[str, str] = QUALITY_COST,
                        constraints: Constraints | Mapping[str, Any] | None = None,
                        reference: Mapping[str, float] | None = None,
                        history: Sequence[HypervolumePoint] | None = None) -> FrontierFile:
    """The ``FrontierFile`` of all evaluated ``candidates`` (their validation objectives).

    ``reference`` defaults to ``default_reference`` over the candidates; ``history`` defaults to
    ``hypervolume_history`` grouped by ``lineage.iteration``. Write the members' manifests
    (``write_member``) for the ids in ``members`` and this file with ``write_frontier``.
    """
    cons = _as_constraints(constraints) or Constraints()
    points = [c.objectives for c in candidates]
    ids = [c.member_id for c in candidates]
    if len(set(ids)) != len(ids):
        raise ValueError("candidate ids are not unique")
    ref = dict(reference) if reference is not None else default_reference(points, senses)
    front = pareto_front(points, senses, cons)
    on = set(front)
    rows = []
    for i, c in enumerate(candidates):
        rows.append(CandidateRow(
            id=c.member_id, quality=c.objectives["quality"], cost_usd=c.objectives["cost_usd"],
            tokens=c.objectives.get("tokens", 0.0), latency_s=c.objectives.get("latency_s"),
            feasible=cons.feasible(c.objectives), on_frontier=i in on,
            dominated_by=[] if i in on else [ids[j] for j in front if dominates(points[j], points[i], senses)],
            **c.lineage.model_dump()))
    if history is None:
        history = hypervolume_history(points, [c.lineage.iteration for c in candidates], senses, ref, cons)
    return FrontierFile(campaign=campaign, objectives=dict(senses), reference=ref, constraints=cons,
                        members=[ids[i] for i in front], all_candidates=rows, hypervolume_history=list(history))


def write_member(campaign_dir: str | Path, manifest: MemberManifest, programs_source: str | Path | None = None) -> Path:
    """Write ``<campaign_dir>/<member_id>/manifest.json`` (and the program state) atomically, scrubbed.

    ``programs_source`` is the JSON written by ``dspy.Module.save(path.json)``; it is read,
    scrubbed of secrets (DSPy's LM state may carry ``api_base``) and written as
    ``manifest.programs_file`` beside the manifest. Returns the member directory.
    """
    member_dir = Path(campaign_dir) / manifest.member_id
    member_dir.mkdir(parents=True, exist_ok=True)
    if programs_source is not None:
        source = Path(programs_source)
        try:
            state = json.loads(source.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot read program state {source}: {exc}") from exc
        write_json_atomic(member_dir / manifest.programs_file, scrub_secrets(state))
    write_json_atomic(member_dir / MANIFEST_FILE, scrub_secrets(manifest.model_dump(mode="json")))
    return member_dir


def write_frontier(campaign_dir: str | Path, frontier_file: FrontierFile) -> Path:
    """Write ``<campaign_dir>/frontier.json`` atomically after ``scrub_secrets``; returns its path."""
    data = frontier_file.model_copy(update={"updated": utc_now()}).model_dump(mode="json")
    return write_json_atomic(Path(campaign_dir) / FRONTIER_FILE, scrub_secrets(data))


def _read_model(path: Path, model: type[BaseModel]) -> Any:
    if not path.is_file():
        raise InputError(f"{path} not found")
    try:
        return model.model_validate_json(path.read_bytes())
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first.get("loc", ())) or "(top level)"
        raise InputError(f"{path} is not a valid {model.__name__}: {where}: {first.get('msg')} "
                         f"({exc.error_count()} error(s))") from exc
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read {path}: {exc}") from exc


# --------------------------------------------------------------------------------------------
# Reading and choosing
# --------------------------------------------------------------------------------------------


def _models_label(settings: Mapping[str, Any]) -> str:
    models = settings.get("models")
    if isinstance(models, Mapping) and models:
        return ", ".join(f"{k}={v}" for k, v in sorted(models.items()))
    model = settings.get("model")
    return str(model) if model else ""


class Frontier:
    """A campaign's frontier loaded from ``compiled/<campaign>/``: its members and how to choose one."""

    def __init__(self, directory: Path, file: FrontierFile, members: list[MemberManifest]):
        self.directory = directory
        self.file = file
        self.members = members

    @classmethod
    def load(cls, directory: str | Path) -> Frontier:
        """Read ``frontier.json`` and each member's ``manifest.json``; ``InputError`` names a bad path."""
        directory = Path(directory)
        if not directory.is_dir():
            raise InputError(f"campaign directory {directory} not found")
        file = _read_model(directory / FRONTIER_FILE, FrontierFile)
        members = []
        for member_id in file.members:
            path = directory / member_id / MANIFEST_FILE
            manifest = _read_model(path, MemberManifest)
            if manifest.member_id != member_id:
                raise InputError(f"{path} holds member {manifest.member_id!r}, expected {member_id!r}")
            members.append(manifest)
        return cls(directory, file, members)

    @property
    def campaign(self) -> str:
        return self.file.campaign

    @property
    def senses(self) -> dict[str, str]:
        return dict(self.file.objectives)

    @property
    def cost_objective(self) -> str:
        """The cost the campaign minimizes: cost_usd, else its first minimized objective (e.g. tokens)."""
        if "cost_usd" in self.senses:
            return "cost_usd"
        return next((k for k, v in self.senses.items() if v == "min"), "cost_usd")

    def member(self, member_id: str) -> MemberManifest:
        """The frontier member with this id (``InputError`` listing the ids otherwise)."""
        for m in self.members:
            if m.member_id == member_id:
                return m
        raise InputError(f"{member_id!r} is not a frontier member of {self.directory}; members: "
                         f"{', '.join(m.member_id for m in self.members) or '(none)'}")

    def member_dir(self, member_id: str) -> Path:
        """Folder of a frontier member (its manifest and ``programs.json``)."""
        return self.directory / self.member(member_id).member_id

    def _knee_of(self, pool: Sequence[MemberManifest]) -> MemberManifest:
        senses = {k: v for k, v in self.senses.items() if all(k in m.objectives for m in pool)} or QUALITY_COST
        return pool[knee_point([m.objectives for m in pool], senses)]

    def knee(self) -> MemberManifest | None:
        """The knee member over the campaign objectives (``knee_point``); None for an empty frontier."""
        return self._knee_of(self.members) if self.members else None

    def seed(self) -> MemberManifest | None:
        """The member whose ``lineage.origin`` is "seed", else the first member (None if empty)."""
        for m in self.members:
            if m.lineage.origin == "seed":
                return m
        return self.members[0] if self.members else None

    def table(self) -> pd.DataFrame:
        """One row per frontier member, cheapest first."""
        knee = self.knee()
        rows = []
        for m in self.members:
            val, test = m.splits.get("val"), m.splits.get("test")
            ci = val.quality_ci if val is not None and val.quality_ci else (None, None)
            rows.append({
                "member": m.member_id,
                "quality": m.objectives["quality"],
                "quality_ci_low": ci[0],
                "quality_ci_high": ci[1],
                "cost_usd": m.objectives["cost_usd"],
                "tokens": m.objectives.get("tokens"),
                "test_quality": test.quality if test is not None else None,
                "val_only_win": m.val_only_win,
                "knee": knee is not None and m.member_id == knee.member_id,
                "parent": m.lineage.parent,
                "changed_programs": ", ".join(m.lineage.changed_programs),
                "models": _models_label(m.settings),
            })
        columns = ["member", "quality", "quality_ci_low", "quality_ci_high", "cost_usd", "tokens", "test_quality",
                   "val_only_win", "knee", "parent", "changed_programs", "models"]
        df = pd.DataFrame(rows, columns=columns)
        return df.sort_values(["cost_usd", "quality"], ascending=[True, False], kind="stable").reset_index(drop=True)

    def select(self, max_cost: float | None = None, min_quality: float | None = None, strategy: str = "knee", *,
               config_path=None, overrides: dict | None = None):
        """A ready ``argus.pipeline.ArgusPipeline`` running the member that :meth:`select_member`
        picks (its programs and settings over the user's config); the member is ``pipeline.member``."""
        from optimizers.deploy import member_pipeline

        pipeline, member = member_pipeline(self.directory, max_cost=max_cost, min_quality=min_quality, strategy=strategy,
                                           config_path=config_path, overrides=overrides, frontier=self)
        pipeline.member = member
        return pipeline

    def select_member(self, max_cost: float | None = None, min_quality: float | None = None,
               strategy: str = "knee") -> MemberManifest:
        """The member to deploy: filter by the bounds on the validation objectives, then apply ``strategy``.

        ``max_cost`` bounds cost_usd per document, ``min_quality`` bounds quality. Strategies: ``knee``
        (``knee_point`` over the campaign objectives among the remaining members), ``max_quality``
        (ties: lower cost_usd) or ``min_cost`` (lowest ``cost_objective``; ties: higher quality).
        ``InputError`` with the available ranges when no member satisfies the bounds.
        """
        if strategy not in ("knee", "max_quality", "min_cost"):
            raise ConfigError(f"strategy must be knee, max_quality or min_cost, got {strategy!r}")
        if not self.members:
            raise InputError(f"the frontier in {self.directory} has no members")
        pool = [m for m in self.members
                if (max_cost is None or m.objectives["cost_usd"] <= max_cost)
                and (min_quality is None or m.objectives["quality"] >= min_quality)]
        if not pool:
            qs = [m.objectives["quality"] for m in self.members]
            cs = [m.objectives["cost_usd"] for m in self.members]
            wanted = " and ".join(x for x in (f"cost_usd <= {max_cost:g}" if max_cost is not None else "",
                                                f"quality >= {min_quality:g}" if min_quality is not None else "") if x)
            raise InputError(f"no frontier member of {self.directory} has {wanted}; the frontier spans quality "
                             f"{min(qs):.4g}–{max(qs):.4g} and cost_usd {min(cs):.4g}–{max(cs):.4g} per document")
        if strategy == "max_quality":
            return max(pool, key=lambda m: (m.objectives["quality"], -m.objectives["cost_usd"]))
        if strategy == "min_cost":
            cost = self.cost_objective
            return min(pool, key=lambda m: (m.objectives.get(cost, 0.0), -m.objectives["quality"]))
        return self._knee_of(pool)
