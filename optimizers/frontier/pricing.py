"""Prices of the models a campaign's candidates ran, and repricing a frontier (``argus frontier reprice``).

Prices change; tokens do not. A campaign books every call at the list price of its day (litellm's
model-cost map, or a model's ``price_per_mtok``), so a frontier's USD figures are frozen at those
prices. Every deployment run also records its input and output tokens per stage and model
(``MemberManifest.model_tokens``, ``SplitScores.per_document_tokens``, ``CandidateRow.model_tokens``);
:func:`reprice_frontier` prices them again at today's prices, rebuilds the non-dominated set and writes
the campaign directory with a ``pricing`` record, keeping the earlier figures in ``pricing_history``.

Prices come from litellm's model-cost map (its base tier, ``litellm.get_model_info``, the map bundled with the
installed litellm) or from a YAML file (``--prices FILE``, :class:`PriceFile`)::

    usd_per_million_tokens:
      openai/gpt-4o-mini: {input: 0.15, output: 0.60}
      anthropic/claude-3-5-haiku-20241022: {input: 0.80, output: 4.00}

The keys are the model strings the ledger records (a stage's ``model``). ``local/`` models cost 0 unless
the file names them; any other model the candidates ran that the source cannot price is an error.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from argus.errors import ConfigError, InputError
from optimizers.frontier.model import (
    FRONTIER_FILE,
    MANIFEST_FILE,
    CandidateRow,
    FrontierFile,
    MemberManifest,
    ModelPrice,
    Pricing,
    PricingHistoryEntry,
    SplitScores,
    StageModelTokens,
)

LOCAL_PREFIX = "local/"


class PriceFile(BaseModel):
    """A ``--prices`` file: USD per million input and output tokens of each model."""

    model_config = ConfigDict(extra="forbid")

    usd_per_million_tokens: dict[str, ModelPrice] = Field(
        description="model string (as the ledger records it) -> {input: USD, output: USD} per million tokens")


def load_price_file(path: str | Path) -> dict[str, ModelPrice]:
    """The prices a ``--prices`` YAML file holds; ``ConfigError`` naming the file and the bad entry."""
    from argus.config import read_yaml_mapping

    data = read_yaml_mapping(path, "price file")
    try:
        return PriceFile.model_validate(data).usd_per_million_tokens
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first.get("loc", ())) or "(top level)"
        raise ConfigError(f"price file {path}: {where}: {first.get('msg')} (expected usd_per_million_tokens: "
                          "{MODEL: {input: USD, output: USD}} per million tokens)") from exc


def litellm_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("litellm")
    except metadata.PackageNotFoundError:  # pragma: no cover - litellm is a dependency
        return "unknown"


def litellm_price(model: str) -> ModelPrice | None:
    """A model's price in litellm's model-cost map (the copy bundled with litellm), or None if it has none.

    The base tier's (``input_cost_per_token``, ``output_cost_per_token``): the tokens are stored per document,
    not per call, so a call's prompt size, which picks a tier such as Gemini's over-200k-tokens price, is not
    known; asking ``litellm.cost_per_token`` for a million prompt tokens would land in that dearer tier."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download at import (as argus.models.lm)
    import litellm

    try:
        info = litellm.get_model_info(model)
    except Exception:  # noqa: BLE001 - litellm raises when its map does not know the model
        return None
    pin, pout = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    if pin is None or pout is None:  # priced otherwise (per character, second, …): not from tokens
        return None
    return ModelPrice(input=float(pin) * 1e6, output=float(pout) * 1e6)


def price_table(models: Iterable[str], prices_file: str | Path | None = None) -> Pricing:
    """The prices of ``models``: from ``prices_file`` when given, else litellm's model-cost map.

    ``local/`` models the source does not price cost 0; any other model it cannot price is a
    ``ConfigError`` naming every such model."""
    models = sorted(set(models))
    known = load_price_file(prices_file) if prices_file is not None else None
    prices: dict[str, ModelPrice] = {}
    missing = []
    for model in models:
        price = known.get(model) if known is not None else litellm_price(model)
        if price is None and model.startswith(LOCAL_PREFIX):
            price = ModelPrice(input=0.0, output=0.0)
        if price is None:
            missing.append(model)
        else:
            prices[model] = price
    if missing:
        where = (f"the price file {prices_file} has no price for" if prices_file is not None else
                 f"litellm's model-cost map (litellm {litellm_version()}) has no price for")
        raise ConfigError(f"{where} {', '.join(missing)}, which the candidates ran; give "
                          f"usd_per_million_tokens: {{{missing[0]}: {{input: ..., output: ...}}}} in a --prices file")
    source = f"file {prices_file}" if prices_file is not None else f"litellm model_cost (litellm {litellm_version()})"
    return Pricing(source=source, prices=prices)


def models_of(tokens: StageModelTokens) -> set[str]:
    """The models in ``{stage: {model: ...}}`` tokens."""
    return {model for by_model in tokens.values() for model in by_model}


def usd_of(tokens: StageModelTokens, prices: Mapping[str, ModelPrice]) -> float:
    """USD of ``{stage: {model: {"input", "output"}}}`` tokens at ``prices`` (per million tokens). A
    ``local/`` model without a price costs 0; another model without one is a ``ConfigError``."""
    parts = []
    for by_model in tokens.values():
        for model, t in by_model.items():
            price = prices.get(model)
            if price is None:
                if model.startswith(LOCAL_PREFIX):
                    continue
                raise ConfigError(f"no price for model {model} (priced: {', '.join(sorted(prices)) or 'none'}); "
                                  "reprice the frontier with a table that has it (argus frontier reprice --prices)")
            parts += [t.get("input", 0.0) * price.input / 1e6, t.get("output", 0.0) * price.output / 1e6]
    return math.fsum(parts)


# --------------------------------------------------------------------------------------------
# Repricing a campaign directory
# --------------------------------------------------------------------------------------------


@dataclass
class RepriceResult:
    """What ``reprice_frontier`` did: the prices, the members before and after, each candidate's USD."""

    directory: Path
    pricing: Pricing
    members_before: list[str]
    members_after: list[str]
    rows: list[dict] = field(default_factory=list)  #: id, quality, USD before and after, on the frontier

    @property
    def joined(self) -> list[str]:
        return [m for m in self.members_after if m not in self.members_before]

    @property
    def left(self) -> list[str]:
        return [m for m in self.members_before if m not in self.members_after]

    def table(self):
        import pandas as pd

        return pd.DataFrame(self.rows, columns=["candidate", "quality", "cost_usd before", "cost_usd now", "member"])


_NOT_RECORDED = ("it was written before argus recorded input and output tokens per stage and model, so its USD "
                 "cannot be recomputed; rerun the campaign with this version of argus to reprice it")


def _require_tokens(path: Path, manifest: MemberManifest) -> None:
    """``InputError`` naming the manifest and the field when its tokens per stage and model are missing."""
    if manifest.model_tokens is None:
        raise InputError(f"{path}: no model_tokens (input/output tokens per stage and model); {_NOT_RECORDED}")
    for split, scores in manifest.splits.items():
        if scores.per_document and (scores.per_document_tokens is None
                                    or set(scores.per_document) - set(scores.per_document_tokens)):
            raise InputError(f"{path}: no splits.{split}.per_document_tokens (input/output tokens per document, stage "
                             f"and model); {_NOT_RECORDED}")


def _manifest_models(manifest: MemberManifest) -> set[str]:
    found = models_of(manifest.model_tokens or {})
    for scores in manifest.splits.values():
        for tokens in (scores.per_document_tokens or {}).values():
            found |= models_of(tokens)
    return found


def _reprice_split(scores: SplitScores, prices: Mapping[str, ModelPrice]) -> SplitScores:
    from optimizers.frontier.pareto import bootstrap_ci

    if not scores.per_document:
        return scores
    tokens = scores.per_document_tokens or {}
    per_document = {doc: {**row, "cost_usd": usd_of(tokens[doc], prices)} for doc, row in scores.per_document.items()}
    costs = [row["cost_usd"] for row in per_document.values()]
    return scores.model_copy(update={"per_document": per_document, "cost_usd": math.fsum(costs) / len(costs),
                                     "cost_usd_ci": bootstrap_ci(costs) if len(costs) >= 2 else None})


def reprice_manifest(manifest: MemberManifest, prices: Mapping[str, ModelPrice]) -> MemberManifest:
    """``manifest`` with every USD figure recomputed from its tokens at ``prices``: each split's per-document
    costs, mean and interval, the stage costs, and the ``cost_usd`` objective (the validation mean)."""
    splits = {name: _reprice_split(s, prices) for name, s in manifest.splits.items()}
    tokens = manifest.model_tokens or {}
    stage_costs = {stage: {**c, "usd": usd_of({stage: tokens.get(stage, {})}, prices)}
                   for stage, c in manifest.stage_costs.items()}
    val = splits.get("val")
    cost = val.cost_usd if val is not None and val.per_document else usd_of(tokens, prices)
    return manifest.model_copy(update={"splits": splits, "stage_costs": stage_costs,
                                       "objectives": {**manifest.objectives, "cost_usd": cost}})


def _reference(file: FrontierFile, rows: list[CandidateRow]) -> dict[str, float]:
    """The hypervolume reference at the new prices, fixed as a campaign fixes it: ``max_cost_per_doc`` when set,
    else twice the largest USD of the first iteration's candidates (1.0 when that is 0). Unchanged when the
    campaign's cost objective is not USD."""
    ref = dict(file.reference)
    if "cost_usd" not in file.objectives:
        return ref
    if file.constraints.max_cost_per_doc is not None:
        ref["cost_usd"] = float(file.constraints.max_cost_per_doc)
        return ref
    first = min(r.iteration for r in rows)
    top = max(r.cost_usd for r in rows if r.iteration == first)
    ref["cost_usd"] = 2 * top if top > 0 else 1.0
    return ref


def reprice_frontier(directory: str | Path, prices_file: str | Path | None = None) -> RepriceResult:
    """Recompute every candidate's USD per document from its recorded tokens at today's prices (litellm's
    model-cost map, or ``prices_file``), rebuild the non-dominated set and write the campaign directory:
    each candidate's ``manifest.json`` and then ``frontier.json`` (atomically), with the ``pricing`` used and
    the earlier figures appended to ``pricing_history``.

    ``InputError`` (before anything is written) names a manifest or row that records no tokens per stage and
    model, or a candidate that would join the frontier but has no manifest; ``ConfigError`` a model the
    prices do not cover."""
    from optimizers.frontier.pareto import flag_val_only_wins
    from optimizers.frontier.store import (
        _read_model,
        rank_candidates,
        write_frontier,
        write_member,
    )

    directory = Path(directory)
    if not directory.is_dir():
        raise InputError(f"campaign directory {directory} not found")
    path = directory / FRONTIER_FILE
    file = _read_model(path, FrontierFile)
    if not file.all_candidates:
        raise InputError(f"{path} lists no candidates to reprice")
    manifests: dict[str, MemberManifest] = {}
    for row in file.all_candidates:
        manifest_path = directory / row.id / MANIFEST_FILE
        if manifest_path.is_file():
            manifest = _read_model(manifest_path, MemberManifest)
            _require_tokens(manifest_path, manifest)
            manifests[row.id] = manifest
        elif row.id in file.members:
            raise InputError(f"{manifest_path} not found (a frontier member's manifest)")
        elif row.model_tokens is None:
            raise InputError(f"{path}: candidate {row.id} has no manifest and its row records no model_tokens "
                             f"(input/output tokens per stage and model); {_NOT_RECORDED}")
    models: set[str] = set()
    for row in file.all_candidates:
        models |= _manifest_models(manifests[row.id]) if row.id in manifests else models_of(row.model_tokens or {})
    pricing = price_table(models, prices_file)

    repriced = {k: reprice_manifest(m, pricing.prices) for k, m in manifests.items()}
    rows = [row.model_copy(update={"cost_usd": repriced[row.id].objectives["cost_usd"] if row.id in repriced
                                   else usd_of(row.model_tokens or {}, pricing.prices)})
            for row in file.all_candidates]
    senses = dict(file.objectives)
    rows, members, reference, history = rank_candidates(rows, senses, file.constraints, _reference(file, rows))
    lacking = [m for m in members if m not in repriced]
    if lacking:
        raise InputError(f"at these prices {', '.join(lacking)} would join the frontier of {directory}, but "
                         f"{' and '.join(str(directory / m / MANIFEST_FILE) for m in lacking)} do(es) not exist "
                         "(the campaign kept no manifest for it); nothing was written")

    flagged = {m.member_id: m for m in flag_val_only_wins([repriced[m] for m in members], senses, file.constraints)}
    for member_id, manifest in repriced.items():
        write_member(directory, flagged.get(member_id) or manifest.model_copy(update={"val_only_win": False}))
    earlier = PricingHistoryEntry(pricing=file.pricing, updated=file.updated, members=list(file.members),
                                  cost_usd={r.id: r.cost_usd for r in file.all_candidates}, reference=file.reference)
    write_frontier(directory, file.model_copy(update={
        "all_candidates": rows, "members": members, "reference": reference, "hypervolume_history": history,
        "pricing": pricing, "pricing_history": [*file.pricing_history, earlier]}))
    before = {r.id: r.cost_usd for r in file.all_candidates}
    return RepriceResult(directory, pricing, list(file.members), members, [
        {"candidate": r.id, "quality": r.quality, "cost_usd before": before[r.id], "cost_usd now": r.cost_usd,
         "member": "yes" if r.on_frontier else ""} for r in rows])
