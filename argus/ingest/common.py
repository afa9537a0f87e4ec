"""What the readers of files and PDFs share: a document's id from its file name, and stray control
characters replaced one for one (``argus.ingest.files`` explains why).

Its own module so that ``files`` (which hands a PDF to ``pdf``) and ``pdf`` (which names its document and
cleans its text the same way) need not import each other.
"""

from __future__ import annotations

import re
from pathlib import Path


def doc_id_for(path: Path) -> str:
    """``complaint.txt`` inside a case folder takes the folder's name; other files their stem."""
    stem = path.stem
    if stem.lower() in {"complaint", "document", "text"} and path.parent.name:
        stem = path.parent.name
    return re.sub(r"[^A-Za-z0-9._-]+", "-", stem).strip("-") or "document"


_CONTROLS = re.compile("[\x01-\x08\x0b\x0e-\x1f\x7f-\x9f]")
"""Control characters that are not line structure: C0 but tab, line feed, form feed and carriage
return; DEL; C1. (NUL is refused before: it marks a binary file.)"""
_STANDS_FOR = {"\x0b": "\n", "\x1c": "\n", "\x1d": "\n", "\x1e": "\n", "\x85": "\n"}
"""What a control character stands for where that is known: a vertical tab (a manual line break in
word processors), the file, group and record separators and NEL end a line. Any other: a space."""


def count_controls(text: str) -> int:
    return len(_CONTROLS.findall(text))


def replace_controls(text: str) -> tuple[str, list[str]]:
    """``text`` with each stray control character replaced by one character (see the module
    docstring), and the warning that counts them (none when there were none)."""
    found = _CONTROLS.findall(text)
    if not found:
        return text, []
    counts: dict[str, int] = {}
    for c in found:
        counts[c] = counts.get(c, 0) + 1
    text = _CONTROLS.sub(lambda m: _STANDS_FOR.get(m.group(), " "), text)
    top = ", ".join(f"U+{ord(c):04X} ×{n}" for c, n in sorted(counts.items(), key=lambda kv: -kv[1])[:5])
    more = f" and {len(counts) - 5} more kinds" if len(counts) > 5 else ""
    hint = ""
    if counts.get("\x03", 0) >= max(20, len(found) // 2):
        hint = (" — U+0003 in place of spaces marks a PDF font without a Unicode map: words next to them may "
                "read as shifted letters; a PDF of the filing (argus extract FILE.pdf) reads better")
    return text, [f"{len(found)} stray control characters replaced ({top}{more}) by line breaks where they stand "
                  f"for one, else by spaces; offsets are unchanged{hint}"]


_SURROGATES = re.compile("[\ud800-\udfff]")


def replace_surrogates(text: str) -> tuple[str, list[str]]:
    """``text`` with each lone surrogate (U+D800–U+DFFF) replaced by U+FFFD, one for one so that offsets
    hold, and the warning that counts them (none when there were none). A Python ``str`` can hold one where
    no file can (JSON's ``"\\ud800"``, bytes decoded with ``surrogateescape``); no tokenizer or JSON writer
    takes it."""
    found = len(_SURROGATES.findall(text))
    if not found:
        return text, []
    return _SURROGATES.sub("\ufffd", text), [
        f"{found} lone surrogate code point(s) (not Unicode text) replaced by U+FFFD; offsets are unchanged"]


__all__ = ["count_controls", "doc_id_for", "replace_controls", "replace_surrogates"]
