"""The frontier HTML report as a person sees it: opened in headless Chromium (tests/browser_support.py).

The synthetic campaign is test_frontier_report's, with each member naming a long model for each of the
six pipeline stages, the case that used to push the members table's "models" column past the page.
"""

from __future__ import annotations

from optimizers.frontier import Frontier, write_member
from optimizers.report import SECTIONS, write_report
from tests.browser_support import VIEWPORT
from tests.test_frontier_report import make_campaign

STAGES = ("fact_fallback", "chunker", "stage1", "stage2", "resolver", "oneshot")
LONG_MODEL = "openrouter/meta-llama/llama-3.3-70b-instruct"

# The right edge of every table, pre and image, and of the widest element inside each (a cell that
# sticks out of its table counts), in CSS pixels.
_EXTENTS = """() => {
  const right = el => Math.round(el.getBoundingClientRect().right);
  const widest = el => Math.max(right(el), ...[...el.querySelectorAll('*')].map(right));
  const of = sel => [...document.querySelectorAll(sel)].map((el, i) => ({sel, i, right: widest(el)}));
  return {scrollWidth: document.documentElement.scrollWidth,
          bodyRight: right(document.body),
          items: [...of('table'), ...of('pre'), ...of('img')]};
}"""


def long_model_campaign(root):
    """make_campaign(n=6), then every member's settings name LONG_MODEL for each of the six stages."""
    ff = make_campaign(root, n=6)
    for m in Frontier.load(root).members:
        settings = dict(m.settings, models={s: LONG_MODEL for s in STAGES})
        write_member(root, m.model_copy(update={"settings": settings}))
    return ff


def test_report_renders_in_a_browser_within_the_page_width(browser_page, tmp_path):
    camp = tmp_path / "demo"
    ff = long_model_campaign(camp)
    out = write_report(camp, tmp_path / "report.html")
    page = browser_page.page
    browser_page.open(out)
    shot = browser_page.screenshot("frontier_report")
    assert shot.stat().st_size > 0

    assert browser_page.console_errors == []
    headings = page.locator("h2").all_inner_texts()
    assert headings == list(SECTIONS)

    # the plots are real decoded PNGs, the Pareto plot among them
    images = page.evaluate("[...document.images].map(i => ({w: i.naturalWidth, h: i.naturalHeight, ok: i.complete,"
                           " section: i.closest('section').querySelector('h2').textContent}))")
    assert len(images) == 3 and all(i["ok"] and i["w"] > 0 and i["h"] > 0 for i in images), images
    assert "Pareto frontier" in [i["section"] for i in images]
    assert page.locator("section:has(h2:text-is('Pareto frontier')) img").is_visible()

    # the lineage tree: every frontier member, nested under its parent
    tree = page.locator("section:has(h2:text-is('Lineage')) ul.tree").first
    assert tree.is_visible()
    tree_text = tree.inner_text()
    assert all(mid in tree_text for mid in ff.members)
    assert page.locator("section:has(h2:text-is('Lineage')) ul.tree ul.tree li").count() >= 1

    # prompt diffs with added and removed lines, escaped markup shown as text
    diffs = page.locator("section:has(h2:text-is('Prompt diffs against the seed'))")
    assert diffs.locator("pre").count() >= 2
    assert diffs.locator("pre span.add").count() >= 1 and diffs.locator("pre span.del").count() >= 1
    assert diffs.locator("pre span.add").first.is_visible()
    assert "<script>alert(1)</script>" in diffs.inner_text()

    # the members table, with the long models, and everything else fits a 1400-px page
    members = page.locator("section:has(h2:text-is('Summary')) table").nth(1)
    assert LONG_MODEL in members.inner_text()
    browser_page.screenshot("frontier_report_members")
    ext = page.evaluate(_EXTENTS)
    width = VIEWPORT["width"]
    too_wide = [i for i in ext["items"] if i["right"] > min(width, ext["bodyRight"])]
    assert ext["scrollWidth"] <= width and not too_wide, (ext["scrollWidth"], too_wide)


def test_browser_page_reports_what_a_page_does_wrong(browser_page, tmp_path):
    """The guard the report test relies on: a reach for the network, a console error and an uncaught error are
    all collected (and the request is aborted, never sent)."""
    page = tmp_path / "bad.html"
    page.write_text('<!DOCTYPE html><html><head><link rel="stylesheet" href="https://cdn.example.org/x.css"></head>'
                    "<body><script>console.error('boom'); undefinedFunction();</script></body></html>",
                    encoding="utf-8")
    browser_page.open(page)
    errors = "\n".join(browser_page.console_errors)
    assert "blocked network request: GET https://cdn.example.org/x.css" in errors
    assert "console error: boom" in errors
    assert "page error:" in errors and "undefinedFunction" in errors
