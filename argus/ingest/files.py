"""Text files and folders of text files.

Decoding: UTF-8 (with or without BOM); a file that is not valid UTF-8 is decoded as Windows-1252
(the usual encoding of OCR dumps) and the document carries a warning saying so. Binary files
(PDF, images, office documents, anything with NUL bytes) are refused with an ``InputError`` that
says what to do.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator

from argus.documents import RawDocument
from argus.errors import InputError

TEXT_SUFFIXES = {".txt", ".text", ".md"}
_MAGIC = {
    b"%PDF": "a PDF file — run OCR / text extraction first (e.g. pdftotext) and pass the .txt",
    b"PK\x03\x04": "a ZIP / office document — export it as plain text first",
    b"\x89PNG": "a PNG image — run OCR first",
    b"\xff\xd8\xff": "a JPEG image — run OCR first",
    b"II*\x00": "a TIFF image — run OCR first",
    b"MM\x00*": "a TIFF image — run OCR first",
}


def doc_id_for(path: Path) -> str:
    """``complaint.txt`` inside a case folder takes the folder's name; other files their stem."""
    stem = path.stem
    if stem.lower() in {"complaint", "document", "text"} and path.parent.name:
        stem = path.parent.name
    return re.sub(r"[^A-Za-z0-9._-]+", "-", stem).strip("-") or "document"


def decode_bytes(data: bytes, source: str) -> tuple[str, list[str]]:
    for magic, what in _MAGIC.items():
        if data.startswith(magic):
            raise InputError(f"{source}: this is {what}")
    if b"\x00" in data[:65536]:
        raise InputError(f"{source}: looks binary (NUL bytes); pass a plain-text file")
    warnings: list[str] = []
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        text = data.decode("cp1252", errors="replace")
        warnings.append(
            f"not valid UTF-8 (first bad byte at offset {exc.start}); decoded as Windows-1252 — "
            "check names and quotes, or re-save the file as UTF-8"
        )
    controls = sum(1 for c in text[:65536] if ord(c) < 32 and c not in "\n\r\t\f")
    if text and controls / min(len(text), 65536) > 0.02:
        raise InputError(f"{source}: looks binary ({controls} control characters); pass a plain-text file")
    return text, warnings


def read_text_document(path: str | Path, doc_id: str | None = None) -> RawDocument:
    p = Path(path)
    if not p.exists():
        raise InputError(f"{p}: no such file")
    if p.is_dir():
        raise InputError(f"{p}: a folder with no text files ({', '.join(sorted(TEXT_SUFFIXES))})")
    data = p.read_bytes()
    if not data.strip():
        raise InputError(f"{p}: the file is empty")
    text, warnings = decode_bytes(data, str(p))
    if not text.strip():
        raise InputError(f"{p}: the file holds only whitespace")
    return RawDocument(doc_id=doc_id or doc_id_for(p), text=text, source=str(p), warnings=warnings)


def iter_paths(paths: list[str | Path]) -> Iterator[Path]:
    """Files given directly, and text files found (recursively, sorted) in folders given."""
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = sorted(f for f in p.rglob("*") if f.is_file() and f.suffix.lower() in TEXT_SUFFIXES and not f.name.startswith("."))
            if not found:
                yield p  # reported as an input error by the reader
            yield from found
        else:
            yield p
