"""Pareto dominance, the non-dominated front, exact hypervolume, the knee, bootstrap intervals and
the val-only-win flag: the math of the frontier, free of IO."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from optimizers.frontier.model import QUALITY_COST, Constraints, HypervolumePoint, MemberManifest

def _as_vector(point: Mapping[str, float] | Sequence[float], names: Sequence[str]) -> list[float]:
    if isinstance(point, Mapping):
        try:
            return [float(point[n]) for n in names]
        except KeyError as exc:
            raise ValueError(f"point {dict(point)!r} lacks objective {exc.args[0]!r}") from None
    values = [float(x) for x in point]
    if len(values) != len(names):
        raise ValueError(f"point {values!r} has {len(values)} values for objectives {list(names)}")
    return values


def _minimized(points: Sequence[Mapping[str, float] | Sequence[float]], senses: Mapping[str, str]) -> np.ndarray:
    """Points as an (n, d) array in which every objective is minimized (maximized ones negated)."""
    names = list(senses)
    for name, sense in senses.items():
        if sense not in ("max", "min"):
            raise ValueError(f"sense of {name!r} must be 'max' or 'min', got {sense!r}")
    sign = np.array([-1.0 if senses[n] == "max" else 1.0 for n in names])
    arr = np.array([_as_vector(p, names) for p in points], dtype=float).reshape(len(points), len(names))
    return arr * sign


_BOUNDS = {("cost_usd", "<="): "max_cost_per_doc", ("tokens", "<="): "max_tokens_per_doc",
           ("latency_s", "<="): "max_latency_s", ("quality", ">="): "min_quality"}


def _as_constraints(constraints: Constraints | Mapping[str, Any] | None) -> Constraints | None:
    """A ``Constraints`` from itself, a mapping of its fields, or ``{objective: (op, bound)}``.

    The last form accepts ``("<=", v)`` on cost_usd, tokens, latency_s and ``(">=", v)`` on quality.
    """
    if constraints is None or isinstance(constraints, Constraints):
        return constraints
    fields: dict[str, Any] = {}
    for name, value in constraints.items():
        if isinstance(value, (tuple, list)):
            if len(value) != 2 or (name, value[0]) not in _BOUNDS:
                raise ValueError(f"unsupported constraint {name!r}: {value!r}; use {sorted(_BOUNDS)}")
            fields[_BOUNDS[(name, value[0])]] = value[1]
        else:
            fields[name] = value
    return Constraints(**fields)


# --------------------------------------------------------------------------------------------
# Pareto dominance, hypervolume, knee, bootstrap
# --------------------------------------------------------------------------------------------


def dominates(a: Mapping[str, float] | Sequence[float], b: Mapping[str, float] | Sequence[float],
              senses: Mapping[str, str] = QUALITY_COST) -> bool:
    """True when ``a`` is at least as good as ``b`` in every objective and strictly better in one."""
    m = _minimized([a, b], senses)
    return bool(np.all(m[0] <= m[1]) and np.any(m[0] < m[1]))


def pareto_front(points: Sequence[Mapping[str, float] | Sequence[float]], senses: Mapping[str, str] = QUALITY_COST,
                 constraints: Constraints | Mapping[str, Any] | None = None) -> list[int]:
    """Indices (ascending) of the feasible points that no other feasible point dominates.

    Identical points do not dominate each other, so duplicates are all kept. A point with a NaN
    objective or one that violates ``constraints`` (a ``Constraints``, a mapping of its fields such
    as ``{"max_cost_per_doc": 0.01}``, or ``{"cost_usd": ("<=", 0.01)}``) is not eligible and does
    not dominate anything. O(n²).
    """
    if not points:
        return []
    cons = _as_constraints(constraints)
    m = _minimized(points, senses)
    feasible = ~np.isnan(m).any(axis=1)
    if cons is not None:
        for i, p in enumerate(points):
            if feasible[i] and not cons.feasible(p if isinstance(p, Mapping) else dict(zip(senses, p))):
                feasible[i] = False
    idx = np.flatnonzero(feasible)
    front = []
    for i in idx:
        others = m[idx]
        dominated = np.all(others <= m[i], axis=1) & np.any(others < m[i], axis=1)
        if not dominated.any():
            front.append(int(i))
    return front


def default_reference(points: Sequence[Mapping[str, float] | Sequence[float]],
                      senses: Mapping[str, str] = QUALITY_COST) -> dict[str, float]:
    """The reference point convention: 0 for maximized objectives, 1.1 × max observed for minimized ones.

    A minimized objective whose largest observed value is 0 (or that has no points) gets 1.0, so
    all-zero costs still give a positive hypervolume.
    """
    names = list(senses)
    arr = np.array([_as_vector(p, names) for p in points], dtype=float).reshape(len(points), len(names))
    ref = {}
    for j, name in enumerate(names):
        if senses[name] == "max":
            ref[name] = 0.0
        else:
            col = arr[:, j][np.isfinite(arr[:, j])] if len(arr) else np.array([])
            top = float(col.max()) if col.size else 0.0
            ref[name] = 1.1 * top if top > 0 else 1.0
    return ref


def _hv_min(points: np.ndarray, ref: np.ndarray) -> float:
    """Exact hypervolume of minimization points strictly inside ``ref`` (recursive slicing)."""
    if len(points) == 0:
        return 0.0
    d = points.shape[1]
    if d == 1:
        return float(ref[0] - points[:, 0].min())
    if d == 2:
        order = np.lexsort((points[:, 1], points[:, 0]))
        area, best_y = 0.0, ref[1]
        pts = points[order]
        for x, y in pts:  # sweep by x: each improving point adds the strip [x, ref_x] × [y, best_y]
            if y >= best_y:
                continue
            area += (ref[0] - x) * (best_y - y)
            best_y = y
        return float(area)
    # slice along the last objective: between consecutive levels the covered set is the (d-1)-D
    # hypervolume of every point at or below that level
    order = np.argsort(points[:, -1], kind="stable")
    pts = points[order]
    volume = 0.0
    for k in range(len(pts)):
        upper = pts[k + 1, -1] if k + 1 < len(pts) else ref[-1]
        depth = upper - pts[k, -1]
        if depth > 0:
            volume += depth * _hv_min(pts[: k + 1, :-1], ref[:-1])
    return float(volume)


def hypervolume(points: Sequence[Mapping[str, float] | Sequence[float]], senses: Mapping[str, str] = QUALITY_COST,
                reference: Mapping[str, float] | None = None) -> float:
    """Exact hypervolume dominated by ``points`` and bounded by ``reference``.

    Maximized objectives count upward from the reference (quality above 0), minimized ones downward
    (cost below 1.1 × max cost, see ``default_reference``, used when ``reference`` is None). Points
    not strictly better than the reference in every objective, and NaN points, contribute nothing;
    dominated points add nothing by construction. Exact for any number of objectives (sweep in 2-D,
    slicing above); meant for the 2–3 objectives of a campaign.
    """
    if not points:
        return 0.0
    if reference is None:
        reference = default_reference(points, senses)
    names = list(senses)
    m = _minimized(points, senses)
    ref = _minimized([[float(reference[n]) for n in names]], senses)[0]
    m = m[~np.isnan(m).any(axis=1)]
    m = m[np.all(m < ref, axis=1)]
    if len(m) == 0:
        return 0.0
    keep = pareto_front([list(r) for r in m], {n: "min" for n in names})
    return _hv_min(m[keep], ref)


def hypervolume_history(points: Sequence[Mapping[str, float]], iterations: Sequence[int],
                        senses: Mapping[str, str] = QUALITY_COST, reference: Mapping[str, float] | None = None,
                        constraints: Constraints | Mapping[str, Any] | None = None) -> list[HypervolumePoint]:
    """Hypervolume and frontier size of all feasible candidates evaluated up to each iteration."""
    if len(points) != len(iterations):
        raise ValueError("points and iterations differ in length")
    if reference is None:
        reference = default_reference(points, senses)
    history = []
    for it in sorted(set(int(i) for i in iterations)):
        upto = [p for p, i in zip(points, iterations) if i <= it]
        front = pareto_front(upto, senses, constraints)
        history.append(HypervolumePoint(iteration=it, hypervolume=hypervolume([upto[i] for i in front], senses, reference),
                                        frontier_size=len(front)))
    return history


def _best_index(m: np.ndarray, candidates: Sequence[int]) -> int:
    """Best of ``candidates`` lexicographically over the minimized objectives (first objective first)."""
    return min(candidates, key=lambda i: (tuple(m[i]), i))


def knee_point(points: Sequence[Mapping[str, float] | Sequence[float]], senses: Mapping[str, str] = QUALITY_COST) -> int:
    """Index of the knee of the front formed by ``points`` (the best trade-off).

    The front of ``points`` is taken first (dominated points never win). Each objective is
    normalized to [0, 1] over the front, with 1 the better end. In 2-D the knee is the front point
    farthest from the line through the two extreme points, on the side of the ideal point (1, 1).
    With one or two front points, or when no point bulges beyond that line, the knee is the best
    point in the first objective (max quality; ties go to the next objectives, then the lower
    index). With three or more objectives, the knee is the point nearest the ideal point.
    """
    if not points:
        raise ValueError("knee_point of no points")
    front = pareto_front(points, senses)
    if not front:
        raise ValueError("knee_point: every point has a NaN objective")
    m = _minimized(points, senses)
    fallback = _best_index(m, front)
    if len(front) <= 2:
        return fallback
    f = m[front]
    lo, hi = f.min(axis=0), f.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    good = (hi - f) / span  # 1 = best end of each objective
    if f.shape[1] != 2:
        dist = np.linalg.norm(1.0 - good, axis=1)
        return front[int(min(range(len(front)), key=lambda k: (dist[k], tuple(f[k]))))]
    a = good[int(np.argmax(good[:, 0]))]  # extreme in the first objective
    b = good[int(np.argmax(good[:, 1]))]  # extreme in the second objective
    direction = b - a
    norm = float(np.hypot(*direction))
    if norm == 0:
        return fallback
    normal = np.array([-direction[1], direction[0]]) / norm
    if float(np.dot(np.ones(2) - a, normal)) < 0:
        normal = -normal  # orient toward the ideal point
    signed = (good - a) @ normal
    k = int(np.argmax(signed))
    if signed[k] <= 1e-12:
        return fallback
    return front[k]


def bootstrap_ci(values: Sequence[float], n_resamples: int = 2000, level: float = 0.95,
                 seed: int = 0) -> tuple[float, float]:
    """Percentile-bootstrap confidence interval of the mean of ``values``.

    ``scipy.stats.bootstrap`` with ``method="percentile"`` and ``rng=numpy.random.default_rng(seed)``
    (reproducible by seed). Percentile, not scipy's default BCa: it is the interval the manifests
    have always recorded, and BCa is undefined (NaN, with a warning) for the degenerate samples a
    campaign often has, e.g. a cost of 0.0 on every document with free models. Degenerate input is
    answered without resampling: one value, or values that are all equal, give the point interval
    ``(v, v)``. No values is an error.
    """
    from scipy.stats import bootstrap

    x = np.asarray(list(values), dtype=float)
    if x.size == 0:
        raise ValueError("bootstrap_ci of no values")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if x.size == 1 or np.all(x == x[0]):
        return float(x[0]), float(x[0])
    res = bootstrap((x,), np.mean, vectorized=True, method="percentile", n_resamples=n_resamples,
                    confidence_level=level, rng=np.random.default_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def flag_val_only_wins(members: Sequence[MemberManifest], senses: Mapping[str, str] = QUALITY_COST,
                       constraints: Constraints | Mapping[str, Any] | None = None) -> list[MemberManifest]:
    """Copies of ``members`` with ``val_only_win`` set by this rule.

    A member is flagged when (1) it is on the validation frontier of ``members`` (their
    ``objectives``, under ``constraints``) and (2) on the test split some other member with test
    scores dominates it (``splits["test"]`` values of the ``senses`` objectives; constraints are
    not applied on test). Members without test scores, or with fewer objectives on test than
    ``senses`` needs, are never flagged and never dominate; every other member gets False.
    """
    members = list(members)
    val_front = set(pareto_front([m.objectives for m in members], senses, constraints))
    test_points: dict[int, dict[str, float]] = {}
    for i, m in enumerate(members):
        test = m.splits.get("test")
        if test is not None and all(k in test.point() for k in senses):
            test_points[i] = test.point()
    out = []
    for i, m in enumerate(members):
        flag = i in val_front and i in test_points and any(
            dominates(test_points[j], test_points[i], senses) for j in test_points if j != i)
        out.append(m.model_copy(update={"val_only_win": flag}))
    return out


