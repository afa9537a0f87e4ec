"""Heading detection on the annotated complaints printed in other layouts.

``argus.experiments.layouts`` prints each annotated complaint in six layouts — as filed; Title Case
centred; Title Case flush left; numbered ("I. Introduction", "A. ...", "Count I: ..."); no headings;
capitals flush left with a stray space inside a word, as PDF extraction prints them ("SUBSTANTIVE
ALLEGATI ONS") — keeping every character offset, so the gold sentence spans stay valid in all of them.

``--headings`` runs today's heading parser (``argus.text.preprocess``, read through
``argus.ingest.files.read_text_document`` like any input) on every rendered complaint and prints one
Markdown row per layout: the gold headings (those printed in that rendering: none without headings),
the headings predicted in the body (the caption is not scored), and precision and recall of heading
starts (a start on a gold heading's line matches it, each gold heading at most once), summed over the
complaints. Headings a layout could not print as asked (no room for a numeral or a stray space) are
logged on stderr. ``--render DIR`` writes the rendered corpus, DIR/<layout>/<doc>/complaint.txt
beside its unchanged gold.json (with ``--headings``: the corpus it scores).

``--cv`` runs the offline default (``sentence``) and the no-model floor (``floor``) over every layout,
cross-validated by complaint: the complaints are split into ``--folds`` groups (the event heads'
folds) and each complaint, in every layout, is extracted by ``argus.runs.batch.run_batch`` (what ``argus
extract`` runs) with a fact head (``argus.gate.fact_eval.train_context_head``) and event heads
(``argus.training.heads.train_event_heads``) trained on the other groups as filed, C chosen inside the
fold. Each EKG is scored against gold (``metrics.gold.score_document``: fact F1 over the whole
complaint, relaxed event and entity F1). One Markdown row per method and layout: mean F1 with a
95 % bootstrap interval over complaints, the paired difference to the same method as filed with its
95 % paired interval, and seconds per complaint (the row's wall time, one process, 2 cores, models
loaded once per row). ``--baseline RESULTS`` pairs every row with the same method as filed in an
earlier run's results.json (e.g. the code before a change, run from a worktree).

    python bench/layouts.py --headings [--split all|train|dev] [--layouts as_filed,numbered,...]
    python bench/layouts.py --render DIR [--split ...] [--layouts ...]
    python bench/layouts.py --cv [--rows sentence,floor] [--folds 6] [--out out/bench-layouts] [--baseline FILE]
                                 [--unknown-sections companion|dropout|none]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/designs.py: its scoring of an EKG

from argus.experiments.layouts import (  # noqa: E402
    LAYOUTS,
    annotated_complaints,
    layout_heading_scores,
    markdown_table,
    render_corpus,
)


CV_METRICS = ("fact_f1", "events_f1", "entities_f1")


def fold_models(folders: list[Path], k: int, out: Path, unknown: str = "companion") -> dict[str, dict]:
    """Complaint name → the configuration overrides of its fold: a fact head (reading unheaded
    text by ``unknown``, see ``argus.gate.fact_eval.UNKNOWN_SECTION_STRATEGIES``) and event heads trained
    as filed on the complaints of the other folds."""
    from argus.training.heads import _folds, labeled_complaints, train_event_heads
    from argus.gate.fact_eval import labeled_documents, train_context_head

    facts = {d.doc_id: d for d in labeled_documents()}
    events = labeled_complaints(folders)
    overrides: dict[str, dict] = {}
    for j, (train, test) in enumerate(_folds(len(folders), k)):
        fold = out / "heads" / f"fold-{j + 1}"
        fold.mkdir(parents=True, exist_ok=True)
        names = [folders[i].name for i in train]
        train_context_head([facts[n] for n in names], unknown=unknown).save(fold / "facts.json")
        train_event_heads([events[i] for i in train]).save(fold / "events.json")
        for i in test:
            overrides[folders[i].name] = {"facts.classifier": str(fold / "facts.json"),
                                          "sentence.heads": str(fold / "events.json")}
    return overrides


def run_cell(spec: dict) -> None:
    """Child process: one method over one layout's complaints, fold by fold; writes RESULT.json."""
    from argus.runs.batch import run_batch
    from designs import _score
    from rich.console import Console

    from argus.config import ArgusConfig

    out = Path(spec["out"])
    t0 = time.perf_counter()
    for overrides, folders in spec["groups"]:
        cfg = ArgusConfig.load(None, {"cache_dir": str(out / "cache"), **overrides})
        with contextlib.redirect_stdout(io.StringIO()):  # the batch prints the EKGs it wrote
            run_batch([Path(f) / "complaint.txt" for f in folders], out / "ekg", cfg, method=spec["method"],
                      graphml=False, console=Console(stderr=True, quiet=True))
    wall = time.perf_counter() - t0
    rows = [_score(out, f) for _, folders in spec["groups"] for f in folders]
    (out / "RESULT.json").write_text(json.dumps({**{k: spec[k] for k in ("method", "layout")}, "wall_s": round(wall, 1),
                                                 "rows": rows}, indent=1))


def cross_validated(folders: list[Path], layouts: list[str], methods: list[str], k: int, out: Path,
                    unknown: str = "companion") -> list[dict]:
    """Every (method, layout) cell run in its own process; their results, also written to results.json."""
    corpus = render_corpus(folders, out / "corpus", layouts)
    overrides = fold_models(folders, k, out, unknown)
    results = []
    for method in methods:
        for layout in layouts:
            groups: dict[str, tuple[dict, list[str]]] = {}
            for d in corpus[layout]:
                o = overrides[d.name]
                groups.setdefault(json.dumps(o, sort_keys=True), (o, []))[1].append(str(d))
            cell = out / "runs" / f"{method}-{layout}"
            spec = {"method": method, "layout": layout, "out": str(cell), "groups": list(groups.values())}
            subprocess.run([sys.executable, __file__, "--cell", json.dumps(spec)], check=True)
            result = json.loads((cell / "RESULT.json").read_text())
            results.append(result)
            print(f"{method} / {layout}: {len(result['rows'])} complaints in {result['wall_s']:.0f} s", flush=True)
            (out / "results.json").write_text(json.dumps(results, indent=1))
    return results


def cv_table(results: list[dict], baseline: list[dict] | None = None) -> str:
    """One Markdown row per (method, layout): F1 [95 % CI] and the paired Δ to the same method as
    filed (in ``baseline`` when given, else in ``results``)."""
    from argus.experiments.stats import paired_bootstrap_ci
    from optimizers.frontier.pareto import bootstrap_ci

    def ci(xs: list[float]) -> str:
        lo, hi = bootstrap_ci(xs)
        return f"{statistics.fmean(xs):.3f} [{lo:.3f}, {hi:.3f}]"

    ref = {r["method"]: {x["doc"]: x for x in r["rows"] if not x["failed"]}
           for r in (baseline or results) if r["layout"] == "as_filed"}
    head = ["method", "layout", "complaints"] + [f"{m} [95 % CI]" for m in CV_METRICS] \
        + [f"Δ {m} vs as filed{' (baseline)' if baseline else ''}" for m in CV_METRICS] + ["s / complaint"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        ok = [x for x in r["rows"] if not x["failed"]]
        base = ref.get(r["method"], {})
        paired = [x for x in ok if x["doc"] in base]
        deltas = []
        for m in CV_METRICS:
            if not paired or (r["layout"] == "as_filed" and not baseline):
                deltas.append("–")
                continue
            d, lo, hi = paired_bootstrap_ci([x[m] for x in paired], [base[x["doc"]][m] for x in paired])
            deltas.append(f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]")
        cells = [r["method"], r["layout"], str(len(ok))] + [ci([x[m] for x in ok]) for m in CV_METRICS] + deltas \
            + [f"{r['wall_s'] / max(1, len(r['rows'])):.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--headings", action="store_true", help="score today's heading parser on every layout")
    ap.add_argument("--render", type=Path, metavar="DIR", help="write the rendered corpus under DIR")
    ap.add_argument("--split", default="all", choices=("all", "train", "dev"))
    ap.add_argument("--layouts", default=",".join(LAYOUTS), help="comma-separated, from: " + ", ".join(LAYOUTS))
    ap.add_argument("--cv", action="store_true", help="extraction figures per layout, cross-validated by complaint")
    ap.add_argument("--rows", default="sentence,floor", help="--cv: the methods, comma-separated")
    ap.add_argument("--folds", type=int, default=6)
    ap.add_argument("--out", type=Path, default=Path("out/bench-layouts"))
    ap.add_argument("--baseline", type=Path, help="--cv: pair with the as-filed rows of this results.json")
    ap.add_argument("--unknown-sections", default="companion", choices=("companion", "dropout", "none"),
                    help="--cv: how the fold fact heads read text under no heading (argus.gate.fact_eval)")
    ap.add_argument("--table", type=Path, help="print the --cv table of this results.json and stop")
    ap.add_argument("--cell", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.cell:
        run_cell(json.loads(args.cell))
        return 0
    baseline = json.loads(args.baseline.read_text()) if args.baseline else None
    if args.table:
        print(cv_table(json.loads(args.table.read_text()), baseline))
        return 0
    if not (args.headings or args.render or args.cv):
        ap.error("nothing to do: give --headings, --render DIR or --cv")
    layouts = [x for x in args.layouts.split(",") if x]
    if unknown := set(layouts) - set(LAYOUTS):
        ap.error(f"unknown layouts {sorted(unknown)}")
    folders = annotated_complaints(args.split)
    if not folders:
        print("no annotated complaints found (set ARGUS_DATA_ROOT)", file=sys.stderr)
        return 1
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.cv:
        results = cross_validated(folders, layouts, [m for m in args.rows.split(",") if m], args.folds, args.out,
                                  args.unknown_sections)
        print(cv_table(results, baseline))
        return 0
    if args.headings:
        rows = layout_heading_scores(folders, layouts, out_root=args.render)
        print(f"Heading detection by argus.text.preprocess, {len(folders)} complaints ({args.split})\n")
        print(markdown_table(rows))
    else:
        written = render_corpus(folders, args.render, layouts)
        print(f"wrote {sum(map(len, written.values()))} complaints under {args.render}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
