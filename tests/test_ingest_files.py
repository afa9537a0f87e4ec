"""Reading text files: bad input gets a clear message or a documented fallback."""

from __future__ import annotations

import pytest

from argus.errors import InputError
from argus.ingest.files import doc_id_for, iter_paths, read_text_document
from argus.paths import data_root


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
    (tmp_path / "c.txt").write_bytes(b"ab\x01\x02\x03\x04\x05" * 50)  # mostly control characters, no NUL
    (tmp_path / "d.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"x" * 40)
    with pytest.raises(InputError, match="PDF"):
        read_text_document(tmp_path / "a.txt")
    with pytest.raises(InputError, match="binary.*NUL"):
        read_text_document(tmp_path / "b.txt")
    with pytest.raises(InputError, match="binary.*control characters"):
        read_text_document(tmp_path / "c.txt")
    with pytest.raises(InputError, match="PNG image"):
        read_text_document(tmp_path / "d.png")


def test_stray_control_characters_are_replaced_with_a_warning_and_offsets_kept(tmp_path):
    from argus.ingest.files import replace_controls
    from argus.pipeline import ArgusPipeline

    body = ("COMPLAINT\n\nFACTS\n\n1. Plaintiff\x03Jane\x03Roe was hired on\x0bMarch 1, 2019.\x07\n\n"
            "\f2. Defendant fired her on June 3, 2020.\x1d\n")
    text, warnings = replace_controls(body)
    assert len(text) == len(body) and "\f" in text  # one for one; the page break stays
    assert "Plaintiff Jane Roe was hired on\nMarch 1, 2019. " in text
    assert len(warnings) == 1 and warnings[0].startswith("5 stray control characters replaced")
    p = tmp_path / "roe.txt"
    p.write_bytes(body.encode())
    raw = read_text_document(p)
    assert raw.text == text and raw.warnings == warnings
    ekg = ArgusPipeline().extract_floor(raw)
    assert ekg.text == text and any("stray control characters" in w for w in ekg.warnings)
    for s in ekg.sentences:  # the spans index the text the EKG carries
        assert " ".join(text[s.span[0]:s.span[1]].split()) == s.text
    assert replace_controls("plain text\n") == ("plain text\n", [])


SSLA = data_root() / "us_real" / "ssla" / "test_old.tsv"


@pytest.mark.skipif(not SSLA.exists(), reason=f"no ssla excerpts at {SSLA} (set ARGUS_DATA_ROOT)")
def test_every_ssla_excerpt_is_read(tmp_path):
    """The 1,012 real excerpts of securities complaints (text as it came out of PDFs): none is refused as
    binary; the two with glyph codes for spaces (U+0003) read with a warning that counts them."""
    import csv

    csv.field_size_limit(1 << 24)
    with SSLA.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    assert len(rows) == 1012
    warned = []
    for row in rows:
        p = tmp_path / f"{row['index']}.txt"
        p.write_text(row["text"], encoding="utf-8")
        raw = read_text_document(p)  # raises on a refusal
        assert len(raw.text) == len(row["text"])
        if any("control characters" in w for w in raw.warnings):
            warned.append(row["index"])
    assert len(warned) >= 2


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
