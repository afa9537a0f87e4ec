"""Every campaign's frontier starts from what `argus extract` runs: the default candidate (issue 38).

A sentence-design campaign whose model is an oracle on the choices (``tests.oracle_lm``): the default (the
heads deciding alone, as `argus extract` runs offline) is free; the trial's candidates send every sentence to
the model, better and dearer. The frontier holds both, the default marked, and each deploys at its promise."""

from __future__ import annotations

import json

import pytest

from optimizers.campaign import Campaign, CampaignConfig
from tests.conftest import needs_data
from tests.oracle_lm import oracle_lm_builder
from tests.test_campaign import CAMPAIGN, TEST_DOC, VAL_DOC

pytestmark = needs_data

SENTENCE_CAMPAIGN = {
    **CAMPAIGN,
    "name": "defaulttest",
    "default_candidate": True,
    "programs": ["sentence_events"],
    "space": {"task_model": ["local/smollm2"], "extraction": ["sentence"]},
    "pipeline": {"sentence.llm": "always", "sentence.tau": 1.0},
    "metric": {"weights": {"structural": 0.5, "judge": 0.0, "gold": 0.5}},
    "budget": {"trials": 1, "max_metric_calls": 2, "seconds_per_call": 0.01},
}


def golds():
    from optimizers.examples import document_examples

    return [e.gold_path for e in document_examples("dev", ids=[VAL_DOC, TEST_DOC])]


def run_campaign(tmp, campaign: dict):
    cfg = CampaignConfig(**campaign)
    builder = oracle_lm_builder(golds())
    return Campaign(cfg, tmp / "run", tmp / "compiled", lm_builder=builder).run()


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("default")
    return tmp, run_campaign(tmp, SENTENCE_CAMPAIGN)


def test_the_default_is_a_free_member_marked_as_the_default(campaign):
    from optimizers.deploy import pipeline_for
    from optimizers.frontier import Frontier

    tmp, result = campaign
    root = tmp / "compiled" / "defaulttest"
    fr = Frontier.load(root)
    defaults = [m for m in fr.members if m.default]
    assert len(defaults) == 1
    (free,) = defaults
    assert free.objectives["tokens"] == 0 and free.lineage.origin == "default" and free.lineage.iteration == 0
    assert free.settings["default"] is True and "pipeline" not in free.settings  # none of the campaign's overrides
    assert set(free.splits) == {"val", "test"} and free.splits["val"].doc_ids == [VAL_DOC]
    # what it deploys is what argus extract runs offline: the sentence design, the heads deciding alone
    pipe = pipeline_for(free.settings, member_dir=root / free.member_id)
    assert pipe.config.extraction.design in (None, "sentence") and pipe.config.sentence.llm == "measured"
    from argus.designs.sentence.design import routing

    assert routing(pipe)[0] == "never"
    # the frontier file, `frontier show` and every row mark it
    data = json.loads((root / "frontier.json").read_text())
    assert [r["id"] for r in data["all_candidates"] if r["default"]] == [free.member_id]
    assert data["hypervolume_history"][0]["iteration"] == 0
    from typer.testing import CliRunner

    from argus.cli import app

    out = CliRunner().invoke(app, ["frontier", "show", str(root)])
    assert out.exit_code == 0, out.output
    assert "default" in out.output
    assert fr.table().set_index("member").loc[free.member_id, "default"]


def test_a_better_model_gives_a_paid_member_that_verifies_at_its_promise(campaign):
    from optimizers.frontier import Frontier
    from optimizers.verify import verify_member

    tmp, result = campaign
    root = tmp / "compiled" / "defaulttest"
    fr = Frontier.load(root)
    free = next(m for m in fr.members if m.default)
    paid = [m for m in fr.members if not m.default]
    assert paid and all(m.objectives["tokens"] > 0 for m in paid)
    assert all(m.objectives["quality"] > free.objectives["quality"] for m in paid)
    for member in [free, *paid]:
        report = verify_member(root, split="val", member=member.member_id, overrides={"cache_dir": str(tmp / "v")},
                               lm_builder=oracle_lm_builder(golds()))
        assert report.ok, report.rows
        (row,) = report.rows
        assert row["realized tokens"] == pytest.approx(row["promised tokens"])
        assert row["realized quality"] == pytest.approx(row["promised quality"])
    # the cheapest member is the default, at 0 tokens
    assert fr.select_member(strategy="min_cost").member_id == free.member_id
    assert fr.select_member(max_tokens=0).member_id == free.member_id


def test_routing_thresholds_are_searched_recorded_and_deployed(tmp_path):
    """space: {sentence.tau: [0.5, 1.0]}: one trial per τ; each candidate records its τ, deploys it (over the
    campaign's pipeline τ) and `frontier verify --all` holds for the members."""
    from typer.testing import CliRunner

    from argus.cli import app
    from optimizers.deploy import pipeline_for
    from optimizers.frontier import Frontier, MemberManifest

    campaign = {**SENTENCE_CAMPAIGN, "name": "tautest", "budget": {**SENTENCE_CAMPAIGN["budget"], "trials": 2},
                "space": {**SENTENCE_CAMPAIGN["space"], "sentence.tau": [0.5, 1.0]}}
    cfg = CampaignConfig(**campaign)
    assert cfg.space.choices("sentence.tau") == [0.5, 1.0]
    result = run_campaign(tmp_path, campaign)
    root = tmp_path / "compiled" / "tautest"
    trials = [e for e in result.evaluations if not e.default]
    assert {e.settings["sentence.tau"] for e in trials} == {0.5, 1.0}
    assert len({round(e.quality, 6) for e in trials}) == 2  # routing more sentences to the (better) model changed them
    for e in trials:
        manifest = MemberManifest.model_validate_json((root / e.key / "manifest.json").read_text())
        assert manifest.settings["sentence.tau"] == e.settings["sentence.tau"]
        pipe = pipeline_for(manifest.settings, member_dir=root / e.key)
        assert pipe.config.sentence.tau == e.settings["sentence.tau"] and pipe.config.sentence.llm == "always"
    assert Frontier.load(root).members
    import optimizers.verify as verify

    real = verify.verify_member

    def with_oracle(*args, **kwargs):
        return real(*args, **{**kwargs, "lm_builder": oracle_lm_builder(golds()),
                              "overrides": {"cache_dir": str(tmp_path / "v")}})

    verify.verify_member = with_oracle
    try:
        out = CliRunner().invoke(app, ["frontier", "verify", str(root), "--all", "--split", "val", "--tolerance", "0.10"])
    finally:
        verify.verify_member = real
    assert out.exit_code == 0, out.output


def test_seconds_as_an_objective_and_max_seconds_selects_by_them(tmp_path):
    """objectives: [quality, tokens, seconds]: members record measured wall seconds per document with the machine
    and threads; the non-dominated set is 3-D; `extract --frontier --max-seconds` selects by them."""
    from typer.testing import CliRunner

    from argus.cli import app
    from optimizers.frontier import Frontier, pareto_front

    campaign = {**SENTENCE_CAMPAIGN, "name": "secondstest", "objectives": ["quality", "tokens", "seconds"]}
    result = run_campaign(tmp_path, campaign)
    root = tmp_path / "compiled" / "secondstest"
    fr = Frontier.load(root)
    assert fr.file.objectives == {"quality": "max", "tokens": "min", "latency_s": "min"}
    assert set(fr.file.reference) == {"quality", "tokens", "latency_s"}
    points = [{"quality": e.quality, "tokens": e.tokens, "latency_s": e.latency_s} for e in result.evaluations]
    assert set(fr.file.members) == {result.evaluations[i].key for i in pareto_front(points, fr.file.objectives)}
    for m in fr.members:
        val = m.splits["val"]
        assert val.latency_s == pytest.approx(m.objectives["latency_s"]) and val.latency_s > 0
        assert val.latency_s == pytest.approx(val.per_document[VAL_DOC]["seconds"], abs=1e-3)
        assert val.machine["cpus"] >= 1 and val.machine["host"]
        assert val.num_threads == CampaignConfig(**campaign).concurrency.num_threads
    assert "seconds" in fr.table().columns
    fastest = min(fr.members, key=lambda m: m.objectives["latency_s"])
    bound = fastest.objectives["latency_s"]
    assert fr.select_member(max_seconds=bound).objectives["latency_s"] <= bound
    from argus.errors import InputError

    with pytest.raises(InputError, match="seconds"):
        fr.select_member(max_seconds=bound / 2)
    # the command line: a bound no member meets is refused before anything runs
    doc = tmp_path / "complaint.txt"
    doc.write_text("Plaintiff was hired in 2020.\n")
    out = CliRunner().invoke(app, ["extract", "--frontier", str(root), "--max-seconds", str(bound / 2), str(doc),
                                   "--out", str(tmp_path / "out")])
    assert out.exit_code != 0 and "seconds" in out.output
    # frontier reprice keeps working with a third objective
    prices = tmp_path / "prices.yaml"
    prices.write_text("usd_per_million_tokens: {simulated/local/smollm2: {input: 1.0, output: 2.0}}\n")
    out = CliRunner().invoke(app, ["frontier", "reprice", str(root), "--prices", str(prices)])
    assert out.exit_code == 0, out.output
    assert Frontier.load(root).file.objectives == fr.file.objectives
