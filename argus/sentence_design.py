"""The deterministic parts of the sentence-level design: time, participants, date order, suggestions.

The design (``ArgusPipeline`` with ``extraction.design: sentence``) turns each fact sentence into at
most one event by choices: the encoder heads (``argus.event_heads``) read the type and the trigger,
the choice program (``programs.sentence_events``) decides where the heads are unsure (or always, as
configured), and this module supplies what needs no model:

- ``sentence_time``: the time a sentence states: an explicit date (a year carried over from earlier
  sentences where the sentence gives only month and day), or the relative phrase ("two weeks later");
- ``participants_of``: the entities of the list the sentence names, agent before the trigger,
  patient after it;
- ``date_edges``: BEFORE / SAME_TIME edges between events with explicit dates, in date order
  (each dated event to the next one), with both events' sentences as evidence;
- ``suggestions``: the heads' reading as text for the choice program.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from argus.schema import Entity, EventTime, Participant
from argus.words import name_pattern

MONTHS = {m: i for i, m in enumerate(
    "january february march april may june july august september october november december".split(), 1)}
_MONTH = r"(?P<month>Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sept?(?:ember)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?"
_FULL = re.compile(rf"\b{_MONTH}\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?(?:,\s*(?P<year>(?:19|20)\d\d))?\b", re.I)
_MONTH_YEAR = re.compile(rf"\b{_MONTH}(?:\s+of)?,?\s+(?P<year>(?:19|20)\d\d)\b", re.I)
_NUMERIC = re.compile(r"\b(?P<m>\d{1,2})/(?P<d>\d{1,2})/(?P<y>(?:19|20)?\d\d)\b")
_YEAR = re.compile(r"\b(?:in|during|by|since|of|throughout|early|late|mid-?)\s+(?P<year>(?:19|20)\d\d)\b", re.I)
_RELATIVE = re.compile(
    r"\b(?:(?:(?:about|approximately|nearly|less\s+than|more\s+than|within|over)\s+)?"
    r"(?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|several|a\s+few|\d+)\s+"
    r"(?:days?|weeks?|months?|years?|hours?)\s+(?:later|after(?:\s+\w+){0,4}|before(?:\s+\w+){0,4}|earlier)|"
    r"the\s+(?:next|following|same|previous)\s+(?:day|morning|afternoon|evening|week|month|year|shift)|"
    r"(?:shortly|soon|immediately|just)\s+(?:thereafter|after(?:\s+\w+){0,3}|afterwards?|before(?:\s+\w+){0,3})|"
    r"thereafter|later\s+that\s+(?:day|week|month|year)|that\s+same\s+(?:day|week|month)|"
    r"(?:while|during)\s+(?:\w+\s+){0,4}\w+|upon\s+(?:her|his|their)\s+return|the\s+day\s+(?:before|after))\b",
    re.I)


def _month(name: str) -> int:
    low = name.lower().rstrip(".")
    return next(v for k, v in MONTHS.items() if k.startswith(low[:3]))


def sentence_time(text: str, year_hint: int | None = None) -> tuple[EventTime, int | None]:
    """The time ``text`` states and the year to carry to the next sentences.

    ``year_hint``: the latest year stated before this sentence, for dates without one ("On June 3,").
    """
    m = _FULL.search(text)
    if m and (m.group("year") or year_hint):
        year = int(m.group("year") or year_hint)
        return EventTime(kind="explicit", value=f"{year:04d}-{_month(m.group('month')):02d}-{int(m.group('day')):02d}"), year
    m = _NUMERIC.search(text)
    if m:
        y = int(m.group("y"))
        y = y + 2000 if y < 100 else y
        if 1 <= int(m.group("m")) <= 12 and 1 <= int(m.group("d")) <= 31:
            return EventTime(kind="explicit", value=f"{y:04d}-{int(m.group('m')):02d}-{int(m.group('d')):02d}"), y
    m = _MONTH_YEAR.search(text)
    if m:
        year = int(m.group("year"))
        return EventTime(kind="explicit", value=f"{year:04d}-{_month(m.group('month')):02d}"), year
    m = _YEAR.search(text)
    if m:
        year = int(m.group("year"))
        return EventTime(kind="explicit", value=f"{year:04d}"), year
    m = _RELATIVE.search(text)
    if m:
        return EventTime(kind="relative", value=" ".join(m.group(0).split())), year_hint
    return EventTime(kind="unknown"), year_hint


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


@dataclass(frozen=True)
class DatedEvent:
    event_id: str
    value: str
    evidence: tuple[str, ...]


def date_edges(events: list[DatedEvent]) -> list[tuple[str, str, str, list[str]]]:
    """(source, target, relation, evidence) between events with explicit dates: each event to the next
    one in date order (BEFORE), or SAME_TIME when both name the same day. Only full dates (year, month
    and day) or months are compared, at the precision both share."""
    def key(v: str) -> tuple[int, ...]:
        return tuple(int(x) for x in v.split("-"))

    dated = [e for e in events if re.fullmatch(r"\d{4}(?:-\d{2}){0,2}", e.value or "")]
    dated.sort(key=lambda e: key(e.value))
    out = []
    for a, b in zip(dated, dated[1:]):
        ka, kb = key(a.value), key(b.value)
        n = min(len(ka), len(kb))
        if n < 2:  # years alone order too coarsely
            continue
        if ka[:n] == kb[:n]:
            if len(ka) == len(kb) == 3:
                out.append((a.event_id, b.event_id, "SAME_TIME", list(dict.fromkeys(a.evidence + b.evidence))))
            continue
        out.append((a.event_id, b.event_id, "BEFORE", list(dict.fromkeys(a.evidence + b.evidence))))
    return out


def suggestions(readings: dict[str, object], ids: list[str], n: int = 3) -> str:
    """The heads' reading of each sentence, one line per sentence id, for the choice program."""
    lines = []
    for sid in ids:
        r = readings.get(sid)
        if r is None:
            continue
        types = ", ".join(f"{t} {p:.2f}" for t, p in r.ranked_types(n))
        words = ", ".join(f"{w!r}" for w, _, _, _ in r.ranked_words(n))
        lines.append(f"{sid}: type {types}; trigger {words}; states an event {r.p_event:.2f}")
    return "\n".join(lines)


__all__ = ["DatedEvent", "date_edges", "participants_of", "sentence_time", "suggestions"]
