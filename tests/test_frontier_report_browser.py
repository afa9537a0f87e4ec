"""The frontier HTML report as a person sees it: opened in headless Chromium (tests/browser_support.py).

The synthetic campaign is test_frontier_report's, with each member naming a long model for each of the
six pipeline stages, the case that used to push the members table's "models" column past the page.
The Pareto plot is Plotly's: its points are SVG paths under Plotly's drag layer, which takes the mouse
events, so a test hovers and clicks a point's position (``force=True``) as a mouse would.
"""

from __future__ import annotations

from optimizers.frontier import Frontier, write_member
from optimizers.report import SECTIONS, write_report
from tests.browser_support import VIEWPORT
from tests.test_frontier_report import HOSTILE, hostile_campaign, make_campaign

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


def open_report(browser_page, html) -> list[str]:
    """Open the report, wait until Plotly has drawn the Pareto plot; returns the URLs the page requested."""
    requests: list[str] = []
    browser_page.page.on("request", lambda req: requests.append(req.url))
    browser_page.open(html)
    browser_page.page.wait_for_selector("#pareto-plot[data-ready=true] .main-svg")
    return requests


def point(page, trace_name: str, key: str):
    """The SVG path of the point whose customdata is ``key`` in the trace named ``trace_name…``."""
    fig = page.evaluate("JSON.parse(document.getElementById('pareto-figure').textContent)")
    t = next(i for i, tr in enumerate(fig["data"]) if tr["name"].startswith(trace_name))
    return page.locator("#pareto-plot .scatterlayer .trace").nth(t).locator("path.point").nth(
        fig["data"][t]["customdata"].index(key))


def hover_lines(page, target) -> list[str]:
    """Hover ``target`` and return the lines of Plotly's hover label (the mouse leaves the plot first, so a label
    still shown from before is not read)."""
    page.mouse.move(0, 0)
    # a label a scroll left under the pointer can outlive the move: Plotly's own unhover clears it
    page.evaluate("Plotly.Fx.unhover(document.getElementById('pareto-plot'))")
    page.wait_for_selector("#pareto-plot .hoverlayer .hovertext", state="detached")
    target.hover(force=True)
    page.wait_for_selector("#pareto-plot .hoverlayer .hovertext")
    return page.evaluate("[...document.querySelectorAll('#pareto-plot .hoverlayer .hovertext tspan.line')]"
                         ".map(t => t.textContent)")


def open_diffs(page) -> list[str]:
    """Ids of the prompt-diff <details> that are open."""
    return page.evaluate("[...document.querySelectorAll('details.member-diff')].filter(d => d.open).map(d => d.id)")


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
    requests = open_report(browser_page, out)
    shot = browser_page.screenshot("frontier_report")
    assert shot.stat().st_size > 0

    assert browser_page.console_errors == []
    assert all(url == out.resolve().as_uri() or url.startswith("data:") for url in requests), requests
    headings = page.locator("h2").all_inner_texts()
    assert headings == list(SECTIONS)

    # the hypervolume and stage-cost plots are real decoded PNGs; the Pareto plot is drawn by Plotly (its PNG is
    # for pages read without JavaScript)
    images = page.evaluate("[...document.images].map(i => ({w: i.naturalWidth, h: i.naturalHeight, ok: i.complete,"
                           " section: i.closest('section').querySelector('h2').textContent}))")
    assert len(images) == 2 and all(i["ok"] and i["w"] > 0 and i["h"] > 0 for i in images), images
    assert [i["section"] for i in images] == ["Hypervolume history", "Per-stage cost"]
    plot = page.locator("section:has(h2:text-is('Pareto frontier')) #pareto-plot .main-svg").first
    assert plot.is_visible() and plot.bounding_box()["height"] > 300
    assert page.locator("#pareto-plot .scatterlayer path.point").count() == 2 + 4 + 4 + 1  # grey, val, test, knee

    # the lineage tree: every frontier member, nested under its parent
    tree = page.locator("section:has(h2:text-is('Lineage')) ul.tree").first
    assert tree.is_visible()
    tree_text = tree.inner_text()
    assert all(mid in tree_text for mid in ff.members)
    assert page.locator("section:has(h2:text-is('Lineage')) ul.tree ul.tree li").count() >= 1

    # prompt diffs with added and removed lines, escaped markup shown as text, each member's opened by a reader
    diffs = page.locator("section:has(h2:text-is('Prompt diffs against the seed'))")
    assert open_diffs(page) == []
    for summary in diffs.locator("details.member-diff > summary").all():
        summary.click()
    assert len(open_diffs(page)) == len(ff.members)
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


def test_pareto_plot_hover_and_click(browser_page, tmp_path):
    """Hovering a member's point shows its figures; clicking it opens its prompt diff and marks its lineage entry; a
    grey candidate has a label but opens nothing."""
    camp = tmp_path / "demo"
    make_campaign(camp, n=6)
    fr = Frontier.load(camp)
    out = write_report(camp, tmp_path / "report.html")
    page = browser_page.page
    requests = open_report(browser_page, out)

    g1 = point(page, "frontier", "m1")  # members in frontier.json order: seed, g1, g2, g3
    lo, hi = fr.member("g1").splits["val"].quality_ci
    assert hover_lines(page, g1) == [
        "g1 · frontier member", f"quality 0.7 (95% CI {lo:.4g}–{hi:.4g}) on validation",
        "test quality 0.67 (95% CI 0.62–0.72)", "cost per document $0.0200 · 4,000 tokens", "cost per stage:",
        "· stage1: $0.0140 · 2,800 tokens", "· stage2: $0.0060 · 1,200 tokens", "changed against the seed: stage1",
        "gepa, iteration 1 · click: prompt diff and lineage"]
    browser_page.screenshot("frontier_report_hover")

    g1.click(force=True)
    page.wait_for_function("document.getElementById('diff-m1').open")
    diff = page.locator("#diff-m1")
    assert open_diffs(page) == ["diff-m1"] and diff.is_visible()
    assert diff.locator("h3").inner_text() == "g1"
    text = diff.inner_text()
    assert "+Never invent a <script>alert(1)</script> party & keep roles." in text and "BEFORE" not in text
    assert "Lineage: seed → g1 (gepa, iteration 1)" in text
    box = diff.bounding_box()
    assert 0 <= box["y"] < VIEWPORT["height"] / 2  # scrolled to
    assert page.evaluate("[...document.querySelectorAll('.selected')].map(e => e.id)") == ["diff-m1", "lineage-m1"]
    assert page.locator("#lineage-m1 > b").inner_text() == "g1"
    browser_page.screenshot("frontier_report_clicked")

    # the knee's star opens g2; a grey candidate's point shows its label and opens nothing more
    page.evaluate("window.scrollTo(0, 0)")
    point(page, "knee", "m2").click(force=True)
    page.wait_for_function("document.getElementById('diff-m2').open")
    page.evaluate("window.scrollTo(0, 0)")
    grey = page.locator("#pareto-plot .scatterlayer .trace").nth(0).locator("path.point").nth(0)
    lines = hover_lines(page, grey)
    assert lines[0] == "o1 · not on the frontier (dominated by g1)" and "cost per document $0.0400 · 8,000 tokens" in lines
    grey.click(force=True)
    assert sorted(open_diffs(page)) == ["diff-m1", "diff-m2"]
    assert browser_page.console_errors == []
    assert all(url == out.resolve().as_uri() or url.startswith("data:") for url in requests), requests


def test_hostile_prompt_is_text_in_the_plot_and_the_diff(browser_page, tmp_path):
    """An evolved prompt with </script>, <img onerror=…> and <!--, also as a predictor's and a stage's name: the
    page runs none of it, the hover label and the opened diff show it as text."""
    hostile_campaign(tmp_path)
    out = write_report(tmp_path, tmp_path / "report.html")
    page = browser_page.page
    open_report(browser_page, out)
    target = point(page, "frontier", "m1")
    lines = hover_lines(page, target)
    assert f"· {HOSTILE}: $0.0010 · 20 tokens" in lines and f"changed against the seed: {HOSTILE}" in lines
    target.click(force=True)
    page.wait_for_function("document.getElementById('diff-m1').open")
    assert f"+Ignore the chunk. {HOSTILE}" in page.locator("#diff-m1").inner_text()
    assert page.evaluate("window.pwned") is None
    assert page.evaluate("document.querySelectorAll('img[src=x], #pareto-plot image').length") == 0
    assert browser_page.console_errors == []


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


def test_the_pareto_plot_switches_its_axes(browser_page, tmp_path):
    """The plot's two drop-downs redraw it on other axes: x from USD to tokens, y from quality to tokens; the
    quality intervals go with quality, and the points carry the members' own figures."""
    camp = tmp_path / "demo"
    make_campaign(camp, n=6)
    fr = Frontier.load(camp)
    out = write_report(camp, tmp_path / "report.html")
    page = browser_page.page
    open_report(browser_page, out)
    gd = "document.getElementById('pareto-plot')"

    def title(axis: str) -> str:
        return page.evaluate(f"{gd}.layout.{axis}axis.title.text")

    def frontier(attr: str):
        return page.evaluate(f"{gd}.data.find(t => t.name.startsWith('frontier'))[{attr!r}]")

    def choose(menu: int, label: str) -> None:
        page.locator("#pareto-plot .updatemenu-header-group").nth(menu).click(force=True)
        page.locator("#pareto-plot .updatemenu-dropdown-button", has_text=label).first.click(force=True)

    assert (title("x"), title("y")) == ("cost per document (USD)", "quality")
    members = sorted(fr.members, key=lambda m: (m.objectives["cost_usd"], -m.objectives["quality"]))
    assert frontier("x") == [m.objectives["cost_usd"] for m in members]

    choose(0, "tokens per document")
    page.wait_for_function(f"{gd}.layout.xaxis.title.text === 'tokens per document'")
    assert frontier("x") == [m.objectives["tokens"] for m in members]
    assert frontier("y") == [m.objectives["quality"] for m in members] and frontier("mode") == "markers"
    browser_page.screenshot("frontier_report_tokens_axis")

    choose(1, "tokens per document")
    page.wait_for_function(f"{gd}.layout.yaxis.title.text === 'tokens per document'")
    assert frontier("y") == [m.objectives["tokens"] for m in members]
    assert page.evaluate(f"{gd}.data.find(t => t.name.startsWith('frontier')).error_y.visible") is False

    choose(1, "quality")
    choose(0, "cost per document (USD)")
    page.wait_for_function(f"{gd}.layout.xaxis.title.text === 'cost per document (USD)'")
    assert frontier("x") == [m.objectives["cost_usd"] for m in members] and frontier("mode") == "lines+markers"
    assert browser_page.console_errors == []
