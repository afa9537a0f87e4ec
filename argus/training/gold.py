"""Training on the user's own gold: any folders of gold files, not only the shared corpus's splits.

The documents are found as ``argus eval`` finds them (``argus.ingest.gold.find_gold_sources``: the corpus's
layout, ``<doc_id>/complaint.txt`` + ``gold.json``, and the correction page's, ``<doc_id>.gold.json`` with its
text beside it); a page-layout document whose text file is gone reads the text of the ``<doc_id>.ekg.json``
beside it. The training code reads the corpus layout, so a page-layout document is staged as one (its text and
gold copied into ``staging/<doc_id>/``). Every gold file is checked against the SPEC's rules
(``metrics.gold.gold_problems``) and against its text before anything trains on it.
"""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path

from argus.errors import InputError
from argus.ingest.gold import GOLD_SUFFIX, GoldSource, find_gold_sources


def check_gold(folder: Path) -> None:
    """Raise ``InputError`` naming the file when ``folder``'s gold breaks a rule of the SPEC
    (``metrics.gold.gold_problems``: spans inside the text, evidence that names sentences, edges between events
    of the graph, …) or a sentence's span does not hold its sentence."""
    from metrics.gold import gold_problems, load_gold

    path = folder / "gold.json"
    text = (folder / "complaint.txt").read_text(encoding="utf-8")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise InputError(f"{path}: not a gold file ({exc})") from exc
    try:
        sentences = load_gold(data).sentences
    except (ValueError, KeyError, TypeError) as exc:  # pydantic's errors are ValueErrors
        raise InputError(f"{path}: not a gold file ({exc})") from exc
    for s in sentences:
        a, b = s.span
        if not (0 <= a <= b <= len(text)) or not _holds(text[a:b], s.text):
            raise InputError(f"{path}: sentence {s.id}'s span {list(s.span)} does not hold its text in the document")
    if problems := gold_problems(data, text):
        raise InputError(f"{path}: {problems[0]}" + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""))


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
    folders: list[Path] = []
    for p in map(Path, paths):
        if not p.exists():
            raise InputError(f"--gold {p}: no such file or folder")
        if p.is_dir() and not (p / "gold.json").is_file() and not list(p.glob(f"*{GOLD_SUFFIX}")) \
                and not any((d / "gold.json").is_file() for d in p.iterdir() if d.is_dir()):
            raise InputError(f"--gold {p}: no gold here (a folder of <doc_id>{GOLD_SUFFIX} files with their text, "
                             "or of <doc_id>/complaint.txt + gold.json folders)")
        found: list[Path] = []
        for src in find_gold_sources([p]):
            if src.gold.name == "gold.json":  # the corpus's layout: trained on as it is
                found.append(src.gold.parent)
            elif drafts or not is_draft(src.gold):
                found.append(_stage(src, staging))
            else:
                skipped.append(src.gold)
        if not found:
            raise InputError(f"--gold {p}: only drafts here ({len(skipped)}); accept a document on the page (A) "
                             "when its corrections are done, or pass --drafts")
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


def _stage(src: GoldSource, staging: Path) -> Path:
    """A page-layout document as a corpus-layout folder under ``staging``: its text as read (the text every span
    of the EKG and of the gold indexes), else the text of the EKG beside the gold file."""
    from argus.ingest.files import read_document
    from argus.io import write_json_atomic, write_text_atomic

    ekg = src.gold.with_name(f"{src.name}.ekg.json")
    if src.text is not None:
        text = read_document(src.text).text
    elif ekg.is_file():
        text = json.loads(ekg.read_text(encoding="utf-8")).get("text") or ""
    else:
        text = ""
    if not text:
        raise InputError(f"{src.gold}: no text beside it ({src.name}.txt or {src.name}.ekg.json with its text)")
    data = json.loads(src.gold.read_text(encoding="utf-8"))
    data.setdefault("doc_id", src.name)
    out = staging / src.name
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out / "complaint.txt", text)
    write_json_atomic(out / "gold.json", data)
    return out


__all__ = ["check_gold", "gold_folders", "is_draft"]
