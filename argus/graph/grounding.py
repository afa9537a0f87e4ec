"""Character-level grounding: every entity mention and event trigger tied to the words of the filing.

Stage 1 cites sentences; this module finds, inside those sentences of the ORIGINAL text, the
characters an entity's name (and each alias) and an event's trigger stand on, in three tiers:

``exact``       the string occurs verbatim (on word boundaries);
``normalized``  it occurs up to case, whitespace runs (line breaks included), typographic quotes and
                dashes, and a word hyphenated across a line break ("employ-\\nment");
``fuzzy``       a window of whole words of the sentence has ``rapidfuzz.fuzz.ratio`` ≥
                ``FUZZY_THRESHOLD`` (85) with the normalized string (e.g. "terminate" / "terminated",
                "Jon Smith" / "John Smith"); strings shorter than ``MIN_FUZZY_CHARS`` never match fuzzily.

Spans are ``[start, end)`` into the original text (``DocumentEKG.text``), inside the span of the
sentence they are found in. Where a tier finds nothing the next one is tried.

Rules (``ground_items``):

- an **entity** is grounded when its name or an alias is found in the sentences in scope (the chunk's;
  for a document graph, those of the chunks it came from). Its mentions are every exact or normalized
  occurrence of each form there; a form with none gets its best fuzzy window (searched first in the
  evidence sentences of the events it takes part in). An alias that is nowhere goes to ``rejected``; a
  name that is nowhere is replaced by the longest grounded alias (the name goes to ``rejected``);
- an **event** is grounded when its trigger is found in one of its evidence sentences (``trigger_span``);
- an ungrounded item leaves the graph with its participations and edges, each recorded in ``rejected``
  with the reason, unless ``keep_ungrounded`` keeps it (flagged: ``grounded: false`` on document items,
  ``ungrounded`` ids on a mini-graph).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable

from rapidfuzz import fuzz

from argus.text.documents import Document
from argus.graph.schema import (
    DocumentEKG,
    DocumentGraph,
    EventGraph,
    Mention,
    RejectedItem,
)

FUZZY_THRESHOLD = 85.0
"""Minimum ``rapidfuzz.fuzz.ratio`` (0–100) between the normalized string and a window of words."""

MIN_FUZZY_CHARS = 4
"""Normalized strings shorter than this are matched exactly or normalized only."""

MAX_PHRASE_WORDS = 6
"""Longest word n-gram offered to grounded decoding (``chunk_phrases``)."""

_QUOTES = str.maketrans({"‘": "'", "’": "'", "‚": "'", "‛": "'", "“": '"', "”": '"', "„": '"', "‟": '"',
                         "–": "-", "—": "-", "‐": "-", "‑": "-", "\u00a0": " "})
_EDGE = re.compile(r"^[\s\"'(\[,.;:]+|[\s\"')\],.;:]+$")
_WORD = re.compile(r"\w+(?:['\-.]\w+)*")


def normalize_with_map(s: str) -> tuple[str, list[int]]:
    """The matching form of ``s`` and, for each of its characters, the index in ``s`` it came from.

    Lowercased; typographic quotes and dashes made plain; whitespace runs become one space (none at
    the ends); a hyphen at a line break between letters is dropped with the break ("employ-\\nment").
    """
    out: list[str] = []
    where: list[int] = []
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c == "-" and i > 0 and s[i - 1].isalpha():
            j = i + 1
            while j < n and s[j].isspace():
                j += 1
            if j < n and j > i + 1 and "\n" in s[i + 1:j] and s[j].isalpha() and s[j].islower():
                i = j
                continue
        if c.isspace():
            j = i
            while j < n and s[j].isspace():
                j += 1
            if out and j < n:
                out.append(" ")
                where.append(i)
            i = j
            continue
        c = c.translate(_QUOTES)
        low = c.lower()
        for ch in (low if len(low) == 1 else c):
            out.append(ch)
            where.append(i)
        i += 1
    return "".join(out), where


def match_form(s: str) -> str:
    """``s`` normalized for matching, without surrounding quotes or punctuation."""
    return _EDGE.sub("", normalize_with_map(s)[0])


def _bounded(text: str, i: int, j: int) -> bool:
    """Whether ``text[i:j]`` does not cut a word at either end."""
    left = i == 0 or not (text[i - 1].isalnum() and text[i].isalnum())
    right = j >= len(text) or not (text[j - 1].isalnum() and text[j].isalnum())
    return left and right


def _occurrences(hay: str, needle: str) -> Iterable[int]:
    start = hay.find(needle)
    while start >= 0:
        if _bounded(hay, start, start + len(needle)):
            yield start
        start = hay.find(needle, start + 1)


@dataclass
class _Sentence:
    sid: str
    start: int
    raw: str
    norm: str
    where: list[int]
    words: list[tuple[int, int]]


@dataclass
class Aligner:
    """Finds strings in sentences of one original text. ``sentences``: ``(id, (start, end))`` spans."""

    text: str
    spans: dict[str, tuple[int, int]]
    _cache: dict[str, _Sentence] = field(default_factory=dict, repr=False)

    @classmethod
    def for_document(cls, doc: Document) -> Aligner:
        """The aligner of a preprocessed document: its original text and its sentences' spans."""
        return cls(doc.text, {s.id: tuple(s.span) for s in doc.sentences})

    def _sentence(self, sid: str) -> _Sentence | None:
        if sid not in self._cache:
            span = self.spans.get(sid)
            if span is None:
                return None
            a, b = span
            raw = self.text[a:b]
            norm, where = normalize_with_map(raw)
            self._cache[sid] = _Sentence(sid, a, raw, norm, where, [m.span() for m in _WORD.finditer(norm)])
        return self._cache[sid]

    def _mention(self, s: _Sentence, i: int, j: int, how: str) -> Mention:
        a, b = s.start + i, s.start + j
        return Mention(sentence_id=s.sid, span=(a, b), text=self.text[a:b], match=how)

    def find_all(self, term: str, sids: Iterable[str]) -> list[Mention]:
        """Every exact occurrence of ``term`` in the sentences, else every normalized one."""
        term = term.strip()
        if not term:
            return []
        sents = [s for s in (self._sentence(x) for x in sids) if s is not None]
        found = [self._mention(s, i, i + len(term), "exact") for s in sents for i in _occurrences(s.raw, term)]
        if found:
            return found
        nterm = match_form(term)
        if not nterm:
            return []
        for s in sents:
            for i in _occurrences(s.norm, nterm):
                j = i + len(nterm) - 1
                found.append(self._mention(s, s.where[i], s.where[j] + 1, "normalized"))
        return found

    def find_fuzzy(self, term: str, sids: Iterable[str]) -> Mention | None:
        """The best window of whole words with ``fuzz.ratio`` ≥ ``FUZZY_THRESHOLD`` (first one on ties)."""
        nterm = match_form(term)
        if len(nterm) < MIN_FUZZY_CHARS:
            return None
        k = max(1, len(_WORD.findall(nterm)))
        best: tuple[float, _Sentence, int, int] | None = None
        for sid in sids:
            s = self._sentence(sid)
            if s is None:
                continue
            for size in range(max(1, k - 1), k + 2):
                for w in range(0, len(s.words) - size + 1):
                    i, j = s.words[w][0], s.words[w + size - 1][1]
                    score = fuzz.ratio(nterm, s.norm[i:j], score_cutoff=FUZZY_THRESHOLD)
                    if score and (best is None or score > best[0]):
                        best = (score, s, i, j)
        if best is None:
            return None
        _, s, i, j = best
        return self._mention(s, s.where[i], s.where[j - 1] + 1, "fuzzy")

    def find_best(self, term: str, sids: list[str]) -> Mention | None:
        """The first exact occurrence, else the first normalized one, else the best fuzzy window."""
        found = self.find_all(term, sids)
        return found[0] if found else self.find_fuzzy(term, sids)


def span_problem(text: str, m: Mention, forms: list[str], sentence_span: tuple[int, int] | None) -> str | None:
    """Why ``m`` does not ground one of ``forms`` in ``text`` (None when it does)."""
    a, b = m.span
    if not (0 <= a < b <= len(text)):
        return f"span {list(m.span)} is outside the text ({len(text)} characters)"
    if sentence_span is None:
        return f"sentence {m.sentence_id} does not exist"
    if not (sentence_span[0] <= a and b <= sentence_span[1]):
        return f"span {list(m.span)} is not inside sentence {m.sentence_id} {list(sentence_span)}"
    got = text[a:b]
    if got != m.text:
        return f"span {list(m.span)} slices {got!r}, not {m.text!r}"
    if m.match == "exact":
        ok = any(got == f.strip() for f in forms)
    elif m.match == "normalized":
        ok = any(match_form(got) == match_form(f) for f in forms)
    else:
        ok = any(fuzz.ratio(match_form(got), match_form(f)) >= FUZZY_THRESHOLD for f in forms)
    return None if ok else f"{m.match} span {list(m.span)} slices {got!r}, which does not match {forms}"


# ----------------------------------------------------------------------------- graphs


@dataclass
class Grounded:
    """What ``ground_items`` made of a graph."""

    graph: EventGraph | DocumentGraph
    spans: dict[str, list[Mention]]
    """Item id → its mentions (entities) or ``[trigger]`` (events); ungrounded items kept are absent."""
    rejected: list[RejectedItem]
    """Items (and names, aliases, participations, edges) that left the graph, with the reason."""
    ungrounded: list[str]
    """Ids of ungrounded items kept by ``keep_ungrounded``."""


def _dedupe_mentions(ms: list[Mention]) -> list[Mention]:
    """Distinct spans in text order; a span inside a longer one is dropped."""
    out: list[Mention] = []
    for m in sorted({tuple(m.span): m for m in ms}.values(), key=lambda m: (m.span[0], -m.span[1])):
        if out and m.span[0] >= out[-1].span[0] and m.span[1] <= out[-1].span[1]:
            continue
        out.append(m)
    return out


def ground_items(
    graph: EventGraph | DocumentGraph,
    aligner: Aligner,
    scope: list[str],
    *,
    stage: str,
    prefix: str = "",
    keep_ungrounded: bool = False,
    scope_of=None,
) -> Grounded:
    """Align entities and events of ``graph`` (a copy is returned) to characters of ``aligner.text``.

    ``scope``: the sentence ids where entity mentions are sought (``scope_of(entity)`` may narrow it
    per entity); ``stage`` names the stage that made the items (in ``rejected``); ``prefix``
    qualifies ids there (``"C2:"``).
    """
    graph = graph.model_copy(deep=True)
    spans: dict[str, list[Mention]] = {}
    rejected: list[RejectedItem] = []
    ungrounded: list[str] = []

    def reject(kind: str, item_id: str, reason: str, item) -> None:
        data = item.model_dump(mode="json") if hasattr(item, "model_dump") else item
        rejected.append(RejectedItem(kind=kind, id=f"{prefix}{item_id}", stage=stage, reason=reason, item=data))

    evidence_of: dict[str, dict[str, None]] = {}  # entity → the evidence of its events, in order, once each
    for ev in graph.events:
        for p in ev.participants:
            evidence_of.setdefault(p.entity, {}).update(dict.fromkeys(ev.evidence))

    # ---- entities
    kept_entities = []
    for ent in graph.entities:
        where = list(scope_of(ent)) if scope_of else list(scope)
        first = [s for s in evidence_of.get(ent.id, {}) if s in where]
        ordered = first + [s for s in where if s not in first]
        found: dict[str, list[Mention]] = {}
        for form in dict.fromkeys([ent.name, *ent.aliases]):
            ms = aligner.find_all(form, ordered)
            if not ms:
                fz = aligner.find_fuzzy(form, ordered)
                ms = [fz] if fz else []
            found[form] = ms
        grounded_aliases = [a for a in ent.aliases if found.get(a)]
        if not found.get(ent.name) and not grounded_aliases:
            if keep_ungrounded:
                ungrounded.append(ent.id)
                _flag(ent, False)
                kept_entities.append(ent)
                continue
            reject("entity", ent.id, f"entity {ent.name!r}: neither its name nor an alias is in its sentences "
                   f"({_show(ordered)})", ent)
            continue
        for a in ent.aliases:
            if not found.get(a):
                reject("alias", ent.id, f"alias {a!r} of {ent.name!r} is not in its sentences; dropped",
                       {"entity": ent.id, "text": a})
        if not found.get(ent.name):
            new = max(grounded_aliases, key=lambda s: (len(s.split()), len(s)))
            reject("name", ent.id, f"name {ent.name!r} is not in its sentences; the alias {new!r} is its name now",
                   {"entity": ent.id, "text": ent.name})
            ent.name = new
            grounded_aliases = [a for a in grounded_aliases if a != new]
        ent.aliases = grounded_aliases
        mentions = _dedupe_mentions([m for ms in found.values() for m in ms])
        named = found.get(ent.name, [])
        if named and not any(m in named for m in mentions):
            # every occurrence of the name lies inside a longer alias's ("Norristown" only ever in "Norristown
            # store"), so deduplication kept none: the name's own mentions stay, the alias's holding them go
            mentions = _dedupe_mentions(named + [m for m in mentions if not any(
                m.span[0] <= n.span[0] and n.span[1] <= m.span[1] for n in named)])
        spans[ent.id] = mentions
        if hasattr(ent, "mentions"):
            ent.mentions = mentions
            _flag(ent, True)
        kept_entities.append(ent)
    graph.entities = kept_entities
    known = {e.id for e in kept_entities}

    # ---- events
    kept_events = []
    for ev in graph.events:
        m = aligner.find_best(ev.trigger, list(ev.evidence))
        if m is None and not keep_ungrounded:
            reject("event", ev.id, f"event {ev.id} ({ev.verb}): trigger {ev.trigger!r} is not in its evidence "
                   f"sentences ({_show(ev.evidence)})", ev)
            continue
        if m is None:
            ungrounded.append(ev.id)
            _flag(ev, False)
        else:
            spans[ev.id] = [m]
            if hasattr(ev, "trigger_span"):
                ev.trigger_span, ev.trigger_match = m.span, m.match
                _flag(ev, True)
        parts = []
        for p in ev.participants:
            if p.entity in known:
                parts.append(p)
            else:
                reject("participant", f"{ev.id}/{p.entity}", f"{ev.id}: participant {p.entity} ({p.role}) left with its "
                       "ungrounded entity", p)
        ev.participants = parts
        kept_events.append(ev)
    graph.events = kept_events
    ev_ids = {e.id for e in kept_events}

    # ---- edges whose events left
    for kind, attr in (("temporal_edge", "temporal_edges"), ("causal_edge", "causal_edges")):
        edges = []
        for e in getattr(graph, attr):
            gone = [x for x in (e.source, e.target) if x not in ev_ids]
            if gone:
                reject(kind, f"{e.source}-{e.relation}->{e.target}",
                       f"{kind.replace('_', ' ')} {e.source}-{e.relation}->{e.target} left with its ungrounded "
                       f"event{'s' if len(gone) > 1 else ''} {', '.join(gone)}", e)
            else:
                edges.append(e)
        setattr(graph, attr, edges)
    return Grounded(graph=graph, spans=spans, rejected=rejected, ungrounded=ungrounded)


def ground_document(graph: DocumentGraph, aligner: Aligner, chunks, *, stage: str = "merge",
                    keep_ungrounded: bool = False) -> Grounded:
    """``ground_items`` on a merged graph: each entity sought in the sentences of the chunks it came
    from (its ``sources``), all chunk sentences when it names none."""
    members = {c.id: list(c.sentence_ids) for c in chunks}
    every = list(dict.fromkeys(sid for c in chunks for sid in c.sentence_ids))

    def scope_of(entity) -> list[str]:
        seen = [sid for src in entity.sources for sid in members.get(src.split(":", 1)[0], [])]
        return list(dict.fromkeys(seen)) or every

    return ground_items(graph, aligner, every, stage=stage, keep_ungrounded=keep_ungrounded, scope_of=scope_of)


def upgrade_1_0(data: dict, source_text: str) -> dict:
    """A schema-1.0 EKG (sentence-level grounding only) as 1.1: its source text, mention and trigger
    spans added; nothing removed (what does not align is kept, flagged ``grounded: false``)."""
    from argus.graph.schema import SCHEMA_VERSION, Chunk, DocumentGraph, EventGraph

    sentences = {s["id"]: tuple(s["span"]) for s in data.get("sentences", [])}
    aligner = Aligner(source_text, sentences)
    data = dict(data)
    data["text"] = source_text
    for mg in data.get("minigraphs", []):
        chunk_ids = next((c["sentence_ids"] for c in data.get("chunks", []) if c["id"] == mg["chunk_id"]), list(sentences))
        g = ground_items(EventGraph.model_validate(mg["graph"]), aligner, chunk_ids, stage="stage1",
                         prefix=f"{mg['chunk_id']}:", keep_ungrounded=True)
        mg["spans"] = {k: [m.model_dump(mode="json") for m in v] for k, v in g.spans.items()}
        mg["ungrounded"] = g.ungrounded
    chunks = [Chunk.model_validate(c) for c in data.get("chunks", [])]
    g = ground_document(DocumentGraph.model_validate(data["graph"]), aligner, chunks, keep_ungrounded=True)
    data["graph"] = g.graph.model_dump(mode="json")
    data["rejected"] = []
    data["schema_version"] = SCHEMA_VERSION
    data["warnings"] = list(data.get("warnings", [])) + [
        f"upgraded from schema 1.0 on reading: spans added, {len(g.ungrounded)} ungrounded item(s) kept flagged"]
    return data


def _flag(item, grounded: bool) -> None:
    if hasattr(item, "grounded"):
        item.grounded = grounded


def _show(sids: list[str], limit: int = 6) -> str:
    sids = list(sids)
    return ", ".join(sids[:limit]) + (f" and {len(sids) - limit} more" if len(sids) > limit else "") or "none"


# ----------------------------------------------------------------------------- grounded decoding


def chunk_phrases(texts: Iterable[str], max_words: int = MAX_PHRASE_WORDS) -> list[str]:
    """Every run of 1..``max_words`` words of the texts, as written (punctuation inside a run kept,
    around it trimmed): the values grounded decoding lets a model use for names and triggers.

    Runs with a straight double quote or a backslash are left out: llama-cpp-python's JSON-Schema →
    grammar conversion (0.3.16) escapes them wrongly inside ``enum`` values, and the engine then fails
    to parse the grammar."""
    out: dict[str, None] = {}
    for text in texts:
        words = list(re.finditer(r"\S+", text))
        for i in range(len(words)):
            for k in range(1, max_words + 1):
                if i + k > len(words):
                    break
                phrase = text[words[i].start():words[i + k - 1].end()]
                phrase = " ".join(_EDGE.sub("", phrase).split())
                if phrase and any(c.isalnum() for c in phrase) and '"' not in phrase and "\\" not in phrase:
                    out.setdefault(phrase, None)
    return list(out)


# ----------------------------------------------------------------------------- checks


def span_problems(ekg: DocumentEKG) -> list[str]:
    """Every mention and trigger span of ``ekg`` (document graph and mini-graphs) checked against its text."""
    problems: list[str] = []
    sent = {s.id: tuple(s.span) for s in ekg.sentences}
    text = ekg.text
    if not text:
        return ["the EKG carries no source text (schema before 1.1): its spans cannot be checked"]
    for ent in ekg.graph.entities:
        if ent.grounded and not ent.mentions:
            problems.append(f"{ent.id} ({ent.name!r}): grounded but no mention")
        for m in ent.mentions:
            why = span_problem(text, m, [ent.name, *ent.aliases], sent.get(m.sentence_id))
            if why:
                problems.append(f"{ent.id} ({ent.name!r}): {why}")
        if ent.grounded and ent.mentions and not any(
                span_problem(text, m, [ent.name], sent.get(m.sentence_id)) is None for m in ent.mentions):
            problems.append(f"{ent.id}: no mention slices its name {ent.name!r}")
    for ev in ekg.graph.events:
        if ev.trigger_span is None:
            if ev.grounded:
                problems.append(f"{ev.id} ({ev.verb}): grounded but no trigger span")
            continue
        inside = [s for s in ev.evidence if s in sent and sent[s][0] <= ev.trigger_span[0] and ev.trigger_span[1] <= sent[s][1]]
        if not inside:
            problems.append(f"{ev.id}: trigger span {list(ev.trigger_span)} is in none of its evidence sentences")
            continue
        m = Mention(sentence_id=inside[0], span=ev.trigger_span, text=text[ev.trigger_span[0]:ev.trigger_span[1]],
                    match=ev.trigger_match or "exact")
        why = span_problem(text, m, [ev.trigger], sent.get(m.sentence_id))
        if why:
            problems.append(f"{ev.id} trigger {ev.trigger!r}: {why}")
    for mg in ekg.minigraphs:
        forms = {e.id: [e.name, *e.aliases] for e in mg.graph.entities}
        forms.update({e.id: [e.trigger] for e in mg.graph.events})
        for item_id, ms in mg.spans.items():
            for m in ms:
                why = span_problem(text, m, forms.get(item_id, []), sent.get(m.sentence_id))
                if why:
                    problems.append(f"{mg.chunk_id}:{item_id}: {why}")
    return problems
