"""Paired statistics for the downstream experiments (QA, classification, retrieval).

Every function takes *paired* per-item results of two conditions ``a`` and ``b`` over the same
items, in the same order, and is pure: the same input (and seed) gives the same output. The
formulas follow the ARGUS paper's protocol for the document-QA comparison (Section 5.3,
Appendix D.1): a paired bootstrap 95% confidence interval of the mean difference (10,000
resamples), the Wilcoxon signed-rank test and a sign-flip paired permutation test (10,000
permutations); McNemar's exact test for paired correctness (multiple choice, classification);
SQuAD-style token F1 for short free-text answers (:func:`argus.answers.token_f1`, re-exported
here).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pandas as pd

from argus.answers import normalize_answer, token_f1  # re-exported: the one implementation lives there

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


def paired_bootstrap_ci(
    a: Sequence[float], b: Sequence[float], n_resamples: int = 10_000, level: float = 0.95, seed: int = 0,
) -> tuple[float, float, float]:
    """Mean difference ``mean(a − b)`` and its percentile-bootstrap confidence interval.

    With ``d_i = a_i − b_i`` (i = 1..n), each resample draws n indices uniformly with replacement
    (``numpy.random.default_rng(seed)``) and takes the mean of ``d`` over them; the interval is
    the ``(1 − level)/2`` and ``(1 + level)/2`` quantiles (numpy's linear interpolation) of the
    ``n_resamples`` resampled means. Returns ``(mean_diff, lo, hi)``; the observed mean is not
    forced inside the interval, but for any non-degenerate sample it lies in it.
    """
    x, y = _paired(a, b)
    if not 0.0 < level < 1.0:
        raise ValueError("level must lie strictly between 0 and 1")
    if n_resamples < 1:
        raise ValueError("n_resamples must be positive")
    d = x - y
    rng = np.random.default_rng(seed)
    means = np.empty(n_resamples, dtype=float)
    chunk = max(1, 2_000_000 // d.size)  # bounded memory for long vectors
    for start in range(0, n_resamples, chunk):
        stop = min(n_resamples, start + chunk)
        idx = rng.integers(0, d.size, size=(stop - start, d.size))
        means[start:stop] = d[idx].mean(axis=1)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(means, [alpha, 1.0 - alpha])
    return float(d.mean()), float(lo), float(hi)


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

    Under H0 (the two conditions are exchangeable within each pair) every ``d_i = a_i − b_i`` is
    as likely as ``−d_i``. The statistic is ``T = |mean(s · d)|`` over sign vectors ``s``; the
    observed statistic is ``T_obs = |mean(d)|``.

    - ``n ≤ 16``: exact: all ``2**n`` sign vectors (the identity included) are enumerated and
      ``p = #{s : T(s) ≥ T_obs} / 2**n``.
    - otherwise Monte-Carlo: ``n_permutations`` random sign vectors from
      ``numpy.random.default_rng(seed)``, with the observed labelling counted as one of them
      (Phipson & Smyth 2010), ``p = (1 + #{T(s) ≥ T_obs}) / (1 + n_permutations)``, which is never 0.

    Ties ``T(s) == T_obs`` count as extreme, with a relative tolerance of 1e-12 against floating
    point noise. All-zero differences give ``p = 1``.
    """
    x, y = _paired(a, b)
    d = x - y
    n = d.size
    t_obs = abs(d.mean())
    tol = 1e-12 * max(1.0, float(np.abs(d).sum()) / n)
    if n <= EXACT_PERMUTATION_MAX_N:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=n)))
        t = np.abs(signs @ d) / n
        return float(np.mean(t >= t_obs - tol))
    if n_permutations < 1:
        raise ValueError("n_permutations must be positive")
    rng = np.random.default_rng(seed)
    extreme = 0
    chunk = max(1, 2_000_000 // n)
    for start in range(0, n_permutations, chunk):
        m = min(chunk, n_permutations - start)
        signs = rng.choice((-1.0, 1.0), size=(m, n))
        extreme += int(np.count_nonzero(np.abs(signs @ d) / n >= t_obs - tol))
    return (1 + extreme) / (1 + n_permutations)


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
