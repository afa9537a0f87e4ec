"""Scoring and pricing candidates by deployment runs: the pipeline a member would deploy, run on whole
documents, its quality per document from the campaign metric, its cost per document from the
run's own ledger and nothing else.

``deployment_run`` is what the campaign calls for every candidate (validation and test documents)
and what ``argus frontier verify`` calls for a member: one function, so a member's promise and its
verification come from the same code path. The metric's judge calls happen under the caller's
ledger context (optimization spend), never in the document's ledger (the member's cost).

Documents (and an auxiliary program's examples) are evaluated ``num_threads`` at once
(``argus.models.concurrency.ordered_map``): each in a copy of the caller's ``contextvars`` context, so every call is booked
where a sequential run books it, and gathered by index, so results — and the order of the calls in
the ledger — are those of a sequential run given the same answers.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import statistics
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from argus.models.concurrency import ordered_map
from argus.models.engine import EngineCrashError
from argus.io import write_json_atomic
from argus.models.ledger import CostLedger, ledger_context
from metrics.quality import DocumentQuality, cost_of
from optimizers.frontier.pricing import usd_of


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
    #: stage → model → {"input", "output"} tokens per document (None: an evaluation made before they were recorded)
    model_tokens: dict | None = None
    #: document id → stage → model → {"input", "output"} tokens of its run
    per_document_tokens: dict | None = None
    doc_ids: list[str] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    trial: int = -1
    gepa_index: int = -1
    parent_key: str | None = None
    changed_programs: list[str] = field(default_factory=list)
    #: the campaign's default candidate (what ``argus extract`` runs with its models)
    default: bool = False
    #: where the deployment runs' wall seconds (``latency_s``, ``per_document[*]["seconds"]``) were measured
    #: (``machine_info``) and with how many documents at once
    machine: dict = field(default_factory=dict)
    num_threads: int = 1

    @classmethod
    def load(cls, path: Path) -> "CandidateEval":
        data = json.loads(path.read_text(encoding="utf-8"))
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})

    @classmethod
    def from_dict(cls, data: dict) -> "CandidateEval":
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})

    def to_dict(self) -> dict:
        return dict(self.__dict__)

    def save(self, path: Path) -> None:
        write_json_atomic(path, self.__dict__, indent=1)


def machine_info() -> dict:
    """The machine a deployment run's seconds were measured on: host, CPUs, platform, processor."""
    import os
    import platform
    import socket

    return {"host": socket.gethostname(), "cpus": os.cpu_count() or 0, "platform": platform.platform(),
            "processor": platform.processor() or platform.machine()}


# ----------------------------------------------------------------------------- threads


_CARRY_LOCK = threading.Lock()
_CARRY_STATE: dict = {"depth": 0, "original": None}


def _carrying_executor():
    from dspy.dsp.utils.settings import thread_local_overrides
    from dspy.utils.parallelizer import ParallelExecutor

    try:
        from dspy.utils.callback_context import ACTIVE_CALL_ID
    except ImportError:  # pragma: no cover - older DSPy: no call ids to keep
        ACTIVE_CALL_ID = None

    class ContextCarryingExecutor(ParallelExecutor):
        """DSPy's ``ParallelExecutor`` whose tasks run in a copy of the submitting thread's ``contextvars``
        context (DSPy copies only its own settings into its worker threads, so the ledger attribution of
        ``argus.models.ledger.ledger_context`` would be lost and the calls not booked), with DSPy's own settings
        and call id as DSPy sets them in the worker. It never resubmits a straggler (DSPy runs a task
        again after 120 s by default, which would make — and book — its LM calls twice)."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **{**kwargs, "timeout": 0})

        def execute(self, function, data):
            if self.num_threads == 1:  # runs in the caller's thread: its context is intact
                return super().execute(function, data)
            captured = contextvars.copy_context()

            def in_context(item):
                overrides = thread_local_overrides.get()
                call_id = ACTIVE_CALL_ID.get() if ACTIVE_CALL_ID is not None else None

                def run():
                    thread_local_overrides.set(overrides)
                    if ACTIVE_CALL_ID is not None:
                        ACTIVE_CALL_ID.set(call_id)
                    return function(item)

                return captured.copy().run(run)

            return super().execute(in_context, data)

    return ContextCarryingExecutor


@contextlib.contextmanager
def dspy_threads_carry_context() -> Iterator[None]:
    """While active (re-entrant, process-wide), ``dspy.Evaluate`` — what GEPA's ``num_threads`` runs its
    minibatch and train-set evaluations with — uses ``ContextCarryingExecutor``: every LM call made in
    one of its worker threads is booked in the ledger and phase of the code that started the
    evaluation, and no task is run twice."""
    import importlib

    module = importlib.import_module("dspy.evaluate.evaluate")
    with _CARRY_LOCK:
        if _CARRY_STATE["depth"] == 0:
            _CARRY_STATE["original"] = module.ParallelExecutor
            module.ParallelExecutor = _carrying_executor()
        _CARRY_STATE["depth"] += 1
    try:
        yield
    finally:
        with _CARRY_LOCK:
            _CARRY_STATE["depth"] -= 1
            if _CARRY_STATE["depth"] == 0:
                module.ParallelExecutor = _CARRY_STATE["original"]


@dataclass
class _DocumentOutcome:
    doc_id: str
    run: CostLedger  #: the deployment run's own calls (the member's cost)
    judged: CostLedger | None  #: the metric's calls (optimization spend), booked after the run's
    seconds: float = 0.0
    score: float = 0.0
    gold: bool = False
    error: str | None = None
    raised: BaseException | None = None  #: an engine crash (or a metric failure): re-raised in document order


def tokens_by_stage_and_model(entries) -> dict[str, dict[str, dict[str, float]]]:
    """``{stage: {model: {"input": n, "output": n}}}`` of ledger entries, at list (a cache hit counts the
    tokens of the original call, as ``metrics.quality.cost_of`` prices it): what a repricing prices."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for e in entries:
        t = out.setdefault(e.stage, {}).setdefault(e.model, {"input": 0.0, "output": 0.0})
        t["input"] += e.prompt_tokens + e.cached_prompt_tokens
        t["output"] += e.completion_tokens + e.cached_completion_tokens
    return out


def _cost_known(entries, cost, prices) -> bool:
    """Whether a document's cost is known: at list price, every call's; at given ``prices``, every call's
    tokens (a cache hit whose original usage was not kept, or a response without usage, has none)."""
    if prices is None:
        return cost.cost_known
    return all(e.cost_known or e.list_tokens > 0 for e in entries)


def deployment_run(pipeline, documents, quality: DocumentQuality, ledger: CostLedger | None = None, *,
                   label: str = "deploy", on_document=None, num_threads: int = 1, prices=None) -> dict:
    """Run ``pipeline`` on each document (``optimizers.examples.DocumentExample``: ``doc_id``, ``path``
    and ``gold()``, None without an annotation), score and price it.

    Returns ``per_document`` (id → quality, cost_usd, tokens, calls, seconds), the means, the stage
    costs per document, the tokens by stage and model (``model_tokens`` per document on average,
    ``per_document_tokens`` per document) and the errors. A document that fails scores 0 and costs what
    it spent before failing (its calls stay in the ledger); ``EngineCrashError`` propagates (nothing is
    scored from a dead engine). Every call — the pipeline's and the metric's — also goes to ``ledger``
    when given.

    USD are the ledger's list prices, or with ``prices`` (model → ``optimizers.frontier.ModelPrice``, a
    repriced frontier's table) the tokens at those prices.

    ``num_threads`` documents are deployed at once (``pipeline.extract`` is called from several threads).
    Results are gathered by document index and each document's calls reach ``ledger`` in document order
    (its run's calls, then its metric's), so the result and the ledger are those of a sequential run
    given the same answers; only ``seconds`` (wall time per document) depends on the threads. After an
    engine crash no further document starts; the documents already running finish, their calls are
    booked, and the crash is raised.
    """
    crashed = threading.Event()

    def one(doc) -> _DocumentOutcome | None:
        if crashed.is_set():
            return None  # after an engine crash nothing new starts
        out = _DocumentOutcome(doc.doc_id, CostLedger(), CostLedger() if ledger is not None else None)
        t0 = time.perf_counter()
        ekg = None
        try:
            ekg = pipeline.extract(doc.path, ledger=out.run)
        except EngineCrashError as exc:
            crashed.set()
            out.raised = exc
            return out
        except Exception as exc:  # the document fails and scores 0; the batch goes on
            out.error = f"{type(exc).__name__}: {exc}"[:500]
        out.seconds = time.perf_counter() - t0
        gold = doc.gold()
        out.gold = gold is not None
        if ekg is not None:
            # the judge's calls: optimization spend, in the caller's ledger (its own context without one)
            with ledger_context(out.judged, doc_id=doc.doc_id, stage="judge", program=f"metric:{label}"):
                try:
                    out.score = quality.evaluate(ekg, gold).score
                except BaseException as exc:  # noqa: BLE001 - re-raised in document order below
                    if isinstance(exc, EngineCrashError):
                        crashed.set()
                    out.raised = exc
        return out

    per_document: dict[str, dict[str, float]] = {}
    per_document_tokens: dict[str, dict] = {}
    stages: dict[str, dict[str, float]] = {}
    model_tokens: dict[str, dict[str, dict[str, float]]] = {}
    errors: dict[str, str] = {}
    first: BaseException | None = None
    for out in ordered_map(one, documents, num_threads, name="argus-eval"):
        if out is None:
            continue
        if ledger is not None:  # every call that was made is booked, in document order
            ledger.extend(out.run.entries)
            if out.judged is not None:
                ledger.extend(out.judged.entries)
        if first is not None:
            continue  # a document before this one raised: booked, not scored
        if out.raised is not None:
            first = out.raised
            continue
        if out.error is not None:
            errors[out.doc_id] = out.error
        cost = cost_of(out.run.entries)
        doc_tokens = tokens_by_stage_and_model(out.run.entries)
        per_document_tokens[out.doc_id] = doc_tokens
        usd = cost.usd if prices is None else usd_of(doc_tokens, prices)
        per_document[out.doc_id] = {"quality": out.score, "cost_usd": usd, "tokens": float(cost.tokens),
                                    "calls": float(cost.calls), "seconds": round(out.seconds, 3),
                                    "cost_known": float(_cost_known(out.run.entries, cost, prices)),
                                    "gold": float(out.gold)}
        by_stage: dict[str, list] = {}
        for e in out.run.entries:
            by_stage.setdefault(e.stage, []).append(e)
        for stage, group in by_stage.items():
            c = cost_of(group)
            s = stages.setdefault(stage, {"usd": 0.0, "tokens": 0.0, "calls": 0.0})
            s["usd"] += c.usd if prices is None else usd_of({stage: doc_tokens[stage]}, prices)
            s["tokens"] += c.tokens
            s["calls"] += c.calls
        for stage, by_model in doc_tokens.items():
            for model, t in by_model.items():
                total = model_tokens.setdefault(stage, {}).setdefault(model, {"input": 0.0, "output": 0.0})
                total["input"] += t["input"]
                total["output"] += t["output"]
        if on_document is not None:
            on_document(out.doc_id, per_document[out.doc_id])
    if first is not None:
        raise first
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
        "model_tokens": {stage: {model: {k: v / n for k, v in t.items()} for model, t in by_model.items()}
                         for stage, by_model in model_tokens.items()},
        "per_document_tokens": per_document_tokens,
        "errors": errors,
    }



def evaluate_examples(program, examples: list, metric, ledger: CostLedger, *, label: str, num_threads: int = 1) -> dict:
    """Quality per example of an auxiliary program on its own examples (``metrics.gepa`` metrics);
    every call is optimization spend, booked in ``ledger`` under ``label``, in example order whatever
    order the ``num_threads`` threads finish in."""
    import dspy

    def one(ex):
        calls = CostLedger()
        with ledger_context(calls, doc_id=ex.example_id):
            try:
                pred = program(**ex.inputs())
            except EngineCrashError as exc:
                return ex.example_id, 0.0, calls, exc
            except Exception as exc:  # one failing example scores 0
                pred = dspy.Prediction(error=str(exc))
            try:
                return ex.example_id, float(metric(ex, pred).score), calls, None
            except BaseException as exc:  # noqa: BLE001 - re-raised in example order below
                return ex.example_id, 0.0, calls, exc

    per_example: dict[str, float] = {}
    first: BaseException | None = None
    with ledger_context(ledger, program=label):
        for example_id, score, calls, raised in ordered_map(one, examples, num_threads, name="argus-eval"):
            ledger.extend(calls.entries)  # every call that was made is booked, in example order
            if first is None and raised is not None:
                first = raised
            elif first is None:
                per_example[example_id] = score
    if first is not None:
        raise first
    return {"per_example": per_example,
            "quality": statistics.fmean(per_example.values()) if per_example else 0.0,
            "n": len(per_example)}
