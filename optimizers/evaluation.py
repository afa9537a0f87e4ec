"""Scoring and pricing candidates by deployment runs: the pipeline a member would deploy, run on whole
documents, its quality per document from the campaign metric, its cost per document from the
run's own ledger and nothing else.

``deployment_run`` is what the campaign calls for every candidate (validation and test documents)
and what ``argus frontier verify`` calls for a member: one function, so a member's promise and its
verification come from the same code path. The metric's judge calls happen under the caller's
ledger context (optimization spend), never in the document's ledger (the member's cost).
"""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

from argus.engine import EngineCrashError
from argus.io import write_json_atomic
from argus.ledger import CostLedger, ledger_context
from metrics.quality import DocumentQuality, cost_of


@dataclass
class CandidateEval:
    """The deployment runs of one candidate (settings + instructions) on one split; stored as JSON."""

    key: str
    split: str
    settings: dict
    instructions: dict[str, str]
    per_example: dict[str, float]  #: document id → quality
    quality: float
    cost_usd: float  #: per document, list price
    tokens: float  #: per document, list price
    latency_s: float
    n_docs: int
    stage_costs: dict[str, dict[str, float]] = field(default_factory=dict)
    per_document: dict[str, dict[str, float]] = field(default_factory=dict)
    doc_ids: list[str] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    trial: int = -1
    gepa_index: int = -1
    parent_key: str | None = None
    changed_programs: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, path: Path) -> "CandidateEval":
        data = json.loads(path.read_text(encoding="utf-8"))
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})

    def save(self, path: Path) -> None:
        write_json_atomic(path, self.__dict__, indent=1)


def deployment_run(pipeline, documents, quality: DocumentQuality, ledger: CostLedger | None = None, *,
                   label: str = "deploy", on_document=None) -> dict:
    """Run ``pipeline`` on each document (``optimizers.examples.DocumentExample``: ``doc_id``, ``path``
    and ``gold()``, None without an annotation), score and price it.

    Returns ``per_document`` (id → quality, cost_usd, tokens, calls, seconds), the means, the stage
    costs per document and the errors. A document that fails scores 0 and costs what it spent before
    failing (its calls stay in the ledger); ``EngineCrashError`` propagates (nothing is scored from a
    dead engine). Every call — the pipeline's and the metric's — also goes to ``ledger`` when given.
    """
    per_document: dict[str, dict[str, float]] = {}
    stages: dict[str, dict[str, float]] = {}
    errors: dict[str, str] = {}
    for doc in documents:
        run = CostLedger()
        t0 = time.perf_counter()
        ekg = None
        try:
            ekg = pipeline.extract(doc.path, ledger=run)
        except EngineCrashError:
            if ledger is not None:
                ledger.extend(run.entries)
            raise
        except Exception as exc:  # the document fails and scores 0; the batch goes on
            errors[doc.doc_id] = f"{type(exc).__name__}: {exc}"[:500]
        seconds = time.perf_counter() - t0
        if ledger is not None:
            ledger.extend(run.entries)
        score = 0.0
        gold = doc.gold()
        if ekg is not None:
            with ledger_context(ledger, doc_id=doc.doc_id, stage="judge", program=f"metric:{label}"):
                score = quality.evaluate(ekg, gold).score
        cost = cost_of(run.entries)
        per_document[doc.doc_id] = {"quality": score, "cost_usd": cost.usd, "tokens": float(cost.tokens),
                                    "calls": float(cost.calls), "seconds": round(seconds, 3),
                                    "cost_known": float(cost.cost_known), "gold": float(gold is not None)}
        by_stage: dict[str, list] = {}
        for e in run.entries:
            by_stage.setdefault(e.stage, []).append(e)
        for stage, group in by_stage.items():
            c = cost_of(group)
            s = stages.setdefault(stage, {"usd": 0.0, "tokens": 0.0, "calls": 0.0})
            s["usd"] += c.usd
            s["tokens"] += c.tokens
            s["calls"] += c.calls
        if on_document is not None:
            on_document(doc.doc_id, per_document[doc.doc_id])
    n = max(1, len(per_document))
    rows = list(per_document.values())
    return {
        "per_document": per_document,
        "doc_ids": list(per_document),
        "per_example": {k: v["quality"] for k, v in per_document.items()},
        "quality": statistics.fmean(r["quality"] for r in rows) if rows else 0.0,
        "cost_usd": sum(r["cost_usd"] for r in rows) / n,
        "tokens": sum(r["tokens"] for r in rows) / n,
        "latency_s": sum(r["seconds"] for r in rows) / n,
        "n_docs": len(rows),
        "stage_costs": {k: {m: v / n for m, v in s.items()} for k, s in stages.items()},
        "errors": errors,
    }


def evaluate_examples(program, examples: list, metric, ledger: CostLedger, *, label: str) -> dict:
    """Quality per example of an auxiliary program on its own examples (``metrics.gepa`` metrics);
    every call is optimization spend, booked in ``ledger`` under ``label``."""
    import dspy

    per_example: dict[str, float] = {}
    with ledger_context(ledger, program=label):
        for ex in examples:
            with ledger_context(doc_id=ex.example_id):
                try:
                    pred = program(**ex.inputs())
                except EngineCrashError:
                    raise
                except Exception as exc:  # one failing example scores 0
                    pred = dspy.Prediction(error=str(exc))
                per_example[ex.example_id] = float(metric(ex, pred).score)
    return {"per_example": per_example,
            "quality": statistics.fmean(per_example.values()) if per_example else 0.0,
            "n": len(per_example)}
