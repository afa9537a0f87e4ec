"""The cost ledger and the metered LM."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging

import dspy
import pytest
from dspy.lm15 import Usage

from argus.io import read_jsonl
from argus.models.ledger import CostLedger, LedgerEntry, ledger_context, record_lm_call
from argus.models.lm import MeteredLM
from argus.models.response_cache import PlainResponseCache
from tests.scripted_lm import ScriptedEngine, scripted_lm


def _disk_cache(directory) -> PlainResponseCache:
    """argus's response cache on ``directory``, disk tier only (as a new process finds it)."""
    return PlainResponseCache(True, False, str(directory), disk_size_limit_bytes=1 << 30)


@pytest.fixture()
def fresh_caches(tmp_path):
    """argus's response cache of the test's own (DSPy's cache, disk only: no memory layer), restored
    afterwards."""
    old_cache = dspy.cache
    dspy.cache = _disk_cache(tmp_path / "c")
    yield tmp_path
    dspy.cache = old_cache


class NoUsageEngine(ScriptedEngine):
    """Answers like the scripted engine but reports no usage (as some servers do)."""

    def complete(self, request):
        return dataclasses.replace(super().complete(request), usage=Usage())


class Echo(dspy.Signature):
    """Pick facts."""

    sentences: str = dspy.InputField()
    feedback: str = dspy.InputField()
    fact_ids: list[str] = dspy.OutputField()


def _ask(lm, ledger: CostLedger, text: str, times: int = 1) -> None:
    """Run the ``Echo`` program on ``text`` ``times`` times with ``lm``, booking into ``ledger``."""
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()), ledger_context(ledger, stage="s"):
        for _ in range(times):
            dspy.Predict(Echo)(sentences=text, feedback="")


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


def _ask_twice_cached(engine, model: str, text: str) -> tuple[LedgerEntry, LedgerEntry]:
    """The two ledger entries of asking ``text`` twice through a caching LM on ``engine``: one
    engine call, then a cache hit."""
    lm = MeteredLM(model, engine=engine, cache=True, structured_output="none", price_per_mtok=(1.0, 1.0))
    ledger = CostLedger()
    _ask(lm, ledger, text, times=2)
    assert len(engine.calls) == 1
    first, second = ledger.entries
    return first, second


def test_cache_hits_cost_nothing(fresh_caches):
    first, second = _ask_twice_cached(ScriptedEngine(), "scripted/cached", "[S1] same input")
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


def test_a_live_answer_without_usage_is_not_a_cache_hit_and_its_cost_is_unknown(fresh_caches):
    live, hit = _ask_twice_cached(NoUsageEngine(), "scripted/nousage", "[S1] no usage")
    assert not live.cache_hit and not live.cost_known
    assert (live.prompt_tokens, live.completion_tokens, live.cost_usd) == (0, 0, 0.0)
    # the hit is a hit, but what its original call cost was never known
    assert hit.cache_hit and not hit.cost_known and hit.cost_usd == 0 and hit.list_tokens == 0


def test_a_cache_hit_keeps_its_list_price_in_a_later_process(fresh_caches):
    first_engine = ScriptedEngine()
    settings = dict(cache=True, structured_output="none", price_per_mtok=(1.0, 3.0))
    ledger = CostLedger()
    _ask(MeteredLM("scripted/persist", engine=first_engine, **settings), ledger, "[S1] kept across runs")
    # a new process: the cache reopened from disk (nothing in memory), a new LM
    dspy.cache = _disk_cache(fresh_caches / "c")
    second_engine = ScriptedEngine()
    _ask(MeteredLM("scripted/persist", engine=second_engine, **settings), ledger, "[S1] kept across runs")
    assert len(first_engine.calls) == 1 and not second_engine.calls
    first, second = ledger.entries
    assert second.cache_hit and second.cost_known and second.cost_usd == 0
    assert (second.cached_prompt_tokens, second.cached_completion_tokens) == (first.prompt_tokens, first.completion_tokens)
    assert first.cost_usd > 0 and second.cached_cost_usd == pytest.approx(first.cost_usd)
    # the usage came from DSPy's own record of the answer: no other store or key is involved
    (key,) = list(dspy.cache.disk_cache)
    record = dspy.cache.disk_cache.get(key)
    assert record["_dspy_format"] and record["usage"]["prompt_tokens"] == first.prompt_tokens
    assert sorted(p.name for p in fresh_caches.iterdir()) == ["c"]


def test_async_calls_write_one_entry_each_and_see_cache_hits(fresh_caches):
    engine = ScriptedEngine()
    lm = scripted_lm(engine, model="scripted/async", cache=True)
    ledger = CostLedger()

    async def run():
        with ledger_context(ledger, stage="s"):
            for _ in range(2):
                await lm.acall("[S1] async")

    asyncio.run(run())
    assert len(engine.calls) == 1
    live, hit = ledger.entries
    assert not live.cache_hit and live.cost_known and live.cost_usd > 0
    assert hit.cache_hit and hit.cost_known and hit.cached_cost_usd == pytest.approx(live.cost_usd)


def test_a_users_track_usage_still_sees_the_usage_of_metered_calls(fresh_caches):
    engine = ScriptedEngine()
    lm = scripted_lm(engine, model="scripted/tracked", cache=True)
    ledger = CostLedger()
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()), ledger_context(ledger, stage="s"), \
            dspy.track_usage() as tracker:
        dspy.Predict(Echo)(sentences="[S1] tracked", feedback="")
        dspy.Predict(Echo)(sentences="[S1] tracked", feedback="")  # a cache hit: no usage, as DSPy does it
    live, hit = ledger.entries
    assert not live.cache_hit and hit.cache_hit
    totals = tracker.get_total_tokens()["scripted/tracked"]
    assert (totals["prompt_tokens"], totals["completion_tokens"]) == (live.prompt_tokens, live.completion_tokens)


def test_a_torn_last_line_is_skipped_and_the_next_entry_starts_a_new_line(tmp_path, caplog):
    path = tmp_path / "ledger.jsonl"
    ledger = CostLedger(path=path)
    with ledger_context(ledger, doc_id="a", stage="x", program="p"):
        for _ in range(2):
            record_lm_call(model="m", prompt_tokens=3, completion_tokens=4, cost_usd=0.5, cost_known=True,
                           cache_hit=False, latency_s=0.2)
    whole = path.read_bytes()
    path.write_bytes(whole + whole.splitlines(keepends=True)[0][:37])  # a third append, killed mid-line
    with caplog.at_level(logging.WARNING, logger="argus"):
        again = CostLedger.from_jsonl(path)
    assert again.entries == ledger.entries
    warnings = [r.getMessage() for r in caplog.records if r.name == "argus"]
    assert len(warnings) == 1 and str(path) in warnings[0] and "1 unreadable line" in warnings[0]
    # the next append does not glue itself to the torn line
    with ledger_context(CostLedger(path=path), doc_id="b", stage="x", program="p"):
        record_lm_call(model="m", prompt_tokens=1, completion_tokens=1, cost_usd=0.1, cost_known=True,
                       cache_hit=False, latency_s=0.1)
    assert path.read_bytes().endswith(b"}\n")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="argus"):
        after = CostLedger.from_jsonl(path)
        rows = read_jsonl(path)
    assert [e.doc_id for e in after.entries] == ["a", "a", "b"]
    assert [r["doc_id"] for r in rows] == ["a", "a", "b"] and all(isinstance(r, dict) for r in rows)
    assert len([r for r in caplog.records if r.name == "argus"]) == 2  # once per read, one torn line each
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 4 and json.loads(lines[-1])["doc_id"] == "b"


def test_concurrent_appenders_never_interleave_within_a_line(tmp_path):
    import threading

    path = tmp_path / "ledger.jsonl"
    ledgers = [CostLedger(path=path) for _ in range(4)]  # separate locks: only O_APPEND keeps lines whole

    def work(ledger, n):
        with ledger_context(ledger, doc_id=f"d{n}", stage="x" * 2000, program="p"):
            for _ in range(50):
                record_lm_call(model="m", prompt_tokens=1, completion_tokens=1, cost_usd=0.1, cost_known=True,
                               cache_hit=False, latency_s=0.1)

    threads = [threading.Thread(target=work, args=(ledger, n)) for n, ledger in enumerate(ledgers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(CostLedger.from_jsonl(path).entries) == 200


def test_calls_are_booked_with_dspy_history_off(fresh_caches):
    ledger = CostLedger()
    with dspy.context(lm=scripted_lm(), adapter=dspy.JSONAdapter(), disable_history=True), ledger_context(ledger, stage="s"):
        dspy.Predict(Echo)(sentences="[S1] no history", feedback="")
    (entry,) = ledger.entries
    assert not entry.cache_hit and entry.cost_known and entry.cost_usd > 0


def test_a_cache_hit_is_booked_at_its_original_usage_with_dspy_history_off(fresh_caches):
    engine = ScriptedEngine()
    lm = MeteredLM("scripted/nohistory", engine=engine, cache=True, structured_output="none", price_per_mtok=(1.0, 2.0))
    ledger = CostLedger()
    with dspy.context(disable_history=True):
        _ask(lm, ledger, "[S1] no history, cached", times=2)
    assert len(engine.calls) == 1 and not lm.history
    live, hit = ledger.entries
    assert hit.cache_hit and hit.cost_known and hit.cost_usd == 0 and hit.prompt_tokens == 0
    assert (hit.cached_prompt_tokens, hit.cached_completion_tokens) == (live.prompt_tokens, live.completion_tokens)
    assert live.cost_usd > 0 and hit.cached_cost_usd == pytest.approx(live.cost_usd)


def test_a_cache_hit_under_dspys_plain_cache_is_a_hit_of_unknown_cost(tmp_path):
    """DSPy's own ``Cache`` clears usage on a hit and tells nobody: still a hit, at an unknown cost."""
    old_cache = dspy.cache
    dspy.configure_cache(enable_disk_cache=True, enable_memory_cache=False, disk_cache_dir=str(tmp_path / "c"))
    try:
        live, hit = _ask_twice_cached(ScriptedEngine(), "scripted/plaincache", "[S1] plain DSPy cache")
    finally:
        dspy.cache = old_cache
    assert not live.cache_hit and live.cost_known
    assert hit.cache_hit and not hit.cost_known and hit.cost_usd == 0 and hit.list_tokens == 0
