"""The document's entity list, read without a model: the caption's parties, the terms the complaint
defines, and the proper names its fact sentences use.

Every extraction design sees this list. The sentence-level design lets its programs choose
participants only among these entities. The chunked design's Stage 1 is offered the list as a
seed, and its own entities merge with it. The floor takes the caption's parties alone.

Sources, in order of trust:

``caption``  the parties of ``argus.caption.read_caption``, with the body's spelling of each name and
             the short names the body defines for it ("Ms. Ashworth", "the Company");
``defined``  a name followed by a parenthesis of quoted terms anywhere in the body:
             ``Priya Menon-Dorsey ("Ms. Menon-Dorsey")``, ``Performance Improvement Plan ("PIP")``;
``name``     a run of capitalized words in a fact sentence that is not a common word, a month, a
             weekday or the start of the sentence (``Gregory Tull``, ``Mr. Tull``, ``Bensalem Center``).

Names are clustered when the words of one (titles, company suffixes and role words such as
"Defendant" aside) are among the words of another: "Mr. Tull" joins "Gregory Tull". A cluster is
named by its longest member and keeps the others as aliases. Kind and legal role come from the
name's form and the words around its mentions ("her supervisor, Gregory Tull"); programs may revise
them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterable

from argus.caption import Caption
from argus.designs.sentence.time import MONTHS
from argus.schema import Entity, Participant
from argus.words import name_pattern, readings

_TITLE = r"(?:Mr|Ms|Mrs|Miss|Dr|Mx|Prof|Sgt|Officer|Judge)\.?"
_WORD = r"[A-Z][\w'’\-]*[\w]|[A-Z]"
_RUN = re.compile(
    rf"(?:\b{_TITLE}\s+)?\b(?:{_WORD})(?:\.(?=\s+[A-Z]))?(?:\s+(?:[A-Z]\.|(?:{_WORD})|of|and|&|for|the|de|van|von|la)(?=\W|$)){{0,5}}"
)
_DEFINITION = re.compile(r"(?P<name>(?:\b{t}\s+)?[A-Z][\w'’\-.&,]*(?:\s+(?:[A-Z][\w'’\-.&,]*|of|and|&|for|the)){{0,7}})"
                         r"\s*\(\s*(?:the\s+|an?\s+)?[\"“](?P<alias>[^\"”“]{{1,60}}?)[,.]?[\"”]".format(t=_TITLE))
_POSSESSIVE = re.compile(r"[’']s?$")
_TRAILING = re.compile(r"(?:\s+(?:of|and|&|for|the|de|van|von|la))+$")
_TITLES = re.compile(rf"^{_TITLE}\s+")

STOP = frozenset("""
a an the on in at of for to from by with without within upon after before during while when whenever
where because although though since until unless if as than then that this these those there here
he she it they we i you his her its their our my your him them us me who whom whose which what why how
no not nor neither either both each every all any some many most much several few other another such
one two three four five six seven eight nine ten eleven twelve first second third later shortly soon
thereafter afterward afterwards again also only even just still yet so but or and however instead
throughout beginning around about over under between among into onto through despite including
january february march april may june july august september october november december
monday tuesday wednesday thursday friday saturday sunday
plaintiff plaintiffs defendant defendants complaint court exhibit count see id
""".split())
JOB_TITLES = frozenset("""
director president manager supervisor specialist associate representative counsel teller technician officer
operator partner generalist coordinator superintendent foreman lead clerk assistant analyst administrator
engineer driver nurse secretary agent dispatcher cashier server cook chef attendant advisor adviser
executive chair chairman chairperson owner principal vp ceo cfo coo
""".split())
#: proper words that name no party: languages, nationalities, religions, states
NOT_NAMES = frozenset("""
spanish english french german italian chinese japanese korean arabic hindi urdu polish russian portuguese
latina latino latinx latin hispanic american african asian caucasian black white jewish muslim christian
catholic sikh sikhism hindu buddhist islam mormon puerto rican mexican dominican haitian nigerian indian
covid-19 covid ptsd adhd
alabama alaska arizona arkansas california colorado connecticut delaware florida georgia hawaii idaho
illinois indiana iowa kansas kentucky louisiana maine maryland massachusetts michigan minnesota mississippi
missouri montana nebraska nevada hampshire jersey mexico york carolina dakota ohio oklahoma oregon
pennsylvania rhode island tennessee texas utah vermont virginia washington wisconsin wyoming
afghanistan iraq manhattan brooklyn
""".split())
PUBLIC_BODIES = frozenset({"EEOC", "OSHA", "NLRB", "PHRC", "NYSDHR", "KCHR", "RICHR", "DOL"})
ROLE_WORDS = frozenset("plaintiff plaintiffs defendant defendants individual corporate".split())
#: words that, in front of or around a name, say its legal role
ROLE_CUES: tuple[tuple[str, re.Pattern], ...] = (
    ("hr", re.compile(r"\b(?:human\s+resources|hr|employee\s+relations|benefits|leave\s+specialist|personnel)\b", re.I)),
    ("supervisor", re.compile(r"\b(?:supervisor|manager|foreman|superintendent|lead|boss|director|chef|head)\b", re.I)),
    ("coworker", re.compile(r"\b(?:co-?workers?|colleagues?|co-?employees?|fellow)\b", re.I)),
    ("agency", re.compile(r"\b(?:EEOC|commission|agency|department\s+of\s+labor)\b", re.I)),
    ("comparator", re.compile(r"\b(?:younger|white|male|non-\w+|similarly\s+situated|replacement|replaced)\b", re.I)),
)
_DOC_WORDS = re.compile(r"\b(?:plan|memo|memorandum|policy|letter|certificate|standard|handbook|report|email|"
                        r"notice|charge|form|agreement|contract|review|evaluation|certification|warning)\b", re.I)
_PLACE_WORDS = re.compile(r"\b(?:center|centre|site|branch|store|plant|warehouse|office|facility|floor|pod|room|"
                          r"building|campus|depot|yard|terminal|station|clinic|restaurant|kitchen|street|avenue|"
                          r"road|county|city|province|state)\b", re.I)
_ORG_WORDS = re.compile(r"\b(?:inc|llc|corp|corporation|company|group|bank|university|college|school|hospital|"
                        r"department|division|board|authority|commission|agency|association|union|army|navy|"
                        r"services|partners|network|desk|team|committee|firm|resources)\b\.?", re.I)


@lru_cache(maxsize=20000)
def _common(word: str) -> bool:
    """Whether ``word`` (lowercased) is an ordinary English word rather than a proper name."""
    w = word.lower().strip("'’.")
    return w in STOP or bool(readings(w))


def name_key(name: str) -> frozenset[str]:
    """The words that identify a name: lowercased, without titles, company suffixes, role words,
    possessives and a leading article (the words clustering compares)."""
    from metrics.gold import normalize_entity_name

    words = normalize_entity_name(_POSSESSIVE.sub("", name.strip())).split()
    return frozenset(w for w in words if w not in ROLE_WORDS and w not in {"the", "s"})


@dataclass
class EntityCandidate:
    """One entity of the list before ids are given: its names, its form and where it came from."""

    name: str
    aliases: list[str] = field(default_factory=list)
    kind: str = "other"
    role: str = "other"
    source: str = "name"
    count: int = 0

    @property
    def names(self) -> list[str]:
        return [self.name, *self.aliases]

    def keys(self) -> list[frozenset[str]]:
        return [k for k in (name_key(n) for n in self.names) if k]


#: abbreviations of citations and reporters ("Supp. App.", "Ibid.", "Juris. Statement"): no name holds them
CITATION_WORDS = frozenset("supp app pp ibid cf arg juris cty educ univ ct".split())
_OUTLINE = re.compile(r"^(?:[IVX]{1,4}|[A-Z])$")  # an outline mark run into the text: "II", "B"


def _clean_run(run: str) -> str:
    run = _POSSESSIVE.sub("", run.strip(" ,.;:"))
    words = run.split()
    while len(words) > 1 and _OUTLINE.match(words[0]) and words[1][:1].isupper():
        words = words[1:]
    while words and words[0].lower() in STOP and words[0].lower() not in {"the"}:
        words = words[1:]
    if words and words[0].lower() == "the":
        words = words[1:]
    run = _TRAILING.sub("", " ".join(words)).strip(" ,.;:")
    return _POSSESSIVE.sub("", run)


def _is_name(run: str, sentence_start: bool) -> bool:
    if not run or not run[0].isupper():
        return False
    words = run.split()
    caps = [w for w in words if w[:1].isupper()]
    if not caps or _TITLES.fullmatch(run) or re.fullmatch(_TITLE, run):
        return False
    if any(re.search(r"[’'](?:m|d|re|ve|ll|t)$", w) for w in words):  # I'm, How'd
        return False
    if any(w.strip(".").lower() in CITATION_WORDS for w in words) or words[-1].lower() in MONTHS:
        return False
    if words[-1] in ("Act", "Code", "Law", "Statute", "Regulations") or words[-1].lower() in NOT_NAMES \
            or any(w.lower() in NOT_NAMES for w in words if len(words) <= 2):
        return False
    if _TITLES.match(run + " ") and len(words) >= 2:
        return True
    if all(w.strip(".").lower() in STOP for w in caps):
        return False
    if all(_common(w) for w in caps) and words[-1].lower().rstrip("s") in JOB_TITLES:
        return False  # "Senior Associate", "Managing Director": a position, not who holds it
    if len(caps) == 1:
        w = caps[0]
        if w.isupper() and len(w) <= 6:  # a bare acronym: only through a definition ("PIP") or a public body
            return w in PUBLIC_BODIES
        return not _common(w) and not sentence_start
    return True


def _runs(text: str) -> Iterable[tuple[str, bool, str]]:
    """(name, at the start of the sentence, the job-title words in front of it) for each run of
    capitalized words; a run is split at possessives ("Corvane's Regional Director") and at "and"
    between names ("Dunaway and Royse"), and loses the title words in front of a name
    ("Operations Manager Gregory Tull")."""
    for m in _RUN.finditer(text):
        start = m.start() == 0 or not text[: m.start()].strip()
        piece = m.group(0)
        pieces = re.split(r"[’']s\s+", piece)
        for k, sub in enumerate(pieces):
            parts = [sub] if re.search(r"\b(?:Department|Board|Division|Office)\b", sub) else \
                re.split(r"\s+(?:and|&)\s+(?=[A-Z])", sub)
            for j, part in enumerate(parts):
                cleaned = _clean_run(part)
                if not cleaned:
                    continue
                words = cleaned.split()
                title: list[str] = []
                if len(words) >= 3 and not _TITLES.match(cleaned + " "):
                    # title words in front of two or more proper-name words
                    i = 0
                    while i < len(words) - 2 and _common(words[i]) and words[i].lower() not in STOP:
                        i += 1
                    if i and not any(_common(w) for w in words[i:]):
                        title, words = words[:i], words[i:]
                yield " ".join(words), start and k == 0 and j == 0 and not title and \
                    words[0] == piece.split()[0], " ".join(title)


def _kind_of(name: str, default: str = "other") -> str:
    if _TITLES.match(name + " "):
        return "person"
    if _ORG_WORDS.search(name):
        return "organization"
    if _DOC_WORDS.search(name):
        return "document"
    if _PLACE_WORDS.search(name):
        return "location"
    words = name.split()
    if 2 <= len(words) <= 4 and all(w[:1].isupper() for w in words) and not any(_common(w) for w in words[-1:]):
        return "person"
    if len(words) == 1 and not _common(words[0]) and not words[0].isupper():
        return "person"
    return default


def _role_from_context(name: str, texts: list[str]) -> str:
    """The legal-role cue nearest in front of the name in its sentences ("her supervisor, Gregory Tull")."""
    for t in texts:
        i = t.find(name)
        if i < 0:
            continue
        window = t[max(0, i - 60): i + len(name) + 40]
        for role, cue in ROLE_CUES:
            if cue.search(window):
                return role
    return "other"


def caption_candidates(caption: Caption | None) -> list[EntityCandidate]:
    out = []
    for p in caption.parties if caption else []:
        name = p.body_name or p.name
        aliases = [a for a in p.aliases if a.casefold() != name.casefold()]
        role = "plaintiff" if p.side == "plaintiff" else ("employer" if p.kind == "organization" else "defendant")
        out.append(EntityCandidate(name=name, aliases=aliases, kind=p.kind, role=role, source="caption"))
    return out


def _short_form(alias: str, name: str) -> bool:
    """Whether ``alias`` abbreviates ``name``: its words are among the name's ("Ms. Menon-Dorsey",
    "Agreement"), or it spells the initials of the name's capitalized words ("PIP", "RICHR")."""
    a, n = name_key(alias), name_key(name)
    if a and a <= n:
        return True
    letters = alias.replace(".", "")
    initials = "".join(w[0] for w in re.findall(r"[A-Z][\w'’\-]*", name) if w.lower() not in STOP)
    return letters.isupper() and len(letters) >= 2 and letters in initials


def defined_candidates(text: str) -> list[EntityCandidate]:
    """Names the body defines: ``Name ("Short")``. A quoted term that does not abbreviate the name in
    front of it defines a thing of its own (``… with a copy to Abernathy (the "June 23 Report")``)."""
    out = []
    for m in _DEFINITION.finditer(text):
        name = _clean_run(m.group("name").strip(" ,"))
        alias = " ".join(m.group("alias").split()).strip(" ,.")
        if not alias or not any(c.isupper() for c in alias):
            continue
        if name and name.casefold() != alias.casefold() and not all(w.strip(".,").lower() in STOP for w in name.split()) \
                and _short_form(alias, name):
            out.append(EntityCandidate(name=name, aliases=[alias], kind=_kind_of(name), source="defined"))
        elif _is_name(alias, False) or len(alias.split()) >= 2:
            out.append(EntityCandidate(name=alias, kind=_kind_of(alias), source="defined"))
    return out


def _joins(keys: list[frozenset[str]], home: EntityCandidate) -> bool:
    """Whether a candidate with name words ``keys`` (its name first) is the entity ``home``: a
    one-word name ("Tull", "Ms. Ashworth") joins an entity any of whose names holds it; a longer
    name joins one whose name or aliases it contains or is contained in, unless both are full
    names that differ ("Carol Marchetti" is not "Jessica L. Marchetti")."""
    hkeys = home.keys()
    own = keys[0]
    if len(own) == 1:
        return any(own <= hk for hk in hkeys)
    full = hkeys[0]
    if len(full) >= 2 and not (own <= full or full <= own):
        return False
    return any(k <= hk or hk <= k for k in keys for hk in hkeys)


def _cluster(cands: list[EntityCandidate]) -> list[EntityCandidate]:
    """Merge candidates that name one entity (``_joins``; the first, most trusted, entity wins)."""
    out: list[EntityCandidate] = []
    for c in cands:
        keys = c.keys()
        if not keys:
            continue
        home = next((o for o in out if _joins(keys, o)), None)
        if home is None:
            out.append(c)
            continue
        home.count += c.count
        for n in c.names:
            if n.casefold() in {x.casefold() for x in home.names}:
                continue
            if home.source == "name" and c.source == "name" and len(name_key(n)) > len(name_key(home.name)):
                home.aliases.append(home.name)
                home.name = n
            else:
                home.aliases.append(n)
        if home.kind == "other":
            home.kind = c.kind
    return out


def known_parties(caption: Caption | None) -> str:
    """The caption's parties as Stage 1 of the chunked design sees them: one per line, ``name (role);
    also: short names`` (empty without a caption)."""
    lines = []
    for c in caption_candidates(caption):
        also = f"; also: {', '.join(c.aliases)}" if c.aliases else ""
        lines.append(f"{c.name} ({c.role}){also}")
    return "\n".join(lines)


def document_entities(caption: Caption | None, body: str, sentences: list[tuple[str, str]],
                      min_count: int = 1) -> list[Entity]:
    """The entity list (ids E1..En) for a document: the caption's parties, the body's defined terms
    and the proper names of ``sentences`` ((id, text) of the fact sentences), clustered.

    Only entities with a name or alias in ``sentences`` are kept (grounding would drop the rest).
    ``min_count``: mentions a ``name`` candidate needs to be kept.
    """
    texts = [t for _, t in sentences]
    cands = caption_candidates(caption) + defined_candidates(body)
    counts: dict[str, int] = {}
    titles: dict[str, str] = {}
    for t in texts:
        for run, at_start, title in _runs(t):
            if _is_name(run, at_start):
                counts[run] = counts.get(run, 0) + 1
                if title:
                    titles.setdefault(run, title)
    named = [EntityCandidate(name=n, kind=_kind_of(n), count=k, source="name") for n, k in counts.items()]
    # longer names first, so that "Mr. Tull" finds "Gregory Tull" wherever either stands
    cands += sorted(named, key=lambda c: -len(c.keys()[0]) if c.keys() else 0)
    clusters = _cluster(cands)
    joined = "\n".join(texts)
    entities: list[Entity] = []
    for c in clusters:
        present = [n for n in c.names if _mentioned(n, joined)]
        if not present:
            continue
        if c.source == "name" and (c.count < min_count or (
                all(len(k) == 1 for k in c.keys()) and not any(_TITLES.match(n + " ") for n in c.names))):
            continue  # a lone surname-like word with no full name and no title: a place or a product
        name = c.name if c.name in present else max(present, key=len)
        aliases = [a for a in dict.fromkeys(present) if a != name]
        kind = c.kind if c.kind in ("person", "organization", "group", "document", "location") else _kind_of(name)
        role = c.role
        if role == "other" and kind == "person":
            role = _role_from_context(name, texts)
        elif role == "other" and kind == "organization" and re.search(r"\bhuman\s+resources\b|\bHR\b", name, re.I):
            role = "hr"
        elif role == "other" and re.search(r"\b(?:EEOC|Equal\s+Employment\s+Opportunity\s+Commission)\b", name):
            role = "agency"
        entities.append(Entity(id=f"E{len(entities) + 1}", name=name, kind=kind if kind in
                               ("person", "organization", "group", "document", "location") else "other",
                               role=role, aliases=aliases))
    return entities


def _mentioned(name: str, text: str) -> bool:
    return re.search(name_pattern(name), text, re.I if name.isupper() else 0) is not None


def _mention_spans(name: str, text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(name_pattern(name), text)]


def participants_of(text: str, trigger_at: int, entities: list[Entity]) -> list[Participant]:
    """Entities ``text`` names (by name or alias), in order of mention: agent before the trigger
    (position ``trigger_at``), patient after it; one role per entity."""
    found: list[tuple[int, Entity]] = []
    taken: list[tuple[int, int]] = []
    # longer names first, so that "Ms. Menon-Dorsey" is not also read as another entity's "Menon"
    forms = sorted(((n, e) for e in entities for n in (e.name, *e.aliases)), key=lambda ne: -len(ne[0]))
    for name, ent in forms:
        for a, b in _mention_spans(name, text):
            if any(a < y and x < b for x, y in taken):
                continue
            taken.append((a, b))
            found.append((a, ent))
    found.sort(key=lambda x: x[0])
    out: list[Participant] = []
    seen: set[str] = set()
    agent_given = False
    for at, ent in found:
        if ent.id in seen:
            continue
        seen.add(ent.id)
        if at < trigger_at and not agent_given:
            role, agent_given = "agent", True
        elif at < trigger_at:
            role = "theme"
        else:
            role = "patient" if not any(p.role == "patient" for p in out) else "theme"
        out.append(Participant(entity=ent.id, role=role))
    return out


__all__ = ["EntityCandidate", "caption_candidates", "defined_candidates", "document_entities", "known_parties", "name_key",
           "participants_of"]
