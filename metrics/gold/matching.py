"""REGen-style tiered matching of a predicted graph against the gold graph: ``match_graphs``
scores entities, events, temporal and causal edges per tier (``exact``, ``relaxed``, optional
``llm``) and writes the feedback.

Alignment
    One-to-one, by ``scipy.optimize.linear_sum_assignment`` on a compatibility matrix. Only
    compatible pairs get a positive weight ``1 + quality / (min(n, m) + 1)`` with ``quality`` in
    [0, 1]: the number of matched pairs is maximized first, the quality (evidence Jaccard, same
    type, same trigger, …) only breaks ties between alignments of equal size.

Entities
    Names are normalized (``normalize_entity_name``). *exact*: the normalized name of one side is
    the name or an alias of the other, and the ``kind`` is equal. *relaxed*: the two name+alias sets
    share a name, or the tokens of a name of one side are a subset of the tokens of a name of the
    other ("Torres" ⊂ "Maria Elena Torres"); kind and role are ignored (they only break ties).

Events
    Verbs are normalized (``normalize_verb``). *exact*: same ``type``, same normalized verb,
    identical evidence set (gold ids). *relaxed*: at least one shared gold evidence sentence, and
    the same type or compatible verbs (equal, or in one of the ``VERB_GROUPS``). An event whose
    evidence maps to no gold sentence has an empty evidence set and cannot match in either tier.
    *llm*: the relaxed alignment plus the pairs an ``event_judge`` accepts among the still
    unmatched pairs whose evidence overlaps or is adjacent (gold sentence positions differ by at
    most 1); the judge's accepted pairs are aligned one-to-one. The tier is skipped with a note
    when no judge is given.

Edges are scored under each tier's event alignment (``metrics.gold.edges``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Sequence

import numpy as np

from metrics.gold.document import GoldDocument
from metrics.gold.edges import score_edges
from metrics.gold.feedback import match_feedback
from metrics.gold.normalize import verbs_compatible
from metrics.gold.scores import PRF, GoldScores, TierScores
from metrics.gold.views import EntityView, EventView, GraphView, as_view, describe_event_for_match

TIERS = ("exact", "relaxed", "llm")

EventJudge = Callable[[str, str], bool]


def _assign(n: int, m: int, pairs: dict[tuple[int, int], float]) -> list[tuple[int, int]]:
    """One-to-one alignment maximizing the number of pairs, then the summed quality (in [0, 1])."""
    if not pairs or n == 0 or m == 0:
        return []
    scale = 1.0 / (min(n, m) + 1)
    w = np.zeros((n, m))
    for (i, j), q in pairs.items():
        w[i, j] = 1.0 + max(0.0, min(1.0, q)) * scale
    from scipy.optimize import linear_sum_assignment  # here: extraction imports this package, not scipy

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


def match_graphs(pred: Any, gold: Any, *, tiers: Sequence[str] = ("exact", "relaxed"),
                 event_judge: EventJudge | None = None) -> GoldScores:
    """Score ``pred`` against ``gold`` per tier (every rule: this module's docstring, ``metrics.gold.edges``
    and ``metrics.gold.scores``).

    ``pred``: a ``GraphView`` (e.g. from ``to_gold_space``), a ``DocumentEKG`` (translated
    automatically; needs a ``GoldDocument``), or any graph whose evidence already uses gold ids.
    ``gold``: a ``GoldDocument``, an ``EventGraph`` or a ``GraphView``.
    """
    gold_doc = gold if isinstance(gold, GoldDocument) else None
    gv = as_view(gold)
    pv = as_view(pred, gold_doc)
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
        tmp, tmp_any, t_spur, t_miss = score_edges(pv.temporal_edges, gv.temporal_edges, ev_align, "temporal", agn)
        cau, cau_any, c_spur, c_miss = score_edges(pv.causal_edges, gv.causal_edges, ev_align, "causal", agn)
        results[tier] = TierScores(tier, ents, evs, tmp, cau, tmp_any, cau_any, ent_align, ev_align, calls)
        details[tier] = {"edge_spurious": t_spur + c_spur, "edge_missed": t_miss + c_miss}
    for tier in list(results):
        if tier not in wanted:
            del results[tier]
    for name, view in (("predicted", pv), ("gold", gv)):
        if not view.events and not view.entities:
            notes.append(f"{name} graph is empty")

    scores = GoldScores(results, notes)
    scores.feedback = match_feedback(scores, pv, gv, details)
    return scores
