"""Agreement statistics for human annotation and LLM-judge evaluation.

Pure functions: array-likes / DataFrames in, floats / DataFrames out. Every ``ratings`` argument is
an **items × raters** matrix (list of lists, ``numpy`` array or ``pandas.DataFrame``) of category
labels (strings or ints). ``None``, ``NaN``, ``pandas.NA`` and blank strings are missing ratings.

Notation used in the docstrings: item ``i`` has ``r_i`` ratings, ``r_ik`` of them in category ``k``;
``q`` categories; ``n`` items.

Established implementations are used where they exist: ``statsmodels.stats.inter_rater`` for
Fleiss' kappa, the ``krippendorff`` package for Krippendorff's alpha, ``scipy.stats.binomtest`` for
the sign test. Gwet's AC1 is implemented here (the PyPI ``irrCAC`` package pins ``scipy==1.12`` and
``pandas<3``); it reproduces ``irrCAC.raw.CAC.gwet()`` on irrCAC's own example data (see
``tests/test_agreement.py``).

The summaries reproduce the shapes of the ARGUS paper's Table 7 (``summarize_pairwise``:
Dimension, Win, Agree., AC1, p) and Table 11 (``summarize_stability``: Stability, Flip, AC1).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

WINNERS: tuple[str, ...] = ("A", "B", "tie")

__all__ = [
    "WINNERS",
    "percent_agreement",
    "fleiss_kappa",
    "krippendorff_alpha",
    "gwet_ac1",
    "sign_test",
    "stability",
    "summarize_pairwise",
    "summarize_stability",
]


# ----------------------------------------------------------------------------- input handling


def _is_missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, str):
        return value.strip() == ""
    try:
        missing = pd.isna(value)
    except (TypeError, ValueError):
        return False
    return bool(missing) if np.ndim(missing) == 0 else False


def _matrix(ratings: Any) -> np.ndarray:
    """An items × raters object array with ``None`` for every missing rating."""
    if isinstance(ratings, pd.DataFrame):
        arr = ratings.to_numpy(dtype=object)
    else:
        arr = np.array(ratings, dtype=object)
    if arr.ndim == 1 and arr.size == 0:
        arr = arr.reshape(0, 0)
    if arr.ndim != 2:
        raise ValueError(f"ratings must be a 2-D items x raters matrix, got shape {arr.shape}")
    out = np.empty(arr.shape, dtype=object)
    for idx, value in np.ndenumerate(arr):
        if _is_missing(value):
            out[idx] = None
        elif isinstance(value, np.generic):
            out[idx] = value.item()
        else:
            out[idx] = value
    return out


def _categories(mat: np.ndarray, categories: Sequence | None) -> list:
    seen: list = []
    seen_set: set = set()
    for value in mat.ravel():
        if value is not None and value not in seen_set:
            seen_set.add(value)
            seen.append(value)
    if categories is not None:
        cats = list(categories)
        if len(set(cats)) != len(cats):
            raise ValueError(f"categories contain duplicates: {cats}")
        unknown = [v for v in seen if v not in set(cats)]
        if unknown:
            raise ValueError(f"ratings contain values outside categories {cats}: {unknown}")
        return cats
    try:
        return sorted(seen)
    except TypeError:  # mixed types: keep order of first appearance
        return seen


def _counts(mat: np.ndarray, cats: list) -> np.ndarray:
    """``r_ik``: items × categories count table."""
    index = {c: k for k, c in enumerate(cats)}
    table = np.zeros((mat.shape[0], len(cats)), dtype=float)
    for (i, _j), value in np.ndenumerate(mat):
        if value is not None:
            table[i, index[value]] += 1
    return table


def _codes(mat: np.ndarray, cats: list) -> np.ndarray:
    """Category index per cell as float, ``NaN`` where missing."""
    index = {c: k for k, c in enumerate(cats)}
    codes = np.full(mat.shape, np.nan)
    for idx, value in np.ndenumerate(mat):
        if value is not None:
            codes[idx] = index[value]
    return codes


# ----------------------------------------------------------------------------- coefficients


def percent_agreement(ratings: Any) -> float:
    """Mean pairwise percent agreement.

    ``P_a = (1/n') Σ_{i: r_i≥2} Σ_k r_ik (r_ik − 1) / (r_i (r_i − 1))`` — for each item, the share of
    agreeing rater pairs among the pairs of raters who rated it, averaged over the ``n'`` items with
    at least two ratings (items with fewer are skipped). With two raters this is the plain share of
    items on which they gave the same label. This is the observed agreement of Fleiss (1971) and
    of Gwet (2014, *Handbook of Inter-Rater Reliability*, 4th ed., ch. 2), generalised to missing
    ratings. ``NaN`` when no item has two ratings.
    """
    mat = _matrix(ratings)
    cats = _categories(mat, None)
    if mat.size == 0 or not cats:
        return math.nan
    table = _counts(mat, cats)
    r = table.sum(axis=1)
    keep = r >= 2
    if not keep.any():
        return math.nan
    per_item = (table[keep] * (table[keep] - 1)).sum(axis=1) / (r[keep] * (r[keep] - 1))
    return float(per_item.mean())


def fleiss_kappa(ratings: Any, categories: Sequence | None = None) -> float:
    """Fleiss' kappa (Fleiss 1971, "Measuring nominal scale agreement among many raters",
    *Psychological Bulletin* 76(5):378–382), computed by ``statsmodels.stats.inter_rater``.

    ``κ = (P̄ − P̄_e) / (1 − P̄_e)`` with ``P̄`` the mean per-item agreement (see
    :func:`percent_agreement`) and ``P̄_e = Σ_k p_k²``, ``p_k`` the share of all ratings in category
    ``k``. Fleiss' kappa assumes every item is rated by the same number of raters, so **only
    complete rows** (items rated by every rater column) are used; rows with a missing rating are
    dropped. ``NaN`` when fewer than two raters, no complete row, or when every complete rating is
    the same category (``P̄_e = 1``: kappa is undefined).
    """
    from statsmodels.stats.inter_rater import aggregate_raters
    from statsmodels.stats.inter_rater import fleiss_kappa as _sm_fleiss_kappa

    mat = _matrix(ratings)
    if mat.ndim != 2 or mat.shape[1] < 2:
        return math.nan
    complete = np.array([all(v is not None for v in row) for row in mat], dtype=bool)
    mat = mat[complete] if mat.shape[0] else mat
    if mat.shape[0] == 0:
        return math.nan
    cats = _categories(mat, categories)
    codes = _codes(mat, cats).astype(int)
    table, _ = aggregate_raters(codes, n_cat=len(cats))
    p_cat = table.sum(axis=0) / table.sum()
    if np.isclose((p_cat**2).sum(), 1.0):
        return math.nan
    return float(_sm_fleiss_kappa(table, method="fleiss"))


def krippendorff_alpha(
    ratings: Any,
    level: Literal["nominal", "ordinal", "interval", "ratio"] = "nominal",
    categories: Sequence | None = None,
) -> float:
    """Krippendorff's alpha, computed by the ``krippendorff`` package (Castro 2017).

    ``α = 1 − D_o / D_e``: observed over expected disagreement of the pairable values (values of
    units with at least two ratings), Krippendorff (2011), "Computing Krippendorff's
    Alpha-Reliability", and Krippendorff (2004), *Content Analysis*, ch. 11. Missing ratings are
    allowed. ``level`` is the metric: ``"nominal"`` (default), ``"ordinal"`` (the scale order is the
    order of ``categories``; by default the sorted labels), ``"interval"`` or ``"ratio"`` (numeric
    labels only). ``NaN`` when there are fewer than two pairable values or they all agree on one
    value (``D_e = 0``).
    """
    import krippendorff

    if level not in ("nominal", "ordinal", "interval", "ratio"):
        raise ValueError(f"level must be nominal, ordinal, interval or ratio, got {level!r}")
    mat = _matrix(ratings)
    if mat.size == 0:
        return math.nan
    cats = _categories(mat, categories)
    if level in ("interval", "ratio"):
        try:
            data = np.array([[math.nan if v is None else float(v) for v in row] for row in mat])
        except (TypeError, ValueError) as exc:
            raise ValueError(f"level={level!r} needs numeric ratings") from exc
        domain = None
    else:
        data = _codes(mat, cats)
        domain = np.arange(len(cats), dtype=float)
    pairable = (~np.isnan(data)).sum(axis=1) >= 2
    values = data[pairable]
    values = values[~np.isnan(values)]
    if values.size < 2 or np.unique(values).size < 2:
        return math.nan
    return float(
        krippendorff.alpha(reliability_data=data.T, value_domain=domain, level_of_measurement=level)
    )


def gwet_ac1(ratings: Any, categories: Sequence | None = None) -> float:
    """Gwet's first-order agreement coefficient AC1 for two or more raters, missing ratings allowed.

    Gwet (2008), "Computing inter-rater reliability and its variance in the presence of high
    agreement", *Brit. J. Math. Stat. Psychol.* 61:29–48; multi-rater form with missing ratings from
    Gwet (2014), *Handbook of Inter-Rater Reliability*, 4th ed., §2.5 (as implemented by the R
    package ``irrCAC``/Python ``irrCAC`` ``gwet.ac1.raw``)::

        p_a  = (1/n') Σ_{i: r_i≥2} Σ_k r_ik (r_ik − 1) / (r_i (r_i − 1))     (n' items with ≥2 ratings)
        π_k  = (1/n)  Σ_{i: r_i≥1} r_ik / r_i                                (n items with ≥1 rating)
        p_e  = (1/(q − 1)) Σ_k π_k (1 − π_k)
        AC1  = (p_a − p_e) / (1 − p_e)

    ``q`` is the number of categories: ``len(categories)`` when given, otherwise the number of
    distinct labels observed (irrCAC's default). When only one category is used (``q = 1``) chance
    agreement is taken as 0 and ``AC1 = p_a = 1.0`` (the formula's ``1/(q − 1)`` is undefined there;
    irrCAC sets ``p_e = 1 − 1e-15``, which gives the same 1.0). For ``q ≥ 2``, ``p_e ≤ 1/q < 1``, so
    the denominator never vanishes. ``NaN`` when no item has two ratings.
    """
    mat = _matrix(ratings)
    if mat.size == 0:
        return math.nan
    cats = _categories(mat, categories)
    if not cats:
        return math.nan
    table = _counts(mat, cats)
    r = table.sum(axis=1)
    rated = r >= 1
    multi = r >= 2
    if not multi.any():
        return math.nan
    pa = float(((table[multi] * (table[multi] - 1)).sum(axis=1) / (r[multi] * (r[multi] - 1))).mean())
    q = len(cats)
    if q < 2:
        pe = 0.0
    else:
        pi = (table[rated] / r[rated, None]).mean(axis=0)
        pe = float((pi * (1 - pi)).sum() / (q - 1))
    return float((pa - pe) / (1 - pe))


def sign_test(wins: int, losses: int, alternative: str = "two-sided") -> float:
    """Exact sign test: ``scipy.stats.binomtest(wins, wins + losses, p=0.5)``.

    Ties must be excluded by the caller. Two-sided by default,
    ``p = Σ_{k: P(k) ≤ P(wins)} C(n,k) / 2^n``; with ``alternative="greater"`` the one-sided
    ``P(X ≥ wins)``. ``n = 0`` gives ``p = 1.0``. (Dixon & Mood 1946, "The statistical sign test",
    *JASA* 41:557–566.)
    """
    from scipy.stats import binomtest

    wins, losses = int(wins), int(losses)
    if wins < 0 or losses < 0:
        raise ValueError(f"wins and losses must be non-negative, got {wins}, {losses}")
    n = wins + losses
    if n == 0:
        return 1.0
    return float(binomtest(wins, n, p=0.5, alternative=alternative).pvalue)


def stability(first: Sequence, second: Sequence, categories: Sequence | None = None) -> dict[str, float]:
    """Test–retest stability of one judge: the same items judged twice (e.g. temperature 0 and 0.7).

    Pairs where either judgment is missing are dropped. Returns ``n`` (pairs), ``stability`` (share
    of unchanged judgments), ``flip_rate = 1 − stability`` and ``ac1`` (Gwet's AC1 between the two
    runs, treated as two raters; see :func:`gwet_ac1`). Values are ``NaN`` when ``n = 0``.
    """
    first, second = list(first), list(second)
    if len(first) != len(second):
        raise ValueError(f"first and second must be aligned: {len(first)} vs {len(second)} judgments")
    pairs = [(a, b) for a, b in zip(first, second) if not _is_missing(a) and not _is_missing(b)]
    n = len(pairs)
    if n == 0:
        return {"n": 0, "stability": math.nan, "flip_rate": math.nan, "ac1": math.nan}
    unchanged = sum(1 for a, b in pairs if a == b) / n
    return {
        "n": n,
        "stability": float(unchanged),
        "flip_rate": float(1.0 - unchanged),
        "ac1": gwet_ac1([[a, b] for a, b in pairs], categories=categories),
    }


# ----------------------------------------------------------------------------- summaries


def _normalize_winner(value: Any) -> str | None:
    if _is_missing(value):
        return None
    text = str(value).strip()
    for w in WINNERS:
        if text.lower() == w.lower():
            return w
    raise ValueError(f"winner must be one of {WINNERS}, got {value!r}")


def _require(df: pd.DataFrame, columns: Sequence[str]) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"missing columns {missing}; expected {list(columns)}")


def summarize_pairwise(
    df: pd.DataFrame,
    categories: Sequence | None = None,
    alternative: str = "two-sided",
) -> pd.DataFrame:
    """Pairwise-preference summary per dimension (the ARGUS paper's Table 7).

    Input columns ``doc_id, judge, dimension, winner`` with ``winner`` in ``{"A", "B", "tie"}``
    (case-insensitive; A = system under test, B = baseline). Rows with a missing winner are dropped;
    a repeated ``(doc_id, judge, dimension)`` is an error.

    Output: one row per dimension, in input order, with columns

    - ``n``: judgments; ``wins``, ``losses``, ``ties``; ``win_rate = wins / n``;
    - ``agreement``: inter-judge :func:`percent_agreement` over the docs × judges matrix
      (``NaN`` with fewer than two judges);
    - ``ac1``: :func:`gwet_ac1` over the same matrix (``categories`` default: the labels observed in
      that dimension, as irrCAC does — this reproduces the paper's 0.848 for 14 A / 1 B over
      5 docs × 3 judges; pass ``categories=WINNERS`` for a fixed 3-category scale);
    - ``p_sign``: exact :func:`sign_test` of wins vs losses over all judgments (ties excluded;
      ``alternative`` passed through, two-sided by default).
    """
    _require(df, ("doc_id", "judge", "dimension", "winner"))
    data = df[["doc_id", "judge", "dimension", "winner"]].copy()
    data["winner"] = [_normalize_winner(v) for v in data["winner"]]
    data = data[data["winner"].notna()]
    dup = data.duplicated(["doc_id", "judge", "dimension"], keep=False)
    if dup.any():
        first = data[dup].iloc[0]
        raise ValueError(
            f"{int(dup.sum())} repeated judgments, e.g. doc_id={first['doc_id']!r} judge={first['judge']!r} "
            f"dimension={first['dimension']!r}"
        )
    rows = []
    for dim in pd.unique(df["dimension"]):
        sub = data[data["dimension"] == dim]
        n = len(sub)
        wins = int((sub["winner"] == "A").sum())
        losses = int((sub["winner"] == "B").sum())
        ties = int((sub["winner"] == "tie").sum())
        if sub["judge"].nunique() >= 2:
            wide = sub.pivot(index="doc_id", columns="judge", values="winner")
            agreement = percent_agreement(wide)
            ac1 = gwet_ac1(wide, categories=categories)
        else:
            agreement = ac1 = math.nan
        rows.append({
            "dimension": dim,
            "n": n,
            "wins": wins,
            "losses": losses,
            "ties": ties,
            "win_rate": wins / n if n else math.nan,
            "agreement": agreement,
            "ac1": ac1,
            "p_sign": sign_test(wins, losses, alternative=alternative),
        })
    columns = ["dimension", "n", "wins", "losses", "ties", "win_rate", "agreement", "ac1", "p_sign"]
    return pd.DataFrame(rows, columns=columns)


def summarize_stability(df: pd.DataFrame, categories: Sequence | None = None) -> pd.DataFrame:
    """Intra-judge stability under temperature variation (the ARGUS paper's Table 11).

    Input columns ``doc_id, judge, dimension, winner_t0, winner_t1`` (winners as in
    :func:`summarize_pairwise`). Output: one row per judge (input order) with ``judge, n,
    stability, flip_rate, ac1`` from :func:`stability` over all of the judge's (doc, dimension)
    judgments.
    """
    _require(df, ("doc_id", "judge", "dimension", "winner_t0", "winner_t1"))
    rows = []
    for judge in pd.unique(df["judge"]):
        sub = df[df["judge"] == judge]
        t0 = [_normalize_winner(v) for v in sub["winner_t0"]]
        t1 = [_normalize_winner(v) for v in sub["winner_t1"]]
        rows.append({"judge": judge, **stability(t0, t1, categories=categories)})
    return pd.DataFrame(rows, columns=["judge", "n", "stability", "flip_rate", "ac1"])
