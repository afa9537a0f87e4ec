"""``argus view`` without a browser: the HTML's structure, its marks, its data block, the index and the CLI.

The EKG is the scripted-LM pipeline's on the demo complaint (built once for the module); the edge cases
(a ``</script>`` in the filing, spans that cross, cycles in the temporal edges) use small EKGs made here.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from typer.testing import CliRunner

from argus.cli import app
from argus.errors import InputError
from argus.output.export import write_ekg
from argus.models.ledger import Totals
from argus.graph.schema import (
    DocCausalEdge,
    DocEntity,
    DocEvent,
    DocTemporalEdge,
    DocumentEKG,
    DocumentGraph,
    EventTime,
    LedgerSection,
    Mention,
    Participant,
    RejectedItem,
    SentenceRecord,
)
from argus.output.view import (
    index_documents,
    parse_date,
    render_text,
    render_view,
    timeline_order,
    write_index,
    write_view,
)
from tests.conftest import DEMO

# ----------------------------------------------------------------------------- helpers


class Page(HTMLParser):
    """The parts of a view page the tests look at, with a check that every element is closed in order."""

    VOID = {"meta", "br", "img", "input", "link", "hr", "col", "wbr", "source", "path", "rect"}

    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, dict]] = []
        self.errors: list[str] = []
        self.elements: list[tuple[str, dict]] = []  # every start tag with its attributes
        self.marks: list[dict] = []  # {attrs, text}
        self.pane_text: list[str] = []
        self.scripts: list[tuple[dict, str]] = []
        self._open_marks: list[dict] = []
        self._script: tuple[dict, list[str]] | None = None
        self.feed(html)
        self.close()
        if self.stack:
            self.errors.append(f"unclosed at the end: {[t for t, _ in self.stack]}")

    def in_pane(self) -> bool:
        return any(a.get("id") == "text-pane" for _, a in self.stack)

    def handle_starttag(self, tag, attrs):
        a = {k: (v or "") for k, v in attrs}
        self.elements.append((tag, a))
        if tag in self.VOID:
            return
        self.stack.append((tag, a))
        if tag == "mark":
            rec = {"attrs": a, "text": []}
            self.marks.append(rec)
            self._open_marks.append(rec)
        if tag == "script":
            self._script = (a, [])

    def handle_startendtag(self, tag, attrs):
        self.elements.append((tag, {k: (v or "") for k, v in attrs}))

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        if not self.stack or self.stack[-1][0] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1][0] if self.stack else 'nothing'}")
            return
        self.stack.pop()
        if tag == "mark":
            self._open_marks.pop()
        if tag == "script" and self._script is not None:
            self.scripts.append((self._script[0], "".join(self._script[1])))
            self._script = None

    def handle_data(self, data):
        if self._script is not None:
            self._script[1].append(data)
            return
        if self.in_pane():
            self.pane_text.append(data)
        for m in self._open_marks:
            m["text"].append(data)

    def with_attr(self, name: str, cls: str | None = None) -> list[dict]:
        return [a for _, a in self.elements if name in a and (cls is None or cls in a.get("class", "").split())]

    def mark_texts(self, cls: str) -> dict[tuple[str, str], str]:
        """(id, data-span) → the text of the mark's pieces, concatenated in document order."""
        key = "data-event-id" if cls == "trigger" else "data-entity-id"
        out: dict[tuple[str, str], str] = {}
        for m in self.marks:
            if cls in m["attrs"].get("class", "").split():
                k = (m["attrs"][key], m["attrs"]["data-span"])
                out[k] = out.get(k, "") + "".join(m["text"])
        return out

    def data(self) -> dict:
        (raw,) = [body for a, body in self.scripts if a.get("type") == "application/json"]
        return json.loads(raw)


def _scripted_extract(tmp: Path, path: Path) -> DocumentEKG:
    """The scripted-LM pipeline of tests/conftest.py's ``scripted_pipeline``, built once for a module."""
    from argus.config import ArgusConfig
    from argus.pipeline import ArgusPipeline
    from tests.scripted_lm import ScriptedEngine, scripted_lm

    engine = ScriptedEngine()
    pipe = ArgusPipeline(ArgusConfig.load(None, {"cache_dir": str(tmp / "cache"), "merge.min_similarity": 0.3}))
    lm = scripted_lm(engine)
    for stage in ("fact_fallback", "chunker", "stage1", "stage2", "resolver", "oneshot"):
        pipe._lms[stage] = lm
    pipe.engine = engine
    return pipe.extract(path)


@pytest.fixture(scope="module")
def demo_ekg(tmp_path_factory) -> DocumentEKG:
    return _scripted_extract(tmp_path_factory.mktemp("scripted"), DEMO)


@pytest.fixture(scope="module")
def demo_page(demo_ekg) -> tuple[str, Page]:
    html = render_view(demo_ekg)
    return html, Page(html)


def tiny_ekg(text: str, sentences: list[tuple[int, int]], *, entities=(), events=(), temporal=(), causal=(),
             rejected=(), doc_id: str = "tiny") -> DocumentEKG:
    """A hand-made EKG over ``text``: one narrative fact sentence per (start, end)."""
    sents = [SentenceRecord(id=f"S{i}", text=text[a:b], span=(a, b), section="facts", section_heading="FACTS",
                            fact=True, fact_probability=0.9, fact_path="classifier", in_narrative=True)
             for i, (a, b) in enumerate(sentences, start=1)]
    return DocumentEKG(
        doc_id=doc_id, source="made/up.txt", created="2024-01-01T00:00:00+00:00", models={"stage1": "scripted"},
        facts_section_found=True, text=text, sentences=sents,
        graph=DocumentGraph(entities=list(entities), events=list(events), temporal_edges=list(temporal),
                            causal_edges=list(causal)),
        rejected=list(rejected), ledger=LedgerSection(entries=[], totals=Totals(), by_stage={}))


def mention(text: str, sid: str, a: int, b: int) -> Mention:
    return Mention(sentence_id=sid, span=(a, b), text=text[a:b], match="exact")


def event(eid: str, evidence: list[str], *, span=None, trigger="x", time=("unknown", None), participants=()):
    return DocEvent(id=eid, type="other", verb="do", trigger=trigger, evidence=evidence,
                    time=EventTime(kind=time[0], value=time[1]), trigger_span=span,
                    trigger_match="exact" if span else None,
                    participants=[Participant(entity=e, role=r) for e, r in participants])


def tedge(s: str, t: str, rel: str) -> DocTemporalEdge:
    return DocTemporalEdge(source=s, target=t, relation=rel, evidence=["S1"], origin="C1")


# ----------------------------------------------------------------------------- the demo view


def test_view_is_self_contained(demo_page):
    html, page = demo_page
    assert "http://" not in html and "https://" not in html
    for tag, a in page.elements:
        for name in ("src", "href", "action", "poster", "xlink:href"):
            assert not re.match(r"\s*(https?:|//|ftp:|ws:)", a.get(name, "")), (tag, name, a[name])
        assert tag not in ("link", "iframe", "img", "object", "embed"), tag
    assert "@import" not in html and not re.search(r"url\((?!#)", html)
    assert all("src" not in a for a, _ in page.scripts)
    assert not re.search(r"\b(fetch|XMLHttpRequest|WebSocket|import)\s*\(", html)
    assert page.errors == []


def test_every_event_has_its_elements(demo_ekg, demo_page):
    _, page = demo_page
    ids = {ev.id for ev in demo_ekg.graph.events}
    assert ids
    by_class = {cls: {a["data-event-id"] for a in page.with_attr("data-event-id", cls)}
                for cls in ("event-item", "timeline-item", "node", "trigger")}
    assert by_class["event-item"] == ids and by_class["timeline-item"] == ids and by_class["node"] == ids
    assert by_class["trigger"] == {ev.id for ev in demo_ekg.graph.events if ev.trigger_span}
    assert {a["data-entity-id"] for a in page.with_attr("data-entity-id", "entity-link")} == \
        {e.id for e in demo_ekg.graph.entities}
    sentences = [a["data-sentence-id"] for a in page.with_attr("data-sentence-id", "sent")]
    assert sentences == [s.id for s in demo_ekg.sentences]
    facts = {a["data-sentence-id"] for a in page.with_attr("data-sentence-id", "fact")}
    assert facts == {s.id for s in demo_ekg.sentences if s.fact}
    outside = {a["data-sentence-id"] for a in page.with_attr("data-sentence-id", "outside")}
    assert outside == {s.id for s in demo_ekg.sentences if not s.in_narrative}


def test_marks_slice_the_original_text(demo_ekg, demo_page):
    _, page = demo_page
    text = demo_ekg.text
    assert "".join(page.pane_text) == text  # the text pane is the filing, character for character
    triggers = page.mark_texts("trigger")
    for ev in demo_ekg.graph.events:
        a, b = ev.trigger_span
        assert triggers[(ev.id, f"{a}-{b}")] == text[a:b], ev.id
        # the demo's spans nest without crossing: each trigger is one <mark>
        whole = [m for m in page.marks if m["attrs"].get("data-event-id") == ev.id]
        assert len(whole) == 1 and "data-part" not in whole[0]["attrs"]
        if ev.trigger_match == "exact":
            assert text[a:b] == ev.trigger
    mentions = page.mark_texts("mention")
    n = 0
    for ent in demo_ekg.graph.entities:
        for m in ent.mentions:
            assert mentions[(ent.id, f"{m.span[0]}-{m.span[1]}")] == text[m.span[0]:m.span[1]] == m.text
            n += 1
    assert n and len(mentions) == n


def test_data_block_parses_and_carries_the_5w1h(demo_ekg, demo_page):
    _, page = demo_page
    data = page.data()
    assert set(data["events"]) == {ev.id for ev in demo_ekg.graph.events}
    assert set(data["entities"]) == {e.id for e in demo_ekg.graph.entities}
    for ev in demo_ekg.graph.events:
        d = data["events"][ev.id]
        assert d["evidence"] == ev.evidence and d["time"]["kind"] == ev.time.kind
        slotted = [p["entity"] for k in ("who", "whom", "where") for p in d[k]]
        assert sorted(slotted) == sorted(p.entity for p in ev.participants)
        assert len(d["causes_in"]) == sum(1 for e in demo_ekg.graph.causal_edges if e.target == ev.id)
        assert d["rank"] >= 1


def test_dated_events_are_in_the_timeline_with_their_date(demo_ekg, demo_page):
    html, _ = demo_page
    dated = [ev for ev in demo_ekg.graph.events if ev.time.kind == "explicit"]
    assert dated, "the scripted demo extraction has dated events"
    items = dict(re.findall(r'<div class="timeline-item[^"]*" data-event-id="(EV\d+)"[^>]*>(.*?)</div>', html))
    for ev in dated:
        assert '<span class="date"' in items[ev.id] and ev.time.value in items[ev.id]
    tl = timeline_order(demo_ekg)
    order = [e for g in tl.groups for e in g]
    assert sorted(order) == sorted(ev.id for ev in demo_ekg.graph.events)
    # the dates are respected: a dated event never comes before one with an earlier date
    when = [tl.dates[e] for e in order if e in tl.dates]
    assert when == sorted(when)
    # the page lists the timeline in that order
    assert [e for e in re.findall(r'class="timeline-item[^"]*" data-event-id="(EV\d+)"', html)] == order


def test_header_tables_and_counts(demo_ekg, demo_page):
    html, page = demo_page
    assert f"<h1>{demo_ekg.doc_id} " in html
    for stage in demo_ekg.stages:
        assert f"<td>{stage.stage}</td>" in html
    assert html.count("<tr class=\"rejected-item\">") == len(demo_ekg.rejected)
    assert "Merge log" in html and "Rejected items" in html and "Cost per stage" in html
    counts = {a["data-count"] for a in page.with_attr("data-count")}
    assert {"events", "entities", "temporal edges", "causal edges", "rejected", "LM calls", "tokens", "cost"} <= counts


# ----------------------------------------------------------------------------- hand-made edge cases


INJECT = "</script><script>alert(1)</script>"


def test_script_injection_in_the_filing_is_escaped(tmp_path):
    text = f"On May 1, 2020, Boss fired Ann {INJECT} and said <!-- nothing --> & more."
    a = text.index("Boss")
    b = text.index("Ann")
    c = text.index(INJECT)
    ekg = tiny_ekg(
        text, [(0, len(text))],
        entities=[DocEntity(id="E1", name="Boss", kind="person", role="supervisor", mentions=[mention(text, "S1", a, a + 4)]),
                  DocEntity(id="E2", name=f"Ann {INJECT}", kind="person", role="plaintiff",
                            mentions=[mention(text, "S1", b, c + len(INJECT))])],
        events=[event("EV1", ["S1"], span=(c, c + 9), trigger="</script>", time=("explicit", "2020-05-01"),
                      participants=[("E1", "agent"), ("E2", "patient")])],
        rejected=[RejectedItem(kind="entity", id="C1:E9", stage="stage1", reason=f"name {INJECT!r} not found",
                               item={"name": INJECT})],
        doc_id="inj")
    html = render_view(ekg)
    page = Page(html)
    assert page.errors == []
    assert html.count("<script") == 2  # the data block and the page's script, nothing from the filing
    assert len(page.scripts) == 2 and "alert(1)" not in page.scripts[1][1]
    raw_json = next(body for a, body in page.scripts if a.get("type") == "application/json")
    assert "</" not in raw_json and "<" not in raw_json
    data = page.data()
    assert data["entities"]["E2"]["name"] == f"Ann {INJECT}"
    assert data["events"]["EV1"]["trigger_text"] == "</script>"
    assert "".join(page.pane_text) == text
    assert page.mark_texts("trigger")[("EV1", f"{c}-{c + 9}")] == "</script>"
    assert "&lt;/script&gt;&lt;script&gt;alert(1)" in html


def test_overlapping_spans_nest_or_split_without_breaking_the_markup():
    text = "Derek Palmer fired Maria Torres. Palmer later apologized."
    s2 = text.index("Palmer later")
    dp = (0, 12)                                   # mention "Derek Palmer"
    pf = (6, 18)                                   # trigger "Palmer fired": crosses "Derek Palmer"
    mt = (19, 31)                                  # mention "Maria Torres"
    t = (25, 31)                                   # alias mention "Torres": inside "Maria Torres"
    ap = (s2 + 13, s2 + 23)                         # trigger "apologized" and a mention on the same characters
    across = (19, s2 + 6)                           # a (bad) mention running over the sentence boundary
    ekg = tiny_ekg(
        text, [(0, 32), (33, len(text))],
        entities=[
            DocEntity(id="E1", name="Derek Palmer", kind="person", role="supervisor",
                      mentions=[mention(text, "S1", *dp), mention(text, "S2", s2, s2 + 6)]),
            DocEntity(id="E2", name="Maria Torres", kind="person", role="plaintiff", aliases=["Torres"],
                      mentions=[mention(text, "S1", *mt), mention(text, "S1", *t)]),
            DocEntity(id="E3", name="apologized", kind="other", role="other", mentions=[mention(text, "S2", *ap)]),
            DocEntity(id="E4", name="odd", kind="other", role="other", mentions=[mention(text, "S1", *across)]),
        ],
        events=[event("EV1", ["S1"], span=pf, trigger="Palmer fired", participants=[("E1", "agent"), ("E2", "patient")]),
                event("EV2", ["S2"], span=ap, trigger="apologized", participants=[("E1", "agent")])],
        temporal=[tedge("EV1", "EV2", "BEFORE")])
    body = render_text(ekg)
    page = Page(f'<div id="text-pane">{body}</div>')
    assert page.errors == []
    assert "".join(page.pane_text) == text
    triggers, mentions = page.mark_texts("trigger"), page.mark_texts("mention")
    for (eid, span), got in {**triggers, **mentions}.items():
        a, b = map(int, span.split("-"))
        assert got == text[a:b], (eid, span, got)
    assert len(triggers) == 2 and len(mentions) == 6
    parts = lambda key, value, span: [m["attrs"] for m in page.marks  # noqa: E731
                                      if m["attrs"].get(key) == value and m["attrs"]["data-span"] == span]
    # "Palmer fired" crosses "Derek Palmer": it is cut where "Derek Palmer" ends, both pieces say so
    pieces = parts("data-event-id", "EV1", "6-18")
    assert [p.get("data-part") for p in pieces] == ["1", "2"]
    assert [m["text"] for m in page.marks if m["attrs"].get("data-event-id") == "EV1"] == [["Palmer"], [" fired"]]
    # containment and identical spans stay whole
    assert [p.get("data-part") for p in parts("data-entity-id", "E2", "25-31")] == [None]
    assert [p.get("data-part") for p in parts("data-entity-id", "E2", "19-31")] == [None]
    assert [p.get("data-part") for p in parts("data-event-id", "EV2", f"{ap[0]}-{ap[1]}")] == [None]
    assert [p.get("data-part") for p in parts("data-entity-id", "E3", f"{ap[0]}-{ap[1]}")] == [None]
    assert re.search(r'<mark class="trigger" data-event-id="EV2"[^>]*><mark class="mention m-exact" data-entity-id="E3"', body)
    # a span over a sentence boundary is cut there: sentences are never split
    assert [p.get("data-part") for p in parts("data-entity-id", "E4", f"{across[0]}-{across[1]}")] == ["1", "2", "3"]
    assert len(re.findall(r'data-sentence-id="S1"', body)) == 1 and len(re.findall(r'data-sentence-id="S2"', body)) == 1
    html = render_view(ekg)
    assert Page(html).errors == []


def test_timeline_order_from_edges_dates_and_cycles():
    text = " ".join(f"Sentence {i}." for i in range(1, 11))
    spans = []
    at = 0
    for i in range(1, 11):
        s = f"Sentence {i}."
        a = text.index(s, at)
        spans.append((a, a + len(s)))
        at = a + len(s)
    evs = [
        event("EV1", ["S1"]),                                          # undated, before EV2 by an edge
        event("EV2", ["S2"], time=("explicit", "March 3, 2019")),
        event("EV3", ["S3"], time=("explicit", "2018-05")),             # earlier date, later in the text
        event("EV4", ["S4"]),                                          # same time as EV2
        event("EV5", ["S5"]),                                          # after EV6 by an AFTER edge
        event("EV6", ["S6"], time=("relative", "two weeks later")),
        event("EV7", ["S7"]),                                          # EV7 → EV8 → EV7: a cycle
        event("EV8", ["S8"]),
        event("EV9", ["S9"], time=("explicit", "2019-03-03")),          # same date as EV2 in another form
        event("EV10", ["S10"], time=("explicit", "01/02/2017")),
    ]
    temporal = [tedge("EV1", "EV2", "BEFORE"), tedge("EV4", "EV2", "SAME_TIME"), tedge("EV5", "EV6", "AFTER"),
                tedge("EV7", "EV8", "BEFORE"), tedge("EV8", "EV7", "BEFORE"),
                tedge("EV2", "EV10", "BEFORE")]  # contradicts the dates: 2019 before 2017
    ekg = tiny_ekg(text, spans, events=evs, temporal=temporal)
    tl = timeline_order(ekg)
    order = [e for g in tl.groups for e in g]
    assert sorted(order) == sorted(e.id for e in evs)
    pos = {e: i for i, e in enumerate(order)}
    assert ["EV2", "EV4"] in tl.groups  # SAME_TIME: one rank
    assert tl.rank["EV2"] == tl.rank["EV4"]
    assert pos["EV10"] < pos["EV3"] < pos["EV2"]  # 2017 < 2018-05 < 2019-03-03
    assert tl.rank["EV9"] > tl.rank["EV3"]
    assert pos["EV1"] < pos["EV2"]
    assert pos["EV6"] < pos["EV5"]
    assert pos["EV7"] < pos["EV8"]  # the cycle is broken in text order
    assert "EV8 BEFORE EV7" in tl.ignored and "EV2 BEFORE EV10" in tl.ignored
    assert timeline_order(ekg).groups == tl.groups  # deterministic
    html = render_view(ekg)
    for ev in evs:
        if ev.time.kind == "explicit":
            assert re.search(rf'data-event-id="{ev.id}"[^>]*><span class="date"[^>]*>{re.escape(ev.time.value)}</span>', html)
    assert "left out of it" in html


def test_parse_date():
    assert parse_date("2019-03-03") == (2019, 3, 3)
    assert parse_date("2019-03") == (2019, 3, 0)
    assert parse_date("2019") == (2019, 0, 0)
    assert parse_date("March 3, 2019") == (2019, 3, 3)
    assert parse_date("on or about Sept. 12, 2021") == (2021, 9, 12)
    assert parse_date("3 March 2019") == (2019, 3, 3)
    assert parse_date("March 2019") == (2019, 3, 0)
    assert parse_date("03/04/2019") == (2019, 3, 4)
    assert parse_date("last spring") is None and parse_date(None) is None


def test_an_empty_graph_renders(tmp_path):
    ekg = tiny_ekg("Nothing happened.", [(0, 17)],
                   rejected=[RejectedItem(kind="event", id="C1:EV1", stage="stage1", reason="trigger 'S2' is not in S1")])
    html = render_view(ekg)
    page = Page(html)
    assert page.errors == [] and "No events in the graph." in html and "trigger &#39;S2&#39; is not in S1" in html
    assert page.data()["events"] == {}


# ----------------------------------------------------------------------------- files, index, CLI


def test_write_view_beside_the_ekg(demo_ekg, tmp_path):
    path = write_ekg(demo_ekg, tmp_path, graphml=False)["json"]
    out = write_view(path)
    assert out == tmp_path / f"{demo_ekg.doc_id}.view.html"
    assert out.read_text(encoding="utf-8") == render_view(demo_ekg)
    assert write_view(path, tmp_path / "elsewhere" / "v.html").exists()


def test_index_lists_a_broken_file_with_its_error(demo_ekg, tmp_path):
    write_ekg(demo_ekg, tmp_path, graphml=False)
    second = demo_ekg.model_copy(update={"doc_id": "second"})
    write_ekg(second, tmp_path, graphml=False)
    (tmp_path / "broken.ekg.json").write_text('{"doc_id": "x"', encoding="utf-8")
    (tmp_path / "other.ekg.json").write_text('{"hello": "world"}', encoding="utf-8")
    out, entries = index_documents(tmp_path)
    assert out == tmp_path / "index.html"
    assert [e.file.name for e in entries] == ["broken.ekg.json", "demo.ekg.json", "other.ekg.json", "second.ekg.json"]
    assert [e.view.name if e.view else None for e in entries] == [None, "demo.view.html", None, "second.view.html"]
    html = out.read_text(encoding="utf-8")
    page = Page(html)
    assert page.errors == []
    assert [a["href"] for _, a in page.elements if "href" in a] == ["demo.view.html", "second.view.html"]
    failed = re.findall(r'<tr class="failed"><td class="wrap">([^<]+)</td><td colspan="8" class="wrap error">([^<]+)</td>', html)
    assert [f for f, _ in failed] == ["broken.ekg.json", "other.ekg.json"]
    assert all("could not be loaded" in msg and len(msg) > 40 for _, msg in failed)
    assert "2 of 4 loaded" in html
    assert f"<td class=\"num\">{2 * len(demo_ekg.graph.events)}</td>" in html
    assert write_index(tmp_path, tmp_path / "site" / "all.html") == tmp_path / "site" / "all.html"
    assert (tmp_path / "site" / "demo.view.html").exists()


def test_cli_view_file_and_folder(demo_ekg, tmp_path):
    path = write_ekg(demo_ekg, tmp_path, graphml=False)["json"]
    res = CliRunner().invoke(app, ["view", str(path), "-o", str(tmp_path / "v.html")])
    assert res.exit_code == 0, res.output
    assert f"wrote {tmp_path / 'v.html'}" in res.output and (tmp_path / "v.html").exists()
    (tmp_path / "bad.ekg.json").write_text("[]", encoding="utf-8")
    res = CliRunner().invoke(app, ["view", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert f"wrote {tmp_path / 'index.html'}" in res.output and "1 could not be loaded" in res.output
    assert (tmp_path / "demo.view.html").exists()


def test_cli_view_refuses_what_is_not_an_ekg(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text(json.dumps({"lm": {"model": "x"}}), encoding="utf-8")
    res = CliRunner().invoke(app, ["view", str(bad)])
    assert res.exit_code == 2
    assert "error:" in res.output and str(bad) in res.output and "EKG" in res.output
    assert "Traceback" not in res.output
    res = CliRunner().invoke(app, ["view", str(tmp_path / "missing.ekg.json")])
    assert res.exit_code == 2 and "missing.ekg.json" in res.output
    empty = tmp_path / "empty"
    empty.mkdir()
    res = CliRunner().invoke(app, ["view", str(empty)])
    assert res.exit_code == 2 and "no *.ekg.json" in res.output
    with pytest.raises(InputError):
        write_view(bad)


def test_kept_ungrounded_items_are_flagged():
    ev = event("EV1", ["S1"], trigger="S2").model_copy(update={"grounded": False})
    ent = DocEntity(id="E1", name="M1", kind="document", role="other", grounded=False)
    html = render_view(tiny_ekg("Something happened.", [(0, 19)], entities=[ent], events=[ev]))
    assert Page(html).errors == []
    assert "2 ungrounded item(s) were kept" in html and "Nothing was rejected: every item" not in html
    assert html.count('<span class="badge warn">ungrounded</span>') == 2  # the event in the list, the entity in the table
    assert '<b>2</b> ungrounded, kept' in html
    assert 'class="node ungrounded"' in html and "<mark class" not in html


def test_a_caused_event_says_what_it_was_caused_by_in_the_event_list():
    text = "Ann complained to HR. Because she complained, Boss fired Ann."
    cut = text.index("Because")
    ekg = tiny_ekg(text, [(0, cut - 1), (cut, len(text))],
                   events=[event("EV1", ["S1"]), event("EV2", ["S2"]), event("EV3", ["S2"])],
                   causal=[DocCausalEdge(source="EV1", target="EV2", relation="CAUSES", evidence=["S2"], origin="heads"),
                           DocCausalEdge(source="EV1", target="EV3", relation="ENABLES", evidence=["S2"], origin="heads")])
    html = render_view(ekg)
    rows = {eid: body for eid, body in re.findall(r'<li class="event-item" data-event-id="(EV\d)"(.*?)</li>', html, re.S)}
    assert "because of EV1" in rows["EV2"] and "made possible by EV1" in rows["EV3"]
    assert "because of" not in rows["EV1"] and "made possible" not in rows["EV1"]
    assert Page(html).data()["events"]["EV2"]["causes_in"] == [{"source": "EV1", "relation": "CAUSES", "evidence": ["S2"]}]
