"""``argus annotate serve`` without a browser: the SPEC's rules, EKG → gold, every edit kind through the API,
validation, the token, paths, revisions, undo, reloading, and ``argus eval`` on the saved gold files.

The EKGs are the offline default's (``argus.extract`` with the default configuration) on three annotated
complaints, made once per session (a few seconds); each test serves a fresh copy of them.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from argus.output.annotate import CORRECTIONS_SUFFIX, GOLD_SUFFIX, TOKEN_HEADER, NotFound, create_app, host_name
from argus.output.gold_edits import (
    EditError,
    apply_ops,
    changes_summary,
    gold_from_ekg,
    iter_sentences,
    SECTION_KINDS,
)
from argus.paths import complaints_dir
from metrics.gold import load_gold
from metrics.gold.validate import SECTION_KINDS as SPEC_SECTION_KINDS
from metrics.gold.validate import gold_problems
from tests.conftest import needs_data

COMPLAINTS = ("train/edpa-2-21-cv-05871", "dev/nysd-1-24-cv-03572", "train/edpa-2-21-cv-09432")
"""Three annotated complaints of three styles (a short dated one, a dev one, an amended complaint)."""

TOKEN = "test-token"
HOST = "http://127.0.0.1:8765"


@pytest.fixture(scope="session")
def ekg_dir(tmp_path_factory) -> Path:
    """The offline default's EKGs of :data:`COMPLAINTS` (``<doc_id>.ekg.json``), made once."""
    import argus
    from argus.output.export import write_ekg

    root = complaints_dir("train").parent
    if not root.is_dir():
        pytest.skip(f"shared data not found at {root}")
    tmp = tmp_path_factory.mktemp("annotate")
    cfg = argus.ArgusConfig.load(None, {"cache_dir": str(tmp / "cache")})
    out = tmp / "ekgs"
    for name in COMPLAINTS:
        write_ekg(argus.extract(root / name / "complaint.txt", cfg), out, graphml=False)
    return out


@pytest.fixture
def folder(ekg_dir, tmp_path) -> Path:
    out = tmp_path / "docs"
    shutil.copytree(ekg_dir, out)
    return out


@pytest.fixture
def client(folder):
    from starlette.testclient import TestClient

    return TestClient(create_app(folder, token=TOKEN), base_url=HOST)


def doc_ids(folder: Path) -> list[str]:
    return sorted(p.name[: -len(".ekg.json")] for p in folder.glob("*.ekg.json"))


def post(client, doc_id: str, revision: int, *ops, token: str | None = TOKEN):
    headers = {TOKEN_HEADER: token} if token is not None else {}
    return client.post(f"/api/doc/{doc_id}", json={"revision": revision, "ops": list(ops)}, headers=headers)


def ok(res) -> dict:
    assert res.status_code == 200, res.text
    return res.json()


def text_of(folder: Path, doc_id: str) -> str:
    return json.loads((folder / f"{doc_id}.ekg.json").read_text(encoding="utf-8"))["text"]


def facts_sentences(gold: dict) -> list[dict]:
    return [s for sec, s in iter_sentences(gold) if sec["kind"] == "facts"]


def a_word(text: str, sentence: dict, avoid: set[tuple[int, int]] = frozenset()) -> tuple[int, int]:
    """The span of the last word of at least four letters of ``sentence`` in ``text``, not one of ``avoid``."""
    a, b = sentence["span"]
    words = [(m.start(), m.end()) for m in re.finditer(r"[A-Za-z]{4,}", text[a:b])]
    for s, e in reversed(words):
        if (a + s, a + e) not in avoid:
            return a + s, a + e
    raise AssertionError(f"no word in {sentence['id']}")


def assert_valid_gold(folder: Path, doc_id: str) -> dict:
    """The saved gold file loads with load_gold, keeps the SPEC's rules against the text; returns it parsed."""
    path = folder / f"{doc_id}{GOLD_SUFFIX}"
    data = json.loads(path.read_text(encoding="utf-8"))
    assert gold_problems(data, text_of(folder, doc_id)) == []
    gold = load_gold(path)
    assert gold.doc_id == doc_id and gold.sentences and gold.meta["annotation"]["revision"] >= 1
    return data


# ----------------------------------------------------------------------------- the SPEC's rules


def test_section_kinds_are_the_spec_s():
    assert SECTION_KINDS == SPEC_SECTION_KINDS


@needs_data
def test_every_corpus_gold_keeps_the_spec_rules_and_breaks_are_named(all_dirs):
    for d in all_dirs:
        data = json.loads((d / "gold.json").read_text(encoding="utf-8"))
        assert gold_problems(data, (d / "complaint.txt").read_text(encoding="utf-8")) == [], d.name
    data = json.loads((all_dirs[0] / "gold.json").read_text(encoding="utf-8"))
    g = data["graph"]
    fact_id = next(s["id"] for sec, s in iter_sentences(data) if sec["kind"] == "facts")
    other_id = next(s["id"] for sec, s in iter_sentences(data) if sec["kind"] != "facts")
    ev1, ev2 = g["events"][0]["id"], g["events"][1]["id"]
    breaks = {
        "is not a sentence of a facts section": lambda d: d["graph"]["events"][0].update(evidence=[other_id]),
        "is not one of": lambda d: d["sections"][0].update(kind="preamble"),
        "sentence id should be S1": lambda d: d["sections"][0]["paragraphs"][0][0].update(id="S0"),
        "ends after the text": lambda d: d["sections"][-1]["paragraphs"][-1][-1].update(span=[0, 10 ** 7]),
        "an edge from an event to itself": lambda d: d["graph"]["temporal_edges"].append(
            {"source": ev1, "target": ev1, "relation": "BEFORE", "evidence": [fact_id]}),
        "is not an event of the graph": lambda d: d["graph"]["causal_edges"].append(
            {"source": ev1, "target": "EV999", "relation": "CAUSES", "evidence": [fact_id]}),
        "graph.events.0.type": lambda d: d["graph"]["events"][0].update(type="firing"),
        "used twice": lambda d: d["graph"]["events"][1].update(id=ev1),
        "stated twice": lambda d: d["graph"]["temporal_edges"].extend(
            [{"source": ev1, "target": ev2, "relation": "OVERLAP", "evidence": [fact_id]}] * 2),
    }
    text = (all_dirs[0] / "complaint.txt").read_text(encoding="utf-8")
    for expected, breaking in breaks.items():
        broken = json.loads(json.dumps(data))
        breaking(broken)
        problems = gold_problems(broken, text)
        assert any(expected in p for p in problems), (expected, problems)


@needs_data
def test_the_model_graph_as_gold_keeps_the_rules(ekg_dir):
    from argus.output.export import load_ekg

    for f in sorted(ekg_dir.glob("*.ekg.json")):
        ekg = load_ekg(f)
        gold = gold_from_ekg(ekg)
        assert gold_problems(gold, ekg.text) == [], f.name
        loaded = load_gold(gold)
        assert [s.span for s in loaded.sentences] == [tuple(s.span) for s in ekg.sentences]
        assert [s.fact for s in loaded.sentences] == [bool(s.fact) for s in ekg.sentences]
        assert {e.id for e in loaded.graph.events} <= {e.id for e in ekg.graph.events}
        spans = gold["annotation"]["trigger_spans"]
        assert spans and all(ekg.text[a:b] for a, b in spans.values())
        assert gold["claims"] == [] and gold["faq"] == []


@needs_data
def test_a_filing_without_a_facts_heading_keeps_its_events(ekg_dir, tmp_path):
    import argus

    path = tmp_path / "plain.txt"
    path.write_text("Jane Roe worked for Acme Corp. as a clerk from 2015. On March 3, 2019, her supervisor John Doe "
                    "told her she was too old. She complained to human resources on March 5, 2019. Two weeks later, "
                    "Acme fired her.\n", encoding="utf-8")
    ekg = argus.extract(path, argus.ArgusConfig.load(None, {"cache_dir": str(ekg_dir.parent / "cache")}))
    assert not ekg.facts_section_found and ekg.graph.events
    gold = gold_from_ekg(ekg)
    assert {sec["kind"] for sec in gold["sections"]} == {"facts"}
    assert len(gold["graph"]["events"]) == len(ekg.graph.events) and gold_problems(gold, ekg.text) == []


# ----------------------------------------------------------------------------- pages and reads


@needs_data
def test_index_page_and_document_before_any_write(client, folder):
    ids = doc_ids(folder)
    listing = ok(client.get("/api/docs"))["documents"]
    assert [r["doc_id"] for r in listing] == ids and {r["status"] for r in listing} == {"model"}
    index = client.get("/")
    assert index.status_code == 200 and all(f'href="/doc/{i}"' in index.text for i in ids)
    page = client.get(f"/doc/{ids[0]}")
    assert page.status_code == 200
    assert "connect-src 'self'" in page.text and "default-src 'none'" in page.text
    assert TOKEN in page.text and 'id="annotate-data"' in page.text and 'id="ekg-data"' in page.text
    for panel in ("text-pane", "editor", "events", "timeline", "graph", "entities", "save-state"):
        assert f'id="{panel}"' in page.text
    doc = ok(client.get(f"/api/doc/{ids[0]}"))
    assert (doc["revision"], doc["status"], doc["saved"], doc["problems"]) == (0, "model", False, [])
    assert doc["next"] == ids[1] and doc["prev"] is None
    assert not list(folder.glob(f"*{GOLD_SUFFIX}"))  # reading writes nothing
    from argus.output.view import write_view

    assert "connect-src" not in write_view(folder / f"{ids[0]}.ekg.json").read_text(encoding="utf-8")  # the view: none


# ----------------------------------------------------------------------------- every edit kind


@needs_data
def test_each_edit_kind_is_applied_counted_and_saved_as_valid_gold(client, folder):
    doc_id = doc_ids(folder)[0]
    text = text_of(folder, doc_id)
    model = ok(client.get(f"/api/doc/{doc_id}"))["gold"]
    g = model["graph"]
    events = [e["id"] for e in g["events"]]
    ev_a, ev_b, ev_c, ev_d = events[0], events[1], events[-1], events[-2]
    new_type = "termination" if g["events"][0]["type"] != "termination" else "hiring"
    edge = g["temporal_edges"][0]
    facts = facts_sentences(model)
    spans = {tuple(v) for v in model["annotation"]["trigger_spans"].values()}
    start, end = a_word(text, facts[0], spans)
    non_fact = next(s for s in facts if s["fact"] is False) if any(s["fact"] is False for s in facts) else facts[-1]
    ent = g["entities"][0]
    role = "comparator" if ent["role"] != "comparator" else "witness"
    kind = "group" if ent["kind"] != "group" else "other"

    rev = 0
    steps = [
        ({"op": "set_type", "event": ev_a, "type": new_type}, "type_changes"),
        ({"op": "add_event", "start": start - 1 if text[start - 1] == " " else start, "end": end, "type": "complaint"},
         "events_added"),
        ({"op": "merge_events", "keep": ev_b, "absorb": ev_c}, "events_merged"),
        ({"op": "delete_event", "event": ev_d}, "events_deleted"),
        ({"op": "reverse_edge", "kind": "temporal", **{k: edge[k] for k in ("source", "target", "relation")}},
         "temporal_reversed"),
        ({"op": "add_edge", "kind": "causal", "source": ev_a, "target": ev_b, "relation": "ENABLES"}, "causal_added"),
        ({"op": "set_entity", "entity": ent["id"], "role": role, "kind": kind,
          "aliases": [*ent["aliases"], "the Firm"]},
         "entity_role_fixes"),
        ({"op": "set_fact", "sentence": non_fact["id"], "fact": not non_fact["fact"]}, "fact_flips"),
    ]
    for op, counted in steps:
        doc = ok(post(client, doc_id, rev, op))
        assert doc["revision"] == rev + 1 and doc["status"] == "draft" and doc["problems"] == []
        assert doc["changes"]["changes"][counted] >= 1, (op, doc["changes"])
        rev = doc["revision"]
        if op["op"] == "add_event":
            created = doc["created"][0]
            new = next(e for e in doc["gold"]["graph"]["events"] if e["id"] == created)
            assert new["trigger"] == text[start:end] and new["evidence"] == [facts[0]["id"]]
            assert doc["gold"]["annotation"]["trigger_spans"][created] == [start, end]  # the space trimmed
            assert created not in events
    # a temporal edge deleted, then one added: all the edge kinds
    doc = ok(post(client, doc_id, rev, {"op": "delete_edge", "kind": "temporal", "source": edge["target"],
                                        "target": edge["source"], "relation": edge["relation"]},
                  {"op": "add_edge", "kind": "temporal", "source": ev_a, "target": created, "relation": "OVERLAP"}))
    rev = doc["revision"]
    final = doc["gold"]
    assert {e["id"] for e in final["graph"]["events"]} == set(events) - {ev_c, ev_d} | {created}
    merged = next(e for e in final["graph"]["events"] if e["id"] == ev_b)
    absorbed = next(e for e in g["events"] if e["id"] == ev_c)
    assert set(absorbed["evidence"]) <= set(merged["evidence"])
    assert not any(ev_c in (e["source"], e["target"]) or ev_d in (e["source"], e["target"])
                   for k in ("temporal_edges", "causal_edges") for e in final["graph"][k])
    fixed = next(e for e in final["graph"]["entities"] if e["id"] == ent["id"])
    assert (fixed["role"], fixed["kind"], fixed["aliases"][-1]) == (role, kind, "the Firm")

    saved = assert_valid_gold(folder, doc_id)
    assert saved["annotation"]["revision"] == rev and saved["annotation"]["status"] == "draft"
    assert saved["annotation"]["ekg"] == f"{doc_id}.ekg.json" and len(saved["annotation"]["ekg_sha256"]) == 64
    corr = json.loads((folder / f"{doc_id}{CORRECTIONS_SUFFIX}").read_text(encoding="utf-8"))
    c = corr["changes"]
    assert (c["type_changes"], c["events_added"], c["events_merged"], c["events_deleted"]) == (1, 1, 1, 1)
    assert (c["entity_role_fixes"], c["entity_kind_fixes"], c["entity_alias_fixes"], c["fact_flips"]) == (1, 1, 1, 1)
    assert c["causal_added"] >= 1 and c["temporal_added"] >= 1 and c["temporal_removed"] >= 1
    assert corr["edits"]["set_type"] == 1 and len(corr["steps"]) == rev
    assert saved["annotation"]["changes"] == c
    assert 0 < corr["agreement"]["events_kept"] < 1 and corr["agreement"]["event_types"] < 1

    # accepted: the status the index shows
    doc = ok(post(client, doc_id, rev, {"op": "accept"}))
    assert doc["status"] == "accepted"
    row = next(r for r in ok(client.get("/api/docs"))["documents"] if r["doc_id"] == doc_id)
    assert (row["status"], row["revision"]) == ("accepted", rev + 1)


@needs_data
def test_what_a_person_types_is_shown_as_text(client, folder):
    doc_id = doc_ids(folder)[0]
    hostile = '</script><img src=x onerror="alert(1)">'
    ok(post(client, doc_id, 0, {"op": "set_entity", "entity": "E1", "name": hostile, "aliases": [hostile + "2"]}))
    page = client.get(f"/doc/{doc_id}").text
    assert "<img src=x" not in page and "&lt;/script&gt;&lt;img src=x" in page
    blocks = re.findall(r'<script type="application/json" id="[a-z-]+">(.*?)</script>', page, flags=re.S)
    assert len(blocks) == 2 and all("<" not in b for b in blocks)
    assert json.loads(blocks[0])["entities"]["E1"]["name"] == hostile


@needs_data
def test_undo_takes_back_one_write_at_a_time(client, folder):
    doc_id = doc_ids(folder)[1]
    model = ok(client.get(f"/api/doc/{doc_id}"))["gold"]
    ev = model["graph"]["events"][0]
    other = "other" if ev["type"] != "other" else "leave"
    one = ok(post(client, doc_id, 0, {"op": "set_type", "event": ev["id"], "type": other}))["gold"]
    two = ok(post(client, doc_id, 1, {"op": "delete_event", "event": ev["id"]}))
    assert two["undo"] == 2
    back = ok(post(client, doc_id, 2, {"op": "undo"}))
    assert back["revision"] == 3 and back["gold"]["graph"] == one["graph"] and back["undo"] == 1
    back = ok(post(client, doc_id, 3, {"op": "undo"}))
    assert back["gold"]["graph"] == model["graph"] and back["changes"]["total"] == 0
    res = post(client, doc_id, 4, {"op": "undo"})
    assert res.status_code == 400 and "nothing to undo" in res.json()["error"]
    res = post(client, doc_id, 4, {"op": "undo"}, {"op": "accept"})
    assert res.status_code == 400 and "alone" in res.json()["error"]
    assert_valid_gold(folder, doc_id)


# ----------------------------------------------------------------------------- validation, token, paths, revisions


@needs_data
def test_every_bad_edit_is_refused_with_its_reason_and_nothing_is_written(client, folder):
    doc_id = doc_ids(folder)[0]
    text = text_of(folder, doc_id)
    model = ok(client.get(f"/api/doc/{doc_id}"))["gold"]
    ev = model["graph"]["events"][0]["id"]
    ev2 = model["graph"]["events"][1]["id"]
    facts = facts_sentences(model)
    outside = next(s for sec, s in iter_sentences(model) if sec["kind"] != "facts")
    s1, s2 = facts[0], facts[1]
    bad = [
        ({"op": "set_type", "event": ev, "type": "firing"}, "type 'firing' is not one of"),
        ({"op": "set_type", "event": "EV999", "type": "other"}, "no event 'EV999'"),
        ({"op": "set_type", "event": ev}, "'type' is missing"),
        ({"op": "set_type", "event": ev, "type": "other", "x": 1}, "unknown field(s) x"),
        ({"op": "rename", "event": ev}, "unknown op 'rename'"),
        ({"op": "add_event", "start": len(text) - 2, "end": len(text) + 5}, "not inside the text"),
        ({"op": "add_event", "start": s1["span"][1] - 3, "end": s2["span"][0] + 3}, "not inside one sentence"),
        ({"op": "add_event", "start": outside["span"][0], "end": outside["span"][0] + 5},
         "events are annotated in the facts sections only"),
        ({"op": "add_event", "start": "3", "end": 9}, "'start' should be a int"),
        ({"op": "merge_events", "keep": ev, "absorb": ev}, "merged with itself"),
        ({"op": "add_edge", "kind": "temporal", "source": ev, "target": ev, "relation": "BEFORE"},
         "two different events"),
        ({"op": "add_edge", "kind": "temporal", "source": ev, "target": "EV999", "relation": "BEFORE"},
         "no event 'EV999'"),
        ({"op": "add_edge", "kind": "temporal", "source": ev, "target": ev2, "relation": "CAUSES"},
         "relation 'CAUSES' is not one of BEFORE"),
        ({"op": "add_edge", "kind": "spatial", "source": ev, "target": ev2, "relation": "BEFORE"}, "kind 'spatial'"),
        ({"op": "delete_edge", "kind": "causal", "source": ev, "target": ev2, "relation": "PREVENTS"},
         f"no causal edge {ev} PREVENTS {ev2}"),
        ({"op": "set_entity", "entity": "E1", "role": "judge"}, "role 'judge' is not one of"),
        ({"op": "set_entity", "entity": "E1", "kind": "animal"}, "kind 'animal' is not one of"),
        ({"op": "set_entity", "entity": "E999", "role": "hr"}, "no entity 'E999'"),
        ({"op": "set_entity", "entity": "E1", "aliases": "Smith"}, "'aliases' should be a list"),
        ({"op": "set_entity", "entity": "E1"}, "nothing to set"),
        ({"op": "set_fact", "sentence": "S9999", "fact": True}, "no sentence 'S9999'"),
        ({"op": "set_fact", "sentence": "S1", "fact": "yes"}, "'fact' should be a bool"),
    ]
    for op, expected in bad:
        res = post(client, doc_id, 0, op)
        assert res.status_code == 400 and expected in res.json()["error"], (op, res.text)
    # one bad operation among good ones: none applied
    res = post(client, doc_id, 0, {"op": "set_type", "event": ev, "type": "other"}, {"op": "set_type", "event": "EV0"})
    assert res.status_code == 400 and res.json()["error"].startswith("operation 2:")
    for body, expected in (({"revision": "0", "ops": [{"op": "accept"}]}, "revision"),
                           ({"revision": 0, "ops": []}, "non-empty list"),
                           ({"revision": 0, "ops": [{"op": "accept"}], "force": True}, "send {"),
                           ({"revision": 0, "ops": [{"op": "accept"}] * 500}, "at most")):
        res = client.post(f"/api/doc/{doc_id}", json=body, headers={TOKEN_HEADER: TOKEN})
        assert res.status_code == 400 and expected in res.json()["error"], (body, res.text)
    res = client.post(f"/api/doc/{doc_id}", content=b"{not json", headers={TOKEN_HEADER: TOKEN,
                                                                           "Content-Type": "application/json"})
    assert res.status_code == 400 and "not JSON" in res.json()["error"]
    res = client.post(f"/api/doc/{doc_id}", content=b"revision=0", headers={TOKEN_HEADER: TOKEN,
                                                                           "Content-Type": "text/plain"})
    assert res.status_code == 415
    assert not list(folder.glob(f"*{GOLD_SUFFIX}")) and ok(client.get(f"/api/doc/{doc_id}"))["revision"] == 0


@needs_data
def test_a_write_needs_the_run_s_token(client, folder):
    doc_id = doc_ids(folder)[0]
    for token in (None, "", "wrong-token", TOKEN + "x"):
        res = post(client, doc_id, 0, {"op": "accept"}, token=token)
        assert res.status_code == 403 and TOKEN_HEADER in res.json()["error"]
    assert not (folder / f"{doc_id}{GOLD_SUFFIX}").exists()
    from starlette.testclient import TestClient

    other_run = TestClient(create_app(folder), base_url=HOST)  # a new run: a new random token
    assert other_run.app.state.token != TOKEN and len(other_run.app.state.token) >= 32
    assert post(other_run, doc_id, 0, {"op": "accept"}).status_code == 403
    assert ok(post(client, doc_id, 0, {"op": "accept"}))["status"] == "accepted"


@needs_data
def test_no_path_outside_the_folder_is_read_or_written(client, folder, tmp_path):
    doc_id = doc_ids(folder)[0]
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copy(folder / f"{doc_id}.ekg.json", outside / "secret.ekg.json")
    (folder / "linked.ekg.json").symlink_to(outside / "secret.ekg.json")  # a link out of the folder
    (folder / "notes.txt").write_text("not a document")
    for bad in ("..", "../outside/secret", "..%2F..%2Fetc%2Fpasswd", "%2e%2e", "linked", "notes", "notes.txt",
                f"{doc_id}.ekg.json", f"{doc_id}%00", "secret", ".hidden"):
        for res in (client.get(f"/api/doc/{bad}"), post(client, bad, 0, {"op": "accept"})):
            assert res.status_code == 404, (bad, res.request.method, res.status_code)
        if bad != "..":  # (the client itself makes /doc/.. the index, /)
            assert client.get(f"/doc/{bad}").status_code == 404, bad
    store = client.app.state.store
    for bad in ("..", ".", "", "a/b", "..\\x", f"../{folder.name}/{doc_id}", f"{doc_id}\x00"):
        with pytest.raises(NotFound):
            store.check_id(bad)
    assert "linked" not in [r["doc_id"] for r in ok(client.get("/api/docs"))["documents"]]
    assert sorted(p.name for p in outside.iterdir()) == ["secret.ekg.json"]
    assert not list(folder.glob(f"*{GOLD_SUFFIX}"))
    # a gold file that is a link is neither read nor written through
    (folder / f"{doc_id}{GOLD_SUFFIX}").symlink_to(outside / "secret.ekg.json")
    assert client.get(f"/api/doc/{doc_id}").status_code == 404
    # only loopback Host names are answered (no DNS rebinding)
    from starlette.testclient import TestClient

    assert TestClient(client.app, base_url="http://attacker.example").get("/").status_code == 400
    assert TestClient(client.app, base_url="http://127.0.0.1.attacker.example:8765").get("/").status_code == 400
    assert TestClient(client.app, base_url="http://localhost:8765").get("/").status_code == 200
    assert [host_name(h) for h in ("127.0.0.1:8765", "[::1]:8765", "[::1]", "LocalHost", "::1")] == [
        "127.0.0.1", "::1", "::1", "localhost", "::1"]


@needs_data
def test_two_tabs_never_lose_a_write(client, folder):
    doc_id = doc_ids(folder)[2]
    model = ok(client.get(f"/api/doc/{doc_id}"))["gold"]
    ev = model["graph"]["events"]
    tab1 = ok(post(client, doc_id, 0, {"op": "set_type", "event": ev[0]["id"], "type": "medical"}))
    res = post(client, doc_id, 0, {"op": "delete_event", "event": ev[1]["id"]})  # the second tab, still at 0
    assert res.status_code == 409 and res.json()["revision"] == 1 and "changed elsewhere" in res.json()["error"]
    now = ok(client.get(f"/api/doc/{doc_id}"))
    assert now["gold"]["graph"] == tab1["gold"]["graph"] and now["revision"] == 1
    ok(post(client, doc_id, now["revision"], {"op": "delete_event", "event": ev[1]["id"]}))  # after reloading
    saved = assert_valid_gold(folder, doc_id)
    assert {e["id"]: e["type"] for e in saved["graph"]["events"]}[ev[0]["id"]] == "medical"
    assert ev[1]["id"] not in {e["id"] for e in saved["graph"]["events"]}


@needs_data
def test_a_broken_file_is_named_and_the_others_go_on(client, folder):
    ids = doc_ids(folder)
    (folder / "broken.ekg.json").write_text("{not an ekg", encoding="utf-8")
    (folder / f"{ids[0]}{GOLD_SUFFIX}").write_text("[1, 2", encoding="utf-8")
    rows = {r["doc_id"]: r for r in ok(client.get("/api/docs"))["documents"]}
    assert "not a readable EKG" in rows["broken"]["error"] and "is not JSON" in rows[ids[0]]["error"]
    assert rows[ids[1]]["error"] is None and client.get("/").status_code == 200
    res = client.get("/api/doc/broken")
    assert res.status_code == 422 and "not a readable EKG" in res.json()["error"]
    assert post(client, ids[0], 0, {"op": "accept"}).status_code == 400  # refused, the file left as it is
    assert (folder / f"{ids[0]}{GOLD_SUFFIX}").read_text(encoding="utf-8") == "[1, 2"


@needs_data
def test_a_write_that_cannot_be_saved_changes_nothing(client, folder, monkeypatch):
    import argus.output.annotate as annotate

    doc_id = doc_ids(folder)[0]
    ev = ok(client.get(f"/api/doc/{doc_id}"))["gold"]["graph"]["events"][0]

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(annotate, "write_json_atomic", full)
    res = post(client, doc_id, 0, {"op": "delete_event", "event": ev["id"]})
    assert res.status_code == 500 and "No space left" in res.json()["error"]
    monkeypatch.undo()
    doc = ok(client.get(f"/api/doc/{doc_id}"))
    assert doc["revision"] == 0 and ev["id"] in {e["id"] for e in doc["gold"]["graph"]["events"]}
    assert ok(post(client, doc_id, 0, {"op": "delete_event", "event": ev["id"]}))["revision"] == 1


@needs_data
def test_a_new_run_starts_from_the_saved_gold_and_undo_still_works(client, folder):
    from starlette.testclient import TestClient

    doc_id = doc_ids(folder)[0]
    model = ok(client.get(f"/api/doc/{doc_id}"))["gold"]
    ev = model["graph"]["events"][0]["id"]
    ok(post(client, doc_id, 0, {"op": "set_type", "event": ev, "type": "charge_filing"}))
    saved = ok(post(client, doc_id, 1, {"op": "accept"}))

    again = TestClient(create_app(folder, token="second-run"), base_url=HOST)
    doc = ok(again.get(f"/api/doc/{doc_id}"))
    assert (doc["revision"], doc["status"], doc["notes"]) == (2, "accepted", [])
    assert doc["gold"]["graph"] == saved["gold"]["graph"]
    assert ">charge_filing<" in again.get(f"/doc/{doc_id}").text
    back = ok(post(again, doc_id, 2, {"op": "undo"}, token="second-run"))
    assert back["status"] == "draft" and back["gold"]["graph"] == saved["gold"]["graph"]
    back = ok(post(again, doc_id, 3, {"op": "undo"}, token="second-run"))
    assert back["gold"]["graph"] == model["graph"]
    # back at the model's graph, saved: a third run reads it with its (empty) history, no note
    third = TestClient(create_app(folder, token="third-run"), base_url=HOST)
    assert ok(third.get(f"/api/doc/{doc_id}"))["notes"] == []

    # a gold file edited by hand: the page starts from it, with no undo before it
    path = folder / f"{doc_id}{GOLD_SUFFIX}"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["graph"]["events"][0]["type"] = "resignation"
    path.write_text(json.dumps(data), encoding="utf-8")
    doc = ok(again.get(f"/api/doc/{doc_id}"))
    assert doc["gold"]["graph"]["events"][0]["type"] == "resignation" and doc["notes"] and doc["undo"] == 0
    assert doc["changes"]["changes"]["type_changes"] == 1  # still counted against the model's graph
    res = post(again, doc_id, doc["revision"], {"op": "undo"}, token="second-run")
    assert res.status_code == 400 and "nothing to undo" in res.json()["error"]


# ----------------------------------------------------------------------------- agreement and eval


def _gold(events, temporal=(), causal=(), facts=(True,)):
    sents = [{"id": f"S{i}", "text": "x", "fact": f, "span": [i * 2, i * 2 + 1], "section": "facts"}
             for i, f in enumerate(facts, 1)]
    return {"doc_id": "toy", "sections": [{"heading": "", "kind": "facts", "paragraphs": [sents]}],
            "graph": {"entities": [], "events": [{"id": e, "type": t, "verb": "v", "trigger": "t", "frame": None,
                                                  "participants": [], "time": {"kind": "unknown", "value": None},
                                                  "evidence": ["S1"]} for e, t in events],
                      "temporal_edges": [{"source": s, "target": t, "relation": r, "evidence": ["S1"]}
                                         for s, t, r in temporal],
                      "causal_edges": [{"source": s, "target": t, "relation": r, "evidence": ["S1"]}
                                       for s, t, r in causal]},
            "annotation": {"trigger_spans": {}}}


def test_changes_are_counted_as_the_project_scores_edges():
    model = _gold([("EV1", "hiring"), ("EV2", "other"), ("EV3", "other"), ("EV4", "leave")],
                  temporal=[("EV1", "EV2", "BEFORE"), ("EV3", "EV4", "OVERLAP"), ("EV2", "EV4", "BEFORE")],
                  causal=[("EV3", "EV4", "CAUSES")], facts=(True, False))
    fixed, _ = apply_ops(model, [{"op": "merge_events", "keep": "EV2", "absorb": "EV3"},
                                 {"op": "reverse_edge", "kind": "temporal", "source": "EV2", "target": "EV4",
                                  "relation": "BEFORE"},
                                 {"op": "set_type", "event": "EV1", "type": "promotion"},
                                 {"op": "set_fact", "sentence": "S2", "fact": True}], "x" * 10)
    # EV3 OVERLAP EV4 became EV2 OVERLAP EV4, EV2 BEFORE EV4 was reversed: (EV4 BEFORE EV2) ≡ (EV2 AFTER EV4)
    assert [(e["source"], e["relation"], e["target"]) for e in fixed["graph"]["temporal_edges"]] == [
        ("EV1", "BEFORE", "EV2"), ("EV2", "OVERLAP", "EV4"), ("EV4", "BEFORE", "EV2")]
    s = changes_summary(model, fixed, [{"ops": [{"op": "merge_events", "keep": "EV2", "absorb": "EV3"}]}])
    c = s["changes"]
    assert (c["events_merged"], c["events_deleted"], c["type_changes"], c["fact_flips"]) == (1, 0, 1, 1)
    assert (c["temporal_reversed"], c["temporal_added"], c["temporal_removed"]) == (1, 0, 0)
    assert (c["causal_added"], c["causal_removed"]) == (0, 0)  # EV3 CAUSES EV4 read as EV2 CAUSES EV4
    assert s["agreement"]["events_kept"] == 0.75 and s["agreement"]["facts"] == 0.5
    # the same edge written the other way round is no change
    after = json.loads(json.dumps(model))
    after["graph"]["temporal_edges"][0] = {"source": "EV2", "target": "EV1", "relation": "AFTER", "evidence": ["S1"]}
    assert changes_summary(model, after)["total"] == 0
    with pytest.raises(EditError, match="unknown op"):
        apply_ops(model, [{"op": "undo"}], "")


@needs_data
def test_argus_eval_reads_the_saved_gold_files(client, folder, tmp_path):
    from argus.config import ArgusConfig
    from argus.runs.evaluation import find_gold_sources, run_evaluation

    ids = doc_ids(folder)
    for doc_id in ids[:2]:
        ok(post(client, doc_id, 0, {"op": "accept"}))
    (folder / f"{ids[0]}.txt").write_text(text_of(folder, ids[0]), encoding="utf-8")
    found = {s.name: s for s in find_gold_sources([folder])}
    assert sorted(found) == ids[:2]
    assert found[ids[0]].text == folder / f"{ids[0]}.txt"  # the text beside it
    assert found[ids[1]].text is not None and found[ids[1]].text.name == "complaint.txt"  # the EKG's source
    assert [s.name for s in find_gold_sources([folder / f"{ids[1]}{GOLD_SUFFIX}"])] == [ids[1]]
    report = run_evaluation([folder], tmp_path / "eval", ArgusConfig(), method_dirs={"staged": folder},
                            methods=("staged",), run_missing=False, use_judges=False)
    rows = report.tables["gold_matching"]
    assert sorted(rows["doc_id"]) == ids[:2] and not report.errors
    # accepted as the model wrote it: the model's graph scores one against its own correction
    assert (rows["exact_events_f1"] == 1.0).all() and (rows["exact_temporal_f1"] == 1.0).all()


@needs_data
def test_cli_serves_the_folder_on_loopback(folder):
    import os
    import subprocess
    import sys

    import httpx

    proc = subprocess.Popen([sys.executable, "-m", "argus.cli", "annotate", "serve", str(folder), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        line = proc.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/", line)
        assert url, line
        for _ in range(100):  # the line comes just before uvicorn binds
            try:
                res = httpx.get(url.group(0) + "api/docs", timeout=2)
                break
            except httpx.ConnectError:
                import time

                time.sleep(0.05)
        assert [d["doc_id"] for d in res.json()["documents"]] == doc_ids(folder)
        res = httpx.post(url.group(0) + f"api/doc/{doc_ids(folder)[0]}",
                         json={"revision": 0, "ops": [{"op": "accept"}]})
        assert res.status_code == 403
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@needs_data
def test_cli_serve_refuses_a_folder_without_ekgs(tmp_path):
    from argus.cli import app

    res = CliRunner().invoke(app, ["annotate", "serve", str(tmp_path)])
    assert res.exit_code == 2 and "no *.ekg.json" in res.output
    res = CliRunner().invoke(app, ["annotate", "serve", str(tmp_path / "missing")])
    assert res.exit_code == 2 and "not a folder" in res.output


def test_saved_gold_is_training_data_once_accepted(client, folder, tmp_path):
    """The page's files are what ``argus train-events --gold`` reads: a draft is left out until the user accepts
    the document; the text comes from the EKG beside the gold file, and every saved file fits it."""
    from argus.errors import InputError
    from argus.training.gold import gold_folders

    first, second = doc_ids(folder)[:2]
    for doc_id in (first, second):
        model = ok(client.get(f"/api/doc/{doc_id}"))["gold"]
        ok(post(client, doc_id, 0, {"op": "set_type", "event": model["graph"]["events"][0]["id"], "type": "complaint"}))
    skipped: list = []
    with pytest.raises(InputError, match="only drafts"):
        gold_folders([folder], tmp_path / "staging", skipped=skipped)
    assert sorted(p.name for p in skipped) == sorted(f"{d}{GOLD_SUFFIX}" for d in (first, second))
    ok(post(client, first, 1, {"op": "accept"}))
    staged = gold_folders([folder], tmp_path / "staging2")
    assert [f.name for f in staged] == [first]
    assert (staged[0] / "complaint.txt").read_text(encoding="utf-8") == text_of(folder, first)
    assert len(gold_folders([folder], tmp_path / "staging3", drafts=True)) == 2
