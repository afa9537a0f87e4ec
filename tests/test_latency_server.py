"""The loopback latency server: schema-valid deterministic answers, latency, in-flight counting, faults."""

from __future__ import annotations

import http.client
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlparse

import jsonschema
import pytest

from tests.latency_server import LatencyServer, answer_content, generate_instance

EDGE_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name", "ids", "n", "score", "flag", "kind", "when", "edges", "code"],
    "properties": {
        "name": {"type": "string", "minLength": 3, "maxLength": 12},
        "ids": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "string", "pattern": r"^S\d+$"}},
        "n": {"type": "integer", "minimum": 3, "maximum": 5},
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "flag": {"type": "boolean"},
        "kind": {"enum": ["a", "b", "c"]},
        "when": {"anyOf": [{"type": "null"}, {"type": "string"}]},
        "code": {"type": "string", "pattern": r"^[A-Z][a-z]{2,4}-\d{2}$"},
        "edges": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["source", "target", "rel", "const"],
                "properties": {
                    "source": {"type": "string", "enum": ["EV1", "EV2"]},
                    "target": {"type": "string", "enum": ["EV1", "EV2"]},
                    "rel": {"$ref": "#/$defs/Rel"},
                    "const": {"const": 7},
                },
            },
        },
    },
    "$defs": {"Rel": {"type": "string", "enum": ["BEFORE", "AFTER"]}},
}

MESSAGES = [
    {"role": "system", "content": "Extract."},
    {"role": "user", "content": "[S1] Acme Corp hired Jane Doe in 2019.\n[S2] Her supervisor fired her after she complained."},
]


def _post(server: LatencyServer, body: dict, path: str = "/v1/chat/completions") -> tuple[int, dict, dict]:
    u = urlparse(server.base_url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    try:
        conn.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), json.loads(resp.read() or b"{}")
    finally:
        conn.close()


def _get(server: LatencyServer, path: str) -> dict:
    u = urlparse(server.base_url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        assert resp.status == 200
        return json.loads(resp.read())
    finally:
        conn.close()


def _chat(schema: dict | None = None, style: str = "llama", messages=MESSAGES) -> dict:
    body: dict = {"model": "fake", "messages": messages}
    if schema is not None:
        body["response_format"] = (
            {"type": "json_object", "schema": schema} if style == "llama"
            else {"type": "json_schema", "json_schema": {"name": "outputs", "schema": schema}}
        )
    return body


@pytest.fixture()
def server():
    with LatencyServer(latency_s=0.05) as s:
        yield s


@pytest.mark.parametrize("style", ["llama", "openai"])
def test_answers_are_valid_json_for_the_schema_sent(server, style):
    status, _, answer = _post(server, _chat(EDGE_SCHEMA, style))
    assert status == 200
    content = json.loads(answer["choices"][0]["message"]["content"])
    jsonschema.validate(content, EDGE_SCHEMA)
    assert set(content["ids"]) <= {"S1", "S2"}  # id references come from the prompt's labels
    assert all(e["source"] != e["target"] for e in content["edges"])  # siblings with the same choices differ
    assert answer["choices"][0]["finish_reason"] == "stop" and answer["model"] == "fake" and answer["id"]
    u = answer["usage"]
    assert u["prompt_tokens"] == sum(len(m["content"]) for m in MESSAGES) // 4
    assert u["total_tokens"] == u["prompt_tokens"] + u["completion_tokens"] > u["prompt_tokens"]


def test_the_pipeline_schemas_get_answers_that_pass_its_checks():
    """Stage 1 / Stage 2 output schemas as argus sends them (with choices): valid, and grounded."""
    from argus.models.lm import DEFAULT_GRAMMAR_LIMITS, signature_output_schema
    from argus.graph.validation import stage1_errors, stage2_errors
    from argus.graph.schema import Stage1Output, Stage2Output
    from programs.stage1 import ExtractEntitiesAndEvents
    from programs.stage2 import ExtractRelations

    sids = ["S4", "S5", "S6"]
    s1 = signature_output_schema(ExtractEntitiesAndEvents, DEFAULT_GRAMMAR_LIMITS, {"evidence": sids})
    for k in range(5):
        out = generate_instance(s1, key=f"k{k}", text="[S4] Acme fired Jane. [S5] She sued. [S6] Bob laughed.")
        jsonschema.validate(out, s1)
        parsed = Stage1Output.model_validate(out)
        assert stage1_errors(parsed.entities, parsed.events, set(sids)) == []
    events = ["EV1", "EV2", "EV3"]
    s2 = signature_output_schema(ExtractRelations, DEFAULT_GRAMMAR_LIMITS,
                                 {"evidence": sids, "source": events, "target": events})
    for k in range(5):
        out = generate_instance(s2, key=f"k{k}", text="[S4] x")
        jsonschema.validate(out, s2)
        parsed = Stage2Output.model_validate(out)
        assert stage2_errors(parsed.temporal_edges, parsed.causal_edges, set(events), set(sids)) == []


def test_same_request_same_answer_whatever_the_order_of_arrival():
    bodies = [_chat(EDGE_SCHEMA, messages=[{"role": "user", "content": f"text number {i % 3} about a firing"}])
              for i in range(9)]
    with LatencyServer(latency_s=0.05, jitter_s=0.1, seed=3) as s:
        with ThreadPoolExecutor(9) as pool:
            answers = list(pool.map(lambda b: _post(s, b)[2]["choices"][0]["message"]["content"], bodies))
        again = [_post(s, b)[2]["choices"][0]["message"]["content"] for b in reversed(bodies)][::-1]
        stats = s.stats()
    assert answers == again
    assert answers[0] == answers[3] == answers[6] and answers[0] != answers[1]
    assert answers[0] == answer_content(bodies[0])  # a function of the body alone
    assert stats.answered == 18 and len({r.delay_s for r in stats.requests}) > 1  # jittered delays


def test_latency_and_max_in_flight_with_concurrent_clients():
    n = 16
    with LatencyServer(latency_s=0.3) as s:
        barrier = threading.Barrier(n)

        def one(i):
            barrier.wait()
            t0 = time.perf_counter()
            status, _, _ = _post(s, _chat(EDGE_SCHEMA, messages=[{"role": "user", "content": f"doc {i}"}]))
            return status, time.perf_counter() - t0

        t0 = time.perf_counter()
        with ThreadPoolExecutor(n) as pool:
            results = list(pool.map(one, range(n)))
        wall = time.perf_counter() - t0
        stats = s.stats()
    assert all(status == 200 for status, _ in results)
    assert all(seconds >= 0.3 for _, seconds in results)
    assert wall < 0.3 * 3  # overlapped, not one after another (16 × 0.3 s = 4.8 s)
    assert stats.max_in_flight == n and stats.in_flight == 0
    assert stats.total_requests == stats.answered == n
    assert all(r.answered_s - r.arrival_s >= 0.3 and r.status == 200 for r in stats.requests)


def test_max_in_flight_of_sequential_requests_is_one(server):
    for i in range(3):
        assert _post(server, _chat(messages=[{"role": "user", "content": str(i)}]))[0] == 200
    assert server.stats().max_in_flight == 1


def test_first_n_requests_get_429_with_retry_after():
    with LatencyServer(latency_s=0.05, fail_first_n_429=2, retry_after_s=3) as s:
        t0 = time.perf_counter()
        first = _post(s, _chat(EDGE_SCHEMA))
        fast = time.perf_counter() - t0
        second = _post(s, _chat(EDGE_SCHEMA))
        third = _post(s, _chat(EDGE_SCHEMA))
        stats = s.stats()
    for status, headers, body in (first, second):
        assert status == 429
        assert headers["Retry-After"] == "3"
        assert body["error"]["code"] == "rate_limit_exceeded" and body["error"]["message"]
    assert fast < 0.05  # faults are answered at once
    assert third[0] == 200
    assert (stats.total_requests, stats.answered, stats.sent_429, stats.sent_500) == (3, 1, 2, 0)


def test_500_injection_and_fault_draws_repeat_with_the_seed():
    with LatencyServer(latency_s=0.0, fail_rate_500=1.0) as s:
        status, _, body = _post(s, _chat())
        assert status == 500 and body["error"]["type"] == "server_error"
        assert s.stats().sent_500 == 1

    def statuses(seed):
        with LatencyServer(latency_s=0.0, fail_rate_429=0.3, fail_rate_500=0.3, seed=seed) as s:
            return [_post(s, _chat())[0] for _ in range(24)]

    a = statuses(5)
    assert a == statuses(5)
    assert {200, 429, 500} <= set(a)


def test_stats_endpoint_models_and_reset(server):
    _post(server, _chat())
    stats = _get(server, "/stats")
    assert stats["total_requests"] == stats["answered"] == 1 and stats["max_in_flight"] == 1
    assert stats["requests"][0]["status"] == 200 and stats["requests"][0]["answered_s"] >= stats["requests"][0]["arrival_s"]
    assert "requests" not in _get(server, "/stats?requests=0")
    assert _get(server, "/v1/models")["data"][0]["id"] == server.model_name
    assert _post(server, {}, "/stats/reset")[0] == 200
    assert server.stats().total_requests == 0 and server.stats().requests == []
    server.reset_stats()
    assert _get(server, "/stats")["answered"] == 0


def test_a_body_that_is_not_json_is_a_400(server):
    u = urlparse(server.base_url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    conn.request("POST", "/v1/chat/completions", body=b"{not json", headers={"Content-Type": "application/json"})
    assert conn.getresponse().status == 400
    conn.close()
    assert server.stats().bad_requests == 1


def test_litellm_and_dspy_talk_to_it(server):
    import argus.models.lm  # noqa: F401  (litellm's bundled price table, no network)
    import dspy
    import litellm

    r = litellm.completion(model="openai/x", api_base=server.url, api_key="not-needed", messages=MESSAGES,
                           response_format={"type": "json_object", "schema": EDGE_SCHEMA})
    jsonschema.validate(json.loads(r.choices[0].message.content), EDGE_SCHEMA)
    assert r.usage.prompt_tokens > 0

    lm = dspy.LM("openai/x", api_base=server.url, api_key="not-needed", cache=False)
    for adapter in (dspy.ChatAdapter(), dspy.JSONAdapter()):  # no schema sent: DSPy's own formats
        with dspy.context(lm=lm, adapter=adapter):
            pred = dspy.Predict("question -> answer: str, confident: bool, score: float")(question="Who fired Jane?")
        assert isinstance(pred.answer, str) and pred.answer
        assert isinstance(pred.confident, bool) and isinstance(pred.score, float)
