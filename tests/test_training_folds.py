"""Folds over the annotated complaints deal every writing style over the folds; a learning curve's
training samples are nested and hold as many styles as they can; the second reader's agreement and the
edges drawn on gold events score as the project scores graphs."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from argus.paths import style_folds as _folds, style_of, style_sample
from tests.conftest import _split_dirs, needs_data


def _ids() -> list[str]:
    return sorted(d.name for split in ("train", "dev") for d in _split_dirs(split))


@needs_data
def test_folds_deal_every_style_over_the_folds():
    ids = _ids()
    styles = style_of(ids)
    assert "unnamed" not in styles  # styles.json names every annotated complaint
    per_style = Counter(styles)
    folds = _folds(len(ids), 6, ids)
    assert sorted(i for _, te in folds for i in te) == list(range(len(ids)))  # each complaint tested once
    for tr, te in folds:
        assert not set(tr) & set(te) and len(tr) + len(te) == len(ids)
        held = Counter(styles[i] for i in te)
        for style, n in per_style.items():
            assert held[style] <= math.ceil(n / 6)  # no fold holds more than its share of a style


@needs_data
def test_style_samples_are_nested_and_hold_every_style_they_can():
    ids = _ids()
    tr, _ = _folds(len(ids), 6, ids)[0]
    n_styles = len(set(style_of([ids[i] for i in tr])))
    prev: set[int] = set()
    for n in (6, 12, 24, 48):
        got = style_sample(tr, ids, n)
        assert len(got) == n and set(got) <= set(tr) and prev <= set(got)
        assert len(set(style_of([ids[i] for i in got]))) == min(n, n_styles)
        prev = set(got)
    assert style_sample(tr, ids, None) == list(tr) and style_sample(tr, ids, 10**6) == list(tr)


def test_folds_without_ids_go_round_robin_and_unknown_styles_are_unnamed():
    assert _folds(5, 2) == [([1, 3], [0, 2, 4]), ([0, 2, 4], [1, 3])]
    assert style_of(["no-such-complaint"]) == ["unnamed"]


@needs_data
def test_second_readers_agreement_is_the_spec_figure():
    """SPEC.md: types 0.861, temporal F1 0.813, causal F1 0.760 (mean over the 18 complaints read twice)."""
    from metrics.gold import load_gold
    from metrics.gold.reader import reader_agreement

    rows = [r for d in (*_split_dirs("train"), *_split_dirs("dev")) if (r := reader_agreement(load_gold(d)))]
    assert len(rows) == 18
    mean = {k: sum(r[k] for r in rows) / len(rows) for k in rows[0]}
    assert mean == pytest.approx({"type_agreement": 0.861, "temporal_f1": 0.813, "causal_f1": 0.760}, abs=0.0005)


@needs_data
def test_edges_on_gold_events_are_the_designs_sieves(tmp_path):
    from argus.config import ArgusConfig
    from argus.pipeline import ArgusPipeline
    from argus.training.edges import edges_on_gold
    from metrics.gold import load_gold

    gold = load_gold(_split_dirs("dev")[0])
    got = edges_on_gold(ArgusPipeline(ArgusConfig.load(None, {"cache_dir": str(tmp_path)})), gold)
    assert got["temporal_gold"] == len(gold.graph.temporal_edges) and got["causal_gold"] == len(gold.graph.causal_edges)
    assert 0.3 < got["temporal_f1"] <= 1 and 0.0 < got["causal_f1"] <= 1
    # with every sieve off the design draws no edge
    none = ArgusPipeline(ArgusConfig.load(None, {"cache_dir": str(tmp_path), "sentence.edge_heads": False,
                                                 "sentence.date_edges": False}))
    off = edges_on_gold(none, gold)
    assert off["temporal_f1"] == 0.0 and off["causal_f1"] == 0.0
    # without the cue sieve the causal edges are the head's alone: never more recall than with it
    nocue = edges_on_gold(ArgusPipeline(ArgusConfig.load(None, {"cache_dir": str(tmp_path), "sentence.cue_edges": False})), gold)
    assert nocue["causal_recall"] <= got["causal_recall"] and nocue["temporal_f1"] == got["temporal_f1"]
