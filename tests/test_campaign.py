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

CAMPAIGN = {
    "name": "simtest",
    "data": {
        "train": {"split": "train", "docs": 1, "chunks_per_doc": 2},
        "val": {"split": "dev", "docs": 1, "chunks_per_doc": 2},
        "test": {"split": "dev", "docs": 1, "doc_offset": 1, "chunks_per_doc": 2},
        "max_sentences": 4,
    },
    "metric": {"weights": {"structural": 1.0, "judge": 0.0, "gold": 0.0}},
    "space": {"task_model": ["local/smollm2"], "framenet_hints": [False, True]},
    "models": {"reflection": "local/smollm2"},
    "budget": {"trials": 2, "max_metric_calls": 8, "seconds_per_call": 0.01},
    "reflection_minibatch_size": 2,
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
    # the frontier is exactly the non-dominated set of all evaluated candidates
    pts = {e.key: (e.quality, e.cost_usd) for e in result.evaluations}
    nondominated = {k for k, (q, c) in pts.items()
                    if not any((q2 >= q and c2 <= c) and (q2 > q or c2 < c) for q2, c2 in pts.values())}
    assert set(result.frontier) == nondominated
    assert len(result.frontier) >= 2  # the cheap seed and the better, longer evolved prompt
    hv = [h["hypervolume"] for h in result.hypervolume_history]
    assert len(hv) == 2 and hv == sorted(hv) and hv[-1] > 0


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
        assert manifest["splits"]["test"]["n"] == 2
        assert manifest["versions"]["dspy"]
        for f in d.iterdir():
            text = f.read_text()
            assert "api_key" not in text and "api_base" not in text
            assert not f.name.endswith((".pkl", ".pickle"))


def test_selection_by_cost_and_quality_and_loading_for_inference(campaign):
    from optimizers.deploy import member_pipeline
    from optimizers.frontier import Frontier

    tmp, result, _ = campaign
    root = tmp / "compiled" / "simtest"
    fr = Frontier.load(root)
    cheapest = fr.select_member(strategy="min_cost")
    best = fr.select_member(strategy="max_quality")
    assert cheapest.objectives["cost_usd"] < best.objectives["cost_usd"]
    assert cheapest.objectives["quality"] < best.objectives["quality"]
    assert fr.select_member(max_cost=cheapest.objectives["cost_usd"]).member_id == cheapest.member_id
    assert fr.select_member(min_quality=best.objectives["quality"]).member_id == best.member_id
    pipe, member = member_pipeline(root, strategy="max_quality", overrides={"cache_dir": str(tmp / "c")})
    assert member.member_id == best.member_id
    ready = fr.select(strategy="min_cost", overrides={"cache_dir": str(tmp / "c")})  # the README's one-liner
    assert ready.member.member_id == cheapest.member_id and hasattr(ready, "extract")
    assert PHRASE_EVENTS in pipe.programs.stage1.extract.predict.signature.instructions
    assert pipe.config.extraction.framenet_hints == bool(best.settings["framenet_hints"])


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
import time
engine = SimulatedEngine()
orig = engine.complete
def slow(request):
    time.sleep(0.05)
    return orig(request)
engine.complete = slow
cfg = CampaignConfig(**{cfg!r})
Campaign(cfg, {run!r}, {compiled!r}, lm_builder=simulated_lm_builder(engine)).run()
"""


def test_killed_campaign_resumes_without_redoing_finished_work(tmp_path):
    run, compiled = tmp_path / "run", tmp_path / "compiled"
    code = CHILD.format(project=str(PROJECT), cfg=CAMPAIGN, run=str(run), compiled=str(compiled))
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=PROJECT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 240
    evals = run / "evals"
    while time.time() < deadline and proc.poll() is None:
        if evals.exists() and any(evals.glob("val-*.json")) and (run / "trials").exists():
            break
        time.sleep(0.2)
    assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = {p.name: json.loads(p.read_text()) for p in evals.glob("*.json")}
    assert before
    computed: list[str] = []

    class Recording(Campaign):
        def _eval(self, key, split, *args, **kwargs):
            if not (self.run_dir / "evals" / f"{split}-{key}.json").exists():
                computed.append(f"{split}-{key}.json")
            return super()._eval(key, split, *args, **kwargs)

    builder = simulated_lm_builder(SimulatedEngine())
    result = Recording(CampaignConfig(**CAMPAIGN), run, compiled, lm_builder=builder).run()
    # every evaluation finished before the kill is reused as it was, none is redone
    assert not set(computed) & set(before)
    fields = ("per_example", "quality", "cost_usd", "tokens")
    for name, old in before.items():
        new = json.loads((evals / name).read_text())
        assert {f: new[f] for f in fields} == {f: old[f] for f in fields}
    assert computed  # and the work that was not finished is done now
    assert len(result.hypervolume_history) >= 1 and result.frontier
    assert not result.stopped
    ledger = [json.loads(line) for line in (run / "ledger.jsonl").read_text().splitlines()]
    assert ledger and all("api_key" not in json.dumps(e) for e in ledger)


def test_fact_fallback_and_chunker_join_the_members(tmp_path):
    result, engine = _run(tmp_path, programs=["stage1", "stage2", "fact_fallback", "chunker", "resolver", "qa"],
                          budget={**CAMPAIGN["budget"], "trials": 1})
    root = tmp_path / "compiled" / "simtest"
    aux = {p: json.loads((tmp_path / "run" / "trials").glob(f"*/aux-{p}.json").__next__().read_text())
           for p in ("fact_fallback", "chunker", "resolver", "qa")}
    assert 0 < aux["fact_fallback"]["val"]["quality"] <= 1 and aux["chunker"]["val"]["n_docs"] == 1
    assert len(aux["resolver"]["val"]["per_example"]) == 6 and 0 <= aux["resolver"]["val"]["quality"] <= 1
    for member in result.frontier:
        manifest = json.loads((root / member / "manifest.json").read_text())
        assert set(manifest["settings"]["aux_quality"]) == {"fact_fallback", "chunker", "resolver", "qa"}
        assert {"fact_fallback", "chunker", "resolver", "qa"} <= set(manifest["stage_costs"])
        assert "resolver.resolve.predict" in manifest["prompts"] and "qa.answer.predict" in manifest["prompts"]
        assert "fact_fallback.select.predict" in manifest["prompts"] and "chunker.plan.predict" in manifest["prompts"]
        ev = next(e for e in result.evaluations if e.key == member)
        extra = sum(aux[p]["val"]["tokens"] for p in aux)
        assert manifest["objectives"]["tokens"] == pytest.approx(ev.tokens + extra)
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
