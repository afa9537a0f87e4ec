"""Training and honest measurement of the fact gate: grouped cross-validation over complaints,
calibration, the τ curve, and the fallback report that decides whether an LLM may overrule the
classifier.

Everything is measured on the pipeline's own sentences (``argus.text.preprocess``), each labelled by
the gold sentence it overlaps most, so the figures are those of the gate a user runs.

- ``labeled_documents``: the annotated complaints as feature matrices (sentence, neighbours,
  section, cues: ``argus.gate.facts.fact_features``), computed once.
- ``train_context_head``: C chosen by grouped cross-validation on the training complaints, Platt
  calibration fitted on their cross-validated decision values, then the head fitted on all of them.
- ``cross_validate``: leave-one-complaint-out; every choice (C, calibration) is made inside the
  fold. Per-complaint table, pooled figures, mean Fact F1 with a 95 % t-interval over complaints,
  expected calibration error, and the out-of-fold probabilities.
- ``tau_curve`` and ``fallback_report``: what sending the uncertain narrative sentences to a
  fallback would do, for an oracle or for a real model, and the τ (or none) at which it helps.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from argus.errors import ConfigError
from argus.gate.facts import (
    CONTEXT_FEATURES,
    ContextHeadFactClassifier,
    fact_features,
    fact_metrics,
    section_columns,
    without_section,
)
from argus.paths import complaints_dir

#: Confidence thresholds the τ curve and the fallback report look at.
TAUS = (0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)
C_GRID = (0.5, 2.0, 8.0, 32.0)


@dataclass
class LabeledDocument:
    """One annotated complaint: features of its labelled sentences, in reading order."""

    doc_id: str
    ids: list[str]
    texts: list[str]
    labels: np.ndarray
    narrative: np.ndarray
    features: np.ndarray


def gold_label_map(doc, gold: dict) -> dict[str, int]:
    """Pipeline sentence id → label of the gold sentence it overlaps most (unlabelled if none)."""
    gs = [s for sec in gold["sections"] for p in sec["paragraphs"] for s in p]
    labels = {}
    for s in doc.sentences:
        best, best_ov = None, 0
        for g in gs:
            ov = min(s.span[1], g["span"][1]) - max(s.span[0], g["span"][0])
            if ov > best_ov:
                best, best_ov = g, ov
        if best is not None:
            labels[s.id] = int(bool(best["fact"]))
    return labels


def labeled_documents(splits=("train", "dev"), encoder: str = "embedded", segmenter: str = "legal") -> list[LabeledDocument]:
    from argus.ingest.files import read_text_document
    from argus.text.preprocess import preprocess

    docs = []
    for split in splits:
        root = complaints_dir(split)
        if not root.exists():
            raise ConfigError(f"no annotated complaints at {root}; set ARGUS_DATA_ROOT")
        for d in sorted(root.iterdir()):
            if not (d / "gold.json").exists() or not (d / "complaint.txt").exists():
                continue
            gold = json.loads((d / "gold.json").read_text(encoding="utf-8"))
            doc = preprocess(read_text_document(d / "complaint.txt"), segmenter=segmenter)
            labels = gold_label_map(doc, gold)
            feats = fact_features([s.text for s in doc.sentences], [s.section for s in doc.sentences], encoder)
            keep = [i for i, s in enumerate(doc.sentences) if s.id in labels]
            narrative = set(doc.narrative_ids)
            docs.append(LabeledDocument(
                doc_id=d.name,
                ids=[doc.sentences[i].id for i in keep],
                texts=[doc.sentences[i].text for i in keep],
                labels=np.array([labels[doc.sentences[i].id] for i in keep]),
                narrative=np.array([doc.sentences[i].id in narrative for i in keep]),
                features=feats[keep],
            ))
    if len(docs) < 3:
        raise ConfigError(f"cross-validation needs at least 3 annotated complaints, found {len(docs)}")
    return docs


def _stack(docs: list[LabeledDocument]):
    x = np.vstack([d.features for d in docs])
    y = np.concatenate([d.labels for d in docs])
    groups = np.concatenate([[i] * len(d.labels) for i, d in enumerate(docs)])
    return x, y, groups


def _calibrated_head(x: np.ndarray, y: np.ndarray, groups: np.ndarray, *, encoder: str, c_grid, seed: int,
                     folds: int) -> ContextHeadFactClassifier:
    """A logistic head on ``x``: C by grouped cross-validation, Platt calibration on its out-of-fold
    decision values, then fitted on all rows."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import f1_score
    from sklearn.model_selection import GroupKFold, cross_val_predict

    cv = GroupKFold(n_splits=folds)

    def head(c):
        return LogisticRegression(C=c, max_iter=3000, class_weight="balanced", random_state=seed)

    best = None
    for c in c_grid:
        z = cross_val_predict(head(c), x, y, cv=cv, groups=groups, method="decision_function")
        f1 = f1_score(y, z > 0)
        if best is None or f1 > best[1]:
            best = (c, f1, z)
    c, cv_f1, z = best
    platt = LogisticRegression(C=1e4, max_iter=1000).fit(z.reshape(-1, 1), y)
    final = head(c).fit(x, y)
    return ContextHeadFactClassifier(
        encoder=encoder, weights=final.coef_[0].astype("float32"), bias=float(final.intercept_[0]),
        calibration=(float(platt.coef_[0][0]), float(platt.intercept_[0])),
        meta={"C": c, "inner_cv_fact_f1": round(float(cv_f1), 4), "n_examples": int(len(y)), "n_fact": int(y.sum())})


#: How a head reads sentences under no recognized heading (section ``unknown``): ``companion``, a
#: second head on the features without the section (the default, chosen by ``bench/layouts.py --cv``);
#: ``dropout``, one head trained on every complaint twice, once with no section known; ``none``.
UNKNOWN_SECTION_STRATEGIES = ("companion", "dropout", "none")


def train_context_head(docs: list[LabeledDocument], *, encoder: str = "embedded", c_grid=C_GRID, seed: int = 0,
                       inner_folds: int = 4, unknown: str = "companion") -> ContextHeadFactClassifier:
    """Fit the calibrated context head on ``docs`` (C and calibration from grouped CV inside them),
    with what reads the sentences of a filing whose headings were not recognized (``unknown``, one
    of ``UNKNOWN_SECTION_STRATEGIES``)."""
    if unknown not in UNKNOWN_SECTION_STRATEGIES:
        raise ConfigError(f"unknown-section strategy must be one of {UNKNOWN_SECTION_STRATEGIES}, not {unknown!r}")
    x, y, groups = _stack(docs)
    if len(set(y.tolist())) < 2:
        raise ConfigError("training needs both Fact and Non-Fact examples")
    fit = dict(encoder=encoder, c_grid=c_grid, seed=seed, folds=min(inner_folds, len(docs)))
    if unknown == "dropout":  # every complaint again with no section known (the one-hot all zero)
        bare = x.copy()
        bare[:, section_columns(x)] = 0
        head = _calibrated_head(np.vstack([x, bare]), np.concatenate([y, y]), np.concatenate([groups, groups]), **fit)
    else:
        head = _calibrated_head(x, y, groups, **fit)
    head.meta = {"features": CONTEXT_FEATURES, **head.meta, "n_documents": len(docs), "unknown_sections": unknown}
    if unknown == "companion":
        head.section_free = _calibrated_head(without_section(x), y, groups, **fit)
    return head


def calibration_bins(p: np.ndarray, y: np.ndarray, bins: int = 10) -> list[tuple[float, float, int]]:
    """(mean probability, observed frequency, count) of every non-empty equal-width bin, binned as
    scikit-learn's ``calibration_curve(strategy="uniform")`` bins (which gives the first two)."""
    from sklearn.calibration import calibration_curve

    p, y = np.asarray(p, float), np.asarray(y, float)
    freq, conf = calibration_curve(y, p, n_bins=bins, strategy="uniform")
    counts = np.bincount(np.searchsorted(np.linspace(0.0, 1.0, bins + 1)[1:-1], p), minlength=bins)
    return [(float(c), float(f), int(k)) for c, f, k in zip(conf, freq, counts[counts > 0])]


def expected_calibration_error(p: np.ndarray, y: np.ndarray, bins: int = 10) -> float:
    """ECE over ``bins`` equal-width probability bins (weighted mean |confidence − frequency|)."""
    n = len(p)
    return float(sum(k / n * abs(conf - freq) for conf, freq, k in calibration_bins(p, y, bins)))


@dataclass
class CrossValidation:
    """Leave-one-complaint-out results; ``probs`` are out-of-fold, calibrated, per document."""

    per_document: "object"  # pandas.DataFrame
    pooled: dict
    mean_f1: float
    ci95: tuple[float, float]
    ece: float
    ece_uncalibrated: float
    probs: dict[str, np.ndarray] = field(default_factory=dict)
    seconds: float = 0.0


def cross_validate(docs: list[LabeledDocument], *, encoder: str = "embedded", seed: int = 0,
                   folds: int | None = None) -> CrossValidation:
    """Out-of-fold figures of the context head over complaints: leave one complaint out (``folds`` None), or
    ``folds`` folds that deal every writing style over them (``argus.paths.style_folds``: one head per
    fold, so that a large corpus costs ``folds`` trainings, not one per complaint)."""
    import pandas as pd
    from scipy import stats

    from argus.paths import style_folds

    t0 = time.perf_counter()
    rows, probs, raw = [], {}, {}
    if folds is None or folds >= len(docs):
        held_out = {i: [j for j in range(len(docs)) if j != i] for i in range(len(docs))}
    else:
        held_out = {i: tr for tr, te in style_folds(len(docs), folds, [d.doc_id for d in docs]) for i in te}
    heads: dict[tuple[int, ...], ContextHeadFactClassifier] = {}
    for i, held in enumerate(docs):
        key = tuple(held_out[i])
        if key not in heads:
            heads[key] = train_context_head([docs[j] for j in key], encoder=encoder, seed=seed)
        head = heads[key]
        probs[held.doc_id] = head.predict_features(held.features)
        raw[held.doc_id] = 1.0 / (1.0 + np.exp(-head.decision(held.features)))
        m = fact_metrics(held.labels.tolist(), (probs[held.doc_id] >= 0.5).astype(int).tolist())
        nar = held.narrative
        mn = fact_metrics(held.labels[nar].tolist(), (probs[held.doc_id][nar] >= 0.5).astype(int).tolist())
        free = head.section_free.predict_features(without_section(held.features))  # the text with no section known
        mf = fact_metrics(held.labels.tolist(), (free >= 0.5).astype(int).tolist())
        rows.append({"complaint": held.doc_id, "sentences": m["n"], "fact_precision": m["precision"],
                     "fact_recall": m["recall"], "fact_f1": m["f1"], "narrative_fact_f1": mn["f1"],
                     "no_sections_fact_f1": mf["f1"], "C": head.meta["C"]})
    table = pd.DataFrame(rows)
    y = np.concatenate([d.labels for d in docs])
    p = np.concatenate([probs[d.doc_id] for d in docs])
    r = np.concatenate([raw[d.doc_id] for d in docs])
    pooled = fact_metrics(y.tolist(), (p >= 0.5).astype(int).tolist())
    f1s = table["fact_f1"].to_numpy()
    lo, hi = stats.t.interval(0.95, len(f1s) - 1, loc=f1s.mean(), scale=stats.sem(f1s))
    return CrossValidation(
        per_document=table, pooled=pooled, mean_f1=float(f1s.mean()),
        ci95=(float(lo), float(hi)),
        ece=expected_calibration_error(p, y), ece_uncalibrated=expected_calibration_error(r, y),
        probs=probs, seconds=time.perf_counter() - t0,
    )


def _narrative(docs, probs):
    y = np.concatenate([d.labels[d.narrative] for d in docs])
    p = np.concatenate([probs[d.doc_id][d.narrative] for d in docs])
    ids = [(d.doc_id, sid) for d in docs for sid, n in zip(d.ids, d.narrative) if n]
    texts = [t for d in docs for t, n in zip(d.texts, d.narrative) if n]
    return y, p, ids, texts


def tau_curve(docs: list[LabeledDocument], probs: dict[str, np.ndarray], llm_labels: dict | None = None):
    """Per τ, over the FACTS-narrative sentences: the share sent to the fallback and the Fact F1 of
    the classifier alone, with an oracle fallback, and (when ``llm_labels`` holds its answers for
    the sent sentences) with a real model."""
    import pandas as pd

    y, p, ids, _ = _narrative(docs, probs)
    clf = (p >= 0.5).astype(int)
    conf = np.maximum(p, 1 - p)
    rows = []
    for tau in TAUS:
        sent = conf < tau
        oracle = np.where(sent, y, clf)
        row = {"tau": tau, "share_sent": float(sent.mean()), "sent": int(sent.sum()),
               "f1_classifier": fact_metrics(y.tolist(), clf.tolist())["f1"],
               "f1_oracle_fallback": fact_metrics(y.tolist(), oracle.tolist())["f1"]}
        if llm_labels is not None:
            answered = np.array([k in llm_labels for k in ids])
            llm = np.array([llm_labels.get(k, c) for k, c in zip(ids, clf)])
            hybrid = np.where(sent & answered, llm, clf)
            row["f1_model_fallback"] = fact_metrics(y.tolist(), hybrid.tolist())["f1"]
            row["model_accuracy_on_sent"] = float((llm[sent] == y[sent]).mean()) if sent.any() else float("nan")
            row["classifier_accuracy_on_sent"] = float((clf[sent] == y[sent]).mean()) if sent.any() else float("nan")
        rows.append(row)
    return pd.DataFrame(rows)


FallbackFn = Callable[[list[tuple[str, str]]], "set[str] | None"]


def fallback_report(docs: list[LabeledDocument], probs: dict[str, np.ndarray], fallback: FallbackFn, *,
                    batch_size: int = 12, max_tau: float = max(TAUS)) -> dict:
    """Ask ``fallback`` about every narrative sentence below ``max_tau`` (out-of-fold confidence),
    then pick the τ at which it raises narrative Fact F1 the most; ``tau`` is None when it never
    beats the classifier alone (then the gate should not call it)."""
    y, p, ids, texts = _narrative(docs, probs)
    conf = np.maximum(p, 1 - p)
    asked = [i for i in range(len(ids)) if conf[i] < max_tau]
    answers: dict = {}
    failed = 0
    for start in range(0, len(asked), batch_size):
        batch = asked[start : start + batch_size]
        local = [(f"S{k + 1}", texts[i]) for k, i in enumerate(batch)]  # ids the program can cite
        chosen = fallback(local)
        if chosen is None:
            failed += 1
            continue
        for k, i in enumerate(batch):
            answers[ids[i]] = int(f"S{k + 1}" in chosen)
    curve = tau_curve(docs, probs, answers)
    base = float(curve["f1_classifier"].iloc[0])
    best = curve.loc[curve["f1_model_fallback"].idxmax()]
    helps = float(best["f1_model_fallback"]) > base
    return {
        "tau": float(best["tau"]) if helps else None,
        "f1_classifier": base,
        "f1_best_fallback": float(best["f1_model_fallback"]),
        "asked": len(asked), "failed_batches": failed,
        "curve": curve,
    }


def reliability_plot(docs: list[LabeledDocument], probs: dict[str, np.ndarray], path, *, bins: int = 10,
                     ece: float | None = None):
    """Write a reliability diagram (PNG): predicted probability against observed Fact frequency."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    y = np.concatenate([d.labels for d in docs])
    p = np.concatenate([probs[d.doc_id] for d in docs])
    xs, ys, ns = zip(*calibration_bins(p, y, bins))
    fig, ax = plt.subplots(figsize=(4.5, 4.5), dpi=120)
    ax.plot([0, 1], [0, 1], color="0.6", lw=1, ls="--", label="perfect calibration")
    ax.plot(xs, ys, marker="o", label="fact gate (out of fold)")
    for x_, y_, n in zip(xs, ys, ns):
        ax.annotate(str(n), (x_, y_), textcoords="offset points", xytext=(4, -10), fontsize=7)
    ax.set_xlabel("predicted probability of Fact")
    ax.set_ylabel("observed share of Facts")
    ax.set_title(f"Reliability, {len(docs)} complaints" + (f" (ECE {ece:.3f})" if ece is not None else ""))
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
