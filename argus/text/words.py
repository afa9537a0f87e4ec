"""Words of a sentence as the extraction designs see them: spans, lemmas and verb forms.

``lemminflect`` (its lexicon ships inside the wheel, no download) tells which readings a word has
and its inflections, so a word's verb lemma and whether it is a past-tense or participle form are
looked up, not guessed from its ending.
"""

from __future__ import annotations

import re
from functools import lru_cache

WORD = re.compile(r"[A-Za-z][A-Za-z'’\-]*[A-Za-z]|[A-Za-z]")
AUXILIARIES = frozenset(
    "was were is are be been being am had has have having did do does done would could should will can may "
    "might must shall became become becomes got get gets".split())


def word_spans(text: str) -> list[tuple[str, int, int]]:
    """(word, start, end) of every word of ``text``."""
    return [(m.group(0), m.start(), m.end()) for m in WORD.finditer(text)]


@lru_cache(maxsize=50000)
def name_pattern(name: str) -> str:
    """A regex for ``name`` as whole words, any run of spaces between them ("Gregory  Tull" in an OCR line)."""
    return r"(?<!\w)" + r"\s+".join(re.escape(w) for w in name.split()) + r"(?!\w)"


def mentions(name: str, text: str) -> bool:
    """Whether ``text`` names ``name`` as whole words."""
    return re.search(name_pattern(name), text) is not None


def readings(word: str) -> dict[str, tuple[str, ...]]:
    """Part of speech → lemmas ``lemminflect`` knows for ``word`` (lowercased); {} for unknown words."""
    import lemminflect

    return dict(lemminflect.getAllLemmas(word.lower()))


@lru_cache(maxsize=50000)
def verb_form(word: str) -> str:
    """The Penn tag of ``word`` as an inflection of its verb lemma (VBD, VBN, VBG, VBZ, VB), or ''."""
    import lemminflect

    lw = word.lower()
    lemmas = readings(lw).get("VERB")
    if not lemmas:
        return ""
    for tag in ("VBD", "VBN", "VBG", "VBZ", "VB"):
        if lw in (lemminflect.getInflection(lemmas[0], tag=tag) or ()):
            return tag
    return ""


def lemma(word: str) -> str:
    """The verb lemma of ``word`` when it has a verb reading ("told" → "tell"), else ``word`` lowercased."""
    lemmas = readings(word).get("VERB")
    return lemmas[0] if lemmas else word.lower()


def is_past_verb(word: str) -> bool:
    """A past-tense or participle form of a verb that is not an auxiliary ("hired", "told", "placed")."""
    return word.lower() not in AUXILIARIES and verb_form(word) in ("VBD", "VBN")


def past_tense_verbs(text: str) -> list[str]:
    """The past-tense and participle verbs of ``text``, in order."""
    return [w for w, _, _ in word_spans(text) if is_past_verb(w)]


__all__ = ["AUXILIARIES", "WORD", "is_past_verb", "lemma", "mentions", "name_pattern", "past_tense_verbs", "readings", "verb_form",
           "word_spans"]
