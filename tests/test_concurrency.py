"""Bounded concurrency: ordered fan-out, per-model limits, provider-fault retries, and determinism —
a batch at 8 calls in flight writes the graphs a sequential batch writes from the same answers."""

from __future__ import annotations

import json
import random
import threading
import time
from pathlib import Path

import httpx
import pytest

from argus.runs.batch import run_batch
from argus.models.concurrency import (
    ModelLimiter,
    ProviderFault,
    Slots,
    call_with_retries,
    fault_status,
    parallel_map,
    retry_wait,
    retryable,
)
from argus.config import ArgusConfig
from argus.pipeline import ArgusPipeline
from tests.scripted_lm import ScriptedEngine, scripted_lm

import litellm  # noqa: E402  (after argus.models.lm, which keeps litellm's price table local)

DEMO = Path(__file__).resolve().parent.parent / "datasets" / "demo" / "complaint.txt"


# ----------------------------------------------------------------------------- building blocks


def test_parallel_map_keeps_input_order_whatever_order_items_finish_in():
    def slow_first(x):
        time.sleep(0.05 * (5 - x))
        return x * x

    assert parallel_map(slow_first, range(5), 5) == [0, 1, 4, 9, 16]


def test_parallel_map_raises_the_error_a_sequential_loop_would():
    def fail_on_odd(x):
        time.sleep(0.05 * (6 - x))  # later items fail first
        if x % 2:
            raise ValueError(f"item {x}")
        return x

    with pytest.raises(ValueError, match="item 1"):
        parallel_map(fail_on_odd, range(6), 6)


def test_parallel_map_carries_the_callers_context_into_workers():
    from argus.models.ledger import CostLedger, current_call_context, ledger_context

    ledger = CostLedger()
    with ledger_context(ledger, doc_id="D1", stage="stage1", program="P"):
        seen = parallel_map(lambda _: (current_call_context().doc_id, current_call_context().ledger is ledger), range(4), 4)
    assert seen == [("D1", True)] * 4


def test_slots_bound_what_is_in_flight():
    slots = Slots(3)

    def work(_):
        with slots.hold():
            time.sleep(0.05)

    parallel_map(work, range(12), 12)
    assert slots.peak == 3 and slots.in_flight == 0


def test_model_limiter_holds_requests_per_minute_over_its_window():
    limiter = ModelLimiter(max_in_flight=None, rpm=2, window_s=0.4)
    starts = []

    def call(_):
        with limiter.slot():
            starts.append(time.monotonic())

    t0 = time.monotonic()
    parallel_map(call, range(5), 5)
    starts = sorted(s - t0 for s in starts)
    # 2 per 0.4 s window: the 3rd and 4th wait one window, the 5th two
    assert starts[1] < 0.2 and 0.35 <= starts[2] and 0.35 <= starts[3] and starts[4] >= 0.75


def test_model_limiter_holds_tokens_per_minute():
    limiter = ModelLimiter(tpm=100, window_s=0.3)
    starts = []

    def call(_):
        with limiter.slot(60) as booking:
            starts.append(time.monotonic())
            booking[1] = 60

    t0 = time.monotonic()
    parallel_map(call, range(3), 3)
    gaps = sorted(s - t0 for s in starts)
    assert gaps[0] < 0.1 and gaps[1] >= 0.25 and gaps[2] >= 0.5  # 60 + 60 > 100: one call per window


def _rate_limit_error(retry_after: str | None):
    headers = {"retry-after": retry_after} if retry_after is not None else {}
    response = httpx.Response(429, headers=headers, request=httpx.Request("POST", "http://x/v1/chat/completions"))
    return litellm.RateLimitError("slow down", llm_provider="openai", model="x", response=response)


def test_provider_faults_are_classified_and_waited_for_as_the_provider_says():
    assert retryable(_rate_limit_error("1")) and fault_status(_rate_limit_error(None)) == 429
    assert retryable(litellm.InternalServerError("boom", llm_provider="openai", model="x"))
    assert retryable(litellm.Timeout("slow", model="x", llm_provider="openai"))
    assert not retryable(litellm.BadRequestError("bad", model="x", llm_provider="openai"))
    assert not retryable(ValueError("a defect"))
    assert 3.0 <= retry_wait(_rate_limit_error("3"), 1, 2) <= 3.75  # Retry-After (+ jitter ≤ 0.75 s)
    no_header = [retry_wait(_rate_limit_error(None), k, 3) for k in (1, 2, 3)]
    assert no_header[0] < no_header[2]  # exponential backoff


def test_call_with_retries_gives_up_with_a_provider_fault():
    waits, attempts = [], []

    def call():
        attempts.append(1)
        raise _rate_limit_error("2")

    with pytest.raises(ProviderFault, match="3 time"):
        call_with_retries(call, retries=2, sleep=waits.append)
    assert len(attempts) == 3 and all(2.0 <= w <= 2.75 for w in waits)
    # a defect is not retried
    with pytest.raises(KeyError):
        call_with_retries(lambda: {}["x"], retries=5, sleep=waits.append)


def test_faults_are_classified_by_dspys_taxonomy_whoever_raised_them():
    """DSPy's own errors as raised; litellm's, and a litellm error that DSPy could not classify (a custom
    engine's, wrapped in ``LMUnexpectedError``), as DSPy's litellm engine projects them."""
    from dspy.utils.exceptions import (LMAuthError, LMBillingError, LMInvalidRequestError, LMRateLimitError,
                                       LMServerError, LMTimeoutError, LMUnexpectedError)

    from argus.models.concurrency import credentials_fault, lm_fault

    limited = _rate_limit_error("4")
    fault = lm_fault(limited)
    assert isinstance(fault, LMRateLimitError) and fault.status == 429 and fault.retry_after == 4.0
    try:
        raise LMUnexpectedError("an engine failed") from limited
    except LMUnexpectedError as wrapped:
        assert isinstance(lm_fault(wrapped), LMRateLimitError) and retryable(wrapped) and fault_status(wrapped) == 429
    assert isinstance(lm_fault(litellm.Timeout("slow", model="x", llm_provider="openai")), LMTimeoutError)
    assert isinstance(lm_fault(litellm.ServiceUnavailableError("down", llm_provider="openai", model="x")), LMServerError)
    assert isinstance(lm_fault(litellm.AuthenticationError("no", llm_provider="openai", model="x")), LMAuthError)
    assert isinstance(lm_fault(litellm.BadRequestError("bad", model="x", llm_provider="openai")), LMInvalidRequestError)
    assert lm_fault(ValueError("a defect")) is None and fault_status(ValueError("a defect")) is None
    assert lm_fault(LMUnexpectedError("unclassified")) is None and not retryable(LMUnexpectedError("unclassified"))
    # DSPy's judgment, not the status: a spent quota (429 with OpenAI's code) is not worth repeating
    quota = LMBillingError("insufficient_quota", status=429)
    assert not retryable(quota) and not credentials_fault(quota) and fault_status(quota) == 429
    assert fault_status(LMServerError("overloaded")) == 503 and fault_status(LMTimeoutError("slow")) == 408


@pytest.mark.parametrize("fault", ["rate_limit", "server"])
def test_a_retryable_fault_is_retried_after_its_retry_after(fault):
    """A rate limit (429) or a server error (503) that says ``Retry-After: 2`` (DSPy's
    ``LMProviderError.retry_after``): retried, each wait at least the 2 s asked (plus litellm's jitter), and
    the answer of the attempt that succeeds returned."""
    from dspy.utils.exceptions import LMRateLimitError, LMServerError

    cls, status = (LMRateLimitError, 429) if fault == "rate_limit" else (LMServerError, 503)
    waits, attempts, retried = [], [], []

    def call():
        attempts.append(1)
        if len(attempts) < 3:
            raise cls("try later", status=status, retry_after=2.0, model="m")
        return "answer"

    out = call_with_retries(call, retries=3, sleep=waits.append, on_retry=lambda exc, wait: retried.append(exc))
    assert out == "answer" and len(attempts) == 3
    assert len(waits) == 2 and all(2.0 <= w <= 2.75 for w in waits)
    assert all(isinstance(e, cls) and fault_status(e) == status for e in retried)
    # without a Retry-After: exponential backoff
    backoff = [retry_wait(cls("try later", status=status), k, 3) for k in (1, 2, 3)]
    assert backoff[0] < backoff[2]


def test_an_auth_error_stops_at_once_as_a_credentials_error():
    """DSPy's ``LMAuthError`` (and litellm's authentication error behind DSPy's unclassified wrapper) is a
    configuration error: raised as ``CredentialsError`` at the first attempt, no wait, no retry."""
    from dspy.utils.exceptions import LMAuthError, LMUnexpectedError

    from argus.errors import CredentialsError

    def dspy_auth():
        raise LMAuthError("invalid api key", status=401, model="m")

    def wrapped_auth():
        try:
            raise litellm.AuthenticationError("invalid api key", llm_provider="openai", model="x")
        except litellm.AuthenticationError as inner:
            raise LMUnexpectedError("an engine failed") from inner

    for fail in (dspy_auth, wrapped_auth):
        waits, attempts = [], []

        def call():
            attempts.append(1)
            fail()

        with pytest.raises(CredentialsError, match="refused for its credentials"):
            call_with_retries(call, retries=5, sleep=waits.append)
        assert len(attempts) == 1 and waits == []


def test_a_metered_call_waits_out_a_real_429s_retry_after_outside_its_slot(monkeypatch):
    """Through DSPy's litellm engine against a loopback server that answers the first two requests 429 with
    ``Retry-After: 0.3``: DSPy raises ``LMRateLimitError`` with ``retry_after`` 0.3; argus retries it no
    sooner than that, holding no in-flight place while it waits; the third request is answered."""
    import argus.models.concurrency as concurrency
    from dspy.utils.exceptions import LMRateLimitError

    from argus.models.lm import MeteredLM
    from tests.latency_server import LatencyServer

    seen, real_wait = [], concurrency.retry_wait
    lm_ref: list = []

    def recording_wait(exc, attempt, retries):
        limiter = lm_ref[0].limiter()
        seen.append((concurrency.lm_fault(exc), limiter._slots.in_flight))
        return real_wait(exc, attempt, retries)

    monkeypatch.setattr(concurrency, "retry_wait", recording_wait)
    with LatencyServer(latency_s=0.0, fail_first_n_429=2, retry_after_s=0.3) as server:
        lm = MeteredLM("openai/fake", engine="litellm", api_base=server.url, api_key="sk-test", cache=False,
                       num_retries=3, max_in_flight=1, price_per_mtok=(0.0, 0.0))
        lm_ref.append(lm)
        out = lm(messages=[{"role": "user", "content": "Name one fact."}])
        records = sorted(server.stats().requests, key=lambda r: r.arrival_s)
    assert out and out[0]
    assert [r.status for r in records] == [429, 429, 200]
    assert len(seen) == 2
    for fault, in_flight in seen:
        assert isinstance(fault, LMRateLimitError) and fault.retry_after == pytest.approx(0.3) and in_flight == 0
    assert all(b.arrival_s - a.arrival_s >= 0.3 for a, b in zip(records, records[1:]))


# ----------------------------------------------------------------------------- the pipeline under concurrency


class ShuffledEngine(ScriptedEngine):
    """The scripted LM answering after a random delay: answers depend on the request only, the order
    they arrive in does not."""

    def __init__(self, seed: int):
        super().__init__()
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self.in_flight = 0
        self.peak = 0

    def complete(self, request):
        with self._lock:
            delay = self._random.uniform(0.0, 0.03)
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        try:
            time.sleep(delay)
            return super().complete(request)
        finally:
            with self._lock:
                self.in_flight -= 1


def _pipeline(tmp_path: Path, engine: ScriptedEngine, max_in_flight: int) -> ArgusPipeline:
    cfg = ArgusConfig.load(None, {
        "cache_dir": str(tmp_path / "cache"), "merge.min_similarity": 0.3, "facts.fallback": "always",
        "facts.tau": 0.99, "facts.batch_size": 4, "chunking.max_sentences": 6, "chunking.min_sentences": 2,
        "concurrency.max_in_flight": max_in_flight, "extraction.design": "chunked",
    })
    pipe = ArgusPipeline(cfg)
    lm = scripted_lm(engine)
    for stage in ("fact_fallback", "chunker", "stage1", "stage2", "resolver"):
        pipe._lms[stage] = lm
    return pipe


def _comparable(path: Path) -> dict:
    ekg = json.loads(path.read_text())
    return {k: ekg[k] for k in ("doc_id", "sentences", "chunks", "minigraphs", "graph", "merge_log", "warnings", "models")}


def test_a_concurrent_batch_writes_the_graphs_of_a_sequential_one(tmp_path, dev_dirs):
    docs = [DEMO] + [d / "complaint.txt" for d in dev_dirs[:3]]
    runs = {}
    for n in (1, 8):
        engine = ShuffledEngine(seed=n)
        out = tmp_path / f"out{n}"
        report = run_batch(docs, out, pipeline=_pipeline(tmp_path / f"p{n}", engine, n), graphml=False)
        assert report.ok, report.errors
        runs[n] = (out, engine, report)
    (seq, seq_engine, seq_report), (par, par_engine, par_report) = runs[1], runs[8]
    assert seq_engine.peak == 1 and par_engine.peak > 2  # it really ran concurrently
    names = sorted(p.name for p in seq.glob("*.ekg.json"))
    assert names == sorted(p.name for p in par.glob("*.ekg.json")) and len(names) == 4
    for name in names:
        a, b = _comparable(seq / name), _comparable(par / name)
        assert a["graph"]["events"], name  # something was extracted
        assert a == b, name
    # the stages that fan out did fan out: several fallback batches, chunks and resolver pairs per document
    stages = {e.stage for e in par_report.ledger.entries}
    assert {"fact_fallback", "chunker", "stage1", "stage2", "resolver"} <= stages
    # summary rows in input order, the same but for the seconds; the ledger has every call of both
    strip = lambda rows: [{k: v for k, v in r.items() if k != "seconds"} for r in rows]  # noqa: E731
    assert strip(seq_report.rows) == strip(par_report.rows)
    assert [r["doc_id"] for r in par_report.rows] == [json.loads((par / n).read_text())["doc_id"] for n in
                                                      [f"{r['doc_id']}.ekg.json" for r in seq_report.rows]]
    lines = (par / "ledger.jsonl").read_text().splitlines()
    assert len(lines) == len(par_report.ledger.entries) == len(seq_report.ledger.entries)
    assert sum(json.loads(x)["prompt_tokens"] for x in lines) == seq_report.ledger.totals().prompt_tokens
    # one document's entries are written together
    order = [json.loads(x)["doc_id"] for x in lines]
    assert sum(1 for a, b in zip(order, order[1:]) if a != b) == 3


def test_a_call_that_keeps_failing_fails_its_document_not_the_batch(tmp_path, monkeypatch, dev_dirs):
    class FaultyOnDemo(ScriptedEngine):
        def complete(self, request):
            user = "\n".join(m.text or "" for m in request.messages)
            if "Briarwood" in user and "[[ ## chunk ## ]]" in user:  # Stage 1 of the demo complaint
                raise _rate_limit_error("0")
            return super().complete(request)

    monkeypatch.setattr("argus.models.concurrency.retry_wait", lambda exc, attempt, retries: 0.01)
    engine = FaultyOnDemo()
    pipe = _pipeline(tmp_path, engine, 4)
    report = run_batch([DEMO, dev_dirs[0] / "complaint.txt"], tmp_path / "out", pipeline=pipe, graphml=False)
    assert [e["doc_id"] for e in report.errors] == ["demo"]
    assert report.errors[0]["error"] == "ProviderFault" and "3 time" in report.errors[0]["message"]
    assert [r["doc_id"] for r in report.rows] == [dev_dirs[0].name]
    errors = [json.loads(x) for x in (tmp_path / "out" / "errors.jsonl").read_text().splitlines()]
    assert [e["doc_id"] for e in errors] == ["demo"]


def test_a_batch_rides_out_429s_with_retry_after_and_random_500s_from_a_real_server(tmp_path):
    """Against a loopback HTTP server that answers 429 (Retry-After: 1) and 500 at random: every
    document is written, every fault was retried, and no retry of a 429 came before its Retry-After."""
    from tests.latency_server import LatencyServer

    with LatencyServer(latency_s=0.05, jitter_s=0.1, seed=3, fail_first_n_429=1, fail_rate_429=0.25, retry_after_s=1,
                       fail_rate_500=0.3) as server:
        cfg = ArgusConfig(
            lm={"default": {"model": "openai/fake", "api_base": server.url, "structured_output": "json_object_schema",
                            "cache": False, "num_retries": 8, "max_in_flight": 6}},
            facts={"mode": "classifier"}, concurrency={"max_in_flight": 8}, extraction={"design": "chunked"},
            cache_dir=tmp_path / "cache",
        )
        report = run_batch([DEMO], tmp_path / "out", cfg, graphml=False)
        stats = server.stats()
    assert report.ok, report.errors
    assert stats.sent_429 >= 1 and stats.sent_500 >= 1, "no fault was injected: the test exercised nothing"
    assert stats.answered == len(report.ledger.entries)  # each answered call booked once, faults never
    assert 1 < stats.max_in_flight <= 6
    by_key: dict[str, list] = {}
    for r in sorted(stats.requests, key=lambda r: r.arrival_s):
        by_key.setdefault(r.key, []).append(r)
    retried = 0
    for records in by_key.values():
        for first, again in zip(records, records[1:]):
            if first.status == 429:
                retried += 1
                assert again.arrival_s - first.arrival_s >= 1.0 - 0.05
    assert retried >= 1


def test_a_call_past_its_timeout_is_retried_then_fails_its_document(tmp_path):
    from tests.latency_server import LatencyServer

    with LatencyServer(latency_s=3.0) as server:
        cfg = ArgusConfig(
            lm={"default": {"model": "openai/fake", "api_base": server.url, "structured_output": "json_object_schema",
                            "cache": False, "num_retries": 1, "timeout_s": 0.5}},
            facts={"mode": "classifier"}, chunking={"use_llm": False}, merge={"resolver": False},
            extraction={"design": "chunked"}, cache_dir=tmp_path / "cache",
        )
        t0 = time.monotonic()
        report = run_batch([DEMO], tmp_path / "out", cfg, graphml=False)
        took = time.monotonic() - t0
        stats = server.stats()
    (error,) = report.errors
    assert error["error"] == "ProviderFault" and "2 time" in error["message"] and "HTTP 408" in error["message"]
    assert took < 3.0 * 2  # the calls were cut at their timeout, not waited out
    assert stats.total_requests >= 2
