"""The ``edges`` part of the heads file: the temporal and the causal head, trained together on the design's
own graphs of the training complaints (``argus.designs.sentence.pairs.training_graphs``).

Its own module so that ``pairs`` (what both heads share) imports neither head: ``temporal`` and ``causal``
build on ``pairs``, and this module on all three.
"""

from __future__ import annotations

from pathlib import Path

from argus.designs.sentence import causal, temporal
from argus.designs.sentence.pairs import training_graphs


def fit_part(folders: list[Path], heads) -> dict | None:
    """The ``edges`` part of the heads file: the temporal and the causal head, trained on the design's
    graphs of ``folders`` (the training complaints) with ``heads``."""
    graphs = training_graphs(folders, heads)
    if len(graphs) < 2:
        return None
    return {"temporal": temporal.fit(graphs).to_json(), "causal": causal.fit(graphs).to_json()}


__all__ = ["fit_part"]
