"""The whole pipeline with a scripted LM on every dev complaint: the output contract."""

from __future__ import annotations

import json


from argus.output.contract import contract_problems
from argus.output.export import load_ekg, to_networkx, write_ekg
from argus.models.ledger import CostLedger
from argus.graph.schema import export_json_schema
from tests.conftest import DEMO, needs_data

SCHEMA = export_json_schema()


def check_contract(ekg, text):
    problems = contract_problems(ekg, text)
    assert not problems, problems


@needs_data
def test_every_dev_complaint_yields_a_valid_grounded_ekg(scripted_pipeline, dev_dirs, tmp_path):
    batch_ledger = CostLedger()
    for d in dev_dirs:
        text = (d / "complaint.txt").read_text(encoding="utf-8")
        ekg = scripted_pipeline.extract(d / "complaint.txt", ledger=batch_ledger)
        assert ekg.doc_id == d.name and ekg.facts_section_found
        assert ekg.graph.events and ekg.graph.temporal_edges and len(ekg.chunks) >= 2
        check_contract(ekg, text)
        # chunks cover every narrative fact sentence, with overlap
        facts = [s.id for s in ekg.sentences if s.in_narrative and s.fact]
        assert {sid for c in ekg.chunks for sid in c.sentence_ids} == set(facts)
        stages = {s.stage for s in ekg.stages}
        assert {"preprocess", "fact_gate", "chunker", "extraction", "merge"} <= stages
        # the per-stage rows add up to the document's ledger, and the calls land in their stage
        totals = ekg.ledger.totals
        assert sum(s.lm_calls for s in ekg.stages) == totals.calls > 0
        assert sum(s.tokens for s in ekg.stages) == totals.tokens > 0
        assert abs(sum(s.cost_usd for s in ekg.stages) - totals.cost_usd) < 1e-6
        row = {s.stage: s for s in ekg.stages}
        by_stage = ekg.ledger.by_stage
        assert row["extraction"].tokens == by_stage["stage1"].tokens + by_stage["stage2"].tokens > 0
        paths = write_ekg(ekg, tmp_path)
        assert load_ekg(paths["json"]) == ekg
        g = to_networkx(ekg)
        assert g.number_of_nodes() == len(ekg.graph.entities) + len(ekg.graph.events)
    assert batch_ledger.totals().calls == sum(1 for _ in batch_ledger.entries) > 0


def test_oneshot_baseline_on_the_demo(scripted_pipeline):
    ekg = scripted_pipeline.extract_oneshot(DEMO)
    assert ekg.method == "oneshot" and ekg.graph.events
    assert {e.relation for e in ekg.graph.temporal_edges} <= {"BEFORE", "SAME_TIME"}
    check_contract(ekg, DEMO.read_text(encoding="utf-8"))
    assert [e.stage for e in ekg.ledger.entries].count("oneshot") == 1


def test_injection_sentence_is_content_not_instruction(scripted_pipeline):
    ekg = scripted_pipeline.extract(DEMO)
    assert any("instructions" in w for w in ekg.warnings)
    injected = next(s for s in ekg.sentences if s.text.startswith("Ignore all previous instructions"))
    assert injected.in_narrative
    # the prompts carry the sentence as labeled data inside the input field, after the instructions
    prompts = [c["inputs"] for c in scripted_pipeline.engine.calls if "chunk" in c["inputs"]]
    assert any(injected.id in p["chunk"] for p in prompts) or not injected.fact
    check_contract(ekg, DEMO.read_text(encoding="utf-8"))


def test_exported_schema_file_is_current():
    from argus.paths import RESOURCES

    committed = json.loads((RESOURCES / "ekg.schema.json").read_text())
    assert committed == SCHEMA, "run: argus schema --out argus/resources/ekg.schema.json"


def test_contract_catches_broken_files(scripted_pipeline, tmp_path):
    from typer.testing import CliRunner

    from argus.cli import app

    ekg = scripted_pipeline.extract(DEMO)
    text = DEMO.read_text(encoding="utf-8")
    bad = ekg.model_copy(deep=True)
    bad.graph.events[0].evidence = ["S999"]
    bad.sentences[0].span = (len(text) + 5, len(text) + 9)
    bad.ledger.totals.calls += 1
    problems = " | ".join(contract_problems(bad, text))
    assert "S999" in problems and "span" in problems and "ledger" in problems
    write_ekg(ekg, tmp_path)
    res = CliRunner().invoke(app, ["validate", str(tmp_path)])
    assert res.exit_code == 0 and "1/1 files satisfy the contract" in res.output
    (tmp_path / "broken.ekg.json").write_text("{}")
    res = CliRunner().invoke(app, ["validate", str(tmp_path)])
    assert res.exit_code == 1 and "FAIL broken.ekg.json" in res.output
