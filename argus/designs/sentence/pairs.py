"""Pairs of events, as the temporal and causal heads read them.

An edge head is a small multinomial logistic model over hand-made features of an ordered pair of
events (the earlier event in narrative order first): how far apart they are, what their dates say,
the cue words of both sentences, their types, the participants they share. ``temporal`` and
``causal`` each define their candidate pairs, features and classes; this module gives them what
they share:

``PairEvent`` / ``pair_events``   what a head reads of one event of a graph, in narrative order;
``PairHead``                      the fitted model, stored as JSON (weights, classes, feature names, the
                                  threshold on "no edge" chosen inside the training complaints);
``training_graphs``               the design's own graphs of the training complaints, each event aligned
                                  to gold (``metrics.gold``, relaxed tier), from which the heads learn;
``fit_part``                      the ``edges`` part of the heads file: both heads trained on the
                                  training complaints only (``argus.designs.sentence.heads.PARTS``).

The heads are trained on the events the design itself finds, labelled by the gold edge between the
gold events they align to, so what they learn is what the scorer counts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable

import numpy as np

from argus.graph.schema import id_order
from argus.text.words import lemma, word_spans

_ISO = re.compile(r"\d{4}(?:-\d{2}){0,2}")


@dataclass
class PairEvent:
    """One event of a graph as the pair heads read it."""

    id: str
    index: int  # narrative order among the graph's events
    position: int  # the first evidence sentence's place in the document
    text: str  # the evidence sentences' text
    type: str
    date: tuple[int, ...] | None  # an explicit date as (year, month[, day]); None when not stated
    relative: bool
    participants: frozenset[str]
    trigger: str
    lemmas: frozenset[str] = field(default_factory=frozenset)
    p_event: float = 1.0  # how probable the type head found it that the sentence states an event at all


def _date(value: str | None) -> tuple[int, ...] | None:
    if value and _ISO.fullmatch(value):
        return tuple(int(x) for x in value.split("-"))
    return None


def pair_events(events, sentence_text: dict[str, str], order: dict[str, int],
                p_event: dict[str, float] | None = None) -> list[PairEvent]:
    """``events`` (DocEvent or Event) in narrative order, read for the pair heads; ``sentence_text`` and
    ``order`` give each sentence id's text and place in the document, ``p_event`` how probable the type
    head found it that the sentence states an event (1.0 where not given)."""
    def first(e) -> int:
        return min((order.get(s, 1 << 30) for s in e.evidence), default=1 << 30)

    out = []
    for k, e in enumerate(sorted(events, key=lambda e: (first(e), id_order(e.id)))):
        text = " ".join(sentence_text.get(s, "") for s in e.evidence)
        out.append(PairEvent(
            id=e.id, index=k, position=first(e), text=text, type=e.type,
            date=_date(e.time.value) if e.time.kind == "explicit" else None, relative=e.time.kind == "relative",
            participants=frozenset(p.entity for p in e.participants), trigger=e.trigger,
            lemmas=frozenset(lemma(w) for w, _, _ in word_spans(text) if len(w) > 3),
            p_event=max((p_event or {}).get(s, 1.0) for s in e.evidence) if e.evidence else 1.0))
    return out


def date_order(a: PairEvent, b: PairEvent) -> int | None:
    """-1 when ``a``'s date is before ``b``'s, 0 when equal at the precision both share (month at
    least), 1 when after; None when either has no date or only years are comparable."""
    if a.date is None or b.date is None:
        return None
    n = min(len(a.date), len(b.date))
    if n < 2:
        return None
    x, y = a.date[:n], b.date[:n]
    return -1 if x < y else (0 if x == y else 1)


def cue_flags(text: str, cues: tuple[tuple[str, re.Pattern], ...]) -> list[float]:
    return list(_cue_flags(text, cues))


@lru_cache(maxsize=16384)
def _cue_flags(text: str, cues: tuple[tuple[str, re.Pattern], ...]) -> tuple[float, ...]:
    # (kept per text: a sentence's cues are read for every pair it is in)
    return tuple(1.0 if p.search(text) else 0.0 for _, p in cues)


def opening(text: str, words: int = 8) -> str:
    """The first ``words`` words of ``text`` (where a sentence says how it follows the last one)."""
    return " ".join(text.split()[:words])


@dataclass
class PairHead:
    """A fitted multinomial logistic head over pair features, stored as JSON."""

    classes: list[str]
    features: list[str]
    weights: np.ndarray  # (k, d)
    bias: np.ndarray  # (k,)
    threshold: float  # an edge is drawn where P(none) is below it
    meta: dict = field(default_factory=dict)

    def probs(self, x: np.ndarray) -> np.ndarray:
        if len(x) == 0:
            return np.zeros((0, len(self.classes)))
        if x.shape[1] != len(self.features):
            from argus.errors import ConfigError

            raise ConfigError(f"an edge head of the heads file reads {len(self.features)} features, this code writes "
                              f"{x.shape[1]}: retrain the heads ('argus train-events') with this version")
        z = x @ self.weights.T + self.bias
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)

    def decide(self, x: np.ndarray) -> list[tuple[str, float]]:
        """(relation or "none", its probability) per row."""
        p = self.probs(x)
        none = self.classes.index("none")
        out = []
        for row in p:
            if row[none] >= self.threshold:
                out.append(("none", float(row[none])))
                continue
            masked = row.copy()
            masked[none] = -1.0
            k = int(masked.argmax())
            out.append((self.classes[k], float(row[k])))
        return out

    def to_json(self) -> dict:
        return {"classes": self.classes, "features": self.features,
                "weights": [[round(float(v), 6) for v in row] for row in self.weights],
                "bias": [round(float(v), 6) for v in self.bias], "threshold": round(float(self.threshold), 4),
                "meta": self.meta}

    @classmethod
    def from_json(cls, data: dict) -> "PairHead":
        w = np.asarray(data["weights"], dtype="float64")
        if w.shape != (len(data["classes"]), len(data["features"])):
            from argus.errors import ConfigError

            raise ConfigError("edge head in the heads file is corrupt: weights do not match its classes and features")
        return cls(list(data["classes"]), list(data["features"]), w, np.asarray(data["bias"], dtype="float64"),
                   float(data["threshold"]), data.get("meta", {}))


def fit_head(x: np.ndarray, y: list[str], groups: list[int], features: list[str], c: float = 1.0,
             per_target: list[str] | None = None) -> PairHead:
    """A head fitted on all rows; its threshold chosen on out-of-fold probabilities grouped by
    complaint (3 folds), the one that maximises the F1 of drawn edges. ``per_target``: the row's
    target event key where at most one edge per target is drawn (the most probable)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold

    y_arr = np.asarray(y)
    model = LogisticRegression(C=c, max_iter=5000)
    model.fit(x, y_arr)
    classes = [str(k) for k in model.classes_]
    oof = np.zeros((len(y_arr), len(classes)))
    n_groups = len(set(groups))
    if n_groups >= 3:
        for tr, te in GroupKFold(n_splits=3).split(x, y_arr, groups):
            m = LogisticRegression(C=c, max_iter=5000).fit(x[tr], y_arr[tr])
            p = m.predict_proba(x[te])
            cols = [list(m.classes_).index(k) if k in m.classes_ else None for k in classes]
            oof[te] = np.stack([p[:, j] if j is not None else np.zeros(len(te)) for j in cols], axis=1)
    else:
        oof = model.predict_proba(x)
    head = PairHead(classes, features, model.coef_ if len(classes) > 2 else np.vstack([-model.coef_[0], model.coef_[0]]) / 2,
                    model.intercept_ if len(classes) > 2 else np.array([-model.intercept_[0], model.intercept_[0]]) / 2,
                    0.5, {"C": c, "rows": int(len(y_arr)), "edges": int(sum(v != "none" for v in y))})
    best, best_t = -1.0, 0.5
    none = classes.index("none")
    grid = np.unique(np.round(np.quantile(oof[:, none], np.linspace(0.0, 1.0, 101)), 4)) if len(oof) else [0.5]
    for t in grid:
        head.threshold = float(t)
        f1 = _f1(head, oof, y, per_target)
        if f1 > best:
            best, best_t = f1, float(t)
    head.threshold = best_t
    head.meta["oof_f1"] = round(best, 4)
    return head


def _f1(head: PairHead, probs: np.ndarray, y: list[str], per_target: list[str] | None) -> float:
    none = head.classes.index("none")
    picks = []
    for row in probs:
        if row[none] >= head.threshold:
            picks.append(("none", 0.0))
        else:
            m = row.copy()
            m[none] = -1
            k = int(m.argmax())
            picks.append((head.classes[k], float(row[k])))
    if per_target is not None:
        best: dict[str, int] = {}
        for i, (rel, p) in enumerate(picks):
            if rel != "none" and (per_target[i] not in best or p > picks[best[per_target[i]]][1]):
                best[per_target[i]] = i
        keep = set(best.values())
        picks = [pk if i in keep else ("none", 0.0) for i, pk in enumerate(picks)]
    tp = sum(1 for (rel, _), g in zip(picks, y) if rel != "none" and rel == g)
    fp = sum(1 for (rel, _), g in zip(picks, y) if rel != "none" and rel != g)
    fn = sum(1 for (rel, _), g in zip(picks, y) if g != "none" and rel != g)
    return 2 * tp / max(1, 2 * tp + fp + fn)


@dataclass
class TrainingGraph:
    """The design's graph of one training complaint, its events aligned to gold."""

    events: list[PairEvent]
    alignment: dict[str, str]  # predicted event id → gold event id
    temporal: dict[tuple[str, str], str]  # (gold a, gold b) → relation, AFTER read as BEFORE the other way
    causal: dict[tuple[str, str], str]
    evidence: dict[str, frozenset[str]] = field(default_factory=dict)  # predicted event → its gold sentence ids
    gold_evidence: list[frozenset[str]] = field(default_factory=list)  # each gold event's sentence ids


def training_graphs(folders: list[Path], heads, part: str = "edges", k: int = 3) -> list[TrainingGraph]:
    """The design's graphs of ``folders``, aligned to gold, as the part ``part`` is trained on them.

    Cross-fitted (``heads.CROSS_FIT``, on by default, with at least ``2k`` complaints): the complaints
    are split in ``k`` groups and each group's graphs are made by heads trained on the other groups
    (with the parts trained before ``part``), so the part learns from graphs as unseen complaints get
    them: as many stray events and misread types. Otherwise with ``heads`` themselves."""
    from argus.designs.sentence.heads import CROSS_FIT, inner_heads, parts_before

    folders = list(folders)
    if not CROSS_FIT.get() or len(folders) < 2 * k:
        return _graphs(folders, heads)
    out = []
    for j in range(k):
        held = folders[j::k]
        rest = [f for f in folders if f not in held]
        out += _graphs(held, inner_heads(rest, heads, parts_before(part)))
    return out


def _graphs(folders: list[Path], heads) -> list[TrainingGraph]:
    """The design's graphs of ``folders`` with ``heads``, aligned to gold."""
    import tempfile

    from argus.config import ArgusConfig
    from argus.pipeline import ArgusPipeline
    from metrics.gold import load_gold, match_graphs
    from metrics.gold.report import to_gold_space

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        pipe = ArgusPipeline(ArgusConfig.load(None, {"cache_dir": tmp}))
        pipe._event_heads = heads
        for folder in folders:
            ekg = pipe.extract(Path(folder) / "complaint.txt")
            gold = load_gold(folder)
            view = to_gold_space(ekg, gold)
            align = match_graphs(view, gold, tiers=("relaxed",))["relaxed"].event_alignment
            text = {s.id: s.text for s in ekg.sentences}
            order = {s.id: i for i, s in enumerate(ekg.sentences)}
            temporal: dict[tuple[str, str], str] = {}
            for e in gold.graph.temporal_edges:
                a, b, rel = e.source, e.target, e.relation
                if rel == "AFTER":
                    a, b, rel = b, a, "BEFORE"
                temporal.setdefault((a, b), rel)
                if rel in ("OVERLAP", "SAME_TIME"):
                    temporal.setdefault((b, a), rel)
            causal = {}
            for e in gold.graph.causal_edges:
                causal.setdefault((e.source, e.target), e.relation)
            sids = [s for e in ekg.graph.events for s in e.evidence]
            p_event = dict(zip(sids, (r.p_event for r in heads.read([text[s] for s in sids]))))
            out.append(TrainingGraph(pair_events(ekg.graph.events, text, order, p_event), dict(align), temporal, causal,
                                     {e.id: frozenset(e.evidence) for e in view.events},
                                     [frozenset(e.evidence) for e in gold.graph.events]))
    return out


def labelled_rows(graphs: list[TrainingGraph], candidates: Callable, features: Callable, label: Callable
                  ) -> tuple[np.ndarray, list[str], list[int], list[str]]:
    """(features, labels, complaint of each row, target key of each row) over the candidate pairs."""
    xs, ys, groups, targets = [], [], [], []
    for g_i, g in enumerate(graphs):
        for a, b in candidates(g.events):
            xs.append(features(a, b, g.events))
            ga, gb = g.alignment.get(a.id), g.alignment.get(b.id)
            ys.append(label(g, ga, gb) if ga and gb else "none")
            groups.append(g_i)
            targets.append(f"{g_i}:{b.id}")
    return (np.asarray(xs, dtype="float64") if xs else np.zeros((0, 0))), ys, groups, targets


def labelled_same_rows(graphs: list[TrainingGraph], candidates: Callable, features: Callable
                       ) -> tuple[np.ndarray, list[str], list[int], list[str]]:
    """Rows for the same-occurrence head: "SAME" where one gold event has both events' sentences."""
    xs, ys, groups, targets = [], [], [], []
    for g_i, g in enumerate(graphs):
        for a, b in candidates(g.events):
            ea, eb = g.evidence.get(a.id, frozenset()), g.evidence.get(b.id, frozenset())
            same = bool(ea and eb and ea != eb and any(ev & ea and ev & eb for ev in g.gold_evidence))
            xs.append(features(a, b, g.events))
            ys.append("SAME" if same else "none")
            groups.append(g_i)
            targets.append(f"{g_i}:{b.id}")
    return (np.asarray(xs, dtype="float64") if xs else np.zeros((0, 0))), ys, groups, targets


__all__ = ["PairEvent", "PairHead", "TrainingGraph", "cue_flags", "date_order", "fit_head", "labelled_rows",
           "labelled_same_rows",
           "opening", "pair_events", "training_graphs"]
