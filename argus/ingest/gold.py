"""Where annotated documents are: gold files in the shared corpus's layout and in the correction page's.

- the corpus's: a folder per document, ``<doc_id>/gold.json`` beside ``<doc_id>/complaint.txt`` (a folder of
  such folders, or one of them);
- the page's (``argus annotate serve``): ``<doc_id>.gold.json`` in a folder, its text beside it as ``<doc_id>``
  with an input suffix (``.txt``, ``.pdf``, …), else the source the ``<doc_id>.ekg.json`` beside it was
  extracted from.

``argus eval`` and ``argus train-events --gold`` both find their documents here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from argus.errors import InputError

GOLD_SUFFIX = ".gold.json"
"""A gold file of ``argus annotate serve``: ``<doc_id>.gold.json``."""


@dataclass(frozen=True)
class GoldSource:
    """One annotated document: its id (``name``), its gold file and the text to run the pipeline on (None when
    none was found)."""

    name: str
    gold: Path
    text: Path | None


def gold_file_text(gold: Path, doc_id: str) -> Path | None:
    """The text of ``<doc_id>.gold.json``: a ``<doc_id>`` text or PDF file beside it, else the source named by the
    ``<doc_id>.ekg.json`` beside it (or by the gold file's ``annotation.source``) where that file exists."""
    from argus.ingest.files import INPUT_SUFFIXES

    folder = gold.parent
    for suffix in sorted(INPUT_SUFFIXES):
        for cand in (folder / f"{doc_id}{suffix}", folder / f"{doc_id}{suffix.upper()}"):
            if cand.is_file():
                return cand
    named: list[str] = []
    ekg = folder / f"{doc_id}.ekg.json"
    for path, read in ((ekg, lambda d: d.get("source")), (gold, lambda d: (d.get("annotation") or {}).get("source"))):
        try:
            data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
            named.append(read(data) if isinstance(data, dict) else None)
        except (OSError, ValueError):
            continue
    for src in named:
        if isinstance(src, str) and src and Path(src).is_file():
            return Path(src)
    return None


def find_gold_sources(paths) -> list[GoldSource]:
    """The annotated documents under ``paths``: each a corpus document folder (``gold.json`` + ``complaint.txt``),
    a gold file ``<doc_id>.gold.json``, or a folder holding either kind (document folders, then gold files)."""
    found: list[GoldSource] = []

    def folder_doc(d: Path) -> GoldSource:
        return GoldSource(d.name, d / "gold.json", d / "complaint.txt" if (d / "complaint.txt").is_file() else None)

    def gold_file(f: Path) -> GoldSource:
        doc_id = f.name[: -len(GOLD_SUFFIX)]
        return GoldSource(doc_id, f, gold_file_text(f, doc_id))

    for p in map(Path, paths):
        if (p / "gold.json").is_file():
            found.append(folder_doc(p))
        elif p.is_file() and p.name.endswith(GOLD_SUFFIX):
            found.append(gold_file(p))
        elif p.is_dir():
            found += [folder_doc(d) for d in sorted(p.iterdir()) if (d / "gold.json").is_file()]
            found += [gold_file(f) for f in sorted(p.glob(f"*{GOLD_SUFFIX}")) if f.is_file()]
        else:
            raise InputError(f"{p}: not an annotated document folder (no gold.json), a *{GOLD_SUFFIX} file nor a "
                             "folder of them")
    if not found:
        raise InputError(f"no annotated documents (folders with gold.json, or *{GOLD_SUFFIX} files) under "
                         f"{', '.join(map(str, paths))}")
    return found



__all__ = ["GOLD_SUFFIX", "GoldSource", "find_gold_sources", "gold_file_text"]
