"""PDFs as filed: a real complaint typeset to a text-layer PDF by headless Chromium and rasterized to an
image-only PDF (``bench/make_pdfs.py``; made here, never committed), read through ``argus extract``.

Two pages of one annotated complaint keep the tests fast; ``bench/pdf_routes.py`` measures all 18.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rapidfuzz.distance import Levenshtein

from argus.paths import complaints_dir
from tests.browser_support import chromium_path
from tests.conftest import PROJECT

COMPLAINT = complaints_dir("train") / "edpa-2-24-cv-05917" / "complaint.txt"


def _make_pdfs():
    spec = importlib.util.spec_from_file_location("bench_make_pdfs", PROJECT / "bench" / "make_pdfs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _squeeze(text: str) -> str:
    return "\n".join(" ".join(ln.split()) for ln in text.replace("\f", "\n").split("\n") if ln.strip())


def _needs(*tools: str) -> None:
    missing = [t for t in tools if shutil.which(t) is None]
    if chromium_path() is None:
        missing.append("chromium")
    if missing:
        why = f"not installed: {', '.join(missing)} (apt-get install chromium poppler-utils img2pdf tesseract-ocr)"
        if os.environ.get("CI"):
            pytest.fail(f"{why}; .ci/run installs them", pytrace=False)
        pytest.skip(why)


@pytest.fixture(scope="module")
def pdfs(tmp_path_factory):
    """(source text of two pages, text-layer PDF, scanned PDF), each in its own folder."""
    if not COMPLAINT.exists():
        pytest.skip(f"no annotated complaint at {COMPLAINT} (set ARGUS_DATA_ROOT)")
    _needs("pdftoppm", "img2pdf")
    make = _make_pdfs()
    root = tmp_path_factory.mktemp("pdfs")
    text = "\f".join(COMPLAINT.read_text(encoding="utf-8").split("\f")[:2]).rstrip("\n") + "\n"
    layer = make.typeset(text, root / "text" / "mayfield.pdf")
    scan = make.rasterize(layer, root / "scan" / "mayfield.pdf", dpi=300)
    return text, layer, scan


def test_a_text_layer_pdf_reads_as_its_source_lines_pages_and_hyphens_kept(pdfs):
    from argus.ingest.files import read_document
    from argus.ingest.pdf import sha256_file
    from argus.text.preprocess import preprocess

    text, layer, _ = pdfs
    raw = read_document(layer)
    assert raw.text.count("\f") == 1 and raw.metadata["pages"] == 2 and raw.metadata["ocr_pages"] == []
    assert raw.metadata["sha256"] == sha256_file(layer) and raw.doc_id == "mayfield"
    for a, b in zip(raw.text.split("\n"), text.split("\n")):  # line by line, indentation included
        assert a.rstrip() == b.rstrip()
    doc, want = preprocess(raw), preprocess(read_document(COMPLAINT).model_copy(update={"text": text}))
    assert [s.text for s in doc.sentences] == [s.text for s in want.sentences]  # page header, hyphens: as on text
    assert {s.page for s in doc.sentences} == {1, 2}
    for s in doc.sentences:
        assert raw.text.count("\f", 0, s.span[0]) + 1 == s.page


def test_a_scanned_pdf_is_ocred_page_by_page(pdfs):
    from argus.ingest.files import read_document

    text, _, scan = pdfs
    t0 = time.perf_counter()
    raw = read_document(scan)
    seconds = time.perf_counter() - t0
    assert raw.metadata["ocr_pages"] == [1, 2] and raw.text.count("\f") == 1
    assert any("read by OCR (Tesseract)" in w for w in raw.warnings)
    cer = Levenshtein.distance(_squeeze(raw.text), _squeeze(text)) / len(_squeeze(text))
    assert cer < 0.02, cer
    assert seconds / 2 < 10  # 2.4 s a page measured on 2 cores (docs/pdf.md); a slack for a loaded machine


def test_argus_extract_takes_pdfs_and_folders_of_them_and_validates(pdfs, tmp_path):
    from typer.testing import CliRunner

    from argus.cli import app
    from argus.ingest.pdf import sha256_file

    text, layer, scan = pdfs
    inputs = tmp_path / "in"
    inputs.mkdir()
    shutil.copy(layer, inputs / "layer.pdf")
    (inputs / "plain.txt").write_text(text, encoding="utf-8")
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["extract", str(inputs), str(scan), "--method", "floor", "--out", str(out),
                                   "--no-graphml"])
    assert res.exit_code == 0, res.output
    ekgs = {p.name.split(".")[0]: json.loads(p.read_text()) for p in out.glob("*.ekg.json")}
    assert set(ekgs) == {"layer", "plain", "mayfield"}
    assert ekgs["layer"]["source_sha256"] == sha256_file(inputs / "layer.pdf") and ekgs["layer"]["pages"] == 2
    assert ekgs["mayfield"]["ocr_pages"] == [1, 2]
    assert [s["page"] for s in ekgs["layer"]["sentences"]] == [s["page"] for s in ekgs["plain"]["sentences"]]
    assert ekgs["layer"]["sentences"][-1]["page"] == 2
    assert len(ekgs["mayfield"]["graph"]["events"]) >= len(ekgs["plain"]["graph"]["events"]) - 2
    assert "OCR pages" in res.output  # the OCR progress bar
    check = CliRunner().invoke(app, ["validate", str(out)])
    assert check.exit_code == 0, check.output


def test_without_tesseract_a_scan_stops_the_command_at_once_writing_nothing(pdfs, tmp_path):
    _, _, scan = pdfs
    out = tmp_path / "out"
    env = {**os.environ, "ARGUS_TESSERACT": str(tmp_path / "no-tesseract"), "PYTHONPATH": str(PROJECT)}
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, "-m", "argus.cli", "extract", str(scan), "--method", "floor", "--out",
                          str(out)], capture_output=True, text=True, cwd=PROJECT, env=env, timeout=60)
    seconds = time.perf_counter() - t0
    assert res.returncode == 2, res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "tesseract-ocr" in lines[0] and "mayfield.pdf" in lines[0]
    assert not out.exists()
    assert seconds < 3  # about 0.6 s (the issue asks under 1 s; a slack for a loaded machine)


def test_a_page_that_fails_ocr_fails_its_document_not_the_batch(pdfs, tmp_path, monkeypatch):
    from argus.runs.batch import run_batch

    text, _, scan = pdfs
    broken = tmp_path / "tesseract"
    broken.write_text("#!/bin/sh\necho 'Error: cannot read the image' >&2\nexit 1\n")
    broken.chmod(0o755)
    monkeypatch.setenv("ARGUS_TESSERACT", str(broken))
    plain = tmp_path / "plain.txt"
    plain.write_text(text, encoding="utf-8")
    report = run_batch([scan, plain], tmp_path / "out", method="floor", graphml=False)
    assert [r["doc_id"] for r in report.rows] == ["plain"]
    assert len(report.errors) == 1 and re.search(r"page \d: OCR failed", report.errors[0]["message"])
