"""``argus.extract`` takes the text of a complaint, a path, or a RawDocument; a text is never looked up as a
file, and a missing file is reported as missing."""

from __future__ import annotations

from pathlib import Path

import pytest

import argus
from argus.errors import InputError
from argus.ingest.files import looks_like_path, text_document
from tests.conftest import DEMO


def test_a_text_is_a_text_and_a_path_a_path(tmp_path):
    text = Path(DEMO).read_text(encoding="utf-8")
    assert not looks_like_path(text) and not looks_like_path("x" * 5000) and not looks_like_path("")
    assert not looks_like_path("Ms. Ortiz was fired on March 3, 2021 because she complained.")
    assert looks_like_path(str(DEMO)) and looks_like_path(str(tmp_path))
    assert looks_like_path("missing-complaint.txt")  # a file name: reported missing, not read as text
    assert not looks_like_path("a\x00b.txt")  # a NUL byte: no file name, so a text
    with pytest.raises(InputError, match="the text is empty"):
        text_document("  \n ")
    one, two = text_document("On May 1, 2020, Acme hired Ortiz."), text_document("On May 1, 2020, Acme hired Ortiz.")
    assert one.doc_id == two.doc_id and one.doc_id.startswith("text-") and one.source == "<text>"


def test_extract_takes_the_text_and_gives_the_graph_the_file_gives(tmp_path):
    text = Path(DEMO).read_text(encoding="utf-8")
    cfg = argus.ArgusConfig.load(None, {"cache_dir": str(tmp_path)})
    from_text = argus.extract(text, cfg, doc_id="demo-text")
    from_path = argus.extract(DEMO, cfg)
    assert from_text.doc_id == "demo-text" and from_text.source == "<text>" and from_text.graph.events
    assert [(e.type, e.trigger, e.evidence) for e in from_text.graph.events] == \
        [(e.type, e.trigger, e.evidence) for e in from_path.graph.events]
    assert argus.extract(str(DEMO), cfg, doc_id="named").doc_id == "named"
    with pytest.raises(InputError, match="no such file"):
        argus.extract("missing-complaint.txt", cfg)
    with pytest.raises(TypeError):
        argus.extract(42, cfg)
