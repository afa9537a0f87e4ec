"""Score saved EKGs against the gold graphs again, with the gold metric as this checkout has it.

Each RUN folder holds ``ekg/<doc_id>.ekg.json`` (what ``bench/designs.py`` and ``bench/layouts.py`` write per
row) or the ``*.ekg.json`` files themselves. Every EKG whose complaint has a gold graph among the annotated
complaints (``--data``, both splits) is scored with ``metrics.gold.score_document``, exact and relaxed tiers,
and the run's mean over complaints is printed with a 95 % bootstrap interval over complaints
(``optimizers.frontier.pareto.bootstrap_ci``). With ``--json FILE`` the per-complaint scores are written too,
so two checkouts (a metric before and after a change) can be compared complaint by complaint:

    python bench/rescore.py /tmp/bd6/sentence /tmp/bd6/floor [--json scores.json]
    python bench/rescore.py --paired old.json new.json      # paired differences, new − old, per run and metric
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

METRICS = ("relaxed_events_f1", "exact_events_f1", "relaxed_entities_f1", "relaxed_temporal_f1", "relaxed_causal_f1")
DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "us_complaints"


def gold_folders(data: Path) -> dict[str, Path]:
    """doc_id → annotated complaint folder (a folder holding gold.json), over every split."""
    return {g.parent.name: g.parent for g in sorted(data.glob("*/*/gold.json"))}


def ekg_files(run: Path) -> list[Path]:
    folder = run / "ekg" if (run / "ekg").is_dir() else run
    return sorted(folder.glob("*.ekg.json"))


def score_run(run: Path, golds: dict[str, Path]) -> dict[str, dict[str, float]]:
    """doc_id → metric → score, for the run's EKGs that have a gold graph."""
    from argus.output.export import load_ekg
    from metrics.gold import load_gold, score_document

    out = {}
    for f in ekg_files(run):
        doc_id = f.name[: -len(".ekg.json")]
        if doc_id not in golds:
            continue
        sc = score_document(load_ekg(f), load_gold(golds[doc_id]), tiers=("exact", "relaxed"))
        out[doc_id] = {m: float(sc[m]) for m in METRICS}
    return out


def _ci(xs: list[float]) -> str:
    from optimizers.frontier.pareto import bootstrap_ci

    lo, hi = bootstrap_ci(xs)
    return f"{statistics.fmean(xs):.3f} [{lo:.3f}, {hi:.3f}]"


def paired(old: dict, new: dict) -> None:
    from argus.experiments.stats import paired_bootstrap_ci

    print("| run | metric | before | after | paired Δ after − before |\n| --- | --- | --- | --- | --- |")
    for run in new:
        if run not in old:
            continue
        docs = sorted(set(old[run]) & set(new[run]))
        for m in METRICS:
            a = [old[run][d][m] for d in docs]
            b = [new[run][d][m] for d in docs]
            d, lo, hi = paired_bootstrap_ci(b, a)
            print(f"| {run} | {m} | {statistics.fmean(a):.3f} | {statistics.fmean(b):.3f} | {d:+.3f} [{lo:+.3f}, {hi:+.3f}] |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="*", type=Path)
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--json", type=Path, help="write run → doc_id → metric → score here")
    ap.add_argument("--paired", nargs=2, type=Path, metavar=("BEFORE", "AFTER"),
                    help="compare two --json files complaint by complaint")
    args = ap.parse_args(argv)
    if args.paired:
        paired(*(json.loads(p.read_text()) for p in args.paired))
        return 0
    golds = gold_folders(args.data)
    if not golds:
        print(f"no gold graphs under {args.data}", file=sys.stderr)
        return 2
    scores = {}
    print("| run | complaints | " + " | ".join(METRICS) + " |\n|" + " --- |" * (len(METRICS) + 2))
    for run in args.runs:
        per_doc = score_run(run, golds)
        if not per_doc:
            print(f"| {run} | 0 | no EKG with a gold graph |")
            continue
        scores[str(run)] = per_doc
        print(f"| {run} | {len(per_doc)} | " + " | ".join(_ci([s[m] for s in per_doc.values()]) for m in METRICS) + " |")
    if args.json:
        args.json.write_text(json.dumps(scores, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
