"""DSPy's response cache keeping litellm's answers as plain data (``argus.models.response_cache``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import dspy
import pytest
from dspy.clients.cache import Cache
from dspy.clients.legacy_outputs import plain

import argus.models.lm  # noqa: F401  (litellm's bundled price table, before litellm is imported)
from argus.models.response_cache import (
    PLAIN_RESPONSE,
    PlainResponseCache,
    from_plain,
    to_plain,
)
from tests.latency_server import LatencyServer

PROJECT = Path(__file__).resolve().parent.parent


def _litellm_response():
    from litellm import ModelResponse

    return ModelResponse(
        id="chatcmpl-1", model="openai/latency-server",
        choices=[{"index": 0, "finish_reason": "stop",
                  "message": {"role": "assistant", "content": '{"fact_ids": ["S1"]}',
                              "reasoning_content": "S1 states a fact.",
                              "tool_calls": [{"id": "call_1", "type": "function",
                                              "function": {"name": "lookup", "arguments": '{"q": "S1"}'}}]}}],
        usage={"prompt_tokens": 120, "completion_tokens": 9, "total_tokens": 129},
    )


def test_a_litellm_answer_is_stored_as_plain_data_and_read_back_as_dspy_reads_it(tmp_path):
    original = _litellm_response()
    record = to_plain(original)
    assert record["_argus_format"] == PLAIN_RESPONSE
    json.dumps(record)  # builtins only
    cache = PlainResponseCache(True, False, str(tmp_path / "c"), disk_size_limit_bytes=1 << 30)
    request = {"model": "openai/latency-server", "messages": [{"role": "user", "content": "hi"}]}
    cache.put(request, original)
    stored = cache.disk_cache.get(cache.cache_key(request))
    assert stored == record  # on disk: the tagged dict, not the litellm object
    got = cache.get(request)
    assert got.cache_hit is True and got.usage == {} and got["usage"] == {}
    assert got.model == original.model and got.choices[0].message.content == original.choices[0].message.content
    lm = dspy.LM("openai/latency-server", engine="litellm")
    outputs = lm._process_completion(got, {})
    assert plain(outputs) == plain(lm._process_completion(original, {}))
    assert outputs[0]["tool_calls"][0].function.name == "lookup"  # by attribute too, as on litellm's object


def test_other_values_and_entries_written_by_plain_dspy_read_back_unchanged(tmp_path):
    assert to_plain({"_dspy_format": 1, "outputs": ["x"]}) == {"_dspy_format": 1, "outputs": ["x"]}
    assert from_plain({"a": 1}) == {"a": 1}
    request = {"model": "m", "messages": [{"role": "user", "content": "old"}]}
    # an entry of an earlier run: DSPy's own cache pickles the litellm object
    Cache(True, False, str(tmp_path / "c"), disk_size_limit_bytes=1 << 30).put(request, _litellm_response())
    got = PlainResponseCache(True, False, str(tmp_path / "c"), disk_size_limit_bytes=1 << 30).get(request)
    assert type(got).__name__ == "ModelResponse" and got.cache_hit and got.choices[0].message.content


def test_a_cache_hit_through_litellm_books_the_original_tokens_and_cost_from_dspys_record(tmp_path):
    """A call through litellm to a real OpenAI-compatible server, then the same call again: the second is
    a cache hit (the server asked once), booked at 0 with the first call's tokens and provider cost
    (litellm's price of ``gpt-4o-mini``), which DSPy's cache record of the answer kept."""
    from argus.models.ledger import CostLedger, ledger_context
    from argus.models.lm import MeteredLM

    old_cache = dspy.cache
    dspy.cache = cache = PlainResponseCache(True, False, str(tmp_path / "c"), disk_size_limit_bytes=1 << 30)
    ledger = CostLedger()
    try:
        with LatencyServer(latency_s=0.0) as server:
            lm = MeteredLM("openai/gpt-4o-mini", engine="litellm", api_base=server.url, api_key="sk-test", cache=True)
            with ledger_context(ledger, stage="s"):
                answers = [lm(messages=[{"role": "user", "content": "Name one fact."}]) for _ in range(2)]
            requests = len(server.stats().requests)
    finally:
        dspy.cache = old_cache
    assert requests == 1 and answers[0] == answers[1] and answers[0][0]
    live, hit = ledger.entries
    assert not live.cache_hit and live.cost_known and live.prompt_tokens > 0 and live.cost_usd > 0
    assert hit.cache_hit and hit.cost_known and hit.cost_usd == 0 and hit.prompt_tokens == hit.completion_tokens == 0
    assert (hit.cached_prompt_tokens, hit.cached_completion_tokens) == (live.prompt_tokens, live.completion_tokens)
    assert hit.cached_cost_usd == pytest.approx(live.cost_usd) and hit.list_cost_usd == pytest.approx(live.cost_usd)
    # where it came from: the one record DSPy's cache keeps of the answer
    (key,) = list(cache.disk_cache)
    record = cache.disk_cache.get(key)
    assert record["_argus_format"] == PLAIN_RESPONSE and record["cost"] == pytest.approx(live.cost_usd)
    assert record["response"]["usage"]["prompt_tokens"] == live.prompt_tokens


_ASK = """
import json, sys
from argus.pipeline import configure_cache
from argus.models.lm import MeteredLM
from argus.models.ledger import CostLedger, ledger_context
configure_cache(sys.argv[1])
lm = MeteredLM("openai/latency-server", engine="litellm", api_base=sys.argv[2], api_key="sk-test", cache=True,
               price_per_mtok=(0.0, 0.0))
ledger = CostLedger()
with ledger_context(ledger, stage="s"):
    answer = lm(messages=[{"role": "user", "content": "Name one fact."}])
(entry,) = ledger.entries
print(json.dumps({"answer": answer, "litellm": "litellm" in sys.modules, "entry": entry.model_dump()}))
"""


def test_a_cached_answer_is_served_in_a_later_process_without_importing_litellm(tmp_path):
    """The first process asks a real OpenAI-compatible server through litellm; a second one, with the
    same cache folder, gets the same answer from the cache, the server not asked again, and litellm
    never imported."""
    env = {**os.environ, "PYTHONPATH": str(PROJECT), "HF_HUB_OFFLINE": "1"}
    with LatencyServer(latency_s=0.0) as server:
        runs = []
        for _ in range(2):
            res = subprocess.run([sys.executable, "-W", "ignore", "-c", _ASK, str(tmp_path / "cache"), server.url],
                                 cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
            assert res.returncode == 0, res.stderr[-3000:]
            runs.append(json.loads(res.stdout.strip().splitlines()[-1]))
        requests = len(server.stats().requests)
    first, second = runs
    assert first["litellm"] and not second["litellm"]
    assert second["answer"] == first["answer"] and first["answer"][0]
    assert requests == 1
    # the later process books the hit at the first call's tokens, read from the cache's record
    live, hit = first["entry"], second["entry"]
    assert not live["cache_hit"] and hit["cache_hit"] and hit["cost_known"] and live["prompt_tokens"] > 0
    assert (hit["cached_prompt_tokens"], hit["cached_completion_tokens"]) == (live["prompt_tokens"], live["completion_tokens"])
