"""The time a fact sentence states: an explicit date (a year carried over from earlier sentences
where the sentence gives only month and day), or the relative phrase ("two weeks later").
"""

from __future__ import annotations

import re

from argus.graph.schema import EventTime

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


__all__ = ["MONTHS", "sentence_time"]
