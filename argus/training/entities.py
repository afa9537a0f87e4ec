"""Training the ``entities`` part of the heads file: the settings of the sentence design's entity rules
(``argus.designs.sentence.entities.keeps``), chosen on the annotated complaints, and the head nouns of the
gold's unnamed entities. The design reads the part in ``argus.designs.sentence.entities.document_entities``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from argus.designs.sentence.entities import (
    _NP_CATEGORIES,
    FLAGS,
    FORMAT,
    KINDS,
    RULE_DEFAULTS,
    STOP,
    EntityCandidate,
    _mentioned,
    _noun_lemma,
    candidate_clusters,
    features,
    keeps,
    party_sentences,
    record_key,
)
from argus.graph.schema import Entity
from argus.text.caption import Caption

#: the settings ``fit_part`` tries: the stop list's (complaints a head word is seen in, share of them the gold
#: took it in at most), and the categories of unnamed entities that share one threshold
STOP_GRID = ((10 ** 6, 0.0), (2, 0.0), (3, 0.0), (4, 0.0), (4, 0.25))
NP_GROUPS = (("person", "group", "document"), ("location", "organization"))


@dataclass
class _Complaint:
    """One annotated complaint as the entity filter learns from it."""

    doc_id: str
    caption: Caption | None
    body: str
    texts: list[str]
    parties: list[tuple[str, str]]
    gold: object  # metrics.gold.GoldDocument
    n_gold: int


@lru_cache(maxsize=64)
def _read_complaint(folder: str) -> _Complaint:
    """The complaint of ``folder`` as the design reads it: preprocessed, its facts gated by the
    embedded classifier (the sentences ``entity_list`` gets), and its gold."""
    from argus.gate.facts import gate_facts
    from argus.ingest.files import read_text_document
    from argus.text.preprocess import preprocess
    from metrics.gold import load_gold

    doc, _ = gate_facts(preprocess(read_text_document(Path(folder) / "complaint.txt")), _classifier(), mode="classifier")
    narrative = set(doc.narrative_ids)
    texts = [s.text for s in doc.sentences if s.id in narrative and s.fact]
    body = next((s.span[0] for s in doc.sections if s.kind != "caption"), 0)
    gold = load_gold(folder)
    return _Complaint(gold.doc_id, doc.caption, doc.text[body:], texts, party_sentences(doc), gold,
                      len(gold.graph.entities))


@lru_cache(maxsize=1)
def _classifier():
    from argus.gate.facts import load_fact_classifier

    return load_fact_classifier()


def learned_heads(golds: list, min_docs: int = 2) -> dict[str, str]:
    """Head nouns of the gold entities named without a capital ("the termination letter", "her
    pastor") in at least ``min_docs`` complaints, with the kind the gold gives them most often."""
    seen: dict[str, dict[str, set[str]]] = {}
    for gold in golds:
        for e in gold.graph.entities:
            for n in (e.name, *e.aliases):
                words = re.findall(r"[A-Za-z][\w\-]*", n)
                if not words or not n[:1].islower() and not n.lower().startswith("the "):
                    continue
                if any(w[:1].isupper() for w in words[1:]):
                    continue
                head = _noun_lemma(words[-1])
                if head in STOP or len(head) < 3:
                    continue
                kind = e.kind if e.kind in _NP_CATEGORIES else ""
                if kind == "person" and words[-1].lower() != head:
                    kind = "group"
                if kind:
                    seen.setdefault(head, {}).setdefault(kind, set()).add(gold.doc_id)
    out = {}
    for head, kinds in seen.items():
        docs = set().union(*kinds.values())
        if len(docs) >= min_docs:
            out[head] = max(kinds, key=lambda k: len(kinds[k]))
    return out


def _rows(c: _Complaint, learned: dict[str, str]) -> tuple[list[EntityCandidate], list[int]]:
    """The complaint's clusters mentioned in its fact sentences, each labelled 1 where the relaxed
    alignment with the gold graph takes it."""
    from argus.graph.schema import EventGraph
    from metrics.gold import match_graphs

    joined = "\n".join(c.texts)
    clusters = [k for k in candidate_clusters(c.caption, c.body, c.texts, c.parties, learned)
                if any(_mentioned(n, joined) for n in k.names)]
    ents = [Entity(id=f"E{i + 1}", name=k.name, kind=k.kind if k.kind in KINDS else "other", role="other",
                   aliases=[a for a in dict.fromkeys(k.aliases) if a != k.name]) for i, k in enumerate(clusters)]
    aligned = match_graphs(EventGraph(entities=ents), c.gold, tiers=("relaxed",))["relaxed"].entity_alignment
    return clusters, [int(e.id in aligned) for e in ents]


def _word_record(items: list[tuple[str, list[EntityCandidate], list[int]]], leave_out: str | None = None) -> dict:
    """Per ``record_key``: [complaints where the gold took a cluster of that key, complaints with one]
    over the complaints (``leave_out`` left out)."""
    rates: dict[str, list[int]] = {}
    for doc_id, clusters, labels in items:
        if doc_id == leave_out:
            continue
        seen: dict[str, int] = {}
        for k, y in zip(clusters, labels):
            key = record_key(k)
            if key:
                seen[key] = max(seen.get(key, 0), y)
        for key, y in seen.items():
            r = rates.setdefault(key, [0, 0])
            r[0] += y
            r[1] += 1
    return rates


def _stop_list(rates: dict, m: int, r: float) -> list[str]:
    """Keys seen in at least ``m`` complaints that the gold took in at most a share ``r`` of them."""
    return sorted(k for k, (p, n) in rates.items() if n >= m and p / n <= r)


def _doc_f1(keep: list[bool], labels: list[int], n_gold: int) -> float:
    tp = sum(k and y for k, y in zip(keep, labels))
    fp = sum(k and not y for k, y in zip(keep, labels))
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / n_gold if n_gold else 0.0
    return 2 * p * r / (p + r) if p + r else 0.0


def fit_part(folders: list[Path], heads=None, passes: int = 3) -> dict | None:
    """The heads file's ``entities`` part (``argus.training.heads.PARTS``), learned from the
    annotated complaints of ``folders`` alone (None with fewer than two): the rules' settings, each
    chosen for the mean per-complaint F1 of the kept clusters against the gold entities (relaxed
    alignment), by coordinate ascent from ``RULE_DEFAULTS``: the fact sentences an unnamed person,
    group or document needs, and a place or organization; which name forms are no party; the mentions
    a name needs; a stop list of head words the gold never took in at least m complaints (while m is
    chosen, each complaint's list is learned from the others). Also the head nouns of the gold's
    unnamed entities (``learned_heads``): noun phrases with those heads are candidates too. JSON, no
    pickle; ``heads`` (the parts trained before it) is not used."""
    if len(folders) < 2:
        return None
    complaints = [_read_complaint(str(f)) for f in folders]
    golds = [c.gold for c in complaints]
    items = []
    for c in complaints:
        learned = learned_heads([g for g in golds if g.doc_id != c.doc_id])  # as a new complaint would be read
        clusters, labels = _rows(c, learned)
        items.append((c.doc_id, clusters, labels, c.n_gold, [features(k, c.texts) for k in clusters]))
    rates = {d: _word_record([(d2, k, y) for d2, k, y, _, _ in items], leave_out=d) for d, *_ in items}
    stops = {mr: {d: set(_stop_list(rates[d], *mr)) for d in rates} for mr in STOP_GRID}

    def score(params: dict, mr: tuple) -> float:
        f1s = [_doc_f1([keeps(k, f, {**params, "stop": stops[mr][d]}) for k, f in zip(clusters, feats)], labels, n_gold)
               for d, clusters, labels, n_gold, feats in items]
        return sum(f1s) / len(f1s)

    params = {"np_min_sentences": dict(RULE_DEFAULTS["np_min_sentences"]), "drop_forms": list(RULE_DEFAULTS["drop_forms"]),
              "name_min_count": 1}
    mr = STOP_GRID[0]
    best = score(params, mr)
    def moves():  # each built from the settings as they stand when it is tried (coordinate ascent)
        for cats in NP_GROUPS:
            for v in (1, 2, 3, 4, 99):
                yield {**params, "np_min_sentences": {**params["np_min_sentences"], **{c: v for c in cats}}}, mr
        for flag in FLAGS:
            drop = [x for x in params["drop_forms"] if x != flag] if flag in params["drop_forms"] \
                else [*params["drop_forms"], flag]
            yield {**params, "drop_forms": drop}, mr
        for v in (1, 2):
            yield {**params, "name_min_count": v}, mr
        for m in STOP_GRID:
            yield params, m

    for _ in range(passes):
        changed = False
        for trial, m in moves():
            sc = score(trial, m)
            if sc > best + 1e-9:
                best, params, mr, changed = sc, trial, m, True
        if not changed:
            break
    return {"format": FORMAT, **params, "stop": _stop_list(_word_record([(d, k, y) for d, k, y, _, _ in items]), *mr),
            "stop_rule": list(mr), "heads": learned_heads(golds), "fit_f1": round(best, 4),
            "trained_on": [c.doc_id for c in complaints]}


__all__ = ["NP_GROUPS", "STOP_GRID", "fit_part", "learned_heads"]
