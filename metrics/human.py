"""Human-evaluation annotation sheets for Event Knowledge Graphs and their agreement report.

The ARGUS paper's protocol (§4, Table 4): annotators inspect every graph element together with the
source text that states it and label it **Aligned**, **Partially Aligned** or **Misaligned**, with
an error tag and a free-text explanation when applicable. The report gives the label shares,
percent agreement, Fleiss' κ and Krippendorff's α.

1. ``export_sheet(ekgs, "sheet.csv")`` writes one CSV row per element (entity, event, temporal
   edge, causal edge) with a readable description and the text of its evidence sentences; the
   ``annotator, label, error_tag, explanation`` columns are left empty.
2. Each annotator fills a copy (one sheet per annotator: the ``annotator`` column, or the file
   name when that column is empty).
3. ``read_sheets([...])`` validates and stacks the filled sheets; ``agreement_report(df)`` computes
   the Table 4 numbers (overall and per element kind) and the error-tag counts.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from argus.text.documents import labeled_sentences
from argus.errors import InputError
from argus.io import atomic_open
from argus.graph.schema import DocumentEKG
from metrics.agreement import fleiss_kappa, gwet_ac1, krippendorff_alpha, percent_agreement

LABELS: tuple[str, ...] = ("Aligned", "Partially Aligned", "Misaligned")
ERROR_TAGS: tuple[str, ...] = (
    "missing event", "wrong role", "hallucinated detail", "wrong time", "wrong relation",
    "wrong evidence", "duplicate", "other",
)
ELEMENT_KINDS: tuple[str, ...] = ("entity", "event", "temporal_edge", "causal_edge")
SHEET_COLUMNS: tuple[str, ...] = (
    "doc_id", "element_id", "element_kind", "description", "evidence_ids", "source_text",
    "annotator", "label", "error_tag", "explanation",
)
MAX_ENTITY_SENTENCES = 3

__all__ = [
    "LABELS", "ERROR_TAGS", "ELEMENT_KINDS", "SHEET_COLUMNS", "AgreementReport",
    "annotation_rows", "export_sheet", "read_sheets", "agreement_report",
]


def _key(text: str) -> str:
    return re.sub(r"[\s_\-]+", " ", text.strip().lower())


_LABEL_ALIASES: dict[str, str] = {_key(label): label for label in LABELS}
_LABEL_ALIASES.update({"partial": "Partially Aligned", "partially": "Partially Aligned"})
_TAG_ALIASES: dict[str, str] = {_key(tag): tag for tag in ERROR_TAGS}


# ----------------------------------------------------------------------------- export


def _event_label(ev) -> str:
    return f"{ev.type} ({ev.verb}) '{ev.trigger}'"


def _time(ev) -> str:
    return f"{ev.time.kind} {ev.time.value}" if ev.time.value else ev.time.kind


def _source_text(ids: list[str], sentences: dict[str, str]) -> str:
    return labeled_sentences((sid, sentences.get(sid, "(sentence not found)")) for sid in ids)


def annotation_rows(ekg: DocumentEKG) -> list[dict]:
    """One annotation row per graph element of ``ekg`` (entities, events, temporal, causal edges).

    ``element_id``: the entity / event id (``E1``, ``EV3``) or ``T:EV1-BEFORE->EV2`` /
    ``C:EV2-CAUSES->EV5`` for edges (``#2``, ``#3`` appended if an id repeats). ``evidence_ids``:
    the element's evidence sentences, ``;``-joined; an entity has none of its own, so it gets the
    evidence of the events it takes part in (document order, at most 3), or, if it takes part in
    none, the first sentences that mention its name or an alias. ``source_text``: ``[S3] text``
    lines of those sentences. The annotation columns are empty.
    """
    sentences = {s.id: s.text for s in ekg.sentences}
    order = {s.id: i for i, s in enumerate(ekg.sentences)}
    entities = {e.id: e for e in ekg.graph.entities}
    events = {e.id: e for e in ekg.graph.events}
    rows: list[dict] = []
    seen: dict[str, int] = {}

    def add(element_id: str, kind: str, description: str, evidence: list[str]) -> None:
        seen[element_id] = seen.get(element_id, 0) + 1
        if seen[element_id] > 1:
            element_id = f"{element_id}#{seen[element_id]}"
        rows.append({
            "doc_id": ekg.doc_id, "element_id": element_id, "element_kind": kind,
            "description": description, "evidence_ids": ";".join(evidence),
            "source_text": _source_text(evidence, sentences),
            "annotator": "", "label": "", "error_tag": "", "explanation": "",
        })

    for ent in ekg.graph.entities:
        desc = f"{ent.name} — {ent.kind}, {ent.role}"
        if ent.aliases:
            desc += "; aliases: " + ", ".join(ent.aliases)
        ids = {sid for ev in ekg.graph.events if any(p.entity == ent.id for p in ev.participants)
               for sid in ev.evidence}
        evidence = sorted(ids, key=lambda s: order.get(s, len(order)))[:MAX_ENTITY_SENTENCES]
        if not evidence:
            names = [n.lower() for n in (ent.name, *ent.aliases) if n.strip()]
            evidence = [s.id for s in ekg.sentences if any(n in s.text.lower() for n in names)]
            evidence = evidence[:MAX_ENTITY_SENTENCES]
        add(ent.id, "entity", desc, evidence)

    for ev in ekg.graph.events:
        parts = []
        for p in ev.participants:
            ent = entities.get(p.entity)
            parts.append(f"{p.role}: {ent.name if ent else '?'} [{p.entity}]")
        desc = f"{_event_label(ev)} — " + "; ".join([*parts, f"time: {_time(ev)}"])
        if ev.frame:
            desc += f"; frame: {ev.frame}"
        add(ev.id, "event", desc, list(ev.evidence))

    for prefix, kind, edges in (("T", "temporal_edge", ekg.graph.temporal_edges),
                                ("C", "causal_edge", ekg.graph.causal_edges)):
        for edge in edges:
            src, tgt = events.get(edge.source), events.get(edge.target)
            desc = (f"{edge.source} {_event_label(src) if src else '?'} {edge.relation} "
                    f"{edge.target} {_event_label(tgt) if tgt else '?'}")
            add(f"{prefix}:{edge.source}-{edge.relation}->{edge.target}", kind, desc, list(edge.evidence))
    return rows


def export_sheet(ekgs: DocumentEKG | Iterable[DocumentEKG], path: str | Path, annotator: str = "") -> Path:
    """Write the annotation sheet of ``ekgs`` to ``path`` (CSV, UTF-8, written atomically).

    Columns: ``SHEET_COLUMNS``. ``annotator`` pre-fills the annotator column. Returns the path.
    """
    if isinstance(ekgs, DocumentEKG):
        ekgs = [ekgs]
    path = Path(path)
    with atomic_open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(SHEET_COLUMNS))
        writer.writeheader()
        for ekg in ekgs:
            for row in annotation_rows(ekg):
                row["annotator"] = annotator
                writer.writerow(row)
    return path


# ----------------------------------------------------------------------------- import


def _normalize_label(value: str) -> str | None:
    return _LABEL_ALIASES.get(_key(value))


def _normalize_tags(value: str) -> tuple[list[str], str | None]:
    """Canonical tags of a cell (``;`` or ``,`` separated) and the first unknown one, if any."""
    tags = []
    for part in re.split(r"[;,]", value):
        if not part.strip():
            continue
        tag = _TAG_ALIASES.get(_key(part))
        if tag is None:
            return tags, part.strip()
        if tag not in tags:
            tags.append(tag)
    return tags, None


def read_sheets(paths: str | Path | Iterable[str | Path]) -> pd.DataFrame:
    """Read and validate filled annotation sheets (one annotator per sheet).

    The annotator is the sheet's ``annotator`` column (one distinct non-blank value) or, when that
    column is blank, the file stem. Labels match ``LABELS`` case-insensitively (``partial`` =
    Partially Aligned); error tags match ``ERROR_TAGS`` the same way, several may be given
    separated by ``;``. Rows with a blank label are unannotated: skipped, and counted in
    ``df.attrs["unannotated"]`` (total) and ``df.attrs["unannotated_by_annotator"]``.

    Raises ``InputError`` naming the file, the row (spreadsheet numbering: the header is row 1) and
    the bad value for an unknown label or error tag, a missing column, several annotators in one
    sheet, or an element rated twice by the same annotator.

    Returns a DataFrame with columns ``annotator, doc_id, element_id, element_kind, label,
    error_tag, explanation, file, row``.
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    records: list[dict] = []
    unannotated: dict[str, int] = {}
    where: dict[tuple[str, str, str], str] = {}
    for path in map(Path, paths):
        try:
            with open(path, encoding="utf-8-sig", newline="") as fh:
                reader = csv.DictReader(fh)
                header = reader.fieldnames or []
                rows = list(reader)
        except (OSError, UnicodeDecodeError, csv.Error) as exc:
            raise InputError(f"{path}: cannot read the annotation sheet: {exc}") from exc
        missing = [c for c in ("doc_id", "element_id", "label") if c not in header]
        if missing:
            raise InputError(f"{path}: missing column(s) {missing}; an annotation sheet has {list(SHEET_COLUMNS)}")
        names = {(r.get("annotator") or "").strip() for r in rows} - {""}
        if len(names) > 1:
            raise InputError(f"{path}: one sheet per annotator, but the annotator column names {sorted(names)}")
        annotator = names.pop() if names else path.stem
        unannotated.setdefault(annotator, 0)
        for number, row in enumerate(rows, start=2):
            raw_label = (row.get("label") or "").strip()
            if not raw_label:
                unannotated[annotator] += 1
                continue
            label = _normalize_label(raw_label)
            if label is None:
                raise InputError(
                    f"{path}, row {number}: unknown label {raw_label!r}; allowed: {', '.join(LABELS)} "
                    "(case-insensitive; 'partial' = Partially Aligned)"
                )
            tags, bad = _normalize_tags(row.get("error_tag") or "")
            if bad is not None:
                raise InputError(
                    f"{path}, row {number}: unknown error tag {bad!r}; allowed: {', '.join(ERROR_TAGS)} "
                    "(case-insensitive; several separated by ';')"
                )
            doc_id, element_id = (row.get("doc_id") or "").strip(), (row.get("element_id") or "").strip()
            key = (annotator, doc_id, element_id)
            if key in where:
                raise InputError(
                    f"{path}, row {number}: annotator {annotator!r} already rated {doc_id}/{element_id} "
                    f"({where[key]})"
                )
            where[key] = f"{path}, row {number}"
            records.append({
                "annotator": annotator, "doc_id": doc_id, "element_id": element_id,
                "element_kind": (row.get("element_kind") or "").strip(), "label": label,
                "error_tag": ";".join(tags), "explanation": (row.get("explanation") or "").strip(),
                "file": str(path), "row": number,
            })
    df = pd.DataFrame(records, columns=["annotator", "doc_id", "element_id", "element_kind", "label",
                                        "error_tag", "explanation", "file", "row"])
    df.attrs["unannotated"] = sum(unannotated.values())
    df.attrs["unannotated_by_annotator"] = unannotated
    return df


# ----------------------------------------------------------------------------- report


TABLE_ROWS: tuple[str, ...] = (*LABELS, "Percent Agreement", "Fleiss' κ", "Krippendorff's α")


@dataclass
class AgreementReport:
    """Human-evaluation agreement (the ARGUS paper's Table 4).

    ``table``: rows ``Aligned, Partially Aligned, Misaligned`` (shares of all ratings, 0–1),
    ``Percent Agreement``, ``Fleiss' κ`` (items rated by every annotator only), ``Krippendorff's α``
    (nominal, all items); column ``all`` plus one column per element kind present.
    ``counts``: per column, ``annotators``, ``items``, ``ratings``, ``items_multi`` (rated by ≥2
    annotators: the items percent agreement and α use) and ``items_complete`` (rated by every
    annotator: Fleiss' κ). ``ac1``: Gwet's AC1 per column (not in the paper's Table 4; over the
    three labels). ``error_tags``: count of each tag over all ratings, in total and by label.
    ``unannotated``: blank rows skipped by :func:`read_sheets`.
    """

    table: pd.DataFrame
    counts: pd.DataFrame
    error_tags: pd.DataFrame
    ac1: pd.Series
    unannotated: int = 0
    annotators: list[str] = field(default_factory=list)

    def to_markdown(self) -> str:
        """The table as Markdown: shares and agreement in percent, coefficients to 3 decimals."""
        shown = self.table.copy().astype(object)
        for metric in shown.index:
            pct = metric in (*LABELS, "Percent Agreement")
            shown.loc[metric] = [
                "—" if v is None or (isinstance(v, float) and math.isnan(v))
                else (f"{100 * v:.1f}%" if pct else f"{v:.3f}")
                for v in self.table.loc[metric]
            ]
        return shown.to_markdown()


def _stats(sub: pd.DataFrame, annotators: list[str]) -> tuple[dict, dict, float]:
    n = len(sub)
    values: dict[str, float] = {label: (float((sub["label"] == label).sum()) / n if n else math.nan)
                                for label in LABELS}
    wide = (sub.pivot(index=["doc_id", "element_id"], columns="annotator", values="label")
            .reindex(columns=annotators)) if n else pd.DataFrame(columns=annotators)
    rated = wide.notna().sum(axis=1) if n else pd.Series(dtype=int)
    values["Percent Agreement"] = percent_agreement(wide) if n else math.nan
    values["Fleiss' κ"] = fleiss_kappa(wide, categories=LABELS) if n else math.nan
    values["Krippendorff's α"] = krippendorff_alpha(wide, "nominal", categories=LABELS) if n else math.nan
    counts = {
        "annotators": int(sub["annotator"].nunique()),
        "items": int(len(wide)),
        "ratings": n,
        "items_multi": int((rated >= 2).sum()),
        "items_complete": int((rated == len(annotators)).sum()) if len(annotators) >= 2 else 0,
    }
    ac1 = gwet_ac1(wide, categories=LABELS) if n else math.nan
    return values, counts, ac1


def agreement_report(df: pd.DataFrame, by_kind: bool = True) -> AgreementReport:
    """Label shares, percent agreement, Fleiss' κ and Krippendorff's α of read sheets.

    ``df`` is :func:`read_sheets`' output. Items are ``(doc_id, element_id)``, raters the
    annotators. Label shares are over all ratings; percent agreement and α use the items with at
    least two ratings; Fleiss' κ the items every annotator rated (see
    :func:`metrics.agreement.fleiss_kappa`). With ``by_kind`` each element kind present gets its own
    column. See :class:`AgreementReport`.
    """
    for col in ("annotator", "doc_id", "element_id", "label"):
        if col not in df.columns:
            raise ValueError(f"missing column {col!r}; pass read_sheets()' output")
    annotators = list(pd.unique(df["annotator"]))
    columns = {"all": df}
    if by_kind and "element_kind" in df.columns:
        for kind in [*ELEMENT_KINDS, *sorted(set(df["element_kind"]) - set(ELEMENT_KINDS) - {""})]:
            sub = df[df["element_kind"] == kind]
            if len(sub):
                columns[kind] = sub
    tables, counts, ac1 = {}, {}, {}
    for name, sub in columns.items():
        tables[name], counts[name], ac1[name] = _stats(sub, annotators)
    table = pd.DataFrame(tables, index=list(TABLE_ROWS), dtype=float)
    table.index.name = "metric"
    counts_df = pd.DataFrame(counts, dtype=int)
    counts_df.index.name = "count"

    tag_rows = []
    tags = df["error_tag"].fillna("") if "error_tag" in df.columns else pd.Series([""] * len(df))
    for tag in ERROR_TAGS:
        has = np.array([tag in str(t).split(";") for t in tags], dtype=bool)
        row = {"error_tag": tag, "count": int(has.sum())}
        for label in LABELS:
            row[label] = int((has & (df["label"].to_numpy() == label)).sum())
        tag_rows.append(row)
    error_tags = pd.DataFrame(tag_rows, columns=["error_tag", "count", *LABELS])
    return AgreementReport(
        table=table, counts=counts_df, error_tags=error_tags, ac1=pd.Series(ac1, dtype=float, name="ac1"),
        unannotated=int(df.attrs.get("unannotated", 0)), annotators=annotators,
    )
