"""Optimization examples from the annotated complaints, and the chunk-level program GEPA evolves.

A chunk example is one window of a gold FACTS narrative (the gold sentence ids, the gold fact
sentences in order, ``max_sentences`` per window with ``overlap``) with the part of the gold graph
that the window states: the events citing a sentence of the window (evidence trimmed to it), the
entities taking part in them, the edges between them. Examples carry what ``metrics.gepa.GraphMetric``
reads: ``sentence_ids``, ``fact_ids``, ``sentences`` and ``gold_graph``.

``ChunkGraphProgram`` runs Stage 1 then Stage 2 on a chunk exactly as the pipeline does (with the
same validation and repair) and returns a ``dspy.Prediction`` with the four graph lists. Its
predictors are named like the pipeline's (``stage1.extract.predict``, ``stage2.relate.predict``),
so an evolved state transfers to ``programs.ArgusPrograms`` one to one.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import dspy

from argus.chunking import window_chunks
from argus.paths import complaints_dir
from argus.schema import FRAME_HINTS, EventGraph
from argus.validation import repair_stage1, repair_stage2
from programs.stage1 import Stage1Extractor
from programs.stage2 import Stage2Extractor


def _gold_docs(split: str, root: Path | None = None) -> list[dict]:
    base = (root / split) if root else complaints_dir(split)
    if not base.exists():
        return []
    return [json.loads((d / "gold.json").read_text(encoding="utf-8")) for d in sorted(base.iterdir()) if (d / "gold.json").exists()]


def restrict_graph(graph: dict, ids: list[str]) -> dict:
    """The part of a gold graph that the sentences ``ids`` state (see the module docstring)."""
    keep = set(ids)
    events = []
    for ev in graph["events"]:
        evidence = [s for s in ev["evidence"] if s in keep]
        if evidence:
            events.append({**ev, "evidence": evidence})
    ev_ids = {e["id"] for e in events}
    ent_ids = {p["entity"] for e in events for p in e["participants"]}
    entities = [e for e in graph["entities"] if e["id"] in ent_ids]
    by_id = {e["id"]: e for e in events}

    def edges(key):
        out = []
        for e in graph[key]:
            if e["source"] in ev_ids and e["target"] in ev_ids:
                evidence = [s for s in e["evidence"] if s in keep] or sorted(
                    set(by_id[e["source"]]["evidence"]) | set(by_id[e["target"]]["evidence"]), key=lambda s: int(s[1:]))
                out.append({**e, "evidence": evidence})
        return out

    return {"entities": entities, "events": events, "temporal_edges": edges("temporal_edges"), "causal_edges": edges("causal_edges")}


def chunk_examples(
    split: str,
    *,
    docs: int | None = None,
    doc_offset: int = 0,
    chunks_per_doc: int | None = None,
    max_sentences: int = 6,
    overlap: int = 2,
    root: Path | None = None,
) -> list[dspy.Example]:
    """Chunk examples of ``docs`` documents of ``split`` (after skipping ``doc_offset``)."""
    out: list[dspy.Example] = []
    golds = _gold_docs(split, root)[doc_offset:]
    if docs is not None:
        golds = golds[:docs]
    for gold in golds:
        sents = [s for sec in gold["sections"] if sec["kind"] == "facts" for p in sec["paragraphs"] for s in p]
        facts = [s for s in sents if s["fact"]]
        text = {s["id"]: s["text"] for s in facts}
        chunks = window_chunks([s["id"] for s in facts], max_sentences=max_sentences, overlap=overlap)
        if chunks_per_doc is not None:
            chunks = chunks[:chunks_per_doc]
        for k, ch in enumerate(chunks, 1):
            ids = list(ch.sentence_ids)
            sentences = [(sid, text[sid]) for sid in ids]
            out.append(dspy.Example(
                example_id=f"{gold['doc_id']}:C{k}",
                doc_id=gold["doc_id"],
                chunk_text="\n".join(f"[{sid}] {t}" for sid, t in sentences),
                sentence_ids=ids,
                fact_ids=ids,
                sentences=sentences,
                gold_graph=restrict_graph(gold["graph"], ids),
            ).with_inputs("chunk_text", "sentence_ids"))
    return out


def examples_hash(examples: list[dspy.Example]) -> str:
    """A stable hash of a data split (every field of every example), recorded in every manifest."""
    h = hashlib.sha256()
    for ex in examples:
        h.update(json.dumps(ex.toDict(), sort_keys=True, default=str).encode())
    return h.hexdigest()[:16]


class ChunkGraphProgram(dspy.Module):
    """Stage 1 → repair → Stage 2 → repair on one chunk, as in ``ArgusPipeline.extract_chunk``."""

    def __init__(self, max_retries: int = 1, framenet_hints: bool = False):
        super().__init__()
        self.stage1 = Stage1Extractor(max_retries=max_retries)
        self.stage2 = Stage2Extractor(max_retries=max_retries)
        self.framenet_hints = framenet_hints

    def forward(self, chunk_text: str, sentence_ids: list[str]) -> dspy.Prediction:
        allowed = set(sentence_ids)
        hints = "\n".join(f"{k}: {v}" for k, v in FRAME_HINTS.items()) if self.framenet_hints else ""
        r1 = self.stage1(chunk_text=chunk_text, sentence_ids=list(sentence_ids), frame_hints=hints)
        out1 = r1.outputs or {"entities": [], "events": []}
        entities, events, _, _ = repair_stage1(out1["entities"], out1["events"], allowed)
        temporal, causal = [], []
        if len(events) >= 2:
            stage1_json = json.dumps(
                {"entities": [e.model_dump() for e in entities], "events": [e.model_dump(exclude={"confidence"}) for e in events]},
                ensure_ascii=False,
            )
            r2 = self.stage2(chunk_text=chunk_text, stage1_json=stage1_json, sentence_ids=list(sentence_ids),
                             event_ids=[e.id for e in events])
            out2 = r2.outputs or {"temporal_edges": [], "causal_edges": []}
            temporal, causal, _ = repair_stage2(out2["temporal_edges"], out2["causal_edges"], events, allowed)
        graph = EventGraph(entities=entities, events=events, temporal_edges=temporal, causal_edges=causal)
        return dspy.Prediction(**{k: list(getattr(graph, k)) for k in ("entities", "events", "temporal_edges", "causal_edges")})


def instructions_of(module: dspy.Module) -> dict[str, str]:
    """Predictor name → instruction text."""
    return {name: pred.signature.instructions for name, pred in module.named_predictors()}


def apply_instructions(module: dspy.Module, instructions: dict[str, str]) -> dspy.Module:
    """Set the instructions of the named predictors (other predictors keep theirs)."""
    for name, pred in module.named_predictors():
        if name in instructions:
            pred.signature = pred.signature.with_instructions(instructions[name])
    return module


# ----------------------------------------------------------------------------- auxiliary programs


def fact_examples(split: str, *, docs: int | None = None, doc_offset: int = 0, batch_size: int = 12,
                  batches_per_doc: int | None = None, root: Path | None = None) -> list[dspy.Example]:
    """Fact-fallback examples: batches of FACTS-section sentences with their gold fact labels."""
    out: list[dspy.Example] = []
    golds = _gold_docs(split, root)[doc_offset:]
    for gold in golds[:docs] if docs is not None else golds:
        sents = [s for sec in gold["sections"] if sec["kind"] == "facts" for p in sec["paragraphs"] for s in p]
        batches = [sents[i:i + batch_size] for i in range(0, len(sents), batch_size)]
        for k, batch in enumerate(batches[:batches_per_doc] if batches_per_doc else batches, 1):
            out.append(dspy.Example(
                example_id=f"{gold['doc_id']}:F{k}", doc_id=gold["doc_id"],
                sentences=[(s["id"], s["text"]) for s in batch],
                gold_fact_ids=[s["id"] for s in batch if s["fact"]],
            ).with_inputs("sentences"))
    return out


def _describe_gold(ev: dict, names: dict[str, str], text: dict[str, str], evidence: list[str]) -> str:
    """The resolver's view of an event (as ``argus.merge.describe_event`` writes it)."""
    parts = ", ".join(f"{names.get(p['entity'], p['entity'])} ({p['role']})" for p in ev["participants"]) or "none"
    when = ev["time"].get("value") or ev["time"]["kind"]
    quoted = " ".join(f"[{s}] {text.get(s, '')}" for s in evidence)
    return f"{ev['type']}: {ev['verb']} — \"{ev['trigger']}\"; participants: {parts}; time: {when}. Evidence: {quoted}"


def resolver_examples(split: str, *, docs: int | None = None, doc_offset: int = 0, pairs_per_doc: int = 4,
                      root: Path | None = None) -> list[dspy.Example]:
    """Cross-chunk resolver examples from the gold graph, three kinds per document in turn:

    - the same gold event stated in two sentences, each half shown as its own record →
      ``same_occurrence`` true, relation NONE;
    - two gold events linked by a gold edge → not the same, the edge's relation (from A to B);
    - two gold events far apart with no edge between them → not the same, NONE.
    """
    out: list[dspy.Example] = []
    golds = _gold_docs(split, root)[doc_offset:]
    for gold in golds[:docs] if docs is not None else golds:
        g = gold["graph"]
        text = {s["id"]: s["text"] for sec in gold["sections"] for p in sec["paragraphs"] for s in p}
        names = {e["id"]: e["name"] for e in g["entities"]}
        by_id = {e["id"]: e for e in g["events"]}
        same = [(ev, ev["evidence"][:1], ev["evidence"][-1:]) for ev in g["events"] if len(ev["evidence"]) >= 2]
        linked = [(by_id[e["source"]], by_id[e["target"]], e["relation"]) for e in g["temporal_edges"] + g["causal_edges"]
                  if e["source"] in by_id and e["target"] in by_id]
        linked_pairs = {frozenset((a["id"], b["id"])) for a, b, _ in linked}
        events = g["events"]
        unlinked = [(a, b) for i, a in enumerate(events) for b in events[i + 3:] if frozenset((a["id"], b["id"])) not in linked_pairs]
        items = []
        for k in range(pairs_per_doc):
            kind = k % 3
            if kind == 0 and same:
                ev, ea, eb = same[(k // 3) % len(same)]
                items.append((_describe_gold(ev, names, text, ea), _describe_gold(ev, names, text, eb), True, "NONE"))
            elif kind == 1 and linked:
                a, b, rel = linked[(k // 3) % len(linked)]
                items.append((_describe_gold(a, names, text, a["evidence"]), _describe_gold(b, names, text, b["evidence"]), False, rel))
            elif unlinked:
                a, b = unlinked[(k * 7) % len(unlinked)]
                items.append((_describe_gold(a, names, text, a["evidence"]), _describe_gold(b, names, text, b["evidence"]), False, "NONE"))
        for k, (da, db, same_occ, rel) in enumerate(items, 1):
            out.append(dspy.Example(example_id=f"{gold['doc_id']}:R{k}", doc_id=gold["doc_id"], event_a=da, event_b=db,
                                    gold_same=same_occ, gold_relation=rel).with_inputs("event_a", "event_b"))
    return out


def qa_examples(split: str, *, docs: int | None = None, doc_offset: int = 0, questions_per_doc: int | None = None,
                max_context_words: int = 600) -> list[dspy.Example]:
    """QA examples: FAQ questions with the linearized gold EKG as context (the EKG-only condition of
    ``argus experiment qa``, capped at ``max_context_words``) and the gold answer."""
    from argus.experiments.qa import fit_ekg, linearize_graph, load_qa_documents

    out: list[dspy.Example] = []
    documents = load_qa_documents(split, "gold")[doc_offset:]
    for doc in documents[:docs] if docs is not None else documents:
        context, _, _ = fit_ekg(linearize_graph(doc.graph, doc.graph_sentences), max_context_words, None)
        questions = doc.questions[:questions_per_doc] if questions_per_doc else doc.questions
        for q in questions:
            out.append(dspy.Example(example_id=f"{doc.doc_id}:{q['id']}", doc_id=doc.doc_id, context=context,
                                    question=q["question"], gold_answer=q["answer"]).with_inputs("context", "question"))
    return out


def chunker_examples(split: str, *, docs: int | None = None, doc_offset: int = 0, max_sentences: int = 8,
                     root: Path | None = None) -> list[dspy.Example]:
    """Chunker examples: a document's gold fact sentences and the maximum chunk size."""
    out: list[dspy.Example] = []
    golds = _gold_docs(split, root)[doc_offset:]
    for gold in golds[:docs] if docs is not None else golds:
        facts = [s for sec in gold["sections"] if sec["kind"] == "facts" for p in sec["paragraphs"] for s in p if s["fact"]]
        out.append(dspy.Example(
            example_id=f"{gold['doc_id']}:K", doc_id=gold["doc_id"],
            sentences=[(s["id"], s["text"]) for s in facts], sentence_ids=[s["id"] for s in facts],
            max_chunk_sentences=max_sentences,
        ).with_inputs("sentences", "max_chunk_sentences"))
    return out


class AuxProgram(dspy.Module):
    """One pipeline program (``fact_fallback``, ``chunker``, ``resolver`` or ``qa``) under its ``ArgusPrograms`` name,
    returning a ``dspy.Prediction`` of its outputs (what GEPA and the metrics read)."""

    def __init__(self, name: str, max_retries: int = 1):
        super().__init__()
        from programs.chunker import SemanticChunker
        from programs.fact_fallback import FactFallback

        from programs.qa import DocumentQA
        from programs.resolver import CrossChunkResolver

        factories = {"fact_fallback": FactFallback, "chunker": SemanticChunker, "resolver": CrossChunkResolver,
                     "qa": DocumentQA}
        if name not in factories:
            raise ValueError(f"no auxiliary program {name!r}; known: {', '.join(factories)}")
        self.name = name
        setattr(self, name, factories[name](max_retries=max_retries))

    def forward(self, **inputs) -> dspy.Prediction:
        res = getattr(self, self.name)(**inputs)
        return dspy.Prediction(**(res.outputs or {}), attempts=res.attempts)
