"""`argus frontier reprice`: USD recomputed from recorded tokens at another price table reorders the frontier;
selection (`frontier select`, `--frontier --max-cost`) follows; old figures kept; clear errors."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from argus.cli import app
from argus.errors import ConfigError, InputError
from optimizers.frontier import (
    Frontier,
    Lineage,
    MemberManifest,
    ModelPrice,
    SplitScores,
    build_frontier_file,
    price_table,
    reprice_frontier,
    usd_of,
    write_frontier,
    write_member,
)

QC = {"quality": "max", "cost_usd": "min"}
# the campaign's day: mid is dearer than big and worse, so big dominates it
PRICES_A = {"acme/small": (1.0, 2.0), "acme/mid": (20.0, 40.0), "acme/large": (10.0, 20.0)}
# mid's provider cut its price tenfold: mid now sits between small and big
PRICES_B = {**PRICES_A, "acme/mid": (2.0, 4.0)}
CANDIDATES = {  # id: (quality, Stage 1 model, iteration)
    "small": (0.60, "acme/small", 1),
    "mid": (0.70, "acme/mid", 1),
    "big": (0.80, "acme/large", 2),
}
DOC_SCALE = {"doc-a": 0.5, "doc-b": 1.5}  # two documents around the mean


def _tokens(model: str, scale: float = 1.0) -> dict:
    """Stage 1 on ``model`` and the fact gate's fallback on the free local engine."""
    return {"stage1": {model: {"input": 1000.0 * scale, "output": 100.0 * scale}},
            "fact_fallback": {"local/smollm2": {"input": 500.0 * scale, "output": 10.0 * scale}}}


def _prices(table: dict) -> dict[str, ModelPrice]:
    return {m: ModelPrice(input=i, output=o) for m, (i, o) in table.items()}


def write_price_file(path, table: dict):
    lines = ["usd_per_million_tokens:"] + [f"  {m}: {{input: {i}, output: {o}}}" for m, (i, o) in table.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def _candidate(mid: str, prices: dict[str, ModelPrice]) -> MemberManifest:
    quality, model, iteration = CANDIDATES[mid]
    per_tokens = {doc: _tokens(model, s) for doc, s in DOC_SCALE.items()}
    per_document = {doc: {"quality": quality, "cost_usd": usd_of(t, prices), "tokens": 1610.0 * DOC_SCALE[doc],
                          "calls": 3.0} for doc, t in per_tokens.items()}
    mean_cost = sum(r["cost_usd"] for r in per_document.values()) / len(per_document)
    val = SplitScores(n=2, quality=quality, cost_usd=mean_cost, tokens=1610.0, per_document=per_document,
                      per_document_tokens=per_tokens, doc_ids=list(DOC_SCALE))
    mean = _tokens(model)
    return MemberManifest(
        campaign="camp", member_id=mid, objectives={"quality": quality, "cost_usd": mean_cost, "tokens": 1610.0},
        splits={"val": val}, lineage=Lineage(iteration=iteration, origin="seed" if mid == "small" else "gepa"),
        settings={"task_model": model, "models": {"stage1": model}},
        stage_costs={stage: {"usd": usd_of({stage: t}, prices), "calls": 1.0,
                             "tokens": sum(v for by_model in t.values() for v in by_model.values())}
                     for stage, t in mean.items()},
        model_tokens=mean, dataset_hash="d0", metric_hash="m0")


@pytest.fixture()
def campaign_dir(tmp_path):
    """A compiled campaign as a campaign writes it: every candidate's folder, the frontier at prices A."""
    from optimizers.deploy import programs_with

    programs = tmp_path / "programs.json"
    programs_with(None, 1).save(str(programs))
    candidates = [_candidate(mid, _prices(PRICES_A)) for mid in CANDIDATES]
    root = tmp_path / "compiled" / "camp"
    ff = build_frontier_file("camp", candidates, QC)
    for c in candidates:
        write_member(root, c, programs_source=programs)
    write_frontier(root, ff)
    return root


def _member_ids(root) -> list[str]:
    return json.loads((root / "frontier.json").read_text())["members"]


def test_a_price_change_reorders_the_frontier_and_the_selection(campaign_dir, tmp_path):
    root = campaign_dir
    assert _member_ids(root) == ["small", "big"]  # mid (0.70 at $0.024) is dominated by big (0.80 at $0.012)
    assert Frontier.load(root).select_member(max_cost=0.005, strategy="max_quality").member_id == "small"
    before = json.loads((root / "frontier.json").read_text())

    result = reprice_frontier(root, write_price_file(tmp_path / "b.yaml", PRICES_B))

    assert result.members_before == ["small", "big"] and result.members_after == ["small", "mid", "big"]
    assert result.joined == ["mid"] and result.left == []
    fr = Frontier.load(root)
    mid = fr.member("mid")
    # Stage 1 at $2/$4 per million (1000 in, 100 out) and the local fallback at 0
    assert mid.objectives["cost_usd"] == pytest.approx((1000 * 2 + 100 * 4) / 1e6)
    assert mid.splits["val"].per_document["doc-b"]["cost_usd"] == pytest.approx(1.5 * (1000 * 2 + 100 * 4) / 1e6)
    assert mid.stage_costs["stage1"]["usd"] == pytest.approx(0.0024) and mid.stage_costs["fact_fallback"]["usd"] == 0
    lo, hi = mid.splits["val"].cost_usd_ci
    assert lo < 0.0024 < hi
    # the selection under a budget changes with the prices: what `frontier select` and `extract --frontier` use
    assert fr.select_member(max_cost=0.005, strategy="max_quality").member_id == "mid"
    from optimizers.deploy import member_pipeline

    pipe, chosen = member_pipeline(root, max_cost=0.005, strategy="max_quality",
                                   overrides={"cache_dir": str(tmp_path / "cache")})
    assert chosen.member_id == "mid" and pipe.config.lm.for_stage("stage1").model == "acme/mid"

    after = json.loads((root / "frontier.json").read_text())
    assert after["pricing"]["source"] == f"file {tmp_path / 'b.yaml'}"
    assert after["pricing"]["prices"]["acme/mid"] == {"input": 2.0, "output": 4.0}
    assert after["pricing"]["prices"]["local/smollm2"] == {"input": 0.0, "output": 0.0}  # local models cost 0
    (earlier,) = after["pricing_history"]
    assert earlier["pricing"] is None and earlier["members"] == ["small", "big"]
    assert earlier["cost_usd"]["mid"] == pytest.approx(0.024) and earlier["updated"] == before["updated"]
    rows = {r["id"]: r for r in after["all_candidates"]}
    assert rows["mid"]["on_frontier"] and rows["mid"]["cost_usd"] == pytest.approx(0.0024)
    assert not rows["mid"]["dominated_by"]
    assert after["reference"]["cost_usd"] == pytest.approx(2 * 0.0024)  # twice the first iteration's dearest

    # back at the campaign's prices: mid leaves again, and both earlier pricings are on record
    again = reprice_frontier(root, write_price_file(tmp_path / "a.yaml", PRICES_A))
    assert again.left == ["mid"] and _member_ids(root) == ["small", "big"]
    history = json.loads((root / "frontier.json").read_text())["pricing_history"]
    assert [h["pricing"] and h["pricing"]["source"] for h in history] == [None, f"file {tmp_path / 'b.yaml'}"]
    assert history[1]["cost_usd"]["mid"] == pytest.approx(0.0024)
    assert Frontier.load(root).select_member(max_cost=0.005, strategy="max_quality").member_id == "small"
    assert not Frontier.load(root).file.all_candidates[1].on_frontier


def test_reprice_through_the_cli_changes_what_select_picks(campaign_dir, tmp_path):
    root = campaign_dir
    runner = CliRunner()
    select = ["frontier", "select", str(root), "--max-cost", "0.005", "--strategy", "max_quality"]
    assert runner.invoke(app, select).stdout.startswith("small\t")

    res = runner.invoke(app, ["frontier", "reprice", str(root), "--prices",
                              str(write_price_file(tmp_path / "b.yaml", PRICES_B))])
    assert res.exit_code == 0, res.output
    assert "joined: mid" in res.stdout and "acme/mid $2/$4" in res.stdout
    out = runner.invoke(app, select)
    assert out.exit_code == 0 and out.stdout.startswith("mid\t")
    shown = runner.invoke(app, ["frontier", "show", str(root)])
    assert f"USD at file {tmp_path / 'b.yaml'}" in shown.stdout

    res = runner.invoke(app, ["frontier", "reprice", str(root), "--prices",
                              str(write_price_file(tmp_path / "a.yaml", PRICES_A))])
    assert res.exit_code == 0 and "left: mid" in res.stdout
    assert runner.invoke(app, select).stdout.startswith("small\t")


def test_litellm_prices_by_default(tmp_path):
    """Without --prices, litellm's model-cost map prices the models (the copy bundled with litellm)."""
    import litellm

    from optimizers.deploy import programs_with

    programs = tmp_path / "programs.json"
    programs_with(None, 1).save(str(programs))
    model = "openai/gpt-4o-mini"
    c = _candidate("small", _prices({"acme/small": (0.0, 0.0)}))
    c = c.model_copy(update={"model_tokens": _tokens(model), "splits": {"val": c.splits["val"].model_copy(update={
        "per_document_tokens": {d: _tokens(model, s) for d, s in DOC_SCALE.items()}})}})
    root = tmp_path / "camp"
    write_member(root, c, programs_source=programs)
    write_frontier(root, build_frontier_file("camp", [c], QC))

    res = CliRunner().invoke(app, ["frontier", "reprice", str(root)])

    assert res.exit_code == 0, res.output
    pin, pout = litellm.cost_per_token(model=model, prompt_tokens=1000, completion_tokens=100)
    assert pin + pout > 0
    member = Frontier.load(root).member("small")
    assert member.objectives["cost_usd"] == pytest.approx(pin + pout)
    pricing = Frontier.load(root).file.pricing
    assert pricing.source.startswith("litellm model_cost (litellm ") and set(pricing.prices) == {model, "local/smollm2"}


@pytest.mark.parametrize("model, usd", [
    ("gemini/gemini-2.5-pro", (1.25, 10.0)),  # tiered: base 1.25, over 200k prompt tokens 2.50
    ("openai/gpt-4o-mini", (0.15, 0.60)),  # one tier: as before
])
def test_litellm_prices_are_the_base_tier(model, usd):
    """Tokens are stored per document, not per call, so a price is the base tier's, never the long-prompt tier
    a million-token prompt would land in."""
    import litellm

    from optimizers.frontier.pricing import litellm_price

    info = litellm.get_model_info(model)
    assert (info["input_cost_per_token"] * 1e6, info["output_cost_per_token"] * 1e6) == pytest.approx(usd)
    price = litellm_price(model)
    assert price is not None and (price.input, price.output) == pytest.approx(usd)


def test_a_model_the_prices_do_not_cover_is_a_clear_error(campaign_dir, tmp_path):
    before = (campaign_dir / "frontier.json").read_text()
    partial = write_price_file(tmp_path / "partial.yaml", {"acme/small": (1.0, 2.0)})
    with pytest.raises(ConfigError, match=r"has no price for acme/large, acme/mid"):
        reprice_frontier(campaign_dir, partial)
    res = CliRunner().invoke(app, ["frontier", "reprice", str(campaign_dir), "--prices", str(partial)])
    assert res.exit_code == 2 and "acme/large" in res.output and "partial.yaml" in res.output
    # litellm's map does not know these models either
    with pytest.raises(ConfigError, match=r"litellm's model-cost map .* has no price for acme/large"):
        reprice_frontier(campaign_dir)
    assert (campaign_dir / "frontier.json").read_text() == before  # nothing written


@pytest.mark.parametrize("text, says", [
    ("usd_per_million_tokens:\n  acme/small: {input: -1, output: 2}\n", "acme/small.input"),
    ("usd_per_million_tokens:\n  acme/small: {input: 1}\n", "acme/small.output"),
    ("prices:\n  acme/small: {input: 1, output: 2}\n", "usd_per_million_tokens"),
    ("usd_per_million_tokens: [unclosed\n", "not valid YAML"),
])
def test_a_bad_price_file_is_rejected_with_its_place(campaign_dir, tmp_path, text, says):
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    with pytest.raises(ConfigError, match="bad.yaml") as err:
        price_table(["acme/small"], bad)
    assert says in str(err.value)


def test_manifests_without_tokens_are_named(campaign_dir):
    """A frontier written before tokens per stage and model were recorded cannot be repriced: the error
    names the file and the missing record, and nothing is written."""
    path = campaign_dir / "mid" / "manifest.json"
    data = json.loads(path.read_text())
    data["model_tokens"] = None
    path.write_text(json.dumps(data))
    before = (campaign_dir / "frontier.json").read_text()
    with pytest.raises(InputError, match=r"mid/manifest.json: no model_tokens .*rerun the campaign"):
        reprice_frontier(campaign_dir)
    data = json.loads(path.read_text())
    data["model_tokens"] = {"stage1": {"acme/mid": {"input": 1.0, "output": 1.0}}}
    data["splits"]["val"]["per_document_tokens"] = None
    path.write_text(json.dumps(data))
    res = CliRunner().invoke(app, ["frontier", "reprice", str(campaign_dir)])
    assert res.exit_code == 2 and "splits.val.per_document_tokens" in res.output
    assert (campaign_dir / "frontier.json").read_text() == before


def test_a_candidate_without_a_manifest_cannot_join(campaign_dir, tmp_path):
    """A row that records its tokens is repriced; if the new prices would make it a member but the campaign kept
    no manifest for it, nothing is written."""
    import shutil

    shutil.rmtree(campaign_dir / "mid")
    before = (campaign_dir / "frontier.json").read_text()
    with pytest.raises(InputError, match=r"mid would join the frontier .*mid/manifest.json"):
        reprice_frontier(campaign_dir, write_price_file(tmp_path / "b.yaml", PRICES_B))
    assert (campaign_dir / "frontier.json").read_text() == before
    # at prices that keep it dominated, its row is repriced from the tokens the row records
    reprice_frontier(campaign_dir, write_price_file(tmp_path / "c.yaml", {**PRICES_A, "acme/mid": (30.0, 60.0)}))
    rows = {r.id: r for r in Frontier.load(campaign_dir).file.all_candidates}
    assert rows["mid"].cost_usd == pytest.approx((1000 * 30 + 100 * 60) / 1e6) and not rows["mid"].on_frontier


def test_extract_frontier_max_cost_deploys_the_repriced_choice(campaign_dir, tmp_path):
    """`argus extract --frontier DIR --max-cost` selects on the repriced figures (the run itself is cut short:
    its only input is missing, so no model is called)."""
    reprice_frontier(campaign_dir, write_price_file(tmp_path / "b.yaml", PRICES_B))
    res = CliRunner().invoke(app, ["extract", str(tmp_path / "missing.txt"), "--frontier", str(campaign_dir),
                                   "--max-cost", "0.005", "--strategy", "max_quality", "--out", str(tmp_path / "o"),
                                   "--cache-dir", str(tmp_path / "cache")])
    assert res.exit_code == 1, res.output  # the missing input fails; the member was chosen and built
    assert "frontier member mid:" in res.output and "$0.002400 per document" in res.output
