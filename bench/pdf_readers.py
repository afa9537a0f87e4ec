"""Which library reads a PDF's text layer: PDFium (pypdfium2), pypdf and pdfplumber, on the annotated
complaints typeset to PDF (``bench/make_pdfs.py``).

For each reader and complaint: the pages' texts joined by form feeds, against the source
``complaint.txt``. Character error rate (CER) = Levenshtein distance (rapidfuzz) / source length, on the
text with every run of spaces and tabs made one space (``cer``: what reading depends on, line breaks and
page breaks kept) and on the text as it is (``cer_exact``: indentation too). Seconds per page: the
reader alone, one process, no other work.

    python bench/make_pdfs.py --out out/pdfs --no-scans
    python bench/pdf_readers.py out/pdfs/text
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

from rapidfuzz.distance import Levenshtein


def read_pdfium(path: Path) -> list[str]:
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(str(path))
    try:
        out = []
        for page in pdf:
            tp = page.get_textpage()
            out.append(tp.get_text_bounded().replace("\r\n", "\n").replace("\r", "\n"))
            tp.close()
            page.close()
        return out
    finally:
        pdf.close()


def read_pypdf(path: Path) -> list[str]:
    from pypdf import PdfReader

    return [p.extract_text() for p in PdfReader(str(path)).pages]


def read_pypdf_layout(path: Path) -> list[str]:
    from pypdf import PdfReader

    return [p.extract_text(extraction_mode="layout") for p in PdfReader(str(path)).pages]


def read_pdfplumber(path: Path) -> list[str]:
    import pdfplumber

    with pdfplumber.open(str(path)) as pdf:
        return [p.extract_text() for p in pdf.pages]


def read_pdfplumber_layout(path: Path) -> list[str]:
    import pdfplumber

    with pdfplumber.open(str(path)) as pdf:
        return [p.extract_text(layout=True) for p in pdf.pages]


def read_shipped(path: Path) -> list[str]:
    from argus.ingest.pdf import read_pdf_pages

    return [p.text for p in read_pdf_pages(path)]


READERS = {"pypdfium2": read_pdfium, "pypdf": read_pypdf, "pypdf (layout)": read_pypdf_layout,
           "pdfplumber": read_pdfplumber, "pdfplumber (layout)": read_pdfplumber_layout, "shipped": read_shipped}


def squeeze(text: str) -> str:
    """Spaces and tabs in runs made one; blank lines and line-end spaces dropped; pages kept."""
    pages = []
    for page in text.split("\f"):
        lines = [re.sub(r"[ \t]+", " ", ln).strip() for ln in page.split("\n")]
        pages.append("\n".join(ln for ln in lines if ln))
    return "\f".join(p for p in pages if p)


def cer(got: str, want: str) -> float:
    return Levenshtein.distance(got, want) / max(1, len(want))


def source_text(doc: str) -> str | None:
    from argus.paths import complaints_dir

    for split in ("train", "dev"):
        f = complaints_dir(split) / doc / "complaint.txt"
        if f.exists():
            return f.read_text(encoding="utf-8")
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("folder", type=Path, help="text-layer PDFs named <doc>.pdf (bench/make_pdfs.py)")
    ap.add_argument("--readers", default=",".join(READERS))
    args = ap.parse_args(argv)
    pdfs = sorted(args.folder.glob("*.pdf"))
    if not pdfs:
        print(f"no PDFs in {args.folder}: run bench/make_pdfs.py first", file=sys.stderr)
        return 2
    print(f"{len(pdfs)} PDFs\n")
    print(f"| reader | CER (spaces squeezed) | CER (exact) | s/page | pages |")
    print("|---|---:|---:|---:|---:|")
    for name in args.readers.split(","):
        read = READERS[name]
        dist = dist_exact = length = length_exact = pages = 0
        seconds = 0.0
        for pdf in pdfs:
            want = source_text(pdf.stem)
            if want is None:
                continue
            t0 = time.perf_counter()
            got = read(pdf)
            seconds += time.perf_counter() - t0
            pages += len(got)
            joined = "\f".join(got)
            a, b = squeeze(joined), squeeze(want)
            dist += Levenshtein.distance(a, b)
            length += len(b)
            w = want.replace("\r", "").strip("\n")
            dist_exact += Levenshtein.distance("\f".join(p.strip("\n") for p in got), "\f".join(p.strip("\n") for p in w.split("\f")))
            length_exact += len(w)
        print(f"| {name} | {dist / length:.4f} | {dist_exact / length_exact:.4f} | {seconds / pages:.4f} | {pages} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
