"""Human-evaluation sheets: export, read back, validation and the agreement report (hand-computed)."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from argus.errors import InputError
from argus.graph.schema import DocumentEKG
from metrics.human import (
    ERROR_TAGS,
    LABELS,
    SHEET_COLUMNS,
    agreement_report,
    annotation_rows,
    export_sheet,
    read_sheets,
)

SENTENCES = [
    "Acme Corp hired Maria Torres as a analyst in 2018.",
    "On May 1, 2020, Torres complained to HR about pay discrimination.",
    "Acme Corp terminated Torres on June 3, 2020.",
    "Her supervisor, Derek Palmer, was present at the meeting.",
    "Torres later took medical leave.",
]


def ev(i, etype, verb, trigger, evidence, participants=(), time=None):
    return {"id": f"EV{i}", "type": etype, "verb": verb, "trigger": trigger,
            "participants": [{"entity": e, "role": r} for e, r in participants],
            "time": time or {"kind": "unknown", "value": None}, "evidence": evidence, "sources": []}


def make_ekg(doc_id: str = "doc1") -> DocumentEKG:
    spans, pos = [], 0
    for text in SENTENCES:
        spans.append((pos, pos + len(text)))
        pos += len(text) + 1
    return DocumentEKG.model_validate({
        "doc_id": doc_id, "source": "test", "created": "2025-01-01T00:00:00Z", "models": {},
        "facts_section_found": True,
        "sentences": [{"id": f"S{i + 1}", "text": t, "span": spans[i], "section": "facts", "fact": True,
                       "fact_probability": 1.0, "fact_path": "section", "in_narrative": True}
                      for i, t in enumerate(SENTENCES)],
        "graph": {
            "entities": [
                {"id": "E1", "name": "Maria Torres", "kind": "person", "role": "plaintiff", "aliases": ["Torres"]},
                {"id": "E2", "name": "Acme Corp", "kind": "organization", "role": "employer"},
                {"id": "E3", "name": "Derek Palmer", "kind": "person", "role": "supervisor"},
            ],
            "events": [
                # listed out of document order on purpose (EV4's evidence S5 comes last)
                ev(4, "leave", "take", "took medical leave", ["S5"], [("E1", "agent")]),
                ev(1, "hiring", "hire", "hired", ["S1"], [("E2", "agent"), ("E1", "patient")],
                   {"kind": "explicit", "value": "2018"}),
                ev(2, "complaint", "complain", "complained", ["S2"], [("E1", "agent")],
                   {"kind": "explicit", "value": "2020-05-01"}),
                ev(3, "termination", "terminate", "terminated", ["S3"], [("E2", "agent"), ("E1", "patient")],
                   {"kind": "explicit", "value": "2020-06-03"}),
            ],
            "temporal_edges": [{"source": "EV2", "target": "EV3", "relation": "BEFORE",
                                "evidence": ["S2", "S3"], "origin": "C1"}],
            "causal_edges": [{"source": "EV2", "target": "EV3", "relation": "CAUSES",
                              "evidence": ["S3"], "origin": "resolver"}],
        },
        "ledger": {"entries": [], "totals": {}, "by_stage": {}},
    })


def test_annotation_rows_describe_every_element():
    rows = {r["element_id"]: r for r in annotation_rows(make_ekg())}
    assert list(rows) == ["E1", "E2", "E3", "EV4", "EV1", "EV2", "EV3",
                          "T:EV2-BEFORE->EV3", "C:EV2-CAUSES->EV3"]
    assert all(list(r) == list(SHEET_COLUMNS) for r in rows.values())
    ev3 = rows["EV3"]
    assert ev3["element_kind"] == "event"
    assert ev3["description"] == ("termination (terminate) 'terminated' — agent: Acme Corp [E2]; "
                                  "patient: Maria Torres [E1]; time: explicit 2020-06-03")
    assert ev3["evidence_ids"] == "S3"
    assert ev3["source_text"] == f"[S3] {SENTENCES[2]}"
    # entity: sentences of its events in document order, capped at 3 (S1, S2, S3; not S5)
    assert rows["E1"]["element_kind"] == "entity"
    assert rows["E1"]["description"] == "Maria Torres — person, plaintiff; aliases: Torres"
    assert rows["E1"]["evidence_ids"] == "S1;S2;S3"
    assert rows["E1"]["source_text"].splitlines() == [f"[S{i}] {SENTENCES[i - 1]}" for i in (1, 2, 3)]
    # entity in no event: sentences that mention it
    assert rows["E3"]["evidence_ids"] == "S4"
    t = rows["T:EV2-BEFORE->EV3"]
    assert t["element_kind"] == "temporal_edge" and t["evidence_ids"] == "S2;S3"
    assert "BEFORE" in t["description"] and "complaint (complain)" in t["description"]
    assert rows["C:EV2-CAUSES->EV3"]["element_kind"] == "causal_edge"
    assert all(r[c] == "" for r in rows.values() for c in ("annotator", "label", "error_tag", "explanation"))


def test_export_is_atomic_and_round_trips(tmp_path: Path):
    path = export_sheet([make_ekg("doc1"), make_ekg("doc2")], tmp_path / "sheets" / "sheet.csv", annotator="ann1")
    assert sorted(p.name for p in path.parent.iterdir()) == ["sheet.csv"]  # no temp file left
    with open(path, encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 18 and {r["doc_id"] for r in rows} == {"doc1", "doc2"}
    assert {r["annotator"] for r in rows} == {"ann1"}
    assert rows[0]["source_text"].count("\n") == 2  # multi-line cells survive the round trip
    before = path.read_bytes()

    def failing():
        yield make_ekg("doc3")
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        export_sheet(failing(), path)
    assert path.read_bytes() == before  # the old sheet is intact
    assert sorted(p.name for p in path.parent.iterdir()) == ["sheet.csv"]
    # an unfilled sheet reads back as all-unannotated
    df = read_sheets(path)
    assert len(df) == 0 and df.attrs["unannotated"] == 18


# Labels of the three annotators (ann3's T is left blank). A = Aligned, P = Partially, M = Misaligned.
FILL = {
    #            ann1 ann2 ann3
    "E1":       ("A", "A", "A"),
    "E2":       ("A", "A", "A"),
    "E3":       ("A", "A", "P"),
    "EV4":      ("M", "M", "A"),
    "EV1":      ("A", "A", "A"),
    "EV2":      ("P", "P", "P"),
    "EV3":      ("A", "A", "A"),
    "T:EV2-BEFORE->EV3": ("A", "A", ""),
    "C:EV2-CAUSES->EV3": ("A", "P", "M"),
}
# spelled variants the reader must accept
SPELLING = [{"A": "Aligned", "P": "Partially Aligned", "M": "Misaligned"},
            {"A": "aligned", "P": "partial", "M": "MISALIGNED"},
            {"A": " Aligned ", "P": "partially_aligned", "M": "misaligned"}]
TAGS = {
    (0, "EV4"): "hallucinated detail",
    (1, "EV4"): "Hallucinated_Detail",
    (0, "EV2"): "wrong time",
    (1, "C:EV2-CAUSES->EV3"): "wrong relation",
    (2, "C:EV2-CAUSES->EV3"): "wrong relation; wrong evidence",
}


def fill_sheets(tmp_path: Path) -> list[Path]:
    blank = export_sheet(make_ekg(), tmp_path / "blank.csv")
    with open(blank, encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    paths = []
    for a in range(3):
        out = tmp_path / f"ann{a + 1}.csv"
        with open(out, "w", encoding="utf-8", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(SHEET_COLUMNS))
            w.writeheader()
            for r in rows:
                code = FILL[r["element_id"]][a]
                w.writerow({**r,
                            # ann3 leaves the annotator column empty: the file stem names it
                            "annotator": "" if a == 2 else f"ann{a + 1}",
                            "label": SPELLING[a][code] if code else "",
                            "error_tag": TAGS.get((a, r["element_id"]), ""),
                            "explanation": "checked" if code else ""})
        paths.append(out)
    return paths


def test_read_sheets_and_report_match_hand_computation(tmp_path: Path):
    df = read_sheets(fill_sheets(tmp_path))
    assert sorted(df["annotator"].unique()) == ["ann1", "ann2", "ann3"]
    assert len(df) == 26 and df.attrs["unannotated"] == 1
    assert df.attrs["unannotated_by_annotator"] == {"ann1": 0, "ann2": 0, "ann3": 1}
    assert set(df["label"]) == set(LABELS)
    assert set(df.loc[df["element_id"] == "EV4", "error_tag"]) == {"hallucinated detail", ""}

    rep = agreement_report(df)
    all_ = rep.table["all"]
    assert list(rep.table.index) == ["Aligned", "Partially Aligned", "Misaligned", "Percent Agreement",
                                     "Fleiss' κ", "Krippendorff's α"]
    # 26 ratings: Aligned 7 + 6 + 5 = 18, Partially 1 + 2 + 2 = 5, Misaligned 1 + 1 + 1 = 3
    assert all_["Aligned"] == pytest.approx(18 / 26)
    assert all_["Partially Aligned"] == pytest.approx(5 / 26)
    assert all_["Misaligned"] == pytest.approx(3 / 26)
    # per-item agreeing pairs: six unanimous items (incl. T with two ratings) = 1, E3 and EV4
    # (2 vs 1) = 1/3, C (all different) = 0 -> (6 + 2/3) / 9 = 20/27
    assert all_["Percent Agreement"] == pytest.approx(20 / 27)
    # Fleiss: the 8 items all three rated. P̄ = (5 + 2/3)/8 = 17/24; category totals A 16, P 5,
    # M 3 of 24 -> P̄e = (16² + 5² + 3²)/24² = 290/576; κ = (408 − 290)/(576 − 290) = 59/143
    assert all_["Fleiss' κ"] == pytest.approx(59 / 143)
    # Krippendorff (nominal, all 26 values pairable): disagreeing ordered pairs / (m_u − 1):
    # E3 4/2 + EV4 4/2 + C 6/2 = 7; n_c = 18, 5, 3, n = 26; Σ_{c≠k} n_c n_k = 26² − 358 = 318;
    # α = 1 − (n − 1)·7/318 = 143/318
    assert all_["Krippendorff's α"] == pytest.approx(143 / 318)
    c = rep.counts["all"]
    assert (c["annotators"], c["items"], c["ratings"], c["items_multi"], c["items_complete"]) == (3, 9, 26, 9, 8)
    assert rep.unannotated == 1
    # Gwet AC1 over the 3 labels: pa = 20/27; π_A = 19/27, π_P = 5/27, π_M = 3/27;
    # pe = Σ π(1 − π) / 2 = 167/729; AC1 = (540 − 167)/(729 − 167) = 373/562
    assert rep.ac1["all"] == pytest.approx(373 / 562)

    # per element kind: entities E1, E2, E3 -> 8 Aligned of 9, agreement (1 + 1 + 1/3)/3 = 7/9
    assert list(rep.table.columns) == ["all", "entity", "event", "temporal_edge", "causal_edge"]
    assert rep.table.loc["Aligned", "entity"] == pytest.approx(8 / 9)
    assert rep.table.loc["Percent Agreement", "entity"] == pytest.approx(7 / 9)
    assert rep.table.loc["Percent Agreement", "causal_edge"] == 0.0
    assert math.isnan(rep.table.loc["Fleiss' κ", "temporal_edge"])  # no complete row

    tags = rep.error_tags.set_index("error_tag")
    assert list(tags.index) == list(ERROR_TAGS)
    assert tags.loc["hallucinated detail", "count"] == 2 and tags.loc["hallucinated detail", "Misaligned"] == 2
    assert tags.loc["wrong relation", "count"] == 2
    assert (tags.loc["wrong relation", "Partially Aligned"], tags.loc["wrong relation", "Misaligned"]) == (1, 1)
    assert tags.loc["wrong evidence", "count"] == 1 and tags.loc["wrong time", "count"] == 1
    assert tags.loc["missing event", "count"] == 0

    md = rep.to_markdown()
    assert "69.2%" in md and "0.413" in md


def _rewrite(path: Path, element_id: str, column: str, value: str) -> None:
    with open(path, encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        if r["element_id"] == element_id:
            r[column] = value
    with open(path, "w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(SHEET_COLUMNS))
        w.writeheader()
        w.writerows(rows)


def test_bad_label_or_tag_names_file_row_and_allowed_values(tmp_path: Path):
    paths = fill_sheets(tmp_path)
    _rewrite(paths[1], "E3", "label", "Algned")  # E3 is the third data row: spreadsheet row 4
    with pytest.raises(InputError) as err:
        read_sheets(paths)
    msg = str(err.value)
    assert "ann2.csv" in msg and "row 4" in msg and "'Algned'" in msg
    assert all(label in msg for label in LABELS)

    paths = fill_sheets(tmp_path)
    _rewrite(paths[0], "EV2", "error_tag", "wrong time; typo tag")  # EV2: data row 6 -> row 7
    with pytest.raises(InputError) as err:
        read_sheets(paths)
    msg = str(err.value)
    assert "ann1.csv" in msg and "row 7" in msg and "'typo tag'" in msg and "wrong evidence" in msg


def test_reader_rejects_mixed_annotators_and_duplicates(tmp_path: Path):
    paths = fill_sheets(tmp_path)
    _rewrite(paths[0], "E2", "annotator", "someone else")
    with pytest.raises(InputError, match="one sheet per annotator"):
        read_sheets(paths)
    paths = fill_sheets(tmp_path)
    with pytest.raises(InputError, match="already rated"):
        read_sheets([paths[0], paths[0]])
    (tmp_path / "bad.csv").write_text("doc_id,element_id\nd,E1\n", encoding="utf-8")
    with pytest.raises(InputError, match="missing column"):
        read_sheets(tmp_path / "bad.csv")
