"""Satz splitting for German statute text.

The official XML does not mark sentences up, yet citations count them ("Absatz 1 Satz 2"), so the
parser has to find them. Statute prose is regular enough for rules: a sentence ends at ``.``, ``!``
or ``?`` followed by whitespace and a capital letter, except after abbreviations ("Abs.", "Nr.",
"z. B.", "BGBl.", single letters), ordinals and dates ("am 1. Januar", "des 2. Buches").

Lists (``<DL>``) are atomic blocks inside a sentence: the Nummern belong to the Satz that
introduces them; text after a list starts a new Satz only if the last item closes with a full stop
and the text begins with a capital letter (otherwise it finishes the introducing sentence).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

#: Abbreviations that end with a period inside a sentence (case-sensitive, without the period).
ABBREVIATIONS: frozenset[str] = frozenset(
    """
    Abs Nr Nrn Art Artt Buchst Doppelbuchst lit Ziff bzw vgl ggf gem usw etc sog insb insbes einschl
    ausschl evtl Anl Anh Alt Halbs Hs Unterabs Kap Abschn Tit Bd Bl BGBl GVBl RGBl BAnz ABl Dr Prof
    Dipl Ing rd ca mind max min Std Mio Mrd geb gest Reg Verf Ges Vorb St Nrs zit vorl jew zzgl abzgl
    inkl ggü ff Fn Rn Rdnr Randnr Tz Az Bek Bekl Kl Urt Beschl Entsch Slg Erl Bsp Tsd Pers lfd Verz
    Anm Ber Vj Hj Sp Abg Abt Angekl Ausg Beil Best bez Dipl-Ing Einf Erg Fa Fr gez Hrsg Jh Jhs Lfg
    Mrz Okt Nov Dez Jan Feb Apr Aug Sept Sep Verw Vollz Vors Vorst Wwe zust Ziffn Unterabschn Vgl
    Unterab Verh Ausn Kfz Pkw Lkw EGV AEUV
    """.split()
)

#: Nouns that follow an ordinal number ("2. Buch", "1. Januar"): no sentence end before them.
ORDINAL_NOUNS: frozenset[str] = frozenset(
    """
    Januar Februar März April Mai Juni Juli August September Oktober November Dezember Jänner
    Buch Buches Buchs Teil Teils Teiles Abschnitt Abschnitts Abschnittes Unterabschnitt Unterabschnitts
    Kapitel Kapitels Titel Titels Untertitel Halbsatz Halbsatzes Halbsatzs Alternative Lebensjahr
    Lebensjahres Lebensjahrs Grad Grades Grads Stufe Klasse Ordnung Mal Quartal Quartals
    Kalendervierteljahr Kalendervierteljahres Kalenderjahr Kalenderjahres Kalenderjahrs Kalendermonat
    Kalendermonats Monat Monats Tag Tages Tags Woche Jahr Jahres Jahrs Änderung Änderungsgesetz
    Verordnung Durchführungsverordnung Gesetz Gesetzes Person Fassung Ausgabe Auflage Anlage
    Nachtrag Schuljahr Semester Lebensmonat Lebensmonats Geschoss Obergeschoss Rang Ranges Kammer
    Senat Senats Instanz Rechtszug Rechtszugs Rechtszuges Bundestag Bundestages Wahlperiode
    Durchgang Vierteljahr Vierteljahres Halbjahr Halbjahres Wirtschaftsjahr Wirtschaftsjahres
    """.split()
)

#: Words after which "<number>." is an ordinal ("am 1. Juli", "des 3. Abschnitts").
ORDINAL_DETERMINERS: frozenset[str] = frozenset(
    """
    der die das des dem den am im vom zum zur beim ab bis seit vor nach einem einer eines jeder jedes
    jedem jeden ihres seines ihrem seinem ihren seinen dessen deren bzw und oder sowie je
    """.split()
)

_LETTER_LIST_WORDS = frozenset({"Buchstabe", "Buchstaben", "Doppelbuchstabe", "Doppelbuchstaben", "lit."})

# A terminator (with closing quotes/brackets) followed by whitespace and a plausible sentence start.
_BOUNDARY = re.compile(r"[.!?][“”\"»)\]]*(?=\s+[„\"»(]?[A-ZÄÖÜ§])")
_ROMAN = re.compile(r"[IVXLC]+")
_DOTTED_ABBREV = re.compile(r"^(?:[A-Za-zÄÖÜäöü]{1,4}\.)+[A-Za-zÄÖÜäöü]{1,4}$")


def _token_before(text: str, end: int, start: int) -> tuple[str, str]:
    """The whitespace-delimited token ending at ``end`` and the token before it."""
    i = end
    while i > start and not text[i - 1].isspace():
        i -= 1
    token = text[i:end]
    j = i
    while j > start and text[j - 1].isspace():
        j -= 1
    k = j
    while k > start and not text[k - 1].isspace():
        k -= 1
    return token, text[k:j]


def _next_word(text: str, pos: int, end: int) -> str:
    i = pos
    while i < end and text[i].isspace():
        i += 1
    j = i
    while j < end and (text[j].isalnum() or text[j] in "-"):
        j += 1
    return text[i:j]


def is_sentence_end(text: str, period: int, start: int, end: int) -> bool:
    """Whether the terminator at ``text[period]`` ends a sentence (abbreviation and ordinal aware)."""
    if text[period] != ".":
        return True
    token, previous = _token_before(text, period, start)
    token = token.lstrip('(„"»[')
    if not token:
        return True
    if token in ABBREVIATIONS or _DOTTED_ABBREV.match(token):
        return False
    if len(token) == 1 and token.isalpha():
        # "z. B.", "S. 1897", "v. 12." … but "Buchstabe a. Satz 2 gilt" ends a sentence.
        return previous in _LETTER_LIST_WORDS
    if token.isdigit() or (token[:-1].isdigit() and token[-1].isalpha() and len(token) > 1):
        following = _next_word(text, period + 1, end)
        if following in ORDINAL_NOUNS:
            return False
        if previous.lower() in ORDINAL_DETERMINERS and token.isdigit():
            return False
        return True
    if _ROMAN.fullmatch(token) and previous in {
        "Teil",
        "Buch",
        "Kapitel",
        "Abschnitt",
        "Anlage",
        "Anhang",
        "Titel",
    }:
        following = _next_word(text, period + 1, end)
        return following not in ORDINAL_NOUNS
    return True


def split_sentences(
    text: str,
    start: int = 0,
    end: int | None = None,
    blocks: Sequence[tuple[int, int]] = (),
) -> list[tuple[int, int]]:
    """Split ``text[start:end]`` into sentence spans (absolute offsets, whitespace-trimmed).

    ``blocks`` are sorted, non-overlapping ``(start, end)`` intervals (enumerations, tables) that
    are never split internally. A block ends the current sentence only when its last character
    before ``block_end`` is a terminator and the text after it begins with a capital letter.
    """
    end = len(text) if end is None else min(end, len(text))
    cuts: list[int] = []
    block_iter = iter(blocks)
    current = next(block_iter, None)
    for m in _BOUNDARY.finditer(text, start, end):
        pos = m.start()
        while current is not None and current[1] <= pos:
            _maybe_cut_after_block(text, current, end, cuts)
            current = next(block_iter, None)
        if current is not None and current[0] <= pos < current[1]:
            continue
        if is_sentence_end(text, pos, start, end):
            cuts.append(m.end())
    while current is not None:
        _maybe_cut_after_block(text, current, end, cuts)
        current = next(block_iter, None)
    cuts.sort()
    spans: list[tuple[int, int]] = []
    prev = start
    for cut in cuts + [end]:
        if cut <= prev:
            continue
        s, e = trim_span(text, prev, cut)
        if e > s:
            spans.append((s, e))
        prev = cut
    return spans


def trim_span(text: str, start: int, end: int) -> tuple[int, int]:
    """``(start, end)`` moved inward past white space (an all-blank span comes back empty)."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _maybe_cut_after_block(text: str, block: tuple[int, int], end: int, cuts: list[int]) -> None:
    b_end = min(block[1], end)
    i = b_end
    while i > block[0] and text[i - 1].isspace():
        i -= 1
    if i > block[0] + 1 and text[i - 1] in '“”")' and text[i - 2] in ".!?":
        i -= 1
    if i == block[0] or text[i - 1] not in ".!?":
        return
    j = b_end
    while j < end and text[j].isspace():
        j += 1
    if j >= end:
        return  # the absatz ends here anyway
    if text[j].isupper() or text[j] in '„"§':
        cuts.append(b_end)
