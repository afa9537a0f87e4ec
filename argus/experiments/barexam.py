"""Bar-exam style multiple-choice QA with open retrieval (``argus experiment barexam``).

The answering program (:class:`programs.mcq.MultipleChoiceQA`), its prompt and its model (config
stage ``qa``) are held fixed; only the context changes between conditions:

- ``no-passage`` — empty context (the model's own knowledge);
- ``gold-passage`` — the question's annotated gold passage(s) (only questions that have one);
- ``bm25`` — the top passages of a BM25 ranking (``bm25s``, English stop words, no stemming) of the
  passage corpus for the query;
- ``dense`` — the top passages by cosine similarity of sentence embeddings (default: the embedded
  all-MiniLM-L6-v2, resolved as in :mod:`argus.models.embeddings`, offline);
- ``hybrid-graph`` — a BM25 pool of ``pool_size`` (1,000) passages reranked with a passage-graph
  relevance score (below); the pool holds the passages with a positive BM25 score only.

The query of every retriever is the question's prompt and question text (not the choices).
Recall@k (default k = 10) is the share of questions with a gold passage whose gold passage (any of
them, when there are several) is among the top k; the context shown to the model is the first
``n_context`` (3) of those k passages, capped at ``max_context_words`` (1,500) words.

**Graph relevance (ours, not the paper's).** Every passage of the corpus gets a set of *key
terms*: the legal citations it contains (``123 U.S. 456``, ``42 U.S.C. § 1983``, ``§ 2-207``,
``Rule 803``; matched by :data:`CITATION_RE`, normalized) and its ``n_key_terms`` (12) most
distinctive content words — lower-cased alphabetic tokens of at least 4 letters, not English stop
words, with corpus document frequency ``df ≥ 2`` and ``df ≤ max(2, max_df · N)`` (max_df = 0.05),
ranked by ``tf · log(N / df)``. Within the BM25 pool of a query two passages are linked when they
share at least ``min_shared`` (2) key terms, a shared citation counting as 2 (so one shared
citation links). With ``b_i`` the BM25 score of pool passage ``i`` and ``s_i = b_i / max_j b_j``
its normalized query similarity (in [0, 1]), the reranking score is

    g_i = (1 − λ) · s_i + λ · mean_{j ∈ N(i)} s_j        (the mean is 0 when N(i) is empty)

with λ = ``graph_weight`` (0.3); ties keep BM25 order. The pool is only reordered (same passages).
A passage whose neighbours are also relevant to the query rises; an isolated lexical match sinks.

Accuracy is the share of questions answered with the gold letter; a failed LM call (no parseable
letter after the retry) counts as wrong and is reported per condition. Every pair of conditions
is compared on the questions both answered: McNemar's exact test (:func:`stats.mcnemar_exact`)
and a paired bootstrap 95% CI of the accuracy difference (:func:`stats.paired_bootstrap_ci`).

Sources: ``mmlu_law`` (``$ARGUS_DATA_ROOT/legal_qa/mmlu_law``: the MMLU ``professional_law`` test
set, 1,534 questions without passages; ``mmlu_law:all`` adds ``international_law`` and
``jurisprudence``), or a path to the reglab/barexam_qa layout (see :func:`load_barexam_qa`). With
mmlu_law only ``no-passage`` runs unless ``corpus`` (a JSONL of ``{"id", "text"}``) is given.

The paper's bar-exam figures (its own 100 MBE questions, Claude) come from another question set
and model: they are not comparable with a run here.
"""

from __future__ import annotations

import csv
import json
import math
import re
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pandas as pd

from argus.errors import ArgusError, InputError
from argus.experiments.common import Answered, answering_lm, experiment_ledger, markdown_table, metered_call
from argus.experiments.stats import mcnemar_exact, paired_bootstrap_ci

CONDITIONS: tuple[str, ...] = ("no-passage", "gold-passage", "bm25", "dense", "hybrid-graph")
RETRIEVAL_CONDITIONS: tuple[str, ...] = ("bm25", "dense", "hybrid-graph")
LETTERS: tuple[str, ...] = ("A", "B", "C", "D")
MMLU_SUBJECTS: tuple[str, ...] = ("professional_law", "international_law", "jurisprudence")
TOP_K = 10
N_CONTEXT = 3
POOL_SIZE = 1000
GRAPH_WEIGHT = 0.3
N_KEY_TERMS = 12
MAX_DF = 0.05
MIN_SHARED = 2
MAX_CONTEXT_WORDS = 1500
CAPTION = (
    "The paper's bar-exam figures (its own 100 MBE questions, Claude) are NOT comparable with this run "
    "(different questions, passages and model)."
)

# ----------------------------------------------------------------------------- data


@dataclass(frozen=True)
class MCQuestion:
    """One multiple-choice question; ``gold_ids`` name passages of the corpus (may be empty),
    ``gold_texts`` are gold passage texts the source itself carries (may be empty)."""

    qid: str
    question: str
    choices: tuple[str, str, str, str]
    answer: str
    gold_ids: tuple[str, ...] = ()
    gold_texts: tuple[str, ...] = ()
    subject: str = ""


@dataclass(frozen=True)
class Passage:
    id: str
    text: str


@dataclass
class Loaded:
    """Questions (or passages) read from a source, and one message per skipped row."""

    items: list
    skipped: list[str] = field(default_factory=list)
    source: str = ""

    def __len__(self) -> int:
        return len(self.items)


def _letter(value: Any) -> str | None:
    """``A``–``D`` from a letter (any case, optionally ``(A)``/``A.``) or a 0-based index."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return LETTERS[int(value)] if 0 <= int(value) < 4 else None
    s = str(value).strip().strip("().").upper()
    if s in LETTERS:
        return s
    if s.isdigit() and 0 <= int(s) < 4:
        return LETTERS[int(s)]
    return None


def _text(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return " ".join(str(value).split())


def _make_question(qid: str, question: str, choices: Sequence[Any], answer: Any, gold_ids=(), gold_texts=(),
                   subject: str = "") -> MCQuestion:
    """Validate one row; raises ValueError with the reason."""
    q = _text(question)
    if not q:
        raise ValueError("empty question")
    ch = [_text(c) for c in choices]
    if len(ch) != 4:
        raise ValueError(f"needs 4 choices, has {len(ch)}")
    if any(not c for c in ch):
        raise ValueError("an empty choice")
    letter = _letter(answer)
    if letter is None:
        raise ValueError(f"answer {answer!r} is not one of A–D")
    gids = tuple(g for g in (_text(x) for x in gold_ids) if g)
    gtx = tuple(t for t in (_text(x) for x in gold_texts) if t)
    return MCQuestion(qid, q, tuple(ch), letter, gids, gtx, subject)  # type: ignore[arg-type]


def mmlu_law_dir() -> Path:
    from argus.paths import data_root

    return data_root() / "legal_qa" / "mmlu_law"


def load_mmlu_law(root: str | Path | None = None, subjects: Sequence[str] = ("professional_law",)) -> Loaded:
    """MMLU law test CSVs (``<subject>_test.csv``: no header; question, A, B, C, D, answer letter).

    The default subject, ``professional_law``, has 1,534 questions. Rows that do not parse (wrong
    column count, empty fields, an answer outside A–D) are skipped with a message.
    """
    root = Path(root) if root is not None else mmlu_law_dir()
    if not root.is_dir():
        raise InputError(f"no MMLU law data at {root} (set ARGUS_DATA_ROOT)")
    out = Loaded([], [], str(root))
    for subject in subjects:
        path = root / f"{subject}_test.csv"
        if not path.exists():
            raise InputError(f"{path} is missing (subjects: {', '.join(MMLU_SUBJECTS)})")
        with path.open(encoding="utf-8", newline="") as fh:
            for i, row in enumerate(csv.reader(fh)):
                qid = f"{subject}-{i}"
                if len(row) != 6:
                    out.skipped.append(f"{path.name} row {i + 1}: {len(row)} columns, expected 6")
                    continue
                try:
                    out.items.append(_make_question(qid, row[0], row[1:5], row[5], subject=subject))
                except ValueError as exc:
                    out.skipped.append(f"{path.name} row {i + 1}: {exc}")
    return out


def _json_object(line: str) -> tuple[dict | None, str | None]:
    """A JSONL line as ``(object, None)``, or ``(None, why it is not a JSON object)``."""
    try:
        obj = json.loads(line)
    except ValueError as exc:
        return None, f"not JSON ({exc.__class__.__name__})"
    return (obj, None) if isinstance(obj, dict) else (None, "not a JSON object")


def _sift(records: Iterable[tuple[str, Any, str | None]], skipped: list[str]) -> list:
    """The records of ``(where, record, problem)`` without a problem, in order; ``"where: problem"``
    of each other one goes to ``skipped``."""
    kept = []
    for where, record, problem in records:
        if problem is None:
            kept.append(record)
        else:
            skipped.append(f"{where}: {problem}")
    return kept


def _read_records(path: Path) -> tuple[list[dict], list[str]]:
    """Rows of a ``.jsonl`` / ``.json`` / ``.csv`` / ``.tsv`` / ``.parquet`` file as dicts, and skip messages."""
    skipped: list[str] = []
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        with path.open(encoding="utf-8") as fh:
            lines = ((f"{path.name} line {i + 1}", *_json_object(line)) for i, line in enumerate(fh) if line.strip())
            return _sift(lines, skipped), skipped
    if suffix == ".json":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise InputError(f"{path}: not JSON ({exc})") from exc
        data = data.get("data", data) if isinstance(data, dict) else data
        if not isinstance(data, list):
            raise InputError(f"{path}: expected a JSON list of objects")
        items = ((f"{path.name} item {i}", obj, None if isinstance(obj, dict) else "not an object")
                 for i, obj in enumerate(data))
        return _sift(items, skipped), skipped
    if suffix in (".csv", ".tsv"):
        csv.field_size_limit(2**31 - 1)
        with path.open(encoding="utf-8", newline="") as fh:
            reader = csv.DictReader(fh, delimiter="\t" if suffix == ".tsv" else ",")
            rows = ((f"{path.name} row {i + 2}", row, "more fields than the header" if None in row else None)
                    for i, row in enumerate(reader))
            return _sift(rows, skipped), skipped
    if suffix == ".parquet":
        try:
            return pd.read_parquet(path).to_dict("records"), skipped
        except ImportError as exc:
            raise InputError(f"{path}: reading parquet needs pyarrow (pip install pyarrow), or convert it to JSONL") from exc
    raise InputError(f"{path}: unsupported file type (use .jsonl, .json, .csv, .tsv or .parquet)")


_DATA_SUFFIXES = (".jsonl", ".json", ".csv", ".tsv", ".parquet")


def _data_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in _DATA_SUFFIXES)


def _file_rows(files: Sequence[Path], out: Loaded):
    """``(file, row index, row)`` for the readable rows of ``files`` in order; what the readers skip
    goes to ``out.skipped``."""
    for f in files:
        rows, skipped = _read_records(f)
        out.skipped += skipped
        for i, r in enumerate(rows):
            yield f, i, r


def load_corpus(path: str | Path) -> Loaded:
    """A passage corpus: a file (or a folder of files) of rows with an id (``id``, ``idx`` or
    ``passage_id``) and ``text``. Rows without an id or text, and repeated ids, are skipped."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"passage corpus {path} does not exist")
    files = _data_files(path) if path.is_dir() else [path]
    if not files:
        raise InputError(f"no passage files in {path}")
    out = Loaded([], [], str(path))
    seen: set[str] = set()
    for f, i, r in _file_rows(files, out):
        pid = _text(next((r[k] for k in ("id", "idx", "passage_id", "_id") if k in r and _text(r[k])), ""))
        text = _text(r.get("text") or r.get("passage") or r.get("contents"))
        if not pid or not text:
            out.skipped.append(f"{f.name} row {i + 1}: {'no id' if not pid else 'no text'}")
            continue
        if pid in seen:
            out.skipped.append(f"{f.name} row {i + 1}: repeated passage id {pid!r}")
            continue
        seen.add(pid)
        out.items.append(Passage(pid, text))
    return out


def _split_ids(value: Any) -> list[str]:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return []
    if isinstance(value, (list, tuple)):
        return [_text(v) for v in value]
    s = _text(value)
    if s.startswith("["):
        try:
            return [_text(v) for v in json.loads(s)]
        except ValueError:
            pass
    return [x.strip() for x in re.split(r"[;,|]", s) if x.strip()]


def _question_row(r: dict, i: int, name: str) -> MCQuestion:
    qid = _text(r.get("idx") or r.get("id") or r.get("qid")) or f"{name}-{i}"
    prompt = _text(r.get("prompt"))
    question = _text(r.get("question"))
    full = f"{prompt}\n{question}" if prompt and question else (prompt or question)
    if all(f"choice_{c}" in r for c in "abcd"):
        choices = [r[f"choice_{c}"] for c in "abcd"]
    elif all(c in r for c in LETTERS):
        choices = [r[c] for c in LETTERS]
    elif isinstance(r.get("choices"), (list, tuple)):
        choices = list(r["choices"])
    else:
        raise ValueError("no choices (expected choice_a..choice_d, A..D or a 'choices' list)")
    gold_ids = _split_ids(r.get("gold_idx", r.get("gold_id", r.get("gold_passage_id"))))
    gold_text = r.get("gold_passage", r.get("gold_passge"))  # the card spells it 'gold_passge'
    return _make_question(qid, full, choices, r.get("answer", r.get("label")), gold_ids,
                          [gold_text] if _text(gold_text) else [], subject=name)


def load_barexam_qa(path: str | Path) -> tuple[Loaded, Loaded | None]:
    """Questions and (when present) the passage pool in the reglab/barexam_qa layout.

    Expected, from the public dataset card of ``reglab/barexam_qa`` (Hugging Face; the file names
    inside its ``data/qa`` and ``data/passages`` folders are not fixed here): question rows with
    ``idx`` (id), ``prompt`` (shared fact pattern, may be empty), ``question``, ``choice_a`` …
    ``choice_d``, ``answer`` (A–D), ``gold_passage`` (text; the card spells it ``gold_passge``,
    both are read) and ``gold_idx`` (the gold passage's id in the pool); passage rows with ``idx``
    (or ``id``), ``text`` and optional metadata (``faiss_id``, ``case_id``) that is ignored.

    ``path`` is either one questions file (JSONL/JSON/CSV/TSV/parquet) or a folder holding
    ``qa/`` (questions) and ``passages/`` (the pool) sub-folders — ``data/qa`` and ``data/passages``
    are found too — or, flat, ``qa*.{jsonl,…}`` / ``passages*.{jsonl,…}`` files. Bad rows are
    skipped with a message.
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"--source {path}: neither 'mmlu_law' nor an existing file or folder")
    passages: Loaded | None = None
    if path.is_dir():
        base = path / "data" if (path / "data" / "qa").is_dir() else path
        if (base / "qa").is_dir():
            q_files = _data_files(base / "qa")
        else:
            q_files = [p for p in _data_files(base) if p.name.lower().startswith(("qa", "question"))]
        if (base / "passages").is_dir():
            passages = load_corpus(base / "passages")
        else:
            p_files = [p for p in _data_files(base) if p.name.lower().startswith(("passage", "corpus"))]
            if p_files:
                passages = Loaded([], [], str(base))
                for f in p_files:
                    one = load_corpus(f)
                    passages.items += one.items
                    passages.skipped += one.skipped
        if not q_files:
            raise InputError(f"{path}: no question files (expected qa/*.jsonl|csv|… or qa*.jsonl)")
    else:
        q_files = [path]
    out = Loaded([], [], str(path))
    seen: set[str] = set()
    for f, i, r in _file_rows(q_files, out):
        try:
            q = _question_row(r, i, f.stem)
        except (ValueError, TypeError) as exc:
            out.skipped.append(f"{f.name} row {i + 1}: {exc}")
            continue
        if q.qid in seen:
            out.skipped.append(f"{f.name} row {i + 1}: repeated question id {q.qid!r}")
            continue
        seen.add(q.qid)
        out.items.append(q)
    return out, passages


def load_source(source: str | Path = "mmlu_law") -> tuple[Loaded, Loaded | None]:
    """``mmlu_law`` (professional_law), ``mmlu_law:all`` / ``mmlu_law:<subject>,…``, or a barexam_qa path."""
    s = str(source)
    if s == "mmlu_law" or s.startswith("mmlu_law:"):
        subjects = ("professional_law",) if s == "mmlu_law" else tuple(x.strip() for x in s.split(":", 1)[1].split(",") if x.strip())
        if subjects == ("all",):
            subjects = MMLU_SUBJECTS
        return load_mmlu_law(subjects=subjects), None
    return load_barexam_qa(s)


# ----------------------------------------------------------------------------- retrieval


def _bm25_tokenize(texts: Sequence[str]):
    import bm25s

    return bm25s.tokenize(list(texts), stopwords="en", show_progress=False)


class BM25Retriever:
    """BM25 (``bm25s`` defaults: Lucene variant, k1 = 1.5, b = 0.75) over the passages."""

    def __init__(self, passages: Sequence[Passage]):
        import bm25s

        self.passages = list(passages)
        self.model = bm25s.BM25()
        self.model.index(_bm25_tokenize([p.text for p in self.passages]), show_progress=False)
        self._vocab = self.model.vocab_dict

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every passage for the query (0 for passages sharing no term)."""
        import bm25s

        words = bm25s.tokenize([query], stopwords="en", return_ids=False, show_progress=False)[0]
        words = [w for w in words if w in self._vocab]
        if not words:
            return np.zeros(len(self.passages), dtype="float32")
        return np.asarray(self.model.get_scores(words), dtype="float32")

    def search(self, query: str, k: int) -> tuple[list[int], np.ndarray]:
        s = self.scores(query)
        order = np.argsort(-s, kind="stable")[: min(k, len(s))]
        return [int(i) for i in order], s[order]


class DenseRetriever:
    """Cosine top-k over L2-normalized sentence embeddings; ``encoder`` is a name for
    :mod:`argus.models.embeddings` (default the embedded MiniLM, offline) or an object with ``encode(texts)``."""

    def __init__(self, passages: Sequence[Passage], encoder: str | Any = "embedded"):
        self.passages = list(passages)
        self.encoder = encoder
        self.vectors = self.embed([p.text for p in self.passages])

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if isinstance(self.encoder, str):
            import os

            from argus.models.embeddings import encode, is_embedded

            if is_embedded(self.encoder):
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
            x = encode(texts, name=self.encoder)
        else:
            x = np.asarray(self.encoder.encode(texts), dtype="float32")
        if x.ndim != 2 or len(x) == 0:
            return np.zeros((len(texts), x.shape[-1] if x.ndim == 2 else 1), dtype="float32")
        return (x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)).astype("float32")

    def search(self, query: str, k: int) -> tuple[list[int], np.ndarray]:
        q = self.embed([query])[0]
        s = self.vectors @ q
        order = np.argsort(-s, kind="stable")[: min(k, len(s))]
        return [int(i) for i in order], s[order]


#: legal citations: reporter cites (``123 U.S. 456``, ``45 F.3d 789``, ``12 Cal. App. 4th 56``),
#: code sections (``42 U.S.C. § 1983``, ``§ 2-207``), rules (``Rule 803``, ``FRE 404(b)``)
CITATION_RE = re.compile(
    r"\b\d{1,4}\s+(?:U\.?\s?S\.?\s?C\.?(?:A\.?)?|C\.?\s?F\.?\s?R\.?)\s*§+\s*[\w.\-()]+"
    r"|§+\s*\d[\w.\-]*"
    r"|\b\d{1,4}\s+(?:[A-Z][A-Za-z.]*\s?){1,4}(?:\d[a-z]{1,2}\s)?\d{1,5}\b"
    r"|\b(?:Rule|FRE|FRCP|Fed\.\s?R\.\s?(?:Evid|Civ\.\s?P|Crim\.\s?P)\.)\s*\d+(?:\([a-z0-9]+\))*",
)
_WORD = re.compile(r"[a-z]{4,}")


def extract_citations(text: str) -> set[str]:
    """Normalized citations in a text (spaces squeezed, dots and § dropped, lower case)."""
    out = set()
    for m in CITATION_RE.finditer(text):
        c = re.sub(r"[.§\s]+", " ", m.group(0)).strip().lower()
        if c:
            out.add("cite:" + c)
    return out


def key_terms(texts: Sequence[str], n_terms: int = N_KEY_TERMS, max_df: float = MAX_DF) -> list[set[str]]:
    """Key terms of every text (module docstring): its citations and its ``n_terms`` most
    distinctive content words (2 ≤ df ≤ max(2, max_df·N), ranked by tf·log(N/df)).

    scikit-learn's ``TfidfVectorizer`` counts and weights them: without smoothing its idf is
    ln(N/df) + 1, so tf·idf · (idf − 1)/idf is the tf·ln(N/df) of the ranking."""
    from bm25s.stopwords import STOPWORDS_EN
    from sklearn.feature_extraction.text import TfidfVectorizer

    citations = [extract_citations(t) for t in texts]
    hi = max(2, max_df * max(1, len(texts)))
    vectorizer = TfidfVectorizer(lowercase=True, token_pattern=_WORD.pattern, stop_words=sorted(STOPWORDS_EN),
                                 min_df=2, max_df=int(hi), smooth_idf=False, norm=None)
    try:
        weights = vectorizer.fit_transform(texts)
    except ValueError:  # no word within the df bounds (a corpus of a few passages): citations only
        return citations
    scores = weights.multiply((vectorizer.idf_ - 1.0) / vectorizer.idf_).tocsr()
    vocabulary = vectorizer.get_feature_names_out()
    out = []
    for i, cites in enumerate(citations):
        row = scores.getrow(i)
        ranked = sorted(zip(-row.data, vocabulary[row.indices]))
        out.append({str(w) for _, w in ranked[:n_terms]} | cites)
    return out


def passage_graph(terms: Sequence[set[str]], min_shared: int = MIN_SHARED) -> list[list[int]]:
    """Neighbour lists: ``i`` and ``j`` linked when they share ≥ ``min_shared`` key terms (a citation counts 2)."""
    index: dict[str, list[int]] = {}
    for i, ts in enumerate(terms):
        for t in ts:
            index.setdefault(t, []).append(i)
    shared: Counter = Counter()
    for t, members in index.items():
        if len(members) < 2:
            continue
        w = 2 if t.startswith("cite:") else 1
        for a in range(len(members)):
            for b in range(a + 1, len(members)):
                shared[(members[a], members[b])] += w
    nbrs: list[list[int]] = [[] for _ in terms]
    for (a, b), s in shared.items():
        if s >= min_shared:
            nbrs[a].append(b)
            nbrs[b].append(a)
    return [sorted(x) for x in nbrs]


def graph_rerank(pool: Sequence[int], bm25: Sequence[float], neighbours: Sequence[Sequence[int]],
                 weight: float = GRAPH_WEIGHT) -> tuple[list[int], np.ndarray]:
    """Reorder ``pool`` (passage indices in BM25 order, with their BM25 scores) by
    ``g_i = (1 − λ)·s_i + λ·mean_{j∈N(i)} s_j`` with ``s = bm25 / max(bm25)``; ``neighbours`` are
    positions in the pool. Returns the reordered pool (a permutation of it) and the scores."""
    b = np.asarray(bm25, dtype=float)
    if len(pool) == 0:
        return [], np.zeros(0)
    top = b.max()
    s = b / top if top > 0 else np.zeros_like(b)
    nb = np.array([s[list(n)].mean() if len(n) else 0.0 for n in neighbours])
    g = (1.0 - weight) * s + weight * nb
    order = np.lexsort((np.arange(len(g)), -g))  # by g desc, ties by BM25 rank
    return [int(pool[i]) for i in order], g[order]


class GraphRetriever:
    """BM25 pool of ``pool_size`` reranked by graph relevance (module docstring)."""

    def __init__(self, bm25: BM25Retriever, pool_size: int = POOL_SIZE, weight: float = GRAPH_WEIGHT,
                 n_terms: int = N_KEY_TERMS, max_df: float = MAX_DF, min_shared: int = MIN_SHARED):
        self.bm25 = bm25
        self.pool_size = pool_size
        self.weight = weight
        self.min_shared = min_shared
        self.terms = key_terms([p.text for p in bm25.passages], n_terms=n_terms, max_df=max_df)
        self.last_pool: list[int] = []

    def search(self, query: str, k: int) -> tuple[list[int], np.ndarray]:
        pool, scores = self.bm25.search(query, self.pool_size)
        positive = scores > 0
        if positive.any():  # passages sharing no query term are not candidates
            pool, scores = [i for i, p in zip(pool, positive) if p], scores[positive]
        nbrs = passage_graph([self.terms[i] for i in pool], self.min_shared)
        order, g = graph_rerank(pool, scores, nbrs, self.weight)
        self.last_pool = order
        return order[:k], g[:k]


def recall_at_k(retrieved_ids: Sequence[str], gold_ids: Sequence[str], k: int = TOP_K) -> float:
    """1.0 when any gold id is among the first ``k`` retrieved ids, 0.0 otherwise; NaN without gold."""
    if not gold_ids:
        return float("nan")
    top = set(retrieved_ids[:k])
    return float(any(g in top for g in gold_ids))


# ----------------------------------------------------------------------------- contexts


def build_context(texts: Sequence[str], max_words: int = MAX_CONTEXT_WORDS) -> tuple[str, int, bool]:
    """``[passage i] text`` blocks in rank order within ``max_words`` words (the first passage is cut
    to fit when it alone is too long). Returns (context, passages kept, truncated)."""
    parts, used, cut = [], 0, False
    for i, t in enumerate(texts):
        words = t.split()
        if used + len(words) + 2 > max_words:
            cut = True
            if not parts:
                parts.append(f"[passage 1] {' '.join(words[: max(0, max_words - 2)])}")
            break
        parts.append(f"[passage {i + 1}] {t}")
        used += len(words) + 2
    return "\n\n".join(parts), len(parts), cut


# ----------------------------------------------------------------------------- answering


def _answer_fn(lm, adapter, ledger, program):
    def ask(q: MCQuestion, condition: str, context: str) -> Answered:
        res, error, dt = metered_call(lm, adapter, ledger, doc_id=q.qid, program_label=f"MultipleChoiceQA/{condition}",
                                      call=lambda: program(question=q.question, choices=q.choices, context=context))
        if error is not None:
            return Answered(None, error, dt)
        letter = _letter((res.outputs or {}).get("answer"))
        if res.outputs is None or letter is None or res.errors:
            return Answered(letter if not res.errors else None, "; ".join(res.errors)[:300] or "no answer", dt)
        return Answered(letter, None, dt)

    return ask


def _resolve_conditions(conditions, questions: Sequence[MCQuestion], passages: Sequence[Passage] | None) -> list[str]:
    has_gold = any(q.gold_texts for q in questions) or (
        passages is not None and any(q.gold_ids for q in questions))
    if conditions is None:
        out = ["no-passage"]
        if has_gold:
            out.append("gold-passage")
        if passages:
            out += list(RETRIEVAL_CONDITIONS)
        return out
    if isinstance(conditions, str):
        conditions = [c.strip() for c in conditions.split(",") if c.strip()]
    out = []
    for c in conditions:
        if c not in CONDITIONS:
            raise InputError(f"unknown condition {c!r} (choose from {', '.join(CONDITIONS)})")
        if c in RETRIEVAL_CONDITIONS and not passages:
            raise InputError(f"condition {c!r} needs a passage corpus (--corpus passages.jsonl)")
        if c == "gold-passage" and not has_gold:
            raise InputError("condition 'gold-passage' needs questions with gold passages (mmlu_law has none)")
        if c not in out:
            out.append(c)
    if not out:
        raise InputError("no conditions given")
    return out


def run_barexam(
    source: str | Path = "mmlu_law",
    corpus: str | Path | None = None,
    conditions: Sequence[str] | str | None = None,
    limit: int | None = None,
    k: int = TOP_K,
    out: str | Path | None = None,
    config=None,
    encoder: str | Any = "embedded",
    lm=None,
    *,
    n_context: int = N_CONTEXT,
    pool_size: int = POOL_SIZE,
    graph_weight: float = GRAPH_WEIGHT,
    max_context_words: int = MAX_CONTEXT_WORDS,
    n_resamples: int = 10_000,
) -> dict[str, pd.DataFrame]:
    """Run the multiple-choice comparison; returns DataFrames keyed ``questions`` (one row per
    question and condition), ``summary`` (accuracy and Recall@k per condition), ``paired`` (every
    pair of conditions: McNemar exact, bootstrap CI of the accuracy difference) and ``skipped``
    (the rows the loaders skipped, with the reason).

    ``source``: ``mmlu_law`` (default; ``mmlu_law:all`` for the three law subjects) or a path in
    the reglab/barexam_qa layout; ``corpus``: a passage file/folder (overrides the layout's pool);
    ``conditions``: names or a comma-separated string (default: every condition the data allow);
    ``limit``: the first N questions; ``config``: an ``ArgusConfig``, a path, or None; ``lm``: a
    ready ``dspy.LM`` instead of the config's ``qa`` stage; ``encoder``: for ``dense``.
    """
    from argus.config import ArgusConfig
    from argus.models.lm import SchemaJSONAdapter
    from programs.mcq import MultipleChoiceQA

    t_start = time.perf_counter()
    if k < 1:
        raise InputError("k must be at least 1")
    if config is None or isinstance(config, (str, Path)):
        config = ArgusConfig.load(config)
    loaded, pool = load_source(source)
    skipped = [("questions", m) for m in loaded.skipped]
    if corpus is not None:
        pool = load_corpus(corpus)
    if pool is not None:
        skipped += [("passages", m) for m in pool.skipped]
    questions: list[MCQuestion] = list(loaded.items)
    if limit is not None:
        questions = questions[: max(0, int(limit))]
    if not questions:
        raise InputError(f"no questions in {source}")
    passages = list(pool.items) if pool is not None else None
    conds = _resolve_conditions(conditions, questions, passages)

    by_id = {p.id: i for i, p in enumerate(passages or [])}
    retrievers: dict[str, Any] = {}
    if passages:
        if {"bm25", "hybrid-graph"} & set(conds):
            bm25 = BM25Retriever(passages)
            retrievers["bm25"] = bm25
            if "hybrid-graph" in conds:
                retrievers["hybrid-graph"] = GraphRetriever(bm25, pool_size=pool_size, weight=graph_weight)
        if "dense" in conds:
            retrievers["dense"] = DenseRetriever(passages, encoder)

    out_dir = Path(out) if out is not None else None
    ledger = experiment_ledger(out_dir, "barexam")
    lm = answering_lm(config, lm)
    ask = _answer_fn(lm, SchemaJSONAdapter(), ledger, MultipleChoiceQA(max_retries=1))

    rows = []
    for q in questions:
        gold_known = [g for g in q.gold_ids if g in by_id]
        for cond in conds:
            retrieved: list[str] = []
            recall = float("nan")
            if cond == "no-passage":
                texts: list[str] = []
            elif cond == "gold-passage":
                texts = [passages[by_id[g]].text for g in gold_known] if gold_known else list(q.gold_texts)
                if not texts:
                    continue  # only questions with a gold passage
            else:
                idx, _ = retrievers[cond].search(q.question, k)
                retrieved = [passages[i].id for i in idx]
                recall = recall_at_k(retrieved, q.gold_ids, k)
                texts = [passages[i].text for i in idx[:n_context]]
            context, n_used, cut = build_context(texts, max_context_words) if texts else ("", 0, False)
            res = ask(q, cond, context)
            rows.append({
                "qid": q.qid, "subject": q.subject, "condition": cond, "gold": q.answer, "answer": res.answer,
                "correct": res.answer == q.answer, "ok": res.error is None, "error": res.error,
                "has_gold": bool(q.gold_ids), "recall_at_k": recall,
                "retrieved": json.dumps(retrieved), "context_passages": n_used,
                "context_words": len(context.split()), "truncated": cut, "seconds": round(res.seconds, 3),
            })
    tables = summarize(pd.DataFrame(rows), conds, k=k, n_resamples=n_resamples)
    tables["skipped"] = pd.DataFrame(skipped, columns=["kind", "message"])
    meta = {
        "seconds": time.perf_counter() - t_start, "source": str(source), "corpus": str(corpus) if corpus else None,
        "n_passages": len(passages or []), "n_skipped": len(skipped), "k": k,
        "model": getattr(lm, "model", type(lm).__name__), "ledger": ledger.totals().as_dict(),
        "encoder": encoder if isinstance(encoder, str) else type(encoder).__name__,
    }
    for t in tables.values():
        t.attrs.update(meta)
    if out_dir is not None:
        write_tables(tables, out_dir)
    return tables


_QCOLS = ["qid", "subject", "condition", "gold", "answer", "correct", "ok", "error", "has_gold", "recall_at_k",
          "retrieved", "context_passages", "context_words", "truncated", "seconds"]
_PCOLS = ["a", "b", "n", "acc_a", "acc_b", "diff", "ci_lo", "ci_hi", "a_only", "b_only", "mcnemar_p"]


def summarize(rows: pd.DataFrame, conditions: Sequence[str], k: int = TOP_K, n_resamples: int = 10_000) -> dict[str, pd.DataFrame]:
    """Summary (accuracy, failed calls, Recall@k per condition) and paired tables from the rows."""
    if rows.empty:
        rows = pd.DataFrame(columns=_QCOLS)
    summary = []
    for c in conditions:
        sub = rows[rows["condition"] == c]
        gold = sub[sub["has_gold"].astype(bool)] if len(sub) else sub
        rec = gold["recall_at_k"].dropna() if c in RETRIEVAL_CONDITIONS else pd.Series(dtype=float)
        summary.append({
            "condition": c, "n": len(sub),
            "accuracy": float(sub["correct"].astype(bool).mean()) if len(sub) else float("nan"),
            "correct": int(sub["correct"].astype(bool).sum()) if len(sub) else 0,
            "failed_calls": int((~sub["ok"].astype(bool)).sum()) if len(sub) else 0,
            "n_gold": int(len(rec)), f"recall_at_{k}": float(rec.mean()) if len(rec) else float("nan"),
            "context_words": float(sub["context_words"].mean()) if len(sub) else float("nan"),
        })
    summary = pd.DataFrame(summary)
    paired = []
    for i, a in enumerate(conditions):
        for b in conditions[i + 1:]:
            ca = rows[rows["condition"] == a].set_index("qid")["correct"]
            cb = rows[rows["condition"] == b].set_index("qid")["correct"]
            common = [q for q in ca.index if q in cb.index]
            if not common:
                continue
            xa = ca.loc[common].astype(bool).to_numpy()
            xb = cb.loc[common].astype(bool).to_numpy()
            n_a, n_b, p = mcnemar_exact(xa, xb)
            diff, lo, hi = paired_bootstrap_ci(xa.astype(float), xb.astype(float), n_resamples=n_resamples)
            paired.append({"a": a, "b": b, "n": len(common), "acc_a": float(xa.mean()), "acc_b": float(xb.mean()),
                           "diff": diff, "ci_lo": lo, "ci_hi": hi, "a_only": n_a, "b_only": n_b, "mcnemar_p": p})
    return {"questions": rows, "summary": summary, "paired": pd.DataFrame(paired, columns=_PCOLS)}


# ----------------------------------------------------------------------------- reporting


def format_report(tables: dict[str, pd.DataFrame]) -> str:
    s, a = tables["summary"], tables["summary"].attrs
    k = a.get("k", TOP_K)
    rcol = f"recall_at_{k}"
    parts = [
        "## Bar-exam style multiple-choice QA: accuracy by context condition",
        "",
        markdown_table(s, ["condition", "n", "accuracy", "correct", "failed_calls", "n_gold", rcol, "context_words"]),
        "",
        f"Model {a.get('model', '?')}; source {a.get('source', '?')}; corpus {a.get('corpus') or '–'} "
        f"({a.get('n_passages', 0)} passages); {a.get('n_skipped', 0)} source rows skipped. A failed call counts "
        f"as wrong. {rcol}: share of questions with a gold passage whose gold passage is in the top {k}. {CAPTION}",
        "",
        "### Paired comparisons (accuracy a − b; bootstrap 95% CI; McNemar exact)",
        "",
        markdown_table(tables["paired"], ["a", "b", "n", "acc_a", "acc_b", "diff", "ci_lo", "ci_hi", "a_only", "b_only", "mcnemar_p"])
        if len(tables["paired"]) else "(one condition only: no paired comparison)",
    ]
    sk = tables.get("skipped")
    if sk is not None and len(sk):
        parts += ["", f"Skipped rows (first 5 of {len(sk)}): " + "; ".join(sk["message"].head(5))]
    if "seconds" in a:
        parts += ["", f"Wall time {a['seconds']:.1f} s; ledger {a.get('ledger', {})}"]
    return "\n".join(parts) + "\n"


def write_tables(tables: dict[str, pd.DataFrame], out: str | Path) -> list[Path]:
    """``barexam_<name>.csv`` for every table and ``barexam.md`` (the report) in ``out``."""
    from argus.io import write_text_atomic

    out = Path(out)
    paths = [write_text_atomic(out / f"barexam_{name}.csv", df.to_csv(index=False)) for name, df in tables.items()]
    paths.append(write_text_atomic(out / "barexam.md", format_report(tables)))
    return paths


def command(
    source: str = "mmlu_law",
    corpus: Optional[Path] = None,  # noqa: UP045 (typer needs Optional on older Pythons)
    conditions: Optional[str] = None,  # noqa: UP045
    limit: Optional[int] = None,  # noqa: UP045
    k: int = TOP_K,
    out: Optional[Path] = None,  # noqa: UP045
    config: Optional[Path] = None,  # noqa: UP045
    model: Optional[str] = None,  # noqa: UP045
    encoder: str = "embedded",
) -> None:
    """Bar-exam style multiple-choice QA: no passage / gold passage / BM25 / dense / BM25 + graph rerank.

    --source mmlu_law (default, 1,534 professional-law questions, no passages; mmlu_law:all for all
    three law subjects) or a reglab/barexam_qa folder or questions file; --corpus passages.jsonl
    ({"id","text"}) enables the retrieval conditions; --conditions a,b (default: all the data
    allow); --limit N questions; --k for Recall@k; --model sets the qa stage's model; --out DIR
    writes barexam_*.csv, barexam.md, barexam_ledger.jsonl.
    """
    import typer

    from argus.config import ArgusConfig

    try:
        overrides = {"lm.stages.qa.model": model} if model else None
        cfg = ArgusConfig.load(config, overrides)
        tables = run_barexam(source=source, corpus=corpus, conditions=conditions, limit=limit, k=k, out=out,
                             config=cfg, encoder=encoder)
    except ArgusError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc
    typer.echo(format_report(tables))
    if out is not None:
        typer.echo(f"wrote {Path(out) / 'barexam.md'}, {Path(out) / 'barexam_summary.csv'} (and the other barexam_*.csv), "
                   f"{Path(out) / 'barexam_ledger.jsonl'}")
