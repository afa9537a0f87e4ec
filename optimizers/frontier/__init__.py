"""The quality–cost Pareto frontier of an optimization campaign and its pickle-free artifact store.

DSPy's GEPA keeps per-instance / per-objective maxima; this module keeps the *true* non-dominated
set over the campaign objectives (quality to maximize; cost per document in USD, tokens and
optionally latency to minimize), under optional constraints, with the lineage of every member,
its held-out test scores with bootstrap confidence intervals, and a flag on members that only win
on the validation split.

Layout of a campaign directory (``compiled/<campaign>/``)::

    frontier.json                  FrontierFile: objectives, reference point, constraints,
                                   frontier member ids, one summary row per evaluated candidate,
                                   hypervolume history, the pricing of its USD figures and earlier
                                   pricings (``argus frontier reprice``)
    <member_id>/manifest.json      MemberManifest of each evaluated candidate (frontier members and the
                                   rest, so a repricing may promote any of them)
    <member_id>/programs.json      the candidate's DSPy program state (``dspy.Module.save(*.json)``),
                                   copied in by ``write_member`` after ``scrub_secrets``
    report.html                    optional, written by ``optimizers.report.write_report``

Everything is JSON; every write is atomic (``argus.io``) and goes through ``scrub_secrets``, so no
API key or secret API base reaches disk.

Conventions (who reads what):

* Objective *senses* are a mapping ``{"quality": "max", "cost_usd": "min", ...}``; a point is a
  mapping from objective name to value (or a sequence in the order of ``senses``).
* ``MemberManifest.objectives`` are the **validation** objectives; the search ranks on them. Test
  scores live only in ``splits["test"]`` and are used for reporting and ``flag_val_only_wins``.
* Hypervolume reference point (``default_reference``): 0 for maximized objectives (quality lives
  in [0, 1]), 1.1 × the largest observed value for minimized ones (1.0 when that is 0). A point
  contributes only where it is strictly better than the reference in every objective. Fix the
  reference once per campaign (it is stored in ``frontier.json``) so the history is comparable.
"""

from optimizers.frontier.model import (  # noqa: F401
    FRONTIER_FILE,
    MANIFEST_FILE,
    PROGRAMS_FILE,
    QUALITY_COST,
    CandidateRow,
    Constraints,
    FrontierFile,
    HypervolumePoint,
    Lineage,
    MemberManifest,
    ModelPrice,
    Pricing,
    PricingHistoryEntry,
    Sense,
    SplitScores,
    StageModelTokens,
    Strategy,
    dependency_versions,
    instruction_diff_size,
    utc_now,
)
from optimizers.frontier.pareto import (  # noqa: F401
    bootstrap_ci,
    default_reference,
    dominates,
    flag_val_only_wins,
    hypervolume,
    hypervolume_history,
    knee_point,
    pareto_front,
)
from optimizers.frontier.pricing import (  # noqa: F401
    PriceFile,
    RepriceResult,
    price_table,
    reprice_frontier,
    reprice_manifest,
    usd_of,
)
from optimizers.frontier.store import (  # noqa: F401
    Frontier,
    build_frontier_file,
    rank_candidates,
    scrub_secrets,
    write_frontier,
    write_member,
)

__all__ = [
    "FRONTIER_FILE",
    "MANIFEST_FILE",
    "PROGRAMS_FILE",
    "QUALITY_COST",
    "CandidateRow",
    "Constraints",
    "FrontierFile",
    "HypervolumePoint",
    "Lineage",
    "MemberManifest",
    "ModelPrice",
    "Pricing",
    "PricingHistoryEntry",
    "Sense",
    "SplitScores",
    "StageModelTokens",
    "Strategy",
    "dependency_versions",
    "instruction_diff_size",
    "utc_now",
    "bootstrap_ci",
    "default_reference",
    "dominates",
    "flag_val_only_wins",
    "hypervolume",
    "hypervolume_history",
    "knee_point",
    "pareto_front",
    "PriceFile",
    "RepriceResult",
    "price_table",
    "reprice_frontier",
    "reprice_manifest",
    "usd_of",
    "Frontier",
    "build_frontier_file",
    "rank_candidates",
    "scrub_secrets",
    "write_frontier",
    "write_member",
]
