"""Paired statistics for the downstream experiments (QA, classification, retrieval).

Every function takes *paired* per-item results of two conditions ``a`` and ``b`` over the same
items, in the same order, and is pure: the same input (and seed) gives the same output. The
formulas follow the ARGUS paper's protocol for the document-QA comparison (Section 5.3,
Appendix D.1): a paired bootstrap 95% confidence interval of the mean difference (10,000
resamples, ``scipy.stats.bootstrap``), the Wilcoxon signed-rank test (``scipy.stats.wilcoxon``)
and a sign-flip paired permutation test (10,000 permutations, ``scipy.stats.permutation_test``); McNemar's exact test for paired correctness (multiple choice, classification);
SQuAD-style token F1 for short free-text answers (:func:`argus.text.answers.token_f1`, re-exported
here).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pandas as pd

from argus.text.answers import normalize_answer, token_f1  # re-exported: the one implementation lives there

__all__ = [
    "paired_bootstrap_ci", "wilcoxon_signed_rank", "sign_flip_permutation", "mcnemar_exact",
    "token_f1", "normalize_answer", "paired_table", "EXACT_PERMUTATION_MAX_N",
]

#: up to this many pairs the sign-flip test enumerates all 2**n sign vectors exactly
EXACT_PERMUTATION_MAX_N = 16


def _paired(a: Sequence[float], b: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(a, dtype=float)
    y = np.asarray(b, dtype=float)
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError(f"paired scores need two 1-D sequences of the same length, got {x.shape} and {y.shape}")
    if x.size == 0:
        raise ValueError("paired scores are empty")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("paired scores contain NaN or infinite values")
    return x, y


def _mean_difference(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x - y, axis=axis)


def _batch(n: int) -> int:
    """Resamples per scipy batch: about two million values in memory at a time."""
    return max(1, 2_000_000 // n)


def paired_bootstrap_ci(
    a: Sequence[float], b: Sequence[float], n_resamples: int = 10_000, level: float = 0.95, seed: int = 0,
) -> tuple[float, float, float]:
    """Mean difference ``mean(a − b)`` and its paired percentile-bootstrap confidence interval.

    ``scipy.stats.bootstrap`` on the two samples with ``paired=True`` (each resample draws n pair
    indices with replacement, ``rng=numpy.random.default_rng(seed)``) and the statistic
    ``mean(a − b)``. The method is ``"percentile"``, deliberately: it is the interval this function
    has always returned (the ``(1 − level)/2`` and ``(1 + level)/2`` quantiles of the resampled
    means), and it is defined for every sample, whereas BCa needs a non-degenerate jackknife and
    returns NaN (with a warning) when all differences are equal.

    Degenerate input is answered without resampling: one pair, or differences that are all equal,
    give the point interval ``(d, d, d)``. Returns ``(mean_diff, lo, hi)``; the observed mean is not
    forced inside the interval, but for any non-degenerate sample it lies in it.
    """
    from scipy.stats import bootstrap

    x, y = _paired(a, b)
    if not 0.0 < level < 1.0:
        raise ValueError("level must lie strictly between 0 and 1")
    if n_resamples < 1:
        raise ValueError("n_resamples must be positive")
    d = x - y
    if d.size < 2 or np.all(d == d[0]):
        return float(d[0]), float(d[0]), float(d[0])
    res = bootstrap(
        (x, y), _mean_difference, paired=True, vectorized=True, method="percentile",
        n_resamples=n_resamples, confidence_level=level, batch=_batch(d.size),
        rng=np.random.default_rng(seed),
    )
    return float(d.mean()), float(res.confidence_interval.low), float(res.confidence_interval.high)


def wilcoxon_signed_rank(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """Two-sided Wilcoxon signed-rank test of ``a − b`` (``scipy.stats.wilcoxon``).

    Zero differences use ``zero_method="wilcox"``: pairs with ``a_i == b_i`` are dropped before
    ranking (Wilcoxon's original treatment; a tie carries no sign). scipy picks the exact null
    distribution for small samples without ties/zeros and the normal approximation otherwise
    (``method="auto"``). When every difference is zero there is no evidence of a difference and
    the function returns ``(0.0, 1.0)`` instead of scipy's warning and NaN. Returns
    ``(statistic, p)`` where the statistic is scipy's: the smaller of the positive- and
    negative-rank sums.
    """
    from scipy.stats import wilcoxon

    x, y = _paired(a, b)
    if np.all(x - y == 0):
        return 0.0, 1.0
    res = wilcoxon(x, y, zero_method="wilcox", alternative="two-sided")
    return float(res.statistic), float(res.pvalue)


def sign_flip_permutation(
    a: Sequence[float], b: Sequence[float], n_permutations: int = 10_000, seed: int = 0,
) -> float:
    """Two-sided paired permutation (sign-flip) test of the mean difference.

    ``scipy.stats.permutation_test`` with ``permutation_type="samples"`` on the two samples and
    the statistic ``mean(a − b)``: under H0 (the two conditions are exchangeable within each pair)
    swapping ``a_i`` and ``b_i`` flips the sign of ``d_i = a_i − b_i``, so this is the sign-flip
    test. The two-sided p is scipy's ``2 · min(P(T ≤ t), P(T ≥ t))`` (capped at 1); the sign-flip
    null distribution is symmetric, so it equals ``P(|T| ≥ |t|)``.

    - ``n ≤ 16``: exact: all ``2**n`` sign vectors are enumerated (``n_resamples=inf``).
    - otherwise Monte-Carlo: ``n_permutations`` random sign vectors from
      ``rng=numpy.random.default_rng(seed)``; scipy counts the observed labelling as one of them
      (Phipson & Smyth 2010), so p is never 0.

    Degenerate input is answered without permuting: one pair, or all-zero differences, give
    ``p = 1`` (every sign vector is then as extreme as the observed one).
    """
    from scipy.stats import permutation_test

    x, y = _paired(a, b)
    d = x - y
    if d.size < 2 or np.all(d == 0):
        return 1.0
    exact = d.size <= EXACT_PERMUTATION_MAX_N
    if not exact and n_permutations < 1:
        raise ValueError("n_permutations must be positive")
    res = permutation_test(
        (x, y), _mean_difference, permutation_type="samples", vectorized=True, alternative="two-sided",
        n_resamples=np.inf if exact else n_permutations, batch=_batch(d.size),
        rng=np.random.default_rng(seed),
    )
    return float(res.pvalue)


def mcnemar_exact(correct_a: Sequence[bool], correct_b: Sequence[bool]) -> tuple[int, int, float]:
    """McNemar's exact test on paired correctness (``statsmodels`` ``mcnemar(exact=True)``).

    The 2×2 table is ``[[both correct, a only], [b only, both wrong]]``; ``b`` = #(a correct, b
    wrong) and ``c`` = #(a wrong, b correct) are the discordant pairs, and the exact two-sided p
    is the binomial test of ``min(b, c)`` out of ``b + c`` at 1/2 (p = 1 when ``b + c = 0``).
    Returns ``(b, c, p)``.
    """
    from statsmodels.stats.contingency_tables import mcnemar

    x = np.asarray(correct_a, dtype=bool)
    y = np.asarray(correct_b, dtype=bool)
    if x.ndim != 1 or x.shape != y.shape or x.size == 0:
        raise ValueError("paired correctness needs two non-empty 1-D sequences of the same length")
    table = np.array([
        [np.sum(x & y), np.sum(x & ~y)],
        [np.sum(~x & y), np.sum(~x & ~y)],
    ])
    b, c = int(table[0, 1]), int(table[1, 0])
    if b + c == 0:
        return b, c, 1.0
    res = mcnemar(table, exact=True)
    return b, c, float(min(1.0, res.pvalue))


def paired_table(
    scores: dict[str, Sequence[float]], n_resamples: int = 10_000, n_permutations: int = 10_000,
    level: float = 0.95, seed: int = 0,
) -> pd.DataFrame:
    """Every pair of conditions (in the dict's order, ``a`` before ``b``): the paired comparison.

    Columns: ``a``, ``b``, ``n``, ``mean_a``, ``mean_b``, ``mean_diff`` (a − b), ``ci_lo``,
    ``ci_hi`` (:func:`paired_bootstrap_ci` at ``level``), ``wilcoxon_stat``, ``wilcoxon_p``
    (:func:`wilcoxon_signed_rank`), ``permutation_p`` (:func:`sign_flip_permutation`). All
    conditions must score the same items in the same order.
    """
    names = list(scores)
    lengths = {k: len(v) for k, v in scores.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"conditions are not paired (different lengths: {lengths})")
    rows = []
    for i, j in itertools.combinations(range(len(names)), 2):
        na, nb = names[i], names[j]
        a, b = scores[na], scores[nb]
        diff, lo, hi = paired_bootstrap_ci(a, b, n_resamples=n_resamples, level=level, seed=seed)
        w_stat, w_p = wilcoxon_signed_rank(a, b)
        rows.append({
            "a": na, "b": nb, "n": len(a), "mean_a": float(np.mean(a)), "mean_b": float(np.mean(b)),
            "mean_diff": diff, "ci_lo": lo, "ci_hi": hi, "wilcoxon_stat": w_stat, "wilcoxon_p": w_p,
            "permutation_p": sign_flip_permutation(a, b, n_permutations=n_permutations, seed=seed),
        })
    columns = ["a", "b", "n", "mean_a", "mean_b", "mean_diff", "ci_lo", "ci_hi", "wilcoxon_stat", "wilcoxon_p", "permutation_p"]
    return pd.DataFrame(rows, columns=columns)
