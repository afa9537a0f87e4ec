"""How well the pipeline told facts from non-facts: ``fact_scores`` scores its sentence decisions
(positive = fact) over the gold sentences, for the whole complaint and for its ``facts`` sections,
with ``FactPRF`` (precision, recall, F1 and accuracy) and a feedback line per wrong sentence."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Sequence

from argus.graph.schema import DocumentEKG
from metrics.gold.alignment import invert_alignment, sentence_alignment
from metrics.gold.common import cap_lines
from metrics.gold.document import GoldDocument
from metrics.gold.scores import PRF


@dataclass
class FactPRF(PRF):
    """``PRF`` of the fact class (positive = fact) plus the accuracy over all ``n`` sentences
    (``tn`` the sentences rightly left non-fact; no sentences: accuracy 1.0)."""

    accuracy: float = 0.0
    tn: int = 0
    n: int = 0

    @classmethod
    def from_labels(cls, y_true: Sequence[bool], y_pred: Sequence[bool]) -> "FactPRF":
        tp = sum(1 for t, p in zip(y_true, y_pred) if t and p)
        fp = sum(1 for t, p in zip(y_true, y_pred) if not t and p)
        fn = sum(1 for t, p in zip(y_true, y_pred) if t and not p)
        tn = sum(1 for t, p in zip(y_true, y_pred) if not t and not p)
        n = len(y_true)
        return cls(**asdict(PRF.from_counts(tp, fp, fn)), accuracy=(tp + tn) / n if n else 1.0, tn=tn, n=n)


@dataclass
class FactScores:
    whole: FactPRF  # every gold sentence of the complaint
    facts_section: FactPRF  # gold sentences of `facts` sections only
    whole_ungated: FactPRF  # the raw `fact` label, even outside the narrative (the classifier's view)
    require_narrative: bool = True
    unaligned_gold: list[str] = field(default_factory=list)  # gold ids no predicted sentence overlaps
    feedback: str = ""

    def as_dict(self) -> dict:
        return {"whole": self.whole.as_dict(), "facts_section": self.facts_section.as_dict(),
                "whole_ungated": self.whole_ungated.as_dict(), "require_narrative": self.require_narrative,
                "unaligned_gold": list(self.unaligned_gold), "feedback": self.feedback}


def fact_scores(ekg: DocumentEKG, gold: GoldDocument, *, require_narrative: bool = True) -> FactScores:
    """Fact-class (positive = fact) scores of the EKG's sentence decisions over the gold sentences.

    A gold sentence is predicted a fact when an overlapping predicted sentence (span rule of
    ``sentence_alignment``) has ``fact`` True and, with ``require_narrative`` (default), lies in the
    narrative. Why: outside the FACTS narrative the pipeline's ``fact`` is the bare classifier's
    label and such sentences never reach the graph (argus/gate/facts.py); a pipeline "fact" is a
    narrative sentence labelled fact. ``whole_ungated`` reports the raw labels everywhere.
    """
    by_gold = invert_alignment(sentence_alignment(ekg.sentences, gold.sentences))
    pred = {s.id: s for s in ekg.sentences}
    y_true, y_gated, y_raw, in_facts = [], [], [], []
    unaligned: list[str] = []
    lines: list[str] = []
    for g in gold.sentences:
        ps = [pred[i] for i in by_gold.get(g.id, [])]
        if not ps:
            unaligned.append(g.id)
        raw = any(p.fact is True for p in ps)
        gated = any(p.fact is True and (p.in_narrative or not require_narrative) for p in ps)
        y_true.append(g.fact)
        y_gated.append(gated)
        y_raw.append(raw)
        in_facts.append(g.section == "facts")
        if g.fact != gated:
            what = "missed fact" if g.fact else "spurious fact"
            src = f" ← pred {','.join(p.id for p in ps)}" if ps else " (no predicted sentence)"
            extra = " [fact outside narrative]" if (g.fact and raw and not gated) else ""
            text = g.text if len(g.text) <= 80 else g.text[:80] + "…"
            lines.append(f"{what} {g.id} ({g.section}){src}{extra}: '{text}'")
    whole = FactPRF.from_labels(y_true, y_gated)
    sec = FactPRF.from_labels([t for t, f in zip(y_true, in_facts) if f], [p for p, f in zip(y_gated, in_facts) if f])
    raw_s = FactPRF.from_labels(y_true, y_raw)
    head = [f"facts (whole complaint): acc={whole.accuracy:.2f} P={whole.precision:.2f} R={whole.recall:.2f} F1={whole.f1:.2f}; "
            f"facts section: acc={sec.accuracy:.2f} P={sec.precision:.2f} R={sec.recall:.2f} F1={sec.f1:.2f}"]
    if unaligned:
        head.append(f"{len(unaligned)} gold sentence(s) overlap no predicted sentence: {', '.join(unaligned[:10])}"
                    + (" …" if len(unaligned) > 10 else ""))
    return FactScores(whole, sec, raw_s, require_narrative, unaligned, cap_lines(head + lines))
