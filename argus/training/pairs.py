"""Training the pair heads of the sentence design (``argus.designs.sentence.pairs``): the design's own
graphs of the training complaints, the rows the heads learn from, and the fitting.

``TrainingGraph`` / ``training_graphs``  the design's own graphs of the training complaints (the whole
                                         pipeline, ``argus.pipeline``), each event aligned to gold
                                         (``metrics.gold``, relaxed tier), from which the heads learn;
``labelled_rows``                        the candidate pairs of the temporal and causal heads, labelled by
                                         the gold edge between the gold events they align to;
``labelled_same_rows``                   those of the same-occurrence head, "SAME" where one gold event
                                         has both events' sentences;
``fit_head``                             a ``PairHead`` fitted on such rows, its threshold on "no edge"
                                         chosen inside the training complaints.

The heads are trained on the events the design itself finds, so what they learn is what the scorer counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from argus.designs.sentence.pairs import PairEvent, PairHead, pair_events


def softmax_weights(model) -> tuple[np.ndarray, np.ndarray]:
    """(weights (k, d), bias (k,)) of a fitted sklearn ``LogisticRegression`` as a softmax over its k classes;
    with two classes, sklearn's single row split in two halves that give the same probabilities."""
    if len(model.classes_) > 2:
        return model.coef_, model.intercept_
    return np.vstack([-model.coef_[0], model.coef_[0]]) / 2, np.array([-model.intercept_[0], model.intercept_[0]]) / 2


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
    weights, bias = softmax_weights(model)
    head = PairHead(classes, features, weights, bias, 0.5, {"C": c, "rows": int(len(y_arr)), "edges": int(sum(v != "none" for v in y))})
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
    from argus.training.heads import CROSS_FIT, inner_heads, parts_before

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


__all__ = ["TrainingGraph", "fit_head", "softmax_weights", "labelled_rows", "labelled_same_rows", "training_graphs"]
