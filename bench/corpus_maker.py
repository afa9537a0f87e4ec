"""Distinct complaints from the annotated ones: names, dates and numbers varied, deterministic per (seed, index).

``bench/corpus.py`` and ``bench/soak.py`` run ``argus extract`` over many complaints; the 18 annotated
ones (``us_complaints/train`` then ``dev`` under the shared data root) repeated would be served from
the caches (the encoder's embedding store and its in-memory ``_RECENT`` are keyed by the exact list
of sentences, see ``argus.models.embeddings``), so these scripts vary them instead. Complaint
``index`` is source ``index % 18`` rewritten by a ``random.Random`` seeded with ``"{seed}:{index}"``
(the same text for the same pair on any machine and Python):

- **names**: every given name and surname of the source's people (the person entities of its
  ``gold.json`` whose words are all capitalized, and the plaintiffs and defendants of its caption
  that are not companies) is replaced, wherever it occurs as a word in Title case or UPPER case, by
  a name drawn from ``GIVEN`` / ``SURNAMES`` (one replacement per name and document, the case kept;
  a name broken by an end-of-line hyphen stays as it was);
- **dates**: every date moves by one offset of ``Y`` years and ``d`` days (``Y`` in ±1..4, ``d`` in
  ±1..20): ``March 3, 2019`` and ``03/03/19`` by the whole offset, ``March 3`` by ``d`` days,
  ``March 2019`` and a bare year 1995–2035 by ``Y`` years (not after ``§`` or ``Act of``: statutes
  and acts keep their numbers); a bare month stays. The order of events is kept (but for dates
  within ``d`` days of each other written with and without a day);
- **numbers**: dollar amounts scaled by one factor per document (0.80–1.25, rounded as the original
  was: to the thousand, hundred or cent), ages (``54-year-old``, ``54 years old``, ``age 54``) moved
  by ±1..4 years, counts before a unit (``3 weeks``, ``12 employees``, ``40 hours``, ``15%``)
  moved by a few.

Paragraph numbers, case numbers and citations are not touched. ``make_corpus`` writes the texts as
``c<index>-<source case>.txt`` (their document ids) and ``check_corpus`` proves what the benchmarks
need: every text distinct, and every complaint's sentence list (and FACTS sentence list), as the
pipeline's preprocessing splits it, different from its source's and from every other's.

    python bench/corpus_maker.py --docs 100 --out /tmp/corpus [--seed 0]     # write and check them
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import random
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
if str(PROJECT) not in sys.path:
    sys.path.insert(0, str(PROJECT))

GIVEN = """Aaron Abigail Adrian Alicia Alonzo Amara Andre Angela Anita Arjun Audrey Barbara Beatriz Bennett
Bianca Calvin Camila Carmen Cedric Celeste Colette Cornell Dalia Damon Darnell Delia Desmond Dolores Dominic
Elena Elias Esther Evelyn Felix Fiona Francine Gideon Gloria Graham Harriet Hector Imani Irene Ivan Jasmine
Javier Jolene Julian Keisha Kenji Lamar Leona Lucia Malcolm Marcus Marisol Mateo Maxine Mei Mona Nadia Naomi
Nestor Noelle Odessa Omar Paloma Perry Quentin Rafael Renata Rhonda Rosalind Rupert Sabrina Selma Simone Soren
Tabitha Thaddeus Trina Ulysses Valerie Vernon Wanda Warren Winifred Xavier Yolanda Yusuf Zelda Zora""".split()

SURNAMES = """Abernathy Achebe Alcott Amundsen Arceneaux Ashby Babcock Balogun Barrowman Beaumont Belcourt Birch
Blackwood Bolanos Brightwater Broussard Calloway Carrow Castellano Chadwick Colquitt Cordero Crandall Dalrymple
Delacroix Demarco Dunleavy Eastman Ellery Escobedo Fairbanks Falkner Fenwick Fitzgerald Galloway Garrity Gilchrist
Grisham Haddad Halvorsen Hargrove Hawthorne Holloway Ibarra Ingersoll Jablonski Jarvis Kavanagh Kellerman
Kingsley Kowalczyk Lachance Langford Lindqvist Lockhart Macready Maldonado Marchetti Mayweather Merrick Montague
Nakamura Northcutt Oakley Okafor Olmstead Ortega Pendleton Petrakis Pruitt Quintero Radcliffe Ramsay Redfern
Rinaldi Rockwell Salazar Sandoval Schofield Sinclair Stanhope Strickland Tannenbaum Thibodeaux Trevino Underhill
Valentine Vasquez Wainwright Whitcomb Winslow Yarborough Zamora Zielinski""".split()

MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]
_MONTH = "|".join(MONTHS)
_COMPANY = re.compile(r"\b(INC|LLC|L\.L\.C|LLP|CORP|CORPORATION|COMPANY|CO|CITY|COUNTY|STATE|DEPARTMENT|BOARD|"
                      r"UNIVERSITY|SCHOOL|DISTRICT|AUTHORITY|GROUP|HOSPITAL|SYSTEM|SERVICES|BANK|TRUST|COMMONWEALTH|"
                      r"TOWN|TOWNSHIP|BOROUGH|COMMISSION|AGENCY|ASSOCIATION|PARTNERS|HOLDINGS|INDUSTRIES|LP|L\.P)\b",
                      re.IGNORECASE)
_TITLES = {"Mr", "Mrs", "Ms", "Miss", "Dr", "Jr", "Sr", "II", "III", "IV", "Esq", "Hon"}
_NOT_NAMES = {"Plaintiff", "Plaintiffs", "Defendant", "Defendants", "The", "Company", "City", "Officer", "Sergeant",
              "Captain", "Lieutenant", "Chief", "Director", "Manager", "Supervisor", "Doe", "John", "Jane"}
_UNITS = (r"hours?|days?|weeks?|months?|years?|employees?|workers?|times|shifts?|minutes?|occasions?|"
          r"drivers?|nurses?|associates?|candidates?|applicants?|positions?|incidents?|complaints?|percent")

# one pass over the text; the order of the alternatives decides which reading of a date wins
_DATES = re.compile(
    rf"(?P<mdy>\b(?P<m1>{_MONTH})(?P<s1>\s+)(?P<d1>\d{{1,2}}),(?P<t1>\s*)(?P<y1>\d{{4}})\b)"
    rf"|(?P<num>(?<![\d/.-])\b(?P<m2>0?[1-9]|1[0-2])/(?P<d2>0?[1-9]|[12]\d|3[01])/(?P<y2>\d{{4}}|\d{{2}})\b(?![/\d]))"
    rf"|(?P<my>\b(?P<m3>{_MONTH})(?P<s3>,?\s+)(?P<y3>\d{{4}})\b)"
    rf"|(?P<md>\b(?P<m4>{_MONTH})(?P<s4>\s+)(?P<d4>\d{{1,2}})\b(?!\s*,?\s*\d))"
    rf"|(?P<yr>(?<!§ )(?<!§§ )(?<!Act of )(?<![\d.,:/-])\b(?P<y6>199[5-9]|20[0-3]\d)\b(?![\d.,/-]\d))"
)
_NUMBERS = re.compile(
    r"(?P<usd>\$(?P<amount>\d{1,3}(?:,\d{3})+|\d+)(?P<cents>\.\d{2})?(?![\d,]\d))"
    r"|(?P<age>\b(?P<a1>[1-9]\d)(?P<age_tail>-year-old|\s+years\s+old|\s+years\s+of\s+age)\b)"
    r"|(?P<age2>\b(?P<age_head>[Aa]ge(?:d)?\s+)(?P<a2>[1-9]\d)\b(?![.,]\d))"
    rf"|(?P<count>(?<![\d.,§/:-])(?<!§ )\b(?P<n>[1-9]\d{{0,2}})(?P<sep>\s+|-)(?P<unit>{_UNITS})\b)"
    r"|(?P<pct>(?<![\d.,])\b(?P<p>[1-9]\d?)%)"
)


@dataclass(frozen=True)
class Source:
    """An annotated complaint: its case id, text and the words of its people's names."""

    case: str
    text: str
    names: tuple[str, ...]


def annotated_sources() -> list[Source]:
    """The 18 annotated complaints, train then dev (each split in name order), with their people's names."""
    from argus.paths import complaints_dir

    sources = []
    for split in ("train", "dev"):
        root = complaints_dir(split)
        if not root.is_dir():
            continue
        for d in sorted(root.iterdir()):
            if (d / "gold.json").exists() and (d / "complaint.txt").exists():
                gold = json.loads((d / "gold.json").read_text(encoding="utf-8"))
                sources.append(Source(d.name, (d / "complaint.txt").read_text(encoding="utf-8"), person_words(gold)))
    if not sources:
        raise SystemExit(f"no annotated complaints under {complaints_dir('train').parent} (set ARGUS_DATA_ROOT)")
    return sources


def person_words(gold: dict) -> tuple[str, ...]:
    """The given names and surnames of the complaint's people (Title case), longest first."""
    names = [e["name"] for e in gold.get("graph", {}).get("entities", []) if e.get("kind") == "person"]
    names += [p for p in gold.get("plaintiffs", []) + gold.get("defendants", []) if not _COMPANY.search(p)]
    words: set[str] = set()
    for name in names:
        name = re.sub(r",.*$", "", name)  # "GARY PELLETIER, individually"
        tokens = [t.strip(".'’\"()") for t in name.split()]
        tokens = [t for t in tokens if t and t.rstrip(".") not in _TITLES and not re.fullmatch(r"[A-Z]\.?", t)]
        if not tokens or not all(t[0].isupper() and all(c.isalpha() or c in "'’-" for c in t) for t in tokens):
            continue  # a description ("unnamed supervisor …"), not a name
        for t in tokens:
            t = t if not t.isupper() else t.title()
            if t not in _NOT_NAMES and len(t) > 2:
                words.add(t)
    return tuple(sorted(words, key=lambda w: (-len(w), w)))


def _cased(template: str, word: str) -> str:
    return word.upper() if template.isupper() else word


def vary(source: Source, seed: int, index: int) -> str:
    """``source``'s text with its names, dates and numbers varied by ``Random(f"{seed}:{index}")``."""
    rng = random.Random(f"{seed}:{index}")
    text = source.text

    # names: each word of a person's name → a drawn name, one for each, never one of the source's
    given = [g for g in GIVEN if g not in source.names]
    surnames = [s for s in SURNAMES if s not in source.names]
    rng.shuffle(given)
    rng.shuffle(surnames)
    mapping: dict[str, str] = {}
    first_words = _first_words(source)
    for w in source.names:
        pool = given if w in first_words else surnames
        mapping[w] = pool.pop() if pool else w
    if mapping:
        lookup = {**{w.upper(): w for w in mapping}, **{w: w for w in mapping}}
        alternatives = "|".join(re.escape(w) for w in sorted(lookup, key=lambda w: (-len(w), w)))
        text = re.sub(rf"(?<![\w-])(?:{alternatives})(?![\w])",
                      lambda m: _cased(m.group(0), mapping[lookup[m.group(0)]]), text)

    # dates: one offset for the whole document
    years = rng.choice([-4, -3, -2, -1, 1, 2, 3, 4])
    shift = rng.choice([d for d in range(-20, 21) if d])
    days = (dt.date(2020 + years, 6, 15) - dt.date(2020, 6, 15)).days + shift

    def shift_date(m: re.Match) -> str:
        if m.group("mdy"):
            month = MONTHS.index(m.group("m1")) + 1
            try:
                d = dt.date(int(m.group("y1")), month, int(m.group("d1"))) + dt.timedelta(days=days)
            except ValueError:
                return m.group(0)
            return f"{MONTHS[d.month - 1]}{m.group('s1')}{d.day},{m.group('t1')}{d.year}"
        if m.group("num"):
            raw_y = m.group("y2")
            year = int(raw_y) + (2000 if len(raw_y) == 2 else 0)
            try:
                d = dt.date(year, int(m.group("m2")), int(m.group("d2"))) + dt.timedelta(days=days)
            except ValueError:
                return m.group(0)
            width_m, width_d = len(m.group("m2")), len(m.group("d2"))
            y = f"{d.year % 100:02d}" if len(raw_y) == 2 else str(d.year)
            return f"{d.month:0{width_m}d}/{d.day:0{width_d}d}/{y}"
        if m.group("my"):
            return f"{m.group('m3')}{m.group('s3')}{int(m.group('y3')) + years}"
        if m.group("md"):
            try:
                d = dt.date(2000, MONTHS.index(m.group("m4")) + 1, int(m.group("d4"))) + dt.timedelta(days=shift)
            except ValueError:
                return m.group(0)
            return f"{MONTHS[d.month - 1]}{m.group('s4')}{d.day}"
        return str(int(m.group("y6")) + years)

    text = _DATES.sub(shift_date, text)

    # numbers
    factor = rng.uniform(0.80, 1.25)
    age_shift = rng.choice([-4, -3, -2, -1, 1, 2, 3, 4])

    def shift_number(m: re.Match) -> str:
        if m.group("usd"):
            raw = m.group("amount").replace(",", "")
            value = int(raw) * factor
            step = next((10 ** k for k in (3, 2, 1) if raw.endswith("0" * k)), 1)
            value = max(step, round(value / step) * step)
            amount = f"{value:,}" if "," in m.group("amount") else str(value)
            return f"${amount}{m.group('cents') or ''}"
        if m.group("age"):
            return f"{min(79, max(18, int(m.group('a1')) + age_shift))}{m.group('age_tail')}"
        if m.group("age2"):
            return f"{m.group('age_head')}{min(79, max(18, int(m.group('a2')) + age_shift))}"
        if m.group("count"):
            n = int(m.group("n"))
            delta = rng.randint(1, max(1, n // 4)) * rng.choice([-1, 1])
            n2 = n + delta if n + delta >= 2 or n < 2 else n + abs(delta)
            return f"{max(1, n2) if n > 1 else n}{m.group('sep')}{m.group('unit')}"
        return f"{min(99, max(1, int(m.group('p')) + rng.choice([-3, -2, -1, 1, 2, 3])))}%"

    return _NUMBERS.sub(shift_number, text)


def _first_words(source: Source) -> set[str]:
    """The words of ``source.names`` that open a name in its text (given names) rather than close one."""
    first = set()
    for w in source.names:
        followed = len(re.findall(rf"\b{re.escape(w)}\s+(?:[A-Z]\.\s+)?[A-Z][a-z]", source.text))
        after_title = len(re.findall(rf"\b(?:Mr|Ms|Mrs|Dr)\.\s+{re.escape(w)}\b", source.text))
        if followed > after_title:
            first.add(w)
    return first


def corpus_name(index: int, source: Source) -> str:
    return f"c{index:04d}-{source.case}"


def make_corpus(n: int, out: Path, seed: int = 0, sources: list[Source] | None = None) -> list[Path]:
    """Write complaints ``0 … n-1`` to ``out/<name>.txt``; returns their paths in index order."""
    sources = sources or annotated_sources()
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        src = sources[i % len(sources)]
        p = out / f"{corpus_name(i, src)}.txt"
        p.write_text(vary(src, seed, i), encoding="utf-8")
        paths.append(p)
    return paths


def sentence_lists(path_or_text, doc_id: str = "d") -> tuple[list[str], list[str]]:
    """The sentences of a complaint as the pipeline splits them (``argus.text.preprocess`` with the
    configured segmenter), all of them and those of its FACTS sections."""
    from argus.config import ArgusConfig
    from argus.ingest.files import read_text_document
    from argus.text.documents import RawDocument
    from argus.text.preprocess import preprocess

    if isinstance(path_or_text, Path):
        raw = read_text_document(path_or_text)
    else:
        raw = RawDocument(doc_id=doc_id, text=path_or_text, source=doc_id)
    doc = preprocess(raw, segmenter=ArgusConfig().segmenter)
    return [s.text for s in doc.sentences], [s.text for s in doc.sentences if s.section == "facts"]


def _digest(items) -> str:
    h = hashlib.sha256()
    for t in items:
        h.update(t.encode("utf-8", "surrogatepass") + b"\x00")
    return h.hexdigest()


def check_corpus(paths: list[Path], sources: list[Source] | None = None) -> dict:
    """What the benchmarks rely on, checked: every text distinct; every sentence list (all, and the
    FACTS sections') differs from its source's and from every other complaint's. Returns the counts
    and the sentences of each complaint (``sentences``: path → list); raises ``SystemExit`` if a check fails."""
    sources = sources or annotated_sources()
    by_case = {s.case: s for s in sources}
    source_lists = {s.case: sentence_lists(s.text, s.case) for s in sources}
    source_keys = {_digest(a) for a, _ in source_lists.values()} | {_digest(f) for _, f in source_lists.values()}
    texts, alls, facts, changed = set(), set(), set(), []
    sentences = {}
    failures = []
    for p in paths:
        text = p.read_text(encoding="utf-8")
        case = p.stem.split("-", 1)[1]
        all_s, fact_s = sentence_lists(p)
        sentences[p] = all_s
        src_all, _ = source_lists[case]
        for key, seen in ((_digest([text]), texts), (_digest(all_s), alls), (_digest(fact_s), facts)):
            if key in seen:
                failures.append(f"{p.name}: same text or sentence list as another complaint")
            seen.add(key)
        if _digest(all_s) in source_keys or _digest(fact_s) in source_keys:
            failures.append(f"{p.name}: a sentence list equal to a source's")
        src_set = set(src_all)
        changed.append(sum(1 for s in all_s if s not in src_set) / max(1, len(all_s)))
        if text == by_case[case].text:
            failures.append(f"{p.name}: the source's text unchanged")
    if failures:
        raise SystemExit("corpus check failed:\n  " + "\n  ".join(failures[:20]))
    return {"complaints": len(paths), "distinct_texts": len(texts), "distinct_sentence_lists": len(alls),
            "distinct_facts_lists": len(facts), "changed_sentences_mean": sum(changed) / max(1, len(changed)),
            "changed_sentences_min": min(changed, default=0.0), "sentences": sentences}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--show", type=int, default=None, help="print the varied lines of complaint INDEX beside the source's")
    args = ap.parse_args(argv)
    sources = annotated_sources()
    t0 = time.perf_counter()
    paths = make_corpus(args.docs, args.out, args.seed, sources)
    t1 = time.perf_counter()
    report = check_corpus(paths, sources)
    t2 = time.perf_counter()
    print(f"{len(paths)} complaints in {args.out}/ (seed {args.seed}) in {t1 - t0:.1f} s; checked in {t2 - t1:.1f} s: "
          f"{report['distinct_texts']} distinct texts, {report['distinct_sentence_lists']} distinct sentence lists, "
          f"{report['distinct_facts_lists']} distinct FACTS lists, none equal to a source's; sentences changed "
          f"{report['changed_sentences_mean']:.0%} on average (at least {report['changed_sentences_min']:.0%})")
    if args.show is not None:
        import difflib

        src = sources[args.show % len(sources)]
        for line in difflib.unified_diff(src.text.splitlines(), paths[args.show].read_text().splitlines(),
                                         lineterm="", n=0):
            print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
