"""Clustering complaints by their event graphs (``argus experiment clustering``; paper §5.2, App. C).

Each document becomes a vector under several representations; K-means (scikit-learn,
``n_init=10``, fixed ``random_state``) is run for K = 2 … min(kmax, n − 1) and scored with the
silhouette (Euclidean). Representations:

``core6d``
    :func:`core6d`: log(1+#entities), log(1+#events), log(1+#temporal edges), log(1+#causal
    edges), graph density, temporal-edge ratio; L2-normalized per document.
``tfidf``
    The bag-of-words baseline: ``TfidfVectorizer(stop_words="english", sublinear_tf=True)`` over
    the complaint texts (rows L2-normalized by the vectorizer).
``ekg_full``
    The unreduced high-dimensional EKG representation: every entity, event, temporal and causal
    edge is linearized to a sentence (:func:`linearize_graph`) and embedded; the vector is the
    concatenation of the four per-kind mean embeddings (4 × d, 1536 dims with MiniLM; a kind the
    graph lacks gives a zero block), L2-normalized.
``run_a``
    Claim tags (one-hot over the 23 claim types of ``taxonomy/claim_types.json``) + Core6D.
``run_b``
    Core6D + PCA(16) of the hybrid EKG-context embedding (``ekg_full`` ‖ the mean embedding of the
    document's FACTS sentences: "hybrid" = graph + text, as in §5.3). PCA is fitted on the corpus
    at hand; its components are capped at min(16, n − 1, dims) and the cap is reported.
``run_c``
    Run A + the PCA block of Run B + a kNN graph-neighbour block (:func:`knn_neighbour_block`):
    documents are linked to their k = min(12, n − 1) most similar documents by the Jaccard
    similarity of their event-type sets (the paper's "type-Jaccard graph-neighbor component",
    Fig. 5, kNN(12) in Table 14); the block is the similarity-weighted mean of the neighbours'
    Run-B vectors (one mean-neighbour propagation step over that document graph).

In the fused runs every block is L2-normalized per document before concatenation, so each block
carries the same weight (the paper does not state its weighting). The claim tags are the gold
``claims`` of the annotated complaints (the paper used LLM-assigned SALI tags); for a folder of
``*.ekg.json`` they are looked up by ``doc_id`` among the annotated complaints (none found: a
zero block).

The paper's figures come from its own corpus of ~130 complaints (Core6D 0.649 at K = 4, TF-IDF
0.091, full EKG 0.363); our annotated corpus has 18 documents, so the values are not comparable
and the sweep stops at K = n − 1.
"""

from __future__ import annotations

import json
import math
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import typer

from argus.errors import InputError
from argus.io import atomic_open, write_text_atomic
from argus.paths import complaints_dir, data_root

__all__ = [
    "ClusterDocument", "CORE6D_FEATURES", "REPRESENTATIONS", "PAPER_SILHOUETTE",
    "core6d", "graph_density", "linearize_graph", "load_documents", "load_gold_documents",
    "load_ekg_documents", "claim_type_ids", "silhouette_sweep", "knn_neighbour_block",
    "build_representations", "run_clustering", "table_markdown", "command",
]

CORE6D_FEATURES = (
    "log1p_entities", "log1p_events", "log1p_temporal_edges", "log1p_causal_edges", "density", "temporal_ratio",
)
REPRESENTATIONS = ("core6d", "tfidf", "ekg_full", "run_a", "run_b", "run_c")
#: the paper's silhouettes (Table 13, its own corpus, K = 4 for Core6D); None where it reports none
PAPER_SILHOUETTE: dict[str, float | None] = {
    "core6d": 0.649, "tfidf": 0.091, "ekg_full": 0.363, "run_a": None, "run_b": None, "run_c": None,
}
PCA_COMPONENTS = 16
KNN_NEIGHBOURS = 12
REPORT_K = 4

#: an encoder: a model name for :func:`argus.models.embeddings.encode`, or texts → (n, d) array
Encoder = str | Callable[[list[str]], np.ndarray]


@dataclass
class ClusterDocument:
    """One document to cluster: its graph (any object with ``entities``, ``events``,
    ``temporal_edges``, ``causal_edges`` in the EKG schema's shape), its text, its FACTS
    sentences (for the hybrid context) and its claim-type ids."""

    doc_id: str
    graph: object
    text: str
    fact_sentences: list[str] = field(default_factory=list)
    claims: list[str] = field(default_factory=list)


# ----------------------------------------------------------------------------- loading


def claim_type_ids() -> list[str]:
    """The claim-type ids of ``taxonomy/claim_types.json`` (the one-hot order of Run A / C)."""
    path = data_root() / "taxonomy" / "claim_types.json"
    if not path.is_file():
        return []
    return [c["id"] for c in json.loads(path.read_text(encoding="utf-8"))]


def _gold_folders() -> list[Path]:
    folders: list[Path] = []
    for split in ("train", "dev"):
        d = complaints_dir(split)
        if d.is_dir():
            folders += sorted(p for p in d.iterdir() if (p / "gold.json").is_file())
    return folders


def load_gold_documents(folders: Sequence[Path] | None = None) -> list[ClusterDocument]:
    """The annotated complaints (train + dev) with their gold graphs."""
    from argus.graph.schema import EventGraph

    folders = list(folders) if folders is not None else _gold_folders()
    if not folders:
        raise InputError(f"no annotated complaints (gold.json) under {complaints_dir('train').parent}")
    docs = []
    for folder in folders:
        gold = json.loads((folder / "gold.json").read_text(encoding="utf-8"))
        text_path = folder / "complaint.txt"
        facts = [
            s["text"] for sec in gold.get("sections", []) if sec.get("kind") == "facts"
            for para in sec.get("paragraphs", []) for s in para if s.get("fact")
        ]
        text = text_path.read_text(encoding="utf-8") if text_path.is_file() else " ".join(
            s["text"] for sec in gold.get("sections", []) for para in sec.get("paragraphs", []) for s in para
        )
        docs.append(ClusterDocument(
            doc_id=gold.get("doc_id", folder.name), graph=EventGraph.model_validate(gold["graph"]),
            text=text, fact_sentences=facts, claims=list(gold.get("claims", [])),
        ))
    return docs


def load_ekg_documents(folder: Path) -> list[ClusterDocument]:
    """Pipeline outputs (``*.ekg.json``); claims from the annotated complaint of the same id."""
    from argus.graph.schema import DocumentEKG

    files = sorted(Path(folder).glob("*.ekg.json"))
    if not files:
        raise InputError(f"{folder}: no *.ekg.json files; give --graphs gold or a folder of pipeline outputs")
    gold_claims: dict[str, list[str]] = {}
    for g in _gold_folders():
        gold = json.loads((g / "gold.json").read_text(encoding="utf-8"))
        gold_claims[gold.get("doc_id", g.name)] = list(gold.get("claims", []))
    docs = []
    for f in files:
        ekg = DocumentEKG.model_validate_json(f.read_text(encoding="utf-8"))
        docs.append(ClusterDocument(
            doc_id=ekg.doc_id, graph=ekg.graph, text=" ".join(s.text for s in ekg.sentences),
            fact_sentences=[s.text for s in ekg.sentences if s.fact],
            claims=gold_claims.get(ekg.doc_id, []),
        ))
    return docs


def load_documents(graphs: str | Path = "gold") -> list[ClusterDocument]:
    """``"gold"``: the annotated complaints' gold graphs; otherwise a folder of ``*.ekg.json``."""
    if str(graphs) == "gold":
        return load_gold_documents()
    path = Path(graphs)
    if not path.is_dir():
        raise InputError(f"--graphs {graphs}: neither 'gold' nor a folder of *.ekg.json files")
    return load_ekg_documents(path)


# ----------------------------------------------------------------------------- Core6D


def graph_density(graph) -> float:
    """Density of the event+entity graph, as ``networkx.density`` of a simple directed graph.

    Nodes: every entity and every event (N = #entities + #events). Edges: the distinct directed
    node pairs (u, v), u ≠ v, among event → entity participation links, temporal edges and causal
    edges (parallel edges between the same ordered pair count once, self-loops and references to
    missing nodes are ignored). Density = |E| / (N (N − 1)), 0 when N < 2; it lies in [0, 1].
    """
    import networkx as nx

    g = nx.DiGraph()
    g.add_nodes_from(f"ent:{e.id}" for e in graph.entities)
    g.add_nodes_from(f"ev:{e.id}" for e in graph.events)
    nodes = set(g.nodes)
    pairs = [(f"ev:{ev.id}", f"ent:{p.entity}") for ev in graph.events for p in ev.participants]
    pairs += [(f"ev:{e.source}", f"ev:{e.target}") for e in [*graph.temporal_edges, *graph.causal_edges]]
    g.add_edges_from((u, v) for u, v in pairs if u != v and u in nodes and v in nodes)
    return float(nx.density(g)) if g.number_of_nodes() >= 2 else 0.0


def core6d(graph, normalize: bool = True) -> np.ndarray:
    """The Core6D vector of a graph (order: :data:`CORE6D_FEATURES`), L2-normalized by default.

    ``[log(1+#entities), log(1+#events), log(1+#temporal), log(1+#causal), density,
    temporal / (temporal + causal) (0 when both are 0)]``; density as in :func:`graph_density`.
    An empty graph gives the zero vector (left unnormalized).
    """
    n_ent, n_ev = len(graph.entities), len(graph.events)
    n_t, n_c = len(graph.temporal_edges), len(graph.causal_edges)
    ratio = n_t / (n_t + n_c) if n_t + n_c else 0.0
    v = np.array([math.log1p(n_ent), math.log1p(n_ev), math.log1p(n_t), math.log1p(n_c), graph_density(graph), ratio])
    return _l2(v) if normalize else v


def _l2(x: np.ndarray) -> np.ndarray:
    """Row-wise (or vector) L2 normalization; zero rows stay zero."""
    x = np.asarray(x, dtype=float)
    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    return np.divide(x, norm, out=np.zeros_like(x), where=norm > 0)


# ----------------------------------------------------------------------------- embeddings


def linearize_graph(graph) -> dict[str, list[str]]:
    """One sentence per graph element, by kind (``entities``, ``events``, ``temporal``, ``causal``)."""
    names = {e.id: e.name for e in graph.entities}
    events = {}
    for ev in graph.events:
        events[ev.id] = f"{ev.type.replace('_', ' ')}: {ev.trigger}"
    ents = []
    for e in graph.entities:
        alias = f"; also {', '.join(e.aliases)}" if e.aliases else ""
        ents.append(f"{e.name} ({e.kind}, {e.role}){alias}")
    evs = []
    for ev in graph.events:
        who = ", ".join(f"{names.get(p.entity, p.entity)} ({p.role})" for p in ev.participants)
        when = f"; time: {ev.time.value}" if ev.time.value else ""
        evs.append(f"{events[ev.id]} ({ev.verb}); participants: {who}{when}")
    temporal = [f"{events.get(e.source, e.source)} {e.relation.replace('_', ' ').lower()} {events.get(e.target, e.target)}" for e in graph.temporal_edges]
    causal = [f"{events.get(e.source, e.source)} {e.relation.lower()} {events.get(e.target, e.target)}" for e in graph.causal_edges]
    return {"entities": ents, "events": evs, "temporal": temporal, "causal": causal}


def _encode_fn(encoder: Encoder) -> Callable[[list[str]], np.ndarray]:
    if callable(encoder):
        return encoder
    from argus.models.embeddings import encode

    return lambda texts: encode(texts, name=encoder)


def _embed_documents(docs: list[ClusterDocument], encoder: Encoder) -> tuple[np.ndarray, np.ndarray]:
    """(ekg_full matrix, mean FACTS-sentence embedding matrix), one batched encoder call."""
    encode = _encode_fn(encoder)
    kinds = ("entities", "events", "temporal", "causal")
    texts: list[str] = []
    spans: list[list[tuple[int, int]]] = []
    for d in docs:
        lin = linearize_graph(d.graph)
        row = []
        for part in [*(lin[k] for k in kinds), d.fact_sentences or [d.text[:2000]]]:
            row.append((len(texts), len(texts) + len(part)))
            texts += part
        spans.append(row)
    emb = np.asarray(encode(texts), dtype=float) if texts else np.zeros((0, 1))
    dim = emb.shape[1]
    full, facts = [], []
    for row in spans:
        blocks = [emb[a:b].mean(axis=0) if b > a else np.zeros(dim) for a, b in row]
        full.append(np.concatenate(blocks[:4]))
        facts.append(blocks[4])
    return _l2(np.array(full)), _l2(np.array(facts))


# ----------------------------------------------------------------------------- fused runs


def _event_types(graph) -> set[str]:
    return {ev.type for ev in graph.events}


def knn_neighbour_block(type_sets: Sequence[set[str]], features: np.ndarray, k: int = KNN_NEIGHBOURS) -> np.ndarray:
    """The graph-neighbour block of Run C.

    A document graph links each document i to its k' = min(k, n − 1) most similar other documents
    by the Jaccard similarity of their event-type sets (J = |A ∩ B| / |A ∪ B|, 0 for two empty sets;
    ties go to the earlier document). Row i of the block is the J-weighted mean of the neighbours'
    ``features`` rows (the unweighted mean when all k' similarities are 0), L2-normalized.
    """
    n = len(type_sets)
    if n < 2:
        return np.zeros_like(features, dtype=float)
    k = min(k, n - 1)
    sim = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            union = type_sets[i] | type_sets[j]
            sim[i, j] = len(type_sets[i] & type_sets[j]) / len(union) if union else 0.0
    block = np.zeros((n, features.shape[1]))
    for i in range(n):
        order = sorted((j for j in range(n) if j != i), key=lambda j: (-sim[i, j], j))[:k]
        w = sim[i, order]
        w = w / w.sum() if w.sum() > 0 else np.full(len(order), 1.0 / len(order))
        block[i] = w @ features[order]
    return _l2(block)


def build_representations(
    docs: list[ClusterDocument], encoder: Encoder = "embedded", claim_ids: Sequence[str] | None = None,
) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Feature matrices (rows in ``docs`` order) per representation, and a note per representation."""
    from sklearn.decomposition import PCA
    from sklearn.feature_extraction.text import TfidfVectorizer

    n = len(docs)
    notes: dict[str, str] = {}
    core = np.array([core6d(d.graph) for d in docs])
    tfidf = TfidfVectorizer(stop_words="english", sublinear_tf=True).fit_transform([d.text for d in docs]).toarray()
    full, facts = _embed_documents(docs, encoder)
    claim_ids = list(claim_ids) if claim_ids is not None else claim_type_ids()
    extra = sorted({c for d in docs for c in d.claims} - set(claim_ids))
    claim_ids += extra
    tags = _l2(np.array([[1.0 if c in d.claims else 0.0 for c in claim_ids] for d in docs]))
    hybrid = np.hstack([full, facts])
    n_comp = min(PCA_COMPONENTS, n - 1, hybrid.shape[1])
    if n_comp < PCA_COMPONENTS:
        notes["run_b"] = notes["run_c"] = f"PCA components capped at {n_comp} (n − 1 = {n - 1}, dims = {hybrid.shape[1]})"
    pca = _l2(PCA(n_components=n_comp, random_state=0).fit_transform(hybrid)) if n_comp >= 1 else np.zeros((n, 0))
    run_b = np.hstack([core, pca])
    knn = knn_neighbour_block([_event_types(d.graph) for d in docs], run_b)
    k_used = min(KNN_NEIGHBOURS, n - 1)
    c_note = f"kNN k={k_used}" + (f" (capped from {KNN_NEIGHBOURS})" if k_used < KNN_NEIGHBOURS else "")
    notes["run_c"] = "; ".join(x for x in (notes.get("run_c"), c_note) if x)
    notes["run_a"] = f"{len(claim_ids)} claim tags (gold)"
    notes["ekg_full"] = f"4 × {full.shape[1] // 4}-d mean embeddings"
    reps = {
        "core6d": core, "tfidf": tfidf, "ekg_full": full,
        "run_a": np.hstack([tags, core]), "run_b": run_b, "run_c": np.hstack([tags, core, pca, knn]),
    }
    return reps, notes


# ----------------------------------------------------------------------------- clustering


def _kmeans(x: np.ndarray, k: int, random_state: int) -> np.ndarray:
    from sklearn.cluster import KMeans

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fewer distinct points than K: ConvergenceWarning
        return KMeans(n_clusters=k, n_init=10, random_state=random_state).fit_predict(x)


def silhouette_sweep(x: np.ndarray, kmax: int = 40, random_state: int = 0) -> tuple[pd.DataFrame, dict[int, np.ndarray]]:
    """K-means for K = 2 … min(kmax, n − 1) and the silhouette of each partition.

    Returns a frame (``k``, ``silhouette``, ``n_clusters``: distinct labels found) and the labels
    per K. A partition with fewer than 2 distinct labels (identical points) scores NaN.
    """
    from sklearn.metrics import silhouette_score

    n = x.shape[0]
    rows, labels = [], {}
    for k in range(2, min(kmax, n - 1) + 1):
        lab = _kmeans(x, k, random_state)
        distinct = len(set(lab.tolist()))
        s = float(silhouette_score(x, lab, metric="euclidean")) if 2 <= distinct <= n - 1 else float("nan")
        rows.append({"k": k, "silhouette": s, "n_clusters": distinct})
        labels[k] = lab
    return pd.DataFrame(rows, columns=["k", "silhouette", "n_clusters"]), labels


def _plot(sweeps: dict[str, pd.DataFrame], path: Path, caption: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8.5, 5.0))
    for name, sw in sweeps.items():
        ax.plot(sw["k"], sw["silhouette"], marker="o", markersize=3, label=name)
    ax.axvline(REPORT_K, color="grey", linestyle=":", linewidth=1)
    ax.set_xlabel("K (K-means clusters)")
    ax.set_ylabel("silhouette")
    import textwrap

    ax.set_title(textwrap.fill(caption, 120), fontsize=7, loc="left")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    with atomic_open(path, "wb") as fh:
        fig.savefig(fh, format="png", dpi=120)
    plt.close(fig)


def table_markdown(table: pd.DataFrame) -> str:
    """The result table as Markdown (3 decimals; missing values as '–')."""
    return table.astype(object).where(table.notna(), "–").to_markdown(index=False, floatfmt=".3f")


def _caption(n: int, source: str) -> str:
    return (
        f"K-means silhouette (n_init=10) over K = 2…min(kmax, n−1) on our corpus of n = {n} documents "
        f"({source}). The paper's figures (Core6D 0.649 at K=4, TF-IDF 0.091, full EKG 0.363) come from "
        f"its own, larger corpus; with {n} documents these values are not comparable."
    )


def run_clustering(
    graphs: str | Path | list[ClusterDocument] = "gold",
    out: str | Path | None = None,
    encoder: Encoder = "embedded",
    kmax: int = 40,
    random_state: int = 0,
    representations: Sequence[str] = REPRESENTATIONS,
) -> pd.DataFrame:
    """Cluster the documents under every representation; write the outputs when ``out`` is given.

    Returns one row per representation: ``representation``, ``dims``, ``best_k``,
    ``best_silhouette``, ``silhouette_k4`` (NaN when 4 > n − 1), ``paper_silhouette``,
    ``n_documents``, ``note``. ``out`` receives ``clustering.md`` (table + caption),
    ``clustering.csv``, ``silhouette_sweep.csv`` (every K), ``silhouette_vs_k.png`` and
    ``assignments.csv`` (``doc_id``, ``representation``, ``k``, ``which`` = best|k4, ``cluster``).
    """
    if isinstance(graphs, list):
        docs, source = graphs, "given documents"
    else:
        docs = load_documents(graphs)
        source = "gold graphs of the annotated complaints" if str(graphs) == "gold" else f"graphs from {graphs}"
    n = len(docs)
    if n < 3:
        raise InputError(f"clustering needs at least 3 documents (K = 2 … n − 1); got {n}")
    if kmax < 2:
        raise InputError("--kmax must be at least 2")
    reps, notes = build_representations(docs, encoder)
    rows, sweeps, assign = [], {}, []
    for name in representations:
        x = reps[name]
        sweep, labels = silhouette_sweep(x, kmax=kmax, random_state=random_state)
        sweeps[name] = sweep
        valid = sweep.dropna(subset=["silhouette"])
        best = valid.loc[valid["silhouette"].idxmax()] if not valid.empty else None
        k4 = sweep.loc[sweep["k"] == REPORT_K, "silhouette"]
        rows.append({
            "representation": name, "dims": int(x.shape[1]),
            "best_k": int(best["k"]) if best is not None else None,
            "best_silhouette": float(best["silhouette"]) if best is not None else float("nan"),
            "silhouette_k4": float(k4.iloc[0]) if len(k4) else float("nan"),
            "paper_silhouette": PAPER_SILHOUETTE.get(name), "n_documents": n, "note": notes.get(name, ""),
        })
        for which, k in (("best", int(best["k"]) if best is not None else None), ("k4", REPORT_K)):
            if k is not None and k in labels:
                assign += [
                    {"doc_id": d.doc_id, "representation": name, "which": which, "k": k, "cluster": int(c)}
                    for d, c in zip(docs, labels[k])
                ]
    table = pd.DataFrame(rows)
    if out is not None:
        out = Path(out)
        caption = _caption(n, source)
        md = (
            "# Clustering: silhouette by representation\n\n"
            + table_markdown(table)
            + f"\n\n{caption} K-means random_state={random_state}; kmax={kmax}; "
            "`paper_silhouette`: Table 13 of the paper (Core6D at K=4).\n"
        )
        write_text_atomic(out / "clustering.md", md)
        write_text_atomic(out / "clustering.csv", table.to_csv(index=False))
        sweep_long = pd.concat([sw.assign(representation=k) for k, sw in sweeps.items()], ignore_index=True)
        write_text_atomic(out / "silhouette_sweep.csv", sweep_long[["representation", "k", "silhouette", "n_clusters"]].to_csv(index=False))
        write_text_atomic(out / "assignments.csv", pd.DataFrame(assign, columns=["doc_id", "representation", "which", "k", "cluster"]).to_csv(index=False))
        _plot(sweeps, out / "silhouette_vs_k.png", caption)
    return table


def command(
    graphs: str = typer.Option("gold", "--graphs", help="'gold' (the annotated complaints' gold graphs) or a folder of *.ekg.json"),
    out: Path = typer.Option(Path("runs/clustering"), "--out", help="Output folder for the table, plot and assignments"),
    encoder: str = typer.Option("embedded", "--encoder", help="Sentence encoder ('embedded' = all-MiniLM-L6-v2, offline)"),
    kmax: int = typer.Option(40, "--kmax", help="Largest K of the sweep (capped at n − 1)"),
    random_state: int = typer.Option(0, "--random-state", help="K-means and PCA seed"),
) -> None:
    """Cluster complaints by Core6D, TF-IDF, full EKG embeddings and the paper's Runs A/B/C (silhouette vs K)."""
    start = time.perf_counter()
    table = run_clustering(graphs, out=out, encoder=encoder, kmax=kmax, random_state=random_state)
    typer.echo(table_markdown(table))
    typer.echo(f"{time.perf_counter() - start:.1f} s; wrote {out}/clustering.md, clustering.csv, silhouette_sweep.csv, assignments.csv, silhouette_vs_k.png")
