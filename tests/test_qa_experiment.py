"""Document-scoped QA experiment (argus.experiments.qa) with a scripted LM and a stub encoder."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from dspy.lm15 import Message, Response, TextPart, Usage

from argus.text.answers import token_f1
from argus.experiments import qa
from argus.graph.linearize import QADocument, Sentence
from argus.paths import complaints_dir
from tests.scripted_lm import EngineDouble, HashedEncoder, request_inputs, scripted_lm

class EchoEngine(EngineDouble):
    """Answers with the first quoted sentence of an event, else the first passage sentence; answers
    non-JSON (a failed call) when the question contains FAIL and the context holds an event graph."""

    def complete(self, request):
        user, inputs = request_inputs(request)
        ctx, question = inputs.get("context", ""), inputs.get("question", "")
        self.calls.append(inputs)
        if "FAIL" in question and "Event graph" in ctx:
            text = "I cannot answer that."
        else:
            quote = re.search(r'\[\w+\] "([^"]+)"', ctx)
            passage = re.search(r"\[passage 1\] (.+?[.!?])(\s|$)", ctx)
            ans = quote.group(1) if quote else passage.group(1) if passage else "unknown"
            text = json.dumps({"answer": ans})
        return Response(id=None, model="echo", message=Message.assistant([TextPart(text)]), finish_reason="stop",
                        usage=Usage(input_tokens=len(user) // 4, output_tokens=len(text) // 4, total_tokens=(len(user) + len(text)) // 4))


def echo_lm(engine: EchoEngine):
    return scripted_lm(engine, model="echo/test", max_tokens=300)


TEXTS = [
    "Torres was hired by Acme in March 2019.",
    "Torres complained to Human Resources about harassment by Miller.",
    "Miller supervised the night shift.",
    "The warehouse moved to a new building.",
    "Acme installed new software for payroll.",
    "Payroll errors continued through the summer.",
    "Two weeks later Acme terminated Torres because she complained.",
    "Torres filed a charge with the EEOC.",
]


def small_doc(graph_sentences=None, questions=None) -> QADocument:
    sents, pos = [], 0
    for i, t in enumerate(TEXTS, 1):
        sents.append(Sentence(f"S{i}", t, (pos, pos + len(t))))
        pos += len(t) + 1
    index = {s.id: s for s in sents}
    graph = {
        "entities": [{"id": "E1", "name": "Torres", "kind": "person", "role": "plaintiff", "aliases": ["Ms. Torres"]},
                     {"id": "E2", "name": "Acme", "kind": "organization", "role": "employer", "aliases": []}],
        "events": [
            {"id": "EV1", "type": "complaint", "verb": "complain", "participants": [{"entity": "E1", "role": "agent"}],
             "time": {"kind": "unknown", "value": None}, "evidence": ["S2"]},
            {"id": "EV2", "type": "termination", "verb": "terminate",
             "participants": [{"entity": "E2", "role": "agent"}, {"entity": "E1", "role": "patient"}],
             "time": {"kind": "relative", "value": "two weeks later"}, "evidence": ["S7"]},
        ],
        "temporal_edges": [{"source": "EV1", "target": "EV2", "relation": "BEFORE", "evidence": ["S2", "S7"]}],
        "causal_edges": [{"source": "EV1", "target": "EV2", "relation": "CAUSES", "evidence": ["S7"]}],
    }
    if graph_sentences is not None:  # a pipeline-style graph citing its own sentence ids
        graph = json.loads(json.dumps(graph).replace('"S2"', '"P2"').replace('"S7"', '"P7"'))
    questions = questions or [
        {"id": "q1", "type": "causal", "question": "Why did Acme terminate Torres?",
         "answer": "Because she complained to Human Resources about harassment by Miller.", "evidence": ["S2", "S7"]},
        {"id": "q2", "type": "party_resolution", "question": "Who supervised the night shift?",
         "answer": "Miller", "evidence": ["S3"]},
    ]
    return QADocument("toy-1", "dev", sents, index, questions, graph, graph_sentences if graph_sentences is not None else index)


def contexts_for(doc, question, top_k=1):
    emb = qa._Embedder(HashedEncoder(256))
    chunks = qa.raw_chunks(doc, 4)
    order_q = qa._rank(emb([question])[0], emb([c.text for c in chunks]))
    lin = qa.linearize_graph(doc.graph, doc.graph_sentences)
    return qa.build_contexts(lin, [chunks[i] for i in order_q[:top_k]], None, 1500), chunks


def test_contexts_are_built_as_specified():
    doc = small_doc()
    ctx, chunks = contexts_for(doc, "Who supervised the night shift at the warehouse?")
    assert len(chunks) == 2 and chunks[0].text.startswith("Torres was hired")
    raw, hyb, ekg = ctx["raw"], ctx["hybrid"], ctx["ekg"]
    # raw: the retrieved window only, no EKG text
    assert "Miller supervised the night shift." in raw.text
    assert "Event graph" not in raw.text and "EV1" not in raw.text and "Entities:" not in raw.text
    # EKG only: entities, events with times and cited sentences, edges; no raw window
    assert "Entities:" in ekg.text and "E1 Torres (person, plaintiff; also called Ms. Torres)" in ekg.text
    assert "EV2 termination: terminate — agent Acme, patient Torres; time two weeks later" in ekg.text
    assert '[S7] "Two weeks later Acme terminated Torres because she complained."' in ekg.text
    assert "EV1 (complain) BEFORE EV2 (terminate)" in ekg.text and "EV1 (complain) CAUSES EV2 (terminate)" in ekg.text
    assert "passage" not in ekg.text and "Miller supervised" not in ekg.text
    # hybrid: both
    assert "Event graph" in hyb.text and "EV2 termination" in hyb.text and "Miller supervised the night shift." in hyb.text
    assert raw.n_chunks == 1 and hyb.n_chunks == 1 and ekg.n_chunks == 0 and ekg.n_events == 2


def test_evidence_recall_hand_checked():
    doc = small_doc()
    q = doc.questions[0]  # evidence S2 (first window) and S7 (second window)
    ctx, _ = contexts_for(doc, "Who supervised the night shift?")  # retrieves the first window only
    assert qa.evidence_recall(ctx["raw"], q["evidence"], doc.sentences) == 0.5
    assert qa.evidence_recall(ctx["ekg"], q["evidence"], doc.sentences) == 1.0
    assert qa.evidence_recall(ctx["hybrid"], q["evidence"], doc.sentences) == 1.0
    q2 = doc.questions[1]  # S3 is in the first window, cited by no event
    assert qa.evidence_recall(ctx["raw"], q2["evidence"], doc.sentences) == 1.0
    assert qa.evidence_recall(ctx["ekg"], q2["evidence"], doc.sentences) == 0.0
    assert np.isnan(qa.evidence_recall(ctx["raw"], [], doc.sentences))


def test_evidence_recall_through_spans_for_pipeline_sentence_ids():
    gold = small_doc()
    # pipeline sentences: other ids, S7's text differently segmented/hyphenated but the same span
    s2, s7 = gold.sentences["S2"], gold.sentences["S7"]
    pipe = {"P2": Sentence("P2", s2.text, s2.span),
            "P7": Sentence("P7", "Two weeks la- ter Acme terminated Torres because she com- plained.", s7.span)}
    doc = small_doc(graph_sentences=pipe)
    ctx, _ = contexts_for(doc, "Who supervised the night shift?")
    assert "[P7]" in ctx["ekg"].text
    assert qa.evidence_recall(ctx["ekg"], ["S2", "S7"], doc.sentences) == 1.0
    # a context quoting neither span nor text does not count
    assert qa.evidence_recall(qa.Context("ekg", "nothing here", []), ["S7"], doc.sentences) == 0.0


def test_context_cap_keeps_most_relevant_events():
    doc = small_doc()
    lin = qa.linearize_graph(doc.graph, doc.sentences)
    text, blocks, cut = qa.fit_ekg(lin, 45, ["EV2", "EV1"])
    assert cut and "EV2 termination" in text and "EV1 complaint" not in text and len(text.split()) <= 45
    assert "BEFORE" not in text  # edges only among kept events
    full, _, cut_full = qa.fit_ekg(lin, 1500, None)
    assert not cut_full and "EV1 complaint" in full


def test_run_qa_rows_exclusion_and_tables(tmp_path):
    questions = [
        {"id": "q1", "type": "causal", "question": "Why did Acme terminate Torres?",
         "answer": "Torres complained to Human Resources about harassment by Miller.", "evidence": ["S2", "S7"]},
        {"id": "q2", "type": "party_resolution", "question": "Who supervised the night shift?", "answer": "Miller", "evidence": ["S3"]},
        {"id": "q3", "type": "temporal_order", "question": "FAIL what happened after the complaint?",
         "answer": "Acme terminated Torres.", "evidence": ["S7"]},
    ]
    doc = small_doc(questions=questions)
    engine = EchoEngine()
    tables = qa.run_qa(documents=[doc], lm=echo_lm(engine), encoder=HashedEncoder(256), out=tmp_path, top_k=1,
                       chunk_sentences=4, n_resamples=200)
    rows = tables["questions"]
    assert len(rows) == 9 and set(rows["condition"]) == set(qa.CONDITIONS)
    # every LM answer is scored with argus.text.answers.token_f1 against the gold answer
    for _, r in rows[rows["ok"]].iterrows():
        assert r["f1"] == pytest.approx(token_f1(r["answer"], r["gold"]))
    ekg_q1 = rows[(rows.qid == "q1") & (rows.condition == "ekg")].iloc[0]
    assert ekg_q1["answer"] == "Torres complained to Human Resources about harassment by Miller."
    assert ekg_q1["f1"] == 1.0
    # q3 failed in hybrid and ekg (non-JSON twice) → excluded from all three conditions
    q3 = rows[rows.qid == "q3"].set_index("condition")
    assert not q3.loc["ekg", "ok"] and not q3.loc["hybrid", "ok"] and q3.loc["raw", "ok"]
    assert not rows[rows.qid == "q3"]["included"].any()
    assert tables["summary"].attrs["n_excluded"] == 1 and tables["summary"].attrs["n_included"] == 2
    s = tables["summary"].set_index("condition")
    assert list(s["n"]) == [2, 2, 2]
    assert s.loc["ekg", "failed_calls"] == 1 and s.loc["raw", "failed_calls"] == 0
    assert s.loc["raw", "token_f1"] == pytest.approx(rows[(rows.condition == "raw") & rows.included]["f1"].mean())
    # evidence recall: over all questions (q3 included), per condition
    assert s.loc["ekg", "evidence_recall"] == pytest.approx((1.0 + 0.0 + 1.0) / 3)
    paired = tables["paired"]
    assert list(zip(paired["a"], paired["b"])) == [("ekg", "hybrid"), ("ekg", "raw"), ("hybrid", "raw")]
    assert (paired["n"] == 2).all()
    assert set(tables["by_type"]["type"]) == {"causal", "party_resolution", "temporal_order"}
    # the LM saw the same question under three contexts; calls are in the ledger under stage qa
    assert sum(1 for c in engine.calls if c["question"] == "Who supervised the night shift?") == 3
    ledger = [json.loads(line) for line in (tmp_path / "qa_ledger.jsonl").read_text().splitlines()]
    assert ledger and {e["stage"] for e in ledger} == {"qa"}
    assert {e["program"] for e in ledger} == {"DocumentQA/raw", "DocumentQA/hybrid", "DocumentQA/ekg"}
    for name in ("questions", "summary", "by_type", "paired", "evidence"):
        assert (tmp_path / f"qa_{name}.csv").exists()
    md = (tmp_path / "qa.md").read_text()
    assert "EKG only" in md and "not comparable" in md.lower() and "1 excluded" in md


def test_cli_mounts_qa():
    from argus.experiments.cli import EXPERIMENTS

    assert EXPERIMENTS.get("qa") == "qa"
    assert callable(qa.command)


needs_data = pytest.mark.skipif(not complaints_dir("dev").exists(), reason="needs ../shared/data")


@needs_data
def test_real_dev_contexts_and_evidence_recall():
    docs = qa.load_qa_documents("dev", "gold")
    assert docs and all(len(d.questions) == 15 for d in docs)
    doc = docs[0]
    assert doc.facts and all(s.span for s in doc.facts)
    lin = qa.linearize_graph(doc.graph, doc.graph_sentences)
    emb = qa._Embedder(HashedEncoder(256))
    chunks = qa.raw_chunks(doc)
    for q in doc.questions[:3]:
        order = qa._rank(emb([q["question"]])[0], emb([c.text for c in chunks]))
        ev_order = qa._rank(emb([q["question"]])[0], emb([b.text for _, b in lin.events]))
        ctx = qa.build_contexts(lin, [chunks[i] for i in order[:3]], [lin.events[i][0] for i in ev_order])
        for c in ctx.values():
            assert c.words <= qa.MAX_CONTEXT_WORDS
        assert "Event graph" not in ctx["raw"].text and "passage" not in ctx["ekg"].text
        # the raw context quotes its windows verbatim: recall equals the share of evidence in them
        quoted = {s for b in ctx["raw"].blocks for s in b.spans}
        gold_spans = [doc.sentences[e].span for e in q["evidence"] if e in doc.sentences]
        assert qa.evidence_recall(ctx["raw"], q["evidence"], doc.sentences) == pytest.approx(
            sum(sp in quoted for sp in gold_spans) / len(gold_spans))


@needs_data
def test_real_pipeline_graph_folder_matches_by_doc_id(tmp_path, dev_dirs, scripted_pipeline):
    """A folder of pipeline EKGs (real preprocessing and merging, the scripted LM's answers) joins the
    gold QA documents by doc_id; its sentence spans point into the same complaint text."""
    from argus.runs.batch import run_batch

    folder = tmp_path / "staged"
    report = run_batch([dev_dirs[0] / "complaint.txt"], folder, pipeline=scripted_pipeline, graphml=False)
    assert report.ok, report.errors
    docs = qa.load_qa_documents("dev", folder)
    with_graph = [d for d in docs if d.graph is not None]
    assert [d.doc_id for d in with_graph] == [dev_dirs[0].name]
    d = with_graph[0]
    assert d.graph_sentences is not d.sentences and d.graph_sentences
    # pipeline sentence spans point into the same complaint.txt as the gold spans
    lin = qa.linearize_graph(d.graph, d.graph_sentences)
    ctx = qa.build_contexts(lin, [], None)
    assert 0.0 <= np.nanmean([qa.evidence_recall(ctx["ekg"], q["evidence"], d.sentences) for q in d.questions]) <= 1.0


def test_core_modules_hold_the_one_implementation_and_do_not_import_experiments():
    """argus.text.answers / argus.graph.linearize are the single home of token F1 and the EKG linearization; the
    experiments re-export them, and metrics/optimizers reach them without importing argus.experiments."""
    import subprocess
    from pathlib import Path
    import sys

    import argus.text.answers
    import argus.graph.linearize
    from argus.experiments import stats

    for name in ("Sentence", "QADocument", "load_qa_documents", "Block", "LinearizedEKG", "linearize_graph", "fit_ekg"):
        assert getattr(qa, name) is getattr(argus.graph.linearize, name)
    assert qa.token_f1 is stats.token_f1 is argus.text.answers.token_f1
    assert stats.normalize_answer is argus.text.answers.normalize_answer
    code = ("import sys, argus.text.answers, argus.graph.linearize, metrics.gepa, optimizers.examples; "
            "print(sorted(m for m in sys.modules if m.startswith('argus.experiments')))")
    root = Path(__file__).resolve().parents[1]
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root)
    assert res.stdout.strip() == "[]"
