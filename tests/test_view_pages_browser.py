"""Pages in ``argus view``, as a person sees them in headless Chromium: each page of the filing starts with a
rule labelled "p. N", each sentence knows its page (its title, ``data-page``), and an event's evidence
names the page of each sentence, so a lawyer can cite the filing.

The demo complaint has three pages (two form feeds); the floor extracts it without a language model.
"""

from __future__ import annotations

import re

import pytest

from argus.output.view import write_view
from tests.conftest import DEMO


@pytest.fixture(scope="module")
def paged_view(tmp_path_factory):
    from argus.output.export import write_ekg
    from argus.pipeline import ArgusPipeline

    ekg = ArgusPipeline().extract_floor(DEMO)
    assert ekg.pages == 3 and {s.page for s in ekg.sentences} == {1, 2, 3}
    out = tmp_path_factory.mktemp("paged")
    path = write_ekg(ekg, out, graphml=False)["json"]
    return ekg, write_view(path)


def test_the_view_starts_each_page_with_a_labelled_break_and_shows_each_sentences_page(paged_view, browser_page):
    ekg, html = paged_view
    browser_page.open(html)
    page = browser_page.page
    breaks = page.evaluate("""() => [...document.querySelectorAll('#text-pane .pb')].map(e => {
        const r = e.getBoundingClientRect(), after = getComputedStyle(e, '::after');
        return {page: e.getAttribute('data-page'), height: r.height, label: after.content, display: after.display};
    })""")
    assert [b["page"] for b in breaks] == ["1", "2", "3"]
    for b in breaks:  # a visible label, drawn by the style sheet (the pane's text stays the filing's)
        assert b["height"] > 5 and b["display"] == "block" and "p. " in b["label"], b
    assert page.evaluate("document.getElementById('text-pane').textContent") == ekg.text
    # each page's break comes before its first sentence and after the last sentence of the page before
    order = page.evaluate("""() => [...document.querySelectorAll('#text-pane .pb, #text-pane .sent')]
        .map(e => e.classList.contains('pb') ? 'p' + e.getAttribute('data-page') : e.getAttribute('data-page'))""")
    seen = 0
    for item in order:
        if item.startswith("p"):
            seen = int(item[1:])
        else:
            assert int(item) == seen, order
    titles = page.evaluate("() => [...document.querySelectorAll('#text-pane .sent')].map(e => e.title)")
    for s, title in zip(ekg.sentences, titles):
        assert title.startswith(f"{s.id} · p. {s.page} · "), title
    # an event's evidence names the page of each of its sentences
    ev = next(e for e in ekg.graph.events if any(ekg.sentences[int(s[1:]) - 1].page > 1 for s in e.evidence))
    page.click(f'.event-item[data-event-id="{ev.id}"]')
    shown = page.locator("#detail-body [data-goto-sentence]").all_inner_texts()
    assert shown == [f"{s} (p. {ekg.sentences[int(s[1:]) - 1].page})" for s in ev.evidence]
    assert all(re.fullmatch(r"S\d+ \(p\. \d\)", t) for t in shown)
    browser_page.screenshot("pages")
    assert browser_page.console_errors == []
