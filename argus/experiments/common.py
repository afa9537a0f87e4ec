"""What the answering experiments (``qa``, ``barexam``) share: their ledger, their answering model,
a guarded, metered call of a DSPy program, and their Markdown tables."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from argus.models.ledger import CostLedger

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
    from argus.models.lm import build_lm
    from argus.pipeline import configure_cache

    configure_cache(config.cache_dir)
    return build_lm(config.lm.for_stage("qa"))


def metered_call(lm, adapter, ledger: CostLedger, *, doc_id: str, program_label: str,
                 call: Callable[[], Any]) -> tuple[Any, str | None, float]:
    """Run ``call`` (a program call returning an ``Attempted``) under ``lm`` and the ledger (stage
    ``qa``); returns (result or None, error text or None, seconds)."""
    import dspy
    from dspy.utils.exceptions import LMError

    from argus.models.ledger import ledger_context

    t0 = time.perf_counter()
    with dspy.context(lm=lm, adapter=adapter), ledger_context(ledger, doc_id=doc_id, stage="qa", program=program_label):
        try:
            res = call()
        except (LMError, *CALL_ERRORS) as exc:
            return None, f"{type(exc).__name__}: {exc}"[:300], time.perf_counter() - t0
    return res, None, time.perf_counter() - t0


def format_cell(x, digits: int = 3) -> str:
    """A table cell: floats to ``digits`` decimals (e-notation below 10^-digits), missing as "–"."""
    import numpy as np

    if x is None or (isinstance(x, (float, np.floating)) and np.isnan(x)):
        return "–"
    if isinstance(x, (float, np.floating)):
        return f"{x:.{digits}f}" if abs(x) >= 10 ** -digits or x == 0 else f"{x:.1e}"
    return str(x)


def markdown_table(df, cols: Sequence[str], digits: int = 3) -> str:
    """``df[cols]`` as a Markdown table (``DataFrame.to_markdown``), cells as ``format_cell`` writes them."""
    cells = df[list(cols)].map(lambda x: format_cell(x, digits))
    return cells.to_markdown(index=False, disable_numparse=True)
