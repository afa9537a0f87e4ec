"""Perturbations of a complaint's text for the robustness test (``tests/test_robustness.py``) and its bench
(``bench/robustness.py``): what a user, an OCR run or a copy-paste may do to a filing.

Each perturbation is a function ``(text, rng) -> text``, ``rng`` a ``random.Random`` (a fixed seed gives a
fixed text). ``PERTURBATIONS`` names them all; ``WHOLE`` are the documents that keep nothing of the
complaint (empty, whitespace, one word, numbers, garbage).
"""

from __future__ import annotations

import random
import re
from typing import Callable

Perturbation = Callable[[str, random.Random], str]

#: odd characters: NBSP, zero-width space / joiner, RTL and LTR marks and overrides, BOM, line and paragraph
#: separators, an emoji (with a skin-tone modifier and a ZWJ sequence), combining accents, NUL and C0/C1
#: controls, a lone surrogate
ODD = ["\u00a0", "\u200b", "\u200d", "\u200f", "\u200e", "\u202e", "\u202c", "\ufeff", "\u2028", "\u2029",
       "\U0001f600", "\U0001f44d\U0001f3fd", "\U0001f468\u200d\U0001f4bc", "\u0301", "\u0308\u0323", "\x00",
       "\x07", "\x1b", "\x0b", "\x0c", "\x7f", "\x85", "\x9b", "\ud800"]


def paragraphs(text: str) -> list[str]:
    """The text's blocks between blank lines (a blank line: only whitespace)."""
    return [p for p in re.split(r"\n[ \t]*\n", text) if p.strip()]


def join(paras: list[str]) -> str:
    return "\n\n".join(paras) + "\n"


def is_heading(line: str) -> bool:
    """A line that reads as a heading: no lower-case letter, some upper-case ones, and not a page footer."""
    s = line.strip()
    return bool(s) and not any(c.islower() for c in s) and sum(c.isupper() for c in s) >= 3


def unchanged(text: str, rng: random.Random) -> str:
    """The complaint as filed (the baseline: before grounding kept a name inside a longer alias, 21 of the 78
    broke the output contract)."""
    return text


def drop_paragraphs(text: str, rng: random.Random) -> str:
    paras = paragraphs(text)
    share = rng.choice([0.1, 0.3, 0.6, 0.9])
    kept = [p for p in paras if rng.random() >= share]
    return join(kept or paras[:1])


def shuffle_paragraphs(text: str, rng: random.Random) -> str:
    paras = paragraphs(text)
    rng.shuffle(paras)
    return join(paras)


def remove_headings(text: str, rng: random.Random) -> str:
    return "".join(line for line in text.splitlines(keepends=True) if not is_heading(line))


def cut_mid_word(text: str, rng: random.Random) -> str:
    """Some sentences cut inside a word: the rest of the sentence (to its period) is dropped."""
    out, pos = [], 0
    for m in re.finditer(r"[A-Za-z]{4,}", text):
        if m.start() < pos or rng.random() > 0.05:
            continue
        cut = m.start() + rng.randint(1, len(m.group()) - 1)
        end = text.find(". ", cut)
        end = len(text) if end < 0 else end + 1  # the cut sentence loses its period too, at times
        end = end - 1 if rng.random() < 0.5 and end < len(text) else end
        out.append(text[pos:cut])
        pos = end
    out.append(text[pos:])
    return "".join(out)


def truncate_mid_word(text: str, rng: random.Random) -> str:
    """The document ends inside a word (a download that stopped)."""
    words = [m.start() for m in re.finditer(r"[A-Za-z]{4,}", text)]
    if not words:
        return text
    i = rng.choice(words)
    return text[: i + 2]


_FACTS = re.compile(r"FACT|BACKGROUND")


def remove_facts_section(text: str, rng: random.Random) -> str:
    """The FACTS section gone (its heading and everything to the next heading that is not one of its own
    lettered sub-headings); with no such heading, the heading-free text."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if is_heading(line) and _FACTS.search(line)), None)
    if start is None:
        return remove_headings(text, rng)
    end = start + 1
    while end < len(lines) and not (is_heading(lines[end]) and not re.match(r"\s*[A-Z]\.\s", lines[end])
                                    and not _FACTS.search(lines[end])):
        end += 1
    return "".join(lines[:start] + lines[end:])


def no_facts_heading(text: str, rng: random.Random) -> str:
    """The facts kept, their heading gone (the narrative under no recognised heading)."""
    return "".join(line for line in text.splitlines(keepends=True) if not (is_heading(line) and _FACTS.search(line)))


def typographic(text: str, rng: random.Random) -> str:
    """Straight quotes, hyphens and three dots replaced by curly quotes, en and em dashes and an ellipsis."""
    text = text.replace("...", "…")
    out, double = [], False
    for c in text:
        if c == '"':
            out.append("”" if double else "“")
            double = not double
        elif c == "'":
            out.append(rng.choice("‘’"))
        elif c == "-":
            out.append(rng.choice("–—-"))
        else:
            out.append(c)
    return "".join(out) + " … – — “quoted” ‘this’\n"


def odd_unicode(text: str, rng: random.Random) -> str:
    """Odd characters (``ODD``) put at random places: inside words, between them, at line ends."""
    chars = list(text)
    for _ in range(max(1, len(chars) // 200)):
        chars.insert(rng.randrange(len(chars) + 1), rng.choice(ODD))
    return "".join(chars)


def nbsp_spaces(text: str, rng: random.Random) -> str:
    """Every space a no-break space (a PDF copy), some a zero-width space after it."""
    return "".join("\u00a0" + ("\u200b" if rng.random() < 0.1 else "") if c == " " else c for c in text)


def long_line(text: str, rng: random.Random) -> str:
    """One paragraph replaced by a line of 20,000 characters without a line break (the paragraph repeated,
    its line breaks turned into spaces); a second variant with no space at all."""
    paras = paragraphs(text)
    i = rng.randrange(len(paras))
    flat = " ".join(paras[i].split()) or "word"
    line = (flat + " ") * (20000 // (len(flat) + 1) + 1)
    if rng.random() < 0.3:
        line = line.replace(" ", "")
    paras[i] = line[:20000]
    return join(paras)


def page_of_numbers(text: str, rng: random.Random) -> str:
    """A page of numbers put between two paragraphs: line numbers, a column of amounts, a table."""
    kind = rng.randrange(3)
    if kind == 0:
        page = "\n".join(str(n) for n in range(1, 29))
    elif kind == 1:
        page = "\n".join(f"${rng.randint(0, 99999):,}.{rng.randint(0, 99):02d}" for _ in range(40))
    else:
        page = "\n".join(" ".join(str(rng.randint(0, 9999)) for _ in range(8)) for _ in range(40))
    paras = paragraphs(text)
    paras.insert(rng.randrange(len(paras) + 1), page)
    return join(paras) + "\f"


def crlf(text: str, rng: random.Random) -> str:
    """Windows line ends, and some lone carriage returns (old Mac files)."""
    return "".join("\r" if c == "\n" and rng.random() < 0.05 else c for c in text.replace("\n", "\r\n"))


def tabs_and_spaces(text: str, rng: random.Random) -> str:
    """Runs of spaces, tabs and trailing whitespace; indentation gone."""
    lines = []
    for line in text.splitlines():
        s = line.strip()
        lines.append(s if rng.random() < 0.5 else "\t" * rng.randint(0, 3) + s + " " * rng.randint(0, 40))
    return "\n".join(lines)


# ------------------------------------------------------------------ whole documents (nothing of the complaint)

def empty(text: str, rng: random.Random) -> str:
    return ""


def only_whitespace(text: str, rng: random.Random) -> str:
    return "".join(rng.choice([" ", "\n", "\t", "\r\n", "\u00a0", "\u3000", "\f"]) for _ in range(rng.randint(1, 200)))


def single_word(text: str, rng: random.Random) -> str:
    words = re.findall(r"[A-Za-z]+", text) or ["complaint"]
    return rng.choice(words + ["Plaintiff", "FACTS", "terminated", "Sgt.", "v.", "1."])


def numbers_only(text: str, rng: random.Random) -> str:
    return page_of_numbers("", rng)


def garbage(text: str, rng: random.Random) -> str:
    """Binary-ish bytes decoded three ways (Latin-1, UTF-8 with replacement, and raw code points)."""
    data = bytes(rng.randrange(256) for _ in range(rng.randint(1, 4000)))
    how = rng.randrange(3)
    if how == 0:
        return data.decode("latin-1")
    if how == 1:
        return data.decode("utf-8", errors="replace")
    return "".join(chr(rng.randrange(0x110000)) for _ in range(rng.randint(1, 2000)))


def text_with_garbage(text: str, rng: random.Random) -> str:
    """The complaint with a block of garbage in the middle (a mis-decoded attachment)."""
    paras = paragraphs(text)
    paras.insert(rng.randrange(len(paras) + 1), garbage("", rng))
    return join(paras)


KEEPING: dict[str, Perturbation] = {
    "unchanged": unchanged,
    "drop_paragraphs": drop_paragraphs,
    "shuffle_paragraphs": shuffle_paragraphs,
    "remove_headings": remove_headings,
    "cut_mid_word": cut_mid_word,
    "truncate_mid_word": truncate_mid_word,
    "remove_facts_section": remove_facts_section,
    "no_facts_heading": no_facts_heading,
    "typographic": typographic,
    "odd_unicode": odd_unicode,
    "nbsp_spaces": nbsp_spaces,
    "long_line": long_line,
    "page_of_numbers": page_of_numbers,
    "crlf": crlf,
    "tabs_and_spaces": tabs_and_spaces,
    "text_with_garbage": text_with_garbage,
}
"""Perturbations that keep (some of) the complaint."""

WHOLE: dict[str, Perturbation] = {
    "empty": empty,
    "only_whitespace": only_whitespace,
    "single_word": single_word,
    "numbers_only": numbers_only,
    "garbage": garbage,
}
"""Documents that keep nothing of the complaint."""

PERTURBATIONS: dict[str, Perturbation] = {**KEEPING, **WHOLE}


def perturb(text: str, names: list[str], seed: int) -> str:
    """``text`` put through the named perturbations in order, with one ``random.Random(seed)``."""
    rng = random.Random(seed)
    for name in names:
        text = PERTURBATIONS[name](text, rng)
    return text


# ------------------------------------------------------------------ what an extraction gave

VALID, CLEAR, STEP_FAILED, INVALID, UNEXPECTED = (
    "valid EKG", "clear error", "a step failed", "invalid EKG", "unexpected exception")
OUTCOMES = [VALID, CLEAR, STEP_FAILED, INVALID, UNEXPECTED]
OK = {VALID, CLEAR}


def outcome(text: str, doc_id: str, config=None) -> tuple[str, str]:
    """``(kind, detail)`` of ``argus.extract(text, config, doc_id=doc_id)``: ``VALID`` (the EKG satisfies the
    output contract, ``argus validate``'s check, against the text given, and carries ``doc_id``), ``CLEAR``
    (a project error, ``argus.errors.ArgusError``, with a message: what a batch records per document and
    goes on), ``STEP_FAILED`` (a valid EKG written without an optional step that raised: the warning
    saying so, a crash kept out of the document's way), ``INVALID`` (an EKG that breaks the contract: the
    problems) or ``UNEXPECTED`` (any other exception: its traceback).

    The EKG's text is the text given, or the text with characters replaced one for one (a lone surrogate,
    ``argus.ingest.common.replace_surrogates``), which a warning of the EKG then counts."""
    import traceback

    import argus
    from argus.errors import ArgusError
    from argus.output.contract import contract_problems

    try:
        ekg = argus.extract(text, config, doc_id=doc_id)
    except ArgusError as exc:
        message = str(exc).strip()
        if len(message) < 10:
            return UNEXPECTED, f"{type(exc).__name__} without a clear message: {message!r}"
        return CLEAR, f"{type(exc).__name__}: {message}"
    except Exception:  # noqa: BLE001 — what the test is for: anything else is a crash
        return UNEXPECTED, traceback.format_exc()
    source = text
    if ekg.text != text and len(ekg.text) == len(text) and any("replaced" in w for w in ekg.warnings):
        source = ekg.text
    problems = contract_problems(ekg, source)
    if ekg.doc_id != doc_id:
        problems.append(f"doc_id {ekg.doc_id!r}, not {doc_id!r}")
    if problems:
        return INVALID, "; ".join(problems[:5])
    failed = [w for w in ekg.warnings if re.search(r"\bstep failed\b", w)]
    if failed:
        return STEP_FAILED, "; ".join(failed)
    return VALID, f"{len(ekg.sentences)} sentences, {len(ekg.graph.events)} events"
