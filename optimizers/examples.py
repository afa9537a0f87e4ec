"""Optimization examples from the annotated complaints.

A chunk example is one window of a gold FACTS narrative (the gold fact sentences in order,
``max_sentences`` per window with ``overlap``) with the part of the gold graph that the window
states: the events citing a sentence of the window (evidence trimmed to it), the entities taking
part in them, the edges between them. Its inputs are what ``ArgusPipeline.forward(document, chunk)``
takes — the gold document as a preprocessed ``Document`` (gold sentence ids, gold fact labels) and
the ``Chunk`` — so GEPA's minibatches run the pipeline's own Stage 1 → repair → Stage 2 → repair
code. It also carries what ``metrics.gepa.GraphMetric`` reads: ``sentence_ids``, ``fact_ids``,
``sentences`` and ``gold_graph``.

A document example is a whole annotated complaint (its ``complaint.txt`` and gold): what candidates
are deployed on to measure their quality and cost per document.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import dspy

from argus.designs.chunking import window_chunks
from argus.text.documents import Document, Section, Sentence
from argus.graph.merge import event_description
from argus.paths import complaints_dir
from argus.graph.schema import Chunk, id_order

def _doc_dirs(split: str, root: Path | None = None) -> list[Path]:
    base = (root / split) if root else complaints_dir(split)
    if not base.exists():
        return []
    return [d for d in sorted(base.iterdir()) if (d / "gold.json").exists()]


def _gold_docs(split: str, root: Path | None = None) -> list[dict]:
    """The gold annotations of a split, each with the text of its ``complaint.txt`` under ``"_text"``
    (None when the file is missing)."""
    out = []
    for d in _doc_dirs(split, root):
        gold = json.loads((d / "gold.json").read_text(encoding="utf-8"))
        complaint = d / "complaint.txt"
        gold["_text"] = complaint.read_text(encoding="utf-8") if complaint.is_file() else None
        out.append(gold)
    return out


def select_docs(items: list, *, docs: int | None = None, doc_offset: int = 0, ids: list[str] | None = None,
                key=lambda x: x["doc_id"]) -> list:
    """The documents a split names: ``ids`` in that order, else ``docs`` after skipping ``doc_offset``."""
    if ids is not None:
        by_id = {key(x): x for x in items}
        missing = [i for i in ids if i not in by_id]
        if missing:
            from argus.errors import ConfigError

            raise ConfigError(f"documents {missing} are not annotated documents of this split; known: {sorted(by_id)}")
        return [by_id[i] for i in ids]
    items = items[doc_offset:]
    return items[:docs] if docs is not None else items


def gold_document(gold: dict, text: str | None = None) -> Document:
    """The gold complaint as a preprocessed ``Document``: gold sentence ids, spans, sections and fact
    labels; the narrative is the FACTS sections; the caption read from the text.

    ``text`` (default ``gold["_text"]``, the complaint as filed) is what the gold spans index, so
    grounding aligns to the filing. Without it the text is the sentences joined by newlines and
    every span is taken where its sentence stands in that text."""
    from argus.text.caption import read_caption

    text = text if text is not None else gold.get("_text")
    joined = text is None
    pieces: list[str] = []
    at = 0
    sections, sentences, narrative = [], [], []
    for sec in gold["sections"]:
        sents = [s for p in sec["paragraphs"] for s in p]
        if not sents:
            continue
        first = len(sentences)
        for para, p in enumerate(sec["paragraphs"], 1):
            for s in p:
                if joined:
                    span = (at, at + len(s["text"]))
                    pieces.append(s["text"])
                    at = span[1] + 1
                else:
                    span = tuple(s["span"])
                sentences.append(Sentence(id=s["id"], text=s["text"], span=span, section=sec["kind"],
                                          section_heading=sec.get("heading") or "", paragraph=para, fact=bool(s["fact"]),
                                          fact_path="section"))
                if sec["kind"] == "facts":
                    narrative.append(s["id"])
        spans = [x.span for x in sentences[first:]]
        sections.append(Section(heading=sec.get("heading") or "", kind=sec["kind"],
                                span=(min(a for a, _ in spans), max(b for _, b in spans))))
    if joined:
        text = "\n".join(pieces)
    caption = None
    if not joined and sections and sections[0].span[0] > 0:
        caption = read_caption(text, sections[0].span[0])
    return Document(doc_id=gold["doc_id"], source=f"gold:{gold['doc_id']}", text=text, sections=sections,
                    sentences=sentences, facts_section_found=bool(narrative), narrative_ids=narrative, caption=caption)


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
                    set(by_id[e["source"]]["evidence"]) | set(by_id[e["target"]]["evidence"]), key=id_order)
                out.append({**e, "evidence": evidence})
        return out

    return {"entities": entities, "events": events, "temporal_edges": edges("temporal_edges"), "causal_edges": edges("causal_edges")}


def chunk_examples(
    split: str,
    *,
    docs: int | None = None,
    doc_offset: int = 0,
    ids: list[str] | None = None,
    chunks_per_doc: int | None = None,
    max_sentences: int = 6,
    overlap: int = 2,
    root: Path | None = None,
) -> list[dspy.Example]:
    """Chunk examples of the documents of ``split`` that ``ids`` or ``docs``/``doc_offset`` name."""
    out: list[dspy.Example] = []
    for gold in select_docs(_gold_docs(split, root), docs=docs, doc_offset=doc_offset, ids=ids):
        document = gold_document(gold)
        facts = [s for s in document.narrative if s.fact]
        chunks = window_chunks([s.id for s in facts], max_sentences=max_sentences, overlap=overlap)
        if chunks_per_doc is not None:
            chunks = chunks[:chunks_per_doc]
        idx = document.index()
        for k, ch in enumerate(chunks, 1):
            ids_ = list(ch.sentence_ids)
            out.append(dspy.Example(
                example_id=f"{gold['doc_id']}:C{k}",
                doc_id=gold["doc_id"],
                document=document,
                chunk=Chunk(id=f"C{k}", sentence_ids=ids_),
                sentence_ids=ids_,
                fact_ids=ids_,
                sentences=[(sid, idx[sid].text) for sid in ids_],
                gold_graph=restrict_graph(gold["graph"], ids_),
            ).with_inputs("document", "chunk"))
    return out


@dataclass(frozen=True)
class DocumentExample:
    """A whole complaint: the file a deployment run reads and its gold annotation (None without one)."""

    doc_id: str
    split: str
    path: Path
    gold_path: Path | None

    def gold(self):
        if self.gold_path is None:
            return None
        from metrics.gold import load_gold

        return load_gold(self.gold_path)

    @property
    def ref(self) -> str:
        """How a manifest names it: ``<split>/<doc_id>`` under the shared data, else its folder."""
        folder = self.path.parent
        under_data = bool(self.split) and folder.parent == complaints_dir(self.split)
        return f"{self.split}/{self.doc_id}" if under_data else str(folder)


def document_examples(split: str, *, docs: int | None = None, doc_offset: int = 0, ids: list[str] | None = None,
                      root: Path | None = None) -> list[DocumentExample]:
    dirs = select_docs(_doc_dirs(split, root), docs=docs, doc_offset=doc_offset, ids=ids, key=lambda d: d.name)
    return [DocumentExample(d.name, split, d / "complaint.txt", d / "gold.json") for d in dirs]


def examples_hash(examples: list[dspy.Example]) -> str:
    """A stable hash of a data split (every field of every example), recorded in every manifest."""
    h = hashlib.sha256()
    for ex in examples:
        if isinstance(ex, DocumentExample):
            h.update(ex.doc_id.encode())
            h.update(hashlib.sha256(ex.path.read_bytes() + ex.gold_path.read_bytes()).digest())
            continue
        data = {k: (v.model_dump(mode="json") if hasattr(v, "model_dump") else v) for k, v in ex.toDict().items()}
        h.update(json.dumps(data, sort_keys=True, default=str).encode())
    return h.hexdigest()[:16]


PROGRAMS_PREFIX = "programs."


def program_name(predictor: str) -> str:
    """A predictor's name as ``programs.ArgusPrograms`` names it (``stage1.extract.predict``), also when
    it is reached through the pipeline (``programs.stage1.extract.predict``)."""
    return predictor[len(PROGRAMS_PREFIX):] if predictor.startswith(PROGRAMS_PREFIX) else predictor


def instructions_of(module: dspy.Module) -> dict[str, str]:
    """Predictor name (as ``ArgusPrograms`` names it) → instruction text."""
    return {program_name(name): pred.signature.instructions for name, pred in module.named_predictors()}


def apply_instructions(module: dspy.Module, instructions: dict[str, str]) -> dspy.Module:
    """Set the instructions of the named predictors (other predictors keep theirs)."""
    for name, pred in module.named_predictors():
        text = instructions.get(program_name(name), instructions.get(name))
        if text is not None:
            pred.signature = pred.signature.with_instructions(text)
    return module


# ----------------------------------------------------------------------------- auxiliary programs


def fact_examples(split: str, *, docs: int | None = None, doc_offset: int = 0, ids: list[str] | None = None, batch_size: int = 12,
                  batches_per_doc: int | None = None, root: Path | None = None) -> list[dspy.Example]:
    """Fact-fallback examples: batches of FACTS-section sentences with their gold fact labels."""
    out: list[dspy.Example] = []
    for gold in select_docs(_gold_docs(split, root), docs=docs, doc_offset=doc_offset, ids=ids):
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
    """The resolver's view of a gold event, through the rule deployment uses (``argus.graph.merge.event_description``)."""
    return event_description(ev["type"], ev["verb"], ev["trigger"],
                             [(names.get(p["entity"], p["entity"]), p["role"]) for p in ev["participants"]],
                             ev["time"].get("value") or ev["time"]["kind"], [(s, text.get(s, "")) for s in evidence])


def resolver_examples(split: str, *, docs: int | None = None, doc_offset: int = 0, ids: list[str] | None = None, pairs_per_doc: int = 4,
                      root: Path | None = None) -> list[dspy.Example]:
    """Cross-chunk resolver examples from the gold graph, three kinds per document in turn:

    - the same gold event stated in two sentences, each half shown as its own record →
      ``same_occurrence`` true, relation NONE;
    - two gold events linked by a gold edge → not the same, the edge's relation (from A to B);
    - two gold events far apart with no edge between them → not the same, NONE.
    """
    out: list[dspy.Example] = []
    for gold in select_docs(_gold_docs(split, root), docs=docs, doc_offset=doc_offset, ids=ids):
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


def qa_examples(split: str, *, docs: int | None = None, doc_offset: int = 0, ids: list[str] | None = None, questions_per_doc: int | None = None,
                max_context_words: int = 600) -> list[dspy.Example]:
    """QA examples: FAQ questions with the linearized gold EKG as context (the EKG-only condition of
    ``argus experiment qa``, capped at ``max_context_words``) and the gold answer."""
    from argus.graph.linearize import fit_ekg, linearize_graph, load_qa_documents

    out: list[dspy.Example] = []
    documents = select_docs(load_qa_documents(split, "gold"), docs=docs, doc_offset=doc_offset, ids=ids,
                            key=lambda d: d.doc_id)
    for doc in documents:
        context, _, _ = fit_ekg(linearize_graph(doc.graph, doc.graph_sentences), max_context_words, None)
        questions = doc.questions[:questions_per_doc] if questions_per_doc else doc.questions
        for q in questions:
            out.append(dspy.Example(example_id=f"{doc.doc_id}:{q['id']}", doc_id=doc.doc_id, context=context,
                                    question=q["question"], gold_answer=q["answer"]).with_inputs("context", "question"))
    return out


def chunker_examples(split: str, *, docs: int | None = None, doc_offset: int = 0, ids: list[str] | None = None, max_sentences: int = 8,
                     root: Path | None = None) -> list[dspy.Example]:
    """Chunker examples: a document's gold fact sentences and the maximum chunk size."""
    out: list[dspy.Example] = []
    for gold in select_docs(_gold_docs(split, root), docs=docs, doc_offset=doc_offset, ids=ids):
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
