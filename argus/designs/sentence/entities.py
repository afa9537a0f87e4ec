"""The document's entity list, read without a language model: the caption's parties, the parties
paragraphs, the terms the complaint defines, the proper names its fact sentences use, and the unnamed
people, groups and documents they refer to again and again.

Every extraction design sees this list. The sentence-level design lets its programs choose
participants only among these entities. The chunked design's Stage 1 is offered the list as a
seed, and its own entities merge with it. The floor takes the caption's parties alone.

Sources, in order of trust:

``caption``  the parties of ``argus.text.caption.read_caption``, with the body's spelling of each name and
             the short names the body defines for it ("Ms. Ashworth", "the Company");
``party``    the names a parties paragraph introduces after "Plaintiff" / "Defendant" ("Defendant David
             L. Starling ("Starling"), at all relevant times, served as ..."), with that legal role: the
             sentences of the PARTIES section, or, in a text without one (an excerpt, a text with no
             headings), the body sentences that open with "Plaintiff X" / "Defendant X" (``party_sentences``);
``defined``  a name followed by a parenthesis of quoted terms anywhere in the body:
             ``Priya Menon-Dorsey ("Ms. Menon-Dorsey")``, ``Performance Improvement Plan ("PIP")``;
``name``     a run of capitalized words in a fact sentence that is not a common word, a month, a
             weekday or the start of the sentence (``Gregory Tull``, ``Mr. Tull``, ``Bensalem Center``);
``np``       a noun phrase of a fact sentence whose head is a person, group, document, place or
             organization noun of ordinary English (``her son``, ``two other cooks``, ``the termination
             letter``): the entities a complaint refers to without a name.

Names are clustered when the words of one (titles, company suffixes and role words such as
"Defendant" aside) are among the words of another: "Mr. Tull" joins "Gregory Tull", "the letter"
joins "the termination letter". A cluster is named by its longest member and keeps the others as
aliases. Kind and legal role come from the name's form and the words around its mentions ("her
supervisor, Gregory Tull", "Defendant Starling"); programs may revise them.

Which clusters are entities is decided by general rules (``keeps`` with ``RULE_DEFAULTS``: a job title
such as "Director of People Operations", a rating label such as "Exceeds Expectations", a statute such
as "Title VII" or a county is no party; an unnamed person, group or document is one when at least two
fact sentences name it) or, where the heads file carries the ``entities`` part, by the same rules
with the settings chosen on the annotated complaints it was trained on (``argus.training.entities``):
how many fact sentences an unnamed entity needs, which name forms are no party, a stop list of head
words the gold never took, head nouns of the gold's unnamed entities. (A logistic filter over some
forty features of the clusters, its C and threshold chosen inside the fold, did worse cross-validated
by complaint: mean relaxed entity F1 0.73 against 0.77 for the chosen settings.)

The parties the parties sentences introduce reach the graph even where no fact sentence names them
(``with_parties``: the sentence design adds a mini-graph of them, grounded in those sentences).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Iterable

from argus.text.caption import Caption
from argus.designs.sentence.time import MONTHS
from argus.errors import ConfigError
from argus.graph.schema import Entity, Participant
from argus.text.words import name_pattern, readings, verb_form

if TYPE_CHECKING:
    from argus.text.documents import Document
    from argus.graph.schema import Chunk, MiniGraph

_TITLE = r"(?:Mr|Ms|Mrs|Miss|Dr|Mx|Prof|Sgt|Officer|Judge)\.?"
_WORD = r"[A-Z][\w'’\-]*[\w]|[A-Z]"
_RUN = re.compile(
    rf"(?:\b{_TITLE}\s+)?\b(?:{_WORD})(?:\.(?=\s+[A-Z]))?(?:\s+(?:[A-Z]\.|(?:{_WORD})|of|and|&|for|the|de|van|von|la)(?=\W|$)){{0,5}}"
)
#: a word of the name at most 61 characters: unbounded, a long run without spaces (a PDF whose font has no space
#: glyph) cost quadratic time, every capital scanning to the run's end (17,000 characters: 10 s)
_DEFINITION = re.compile(r"(?P<name>(?:\b{t}\s+)?[A-Z][\w'’\-.&,]{{0,60}}(?:\s+(?:[A-Z][\w'’\-.&,]{{0,60}}|of|and|&|for|the)){{0,7}})"
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
#: words of a position's name beside the holder's noun: "Vice President", "Chief Operating Officer",
#: "Teller I", "Material Handler", "Associate Dentist", "Doctor of Dental Medicine"
_POSITION_WORDS = frozenset("""
vice chief senior junior deputy assistant associate acting interim regional district general head lead
staff principal managing executive
handler dentist doctor physician surgeon nurse therapist pharmacist engineer designer developer architect
programmer accountant auditor teacher professor instructor trainer mechanic electrician welder machinist
laborer worker employee member trainee intern apprentice candidate fellow resident hygienist aide
""".split()) | JOB_TITLES
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
#: the last word of a place named as an address or a jurisdiction, not as a party ("Boone County",
#: "Mill Street", "Commonwealth of Pennsylvania", "United States")
_ADMIN_PLACE = re.compile(r"(?:\b(?:county|parish|township|province|state|states|commonwealth|street|avenue|road|"
                          r"boulevard|drive|lane|plaza|highway|route|district)$|^(?:commonwealth|state|city|county)\s+of\b)",
                          re.I)
#: a statute, a rule or a provision: "Title VII", "Section 1981", "Rule 12(b)", "42 U.S.C. § 2000e"
_STATUTE = re.compile(r"^(?:title|section|article|rule|chapter|part|subpart|paragraph|amendment)\s+(?:[ivxlc]+|\d+)\b|"
                      r"\b(?:act|code|law|statute|regulations?|amendment|u\.?s\.?c\.?|c\.?f\.?r\.?)$|§", re.I)

# ----------------------------------------------------------------------------- nouns of unnamed entities
#: ordinary English nouns (singular) whose noun phrase names a person ("her son", "a travel nurse")
PERSON_NOUNS = frozenset("""
son daughter child mother father parent wife husband spouse sister brother grandmother grandfather grandparent
aunt uncle niece nephew cousin boyfriend girlfriend fiance fiancee baby newborn infant stepson stepdaughter
stepfather stepmother mom dad relative friend neighbor neighbour roommate
doctor physician nurse psychiatrist psychologist therapist counselor counsellor oncologist pediatrician
obstetrician gynecologist surgeon dentist chiropractor cardiologist neurologist specialist pharmacist
clinician practitioner paramedic midwife caregiver aide social-worker
attorney lawyer counsel paralegal detective officer policeman investigator auditor inspector examiner judge
mediator arbitrator guard
supervisor manager boss superior coworker co-worker colleague employee worker staffer subordinate
customer client patient resident student teacher pastor priest minister rabbi imam chaplain
driver mechanic clerk teller cook chef server waiter waitress bartender host hostess dispatcher operator
technician engineer assistant director owner contractor subcontractor consultant vendor recruiter
interviewer candidate applicant replacement trainee intern apprentice foreman analyst associate
representative agent administrator secretary receptionist cashier janitor custodian housekeeper
dishwasher porter laborer machinist welder electrician plumber carpenter painter installer loader
picker packer stocker handler courier messenger salesperson salesman saleswoman accountant bookkeeper
programmer developer designer architect scientist researcher professor instructor trainer coach
president vice-president executive chairman chairwoman chairperson founder partner shareholder
member leader lead superintendent coordinator generalist hygienist therapist pilot attendant
person man woman individual gentleman lady someone
""".split())
#: collective nouns: their noun phrase names a group ("the front-desk staff", "the union")
GROUP_NOUNS = frozenset("""
staff crew team committee union police family management board panel workforce personnel department
household faculty class group department
""".split())
#: nouns whose noun phrase names a document or a message ("the termination letter", "the email")
DOCUMENT_NOUNS = frozenset("""
letter email e-mail memo memorandum note message text voicemail report review evaluation appraisal warning
write-up writeup notice policy handbook manual plan certification certificate release form application
request complaint grievance charge chart schedule log record listing posting contract agreement offer
statement summary transcript photograph photo picture video recording screenshot prescription invoice
paycheck paystub timesheet timecard petition affidavit declaration questionnaire survey checklist
diagnosis order citation reprimand assessment proposal resume résumé description file document
text-message
""".split())
#: nouns whose noun phrase names a place ("the Greensburg branch", "the walk-in cooler")
PLACE_NOUNS = frozenset("""
office branch store plant warehouse facility site center centre clinic restaurant kitchen building campus
depot yard terminal station room floor pod cell unit ward lab laboratory shop garage dock cooler freezer
locker bathroom restroom parking lot lobby cafeteria breakroom hallway desk workstation zone area line
location headquarters school hospital home house apartment
""".split())
#: nouns whose noun phrase names an organization ("the staffing agency", "a competing firm")
ORG_NOUNS = frozenset("""
company firm agency employer business practice carrier insurer contractor corporation organization
organisation bank university college hospital clinic church subsidiary affiliate vendor union
""".split())
_NP_CATEGORIES = ("person", "group", "document", "location", "organization")
_NUMBERS = frozenset("two three four five six seven eight nine ten eleven twelve several multiple many both".split())
_DETERMINERS = frozenset("the a an her his their its my our your this that these those another".split()) | _NUMBERS
_NP_TOKEN = re.compile(r"[A-Za-z0-9][\w'’\-]*|[^\w\s]")


@lru_cache(maxsize=20000)
def _common(word: str) -> bool:
    """Whether ``word`` (lowercased) is an ordinary English word rather than a proper name."""
    w = word.lower().strip("'’.")
    return w in STOP or bool(readings(w))


@lru_cache(maxsize=20000)
def _noun_lemma(word: str) -> str:
    """The singular of a noun ("cooks" → "cook"), or the word lowercased."""
    w = word.lower().strip("'’")
    lemmas = readings(w).get("NOUN")
    return lemmas[0] if lemmas else w


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
    #: every source of the cluster's members (``source`` is the most trusted one)
    sources: set[str] = field(default_factory=set)
    #: for a noun phrase: the category of its head noun and how its mentions open
    category: str = ""
    determiners: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.sources = set(self.sources) | {self.source}

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
                tail = _title_tail(words)
                if tail:
                    # "Dana Pryce Vice President of Operations", "Ms. Roe Exceeds Expectations": a name, then a
                    # position or a label
                    yield " ".join(words[tail:]), False, ""
                    words = words[:tail]
                yield " ".join(words), start and k == 0 and j == 0 and not title and \
                    words[0] == piece.split()[0], " ".join(title)


def _title_tail(words: list[str]) -> int:
    """Where a position or a label that follows a name in one run of capitalized words begins (0: none)."""
    for i in range(1, len(words)):
        tail = words[i:]
        if tail[0].lower() in ("of", "and", "for", "the") or _TITLES.match(words[i - 1] + " "):
            continue
        if all(_common(w) for w in tail if w[:1].isupper()) and not all(_common(w) for w in words[:i]):
            flags = form_flags(" ".join(tail))
            return i if flags["job_title"] or flags["rating"] else 0
    return 0


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


_DEFENDANT_BEFORE = re.compile(r"\b(?:individual\s+)?defendants?\s*,?\s*$", re.I)
_PLAINTIFF_BEFORE = re.compile(r"\bplaintiffs?\s*,?\s*$", re.I)


def _role_from_context(name: str, texts: list[str]) -> str:
    """The legal role the words around the name give it: "Defendant Starling" (defendant), "Plaintiff
    Jane Roe" (plaintiff), else the cue nearest in front of it in its sentences ("her supervisor,
    Gregory Tull")."""
    for t in texts:
        for m in re.finditer(name_pattern(name), t):
            before = t[max(0, m.start() - 25): m.start()]
            if _DEFENDANT_BEFORE.search(before):
                return "defendant"
            if _PLAINTIFF_BEFORE.search(before):
                return "plaintiff"
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


def defined_positions(text: str) -> set[str]:
    """The short names the body gives positions and statutes (``Motor Equipment Operator II ("MEO II")``,
    ``Title VII ("Title VII")``), lowercased: no entity goes by them."""
    out = set()
    for m in _DEFINITION.finditer(text):
        name = _clean_run(re.split(r"[’']s\s+", m.group("name").strip(" ,"))[-1])
        if name and name[:1].isupper() and any(v for k, v in form_flags(name).items() if k in ("job_title", "statute")):
            out.add(" ".join(m.group("alias").split()).strip(" ,.").lower())
    return out


def defined_candidates(text: str) -> list[EntityCandidate]:
    """Names the body defines: ``Name ("Short")``. A quoted term that does not abbreviate the name in
    front of it defines a thing of its own (``… with a copy to Abernathy (the "June 23 Report")``); a
    position or a statute given a short name defines none (``defined_positions``)."""
    out = []
    for m in _DEFINITION.finditer(text):
        # "KCS’s President and Chief Executive Officer (“CEO”)": the term is what follows the possessive
        name = _clean_run(re.split(r"[’']s\s+", m.group("name").strip(" ,"))[-1])
        alias = " ".join(m.group("alias").split()).strip(" ,.")
        if not alias or not any(c.isupper() for c in alias):
            continue
        if name and name[:1].isupper() and any(v for k, v in form_flags(name).items() if k in ("job_title", "statute")):
            continue  # a position or a statute given a short name ("Motor Equipment Operator II ("MEO II")")
        if name and name.casefold() != alias.casefold() and not all(w.strip(".,").lower() in STOP for w in name.split()) \
                and _short_form(alias, name):
            out.append(EntityCandidate(name=name, aliases=[alias], kind=_kind_of(name), source="defined"))
        elif _is_name(alias, False) or len(alias.split()) >= 2:
            out.append(EntityCandidate(name=alias, kind=_kind_of(alias), source="defined"))
    return out


# ----------------------------------------------------------------------------- parties paragraphs

def _spaced(word: str) -> str:
    """A regex for ``word`` that OCR may have split once or twice ("Defenda nt", "Indiv idual")."""
    return r"\s?".join(word)


_PARTY_WORD = (rf"(?:(?:the\s+)?(?:{_spaced('individual')}|nominal|corporate|named)\s+)?"
               rf"(?P<side>{_spaced('plaintiff')}(?:\s?s)?|{_spaced('defendant')}(?:\s?s)?)")
#: where a party is introduced in a text with no parties section: "Defendant X" / "Plaintiff X" opening the
#: sentence, or opening a numbered paragraph that page furniture ran into the sentence ("... Page 4 of 19
#: 11. Individual Defendant Jeffrey T. Hinson")
_PARTY_OPENER = re.compile(rf"(?:^\s*(?:\(?[0-9a-z]{{1,3}}[.)]\s*)?|\b\d{{1,3}}\.\s*){_PARTY_WORD}\s*,?\s+(?=[A-Z])", re.I)
_PARTY_MENTION = re.compile(rf"(?<![a-z]){_PARTY_WORD}\s*,?\s+(?=[A-Z])", re.I)
#: where a list of parties after "Defendants" ends
_LIST_END = re.compile(r"\s(?:are|were|is|was|have|had|has|served|serve|collectively|together|each|both|hereinafter|"
                       r"referred|who|all|as)\b|[;:]|\.(?:\s|$)(?<![A-Z]\.\s)")
#: two-letter words that are words, not pieces OCR split off a name ("Bloom Energy is")
_SHORT_WORDS = frozenset("is be he we me us do go so no or up if it my am co".split())
_PARTICLES = frozenset("de del della der den van von la le da di du dos das bin al st".split())
_ORG_CUES = re.compile(r"\b(?:corporation|incorporated|company|headquartered|headquarters|principal\s+(?:executive\s+)?"
                       r"(?:offices?|place)|organized\s+under|llc|l\.l\.c|inc|corp|ltd|l\.p|trust|fund|bank|"
                       r"partnership|entity|business|subsidiary|employer|firm|agency|county|city|municipality|"
                       r"district|authority|association|hospital|university)\b", re.I)
_PERSON_CUES = re.compile(r"\b(?:served|serves|chief|officer|ceo|cfo|coo|president|director|chairman|chairwoman|"
                          r"chair|founder|co-?founder|he|she|his|her|mr|ms|mrs|dr|resident|individual|"
                          r"employee|manager|supervisor|owner|adult|citizen|trustee|secretary|treasurer)\b", re.I)


def _repair_name(name: str) -> str:
    """A name as OCR printed it, repaired: quoted nicknames dropped ("Jesse K. “Jay” Bray"), a piece
    that is no word glued to the capitalized word it was split from ("Al bert Tylis", "Ottensmeye r"),
    initials closed up ("Timothy A . Dick"), run-together words opened ("RobertM.Lynch")."""
    name = re.sub(r"[“\"‘'][^“”\"’']{1,20}[”\"’']", " ", name)
    name = re.sub(r"([a-z])([A-Z])\.(?=[A-Z])", r"\1 \2. ", name)  # RobertM.Lynch
    name = re.sub(r"\b([A-Z])\s+\.", r"\1.", name)
    words: list[str] = []
    for w in name.split():
        low = w.lower().strip(".,")
        if words and w[:1].islower() and low not in _PARTICLES and low not in STOP and low not in _SHORT_WORDS \
                and (len(low) <= 2 or not _common(low)) and words[-1][:1].isupper() and not words[-1].endswith("."):
            words[-1] += w
        else:
            words.append(w)
    return " ".join(words).strip(" ,.;:")


_SUFFIX = re.compile(r"^(?:inc|llc|l\.l\.c|corp|co|ltd|lp|l\.p|llp|plc|n\.a|p\.c|pllc|s\.a|ag|n\.v)\.?$", re.I)
_NAME_TOKEN = re.compile(r"\S+")


def _name_at(rest: str) -> str:
    """The name that opens ``rest`` as printed: capitalized words and initials, particles and "of" / "&"
    before a capitalized word, a company suffix after a comma, and the lowercase pieces OCR split off a
    word ("Al bert", "Ottensmeye r"); it ends at a parenthesis, a clause, a lowercase word, a possessive."""
    toks = list(_NAME_TOKEN.finditer(rest))
    end = 0
    n = 0
    for i, m in enumerate(toks):
        tok = m.group(0)
        nxt = toks[i + 1].group(0) if i + 1 < len(toks) else ""
        if "(" in tok[1:] and tok[:1] not in "(“\"‘[":  # "Terrell("Terrell")", text printed without spaces
            tok, nxt = tok[:tok.index("(")], "("
        core = tok.rstrip(",;:")
        if len(re.sub(r"\W", "", core)) > 20:
            break  # no name's word: words run together ("Terrellarecollectivelyreferredto")
        if tok[:1] in "(“\"‘[" or tok[:1].isdigit():
            if re.fullmatch(r"[“\"][A-Z][\w.]*[”\"]", tok) and nxt[:1].isupper():
                end = m.end()  # a quoted nickname inside the name: "Jesse K. “Jay” Bray"
                continue
            break
        poss = re.search(r"[’']s$", core)
        if core[:1].isupper():
            end = m.start() + (poss.start() if poss else len(core))
            n += 1
            if poss or core != tok:
                if not poss and tok.endswith(",") and _SUFFIX.match(nxt.rstrip(",;:")):
                    continue  # "Quarry Table Kitchen, LLC"
                break
            continue
        low = core.lower()
        if n and nxt[:1].isupper() and (low in _PARTICLES or low in ("of", "&")) and core == tok:
            continue
        if n and core == tok and low not in STOP and low not in _PARTICLES and low not in _SHORT_WORDS \
                and (len(low) <= 2 or not _common(low)) and not toks[i - 1].group(0).endswith(".") \
                and not nxt.startswith("-"):
            end = m.end()  # a piece split off the word before it
            continue
        break
    return rest[:end].strip(" ,;:") if n else ""


def _names_after(text: str, at: int, plural: bool) -> list[tuple[str, str]]:
    """(name as repaired, name as printed) of the party names that begin at ``text[at:]``: one, or for
    "Defendants Starling, Ebbrecht and Upchurch" / "Defendants Glenn Alba ("Alba"), Alan J. Bowers
    ("Bowers") and ..." each of the list (a company suffix stays with its name: "Quarry Table
    Kitchen, LLC")."""
    rest = text[at:at + 400]
    if plural:
        blank = re.sub(r"\([^)]{0,60}\)", lambda q: " " * len(q.group(0)), rest)  # definitions inside the list
        m = _LIST_END.search(blank)
        seg_end = m.start() if m else min(len(rest), 200)
        starts = [0] + [q.end() for q in re.finditer(r",\s*(?:and\s+|an\s?d\s+)?|\s+(?:and|an\s?d)\s+", blank[:seg_end])
                        if not _SUFFIX.match(blank[q.end():q.end() + 6].split(" ")[0].rstrip(",;:"))]
        raws = [_name_at(rest[a:seg_end]) for a in starts]
    else:
        raws = [_name_at(rest)]
    out = []
    for raw in raws:
        if raw.lower().startswith("the "):
            raw = raw[4:]
        words = raw.split()
        if not words or len(words) > 8 or _SUFFIX.match(raw):
            continue
        fixed = _repair_name(raw)
        if fixed and fixed[0].isupper() and any(c.isalpha() for c in fixed) and name_key(fixed):
            out.append((fixed, raw))
    return out


def party_sentences(doc: "Document") -> list[tuple[str, str]]:
    """(id, text) of the sentences that introduce the parties: the PARTIES section's, or, where the
    document has none, the body sentences that open with "Plaintiff X" / "Defendant X"."""
    parties = [(s.id, s.text) for s in doc.sentences if s.section == "parties"]
    if parties:
        return parties
    return [(s.id, s.text) for s in doc.sentences if s.section != "caption" and _PARTY_OPENER.search(s.text)]


_IS_ORG = re.compile(r"^\s*(?:\([^)]*\)\s*)?,?\s*(?:[^.;]{0,60}?\b(?:is|was)\s+(?:and\s+was\s+)?)?(?:a|an)\s+"
                     r"(?:(?!of\b|with\b|at\b|for\b|in\b|to\b)[\w\-]+\s+){0,5}?(?:corporation|company|entity|partnership|"
                     r"trust|fund|bank|firm|agency|municipality|subsidiary|business|association|organization|authority|"
                     r"hospital|university|llc|limited\s+liability|provider|manufacturer|operator|owner|developer|"
                     r"producer|retailer|insurer)\b", re.I)


#: a name of a person's form: given name, initials, surname ("Don L. Gross", "Christopher J.L. Fielding")
_PERSON_FORM = re.compile(r"[A-Z][a-z][\w'’\-]*\s+(?:[A-Z]\.\s*){1,3}(?:[A-Z][\w'’\-]+\s*){1,2}(?:,?\s*(?:Jr|Sr|II|III|IV)\.?)?")


def _party_kind(name: str, after: str) -> str:
    """Person or organization, for a name a parties paragraph introduces: a company word in the name
    or "is a Delaware corporation" after it says organization; a name of person form (a full name,
    a title) says person; a lone word is an organization unless the sentence speaks of an officer."""
    if _ORG_WORDS.search(name) or _SUFFIX.match(name.split()[-1]):
        return "organization"
    if _TITLES.match(name + " ") or _PERSON_FORM.fullmatch(name):
        return "person"
    if _IS_ORG.match(after):
        return "organization"
    words = name.split()
    if len(words) == 1:
        window = after[:100]
        return "person" if len(_PERSON_CUES.findall(window)) > len(_ORG_CUES.findall(window)) and not name.isupper() \
            else "organization"
    if _kind_of(name) == "person":
        return "person"
    window = after[:100]
    return "organization" if len(_ORG_CUES.findall(window)) > len(_PERSON_CUES.findall(window)) else "person"


def party_candidates(parties: list[tuple[str, str]]) -> list[EntityCandidate]:
    """The names a parties paragraph introduces after "Plaintiff" / "Defendant", with that role and a
    kind from the words of the sentence (a corporation, or someone who served as an officer)."""
    out: list[EntityCandidate] = []
    for _, text in parties:
        for m in _PARTY_MENTION.finditer(text):
            side = re.sub(r"\s", "", m.group("side").lower())
            plural = side.endswith("s")
            for fixed, raw in _names_after(text, m.end(), plural):
                words = fixed.split()
                if words[0].lower() in STOP or words[0].lower() in ROLE_WORDS or (
                        len(words) == 1 and _ORG_WORDS.fullmatch(words[0])):
                    continue  # "Defendant Company", "Plaintiffs Both"
                at = text.find(raw, m.end())
                after = text[at + len(raw): at + len(raw) + 140] if at >= 0 else ""
                defined = re.match(r"\s*\(\s*(?:the\s+|an?\s+)?[“\"]([^”\"]{1,40})[”\"]", after)
                aliases = [raw] if raw != fixed else []
                if defined:
                    alias = " ".join(defined.group(1).split()).strip(" ,.")
                    if alias and alias.casefold() != fixed.casefold() and alias.lower() not in ROLE_WORDS:
                        aliases.append(alias)
                # in a list ("Defendants Starling, Ebbrecht and Upchurch") a lone word is a surname
                kind = "person" if plural and len(words) == 1 and not fixed.isupper() and not _IS_ORG.match(after) \
                    and not _ORG_WORDS.search(fixed) else _party_kind(fixed, after)
                if side.startswith("plaintiff"):
                    role = "plaintiff"
                elif kind == "organization" and re.search(r"\bemploy", text, re.I):
                    role = "employer"
                else:
                    role = "defendant"
                out.append(EntityCandidate(name=fixed, aliases=aliases, kind=kind, role=role, source="party", count=1))
    return out


# ----------------------------------------------------------------------------- unnamed entities


def np_category(head: str, learned: dict[str, str] | None = None) -> str:
    """The category of a head noun ("letters" → document, "cooks" → group, "son" → person), '' for
    none: ordinary English lexicons, and the heads a trained part learned."""
    lemma = _noun_lemma(head)
    low = head.lower()
    plural = low != lemma and not low.endswith("ss")
    if lemma in PERSON_NOUNS or (learned or {}).get(lemma) == "person":
        return "group" if plural else "person"
    for cat, words in (("group", GROUP_NOUNS), ("document", DOCUMENT_NOUNS), ("location", PLACE_NOUNS),
                       ("organization", ORG_NOUNS)):
        if lemma in words:
            return cat
    return (learned or {}).get(lemma, "")


def noun_phrases(text: str, learned: dict[str, str] | None = None) -> list[tuple[str, str, str, str]]:
    """(name, head lemma, category, determiner) of each noun phrase of ``text`` that opens with a
    determiner or a possessive and whose head is a category noun (``np_category``): "the termination
    letter" → ("termination letter", "letter", "document", "the"). The name keeps the modifiers in
    front of the head and drops the determiner, numbers and "other"."""
    toks = [(m.group(0), m.start()) for m in _NP_TOKEN.finditer(text)]
    out = []
    for i, (tok, _) in enumerate(toks):
        low = tok.lower()
        possessive = bool(re.search(r"[’']s$", tok)) and tok[:1].isupper()
        if low not in _DETERMINERS and not possessive:
            continue
        run: list[tuple[str, int]] = []
        for tok2, at in toks[i + 1: i + 7]:
            l2 = tok2.lower()
            if not re.match(r"[A-Za-z0-9]", tok2) or re.search(r"[’']s$", tok2):
                break
            if l2 in _NUMBERS or l2 in ("other", "same", "new"):
                run.append((tok2, at))
                continue
            if l2 in STOP or l2 in ROLE_WORDS:
                break
            if tok2[:1].isupper() or tok2[0].isdigit() or "-" in tok2:
                run.append((tok2, at))
                continue
            r = readings(l2)
            if "NOUN" in r or "ADJ" in r or verb_form(l2) in ("VBN", "VBD"):
                run.append((tok2, at))
                continue
            break
        heads = [k for k, (w, _) in enumerate(run) if w[:1].islower() and np_category(w, learned)]
        if not heads:
            continue
        h = heads[-1]
        words = [w for w, _ in run[:h + 1]]
        while words and (words[0].lower() in _NUMBERS or words[0].lower() in ("other", "same")):
            words = words[1:]
        if not words:
            continue
        head = words[-1]
        out.append((" ".join(words), _noun_lemma(head), np_category(head, learned), "possessive" if possessive else low))
    return out


def np_candidates(texts: list[str], learned: dict[str, str] | None = None) -> list[EntityCandidate]:
    """One candidate per distinct noun phrase name of the fact sentences (``noun_phrases``), with its
    mention count and determiners; "the letter" and "the termination letter" cluster later."""
    found: dict[str, EntityCandidate] = {}
    for t in texts:
        for name, _, cat, det in noun_phrases(t, learned):
            c = found.get(name.lower())
            if c is None:
                c = found[name.lower()] = EntityCandidate(name=name, kind=cat if cat != "group" else "group",
                                                          source="np", category=cat)
            c.count += 1
            c.determiners.append(det)
    return list(found.values())


# ----------------------------------------------------------------------------- clustering


def _joins(keys: list[frozenset[str]], home: EntityCandidate) -> bool:
    """Whether a candidate with name words ``keys`` (its name first) is the entity ``home``: a
    one-word name ("Tull", "Ms. Ashworth") joins an entity any of whose names holds it; a longer
    name joins one whose name or aliases it contains or is contained in, unless both are full
    names that differ ("Carol Marchetti" is not "Jessica L. Marchetti")."""
    hkeys = home.keys()
    if not keys or not hkeys:  # a name of stop words only ("Plaintiff") holds no name word to join on
        return False
    own = keys[0]
    if len(own) == 1:
        return any(own <= hk for hk in hkeys)
    full = hkeys[0]
    if len(full) >= 2 and not (own <= full or full <= own):
        return False
    return any(k <= hk or hk <= k for k in keys for hk in hkeys)


def _cluster(cands: list[EntityCandidate]) -> list[EntityCandidate]:
    """Merge candidates that name one entity (``_joins``; the first, most trusted, entity wins). A
    noun phrase joins only an entity whose names hold its head noun ("the bank" joins "Ridgefield
    Bank"; "her supervisor" does not join "Gregory Tull")."""
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
        home.sources |= c.sources
        home.determiners += c.determiners
        home.category = home.category or c.category
        for n in c.names:
            if n.casefold() in {x.casefold() for x in home.names}:
                continue
            if home.source in ("name", "np") and c.source == home.source and len(name_key(n)) > len(name_key(home.name)):
                home.aliases.append(home.name)
                home.name = n
            else:
                home.aliases.append(n)
        if home.kind == "other":
            home.kind = c.kind
        if home.role in ("other", "defendant") and c.role in ("plaintiff", "defendant", "employer") and home.source != "caption":
            home.role = c.role
    return out


def known_parties(caption: Caption | None) -> str:
    """The caption's parties as Stage 1 of the chunked design sees them: one per line, ``name (role);
    also: short names`` (empty without a caption)."""
    lines = []
    for c in caption_candidates(caption):
        also = f"; also: {', '.join(c.aliases)}" if c.aliases else ""
        lines.append(f"{c.name} ({c.role}){also}")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- forms and features

KINDS = ("person", "organization", "group", "document", "location", "other")


_RATING_WORDS = frozenset("below above outstanding unsatisfactory satisfactory excellent poor fair good superior "
                          "exemplary acceptable unacceptable".split())


def form_flags(name: str) -> dict[str, bool]:
    """What the form of a capitalized name says it is besides a party: a position ("Vice President of
    Operations", "Teller I": ordinary words ending in a position noun, before any "of" / "for"), a
    label ("Exceeds Expectations", "Needs Improvement": ordinary words opening with a verb or a
    grade), a statute ("Title VII"), a place named as an address or a jurisdiction ("Boone County"),
    a run across a connective ("Asian American and of Vietnamese")."""
    words = name.split()
    low = [w.lower().strip(".,") for w in words]
    content = [w for w in low if w not in ("of", "and", "&", "for", "the", "de", "la")]
    caps = [w for w in words if w[:1].isupper()]
    all_common = bool(caps) and all(_common(w) for w in caps)
    grade = len(words) >= 2 and bool(re.fullmatch(r"(?:[IVX]{1,4}|\d{1,2}|[A-Z])s?", words[-1]))
    cut = next((i for i, w in enumerate(low) if i and w in ("of", "for", "at", "in")), len(low))
    core = words[:cut - 1] if grade and cut == len(words) else words[:cut]
    job = bool(core) and all(_common(w) for w in core[:-1]) and _noun_lemma(core[-1]) in _POSITION_WORDS
    opens = bool(content) and (verb_form(content[0]) == "VBZ" or content[0] in _RATING_WORDS)
    return {
        "job_title": job and not _TITLES.match(name + " "),
        "rating": all_common and len(content) <= 3 and opens,
        "statute": bool(_STATUTE.search(name)),
        "admin_place": bool(_ADMIN_PLACE.search(name)) and not _ORG_WORDS.search(name),
        "connector": any(w in ("of", "and", "&", "for") for w in low[1:-1]),
        "all_common": all_common,
        "grade": grade,
    }


def mention_sentences(c: EntityCandidate, texts: list[str]) -> int:
    """How many of ``texts`` (the fact sentences) name the cluster by one of its names."""
    pats = [re.compile(name_pattern(n), re.I if n.isupper() else 0) for n in dict.fromkeys(c.names)]
    return sum(any(p.search(t) for p in pats) for t in texts)


def head_word(name: str) -> str:
    """The word a name's record is kept under: its last word, as a singular noun, lowercased."""
    words = re.findall(r"[\w'’\-]+", name)
    return _noun_lemma(_POSSESSIVE.sub("", words[-1])) if words else ""


def record_key(c: EntityCandidate) -> str:
    """The key of a cluster in a trained part's stop list: ``np:letter`` for an unnamed entity,
    ``name:county`` for a name whose last word is an ordinary word, ``""`` for a name ("Tull")."""
    head = head_word(c.name)
    if c.sources == {"np"}:
        return f"np:{head}"
    last = re.findall(r"[\w'’\-]+", c.name)
    return f"name:{head}" if last and _common(last[-1]) and not last[-1].isupper() else ""


def features(c: EntityCandidate, texts: list[str]) -> dict[str, float]:
    """What the decision reads of a cluster: the fact sentences ``texts`` that name it, and its name's
    form (``form_flags``, for a capitalized name)."""
    f: dict[str, float] = {"n_sentences": float(mention_sentences(c, texts))}
    flags = form_flags(c.name) if c.name[:1].isupper() else {}
    for k in FLAGS:
        f[f"form_{k}"] = float(flags.get(k, False))
    return f


# ----------------------------------------------------------------------------- deciding

FLAGS = ("job_title", "rating", "statute", "admin_place", "connector", "all_common", "grade")
#: the rules' own settings (what a trained part may change): the fact sentences an unnamed entity needs by
#: the category of its head noun, the name forms that are no party, the mentions a name needs, a stop list
RULE_DEFAULTS = {"np_min_sentences": {"person": 2, "group": 2, "document": 2, "location": 99, "organization": 99},
                 "drop_forms": ["job_title", "rating", "statute", "admin_place"], "name_min_count": 1, "stop": []}
#: the format of a trained ``entities`` part (the heads file's, ``argus.training.entities.fit_part``)
FORMAT = "argus-entity-rules/1"


def keeps(c: EntityCandidate, f: dict[str, float], settings: dict | None = None) -> bool:
    """Whether a cluster is an entity, by the rules with ``settings`` (``RULE_DEFAULTS`` where None; a
    trained ``entities`` part otherwise): the caption's, the parties paragraphs' and the defined names
    are; a head word on the stop list is not; an unnamed person, group or document is when enough fact
    sentences name it; a proper name is unless its form says position, label, statute or address
    (``form_flags``), it is named too rarely, or it is a lone word with no title."""
    settings = settings or RULE_DEFAULTS
    if c.sources & {"caption", "party", "defined"}:
        return True
    if settings.get("stop") and record_key(c) in set(settings["stop"]):
        return False
    if c.sources == {"np"}:
        return f["n_sentences"] >= settings["np_min_sentences"].get(c.category, 99)
    if c.count < settings.get("name_min_count", 1):
        return False
    if all(len(k) == 1 for k in c.keys()) and not any(_TITLES.match(n + " ") for n in c.names):
        return False  # a lone surname-like word with no full name and no title: a place or a product
    return not any(f[f"form_{k}"] for k in settings.get("drop_forms", ()))


def candidate_clusters(caption: Caption | None, body: str, texts: list[str], parties: list[tuple[str, str]] | None = None,
                       learned: dict[str, str] | None = None) -> list[EntityCandidate]:
    """Every candidate of the document clustered (caption, parties, defined terms, proper names of the
    fact sentences ``texts``, their noun phrases), most trusted first."""
    cands = caption_candidates(caption) + party_candidates(parties or []) + defined_candidates(body)
    counts: dict[str, int] = {}
    positions = defined_positions(body)
    for t in texts:
        for run, at_start, _ in _runs(t):
            if _is_name(run, at_start) and run.lower() not in positions and run.lower().rstrip("s") not in positions:
                counts[run] = counts.get(run, 0) + 1
    named = [EntityCandidate(name=n, kind=_kind_of(n), count=k, source="name") for n, k in counts.items()]
    # longer names first, so that "Mr. Tull" finds "Gregory Tull" wherever either stands
    cands += sorted(named, key=lambda c: -len(c.keys()[0]) if c.keys() else 0)
    cands += sorted(np_candidates(texts, learned), key=lambda c: -len(c.keys()[0]) if c.keys() else 0)
    return _cluster(cands)


def document_entities(caption: Caption | None, body: str, sentences: list[tuple[str, str]],
                      min_count: int = 1, model: dict | None = None,
                      parties: list[tuple[str, str]] | None = None) -> list[Entity]:
    """The entity list (ids E1..En) for a document: the caption's parties, the parties paragraphs'
    names, the body's defined terms and the proper names and noun phrases of ``sentences`` ((id,
    text) of the fact sentences), clustered; which clusters are entities the rules decide
    (``keeps`` with ``RULE_DEFAULTS``), or with the settings of ``model`` where given (the heads file's
    ``entities`` part, ``argus.training.entities.fit_part``).

    Entities with a name or alias in ``sentences`` are kept (grounding would drop the rest), and the
    parties that ``parties`` ((id, text) of the parties sentences, ``party_sentences``) introduce
    even where no fact sentence names them.
    ``min_count``: mentions a ``name`` candidate needs to be kept (rules alone).
    """
    texts = [t for _, t in sentences]
    party_texts = [t for _, t in parties or []]
    if model is not None and model.get("format") != FORMAT:
        raise ConfigError(f"the heads file's entities part is not a {FORMAT!r} part; retrain the heads")
    settings = model if model is not None else {**RULE_DEFAULTS, "name_min_count": min_count}
    learned = (model or {}).get("heads")
    clusters = candidate_clusters(caption, body, texts, parties, learned)
    joined = "\n".join(texts)
    party_joined = "\n".join(party_texts)
    entities: list[Entity] = []
    for c in clusters:
        present = [n for n in c.names if _mentioned(n, joined)]
        party_only = False
        if not present and c.role in ("plaintiff", "defendant", "employer"):
            # a party the fact sentences never name: its names where the parties are introduced
            present = [n for n in c.names if name_key(n) and _mentioned(n, party_joined)]
            if present and "party" in c.sources and c.name not in present:
                present.insert(0, c.name)  # a name repaired from its OCR print, grounded by its print
            party_only = bool(present)
        if not present:
            continue
        if not party_only and not keeps(c, features(c, texts), settings):
            continue
        name = c.name if c.name in present else max(present, key=len)
        # an OCR print of the repaired name ("Patrick J. Ottensmeye r") is no alias: grounding finds the name in it
        aliases = [a for a in dict.fromkeys(present) if a != name and _repair_name(a) != name]
        kind = c.kind if c.kind in ("person", "organization", "group", "document", "location") else _kind_of(name)
        role = c.role
        if role == "other" and kind == "person":
            role = _role_from_context(name, texts + party_texts)
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


# ----------------------------------------------------------------------------- parties in the graph


def _introduced(e: Entity, parties: list[tuple[str, str]], found: list[EntityCandidate]) -> tuple[list[str], list[str]]:
    """(names, sentence ids) of a party-role entity where the parties sentences introduce it: its own names
    there and those of the parties paragraph's candidate that is it ("Robert Thomas" for "Thomas"), the
    fullest first, no bare role word; an OCR print stands for its repaired name ("Al bert Tylis")."""
    joined = "\n".join(t for _, t in parties)
    home = EntityCandidate(name=e.name, aliases=list(e.aliases))
    forms = [n for n in (e.name, *e.aliases) if name_key(n)]
    names = [n for n in forms if _mentioned(n, joined)]
    for c in found:
        if not _joins(c.keys(), home):
            continue
        there = [n for n in c.names if name_key(n) and _mentioned(n, joined)]
        if there and c.name not in there:
            there.insert(0, c.name)
        names += [n for n in there if n not in names]
        forms += c.names
    if not names:
        return [], []
    names.sort(key=lambda n: (-len(n.split()), -len(n)))
    name = names[0]
    names = [name] + [n for n in dict.fromkeys(names[1:]) if n != name and _repair_name(n) != name]
    return names, [sid for sid, t in parties if any(_mentioned(n, t) for n in forms)]


def with_parties(doc: "Document", entities: list[Entity], chunks: list["Chunk"], minigraphs: list["MiniGraph"]
                 ) -> tuple[list["Chunk"], list["MiniGraph"]]:
    """``chunks`` and ``minigraphs`` with one more of each where the parties sentences (``party_sentences``)
    introduce entities of the list as plaintiff, defendant or employer: a chunk of those sentences
    (theme ``parties``) and a mini-graph of those entities under the names the parties sentences give
    them, no events, grounded in those sentences. A party the fact sentences never name (or a text with
    no fact sentence at all) reaches the graph through it; one they name merges with the batches' entity
    (they share a name) and keeps the full name the parties paragraph gives it ("Robert Thomas" where
    the facts say "Thomas")."""
    from argus.graph.grounding import Aligner, ground_items
    from argus.graph.schema import Chunk, EventGraph, MiniGraph

    parties = party_sentences(doc)
    if not parties:
        return chunks, minigraphs
    found = party_candidates(parties)
    carried, named = [], set()
    for e in entities:
        if e.role not in ("plaintiff", "defendant", "employer"):
            continue
        names, sids = _introduced(e, parties, found)
        if names:
            carried.append(e.model_copy(update={"name": names[0], "aliases": names[1:]}))
            named.update(sids)
    if not carried:
        return chunks, minigraphs
    order = [sid for sid, _ in parties if sid in named]
    chunk = Chunk(id=f"C{len(chunks) + 1}", sentence_ids=order, theme="parties: named where the parties are introduced")
    grounded = ground_items(EventGraph(entities=carried), Aligner.for_document(doc), order, stage="sentence",
                            prefix=f"{chunk.id}:")
    mg = MiniGraph(chunk_id=chunk.id, graph=grounded.graph, spans=grounded.spans, rejected=grounded.rejected,
                   ungrounded=grounded.ungrounded)
    return [*chunks, chunk], [*minigraphs, mg]


__all__ = ["EntityCandidate", "FORMAT", "RULE_DEFAULTS", "candidate_clusters", "caption_candidates", "defined_candidates",
           "document_entities", "features", "form_flags", "keeps", "known_parties", "name_key", "noun_phrases",
           "participants_of", "party_candidates", "party_sentences", "with_parties"]
