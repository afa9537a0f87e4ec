"""How the offline default's quality grows with annotated complaints: the learning curve.

For each training size N (complaints per fold), ``bench/designs.py --train-size N`` trains every learned
part of each fold (the fact head, the type and trigger heads, the trigger lexicon, the entity settings,
the same-occurrence, temporal and causal heads) on N of the fold's training complaints, every writing
style in turn, and runs the floor and the offline default (``sentence``) on the same held-out folds (the
folds deal every style over them). Each figure is the mean over the complaints with a 95 % bootstrap
interval; the last column is the paired difference between the largest and the smallest size.

    python bench/learning_curve.py [--sizes 6,12,24,48,0] [--folds 6] [--out out/learning]
                                   [--plot docs/img/learning_curve.png] [--table docs/learning_curve.md]

``0`` is all of a fold's training complaints. A size whose results exist under OUT is not run again
(``--again`` runs it anyway); ``--combine`` only prints the table and draws the plot.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

#: (result key, label) of each figure on the curve
FIGURES = (("fact_f1", "fact F1"), ("events_f1", "relaxed event F1"), ("exact_events_f1", "exact event F1"),
           ("type_accuracy_blind", "types right (events found by sentence)"),
           ("type_accuracy", "types right (relaxed match)"), ("entities_f1", "entity F1"),
           ("temporal_f1", "temporal F1"), ("causal_f1", "causal F1"),
           ("gold_events_temporal_f1", "temporal F1, gold events"), ("gold_events_causal_f1", "causal F1, gold events"))


def _rows(out: Path, size: int, row: str) -> dict[str, dict]:
    results = json.loads((out / f"size-{size}" / "results.json").read_text())
    got = next((r for r in results if r["row"] == row), None)
    return {x["doc"]: x for x in got["rows"] if not x["failed"]} if got else {}


def _n_train(out: Path, size: int) -> int:
    """The training complaints per fold the size stands for (the median over folds)."""
    cv = out / f"size-{size}" / "heads"
    n = [len(json.loads(p.read_text())["meta"]["fold_train"]) for p in sorted(cv.glob("fold-*.json"))
         if not p.name.endswith(".facts.json")]
    return int(statistics.median(n)) if n else size


def table(out: Path, sizes: list[int]) -> tuple[str, dict]:
    from argus.experiments.stats import paired_bootstrap_ci
    from optimizers.frontier.pareto import bootstrap_ci

    rows = {s: _rows(out, s, "sentence") for s in sizes}
    floor = _rows(out, sizes[-1], "floor")
    n = {s: _n_train(out, s) for s in sizes}
    head = "| figure | " + " | ".join(f"{n[s]} complaints" for s in sizes) + " | floor | Δ largest − smallest [95 % paired CI] |"
    lines = [head, "|---" * (len(sizes) + 3) + "|"]
    curve: dict = {"sizes": [n[s] for s in sizes], "figures": {}}
    for key, label in FIGURES:
        cells, points = [], []
        for s in sizes:
            xs = [x[key] for x in rows[s].values() if x.get(key) == x.get(key) and key in x]
            if not xs:
                cells.append("–")
                points.append(None)
                continue
            lo, hi = bootstrap_ci(xs)
            m = statistics.fmean(xs)
            cells.append(f"{m:.3f} [{lo:.3f}, {hi:.3f}]")
            points.append((m, lo, hi))
        fl = [x[key] for x in floor.values() if key in x and x[key] == x[key]]
        first, last = rows[sizes[0]], rows[sizes[-1]]
        docs = [d for d in last if d in first and key in last[d] and last[d][key] == last[d][key]
                and key in first[d] and first[d][key] == first[d][key]]
        if docs:
            d, lo, hi = paired_bootstrap_ci([last[x][key] for x in docs], [first[x][key] for x in docs])
            delta = f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]"
        else:
            delta = "–"
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {statistics.fmean(fl):.3f} | {delta} |" if fl else
                     f"| {label} | " + " | ".join(cells) + f" | – | {delta} |")
        curve["figures"][label] = {"points": points, "floor": statistics.fmean(fl) if fl else None}
    return "\n".join(lines), curve


def plot(curve: dict, reader: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 5.5))
    xs = curve["sizes"]
    for label, fig_data in curve["figures"].items():
        pts = fig_data["points"]
        if not all(pts):
            continue
        line, = ax.plot(xs, [p[0] for p in pts], marker="o", label=label)
        ax.fill_between(xs, [p[1] for p in pts], [p[2] for p in pts], alpha=0.12, color=line.get_color())
    for name, value in reader.items():
        ax.axhline(value, linestyle=":", linewidth=1, color="grey")
        ax.text(xs[-1], value, f" reader: {name} {value:.2f}", va="center", fontsize=7, color="grey")
    ax.set_xscale("log", base=2)
    ax.set_xticks(xs, [str(x) for x in xs])
    ax.set_xlabel("training complaints per fold (each style in turn)")
    ax.set_ylabel("mean over held-out complaints (95 % bootstrap band)")
    ax.set_ylim(0, 1)
    ax.set_title("Offline default: quality against annotated complaints (6 folds, same test folds)")
    ax.legend(fontsize=7, loc="lower right", ncol=2)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="6,12,24,48,0")
    ap.add_argument("--folds", type=int, default=6)
    ap.add_argument("--out", type=Path, default=Path("out/learning"))
    ap.add_argument("--plot", type=Path, default=None)
    ap.add_argument("--table", type=Path, default=None, help="also write the table (Markdown) here")
    ap.add_argument("--again", action="store_true")
    ap.add_argument("--combine", action="store_true")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",") if x.strip()]
    bench = Path(__file__).resolve().parent / "designs.py"
    for size in sizes if not args.combine else []:
        dest = args.out / f"size-{size}"
        if (dest / "results.json").exists() and not args.again:
            continue
        print(f"--- training size {size or 'all'}", flush=True)
        subprocess.run([sys.executable, str(bench), "--rows", "floor,sentence", "--folds", str(args.folds),
                        "--train-size", str(size), "--out", str(dest), "--styles"], check=True)
    text, curve = table(args.out, sizes)
    print(text)
    if args.table:
        args.table.write_text(text + "\n")
    if args.plot:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import designs

        vals = list(designs._reader().values())
        reader = {k: statistics.fmean(v[k] for v in vals) for k in ("type_agreement", "temporal_f1", "causal_f1")} if vals else {}
        plot(curve, reader, args.plot)
        print(f"plot → {args.plot}")


if __name__ == "__main__":
    main()
