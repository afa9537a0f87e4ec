"""Document-scoped QA (``argus experiment qa``): raw passages vs raw + EKG vs EKG only.

After the ARGUS paper (Section 5.3, Appendix D.1): each annotated complaint carries FAQ questions
(temporal order, causal, temporal overlap, party resolution, temporal relation) with a gold answer
and gold evidence sentences. The answering program (:class:`programs.qa.DocumentQA`), its prompt
and its model (config stage ``qa``) are held fixed; only the context changes:

1. **raw** — the complaint's FACTS sentences cut into windows of ``chunk_sentences`` sentences,
   the ``top_k`` windows most similar to the question (sentence-encoder cosine) in rank order;
2. **hybrid** — the linearized EKG followed by the same retrieved windows;
3. **ekg** — the linearized EKG only.

The linearized EKG (:mod:`argus.graph.linearize`) lists entities (name, kind, role, aliases), events
(type, verb, participants with roles, time, and the text of each sentence the event cites), then
the temporal and causal edges between events. Every context is capped at ``max_context_words``
words (the embedded model has 8,192 tokens of context): windows past the cap are dropped from the
lowest rank; when the EKG does not fit, its events are kept in order of similarity to the question
(then shown in graph order) with the edges among the kept events, so a capped EKG is itself
retrieved.

Scores: SQuAD token F1 of the answer against the gold answer (:func:`argus.text.answers.token_f1`), per
condition and per question type; answer-evidence recall of each context (the share of a
question's gold evidence sentences that the context contains — a gold sentence counts when the
sentences quoted in the context cover at least half of its character span in ``complaint.txt``, or
when its normalized text occurs in the context, which makes pipeline graphs with their own
sentence ids comparable); paired tests between every pair of conditions
(:func:`stats.paired_table`: bootstrap CI, Wilcoxon, sign-flip permutation). A question whose LM
call failed in any condition is left out of the F1 comparison in all three (and counted), as in
the paper; evidence recall, a property of the contexts, is reported over all questions.

Retrieval is its own step (:class:`Retriever` over :class:`RetrievalUnit` s): the raw windows
(:func:`sentence_units`) and the events (:func:`event_units`: an event's linearized line, its
temporal and causal neighbours and the sentences it cites) are ranked by cosine similarity to the
question; every unit knows the GOLD sentence ids it stands for (a pipeline graph's sentence ids
mapped through their spans, :func:`gold_sentence_map`), so :func:`retrieval_recall` measures
recall@k of the gold evidence without any LM (``bench/downstream.py``).

The paper's figures (raw 0.323, hybrid 0.363, EKG 0.446 mean token F1; 300 questions over 10
complaints, GPT-4o) come from its own corpus and model; they are not comparable with a run here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pandas as pd

from argus.text.answers import normalize_answer, token_f1
from argus.errors import ArgusError, InputError
from argus.experiments.common import Answered, answering_lm, experiment_ledger, markdown_table, metered_call
from argus.experiments.stats import paired_table
from argus.graph.linearize import (  # the one implementation; these names stay importable from here
    Block,
    LinearizedEKG,
    QADocument,
    Sentence,
    block_of,
    fit_ekg,
    linearize_graph,
    load_qa_documents,
)

CONDITIONS: tuple[str, ...] = ("raw", "hybrid", "ekg")
CONDITION_LABELS = {"raw": "Raw document", "hybrid": "Hybrid text + EKG", "ekg": "EKG only"}
QUESTION_TYPES: tuple[str, ...] = ("temporal_order", "causal", "temporal_overlap", "party_resolution", "temporal_relation")
PAPER_TOKEN_F1 = {"raw": 0.323, "hybrid": 0.363, "ekg": 0.446}
CHUNK_SENTENCES = 4
TOP_K = 3
MAX_CONTEXT_WORDS = 1500
#: a gold evidence sentence is in a context when the quoted sentences cover this share of its span
SPAN_COVERAGE = 0.5


# ----------------------------------------------------------------------------- contexts


@dataclass
class Context:
    """What the answering model sees in one condition, with the sentences it quotes."""

    condition: str
    text: str
    blocks: list[Block]
    truncated: bool = False
    n_chunks: int = 0
    n_events: int = 0

    @property
    def words(self) -> int:
        return len(self.text.split())


def raw_chunks(doc: QADocument, size: int = CHUNK_SENTENCES) -> list[Block]:
    """Consecutive, non-overlapping windows of ``size`` FACTS sentences."""
    out = []
    for i in range(0, len(doc.facts), size):
        window = doc.facts[i : i + size]
        out.append(block_of(window, " ".join(s.text for s in window)))
    return out


_PASSAGES_HEADER = "Passages of the complaint:"
_GRAPH_HEADER = "Event graph:"


def _passages(chunks: Sequence[Block]) -> str:
    return _PASSAGES_HEADER + "\n" + "\n\n".join(f"[passage {i + 1}] {b.text}" for i, b in enumerate(chunks))


def _fit_chunks(chunks: Sequence[Block], budget: int) -> tuple[list[Block], bool]:
    kept, used = [], len(_PASSAGES_HEADER.split())
    for b in chunks:
        if used + b.words + 2 > budget:  # + the "[passage i]" label
            return kept, True
        kept.append(b)
        used += b.words + 2
    return kept, False


def build_contexts(
    lin: LinearizedEKG | None,
    retrieved: Sequence[Block],
    event_order: Sequence[str] | None = None,
    max_words: int = MAX_CONTEXT_WORDS,
) -> dict[str, Context]:
    """The three contexts of one question from its retrieved windows (rank order) and the EKG."""
    out: dict[str, Context] = {}
    chunks, cut = _fit_chunks(retrieved, max_words)
    passages = _passages(chunks)
    out["raw"] = Context("raw", passages, list(chunks), cut, n_chunks=len(chunks))
    if lin is None:
        empty = _GRAPH_HEADER + " (no graph for this complaint)"
        out["ekg"] = Context("ekg", empty, [], False)
        out["hybrid"] = Context("hybrid", empty + "\n\n" + passages, list(chunks), cut, n_chunks=len(chunks))
        return out
    head = len(_GRAPH_HEADER.split())
    event_blocks = {blk for _, blk in lin.events}
    text, blocks, cut_e = fit_ekg(lin, max(0, max_words - head), event_order)
    out["ekg"] = Context("ekg", _GRAPH_HEADER + "\n" + text, blocks, cut_e, n_events=sum(b in event_blocks for b in blocks))
    text_h, blocks_h, cut_h = fit_ekg(lin, max(0, max_words - head - len(passages.split())), event_order)
    out["hybrid"] = Context(
        "hybrid", _GRAPH_HEADER + "\n" + text_h + "\n\n" + passages, blocks_h + list(chunks), cut_h or cut,
        n_chunks=len(chunks), n_events=sum(b in event_blocks for b in blocks_h),
    )
    return out


def evidence_recall(context: Context, evidence: Sequence[str], sentences: dict[str, Sentence]) -> float:
    """Share of the gold evidence sentences the context contains (NaN without gold evidence).

    A gold sentence is contained when the sentences quoted in the context cover at least
    ``SPAN_COVERAGE`` of its character span, or its normalized text occurs in the context's text.
    """
    gold = [sentences[sid] for sid in evidence if sid in sentences]
    if not gold:
        return float("nan")
    spans = [s for b in context.blocks for s in b.spans]
    norm_ctx = normalize_answer(context.text)
    hit = 0
    for s in gold:
        found = False
        if s.span and s.span[1] > s.span[0]:
            lo, hi = s.span
            covered = np.zeros(hi - lo, dtype=bool)
            for a, b in spans:
                a, b = max(a, lo), min(b, hi)
                if b > a:
                    covered[a - lo : b - lo] = True
            found = covered.mean() >= SPAN_COVERAGE
        if not found:
            norm = normalize_answer(s.text)
            found = bool(norm) and norm in norm_ctx
        hit += found
    return hit / len(gold)


# ----------------------------------------------------------------------------- encoders


class _Embedder:
    """L2-normalized embeddings from an encoder name (argus.models.embeddings) or an object with ``encode``."""

    def __init__(self, encoder: str | Any = "embedded"):
        self.encoder = encoder

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if isinstance(self.encoder, str):
            from argus.models.embeddings import encode

            x = encode(texts, name=self.encoder)
        else:
            x = np.asarray(self.encoder.encode(texts), dtype="float32")
        if len(x) == 0:
            return x.reshape(0, -1) if x.ndim == 2 else np.zeros((0, 1), dtype="float32")
        return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def _rank(query: np.ndarray, items: np.ndarray) -> list[int]:
    if len(items) == 0:
        return []
    scores = items @ query
    return [int(i) for i in np.argsort(-scores, kind="stable")]


# ----------------------------------------------------------------------------- retrieval

#: the cut-offs of the retrieval recall (``bench/downstream.py``)
RECALL_KS: tuple[int, ...] = (1, 3, 5)
_TEMPORAL_PHRASES = {  # relation → (as the source, as the target)
    "BEFORE": ("before", "after"), "AFTER": ("after", "before"),
    "OVERLAP": ("overlapping", "overlapping"), "SAME_TIME": ("at the same time as", "at the same time as"),
}
_CAUSAL_PHRASES = {
    "CAUSES": ("causing", "because of"), "ENABLES": ("enabling", "enabled by"), "PREVENTS": ("preventing", "prevented by"),
}


@dataclass(frozen=True)
class RetrievalUnit:
    """One thing a retriever can return: the text the encoder embeds, the block a context shows,
    and the GOLD sentence ids it stands for (its ``evidence``, what recall is counted on)."""

    id: str
    text: str
    block: Block
    evidence: tuple[str, ...]


def sentence_units(doc: QADocument, size: int = CHUNK_SENTENCES) -> list[RetrievalUnit]:
    """The raw-text units: windows of ``size`` FACTS sentences (:func:`raw_chunks`; ``size=1``: sentences)."""
    units = []
    for i, block in enumerate(raw_chunks(doc, size)):
        ids = tuple(s.id for s in doc.facts[i * size : (i + 1) * size])
        units.append(RetrievalUnit(f"W{i + 1}" if size > 1 else ids[0], block.text, block, ids))
    return units


def gold_sentence_map(doc: QADocument) -> dict[str, list[str]]:
    """Graph sentence id → the gold sentence ids it stands for.

    Gold graphs cite gold ids (identity); a pipeline graph's own sentence ids go through their
    character spans (:func:`metrics.gold.sentence_alignment`, as ``metrics.gold.to_gold_space``
    does); pipeline ids are never compared with gold ids directly (both read ``S1``, ``S2``, …). An
    empty ``graph_sentences`` (a hand-built document that names none) is read as the gold index.
    """
    if doc.graph_sentences is doc.sentences or not doc.graph_sentences:
        return {sid: [sid] for sid in doc.sentences}
    from metrics.gold import sentence_alignment

    return sentence_alignment(list(doc.graph_sentences.values()), list(doc.sentences.values()))


def event_relations(graph: dict | Any) -> dict[str, list[str]]:
    """Event id → phrases naming its temporal and causal neighbours, e.g. ``after EV2 complaint
    (complain)``, ``because of EV1 complaint (complain)`` (each edge read from both of its ends)."""
    g = graph.model_dump() if hasattr(graph, "model_dump") else (graph or {})
    names = {ev["id"]: f"{ev['id']} {ev.get('type', 'other')} ({ev.get('verb') or ev.get('type') or ''})" for ev in g.get("events") or []}
    out: dict[str, list[str]] = {eid: [] for eid in names}
    for kind, phrases in (("temporal_edges", _TEMPORAL_PHRASES), ("causal_edges", _CAUSAL_PHRASES)):
        for e in g.get(kind) or []:
            s, t, rel = e.get("source"), e.get("target"), str(e.get("relation", "")).upper()
            if s not in names or t not in names:
                continue
            as_source, as_target = phrases.get(rel, (rel.lower() or "related to", rel.lower() or "related to"))
            out[s].append(f"{as_source} {names[t]}")
            out[t].append(f"{as_target} {names[s]}")
    return out


def event_units(doc: QADocument, lin: LinearizedEKG | None = None, *, quotes: bool = True) -> list[RetrievalUnit]:
    """The EKG units: one per event, in graph order. Text: the event's linearized line (type, verb,
    participants, time), its temporal and causal neighbours (:func:`event_relations`) and, with
    ``quotes``, the sentences it cites; evidence: those sentences as gold ids (:func:`gold_sentence_map`)."""
    if doc.graph is None:
        return []
    lin = lin if lin is not None else linearize_graph(doc.graph, doc.graph_sentences)
    g = doc.graph.model_dump() if hasattr(doc.graph, "model_dump") else doc.graph
    cited = {ev["id"]: ev.get("evidence") or [] for ev in g.get("events") or []}
    relations = event_relations(g)
    to_gold = gold_sentence_map(doc)
    order = {sid: i for i, sid in enumerate(doc.sentences)}
    units = []
    for eid, block in lin.events:
        line, _, quoted = block.text.partition("\n")
        rel = relations.get(eid) or []
        text = line + (f"; {'; '.join(rel)}" if rel else "") + (f"\n{quoted}" if quotes and quoted else "")
        gold = {gid for sid in cited.get(eid, []) for gid in to_gold.get(sid, [])}
        units.append(RetrievalUnit(eid, text, block, tuple(sorted(gold, key=lambda x: order.get(x, len(order))))))
    return units


class Retriever:
    """Units ranked by the cosine similarity of their text to a question (one embedding each)."""

    def __init__(self, units: Sequence[RetrievalUnit], embed: Callable[[Sequence[str]], np.ndarray]):
        self.units = list(units)
        self.vectors = embed([u.text for u in self.units]) if self.units else np.zeros((0, 1), dtype="float32")

    def ranked(self, query: np.ndarray) -> list[RetrievalUnit]:
        """Every unit, most similar first (ties in unit order)."""
        return [self.units[i] for i in _rank(query, self.vectors)]

    def top(self, query: np.ndarray, k: int) -> list[RetrievalUnit]:
        return self.ranked(query)[:k]


def retrieved_sentences(units: Sequence[RetrievalUnit]) -> list[str]:
    """The distinct gold sentence ids the units cite, in rank order (a unit's own in document order)."""
    return list(dict.fromkeys(sid for u in units for sid in u.evidence))


def recall_at_k(ranked: Sequence[RetrievalUnit], evidence: Sequence[str], k: int, *, unit: str = "units") -> float:
    """Share of the gold evidence sentences covered by the top ``k`` of ``ranked`` (NaN without evidence).

    ``unit="units"``: the sentences cited by the first ``k`` units; ``unit="sentences"``: the first
    ``k`` distinct sentences those units cite in rank order (an equal budget of sentences whatever a
    unit holds).
    """
    gold = set(evidence)
    if not gold:
        return float("nan")
    if unit == "units":
        got = set(retrieved_sentences(ranked[:k]))
    elif unit == "sentences":
        got = set(retrieved_sentences(ranked)[:k])
    else:
        raise ValueError("unit must be 'units' or 'sentences'")
    return len(gold & got) / len(gold)


def retrieval_recall(
    documents: Sequence[QADocument],
    encoder: str | Any = "embedded",
    ks: Sequence[int] = RECALL_KS,
    *,
    retrievers: Sequence[str] = ("raw", "ekg"),
) -> pd.DataFrame:
    """Recall@k of the gold evidence sentences of every FAQ question, one row per question and retriever.

    Retrievers (the units :func:`run_qa` retrieves from, with the same encoder): ``raw`` — the
    FACTS sentences one by one; ``raw-all`` — every sentence of the complaint; ``ekg`` — the events
    (:func:`event_units`); ``ekg-noquote`` — the events without the text of the sentences they cite
    (the graph alone). Columns: ``doc_id``, ``qid``, ``type``, ``retriever``, ``n_evidence``,
    ``n_units``, ``r@k`` (the first k units), ``s@k`` (the first k sentences, an equal budget) and
    ``sent@k`` (sentences the first k units return) for each k. A document without a graph has no
    EKG units (recall 0).
    """
    embed = _Embedder(encoder)
    rows = []
    for doc in documents:
        units: dict[str, list[RetrievalUnit]] = {}
        for name in retrievers:
            if name == "raw":
                units[name] = sentence_units(doc, 1)
            elif name == "raw-all":
                units[name] = [RetrievalUnit(s.id, s.text, block_of([s], s.text), (s.id,)) for s in doc.sentences.values()]
            elif name in ("ekg", "ekg-noquote"):
                units[name] = event_units(doc, quotes=name == "ekg")
            else:
                raise ArgusError(f"unknown retriever {name!r}")
        rets = {name: Retriever(u, embed) for name, u in units.items()}
        q_x = embed([q["question"] for q in doc.questions])
        for qi, q in enumerate(doc.questions):
            evidence = [sid for sid in q.get("evidence") or [] if sid in doc.sentences]
            for name, ret in rets.items():
                ranked = ret.ranked(q_x[qi])
                row = {"doc_id": doc.doc_id, "qid": q["id"], "type": q.get("type", "other"), "retriever": name,
                       "n_evidence": len(evidence), "n_units": len(ranked)}
                for k in ks:
                    row[f"r@{k}"] = recall_at_k(ranked, evidence, k, unit="units")
                    row[f"s@{k}"] = recall_at_k(ranked, evidence, k, unit="sentences")
                    row[f"sent@{k}"] = len(retrieved_sentences(ranked[:k]))
                rows.append(row)
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- running


AnswerFn = Callable[[str, str, str, str], Answered]


def _answer_fn(lm, adapter, ledger, program) -> AnswerFn:
    def ask(doc_id: str, condition: str, context: str, question: str) -> Answered:
        res, error, dt = metered_call(lm, adapter, ledger, doc_id=doc_id, program_label=f"DocumentQA/{condition}",
                                      call=lambda: program(context=context, question=question))
        if error is not None:
            return Answered(None, error, dt)
        answer = (res.outputs or {}).get("answer")
        if res.outputs is None or not str(answer or "").strip():
            return Answered(None, "; ".join(res.errors)[:300] or "no answer", dt)
        return Answered(str(answer).strip(), None, dt)

    return ask


def run_qa(
    split: str = "dev",
    graphs: str | Path = "gold",
    docs: int | Sequence[str] | None = None,
    questions_per_doc: int | None = None,
    out: str | Path | None = None,
    config=None,
    encoder: str | Any = "embedded",
    lm=None,
    *,
    top_k: int = TOP_K,
    chunk_sentences: int = CHUNK_SENTENCES,
    max_context_words: int = MAX_CONTEXT_WORDS,
    documents: Sequence[QADocument] | None = None,
    n_resamples: int = 10_000,
) -> dict[str, pd.DataFrame]:
    """Run the three-condition QA comparison; returns DataFrames keyed ``questions`` (one row per
    question and condition), ``summary`` (per condition), ``by_type`` (condition × question type),
    ``paired`` (every pair of conditions), ``evidence`` (evidence recall per condition and type).

    ``docs``: the first N documents of the split, or a list of doc ids; ``questions_per_doc``: the
    first N FAQ questions of each; ``config``: an ``ArgusConfig``, a path to one, or None (the
    default / ``./argus.yaml``); ``lm``: a ready ``dspy.LM`` instead of the config's ``qa`` stage;
    ``encoder``: an encoder name for :mod:`argus.models.embeddings` or an object with ``encode(texts)``;
    ``documents``: already loaded documents (tests). ``out`` writes CSVs, ``qa.md`` and
    ``qa_ledger.jsonl``.
    """
    from argus.config import ArgusConfig
    from argus.models.lm import SchemaJSONAdapter
    from programs.qa import DocumentQA

    t_start = time.perf_counter()
    if config is None or isinstance(config, (str, Path)):
        config = ArgusConfig.load(config)
    if documents is None:
        documents = load_qa_documents(split, graphs)
    documents = list(documents)
    if isinstance(docs, int):
        documents = documents[:docs]
    elif docs:
        wanted = list(docs)
        known = {d.doc_id for d in documents}
        missing = [w for w in wanted if w not in known]
        if missing:
            raise InputError(f"--docs: unknown doc id(s) {', '.join(missing)} in split {split!r}")
        documents = [d for d in documents if d.doc_id in set(wanted)]
    if not documents:
        raise InputError(f"no documents with FAQ questions (split {split!r})")
    no_graph = [d.doc_id for d in documents if d.graph is None]

    out_dir = Path(out) if out is not None else None
    ledger = experiment_ledger(out_dir, "qa")
    lm = answering_lm(config, lm)
    ask = _answer_fn(lm, SchemaJSONAdapter(), ledger, DocumentQA(max_retries=1))
    embed = _Embedder(encoder)

    rows = []
    for doc in documents:
        questions = doc.questions[:questions_per_doc] if questions_per_doc else doc.questions
        passages = Retriever(sentence_units(doc, chunk_sentences), embed)
        lin = linearize_graph(doc.graph, doc.graph_sentences) if doc.graph is not None else None
        events = Retriever(event_units(doc, lin), embed) if lin and lin.events else None
        q_x = embed([q["question"] for q in questions])
        for qi, q in enumerate(questions):
            retrieved = [u.block for u in passages.top(q_x[qi], top_k)]
            order = [u.id for u in events.ranked(q_x[qi])] if events is not None else None
            contexts = build_contexts(lin, retrieved, order, max_context_words)
            for cond in CONDITIONS:
                ctx = contexts[cond]
                res = ask(doc.doc_id, cond, ctx.text, q["question"])
                rows.append({
                    "doc_id": doc.doc_id, "qid": q["id"], "type": q.get("type", "other"), "condition": cond,
                    "question": q["question"], "gold": q.get("answer", ""), "answer": res.answer,
                    "ok": res.error is None, "error": res.error,
                    "f1": token_f1(res.answer, q.get("answer", "")) if res.error is None else float("nan"),
                    "evidence_recall": evidence_recall(ctx, q.get("evidence") or [], doc.sentences),
                    "n_evidence": len(q.get("evidence") or []),
                    "context_words": ctx.words, "n_chunks": ctx.n_chunks, "n_events": ctx.n_events,
                    "truncated": ctx.truncated, "seconds": round(res.seconds, 3),
                })
    tables = summarize(pd.DataFrame(rows), n_resamples=n_resamples)
    totals = ledger.totals()
    tables["questions"].attrs.update(
        seconds=time.perf_counter() - t_start, graphs="gold" if str(graphs) == "gold" else str(graphs),
        model=getattr(lm, "model", type(lm).__name__), docs_without_graph=no_graph,
        ledger=totals.as_dict(),
    )
    for t in tables.values():
        t.attrs.update({k: v for k, v in tables["questions"].attrs.items()})
    if out_dir is not None:
        write_tables(tables, out_dir)
    return tables


def summarize(rows: pd.DataFrame, n_resamples: int = 10_000) -> dict[str, pd.DataFrame]:
    """The summary, per-type, paired and evidence-recall tables from the per-question rows."""
    if rows.empty:
        rows = pd.DataFrame(columns=["doc_id", "qid", "type", "condition", "ok", "f1", "evidence_recall", "context_words", "truncated"])
    key = ["doc_id", "qid"]
    ok_all = rows.groupby(key)["ok"].all() if len(rows) else pd.Series(dtype=bool)
    included_keys = set(ok_all[ok_all].index)
    rows = rows.copy()
    rows["included"] = [k in included_keys for k in zip(rows["doc_id"], rows["qid"])]
    n_questions = len(ok_all)
    n_excluded = int((~ok_all).sum()) if n_questions else 0
    failed_calls = {c: int((~rows.loc[rows["condition"] == c, "ok"].astype(bool)).sum()) for c in CONDITIONS}
    inc = rows[rows["included"]]

    summary = []
    for c in CONDITIONS:
        sub = inc[inc["condition"] == c]
        allc = rows[rows["condition"] == c]
        summary.append({
            "condition": c, "label": CONDITION_LABELS[c], "n": len(sub),
            "token_f1": float(sub["f1"].mean()) if len(sub) else float("nan"),
            "f1_std": float(sub["f1"].std(ddof=1)) if len(sub) > 1 else float("nan"),
            "evidence_recall": float(allc["evidence_recall"].mean()) if len(allc) else float("nan"),
            "context_words": float(allc["context_words"].mean()) if len(allc) else float("nan"),
            "truncated": int(allc["truncated"].astype(bool).sum()) if len(allc) else 0,
            "failed_calls": failed_calls[c], "paper_token_f1": PAPER_TOKEN_F1[c],
        })
    summary = pd.DataFrame(summary)

    types = [t for t in QUESTION_TYPES if t in set(rows["type"])] + sorted(set(rows["type"]) - set(QUESTION_TYPES))
    by_type = []
    evidence = []
    for t in types:
        for c in CONDITIONS:
            sub = inc[(inc["type"] == t) & (inc["condition"] == c)]
            by_type.append({"type": t, "condition": c, "n": len(sub), "token_f1": float(sub["f1"].mean()) if len(sub) else float("nan")})
            alls = rows[(rows["type"] == t) & (rows["condition"] == c)]
            evidence.append({"type": t, "condition": c, "n": len(alls), "evidence_recall": float(alls["evidence_recall"].mean()) if len(alls) else float("nan")})
    for c in CONDITIONS:
        alls = rows[rows["condition"] == c]
        evidence.append({"type": "all", "condition": c, "n": len(alls), "evidence_recall": float(alls["evidence_recall"].mean()) if len(alls) else float("nan")})
    by_type = pd.DataFrame(by_type, columns=["type", "condition", "n", "token_f1"])
    evidence = pd.DataFrame(evidence, columns=["type", "condition", "n", "evidence_recall"])

    # paired on the included questions, in the same (doc, qid) order for every condition
    scores = {}
    for c in ("ekg", "hybrid", "raw"):  # a − b reads as the paper's EKG − Raw, EKG − Hybrid, Hybrid − Raw
        sub = inc[inc["condition"] == c].sort_values(key)
        scores[c] = sub["f1"].astype(float).tolist()
    if included_keys:
        paired = paired_table(scores, n_resamples=n_resamples, n_permutations=n_resamples)
    else:
        paired = pd.DataFrame(
            columns=["a", "b", "n", "mean_a", "mean_b", "mean_diff", "ci_lo", "ci_hi", "wilcoxon_stat", "wilcoxon_p", "permutation_p"])
    meta = {"n_questions": n_questions, "n_excluded": n_excluded, "n_included": len(included_keys), "failed_calls": failed_calls}
    out = {"questions": rows, "summary": summary, "by_type": by_type, "paired": paired, "evidence": evidence}
    for t in out.values():
        t.attrs.update(meta)
    return out


# ----------------------------------------------------------------------------- reporting


def format_report(tables: dict[str, pd.DataFrame]) -> str:
    """The summary, per-type, paired and evidence tables as Markdown, with a caption."""
    s, a = tables["summary"], tables["summary"].attrs
    by_type = tables["by_type"].pivot(index="type", columns="condition", values="token_f1")
    by_type = by_type.reindex(columns=list(CONDITIONS)).reset_index()
    n_type = tables["by_type"].groupby("type")["n"].max().rename("n")
    by_type = by_type.merge(n_type, left_on="type", right_index=True)
    ev = tables["evidence"].pivot(index="type", columns="condition", values="evidence_recall").reindex(columns=list(CONDITIONS)).reset_index()
    graphs = a.get("graphs", "gold")
    parts = [
        "## Document-scoped QA: token F1 by retrieval condition",
        "",
        markdown_table(s, ["label", "n", "token_f1", "f1_std", "evidence_recall", "context_words", "truncated", "failed_calls", "paper_token_f1"]),
        "",
        f"Model {a.get('model', '?')}; graphs: {'gold' if graphs == 'gold' else graphs}; "
        f"{a.get('n_questions', 0)} questions, {a.get('n_excluded', 0)} excluded from all three conditions because an LM "
        f"call failed in at least one (failed calls per condition: {a.get('failed_calls', {})}). "
        "token_f1 over the included questions; evidence_recall (share of gold evidence sentences present in the "
        "context) over all questions. paper_token_f1 is the ARGUS paper's figure (its own 300-question corpus of "
        "10 complaints, GPT-4o): NOT comparable with this run (different corpus, questions and model).",
        "",
        "### Token F1 by question type",
        "",
        markdown_table(by_type, ["type", "n", *CONDITIONS]),
        "",
        "### Paired comparisons (a − b; bootstrap 95% CI, Wilcoxon signed-rank, sign-flip permutation)",
        "",
        markdown_table(tables["paired"], ["a", "b", "n", "mean_diff", "ci_lo", "ci_hi", "wilcoxon_p", "permutation_p"]) if len(tables["paired"]) else "(no question scored in all three conditions)",
        "",
        "### Answer-evidence recall by question type",
        "",
        markdown_table(ev, ["type", *CONDITIONS]),
    ]
    if a.get("docs_without_graph"):
        parts += ["", f"Documents without a graph (EKG context empty): {', '.join(a['docs_without_graph'])}"]
    if "seconds" in a:
        parts += ["", f"Wall time {a['seconds']:.1f} s; ledger {a.get('ledger', {})}"]
    return "\n".join(parts) + "\n"


def write_tables(tables: dict[str, pd.DataFrame], out: str | Path) -> list[Path]:
    """``qa_<name>.csv`` for every table and ``qa.md`` (the report) in ``out``."""
    from argus.io import write_text_atomic

    out = Path(out)
    paths = []
    for name, df in tables.items():
        paths.append(write_text_atomic(out / f"qa_{name}.csv", df.to_csv(index=False)))
    paths.append(write_text_atomic(out / "qa.md", format_report(tables)))
    return paths


def command(
    split: str = "dev",
    graphs: str = "gold",
    docs: Optional[str] = None,  # noqa: UP045 (typer needs Optional on older Pythons)
    questions_per_doc: Optional[int] = None,  # noqa: UP045
    out: Optional[Path] = None,  # noqa: UP045
    config: Optional[Path] = None,  # noqa: UP045
    model: Optional[str] = None,  # noqa: UP045
    encoder: str = "embedded",
) -> None:
    """Document-scoped QA: raw passages vs raw + linearized EKG vs EKG only (token F1, paired tests).

    --graphs gold (default) or a folder of *.ekg.json; --docs N (the first N) or id,id; --model sets
    the qa stage's model (default local/smollm2); --out DIR writes qa_*.csv, qa.md, qa_ledger.jsonl.
    """
    import typer

    from argus.config import ArgusConfig

    try:
        overrides = {"lm.stages.qa.model": model} if model else None
        cfg = ArgusConfig.load(config, overrides)
        doc_arg: int | list[str] | None = None
        if docs:
            doc_arg = int(docs) if docs.strip().isdigit() else [d.strip() for d in docs.split(",") if d.strip()]
        tables = run_qa(split=split, graphs=graphs, docs=doc_arg, questions_per_doc=questions_per_doc,
                        out=out, config=cfg, encoder=encoder)
    except ArgusError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc
    typer.echo(format_report(tables))
    if out is not None:
        typer.echo(f"wrote {Path(out) / 'qa.md'}, {Path(out) / 'qa_summary.csv'} (and the other qa_*.csv), {Path(out) / 'qa_ledger.jsonl'}")
