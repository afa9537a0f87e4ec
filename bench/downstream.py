"""Downstream value of the event graphs, re-measured offline on the annotated complaints.

The ARGUS paper reports that graph structure beats raw text downstream (claim types: EKG-GNN 0.642 vs
raw text 0.590 Micro-F1; document QA: EKG 0.446 vs raw 0.323 token F1). This bench measures both
claims on our own complaints, for the GOLD graphs and for the predicted graphs of ``--graphs DIR``
(a folder of ``<doc_id>.ekg.json``), without any LM:

1. **Claim types** (:func:`argus.experiments.claims.run_claims`, leave-one-complaint-out or ``--cv K`` folds):
   raw text, linearized EKG and EKG-GNN, each on the same folds and seeds. Micro-F1 and Macro-F1 (the
   23 claim types, as ``run_claims``) of the pooled out-of-fold predictions, and the per-complaint
   F1 of the predicted label set (``Complaint F1``), each with a 95 % percentile-bootstrap interval
   over complaints; differences to raw text paired on the same complaints (the same complaint
   resamples for Micro-/Macro-F1; :func:`argus.experiments.stats.paired_bootstrap_ci` over the
   per-complaint F1). Scores are means over seeds.
2. **QA retrieval** (:func:`argus.experiments.qa.retrieval_recall`, the units the QA experiment
   retrieves from, MiniLM): recall@k of each FAQ question's gold evidence sentences for k = 1, 3, 5,
   raw text (the FACTS sentences; all sentences) vs EKG events (with and without the text of the
   sentences they cite) on gold and on predicted graphs. ``R@k``: the sentences of the top k units
   (an event may cite several); ``S@k``: the first k sentences in rank order (an equal budget).
   Mean over questions with a 95 % bootstrap interval over complaints; the paired difference of
   per-complaint means with ``paired_bootstrap_ci`` over complaints.

    python bench/downstream.py --graphs /tmp/bd0/sentence/ekg [--out downstream.md]

Offline and on one CPU thread by default (``--threads``): a few minutes for 18 complaints, 3 seeds.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REP_LABELS = {"raw-text": "raw text", "linearized-EKG": "linearized EKG", "EKG-GNN": "EKG-GNN"}
RETRIEVER_LABELS = {
    "raw": "raw text (FACTS sentences)", "raw-all": "raw text (all sentences)",
    "ekg": "EKG events", "ekg-noquote": "EKG events, no quoted sentences",
}
KS = (1, 3, 5)
N_RESAMPLES = 10_000


# ----------------------------------------------------------------------------- statistics


def _resample_counts(n: int, n_resamples: int, seed: int = 0) -> np.ndarray:
    """``(n_resamples, n)``: how often each complaint is drawn in each bootstrap resample."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_resamples, n))
    counts = np.zeros((n_resamples, n))
    np.add.at(counts, (np.arange(n_resamples)[:, None], idx), 1.0)
    return counts


def _percentile(values: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    lo, hi = np.nanpercentile(values, [50 * (1 - level), 50 * (1 + level)])
    return float(lo), float(hi)


def _fmt(x: float, lo: float | None = None, hi: float | None = None, signed: bool = False) -> str:
    if x is None or not np.isfinite(x):
        return "–"
    s = f"{x:+.3f}" if signed else f"{x:.3f}"
    if lo is None:
        return s
    return f"{s} [{lo:+.3f}, {hi:+.3f}]" if signed else f"{s} [{lo:.3f}, {hi:.3f}]"


def _wtl(a: np.ndarray, b: np.ndarray) -> str:
    d = np.asarray(a) - np.asarray(b)
    return f"{int((d > 1e-12).sum())}/{int((np.abs(d) <= 1e-12).sum())}/{int((d < -1e-12).sum())}"


# ----------------------------------------------------------------------------- claims


def _confusion(pred: pd.DataFrame, rep: str, doc_ids: list[str], labels: list[str]) -> np.ndarray:
    """``(seeds, docs, labels, 3)`` true positives, false positives, false negatives of ``rep``."""
    sub = pred[pred["representation"] == rep]
    seeds = sorted(sub["seed"].unique())
    out = np.zeros((len(seeds), len(doc_ids), len(labels), 3))
    for si, seed in enumerate(seeds):
        s = sub[sub["seed"] == seed].pivot(index="doc_id", columns="label", values=["gold", "prob"])
        gold = s["gold"].reindex(index=doc_ids, columns=labels).to_numpy(dtype=int)
        hit = (s["prob"].reindex(index=doc_ids, columns=labels).to_numpy(dtype=float) >= 0.5).astype(int)
        out[si, :, :, 0] = gold & hit
        out[si, :, :, 1] = (1 - gold) & hit
        out[si, :, :, 2] = gold & (1 - hit)
    return out


def _f1s(conf: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Micro- and Macro-F1 (mean over seeds) for each row of complaint ``weights`` ``(R, docs)``."""
    tot = np.einsum("rd,sdlc->rslc", weights, conf)  # (R, seeds, labels, 3)
    tp, fp, fn = tot[..., 0], tot[..., 1], tot[..., 2]
    den_micro = 2 * tp.sum(-1) + fp.sum(-1) + fn.sum(-1)
    micro = np.where(den_micro > 0, 2 * tp.sum(-1) / np.maximum(den_micro, 1e-12), 0.0)
    den = 2 * tp + fp + fn
    macro = np.where(den > 0, 2 * tp / np.maximum(den, 1e-12), 0.0).mean(-1)  # zero_division=0, as run_claims
    return micro.mean(-1), macro.mean(-1)


def _complaint_f1(conf: np.ndarray) -> np.ndarray:
    """Per-complaint F1 of the predicted label set (mean over seeds), ``(docs,)``."""
    tp, fp, fn = conf[..., 0].sum(-1), conf[..., 1].sum(-1), conf[..., 2].sum(-1)
    den = 2 * tp + fp + fn
    return np.where(den > 0, 2 * tp / np.maximum(den, 1e-12), 0.0).mean(0)


def claims_results(
    graphs: str | Path, *, docs: Sequence[str] | None = None, seeds: Sequence[int] = (0, 1, 2), epochs: int = 8,
    cv: str | int = "loo", n_resamples: int = N_RESAMPLES, encoder=None,
) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Per-representation scores and paired differences to raw text, for gold graphs and ``graphs``."""
    from argus.experiments.claims import SentenceEncoder, load_documents, load_label_space, run_claims
    from argus.experiments.stats import paired_bootstrap_ci

    labels = load_label_space()
    enc = encoder if encoder is not None else SentenceEncoder("embedded")
    rows, diffs, meta = [], [], {}
    for name, source in (("gold", "gold"), ("predicted", str(graphs))):
        documents = load_documents(source)
        if docs is not None:
            documents = [d for d in documents if d.doc_id in set(docs)]
        df = run_claims(graphs=source, seeds=list(seeds), epochs=epochs, cv=cv, text_encoder=enc,
                        documents=documents, labels=labels)
        pred = df.attrs["predictions"]
        doc_ids = sorted(pred["doc_id"].unique())
        counts = _resample_counts(len(doc_ids), n_resamples)
        meta[name] = {"n": len(doc_ids), "skipped": df.attrs["skipped"], "seconds": df.attrs["seconds"]}
        conf = {rep: _confusion(pred, rep, doc_ids, labels) for rep in df["representation"]}
        point, boot, doc_f1 = {}, {}, {}
        for rep, c in conf.items():
            point[rep] = [float(v[0]) for v in _f1s(c, np.ones((1, len(doc_ids))))]
            boot[rep] = _f1s(c, counts)
            doc_f1[rep] = _complaint_f1(c)
            ref = df.set_index("representation").loc[rep]
            if not (np.isclose(point[rep][0], ref["micro_f1_mean"]) and np.isclose(point[rep][1], ref["macro_f1_mean"])):
                raise AssertionError(f"{rep}: per-complaint predictions do not reproduce run_claims' scores")
            f_boot = counts @ doc_f1[rep] / counts.sum(1)
            rows.append({
                "graphs": name, "representation": rep, "n": len(doc_ids),
                "micro_f1": point[rep][0], "micro_lo": _percentile(boot[rep][0])[0], "micro_hi": _percentile(boot[rep][0])[1],
                "macro_f1": point[rep][1], "macro_lo": _percentile(boot[rep][1])[0], "macro_hi": _percentile(boot[rep][1])[1],
                "doc_f1": float(doc_f1[rep].mean()), "doc_lo": _percentile(f_boot)[0], "doc_hi": _percentile(f_boot)[1],
            })
        for rep in ("EKG-GNN", "linearized-EKG"):
            if rep not in conf or "raw-text" not in conf:
                continue
            dm = boot[rep][0] - boot["raw-text"][0]
            dM = boot[rep][1] - boot["raw-text"][1]
            d, lo, hi = paired_bootstrap_ci(doc_f1[rep], doc_f1["raw-text"], n_resamples=n_resamples)
            diffs.append({
                "graphs": name, "comparison": f"{REP_LABELS[rep]} − raw text", "n": len(doc_ids),
                "d_micro": point[rep][0] - point["raw-text"][0], "d_micro_lo": _percentile(dm)[0], "d_micro_hi": _percentile(dm)[1],
                "d_macro": point[rep][1] - point["raw-text"][1], "d_macro_lo": _percentile(dM)[0], "d_macro_hi": _percentile(dM)[1],
                "d_doc": d, "d_doc_lo": lo, "d_doc_hi": hi, "wtl": _wtl(doc_f1[rep], doc_f1["raw-text"]),
            })
    return pd.DataFrame(rows), pd.DataFrame(diffs), meta


def claims_markdown(scores: pd.DataFrame, diffs: pd.DataFrame, meta: dict, graphs: str, seeds: Sequence[int],
                    cv: str | int = "loo") -> str:
    shown = pd.DataFrame({
        "Graphs": scores["graphs"], "Representation": [REP_LABELS[r] for r in scores["representation"]], "n": scores["n"],
        "Micro-F1 [95% CI]": [_fmt(r.micro_f1, r.micro_lo, r.micro_hi) for r in scores.itertuples()],
        "Macro-F1 [95% CI]": [_fmt(r.macro_f1, r.macro_lo, r.macro_hi) for r in scores.itertuples()],
        "Complaint F1 [95% CI]": [_fmt(r.doc_f1, r.doc_lo, r.doc_hi) for r in scores.itertuples()],
    })
    paired = pd.DataFrame({
        "Graphs": diffs["graphs"], "Difference": diffs["comparison"], "n": diffs["n"],
        "Δ Micro-F1 [95% CI]": [_fmt(r.d_micro, r.d_micro_lo, r.d_micro_hi, True) for r in diffs.itertuples()],
        "Δ Macro-F1 [95% CI]": [_fmt(r.d_macro, r.d_macro_lo, r.d_macro_hi, True) for r in diffs.itertuples()],
        "Δ Complaint F1 [95% CI]": [_fmt(r.d_doc, r.d_doc_lo, r.d_doc_hi, True) for r in diffs.itertuples()],
        "W/T/L": diffs["wtl"],
    })
    skipped = {k: v["skipped"] for k, v in meta.items() if v["skipped"]}
    lines = [
        "## Claim types: raw text vs linearized EKG vs EKG-GNN "
        + ("(leave-one-complaint-out)" if cv == "loo" else f"({cv} folds over the complaints)"),
        "",
        f"Predicted graphs: {graphs}. MiniLM frozen, {len(seeds)} seed(s) {list(seeds)}, scores are means over seeds. "
        "Micro-/Macro-F1 (23 claim types, threshold 0.5) of the pooled out-of-fold predictions; Complaint F1: mean "
        "over complaints of the F1 of each complaint's predicted label set. 95 % percentile bootstrap over complaints "
        "(paper, 22 held-out docs of 130: raw 0.590, linearized 0.583, EKG-GNN 0.642 Micro-F1).",
        "",
        shown.to_markdown(index=False, disable_numparse=True),
        "",
        "Paired differences to raw text on the same complaints and folds (Micro-/Macro-F1: the same complaint "
        "resamples for both; Complaint F1: `paired_bootstrap_ci` over complaints; W/T/L: complaints where the "
        "representation's Complaint F1 is higher / equal / lower).",
        "",
        paired.to_markdown(index=False, disable_numparse=True),
    ]
    if skipped:
        lines += ["", f"Complaints without a graph (left out of that run): {skipped}"]
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- QA retrieval


def qa_results(
    graphs: str | Path, *, docs: Sequence[str] | None = None, encoder="embedded", ks: Sequence[int] = KS,
    n_resamples: int = N_RESAMPLES,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Per-question recall rows, per-retriever means and paired differences to raw text."""
    from argus.experiments.qa import load_qa_documents, retrieval_recall
    from argus.experiments.stats import paired_bootstrap_ci

    parts = []
    for name, source, retrievers in (
        ("gold", "gold", ("raw", "raw-all", "ekg", "ekg-noquote")),
        ("predicted", str(graphs), ("ekg", "ekg-noquote")),
    ):
        documents = [d for split in ("train", "dev") for d in load_qa_documents(split, source)]
        if docs is not None:
            documents = [d for d in documents if d.doc_id in set(docs)]
        rows = retrieval_recall(documents, encoder, ks, retrievers=retrievers)
        rows["retriever"] = [r if r.startswith("raw") else f"{r}:{name}" for r in rows["retriever"]]
        if name == "predicted":
            rows["has_graph"] = rows["doc_id"].map({d.doc_id: d.graph is not None for d in documents})
        parts.append(rows)
    rows = pd.concat(parts, ignore_index=True)
    rows = rows[rows["n_evidence"] > 0]
    doc_ids = sorted(rows["doc_id"].unique())
    counts = _resample_counts(len(doc_ids), n_resamples)
    order = ["raw", "raw-all", "ekg:gold", "ekg-noquote:gold", "ekg:predicted", "ekg-noquote:predicted"]
    per_doc = {}
    summary = []
    for ret in order:
        sub = rows[rows["retriever"] == ret]
        if sub.empty:
            continue
        g = sub.groupby("doc_id")
        per_doc[ret] = g.mean(numeric_only=True).reindex(doc_ids)
        sums, n = g.sum(numeric_only=True).reindex(doc_ids), g.size().reindex(doc_ids).to_numpy(dtype=float)
        row = {"retriever": ret, "n_questions": len(sub), "n_docs": sub["doc_id"].nunique(),
               "units_per_doc": float(g["n_units"].first().mean())}
        for k in ks:
            for col in (f"r@{k}", f"s@{k}"):
                boot = counts @ sums[col].to_numpy() / (counts @ n)
                row[col], (row[f"{col}_lo"], row[f"{col}_hi"]) = float(sub[col].mean()), _percentile(boot)
            row[f"sent@{k}"] = float(sub[f"sent@{k}"].mean())
        summary.append(row)
    diffs = []
    for a in ("ekg:predicted", "ekg:gold", "ekg-noquote:predicted"):
        if a not in per_doc:
            continue
        for budget, prefix in (("k units", "r"), ("k sentences", "s")):
            row = {"comparison": f"{a} − raw", "budget": budget, "n_docs": len(doc_ids)}
            for k in ks:
                x, y = per_doc[a][f"{prefix}@{k}"].to_numpy(), per_doc["raw"][f"{prefix}@{k}"].to_numpy()
                d, lo, hi = paired_bootstrap_ci(x, y, n_resamples=n_resamples)
                row.update({f"d@{k}": d, f"d@{k}_lo": lo, f"d@{k}_hi": hi, f"wtl@{k}": _wtl(x, y)})
            diffs.append(row)
    return rows, pd.DataFrame(summary), pd.DataFrame(diffs)


def _ret_label(ret: str) -> str:
    base, _, graphs = ret.partition(":")
    return RETRIEVER_LABELS[base] + (f", {graphs} graphs" if graphs else "")


def qa_markdown(rows: pd.DataFrame, summary: pd.DataFrame, diffs: pd.DataFrame, graphs: str, ks: Sequence[int] = KS) -> str:
    table = pd.DataFrame({"Retriever": [_ret_label(r) for r in summary["retriever"]],
                          "questions": summary["n_questions"], "units/doc": [f"{v:.0f}" for v in summary["units_per_doc"]]})
    for k in ks:
        table[f"R@{k} [95% CI]"] = [_fmt(r[f"r@{k}"], r[f"r@{k}_lo"], r[f"r@{k}_hi"]) for _, r in summary.iterrows()]
    table["sentences @" + "/".join(map(str, ks))] = [
        "/".join(f"{r[f'sent@{k}']:.1f}" for k in ks) for _, r in summary.iterrows()]
    equal = pd.DataFrame({"Retriever": table["Retriever"]})
    for k in ks:
        equal[f"S@{k} [95% CI]"] = [_fmt(r[f"s@{k}"], r[f"s@{k}_lo"], r[f"s@{k}_hi"]) for _, r in summary.iterrows()]
    paired = pd.DataFrame({"Difference": [_ret_label(c.split(" − ")[0]) + " − raw text" for c in diffs["comparison"]],
                           "budget": diffs["budget"]})
    for k in ks:
        paired[f"Δ@{k} [95% CI]"] = [_fmt(r[f"d@{k}"], r[f"d@{k}_lo"], r[f"d@{k}_hi"], True) for _, r in diffs.iterrows()]
        paired[f"W/T/L@{k}"] = diffs[f"wtl@{k}"]
    missing = sorted(rows.loc[rows.get("has_graph", pd.Series(True, index=rows.index)) == False, "doc_id"].unique())  # noqa: E712
    lines = [
        "## QA retrieval: recall of the gold evidence sentences (MiniLM, cosine, no LM)",
        "",
        f"Predicted graphs: {graphs}. {rows['doc_id'].nunique()} complaints, "
        f"{int(summary['n_questions'].iloc[0]) if len(summary) else 0} FAQ questions with gold evidence. R@k: share "
        "of a question's gold evidence sentences among the sentences cited by the top k units (a sentence for raw "
        "text, an event for the EKG, whose text is its line, its temporal/causal neighbours and, unless 'no quoted "
        "sentences', the sentences it cites). Mean over questions, 95 % percentile bootstrap over complaints.",
        "",
        table.to_markdown(index=False, disable_numparse=True),
        "",
        "At an equal budget of sentences: S@k counts the first k distinct sentences in rank order "
        "(for raw text S@k = R@k).",
        "",
        equal.to_markdown(index=False, disable_numparse=True),
        "",
        "Paired differences to raw text (FACTS sentences) of the per-complaint mean recall "
        "(`paired_bootstrap_ci` over complaints; W/T/L: complaints where the EKG is higher / equal / lower).",
        "",
        paired.to_markdown(index=False, disable_numparse=True),
    ]
    if missing:
        lines += ["", f"Complaints without a predicted graph (EKG recall 0): {', '.join(missing)}"]
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- the bench


def downstream_tables(
    graphs: str | Path, *, docs: Sequence[str] | None = None, seeds: Sequence[int] = (0, 1, 2), epochs: int = 8,
    n_resamples: int = N_RESAMPLES, encoder=None, cv: str | int = "loo",
) -> dict:
    """Both measurements on gold graphs and on ``graphs`` (a folder of ``*.ekg.json``, or "gold");
    ``docs`` restricts them to some complaints. Returns the DataFrames and ``markdown``."""
    t0 = time.perf_counter()
    scores, cdiffs, meta = claims_results(graphs, docs=docs, seeds=seeds, epochs=epochs, n_resamples=n_resamples,
                                          encoder=encoder, cv=cv)
    t1 = time.perf_counter()
    rows, summary, qdiffs = qa_results(graphs, docs=docs, n_resamples=n_resamples)
    t2 = time.perf_counter()
    md = claims_markdown(scores, cdiffs, meta, str(graphs), seeds, cv) + "\n" + qa_markdown(rows, summary, qdiffs, str(graphs))
    md += f"\nSeconds: claims {t1 - t0:.0f}, QA retrieval {t2 - t1:.0f}, total {t2 - t0:.0f}.\n"
    return {"claims": scores, "claims_paired": cdiffs, "qa_rows": rows, "qa": summary, "qa_paired": qdiffs,
            "markdown": md, "seconds": t2 - t0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", required=True, help="folder of predicted <doc_id>.ekg.json (or 'gold')")
    ap.add_argument("--out", default=None, help="also write the Markdown tables to this file")
    ap.add_argument("--seeds", default="0,1,2", help="claims seeds, comma list")
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--resamples", type=int, default=N_RESAMPLES)
    ap.add_argument("--docs", default=None, help="comma list of complaint ids (default: every annotated one)")
    ap.add_argument("--cv", default="loo", help="claims: 'loo' (leave one complaint out) or k folds over the complaints")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (1: the small models train "
                    "fastest on one thread of a shared machine)")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    if args.graphs != "gold" and not Path(args.graphs).is_dir():
        ap.error(f"--graphs {args.graphs}: no such folder")
    out = downstream_tables(
        args.graphs, docs=[d for d in args.docs.split(",") if d] if args.docs else None,
        seeds=[int(s) for s in args.seeds.split(",") if s.strip()], epochs=args.epochs, n_resamples=args.resamples,
        cv=int(args.cv) if args.cv.isdigit() else args.cv,
    )
    print(out["markdown"])
    if args.out:
        Path(args.out).write_text(out["markdown"], encoding="utf-8")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
