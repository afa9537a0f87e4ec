"""Test PDFs made here from the annotated complaints, never downloaded.

Each ``complaint.txt`` of ``us_complaints/{train,dev}`` is typeset to a text-layer PDF by headless
Chromium's print-to-PDF (Debian's ``chromium``, driven by Playwright), one PDF page per page of the text
(its form feeds), each line as printed (monospaced, the size chosen so the longest line and the fullest
page fit a US Letter page). That PDF is then rasterized to an image-only PDF, the way a scanner makes
one: poppler's ``pdftoppm`` renders each page to a grayscale PNG and ``img2pdf`` wraps the images
losslessly, so no page has a text layer.

    python bench/make_pdfs.py --out out/pdfs            # all 18: out/pdfs/{text,scan}/<doc>.pdf
    python bench/make_pdfs.py --out out/pdfs --limit 2 --dpi 200
    python bench/make_pdfs.py --out out/pdfs-serif --font serif --no-scans   # proportional type

Needs ``chromium``, ``poppler-utils`` and ``img2pdf`` (Debian; ``.ci/run`` installs them). Tests call
:func:`typeset` and :func:`rasterize` on a few pages of their own.
"""

from __future__ import annotations

import argparse
import html
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PAGE_WIDTH_IN, PAGE_HEIGHT_IN, MARGIN_IN = 8.5, 11.0, 0.6
CHAR_WIDTH_EM, LINE_HEIGHT = 0.6021, 1.18  # DejaVu Sans Mono's advance; the line pitch set below


def chromium_path() -> str | None:
    """``$ARGUS_CHROMIUM`` if set, else ``chromium`` on the PATH (as the browser tests find it)."""
    named = os.environ.get("ARGUS_CHROMIUM")
    if named:
        return named if Path(named).is_file() else shutil.which(named)
    return shutil.which("chromium")


FONTS = {"mono": ("'DejaVu Sans Mono', monospace", CHAR_WIDTH_EM), "serif": ("'Liberation Serif', serif", 0.45)}
"""Typefaces: ``mono`` (each line as the text file sets it) and ``serif`` (proportional, as a word processor
prints a filing; indentation then no longer lines up): family and mean advance in em."""


def page_html(text: str, font: str = "mono") -> str:
    """The HTML Chromium prints: one ``<pre>`` per page of ``text`` (split at its form feeds), the
    font size chosen so that the longest line and the page with the most lines fit."""
    family, advance = FONTS[font]
    pages = [p.strip("\n") for p in text.replace("\r", "").split("\f")]
    pages = [p for p in pages if p.strip()] or [""]
    widest = max((len(line.expandtabs()) for p in pages for line in p.split("\n")), default=80)
    tallest = max(p.count("\n") + 1 for p in pages)
    usable_w = (PAGE_WIDTH_IN - 2 * MARGIN_IN) * 72
    usable_h = (PAGE_HEIGHT_IN - 2 * MARGIN_IN) * 72
    size = min(11.0, usable_w / (max(widest, 60) * advance) * 0.98, usable_h / (tallest * LINE_HEIGHT) * 0.97)
    body = "\n".join(f'<pre class="page">{html.escape(p.expandtabs())}</pre>' for p in pages)
    return (f"<!doctype html><html><head><meta charset='utf-8'><style>"
            f"@page {{ size: {PAGE_WIDTH_IN}in {PAGE_HEIGHT_IN}in; margin: {MARGIN_IN}in; }}"
            f"body {{ margin: 0; }}"
            f"pre.page {{ font-family: {family}; font-size: {size:.2f}pt; line-height: {LINE_HEIGHT};"
            f" margin: 0; white-space: pre; break-after: page; }}"
            f"pre.page:last-child {{ break-after: auto; }}"
            f"</style></head><body>{body}</body></html>")


class Typesetter:
    """One headless Chromium for many documents (``with Typesetter() as t: t.typeset(text, pdf)``)."""

    def __enter__(self) -> "Typesetter":
        from playwright.sync_api import sync_playwright

        exe = chromium_path()
        if exe is None:
            raise SystemExit("no Chromium: apt-get install chromium (or set ARGUS_CHROMIUM)")
        self._pw = sync_playwright().start()
        self._browser = self._pw.chromium.launch(executable_path=exe, headless=True,
                                                 args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"])
        self._page = self._browser.new_page()
        return self

    def typeset(self, text: str, out: Path, font: str = "mono") -> Path:
        """``text`` as a text-layer PDF at ``out``, one PDF page per page of the text."""
        out.parent.mkdir(parents=True, exist_ok=True)
        self._page.set_content(page_html(text, font), wait_until="load")
        self._page.pdf(path=str(out), prefer_css_page_size=True, print_background=False)
        return out

    def __exit__(self, *exc) -> None:
        self._browser.close()
        self._pw.stop()


def typeset(text: str, out: Path, font: str = "mono") -> Path:
    """One document typeset (a browser started for it alone)."""
    with Typesetter() as t:
        return t.typeset(text, out, font)


def rasterize(pdf: Path, out: Path, dpi: int = 300) -> Path:
    """``pdf`` as an image-only PDF at ``out``: each page rendered to a grayscale PNG (``pdftoppm``)
    and the images wrapped losslessly (``img2pdf``), at ``dpi``."""
    for tool in ("pdftoppm", "img2pdf"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} not found: apt-get install -y poppler-utils img2pdf")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["pdftoppm", "-r", str(dpi), "-gray", "-png", str(pdf), f"{tmp}/p"], check=True)
        pngs = sorted(Path(tmp).glob("p-*.png"), key=lambda p: int(p.stem.rsplit("-", 1)[1]))
        subprocess.run(["img2pdf", "--output", str(out), *map(str, pngs)], check=True)
    return out


def complaint_folders(splits=("train", "dev")) -> list[Path]:
    from argus.paths import complaints_dir

    return [d for s in splits if complaints_dir(s).exists()
            for d in sorted(complaints_dir(s).iterdir()) if (d / "complaint.txt").exists()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("out/pdfs"))
    ap.add_argument("--limit", type=int, default=0, help="only the first N complaints")
    ap.add_argument("--dpi", type=int, default=300, help="resolution of the scans")
    ap.add_argument("--no-scans", action="store_true", help="text-layer PDFs only")
    ap.add_argument("--font", choices=sorted(FONTS), default="mono", help="typeface of the text-layer PDFs")
    args = ap.parse_args(argv)
    folders = complaint_folders()[: args.limit or None]
    if not folders:
        print("no annotated complaints found (set ARGUS_DATA_ROOT)", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    with Typesetter() as t:
        for d in folders:
            pdf = t.typeset(d.joinpath("complaint.txt").read_text(encoding="utf-8"), args.out / "text" / f"{d.name}.pdf",
                            args.font)
            if not args.no_scans:
                rasterize(pdf, args.out / "scan" / f"{d.name}.pdf", dpi=args.dpi)
            print(f"{d.name}: {pdf}", file=sys.stderr)
    print(f"{len(folders)} complaints typeset{'' if args.no_scans else ' and rasterized'} in "
          f"{time.perf_counter() - t0:.1f} s → {args.out}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
