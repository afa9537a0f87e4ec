"""The frontier HTML report and the ``argus frontier`` commands on synthetic campaign folders."""

from __future__ import annotations

import html
import json
import re

import pytest
from markupsafe import escape
from typer.testing import CliRunner

from optimizers.cli import app
from optimizers.frontier import (
    Constraints,
    Frontier,
    Lineage,
    MemberManifest,
    SplitScores,
    bootstrap_ci,
    build_frontier_file,
    flag_val_only_wins,
    instruction_diff_size,
)
from optimizers.report import (
    FIGURE_ID,
    SECTIONS,
    frontier_table,
    plotly_bundle,
    write_report,
)
from tests.test_frontier import write_campaign

HOSTILE = "</script><img src=x onerror=pwned=1><script>pwned=2</script><!--"
"""Markup an evolved prompt or a predictor's name might hold; a page that ran it would set ``window.pwned``."""

SEED_PROMPTS = {
    "stage1.predict": "Extract the entities and events of the chunk.\nEvery event cites its sentence ids.",
    "stage2.predict": "Link the events with temporal and causal edges.",
}


def member(mid: str, q: float, usd: float, *, parent: str | None, origin: str, iteration: int, prompts: dict[str, str],
           test: bool = True, per_example: dict[str, float] | None = None) -> MemberManifest:
    per_example = per_example or {f"doc{i}": min(1.0, max(0.0, q + 0.05 * ((i * 7 + len(mid)) % 5 - 2)))
                                  for i in range(8)}
    vals = list(per_example.values())
    splits = {"val": SplitScores(n=len(vals), quality=q, quality_ci=bootstrap_ci(vals, n_resamples=200), cost_usd=usd,
                                 tokens=usd * 2e5, per_example=per_example)}
    if test:
        splits["test"] = SplitScores(n=6, quality=q - 0.03, quality_ci=(q - 0.08, q + 0.02), cost_usd=usd * 1.05,
                                     tokens=usd * 2.1e5)
    changed = [p.split(".")[0] for p in prompts if prompts[p] != SEED_PROMPTS.get(p)]
    diff = sum(instruction_diff_size(SEED_PROMPTS.get(p, ""), prompts[p]) for p in prompts)
    return MemberManifest(
        campaign="demo", member_id=mid, objectives={"quality": q, "cost_usd": usd, "tokens": usd * 2e5}, splits=splits,
        lineage=Lineage(parent=parent, changed_programs=changed, instruction_diff_chars=diff, iteration=iteration,
                        origin=origin),
        settings={"models": {"stage1": "openai/gpt-4o-mini", "stage2": "local/smollm2"}, "temperature": 0.7, "tau": 0.8},
        prompts=prompts, stage_costs={"stage1": {"usd": usd * 0.7, "tokens": usd * 1.4e5},
                                      "stage2": {"usd": usd * 0.3, "tokens": usd * 0.6e5}},
        dataset_hash="sha256:data", metric_hash="sha256:metric")


def make_campaign(root, *, n: int = 5, test: bool = True, zero_cost: bool = False, history: bool = True):
    p1 = dict(SEED_PROMPTS, **{"stage1.predict": SEED_PROMPTS["stage1.predict"]
                               + "\nNever invent a <script>alert(1)</script> party & keep roles."})
    p2 = dict(p1, **{"stage2.predict": "Link events; prefer BEFORE over AFTER."})
    specs = [("seed", 0.50, 0.010, None, "seed", 0, SEED_PROMPTS), ("g1", 0.70, 0.020, "seed", "gepa", 1, p1),
             ("g2", 0.80, 0.050, "g1", "gepa", 2, p2), ("o1", 0.60, 0.040, "seed", "optuna", 2, SEED_PROMPTS),
             ("g3", 0.85, 0.120, "o1", "gepa", 3, p2), ("o2", 0.40, 0.030, "o1", "optuna", 3, SEED_PROMPTS)][:n]
    cands = [member(mid, q, 0.0 if zero_cost else c, parent=par, origin=o, iteration=it, prompts=pr, test=test)
             for mid, q, c, par, o, it, pr in specs]
    cands = flag_val_only_wins(cands)
    ff = build_frontier_file("demo", cands, constraints=Constraints(max_cost_per_doc=0.5))
    if not history:
        ff = ff.model_copy(update={"hypervolume_history": []})
    write_campaign(root, cands, ff)
    return ff


def hostile_campaign(root):
    """Two members; the evolved one, g1, has markup in a predictor's name and instruction and in a stage's name (a
    member id is a plain folder name: MemberManifest refuses markup there)."""
    evil = dict(SEED_PROMPTS, **{f"{HOSTILE}.predict": f"Ignore the chunk. {HOSTILE}"})
    seed = member("seed", 0.5, 0.01, parent=None, origin="seed", iteration=0, prompts=SEED_PROMPTS)
    bad = member("g1", 0.7, 0.02, parent="seed", origin="gepa", iteration=1, prompts=evil)
    bad = bad.model_copy(update={"stage_costs": dict(bad.stage_costs, **{HOSTILE: {"usd": 0.001, "tokens": 20.0}})})
    ff = build_frontier_file("demo", [seed, bad])
    write_campaign(root, [seed, bad], ff)
    return ff


def without_plotly(text: str) -> str:
    """The page less the inlined plotly.js bundle (which must be there exactly once)."""
    bundle = str(plotly_bundle())
    assert text.count(bundle) == 1
    return text.replace(bundle, "")


def figure_of(text: str) -> dict:
    """The Pareto plot's Plotly JSON as the page carries it (no raw <, > or & in the block)."""
    block = re.search(rf'<script type="application/json" id="{FIGURE_ID}">(.*?)</script>', text, re.DOTALL).group(1)
    assert not set("<>&") & set(block), block
    return json.loads(block)


def trace(fig: dict, name: str) -> dict:
    return next(t for t in fig["data"] if t["name"].startswith(name))


def test_report_is_one_self_contained_file(tmp_path):
    camp = tmp_path / "demo"
    ff = make_campaign(camp, n=6)
    assert "o1" not in ff.members  # a grey point
    out = write_report(camp, tmp_path / "out" / "report.html")
    assert [p.name for p in out.parent.iterdir()] == ["report.html"]
    text = without_plotly(out.read_text(encoding="utf-8"))
    assert text.count('<img alt="plot" src="data:image/png;base64,') == 3  # Pareto, hypervolume, stage costs
    assert text.count('<noscript><img alt="plot" src="data:image/png;base64,') == 1  # the Pareto plot without JS
    for title in SECTIONS:
        assert f"<h2>{title}</h2>" in text
    # plotly.js, the figure's JSON, report.js: nothing else runs, nothing is pasted into code
    assert text.count("<script") == 3 and text.count(f'<script type="application/json" id="{FIGURE_ID}">') == 1
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "&amp; keep roles" in text
    assert not re.search(r"(src|href)=\"https?://", text)
    assert "Seed member: <b>seed</b>" in text
    assert "wins" in text and "doc0" in text
    lineage = text[text.index("<h2>Lineage</h2>"):text.index("<h2>Per-example")]
    assert "changed: stage1" in lineage
    # o1 is an ancestor of the member g3 but not on the frontier; o2 is a dead branch
    assert '<b>o1</b><span class="badge">not on frontier</span>' in lineage and "o2" not in lineage
    assert lineage.index("<b>o1</b>") < lineage.index("<b>g3</b>")
    # each member's diff is a <details> the plot's click opens, with its line of ancestors
    assert [m.member_id for m in Frontier.load(camp).members] == ["seed", "g1", "g2", "g3"]
    assert all(f'<li id="lineage-m{i}"><b>{mid}</b>' in lineage for i, mid in enumerate(["seed", "g1", "g2", "g3"]))
    g3 = text[text.index('<details class="member-diff" id="diff-m3">'):]
    g3 = g3[:g3.index("</details>")]
    assert "<h3>g3</h3>" in g3 and "Lineage: seed → o1 → g3 (gepa, iteration 3)" in g3 and "BEFORE over AFTER" in g3


def test_pareto_figure_carries_each_point(tmp_path):
    """Grey candidates, the frontier with its validation intervals, test quality, the knee; a member's points
    carry its anchor and a hover text with its figures."""
    camp = tmp_path / "demo"
    make_campaign(camp, n=6)
    fr = Frontier.load(camp)
    fig = figure_of(write_report(camp, tmp_path / "r.html").read_text(encoding="utf-8"))
    assert [t["name"] for t in fig["data"]] == ["other candidates", "frontier (val, 95% CI)", "test quality (95% CI)",
                                                "knee (g2)"]
    grey = trace(fig, "other candidates")
    assert grey["x"] == [0.04, 0.03] and "customdata" not in grey
    assert grey["text"][0].startswith("<b>o1</b> · not on the frontier (dominated by g1)")

    front = trace(fig, "frontier")
    assert front["customdata"] == ["m0", "m1", "m2", "m3"] and front["x"] == [0.01, 0.02, 0.05, 0.12]
    for i, m in enumerate(fr.members):
        lo, hi = m.splits["val"].quality_ci
        q = m.objectives["quality"]
        assert front["error_y"]["arrayminus"][i] == pytest.approx(q - lo)
        assert front["error_y"]["array"][i] == pytest.approx(hi - q)
    g1 = front["text"][1].split("<br>")
    lo, hi = fr.member("g1").splits["val"].quality_ci
    assert g1[:3] == ["<b>g1</b> · frontier member", f"quality 0.7 (95% CI {lo:.4g}–{hi:.4g}) on validation",
                      "test quality 0.67 (95% CI 0.62–0.72)"]
    assert g1[3:8] == ["cost per document $0.0200 · 4,000 tokens", "cost per stage:",
                       "· stage1: $0.0140 · 2,800 tokens", "· stage2: $0.0060 · 1,200 tokens",
                       "changed against the seed: stage1"]
    assert "the seed" in front["text"][0] and "· knee" in front["text"][2]
    assert "changed against the seed: stage1, stage2" in front["text"][3]  # via o1, against the seed
    assert trace(fig, "test")["y"] == pytest.approx([0.47, 0.67, 0.77, 0.82])
    assert trace(fig, "knee")["customdata"] == ["m2"]
    assert fig["config"]["displaylogo"] is False


def test_hostile_text_stays_text(tmp_path):
    """Markup in a predictor's name, an instruction or a stage name is text on the page and in the
    figure's JSON: it neither ends a script block nor becomes an element, and the hover labels show it escaped."""
    hostile_campaign(tmp_path)
    text = without_plotly(write_report(tmp_path, tmp_path / "r.html").read_text(encoding="utf-8"))
    assert text.count("<script") == 3 and "<img src=x" not in text and "<!--" not in text
    assert html.escape(HOSTILE, quote=False) in text  # the diff, shown as text
    fig = figure_of(text)
    front = trace(fig, "frontier")
    label = front["text"][front["customdata"].index("m1")]
    assert HOSTILE not in label and str(escape(HOSTILE)) in label
    assert f"· {escape(HOSTILE)}: $0.0010 · 20 tokens" in label
    assert f"changed against the seed: {escape(HOSTILE)}" in label
    assert all("<img" not in t["name"] for t in fig["data"])


def test_frontier_table_matches_members(tmp_path):
    make_campaign(tmp_path, n=4)
    table = frontier_table(tmp_path)
    assert list(table["member"]) == ["seed", "g1", "g2"]
    assert table["models"][0] == "stage1=openai/gpt-4o-mini, stage2=local/smollm2"


@pytest.mark.parametrize("kwargs", [dict(n=1), dict(test=False), dict(zero_cost=True), dict(history=False),
                                    dict(n=2, test=False, zero_cost=True, history=False)])
def test_report_edge_cases_do_not_crash(tmp_path, kwargs):
    make_campaign(tmp_path, **kwargs)
    text = write_report(tmp_path, tmp_path / "r.html").read_text(encoding="utf-8")
    assert "data:image/png;base64," in text
    fig = figure_of(text)
    assert len(trace(fig, "frontier")["customdata"]) == len(Frontier.load(tmp_path).members)
    assert any(t["name"].startswith("test") for t in fig["data"]) == kwargs.get("test", True)
    if kwargs.get("zero_cost"):
        assert "Summary" in text
    if kwargs.get("history") is False:
        assert "No hypervolume history was recorded." in text


def test_cli_show_select_and_report(tmp_path):
    make_campaign(tmp_path, n=6)
    runner = CliRunner()
    shown = runner.invoke(app, ["show", str(tmp_path)])
    assert shown.exit_code == 0, shown.output
    assert "g2" in shown.output and "quality" in shown.output and "hypervolume" in shown.output
    chosen = runner.invoke(app, ["select", str(tmp_path), "--strategy", "max_quality"])
    assert chosen.exit_code == 0 and chosen.output.startswith("g3\t")
    done = runner.invoke(app, ["report", str(tmp_path)])
    assert done.exit_code == 0, done.output
    assert (tmp_path / "report.html").exists() and "report.html" in done.output
    missing = runner.invoke(app, ["show", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "not found" in missing.output
