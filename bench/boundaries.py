"""Sentence-boundary precision and recall of every segmenter on the hand-marked boundary set of real legal text.

The set (``datasets/boundaries/boundaries.json``, described in its README) marks, in 211 paragraphs of two
court opinions and 41 securities-complaint excerpts of the shared data, every interior sentence end by
hand. Each segmenter of ``argus.text.preprocess.SEGMENTERS`` runs on each paragraph with its line breaks
(``\\n \\r \\f \\t``) replaced by spaces, as the pipeline joins a paragraph's lines before segmenting (offsets
unchanged); a predicted segment's end counts at its offset after trailing whitespace is trimmed, and only
interior ends are scored (the paragraph's own end is not a boundary). Precision, recall and F1 are pooled
over boundaries, per source and over all, with a 95 % percentile bootstrap interval over paragraphs
(``scipy.stats.bootstrap``, paired resampling of the paragraphs' counts, 2,000 resamples, seed 0): the
boundaries of one paragraph are not independent.

    python bench/boundaries.py [--segmenters legal,nupunkt] [--errors] [--markdown] [--held-out]

``--errors`` lists the default segmenter's false and missed boundaries in context; ``--held-out`` scores the
8 further SSLA excerpts of ``heldout.json`` instead, marked by the same rules after the default's repairs were
done.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import re
import sys
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from argus.paths import data_root  # noqa: E402
from argus.text.preprocess import DEFAULT_SEGMENTER, SEGMENTERS  # noqa: E402

SET = ROOT / "datasets" / "boundaries" / "boundaries.json"
HELD_OUT = ROOT / "datasets" / "boundaries" / "heldout.json"  # marked after the default's repairs were done
SOURCES = {  # source file → the short name the tables use
    "us_real/opinions/opinion_bonenberger_v_plymouth_township_1997.txt": "Bonenberger (3d Cir. 1997)",
    "us_real/opinions/opinion_fisher_v_ut_austin_2013.txt": "Fisher (U.S. 2013)",
    "us_real/ssla/test_old.tsv": "SSLA complaint excerpts",
}
_LINE_BREAK = re.compile(r"[\n\r\f\t]")


@dataclass
class Paragraph:
    id: str
    source: str
    text: str  # as in the source file
    boundaries: list[int]

    @property
    def segmenter_input(self) -> str:
        """What a segmenter reads: the paragraph with its line breaks as spaces (same offsets)."""
        return _LINE_BREAK.sub(" ", self.text)


@lru_cache(maxsize=4)
def _source_text(source: str, row: int | None) -> str:
    path = data_root() / source
    if row is None:
        return path.read_text(encoding="utf-8")
    with path.open(encoding="utf-8", newline="") as f:
        for i, rec in enumerate(csv.DictReader(f, delimiter="\t")):
            if i == row:
                return rec["text"]
    raise ValueError(f"{source} has no data row {row}")


def load_set(path: Path = SET) -> list[Paragraph]:
    """The boundary set's paragraphs, read from the shared data; raises when a paragraph's text has drifted
    (its sha256 no longer matches)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for rec in data["paragraphs"]:
        text = _source_text(rec["source"], rec.get("row"))[rec["start"] : rec["end"]]
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        if digest != rec["sha256"]:
            raise ValueError(f"paragraph {rec['id']}: the text at {rec['source']} [{rec['start']}:{rec['end']}] "
                             f"has changed (sha256 {digest[:12]}…, expected {rec['sha256'][:12]}…)")
        out.append(Paragraph(rec["id"], rec["source"], text, list(rec["boundaries"])))
    return out


def predicted_boundaries(segmenter, text: str) -> set[int]:
    """Interior sentence ends a segmenter predicts: each span's end after trailing whitespace is trimmed,
    the paragraph's own end left out."""
    end = len(text.rstrip())
    ends = {len(text[:b].rstrip()) for a, b in segmenter(text) if text[a:b].strip()}
    return {e for e in ends if 0 < e < end}


def counts(segmenter, paragraphs: list[Paragraph]) -> np.ndarray:
    """Per paragraph: true positives, false positives, false negatives (an array of shape (n, 3))."""
    rows = []
    for p in paragraphs:
        pred, gold = predicted_boundaries(segmenter, p.segmenter_input), set(p.boundaries)
        rows.append((len(pred & gold), len(pred - gold), len(gold - pred)))
    return np.array(rows, dtype=float).reshape(-1, 3)


def _prf(tp, fp, fn, axis=-1):
    tp, fp, fn = (np.sum(x, axis=axis) for x in (tp, fp, fn))
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(tp + fp > 0, tp / (tp + fp), 1.0)
        r = np.where(tp + fn > 0, tp / (tp + fn), 1.0)
        f = np.where(p + r > 0, 2 * p * r / (p + r), 0.0)
    return p, r, f


def scores(c: np.ndarray, n_resamples: int = 2000, seed: int = 0) -> dict[str, tuple[float, float, float]]:
    """Pooled precision, recall, F1 with a 95 % percentile bootstrap interval over paragraphs:
    {"P": (value, lo, hi), "R": ..., "F1": ...}."""
    from scipy.stats import bootstrap

    tp, fp, fn = c[:, 0], c[:, 1], c[:, 2]
    point = _prf(tp, fp, fn)
    out = {}
    for k, name in enumerate(("P", "R", "F1")):
        value = float(point[k])
        if len(c) < 2:
            out[name] = (value, value, value)
            continue

        def stat(tp, fp, fn, axis=-1, k=k):
            return _prf(tp, fp, fn, axis=axis)[k]

        res = bootstrap((tp, fp, fn), stat, paired=True, vectorized=True, method="percentile",
                        n_resamples=n_resamples, confidence_level=0.95, rng=np.random.default_rng(seed))
        lo, hi = res.confidence_interval.low, res.confidence_interval.high
        if not (np.isfinite(lo) and np.isfinite(hi)):  # every resample the same value
            lo = hi = value
        out[name] = (value, float(min(lo, value)), float(max(hi, value)))
    return out


def errors(segmenter, paragraphs: list[Paragraph], width: int = 70) -> list[str]:
    """The false (FP) and missed (FN) boundaries of a segmenter, each in context: left ‖ right."""
    lines = []
    for p in paragraphs:
        text = p.segmenter_input
        pred, gold = predicted_boundaries(segmenter, text), set(p.boundaries)
        for kind, offsets in (("FP", pred - gold), ("FN", gold - pred)):
            for e in sorted(offsets):
                left = re.sub(r"\s+", " ", text[max(0, e - width) : e])
                right = re.sub(r"\s+", " ", text[e : e + width // 2])
                lines.append(f"{kind} {p.id}:{e}  …{left}‖{right}…")
    return lines


def _cell(v: tuple[float, float, float]) -> str:
    return f"{v[0]:.3f} [{v[1]:.3f}, {v[2]:.3f}]"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--segmenters", default=",".join(SEGMENTERS))
    ap.add_argument("--errors", action="store_true", help="list the default segmenter's errors in context")
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--held-out", action="store_true", help="score the held-out excerpts (heldout.json)")
    args = ap.parse_args(argv)

    paragraphs = load_set(HELD_OUT if args.held_out else SET)
    groups = {name: [p for p in paragraphs if p.source == src] for src, name in SOURCES.items()}
    groups = {k: v for k, v in groups.items() if v}
    groups["pooled"] = paragraphs
    n_gold = sum(len(p.boundaries) for p in paragraphs)
    print(f"{len(paragraphs)} paragraphs, {n_gold} hand-marked boundaries "
          f"({', '.join(f'{k}: {sum(len(p.boundaries) for p in v)}' for k, v in groups.items() if k != 'pooled')})")
    rows = []
    for name in args.segmenters.split(","):
        seg = SEGMENTERS[name]
        seg(paragraphs[0].segmenter_input)  # load the model once before timing
        t0 = time.perf_counter()
        per_par = counts(seg, paragraphs)
        seconds = time.perf_counter() - t0
        index = {p.id: i for i, p in enumerate(paragraphs)}
        for group, members in groups.items():
            c = per_par[[index[p.id] for p in members]]
            s = scores(c, n_resamples=args.resamples)
            rows.append({"segmenter": name + (" (default)" if name == DEFAULT_SEGMENTER else ""), "source": group,
                         "gold": int(c[:, 0].sum() + c[:, 2].sum()), "predicted": int(c[:, 0].sum() + c[:, 1].sum()),
                         "P": _cell(s["P"]), "R": _cell(s["R"]), "F1": _cell(s["F1"]),
                         "seconds": f"{seconds:.2f}" if group == "pooled" else ""})
    header = list(rows[0])
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("| " + " | ".join("---" for _ in header) + " |")
        for r in rows:
            print("| " + " | ".join(str(r[h]) for h in header) + " |")
    else:
        widths = {h: max(len(h), *(len(str(r[h])) for r in rows)) for h in header}
        print("  ".join(h.ljust(widths[h]) for h in header))
        for r in rows:
            print("  ".join(str(r[h]).ljust(widths[h]) for h in header))
    if args.errors:
        lines = errors(SEGMENTERS[DEFAULT_SEGMENTER], paragraphs)
        print(f"\n{DEFAULT_SEGMENTER}: {sum(x.startswith('FP') for x in lines)} false, "
              f"{sum(x.startswith('FN') for x in lines)} missed boundaries")
        print("\n".join(lines))


if __name__ == "__main__":
    main()
