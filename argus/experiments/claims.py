"""Claim-type classification (``argus experiment claims``): raw text vs linearized EKG vs EKG-GNN.

Multi-label prediction of the 23 claim types of ``taxonomy/claim_types.json`` from each annotated
complaint (gold labels: its ``claims``), with three representations over the same label space,
documents and splits (after the ARGUS paper, Section 5.1 and Appendix B.3):

1. **raw-text** — the first 512 tokens of ``complaint.txt`` → sentence encoder → linear head;
2. **linearized-EKG** — entities and events serialized to text ("Event termination (terminate)
   agent Acme patient Torres time 2020-06. …"), first 512 tokens → the same encoder → linear head;
3. **EKG-GNN** — the graph model of :mod:`argus.experiments.gnn` over node descriptions.

Every model trains with weighted BCE (``pos_weight`` from the training label frequencies), AdamW
(lr 3e-4, weight decay 0.01), batch size 2, gradient clipping 1.0, 8 epochs; the encoder is frozen
(``fine_tune_encoder=True`` jointly fine-tunes a private copy of it inside the GNN). Scores are
Micro-F1 at threshold 0.5 and Macro-F1 (sklearn, ``zero_division=0``) on the held-out split (the 12
train complaints train, the 6 dev complaints test; or k-fold / leave-one-out with ``cv``), mean ±
std over seeds. The paper's numbers (raw 0.590, linearized 0.583, GNN 0.642 Micro-F1) come from a
22-document held-out set of 130 complaints; ours has 18 annotated complaints in all.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Protocol

import numpy as np
import pandas as pd

from argus.errors import ArgusError, InputError

REPRESENTATIONS: tuple[str, ...] = ("raw-text", "linearized-EKG", "EKG-GNN")
TEXT_MAX_TOKENS = 512
PAPER_MICRO_F1 = {"raw-text": 0.590, "linearized-EKG": 0.583, "EKG-GNN": 0.642}


# ----------------------------------------------------------------------------- labels


def claim_types_path() -> Path:
    from argus.paths import data_root

    return data_root() / "taxonomy" / "claim_types.json"


def load_label_space(path: str | Path | None = None) -> list[str]:
    """The claim-type ids of ``claim_types.json`` (a list of ``{"id", "label"}``), in file order."""
    path = Path(path) if path else claim_types_path()
    if not path.exists():
        raise InputError(f"claim taxonomy not found at {path} (set ARGUS_DATA_ROOT)")
    data = json.loads(path.read_text(encoding="utf-8"))
    ids = [item["id"] for item in data]
    if len(set(ids)) != len(ids):
        raise InputError(f"{path} lists a claim id twice")
    return ids


def encode_labels(claims: Sequence[Sequence[str]], labels: Sequence[str], *, unknown: str = "error") -> tuple[np.ndarray, list[str]]:
    """Multi-hot matrix ``(n_docs, n_labels)`` and the unknown claim ids met.

    ``unknown="error"`` raises :class:`InputError` on a claim id outside ``labels``;
    ``unknown="skip"`` drops it and lists it (once per occurrence) in the second return value.
    """
    if unknown not in ("error", "skip"):
        raise ValueError("unknown must be 'error' or 'skip'")
    index = {label: i for i, label in enumerate(labels)}
    y = np.zeros((len(claims), len(labels)), dtype="float32")
    skipped: list[str] = []
    for row, doc_claims in enumerate(claims):
        for claim in doc_claims:
            if claim not in index:
                if unknown == "error":
                    raise InputError(f"unknown claim type {claim!r}: not one of the {len(labels)} ids in claim_types.json")
                skipped.append(claim)
                continue
            y[row, index[claim]] = 1.0
    return y, skipped


# ----------------------------------------------------------------------------- documents


@dataclass
class ClaimDocument:
    """One annotated complaint: its text, gold claim ids and the EKG used for it (None: none found)."""

    doc_id: str
    split: str
    text: str
    claims: list[str]
    graph: dict | None


def load_graph_folder(folder: str | Path) -> dict[str, dict]:
    """``doc_id → graph`` from every ``*.ekg.json`` (DocumentEKG) in ``folder``."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(f"--graphs: {folder} is neither 'gold' nor a folder of *.ekg.json files")
    graphs: dict[str, dict] = {}
    for path in sorted(folder.glob("*.ekg.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            graphs[data["doc_id"]] = data["graph"]
        except (OSError, ValueError, KeyError) as exc:
            raise InputError(f"{path}: not a DocumentEKG JSON file ({exc})") from exc
    if not graphs:
        raise InputError(f"no *.ekg.json files in {folder}")
    return graphs


def load_documents(graphs: str = "gold", splits: Sequence[str] = ("train", "dev")) -> list[ClaimDocument]:
    """The annotated complaints of ``splits`` with their gold claims and the chosen graphs."""
    from argus.paths import complaints_dir

    folder_graphs = None if graphs == "gold" else load_graph_folder(graphs)
    docs: list[ClaimDocument] = []
    for split in splits:
        root = complaints_dir(split)
        if not root.exists():
            raise InputError(f"no annotated complaints at {root} (set ARGUS_DATA_ROOT)")
        for d in sorted(p for p in root.iterdir() if (p / "gold.json").exists()):
            gold = json.loads((d / "gold.json").read_text(encoding="utf-8"))
            text_path = d / "complaint.txt"
            if text_path.exists():
                text = text_path.read_text(encoding="utf-8")
            else:  # the sentences of gold.json in reading order
                text = " ".join(s["text"] for sec in gold["sections"] for p in sec["paragraphs"] for s in p)
            graph = gold.get("graph") if folder_graphs is None else folder_graphs.get(gold["doc_id"])
            docs.append(ClaimDocument(gold["doc_id"], split, text, list(gold.get("claims") or []), graph))
    return docs


def linearize_ekg(graph) -> str:
    """Entities and events as text: "Entity Acme (organization, employer). Event termination (terminate) agent Acme …"."""
    g = graph.model_dump() if hasattr(graph, "model_dump") else graph
    names = {e["id"]: e.get("name", e["id"]) for e in g.get("entities") or []}
    parts = [f"Entity {e.get('name', '')} ({e.get('kind', 'other')}, {e.get('role', 'other')})." for e in g.get("entities") or []]
    for ev in g.get("events") or []:
        words = [f"Event {ev.get('type', 'other')} ({ev.get('verb', '')})"]
        for p in ev.get("participants") or []:
            words.append(f"{p.get('role', 'participant')} {names.get(p.get('entity'), p.get('entity'))}")
        value = (ev.get("time") or {}).get("value")
        if value:
            words.append(f"time {value}")
        parts.append(" ".join(words) + ".")
    return " ".join(parts)


# ----------------------------------------------------------------------------- encoders


class TextEncoder(Protocol):
    """What the experiment needs from a sentence encoder (tests pass a fixed-vector double)."""

    dimension: int

    def encode(self, texts: Sequence[str], max_tokens: int | None = None) -> np.ndarray:
        """Embeddings ``(len(texts), dimension)``; ``max_tokens`` caps the input length."""


class SentenceEncoder:
    """A sentence-transformers encoder (``argus.models.embeddings`` names) with an in-memory cache.

    ``max_tokens`` raises or lowers the model's ``max_seq_length`` for one call (capped at its
    position-embedding size; all-MiniLM-L6-v2 defaults to 256 and accepts 512).
    """

    def __init__(self, name: str = "embedded"):
        from argus.models.embeddings import load_encoder

        self.name = name
        self.model = load_encoder(name)
        get_dim = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        self.dimension = int(get_dim())
        self._cache: dict[tuple[int | None, str], np.ndarray] = {}
        self.calls = 0

    def _position_limit(self) -> int:
        try:
            return int(self.model[0].auto_model.config.max_position_embeddings)
        except (AttributeError, IndexError, TypeError):
            return TEXT_MAX_TOKENS

    def encode(self, texts: Sequence[str], max_tokens: int | None = None) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if (max_tokens, t) not in self._cache))
        if missing:
            self.calls += 1
            old = self.model.max_seq_length
            if max_tokens is not None:
                self.model.max_seq_length = min(max_tokens, self._position_limit())
            try:
                vecs = self.model.encode(
                    missing, batch_size=128, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
                ).astype("float32")
            finally:
                self.model.max_seq_length = old
            for text, vec in zip(missing, vecs):
                self._cache[(max_tokens, text)] = vec
        if not texts:
            return np.zeros((0, self.dimension), dtype="float32")
        return np.stack([self._cache[(max_tokens, t)] for t in texts])


# ----------------------------------------------------------------------------- the experiment


def _splits(docs: list[ClaimDocument], cv: int | str | None, seed: int = 0) -> list[tuple[list[int], list[int]]]:
    if cv is None:
        train = [i for i, d in enumerate(docs) if d.split == "train"]
        test = [i for i, d in enumerate(docs) if d.split != "train"]
        return [(train, test)]
    n = len(docs)
    k = n if str(cv).lower() in ("loo", "leave-one-out") else int(cv)
    if not 2 <= k <= n:
        raise ArgusError(f"cv must be 'loo' or a fold count between 2 and {n}, got {cv!r}")
    order = np.random.default_rng(seed).permutation(n) if k < n else np.arange(n)
    folds = np.array_split(order, k)
    return [(sorted(set(range(n)) - set(f.tolist())), sorted(f.tolist())) for f in folds]


def _scores(y_true: np.ndarray, probs: np.ndarray) -> dict[str, float]:
    from sklearn.metrics import f1_score

    pred = (probs >= 0.5).astype(int)
    present = np.flatnonzero(y_true.sum(axis=0) > 0)
    return {
        "micro_f1": float(f1_score(y_true, pred, average="micro", zero_division=0)),
        "macro_f1": float(f1_score(y_true, pred, average="macro", zero_division=0)),
        "macro_f1_present": float(
            f1_score(y_true, pred, average="macro", labels=present, zero_division=0) if len(present) else 0.0
        ),
    }


def _prediction_rows(rep: str, seed: int, doc_ids: list[str], labels: Sequence[str], y: np.ndarray,
                     probs: np.ndarray) -> pd.DataFrame:
    n_docs, n_labels = y.shape
    return pd.DataFrame({
        "representation": rep, "seed": seed, "doc_id": np.repeat(doc_ids, n_labels),
        "label": np.tile(list(labels), n_docs), "gold": y.reshape(-1).astype(int), "prob": probs.reshape(-1).astype(float),
    })


def run_claims(
    *,
    graphs: str | Path = "gold",
    seeds: Sequence[int] = (0, 1, 2),
    epochs: int = 8,
    encoder: str = "embedded",
    cv: int | str | None = None,
    fine_tune_encoder: bool = False,
    lr: float = 3e-4,
    representations: Sequence[str] = REPRESENTATIONS,
    text_encoder: TextEncoder | None = None,
    documents: list[ClaimDocument] | None = None,
    labels: Sequence[str] | None = None,
    out: str | Path | None = None,
) -> pd.DataFrame:
    """Train and score the three representations; one row per representation.

    ``graphs``: "gold" (the gold graphs of the annotated complaints) or a folder of ``*.ekg.json``
    matched by ``doc_id``; documents without a graph are skipped for every representation (listed
    in ``df.attrs["skipped"]``). ``cv``: None (train → dev), an int k (k-fold over all documents)
    or "loo"; cross-validated scores are computed on the pooled out-of-fold predictions of each
    seed. ``text_encoder`` replaces the encoder named by ``encoder`` (a test double, say);
    ``documents`` / ``labels`` replace the shared data. ``fine_tune_encoder`` jointly fine-tunes a
    copy of the sentence-transformers encoder with the GNN (encoder lr 2e-5; slow on CPU).
    With ``out`` the table is written as ``claims.csv`` and ``claims.md``.

    ``df.attrs`` holds ``caption``, ``notes``, ``per_seed`` (a DataFrame), ``skipped``,
    ``label_stats``, ``seconds`` and ``predictions``: the held-out probability of every scored
    document and label per representation and seed (columns ``representation``, ``seed``,
    ``doc_id``, ``label``, ``gold``, ``prob``), from which per-complaint scores and bootstrap
    intervals over complaints are computed (``bench/downstream.py``).
    """
    import torch  # here, not at import: every argus command loads this module to list its options

    from argus.experiments.gnn import TrainableSentenceEncoder, TrainConfig, build_graph, train_gnn, train_linear_head

    started = time.perf_counter()
    unknown_reps = set(representations) - set(REPRESENTATIONS)
    if unknown_reps:
        raise ArgusError(f"unknown representations {sorted(unknown_reps)}; choose from {REPRESENTATIONS}")
    if not seeds:
        raise ArgusError("give at least one seed")
    labels = list(labels) if labels is not None else load_label_space()
    all_docs = documents if documents is not None else load_documents(str(graphs))
    skipped = [d.doc_id for d in all_docs if d.graph is None]
    docs = [d for d in all_docs if d.graph is not None]
    y_all, unknown = encode_labels([d.claims for d in docs], labels, unknown="skip")
    if unknown:
        raise InputError(f"claim ids not in claim_types.json: {sorted(set(unknown))}")
    splits = _splits(docs, cv)
    if cv is None:
        train_idx, test_idx = splits[0]
        if not train_idx or not test_idx:
            raise ArgusError(
                f"no {'training' if not train_idx else 'held-out'} complaint has a graph "
                f"(graphs={graphs}; skipped: {', '.join(skipped) or 'none'}); use --graphs gold or a folder "
                "with graphs for both the train and the dev complaints (or --cv loo over the documents that have graphs)"
            )

    enc = text_encoder if text_encoder is not None else SentenceEncoder(encoder)
    need = set(representations)
    x_raw = torch.from_numpy(enc.encode([d.text for d in docs], max_tokens=TEXT_MAX_TOKENS)) if "raw-text" in need else None
    x_lin = (
        torch.from_numpy(enc.encode([linearize_ekg(d.graph) for d in docs], max_tokens=TEXT_MAX_TOKENS))
        if "linearized-EKG" in need else None
    )
    ekg_graphs = [build_graph(d.graph) for d in docs] if "EKG-GNN" in need else []
    node_feats: list[torch.Tensor] = []
    if ekg_graphs:
        texts = [t for g in ekg_graphs for t in g.node_texts]
        flat = torch.from_numpy(enc.encode(texts))
        start = 0
        for g in ekg_graphs:
            node_feats.append(flat[start : start + g.num_nodes])
            start += g.num_nodes
        if any(g.num_nodes == 0 for g in ekg_graphs):
            empty = [d.doc_id for d, g in zip(docs, ekg_graphs) if g.num_nodes == 0]
            raise InputError(f"graphs without events: {empty}")
    trainable = None
    if fine_tune_encoder and "EKG-GNN" in need:
        if getattr(enc, "model", None) is None:
            raise ArgusError(
                "fine_tune_encoder needs a sentence-transformers encoder (SentenceEncoder); "
                f"{type(enc).__name__} has no trainable model"
            )

    y = torch.from_numpy(y_all)
    cfg = TrainConfig(lr=lr, epochs=epochs)
    per_seed: list[dict] = []
    predictions: list[pd.DataFrame] = []
    for seed in seeds:
        probs = {rep: np.zeros_like(y_all) for rep in representations}
        tested: list[int] = []
        for train_idx, test_idx in splits:
            tested += test_idx
            y_tr = y[train_idx]
            for rep, x in (("raw-text", x_raw), ("linearized-EKG", x_lin)):
                if rep in need:
                    head = train_linear_head(x[train_idx], y_tr, cfg, seed)
                    with torch.no_grad():
                        probs[rep][test_idx] = torch.sigmoid(head(x[test_idx])).numpy()
            if "EKG-GNN" in need:
                if fine_tune_encoder:
                    trainable = TrainableSentenceEncoder(enc.model)  # a fresh copy per fold and seed
                _, predict = train_gnn(
                    [ekg_graphs[i] for i in train_idx], [node_feats[i] for i in train_idx], y_tr, cfg, seed,
                    trainable_encoder=trainable,
                )
                for i in test_idx:
                    probs["EKG-GNN"][i] = predict(ekg_graphs[i], node_feats[i]).numpy()
        tested = sorted(set(tested))
        for rep in representations:
            per_seed.append({"representation": rep, "seed": seed, **_scores(y_all[tested], probs[rep][tested])})
            predictions.append(_prediction_rows(rep, seed, [docs[i].doc_id for i in tested], labels,
                                                y_all[tested], probs[rep][tested]))

    per = pd.DataFrame(per_seed)
    if cv is None:
        train_idx, test_idx = splits[0]
    else:
        train_idx = test_idx = list(range(len(docs)))
    y_tr_np, y_te_np = y_all[train_idx], y_all[test_idx]
    stats = {
        "n_train": len(train_idx) if cv is None else len(docs) - len(splits[0][1]),
        "n_test": len(test_idx),
        "label_cardinality_train": float(y_tr_np.sum(axis=1).mean()),
        "label_cardinality_test": float(y_te_np.sum(axis=1).mean()),
        "labels_in_train": int((y_tr_np.sum(axis=0) > 0).sum()),
        "labels_in_test": int((y_te_np.sum(axis=0) > 0).sum()),
        "test_labels_unseen_in_train": int(((y_te_np.sum(axis=0) > 0) & (y_tr_np.sum(axis=0) == 0)).sum()),
    }
    rows = []
    for rep in representations:
        sub = per[per.representation == rep]
        row = {"representation": rep}
        for metric in ("micro_f1", "macro_f1", "macro_f1_present"):
            row[f"{metric}_mean"] = float(sub[metric].mean())
            row[f"{metric}_std"] = float(sub[metric].std(ddof=1)) if len(sub) > 1 else 0.0
        row["paper_micro_f1"] = PAPER_MICRO_F1[rep]
        row.update(n_seeds=len(seeds), graphs="gold" if str(graphs) == "gold" else str(graphs), encoder=encoder if text_encoder is None else type(enc).__name__)
        row.update(stats)
        rows.append(row)
    df = pd.DataFrame(rows)

    n_docs = len(all_docs)
    split_text = (
        f"trained on {stats['n_train']} train complaints, scored on {stats['n_test']} held-out dev complaints"
        if cv is None
        else f"{'leave-one-out' if str(cv).lower() in ('loo', 'leave-one-out') else f'{cv}-fold'} cross-validation over {len(docs)} complaints (pooled out-of-fold predictions)"
    )
    graph_text = (
        "the GOLD event graphs of the annotated complaints" if str(graphs) == "gold" else f"the pipeline graphs in {graphs}"
    )
    caption = (
        f"Claim-type classification, {len(labels)} claim types (multi-label), {split_text}; "
        f"{n_docs} annotated documents in all{f', {len(docs)} of them with a graph' if skipped else ''} (the ARGUS paper used a 22-document held-out test set of 130 complaints: "
        f"raw 0.590, linearized 0.583, EKG-GNN 0.642 Micro-F1). EKGs: {graph_text}. "
        f"Encoder: {row['encoder']} ({'fine-tuned in the GNN' if fine_tune_encoder else 'frozen'}, mean pooling); "
        f"{epochs} epochs; mean ± std over {len(seeds)} seed(s) {list(seeds)}."
    )
    notes = [
        f"Label cardinality: train {stats['label_cardinality_train']:.2f}, test {stats['label_cardinality_test']:.2f} claims per complaint; "
        f"labels occurring: {stats['labels_in_train']}/{len(labels)} in train, {stats['labels_in_test']}/{len(labels)} in test "
        f"({stats['test_labels_unseen_in_train']} test labels never seen in train).",
        "Macro-F1 averages all 23 labels (labels absent from both gold and prediction score 0); "
        "'Macro-F1 (test labels)' averages only the labels that occur in the test gold.",
    ]
    if skipped:
        notes.append(f"Skipped (no graph): {', '.join(skipped)}.")
    elapsed = time.perf_counter() - started
    df.attrs.update(
        caption=caption, notes=notes, per_seed=per, skipped=skipped, label_stats=stats, seconds=elapsed,
        predictions=pd.concat(predictions, ignore_index=True),
    )
    if out is not None:
        write_tables(df, out)
    return df


def format_table(df: pd.DataFrame) -> str:
    """The Markdown table with its caption and notes."""

    def pm(row, metric):
        return f"{row[f'{metric}_mean']:.3f} ± {row[f'{metric}_std']:.3f}"

    shown = pd.DataFrame(
        {
            "Representation": df["representation"],
            "Micro-F1@0.5": [pm(r, "micro_f1") for _, r in df.iterrows()],
            "Macro-F1": [pm(r, "macro_f1") for _, r in df.iterrows()],
            "Macro-F1 (test labels)": [pm(r, "macro_f1_present") for _, r in df.iterrows()],
            "Paper Micro-F1 (22 docs)": [f"{v:.3f}" for v in df["paper_micro_f1"]],
        }
    )
    lines = [df.attrs.get("caption", ""), "", shown.to_markdown(index=False), ""]
    lines += [f"- {n}" for n in df.attrs.get("notes", [])]
    return "\n".join(lines) + "\n"


def write_tables(df: pd.DataFrame, out: str | Path) -> tuple[Path, Path]:
    """``claims.csv`` (numbers) and ``claims.md`` (caption, table, notes), each written atomically."""
    from argus.io import write_text_atomic

    out = Path(out)
    csv_path = write_text_atomic(out / "claims.csv", df.to_csv(index=False))
    md_path = write_text_atomic(out / "claims.md", format_table(df))
    return csv_path, md_path


def _parse_seeds(text: str) -> list[int]:
    text = text.strip()
    try:
        if "," in text:
            return [int(s) for s in text.split(",") if s.strip()]
        n = int(text)
    except ValueError as exc:
        raise ArgusError(f"--seeds: give a count (3) or a comma list (0,1,2), not {text!r}") from exc
    if n < 1:
        raise ArgusError("--seeds must be at least 1")
    return list(range(n))


def command(
    graphs: str = "gold",
    seeds: str = "3",
    out: Optional[Path] = None,  # noqa: UP045 (typer needs Optional on older Pythons)
    encoder: str = "embedded",
    epochs: int = 8,
    cv: Optional[str] = None,  # noqa: UP045
    fine_tune_encoder: bool = False,
    lr: float = 3e-4,
) -> None:
    """Claim-type classification: raw text vs linearized EKG vs EKG-GNN (Micro-/Macro-F1).

    --graphs gold (default: the gold graphs) or a folder of *.ekg.json; --seeds 3 or 0,1,2;
    --cv loo or a fold count (default: train → dev); --out DIR writes claims.csv and claims.md;
    --fine-tune-encoder jointly fine-tunes the encoder with the GNN (slow on CPU).
    """
    import typer

    try:
        df = run_claims(
            graphs=graphs, seeds=_parse_seeds(seeds), epochs=epochs, encoder=encoder, cv=cv,
            fine_tune_encoder=fine_tune_encoder, lr=lr, out=out,
        )
    except ArgusError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc
    typer.echo(format_table(df))
    typer.echo(f"wall time: {df.attrs['seconds']:.1f} s")
    if out is not None:
        typer.echo(f"wrote {Path(out) / 'claims.csv'} and {Path(out) / 'claims.md'}")
