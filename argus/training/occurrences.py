"""Training the ``occurrences`` part of the heads file: the same-occurrence head
(``argus.designs.sentence.occurrences``), learned from the design's own graphs of the training complaints:
two events are the same occurrence where one gold event has both their sentences as evidence."""

from __future__ import annotations

from argus.designs.sentence.occurrences import candidates, feature_names, features
from argus.designs.sentence.pairs import PairHead
from argus.training.pairs import fit_head, labelled_same_rows, training_graphs


def fit(graphs) -> PairHead:
    """The same-occurrence head, from the design's aligned graphs of the training complaints."""
    x, y, groups, targets = labelled_same_rows(graphs, candidates, features)
    return fit_head(x, y, groups, feature_names(), per_target=targets)


def fit_part(folders, heads) -> dict | None:
    """The ``occurrences`` part of the heads file: the same-occurrence head trained on the design's
    graphs of ``folders`` with ``heads``."""
    graphs = training_graphs(folders, heads, "occurrences")
    if len(graphs) < 2:
        return None
    return {"same": fit(graphs).to_json()}


__all__ = ["fit", "fit_part"]
