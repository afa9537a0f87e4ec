"""No crash on any text: every annotated complaint through every perturbation of ``tests/perturbations.py``.

Each of the 78 annotated complaints (train and dev), as filed (``unchanged``) and perturbed by each
perturbation (paragraphs dropped
or shuffled, headings removed, sentences cut mid-word, the FACTS section removed, typographic quotes and
dashes, odd unicode and control characters, a 20,000-character line, a page of numbers, CR/LF line ends,
and the documents that keep nothing: empty, whitespace, one word, numbers, garbage), with a seed fixed per
(complaint, perturbation), plus ``--combos`` random chains of two or three perturbations per complaint. Each
text goes through ``argus.extract(text, doc_id=...)`` (the offline default; a config whose cache is a
temporary folder) and its outcome is counted (``tests.perturbations.outcome``):

- **valid EKG**: it satisfies the output contract (``argus validate``'s check) against the text given;
- **clear error**: a project error (``argus.errors.ArgusError``) with a message;
- **a step failed**: a valid EKG written without an optional step that raised (its warning says so): a
  crash the design kept out of the document's way, counted as one;
- **invalid EKG**: an EKG that breaks the contract;
- **unexpected exception**: anything else (printed with the document, the perturbation and the traceback).

The exit status is 1 if any outcome is neither a valid EKG nor a clear error. ``tests/test_robustness.py`` runs a fixed
sample of these and hypothesis's own draws in CI.

    .venv/bin/python bench/robustness.py                 # 78 x (as filed + 20 perturbations + 2 combos)
    .venv/bin/python bench/robustness.py --docs 5 --only long_line,odd_unicode
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import sys
import tempfile
import time
import zlib
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
if str(PROJECT) not in sys.path:
    sys.path.insert(0, str(PROJECT))
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def complaints() -> list[Path]:
    from argus.paths import complaints_dir

    return [d for split in ("train", "dev") if complaints_dir(split).exists()
            for d in sorted(complaints_dir(split).iterdir()) if (d / "gold.json").exists()]


def main(argv: list[str] | None = None) -> int:
    from tests.perturbations import CLEAR, KEEPING, OK, OUTCOMES, PERTURBATIONS, outcome, perturb

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=0, help="only the first N complaints (0: all)")
    ap.add_argument("--only", default="", help="comma-separated perturbation names (default: all)")
    ap.add_argument("--combos", type=int, default=2, help="random chains of 2-3 perturbations per complaint")
    ap.add_argument("--seed", type=int, default=48)
    args = ap.parse_args(argv)

    import argus

    dirs = complaints()
    if args.docs:
        dirs = dirs[: args.docs]
    if not dirs:
        print("no annotated complaints found (set ARGUS_DATA_ROOT)")
        return 2
    names = [n for n in args.only.split(",") if n] or list(PERTURBATIONS)
    cfg = argus.ArgusConfig.load(None, {"cache_dir": tempfile.mkdtemp(prefix="argus-robustness-")})
    jobs: list[tuple[Path, list[str], int]] = []
    rng = random.Random(args.seed)
    for d in dirs:
        for name in names:
            jobs.append((d, [name], zlib.crc32(f"{d.name}/{name}/{args.seed}".encode())))
        for _ in range(args.combos):
            chain = rng.sample([k for k in KEEPING if k != "unchanged"], rng.randint(2, 3))
            jobs.append((d, chain, rng.randrange(2**32)))

    counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    errors: collections.Counter = collections.Counter()
    bad: list[tuple[str, str, str, str]] = []
    slowest: list[tuple[float, str, str]] = []
    texts = {d: (d / "complaint.txt").read_text(encoding="utf-8") for d in dirs}
    t0 = time.perf_counter()
    for i, (d, chain, seed) in enumerate(jobs):
        label = "+".join(chain)
        text = perturb(texts[d], chain, seed)
        t = time.perf_counter()
        kind, detail = outcome(text, f"{d.name}~{label}", cfg)
        took = time.perf_counter() - t
        slowest.append((took, d.name, label))
        counts[label if len(chain) == 1 else "(combos)"][kind] += 1
        if kind == CLEAR:
            errors[detail.split(":")[0] + ": " + detail.split(": ", 2)[-1][:90]] += 1
        elif kind not in OK:
            bad.append((d.name, label, kind, detail))
            print(f"!! {d.name} {label} seed={seed}: {kind}\n{detail}", flush=True)
        if (i + 1) % 100 == 0:
            print(f"... {i + 1}/{len(jobs)} in {time.perf_counter() - t0:.0f} s", flush=True)
    wall = time.perf_counter() - t0

    kinds = OUTCOMES
    print(f"\n{len(dirs)} complaints x {len(names)} perturbations + {args.combos} combos each = {len(jobs)} "
          f"extractions in {wall:.0f} s ({wall / len(jobs):.2f} s each)\n")
    print(f"| perturbation | {' | '.join(kinds)} |")
    print("|---|" + "---:|" * len(kinds))
    total: collections.Counter = collections.Counter()
    for label, c in counts.items():
        total.update(c)
        print(f"| {label} | {' | '.join(str(c[k]) for k in kinds)} |")
    print(f"| **all** | {' | '.join(str(total[k]) for k in kinds)} |")
    print("\nclear errors, by message:")
    for msg, n in errors.most_common():
        print(f"  {n:5d}  {msg}")
    print("\nslowest extractions:")
    for took, name, label in sorted(slowest, reverse=True)[:5]:
        print(f"  {took:6.2f} s  {name}  {label}")
    for name, label, kind, detail in bad:
        print(f"\n{kind}: {name} {label}\n{detail.rstrip()[-1500:]}")
    print(f"\nROBUSTNESS extractions={len(jobs)} "
          + " ".join(f"{short}={total[k]}" for short, k in zip(("valid", "clear", "step_failed", "invalid", "unexpected"), kinds))
          + f" ok={'yes' if not bad else 'no'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
