"""Campaigns with the simulated LM: GEPA raises the metric, the frontier and its artifacts, selection,
loading a member for inference, stop file, and a campaign killed mid-run that resumes."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from optimizers.campaign import Campaign, CampaignConfig
from tests.conftest import PROJECT, needs_data
from tests.simulated_lm import PHRASE_EVENTS, SimulatedEngine, simulated_lm_builder

pytestmark = needs_data

VAL_DOC, TEST_DOC = "nysd-1-24-cv-03572", "kyed-5-23-cv-00318"
CAMPAIGN = {
    "name": "simtest",
    "data": {
        "train": {"split": "train", "docs": 1, "chunks_per_doc": 2},
        "val": {"split": "dev", "ids": [VAL_DOC]},
        "test": {"split": "dev", "ids": [TEST_DOC]},
        "max_sentences": 4,
    },
    "pipeline": {"chunking.max_sentences": 12, "merge.max_pairs": 2},
    "metric": {"weights": {"structural": 1.0, "judge": 0.0, "gold": 0.0}},
    "space": {"task_model": ["local/smollm2"], "framenet_hints": [False, True]},
    "models": {"reflection": "local/smollm2"},
    "budget": {"trials": 2, "max_metric_calls": 8, "seconds_per_call": 0.01},
    "reflection_minibatch_size": 2,
    # these tests are about GEPA's candidates; the default candidate (what argus extract runs, here free and
    # better than every chunked one) has its own tests (tests/test_campaign_default.py)
    "default_candidate": False,
}


def _run(tmp_path, **changes):
    cfg = CampaignConfig(**{**CAMPAIGN, **changes})
    builder = simulated_lm_builder(SimulatedEngine())
    result = Campaign(cfg, tmp_path / "run", tmp_path / "compiled", lm_builder=builder).run()
    return result, builder.engine


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("campaign")
    result, engine = _run(tmp)
    return tmp, result, engine


def test_gepa_raises_the_metric_and_the_frontier_is_true(campaign):
    tmp, result, engine = campaign
    assert engine.reflections > 0
    seeds = [e for e in result.evaluations if e.gepa_index == 0]
    evolved = [e for e in result.evaluations if e.gepa_index > 0]
    assert seeds and evolved
    best = max(result.evaluations, key=lambda e: e.quality)
    assert best.quality > max(s.quality for s in seeds)
    assert PHRASE_EVENTS in best.instructions["stage1.extract.predict"]
    assert best.parent_key is not None and "stage1" in best.changed_programs
    # every candidate was deployed on the whole validation document, not on chunk windows
    for e in result.evaluations:
        assert e.doc_ids == [VAL_DOC] and e.n_docs == 1 and e.per_document[VAL_DOC]["calls"] >= 3
        assert {"stage1", "chunker"} <= set(e.stage_costs)
        assert e.tokens == pytest.approx(sum(s["tokens"] for s in e.stage_costs.values()))
    assert {"stage1", "stage2", "chunker", "resolver"} <= set(best.stage_costs)  # the seed finds too few events
    for e in result.evaluations:
        assert e.tokens == pytest.approx(sum(s["tokens"] for s in e.stage_costs.values()))
    # the frontier is exactly the non-dominated set over (quality, tokens): every model is free
    frontier = json.loads((tmp / "compiled" / "simtest" / "frontier.json").read_text())
    assert frontier["objectives"] == {"quality": "max", "tokens": "min"}
    pts = {e.key: (e.quality, e.tokens) for e in result.evaluations}
    nondominated = {k for k, (q, c) in pts.items()
                    if not any((q2 >= q and c2 <= c) and (q2 > q or c2 < c) for q2, c2 in pts.values())}
    assert set(result.frontier) == nondominated
    assert len(result.frontier) >= 2  # the cheap seed and the better, longer evolved prompt
    hv = [h["hypervolume"] for h in result.hypervolume_history]
    assert len(hv) == 2 and hv == sorted(hv) and hv[-1] > 0
    # the reference point is fixed once (from the first trial) and stored with the run
    objectives = json.loads((tmp / "run" / "objectives.json").read_text())
    assert frontier["reference"] == objectives["reference"]
    first = [e.tokens for e in result.evaluations if e.trial == 1]
    assert objectives["reference"] == {"quality": 0.0, "tokens": 2 * max(first)}


def test_optimization_spend_is_booked_apart_from_member_cost(campaign):
    tmp, result, engine = campaign
    spend = json.loads((tmp / "compiled" / "simtest" / "frontier.json").read_text())["optimization_spend"]
    assert {"gepa", "reflection", "val", "test"} <= set(spend["by_phase"]) and set(spend["by_trial"]) == {"1", "2"}
    ledger = [json.loads(line) for line in (tmp / "run" / "ledger.jsonl").read_text().splitlines()]
    assert spend["total"]["calls"] == len(ledger) == result.calls
    assert sum(b["calls"] for b in spend["by_phase"].values()) == len(ledger)
    # a member's cost is its deployment run's ledger, nothing else: the val runs of all candidates add up to the
    # val phase, and no GEPA, reflection or metric call is in any of them
    evals_tokens = sum(e.tokens * e.n_docs for e in result.evaluations)
    assert spend["by_phase"]["val"]["list_tokens"] == pytest.approx(evals_tokens)


def test_compiled_artifacts_are_json_without_secrets(campaign):
    tmp, result, _ = campaign
    root = tmp / "compiled" / "simtest"
    frontier = json.loads((root / "frontier.json").read_text())
    assert frontier["members"] == result.frontier
    for member in result.frontier:
        d = root / member
        manifest = json.loads((d / "manifest.json").read_text())
        json.loads((d / "programs.json").read_text())
        assert set(manifest["splits"]) == {"val", "test"}
        assert manifest["splits"]["test"]["n"] == 1 and manifest["splits"]["test"]["doc_ids"] == [TEST_DOC]
        assert manifest["documents"] == {"val": [f"dev/{VAL_DOC}"], "test": [f"dev/{TEST_DOC}"]}
        assert set(manifest["splits"]["val"]["per_document"][VAL_DOC]) >= {"quality", "tokens", "cost_usd", "calls"}
        assert manifest["settings"]["models"]["stage1"] == "local/smollm2"
        assert set(manifest["settings"]["models"]) >= {"fact_fallback", "chunker", "stage1", "stage2", "resolver"}
        assert manifest["versions"]["dspy"]
        for f in d.iterdir():
            text = f.read_text()
            assert "api_key" not in text and "api_base" not in text
            assert not f.name.endswith((".pkl", ".pickle"))


def test_selection_by_cost_and_quality_and_loading_for_inference(campaign):
    from optimizers.deploy import load_member, member_pipeline
    from optimizers.frontier import Frontier

    tmp, result, _ = campaign
    root = tmp / "compiled" / "simtest"
    fr = Frontier.load(root)
    cheapest = fr.select_member(strategy="min_cost")
    best = fr.select_member(strategy="max_quality")
    assert cheapest.objectives["tokens"] < best.objectives["tokens"]
    assert cheapest.objectives["quality"] < best.objectives["quality"]
    assert fr.select_member(min_quality=best.objectives["quality"]).member_id == best.member_id
    # every model is free: the budget that means something is tokens per document
    assert fr.select_member(max_tokens=cheapest.objectives["tokens"]).member_id == cheapest.member_id
    from argus.errors import InputError

    with pytest.raises(InputError, match="tokens"):
        fr.select_member(max_tokens=cheapest.objectives["tokens"] - 1)
    from typer.testing import CliRunner

    from optimizers.cli import app

    out = CliRunner().invoke(app, ["select", str(root), "--max-tokens", str(cheapest.objectives["tokens"])])
    assert out.exit_code == 0 and out.stdout.startswith(cheapest.member_id)
    pipe, member = member_pipeline(root, strategy="max_quality", overrides={"cache_dir": str(tmp / "c")})
    assert member.member_id == best.member_id
    ready = load_member(root, strategy="min_cost", overrides={"cache_dir": str(tmp / "c")})  # the README's one-liner
    assert ready.member.member_id == cheapest.member_id and hasattr(ready, "extract")
    assert PHRASE_EVENTS in pipe.programs.stage1.extract.predict.signature.instructions
    assert pipe.config.extraction.framenet_hints == bool(best.settings["framenet_hints"])
    assert pipe.config.chunking.max_sentences == CAMPAIGN["pipeline"]["chunking.max_sentences"]


def test_verify_realizes_the_promise_on_the_validation_document(campaign):
    """Deployment with the member's programs.json, as `argus extract --frontier` loads it, costs and
    scores exactly what the campaign promised on the same document."""
    from optimizers.frontier import Frontier
    from optimizers.verify import verify_member

    tmp, result, _ = campaign
    root = tmp / "compiled" / "simtest"
    for member in Frontier.load(root).members:
        report = verify_member(root, split="val", member=member.member_id, overrides={"cache_dir": str(tmp / "v")},
                               lm_builder=simulated_lm_builder(SimulatedEngine()))
        assert report.ok and report.cost_key == "tokens"
        (row,) = report.rows
        assert row["document"] == VAL_DOC
        assert row["realized tokens"] == pytest.approx(row["promised tokens"])
        assert row["realized quality"] == pytest.approx(row["promised quality"])
    # a promise the deployment does not keep (here: a manifest promising 20 % fewer tokens) fails verification
    import shutil

    tampered = tmp / "tampered" / "simtest"
    shutil.copytree(root, tampered)
    member = Frontier.load(tampered).members[0]
    path = tampered / member.member_id / "manifest.json"
    data = json.loads(path.read_text())
    data["splits"]["val"]["per_document"][VAL_DOC]["tokens"] *= 0.8
    path.write_text(json.dumps(data))
    broken = verify_member(tampered, split="val", member=member.member_id, overrides={"cache_dir": str(tmp / "v")},
                           lm_builder=simulated_lm_builder(SimulatedEngine()))
    assert not broken.ok and broken.rows[0]["within"] == "no"
    assert broken.realized > broken.interval[1]


def test_stop_file_ends_the_campaign_cleanly(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "STOP").write_text("")
    result, engine = _run(tmp_path)
    assert "stop file" in result.stopped
    assert engine.calls == []


CHILD = """
import sys
sys.path.insert(0, {project!r})
from optimizers.campaign import Campaign, CampaignConfig
from tests.simulated_lm import SimulatedEngine, simulated_lm_builder
import threading, time
engine = SimulatedEngine()
orig = engine.complete
lock = threading.Lock()
def slow(request):
    time.sleep(0.05)
    with lock:
        return orig(request)
engine.complete = slow
cfg = CampaignConfig(**{cfg!r})
Campaign(cfg, {run!r}, {compiled!r}, lm_builder=simulated_lm_builder(engine)).run()
"""


def _frontier_view(compiled) -> dict:
    """What a user acts on: members, every candidate's scores and lineage, hypervolume, and each member's
    promised figures on val and test."""
    root = compiled / "simtest"
    ff = json.loads((root / "frontier.json").read_text())
    view = {
        "members": ff["members"], "reference": ff["reference"], "hv": ff["hypervolume_history"],
        "candidates": sorted((r["id"], round(r["quality"], 9), r["tokens"], r["on_frontier"], r["iteration"], r["parent"])
                             for r in ff["all_candidates"]),
    }
    for m in ff["members"]:
        man = json.loads((root / m / "manifest.json").read_text())
        view[m] = {split: (round(sc["quality"], 9), sc["tokens"],
                           {d: {k: v for k, v in r.items() if k != "seconds"} for d, r in sc["per_document"].items()})
                   for split, sc in man["splits"].items()}
    return view


@pytest.mark.parametrize("phase", ["gepa", "val", "finalize"])
def test_killed_campaign_resumes_to_the_same_frontier(tmp_path, campaign, phase):
    """SIGKILL while GEPA runs, while candidates are deployed on validation, or while the frontier is
    finalized: the same command resumes, reuses every finished evaluation, and ends with the frontier an
    uninterrupted run gives."""
    run, compiled = tmp_path / "run", tmp_path / "compiled"
    code = CHILD.format(project=str(PROJECT), cfg=CAMPAIGN, run=str(run), compiled=str(compiled))
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=PROJECT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 300
    status = run / "status.json"
    seen = None
    while time.time() < deadline and proc.poll() is None:
        try:
            now = json.loads(status.read_text())
        except (OSError, ValueError):
            now = {}
        seen = now.get("phase")
        if seen == phase and (phase != "val" or now.get("candidate", 0) >= 1):  # val: after a finished evaluation
            break
        time.sleep(0.02)
    assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert seen == phase
    evals = run / "evals"
    before = {p.name: json.loads(p.read_text()) for p in evals.glob("*.json")}
    if phase != "gepa":
        assert before
    computed: list[str] = []

    class Recording(Campaign):
        def _eval(self, key, split, *args, **kwargs):
            if not (self.run_dir / "evals" / f"{split}-{key}.json").exists():
                computed.append(f"{split}-{key}.json")
            return super()._eval(key, split, *args, **kwargs)

    result = Recording(CampaignConfig(**CAMPAIGN), run, compiled, lm_builder=simulated_lm_builder(SimulatedEngine())).run()
    assert not result.stopped and not result.failed
    # every evaluation finished before the kill is reused as it was, none is redone
    assert not set(computed) & set(before)
    fields = ("per_example", "quality", "cost_usd", "tokens", "doc_ids")
    for name, old in before.items():
        new = json.loads((evals / name).read_text())
        assert {f: new[f] for f in fields} == {f: old[f] for f in fields}
    # and the frontier is the one an uninterrupted campaign writes
    base_tmp, _, _ = campaign
    assert _frontier_view(compiled) == _frontier_view(base_tmp / "compiled")
    ledger = (run / "ledger.jsonl").read_text().splitlines()
    assert ledger and all("api_key" not in line for line in ledger)


def test_fact_fallback_and_chunker_join_the_members(tmp_path):
    result, engine = _run(tmp_path, programs=["stage1", "stage2", "fact_fallback", "chunker", "resolver", "qa"],
                          budget={**CAMPAIGN["budget"], "trials": 1})
    root = tmp_path / "compiled" / "simtest"
    aux = {p: json.loads((tmp_path / "run" / "trials").glob(f"*/aux-{p}.json").__next__().read_text())
           for p in ("fact_fallback", "chunker", "resolver", "qa")}
    assert 0 < aux["fact_fallback"]["val"]["quality"] <= 1 and aux["chunker"]["val"]["n"] == 1
    assert len(aux["resolver"]["val"]["per_example"]) == 6 and 0 <= aux["resolver"]["val"]["quality"] <= 1
    for member in result.frontier:
        manifest = json.loads((root / member / "manifest.json").read_text())
        assert set(manifest["settings"]["aux_quality"]) == {"fact_fallback", "chunker", "resolver", "qa"}
        assert "resolver.resolve.predict" in manifest["prompts"] and "qa.answer.predict" in manifest["prompts"]
        assert "fact_fallback.select.predict" in manifest["prompts"] and "chunker.plan.predict" in manifest["prompts"]
        # the member's cost is its deployment runs': the evolved chunker and resolver are in them, QA (not part
        # of extraction) and the auxiliary programs' own evaluations are not
        ev = next(e for e in result.evaluations if e.key == member)
        assert manifest["objectives"]["tokens"] == pytest.approx(ev.tokens)
        assert "qa" not in manifest["stage_costs"] and "chunker" in manifest["stage_costs"]
        for prog in ("chunker", "resolver"):
            name = f"{prog}.{'plan' if prog == 'chunker' else 'resolve'}.predict"
            assert manifest["prompts"][name] == aux[prog]["instructions"][name]
        state = json.loads((root / member / "programs.json").read_text())
        assert "fact_fallback.select.predict" in state and "chunker.plan.predict" in state


def test_models_are_searched_per_stage(tmp_path):
    space = {**CAMPAIGN["space"], "framenet_hints": [False], "stage2_model": ["local/other"],
             "reflection_model": ["local/reflector"]}
    result, engine = _run(tmp_path, space=space, budget={**CAMPAIGN["budget"], "trials": 1})
    root = tmp_path / "compiled" / "simtest"
    manifest = json.loads((root / result.frontier[0] / "manifest.json").read_text())
    assert manifest["settings"]["models"]["stage2"] == "local/other"
    assert manifest["settings"]["models"]["reflection"] == "local/reflector"
    ledger = [json.loads(line) for line in (tmp_path / "run" / "ledger.jsonl").read_text().splitlines()]
    assert {"simulated/local/other", "simulated/local/reflector", "simulated/local/smollm2"} <= {e["model"] for e in ledger}
    from optimizers.deploy import member_overrides

    o = member_overrides(manifest["settings"])
    assert o["lm.stages.stage2.model"] == "local/other" and o["lm.stages.stage1.model"] == "local/smollm2"
    assert o["lm.stages.chunker.model"] == "local/smollm2" and o["chunking.max_sentences"] == 12


def test_report_shows_optimization_spend_apart_from_member_cost(campaign):
    from optimizers.report import write_report

    tmp, result, _ = campaign
    html = write_report(tmp / "compiled" / "simtest").read_text()
    spend = html.split("<h2>Optimization spend</h2>", 1)[1].split("</section>", 1)[0]
    assert "deployment runs on validation documents" in spend and "reflection (GEPA" in spend
    assert "None of it is part of a member" in spend and "trial 2" in spend
    stage = html.split("<h2>Per-stage cost</h2>", 1)[1].split("</section>", 1)[0]
    assert "data:image/png;base64" in stage


def test_frontier_and_report_state_the_outer_search(campaign):
    """Two settings, two trials: both positions enumerated, no sampler draw, and the report says so."""
    from optimizers.report import search_text, write_report

    tmp, _, _ = campaign
    search = json.loads((tmp / "compiled" / "simtest" / "frontier.json").read_text())["search"]
    assert search == {"sampler": "TPESampler", "multivariate": True, "n_startup_trials": 10, "seed": 0,
                      "positions": 2, "planned": 2, "drawn": 0, "random_draws": 0}
    html = write_report(tmp / "compiled" / "simtest").read_text()
    assert search_text(search) in html


def test_spend_book_attributes_each_call_once(tmp_path):
    """Phases own the ledger lines they wrote; judge and reflection calls are their own kinds; calls of a
    phase that never finished (a killed process) show as interrupted; every call counts once."""
    from argus.models.ledger import CostLedger, LedgerEntry
    from optimizers.budget import SpendBook

    def entry(stage, cache=False):
        n = (0, 0) if cache else (10, 5)
        return LedgerEntry(doc_id="d", stage=stage, program="p", model="m", prompt_tokens=n[0], completion_tokens=n[1],
                           cost_usd=0.0, cost_known=True, cache_hit=cache, latency_s=0.0, timestamp="t",
                           cached_prompt_tokens=10 if cache else 0, cached_completion_tokens=5 if cache else 0)

    ledger = CostLedger()
    book = SpendBook(tmp_path, ledger)
    start = book.position()
    ledger.extend([entry("stage1"), entry("optimize")])
    book.record(1, "gepa", start)
    start = book.position()
    ledger.extend([entry("stage1", cache=True), entry("judge")])
    book.record(1, "val", start)
    ledger.add(entry("stage2"))  # its phase was never recorded
    s = SpendBook(tmp_path, ledger).summary(ledger.entries)  # phases are read back from RUN/phases.json
    assert {k: v["calls"] for k, v in s["by_phase"].items()} == {"gepa": 1, "reflection": 1, "val": 1, "metric": 1,
                                                                  "interrupted": 1}
    assert s["total"]["calls"] == 5 and s["total"]["list_tokens"] == 75 and s["total"]["billed_tokens"] == 60
    assert s["by_phase"]["val"] == {"calls": 1, "billed_usd": 0.0, "billed_tokens": 0, "list_usd": 0.0,
                                    "list_tokens": 15, "cache_hits": 1}
    assert set(s["by_trial"]["1"]) == {"gepa", "reflection", "val", "metric"}


def test_the_frontier_chooses_between_designs(tmp_path):
    """space.extraction [chunked, sentence]: one trial per design, each evolving the programs its design
    runs; members record their design and deploy it."""
    from optimizers.deploy import pipeline_for

    result, engine = _run(tmp_path, programs=["stage1", "stage2", "sentence_events"],
                          space={"task_model": ["local/smollm2"], "extraction": ["chunked", "sentence"]},
                          pipeline={**CAMPAIGN["pipeline"], "sentence.llm": "always", "sentence.tau": 1.0})
    designs = {e.settings["extraction"] for e in result.evaluations}
    assert designs == {"chunked", "sentence"}
    for e in result.evaluations:
        allowed = {"stage1", "stage2"} if e.settings["extraction"] == "chunked" else {"sentence_events"}
        assert set(e.changed_programs) <= allowed, (e.settings["extraction"], e.changed_programs)
    sentence_evals = [e for e in result.evaluations if e.settings["extraction"] == "sentence"]
    assert any("sentence" in e.stage_costs for e in sentence_evals)  # its deployment runs called the choice program
    assert all("stage1" not in e.stage_costs for e in sentence_evals)
    root = tmp_path / "compiled" / "simtest"
    for member in result.frontier:
        manifest = json.loads((root / member / "manifest.json").read_text())
        design = manifest["settings"]["extraction"]
        pipe = pipeline_for(manifest["settings"], member_dir=root / member)
        assert pipe.config.extraction.design == design and manifest["settings"]["models"]["sentence"] == "local/smollm2"


def test_repricing_gives_back_the_campaigns_figures_and_verify_follows_new_prices(tmp_path):
    """Every candidate's deployment runs record their input and output tokens per stage and model, and every
    candidate keeps its folder. Priced at the prices the campaign's calls were booked at (the simulated model's
    $1/$2 per million) they give back the campaign's USD figures; at other prices the figures change, and
    `frontier verify` holds a member to the repriced promise, pricing its new run at the same table."""
    from optimizers.frontier import Frontier, reprice_frontier
    from optimizers.verify import verify_member

    models = {"reflection": "local/smollm2", "defaults": {"price_per_mtok": [1.0, 2.0]}}  # a paid model: USD
    _run(tmp_path, models=models, space={**CAMPAIGN["space"], "framenet_hints": [False]},
         budget={**CAMPAIGN["budget"], "trials": 1})
    root = tmp_path / "compiled" / "simtest"
    ff = json.loads((root / "frontier.json").read_text())
    assert ff["objectives"] == {"quality": "max", "cost_usd": "min"} and len(ff["all_candidates"]) >= 2
    model = "simulated/local/smollm2"

    def usd(tokens, pin, pout):
        return sum(t["input"] * pin + t["output"] * pout for by in tokens.values() for t in by.values()) / 1e6

    before = {}
    for row in ff["all_candidates"]:
        manifest = json.loads((root / row["id"] / "manifest.json").read_text())
        assert (root / row["id"] / "programs.json").is_file()
        val = manifest["splits"]["val"]
        for doc, r in val["per_document"].items():
            tokens = val["per_document_tokens"][doc]
            assert {m for by in tokens.values() for m in by} == {model}
            assert sum(t["input"] + t["output"] for by in tokens.values() for t in by.values()) == r["tokens"] > 0
            assert r["cost_usd"] == pytest.approx(usd(tokens, 1.0, 2.0), rel=1e-9)
        assert row["model_tokens"] == manifest["model_tokens"] and set(manifest["model_tokens"]) == set(
            manifest["stage_costs"])
        before[row["id"]] = row["cost_usd"]

    same = tmp_path / "same.yaml"
    same.write_text(f"usd_per_million_tokens:\n  {model}: {{input: 1.0, output: 2.0}}\n")
    result = reprice_frontier(root, same)
    assert result.members_after == ff["members"]
    assert {r["candidate"]: r["cost_usd now"] for r in result.rows} == pytest.approx(before, rel=1e-9)

    dearer = tmp_path / "dearer.yaml"
    dearer.write_text(f"usd_per_million_tokens:\n  {model}: {{input: 4.0, output: 0.5}}\n")
    reprice_frontier(root, dearer)
    for member in Frontier.load(root).members:
        expected = usd(member.splits["val"].per_document_tokens[VAL_DOC], 4.0, 0.5)
        assert member.objectives["cost_usd"] == pytest.approx(expected) != before[member.member_id]
        report = verify_member(root, split="val", member=member.member_id, overrides={"cache_dir": str(tmp_path / "v")},
                               lm_builder=simulated_lm_builder(SimulatedEngine()))
        assert report.ok and report.cost_key == "cost_usd"
        (row,) = report.rows
        assert row["promised cost_usd"] == pytest.approx(expected)
        assert row["realized cost_usd"] == pytest.approx(expected)
