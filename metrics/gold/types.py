"""Event types of a predicted graph against gold, two ways.

``types_of_matched(ekg, gold)`` returns ``TypeCounts``:

- under the **relaxed** alignment (``match_graphs``: a shared evidence sentence and the same type or compatible
  verbs), the events matched and those with the gold event's type. A mistyped event matches there only
  through its verb, so this flatters the types;
- under an alignment **blind to type** (``found``): each predicted event paired with a gold event that shares
  an evidence sentence, the one whose trigger shares a word with the event's first, one to one; and those with
  the gold event's type. This asks what a second reader is asked: the type of an event found
  (``us_complaints/agreement``).
"""

from __future__ import annotations

from dataclasses import dataclass

from argus.graph.schema import DocumentEKG
from metrics.gold.document import GoldDocument


@dataclass(frozen=True)
class TypeCounts:
    matched: int  # events the relaxed tier aligns to a gold event
    matched_right: int  # of them, with the gold event's type
    found: int  # events paired with a gold event blind to type
    found_right: int

    @property
    def accuracy(self) -> float:
        return self.matched_right / self.matched if self.matched else float("nan")

    @property
    def found_accuracy(self) -> float:
        return self.found_right / self.found if self.found else float("nan")


def types_of_matched(ekg: DocumentEKG, gold: GoldDocument) -> TypeCounts:
    """How many of ``ekg``'s events have their gold event's type, under both alignments (module docstring)."""
    from metrics.gold.matching import match_graphs
    from metrics.gold.views import to_gold_space

    view = to_gold_space(ekg, gold)
    align = match_graphs(view, gold, tiers=("relaxed",))["relaxed"].event_alignment
    types = {e.id: e.type for e in view.events}
    gold_types = {e.id: e.type for e in gold.graph.events}
    pairs = []
    for p in view.events:
        words = set(p.trigger.lower().split())
        for g in gold.graph.events:
            if p.evidence & set(g.evidence):
                pairs.append((-bool(words & set(g.trigger.lower().split())), -len(p.evidence & set(g.evidence)), p.id, g.id))
    blind: dict[str, str] = {}
    taken: set[str] = set()
    for _, _, p, g in sorted(pairs):
        if p not in blind and g not in taken:
            blind[p] = g
            taken.add(g)
    return TypeCounts(len(align), sum(types.get(p) == gold_types.get(g) for p, g in align.items()),
                      len(blind), sum(types.get(p) == gold_types.get(g) for p, g in blind.items()))


__all__ = ["TypeCounts", "types_of_matched"]
