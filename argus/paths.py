"""Where things live: the project root, the shared data root, the cache directory; the annotated corpus's
writing styles and the folds that deal them."""

from __future__ import annotations

import functools
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
    return dict(_styles_at(data_root() / "us_complaints" / "styles.json"))


@functools.lru_cache(maxsize=4)
def _styles_at(path: Path) -> tuple[tuple[str, str], ...]:
    """The styles file at ``path``, read once a process (the folds and the benches ask it per complaint)."""
    import json

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ()
    return tuple((k, str(v["style"])) for k, v in data.items() if isinstance(v, dict) and v.get("style"))


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
    by: dict[str, list[int]] = {}
    for st, _, i in sorted(zip(style_of([doc_ids[i] for i in idx]), [doc_ids[i] for i in idx], idx)):
        by.setdefault(st, []).append(i)
    # the k-th complaint of every style before the (k+1)-th of any: each style's rank within it, then the style
    dealt = sorted((k, st, i) for st, members in by.items() for k, i in enumerate(members))
    return sorted(i for _, _, i in dealt[:n])


def style_of(doc_ids: list[str]) -> list[str]:
    """The writing style of each complaint (``complaint_styles``); one the data does not name
    has the style "unnamed"."""
    known = complaint_styles()
    return [known.get(d, "unnamed") for d in doc_ids]
