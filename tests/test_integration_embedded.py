"""Integration with the real embedded model (SmolLM2-135M GGUF through llama-cpp-python).

- A Stage 1 call through litellm's OpenAI-compatible path to a real ``llama_cpp.server`` on
  127.0.0.1 that the test starts itself — the path users take with vLLM / llama.cpp / Ollama servers.
- The whole pipeline on one dev complaint with ``local/smollm2``, whose managed server
  (``argus.models.engine``) is started on first use and reached through that same path.

The model is tiny: these tests check that everything runs, parses, validates and is metered,
not that the graph is good.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import dspy
import jsonschema
import pytest

from argus.config import ArgusConfig, LMSpec
from argus.models.ledger import CostLedger, ledger_context
from argus.models.lm import SchemaJSONAdapter, build_lm, embedded_gguf_path
from argus.models.response_cache import PlainResponseCache
from argus.graph.schema import export_json_schema
from programs import ArgusPrograms
from tests.conftest import needs_data
from tests.test_pipeline_scripted import check_contract

pytestmark = pytest.mark.integration

CHUNK_IDS = ["S4", "S5", "S6"]
CHUNK = (
    "[S4] On March 3, 2019, Hudson Valley Logistics hired Maria Torres as a dispatcher.\n"
    "[S5] On June 3, 2020, her supervisor Derek Palmer told her she was too old to learn the new system.\n"
    "[S6] Two weeks later, Palmer fired Ms. Torres."
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    pytest.importorskip("llama_cpp.server.app", reason="needs llama-cpp-python[server]")
    port = _free_port()
    log = tmp_path_factory.mktemp("server") / "server.log"
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(embedded_gguf_path()), "--model_alias", "smollm2",
           "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096"]
    with open(log, "w") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited: {log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{url}/models", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("llama_cpp.server did not start within 120 s")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_stage1_through_litellm_against_a_local_llama_cpp_server(llama_server, tmp_path, monkeypatch):
    spec = LMSpec(model="openai/smollm2", api_base=llama_server, max_tokens=700, cache=False, num_retries=0)
    lm = build_lm(spec)
    assert lm.structured_output == "json_object_schema"
    ledger = CostLedger()
    progs = ArgusPrograms(max_retries=0)
    with dspy.context(lm=lm, adapter=SchemaJSONAdapter()), ledger_context(ledger, doc_id="t", stage="stage1", program="Stage1Extractor"):
        res = progs.stage1(chunk_text=CHUNK, sentence_ids=CHUNK_IDS)
    # The server constrained the output with the schema we sent: it parsed into typed objects.
    assert res.outputs is not None, res.errors
    for ev in res.outputs["events"]:
        assert set(ev.evidence) <= set(CHUNK_IDS)  # the per-call choices reached the grammar
    (entry,) = ledger.entries
    assert entry.model == "openai/smollm2" and entry.prompt_tokens > 100 and entry.completion_tokens > 0
    assert not entry.cache_hit
    # what the server received: the litellm request carried our json_object + schema format
    sent = lm.history[-1]["kwargs"]["response_format"]
    assert sent["type"] == "json_object" and "events" in json.dumps(sent["schema"])
    assert "api_base" not in json.dumps(lm.dump_state())
    # a repeated call is served from DSPy's cache: nothing billed, the original tokens remembered
    # argus's response cache (DSPy's, disk tier only), which books a hit at its original usage
    monkeypatch.setattr(dspy, "cache", PlainResponseCache(True, False, str(tmp_path / "c"), disk_size_limit_bytes=1 << 30))
    cached_lm = build_lm(spec.model_copy(update={"cache": True}))
    ledger2 = CostLedger()
    with dspy.context(lm=cached_lm, adapter=SchemaJSONAdapter()), ledger_context(ledger2, stage="stage1"):
        progs.stage1(chunk_text=CHUNK, sentence_ids=CHUNK_IDS)
        progs.stage1(chunk_text=CHUNK, sentence_ids=CHUNK_IDS)
    first, second = ledger2.entries
    assert not first.cache_hit and second.cache_hit and second.prompt_tokens == 0
    assert (second.cached_prompt_tokens, second.cached_completion_tokens) == (first.prompt_tokens, first.completion_tokens)


@needs_data
def test_whole_pipeline_on_a_dev_complaint_with_the_embedded_model(tmp_path):
    path = Path(os.environ.get("ARGUS_DATA_ROOT", Path(__file__).resolve().parents[2] / "shared" / "data"))
    complaint = path / "us_complaints" / "dev" / "nysd-1-24-cv-03572" / "complaint.txt"
    if not complaint.exists():
        pytest.skip(f"{complaint} not found")
    from argus.pipeline import ArgusPipeline

    # the fact head of the first 18 complaints, which the chunks this test was written on come from: SmolLM2
    # writes events for some chunks and none for others, so the test pins what it is given
    facts = str(Path(__file__).resolve().parent / "fixtures" / "chunked_scripted" / "fact_head.json")
    cfg = ArgusConfig.load(None, {"cache_dir": str(tmp_path / "cache"), "extraction.design": "chunked",
                                  "facts.classifier": facts})
    assert cfg.lm.for_stage("stage1").model == "local/smollm2"
    ekg = ArgusPipeline(cfg).extract(complaint)
    check_contract(ekg, complaint.read_text(encoding="utf-8"))
    jsonschema.validate(ekg.model_dump(mode="json"), export_json_schema())
    stages = {e.stage for e in ekg.ledger.entries}
    assert {"stage1"} <= stages and ekg.ledger.totals.calls >= len(ekg.chunks)
    assert ekg.ledger.totals.cost_usd == 0.0  # the embedded model is priced at 0
    # the model writes events; grounding keeps those whose trigger is in their evidence and lists the rest
    written = ekg.graph.events + [r for r in ekg.rejected if r.kind == "event"]
    assert written, "the embedded model should write at least one event"
    assert all(r.reason and r.stage == "stage1" for r in ekg.rejected if r.kind in ("entity", "event"))
    from argus.graph.grounding import span_problems

    assert span_problems(ekg) == []
    assert all(e.mentions for e in ekg.graph.entities) and all(ev.trigger_span for ev in ekg.graph.events)


def test_grounded_decoding_on_the_embedded_engine_writes_only_words_of_the_chunk(tmp_path):
    """The engine parses the grammar built from a chunk's word runs (quotes, §, parentheses
    included), and every entity name, alias and trigger Stage 1 writes is one of them."""
    from argus.graph.grounding import chunk_phrases
    from argus.pipeline import ArgusPipeline
    from argus.graph.schema import Chunk
    from tests.conftest import DEMO

    pipe = ArgusPipeline(ArgusConfig.load(None, {"cache_dir": str(tmp_path / "cache"), "extraction.design": "chunked",
                                                 "extraction.grounded_decoding": True}))
    doc = pipe.preprocess(pipe.read(DEMO))
    quoted = [s for s in doc.sentences if '"' in s.text or "“" in s.text]
    assert quoted, "the demo complaint quotes someone"
    ids = [s.id for s in doc.sentences]
    start = max(0, ids.index(quoted[0].id) - 2)
    chunk = Chunk(id="C1", sentence_ids=ids[start:start + 6])
    phrases = set(chunk_phrases(doc.sentence(sid).text for sid in chunk.sentence_ids))
    seen = []
    original = pipe.programs.stage1.forward

    def record(**kwargs):
        res = original(**kwargs)
        seen.append(res)
        return res

    pipe.programs.stage1.forward = record
    mg = pipe.extract_chunk(doc, chunk)
    written = seen[0].outputs
    assert written is not None, seen[0].errors
    for e in written["entities"]:
        assert e.name in phrases and set(e.aliases) <= phrases, e
    for ev in written["events"]:
        assert ev.trigger in phrases, ev
    assert not [r for r in mg.rejected if r.kind in ("entity", "alias", "name")], mg.rejected


def test_sentence_design_on_the_embedded_engine(tmp_path):
    """The offline default calls no model (the heads decide: the embedded model was measured no better);
    asked to decide every sentence, the embedded engine's choices are words of their sentences and
    entities of the list, and everything kept is grounded."""
    from argus.graph.grounding import span_problems
    from argus.pipeline import ArgusPipeline
    from tests.conftest import DEMO

    default = ArgusPipeline(ArgusConfig.load(None, {"cache_dir": str(tmp_path / "c0")}))
    ekg = default.extract(DEMO)
    assert ekg.method == "sentence" and ekg.ledger.totals.calls == 0 and ekg.graph.events
    pipe = ArgusPipeline(ArgusConfig.load(None, {"cache_dir": str(tmp_path / "c1"), "sentence.llm": "always",
                                                 "sentence.tau": 1.0, "sentence.batch_size": 8}))
    seen = []
    original = pipe.programs.sentence_events.forward

    def record(**kwargs):
        res = original(**kwargs)
        seen.append((kwargs, res))
        return res

    pipe.programs.sentence_events.forward = record
    ekg = pipe.extract(DEMO)
    assert seen and {e.stage for e in ekg.ledger.entries} == {"sentence"}
    for kwargs, res in seen:
        ids = {sid for sid, _ in kwargs["sentences"]}
        entity_ids = {eid for eid, _, _ in kwargs["entities"]}
        union = {w for sid in ids for w in kwargs["words"][sid]}
        for ev in (res.outputs or {}).get("events", []):
            assert ev.sentence in ids and ev.trigger in union, ev  # the grammar allowed nothing else
            assert {p.entity for p in ev.participants} <= entity_ids, ev
    assert span_problems(ekg) == [] and all(e.grounded for e in ekg.graph.events)
