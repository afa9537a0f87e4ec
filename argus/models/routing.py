"""Whether a stage's model is asked where a deterministic part (the fact classifier, the event heads)
could decide alone, by what was measured.

A fallback report (``argus train-facts --fallback-report MODEL``, ``bench/sentence_fallback.py
--model MODEL``) holds, per model, the τ below which handing the part's unsure items to that model
scored best, or no τ where the model scored no better anywhere. ``measured_route`` reads it: a model
measured to help is asked below its τ; a model measured no better stays out; the embedded model,
never measured, stays out too; any other model is asked below the configured τ.
"""

from __future__ import annotations

from typing import Callable

from argus.models.lm import EMBEDDED_MODEL


def measured_route(model: str, reports: dict, tau: float, *, asked: str, alone: str,
                   no_better: Callable[[dict], str], unmeasured: str) -> tuple[str, float, str]:
    """(mode, τ, why) for ``model`` by its row of ``reports``: ``asked`` with the measured τ (the
    configured ``tau`` where there is no row), or ``alone`` with ``tau`` and why: ``no_better(row)``
    for a model measured no better, ``unmeasured`` for the embedded model without a row."""
    measured = reports.get(model)
    if measured is not None:
        if measured.get("tau") is None:
            return alone, tau, no_better(measured)
        return asked, float(measured["tau"]), ""
    if model == EMBEDDED_MODEL:
        return alone, tau, unmeasured
    return asked, tau, ""
