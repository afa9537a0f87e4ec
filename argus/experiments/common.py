"""What the answering experiments (``qa``, ``barexam``) share: their ledger, their answering model
and a guarded, metered call of a DSPy program."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from argus.ledger import CostLedger

#: failures of one call that cost that question its answer, never the run
CALL_ERRORS: tuple[type[BaseException], ...] = (OSError, TimeoutError, ValueError, RuntimeError)


@dataclass
class Answered:
    answer: str | None
    error: str | None
    seconds: float


def experiment_ledger(out_dir: Path | None, name: str) -> CostLedger:
    """A fresh ledger, written to ``OUT/<name>_ledger.jsonl`` when there is an output folder."""
    if out_dir is None:
        return CostLedger()
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}_ledger.jsonl"
    if path.exists():
        path.unlink()
    return CostLedger(path=path)


def answering_lm(config, lm=None):
    """``lm`` when given, else the config's ``qa`` stage model with DSPy's cache in its cache dir."""
    if lm is not None:
        return lm
    from argus.lm import build_lm
    from argus.pipeline import configure_cache

    configure_cache(config.cache_dir)
    return build_lm(config.lm.for_stage("qa"))


def metered_call(lm, adapter, ledger: CostLedger, *, doc_id: str, program_label: str,
                 call: Callable[[], Any]) -> tuple[Any, str | None, float]:
    """Run ``call`` (a program call returning an ``Attempted``) under ``lm`` and the ledger (stage
    ``qa``); returns (result or None, error text or None, seconds)."""
    import dspy
    from dspy.utils.exceptions import LMError

    from argus.ledger import ledger_context

    t0 = time.perf_counter()
    with dspy.context(lm=lm, adapter=adapter), ledger_context(ledger, doc_id=doc_id, stage="qa", program=program_label):
        try:
            res = call()
        except (LMError, *CALL_ERRORS) as exc:
            return None, f"{type(exc).__name__}: {exc}"[:300], time.perf_counter() - t0
    return res, None, time.perf_counter() - t0
