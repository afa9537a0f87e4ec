"""Reading text files: bad input gets a clear message or a documented fallback."""

from __future__ import annotations

import pytest

from argus.errors import InputError
from argus.ingest.files import doc_id_for, iter_paths, read_text_document


def test_empty_and_whitespace_files(tmp_path):
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "blank.txt").write_text("   \n\n ")
    with pytest.raises(InputError, match="empty"):
        read_text_document(tmp_path / "empty.txt")
    with pytest.raises(InputError, match="empty|whitespace"):
        read_text_document(tmp_path / "blank.txt")


def test_binary_files_are_refused_with_advice(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj")
    (tmp_path / "b.txt").write_bytes(b"abc\x00\x01\x02def" * 10)
    with pytest.raises(InputError, match="PDF.*OCR|pdftotext"):
        read_text_document(tmp_path / "a.txt")
    with pytest.raises(InputError, match="binary"):
        read_text_document(tmp_path / "b.txt")


def test_non_utf8_falls_back_to_cp1252_with_a_warning(tmp_path):
    p = tmp_path / "c.txt"
    p.write_bytes("FACTS\n\n1.     Ms. Pe\u00f1a was hired \u201cimmediately\u201d.\n".encode("cp1252"))
    raw = read_text_document(p)
    assert "Peña" in raw.text and "“immediately”" in raw.text
    assert any("Windows-1252" in w for w in raw.warnings)


def test_doc_ids_and_folders(tmp_path):
    case = tmp_path / "nysd-1-22-cv-1" / "complaint.txt"
    case.parent.mkdir()
    case.write_text("x")
    (tmp_path / "other.txt").write_text("y")
    (tmp_path / "notes.json").write_text("{}")
    assert doc_id_for(case) == "nysd-1-22-cv-1"
    assert [p.name for p in iter_paths([tmp_path])] == ["complaint.txt", "other.txt"]
    with pytest.raises(InputError, match="no such file"):
        read_text_document(tmp_path / "missing.txt")
