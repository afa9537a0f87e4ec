"""The German Satz splitter: abbreviations, ordinals, dates, list blocks."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from argus.statutes.sentences import split_sentences


def _split(text: str, blocks=()) -> list[str]:
    return [text[s:e] for s, e in split_sentences(text, 0, len(text), blocks)]


def test_abbreviations_do_not_end_a_satz():
    text = (
        "Die Frist nach § 622 Abs. 1 Nr. 2 BGB gilt z. B. auch für Verträge i. V. m. § 5 Satz 1. "
        "Sie beginnt am 1. Januar 2002 mit der Bekanntmachung (BGBl. I S. 1897)."
    )
    assert _split(text) == [
        "Die Frist nach § 622 Abs. 1 Nr. 2 BGB gilt z. B. auch für Verträge i. V. m. § 5 Satz 1.",
        "Sie beginnt am 1. Januar 2002 mit der Bekanntmachung (BGBl. I S. 1897).",
    ]


def test_ordinals_before_nouns_are_not_sentence_ends():
    text = "Die Vorschriften des 2. Abschnitts gelten entsprechend. Dies gilt bis zum 3. Lebensjahr des Kindes."
    assert len(_split(text)) == 2


def test_a_reference_number_at_the_end_of_a_satz_still_ends_it():
    text = "Der Antrag ist nach Absatz 2. Die Behörde entscheidet unverzüglich."
    assert len(_split(text)) == 2


def test_letter_at_sentence_end_after_buchstabe():
    text = "Es gilt Nummer 1 Buchstabe a. Satz 2 bleibt unberührt."
    assert len(_split(text)) == 2


def test_list_block_belongs_to_the_introducing_satz():
    intro = "Die Kündigungsfrist beträgt, wenn das Arbeitsverhältnis\n"
    items = "1. zwei Jahre bestanden hat, einen Monat,\n2. fünf Jahre bestanden hat, zwei Monate.\n"
    tail = "Bei der Feststellung der Zahl zählen Teilzeitkräfte anteilig."
    text = intro + items + tail
    block = (len(intro), len(intro) + len(items))
    parts = _split(text, [block])
    assert len(parts) == 2
    assert parts[0].endswith("zwei Monate.")
    assert parts[1].startswith("Bei der Feststellung")


def test_text_after_a_list_without_full_stop_continues_the_satz():
    intro = "Der Vertrag ist nichtig, wenn\n"
    items = "1. die Form fehlt oder\n2. ein Verbot besteht,\n"
    tail = "es sei denn, das Gesetz bestimmt etwas anderes."
    text = intro + items + tail
    assert len(_split(text, [(len(intro), len(intro) + len(items))])) == 1


_WORDS = [
    "Der",
    "Antrag",
    "ist",
    "nach",
    "§ 5",
    "Abs. 2",
    "Nr. 3",
    "z. B.",
    "am 1. Januar",
    "i. V. m.",
    "gemäß",
    "Satz 1",
    "zu",
    "stellen",
    "BGBl. I S. 12",
]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from(_WORDS), min_size=2, max_size=12), min_size=1, max_size=6))
def test_generated_sentences_split_back(sentences):
    texts = [" ".join(["Die", *words]) + "." for words in sentences]
    joined = " ".join(texts)
    spans = split_sentences(joined)
    assert [joined[s:e] for s, e in spans] == texts
    # spans are ordered, disjoint and cover every non-space character
    covered = set()
    for s, e in spans:
        covered.update(range(s, e))
    assert all(i in covered for i, ch in enumerate(joined) if not ch.isspace())
