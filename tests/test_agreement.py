"""Agreement statistics against published reference values and hand computations."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from metrics.agreement import (
    WINNERS,
    fleiss_kappa,
    gwet_ac1,
    krippendorff_alpha,
    percent_agreement,
    sign_test,
    stability,
    summarize_pairwise,
    summarize_stability,
)

nan = np.nan

# Fleiss (1971) worked example as reproduced on Wikipedia ("Fleiss' kappa"): 10 subjects,
# 14 raters, 5 categories; each row is the number of raters who put the subject in category 1..5.
# Wikipedia: P̄ = 0.378, P̄_e = 0.213, κ = 0.210.
FLEISS_COUNTS = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def fleiss_ratings() -> list[list[int]]:
    return [[k + 1 for k, c in enumerate(row) for _ in range(c)] for row in FLEISS_COUNTS]


# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: 4 observers x 12
# units with missing values (observers are rows here, transposed below into items x raters).
# Published: nominal α = 0.743, ordinal 0.815, interval 0.849, ratio 0.797. The same matrix is the
# doctest of the `krippendorff` package and (with unit 12's single value under another observer,
# which changes nothing: a lone value is unpairable) irrCAC's `raw_4raters` example data.
KRIPP_OBSERVERS = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
    [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
]
KRIPP_ITEMS = np.array(KRIPP_OBSERVERS).T

# irrCAC's `raw_ben_gerry` example (2 raters, 12 units, one missing), from Gwet (2014), Handbook of
# Inter-Rater Reliability. irrCAC 0.4.4 `CAC(data).gwet()` returns AC1 = 0.6614420063
# (pa = 0.7272727273, pe = 0.1944444444).
BEN_GERRY = [
    ["a", "b"], ["a", "a"], ["b", "b"], ["b", "b"], ["d", "b"], ["c", "c"],
    ["c", "c"], ["c", "c"], ["e", "e"], ["d", None], ["d", "d"], ["a", "d"],
]


# ----------------------------------------------------------------------------- percent agreement


def test_percent_agreement_hand_computed():
    # item 1: pairs (a,a) agree, (a,b) x2 disagree -> 1/3; item 2: 1; item 3 (one missing): 1;
    # item 4 has one rating: skipped. Mean = (1/3 + 1 + 1) / 3 = 7/9.
    ratings = [["a", "a", "b"], ["a", "a", "a"], ["b", None, "b"], ["c", None, ""]]
    assert percent_agreement(ratings) == pytest.approx(7 / 9)
    # two raters: plain share of equal ratings
    assert percent_agreement([[1, 1], [1, 2], [2, 2], [3, 3]]) == pytest.approx(0.75)
    assert percent_agreement(pd.DataFrame({"r1": ["x", nan], "r2": ["x", "y"]})) == 1.0
    assert math.isnan(percent_agreement([["a", None], [None, "b"]]))


def test_percent_agreement_is_fleiss_p_bar():
    assert percent_agreement(fleiss_ratings()) == pytest.approx(0.378, abs=5e-4)


# ----------------------------------------------------------------------------- Fleiss


def test_fleiss_kappa_wikipedia_example():
    assert fleiss_kappa(fleiss_ratings()) == pytest.approx(0.210, abs=5e-4)
    # closed form from the count table: (P̄ − P̄e) / (1 − P̄e)
    t = np.array(FLEISS_COUNTS, dtype=float)
    p_bar = ((t * (t - 1)).sum(1) / (14 * 13)).mean()
    pe = ((t.sum(0) / t.sum()) ** 2).sum()
    assert fleiss_kappa(fleiss_ratings()) == pytest.approx((p_bar - pe) / (1 - pe), abs=1e-12)


def test_fleiss_kappa_uses_complete_rows_only():
    rows = fleiss_ratings()
    with_missing = [*rows, [1] * 13 + [None], [None] * 14]
    assert fleiss_kappa(with_missing) == pytest.approx(fleiss_kappa(rows), abs=1e-12)
    assert math.isnan(fleiss_kappa([["a", "a"], ["a", "a"]]))  # P̄e = 1: undefined
    assert math.isnan(fleiss_kappa([["a"], ["b"]]))  # one rater
    assert math.isnan(fleiss_kappa([["a", None], [None, "b"]]))  # no complete row


# ----------------------------------------------------------------------------- Krippendorff


def test_krippendorff_alpha_published_example():
    assert krippendorff_alpha(KRIPP_ITEMS) == pytest.approx(0.743, abs=5e-4)
    assert krippendorff_alpha(KRIPP_ITEMS, level="ordinal") == pytest.approx(0.815, abs=5e-4)
    assert krippendorff_alpha(KRIPP_ITEMS, level="interval") == pytest.approx(0.849, abs=5e-4)
    # string labels (nominal does not depend on the coding)
    letters = [[None if isinstance(v, float) and math.isnan(v) else "abcde"[int(v) - 1] for v in row]
               for row in KRIPP_ITEMS]
    assert krippendorff_alpha(letters) == pytest.approx(0.743, abs=5e-4)
    # ordinal strings need the scale order
    assert krippendorff_alpha(letters, level="ordinal", categories="abcde") == pytest.approx(0.815, abs=5e-4)


def test_krippendorff_alpha_hand_computed_and_degenerate():
    # Units: (a,a), (a,b), (b,b), (b, missing). Pairable values: 6 (the lone b is unpairable).
    # Coincidences: o_ab = o_ba = 1 (from unit 2, weight 1/(2-1)); n_a = 3, n_b = 3, n = 6.
    # α = 1 − (n − 1) Σ_{c≠k} o_ck / Σ_{c≠k} n_c n_k = 1 − 5·2 / 18 = 4/9.
    ratings = [["a", "a"], ["a", "b"], ["b", "b"], ["b", None]]
    assert krippendorff_alpha(ratings) == pytest.approx(4 / 9)
    assert math.isnan(krippendorff_alpha([["a", "a"], ["a", "a"]]))
    assert math.isnan(krippendorff_alpha([["a", None], [None, "b"]]))
    with pytest.raises(ValueError):
        krippendorff_alpha(ratings, level="cardinal")


# ----------------------------------------------------------------------------- Gwet AC1


def test_gwet_ac1_matches_irrcac_examples():
    # irrCAC docstring (raw_4raters = the Krippendorff matrix above): AC1 = 0.77544,
    # pa = 0.81818, pe = 0.19032; unrounded from irrCAC 0.4.4: 0.7754440681.
    assert gwet_ac1(KRIPP_ITEMS) == pytest.approx(0.7754440681, abs=1e-9)
    assert gwet_ac1(BEN_GERRY) == pytest.approx(0.6614420063, abs=1e-9)


def test_gwet_ac1_hand_computed_two_raters():
    # (a,a) (a,b) (b,b) (b,b): pa = 3/4; π_a = (1 + 1/2 + 0 + 0)/4 = 3/8, π_b = 5/8;
    # pe = (1/(q−1)) Σ π(1−π) = 2·(3/8)(5/8) = 15/32; AC1 = (3/4 − 15/32)/(1 − 15/32) = 9/17.
    ratings = [["a", "a"], ["a", "b"], ["b", "b"], ["b", "b"]]
    assert gwet_ac1(ratings) == pytest.approx(9 / 17)
    # a declared third category halves pe: (3/4 − 15/64)/(1 − 15/64) = 33/49
    assert gwet_ac1(ratings, categories=["a", "b", "c"]) == pytest.approx(33 / 49)


def test_gwet_ac1_degenerate_single_category():
    # one category used everywhere: chance agreement 0, AC1 = pa = 1 (no divide-by-zero)
    assert gwet_ac1([["A", "A", "A"]] * 5) == 1.0
    assert gwet_ac1([["A", "A"], ["A", None]]) == 1.0
    # same data with the full scale declared: π = (1, 0, 0) -> pe = 0 -> 1.0 too
    assert gwet_ac1([["A", "A", "A"]] * 5, categories=WINNERS) == 1.0
    assert math.isnan(gwet_ac1([["A", None], [None, "B"]]))
    with pytest.raises(ValueError):
        gwet_ac1([["A", "B"]], categories=["A"])


# ----------------------------------------------------------------------------- sign test, stability


def test_sign_test_reference_values():
    assert sign_test(5, 0) == pytest.approx(0.0625)          # 2 / 2^5
    assert sign_test(14, 1) == pytest.approx(0.0009765625)   # 2 (1 + 15) / 2^15
    assert sign_test(0, 0) == 1.0
    assert sign_test(5, 0, alternative="greater") == pytest.approx(0.03125)
    for wins, losses in [(3, 1), (7, 3), (10, 10), (0, 6), (12, 4)]:
        n, k = wins + losses, min(wins, losses)
        closed = min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n)
        assert sign_test(wins, losses) == pytest.approx(closed, rel=1e-12)


def test_stability_hand_computed():
    t0 = ["A", "A", "A", "B", "A", None]
    t1 = ["A", "A", "B", "B", "A", "A"]  # last pair dropped (missing first judgment)
    out = stability(t0, t1)
    # 4 of 5 unchanged; AC1: pa = 4/5, π_A = (1 + 1 + 1/2 + 0 + 1)/5 = 0.7, pe = 2·0.7·0.3 = 0.42,
    # AC1 = (0.8 − 0.42)/(1 − 0.42) = 19/29
    assert out == {"n": 5, "stability": pytest.approx(0.8), "flip_rate": pytest.approx(0.2),
                   "ac1": pytest.approx(19 / 29)}
    assert stability(["A", "B"], ["A", "B"])["flip_rate"] == 0.0
    assert stability([], [])["n"] == 0
    with pytest.raises(ValueError):
        stability(["A"], ["A", "B"])


# ----------------------------------------------------------------------------- summaries


def paper_table7_frame() -> pd.DataFrame:
    """5 docs x 3 judges (the paper's setting). Event grounding: 14 A, 1 B (judge j3 on doc d5);
    Overall: all A; Edges: one judge only, with a tie and a loss."""
    rows = []
    for d in range(1, 6):
        for j in ("j1", "j2", "j3"):
            rows.append({"doc_id": f"d{d}", "judge": j, "dimension": "Event Grounding",
                         "winner": "B" if (d, j) == (5, "j3") else "A"})
            rows.append({"doc_id": f"d{d}", "judge": j, "dimension": "Overall", "winner": "a"})
        rows.append({"doc_id": f"d{d}", "judge": "j1", "dimension": "Edges",
                     "winner": ["A", "A", "tie", "B", "A"][d - 1]})
    return pd.DataFrame(rows)


def test_summarize_pairwise_reproduces_table7_shape():
    out = summarize_pairwise(paper_table7_frame())
    assert list(out.columns) == ["dimension", "n", "wins", "losses", "ties", "win_rate", "agreement",
                                 "ac1", "p_sign"]
    assert list(out["dimension"]) == ["Event Grounding", "Overall", "Edges"]  # input order
    ev, overall, edges = (out.iloc[i] for i in range(3))
    # Event grounding: win 14/15 = 93.3%; agreement: 4 docs unanimous, d5 (A,A,B) 1/3 of pairs
    # -> (4 + 1/3)/5 = 13/15 = 86.7%; AC1: pa = 13/15, π_A = 14/15, π_B = 1/15, q = 2,
    # pe = 2·(14/15)(1/15) = 28/225 -> AC1 = 167/197 = 0.848 — the paper's Table 7 row.
    assert (ev["n"], ev["wins"], ev["losses"], ev["ties"]) == (15, 14, 1, 0)
    assert ev["win_rate"] == pytest.approx(14 / 15)
    assert ev["agreement"] == pytest.approx(13 / 15)
    assert ev["ac1"] == pytest.approx(167 / 197)
    assert round(ev["ac1"], 3) == 0.848
    assert ev["p_sign"] == pytest.approx(2 * 16 / 2**15)
    # Overall: unanimous A: agreement 1, AC1 1.0 (single category), p = 2 / 2^15
    assert (overall["win_rate"], overall["agreement"], overall["ac1"]) == (1.0, 1.0, 1.0)
    assert overall["p_sign"] == pytest.approx(2 / 2**15)
    # Edges: one judge -> no inter-judge statistics; 3 wins, 1 loss, 1 tie; p = 2·5/16
    assert (edges["n"], edges["wins"], edges["losses"], edges["ties"]) == (5, 3, 1, 1)
    assert edges["win_rate"] == pytest.approx(0.6)
    assert math.isnan(edges["agreement"]) and math.isnan(edges["ac1"])
    assert edges["p_sign"] == pytest.approx(0.625)


def test_summarize_pairwise_validates():
    df = paper_table7_frame()
    with pytest.raises(ValueError, match="winner"):
        summarize_pairwise(df.assign(winner="C"))
    with pytest.raises(ValueError, match="repeated"):
        summarize_pairwise(pd.concat([df, df.iloc[:1]]))
    with pytest.raises(ValueError, match="missing columns"):
        summarize_pairwise(df.drop(columns=["judge"]))


def test_summarize_stability_table11_shape():
    rows = []
    t0 = ["A", "A", "A", "B", "A"]
    t1 = ["A", "A", "B", "B", "A"]
    for d in range(5):
        rows.append({"doc_id": f"d{d}", "judge": "deepseek", "dimension": "Overall",
                     "winner_t0": t0[d], "winner_t1": t1[d]})
        rows.append({"doc_id": f"d{d}", "judge": "qwen", "dimension": "Overall",
                     "winner_t0": "A", "winner_t1": "A"})
    out = summarize_stability(pd.DataFrame(rows))
    assert list(out.columns) == ["judge", "n", "stability", "flip_rate", "ac1"]
    assert list(out["judge"]) == ["deepseek", "qwen"]
    ds, qw = out.iloc[0], out.iloc[1]
    assert (ds["n"], ds["stability"], ds["flip_rate"]) == (5, pytest.approx(0.8), pytest.approx(0.2))
    assert ds["ac1"] == pytest.approx(19 / 29)
    assert (qw["stability"], qw["flip_rate"], qw["ac1"]) == (1.0, 0.0, 1.0)
