"""When the events of a document EKG happened: explicit dates read, and the events put in time order.

:func:`parse_date` reads the date forms complaints use; :func:`timeline_order` ranks the events from
the temporal edges and those dates (the order ``argus view`` shows in its timeline and its graph).
"""

from __future__ import annotations

import heapq
import re
from dataclasses import dataclass, field

from networkx.utils import UnionFind

from argus.graph.schema import DocumentEKG, id_order

_MONTHS = {m: i for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
     "november", "december"], start=1)}
_MONTHS.update({k[:3]: v for k, v in list(_MONTHS.items())})
_MONTHS["sept"] = 9
_MON = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
_DATE_FORMS = [
    (re.compile(r"^\s*(\d{4})(?:-(\d{1,2})(?:-(\d{1,2}))?)?\b"), ("y", "m", "d")),
    (re.compile(rf"\b{_MON}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I), ("M", "d", "y")),
    (re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MON},?\s+(\d{{4}})\b", re.I), ("d", "M", "y")),
    (re.compile(rf"\b{_MON},?\s+(\d{{4}})\b", re.I), ("M", "y")),
    (re.compile(r"\b(\d{1,2})/(\d{1,2})/(\d{4}|\d{2})\b"), ("m", "d", "y")),
    (re.compile(r"\b((?:19|20)\d{2})\b"), ("y",)),
]


def parse_date(value: str | None) -> tuple[int, int, int] | None:
    """``(year, month, day)`` of an explicit time value (0 for a missing month or day), else None.

    ISO forms first ('2019', '2019-03', '2019-03-03'), then 'March 3, 2019', '3 March 2019',
    'March 2019', '03/03/2019' and a bare year.
    """
    if not value:
        return None
    for rx, parts in _DATE_FORMS:
        m = rx.search(value)
        if not m:
            continue
        got = {"y": 0, "m": 0, "d": 0}
        for name, raw in zip(parts, m.groups()):
            if raw is None:
                continue
            if name == "M":
                got["m"] = _MONTHS.get(raw.lower().rstrip("."), 0)
            else:
                got[name] = int(raw)
        y = got["y"] + (2000 if got["y"] < 100 and len(str(got["y"])) <= 2 and got["y"] else 0)
        if not 1000 <= y <= 2999 or not 0 <= got["m"] <= 12 or not 0 <= got["d"] <= 31:
            continue
        return (y, got["m"], got["d"])
    return None


def iso_date(d: tuple[int, int, int]) -> str:
    """A parsed date as ISO text, as precise as it is: '2019', '2019-03' or '2019-03-03'."""
    y, m, day = d
    return f"{y:04d}" + (f"-{m:02d}" if m else "") + (f"-{day:02d}" if m and day else "")


@dataclass
class Timeline:
    """Events in time order: ``groups`` of event ids that share a rank (SAME_TIME / OVERLAP)."""

    groups: list[list[str]]
    rank: dict[str, int]
    dates: dict[str, tuple[int, int, int]]
    ignored: list[str] = field(default_factory=list)
    """Temporal edges left out of the order to break a cycle (or a contradiction with the dates)."""


def text_order(ekg: DocumentEKG) -> dict[str, tuple[int, tuple[int, str]]]:
    """Each event's position in the text: (index of its first evidence sentence, its id's order)."""
    sidx = {s.id: i for i, s in enumerate(ekg.sentences)}
    out = {}
    for ev in ekg.graph.events:
        first = min((sidx.get(s, len(sidx)) for s in ev.evidence), default=len(sidx))
        out[ev.id] = (first, id_order(ev.id))
    return out


def timeline_order(ekg: DocumentEKG) -> Timeline:
    """The order of the events in time, from the temporal edges and the explicit dates.

    - SAME_TIME and OVERLAP join events into one group (one rank);
    - ``a BEFORE b`` orders a's group before b's, ``a AFTER b`` b's before a's;
    - events with an explicit date (``time.kind == "explicit"`` and a parseable value) are ordered by
      date: every group of a date precedes every group of the next later date;
    - the groups are then taken in a topological order (Kahn), the ready group that comes first in
      the text going first, so undated events without edges keep their narrative position;
    - where no group is ready (a cycle), the remaining group first in the text that no remaining
      *date* constraint holds back goes next and its remaining incoming edges are ignored (recorded
      in ``ignored``): dates win over the model's edges, and the choice is deterministic.
    """
    events = ekg.graph.events
    ids = [ev.id for ev in events]
    known = set(ids)
    pos = text_order(ekg)
    same = UnionFind(ids)
    for e in ekg.graph.temporal_edges:
        if e.relation in ("SAME_TIME", "OVERLAP") and e.source in known and e.target in known:
            same.union(e.source, e.target)
    # a group is named by its member first in the text (whichever the union-find made its root)
    group_of = {m: min(g, key=pos.__getitem__) for g in same.to_sets() for m in g}

    def find(x: str) -> str:
        return group_of[x]

    members: dict[str, list[str]] = {}
    for i in ids:
        members.setdefault(find(i), []).append(i)
    for g in members.values():
        g.sort(key=lambda x: pos[x])
    key = {g: pos[m[0]] for g, m in members.items()}

    edge_succ: dict[str, dict[str, list[str]]] = {g: {} for g in members}  # g → successor → edge labels
    for e in ekg.graph.temporal_edges:
        if e.relation not in ("BEFORE", "AFTER") or e.source not in known or e.target not in known:
            continue
        a, b = find(e.source), find(e.target)
        if e.relation == "AFTER":
            a, b = b, a
        if a != b:
            edge_succ[a].setdefault(b, []).append(f"{e.source} {e.relation} {e.target}")

    dates: dict[str, tuple[int, int, int]] = {}
    for ev in events:
        if ev.time.kind == "explicit":
            d = parse_date(ev.time.value)
            if d is not None:
                dates[ev.id] = d
    gdate: dict[str, tuple[int, int, int]] = {}
    for g, ms in members.items():
        ds = [dates[m] for m in ms if m in dates]
        if ds:
            gdate[g] = min(ds)
    date_succ: dict[str, set[str]] = {g: set() for g in members}
    levels = sorted(set(gdate.values()))
    by_level: dict[tuple[int, int, int], list[str]] = {}
    for g, d in gdate.items():
        by_level.setdefault(d, []).append(g)
    for lo, hi in zip(levels, levels[1:]):
        for a in by_level[lo]:
            for b in by_level[hi]:
                date_succ[a].add(b)

    indeg_edge = {g: 0 for g in members}
    indeg_date = {g: 0 for g in members}
    for a, succ in edge_succ.items():
        for b in succ:
            indeg_edge[b] += 1
    for a, succ in date_succ.items():
        for b in succ:
            indeg_date[b] += 1
    preds_edge: dict[str, set[str]] = {g: set() for g in members}
    for a, succ in edge_succ.items():
        for b in succ:
            preds_edge[b].add(a)

    ready = [(key[g], g) for g in members if indeg_edge[g] == 0 and indeg_date[g] == 0]
    heapq.heapify(ready)
    done: set[str] = set()
    order: list[str] = []
    ignored: list[str] = []
    while len(order) < len(members):
        if not ready:
            rest = [g for g in members if g not in done]
            free = [g for g in rest if indeg_date[g] == 0] or rest
            g = min(free, key=lambda x: key[x])
            for p in sorted(preds_edge[g] - done, key=lambda x: key[x]):
                ignored.extend(edge_succ[p][g])
                edge_succ[p].pop(g)
            indeg_edge[g] = 0
            indeg_date[g] = 0
            heapq.heappush(ready, (key[g], g))
        _, g = heapq.heappop(ready)
        if g in done:
            continue
        done.add(g)
        order.append(g)
        for b in edge_succ[g]:
            indeg_edge[b] -= 1
        for b in date_succ[g]:
            indeg_date[b] -= 1
        for b in set(edge_succ[g]) | date_succ[g]:
            if b not in done and indeg_edge[b] <= 0 and indeg_date[b] <= 0:
                heapq.heappush(ready, (key[b], b))
    groups = [members[g] for g in order]
    rank = {eid: i + 1 for i, grp in enumerate(groups) for eid in grp}
    return Timeline(groups=groups, rank=rank, dates=dates, ignored=ignored)
