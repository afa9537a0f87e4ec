"""The clustering experiment (argus.experiments.clustering): Core6D, the silhouette sweep, outputs."""

from __future__ import annotations

import hashlib
import math

import numpy as np
import pandas as pd
import pytest

from argus.experiments.clustering import (
    REPRESENTATIONS,
    ClusterDocument,
    _gold_folders,
    core6d,
    graph_density,
    knn_neighbour_block,
    run_clustering,
    silhouette_sweep,
)
from argus.graph.schema import EventGraph


def stub_encoder(texts: list[str]) -> np.ndarray:
    """A deterministic 8-d test double: a seeded Gaussian per text."""
    return np.array([
        np.random.default_rng(int(hashlib.md5(t.encode()).hexdigest()[:8], 16)).normal(size=8) for t in texts
    ])


def make_graph(n_entities: int, n_events: int, temporal: int, causal: int, types: tuple[str, ...] = ("hiring", "complaint", "termination")) -> EventGraph:
    """A chain of events; event i involves entity i mod n_entities; temporal/causal edges along the chain."""
    ents = [{"id": f"E{i}", "name": f"Person {i}", "kind": "person", "role": "plaintiff" if i == 1 else "coworker"} for i in range(1, n_entities + 1)]
    evs = [{
        "id": f"EV{i}", "type": types[(i - 1) % len(types)], "verb": "do", "trigger": f"did thing {i}",
        "participants": [{"entity": f"E{(i - 1) % n_entities + 1}", "role": "agent"}] if n_entities else [],
        "time": {"kind": "unknown"}, "evidence": [f"S{i}"],
    } for i in range(1, n_events + 1)]
    t_edges = [{"source": f"EV{i}", "target": f"EV{i + 1}", "relation": "BEFORE", "evidence": ["S1"]} for i in range(1, temporal + 1)]
    c_edges = [{"source": f"EV{i}", "target": f"EV{i + 2}", "relation": "CAUSES", "evidence": ["S1"]} for i in range(1, causal + 1)]
    return EventGraph.model_validate({"entities": ents, "events": evs, "temporal_edges": t_edges, "causal_edges": c_edges})


def hand_graph() -> EventGraph:
    """2 entities, 3 events; participation EV1→E1, EV1→E2, EV2→E1; temporal EV1→EV2, EV2→EV3;
    causal EV1→EV2 (parallel to a temporal edge: counts once for density)."""
    return EventGraph.model_validate({
        "entities": [
            {"id": "E1", "name": "Ann Lee", "kind": "person", "role": "plaintiff"},
            {"id": "E2", "name": "Acme", "kind": "organization", "role": "employer"},
        ],
        "events": [
            {"id": "EV1", "type": "hiring", "verb": "hire", "trigger": "hired", "time": {"kind": "unknown"}, "evidence": ["S1"],
             "participants": [{"entity": "E2", "role": "agent"}, {"entity": "E1", "role": "patient"}]},
            {"id": "EV2", "type": "complaint", "verb": "complain", "trigger": "complained", "time": {"kind": "unknown"}, "evidence": ["S2"],
             "participants": [{"entity": "E1", "role": "agent"}]},
            {"id": "EV3", "type": "termination", "verb": "fire", "trigger": "fired", "time": {"kind": "unknown"}, "evidence": ["S3"]},
        ],
        "temporal_edges": [
            {"source": "EV1", "target": "EV2", "relation": "BEFORE", "evidence": ["S2"]},
            {"source": "EV2", "target": "EV3", "relation": "BEFORE", "evidence": ["S3"]},
        ],
        "causal_edges": [{"source": "EV1", "target": "EV2", "relation": "CAUSES", "evidence": ["S2"]}],
    })


def test_core6d_exact_values_on_hand_graph():
    g = hand_graph()
    # N = 5 nodes, 5·4 = 20 ordered pairs; distinct edges: EV1→E1, EV1→E2, EV2→E1, EV1→EV2, EV2→EV3 = 5
    assert graph_density(g) == pytest.approx(5 / 20)
    raw = core6d(g, normalize=False)
    expected = np.array([math.log(3), math.log(4), math.log(3), math.log(2), 0.25, 2 / 3])
    np.testing.assert_allclose(raw, expected)
    np.testing.assert_allclose(core6d(g), expected / np.linalg.norm(expected))


def test_core6d_is_unit_norm_and_empty_graph_is_zero():
    for g in (hand_graph(), make_graph(4, 10, 6, 2), make_graph(1, 2, 0, 0)):
        assert np.linalg.norm(core6d(g)) == pytest.approx(1.0)
    assert core6d(make_graph(1, 2, 0, 0))[5] == 0.0  # temporal ratio 0 without edges
    np.testing.assert_array_equal(core6d(EventGraph()), np.zeros(6))


def test_silhouette_sweep_bounds():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(7, 3))
    sweep, labels = silhouette_sweep(x, kmax=40)
    assert list(sweep["k"]) == [2, 3, 4, 5, 6]  # K up to n − 1
    assert set(labels) == {2, 3, 4, 5, 6}
    assert sweep["silhouette"].between(-1, 1).all()
    sweep3, _ = silhouette_sweep(x, kmax=3)
    assert list(sweep3["k"]) == [2, 3]


def test_knn_block_uses_type_jaccard_neighbours():
    sets = [{"a", "b"}, {"a", "b"}, {"c"}]
    feats = np.array([[1.0, 0.0], [0.0, 1.0], [5.0, 5.0]])
    block = knn_neighbour_block(sets, feats, k=1)
    np.testing.assert_allclose(block[0], [0.0, 1.0])  # doc 0's nearest is doc 1 (J = 1)
    np.testing.assert_allclose(block[1], [1.0, 0.0])
    # doc 2 has J = 0 with both: the first (tie-break) neighbour, doc 0
    np.testing.assert_allclose(block[2], [1.0, 0.0])


def _five_documents() -> list[ClusterDocument]:
    specs = [(2, 3, 2, 1), (3, 8, 6, 1), (5, 20, 15, 4), (2, 4, 0, 3), (6, 25, 20, 0)]
    texts = ["fired after complaint", "hired promoted demoted", "harassment by supervisor",
             "pregnancy leave denied", "retaliation for charge filing"]
    claims = [["retaliation"], ["title_vii_sex"], ["hostile_work_environment"], ["pregnancy"], ["retaliation"]]
    return [
        ClusterDocument(doc_id=f"doc{i}", graph=make_graph(*s), text=t, fact_sentences=[t], claims=c)
        for i, (s, t, c) in enumerate(zip(specs, texts, claims))
    ]


def test_run_with_stub_encoder_writes_outputs(tmp_path):
    table = run_clustering(_five_documents(), out=tmp_path, encoder=stub_encoder)
    assert list(table["representation"]) == list(REPRESENTATIONS)
    assert (table["n_documents"] == 5).all()
    assert table["best_k"].between(2, 4).all()
    assert "capped at 4" in table.set_index("representation").loc["run_b", "note"]
    for name in ("clustering.md", "clustering.csv", "silhouette_sweep.csv", "assignments.csv", "silhouette_vs_k.png"):
        assert (tmp_path / name).is_file(), name
    assert (tmp_path / "silhouette_vs_k.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = (tmp_path / "clustering.md").read_text()
    assert "n = 5 documents" in md and "0.649" in md
    csv = pd.read_csv(tmp_path / "clustering.csv")
    assert len(csv) == len(REPRESENTATIONS)
    assign = pd.read_csv(tmp_path / "assignments.csv")
    k4 = assign[(assign.representation == "core6d") & (assign.which == "k4")]
    assert sorted(k4.doc_id) == [f"doc{i}" for i in range(5)] and (k4.k == 4).all()


@pytest.mark.skipif(not _gold_folders(), reason="needs ../shared/data/us_complaints")
def test_default_run_on_gold_graphs_has_every_representation():
    # the default graph source on the real corpus; the stub encoder keeps the test fast (the
    # embedded MiniLM takes ~1 min on 2 CPUs for the ~2,700 texts; the CLI run exercises it)
    table = run_clustering("gold", encoder=stub_encoder, kmax=5)
    assert list(table["representation"]) == list(REPRESENTATIONS)
    n = int(table["n_documents"].iloc[0])
    assert n == len(_gold_folders()) and n >= 5
    assert table["silhouette_k4"].notna().all()
    assert table["best_silhouette"].between(-1, 1).all()
