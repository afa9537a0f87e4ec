"""PDFs as filed: the text layer read page by page, pages without one OCR'd with Tesseract.

The reader is pypdf in its layout mode, chosen by measurement (``bench/pdf_readers.py``, docs/pdf.md):
on the annotated complaints typeset to PDF it gives the source text back exactly, line breaks,
indentation and end-of-line hyphens included, at 0.06 s a page. PDFium (pypdfium2) is twenty times
faster but joins hyphenated lines (its soft-hyphen mark), and pdfplumber drops indentation; the
cleanup of OCR splits and page furniture in ``argus.text.preprocess`` reads lines as printed, so the text
keeps them.

A page is *scanned* when its text layer holds fewer than :data:`MIN_TEXT_CHARS` visible characters
and it draws an image (a clerk's stamp "Case 1:21-cv-… Page 3 of 14" over a scan is such a page). A
scanned page is rendered by PDFium at :data:`OCR_DPI` (the stamp included) and read by Tesseract
(pytesseract; chosen over ocrmypdf by measurement, docs/pdf.md), one page a task, pages of all the
batch's documents in parallel up to the run's bound (:class:`OcrPool`). A page whose OCR fails fails
its document, never the batch.

The pages' texts are joined by form feeds (``\\f``), which ``argus.text.preprocess`` reads as page breaks:
the page of a character is one more than the form feeds before it (:func:`page_of`). Stray control
characters are replaced as in text files (``argus.ingest.files.replace_controls``). The document
carries the file's SHA-256 and its page count; its text is what every span indexes.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from argus.text.documents import RawDocument, page_at, page_of, page_starts  # noqa: F401  (pages: argus.text.documents)
from argus.errors import InputError, PreflightError
from argus.ingest.common import doc_id_for, replace_controls

MIN_TEXT_CHARS = 100
"""A page with an image and fewer visible characters than this in its text layer is OCR'd."""
OCR_DPI = 300
"""Resolution a scanned page is rendered at for Tesseract."""
OCR_LANGUAGE = "eng"
TESSERACT_PACKAGE = "tesseract-ocr"
"""The Debian package that installs the ``tesseract`` command."""

_PDFIUM = threading.Lock()  # PDFium is not thread-safe: one render at a time in a process


@dataclass
class PdfPage:
    """One page of a PDF: its number (from 1), its text, and whether that text is Tesseract's."""

    number: int
    text: str
    ocr: bool = False


@dataclass
class PdfText:
    """What the text layer of a PDF gives: every page's text, and which pages need OCR."""

    path: Path
    sha256: str
    pages: list[PdfPage]
    scanned: list[int] = field(default_factory=list)
    """Numbers of the pages without a text layer (to OCR)."""


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def is_pdf(path: str | Path) -> bool:
    """A ``.pdf`` file, or any file that starts as one (``%PDF``)."""
    p = Path(path)
    if p.suffix.lower() == ".pdf":
        return True
    try:
        with open(p, "rb") as f:
            return f.read(5) == b"%PDF-"
    except OSError:
        return False


def _has_image(page) -> bool:
    try:
        xobjects = page["/Resources"].get_object().get("/XObject")
        if xobjects is None:
            return False
        for ref in xobjects.get_object().values():
            obj = ref.get_object()
            if obj.get("/Subtype") == "/Image" or obj.get("/Subtype") == "/Form":
                return True
    except (KeyError, AttributeError, TypeError):
        return False
    return False


def _layout_text(page) -> str:
    text = page.extract_text(extraction_mode="layout")
    return "\n".join(line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")).strip("\n")


def read_text_layer(path: str | Path) -> PdfText:
    """Every page's text layer (pypdf, layout mode) and the pages that need OCR."""
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    p = Path(path)
    if not p.exists():
        raise InputError(f"{p}: no such file")
    try:
        reader = PdfReader(str(p))
        if reader.is_encrypted and not reader.decrypt(""):
            raise InputError(f"{p}: the PDF is encrypted with a password; save an unprotected copy")
        pages, scanned = [], []
        for n, page in enumerate(reader.pages, start=1):
            text = _layout_text(page)
            if sum(not c.isspace() for c in text) < MIN_TEXT_CHARS and _has_image(page):
                scanned.append(n)
            pages.append(PdfPage(n, text))
    except InputError:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        raise InputError(f"{p}: not a readable PDF ({type(exc).__name__}: {str(exc)[:200]})") from exc
    if not pages:
        raise InputError(f"{p}: the PDF has no pages")
    return PdfText(p, sha256_file(p), pages, scanned)


# ----------------------------------------------------------------------------- OCR


def tesseract_command() -> str:
    """The Tesseract command: ``$ARGUS_TESSERACT`` (a path or a name on the PATH), else ``tesseract``."""
    return os.environ.get("ARGUS_TESSERACT") or "tesseract"


def tesseract_missing() -> str | None:
    """None when Tesseract can run, else the one line that says what to install."""
    if shutil.which(tesseract_command()) is None:
        return (f"scanned PDF pages need OCR, and Tesseract is not installed: apt-get install {TESSERACT_PACKAGE} "
                "(Debian/Ubuntu; the package is tesseract-ocr)")
    return None


def render_page(path: Path, number: int, dpi: int = OCR_DPI):
    """Page ``number`` of ``path`` as a grayscale PIL image at ``dpi`` (PDFium)."""
    import pypdfium2 as pdfium

    with _PDFIUM:
        pdf = pdfium.PdfDocument(str(path))
        try:
            page = pdf[number - 1]
            bitmap = page.render(scale=dpi / 72, grayscale=True)
            image = bitmap.to_pil()
            page.close()
            return image
        finally:
            pdf.close()


def ocr_page(path: Path, number: int, dpi: int = OCR_DPI) -> str:
    """The text Tesseract reads on page ``number`` of ``path``, lines as printed."""
    import pytesseract

    pytesseract.pytesseract.tesseract_cmd = shutil.which(tesseract_command()) or tesseract_command()
    image = render_page(path, number, dpi)
    try:
        text = pytesseract.image_to_string(image, lang=OCR_LANGUAGE, config="--psm 6 -c preserve_interword_spaces=1")
    except (pytesseract.TesseractError, pytesseract.TesseractNotFoundError, OSError, RuntimeError) as exc:
        raise InputError(f"{path}: page {number}: OCR failed ({type(exc).__name__}: {str(exc).strip()[:200]})") from exc
    return "\n".join(line.rstrip() for line in text.split("\n")).strip("\n")


class OcrPool:
    """Tesseract on pages, ``workers`` at a time (each a ``tesseract`` process, one thread each).

    ``submit`` returns a future per page; ``on_page`` (if given) is called as each page is done, from
    a worker thread (a progress bar's ``advance``)."""

    def __init__(self, workers: int, on_page: Callable[[], None] | None = None, dpi: int = OCR_DPI):
        os.environ.setdefault("OMP_THREAD_LIMIT", "1")  # Tesseract's own threads: the pool is the parallelism
        self.workers = max(1, workers)
        self.dpi = dpi
        self.on_page = on_page
        self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="argus-ocr")

    def submit(self, path: Path, number: int) -> Future:
        def run() -> str:
            try:
                return ocr_page(path, number, self.dpi)
            finally:
                if self.on_page is not None:
                    self.on_page()

        return self._pool.submit(run)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def __enter__(self) -> "OcrPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# ----------------------------------------------------------------------------- documents


def join_pages(texts: list[str]) -> str:
    """The pages' texts as one text: each page ends its last line, then a form feed starts the next."""
    return "\f".join(t if t.endswith("\n") else t + "\n" for t in texts)


def pdf_document(layer: PdfText, ocr_texts: dict[int, str] | None = None, doc_id: str | None = None) -> RawDocument:
    """The ``RawDocument`` of a PDF from its text layer and the OCR text of its scanned pages."""
    ocr_texts = ocr_texts or {}
    missing = [n for n in layer.scanned if n not in ocr_texts]
    if missing:
        raise InputError(f"{layer.path}: pages {missing} have no text layer and were not OCR'd")
    texts = [ocr_texts.get(pg.number, pg.text) for pg in layer.pages]
    text = join_pages(texts)
    if not text.strip():
        raise InputError(f"{layer.path}: no text on any of its {len(layer.pages)} pages (blank, or drawn as vector "
                         "graphics without a text layer)")
    text, warnings = replace_controls(text)
    if layer.scanned:
        which = "all its" if len(layer.scanned) == len(layer.pages) else f"{len(layer.scanned)} of its"
        warnings.insert(0, f"{which} {len(layer.pages)} pages have no text layer and were read by OCR (Tesseract): "
                           "check names and numbers against the filing")
    return RawDocument(
        doc_id=doc_id or doc_id_for(layer.path), text=text, source=str(layer.path), warnings=warnings,
        metadata={"sha256": layer.sha256, "pages": len(layer.pages), "ocr_pages": list(layer.scanned),
                  "reader": "pypdf (layout)" + (", tesseract" if layer.scanned else "")})


def read_pdf_document(path: str | Path, doc_id: str | None = None, workers: int = 1) -> RawDocument:
    """One PDF as a ``RawDocument``, its scanned pages OCR'd ``workers`` at a time."""
    layer = read_text_layer(path)
    ocr_texts: dict[int, str] = {}
    if layer.scanned:
        problem = tesseract_missing()
        if problem:
            raise PreflightError(f"{layer.path}: {problem}")
        with OcrPool(workers) as pool:
            futures = {n: pool.submit(layer.path, n) for n in layer.scanned}
            ocr_texts = {n: f.result() for n, f in futures.items()}
    return pdf_document(layer, ocr_texts, doc_id)


def read_pdf_pages(path: str | Path) -> list[PdfPage]:
    """Every page of a PDF with its text (OCR'd where it has no text layer): for measurements."""
    layer = read_text_layer(path)
    for pg in layer.pages:
        if pg.number in layer.scanned:
            pg.text, pg.ocr = ocr_page(layer.path, pg.number), True
    return layer.pages
