"""Paired statistics (argus.experiments.stats) against scipy.stats.bootstrap / permutation_test /
wilcoxon and statsmodels called directly here, hand computations and behavioural properties."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest, bootstrap, permutation_test, wilcoxon

from argus.text.answers import normalize_answer, token_f1
from argus.experiments.stats import (
    mcnemar_exact,
    paired_bootstrap_ci,
    paired_table,
    sign_flip_permutation,
    wilcoxon_signed_rank,
)

A = [0.61, 0.42, 0.90, 0.33, 0.75, 0.58, 0.47, 0.81, 0.66, 0.29, 0.54, 0.70]
B = [0.50, 0.45, 0.71, 0.30, 0.52, 0.58, 0.40, 0.62, 0.60, 0.31, 0.41, 0.55]


# ----------------------------------------------------------------------------- bootstrap


def _mean_diff(x, y, axis=-1):
    return np.mean(x - y, axis=axis)


def test_bootstrap_is_scipy_paired_percentile_bootstrap():
    _, lo, hi = paired_bootstrap_ci(A, B, n_resamples=2000, level=0.90, seed=3)
    ref = bootstrap((np.asarray(A), np.asarray(B)), _mean_diff, paired=True, vectorized=True,
                    method="percentile", n_resamples=2000, confidence_level=0.90,
                    rng=np.random.default_rng(3))
    assert (lo, hi) == pytest.approx((ref.confidence_interval.low, ref.confidence_interval.high))


def test_bootstrap_contains_observed_mean_and_is_deterministic():
    diff, lo, hi = paired_bootstrap_ci(A, B, n_resamples=5000, seed=7)
    assert diff == pytest.approx(np.mean(np.subtract(A, B)))
    assert lo < diff < hi
    assert paired_bootstrap_ci(A, B, n_resamples=5000, seed=7) == (diff, lo, hi)
    assert paired_bootstrap_ci(A, B, n_resamples=5000, seed=8) != (diff, lo, hi)


def test_bootstrap_narrows_with_n_and_with_level():
    rng = np.random.default_rng(5)
    small_a, large_a = rng.normal(0.6, 0.2, 20), rng.normal(0.6, 0.2, 500)
    small_b, large_b = rng.normal(0.5, 0.2, 20), rng.normal(0.5, 0.2, 500)
    _, lo_s, hi_s = paired_bootstrap_ci(small_a, small_b, n_resamples=2000)
    _, lo_l, hi_l = paired_bootstrap_ci(large_a, large_b, n_resamples=2000)
    assert hi_l - lo_l < hi_s - lo_s
    _, lo_80, hi_80 = paired_bootstrap_ci(small_a, small_b, n_resamples=2000, level=0.80)
    assert lo_s <= lo_80 < hi_80 <= hi_s


def test_bootstrap_degenerate_inputs_are_points():
    # every difference equal (scipy's BCa would give NaN here; percentile and this rule agree)
    assert paired_bootstrap_ci([2, 3, 4], [1, 2, 3], n_resamples=100) == (1.0, 1.0, 1.0)
    assert paired_bootstrap_ci([0.1, 0.1, 0.1], [0, 0, 0]) == (0.1, 0.1, 0.1)
    assert paired_bootstrap_ci([0.5, 0.2], [0.5, 0.2]) == (0.0, 0.0, 0.0)
    # one pair: scipy refuses a sample of one; the interval is the point
    assert paired_bootstrap_ci([0.7], [0.2]) == pytest.approx((0.5, 0.5, 0.5))


def test_bootstrap_rejects_unpaired_or_bad_input():
    with pytest.raises(ValueError):
        paired_bootstrap_ci([1, 2], [1, 2, 3])
    with pytest.raises(ValueError):
        paired_bootstrap_ci([], [])
    with pytest.raises(ValueError):
        paired_bootstrap_ci([1, np.nan], [1, 2])
    with pytest.raises(ValueError):
        paired_bootstrap_ci(A, B, level=1.0)
    with pytest.raises(ValueError):
        paired_bootstrap_ci(A, B, n_resamples=0)


# ----------------------------------------------------------------------------- Wilcoxon


def test_wilcoxon_matches_scipy_with_zero_dropped():
    stat, p = wilcoxon_signed_rank(A, B)
    ref = wilcoxon(A, B, zero_method="wilcox")
    assert stat == pytest.approx(ref.statistic)
    assert p == pytest.approx(ref.pvalue)
    # the zero pair (0.58, 0.58) is dropped: same result as without it
    keep = [i for i in range(len(A)) if A[i] != B[i]]
    ref2 = wilcoxon([A[i] for i in keep], [B[i] for i in keep])
    assert p == pytest.approx(ref2.pvalue)


def test_wilcoxon_all_zero_differences_give_p_one():
    assert wilcoxon_signed_rank([0.5, 0.2, 0.1], [0.5, 0.2, 0.1]) == (0.0, 1.0)


# ----------------------------------------------------------------------------- sign flip


def _scipy_sign_flip(a, b, **kw):
    return permutation_test((np.asarray(a, float), np.asarray(b, float)), _mean_diff, vectorized=True,
                            permutation_type="samples", alternative="two-sided", **kw).pvalue


def test_sign_flip_exact_hand_computed_n4():
    # d = (3, 1, -1, 2), |sum d| = 5. Over the 16 sign vectors sum(s*d) = ±(7 - 2*S) with S the sum
    # of a flipped subset of {3,1,1,2}; |.| >= 5 iff S <= 1 or S >= 6: {}, {1}, {1'}, and their
    # complements {3,1,1,2}, {3,1,2}, {3,1',2} -> 6 / 16.
    a = [3.0, 1.0, 0.0, 2.0]
    b = [0.0, 0.0, 1.0, 0.0]
    assert sign_flip_permutation(a, b) == pytest.approx(6 / 16)
    assert sign_flip_permutation(a, b) == pytest.approx(_scipy_sign_flip(a, b, n_resamples=np.inf))


def test_sign_flip_exact_is_scipy_exact_test():
    # n = 12 <= 16: all 2**12 sign vectors, the same p as scipy's exhaustive test, whatever the seed
    p = sign_flip_permutation(A, B)
    assert p == pytest.approx(_scipy_sign_flip(A, B, n_resamples=np.inf))
    assert sign_flip_permutation(A, B, seed=123, n_permutations=10) == p


def test_sign_flip_monte_carlo_is_scipy_seeded():
    rng = np.random.default_rng(0)
    a = rng.normal(0.2, 1.0, size=30)
    b = np.zeros(30)
    mc = sign_flip_permutation(a, b, n_permutations=5000, seed=1)
    assert mc == pytest.approx(_scipy_sign_flip(a, b, n_resamples=5000, rng=np.random.default_rng(1)))
    assert mc == sign_flip_permutation(a, b, n_permutations=5000, seed=1)


def test_sign_flip_monte_carlo_close_to_exact():
    rng = np.random.default_rng(0)
    a = rng.normal(0.2, 1.0, size=16)
    b = np.zeros(16)
    exact = sign_flip_permutation(a, b)
    # n = 17 goes Monte-Carlo; appending a zero difference changes the statistic's scale only
    mc = sign_flip_permutation(np.append(a, 0.0), np.append(b, 0.0), n_permutations=20_000, seed=1)
    assert mc == pytest.approx(exact, abs=0.015)


def test_sign_flip_small_for_a_clear_difference_large_for_none():
    rng = np.random.default_rng(2)
    base = rng.uniform(0.2, 0.8, 40)
    clear = sign_flip_permutation(base + 0.1 + rng.normal(0, 0.02, 40), base, n_permutations=2000)
    assert 0 < clear < 0.01  # Monte-Carlo p is never 0: at least 1 / (1 + n_permutations)
    noise = rng.normal(0, 0.05, 40)
    assert sign_flip_permutation(base + noise, base - noise[::-1], n_permutations=2000) > 0.05
    assert sign_flip_permutation([1, 2, 3, 4], [0, 0, 0, 0]) == pytest.approx(2 / 16)


def test_sign_flip_degenerate_inputs_give_p_one():
    assert sign_flip_permutation([1, 1, 1], [1, 1, 1]) == 1.0
    assert sign_flip_permutation(np.ones(40), np.ones(40)) == 1.0
    assert sign_flip_permutation([0.9], [0.1]) == 1.0
    with pytest.raises(ValueError):
        sign_flip_permutation([1, 2], [1])


# ----------------------------------------------------------------------------- McNemar


def test_mcnemar_textbook_presidential_approval():
    # Agresti, An Introduction to Categorical Data Analysis (2nd ed., 2007), Table 8.1: approval of
    # the President's performance in two surveys, n = 1600: (approve, approve) 794, (approve,
    # disapprove) 150, (disapprove, approve) 86, (disapprove, disapprove) 570. Agresti reports the
    # McNemar z^2 = (86 - 150)^2 / (86 + 150) = 17.36; the exact two-sided binomial p for 86 of 236
    # is 3.716e-05.
    a = [True] * 794 + [True] * 150 + [False] * 86 + [False] * 570
    b = [True] * 794 + [False] * 150 + [True] * 86 + [False] * 570
    bb, cc, p = mcnemar_exact(a, b)
    assert (bb, cc) == (150, 86)
    assert (86 - 150) ** 2 / (86 + 150) == pytest.approx(17.36, abs=0.005)
    assert p == pytest.approx(3.7159e-05, rel=1e-3)
    assert p == pytest.approx(binomtest(86, 236, 0.5).pvalue)


def test_mcnemar_no_discordant_pairs():
    assert mcnemar_exact([True, False], [True, False]) == (0, 0, 1.0)


# ----------------------------------------------------------------------------- token F1


def test_token_f1_hand_examples():
    assert normalize_answer("The Quick, brown fox!") == "quick brown fox"
    assert token_f1("The termination letter", "termination letter") == 1.0
    # pred {she, was, fired}, ref {she, was, fired, in, march}: P = 1, R = 3/5, F1 = 0.75
    assert token_f1("She was fired.", "she was fired in March") == pytest.approx(0.75)
    # multiset: pred "no no yes" vs ref "no yes yes": overlap 2, P = R = 2/3
    assert token_f1("no no yes", "no yes yes") == pytest.approx(2 / 3)
    assert token_f1("Palmer", "HR manager") == 0.0
    assert token_f1("", "") == 1.0
    assert token_f1("a the", "Palmer") == 0.0


# ----------------------------------------------------------------------------- table


def test_paired_table_every_pair():
    scores = {"ekg": A, "raw": B, "hybrid": [(x + y) / 2 for x, y in zip(A, B)]}
    df = paired_table(scores, n_resamples=1000, n_permutations=1000)
    assert list(zip(df.a, df.b)) == [("ekg", "raw"), ("ekg", "hybrid"), ("raw", "hybrid")]
    row = df.iloc[0]
    assert row.mean_diff == pytest.approx(np.mean(np.subtract(A, B)))
    assert row.ci_lo < row.mean_diff < row.ci_hi
    assert row.wilcoxon_p == pytest.approx(wilcoxon(A, B).pvalue)
    assert 0 < row.permutation_p <= 1
    with pytest.raises(ValueError):
        paired_table({"x": [1, 2], "y": [1]})
