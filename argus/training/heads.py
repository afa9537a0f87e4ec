"""Training the sentence design's encoder heads (``argus.designs.sentence.heads``) and the learned parts
of the heads file, and measuring them by complaint.

Training examples are the pipeline's own sentences of each complaint's narrative, labelled through
the gold sentences they overlap (``metrics.gold.sentence_alignment``): the type of the gold event
whose trigger comes first in the sentence (``none`` when the sentence is no event's evidence) and,
for the trigger head, the first word of every gold trigger stated in the sentence. The regularisation
of each head is chosen by cross-validation grouped by complaint; ``cross_validate`` measures the
heads leave-complaints-out, every choice made inside the fold.

Beside the two heads, the heads file holds the design's other learned parts (``PARTS``), each trained
on the same complaints by its module in this package (``fit_part``): ``entities``, ``types``,
``occurrences``, ``edges``. ``argus train-events`` writes the file.
"""

from __future__ import annotations

import datetime as _dt
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import numpy as np

from argus.designs.sentence.heads import NONE, EventHeads
from argus.designs.sentence.triggers import word_features
from argus.designs.sentence.types import type_features
from argus.errors import ConfigError
from argus.graph.schema import EVENT_TYPES
from argus.paths import complaints_dir, style_folds as _folds, style_of, style_sample  # noqa: F401  (benches read these here)
from argus.text.words import word_spans

C_TYPE = (2.0, 8.0, 32.0)
C_TRIGGER = (0.03, 0.1, 0.3)


@dataclass
class LabeledSentences:
    """One annotated complaint's narrative sentences with their event labels, in reading order."""

    doc_id: str
    texts: list[str]
    types: list[str]
    triggers: list[set[str]]  # first words of the gold triggers stated in the sentence (lowercased)
    fact: list[bool]
    folder: Path | None = None  # the annotated complaint's folder (complaint.txt, gold.json)


def labeled_complaints(folders: Iterable[Path]) -> list[LabeledSentences]:
    """The pipeline's narrative sentences of each annotated complaint, labelled from its gold graph."""
    from argus.ingest.files import read_text_document
    from argus.text.preprocess import preprocess
    from metrics.gold import load_gold, sentence_alignment

    out = []
    for folder in folders:
        gold = load_gold(folder)
        doc = preprocess(read_text_document(Path(folder) / "complaint.txt"))
        align = sentence_alignment(doc.sentences, gold.sentences)
        facts = {s.id: s.fact for s in gold.sentences}
        by_sentence: dict[str, list] = {}
        for e in gold.graph.events:
            for sid in e.evidence:
                by_sentence.setdefault(sid, []).append(e)
        item = LabeledSentences(gold.doc_id, [], [], [], [], Path(folder))
        for s in doc.narrative:
            gids = align.get(s.id, [])
            events = [e for g in gids for e in by_sentence.get(g, [])]
            low = s.text.lower()
            events.sort(key=lambda e: low.find(e.trigger.lower()) if e.trigger.lower() in low else 10**6)
            heads = {ws[0][0].lower() for e in events for ws in [word_spans(e.trigger)] if ws}
            item.texts.append(s.text)
            item.types.append(events[0].type if events else NONE)
            item.triggers.append(heads)
            item.fact.append(any(facts.get(g, False) for g in gids))
        out.append(item)
    return out


def annotated_folders(splits: Iterable[str] = ("train",)) -> list[Path]:
    folders = []
    for split in splits:
        root = complaints_dir(split)
        if not root.exists():
            raise ConfigError(f"no annotated complaints at {root}; set ARGUS_DATA_ROOT")
        folders += sorted(d for d in root.iterdir() if (d / "gold.json").exists())
    return folders


@dataclass
class _Features:
    """Feature matrices of labelled complaints, computed once."""

    docs: list[LabeledSentences]
    type_x: list[np.ndarray]
    words: list[list[tuple[list[tuple[str, int, int]], np.ndarray]]]

    @classmethod
    def of(cls, docs: list[LabeledSentences], encoder: str) -> "_Features":
        return cls(docs, [type_features(d.texts, encoder) for d in docs], [word_features(d.texts, encoder) for d in docs])


def _type_model(c: float):
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=c, max_iter=4000, class_weight="balanced")


def _trigger_model(c: float):
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=c, max_iter=4000, class_weight="balanced")


def _type_xy(f: _Features, idx: list[int]) -> tuple[np.ndarray, np.ndarray]:
    return np.vstack([f.type_x[i] for i in idx]), np.concatenate([np.asarray(f.docs[i].types) for i in idx])


def _trigger_xy(f: _Features, idx: list[int]) -> tuple[np.ndarray, np.ndarray]:
    xs, ys = [], []
    for i in idx:
        for (words, x), heads in zip(f.words[i], f.docs[i].triggers):
            if heads and len(words):
                xs.append(x)
                ys.extend(w.lower() in heads for w, _, _ in words)
    return np.vstack(xs), np.asarray(ys)


def _trigger_hits(model, f: _Features, idx: list[int]) -> tuple[int, int]:
    hits = n = 0
    for i in idx:
        for (words, x), heads in zip(f.words[i], f.docs[i].triggers):
            if heads and len(words):
                p = model.predict_proba(x)[:, 1]
                hits += words[int(p.argmax())][0].lower() in heads
                n += 1
    return hits, n


def _choose(f: _Features, idx: list[int], k: int = 4) -> tuple[float, float]:
    """(C of the type head, C of the trigger head) by grouped cross-validation inside ``idx``."""
    folds = [([idx[i] for i in tr], [idx[i] for i in te]) for tr, te in _folds(len(idx), k, [f.docs[i].doc_id for i in idx])]
    best_t, best_tc = -1.0, C_TYPE[0]
    for c in C_TYPE:
        ok = n = 0
        for tr, te in folds:
            x, y = _type_xy(f, tr)
            m = _type_model(c).fit(x, y)
            xt, yt = _type_xy(f, te)
            ok += int((m.predict(xt) == yt).sum())
            n += len(yt)
        if ok / max(1, n) > best_t:
            best_t, best_tc = ok / max(1, n), c
    best_w, best_wc = -1.0, C_TRIGGER[0]
    for c in C_TRIGGER:
        hits = n = 0
        for tr, te in folds:
            m = _trigger_model(c).fit(*_trigger_xy(f, tr))
            h, k2 = _trigger_hits(m, f, te)
            hits, n = hits + h, n + k2
        if hits / max(1, n) > best_w:
            best_w, best_wc = hits / max(1, n), c
    return best_tc, best_wc


#: the design's learned parts beside the two heads, in training order: (name, module). Each module's
#: ``fit_part(folders, heads)`` returns the part's JSON, trained on the annotated complaints in
#: ``folders`` only; ``heads`` holds the parts trained before it (a part may run the design with them).
#: The design reads each part where it is used (``argus.designs.sentence``: ``entities``, ``types``,
#: ``occurrences``, ``temporal`` and ``causal``).
PARTS: tuple[tuple[str, str], ...] = (("entities", "argus.training.entities"), ("types", "argus.training.types"),
                                      ("occurrences", "argus.training.occurrences"), ("edges", "argus.training.edges"))


#: whether a part trained on the design's own graphs sees graphs made out of fold (``inner_heads``): each
#: training complaint's graph made by heads trained on the other training complaints, as a new complaint's
#: graph is. Off by default: cross-validated by complaint it did worse than graphs made by the heads
#: themselves (relaxed event F1 0.620 against 0.666, temporal F1 0.205 against 0.243, causal 0.062
#: against 0.166; docs/figures.md): heads trained on two thirds of the complaints leave the parts far
#: fewer aligned gold edges to learn from, and the same-occurrence head learned to join too much.
CROSS_FIT: ContextVar[bool] = ContextVar("argus_heads_cross_fit", default=False)


def fit_parts(heads: "EventHeads", folders: list[Path], only: tuple[str, ...] | None = None) -> "EventHeads":
    """``heads`` with every part of ``PARTS`` (or those named in ``only``) trained on ``folders`` (in
    place; returned). Each part learns from the design with the parts before it alone (``parts_before``),
    as when every part is trained in order: a part retrained alone does not learn from graphs that its own
    earlier version (or a later part) already shaped, such as events the old same-occurrence head joined."""
    import dataclasses
    import importlib

    for name, module in PARTS:
        if only is not None and name not in only:
            continue
        before = parts_before(name)
        design = dataclasses.replace(heads, parts={k: v for k, v in heads.parts.items() if k in before})
        part = importlib.import_module(module).fit_part(list(folders), design)
        if part is not None:
            heads.parts[name] = part
    return heads


#: what the heads file records of a part's decisions, measured by a bench (``meta`` key, the part it
#: measured, the bench that measures it again)
MEASURED: tuple[tuple[str, str, str], ...] = (("pair_fallback", "edges", "bench/pair_fallback.py"),
                                              ("fallback", "types", "bench/sentence_fallback.py"),
                                              ("fallback", "occurrences", "bench/sentence_fallback.py"))


def record_measurement(key: str, model: str, record: dict, path: Path | None = None) -> Path:
    """Write a bench's ``record`` of ``model`` into the heads file's ``meta[key]`` (``key`` one of
    ``MEASURED``'s; ``path`` the shipped heads by default), atomically. Returns the file written."""
    import json

    from argus.designs.sentence.heads import EMBEDDED_EVENT_HEADS
    from argus.io import write_json_atomic

    if key not in {k for k, _, _ in MEASURED}:
        raise ConfigError(f"no measurement {key!r} in a heads file (those recorded: "
                          f"{', '.join(dict.fromkeys(k for k, _, _ in MEASURED))})")
    path = path or EMBEDDED_EVENT_HEADS
    data = json.loads(path.read_text(encoding="utf-8"))
    data.setdefault("meta", {}).setdefault(key, {})[model] = record
    write_json_atomic(path, data)
    return path


def retrain_parts(heads: "EventHeads", folders: list[Path], names: tuple[str, ...]) -> list[tuple[str, str]]:
    """``heads`` with only the parts ``names`` trained again on ``folders`` (in place), every other part and
    both heads kept; the measurements ``heads.meta`` records of a retrained part (``MEASURED``) are dropped.
    Returns (meta key, bench that measures it again) of each dropped measurement."""
    known = [n for n, _ in PARTS]
    if unknown := [n for n in names if n not in known]:
        raise ConfigError(f"--parts: no learned part {', '.join(unknown)} (the parts: {', '.join(known)})")
    fit_parts(heads, folders, only=names)
    dropped = []
    for key, part, bench in MEASURED:
        if part in names and heads.meta.pop(key, None) is not None:
            heads.meta.pop(f"{key}_note", None)
            dropped.append((key, bench))
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    heads.meta["retrained_parts"] = {**heads.meta.get("retrained_parts", {}), **{n: now for n in names}}
    return dropped


def parts_before(name: str) -> tuple[str, ...]:
    """The parts trained before ``name`` (the design a part is trained on has them)."""
    names = [n for n, _ in PARTS]
    return tuple(names[:names.index(name)]) if name in names else tuple(names)


def inner_heads(folders: list[Path], like: "EventHeads", parts: tuple[str, ...]) -> "EventHeads":
    """Heads trained on ``folders`` alone with ``like``'s C and the ``parts`` named, their parts trained
    on their own graphs (no further cross-fitting)."""
    docs = labeled_complaints(folders)
    f = _Features.of(docs, like.encoder)
    token = CROSS_FIT.set(False)
    try:
        return _fit(f, list(range(len(docs))), like.encoder, float(like.meta.get("C_type", C_TYPE[1])),
                    float(like.meta.get("C_trigger", C_TRIGGER[1])), {"inner": True}, parts)
    finally:
        CROSS_FIT.reset(token)


def _fit(f: _Features, idx: list[int], encoder: str, c_type: float, c_trigger: float, meta: dict,
         parts: tuple[str, ...] | None = None) -> EventHeads:
    tm = _type_model(c_type).fit(*_type_xy(f, idx))
    wm = _trigger_model(c_trigger).fit(*_trigger_xy(f, idx))
    classes = [str(c) for c in tm.classes_]
    unknown = set(classes) - set(EVENT_TYPES) - {NONE}
    if unknown:
        raise ConfigError(f"gold event types outside the schema: {sorted(unknown)}")
    heads = EventHeads(encoder=encoder, classes=classes, type_weights=tm.coef_.astype("float32"),
                       type_bias=tm.intercept_.astype("float32"), trigger_weights=wm.coef_[0].astype("float32"),
                       trigger_bias=float(wm.intercept_[0]), meta={**meta, "C_type": c_type, "C_trigger": c_trigger})
    folders = [f.docs[i].folder for i in idx]
    return fit_parts(heads, folders, parts) if all(folders) else heads


def train_event_heads(docs: list[LabeledSentences], encoder: str = "embedded", features: _Features | None = None
                      ) -> EventHeads:
    """Both heads fitted on ``docs``, each C chosen by cross-validation grouped by complaint."""
    if len(docs) < 2:
        raise ConfigError("training the event heads needs at least two annotated complaints")
    f = features or _Features.of(docs, encoder)
    idx = list(range(len(docs)))
    c_type, c_trigger = _choose(f, idx)
    meta = {"trained_on": [d.doc_id for d in docs], "n_sentences": sum(len(d.texts) for d in docs),
            "C_type": c_type, "C_trigger": c_trigger,
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
    return _fit(f, idx, encoder, c_type, c_trigger, meta)


@dataclass
class HeadsCV:
    """Out-of-fold figures of the heads over complaints (every choice made inside the fold)."""

    folds: int
    type_accuracy: float
    type_accuracy_on_events: float
    trigger_top1: float
    per_document: list[dict]
    heads: dict[str, EventHeads] = field(default_factory=dict)  # doc_id → the heads of the fold it was held out in

    def as_dict(self) -> dict:
        return {"folds": self.folds, "type_accuracy": round(self.type_accuracy, 4),
                "type_accuracy_on_events": round(self.type_accuracy_on_events, 4),
                "trigger_top1": round(self.trigger_top1, 4), "per_document": self.per_document}


def cross_validate(docs: list[LabeledSentences], k: int = 6, encoder: str = "embedded",
                   train_size: int | None = None) -> HeadsCV:
    """k folds over complaints, each style dealt over the folds (``_folds``); C chosen inside each fold; the
    fitted heads per held-out complaint. ``train_size``: each fold trains on that many of its training
    complaints (``style_sample``), tested on the same folds (a learning curve's point)."""
    f = _Features.of(docs, encoder)
    ok = n = ok_ev = n_ev = hits = n_trig = 0
    rows, heads = [], {}
    ids = [d.doc_id for d in docs]
    for tr, te in _folds(len(docs), k, ids):
        tr = style_sample(tr, ids, train_size)
        c_type, c_trigger = _choose(f, tr)
        h = _fit(f, tr, encoder, c_type, c_trigger, {"fold_train": [docs[i].doc_id for i in tr]})
        for i in te:
            d = docs[i]
            heads[d.doc_id] = h
            probs = h.type_probs(f.type_x[i])
            pred = [h.classes[j] for j in probs.argmax(axis=1)]
            d_ok = sum(p == y for p, y in zip(pred, d.types))
            d_ev = [(p, y) for p, y in zip(pred, d.types) if y != NONE]
            d_hits = d_n = 0
            for (words, x), gold in zip(f.words[i], d.triggers):
                if gold and len(words):
                    d_hits += words[int(h.word_probs(x).argmax())][0].lower() in gold
                    d_n += 1
            ok, n = ok + d_ok, n + len(pred)
            ok_ev, n_ev = ok_ev + sum(p == y for p, y in d_ev), n_ev + len(d_ev)
            hits, n_trig = hits + d_hits, n_trig + d_n
            rows.append({"doc_id": d.doc_id, "sentences": len(pred), "type_accuracy": round(d_ok / max(1, len(pred)), 4),
                         "trigger_top1": round(d_hits / max(1, d_n), 4)})
    return HeadsCV(folds=min(k, len(docs)), type_accuracy=ok / max(1, n), type_accuracy_on_events=ok_ev / max(1, n_ev),
                   trigger_top1=hits / max(1, n_trig), per_document=rows, heads=heads)


__all__ = ["C_TRIGGER", "C_TYPE", "CROSS_FIT", "HeadsCV", "LabeledSentences", "MEASURED", "PARTS", "annotated_folders",
           "cross_validate", "fit_parts", "inner_heads", "labeled_complaints", "parts_before", "record_measurement",
           "retrain_parts", "style_of", "style_sample", "train_event_heads"]
