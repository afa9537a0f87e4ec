"""Text files and folders of text files (PDFs: ``argus.ingest.pdf``).

Decoding: UTF-8 (with or without BOM); a file that is not valid UTF-8 is decoded as Windows-1252
(the usual encoding of OCR dumps) and the document carries a warning saying so. Binary files
(images, office documents, anything with NUL bytes, text that is mostly control characters) are
refused with an ``InputError`` that says what to do.

Text that came out of a PDF often carries stray control characters (a checkbox glyph read as
``\x03``; a font without a Unicode map whose space is glyph 3). :func:`replace_controls` replaces each
one by one character, what it stands for where that is known (a vertical tab or a record separator
ends a line) and a space otherwise, and the document carries a warning that counts them. Form feeds
stay: they are page breaks, which preprocessing reads. One character for one keeps every offset, so
the spans index the text the EKG carries, which is the replaced text.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Iterator

from argus.text.documents import RawDocument
from argus.errors import InputError
from argus.ingest.common import count_controls, doc_id_for, replace_controls  # noqa: F401  (shared with pdf: argus.ingest.common)

TEXT_SUFFIXES = {".txt", ".text", ".md"}
PDF_SUFFIXES = {".pdf"}
INPUT_SUFFIXES = TEXT_SUFFIXES | PDF_SUFFIXES
_MAGIC = {
    b"PK\x03\x04": "a ZIP / office document — export it as plain text first",
    b"\x89PNG": "a PNG image — run OCR first",
    b"\xff\xd8\xff": "a JPEG image — run OCR first",
    b"II*\x00": "a TIFF image — run OCR first",
    b"MM\x00*": "a TIFF image — run OCR first",
}


MOSTLY_CONTROLS = 0.5
"""Refused as binary: a UTF-8 text more than this share of whose characters are control characters."""
MOSTLY_CONTROLS_LEGACY = 0.1
"""… and a text that is not UTF-8 (decoded as Windows-1252): random bytes give 1 in 8."""


def decode_bytes(data: bytes, source: str) -> tuple[str, list[str]]:
    """The text of a text file's bytes, its stray control characters replaced, and its warnings."""
    if data.startswith(b"%PDF"):
        raise InputError(f"{source}: this is a PDF file; name it *.pdf (argus extract reads PDFs by their suffix)")
    for magic, what in _MAGIC.items():
        if data.startswith(magic):
            raise InputError(f"{source}: this is {what}")
    if b"\x00" in data[:65536]:
        raise InputError(f"{source}: looks binary (NUL bytes); pass a plain-text file")
    warnings: list[str] = []
    legacy = False
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        legacy = True
        text = data.decode("cp1252", errors="replace")
        warnings.append(
            f"not valid UTF-8 (first bad byte at offset {exc.start}); decoded as Windows-1252 — "
            "check names and quotes, or re-save the file as UTF-8"
        )
    head = text[:65536]
    controls = count_controls(head)
    if head and controls / len(head) > (MOSTLY_CONTROLS_LEGACY if legacy else MOSTLY_CONTROLS):
        raise InputError(f"{source}: looks binary ({controls} control characters in its first {len(head):,}); "
                         "pass a plain-text file")
    text, notes = replace_controls(text)
    return text, warnings + notes


def read_text_document(path: str | Path, doc_id: str | None = None) -> RawDocument:
    p = Path(path)
    if not p.exists():
        raise InputError(f"{p}: no such file")
    if p.is_dir():
        raise InputError(f"{p}: a folder with no text files or PDFs ({', '.join(sorted(INPUT_SUFFIXES))})")
    data = p.read_bytes()
    if not data.strip():
        raise InputError(f"{p}: the file is empty")
    text, warnings = decode_bytes(data, str(p))
    if not text.strip():
        raise InputError(f"{p}: the file holds only whitespace")
    return RawDocument(doc_id=doc_id or doc_id_for(p), text=text, source=str(p), warnings=warnings,
                       metadata={"sha256": hashlib.sha256(data).hexdigest()})


#: a str longer than this is text, never a path (Linux's PATH_MAX)
_MAX_PATH = 4096


def looks_like_path(source: str) -> bool:
    """Whether a str names a file rather than holding a text: one line of at most ``_MAX_PATH``
    characters that names an existing file or folder, or that ends in an input suffix (``.txt``,
    ``.pdf``, …) with no space in its file name (a missing file is then reported as missing). Text with a
    line break, or longer, is never looked up on disk."""
    if not source.strip() or any(c in source for c in "\n\r\x00") or len(source) > _MAX_PATH:
        return False
    try:
        p = Path(source)
        if p.exists():
            return True
    except (OSError, ValueError):  # a name too long for the file system, a NUL byte: text
        return False
    return p.suffix.lower() in INPUT_SUFFIXES and " " not in p.name


def text_document(text: str, doc_id: str | None = None) -> RawDocument:
    """A text given as a str (not read from a file); its id ``doc_id`` or ``text-`` and the first 12 hex
    digits of its SHA-256, its source ``<text>``."""
    if not text.strip():
        raise InputError("the text is empty")
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return RawDocument(doc_id=doc_id or f"text-{digest[:12]}", text=text, source="<text>", metadata={"sha256": digest})


def read_document(path: str | Path, doc_id: str | None = None) -> RawDocument:
    """A text file or a PDF (by its suffix or its first bytes; ``argus.ingest.pdf``, scanned pages OCR'd)."""
    from argus.ingest.pdf import is_pdf, read_pdf_document

    p = Path(path)
    if p.is_file() and is_pdf(p):
        return read_pdf_document(p, doc_id)
    return read_text_document(p, doc_id)


def iter_paths(paths: list[str | Path]) -> Iterator[Path]:
    """Files given directly, and text files and PDFs found (recursively, sorted) in folders given; a PDF
    beside a text file of the same name (its text, as ``fetch-courtlistener`` keeps them) is not read again."""
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = sorted(f for f in p.rglob("*") if f.is_file() and f.suffix.lower() in INPUT_SUFFIXES and not f.name.startswith("."))
            # a PDF kept beside the text its PDF route gave (fetch-courtlistener): the text is read, once
            texts = {f.with_suffix("") for f in found if f.suffix.lower() in TEXT_SUFFIXES}
            found = [f for f in found if not (f.suffix.lower() in PDF_SUFFIXES and f.with_suffix("") in texts)]
            if not found:
                yield p  # reported as an input error by the reader
            yield from found
        else:
            yield p
