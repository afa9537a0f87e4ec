"""``argus frontier verify``: deploy a frontier member and hold it to its promise.

The member is selected as ``argus extract --frontier`` selects it, built by
``optimizers.deploy.member_pipeline`` and run by ``optimizers.evaluation.deployment_run`` — the code
path the campaign priced it with. Each document's realized cost (from the run's own ledger, at list
price; for a frontier repriced by ``argus frontier reprice``, its tokens at the frontier's ``pricing``)
and quality (the campaign's metric, when the document has a gold annotation) are printed against the
promise.

The promise of a document the campaign deployed the member on (its validation or test documents)
is that document's recorded figure; for any other document it is the member's validation mean. The
run passes when the realized mean cost per document lies in the promised interval:
``[promise × (1 − tolerance), promise × (1 + tolerance)]`` when every document has a recorded
figure, else the validation mean's bootstrap interval widened the same way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from argus.errors import InputError
from argus.paths import complaints_dir
from optimizers.examples import DocumentExample

DEFAULT_TOLERANCE = 0.15


@dataclass
class VerifyReport:
    member_id: str
    cost_key: str
    rows: list[dict] = field(default_factory=list)
    promised: float = 0.0
    realized: float = 0.0
    interval: tuple[float, float] = (0.0, 0.0)
    promised_quality: float | None = None
    realized_quality: float | None = None
    errors: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.errors and self.interval[0] <= self.realized <= self.interval[1]

    def table(self):
        import pandas as pd

        total = {"document": "mean per document", f"promised {self.cost_key}": self.promised,
                 f"realized {self.cost_key}": self.realized, "Δ %": _pct(self.realized, self.promised),
                 "promised quality": self.promised_quality, "realized quality": self.realized_quality,
                 "within": "yes" if self.ok else "NO"}
        return pd.DataFrame(self.rows + [total])


def resolve_document(ref: str | Path) -> DocumentExample:
    """A document to verify on: a folder with ``complaint.txt`` (and ``gold.json``), a text file
    (``gold.json`` beside it is used when present), or a campaign reference ``<split>/<doc_id>``."""
    p = Path(ref)
    if not p.exists() and not p.is_absolute() and len(p.parts) == 2:
        p = complaints_dir(p.parts[0]) / p.parts[1]
    if p.is_dir():
        text = p / "complaint.txt"
        if not text.is_file():
            raise InputError(f"{p}: no complaint.txt in this folder")
        gold = p / "gold.json"
        return DocumentExample(p.name, "", text, gold if gold.is_file() else None)
    if p.is_file():
        gold = p.parent / "gold.json"
        doc_id = p.parent.name if gold.is_file() else p.stem
        return DocumentExample(doc_id, "", p, gold if gold.is_file() else None)
    raise InputError(f"{ref}: not a complaint file, a complaint folder or a campaign document (<split>/<doc_id>)")


def verify_member(frontier_dir: str | Path, documents: list[str | Path] | None = None, *, split: str = "test",
                  max_cost: float | None = None, min_quality: float | None = None, strategy: str = "knee",
                  member: str | None = None, max_tokens: float | None = None, config_path: str | Path | None = None, overrides: dict | None = None,
                  tolerance: float = DEFAULT_TOLERANCE, on_document=None, lm_builder=None,
                  cache: bool = True) -> VerifyReport:
    """Deploy the selected member on ``documents`` (default: its ``split`` documents) and compare.

    ``cache=False`` makes every call live (the realized cost is then what a cold deployment pays);
    with the cache on, answers from it are counted at their original price, and a document with a
    cached answer whose original price is unknown is reported as an error."""
    from metrics.quality import DocumentQuality
    from optimizers.deploy import member_pipeline
    from optimizers.evaluation import deployment_run
    from optimizers.frontier import Frontier

    if not 0 <= tolerance < 1:
        raise InputError(f"--tolerance must be in [0, 1), got {tolerance}")
    frontier = Frontier.load(frontier_dir)
    if not cache:
        from optimizers.deploy import MEMBER_STAGES

        overrides = {**(overrides or {}), **{f"lm.stages.{stage}.cache": False for stage in MEMBER_STAGES}}
    pipeline, chosen = member_pipeline(frontier_dir, max_cost=max_cost, min_quality=min_quality, strategy=strategy,
                                       member=member, max_tokens=max_tokens, config_path=config_path, overrides=overrides, frontier=frontier,
                                       lm_builder=lm_builder)
    if not documents:
        documents = chosen.documents.get(split)
        if not documents:
            raise InputError(f"member {chosen.member_id} records no {split} documents; name the documents to verify on")
    docs = [resolve_document(d) for d in documents]
    cost_key = frontier.cost_objective
    metric = chosen.settings.get("metric") or {}
    quality = DocumentQuality(metric.get("weights") or {"structural": 0.5, "gold": 0.5},
                              structural_weights=metric.get("structural_weights"),
                              coverage_target=metric.get("coverage_target", 0.7),
                              judge=_judge(chosen, pipeline, lm_builder))
    # a repriced frontier promises USD at its pricing: the realized run is priced at the same table
    prices = frontier.file.pricing.prices if frontier.file.pricing is not None else None
    res = deployment_run(pipeline, docs, quality, None, label="verify", on_document=on_document, prices=prices)
    recorded = {}
    for s in ("val", "test"):
        if s in chosen.splits:
            recorded.update({k: v for k, v in chosen.splits[s].per_document.items() if k not in recorded})
    val = chosen.splits.get("val")
    mean_promise = float(chosen.objectives.get(cost_key, 0.0))
    report = VerifyReport(chosen.member_id, cost_key, errors=dict(res["errors"]))
    for doc_id, row in res["per_document"].items():
        if not row.get("cost_known", 1.0) and doc_id not in report.errors:
            report.errors[doc_id] = ("some of its calls have no known cost (a cached answer whose original usage "
                                     "was never recorded, or a response without usage); rerun with --no-cache")
    for d in docs:
        got = res["per_document"][d.doc_id]
        promise = recorded.get(d.doc_id)
        promised_cost = float(promise[cost_key]) if promise else mean_promise
        report.rows.append({
            "document": d.doc_id,
            f"promised {cost_key}": promised_cost,
            f"realized {cost_key}": got[cost_key],
            "Δ %": _pct(got[cost_key], promised_cost),
            "promised quality": float(promise["quality"]) if promise else float(chosen.objectives["quality"]),
            "realized quality": got["quality"] if d.gold_path is not None else None,
            "within": "yes" if abs(got[cost_key] - promised_cost) <= tolerance * promised_cost else "no",
        })
    n = max(1, len(docs))
    report.realized = sum(res["per_document"][d.doc_id][cost_key] for d in docs) / n
    if all(d.doc_id in recorded for d in docs):
        report.promised = sum(float(recorded[d.doc_id][cost_key]) for d in docs) / n
        report.interval = (report.promised * (1 - tolerance), report.promised * (1 + tolerance))
        report.promised_quality = sum(float(recorded[d.doc_id]["quality"]) for d in docs) / n
    else:
        report.promised = mean_promise
        ci = (val.tokens_ci if cost_key == "tokens" else val.cost_usd_ci) if val is not None else None
        lo, hi = ci if ci else (mean_promise, mean_promise)
        report.interval = (min(lo, mean_promise) * (1 - tolerance), max(hi, mean_promise) * (1 + tolerance))
        report.promised_quality = float(chosen.objectives["quality"])
    scored = [res["per_document"][d.doc_id]["quality"] for d in docs if d.gold_path is not None]
    report.realized_quality = sum(scored) / len(scored) if scored else None
    return report


def _judge(member, pipeline, lm_builder=None):
    metric = member.settings.get("metric") or {}
    model = (member.settings.get("models") or {}).get("judge")
    if not model or (metric.get("weights") or {}).get("judge", 0) <= 0:
        return None
    from argus.config import merged_spec
    from argus.models.lm import build_lm
    from metrics.judge import Judge

    spec = merged_spec(pipeline.config.lm.for_stage("judge"), {"model": model}, "judge")
    return Judge(lm=(lm_builder or build_lm)(spec), name=model)


def _pct(realized: float, promised: float) -> float | None:
    if not promised:
        return None if realized else 0.0
    value = 100.0 * (realized - promised) / promised
    return value if math.isfinite(value) else None
