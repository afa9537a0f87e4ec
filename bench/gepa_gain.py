"""Does GEPA help? Evolved programs against their seed on complaints the campaign never saw.

Reads a finished campaign's run folder (``runs/campaigns/<name>``: every candidate's validation
evaluation, ``evals/val-*.json``, with its settings, instructions and lineage). For each trial it
takes the seed (GEPA index 0) and the evolved candidate with the best validation quality (GEPA
index > 0), builds both with ``optimizers.deploy.pipeline_for`` (what deployment and the campaign
run) and deploys them with ``optimizers.evaluation.deployment_run`` on the test complaints, scored
with the campaign's own quality (``metrics.quality.DocumentQuality`` with the campaign's weights)
and relaxed event F1 against gold. With a sampling model (temperature > 0) each complaint is run
``--rollouts`` times (fresh cache) and its scores averaged. The gain is the paired difference
evolved − seed over complaints with a 95 % paired bootstrap interval
(``argus.experiments.stats.paired_bootstrap_ci``).

Test complaints default to the dev complaints outside the campaign's train and validation splits.

    python bench/gepa_gain.py campaigns/demo.yaml [--run-dir runs/campaigns/demo] [--docs DIR ...] [--rollouts 3]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from argus.experiments.stats import paired_bootstrap_ci  # noqa: E402
from optimizers.config import CampaignConfig  # noqa: E402
from optimizers.evaluation import CandidateEval, deployment_run  # noqa: E402
from optimizers.examples import DocumentExample, document_examples  # noqa: E402


def _pairs(run_dir: Path) -> list[tuple[CandidateEval, CandidateEval]]:
    """(seed, best evolved) per trial, from the campaign's validation evaluations."""
    evals = [CandidateEval.load(p) for p in sorted((run_dir / "evals").glob("val-*.json"))]
    by_trial: dict[str, list[CandidateEval]] = {}
    for ev in evals:
        by_trial.setdefault(json.dumps(ev.settings, sort_keys=True), []).append(ev)
    out = []
    for group in by_trial.values():
        seed = next((e for e in group if e.gepa_index == 0), None)
        evolved = [e for e in group if e.gepa_index > 0]
        if seed is not None and evolved:
            out.append((seed, max(evolved, key=lambda e: (e.quality, -e.tokens))))
    return out


class _Keeping:
    """The pipeline as deployment runs it, keeping each document's EKG (for its event F1)."""

    def __init__(self, pipe):
        self.pipe = pipe
        self.ekgs: dict = {}

    def extract(self, path, ledger=None):
        ekg = self.pipe.extract(path, ledger=ledger)
        self.ekgs[Path(path).parent.name] = ekg
        return ekg


def _score(cfg: CampaignConfig, ev: CandidateEval, docs: list[DocumentExample], rollouts: int, out: Path) -> dict:
    from metrics.gold import score_document
    from metrics.quality import DocumentQuality
    from optimizers.deploy import pipeline_for

    m = cfg.metric
    quality = DocumentQuality(m.weights, structural_weights=m.structural_weights, coverage_target=m.coverage_target)
    per: dict[str, list[tuple[float, float]]] = {d.doc_id: [] for d in docs}
    for r in range(rollouts):
        cache = out / f"{ev.key}-r{r}"
        shutil.rmtree(cache, ignore_errors=True)
        pipe = _Keeping(pipeline_for(ev.settings, instructions=ev.instructions, overrides={"cache_dir": str(cache)}))
        res = deployment_run(pipe, docs, quality)
        for d in docs:
            ekg = pipe.ekgs.get(d.doc_id)
            f1 = score_document(ekg, d.gold(), tiers=("relaxed",))["relaxed_events_f1"] if ekg is not None else 0.0
            per[d.doc_id].append((res["per_document"][d.doc_id]["quality"], f1))
    return {k: (statistics.fmean(q for q, _ in v), statistics.fmean(f for _, f in v)) for k, v in per.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("campaign", type=Path)
    ap.add_argument("--run-dir", type=Path)
    ap.add_argument("--docs", type=Path, nargs="*", help="complaint folders (default: dev complaints the campaign did not use)")
    ap.add_argument("--rollouts", type=int, default=1)
    ap.add_argument("--out", type=Path, default=Path("out/bench-gepa-gain"))
    args = ap.parse_args()
    cfg = CampaignConfig.load(args.campaign)
    run_dir = args.run_dir or Path("runs/campaigns") / cfg.name
    if args.docs:
        docs = [DocumentExample(d.name, "given", d / "complaint.txt", d / "gold.json") for d in args.docs]
    else:
        used = {i for s in (cfg.data.train, cfg.data.val, cfg.data.test) if s.split == "dev" for i in (s.ids or [])}
        used |= {i for s in (cfg.data.train, cfg.data.val) for i in (s.ids or [])}
        docs = [d for d in document_examples("dev") if d.doc_id not in used]
    print(f"test complaints: {', '.join(d.doc_id for d in docs)}")
    rows = []
    for seed, evolved in _pairs(run_dir):
        rollouts = args.rollouts if float(seed.settings.get("temperature") or 0) > 0 else 1
        s = _score(cfg, seed, docs, rollouts, args.out)
        e = _score(cfg, evolved, docs, rollouts, args.out)
        ids = [d.doc_id for d in docs]
        dq = paired_bootstrap_ci([e[i][0] for i in ids], [s[i][0] for i in ids])
        df = paired_bootstrap_ci([e[i][1] for i in ids], [s[i][1] for i in ids])
        rows.append({"design": seed.settings.get("extraction") or "chunked", "seed": seed.key, "evolved": evolved.key,
                     "changed": evolved.changed_programs, "rollouts": rollouts, "complaints": len(ids),
                     "seed_quality": statistics.fmean(s[i][0] for i in ids), "evolved_quality": statistics.fmean(e[i][0] for i in ids),
                     "delta_quality": dq, "seed_event_f1": statistics.fmean(s[i][1] for i in ids),
                     "evolved_event_f1": statistics.fmean(e[i][1] for i in ids), "delta_event_f1": df})
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(rows, indent=1))
    print("| design | evolved (programs changed) | complaints × rollouts | quality seed → evolved | Δ quality [95 % paired CI] "
          "| event F1 seed → evolved | Δ event F1 [95 % paired CI] |")
    print("|---|---|---:|---|---|---|---|")
    for r in rows:
        q, f = r["delta_quality"], r["delta_event_f1"]
        print(f"| {r['design']} | {r['evolved']} ({', '.join(r['changed']) or '–'}) | {r['complaints']} × {r['rollouts']} | "
              f"{r['seed_quality']:.3f} → {r['evolved_quality']:.3f} | {q[0]:+.3f} [{q[1]:+.3f}, {q[2]:+.3f}] | "
              f"{r['seed_event_f1']:.3f} → {r['evolved_event_f1']:.3f} | {f[0]:+.3f} [{f[1]:+.3f}, {f[2]:+.3f}] |")
    if not rows:
        print("no trial has an evolved candidate (GEPA proposed nothing that was evaluated): no measurable gain")


if __name__ == "__main__":
    main()
