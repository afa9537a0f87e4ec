"""Training on the user's own gold: any folders of gold files, not only the shared corpus's splits.

Two layouts are read:

- the corpus's: a folder per document, ``<doc_id>/complaint.txt`` beside ``<doc_id>/gold.json`` (a folder
  of such folders, or one of them);
- the correction page's (``argus annotate serve``): ``<doc_id>.gold.json`` in a folder, its text beside it
  as ``<doc_id>.txt`` or, where there is none, the text of ``<doc_id>.ekg.json`` (the text every span of
  the EKG and of the gold indexes).

The training code reads the corpus layout, so a page-layout document is staged as one (its text and gold
copied into ``staging/<doc_id>/``). Every gold file is read with ``metrics.gold.load_gold`` and checked
against its text (sentence spans inside it, evidence that names sentences) before anything trains on it.
"""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path

from argus.errors import ConfigError, InputError

PAGE_SUFFIX = ".gold.json"


def _text_beside(gold_path: Path) -> str | None:
    doc_id = gold_path.name[: -len(PAGE_SUFFIX)]
    txt = gold_path.with_name(f"{doc_id}.txt")
    if txt.is_file():
        return txt.read_text(encoding="utf-8")
    ekg = gold_path.with_name(f"{doc_id}.ekg.json")
    if ekg.is_file():
        return json.loads(ekg.read_text(encoding="utf-8")).get("text") or None
    return None


def check_gold(folder: Path) -> None:
    """Raise ``InputError`` naming the file when ``folder``'s gold does not fit its text: a sentence span
    outside the text or not holding the sentence's text, an event whose evidence names no sentence, an edge
    between events that do not exist."""
    from metrics.gold import load_gold

    path = folder / "gold.json"
    try:
        gold = load_gold(folder)
    except (ValueError, KeyError, TypeError) as exc:  # json and pydantic errors are ValueErrors
        raise InputError(f"{path}: not a gold file ({exc})") from exc
    text = (folder / "complaint.txt").read_text(encoding="utf-8")
    ids = {s.id for s in gold.sentences}
    for s in gold.sentences:
        a, b = s.span
        if not (0 <= a <= b <= len(text)) or not _holds(text[a:b], s.text):
            raise InputError(f"{path}: sentence {s.id}'s span {list(s.span)} does not hold its text in the document")
    events = {e.id for e in gold.graph.events}
    for e in gold.graph.events:
        if not e.evidence or not set(e.evidence) <= ids:
            raise InputError(f"{path}: event {e.id}'s evidence {e.evidence} names no sentence of the document")
    for edge in [*gold.graph.temporal_edges, *gold.graph.causal_edges]:
        if edge.source not in events or edge.target not in events:
            raise InputError(f"{path}: an edge {edge.source} → {edge.target} names an event the graph lacks")


def _holds(span_text: str, sentence: str) -> bool:
    """Whether a span of the document holds a gold sentence: the same first two and last words (the gold's
    text is cleaned: line breaks, hyphenation and page furniture inside the span are gone)."""
    from argus.text.preprocess import is_page_furniture

    span_text = "\n".join(ln for ln in span_text.replace("\f", "\n").split("\n") if not is_page_furniture(ln))
    want, got = re.findall(r"\w+", sentence), re.findall(r"\w+", span_text)
    if not want or (got[:2] == want[:2] and got[-1:] == want[-1:]):
        return True
    # a scanned filing's text differs from the gold's by the reader's slips ("Tackctt" for "Tackett")
    return difflib.SequenceMatcher(None, " ".join(got), " ".join(want), autojunk=False).ratio() >= 0.8


def is_draft(gold_path: Path) -> bool:
    """Whether a page-layout gold file is a draft: the correction page writes every edit, and marks the file
    ``accepted`` only when the user accepts the document (``annotation.status``)."""
    try:
        data = json.loads(gold_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False  # unreadable: check_gold says why
    return isinstance(data, dict) and (data.get("annotation") or {}).get("status") == "draft"


def gold_folders(paths: list[Path], staging: Path, drafts: bool = False, skipped: list | None = None) -> list[Path]:
    """The documents under ``paths`` as corpus-layout folders (``complaint.txt`` + ``gold.json``), each
    checked (``check_gold``); page-layout files are staged under ``staging``, drafts left out unless
    ``drafts`` (their paths appended to ``skipped``). Raises ``InputError`` for a path that holds no gold, a
    gold file without its text, a document named twice."""
    skipped = [] if skipped is None else skipped

    def page(g: Path) -> list[Path]:
        if not drafts and is_draft(g):
            skipped.append(g)
            return []
        return [_stage(g, staging)]

    folders: list[Path] = []
    for p in map(Path, paths):
        if not p.exists():
            raise InputError(f"--gold {p}: no such file or folder")
        found: list[Path] = []
        if p.is_file() and p.name.endswith(PAGE_SUFFIX):
            found += page(p)
        elif p.is_dir() and (p / "gold.json").is_file():
            found.append(p)
        elif p.is_dir():
            found += sorted(d for d in p.iterdir() if d.is_dir() and (d / "gold.json").is_file())
            found += [f for g in sorted(p.glob(f"*{PAGE_SUFFIX}")) for f in page(g)]
        if not found and skipped:
            raise InputError(f"--gold {p}: only drafts here ({len(skipped)}); accept a document on the page (A) "
                             "when its corrections are done, or pass --drafts")
        if not found:
            raise InputError(f"--gold {p}: no gold here (a folder of <doc_id>{PAGE_SUFFIX} files with their text, "
                             "or of <doc_id>/complaint.txt + gold.json folders)")
        folders += found
    seen: dict[str, Path] = {}
    for f in folders:
        if not (f / "complaint.txt").is_file():
            raise InputError(f"{f}: gold.json without its complaint.txt")
        check_gold(f)
        if f.name in seen:
            raise InputError(f"document {f.name} is given twice ({seen[f.name]} and {f})")
        seen[f.name] = f
    return folders


def _stage(gold_path: Path, staging: Path) -> Path:
    from argus.io import write_json_atomic, write_text_atomic

    doc_id = gold_path.name[: -len(PAGE_SUFFIX)]
    text = _text_beside(gold_path)
    if text is None:
        raise InputError(f"{gold_path}: no text beside it ({doc_id}.txt or {doc_id}.ekg.json with its text)")
    data = json.loads(gold_path.read_text(encoding="utf-8"))
    data.setdefault("doc_id", doc_id)
    out = staging / doc_id
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out / "complaint.txt", text)
    write_json_atomic(out / "gold.json", data)
    return out


def require_documents(folders: list[Path], n: int = 2) -> None:
    if len(folders) < n:
        raise ConfigError(f"training the event heads needs at least {n} annotated documents (found {len(folders)})")


__all__ = ["PAGE_SUFFIX", "check_gold", "gold_folders", "is_draft", "require_documents"]
