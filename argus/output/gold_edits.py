"""A document's graph as SPEC gold, and the corrections a person makes to it (``argus annotate serve``).

Everything here is a pure function of plain JSON data, so that the server, its tests and a script can share it:

- :func:`gold_from_ekg`: a ``DocumentEKG`` as a gold file in the shared SPEC format
  (``us_complaints/SPEC.md``; checked by ``metrics.gold.validate.gold_problems``), the graph the model wrote;
- :func:`apply_ops`: edit operations applied to such a gold dict, each validated (types, roles and kinds from the
  schema's lists, spans inside the text and inside one sentence of a facts section, ids that exist, edge
  endpoints that exist and differ), an :class:`EditError` with a message a person can act on otherwise;
- :func:`changes_summary`: what the correction changed against the model's graph, by kind, and how far the two
  agree;
- :func:`display_ekg`: a gold dict back as a ``DocumentEKG`` over the EKG's text, for the view's panels.

**EKG → gold.** Sentences keep their text, span and fact decision (``None`` is written ``false``), renumbered
``S1…Sn`` in reading order where they were not already; consecutive sentences of one section kind and heading
form a section, consecutive sentences of one paragraph number a paragraph. A sentence of the narrative the EKG
read (``in_narrative``) is in a ``facts`` section, whatever its section was called (a filing without a FACTS
heading: ``unknown``); any other kind outside the SPEC's list (``caption``, ``unknown``) becomes ``other``.
Entities keep id, name, kind, role and aliases. Events keep id, type, verb, trigger, frame, participants (those
naming an entity of the graph), time and the evidence that lies in a facts section (the SPEC's rule); an event
with none there is left out. Edges keep source, target, relation and their evidence in facts sections (where
none is, the first evidence sentence of each end), without self-loops or repeats. Each trigger's span goes to ``annotation.trigger_spans``. What a gold file has no place
for is left out: mentions, provenance (``sources``, ``origin``), confidences, fact probabilities, the merge log,
rejected items, the ledger. ``claims`` and ``faq`` are written empty (the page does not annotate them); the
caption gives ``court``, ``case_number``, ``plaintiffs`` and ``defendants``. Everything left out on the way is
listed in ``annotation.conversion``.

**Operations** (``{"op": …}``; :data:`OPS`): ``set_type`` (``event``, ``type``), ``add_event`` (``start``,
``end``: the trigger's characters in the text; ``type``, default ``other``), ``merge_events`` (``keep``,
``absorb``), ``delete_event`` (``event``), ``add_edge`` / ``reverse_edge`` / ``delete_edge`` (``kind``:
``temporal`` or ``causal``, ``source``, ``target``, ``relation``), ``set_entity`` (``entity`` and any of
``role``, ``kind``, ``aliases``, ``name``), ``set_fact`` (``sentence``, ``fact``), ``accept``. An added edge
replaces an edge of its kind between the same two events (one temporal and one causal relation per pair, as in
the corpus); ``accept`` makes the status ``accepted``, any other operation ``draft``.
"""

from __future__ import annotations

import copy
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from metrics.gold.validate import SECTION_KINDS  # the SPEC's section kinds, one list
from argus.graph.schema import (
    CAUSAL_RELATIONS,
    ENTITY_KINDS,
    EVENT_TYPES,
    LEGAL_ROLES,
    TEMPORAL_RELATIONS,
    DocCausalEdge,
    DocEntity,
    DocEvent,
    DocTemporalEdge,
    DocumentEKG,
    DocumentGraph,
    EventTime,
    Mention,
    Participant,
    SentenceRecord,
    id_order,
)


DISTRICTS = ("EDPA", "KYED", "NYSD", "PAWD", "RID")
"""The SPEC's districts: a document id that starts with one (``nysd-1-21-cv-04417``) names its district."""

EDGE_RELATIONS: dict[str, tuple[str, ...]] = {"temporal": TEMPORAL_RELATIONS, "causal": CAUSAL_RELATIONS}

SHORTCUT_TYPES = ("communication", "other", "harassment", "complaint", "hiring", "discipline", "medical",
                  "investigation", "leave")
"""The event types the keys 1–9 give: the nine most frequent in the 78 annotated complaints' gold, most frequent
first (communication 688 events … leave 117)."""

OPS = ("set_type", "add_event", "merge_events", "delete_event", "add_edge", "reverse_edge", "delete_edge",
       "set_entity", "set_fact", "accept")

EDIT_KINDS = ("type_changes", "events_added", "events_deleted", "events_merged", "temporal_added",
              "temporal_removed", "temporal_reversed", "causal_added", "causal_removed", "causal_reversed",
              "entity_role_fixes", "entity_kind_fixes", "entity_alias_fixes", "entity_name_fixes", "fact_flips")
"""The kinds of change :func:`changes_summary` counts."""

MAX_TRIGGER_CHARS = 200
MAX_NAME_CHARS = 300
MAX_ALIASES = 60

__all__ = ["DISTRICTS", "EDGE_RELATIONS", "EDIT_KINDS", "EditError", "OPS", "SECTION_KINDS", "SHORTCUT_TYPES",
           "apply_ops", "changes_summary", "display_ekg", "gold_from_ekg", "iter_sentences", "merges_in"]


class EditError(ValueError):
    """An edit that cannot be made, with the reason a person can act on (the server answers 400 with it)."""


# ----------------------------------------------------------------------------- EKG → gold


def iter_sentences(gold: Mapping) -> Iterator[tuple[dict, dict]]:
    """(section, sentence) of a gold dict, in reading order."""
    for sec in gold.get("sections", []):
        for par in sec.get("paragraphs", []):
            for s in par:
                yield sec, s


def _district(doc_id: str) -> str:
    head = doc_id.split("-", 1)[0].upper()
    return head if head in DISTRICTS else ""


def _dedupe(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def gold_from_ekg(ekg: DocumentEKG) -> dict:
    """The graph of ``ekg`` as a SPEC gold dict (see the module docstring), with its ``annotation`` block."""
    notes: list[str] = []
    sents = sorted(ekg.sentences, key=lambda s: (s.span[0], id_order(s.id)))
    rename = {s.id: f"S{i}" for i, s in enumerate(sents, 1)}
    if any(k != v for k, v in rename.items()):
        notes.append("sentences renumbered S1… in reading order")
    sections: list[dict] = []
    last_par: object = None
    for s in sents:
        kind = "facts" if s.in_narrative else s.section if s.section in SECTION_KINDS else "other"
        if kind != s.section:
            notes.append(f"{rename[s.id]}: section kind {s.section!r} written as {kind!r}"
                         + (" (the narrative the EKG read)" if kind == "facts" else ""))
        heading = s.section_heading or ""
        if not sections or (sections[-1]["kind"], sections[-1]["heading"]) != (kind, heading):
            sections.append({"heading": heading, "kind": kind, "paragraphs": []})
            last_par = None
        par = s.paragraph if s.paragraph is not None else ("alone", s.id)
        if not sections[-1]["paragraphs"] or par != last_par:
            sections[-1]["paragraphs"].append([])
        last_par = par
        sections[-1]["paragraphs"][-1].append({"id": rename[s.id], "text": s.text, "fact": bool(s.fact),
                                               "span": [int(s.span[0]), int(s.span[1])], "section": kind})
    facts = {s["id"] for sec, s in iter_sentences({"sections": sections}) if sec["kind"] == "facts"}

    g = ekg.graph
    entities = [{"id": e.id, "name": e.name, "kind": e.kind, "role": e.role,
                 "aliases": [a for a in _dedupe(e.aliases) if a != e.name]} for e in g.entities]
    entity_ids = {e["id"] for e in entities}
    events: list[dict] = []
    trigger_spans: dict[str, list[int]] = {}
    for ev in g.events:
        cited = _dedupe(rename[x] for x in ev.evidence if x in rename)
        kept = [x for x in cited if x in facts]
        if not kept:
            notes.append(f"{ev.id} left out: no evidence in a facts section ({', '.join(cited) or 'none'})")
            continue
        if len(kept) < len(cited):
            notes.append(f"{ev.id}: evidence {', '.join(x for x in cited if x not in facts)} outside the facts "
                         "sections left out")
        parts = _dedupe((p.entity, p.role) for p in ev.participants if p.entity in entity_ids)
        events.append({"id": ev.id, "type": ev.type, "verb": ev.verb, "trigger": ev.trigger, "frame": ev.frame,
                       "participants": [{"entity": e, "role": r} for e, r in parts],
                       "time": {"kind": ev.time.kind, "value": ev.time.value}, "evidence": kept})
        if ev.trigger_span is not None:
            trigger_spans[ev.id] = [int(ev.trigger_span[0]), int(ev.trigger_span[1])]
    first = {e["id"]: e["evidence"][0] for e in events}
    graph: dict[str, list] = {"entities": entities, "events": events, "temporal_edges": [], "causal_edges": []}
    for kind, edges in (("temporal", g.temporal_edges), ("causal", g.causal_edges)):
        seen: set[tuple[str, str, str]] = set()
        for e in edges:
            name = f"{kind} edge {e.source} {e.relation} {e.target}"
            if e.source not in first or e.target not in first:
                notes.append(f"{name} left out: an end is not in the graph")
                continue
            key = (e.source, e.target, e.relation)
            if e.source == e.target or key in seen:
                notes.append(f"{name} left out: " + ("a self-loop" if e.source == e.target else "a repeat"))
                continue
            seen.add(key)
            cited = _dedupe(rename[x] for x in e.evidence if x in rename)
            kept = [x for x in cited if x in facts] or _dedupe([first[e.source], first[e.target]])
            graph[f"{kind}_edges"].append({"source": e.source, "target": e.target, "relation": e.relation,
                                           "evidence": kept})
    cap = ekg.caption
    return {
        "doc_id": ekg.doc_id, "district": _district(ekg.doc_id),
        "court": (cap.court or "") if cap else "", "case_number": (cap.case_number or "") if cap else "",
        "filed": "", "plaintiffs": [p.name for p in cap.plaintiffs] if cap else [],
        "defendants": [p.name for p in cap.defendants] if cap else [], "title": "",
        "sections": sections, "claims": [], "graph": graph, "faq": [],
        "annotation": {"status": "model", "revision": 0, "trigger_spans": trigger_spans, "conversion": notes},
    }


# ----------------------------------------------------------------------------- edit operations


def _get(op: Mapping, key: str, kind: type | tuple[type, ...], default: Any = ...) -> Any:
    if key not in op:
        if default is ...:
            raise EditError(f"{op.get('op')}: '{key}' is missing")
        return default
    value = op[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        want = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise EditError(f"{op.get('op')}: '{key}' should be a {want}, not {type(value).__name__}")
    return value


def _choice(op: Mapping, key: str, allowed: tuple[str, ...], default: Any = ...) -> str:
    value = _get(op, key, str, default)
    if value not in allowed:
        raise EditError(f"{op.get('op')}: {key} {value!r} is not one of {', '.join(allowed)}")
    return value


def _only(op: Mapping, keys: set[str]) -> None:
    extra = set(op) - keys - {"op"}
    if extra:
        raise EditError(f"{op.get('op')}: unknown field(s) {', '.join(sorted(map(str, extra)))}")


def _event(gold: dict, op: Mapping, key: str) -> dict:
    ident = _get(op, key, str)
    for ev in gold["graph"]["events"]:
        if ev["id"] == ident:
            return ev
    raise EditError(f"{op['op']}: there is no event {ident!r} in the graph")


def _edge_key(op: Mapping) -> tuple[str, str, str, str]:
    kind = _choice(op, "kind", tuple(EDGE_RELATIONS))
    relation = _choice(op, "relation", EDGE_RELATIONS[kind])
    return kind, _get(op, "source", str), _get(op, "target", str), relation


def _find_edge(gold: dict, op: Mapping) -> tuple[list, int]:
    kind, source, target, relation = _edge_key(op)
    edges = gold["graph"][f"{kind}_edges"]
    for i, e in enumerate(edges):
        if (e["source"], e["target"], e["relation"]) == (source, target, relation):
            return edges, i
    raise EditError(f"{op['op']}: there is no {kind} edge {source} {relation} {target}")


def _new_event_id(gold: dict, reserved: Iterable[str]) -> str:
    used = [e["id"] for e in gold["graph"]["events"]] + list(reserved)
    return f"EV{max((id_order(x)[0] for x in used if id_order(x)[0] < 1 << 30), default=0) + 1}"


def _verb(trigger: str) -> str:
    from argus.text.words import lemma

    words = re.findall(r"[A-Za-z][A-Za-z'-]*", trigger)
    return lemma(words[0].lower()) if words else trigger.strip().lower()


def _set_type(gold: dict, op: Mapping, ctx: dict) -> None:
    _only(op, {"event", "type"})
    ev = _event(gold, op, "event")
    ev["type"] = _choice(op, "type", EVENT_TYPES)


def _add_event(gold: dict, op: Mapping, ctx: dict) -> None:
    _only(op, {"start", "end", "type"})
    text: str = ctx["text"]
    start, end = _get(op, "start", int), _get(op, "end", int)
    etype = _choice(op, "type", EVENT_TYPES, "other")
    if not 0 <= start < end <= len(text):
        raise EditError(f"add_event: the span [{start}, {end}) is not inside the text (0 to {len(text)})")
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if start == end:
        raise EditError("add_event: the selected span holds no word")
    if end - start > MAX_TRIGGER_CHARS:
        raise EditError(f"add_event: a trigger is a few words, not {end - start} characters")
    for sec, s in iter_sentences(gold):
        a, b = s["span"]
        if a <= start and end <= b:
            if sec.get("kind") != "facts":
                raise EditError(f"add_event: {s['id']} is in a {sec.get('kind')!r} section; events are annotated in "
                                "the facts sections only (SPEC)")
            sentence = s
            break
    else:
        raise EditError(f"add_event: the span [{start}, {end}) is not inside one sentence")
    trigger = " ".join(text[start:end].split())
    new_id = _new_event_id(gold, ctx["reserved"])
    gold["graph"]["events"].append({
        "id": new_id, "type": etype, "verb": _verb(trigger), "trigger": trigger, "frame": None, "participants": [],
        "time": {"kind": "unknown", "value": None}, "evidence": [sentence["id"]]})
    gold["annotation"]["trigger_spans"][new_id] = [start, end]
    ctx["created"].append(new_id)


def _drop_event_edges(gold: dict, event_id: str) -> None:
    for kind in EDGE_RELATIONS:
        key = f"{kind}_edges"
        gold["graph"][key] = [e for e in gold["graph"][key] if event_id not in (e["source"], e["target"])]


def _delete_event(gold: dict, op: Mapping, ctx: dict) -> None:
    _only(op, {"event"})
    ev = _event(gold, op, "event")
    gold["graph"]["events"].remove(ev)
    _drop_event_edges(gold, ev["id"])
    gold["annotation"]["trigger_spans"].pop(ev["id"], None)


def _merge_events(gold: dict, op: Mapping, ctx: dict) -> None:
    _only(op, {"keep", "absorb"})
    keep, gone = _event(gold, op, "keep"), _event(gold, op, "absorb")
    if keep is gone:
        raise EditError("merge_events: an event cannot be merged with itself")
    keep["evidence"] = sorted(_dedupe(keep["evidence"] + gone["evidence"]), key=id_order)
    parts = _dedupe([(p["entity"], p["role"]) for p in keep["participants"] + gone["participants"]])
    keep["participants"] = [{"entity": e, "role": r} for e, r in parts]
    if keep["time"]["kind"] == "unknown" and gone["time"]["kind"] != "unknown":
        keep["time"] = dict(gone["time"])
    keep["frame"] = keep.get("frame") or gone.get("frame")
    for kind in EDGE_RELATIONS:
        key = f"{kind}_edges"
        out: list[dict] = []
        seen: set[tuple[str, str, str]] = set()
        for e in gold["graph"][key]:
            e = {**e, "source": keep["id"] if e["source"] == gone["id"] else e["source"],
                 "target": keep["id"] if e["target"] == gone["id"] else e["target"]}
            k = (e["source"], e["target"], e["relation"])
            if e["source"] == e["target"] or k in seen:
                continue
            seen.add(k)
            out.append(e)
        gold["graph"][key] = out
    gold["graph"]["events"].remove(gone)
    gold["annotation"]["trigger_spans"].pop(gone["id"], None)


def _add_edge(gold: dict, op: Mapping, ctx: dict) -> None:
    _only(op, {"kind", "source", "target", "relation"})
    kind, source, target, relation = _edge_key(op)
    ends = {}
    for key, ident in (("source", source), ("target", target)):
        ends[key] = _event(gold, {"op": "add_edge", key: ident}, key)
    if source == target:
        raise EditError("add_edge: an edge joins two different events")
    edges = gold["graph"][f"{kind}_edges"]
    # one relation of a kind per pair of events, as in the corpus: a new one replaces the old
    edges[:] = [e for e in edges if {e["source"], e["target"]} != {source, target}]
    evidence = _dedupe([ends["source"]["evidence"][0], ends["target"]["evidence"][0]])
    edges.append({"source": source, "target": target, "relation": relation, "evidence": evidence})


def _reverse_edge(gold: dict, op: Mapping, ctx: dict) -> None:
    _only(op, {"kind", "source", "target", "relation"})
    edges, i = _find_edge(gold, op)
    e = edges[i]
    edges[i] = {**e, "source": e["target"], "target": e["source"]}


def _delete_edge(gold: dict, op: Mapping, ctx: dict) -> None:
    _only(op, {"kind", "source", "target", "relation"})
    edges, i = _find_edge(gold, op)
    del edges[i]


def _clean_name(value: str, what: str) -> str:
    value = " ".join(value.split())
    if not value:
        raise EditError(f"set_entity: an empty {what}")
    if len(value) > MAX_NAME_CHARS:
        raise EditError(f"set_entity: a {what} of {len(value)} characters (at most {MAX_NAME_CHARS})")
    return value


def _set_entity(gold: dict, op: Mapping, ctx: dict) -> None:
    _only(op, {"entity", "role", "kind", "aliases", "name"})
    ident = _get(op, "entity", str)
    ent = next((e for e in gold["graph"]["entities"] if e["id"] == ident), None)
    if ent is None:
        raise EditError(f"set_entity: there is no entity {ident!r} in the graph")
    if not set(op) & {"role", "kind", "aliases", "name"}:
        raise EditError("set_entity: nothing to set (role, kind, aliases or name)")
    if "role" in op:
        ent["role"] = _choice(op, "role", LEGAL_ROLES)
    if "kind" in op:
        ent["kind"] = _choice(op, "kind", ENTITY_KINDS)
    if "name" in op:
        ent["name"] = _clean_name(_get(op, "name", str), "name")
    if "aliases" in op:
        aliases = _get(op, "aliases", list)
        if len(aliases) > MAX_ALIASES:
            raise EditError(f"set_entity: {len(aliases)} aliases (at most {MAX_ALIASES})")
        if not all(isinstance(a, str) for a in aliases):
            raise EditError("set_entity: aliases should be a list of strings")
        ent["aliases"] = [a for a in _dedupe(_clean_name(a, "alias") for a in aliases if a.strip()) if a != ent["name"]]


def _set_fact(gold: dict, op: Mapping, ctx: dict) -> None:
    _only(op, {"sentence", "fact"})
    ident = _get(op, "sentence", str)
    fact = _get(op, "fact", bool)
    for _, s in iter_sentences(gold):
        if s["id"] == ident:
            s["fact"] = fact
            return
    raise EditError(f"set_fact: there is no sentence {ident!r}")


def _accept(gold: dict, op: Mapping, ctx: dict) -> None:
    _only(op, set())


_HANDLERS = {"set_type": _set_type, "add_event": _add_event, "merge_events": _merge_events,
             "delete_event": _delete_event, "add_edge": _add_edge, "reverse_edge": _reverse_edge,
             "delete_edge": _delete_edge, "set_entity": _set_entity, "set_fact": _set_fact, "accept": _accept}


def apply_ops(gold: dict, ops: list, text: str, *, reserved: Iterable[str] = ()) -> tuple[dict, list[str]]:
    """``gold`` (unchanged) with ``ops`` applied in order, and the ids of the events they created.

    ``text``: the document's text (the spans of ``add_event`` index it); ``reserved``: event ids a new event may
    not take (the model's, so that an added event is never mistaken for one of them). The status becomes
    ``accepted`` after ``accept``, ``draft`` after any other operation. Raises :class:`EditError` (nothing
    applied) at the first operation that cannot be made."""
    out = copy.deepcopy(gold)
    out.setdefault("annotation", {}).setdefault("trigger_spans", {})
    ctx: dict[str, Any] = {"text": text, "created": [], "reserved": list(reserved)}
    if not isinstance(ops, list) or not ops:
        raise EditError("no operations: 'ops' should be a non-empty list")
    for i, op in enumerate(ops):
        if not isinstance(op, Mapping):
            raise EditError(f"operation {i + 1}: not an object")
        name = op.get("op")
        handler = _HANDLERS.get(name) if isinstance(name, str) else None
        if handler is None:
            raise EditError(f"operation {i + 1}: unknown op {name!r} (known: {', '.join(OPS)})")
        try:
            handler(out, op, ctx)
        except EditError as exc:
            raise EditError(f"operation {i + 1}: {exc}" if len(ops) > 1 else str(exc)) from None
        out["annotation"]["status"] = "accepted" if name == "accept" else "draft"
    return out, ctx["created"]


# ----------------------------------------------------------------------------- what changed


def _norm_edge(source: str, target: str, relation: str) -> tuple[str, str, str]:
    if relation == "AFTER":
        return target, source, "BEFORE"
    if relation in ("OVERLAP", "SAME_TIME"):
        a, b = sorted((source, target), key=id_order)
        return a, b, relation
    return source, target, relation


def _f1(a: set, b: set) -> float:
    if not a and not b:
        return 1.0
    tp = len(a & b)
    return 0.0 if not tp else 2 * tp / (len(a) + len(b))


def merges_in(steps: Iterable[Mapping]) -> dict[str, str]:
    """Absorbed event id → the event it ended in, from the logged steps' ``merge_events`` operations."""
    into: dict[str, str] = {}
    for step in steps:
        for op in step.get("ops", []):
            if isinstance(op, Mapping) and op.get("op") == "merge_events":
                into[str(op.get("absorb"))] = str(op.get("keep"))
    resolved = {}
    for gone in into:
        seen, cur = {gone}, into[gone]
        while cur in into and cur not in seen:
            seen.add(cur)
            cur = into[cur]
        resolved[gone] = cur
    return resolved


def changes_summary(model: Mapping, corrected: Mapping, steps: Iterable[Mapping] = ()) -> dict:
    """What ``corrected`` changed in ``model`` (both gold dicts; ``steps``: the logged edits, for merges), as
    counts by kind (:data:`EDIT_KINDS`), the sizes of both graphs, the agreement between them (``events_kept``:
    the model's events still there; ``event_types``: of those, the share with the same type; ``temporal_f1``,
    ``causal_f1``: the model's edges against the corrected ones, AFTER read as BEFORE the other way, OVERLAP and
    SAME_TIME unordered, an absorbed event read as the one it was merged into; ``facts``: the sentences whose
    fact label the model had right) and the edits made, by operation."""
    steps = list(steps)
    merged = merges_in(steps)
    m_events = {e["id"]: e for e in model["graph"]["events"]}
    c_events = {e["id"]: e for e in corrected["graph"]["events"]}
    kept = [i for i in m_events if i in c_events]
    counts: Counter = Counter({k: 0 for k in EDIT_KINDS})
    counts["type_changes"] = sum(m_events[i]["type"] != c_events[i]["type"] for i in kept)
    counts["events_added"] = sum(i not in m_events for i in c_events)
    gone = [i for i in m_events if i not in c_events]
    counts["events_merged"] = sum(i in merged for i in gone)
    counts["events_deleted"] = len(gone) - counts["events_merged"]
    agreement: dict[str, float | None] = {
        "events_kept": len(kept) / len(m_events) if m_events else None,
        "event_types": (sum(m_events[i]["type"] == c_events[i]["type"] for i in kept) / len(kept)) if kept else None,
    }
    for kind in EDGE_RELATIONS:
        key = f"{kind}_edges"
        m = {_norm_edge(merged.get(e["source"], e["source"]), merged.get(e["target"], e["target"]), e["relation"])
             for e in model["graph"][key]}
        m = {e for e in m if e[0] != e[1]}
        c = {_norm_edge(e["source"], e["target"], e["relation"]) for e in corrected["graph"][key]}
        flipped = {e for e in m - c if e[2] not in ("OVERLAP", "SAME_TIME") and (e[1], e[0], e[2]) in c - m}
        counts[f"{kind}_reversed"] = len(flipped)
        counts[f"{kind}_added"] = len(c - m) - len(flipped)
        counts[f"{kind}_removed"] = len(m - c) - len(flipped)
        agreement[f"{kind}_f1"] = _f1(m, c)
    m_ents = {e["id"]: e for e in model["graph"]["entities"]}
    for e in corrected["graph"]["entities"]:
        before = m_ents.get(e["id"])
        if before is None:
            continue
        counts["entity_role_fixes"] += before["role"] != e["role"]
        counts["entity_kind_fixes"] += before["kind"] != e["kind"]
        counts["entity_alias_fixes"] += set(before["aliases"]) != set(e["aliases"])
        counts["entity_name_fixes"] += before["name"] != e["name"]
    m_facts = {tuple(s["span"]): s["fact"] for _, s in iter_sentences(model)}
    c_facts = {tuple(s["span"]): s["fact"] for _, s in iter_sentences(corrected)}
    both = [k for k in c_facts if k in m_facts]
    counts["fact_flips"] = sum(m_facts[k] != c_facts[k] for k in both)
    agreement["facts"] = (sum(m_facts[k] == c_facts[k] for k in both) / len(both)) if both else None
    edits = Counter(op.get("op") for step in steps for op in step.get("ops", []) if isinstance(op, Mapping))

    def sizes(g: Mapping) -> dict[str, int]:
        return {k: len(g["graph"][k]) for k in ("entities", "events", "temporal_edges", "causal_edges")}

    return {"changes": dict(counts), "total": sum(counts.values()), "agreement": agreement,
            "model": sizes(model), "corrected": sizes(corrected), "edits": dict(sorted(edits.items()))}


# ----------------------------------------------------------------------------- gold → a DocumentEKG to show


def _find_forms(text: str, spans: list[tuple[str, int, int]], forms: list[str]) -> list[Mention]:
    out: list[Mention] = []
    for form in forms:
        if len(form) < 2:
            continue
        pat = re.compile(r"(?<!\w)" + re.escape(form) + r"(?!\w)")
        for sid, a, b in spans:
            for m in pat.finditer(text, a, b):
                out.append(Mention(sentence_id=sid, span=(m.start(), m.end()), text=m.group(0), match="exact"))
    return sorted({(m.span, m.sentence_id): m for m in out}.values(), key=lambda m: m.span)


def display_ekg(ekg: DocumentEKG, gold: Mapping) -> DocumentEKG:
    """``gold`` over ``ekg``'s text as a ``DocumentEKG`` the view's panels can show: its sentences (their fact
    labels as corrected; each keeps the page of the EKG's sentence at its span), its graph (trigger spans from
    ``annotation.trigger_spans``; an entity keeps the EKG's mentions while its name and aliases are the model's,
    else its forms are found again in the facts sentences; an edge's ``origin`` says ``model`` or
    ``correction``)."""
    pages = {tuple(s.span): s.page for s in ekg.sentences}
    heads = {tuple(s.span): s.section_heading for s in ekg.sentences}
    sentences = []
    facts_spans: list[tuple[str, int, int]] = []
    par = 0
    for sec in gold.get("sections", []):
        for paragraph in sec.get("paragraphs", []):
            par += 1
            for s in paragraph:
                span = (int(s["span"][0]), int(s["span"][1]))
                kind = sec.get("kind", "other")
                sentences.append(SentenceRecord(
                    id=s["id"], text=s["text"], span=span, section=kind,
                    section_heading=sec.get("heading") or heads.get(span, ""), paragraph=par, page=pages.get(span),
                    fact=bool(s["fact"]), fact_probability=None, fact_path="none", in_narrative=kind == "facts"))
                if kind == "facts":
                    facts_spans.append((s["id"], *span))
    model_ents = {e.id: e for e in ekg.graph.entities}
    model_edges = {(kind, e.source, e.target, e.relation)
                   for kind, edges in (("temporal", ekg.graph.temporal_edges), ("causal", ekg.graph.causal_edges))
                   for e in edges}
    g = gold["graph"]
    entities = []
    for e in g["entities"]:
        before = model_ents.get(e["id"])
        same = before is not None and (before.name, set(before.aliases)) == (e["name"], set(e["aliases"]))
        mentions = list(before.mentions) if same else _find_forms(ekg.text, facts_spans, [e["name"], *e["aliases"]])
        entities.append(DocEntity(id=e["id"], name=e["name"], kind=e["kind"], role=e["role"],
                                  aliases=list(e["aliases"]), mentions=mentions))
    spans = gold.get("annotation", {}).get("trigger_spans", {})
    events = []
    for ev in g["events"]:
        span = spans.get(ev["id"])
        events.append(DocEvent(
            id=ev["id"], type=ev["type"], verb=ev["verb"], trigger=ev["trigger"], frame=ev.get("frame"),
            participants=[Participant(**p) for p in ev["participants"]], time=EventTime(**ev["time"]),
            evidence=list(ev["evidence"]), trigger_span=tuple(span) if span else None,
            trigger_match="exact" if span else None))

    def origin(kind: str, e: Mapping) -> str:
        return "model" if (kind, e["source"], e["target"], e["relation"]) in model_edges else "correction"

    temporal = [DocTemporalEdge(**e, origin=origin("temporal", e)) for e in g["temporal_edges"]]
    causal = [DocCausalEdge(**e, origin=origin("causal", e)) for e in g["causal_edges"]]
    return ekg.model_copy(update={
        "sentences": sentences, "graph": DocumentGraph(entities=entities, events=events, temporal_edges=temporal,
                                                       causal_edges=causal),
        "merge_log": [], "rejected": [], "chunks": [], "minigraphs": []})
