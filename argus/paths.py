"""Where things live: the project root, the shared data root, the cache directory; the annotated corpus's
writing styles and the folds that deal them."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
RESOURCES = Path(__file__).resolve().parent / "resources"


def data_root() -> Path:
    """The shared data root: ``$ARGUS_DATA_ROOT`` or ``../shared/data`` beside the project."""
    env = os.environ.get("ARGUS_DATA_ROOT")
    if env:
        return Path(env).expanduser().resolve()
    return (PROJECT_ROOT.parent / "shared" / "data").resolve()


def complaints_dir(split: str) -> Path:
    return data_root() / "us_complaints" / split


# ----------------------------------------------------------------------------- the annotated corpus
# Each complaint's writing style (``us_complaints/styles.json``) and folds over complaints that deal every
# style over them, so that no style is tested only on a model that never saw it; nested samples of a
# fold's training complaints for a learning curve.


def complaint_styles() -> dict[str, str]:
    """doc_id → writing style of the annotated complaints (``us_complaints/styles.json``; {} without it).
    Complaints the file does not name (the first 18 before it existed, a user's own gold) have no entry."""
    import json

    path = data_root() / "us_complaints" / "styles.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: str(v.get("style", "")) for k, v in data.items() if isinstance(v, dict) and v.get("style")}


def style_folds(n_docs: int, k: int, doc_ids: list[str] | None = None) -> list[tuple[list[int], list[int]]]:
    """k folds over ``n_docs`` complaints (training and test indices). With ``doc_ids``, every writing style
    (``style_of``) is dealt over the folds in turn, so that each fold holds its share of each style and no
    style is tested only on a model that never saw it; without, complaint i goes to fold i mod k."""
    k = max(2, min(k, n_docs))
    order = list(range(n_docs))
    if doc_ids is not None:
        styles = style_of(doc_ids)
        order.sort(key=lambda i: (styles[i], doc_ids[i]))
    fold = {i: pos % k for pos, i in enumerate(order)}
    return [([i for i in range(n_docs) if fold[i] != j], [i for i in range(n_docs) if fold[i] == j]) for j in range(k)]


def style_sample(idx: list[int], doc_ids: list[str], n: int | None) -> list[int]:
    """The first ``n`` of ``idx`` (all where ``n`` is None or not smaller) taken from the writing styles in
    turn, so that a smaller training set still holds every style it can; a smaller sample is part of every
    larger one (a learning curve's training sets are nested)."""
    if n is None or n >= len(idx):
        return list(idx)
    styles = style_of([doc_ids[i] for i in idx])
    by: dict[str, list[int]] = {}
    for i, st in sorted(zip(idx, styles), key=lambda p: (p[1], doc_ids[p[0]])):
        by.setdefault(st, []).append(i)
    dealt = [i for k in range(max(len(v) for v in by.values())) for st in sorted(by) if k < len(by[st])
             for i in [by[st][k]]]
    return sorted(dealt[:n])


def style_of(doc_ids: list[str]) -> list[str]:
    """The writing style of each complaint (``complaint_styles``); one the data does not name
    has the style "unnamed"."""
    known = complaint_styles()
    return [known.get(d, "unnamed") for d in doc_ids]
