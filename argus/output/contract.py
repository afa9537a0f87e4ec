"""The output contract of a document EKG, checkable on any file: ``argus validate OUT_DIR``.

An EKG satisfies the contract when it validates against the exported JSON Schema; every sentence
span slices non-blank text of the source (the EKG's own ``text``, and the source file when it is
readable and unchanged; a PDF source is not read again, its SHA-256 must be ``source_sha256``); every entity mention and event trigger span lies in its sentence and slices
the text to its name, alias or trigger (``argus.graph.grounding.span_problems``); every evidence id is a real sentence id (node evidence:
a fact sentence of the narrative); every participant and edge endpoint exists; and the ledger
totals equal the sum of its entries.
"""

from __future__ import annotations

import math
from pathlib import Path

from argus.graph.schema import DocumentEKG, export_json_schema


def contract_problems(ekg: DocumentEKG, source_text: str | None = None) -> list[str]:
    import jsonschema

    problems: list[str] = []
    validator = jsonschema.Draft202012Validator(export_json_schema())
    for err in list(validator.iter_errors(ekg.model_dump(mode="json")))[:10]:
        problems.append(f"schema: {'/'.join(map(str, err.absolute_path))}: {err.message[:200]}")
    ids = {s.id for s in ekg.sentences}
    if source_text is not None and ekg.text and source_text != ekg.text:
        problems.append("text: the EKG's text differs from its source file (the file changed since extraction?)")
    source_text = ekg.text or source_text
    if ekg.text:
        from argus.graph.grounding import span_problems

        problems += span_problems(ekg)
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
    from argus.errors import InputError
    from argus.output.export import load_ekg

    try:
        ekg = load_ekg(path)
    except InputError as exc:
        return None, [str(exc)]
    problems: list[str] = []
    if source_text is None and Path(ekg.source).is_file():
        from argus.errors import ArgusError
        from argus.ingest.files import read_text_document
        from argus.ingest.pdf import is_pdf, sha256_file

        if is_pdf(ekg.source):  # not read again (OCR): the file must be the one its text came from
            if ekg.source_sha256 and sha256_file(ekg.source) != ekg.source_sha256:
                problems.append("source: the PDF's SHA-256 differs from the EKG's source_sha256 (the file changed "
                                "since extraction?)")
        else:
            try:
                source_text = read_text_document(ekg.source).text
            except ArgusError as exc:
                problems.append(f"source: {exc}")
    return ekg, problems + contract_problems(ekg, source_text)
