"""Which code a citation names: abbreviations, titles and the books of the Sozialgesetzbuch.

The corpus keys codes by ``jurabk`` ("UWG 2004", "BBauG", "BGBEG", "SGB 5"), but text cites them by
the official abbreviation ``amtabk`` ("UWG", "BauGB", "EGBGB", "SGB V") or by name ("des
Bürgerlichen Gesetzbuchs", "des Fünften Buches Sozialgesetzbuch", "der Abgabenordnung").
``CodeRegistry`` derives every such alias from the codes' own metadata (no hand-kept table) and
resolves a mention to the corpus key.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from argus.statutes.parser import CodeInfo

_ROMAN = {
    1: "I", 2: "II", 3: "III", 4: "IV", 5: "V", 6: "VI", 7: "VII", 8: "VIII", 9: "IX", 10: "X",
    11: "XI", 12: "XII", 13: "XIII", 14: "XIV", 15: "XV",
}  # fmt: skip
_ARABIC = {v: k for k, v in _ROMAN.items()}

#: Ordinal stems as produced by :func:`stem` ("Fünften" → "fünft"), with their numbers.
ORDINAL_STEMS = {
    "erst": 1, "zweit": 2, "dritt": 3, "viert": 4, "fünft": 5, "sechst": 6, "siebt": 7, "acht": 8,
    "neunt": 9, "zehnt": 10, "elft": 11, "zwölft": 12, "dreizehnt": 13, "vierzehnt": 14,
}  # fmt: skip

_STOPWORDS = frozenset({"der", "die", "das", "des", "dem", "den", "zum", "zur", "im", "vom"})
_GENERIC_NAMES = frozenset(
    {"gesetz", "verordnung", "ordnung", "buch", "bekanntmachung", "abkommen", "vertrag", "satzung"}
)
_SUFFIXES = ("es", "en", "em", "er", "s", "n", "e")
_WORD = re.compile(r"[A-Za-zÄÖÜäöüß][A-Za-zÄÖÜäöüß\-]*")
_YEAR_SUFFIX = re.compile(r"^(.+?)\s+(?:19|20)\d\d$")
_BOOK_NUMBER = re.compile(r"^(.*\S)\s+(\d{1,2}|[IVX]{1,5})$")
_HEAD_COMPOUND = re.compile(
    r"^([A-ZÄÖÜ][\wäöüß-]*(?:gesetz|gesetzbuch|ordnung|verordnung|vertrag))\s+(?:für|über|zur|zum|gegen|betreffend|vom)\b"
)
_FAMILY_FIRST = re.compile(r"^([A-ZÄÖÜ]\w*gesetzbuch)\s+(?:-\s*)?(\w+)\s+Buch\b")
_FAMILY_LAST = re.compile(r"^(\w+)\s+Buch\s+([A-ZÄÖÜ]\w*gesetzbuch)\b")


def stem(word: str) -> str:
    """A light German stemmer for matching inflected titles ("Bürgerlichen Gesetzbuchs" ~ "Bürgerliches Gesetzbuch")."""
    w = word.lower().replace("ß", "ss")
    for _ in range(2):
        for suf in _SUFFIXES:
            if w.endswith(suf) and len(w) - len(suf) >= 3:
                w = w[: -len(suf)]
                break
        else:
            break
    if w == "siebent":
        w = "siebt"
    return w


def name_stems(name: str) -> tuple[str, ...]:
    """Stemmed content words of a title, articles dropped."""
    return tuple(s for s in (stem(w) for w in _WORD.findall(name)) if s not in _STOPWORDS)


def clean_title(title: str) -> str:
    """Drop parentheticals and dash-set subtitles: "Sozialgesetzbuch (SGB) Fünftes Buch (V) - … -"."""
    t = re.sub(r"\([^()]*\)", " ", title)
    segments = [" ".join(seg.split()) for seg in re.split(r"\s+[-–]\s+|\s+[-–]$|^[-–]\s+", t)]
    segments = [seg for seg in segments if seg]
    if not segments:
        return ""
    name = segments[0]
    if len(segments) > 1 and re.fullmatch(r"\w+ Buch", segments[1]):
        name = f"{name} {segments[1]}"  # "Sozialgesetzbuch - Elftes Buch - Soziale Pflegeversicherung"
    return name.strip(" ,;:-–")


def _fold(s: str) -> str:
    return unicodedata.normalize("NFC", " ".join(s.split())).casefold()


@dataclass(frozen=True)
class NameMatch:
    """A title found in running text: the code key and where the title ends."""

    key: str
    end: int


class CodeRegistry:
    """Resolves abbreviations and titles to corpus keys, built from the codes' own metadata."""

    def __init__(self, infos: Iterable[CodeInfo]) -> None:
        self.infos: dict[str, CodeInfo] = {}
        self._abbrev: dict[str, tuple[int, str | None]] = {}
        self._abbrev_folded: dict[str, tuple[int, str | None]] = {}
        self._trie: dict = {}
        self.families: dict[str, dict[int, str]] = {}  #: family stem -> book number -> key
        self.family_of: dict[str, str] = {}  #: key -> family stem
        for info in infos:
            self.add(info)

    # -- building -----------------------------------------------------------------------------
    def add(self, info: CodeInfo) -> None:
        key = info.key
        self.infos[key] = info
        for priority, alias in self._aliases(info):
            self._put(self._abbrev, alias, priority, key)
            self._put(self._abbrev_folded, _fold(alias), priority + 10, key)
        names: set[str] = set()
        for title in (info.title, info.short_title):
            if not title:
                continue
            clean = clean_title(title)
            if clean:
                names.add(clean)
            head = _HEAD_COMPOUND.match(clean or "")
            if head:
                names.add(head.group(1))
        for name in list(names):
            m = _FAMILY_FIRST.match(name)
            if m and stem(m.group(2)) in ORDINAL_STEMS:
                names.add(f"{m.group(2)} Buch {m.group(1)}")
                self._register_family(m.group(1), m.group(2), key)
            m = _FAMILY_LAST.match(name)
            if m and stem(m.group(1)) in ORDINAL_STEMS:
                names.add(f"{m.group(2)} {m.group(1)} Buch")
                self._register_family(m.group(2), m.group(1), key)
        for name in names:
            stems = name_stems(name)
            if not stems or (len(stems) == 1 and stems[0] in _GENERIC_NAMES):
                continue
            node = self._trie
            for s in stems:
                node = node.setdefault(s, {})
            node.setdefault("$", set()).add(key)

    def _register_family(self, family: str, ordinal: str, key: str) -> None:
        fam = stem(family)
        self.families.setdefault(fam, {})[ORDINAL_STEMS[stem(ordinal)]] = key
        self.family_of[key] = fam

    @staticmethod
    def _aliases(info: CodeInfo) -> list[tuple[int, str]]:
        out: list[tuple[int, str]] = []
        for priority, abbr in ((0, info.amtabk), (0, info.jurabk)):
            if not abbr:
                continue
            out.append((priority, abbr))
            year = _YEAR_SUFFIX.match(abbr)
            base = year.group(1) if year else abbr
            if year:
                out.append((1, base))
            book = _BOOK_NUMBER.match(base)
            if book:
                head, num = book.groups()
                if num.isdigit() and int(num) in _ROMAN:
                    out.append((2, f"{head} {_ROMAN[int(num)]}"))
                elif num in _ARABIC:
                    out.append((2, f"{head} {_ARABIC[num]}"))
            if len(base) > 3 and base.endswith("EG") and " " not in base:
                out.append((2, "EG" + base[:-2]))  # BGBEG (jurabk) is cited as EGBGB
        return out

    @staticmethod
    def _put(table: dict, alias: str, priority: int, key: str) -> None:
        old = table.get(alias)
        if old is None or priority < old[0]:
            table[alias] = (priority, key)
        elif priority == old[0] and old[1] != key:
            table[alias] = (priority, None)  # ambiguous at equal rank: refuse to guess

    # -- lookups ------------------------------------------------------------------------------
    def __contains__(self, key: str) -> bool:
        return key in self.infos

    def keys(self) -> list[str]:
        return list(self.infos)

    def by_abbreviation(self, token: str) -> str | None:
        """Corpus key for an abbreviation as written ("BGB", "SGB V", "UWG", "EGBGB"), else None."""
        hit = self._abbrev.get(token)
        if hit is None:
            hit = self._abbrev_folded.get(_fold(token))
        return hit[1] if hit else None

    def is_abbreviation(self, token: str) -> bool:
        return token in self._abbrev or _fold(token) in self._abbrev_folded

    def match_name(self, text: str, pos: int, max_words: int = 30) -> NameMatch | None:
        """Longest code title starting at ``text[pos]`` (articles skipped, inflection tolerant)."""
        node = self._trie
        best: NameMatch | None = None
        words = 0
        last_end = pos
        for m in _WORD.finditer(text, pos, min(len(text), pos + 400)):
            if words == 0 and m.start() - pos > 2:
                return None
            gap = text[last_end : m.start()]
            if words and gap.strip(" ,") != "":
                break  # punctuation other than commas ends a title
            s = stem(m.group())
            last_end = m.end()
            words += 1
            if s in _STOPWORDS:
                continue
            nxt = node.get(s)
            if nxt is None:
                break
            node = nxt
            keys = node.get("$")
            if keys and len(keys) == 1:
                best = NameMatch(next(iter(keys)), m.end())
            if words >= max_words:
                break
        return best

    def family_book(self, citing_key: str | None, ordinal_word: str) -> str | None:
        """ "des Zehnten Buches" inside an SGB book means SGB X: resolve within the citing code's family."""
        if citing_key is None:
            return None
        fam = self.family_of.get(citing_key)
        if fam is None:
            return None
        number = ORDINAL_STEMS.get(stem(ordinal_word))
        return self.families[fam].get(number) if number else None

    def suggest(self, name: str, n: int = 5) -> list[str]:
        """Close known keys and abbreviations, for error messages."""
        import difflib

        pool = sorted(set(self.infos) | {a for a in self._abbrev})
        return difflib.get_close_matches(name, pool, n=n, cutoff=0.5)

    def resolve(self, name: str) -> str | None:
        """Resolve a free-form code name (abbreviation or title) to its corpus key."""
        name = name.strip()
        if not name:
            return None
        if name in self.infos:
            return name
        key = self.by_abbreviation(name)
        if key:
            return key
        m = self.match_name(name, 0)
        if m and not name[m.end :].strip():
            return m.key
        return None


def registry_from_sources(sources) -> CodeRegistry:
    """A registry from code headers only (fast: norms are not parsed)."""
    from argus.statutes.parser import read_code_info

    infos = [info for src in sources if (info := read_code_info(src.read(), src.name)) is not None]
    return CodeRegistry(infos)
