"""Which gold sentences each pipeline sentence stands for, so that evidence can be compared.

The pipeline numbers sentences by its own segmentation, so ids are never compared directly across
the two sides. A predicted sentence ``p`` and a gold sentence ``g`` are aligned when their
character spans (both into the original ``complaint.txt``) overlap by at least half of the shorter
of the two spans: ``|p ∩ g| >= 0.5 * min(|p|, |g|)`` and ``|p ∩ g| > 0``. A predicted sentence
that glues two gold sentences together therefore aligns to both; a predicted sentence that only
grazes a neighbour (a few characters) does not. Zero-length spans align to nothing.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from metrics.gold.common import get_field

MIN_SPAN_OVERLAP = 0.5  # of the shorter span


def _span_overlap_ok(a: tuple[int, int], b: tuple[int, int]) -> bool:
    la, lb = a[1] - a[0], b[1] - b[0]
    if la <= 0 or lb <= 0:
        return False
    inter = min(a[1], b[1]) - max(a[0], b[0])
    return inter > 0 and inter >= MIN_SPAN_OVERLAP * min(la, lb)


def sentence_alignment(pred_sentences: Sequence, gold_sentences: Sequence) -> dict[str, list[str]]:
    """Predicted sentence id -> the gold sentence ids whose spans overlap it (module docstring rule).

    Items may be pydantic models, dataclasses or dicts with ``id`` and ``span``. Every predicted id
    is a key (possibly with an empty list); gold ids come in gold order.
    """
    gold = [(get_field(g, "id"), tuple(get_field(g, "span") or (0, 0))) for g in gold_sentences]
    order = sorted(range(len(gold)), key=lambda i: gold[i][1][0])
    starts = [gold[i][1][0] for i in order]
    out: dict[str, list[str]] = {}
    for p in pred_sentences:
        pid, pspan = get_field(p, "id"), tuple(get_field(p, "span") or (0, 0))
        hits: list[int] = []
        # gold spans never overlap each other much, so scanning from a little before works; a
        # plain scan keeps it obviously correct (documents have ~100-200 sentences).
        for i in order:
            if starts and gold[i][1][0] >= pspan[1]:
                break
            if _span_overlap_ok(pspan, gold[i][1]):
                hits.append(i)
        out[pid] = [gold[i][0] for i in sorted(hits)]
    return out


def invert_alignment(alignment: Mapping[str, list[str]]) -> dict[str, list[str]]:
    """Gold sentence id -> the predicted sentence ids aligned to it (gold ids no one overlaps are absent)."""
    inv: dict[str, list[str]] = {}
    for pid, gids in alignment.items():
        for g in gids:
            inv.setdefault(g, []).append(pid)
    return inv
