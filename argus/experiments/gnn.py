"""The EKG-GNN of the ARGUS paper (Appendix B.3), in plain torch.

A document's event knowledge graph becomes ONE homogeneous undirected graph: every event and every
entity that participates in an event is a node; event–entity participation edges and event–event
temporal and causal edges connect them; every node carries a self-loop. Each node's short
natural-language description is encoded by a sentence encoder (mean pooling), projected to 256
dimensions and passed through two mean-neighbour graph-convolution layers

    h_i' = ReLU(W_s h_i + W_n · mean_{j ∈ N(i), j ≠ i} h_j)

(self-loops are stored in the graph but excluded from the neighbour mean, because the node's own
state enters through ``W_s``; an isolated node gets ``ReLU(W_s h_i)``), each followed by dropout 0.1;
node states are mean-pooled and a linear head scores the 23 claim types.

Graphs here are small (tens of nodes), so adjacency is a dense ``(n, n)`` tensor.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
from torch import nn

from argus.errors import ArgusError

HIDDEN_DIM = 256


# ----------------------------------------------------------------------------- graph construction


@dataclass
class EKGGraph:
    """A document EKG as the GNN sees it.

    ``node_ids`` are the EKG ids (``E3``, ``EV7``) in node order, ``node_kinds`` "entity" or "event",
    ``node_texts`` the descriptions the encoder embeds; ``edges`` holds each undirected edge once as
    ``(i, j)`` with ``i <= j`` (self-loops ``(i, i)`` included); ``edge_types`` says why each edge exists
    ("self", "participation", "temporal", "causal"; the first reason wins when two coincide).
    """

    node_ids: list[str]
    node_kinds: list[str]
    node_texts: list[str]
    edges: set[tuple[int, int]] = field(default_factory=set)
    edge_types: dict[tuple[int, int], str] = field(default_factory=dict)

    @property
    def num_nodes(self) -> int:
        return len(self.node_ids)

    def adjacency(self) -> torch.Tensor:
        """Dense symmetric 0/1 adjacency ``(n, n)`` with the self-loops on the diagonal."""
        adj = torch.zeros(self.num_nodes, self.num_nodes)
        for i, j in self.edges:
            adj[i, j] = 1.0
            adj[j, i] = 1.0
        return adj


def _as_dict(graph) -> dict:
    if hasattr(graph, "model_dump"):
        return graph.model_dump()
    if not isinstance(graph, dict):
        raise ArgusError(f"expected an EKG graph (dict or EventGraph/DocumentGraph), got {type(graph).__name__}")
    return graph


def describe_entity(entity: dict) -> str:
    """A short natural-language description of an entity node."""
    text = f"{entity.get('name', '')}, {entity.get('kind', 'other')}, role {entity.get('role', 'other')}"
    aliases = [a for a in entity.get("aliases") or [] if a and a != entity.get("name")]
    if aliases:
        text += " (also called " + ", ".join(aliases[:4]) + ")"
    return text


def describe_event(event: dict, names: dict[str, str]) -> str:
    """A short natural-language description of an event node (type, verb, trigger, who, when)."""
    parts = [f"Event {event.get('type', 'other')} ({event.get('verb', '')})"]
    if event.get("trigger"):
        parts.append(f"\"{event['trigger']}\"")
    if event.get("frame"):
        parts.append(f"frame {event['frame']}")
    for p in event.get("participants") or []:
        parts.append(f"{p.get('role', 'participant')} {names.get(p.get('entity'), p.get('entity'))}")
    time = event.get("time") or {}
    if time.get("value"):
        parts.append(f"time {time['value']}")
    return " ".join(parts)


def build_graph(graph) -> EKGGraph:
    """Events and participant entities as nodes of one undirected graph with self-loops.

    Entities that take part in no event are left out (the paper's "participant entities");
    participants, temporal and causal edges that name unknown ids are ignored (extracted graphs
    can be imperfect).
    """
    g = _as_dict(graph)
    entities = {e["id"]: e for e in g.get("entities") or []}
    events = list(g.get("events") or [])
    names = {eid: e.get("name", eid) for eid, e in entities.items()}

    participating: list[str] = []
    for ev in events:
        for p in ev.get("participants") or []:
            if p.get("entity") in entities and p["entity"] not in participating:
                participating.append(p["entity"])

    node_ids: list[str] = []
    kinds: list[str] = []
    texts: list[str] = []
    for eid in participating:
        node_ids.append(eid)
        kinds.append("entity")
        texts.append(describe_entity(entities[eid]))
    for ev in events:
        if ev["id"] in node_ids:  # duplicate event id: keep the first
            continue
        node_ids.append(ev["id"])
        kinds.append("event")
        texts.append(describe_event(ev, names))
    index = {nid: i for i, nid in enumerate(node_ids)}

    out = EKGGraph(node_ids=node_ids, node_kinds=kinds, node_texts=texts)

    def add(a: str, b: str, kind: str) -> None:
        if a not in index or b not in index:
            return
        i, j = sorted((index[a], index[b]))
        if (i, j) not in out.edges:
            out.edges.add((i, j))
            out.edge_types[(i, j)] = kind

    for nid in node_ids:
        add(nid, nid, "self")
    for ev in events:
        for p in ev.get("participants") or []:
            add(ev["id"], p.get("entity", ""), "participation")
    for e in g.get("temporal_edges") or []:
        add(e["source"], e["target"], "temporal")
    for e in g.get("causal_edges") or []:
        add(e["source"], e["target"], "causal")
    return out


# ----------------------------------------------------------------------------- model


class MeanNeighbourConv(nn.Module):
    """``h' = ReLU(W_s h + W_n · mean of neighbours)``; the diagonal of ``adj`` is ignored.

    ``W_s`` carries the layer's bias (``bias=False`` gives the paper's formula exactly);
    ``W_n`` has none.
    """

    def __init__(self, in_dim: int, out_dim: int, bias: bool = True):
        super().__init__()
        self.self_linear = nn.Linear(in_dim, out_dim, bias=bias)  # W_s
        self.neighbour_linear = nn.Linear(in_dim, out_dim, bias=False)  # W_n

    def forward(self, h: torch.Tensor, adj: torch.Tensor) -> torch.Tensor:
        n = adj.shape[0]
        neighbours = adj * (1.0 - torch.eye(n, dtype=adj.dtype, device=adj.device))
        degree = neighbours.sum(dim=1, keepdim=True)
        mean = (neighbours @ h) / degree.clamp(min=1.0)  # isolated node: mean = 0
        return torch.relu(self.self_linear(h) + self.neighbour_linear(mean))


class EKGGNN(nn.Module):
    """Projection to 256 → two mean-neighbour layers (dropout 0.1 after each) → mean pool → head."""

    def __init__(self, in_dim: int, n_labels: int, hidden: int = HIDDEN_DIM, dropout: float = 0.1):
        super().__init__()
        self.project = nn.Linear(in_dim, hidden)
        self.conv1 = MeanNeighbourConv(hidden, hidden)
        self.conv2 = MeanNeighbourConv(hidden, hidden)
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(hidden, n_labels)

    def forward(self, x: torch.Tensor, adj: torch.Tensor) -> torch.Tensor:
        """Logits ``(n_labels,)`` for one graph with node features ``x (n, in_dim)``."""
        h = self.project(x)
        h = self.dropout(self.conv1(h, adj))
        h = self.dropout(self.conv2(h, adj))
        return self.head(h.mean(dim=0))


# ----------------------------------------------------------------------------- training


@dataclass
class TrainConfig:
    """Training settings of the paper's EKG-GNN (Appendix B.3); the linear heads reuse them."""

    lr: float = 3e-4
    weight_decay: float = 0.01
    epochs: int = 8
    batch_size: int = 2
    clip_norm: float = 1.0
    encoder_lr: float = 2e-5  # only with fine_tune_encoder


def pos_weight_from(y_train: torch.Tensor) -> torch.Tensor:
    """``n_neg / n_pos`` per label from the training labels; 1 where a label never occurs."""
    pos = y_train.sum(dim=0)
    neg = y_train.shape[0] - pos
    return torch.where(pos > 0, neg / pos.clamp(min=1.0), torch.ones_like(pos))


def _batches(n: int, batch_size: int, generator: torch.Generator) -> list[list[int]]:
    order = torch.randperm(n, generator=generator).tolist()
    return [order[i : i + batch_size] for i in range(0, n, batch_size)]


def train_linear_head(
    x_train: torch.Tensor, y_train: torch.Tensor, cfg: TrainConfig, seed: int
) -> nn.Module:
    """A linear multi-label head over fixed document embeddings, weighted BCE, AdamW."""
    torch.manual_seed(seed)
    head = nn.Linear(x_train.shape[1], y_train.shape[1])
    loss_fn = nn.BCEWithLogitsLoss(pos_weight=pos_weight_from(y_train))
    opt = torch.optim.AdamW(head.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    gen = torch.Generator().manual_seed(seed)
    head.train()
    for _ in range(cfg.epochs):
        for batch in _batches(len(x_train), cfg.batch_size, gen):
            opt.zero_grad()
            loss = loss_fn(head(x_train[batch]), y_train[batch])
            loss.backward()
            nn.utils.clip_grad_norm_(head.parameters(), cfg.clip_norm)
            opt.step()
    head.eval()
    return head


class TrainableSentenceEncoder(nn.Module):
    """A private copy of a sentence-transformers model whose forward pass keeps gradients.

    Used by ``fine_tune_encoder=True``: node descriptions are re-encoded at every step (mean
    pooling, as the model's own pooling module does) so the encoder trains jointly with the GNN.
    """

    def __init__(self, sentence_transformer):
        super().__init__()
        if not (hasattr(sentence_transformer, "tokenize") and isinstance(sentence_transformer, nn.Module)):
            raise ArgusError(
                "fine_tune_encoder needs a sentence-transformers model (an nn.Module with .tokenize); "
                f"got {type(sentence_transformer).__name__}. Use the frozen encoder (the default) instead."
            )
        self.model = copy.deepcopy(sentence_transformer)  # never train the process-wide cached encoder

    def forward(self, texts: Sequence[str]) -> torch.Tensor:
        tokenize = getattr(self.model, "preprocess", None) or self.model.tokenize
        features = tokenize(list(texts))
        device = next(self.model.parameters()).device
        features = {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in features.items()}
        return self.model(features)["sentence_embedding"]


def train_gnn(
    graphs: Sequence[EKGGraph],
    node_features: Sequence[torch.Tensor] | None,
    y_train: torch.Tensor,
    cfg: TrainConfig,
    seed: int,
    *,
    trainable_encoder: TrainableSentenceEncoder | None = None,
) -> tuple[EKGGNN, Callable[[EKGGraph, torch.Tensor | None], torch.Tensor]]:
    """Train an ``EKGGNN``; returns it and a ``predict(graph, features) -> probabilities`` function.

    With ``trainable_encoder`` the node features are recomputed from ``graph.node_texts`` at every
    step (``node_features`` is ignored) and the encoder's parameters join the optimizer at
    ``cfg.encoder_lr``.
    """
    torch.manual_seed(seed)
    if trainable_encoder is not None:
        st = trainable_encoder.model
        in_dim = int((getattr(st, "get_embedding_dimension", None) or st.get_sentence_embedding_dimension)())
    else:
        if node_features is None:
            raise ArgusError("train_gnn needs node_features when the encoder is frozen")
        in_dim = node_features[0].shape[1]
    model = EKGGNN(in_dim, y_train.shape[1])
    groups = [{"params": list(model.parameters()), "lr": cfg.lr}]
    if trainable_encoder is not None:
        groups.append({"params": list(trainable_encoder.parameters()), "lr": cfg.encoder_lr})
    opt = torch.optim.AdamW(groups, weight_decay=cfg.weight_decay)
    loss_fn = nn.BCEWithLogitsLoss(pos_weight=pos_weight_from(y_train))
    adjs = [g.adjacency() for g in graphs]
    all_params = list(model.parameters()) + (list(trainable_encoder.parameters()) if trainable_encoder else [])

    def features(i: int) -> torch.Tensor:
        if trainable_encoder is not None:
            return trainable_encoder(graphs[i].node_texts)
        return node_features[i]

    gen = torch.Generator().manual_seed(seed)
    model.train()
    if trainable_encoder is not None:
        trainable_encoder.train()
    for _ in range(cfg.epochs):
        for batch in _batches(len(graphs), cfg.batch_size, gen):
            opt.zero_grad()
            logits = torch.stack([model(features(i), adjs[i]) for i in batch])
            loss = loss_fn(logits, y_train[batch])
            loss.backward()
            nn.utils.clip_grad_norm_(all_params, cfg.clip_norm)
            opt.step()
    model.eval()
    if trainable_encoder is not None:
        trainable_encoder.eval()

    @torch.no_grad()
    def predict(graph: EKGGraph, feats: torch.Tensor | None) -> torch.Tensor:
        if trainable_encoder is not None:
            feats = trainable_encoder(graph.node_texts)
        return torch.sigmoid(model(feats, graph.adjacency()))

    return model, predict
