"""Scoring a predicted Event Knowledge Graph against the gold graph of an annotated complaint.

What is here (all pure functions; every result has ``.as_dict()`` and a readable ``feedback``):

- ``load_gold``: a ``gold.json`` (or its folder) as a ``GoldDocument``.
- ``sentence_alignment``: predicted sentence id -> gold sentence ids, through character spans.
- ``to_gold_space``: a ``DocumentEKG``'s graph with its evidence translated into gold sentence ids.
- ``match_graphs``: REGen-style tiered matching (``exact``, ``relaxed``, optional ``llm``) of
  entities, events, temporal and causal edges, with precision / recall / F1 per tier.
- ``fact_scores``: Fact / Non-Fact classification scores over the gold sentences.
- ``merge_stats``: what the document merge did (ARGUS Table 5: Pre-Ev, Post-Ev, Loss, Pre-En, Post-En).
- ``score_document``: all of it as one flat row for a pandas DataFrame.

Conventions (each is tested in ``tests/test_gold_metrics.py``):

Sentence alignment
    The pipeline numbers sentences by its own segmentation, so ids are never compared directly
    across the two sides. A predicted sentence ``p`` and a gold sentence ``g`` are aligned when
    their character spans (both into the original ``complaint.txt``) overlap by at least half of
    the shorter of the two spans: ``|p ∩ g| >= 0.5 * min(|p|, |g|)`` and ``|p ∩ g| > 0``.
    A predicted sentence that glues two gold sentences together therefore aligns to both; a
    predicted sentence that only grazes a neighbour (a few characters) does not. Zero-length
    spans align to nothing.

Precision / recall with nothing on one side
    ``P = tp / (tp + fp)`` and ``R = tp / (tp + fn)``; a 0/0 is reported as 0.0, except that when
    both sides are empty P = R = F1 = 1.0 (nothing to find, nothing wrongly found). Each such case
    leaves a ``note`` on the score. So an empty prediction against a non-empty gold graph scores
    P = R = F1 = 0.0 (tp = fp = 0), not P = 1.0.

Alignment
    One-to-one, by ``scipy.optimize.linear_sum_assignment`` on a compatibility matrix. Only
    compatible pairs get a positive weight ``1 + quality / (min(n, m) + 1)`` with ``quality`` in
    [0, 1]: the number of matched pairs is maximized first, the quality (evidence Jaccard, same
    type, same trigger, …) only breaks ties between alignments of equal size.

Entities
    Names are normalized (casefold, punctuation to spaces, titles ``Ms. Mr. Mrs. Dr. …`` and
    company suffixes ``Inc. LLC Corp. …`` and a leading ``the`` dropped unless nothing would
    remain). *exact*: the normalized name of one side is the name or an alias of the other, and
    the ``kind`` is equal. *relaxed*: the two name+alias sets share a name, or the tokens of a name
    of one side are a subset of the tokens of a name of the other ("Torres" ⊂ "Maria Elena
    Torres"); kind and role are ignored (they only break ties).

Events
    Verbs are normalized with a crude stemmer (casefold; each token loses ``-ing/-ed/-es/-s``, a
    doubled final consonant and a final ``e``; a few irregular forms map to their base:
    told -> tell, said -> say, …). *exact*: same ``type``, same normalized verb, identical evidence
    set (gold ids). *relaxed*: at least one shared gold evidence sentence, and the same type or
    compatible verbs (equal, or in one of the ``VERB_GROUPS``). An event whose evidence maps to no
    gold sentence has an empty evidence set and cannot match in either tier. *llm*: the relaxed
    alignment plus the pairs an ``event_judge`` accepts among the still unmatched pairs whose
    evidence overlaps or is adjacent (gold sentence positions differ by at most 1); the judge's
    accepted pairs are aligned one-to-one. The tier is skipped with a note when no judge is given.

Edges
    ``AFTER(a, b)`` is read as ``BEFORE(b, a)``; ``OVERLAP`` and ``SAME_TIME`` are unordered.
    Causal edges are directed and the relation must be equal. A predicted edge is a hit when both
    endpoints are aligned (in that tier's event alignment) to the endpoints of a gold edge with the
    same normalized relation. Duplicate predicted (and gold) edges count once. The relaxed and llm
    tiers also report a relation-agnostic score (``temporal_any``, ``causal_any``) over unordered
    endpoint pairs: any relation, either direction (direction is part of the relation).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
from scipy.optimize import linear_sum_assignment

from argus.schema import DocumentEKG, EventGraph, id_order
from metrics.base import precision_recall_f1

__all__ = [
    "GoldSentence", "GoldDocument", "load_gold", "sentence_alignment", "EntityView", "EventView",
    "EdgeView", "GraphView", "graph_view", "to_gold_space", "describe_event_for_match", "PRF",
    "TierScores", "GoldScores", "match_graphs", "FactScores", "fact_scores", "MergeStats",
    "merge_stats", "score_document", "normalize_entity_name", "normalize_verb", "verbs_compatible",
    "VERB_GROUPS", "MIN_SPAN_OVERLAP", "MAX_FEEDBACK_LINES",
]

MIN_SPAN_OVERLAP = 0.5  # of the shorter span
MAX_FEEDBACK_LINES = 40
TIERS = ("exact", "relaxed", "llm")

EventJudge = Callable[[str, str], bool]


def _cap(lines: list[str], limit: int = MAX_FEEDBACK_LINES) -> str:
    if len(lines) > limit:
        rest = len(lines) - (limit - 1)
        lines = lines[: limit - 1] + [f"… and {rest} more"]
    return "\n".join(lines)


def _sids(ids: Iterable[str]) -> list[str]:
    return sorted(set(ids), key=id_order)


def _fmt_sids(ids: Iterable[str]) -> str:
    ids = _sids(ids)
    return ",".join(ids) if ids else "∅"


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


# ============================================================================ gold documents


@dataclass
class GoldSentence:
    id: str
    text: str
    span: tuple[int, int]
    fact: bool
    section: str  # the section kind: intro, jurisdiction, parties, procedural, facts, count, prayer, other
    heading: str = ""
    paragraph: int = 0  # index of the paragraph in the whole document (0-based)

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class GoldDocument:
    doc_id: str
    sentences: list[GoldSentence]
    graph: EventGraph
    claims: list[str] = field(default_factory=list)
    faq: list[dict] = field(default_factory=list)  # raw
    meta: dict = field(default_factory=dict)  # the other top-level keys, raw (district, court, …)
    path: str | None = None

    @property
    def sentence_text(self) -> dict[str, str]:
        return {s.id: s.text for s in self.sentences}

    @property
    def fact_section_ids(self) -> list[str]:
        return [s.id for s in self.sentences if s.section == "facts"]

    def as_dict(self) -> dict:
        return {
            "doc_id": self.doc_id, "path": self.path, "claims": list(self.claims), "faq": list(self.faq),
            "meta": dict(self.meta), "sentences": [s.as_dict() for s in self.sentences],
            "graph": self.graph.model_dump(),
        }


def load_gold(path_or_dir: str | Path | Mapping) -> GoldDocument:
    """A ``gold.json`` (a path to it, to its folder, or the parsed dict) as a ``GoldDocument``."""
    path: str | None = None
    if isinstance(path_or_dir, Mapping):
        data = dict(path_or_dir)
    else:
        p = Path(path_or_dir)
        if p.is_dir():
            p = p / "gold.json"
        data = json.loads(p.read_text(encoding="utf-8"))
        path = str(p)
    sentences: list[GoldSentence] = []
    par = 0
    for sec in data.get("sections", []):
        kind = sec.get("kind", "other")
        for paragraph in sec.get("paragraphs", []):
            for s in paragraph:
                span = s.get("span") or (0, 0)
                sentences.append(GoldSentence(
                    id=s["id"], text=s.get("text", ""), span=(int(span[0]), int(span[1])),
                    fact=bool(s.get("fact", False)), section=s.get("section", kind) or kind,
                    heading=sec.get("heading", ""), paragraph=par,
                ))
            par += 1
    meta = {k: v for k, v in data.items() if k not in ("sections", "graph", "claims", "faq", "doc_id")}
    return GoldDocument(
        doc_id=data.get("doc_id", Path(path).parent.name if path else ""),
        sentences=sentences,
        graph=EventGraph.model_validate(data.get("graph", {})),
        claims=list(data.get("claims", [])),
        faq=list(data.get("faq", [])),
        meta=meta,
        path=path,
    )


# ============================================================================ sentence alignment


def _span_overlap_ok(a: tuple[int, int], b: tuple[int, int]) -> bool:
    la, lb = a[1] - a[0], b[1] - b[0]
    if la <= 0 or lb <= 0:
        return False
    inter = min(a[1], b[1]) - max(a[0], b[0])
    return inter > 0 and inter >= MIN_SPAN_OVERLAP * min(la, lb)


def sentence_alignment(pred_sentences: Sequence, gold_sentences: Sequence) -> dict[str, list[str]]:
    """Predicted sentence id -> the gold sentence ids whose spans overlap it (module docstring rule).

    Items may be pydantic models, dataclasses or dicts with ``id`` and ``span``. Every predicted id
    is a key (possibly with an empty list); gold ids come in gold order.
    """
    gold = [(_get(g, "id"), tuple(_get(g, "span") or (0, 0))) for g in gold_sentences]
    order = sorted(range(len(gold)), key=lambda i: gold[i][1][0])
    starts = [gold[i][1][0] for i in order]
    out: dict[str, list[str]] = {}
    for p in pred_sentences:
        pid, pspan = _get(p, "id"), tuple(_get(p, "span") or (0, 0))
        hits: list[int] = []
        # gold spans never overlap each other much, so scanning from a little before works; a
        # plain scan keeps it obviously correct (documents have ~100-200 sentences).
        for i in order:
            if starts and gold[i][1][0] >= pspan[1]:
                break
            if _span_overlap_ok(pspan, gold[i][1]):
                hits.append(i)
        out[pid] = [gold[i][0] for i in sorted(hits)]
    return out


def _invert(alignment: Mapping[str, list[str]]) -> dict[str, list[str]]:
    inv: dict[str, list[str]] = {}
    for pid, gids in alignment.items():
        for g in gids:
            inv.setdefault(g, []).append(pid)
    return inv


# ============================================================================ graph views


_TITLES = {"ms", "mr", "mrs", "miss", "mx", "dr", "prof", "professor", "sgt", "hon", "rev"}
_SUFFIXES = {"inc", "incorporated", "llc", "l", "c", "corp", "corporation", "co", "ltd", "lp", "llp", "pllc",
             "pc", "plc", "na"}
_PUNCT = re.compile(r"[^\w\s]+|_")


def normalize_entity_name(name: str) -> str:
    """Casefold, punctuation to spaces, titles / company suffixes / a leading 'the' dropped."""
    toks = _PUNCT.sub(" ", name.casefold()).split()
    kept = [t for t in toks if t not in _TITLES and t not in _SUFFIXES]
    if kept and kept[0] == "the" and len(kept) > 1:
        kept = kept[1:]
    return " ".join(kept if kept else toks)


_IRREGULAR = {
    "told": "tell", "said": "say", "says": "say", "made": "make", "gave": "give", "given": "give",
    "sent": "send", "wrote": "write", "written": "write", "took": "take", "taken": "take", "met": "meet",
    "left": "leave", "began": "begin", "begun": "begin", "saw": "see", "seen": "see", "went": "go",
    "gone": "go", "heard": "hear", "spoke": "speak", "spoken": "speak", "paid": "pay", "laid": "lay",
    "forgot": "forget", "got": "get", "gotten": "get", "held": "hold", "kept": "keep", "brought": "bring",
    "sought": "seek", "thought": "think", "felt": "feel", "fell": "fall", "quit": "quit", "let": "let",
    "put": "put", "cut": "cut", "set": "set", "hit": "hit", "struck": "strike", "threw": "throw",
    "became": "become", "came": "come", "ran": "run", "withheld": "withhold", "rode": "ride",
}


def _stem(tok: str) -> str:
    tok = _IRREGULAR.get(tok, tok)
    if len(tok) > 4 and (tok.endswith("ies") or tok.endswith("ied")):
        tok = tok[:-3] + "y"
    elif len(tok) > 5 and tok.endswith("ing"):
        tok = tok[:-3]
    elif len(tok) > 4 and tok.endswith("ed"):
        tok = tok[:-2]
    elif len(tok) > 4 and tok.endswith("es") and not tok.endswith("ses"):
        tok = tok[:-2]
    elif len(tok) > 3 and tok.endswith("s") and not tok.endswith("ss"):
        tok = tok[:-1]
    if len(tok) > 3 and tok[-1] == tok[-2] and tok[-1] not in "aeiouls":
        tok = tok[:-1]  # stopp -> stop, transferr -> transfer (tell/call/pass keep their pair)
    if len(tok) > 3 and tok.endswith("e"):
        tok = tok[:-1]
    return tok


def normalize_verb(verb: str) -> str:
    """Lowercase lemma-ish form: each token casefolded and crudely stemmed."""
    toks = re.sub(r"[^\w\s-]+", " ", verb.casefold()).replace("-", "").split()
    return " ".join(_stem(t) for t in toks)


# Small groups of verbs that state the same kind of occurrence (relaxed tier).
VERB_GROUPS: dict[str, tuple[str, ...]] = {
    "termination": ("fire", "terminate", "discharge", "dismiss", "let go", "lay off", "sack", "separate"),
    "communication": ("tell", "say", "inform", "state", "advise", "notify", "explain", "remark", "comment",
                      "mention", "announce", "email", "e-mail", "text", "write", "reply", "respond", "answer",
                      "call", "message"),
    "complaint": ("complain", "report", "object", "protest", "grieve", "raise concern"),
    "hiring": ("hire", "employ", "recruit", "engage", "onboard", "begin work", "start", "join", "take job"),
    "denial": ("deny", "refuse", "reject", "decline", "turn down"),
    "request": ("ask", "request", "seek", "apply", "petition"),
    "resignation": ("resign", "quit", "leave job"),
    "discipline": ("discipline", "warn", "reprimand", "suspend", "write up", "counsel", "place on pip",
                   "sanction", "issue warning"),
    "reassignment": ("transfer", "reassign", "move", "assign", "relocate", "remove"),
    "promotion": ("promote", "elevate", "advance"),
    "harassment": ("harass", "mock", "ridicule", "insult", "belittle", "touch", "grope", "use slur", "taunt"),
    "investigation": ("investigate", "review", "interview", "examine", "look into", "inquire"),
    "charge": ("file charge", "file", "charge"),
    "diagnosis": ("diagnose", "treat"),
    "approval": ("approve", "grant", "accept", "allow"),
}
_VERB_GROUP: dict[str, set[str]] = {}
for _g, _verbs in VERB_GROUPS.items():
    for _v in _verbs:
        _VERB_GROUP.setdefault(normalize_verb(_v), set()).add(_g)


def _verb_groups(nverb: str) -> set[str]:
    if not nverb:
        return set()
    groups = set(_VERB_GROUP.get(nverb, ()))
    head = nverb.split()[0]
    groups |= _VERB_GROUP.get(head, set())
    return groups


def verbs_compatible(a: str, b: str) -> bool:
    """Equal normalized verbs, or verbs of one ``VERB_GROUPS`` group (by phrase or head token)."""
    na, nb = normalize_verb(a), normalize_verb(b)
    if not na or not nb:
        return False
    return na == nb or bool(_verb_groups(na) & _verb_groups(nb))


@dataclass
class EntityView:
    id: str
    name: str
    kind: str
    role: str
    aliases: tuple[str, ...] = ()

    @property
    def names(self) -> frozenset[str]:
        return frozenset(n for n in (normalize_entity_name(x) for x in (self.name, *self.aliases)) if n)

    @property
    def norm_name(self) -> str:
        return normalize_entity_name(self.name)


@dataclass
class EventView:
    id: str
    type: str
    verb: str
    trigger: str = ""
    evidence: frozenset[str] = frozenset()  # gold sentence ids (after translation)
    source_evidence: tuple[str, ...] = ()  # as written in the source graph (pred ids before translation)
    participants: tuple[tuple[str, str], ...] = ()
    time: str = ""
    frame: str | None = None

    @property
    def norm_verb(self) -> str:
        return normalize_verb(self.verb)


@dataclass
class EdgeView:
    source: str
    target: str
    relation: str
    evidence: tuple[str, ...] = ()


@dataclass
class GraphView:
    """A lightweight graph in gold sentence space (evidence may be empty; no validation)."""

    entities: list[EntityView] = field(default_factory=list)
    events: list[EventView] = field(default_factory=list)
    temporal_edges: list[EdgeView] = field(default_factory=list)
    causal_edges: list[EdgeView] = field(default_factory=list)
    sentence_text: dict[str, str] = field(default_factory=dict)  # gold id -> text
    sentence_order: dict[str, int] = field(default_factory=dict)  # gold id -> position in the document
    translated: bool = False  # evidence was mapped from another sentence numbering
    notes: list[str] = field(default_factory=list)

    def event(self, eid: str) -> EventView | None:
        return next((e for e in self.events if e.id == eid), None)

    def entity(self, eid: str) -> EntityView | None:
        return next((e for e in self.entities if e.id == eid), None)

    def position(self, sid: str) -> int:
        return self.sentence_order.get(sid, id_order(sid)[0])

    def as_dict(self) -> dict:
        return {
            "entities": [asdict(e) for e in self.entities],
            "events": [{**asdict(e), "evidence": _sids(e.evidence)} for e in self.events],
            "temporal_edges": [asdict(e) for e in self.temporal_edges],
            "causal_edges": [asdict(e) for e in self.causal_edges],
            "translated": self.translated, "notes": list(self.notes),
        }


def _time_str(t: Any) -> str:
    if t is None:
        return ""
    kind, value = _get(t, "kind", ""), _get(t, "value")
    return f"{kind}:{value}" if value else str(kind or "")


def graph_view(graph: Any, sentence_text: Mapping[str, str] | None = None,
               evidence_map: Mapping[str, list[str]] | None = None) -> GraphView:
    """A ``GraphView`` of an ``EventGraph`` / ``DocumentGraph`` / dict graph.

    With ``evidence_map`` (source sentence id -> gold ids) the evidence is translated; without it
    the ids are taken as they are (gold against gold needs no translation).
    """
    if isinstance(graph, GraphView):
        return graph
    if isinstance(graph, GoldDocument):
        return graph_view(graph.graph, graph.sentence_text if sentence_text is None else sentence_text)
    ents = [EntityView(id=_get(e, "id"), name=_get(e, "name", ""), kind=_get(e, "kind", "other"),
                       role=_get(e, "role", "other"), aliases=tuple(_get(e, "aliases", []) or ()))
            for e in (_get(graph, "entities", []) or [])]
    events = []
    for e in _get(graph, "events", []) or []:
        src = tuple(_get(e, "evidence", []) or ())
        if evidence_map is None:
            ev = frozenset(src)
        else:
            ev = frozenset(g for s in src for g in evidence_map.get(s, ()))
        parts = tuple((_get(p, "entity"), _get(p, "role", "")) for p in (_get(e, "participants", []) or []))
        events.append(EventView(id=_get(e, "id"), type=_get(e, "type", "other"), verb=_get(e, "verb", ""),
                                trigger=_get(e, "trigger", "") or "", evidence=ev, source_evidence=src,
                                participants=parts, time=_time_str(_get(e, "time")), frame=_get(e, "frame")))

    def edges(key: str) -> list[EdgeView]:
        return [EdgeView(_get(x, "source"), _get(x, "target"), _get(x, "relation"), tuple(_get(x, "evidence", []) or ()))
                for x in (_get(graph, key, []) or [])]

    text = dict(sentence_text or {})
    order = {sid: i for i, sid in enumerate(sorted(text, key=id_order))} if text else {}
    return GraphView(ents, events, edges("temporal_edges"), edges("causal_edges"), text, order,
                     translated=evidence_map is not None)


def to_gold_space(ekg: DocumentEKG, gold: GoldDocument) -> GraphView:
    """The EKG's document graph with every evidence id translated into gold sentence ids.

    Events whose evidence maps to no gold sentence keep an empty evidence set (they cannot match).
    """
    alignment = sentence_alignment(ekg.sentences, gold.sentences)
    view = graph_view(ekg.graph, gold.sentence_text, alignment)
    view.sentence_order = {s.id: i for i, s in enumerate(gold.sentences)}
    empty = [e.id for e in view.events if not e.evidence]
    if empty:
        view.notes.append(f"{len(empty)} predicted event(s) with evidence aligned to no gold sentence: {', '.join(empty)}")
    return view


def _as_view(x: Any, gold: GoldDocument | None = None) -> GraphView:
    if isinstance(x, GraphView):
        return x
    if isinstance(x, DocumentEKG):
        if gold is None:
            raise TypeError("a DocumentEKG can only be scored against a GoldDocument (its sentence numbering differs)")
        return to_gold_space(x, gold)
    if isinstance(x, GoldDocument):
        v = graph_view(x.graph, x.sentence_text)
        v.sentence_order = {s.id: i for i, s in enumerate(x.sentences)}
        return v
    v = graph_view(x, gold.sentence_text if gold is not None else None)
    if gold is not None:
        v.sentence_order = {s.id: i for i, s in enumerate(gold.sentences)}
    return v


# ============================================================================ descriptions


def describe_event_for_match(event: Any, graph: Any = None, sentence_text_by_id: Mapping[str, str] | None = None) -> str:
    """A readable description of one event (type, verb, trigger, participants, time, evidence text).

    ``event`` is an ``EventView`` or a schema ``Event``; ``graph`` (any graph shape, optional)
    resolves participant ids to names; evidence texts come from ``sentence_text_by_id``.
    """
    ents = {}
    if graph is not None:
        for e in _get(graph, "entities", []) or []:
            ents[_get(e, "id")] = _get(e, "name", "")
    if isinstance(event, EventView):
        etype, verb, trig, parts, time, ev = event.type, event.verb, event.trigger, event.participants, event.time, event.evidence
    else:
        etype, verb, trig = _get(event, "type"), _get(event, "verb", ""), _get(event, "trigger", "")
        parts = tuple((_get(p, "entity"), _get(p, "role", "")) for p in (_get(event, "participants", []) or []))
        time, ev = _time_str(_get(event, "time")), _get(event, "evidence", []) or []
    lines = [f"{etype} event: verb '{verb}', trigger '{trig}'"]
    if parts:
        lines.append("participants: " + "; ".join(f"{ents.get(eid, eid)} ({role})" for eid, role in parts))
    if time:
        lines.append(f"time: {time}")
    texts = sentence_text_by_id or {}
    for sid in _sids(ev):
        lines.append(f"[{sid}] {texts.get(sid, '')}".rstrip())
    if not ev:
        lines.append("(no evidence sentence)")
    return "\n".join(lines)


# ============================================================================ scores


@dataclass
class PRF:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    precision: float = 0.0
    recall: float = 0.0
    f1: float = 0.0
    note: str = ""

    @classmethod
    def from_counts(cls, tp: int, fp: int, fn: int) -> "PRF":
        p, r, f = precision_recall_f1(tp, fp, fn)
        if tp + fp + fn == 0:
            return cls(0, 0, 0, p, r, f, "both sides empty: P=R=F1=1.0 by convention")
        note = ""
        if tp + fp == 0:
            note = "nothing predicted: precision 0/0 reported as 0.0"
        elif tp + fn == 0:
            note = "nothing in gold: recall 0/0 reported as 0.0"
        return cls(tp, fp, fn, p, r, f, note)

    def as_dict(self) -> dict:
        return asdict(self)

    def short(self) -> str:
        return f"P={self.precision:.2f} R={self.recall:.2f} F1={self.f1:.2f} ({self.tp}/{self.fp}/{self.fn})"


@dataclass
class TierScores:
    tier: str
    entities: PRF
    events: PRF
    temporal: PRF
    causal: PRF
    temporal_any: PRF | None = None  # relation-agnostic (relaxed / llm tiers)
    causal_any: PRF | None = None
    entity_alignment: dict[str, str] = field(default_factory=dict)  # pred id -> gold id
    event_alignment: dict[str, str] = field(default_factory=dict)
    judge_calls: int = 0

    def as_dict(self) -> dict:
        d = {"tier": self.tier}
        for k in ("entities", "events", "temporal", "causal", "temporal_any", "causal_any"):
            v = getattr(self, k)
            d[k] = v.as_dict() if v is not None else None
        d.update(entity_alignment=dict(self.entity_alignment), event_alignment=dict(self.event_alignment),
                 judge_calls=self.judge_calls)
        return d


@dataclass
class GoldScores:
    tiers: dict[str, TierScores]
    notes: list[str] = field(default_factory=list)
    feedback: str = ""

    def __getitem__(self, tier: str) -> TierScores:
        return self.tiers[tier]

    def as_dict(self) -> dict:
        return {"tiers": {k: v.as_dict() for k, v in self.tiers.items()}, "notes": list(self.notes),
                "feedback": self.feedback}


# ============================================================================ alignment


def _assign(n: int, m: int, pairs: dict[tuple[int, int], float]) -> list[tuple[int, int]]:
    """One-to-one alignment maximizing the number of pairs, then the summed quality (in [0, 1])."""
    if not pairs or n == 0 or m == 0:
        return []
    scale = 1.0 / (min(n, m) + 1)
    w = np.zeros((n, m))
    for (i, j), q in pairs.items():
        w[i, j] = 1.0 + max(0.0, min(1.0, q)) * scale
    rows, cols = linear_sum_assignment(w, maximize=True)
    return [(int(i), int(j)) for i, j in zip(rows, cols) if w[i, j] > 0]


def _tokens_subset(a: str, b: str) -> bool:
    ta, tb = set(a.split()), set(b.split())
    return bool(ta) and bool(tb) and (ta <= tb or tb <= ta)


def _token_jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    ta = {t for n in a for t in n.split()}
    tb = {t for n in b for t in n.split()}
    return len(ta & tb) / len(ta | tb) if ta | tb else 0.0


def _entity_pairs(pred: list[EntityView], gold: list[EntityView], tier: str) -> dict[tuple[int, int], float]:
    pairs: dict[tuple[int, int], float] = {}
    gnames = [(g.norm_name, g.names) for g in gold]
    for i, p in enumerate(pred):
        pn, pnames = p.norm_name, p.names
        for j, g in enumerate(gold):
            gn, gns = gnames[j]
            exact = (pn and pn in gns) or (gn and gn in pnames)
            if tier == "exact":
                if not (exact and p.kind == g.kind):
                    continue
                q = 0.6 * (pn == gn) + 0.2 * (p.role == g.role) + 0.2 * _token_jaccard(pnames, gns)
            else:
                shared = bool(pnames & gns)
                contained = shared or any(_tokens_subset(a, b) for a in pnames for b in gns)
                if not contained:
                    continue
                q = 0.4 * shared + 0.1 * (pn == gn) + 0.3 * _token_jaccard(pnames, gns) \
                    + 0.1 * (p.kind == g.kind) + 0.1 * (p.role == g.role)
            pairs[(i, j)] = q
    return pairs


def _event_quality(p: EventView, g: EventView) -> float:
    inter, union = len(p.evidence & g.evidence), len(p.evidence | g.evidence)
    jac = inter / union if union else 0.0
    return 0.6 * jac + 0.15 * (p.type == g.type) + 0.1 * (p.norm_verb == g.norm_verb) \
        + 0.1 * (p.trigger.casefold() == g.trigger.casefold()) + 0.05 * (p.time == g.time)


def _event_pairs(pred: list[EventView], gold: list[EventView], tier: str) -> dict[tuple[int, int], float]:
    pairs: dict[tuple[int, int], float] = {}
    for i, p in enumerate(pred):
        if not p.evidence:
            continue
        for j, g in enumerate(gold):
            if tier == "exact":
                if p.type == g.type and p.norm_verb == g.norm_verb and p.evidence == g.evidence:
                    pairs[(i, j)] = _event_quality(p, g)
            else:
                if p.evidence & g.evidence and (p.type == g.type or verbs_compatible(p.verb, g.verb)):
                    pairs[(i, j)] = _event_quality(p, g)
    return pairs


def _adjacent(p: EventView, g: EventView, pv: GraphView, gv: GraphView) -> bool:
    if not p.evidence or not g.evidence:
        return False
    if p.evidence & g.evidence:
        return True
    pi = [gv.position(s) for s in p.evidence]
    gi = [gv.position(s) for s in g.evidence]
    return min(abs(a - b) for a in pi for b in gi) <= 1


def _judge_pairs(pv: GraphView, gv: GraphView, base: dict[str, str], judge: EventJudge) -> tuple[dict[str, str], int]:
    matched_p, matched_g = set(base), set(base.values())
    free_p = [i for i, e in enumerate(pv.events) if e.id not in matched_p]
    free_g = [j for j, e in enumerate(gv.events) if e.id not in matched_g]
    accepted: dict[tuple[int, int], float] = {}
    calls = 0
    for i in free_p:
        p = pv.events[i]
        for j in free_g:
            g = gv.events[j]
            if not _adjacent(p, g, pv, gv):
                continue
            calls += 1
            if judge(describe_event_for_match(p, pv, pv.sentence_text or gv.sentence_text),
                     describe_event_for_match(g, gv, gv.sentence_text)):
                accepted[(i, j)] = _event_quality(p, g)
    out = dict(base)
    for i, j in _assign(len(pv.events), len(gv.events), accepted):
        out[pv.events[i].id] = gv.events[j].id
    return out, calls


# ============================================================================ edges


def _temporal_key(src: str, tgt: str, rel: str) -> tuple:
    if rel == "AFTER":
        return ("BEFORE", tgt, src)
    if rel in ("OVERLAP", "SAME_TIME"):
        a, b = sorted((src, tgt))
        return (rel, a, b)
    return (rel, src, tgt)


def _causal_key(src: str, tgt: str, rel: str) -> tuple:
    return (rel, src, tgt)


def _fmt_key(key: tuple, kind: str) -> str:
    rel, a, b = key
    if kind == "temporal" and rel in ("OVERLAP", "SAME_TIME"):
        return f"{a}-{rel}-{b}"
    return f"{a}-{rel}->{b}"


def _score_edges(pred: list[EdgeView], gold: list[EdgeView], align: Mapping[str, str], kind: str,
                 agnostic: bool) -> tuple[PRF, PRF | None, list[str], list[str]]:
    keyf = _temporal_key if kind == "temporal" else _causal_key
    pkeys = list(dict.fromkeys(keyf(e.source, e.target, e.relation) for e in pred))
    gkeys = set(keyf(e.source, e.target, e.relation) for e in gold)
    hit_gold: set[tuple] = set()
    spurious: list[str] = []
    for k in pkeys:
        rel, a, b = k
        ma, mb = align.get(a), align.get(b)
        mk = keyf(ma, mb, rel) if ma is not None and mb is not None else None
        if mk is not None and mk in gkeys and mk not in hit_gold:
            hit_gold.add(mk)
            continue
        why = ", ".join(f"{x} unaligned" for x, m in ((a, ma), (b, mb)) if m is None)
        if not why:
            why = f"gold has no {_fmt_key(mk, kind)}"
        spurious.append(f"{kind} {_fmt_key(k, kind)} not in gold ({why})")
    gold_sorted = sorted(gkeys, key=lambda k: (id_order(k[1]), id_order(k[2]), k[0]))
    missed = [f"missed gold {kind} {_fmt_key(k, kind)}" for k in gold_sorted if k not in hit_gold]
    strict = PRF.from_counts(len(hit_gold), len(pkeys) - len(hit_gold), len(gkeys) - len(hit_gold))
    any_score = None
    if agnostic:
        ppairs = set(frozenset((a, b)) for _, a, b in pkeys)
        gpairs = set(frozenset((a, b)) for _, a, b in gkeys)
        tp = 0
        for pair in ppairs:
            mapped = frozenset(align.get(x) for x in pair)
            if None not in mapped and len(mapped) == len(pair) and mapped in gpairs:
                tp += 1
        any_score = PRF.from_counts(tp, len(ppairs) - tp, len(gpairs) - tp)
    return strict, any_score, spurious, missed


# ============================================================================ matching


def _event_label(e: EventView, view: GraphView, side: str) -> str:
    trig = e.trigger or e.verb
    if len(trig) > 40:
        trig = trig[:40] + "…"
    if side == "gold" or not view.translated:
        where = _fmt_sids(e.evidence)
    else:
        where = f"{_fmt_sids(e.source_evidence)} → gold {_fmt_sids(e.evidence)}"
    return f"{e.id} ({e.type} '{trig}', {where})"


def match_graphs(pred: Any, gold: Any, *, tiers: Sequence[str] = ("exact", "relaxed"),
                 event_judge: EventJudge | None = None) -> GoldScores:
    """Score ``pred`` against ``gold`` per tier (see the module docstring for every rule).

    ``pred``: a ``GraphView`` (e.g. from ``to_gold_space``), a ``DocumentEKG`` (translated
    automatically; needs a ``GoldDocument``), or any graph whose evidence already uses gold ids.
    ``gold``: a ``GoldDocument``, an ``EventGraph`` or a ``GraphView``.
    """
    gold_doc = gold if isinstance(gold, GoldDocument) else None
    gv = _as_view(gold)
    pv = _as_view(pred, gold_doc)
    pv = replace(pv, sentence_text=pv.sentence_text or gv.sentence_text,
                 sentence_order=pv.sentence_order or gv.sentence_order)
    notes = list(pv.notes)
    unknown = [t for t in tiers if t not in TIERS]
    if unknown:
        raise ValueError(f"unknown tier(s) {unknown}; choose from {TIERS}")
    wanted = [t for t in TIERS if t in tiers]
    if "llm" in wanted and event_judge is None:
        wanted.remove("llm")
        notes.append("tier 'llm' skipped: no event_judge given")
    need = set(wanted) | ({"relaxed"} if "llm" in wanted else set())

    results: dict[str, TierScores] = {}
    details: dict[str, dict] = {}
    for tier in [t for t in TIERS if t in need]:
        base_tier = "relaxed" if tier == "llm" else tier
        ent_pairs = _assign(len(pv.entities), len(gv.entities), _entity_pairs(pv.entities, gv.entities, base_tier))
        ent_align = {pv.entities[i].id: gv.entities[j].id for i, j in ent_pairs}
        calls = 0
        if tier == "llm":
            ev_align, calls = _judge_pairs(pv, gv, results["relaxed"].event_alignment, event_judge)
        else:
            ev_pairs = _assign(len(pv.events), len(gv.events), _event_pairs(pv.events, gv.events, tier))
            ev_align = {pv.events[i].id: gv.events[j].id for i, j in ev_pairs}
        n_ent, n_ev = len(ent_align), len(ev_align)
        ents = PRF.from_counts(n_ent, len(pv.entities) - n_ent, len(gv.entities) - n_ent)
        evs = PRF.from_counts(n_ev, len(pv.events) - n_ev, len(gv.events) - n_ev)
        agn = tier != "exact"
        tmp, tmp_any, t_spur, t_miss = _score_edges(pv.temporal_edges, gv.temporal_edges, ev_align, "temporal", agn)
        cau, cau_any, c_spur, c_miss = _score_edges(pv.causal_edges, gv.causal_edges, ev_align, "causal", agn)
        results[tier] = TierScores(tier, ents, evs, tmp, cau, tmp_any, cau_any, ent_align, ev_align, calls)
        details[tier] = {"edge_spurious": t_spur + c_spur, "edge_missed": t_miss + c_miss}
    for tier in list(results):
        if tier not in wanted:
            del results[tier]
    for name, view in (("predicted", pv), ("gold", gv)):
        if not view.events and not view.entities:
            notes.append(f"{name} graph is empty")

    scores = GoldScores(results, notes)
    scores.feedback = _feedback(scores, pv, gv, details)
    return scores


def _section(lines: list[str], items: list[str], what: str, limit: int = 8) -> None:
    """Append at most ``limit`` items of one kind, then '… and N more <what>'."""
    if len(items) > limit:
        lines.extend(items[: limit - 1])
        lines.append(f"… and {len(items) - (limit - 1)} more {what}")
    else:
        lines.extend(items)


def _feedback(scores: GoldScores, pv: GraphView, gv: GraphView, details: dict) -> str:
    lines: list[str] = []
    for t, s in scores.tiers.items():
        lines.append(f"{t}: entities {s.entities.short()}; events {s.events.short()}; "
                     f"temporal {s.temporal.short()}; causal {s.causal.short()}")
    lines.extend(scores.notes)
    if not scores.tiers:
        return _cap(lines)
    loose = list(scores.tiers)[-1]
    ts = scores.tiers[loose]
    matched_g = set(ts.event_alignment.values())
    missed = [f"missed gold {_event_label(g, gv, 'gold')}" for g in gv.events if g.id not in matched_g]
    spurious = [f"spurious {_event_label(p, pv, 'pred')}" for p in pv.events if p.id not in ts.event_alignment]
    near: list[str] = []
    if "exact" in scores.tiers and loose != "exact":
        exact = scores.tiers["exact"].event_alignment
        gidx = {e.id: e for e in gv.events}
        for p in pv.events:
            gid = ts.event_alignment.get(p.id)
            if gid is None or exact.get(p.id) == gid:
                continue
            g = gidx[gid]
            diffs = []
            if p.type != g.type:
                diffs.append(f"type {p.type}≠{g.type}")
            if p.norm_verb != g.norm_verb:
                diffs.append(f"verb '{p.verb}'≠'{g.verb}'")
            if p.evidence != g.evidence:
                diffs.append(f"evidence {_fmt_sids(p.evidence)} vs {_fmt_sids(g.evidence)}")
            if not diffs:
                diffs.append("the exact tier aligned it elsewhere")
            near.append(f"{p.id} ≈ gold {gid} only in the {loose} tier: {'; '.join(diffs)}")
    matched_ge = set(ts.entity_alignment.values())
    ents = [f"missed gold entity {g.id} '{g.name}' ({g.kind}, {g.role})" for g in gv.entities if g.id not in matched_ge]
    ents += [f"spurious entity {p.id} '{p.name}' ({p.kind}, {p.role})" for p in pv.entities if p.id not in ts.entity_alignment]
    edge_spur, edge_miss = details[loose]["edge_spurious"], details[loose]["edge_missed"]
    _section(lines, spurious, "spurious events")
    _section(lines, near, "partial matches")
    _section(lines, missed, "missed gold events")
    _section(lines, ents, "entity defects", 6)
    _section(lines, edge_spur, "spurious edges", 6)
    _section(lines, edge_miss, "missed gold edges", 6)
    return _cap(lines)


# ============================================================================ fact scores


@dataclass
class FactPRF(PRF):
    """``PRF`` of the fact class (positive = fact) plus the accuracy over all ``n`` sentences
    (``tn`` the sentences rightly left non-fact; no sentences: accuracy 1.0)."""

    accuracy: float = 0.0
    tn: int = 0
    n: int = 0

    @classmethod
    def from_labels(cls, y_true: Sequence[bool], y_pred: Sequence[bool]) -> "FactPRF":
        tp = sum(1 for t, p in zip(y_true, y_pred) if t and p)
        fp = sum(1 for t, p in zip(y_true, y_pred) if not t and p)
        fn = sum(1 for t, p in zip(y_true, y_pred) if t and not p)
        tn = sum(1 for t, p in zip(y_true, y_pred) if not t and not p)
        n = len(y_true)
        return cls(**asdict(PRF.from_counts(tp, fp, fn)), accuracy=(tp + tn) / n if n else 1.0, tn=tn, n=n)


@dataclass
class FactScores:
    whole: FactPRF  # every gold sentence of the complaint
    facts_section: FactPRF  # gold sentences of `facts` sections only
    whole_ungated: FactPRF  # the raw `fact` label, even outside the narrative (the classifier's view)
    require_narrative: bool = True
    unaligned_gold: list[str] = field(default_factory=list)  # gold ids no predicted sentence overlaps
    feedback: str = ""

    def as_dict(self) -> dict:
        return {"whole": self.whole.as_dict(), "facts_section": self.facts_section.as_dict(),
                "whole_ungated": self.whole_ungated.as_dict(), "require_narrative": self.require_narrative,
                "unaligned_gold": list(self.unaligned_gold), "feedback": self.feedback}


def fact_scores(ekg: DocumentEKG, gold: GoldDocument, *, require_narrative: bool = True) -> FactScores:
    """Fact-class (positive = fact) scores of the EKG's sentence decisions over the gold sentences.

    A gold sentence is predicted a fact when an overlapping predicted sentence (span rule of
    ``sentence_alignment``) has ``fact`` True and, with ``require_narrative`` (default), lies in the
    narrative. Why: outside the FACTS narrative the pipeline's ``fact`` is the bare classifier's
    label and such sentences never reach the graph (argus/facts.py); a pipeline "fact" is a
    narrative sentence labelled fact. ``whole_ungated`` reports the raw labels everywhere.
    """
    by_gold = _invert(sentence_alignment(ekg.sentences, gold.sentences))
    pred = {s.id: s for s in ekg.sentences}
    y_true, y_gated, y_raw, in_facts = [], [], [], []
    unaligned: list[str] = []
    lines: list[str] = []
    for g in gold.sentences:
        ps = [pred[i] for i in by_gold.get(g.id, [])]
        if not ps:
            unaligned.append(g.id)
        raw = any(p.fact is True for p in ps)
        gated = any(p.fact is True and (p.in_narrative or not require_narrative) for p in ps)
        y_true.append(g.fact)
        y_gated.append(gated)
        y_raw.append(raw)
        in_facts.append(g.section == "facts")
        if g.fact != gated:
            what = "missed fact" if g.fact else "spurious fact"
            src = f" ← pred {','.join(p.id for p in ps)}" if ps else " (no predicted sentence)"
            extra = " [fact outside narrative]" if (g.fact and raw and not gated) else ""
            text = g.text if len(g.text) <= 80 else g.text[:80] + "…"
            lines.append(f"{what} {g.id} ({g.section}){src}{extra}: '{text}'")
    whole = FactPRF.from_labels(y_true, y_gated)
    sec = FactPRF.from_labels([t for t, f in zip(y_true, in_facts) if f], [p for p, f in zip(y_gated, in_facts) if f])
    raw_s = FactPRF.from_labels(y_true, y_raw)
    head = [f"facts (whole complaint): acc={whole.accuracy:.2f} P={whole.precision:.2f} R={whole.recall:.2f} F1={whole.f1:.2f}; "
            f"facts section: acc={sec.accuracy:.2f} P={sec.precision:.2f} R={sec.recall:.2f} F1={sec.f1:.2f}"]
    if unaligned:
        head.append(f"{len(unaligned)} gold sentence(s) overlap no predicted sentence: {', '.join(unaligned[:10])}"
                    + (" …" if len(unaligned) > 10 else ""))
    return FactScores(whole, sec, raw_s, require_narrative, unaligned, _cap(head + lines))


# ============================================================================ merge statistics


@dataclass
class MergeStats:
    pre_events: int = 0  # events over all mini-graphs
    post_events: int = 0  # document events
    merged_events: int = 0  # mini-graph events absorbed into another (a document event with k sources absorbs k-1)
    lost_events: int = 0  # mini-graph events named in no document event's sources
    unsourced_events: int = 0  # document events naming no existing mini-graph event
    pre_entities: int = 0
    post_entities: int = 0
    merged_entities: int = 0
    lost_entities: int = 0
    unsourced_entities: int = 0
    pre_temporal: int = 0
    post_temporal: int = 0
    pre_causal: int = 0
    post_causal: int = 0
    resolver_edges: int = 0  # document edges whose origin is the resolver
    log_actions: dict[str, int] = field(default_factory=dict)
    lost_event_ids: list[str] = field(default_factory=list)  # 'C2:EV3'
    lost_entity_ids: list[str] = field(default_factory=list)
    feedback: str = ""

    @property
    def event_loss(self) -> int:
        """Table 5 'Loss': the reduction pre -> post (merges and losses together)."""
        return self.pre_events - self.post_events

    @property
    def event_loss_rate(self) -> float:
        return self.event_loss / self.pre_events if self.pre_events else 0.0

    @property
    def entity_loss(self) -> int:
        return self.pre_entities - self.post_entities

    def as_dict(self) -> dict:
        d = asdict(self)
        d.update(event_loss=self.event_loss, event_loss_rate=self.event_loss_rate, entity_loss=self.entity_loss)
        return d


def _source_stats(items: dict[str, str], nodes: list) -> tuple[int, int, int, list[str]]:
    """(merged, lost, unsourced, lost ids) for mini-graph items {'C1:EV2': label} and document nodes."""
    named: set[str] = set()
    merged = unsourced = 0
    for n in nodes:
        valid = [s for s in dict.fromkeys(n.sources) if s in items]
        if not valid:
            unsourced += 1
        merged += max(0, len(valid) - 1)
        named.update(valid)
    lost = [k for k in items if k not in named]
    return merged, len(lost), unsourced, lost


def merge_stats(ekg: DocumentEKG) -> MergeStats:
    """What the document merge did to the mini-graphs (ARGUS Table 5 and a little more)."""
    ev_items: dict[str, str] = {}
    en_items: dict[str, str] = {}
    pre_t = pre_c = 0
    for mg in ekg.minigraphs:
        for e in mg.graph.events:
            ev_items[f"{mg.chunk_id}:{e.id}"] = f"{e.type} '{e.trigger or e.verb}'"
        for e in mg.graph.entities:
            en_items[f"{mg.chunk_id}:{e.id}"] = f"'{e.name}'"
        pre_t += len(mg.graph.temporal_edges)
        pre_c += len(mg.graph.causal_edges)
    g = ekg.graph
    m_ev, l_ev, u_ev, lost_ev = _source_stats(ev_items, g.events)
    m_en, l_en, u_en, lost_en = _source_stats(en_items, g.entities)
    actions: dict[str, int] = {}
    for d in ekg.merge_log:
        actions[d.action] = actions.get(d.action, 0) + 1
    st = MergeStats(
        pre_events=len(ev_items), post_events=len(g.events), merged_events=m_ev, lost_events=l_ev, unsourced_events=u_ev,
        pre_entities=len(en_items), post_entities=len(g.entities), merged_entities=m_en, lost_entities=l_en,
        unsourced_entities=u_en, pre_temporal=pre_t, post_temporal=len(g.temporal_edges), pre_causal=pre_c,
        post_causal=len(g.causal_edges),
        resolver_edges=sum(1 for e in [*g.temporal_edges, *g.causal_edges] if e.origin == "resolver"),
        log_actions=actions, lost_event_ids=lost_ev, lost_entity_ids=lost_en,
    )
    lines = [
        f"events {st.pre_events} → {st.post_events} (merged {m_ev}, lost {l_ev}, unsourced {u_ev}); "
        f"entities {st.pre_entities} → {st.post_entities} (merged {m_en}, lost {l_en}, unsourced {u_en}); "
        f"temporal edges {pre_t} → {st.post_temporal}, causal edges {pre_c} → {st.post_causal} ({st.resolver_edges} from the resolver)",
    ]
    lines += [f"lost event {k} ({ev_items[k]})" for k in lost_ev]
    lines += [f"lost entity {k} ({en_items[k]})" for k in lost_en]
    lines += [f"document event {e.id} names no mini-graph event (sources {e.sources or '∅'})"
              for e in g.events if not any(s in ev_items for s in e.sources)]
    st.feedback = _cap(lines)
    return st


# ============================================================================ one row per document


def score_document(ekg: DocumentEKG, gold: GoldDocument, *, tiers: Sequence[str] = ("exact", "relaxed"),
                   event_judge: EventJudge | None = None) -> dict:
    """A flat row for a DataFrame.

    Keys: ``doc_id``, ``gold_doc_id``, ``method``; ``<tier>_<element>_{p,r,f1}`` (element: entities,
    events, temporal, causal, and temporal_any / causal_any outside the exact tier);
    ``fact_{acc,p,r,f1}`` (whole complaint) and ``fact_facts_{acc,p,r,f1}`` (facts sections only);
    ``merge_<MergeStats field>`` (pre_events, post_events, event_loss, …); ``notes``.
    """
    scores = match_graphs(to_gold_space(ekg, gold), gold, tiers=tiers, event_judge=event_judge)
    row: dict[str, Any] = {"doc_id": ekg.doc_id, "gold_doc_id": gold.doc_id, "method": ekg.method}
    for tier, ts in scores.tiers.items():
        for elem in ("entities", "events", "temporal", "causal", "temporal_any", "causal_any"):
            prf = getattr(ts, elem)
            if prf is None:
                continue
            row[f"{tier}_{elem}_p"] = prf.precision
            row[f"{tier}_{elem}_r"] = prf.recall
            row[f"{tier}_{elem}_f1"] = prf.f1
    fs = fact_scores(ekg, gold)
    for name, prf in (("fact", fs.whole), ("fact_facts", fs.facts_section)):
        row[f"{name}_acc"] = prf.accuracy
        row[f"{name}_p"] = prf.precision
        row[f"{name}_r"] = prf.recall
        row[f"{name}_f1"] = prf.f1
    ms = merge_stats(ekg)
    for k in ("pre_events", "post_events", "event_loss", "merged_events", "lost_events", "pre_entities",
              "post_entities", "entity_loss", "merged_entities", "lost_entities", "pre_temporal", "post_temporal",
              "pre_causal", "post_causal"):
        row[f"merge_{k}"] = getattr(ms, k)
    row["notes"] = "; ".join(scores.notes)
    return row


# ============================================================================ optimizer component


def gold_component(pred: Any, gold_graph: Any, tier: str = "relaxed"):
    """Gold agreement as one optimizer component: the mean of ``tier`` event F1 and temporal-edge F1.

    ``pred`` and ``gold_graph`` use the same sentence ids (e.g. a chunk's gold mini-graph in the
    pipeline's numbering). Returns a ``metrics.base.MetricResult`` whose defects are the missed,
    spurious and partial matches named by :func:`match_graphs`' feedback.
    """
    from metrics.base import Defect, MetricResult

    scores = match_graphs(pred, gold_graph, tiers=(tier,))
    t = scores[tier]
    components = {"events_f1": t.events.f1, "temporal_f1": t.temporal.f1, "entities_f1": t.entities.f1, "causal_f1": t.causal.f1}
    score = (t.events.f1 + t.temporal.f1) / 2
    defects = []
    for line in scores.feedback.splitlines()[len(scores.tiers):]:
        stage = "stage2" if ("edge" in line or "temporal" in line or "causal" in line) else "stage1"
        defects.append(Defect("gold", stage, line))
    return MetricResult("gold", score, components, defects, list(scores.notes))
