"""Temporal and causal edges scored against gold, once the events are aligned.

``AFTER(a, b)`` is read as ``BEFORE(b, a)``; ``OVERLAP`` and ``SAME_TIME`` are unordered. Causal
edges are directed and the relation must be equal. A predicted edge is a hit when both endpoints
are aligned (in that tier's event alignment) to the endpoints of a gold edge with the same
normalized relation. Duplicate predicted (and gold) edges count once. The relaxed and llm tiers
also report a relation-agnostic score (``temporal_any``, ``causal_any``) over unordered endpoint
pairs: any relation, either direction (direction is part of the relation).
"""

from __future__ import annotations

from typing import Mapping

from argus.graph.schema import id_order
from metrics.gold.scores import PRF
from metrics.gold.views import EdgeView


def _temporal_key(src: str, tgt: str, rel: str) -> tuple:
    if rel == "AFTER":
        return ("BEFORE", tgt, src)
    if rel in ("OVERLAP", "SAME_TIME"):
        a, b = sorted((src, tgt))
        return (rel, a, b)
    return (rel, src, tgt)


def _causal_key(src: str, tgt: str, rel: str) -> tuple:
    return (rel, src, tgt)


def _fmt_key(key: tuple, kind: str) -> str:
    rel, a, b = key
    if kind == "temporal" and rel in ("OVERLAP", "SAME_TIME"):
        return f"{a}-{rel}-{b}"
    return f"{a}-{rel}->{b}"


def score_edges(pred: list[EdgeView], gold: list[EdgeView], align: Mapping[str, str], kind: str,
                agnostic: bool) -> tuple[PRF, PRF | None, list[str], list[str]]:
    """The ``kind`` ("temporal" or "causal") edges of ``pred`` against ``gold`` under the event
    alignment ``align`` (pred id -> gold id): the strict score, the relation-agnostic one (with
    ``agnostic``, else None), and the spurious and missed edges as feedback lines."""
    keyf = _temporal_key if kind == "temporal" else _causal_key
    pkeys = list(dict.fromkeys(keyf(e.source, e.target, e.relation) for e in pred))
    gkeys = set(keyf(e.source, e.target, e.relation) for e in gold)
    hit_gold: set[tuple] = set()
    spurious: list[str] = []
    for k in pkeys:
        rel, a, b = k
        ma, mb = align.get(a), align.get(b)
        mk = keyf(ma, mb, rel) if ma is not None and mb is not None else None
        if mk is not None and mk in gkeys and mk not in hit_gold:
            hit_gold.add(mk)
            continue
        why = ", ".join(f"{x} unaligned" for x, m in ((a, ma), (b, mb)) if m is None)
        if not why:
            why = f"gold has no {_fmt_key(mk, kind)}"
        spurious.append(f"{kind} {_fmt_key(k, kind)} not in gold ({why})")
    gold_sorted = sorted(gkeys, key=lambda k: (id_order(k[1]), id_order(k[2]), k[0]))
    missed = [f"missed gold {kind} {_fmt_key(k, kind)}" for k in gold_sorted if k not in hit_gold]
    strict = PRF.from_counts(len(hit_gold), len(pkeys) - len(hit_gold), len(gkeys) - len(hit_gold))
    any_score = None
    if agnostic:
        ppairs = set(frozenset((a, b)) for _, a, b in pkeys)
        gpairs = set(frozenset((a, b)) for _, a, b in gkeys)
        tp = 0
        for pair in ppairs:
            mapped = frozenset(align.get(x) for x in pair)
            if None not in mapped and len(mapped) == len(pair) and mapped in gpairs:
                tp += 1
        any_score = PRF.from_counts(tp, len(ppairs) - tp, len(gpairs) - tp)
    return strict, any_score, spurious, missed

