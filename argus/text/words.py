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


# Words that never name an event: determiners, pronouns, conjunctions, prepositions, numbers, modals.
FUNCTION_WORDS = frozenset(
    "a an the this that these those some any no every each either neither both all another other such what which "
    "whose whom who whoever whatever i me my mine we us our you your he him his she her hers it its they them their "
    "theirs himself herself itself themselves myself ourselves yourself and or nor but yet so for if then than "
    "because although though while whereas unless until since when whenever where wherever whether as of in on at "
    "by to from with without into onto upon over under about above below after before during through throughout "
    "across against among between within via per toward towards around near off out up down not never also only "
    "just even still again ever very too more most less least much many few several one two three four five six "
    "seven eight nine ten eleven twelve first second third once twice can could may might must shall should will "
    "would ought there here now thus hence however therefore id ibid supra infra et al cf see".split())
MODALS = frozenset("can could may might must shall should will would ought".split())
# Nouns that name an event in a complaint's narrative (and their plurals); a noun with an event suffix
# whose stem is a verb ("termination" → "terminate", "dismissal" → "dismiss") is one too.
EVENT_NOUNS = frozenset(
    "complaint grievance charge leave warning meeting call email e-mail text message letter memo note report request "
    "offer raise bonus suspension termination resignation discharge layoff lay-off firing hire hiring transfer "
    "promotion demotion interview investigation review evaluation appraisal audit hearing appeal surgery injury "
    "accident incident assault attack threat remark comment joke slur insult touch grope advance proposition "
    "harassment discrimination retaliation accommodation denial refusal dismissal removal reprimand write-up "
    "coaching counseling discipline probation pip reassignment demand conversation discussion exchange visit trip "
    "shift schedule cut reduction loss strike protest walkout election vote decision ruling order judgment verdict "
    "rebuttal reminder recommendation certification treatment diagnosis pregnancy birth death illness absence "
    "arrival departure return start end closure policy change response reply answer objection opposition filing "
    "lawsuit suit claim notice notification announcement posting application payment paycheck deduction "
    "flare-up attendance point points mri".split())
_EVENT_SUFFIXES = (("ation", ("ate", "e", "")), ("ition", ("ite", "e", "")), ("tion", ("te", "t", "")),
                   ("sion", ("d", "de", "t", "")), ("ment", ("",)), ("ance", ("", "e")), ("ence", ("", "e")),
                   ("al", ("", "e")), ("ial", ("y",)), ("ure", ("", "e")), ("ing", ("", "e")))
# nor does a time of day, a thing, or "be" or "do" alone ("This is the program at issue"): "was" before
# "promoted" and "did" before "not provide" are the auxiliaries of the event word after them
_NOT_EVENTS = frozenset("morning evening afternoon night thing nothing something anything everything "
                        "be is was were are am been being do does did".split())
_PAST_FORM = re.compile(r"^[a-z][a-z\-]{2,}ed$")  # "texted", "rebooked": a verb the lexicon lacks


@lru_cache(maxsize=50000)
def _is_event_noun(lw: str) -> bool:
    if lw in EVENT_NOUNS or (lw.endswith("s") and lw[:-1] in EVENT_NOUNS):
        return True
    for suffix, ends in _EVENT_SUFFIXES:
        if lw.endswith(suffix) and len(lw) > len(suffix) + 2:
            stem = lw[: -len(suffix)]
            if any("VERB" in readings(stem + e) for e in ends):
                return True
    return False


def event_word(word: str, index: int = 0, upper_sentence: bool = False) -> bool:
    """Whether ``word`` can be an event's trigger: a verb (not a modal) or an event noun ("complaint",
    "termination"), never a name, a title, a number, a determiner, a pronoun or a conjunction.

    ``index``: the word's place in its sentence; a capitalised word after the first is a name or a title
    ("Miller", "Sgt"), unless the whole sentence is in capitals (``upper_sentence``)."""
    w = word.strip("'’\"“”")
    if not w or any(c.isdigit() for c in w) or not any(c.isalpha() for c in w):
        return False
    lw = w.lower()
    if lw in FUNCTION_WORDS or lw in _NOT_EVENTS:
        return False
    if index > 0 and w[0].isupper() and not upper_sentence:
        return False
    if len(w) > 1 and w.isupper() and not upper_sentence:  # an acronym or a heading's word: "EEOC", "II"
        return lw in EVENT_NOUNS
    r = readings(lw)
    if "VERB" in r:
        return True
    if not r and _PAST_FORM.match(lw):
        return True
    return ("NOUN" in r or not r) and _is_event_noun(lw)


#: words after which the next word is a noun or an adjective, never a verb ("the line", "a written warning", "an
#: exit interview"); "that", "her" and "each" are left out: "the policy that required", "made her sign",
#: "Plaintiffs each filed"
DETERMINERS = frozenset("the a an this these those his its their our my your every".split())


def _determiner_before(text: str, prev: tuple[str, int, int], at: int, cased: bool) -> bool:
    """Whether the word ``prev`` is a determiner standing right before offset ``at``, as a whole word (not the
    tail of "Echeverría", which ``WORD`` splits at its accent) and in lower case unless ``cased`` (it opens the
    sentence, or the sentence is in capitals): "Intern A ended", "Exhibit A" name a person and a document."""
    word, a, b = prev
    return ((word in DETERMINERS or (cased and word.lower() in DETERMINERS)) and text[b:at].isspace()
            and (a == 0 or not (text[a - 1].isalnum() or text[a - 1] in "'’-.")))


def event_words(text: str) -> list[tuple[str, int, int]]:
    """The words of ``text`` that :func:`event_word` accepts, with their spans. A word right after a determiner
    (``DETERMINERS``) is a noun or an adjective there: it names an event only as an event noun ("the
    termination"), not by a verb reading ("the line", "a patrol officer", "the attempted kiss")."""
    words = word_spans(text)
    letters = [c for c in text if c.isalpha()]
    upper = bool(letters) and sum(c.isupper() for c in letters) > 0.8 * len(letters)
    out = []
    for i, (w, a, b) in enumerate(words):
        if not event_word(w, i, upper):
            continue
        if i and _determiner_before(text, words[i - 1], a, upper or i == 1) \
                and not _is_event_noun(w.strip("'’\"“”").lower()):
            continue
        out.append((w, a, b))
    return out


__all__ = ["AUXILIARIES", "DETERMINERS", "EVENT_NOUNS", "FUNCTION_WORDS", "MODALS", "WORD", "event_word", "event_words", "is_past_verb", "lemma", "mentions", "name_pattern", "past_tense_verbs", "readings", "verb_form",
           "word_spans"]
