"""The evaluation protocol end to end with scripted LMs: tables, files, ledger, bad inputs."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from argus.runs.batch import run_batch
from argus.cli import app
from argus.config import ArgusConfig
from argus.runs.evaluation import find_gold_documents, run_evaluation
from argus.errors import InputError
from metrics.judge import Judge
from tests.conftest import needs_data
from tests.scripted_lm import ScriptedEngine, scripted_lm

pytestmark = needs_data


@pytest.fixture(scope="module")
def produced(tmp_path_factory, request):
    """Staged and one-shot EKGs of two dev documents, made by the scripted pipeline."""
    from argus.pipeline import ArgusPipeline
    from tests.conftest import _split_dirs

    tmp = tmp_path_factory.mktemp("eval")
    docs = _split_dirs("dev")[:2]
    cfg = ArgusConfig.load(None, {"cache_dir": str(tmp / "cache"), "merge.min_similarity": 0.3,
                                  "extraction.design": "chunked"})
    pipe = ArgusPipeline(cfg)
    lm = scripted_lm(ScriptedEngine())
    for stage in ("fact_fallback", "chunker", "stage1", "stage2", "resolver", "oneshot"):
        pipe._lms[stage] = lm
    for method in ("floor", "staged", "oneshot"):
        run_batch([d / "complaint.txt" for d in docs], tmp / method, method=method, pipeline=pipe, graphml=False)
    return tmp, docs


def _scripted_judges(spec, name, ledger):
    return Judge(lm=scripted_lm(ScriptedEngine(), model=f"scripted/{name}"), name=name, ledger=ledger)


def test_protocol_writes_every_table(produced, tmp_path):
    tmp, docs = produced
    cfg = ArgusConfig.load(None, {"eval.judges": ["judge-a", "judge-b"], "eval.stability_temperature": 0.7})
    out = tmp_path / "eval"
    report = run_evaluation(docs, out, cfg, staged_dir=tmp / "staged", oneshot_dir=tmp / "oneshot",
                            method_dirs={"floor": tmp / "floor"}, run_missing=False, judge_factory=_scripted_judges)
    assert report.errors == []
    t = report.tables
    gm = t["gold_matching"]
    assert set(gm["method"]) == {"floor", "staged", "oneshot"} and len(gm) == 6
    # every method is read against the floor: means with intervals, paired differences, documents at least the floor
    vs = t["vs_floor"].set_index(["method", "metric"])
    ev = vs.loc[("staged", "relaxed_events_f1")]
    mean_staged = gm[gm["method"] == "staged"]["relaxed_events_f1"].mean()
    mean_floor = gm[gm["method"] == "floor"]["relaxed_events_f1"].mean()
    assert abs(ev["mean"] - mean_staged) < 1e-9 and abs(ev["floor_mean"] - mean_floor) < 1e-9
    assert abs(ev["delta"] - (mean_staged - mean_floor)) < 1e-9 and ev["delta_low"] <= ev["delta"] <= ev["delta_high"]
    assert ev["ci_low"] <= ev["mean"] <= ev["ci_high"] and 0 <= ev["at_least_floor"] <= 2 and ev["documents"] == 2
    assert pd.isna(vs.loc[("floor", "relaxed_events_f1")]["delta"])
    for col in ("exact_events_f1", "relaxed_events_f1", "relaxed_temporal_f1", "relaxed_causal_f1", "relaxed_entities_f1"):
        assert gm[col].between(0, 1).all()
    assert {"floor", "staged", "oneshot"} == set(t["gold_summary"]["method"])
    assert t["facts"]["f1"].between(0, 1).all()
    assert set(t["structural"].columns) >= {"schema", "references", "temporal", "causal", "coverage", "duplicates", "structural"}
    assert set(t["judge"]["judge"]) == {"judge-a", "judge-b"} and len(t["judge"]) == 12
    q = t["quality"]
    assert (q["doc_id"] == "MEAN").sum() == 3
    rows = q[q["doc_id"] != "MEAN"]
    assert ((rows["quality"] - (0.5 * rows["structural"] + 0.5 * rows["judge"])).abs() < 1e-9).all()
    models = rows[rows["method"] != "floor"]
    assert (models["tokens"] > 0).all() and (models["cost_usd"] > 0).all()
    assert (rows[rows["method"] == "floor"]["lm_calls"] == 0).all()  # the floor calls no model
    assert len(t["merge"]) == 2 and {"pre_events", "post_events", "pre_entities", "post_entities"} <= set(t["merge"].columns)
    pw = t["pairwise"]
    assert list(pw["dimension"]) == ["event_grounding", "evidence_grounding", "edge_correctness", "overall"]
    assert (pw["n"] == 4).all()  # 2 documents x 2 judges
    # two identical deterministic judges agree perfectly
    assert (pw["agreement"] == 1.0).all()
    st = t["stability"]
    assert set(st["judge"]) == {"judge-a", "judge-b"}
    # files: CSV + Markdown per table, the report, the judges' ledger
    for name in t:
        assert (out / "tables" / f"{name}.csv").exists() and (out / "tables" / f"{name}.md").exists()
    assert pd.read_csv(out / "tables" / "gold_matching.csv").shape == gm.shape
    report_md = (out / "report.md").read_text()
    assert "pairwise preference" in report_md and "Document-level merging" in report_md
    ledger = [json.loads(line) for line in (out / "ledger.jsonl").read_text().splitlines()]
    assert ledger and {e["stage"] for e in ledger} == {"judge"}
    assert {e["program"] for e in ledger} == {"judge", "pairwise_judge"}
    # 2 docs x 2 methods x 2 judges absolute + 2 docs x 2 judges x 2 orders x 2 temperatures pairwise
    assert len(ledger) == 12 + 16


def test_missing_graphs_and_bad_gold_are_reported_not_fatal(produced, tmp_path):
    tmp, docs = produced
    broken = tmp_path / "broken-doc"
    broken.mkdir()
    (broken / "gold.json").write_text("{not json")
    (broken / "complaint.txt").write_text("x")
    report = run_evaluation([*docs, broken], tmp_path / "eval", ArgusConfig(), staged_dir=tmp / "staged",
                            methods=("staged",), run_missing=False, use_judges=False)
    steps = {(e["doc_id"], e["step"]) for e in report.errors}
    assert ("broken-doc", "load gold") in steps
    assert len(report.tables["gold_matching"]) == 2
    assert "pairwise" not in report.tables


def test_gold_self_scores_one_through_the_protocol_api():
    from metrics.gold import load_gold, match_graphs
    from metrics.structural import structural_score
    from tests.conftest import _split_dirs

    for d in _split_dirs("dev"):
        gold = load_gold(d)
        scores = match_graphs(gold, gold, tiers=("exact", "relaxed"))
        for tier in ("exact", "relaxed"):
            ts = scores[tier]
            assert (ts.entities.f1, ts.events.f1, ts.temporal.f1, ts.causal.f1) == (1.0, 1.0, 1.0, 1.0)
        facts = gold.fact_section_ids
        fact_ids = [s.id for s in gold.sentences if s.fact and s.id in set(facts)]
        assert structural_score(gold.graph, allowed_sentences=facts, fact_sentences=fact_ids).score == 1.0


def test_input_errors(tmp_path):
    with pytest.raises(InputError, match="no annotated documents"):
        find_gold_documents([tmp_path])
    with pytest.raises(InputError, match="not an annotated document"):
        find_gold_documents([tmp_path / "nope.txt"])
    res = CliRunner().invoke(app, ["eval", str(tmp_path), "--out", str(tmp_path / "o"), "--no-judge"])
    assert res.exit_code == 2 and "no annotated documents" in res.output


def test_annotate_cli_round_trip(produced, tmp_path):
    import csv

    tmp, _ = produced
    runner = CliRunner()
    res = runner.invoke(app, ["annotate", "export", str(tmp / "staged"), "-o", str(tmp_path / "sheet.csv")])
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader((tmp_path / "sheet.csv").open(encoding="utf-8")))
    assert rows and {"entity", "event"} <= {r["element_kind"] for r in rows}
    for name in ("ann1", "ann2"):
        with (tmp_path / f"{name}.csv").open("w", encoding="utf-8", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows({**r, "annotator": name, "label": "Aligned"} for r in rows)
    res = runner.invoke(app, ["annotate", "report", str(tmp_path / "ann1.csv"), str(tmp_path / "ann2.csv"),
                              "-o", str(tmp_path / "agreement.md")])
    assert res.exit_code == 0, res.output
    assert "Percent Agreement" in res.output and "100.0%" in res.output
    assert (tmp_path / "agreement.md").read_text().startswith("| metric")
