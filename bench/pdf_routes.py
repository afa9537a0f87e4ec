"""The three routes of a complaint into a graph, side by side on the 18 annotated complaints: the text file,
the text-layer PDF and the scan (``bench/make_pdfs.py`` makes the PDFs).

Each route runs the real ``argus extract`` path (``argus.runs.batch.run_batch``: reading, OCR of the scans page by
page in parallel, preprocessing, the fact gate, the method) into its own folder, and each EKG is scored against
gold with ``metrics.gold.score_document`` (relaxed tier; mean over complaints), its sentence spans first
moved into ``complaint.txt``'s offsets (gold's) by a character alignment of the two texts. Also: the character error
rate of the text each route gives (the EKG's ``text``) against ``complaint.txt`` (Levenshtein distance over
source length, spaces and tabs in runs made one, blank lines dropped); the seconds per page the batch
spent reading its inputs (``argus.runs.batch.pending_sources``: the PDF's text layer, OCR of the scans), with
the extra over the text route, and the whole run's seconds per page (the rest of the run is the same
work on the same or nearly the same text; the embedding cache the routes share makes later routes'
runs faster, so compare reading, not run, seconds).

    python bench/make_pdfs.py --out out/pdfs
    python bench/pdf_routes.py --pdfs out/pdfs --out out/routes              # the floor (no language model)
    python bench/pdf_routes.py --pdfs out/pdfs --out out/routes --limit 3
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

from rapidfuzz.distance import Levenshtein


def in_source_offsets(ekg, source: str):
    """``ekg`` with its sentence spans moved into ``source``'s offsets (gold's), through a character alignment
    of the route's text to the source (Levenshtein opcodes): the gold alignment compares spans."""
    opcodes = Levenshtein.opcodes(ekg.text, source)
    where = [0] * (len(ekg.text) + 1)
    for op in opcodes:
        for i in range(op.src_start, op.src_end):
            where[i] = min(op.dest_start + (i - op.src_start), max(op.dest_start, op.dest_end - 1)) \
                if op.tag != "delete" else op.dest_start
    where[len(ekg.text)] = len(source)
    sentences = [s.model_copy(update={"span": (where[s.span[0]], max(where[s.span[0]] + 1, where[s.span[1] - 1] + 1))})
                 for s in ekg.sentences]
    return ekg.model_copy(update={"sentences": sentences})


def squeeze(text: str) -> str:
    lines = [re.sub(r"[ \t]+", " ", ln).strip() for ln in text.replace("\f", "\n").split("\n")]
    return "\n".join(ln for ln in lines if ln)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pdfs", type=Path, default=Path("out/pdfs"), help="bench/make_pdfs.py's folder (text/, scan/)")
    ap.add_argument("--out", type=Path, default=Path("out/routes"))
    ap.add_argument("--method", default="floor", help="argus extract --method (default: floor, no language model)")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--concurrency", type=int, default=2, help="documents (and OCR pages) at a time")
    args = ap.parse_args(argv)

    from rich.console import Console

    from argus.runs.batch import run_batch
    from argus.config import ArgusConfig
    from argus.output.export import load_ekg
    from argus.pipeline import ArgusPipeline
    from metrics.gold import load_gold, score_document

    sys.path.insert(0, str(Path(__file__).parent))
    from make_pdfs import complaint_folders

    folders = complaint_folders()[: args.limit or None]
    routes = {
        "txt": [d / "complaint.txt" for d in folders],
        "text-layer PDF": [args.pdfs / "text" / f"{d.name}.pdf" for d in folders],
        "scan": [args.pdfs / "scan" / f"{d.name}.pdf" for d in folders],
    }
    missing = [p for ps in routes.values() for p in ps if not p.exists()]
    if missing:
        print(f"{len(missing)} inputs missing (first: {missing[0]}): run bench/make_pdfs.py --out {args.pdfs}",
              file=sys.stderr)
        return 2
    pipe = ArgusPipeline(ArgusConfig.load(None, {"cache_dir": str(args.out / "cache")}))
    pipe.extract_floor(folders[0] / "complaint.txt")  # models loaded before any route is timed
    quiet = Console(stderr=True, quiet=True)
    import argus.runs.batch

    reading = []  # seconds run_batch spent reading its inputs (argus.runs.batch.pending_sources: OCR included)
    pending = argus.runs.batch.pending_sources

    def timed_pending(*a, **kw):
        t = time.perf_counter()
        try:
            return pending(*a, **kw)
        finally:
            reading.append(time.perf_counter() - t)

    argus.runs.batch.pending_sources = timed_pending
    rows = {}
    for route, inputs in routes.items():
        out = args.out / re.sub(r"[^a-z]+", "-", route.lower())
        t0 = time.perf_counter()
        report = run_batch(inputs, out, method=args.method, graphml=False, console=quiet, pipeline=pipe,
                           concurrency=args.concurrency)
        seconds = time.perf_counter() - t0
        read_s = reading[-1]
        ev, en, dist, length, pages = [], [], 0, 0, 0
        for d in folders:
            f = out / f"{d.name}.ekg.json"
            if not f.exists():
                ev.append(0.0)
                en.append(0.0)
                continue
            source = (d / "complaint.txt").read_text(encoding="utf-8")
            ekg = load_ekg(f)
            sc = score_document(in_source_offsets(ekg, source), load_gold(d), tiers=("relaxed",))
            ev.append(sc["relaxed_events_f1"])
            en.append(sc["relaxed_entities_f1"])
            pages += source.count("\f") + 1
            a, b = squeeze(ekg.text), squeeze(source)
            dist += Levenshtein.distance(a, b)
            length += len(b)
        rows[route] = {"events": sum(ev) / len(ev), "entities": sum(en) / len(en), "cer": dist / max(1, length),
                       "s_page": seconds / max(1, pages), "read_page": read_s / max(1, pages), "failed": len(report.errors), "pages": pages}
    base = rows["txt"]
    print(f"{len(folders)} complaints, {base['pages']} pages, method {args.method}, {args.concurrency} at a time\n")
    print("| route | relaxed event F1 | Δ | relaxed entity F1 | Δ | CER | reading s/page | extra s/page | "
          "run s/page | failed |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for route, r in rows.items():
        print(f"| {route} | {r['events']:.4f} | {r['events'] - base['events']:+.4f} | {r['entities']:.4f} | "
              f"{r['entities'] - base['entities']:+.4f} | {r['cer']:.4f} | {r['read_page']:.3f} | "
              f"{r['read_page'] - base['read_page']:+.3f} | {r['s_page']:.3f} | {r['failed']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
