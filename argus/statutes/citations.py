"""Reading references to statute provisions out of German legal text.

Statutes write references out in full ("§ 5 Absatz 1 Satz 2 Nummer 3 Buchstabe a", "die Absätze 1
bis 3", "nach Satz 1", "§ 33c des Ersten Buches Sozialgesetzbuch"); courts abbreviate
("§ 823 Abs. 1 S. 2 Nr. 3 lit. a BGB", "§ 823 I 1 BGB", "Art. 3 Abs. 1 GG", "§§ 280, 281 BGB",
"§ 5 i.V.m. § 6 UWG", "§§ 74 ff. HGB", "HGB § 74a Abs 1 S 1"). Both are one grammar:

    chain      := reference (connector reference)* designator?
    reference  := component+            (each deeper than the previous one)
    component  := level-word label (separator label)*      ("Absätze 1 bis 3", "§§ 280, 281")
    connector  := "," | "und" | "oder" | "sowie" | "bis" | "i.V.m." | "in Verbindung mit" …
    designator := "dieses Gesetzes" | code title | code abbreviation | unknown law

A component at the same or a higher level than the previous one starts a new reference that
inherits the levels above it ("§ 5 Absatz 1 Nummer 2 und Absatz 3" = § 5 Abs. 1 Nr. 2 and § 5
Abs. 3). The designator applies to every reference of its chain. :class:`Reference` keeps the path
as written; resolving relative paths against a citing node is :mod:`argus.statutes.resolve`'s job.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from enum import Enum

from argus.statutes.codes import ORDINAL_STEMS, CodeRegistry, stem
from argus.statutes.model import Level, ProvisionCitation


class Style(str, Enum):
    """Writing conventions: statutes spell levels out; courts abbreviate and use Roman Absätze."""

    STATUTE = "statute"
    COURT = "court"


@dataclass(slots=True)
class RefPath:
    """One referenced provision as written: absolute (starts at § / Art.) or relative ("Satz 2").

    ``range_end`` is the last label of a range at the path's deepest level ("Absätze 1 bis 3" →
    absatz "1", range_end "3"); ``following`` is "f" or "ff" ("§§ 74 ff.").
    """

    kind: str = "§"
    article: str | None = None
    section: str | None = None
    absatz: str | None = None
    satz: str | None = None
    nummer: str | None = None
    buchstabe: str | None = None
    doppelbuchstabe: str | None = None
    range_end: str | None = None
    following: str | None = None

    def get(self, level: Level) -> str | None:
        return getattr(self, _FIELD[level])

    @property
    def top(self) -> Level | None:
        """The highest level the path names (SECTION for absolute references)."""
        # spelled out, not a loop over the levels: this runs for every reference, several times
        if self.section is not None or self.article is not None:
            return _SECTION
        if self.absatz is not None:
            return _ABSATZ
        if self.satz is not None:
            return _SATZ
        if self.nummer is not None:
            return _NUMMER
        if self.buchstabe is not None:
            return _BUCHSTABE
        if self.doppelbuchstabe is not None:
            return _DOPPELBUCHSTABE
        return None

    @property
    def deepest(self) -> Level | None:
        if self.doppelbuchstabe is not None:
            return _DOPPELBUCHSTABE
        if self.buchstabe is not None:
            return _BUCHSTABE
        if self.nummer is not None:
            return _NUMMER
        if self.satz is not None:
            return _SATZ
        if self.absatz is not None:
            return _ABSATZ
        if self.section is not None or self.article is not None:
            return _SECTION
        return None

    @property
    def section_number(self) -> str | None:
        """The § / Art. number as keyed in the graph ("229 § 5" for an article-nested §)."""
        if self.article is not None and self.section is not None:
            return f"{self.article} § {self.section}"
        if self.article is not None:
            return self.article
        return self.section

    def structure(self) -> dict[str, str]:
        """Levels below § in the annotation format ({"absatz": "1", "satz": "2"})."""
        return {lvl.type_name: v for lvl in _SUB_LEVELS if (v := self.get(lvl)) is not None}


_SUB_LEVELS = (Level.ABSATZ, Level.SATZ, Level.NUMMER, Level.BUCHSTABE, Level.DOPPELBUCHSTABE)
_SECTION, _ABSATZ, _SATZ, _NUMMER, _BUCHSTABE, _DOPPELBUCHSTABE = (Level.SECTION, *_SUB_LEVELS)
_FIELD = {lvl: ("section" if lvl is Level.SECTION else lvl.type_name) for lvl in Level if lvl >= Level.SECTION}


@dataclass(frozen=True)
class Designator:
    """How a chain names its code.

    ``kind``: ``self`` ("dieses Gesetzes"), ``implicit`` (nothing written; statute text means its
    own code), ``code`` (resolved to ``code``), ``unknown`` (a law outside the loaded corpus, e.g.
    "FGG" or "des Gesetzes vom …"), ``none`` (court text without a code).
    """

    kind: str
    code: str | None = None
    text: str = ""
    span: tuple[int, int] | None = None


@dataclass
class Reference:
    """One referenced provision in a text, with the chain's designator.

    ``group`` numbers the §-level mentions: lower-level siblings ("Abs. 1 und 2") share the group
    of their §, so a court citation "§ 5 Abs. 1 und 2 UWG" is one group with two paths.
    """

    span: tuple[int, int]
    path: RefPath
    designator: Designator
    group: int
    chain: int


@dataclass
class CourtCitation:
    """A citation as a court writes it: one § (or Art.) with its structure, plus lower-level siblings."""

    span: tuple[int, int]
    text: str
    book: str | None  #: corpus key when known, else the designator as written (lower case)
    code: str | None  #: corpus key, None when the code is not in the corpus / not named
    number: str | None
    structure: dict[str, str]
    also: list[dict[str, str]] = field(default_factory=list)
    kind: str = "§"
    designator: str = "none"  #: self | code | unknown | none | short (borrowed from an earlier citation)
    range_end: str | None = None
    following: str | None = None

    def provisions(self) -> list[ProvisionCitation]:
        """The provisions cited (primary first), for codes in the corpus only."""
        if self.code is None:
            return []
        return [ProvisionCitation.at(self.code, self.number, structure, article=self.kind == "Art")
                for structure in [self.structure, *self.also]]


# --------------------------------------------------------------------------------------------
# Lexical patterns

_LEVEL_GROUPS = {
    "sec": Level.SECTION,
    "art": Level.SECTION,
    "abs": Level.ABSATZ,
    "satz": Level.SATZ,
    "nr": Level.NUMMER,
    "bst": Level.BUCHSTABE,
    "dbst": Level.DOPPELBUCHSTABE,
}

_LEVEL_WORD_STATUTE = re.compile(
    r"""(?x)
    (?P<sec>§§?)
  | (?P<art>\bArtikeln?\b|\bArtikels\b|\bArt\.)
  | (?P<dbst>\bDoppelbuchstaben?\b|\bDoppelbuchst\.)
  | (?P<abs>\bAbsatz(?:es)?\b|\bAbsätzen?\b|\bAbs\.)
  | (?P<satz>\bSatz(?:es)?\b|\bSätzen?\b)
  | (?P<nr>\bNummern?\b|\bNrn?\.)
  | (?P<bst>\bBuchstaben?\b|\bBuchst\.)
    """
)
_LEVEL_WORD_COURT = re.compile(
    r"""(?x)
    (?P<sec>§§?)
  | (?P<art>\bArtikeln?\b|\bArtikels\b|\bArt\.|\bArt\b)
  | (?P<dbst>\bDoppelbuchstaben?\b|\bDoppelbuchst\.|\bDbuchst\.)
  | (?P<abs>\bAbsatz(?:es)?\b|\bAbsätzen?\b|\bAbs\.|\bAbs\b)
  | (?P<satz>\bSatz(?:es)?\b|\bSätzen?\b|\bS\.|\bS\b)
  | (?P<nr>\bNummern?\b|\bNrn?\.|\bNrn?\b|\bZiffern?\b|\bZiff\.)
  | (?P<bst>\bBuchstaben?\b|\bBuchst\.|\bBuchst\b|\blit\.|\blit\b)
    """
)

#: Words that can open a chain in running text, per style.
# Written as "first character, then the rest" so the regex engine can skip ahead by character
# class: four times faster than an alternation of words over the 25 M characters of the subset.
_ANCHOR_STATUTE = re.compile(
    r"[§ASNBD](?:(?<=§)|(?<=A)(?:rtikel|rt\.|bsatz|bsätze|bs\.)|(?<=S)(?:atz|ätze)|(?<=N)(?:ummer|r\.)"
    r"|(?<=B)uchstabe|(?<=D)oppelbuchstabe)"
)
_ANCHOR_COURT = re.compile(r"[§A](?:(?<=§)|(?<=A)rt(?:ikel|\.|\b))")

_LABELS = {
    Level.SECTION: re.compile(r"(\d{1,4}[a-z]{0,2})(?![\w/])"),
    Level.ABSATZ: re.compile(r"(\d{1,3}[a-z]{0,2})(?![\w/])"),
    Level.SATZ: re.compile(r"(\d{1,3})(?![\w/])"),
    Level.NUMMER: re.compile(r"(\d{1,4}[a-z]{0,2})(?![\w/])"),
    Level.BUCHSTABE: re.compile(r"([a-z])\)?(?![\wäöüß])"),
    Level.DOPPELBUCHSTABE: re.compile(r"(([a-z])\2{1,2})\)?(?![\wäöüß])"),
}
_COURT_SPLIT_LETTER = re.compile(r"(\d{1,4})\s([a-z])(?![\wäöüß).])")  # "§ 74 a HGB"
_ROMAN_ABSATZ = re.compile(r"\s+([IVX]{1,4})(?=[\s,;.)]|$)")
_ROMAN_SATZ = re.compile(r"\s+(\d{1,2})(?=[\s,;.)]|$)(?!\s*(?:Abs|Nr|S\b))")
_ROMAN_VALUES = {"I": 1, "V": 5, "X": 10}

_LIST_SEP = re.compile(r"\s*(,|und|oder|sowie|bis|u\.|bzw\.|–|-)\s*")
_CONNECTOR = re.compile(
    r"\s*(?:,\s*)?(?:(?:(?:jeweils|auch|jeweils\s+auch)\s+)?(?:in\s+Verbindung\s+mit|i\.\s?V\.\s?m\.?|iVm\.?|i\.V\.m\.?)"
    r"|und|oder|sowie|bzw\.|bis|,)\s*"
)
_CONNECTOR_ARTICLE = re.compile(r"(?:die|der|den|des|dem)\s+(?=§|Art)")
_BARE_LETTER = re.compile(r"\s*[a-z]\)")
_SKIP_QUALIFIER = re.compile(
    r"""(?x)\s*(?:
        (?:erster|zweiter|dritter|vierter|1\.|2\.|3\.)\s+Halbsatz
      | Halbsatz\s+\d+ | Halbs\.\s*\d+ | Hs\.\s*\d+ | HS\s*\d+
      | (?:erste|zweite|dritte|vierte)\s+(?:Alternative|Variante)
      | (?:Alternative|Alt\.|Variante|Var\.)\s*\d+
    )"""
)
_TRAILING_SECTION = re.compile(r"\s*(?:des|der|in|im|nach)\s+(§|Artikels?|Art\.)\s*(\d{1,4}[a-z]{0,2})(?![\w/])")
_FOLLOWING = re.compile(r"\s*(ff?)\.(?!\w)")
_DEFINITE = re.compile(r"\s*(?:des|der|dem|den|im|in\s+der|zum|zur|aus\s+dem|nach\s+dem)\s+")
_SELF = re.compile(
    r"(?:dieses|diesem|dieser|vorliegenden|vorstehenden)\s+"
    r"(?:Gesetz(?:es|buchs?|buches)?|Verordnung|Buch(?:es|s)?|Teils|Vertrag(?:es|s)?|Abkommens|"
    r"Staatsvertrag(?:es|s)?|Satzung|Ordnung|Einführungsgesetz(?:es)?|Kapitels|Abschnitts|Unterabschnitts|Titels)\b"
)
_ORDINAL_BOOK = re.compile(r"([A-ZÄÖÜ][a-zäöüß]+)\s+Buch(?:es|s)?\b")
_UNKNOWN_LAW = re.compile(
    r"""(?x)
    (?:[A-ZÄÖÜ][\wäöüß-]*?(?:gesetz|gesetzes|gesetzbuch|gesetzbuchs|gesetzbuches|ordnung|verordnung|
        vertrag|vertrages|vertrags|abkommens?|übereinkommens?|richtlinie|protokolls?|satzung|
        statuts?|vereinbarung|regelung|kodex|akte|gesetze|erlasses|beschlusses)\b)
  | (?:Gesetzes|Verordnung|Richtlinie|Anlage|Anhangs?|Einigungsvertrag(?:es|s)?)\b
    """
)
_DEFINED_ABBREV = re.compile(r"[^()\n.;:§]{0,160}?\(([A-ZÄÖÜ][\wÄÖÜäöüß-]*(?:\s+[IVX]{1,5})?)\)")
_ABBREV_TOKEN = re.compile(r"([A-ZÄÖÜ][\wÄÖÜäöüß\-]*[\wÄÖÜäöüß]|[A-Z])(?:\s+([IVX]{1,5}|\d{1,4}))?(?![\w])")
_UNKNOWN_ABBREV = re.compile(r"[A-ZÄÖÜ][A-Za-zÄÖÜäöüß]*[A-ZÄÖÜ][A-Za-zÄÖÜäöüß]*$")
_BEFORE_ABBREV = re.compile(r"([A-ZÄÖÜ][\wÄÖÜäöüß-]*(?:\s+(?:[IVX]{1,5}|\d{1,4}))?)\s*$")
_COMMENTARY_AFTER = re.compile(r"\s*,?\s*(?:Rz|Rn|Rdnr|RdNr|Rdn|Tz|Anm|Rndnr)\.?\s*\d")
_COMMENTARY_BEFORE = re.compile(r"\b(?:aaO|a\.a\.O)\.?,?\s*$")
_CONTRACT = re.compile(
    r"(?:[a-zäöüß]+(?:en|er|es|e)\s+)?[\wÄÖÜäöüß-]*(?:[Vv]ertrag(?:e?s)?|[Ss]atzung|[Vv]ereinbarung|[Tt]arifvertrag(?:e?s)?)\b"
)
_TREATY = re.compile(
    r"(?:[\wÄÖÜäöüß-]*(?:Einigungs|Staats|EG-|EU-|EWG-|AEU-|Europäischen\s+Union\s+)?)?(?:Einigungsvertrag|Staatsvertrag|EG-Vertrag|EU-Vertrag|EWG-Vertrag|Vertrag(?:es|s)?\s+über\s+die\s+(?:Arbeitsweise|Europäische))"
)
_UNIT_AFTER = re.compile(r"\s*(?:DM|EUR|Euro|RM|%|v\.\s?H\.|Prozent|Jahre|Monate|Wochen|Tage|qm|m²)\b")
_NOT_LAWS = frozenset(
    {
        "DM",
        "EUR",
        "RM",
        "USD",
        "GmbH",
        "AG",
        "KG",
        "OHG",
        "RdNr",
        "Rn",
        "Rz",
        "NJW",
        "BGBl",
        "BStBl",
        "BFHE",
        "BGHZ",
        "BVerfGE",
        "BAGE",
        "BSGE",
        "VersR",
        "MDR",
        "ZIP",
        "DB",
        "BB",
        "EFG",
    }
)
_GUARD_REPORTER = re.compile(r"\b(?:SozR|Buchholz|BRS|AP)\s*(?:\d+\s*[-–]\s*)?\d+(?:\.\d+)?\s*(?:Nr\.?\s*\d+\s*)?$")
_REPORTER_HINT = re.compile(r"SozR|Buchholz|BRS|AP")  #: the literals ``_GUARD_REPORTER`` needs
_GUARD_EU = re.compile(
    r"(?:\((?:EU|EG|EWG|Euratom)\)|BGBl\.?(?:\s*\d{4})?(?:\s*[IV]{1,3})?|ABl\.?(?:\s*[A-Z]{1,2})?)\s*$"
)


def _roman_to_int(s: str) -> int | None:
    total, prev = 0, 0
    for ch in reversed(s):
        v = _ROMAN_VALUES.get(ch)
        if v is None:
            return None
        total = total - v if v < prev else total + v
        prev = max(prev, v)
    return total if 0 < total <= 30 else None


# --------------------------------------------------------------------------------------------
# The parser


class ReferenceParser:
    """Finds provision references in a text and resolves their code designators.

    ``citing_code`` is the corpus key of the code the text belongs to (statute text); it makes
    "dieses Gesetzes", designator-less references and "des Zehnten Buches" (within an SGB book)
    resolvable.
    """

    def __init__(self, registry: CodeRegistry | None, style: Style = Style.STATUTE) -> None:
        self.registry = registry
        self.style = Style(style)
        self._level_word = _LEVEL_WORD_COURT if self.style is Style.COURT else _LEVEL_WORD_STATUTE
        self._anchor = _ANCHOR_COURT if self.style is Style.COURT else _ANCHOR_STATUTE
        self._court = self.style is Style.COURT
        self._implicit: dict[str | None, Designator] = {}  #: one (immutable) designator per citing code

    def parse(
        self, text: str, citing_code: str | None = None, start: int = 0, end: int | None = None
    ) -> list[Reference]:
        """All references in ``text[start:end]`` (offsets are absolute)."""
        end = len(text) if end is None else end
        refs: list[Reference] = []
        pos = start
        chain_no = 0
        group_base = 0
        search = self._anchor.search
        # An anchor match is one capital or "§" and lower-case letters or ".", so no anchor starts
        # inside another: searching on from the end of the last match or chain finds what a
        # ``finditer`` that skips matches before ``pos`` would.
        m = search(text, start, end)
        while m is not None:
            m_start = m.start()
            next_from = m.end()
            if m_start > 0 and text[m_start - 1].isalnum():
                m = search(text, next_from, end)
                continue  # inside a word
            chain = self._chain(text, m_start, end)
            if chain is None:
                m = search(text, next_from, end)
                continue
            paths, stop = chain
            if self.style is Style.COURT and (
                _COMMENTARY_AFTER.match(text, stop, end)
                or _COMMENTARY_BEFORE.search(text, max(0, m_start - 12), m_start)
            ):
                pos = stop  # "Gräber, FGO, § 76 Rz 26", "aaO, § 38 II": a commentary's section, not a statute's
                m = search(text, max(pos, next_from), end)
                continue
            designator, stop = self._designator(text, stop, end, citing_code, paths[0][0])
            if designator.kind == "contract":
                pos = stop  # "§ 4 Nr. 1 des Mietvertrages", "§ 10 der Satzung": not statute law
                m = search(text, max(pos, next_from), end)
                continue
            if designator.kind in ("implicit", "none") and self.style is Style.COURT:
                designator = self._designator_before(text, m_start, designator)
            last = len(paths) - 1
            for k, (s, e, path, group) in enumerate(paths):
                if k == last and designator.span is not None and designator.span[0] >= e:
                    e = designator.span[1]
                refs.append(Reference((s, e), path, designator, group_base + group, chain_no))
            group_base += paths[-1][3] + 1
            chain_no += 1
            pos = stop
            m = search(text, max(pos, next_from), end)
        return refs

    # -- chains -----------------------------------------------------------------------------
    def _chain(self, text: str, pos: int, end: int) -> tuple[list[tuple[int, int, RefPath, int]], int] | None:
        """Parse components from ``pos``; return [(start, end, path, group)] and the stop offset."""
        st = _ChainState()
        i = pos
        bare_section = False  # a new § written without its sign: "§§ 92 Abs. 1, 97 Abs. 1"
        plural = False
        while True:
            if bare_section:
                level, gname, comp_start = _SECTION, "sec", i
                labels, comp_end = self._labels(text, i, end, level)
                bare_section = False
            else:
                m = self._level_word.match(text, i, end)
                if m is None:
                    break
                gname = m.lastgroup
                level = _LEVEL_GROUPS[gname]
                comp_start = m.start()
                if comp_start == pos and m.group() == "§§":
                    plural = True
                labels, comp_end = self._labels(
                    text, _skip_spaces(text, m.end(), end), end, level, stop_before_section=plural
                )
            if not labels:
                break
            lo = comp_start - 16 if comp_start > 16 else 0
            # (a guard can only match where its literal is: ")" or "Bl", a reporter's name)
            if (text.find(")", lo, comp_start) >= 0 or text.find("Bl", lo, comp_start) >= 0) and _GUARD_EU.search(
                text, lo, comp_start
            ):
                break  # "Verordnung (EU) Nr. 1234/2010" is not a provision reference
            if (
                level is _SECTION
                and _REPORTER_HINT.search(text, lo, comp_start)
                and _GUARD_REPORTER.search(text, lo, comp_start)
            ):
                break  # "SozR 4-2500 § 13 Nr 33": a section of a case reporter, not of a statute
            if (
                gname == "art"
                and len(labels) == 1
                and labels[0][_RANGE_END] is None
                and text.startswith("§", _skip_ws(text, comp_end, end))
            ):
                st.open_article(labels[0][_LABEL], comp_start)
                i = _skip_ws(text, comp_end, end)
                continue
            st.component(level, gname == "art", labels, comp_start, comp_end)
            i = comp_end
            if self.style is Style.COURT and level is _NUMMER and _BARE_LETTER.match(text, i, end):
                bl, b_end = self._labels(text, _skip_spaces(text, i, end), end, _BUCHSTABE)
                if bl:  # "Nr. 3 a) und b)"
                    st.component(_BUCHSTABE, False, bl, _skip_spaces(text, i, end), b_end)
                    i = b_end
            if self.style is Style.COURT and level is _SECTION and len(labels) == 1:
                i = self._roman_structure(text, i, end, st)
            fm = _FOLLOWING.match(text, i, end)
            if fm:
                st.extra["following"] = fm.group(1)
                i = st.cur_end = fm.end()
            while True:
                qm = _SKIP_QUALIFIER.match(text, i, end)
                if not qm:
                    break
                i = st.cur_end = qm.end()
            k = _skip_spaces(text, i, end)
            if k - i <= 1 and self._level_word.match(text, k, end):
                i = k
                continue
            cm = _CONNECTOR.match(text, i, end)
            if cm and cm.end() > i:
                after = cm.end()
                am = _CONNECTOR_ARTICLE.match(text, after, end)
                if am:
                    after = am.end()
                if self._level_word.match(text, after, end):
                    i = after
                    continue
                if plural and st.last_level is not _SECTION and self._bare_section_ahead(text, after, end):
                    i = after
                    bare_section = True
                    continue
            break
        out = st.finish()
        if not out:
            return None
        stop = st.cur_end
        if out[0][2].top is not _SECTION:
            base = self._trailing_section(text, stop, end)
            if base is not None:  # "Satz 2 des § 5": sub-level references bound to a following §
                sec_kind, number, stop = base
                out = [
                    (s, e, replace(p, kind=sec_kind, section=number), g) if p.top is not _SECTION else (s, e, p, g)
                    for s, e, p, g in out
                ]
        return out, stop

    def _roman_structure(self, text: str, i: int, end: int, st: _ChainState) -> int:
        """Court shorthand "§ 823 I 1 BGB": Roman Absatz, then an optional Arabic Satz."""
        rm = _ROMAN_ABSATZ.match(text, i, end)
        if not rm:
            return i
        val = _roman_to_int(rm.group(1))
        if val is None:
            return i
        st.current[_ABSATZ] = str(val)
        st.last_level = _ABSATZ
        i = st.cur_end = rm.end()
        sm = _ROMAN_SATZ.match(text, i, end)
        if sm:
            st.current[_SATZ] = sm.group(1)
            st.last_level = _SATZ
            i = st.cur_end = sm.end()
        return i

    def _bare_section_ahead(self, text: str, j: int, end: int) -> bool:
        """A bare number that opens the next § of a "§§" list: it is followed by a sub-level word."""
        lab = self._label(text, j, end, _SECTION, _LABELS[_SECTION])
        if lab is None:
            return False
        k = _skip_spaces(text, lab[_END], end)
        m = self._level_word.match(text, k, end)
        return m is not None and _LEVEL_GROUPS[m.lastgroup] > _SECTION

    def _labels(
        self, text: str, j: int, end: int, level: Level, stop_before_section: bool = False
    ) -> tuple[list[_Label], int]:
        """A label list at ``j`` ("1, 5 bis 7, 8 und 14") and where it stops.

        With ``stop_before_section`` (inside a "§§" list) a sub-level list ends before a label that
        is itself followed by a level word no deeper than the list's: "Abs. 1, 97 Abs. 1" – 97 is
        the next §, not an Absatz.
        """
        pattern = _LABELS[level]
        first = self._label(text, j, end, level, pattern)
        if first is None:
            return [], j
        labels = [first]
        k = first[_END]
        while True:
            sm = _LIST_SEP.match(text, k, end)
            if not sm:
                break
            nxt = self._label(text, sm.end(), end, level, pattern)
            if nxt is None:
                break
            nxt_end = nxt[_END]
            if _UNIT_AFTER.match(text, nxt_end, end):
                break  # "Nr 1 und 210 DM": an amount, not a label
            if stop_before_section and level is not _SECTION:
                after = self._level_word.match(text, _skip_spaces(text, nxt_end, end), end)
                if after is not None and _LEVEL_GROUPS[after.lastgroup] <= level:
                    break
            if sm.group(1) in ("bis", "–", "-"):
                last = labels[-1]
                if last[_RANGE_END] is not None:
                    break
                labels[-1] = (last[_LABEL], last[_START], nxt_end, nxt[_LABEL])
            else:
                labels.append(nxt)
            k = nxt_end
        return labels, k

    def _label(self, text: str, j: int, end: int, level: Level, pattern: re.Pattern) -> _Label | None:
        if self._court and level is _SECTION:
            cm = _COURT_SPLIT_LETTER.match(text, j, end)
            if cm:
                return cm.group(1) + cm.group(2), cm.start(), cm.end(), None
        m = pattern.match(text, j, end)
        if m is None:
            return None
        return m.group(1), j, m.end(), None

    def _trailing_section(self, text: str, pos: int, end: int) -> tuple[str, str, int] | None:
        m = _TRAILING_SECTION.match(text, pos, end)
        if not m:
            return None
        return ("§" if m.group(1) == "§" else "Art"), m.group(2), m.end()

    # -- designators --------------------------------------------------------------------------
    def _designator(
        self, text: str, pos: int, end: int, citing_code: str | None, first_start: int
    ) -> tuple[Designator, int]:
        k = _skip_ws(text, pos, end)
        dm = _DEFINITE.match(text, pos, end)
        if dm is None and (k >= end or not (text[k].isupper() or text[k] in "dv")):
            # Without an article every designator below starts with a capital, "dies…" or "vor…":
            # the common "Satz 1 gilt entsprechend" is settled here.
            if self._court:
                return Designator("none"), pos
            return self._implicit_designator(citing_code), pos
        after_article = dm.end() if dm else k
        window_end = min(end, k + 400)
        sm = _SELF.match(text, after_article, window_end) or _SELF.match(text, k, window_end)
        if sm:
            return Designator("self", citing_code, text[k : sm.end()], (k, sm.end())), sm.end()
        reg = self.registry
        if reg is not None:
            nm = reg.match_name(text, after_article) if after_article < end and text[after_article].isupper() else None
            if nm is not None:
                return Designator("code", nm.key, text[k : nm.end], (k, nm.end)), nm.end
            om = _ORDINAL_BOOK.match(text, after_article, window_end)
            if om and stem(om.group(1)) in ORDINAL_STEMS and dm is not None:
                key = reg.family_book(citing_code, om.group(1))
                if key is not None:
                    return Designator("code", key, text[k : om.end()], (k, om.end())), om.end()
            for start in (k, after_article) if dm else (k,):
                am = _ABBREV_TOKEN.match(text, start, window_end)
                if am:
                    token = am.group(1)
                    candidates = []
                    if am.group(2):
                        candidates.append((f"{token} {am.group(2)}", am.end()))
                    candidates.append((token, am.end(1)))
                    for cand, cand_end in candidates:
                        key = reg.by_abbreviation(cand)
                        if key is not None:
                            return Designator("code", key, text[k:cand_end], (k, cand_end)), cand_end
        if dm is not None:
            cm = _CONTRACT.match(text, after_article, window_end)
            if cm and not _TREATY.match(text, after_article, window_end):
                return Designator("contract", None, text[k : cm.end()], (k, cm.end())), cm.end()
            um = _UNKNOWN_LAW.match(text, after_article, window_end)
            if um:
                stop = um.end()
                pm = _DEFINED_ABBREV.match(text, stop, min(end, stop + 200))
                if pm and reg is not None:
                    # "des Gesetzes über die Rechtsverhältnisse der Steuerberater … (StBerG)"
                    key = reg.by_abbreviation(pm.group(1))
                    if key is not None:
                        return Designator("code", key, text[k : pm.end()], (k, pm.end())), pm.end()
                return Designator("unknown", None, text[k:stop], (k, stop)), stop
        if self.style is Style.COURT:
            um = _UNKNOWN_LAW.match(text, k, window_end)
            if um and um.group(0)[0].isupper() and um.end() - k > 8:
                return Designator("unknown", None, text[k : um.end()], (k, um.end())), um.end()
        am = _ABBREV_TOKEN.match(text, k, window_end)
        if am and _UNKNOWN_ABBREV.match(am.group(1)) and len(am.group(1)) <= 16 and am.group(1) not in _NOT_LAWS:
            token = am.group(1)
            if self.style is Style.COURT or token.isupper() or token.endswith(("G", "O", "V")):
                stop = am.end(1)
                year = re.match(r"\s+((?:19|20)\d\d)(?!\d)", text[stop:window_end])
                if year:
                    stop += year.end()
                return Designator("unknown", None, text[k:stop], (k, stop)), stop
        if self.style is Style.COURT:
            return Designator("none"), pos
        return self._implicit_designator(citing_code), pos

    def _implicit_designator(self, citing_code: str | None) -> Designator:
        implicit = self._implicit.get(citing_code)
        if implicit is None:
            implicit = self._implicit[citing_code] = Designator("implicit", citing_code)
        return implicit

    def _designator_before(self, text: str, anchor: int, fallback: Designator) -> Designator:
        """Court headnote style: "HGB § 74a Abs 1 S 1", "SGG § 184 Abs 2", "GG Art 80"."""
        before = text[max(0, anchor - 25) : anchor]
        m = _BEFORE_ABBREV.search(before)
        if not m:
            return fallback
        token = m.group(1).strip()
        start = anchor - len(before) + m.start(1)
        if self.registry is not None:
            key = self.registry.by_abbreviation(token) or self.registry.by_abbreviation(token.split()[0])
            if key is not None:
                return Designator("code", key, token, (start, start + len(token)))
        if _UNKNOWN_ABBREV.match(token.split()[0]) and len(token) <= 16:
            return Designator("unknown", None, token, (start, start + len(token)))
        return fallback


#: One label of a component ("5", "3a"): (label, start, end, range end) – the range end for "5 bis 7"
_Label = tuple[str, int, int, "str | None"]
_LABEL, _START, _END, _RANGE_END = range(4)


class _ChainState:
    """Bookkeeping while reading one chain: the reference being built and the finished ones."""

    def __init__(self) -> None:
        self.out: list[tuple[int, int, RefPath, int]] = []
        self.current: dict[Level, str] = {}
        self.extra: dict[str, str] = {}
        self.kind = "§"
        self.article: str | None = None
        self.article_pending = False
        self.last_level: Level | None = None
        self.cur_start = 0
        self.cur_end = 0
        self.group = -1

    def path(self, values: dict[Level, str], extra: dict[str, str] | None = None) -> RefPath:
        get = values.get
        kind = self.kind
        if extra:
            range_end, following = extra.get("range_end"), extra.get("following")
        else:
            range_end = following = None
        return RefPath(  # positional, in field order: kind, article, section … following
            kind,
            self.article if kind == "§" else None,
            get(_SECTION),
            get(_ABSATZ),
            get(_SATZ),
            get(_NUMMER),
            get(_BUCHSTABE),
            get(_DOPPELBUCHSTABE),
            range_end,
            following,
        )

    def flush(self) -> None:
        if self.current:
            self.out.append((self.cur_start, self.cur_end, self.path(self.current, self.extra), max(self.group, 0)))
        self.extra = {}

    def open_article(self, label: str, start: int) -> None:
        self.flush()
        self.current = {}
        self.article = label
        self.article_pending = True
        self.group += 1
        self.cur_start = start
        self.last_level = None

    def component(self, level: Level, is_article: bool, labels: list[_Label], start: int, end: int) -> None:
        if self.current and (self.last_level is None or level <= self.last_level):
            self.flush()
            self.current = {} if level is _SECTION else {lv: v for lv, v in self.current.items() if lv < level}
            self.cur_start = start
        elif not self.current and not self.article_pending:
            self.cur_start = start
        if level is _SECTION:
            if self.article_pending:
                self.article_pending = False
            else:
                self.group += 1
                if is_article:
                    self.article = None
            self.kind = "Art" if is_article else "§"
        elif self.group < 0:
            self.group = 0
        for idx, (label, _, lab_end, range_end) in enumerate(labels[:-1]):
            sibling = dict(self.current)
            sibling[level] = label
            extra = {"range_end": range_end} if range_end else None
            self.out.append((self.cur_start, lab_end, self.path(sibling, extra), max(self.group, 0)))
            self.cur_start = labels[idx + 1][_START]
            if level is _SECTION:
                self.group += 1
        last = labels[-1]
        self.current[level] = last[_LABEL]
        if last[_RANGE_END] is not None:
            self.extra["range_end"] = last[_RANGE_END]
        self.last_level = level
        self.cur_end = end

    def finish(self) -> list[tuple[int, int, RefPath, int]]:
        """The chain's paths, groups renumbered 0, 1, … in order of appearance."""
        self.flush()
        remap: dict[int, int] = {}
        out = []
        for s, e, p, g in self.out:
            if p.top is None:
                continue
            r = remap.get(g)
            if r is None:
                r = remap[g] = len(remap)
            out.append((s, e, p, r))
        return out


def _skip_spaces(text: str, i: int, end: int) -> int:
    while i < end and text[i] == " ":
        i += 1
    return i


def _skip_ws(text: str, i: int, end: int) -> int:
    while i < end and text[i].isspace():
        i += 1
    return i


# --------------------------------------------------------------------------------------------
# Court citations


def parse_court_citations(text: str, registry: CodeRegistry | None) -> list[CourtCitation]:
    """Citations of statute provisions in a court decision, one per §/Art. mention.

    A citation without a code ("§ 236" in "§§ 236, 245 SGB V" is covered by its chain; a bare
    "§ 13 Abs. 3" later in the text is not) borrows the code of the nearest earlier citation of
    the same number, as a reader would ("short" citations).
    """
    parser = ReferenceParser(registry, Style.COURT)
    refs = parser.parse(text)
    groups: dict[int, list[Reference]] = {}
    for ref in refs:
        groups.setdefault(ref.group, []).append(ref)
    out: list[CourtCitation] = []
    last_book_for_number: dict[str, tuple[str | None, str | None]] = {}
    first_book_for_number: dict[str, tuple[str | None, str | None]] = {}
    for ref in refs:
        d = ref.designator
        if ref.path.top is Level.SECTION and d.kind in ("code", "unknown"):
            first_book_for_number.setdefault(
                ref.path.section_number or "", (d.code if d.kind == "code" else _book_token(d.text), d.code)
            )
    for _, members in sorted(groups.items()):
        members = [r for r in members if r.path.top is Level.SECTION] or members
        primary = members[0]
        if primary.path.top is not Level.SECTION:
            continue  # a bare "Abs. 2" in court text names nothing by itself
        s = min(r.span[0] for r in members)
        e = max(r.span[1] for r in members)
        des = primary.designator
        number = primary.path.section_number
        kind = primary.path.kind
        if des.kind == "code":
            book, code, dkind = des.code, des.code, "code"
        elif des.kind == "unknown":
            book, code, dkind = _book_token(des.text), None, "unknown"
        else:
            book, code = last_book_for_number.get(number or "", (None, None))
            if book is None:
                book, code = first_book_for_number.get(
                    number or "", (None, None)
                )  # a headnote before the full citation
            dkind = "short" if book is not None else "none"
        if number is not None and dkind in ("code", "unknown"):
            last_book_for_number[number] = (book, code)
        range_end = primary.path.range_end
        if range_end is not None and primary.path.deepest is Level.SECTION and len(members) == 1:
            # "§§ 184 bis 187 SGG": both ends are cited provisions in their own right
            rm = re.search(rf"(?:bis|–|-)\s*({re.escape(range_end)})(?![\w])", text[s:e])
            if rm:
                cut = s + rm.start()
                out.append(
                    CourtCitation((s, cut), text[s:cut].rstrip(), book, code, number, {}, [], kind, dkind, range_end)
                )
                r_start = s + rm.start(1)
                out.append(CourtCitation((r_start, e), text[r_start:e], book, code, range_end, {}, [], kind, dkind))
                continue
        out.append(
            CourtCitation(
                span=(s, e),
                text=text[s:e],
                book=book,
                code=code,
                number=number,
                structure=primary.path.structure(),
                also=[r.path.structure() for r in members[1:]],
                kind=kind,
                designator=dkind,
                range_end=primary.path.range_end,
                following=primary.path.following,
            )
        )
    return out


def _book_token(designator_text: str) -> str:
    t = re.sub(r"^(?:des|der|dem|den|im|zum|zur)\s+", "", designator_text.strip())
    return t.lower()
