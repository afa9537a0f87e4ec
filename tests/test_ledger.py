"""The cost ledger and the metered LM."""

from __future__ import annotations

import dspy
import pytest

from argus.ledger import CostLedger, LedgerEntry, ledger_context, record_lm_call
from tests.scripted_lm import ScriptedEngine, scripted_lm


class Echo(dspy.Signature):
    """Pick facts."""

    sentences: str = dspy.InputField()
    feedback: str = dspy.InputField()
    fact_ids: list[str] = dspy.OutputField()


def test_calls_are_attributed_to_the_innermost_context_and_totals_add_up():
    ledger = CostLedger()
    lm = scripted_lm()
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        with ledger_context(ledger, doc_id="d1", stage="fact_fallback", program="FactFallback"):
            dspy.Predict(Echo)(sentences="[S1] Acme hired Jo.", feedback="")
            with ledger_context(stage="stage1", program="Stage1"):
                dspy.Predict(Echo)(sentences="[S2] Acme fired Jo.", feedback="")
    assert [(e.doc_id, e.stage, e.program) for e in ledger.entries] == [
        ("d1", "fact_fallback", "FactFallback"), ("d1", "stage1", "Stage1")]
    for e in ledger.entries:
        assert e.prompt_tokens > 0 and e.completion_tokens > 0
        assert e.cost_usd == pytest.approx((e.prompt_tokens * 1.0 + e.completion_tokens * 2.0) / 1e6)
        assert not e.cache_hit and e.latency_s >= 0
    t = ledger.totals()
    assert t.calls == 2
    assert t.tokens == sum(e.prompt_tokens + e.completion_tokens for e in ledger.entries)
    assert t.cost_usd == pytest.approx(sum(e.cost_usd for e in ledger.entries))
    by = ledger.totals_by("stage")
    assert set(by) == {"fact_fallback", "stage1"} and sum(v.calls for v in by.values()) == 2


def test_cache_hits_cost_nothing(tmp_path):
    dspy.configure_cache(enable_disk_cache=True, enable_memory_cache=False, disk_cache_dir=str(tmp_path / "c"))
    engine = ScriptedEngine()
    from argus.lm import MeteredLM

    lm = MeteredLM("scripted/cached", engine=engine, cache=True, structured_output="none", price_per_mtok=(1.0, 1.0))
    ledger = CostLedger()
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()), ledger_context(ledger, stage="s"):
        dspy.Predict(Echo)(sentences="[S1] same input", feedback="")
        dspy.Predict(Echo)(sentences="[S1] same input", feedback="")
    assert len(engine.calls) == 1
    first, second = ledger.entries
    assert not first.cache_hit and first.cost_usd > 0
    assert second.cache_hit and second.cost_usd == 0 and second.prompt_tokens == 0
    # the cached answer remembers what the original call cost, so cost per document is cache-independent
    assert (second.cached_prompt_tokens, second.cached_completion_tokens) == (first.prompt_tokens, first.completion_tokens)
    assert second.cached_cost_usd == first.cost_usd and second.list_cost_usd == first.list_cost_usd
    assert second.list_tokens == first.list_tokens > 0


def test_no_context_records_nothing_and_jsonl_roundtrip(tmp_path):
    assert record_lm_call(model="m", prompt_tokens=1, completion_tokens=1, cost_usd=0.1, cost_known=True,
                          cache_hit=False, latency_s=0.1) is None
    path = tmp_path / "ledger.jsonl"
    ledger = CostLedger(path=path)
    with ledger_context(ledger, doc_id="a", stage="x", program="p"):
        record_lm_call(model="m", prompt_tokens=3, completion_tokens=4, cost_usd=0.5, cost_known=True,
                       cache_hit=False, latency_s=0.2)
    again = CostLedger.from_jsonl(path)
    assert again.entries == ledger.entries and isinstance(again.entries[0], LedgerEntry)
    assert "api_key" not in path.read_text()
