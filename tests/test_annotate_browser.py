"""``argus annotate serve`` as a person uses it: the page in headless Chromium (Debian's, as tests/browser_support.py
launches it), served by uvicorn on 127.0.0.1 from a thread, over the offline default's EKGs of three annotated
complaints (``tests/test_annotate.py``'s session fixture).

Each edit kind through the page's controls and keys, saving and reloading, undo, accept and next, a write the
server refuses and a stale second tab. The browser may reach the test's server and nothing else (as in
browser_support, every other request is aborted and recorded); every console error (a CSP violation included)
fails the test. Screenshots go to the test's temporary folder.
"""

from __future__ import annotations

import json
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest

from argus.output.annotate import GOLD_SUFFIX, create_app
from argus.output.gold_edits import SHORTCUT_TYPES, iter_sentences
from metrics.gold import load_gold
from metrics.gold.validate import gold_problems
from tests.browser_support import LAUNCH_ARGS, LOCAL_SCHEMES, TIMEOUT_MS, VIEWPORT, _unavailable, _watch, chromium_path
from tests.conftest import needs_data
from tests.test_annotate import a_word, doc_ids, ekg_dir, facts_sentences, text_of  # noqa: F401 (a fixture)

pytestmark = needs_data

# select the characters [a, b) of the text pane (its text is the filing's) as a mouse drag would, and let go
_SELECT = """([a, b]) => {
  const pane = document.getElementById('text-pane');
  const walker = document.createTreeWalker(pane, NodeFilter.SHOW_TEXT);
  let pos = 0, start = null, end = null, n;
  while ((n = walker.nextNode())) {
    const len = n.data.length;
    if (start === null && a < pos + len) start = [n, a - pos];
    if (end === null && b <= pos + len) { end = [n, b - pos]; break; }
    pos += len;
  }
  const r = document.createRange();
  r.setStart(start[0], start[1]);
  r.setEnd(end[0], end[1]);
  const s = getSelection();
  s.removeAllRanges();
  s.addRange(r);
  pane.dispatchEvent(new MouseEvent('mouseup', {bubbles: true}));
}"""


@pytest.fixture(scope="module")
def browser():
    exe = chromium_path()
    if exe is None:
        _unavailable("no Chromium on the PATH (apt-get install chromium) and ARGUS_CHROMIUM not set")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed (pip install -r requirements.lock)")
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=exe, headless=True, args=LAUNCH_ARGS)
        try:
            yield b
        finally:
            b.close()


class Served:
    """A folder of EKGs served on 127.0.0.1 for one test, and the pages the test opened."""

    def __init__(self, folder: Path, browser):
        self.folder = folder
        self.app = create_app(folder)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        import uvicorn

        self.server = uvicorn.Server(uvicorn.Config(self.app, host="127.0.0.1", port=port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.02)
        self.base = f"http://127.0.0.1:{port}"
        self.errors: list[str] = []
        self.refusals: set[int] = set()  # statuses a test expects the server to answer (Chromium logs each)
        self.context = browser.new_context(viewport=VIEWPORT)

        def guard(route) -> None:
            url = route.request.url
            if url.startswith(LOCAL_SCHEMES) or url.startswith(self.base + "/"):
                route.continue_()
            else:
                self.errors.append(f"blocked network request: {route.request.method} {url}")
                route.abort("blockedbyclient")

        self.context.route("**/*", guard)

    def open(self, doc_id: str):
        page = self.context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        _watch(page, self.errors)
        page.goto(f"{self.base}/doc/{doc_id}", wait_until="load")
        return page

    def gold(self, doc_id: str) -> dict:
        return self.app.state.store.state(doc_id).gold

    def close(self) -> None:
        self.context.close()
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture
def served(ekg_dir, tmp_path, browser):
    folder = tmp_path / "docs"
    shutil.copytree(ekg_dir, folder)
    s = Served(folder, browser)
    yield s
    s.close()
    expected = tuple(f"the server responded with a status of {code} " for code in s.refusals)
    refused = [e for e in s.errors if "Failed to load resource" in e and any(x in e for x in expected)]
    assert [e for e in s.errors if e not in refused] == []


def saved(page, revision: int) -> None:
    """Wait until the page says the write of ``revision`` is saved."""
    page.wait_for_function("(r) => document.getElementById('save-state').textContent === 'saved · revision ' + r",
                           arg=revision)
    assert page.get_attribute("#save-state", "data-state") == "saved"


def event_of(gold: dict, ident: str) -> dict | None:
    return next((e for e in gold["graph"]["events"] if e["id"] == ident), None)


def edges_of(gold: dict, kind: str) -> set[tuple[str, str, str]]:
    return {(e["source"], e["relation"], e["target"]) for e in gold["graph"][f"{kind}_edges"]}


def select_event(page, ident: str) -> None:
    page.click(f'#events .event-item[data-event-id="{ident}"]')
    page.wait_for_selector(f'#editor [data-editor-event="{ident}"]')


def test_each_edit_kind_through_the_page(served, tmp_path):
    doc_id = doc_ids(served.folder)[0]
    text = text_of(served.folder, doc_id)
    model = json.loads(json.dumps(served.gold(doc_id)))
    events = [e["id"] for e in model["graph"]["events"]]
    ev_a, ev_b, ev_c, ev_d = events[0], events[1], events[-1], events[-2]
    page = served.open(doc_id)
    assert page.get_attribute("#save-state", "data-state") == "unsaved"

    # the type: from the editor's list, then by number
    select_event(page, ev_a)
    new_type = "termination" if event_of(model, ev_a)["type"] != "termination" else "hiring"
    page.select_option("#edit-type", new_type)
    saved(page, 1)
    assert event_of(served.gold(doc_id), ev_a)["type"] == new_type
    assert page.inner_text(f'#events .event-item[data-event-id="{ev_a}"] .etype') == new_type
    page.keyboard.press("3")
    saved(page, 2)
    assert event_of(served.gold(doc_id), ev_a)["type"] == SHORTCUT_TYPES[2]
    assert page.is_visible(f'#editor [data-editor-event="{ev_a}"]')  # still selected after the save

    # merge ev_c into ev_a
    page.select_option("#merge-other", ev_c)
    page.click('#editor button[data-action="merge"]')
    saved(page, 3)
    assert event_of(served.gold(doc_id), ev_c) is None
    assert page.locator(f'#events .event-item[data-event-id="{ev_c}"]').count() == 0

    # a causal edge added, reversed, deleted
    page.select_option("#edge-relation", "ENABLES")
    page.select_option("#edge-target", ev_b)
    page.click('#editor button[data-action="add-edge"]')
    saved(page, 4)
    assert (ev_a, "ENABLES", ev_b) in edges_of(served.gold(doc_id), "causal")
    assert page.locator(f'svg .edge.causal[data-source="{ev_a}"][data-target="{ev_b}"]').count() == 1
    edge = '#editor li[data-kind="causal"][data-source="{}"][data-target="{}"] button[data-action="{}"]'
    page.click(edge.format(ev_a, ev_b, "reverse-edge"))
    saved(page, 5)
    assert (ev_b, "ENABLES", ev_a) in edges_of(served.gold(doc_id), "causal")
    page.click(edge.format(ev_b, ev_a, "delete-edge"))
    saved(page, 6)
    assert not {(ev_b, "ENABLES", ev_a), (ev_a, "ENABLES", ev_b)} & edges_of(served.gold(doc_id), "causal")

    # delete an event with its key
    select_event(page, ev_d)
    page.keyboard.press("Delete")
    saved(page, 7)
    assert event_of(served.gold(doc_id), ev_d) is None
    assert page.is_visible("#editor .hint")

    # an entity's role, kind and aliases
    ent = model["graph"]["entities"][0]
    page.click(f'#entities .entity-link[data-entity-id="{ent["id"]}"]')
    page.wait_for_selector(f'#editor [data-editor-entity="{ent["id"]}"]')
    role = "comparator" if ent["role"] != "comparator" else "witness"
    page.select_option("#entity-role", role)
    page.select_option("#entity-kind", "group" if ent["kind"] != "group" else "other")
    page.fill("#entity-aliases", "; ".join([*ent["aliases"], "the Firm"]))
    page.click('#editor button[data-action="save-entity"]')
    saved(page, 8)
    fixed = next(e for e in served.gold(doc_id)["graph"]["entities"] if e["id"] == ent["id"])
    assert fixed["role"] == role and fixed["aliases"][-1] == "the Firm"

    # a sentence's fact label, with F
    sentence = facts_sentences(model)[2]
    page.locator(f'#text-pane .sent[data-sentence-id="{sentence["id"]}"]').first.dispatch_event("click")
    page.wait_for_selector(f'#editor [data-editor-sentence="{sentence["id"]}"]')
    page.keyboard.press("f")
    saved(page, 9)
    flipped = {s["id"]: s["fact"] for _, s in iter_sentences(served.gold(doc_id))}
    assert flipped[sentence["id"]] is (not sentence["fact"])
    assert page.inner_text("#editor h3").endswith("not a fact" if sentence["fact"] else "· fact")

    # an event from selected words, with E: their sentence becomes its evidence
    sentence = facts_sentences(model)[3]
    start, end = a_word(text, sentence, {tuple(v) for v in model["annotation"]["trigger_spans"].values()})
    page.evaluate(_SELECT, [start, end])
    page.wait_for_selector("#editor [data-editor-span]")
    page.select_option("#new-type", "complaint")
    page.focus("#text-pane")
    page.keyboard.press("e")
    saved(page, 10)
    gold = served.gold(doc_id)
    new = [e for e in gold["graph"]["events"] if e["id"] not in events]
    assert len(new) == 1 and new[0]["trigger"] == text[start:end] and new[0]["evidence"] == [sentence["id"]]
    assert new[0]["type"] == "complaint"
    page.wait_for_selector(f'#editor [data-editor-event="{new[0]["id"]}"]')  # the new event is selected
    assert page.locator(f'#text-pane mark.trigger[data-event-id="{new[0]["id"]}"]').inner_text() == text[start:end]

    page.screenshot(path=str(tmp_path / "annotate.png"))
    path = served.folder / f"{doc_id}{GOLD_SUFFIX}"
    assert gold_problems(json.loads(path.read_text(encoding="utf-8")), text) == []
    assert load_gold(path).doc_id == doc_id


def test_save_reload_undo_accept_next_and_the_keys(served):
    ids = doc_ids(served.folder)
    model = json.loads(json.dumps(served.gold(ids[0])))
    ev = model["graph"]["events"][0]
    key = next(str(i) for i, t in enumerate(SHORTCUT_TYPES, 1) if t != ev["type"])
    page = served.open(ids[0])
    page.keyboard.press("Control+z")
    page.wait_for_selector("#message:has-text('Nothing to undo')")
    select_event(page, ev["id"])
    page.keyboard.press(key)
    saved(page, 1)
    assert page.is_enabled("#btn-undo")

    page.reload(wait_until="load")
    assert page.inner_text("#save-state") == "saved · revision 1"
    assert page.inner_text(f'#events .event-item[data-event-id="{ev["id"]}"] .etype') == SHORTCUT_TYPES[int(key) - 1]
    assert page.get_attribute("#status-badge", "data-status") == "draft"

    page.keyboard.press("z")
    saved(page, 2)
    assert event_of(served.gold(ids[0]), ev["id"])["type"] == ev["type"]
    assert page.inner_text(f'#events .event-item[data-event-id="{ev["id"]}"] .etype') == ev["type"]
    assert page.is_disabled("#btn-undo")

    page.keyboard.press("a")
    saved(page, 3)
    page.wait_for_selector("#message:has-text('Accepted')")
    assert page.get_attribute("#status-badge", "data-status") == "accepted"
    assert served.gold(ids[0])["annotation"]["status"] == "accepted"

    page.keyboard.press("n")
    page.wait_for_url(f"{served.base}/doc/{ids[1]}")
    assert page.get_attribute("#save-state", "data-state") == "unsaved"
    page.goto(f"{served.base}/", wait_until="load")
    assert page.get_attribute(f'tr[data-doc="{ids[0]}"]', "data-status") == "accepted"
    assert page.get_attribute(f'tr[data-doc="{ids[1]}"]', "data-status") == "model"


def test_a_refused_write_and_a_stale_tab_are_shown(served):
    doc_id = doc_ids(served.folder)[2]
    model = json.loads(json.dumps(served.gold(doc_id)))
    text = text_of(served.folder, doc_id)
    s1, s2 = facts_sentences(model)[:2]
    page = served.open(doc_id)
    served.refusals |= {400, 409}

    # words across two sentences: the server refuses, the page says why, nothing is saved
    page.evaluate(_SELECT, [s1["span"][1] - 4, s2["span"][0] + 4])
    page.wait_for_selector("#editor [data-editor-span]")
    assert "one sentence" in page.inner_text("#editor-body")
    page.keyboard.press("e")
    page.wait_for_selector("#save-state[data-state=error]")
    assert "not inside one sentence" in page.inner_text("#message")
    assert not (served.folder / f"{doc_id}{GOLD_SUFFIX}").exists()

    # a second tab saves first: the first tab's write is refused, it reloads and says so, then saves
    ev = model["graph"]["events"]
    other = served.open(doc_id)
    select_event(other, ev[0]["id"])
    other.select_option("#edit-type", "medical" if ev[0]["type"] != "medical" else "leave")
    saved(other, 1)
    select_event(page, ev[1]["id"])
    page.keyboard.press("Delete")
    page.wait_for_selector("#save-state[data-state=conflict]")
    assert "another tab" in page.inner_text("#message")
    assert page.inner_text(f'#events .event-item[data-event-id="{ev[0]["id"]}"] .etype') == event_of(
        served.gold(doc_id), ev[0]["id"])["type"]
    assert event_of(served.gold(doc_id), ev[1]["id"]) is not None  # not deleted behind the other tab's back
    select_event(page, ev[1]["id"])
    page.keyboard.press("Delete")
    saved(page, 2)
    assert event_of(served.gold(doc_id), ev[1]["id"]) is None
    assert gold_problems(json.loads((served.folder / f"{doc_id}{GOLD_SUFFIX}").read_text(encoding="utf-8")), text) == []
