"""The output contract of a document EKG, checkable on any file: ``argus validate OUT_DIR``.

An EKG satisfies the contract when it validates against the exported JSON Schema; every sentence
span slices non-blank text of the source; every evidence id is a real sentence id (node evidence:
a fact sentence of the narrative); every participant and edge endpoint exists; and the ledger
totals equal the sum of its entries.
"""

from __future__ import annotations

import math
from pathlib import Path

from argus.schema import DocumentEKG, export_json_schema


def contract_problems(ekg: DocumentEKG, source_text: str | None = None) -> list[str]:
    import jsonschema

    problems: list[str] = []
    validator = jsonschema.Draft202012Validator(export_json_schema())
    for err in list(validator.iter_errors(ekg.model_dump(mode="json")))[:10]:
        problems.append(f"schema: {'/'.join(map(str, err.absolute_path))}: {err.message[:200]}")
    ids = {s.id for s in ekg.sentences}
    if source_text is not None:
        for s in ekg.sentences:
            a, b = s.span
            if not (0 <= a < b <= len(source_text)) or not source_text[a:b].strip():
                problems.append(f"{s.id}: span {s.span} does not slice the source text")
    facts = {s.id for s in ekg.sentences if s.in_narrative and s.fact}
    for e in ekg.graph.events:
        bad = [x for x in e.evidence if x not in facts]
        if bad:
            problems.append(f"{e.id}: evidence {bad} is not a fact sentence of the narrative")
    entities = {e.id for e in ekg.graph.entities}
    events = {e.id for e in ekg.graph.events}
    for e in ekg.graph.events:
        for p in e.participants:
            if p.entity not in entities:
                problems.append(f"{e.id}: participant {p.entity} does not exist")
    for e in ekg.graph.temporal_edges + ekg.graph.causal_edges:
        if e.source not in events or e.target not in events:
            problems.append(f"edge {e.source}-{e.relation}->{e.target}: unknown endpoint")
        bad = [x for x in e.evidence if x not in ids]
        if bad:
            problems.append(f"edge {e.source}-{e.relation}->{e.target}: evidence {bad} is not a sentence id")
    t = ekg.ledger.totals
    entries = ekg.ledger.entries
    if t.calls != len(entries):
        problems.append(f"ledger: {t.calls} calls in totals, {len(entries)} entries")
    if t.prompt_tokens != sum(e.prompt_tokens for e in entries) or t.completion_tokens != sum(e.completion_tokens for e in entries):
        problems.append("ledger: token totals differ from the sum of entries")
    if not math.isclose(t.cost_usd, sum(e.cost_usd for e in entries), rel_tol=1e-9, abs_tol=1e-12):
        problems.append("ledger: cost total differs from the sum of entries")
    if sum(v.calls for v in ekg.ledger.by_stage.values()) != t.calls:
        problems.append("ledger: per-stage calls do not add up")
    return problems


def check_file(path: str | Path, source_text: str | None = None) -> tuple[DocumentEKG | None, list[str]]:
    try:
        ekg = DocumentEKG.model_validate_json(Path(path).read_text(encoding="utf-8"))
    except Exception as exc:  # a file that does not even parse
        return None, [f"not a valid EKG file: {str(exc)[:300]}"]
    if source_text is None and Path(ekg.source).is_file():
        source_text = Path(ekg.source).read_text(encoding="utf-8", errors="replace")
    return ekg, contract_problems(ekg, source_text)
