"""The command line at 80 columns (most terminals, and CI logs): the tables it prints and the commands' help
cut no header, option or word to an ellipsis, and summary.csv keeps every column."""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys

import pytest
from rich.console import Console

from argus.runs.batch import SUMMARY_COLUMNS, BatchReport, _write_summary, print_batch_summary
from argus.terminal import print_table, table_width
from tests.conftest import PROJECT


def _rows(n: int = 3) -> list[dict]:
    return [{"doc_id": f"nysd-1-22-cv-0968{i}", "status": "ok", "kind": "complaint", "sentences": 142, "facts": 61, "facts_by": "heading",
             "chunks": 9, "entities": 23, "events": 57, "temporal_edges": 48, "causal_edges": 6, "lm_calls": 31,
             "tokens": 48213, "cost_usd": 0.012345, "seconds": 41.87} for i in range(n)]


def _render(width: int, fn) -> str:
    buf = io.StringIO()
    fn(Console(file=buf, width=width, force_terminal=False, color_system=None))
    return buf.getvalue()


def test_the_extraction_summary_reads_at_80_columns_and_the_csv_stays_complete(tmp_path):
    report = BatchReport(rows=_rows())
    text = _render(80, lambda c: print_batch_summary(c, report, tmp_path))
    assert "…" not in text and max(map(len, text.splitlines())) <= 80
    for r in report.rows:  # one line per document, every figure whole
        line = next(ln for ln in text.splitlines() if ln.startswith(r["doc_id"]))
        for label, value in (("kind", "complaint"), ("sentences", 142), ("facts by", "heading"), ("temporal", 48), ("tokens", 48213),
                             ("USD", 0.012345), ("seconds", 41.87)):
            assert f"{label} {value}" in text.split(r["doc_id"], 1)[1], (label, line)
    wide = _render(200, lambda c: print_batch_summary(c, report, tmp_path))  # a wide terminal: the table
    assert "┃ document" in wide and "…" not in wide
    _write_summary(tmp_path, report.rows)
    with (tmp_path / "summary.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == SUMMARY_COLUMNS and rows[0]["tokens"] == "48213" and rows[0]["facts_by"] == "heading"


def test_a_table_that_fits_is_a_table_one_that_does_not_is_a_line_per_row():
    headers, rows = ["stage", "seconds", "LM calls", "tokens", "USD"], [["extraction", "12.31", "9", "20345", "0.004"]]
    assert table_width(headers, rows) <= 80
    text = _render(80, lambda c: print_table(c, "doc: stages", headers, rows, right=headers[1:]))
    assert "┃ stage" in text and "LM calls" in text and "…" not in text
    long = [["nysd-1-22-cv-09683", "skipped", "no text: the PDF is a scan that CourtListener has not OCRed yet "
             "(ocr_status 'OCR Needed')"]]
    text = _render(80, lambda c: print_table(c, "CourtListener complaints", ["document", "status", "detail"], long))
    assert "…" not in text and "ocr_status 'OCR Needed'" in " ".join(text.split())
    assert max(map(len, text.splitlines())) <= 80


@pytest.mark.parametrize("command", [[], ["extract"], ["eval"], ["train-facts"], ["view"], ["experiment"],
                                     ["frontier"], ["fetch-courtlistener"], ["annotate", "export"]])
def test_help_reads_at_80_columns(command):
    env = {**os.environ, "COLUMNS": "80", "PYTHONPATH": str(PROJECT)}
    res = subprocess.run([sys.executable, "-m", "argus.cli", *command, "--help"], capture_output=True, text=True,
                         cwd=PROJECT, env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines and max(map(len, lines)) <= 80
    assert "…" not in res.stdout, [ln for ln in lines if "…" in ln]
