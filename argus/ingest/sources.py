"""A batch's input files read into documents: text files as they are, PDFs by their text layer, and the
scanned pages of all the batch's PDFs OCR'd together, ``workers`` pages at a time, with a progress bar.

A page whose OCR fails fails its document (the error names the page); the other documents are read.
Tesseract missing: every document with a scanned page fails with the line that names the package;
``argus extract`` checks that before the first document (:func:`ocr_preflight`) and stops.
"""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path
from typing import Iterator

from rich.console import Console

from argus.text.documents import RawDocument
from argus.errors import ArgusError, InputError, PreflightError
from argus.ingest.files import read_text_document
from argus.ingest.pdf import OcrPool, PdfText, is_pdf, pdf_document, read_text_layer, tesseract_missing


def ocr_preflight(paths) -> None:
    """Raise ``PreflightError`` (one line: the file, the package to install) when an input PDF has a page
    without a text layer and Tesseract is not installed. Nothing is read when Tesseract is there."""
    from argus.ingest.files import iter_paths

    problem = tesseract_missing()
    if problem is None:
        return
    for p in iter_paths(paths):
        if p.is_file() and is_pdf(p):
            try:
                layer = read_text_layer(p)
            except ArgusError:
                continue  # the document's own failure, reported with it
            if layer.scanned:
                raise PreflightError(f"{p}: {problem}")


def read_sources(paths: list[Path], *, workers: int = 1, console: Console | None = None
                 ) -> Iterator[tuple[str, RawDocument | ArgusError]]:
    """(label, document or the error reading it) for each of ``paths`` (files), in order; the scanned
    pages of every PDF among them OCR'd ``workers`` at a time before the first is yielded."""
    read: list[tuple[str, RawDocument | PdfText | ArgusError]] = []
    for p in paths:
        try:
            read.append((str(p), read_text_layer(p) if p.is_file() and is_pdf(p) else read_text_document(p)))
        except ArgusError as exc:
            read.append((str(p), exc))
    scanned = [(label, layer) for label, layer in read if isinstance(layer, PdfText) and layer.scanned]
    futures: dict[str, dict[int, Future]] = {}
    problem = tesseract_missing() if scanned else None
    if scanned and problem is None:
        total = sum(len(layer.scanned) for _, layer in scanned)
        with _ocr_progress(console) as progress:
            task = progress.add_task("OCR pages", total=total)
            with OcrPool(workers, on_page=lambda: progress.advance(task)) as pool:
                for label, layer in scanned:
                    futures[label] = {n: pool.submit(layer.path, n) for n in layer.scanned}
                for pages in futures.values():
                    for f in pages.values():
                        f.exception()  # wait: every page done (or failed) before the bar closes
    for label, item in read:
        if not isinstance(item, PdfText):
            yield label, item
            continue
        if item.scanned and problem is not None:
            yield label, PreflightError(f"{label}: {problem}")
            continue
        try:
            ocr = {n: f.result() for n, f in futures.get(label, {}).items()}
            yield label, pdf_document(item, ocr)
        except ArgusError as exc:
            yield label, exc
        except Exception as exc:  # a defect in one page's OCR fails that document only
            yield label, InputError(f"{label}: OCR failed ({type(exc).__name__}: {str(exc)[:200]})")


def _ocr_progress(console: Console | None):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=console or Console(stderr=True), transient=False)
