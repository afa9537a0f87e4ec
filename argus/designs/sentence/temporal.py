"""Temporal edges of the sentence design: BEFORE / SAME_TIME between events in date order."""

from __future__ import annotations

import re
from dataclasses import dataclass


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


__all__ = ["DatedEvent", "date_edges"]
