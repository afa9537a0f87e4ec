"""The statute graph's vocabulary: hierarchy levels, node and edge types, provision citations.

The hierarchy follows German drafting practice (Handbuch der Rechtsförmlichkeit):
Code › structural units (Buch, Teil, Abschnitt, Titel, … from ``gliederungseinheit``) › § or Artikel
› Absatz › Satz › Nummer › Buchstabe › Doppelbuchstabe. ``Level`` orders them; node ``type`` and
edge ``type`` attributes in the ``networkx.MultiDiGraph`` are the lowercase level names
(``contains_absatz``, ``cites_satz`` …), so users can filter with plain attribute queries.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import IntEnum


class Level(IntEnum):
    """Depth of a node kind in the statute hierarchy (units can nest, so this is an order, not a depth)."""

    ROOT = 0
    CODE = 1
    UNIT = 2
    SECTION = 3  # § or Artikel
    ABSATZ = 4
    SATZ = 5
    NUMMER = 6
    BUCHSTABE = 7
    DOPPELBUCHSTABE = 8

    @property
    def type_name(self) -> str:
        """The node ``type`` attribute used in the graph (``section``, ``absatz`` …)."""
        return _TYPE_NAMES[self]

    @property
    def display(self) -> str:
        """The German label used in tables (Code, §, Absatz …)."""
        return _DISPLAY[self]

    @classmethod
    def parse(cls, name: str) -> Level:
        """Accept a type name, a display label or a common alias (``paragraph``, ``§``, ``sentence``)."""
        key = name.strip().lower()
        if key in _ALIASES:
            return _ALIASES[key]
        raise ValueError(
            f"unknown statute level {name!r}; use one of "
            + ", ".join(lvl.type_name for lvl in cls if lvl not in (cls.ROOT, cls.UNIT))
        )


_TYPE_NAMES = {lvl: lvl.name.lower() for lvl in Level}

_DISPLAY = {
    Level.ROOT: "Root",
    Level.CODE: "Code",
    Level.UNIT: "Gliederung",
    Level.SECTION: "§",
    Level.ABSATZ: "Absatz",
    Level.SATZ: "Satz",
    Level.NUMMER: "Nummer",
    Level.BUCHSTABE: "Buchstabe",
    Level.DOPPELBUCHSTABE: "Doppelbuchstabe",
}

_ALIASES: dict[str, Level] = {}
for _lvl in Level:
    _ALIASES[_lvl.type_name] = _lvl
    _ALIASES[_DISPLAY[_lvl].lower()] = _lvl
_ALIASES.update(
    {
        "paragraph": Level.SECTION,
        "para": Level.SECTION,
        "article": Level.SECTION,
        "artikel": Level.SECTION,
        "unit": Level.UNIT,
        "abs": Level.ABSATZ,
        "sentence": Level.SATZ,
        "nr": Level.NUMMER,
        "number": Level.NUMMER,
        "letter": Level.BUCHSTABE,
        "lit": Level.BUCHSTABE,
        "buchst": Level.BUCHSTABE,
    }
)

#: The levels a citation can name, in order; ToER is stratified by these evaluation depths.
CITATION_LEVELS: tuple[Level, ...] = (
    Level.CODE,
    Level.SECTION,
    Level.ABSATZ,
    Level.SATZ,
    Level.NUMMER,
    Level.BUCHSTABE,
)

#: Levels at which the graph can be chunked (one chunk per node of that level).
CHUNK_LEVELS: tuple[Level, ...] = CITATION_LEVELS

TYPE_TO_LEVEL: dict[str, Level] = {lvl.type_name: lvl for lvl in Level}


def contains_edge(child: Level) -> str:
    """Edge type of a hierarchy edge into a node of level ``child`` (``contains_absatz``)."""
    return f"contains_{child.type_name}"


def cites_edge(target: Level) -> str:
    """Edge type of a citation edge to a node of level ``target`` (``cites_satz``)."""
    return f"cites_{target.type_name}"


_ABBREV = {
    Level.ABSATZ: "Abs.",
    Level.SATZ: "Satz",
    Level.NUMMER: "Nr.",
    Level.BUCHSTABE: "Buchst.",
}


@dataclass(frozen=True)
class ProvisionCitation:
    """A cited provision reduced to what ToER compares: code key and one label per level.

    ``code`` is the corpus key (``jurabk``, e.g. ``"SGB 5"``); ``section`` the § or Artikel number as
    printed (``"622"``, ``"74a"``; an article-nested § is ``"229 § 5"``). A level left ``None`` is
    unspecified: the citation names the whole enclosing unit.
    """

    code: str
    section: str | None = None
    absatz: str | None = None
    satz: str | None = None
    nummer: str | None = None
    buchstabe: str | None = None
    article: bool = field(default=False, compare=False)

    @classmethod
    def at(cls, code: str, section: str | None, structure: Mapping[str, str], article: bool = False) -> ProvisionCitation:
        """Provision ``section`` of ``code`` down to the levels ``structure`` names (its keys
        ``absatz``, ``satz``, ``nummer``, ``buchstabe``; others are ignored)."""
        return cls(code=code, section=section, absatz=structure.get("absatz"), satz=structure.get("satz"),
                   nummer=structure.get("nummer"), buchstabe=structure.get("buchstabe"), article=article)

    def value(self, level: Level) -> str | None:
        if level is Level.CODE:
            return self.code
        return getattr(self, level.type_name)

    def specified_depth(self) -> Level:
        """The deepest level this citation names."""
        deepest = Level.CODE
        for lvl in CITATION_LEVELS[1:]:
            if self.value(lvl) is not None:
                deepest = lvl
        return deepest

    def render(self) -> str:
        """Conventional German citation form: ``§ 622 Abs. 2 Nr. 1 BGB``."""
        parts: list[str] = []
        if self.section is not None:
            if not self.section[:1].isdigit():
                parts.append(self.section)  # "Anlage 1"
            else:
                parts.append(("Art. " if self.article else "§ ") + self.section)
        for lvl in (Level.ABSATZ, Level.SATZ, Level.NUMMER, Level.BUCHSTABE):
            val = self.value(lvl)
            if val is not None:
                parts.append(f"{_ABBREV[lvl]} {val}")
        parts.append(self.code)
        return " ".join(parts)


def prefix_match(gold: ProvisionCitation, retrieved: ProvisionCitation, depth: Level) -> bool:
    """The paper's lenient prefix rule at an evaluation depth.

    Both citations are cut at ``depth``; they match when every level down to ``depth`` that BOTH
    specify agrees. A level missing from either side counts as an implicit hit.
    """
    if gold.code != retrieved.code:
        return False
    for lvl in CITATION_LEVELS[1:]:
        if lvl > depth:
            break
        g, r = gold.value(lvl), retrieved.value(lvl)
        if g is not None and r is not None and g != r:
            return False
    return True
