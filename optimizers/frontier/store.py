"""Reading and writing a campaign directory (``compiled/<campaign>/``), secret scrubbing, and
choosing a member (:class:`Frontier`). Loading a member as a runnable pipeline is
``optimizers.deploy``; this module never imports it."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel, ValidationError

from argus.errors import ConfigError, InputError
from argus.io import write_json_atomic
from optimizers.frontier.model import (
    FRONTIER_FILE,
    MANIFEST_FILE,
    QUALITY_COST,
    CandidateRow,
    Constraints,
    FrontierFile,
    HypervolumePoint,
    MemberManifest,
    utc_now,
)
from optimizers.frontier.pareto import (
    _as_constraints,
    default_reference,
    dominates,
    hypervolume_history,
    knee_point,
    pareto_front,
)

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
    re.compile(r"://[^/\s:@]*:[^/\s@]+@"),  # credentials inside a URL (the user possibly empty)
    re.compile(r"[?&](?:ssl)?(?:password|pass|pwd)=[^&#\s]", re.IGNORECASE),  # a password as a URL query parameter
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
    ``xoxb-``, ``ghp_``, …), a ``Bearer …`` header, or a URL with ``user:password@`` (``:password@`` too) or
    a ``password``, ``sslpassword``, ``pass`` or ``pwd`` query parameter.
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
    ``hypervolume_history`` grouped by ``lineage.iteration``. Write the candidates' manifests
    (``write_member``) and this file with ``write_frontier``.
    """
    cons = _as_constraints(constraints) or Constraints()
    ids = [c.member_id for c in candidates]
    if len(set(ids)) != len(ids):
        raise ValueError("candidate ids are not unique")
    rows = [CandidateRow(id=c.member_id, quality=c.objectives["quality"], cost_usd=c.objectives["cost_usd"],
                         tokens=c.objectives.get("tokens", 0.0), latency_s=c.objectives.get("latency_s"),
                         on_frontier=False, model_tokens=c.model_tokens, default=c.default, **c.lineage.model_dump())
            for c in candidates]
    rows, members, ref, history = rank_candidates(rows, senses, cons, reference, history)
    return FrontierFile(campaign=campaign, objectives=dict(senses), reference=ref, constraints=cons,
                        members=members, all_candidates=rows, hypervolume_history=history)


def row_point(row: CandidateRow) -> dict[str, float]:
    """A candidate row's validation objectives, keyed like ``MemberManifest.objectives``."""
    point = {"quality": row.quality, "cost_usd": row.cost_usd, "tokens": row.tokens}
    if row.latency_s is not None:
        point["latency_s"] = row.latency_s
    return point


def rank_candidates(rows: Sequence[CandidateRow], senses: Mapping[str, str], constraints: Constraints,
                    reference: Mapping[str, float] | None = None,
                    history: Sequence[HypervolumePoint] | None = None,
                    ) -> tuple[list[CandidateRow], list[str], dict[str, float], list[HypervolumePoint]]:
    """The candidates ranked by their objectives: (rows with ``feasible``, ``on_frontier`` and
    ``dominated_by`` set, the frontier member ids, the hypervolume reference, the hypervolume history).

    ``reference`` defaults to ``default_reference`` over the rows, ``history`` to ``hypervolume_history``
    grouped by iteration. What ``build_frontier_file`` and a repricing (``optimizers.frontier.pricing``) share.
    """
    points = [row_point(r) for r in rows]
    ids = [r.id for r in rows]
    ref = dict(reference) if reference is not None else default_reference(points, senses)
    front = pareto_front(points, senses, constraints)
    on = set(front)
    ranked = [r.model_copy(update={
        "feasible": constraints.feasible(points[i]), "on_frontier": i in on,
        "dominated_by": [] if i in on else [ids[j] for j in front if dominates(points[j], points[i], senses)]})
        for i, r in enumerate(rows)]
    if history is None:
        history = hypervolume_history(points, [r.iteration for r in rows], senses, ref, constraints)
    return ranked, [ids[i] for i in front], ref, list(history)


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
                "seconds": m.objectives.get("latency_s"),
                "test_quality": test.quality if test is not None else None,
                "val_only_win": m.val_only_win,
                "knee": knee is not None and m.member_id == knee.member_id,
                "default": m.default,
                "parent": m.lineage.parent,
                "changed_programs": ", ".join(m.lineage.changed_programs),
                "models": _models_label(m.settings),
            })
        columns = ["member", "quality", "quality_ci_low", "quality_ci_high", "cost_usd", "tokens", "seconds", "test_quality",
                   "val_only_win", "knee", "default", "parent", "changed_programs", "models"]
        df = pd.DataFrame(rows, columns=columns)
        cost = self.cost_objective if self.cost_objective in df.columns else "cost_usd"
        return df.sort_values([cost, "quality"], ascending=[True, False], kind="stable").reset_index(drop=True)

    def select_member(self, max_cost: float | None = None, min_quality: float | None = None,
                      strategy: str = "knee", max_tokens: float | None = None,
                      max_seconds: float | None = None) -> MemberManifest:
        """The member to deploy: filter by the bounds on the validation objectives, then apply ``strategy``.

        ``max_cost`` bounds cost_usd per document, ``max_tokens`` tokens per document (the budget that
        means something when every model is free), ``max_seconds`` the measured wall seconds per document
        (``latency_s``: what a local model costs; a member without it is not eligible), ``min_quality`` quality. Strategies: ``knee``
        (``knee_point`` over the campaign objectives among the remaining members), ``max_quality``
        (ties: lower cost) or ``min_cost`` (lowest ``cost_objective``; ties: higher quality).
        ``InputError`` with the available ranges when no member satisfies the bounds.
        """
        if strategy not in ("knee", "max_quality", "min_cost"):
            raise ConfigError(f"strategy must be knee, max_quality or min_cost, got {strategy!r}")
        if not self.members:
            raise InputError(f"the frontier in {self.directory} has no members")
        cost = self.cost_objective
        pool = [m for m in self.members
                if (max_cost is None or m.objectives["cost_usd"] <= max_cost)
                and (max_tokens is None or m.objectives.get("tokens", float("inf")) <= max_tokens)
                and (max_seconds is None or m.objectives.get("latency_s", float("inf")) <= max_seconds)
                and (min_quality is None or m.objectives["quality"] >= min_quality)]
        if not pool:
            qs = [m.objectives["quality"] for m in self.members]
            cs = [m.objectives["cost_usd"] for m in self.members]
            ts = [m.objectives.get("tokens", 0.0) for m in self.members]
            ss = [m.objectives["latency_s"] for m in self.members if "latency_s" in m.objectives]
            wanted = " and ".join(x for x in (f"cost_usd <= {max_cost:g}" if max_cost is not None else "",
                                                f"tokens <= {max_tokens:g}" if max_tokens is not None else "",
                                                f"seconds <= {max_seconds:g}" if max_seconds is not None else "",
                                                f"quality >= {min_quality:g}" if min_quality is not None else "") if x)
            raise InputError(f"no frontier member of {self.directory} has {wanted}; the frontier spans quality "
                             f"{min(qs):.4g}–{max(qs):.4g}, cost_usd {min(cs):.4g}–{max(cs):.4g} and tokens "
                             f"{min(ts):,.0f}–{max(ts):,.0f} per document"
                             + (f", seconds {min(ss):.3g}–{max(ss):.3g}" if ss else ""))
        if strategy == "max_quality":
            return max(pool, key=lambda m: (m.objectives["quality"], -m.objectives.get(cost, 0.0)))
        if strategy == "min_cost":
            return min(pool, key=lambda m: (m.objectives.get(cost, 0.0), -m.objectives["quality"]))
        return self._knee_of(pool)
