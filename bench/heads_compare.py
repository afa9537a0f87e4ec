"""Two heads files (or two settings) on the same unseen complaints: the offline default (``argus extract``'s code path,
``argus.runs.batch.run_batch``) with each, scored against gold, paired on the same complaints.

    python bench/heads_compare.py OLD.json NEW.json [--old-facts F.json] [--new-facts F.json] [--split dev]
    python bench/heads_compare.py embedded embedded --old-set sentence.event_words=false   # a setting, paired

``embedded`` names the shipped heads (event heads, and with ``--*-facts`` the fact head). Each figure: the mean over complaints with a 95 % bootstrap interval,
and NEW − OLD with a 95 % paired bootstrap interval; the floor on the same complaints beside them.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

METRICS = (("fact_f1", "fact F1"), ("events_f1", "relaxed event F1"), ("entities_f1", "entity F1"),
           ("types_found", "types right (events found by sentence)"), ("temporal_f1", "temporal F1"),
           ("causal_f1", "causal F1"))


def _settings(pairs: list[str]) -> dict:
    """``KEY=VALUE`` pairs as config overrides (VALUE read as JSON where it parses: true, 0.5, "x")."""
    import json

    out = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def run(heads: str, facts: str, method: str, folders: list[Path], out: Path, settings: dict | None = None) -> dict[str, dict]:
    from argus.config import ArgusConfig
    from argus.output.export import load_ekg
    from argus.runs.batch import run_batch
    from metrics.gold import load_gold, score_document, types_of_matched

    shutil.rmtree(out, ignore_errors=True)
    cfg = ArgusConfig.load(None, {"cache_dir": str(out / "cache"), "sentence.heads": heads, "facts.classifier": facts,
                                **(settings or {})})
    run_batch([f / "complaint.txt" for f in folders], out / "ekg", cfg, method=method, graphml=False)
    rows = {}
    for f in folders:
        ekg, gold = load_ekg(out / "ekg" / f"{f.name}.ekg.json"), load_gold(f)
        sc = score_document(ekg, gold, tiers=("relaxed",))
        rows[f.name] = {k: sc[k if k == "fact_f1" else f"relaxed_{k}"] for k, _ in METRICS if k != "types_found"}
        found = types_of_matched(ekg, gold).found_accuracy  # NaN where no event is found: counted 0
        rows[f.name]["types_found"] = 0.0 if found != found else found
    return rows


def main() -> None:
    from argus.experiments.stats import paired_bootstrap_ci
    from argus.paths import complaints_dir
    from optimizers.frontier.pareto import bootstrap_ci

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--split", default="dev")
    ap.add_argument("--old-facts", default="embedded")
    ap.add_argument("--new-facts", default="embedded")
    ap.add_argument("--old-set", action="append", default=[], metavar="KEY=VALUE", help="a config override for OLD")
    ap.add_argument("--new-set", action="append", default=[], metavar="KEY=VALUE", help="a config override for NEW")
    ap.add_argument("--out", type=Path, default=Path("out/bench-heads-compare"))
    args = ap.parse_args()
    folders = sorted(d for d in complaints_dir(args.split).iterdir() if (d / "gold.json").exists())
    old = run(args.old, args.old_facts, "sentence", folders, args.out / "old", _settings(args.old_set))
    new = run(args.new, args.new_facts, "sentence", folders, args.out / "new", _settings(args.new_set))
    floor = run(args.new, args.new_facts, "floor", folders, args.out / "floor")
    docs = sorted(old)

    def ci(xs):
        lo, hi = bootstrap_ci(xs)
        return f"{statistics.fmean(xs):.3f} [{lo:.3f}, {hi:.3f}]"

    print(f"{len(docs)} complaints of {args.split}; old {args.old} {' '.join(args.old_set)}, "
          f"new {args.new} {' '.join(args.new_set)}\n")
    print("| figure | old | new | new − old [95 % paired CI] | higher / lower | floor |")
    print("|---|---|---|---|---|---|")
    for key, label in METRICS:
        a, b = [old[d][key] for d in docs], [new[d][key] for d in docs]
        d, lo, hi = paired_bootstrap_ci(b, a)
        up, down = sum(y > x for x, y in zip(a, b)), sum(y < x for x, y in zip(a, b))
        print(f"| {label} | {ci(a)} | {ci(b)} | {d:+.3f} [{lo:+.3f}, {hi:+.3f}] | {up} / {down} | "
              f"{statistics.fmean(floor[x][key] for x in docs):.3f} |")


if __name__ == "__main__":
    main()
