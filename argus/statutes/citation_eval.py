"""How well the court-citation parser reads the annotated decisions.

Each gold statute annotation with a book and a number is one target; annotations without them
(EU directives, bare list fragments such as "513") mark "don't care" regions: a prediction that
overlaps only such regions counts neither way. A prediction matches a gold citation when their
spans overlap; pairs are then scored at three strictness levels:

- ``span``: the citation was found at all;
- ``book+number``: same code (both normalised to the corpus key, or to the lower-cased name for
  laws outside the corpus) and same § / Art. number;
- ``book+number+structure``: also the same Absatz / Satz / Nummer / Buchstabe.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from argus.statutes.citations import CourtCitation, parse_court_citations
from argus.statutes.codes import CodeRegistry
from argus.statutes.decisions import Decision, LawAnnotation, gold_book
from metrics.base import precision_recall_f1

_STRUCT_KEYS = ("absatz", "satz", "nummer", "buchstabe")


@dataclass
class CitationParserScore:
    """Precision/recall at the three strictness levels, plus the per-citation comparison."""

    summary: pd.DataFrame
    pairs: pd.DataFrame


def _norm_book(book: str | None, registry: CodeRegistry) -> str | None:
    if not book:
        return None
    return gold_book(book, registry) or book.strip().lower()


def _structure(d: dict[str, str]) -> dict[str, str]:
    return {k: str(d[k]) for k in _STRUCT_KEYS if d.get(k) is not None}


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def score_citation_parser(decisions: list[Decision], registry: CodeRegistry) -> CitationParserScore:
    rows = []
    n_pred = n_gold = 0
    tp = {"span": 0, "book+number": 0, "book+number+structure": 0}
    for dec in decisions:
        preds = parse_court_citations(dec.text, registry)
        gold = [a for a in dec.laws if a.book and a.number]
        ignored = [a for a in dec.laws if not (a.book and a.number)]
        n_gold += len(gold)
        used: set[int] = set()
        matched_pred: set[int] = set()
        for g in gold:
            g_book = _norm_book(g.book, registry)
            g_struct = _structure(g.structure)
            best, best_rank = None, -1
            for i, p in enumerate(preds):
                if i in used or not _overlap(g.span, p.span):
                    continue
                p_book = p.code or p.book
                rank = (
                    1
                    + (p_book == g_book and p.number == g.number)
                    + (p_book == g_book and p.number == g.number and _structure(p.structure) == g_struct)
                )
                if rank > best_rank:
                    best, best_rank = i, rank
            row = _row(dec, g, g_book, g_struct, preds[best] if best is not None else None, best_rank)
            rows.append(row)
            if best is not None:
                used.add(best)
                matched_pred.add(best)
                tp["span"] += 1
                tp["book+number"] += best_rank >= 2
                tp["book+number+structure"] += best_rank >= 3
        for i, p in enumerate(preds):
            if i in matched_pred:
                continue
            if any(_overlap(p.span, a.span) for a in ignored) or any(_overlap(p.span, a.span) for a in gold):
                continue  # overlaps a "don't care" region, or a gold citation already matched by another prediction
            rows.append(
                {
                    "doc_id": dec.doc_id,
                    "gold_text": "",
                    "pred_text": p.text,
                    "gold": "",
                    "pred": _fmt(p.code or p.book, p.number, _structure(p.structure)),
                    "match": "false positive",
                    "pred_code": p.code,
                    "pred_number": p.number,
                    "pred_article": p.kind == "Art",
                }
            )
        n_pred += len(preds) - sum(
            1
            for i, p in enumerate(preds)
            if i not in matched_pred
            and (any(_overlap(p.span, a.span) for a in ignored) or any(_overlap(p.span, a.span) for a in gold))
        )
    summary = pd.DataFrame(
        [
            {
                "level": level,
                "gold": n_gold,
                "predicted": n_pred,
                "true_positive": hits,
                **dict(zip(("precision", "recall", "f1"), precision_recall_f1(hits, n_pred - hits, n_gold - hits))),
            }
            for level, hits in tp.items()
        ]
    )
    return CitationParserScore(summary, pd.DataFrame(rows))


def _fmt(book: str | None, number: str | None, structure: dict[str, str]) -> str:
    parts = [f"§ {number}" if number else "§ ?"]
    parts += [f"{k[:3]}. {v}" for k, v in structure.items()]
    parts.append(book or "?")
    return " ".join(parts)


def _row(dec: Decision, g: LawAnnotation, g_book, g_struct, p: CourtCitation | None, rank: int) -> dict:
    match = {-1: "missed", 1: "span only", 2: "book+number", 3: "exact"}[rank if p is not None else -1]
    return {
        "doc_id": dec.doc_id,
        "gold_text": g.text,
        "pred_text": p.text if p else "",
        "gold": _fmt(g_book, g.number, g_struct),
        "pred": _fmt(p.code or p.book, p.number, _structure(p.structure)) if p else "",
        "match": match,
        "pred_code": p.code if p else None,
        "pred_number": p.number if p else None,
        "pred_article": (p.kind == "Art") if p else False,
    }
