"""A careful second reader's agreement with gold: the ceiling beside every type and relation figure.

``us_complaints/agreement/<doc_id>.json`` holds a second, independent annotation of the gold events of a
complaint (their types, the temporal and causal edges among them; SPEC.md says how it was made). Scored as
the project scores a graph against gold (``metrics.gold.edges.score_edges``: AFTER read as BEFORE the other
way, OVERLAP and SAME_TIME unordered, causal directed), on the same events, so that the figures stand
beside the system's: how often the reader gives a gold event the gold type, and the reader's temporal and
causal edge F1 against gold.
"""

from __future__ import annotations

import json
from pathlib import Path

from metrics.gold.document import GoldDocument
from metrics.gold.edges import score_edges
from metrics.gold.views import EdgeView


def reader_annotation(gold: GoldDocument, root: Path | None = None) -> dict | None:
    """The second reader's annotation of ``gold``'s complaint, or None where there is none."""
    if root is None:
        from argus.paths import data_root

        root = data_root() / "us_complaints" / "agreement"
    path = Path(root) / f"{gold.doc_id}.json"
    if not path.exists():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


def reader_agreement(gold: GoldDocument, root: Path | None = None) -> dict[str, float] | None:
    """``type_agreement`` (share of gold events the reader typed as gold does), ``temporal_f1`` and
    ``causal_f1`` (the reader's edges against gold's, on the same events) of one complaint; None where the
    complaint has no second reading."""
    second = reader_annotation(gold, root)
    if second is None:
        return None
    types = second.get("types", {})
    events = gold.graph.events
    out = {"type_agreement": sum(types.get(e.id) == e.type for e in events) / max(1, len(events))}
    same = {e.id: e.id for e in events}
    for kind, edges in (("temporal", gold.graph.temporal_edges), ("causal", gold.graph.causal_edges)):
        want = [EdgeView(e.source, e.target, e.relation, ()) for e in edges]
        got = [EdgeView(e["source"], e["target"], e["relation"], ()) for e in second.get(f"{kind}_edges", [])]
        prf, _, _, _ = score_edges(got, want, same, kind, agnostic=False)
        out[f"{kind}_f1"] = prf.f1
    return out


__all__ = ["reader_agreement", "reader_annotation"]
