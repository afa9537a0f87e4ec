"""A campaign's frontier as one self-contained static HTML report.

One file, inline CSS, plots as base64 PNG (matplotlib's Agg canvas, no pyplot state), no scripts
and no external URLs, every text HTML-escaped. Sections: summary, Pareto plot, hypervolume
history, per-stage cost, prompt diffs against the seed member, lineage tree, per-example wins
and losses against the seed.
"""

from __future__ import annotations

import base64
import difflib
import html
import io
import math
from collections.abc import Mapping
from pathlib import Path

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from argus.io import write_text_atomic
from optimizers.frontier import Frontier, MemberManifest

TIE_EPS = 1e-9
"""Per-example quality differences at most this large count as ties."""

TOP_DIFFERENCES = 8
"""Rows of the largest per-example differences shown per member."""

_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2rem auto;max-width:1100px;color:#222;padding:0 1rem}
h1{font-size:1.6rem}h2{border-bottom:1px solid #ccc;padding-bottom:.2rem;margin-top:2.2rem}h3{font-size:1.05rem}
table{border-collapse:collapse;margin:.5rem 0;font-size:.85rem}th,td{border:1px solid #ddd;padding:.25rem .5rem;text-align:left}
th{background:#f3f3f3}td{vertical-align:top}td.num{white-space:nowrap}td.wrap{overflow-wrap:anywhere}
table.members{width:100%}table.members ul.models{list-style:none;margin:0;padding:0}table.members ul.models li{margin:0 0 .15rem}
img{max-width:100%;height:auto}
pre{background:#f8f8f8;padding:.6rem;overflow-x:auto;font-size:.8rem;white-space:pre-wrap;overflow-wrap:anywhere}
.add{color:#116329;background:#dafbe1}.del{color:#82071e;background:#ffebe9}.hunk{color:#6639ba}
.muted{color:#777}.badge{display:inline-block;padding:0 .35rem;border-radius:.3rem;font-size:.75rem;background:#eee;margin-left:.3rem}
.frontier{background:#d0e7ff}.knee{background:#ffe08a}.warn{background:#ffd6d6}ul.tree{list-style:none;padding-left:1.2rem}
ul.tree{overflow-wrap:anywhere}ul.tree li{margin:.15rem 0}ul.tree ul{list-style:none;border-left:1px dotted #aaa;padding-left:1.2rem}
"""

SECTIONS = ("Summary", "Pareto frontier", "Hypervolume history", "Per-stage cost", "Optimization spend",
            "Prompt diffs against the seed", "Lineage", "Per-example wins and losses")

_PHASES = {
    "gepa": "GEPA task calls (chunk minibatches)",
    "reflection": "reflection (GEPA's proposer)",
    "metric": "metric and judge calls",
    "val": "deployment runs on validation documents",
    "test": "deployment runs on test documents",
    "interrupted": "calls of phases that were cut short",
}


def frontier_table(directory: str | Path) -> pd.DataFrame:
    """The frontier of a campaign directory as a table (``Frontier.table``)."""
    return Frontier.load(directory).table()


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _fmt(value: float | None, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.{digits}g}"


def _png(fig: Figure) -> str:
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return f'<img alt="plot" src="data:image/png;base64,{data}">'


def _cost_axis(fr: Frontier) -> tuple[str, str]:
    """("cost_usd" | "tokens", axis label): tokens when the campaign minimizes tokens, not USD, or every USD cost is 0."""
    if "tokens" in fr.senses and "cost_usd" not in fr.senses:
        return "tokens", "tokens per document"
    usd = [r.cost_usd for r in fr.file.all_candidates] + [m.objectives["cost_usd"] for m in fr.members]
    if any(v > 0 for v in usd):
        return "cost_usd", "cost per document (USD)"
    return "tokens", "tokens per document (all USD costs are 0)"


def _member_x(m: MemberManifest, key: str) -> float:
    return float(m.objectives.get(key, 0.0))


def _pareto_plot(fr: Frontier, knee: MemberManifest | None) -> str:
    rows = fr.file.all_candidates
    key, label = _cost_axis(fr)
    fig = Figure(figsize=(7.5, 4.6))
    ax = fig.add_subplot()
    others = [r for r in rows if not r.on_frontier]
    if others:
        ax.scatter([getattr(r, key) for r in others], [r.quality for r in others], color="#b0b0b0", s=22,
                   label="other candidates", zorder=1)
    members = sorted(fr.members, key=lambda m: (_member_x(m, key), -m.objectives["quality"]))
    xs = [_member_x(m, key) for m in members]
    ys = [m.objectives["quality"] for m in members]
    if members:
        ax.step(xs, ys, where="post", color="#1f6feb", linewidth=1.3, zorder=2)
        ax.scatter(xs, ys, color="#1f6feb", s=40, label="frontier (val)", zorder=3)
        for m, x, y in zip(members, xs, ys):
            ax.annotate(m.member_id, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
    tested = [m for m in members if "test" in m.splits]
    if tested:
        tx = [_member_x(m, key) for m in tested]
        ty = [m.splits["test"].quality for m in tested]
        lo = [max(0.0, q - (m.splits["test"].quality_ci or (q, q))[0]) for m, q in zip(tested, ty)]
        hi = [max(0.0, (m.splits["test"].quality_ci or (q, q))[1] - q) for m, q in zip(tested, ty)]
        ax.errorbar(tx, ty, yerr=[lo, hi], fmt="s", mfc="none", color="#d1242f", ms=5, capsize=3,
                    label="test quality (95% CI)", zorder=4)
    if knee is not None:
        ax.scatter([_member_x(knee, key)], [knee.objectives["quality"]], marker="*", s=260, color="#f0a500",
                   edgecolor="black", label=f"knee ({knee.member_id})", zorder=5)
    ax.set_xlabel(label)
    ax.set_ylabel("quality")
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, loc="lower right")
    return _png(fig)


def _hypervolume_plot(fr: Frontier) -> str:
    hist = fr.file.hypervolume_history
    if not hist:
        return '<p class="muted">No hypervolume history was recorded.</p>'
    fig = Figure(figsize=(7.5, 3.4))
    ax = fig.add_subplot()
    ax.plot([h.iteration for h in hist], [h.hypervolume for h in hist], marker="o", color="#1f6feb")
    ax2 = ax.twinx()
    ax2.step([h.iteration for h in hist], [h.frontier_size for h in hist], where="post", color="#999", linestyle="--")
    for axis in (ax.xaxis, ax2.yaxis):
        axis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("iteration")
    ax.set_ylabel("hypervolume")
    ax2.set_ylabel("frontier size (dashed)")
    ax.grid(alpha=0.3)
    ref = ", ".join(f"{_e(k)} = {_fmt(v)}" for k, v in fr.file.reference.items())
    return _png(fig) + f'<p class="muted">Reference point: {ref or "not recorded"}.</p>'


def _stage_cost_plot(fr: Frontier) -> str:
    members = [m for m in fr.members if m.stage_costs]
    if not members:
        return '<p class="muted">No per-stage costs were recorded.</p>'
    stages = sorted({s for m in members for s in m.stage_costs})
    unit = "usd" if any(c.get("usd", 0) > 0 for m in members for c in m.stage_costs.values()) else "tokens"
    fig = Figure(figsize=(7.5, 3.8))
    ax = fig.add_subplot()
    names = [m.member_id for m in members]
    bottom = [0.0] * len(members)
    for stage in stages:
        vals = [float(m.stage_costs.get(stage, {}).get(unit, 0.0)) for m in members]
        ax.bar(names, vals, bottom=bottom, label=stage)
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_ylabel("USD per document" if unit == "usd" else "tokens per document (all USD costs are 0)")
    ax.tick_params(axis="x", rotation=30, labelsize=8)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, axis="y")
    return _png(fig)


def _spend(fr: Frontier) -> str:
    spend = fr.file.optimization_spend or {}
    total = spend.get("total")
    if not total:
        return '<p class="muted">No optimization spend was recorded.</p>'

    def row(label: str, b: dict) -> str:
        return (f"<tr><td>{_e(label)}</td><td>{b.get('calls', 0):,}</td><td>{b.get('cache_hits', 0):,}</td>"
                f"<td>{b.get('billed_tokens', 0):,}</td><td>{b.get('list_tokens', 0):,}</td>"
                f"<td>{_fmt(b.get('billed_usd', 0.0))}</td><td>{_fmt(b.get('list_usd', 0.0))}</td></tr>")

    head = ("<tr><th>what</th><th>calls</th><th>cache hits</th><th>billed tokens</th><th>tokens at list</th>"
            "<th>billed USD</th><th>USD at list</th></tr>")
    phases = spend.get("by_phase", {})
    body = "".join(row(_PHASES.get(k, k), v) for k, v in sorted(phases.items())) + row("total", total)
    trials = spend.get("by_trial", {})
    trial_rows = "".join(row(f"trial {t}: {_PHASES.get(k, k)}", v) for t in sorted(trials, key=int)
                         for k, v in sorted(trials[t].items()))
    est = spend.get("estimate") or {}
    estimate = (f'<p class="muted">Estimated before the run: at most {est["optimization_calls"]:,} optimization calls and '
                f'{est["deployment_calls"]:,} deployment-run calls (about {est.get("calls_per_document", "?")} per '
                "document).</p>") if "optimization_calls" in est else ""
    return ("<p>What the campaign itself spent to find and measure its members. None of it is part of a "
            "member's cost per document, which comes only from the deployment runs' own ledgers.</p>"
            f"<table>{head}{body}</table>{estimate}<h3>Per trial</h3><table>{head}{trial_rows}</table>")


def _unified_diff(old: str, new: str, old_name: str, new_name: str) -> str:
    lines = []
    for line in difflib.unified_diff(old.splitlines(), new.splitlines(), old_name, new_name, lineterm=""):
        cls = ("hunk" if line.startswith("@@") else "add" if line.startswith("+") and not line.startswith("+++")
               else "del" if line.startswith("-") and not line.startswith("---") else "")
        text = _e(line)
        lines.append(f'<span class="{cls}">{text}</span>' if cls else text)
    return "<pre>" + "\n".join(lines) + "</pre>"


def _prompt_diffs(fr: Frontier, seed: MemberManifest | None) -> str:
    if seed is None:
        return '<p class="muted">No members.</p>'
    others = [m for m in fr.members if m.member_id != seed.member_id]
    parts = [f'<p>Seed member: <b>{_e(seed.member_id)}</b> (origin {_e(seed.lineage.origin)}).</p>']
    if not others:
        parts.append('<p class="muted">The seed is the only member; nothing to compare.</p>')
    for m in others:
        parts.append(f"<h3>{_e(m.member_id)}</h3>")
        predictors = sorted(set(seed.prompts) | set(m.prompts))
        changed = [p for p in predictors if seed.prompts.get(p) != m.prompts.get(p)]
        if not changed:
            parts.append('<p class="muted">All instructions identical to the seed.</p>')
        for p in changed:
            old, new = seed.prompts.get(p), m.prompts.get(p)
            note = " (only in the seed)" if new is None else " (not in the seed)" if old is None else ""
            parts.append(f"<p><code>{_e(p)}</code>{_e(note)}</p>")
            parts.append(_unified_diff(old or "", new or "", f"{seed.member_id}/{p}", f"{m.member_id}/{p}"))
        same = [p for p in predictors if p not in changed]
        if same and changed:
            parts.append(f'<p class="muted">Unchanged: {_e(", ".join(same))}</p>')
    return "\n".join(parts)


def _lineage_tree(fr: Frontier, knee: MemberManifest | None) -> str:
    """Nested list of the frontier members and their ancestors (through all candidates)."""
    rows = {r.id: r for r in fr.file.all_candidates}
    members = {m.member_id: m for m in fr.members}
    nodes: dict[str, tuple[str | None, object]] = {}
    for mid, m in members.items():
        cur: str | None = mid
        seen: set[str] = set()
        while cur is not None and cur not in seen:
            seen.add(cur)
            info = members.get(cur) or rows.get(cur)
            lineage = info.lineage if info is not None else None
            nodes.setdefault(cur, (lineage.parent if lineage else None, info))
            cur = lineage.parent if lineage else None
    if not nodes:
        return '<p class="muted">No members.</p>'
    children: dict[str | None, list[str]] = {}
    for nid, (parent, _) in nodes.items():
        children.setdefault(parent if parent in nodes else None, []).append(nid)

    def label(nid: str) -> str:
        info = nodes[nid][1]
        if info is None:
            return f'<span class="muted">{_e(nid)} (not recorded)</span>'
        lin = info.lineage
        q = info.objectives["quality"] if isinstance(info, MemberManifest) else info.quality
        c = info.objectives["cost_usd"] if isinstance(info, MemberManifest) else info.cost_usd
        badges = ""
        if nid in members:
            badges += '<span class="badge frontier">frontier</span>'
            if members[nid].val_only_win:
                badges += '<span class="badge warn">val-only win</span>'
        else:
            badges += '<span class="badge">not on frontier</span>'
        if knee is not None and nid == knee.member_id:
            badges += '<span class="badge knee">knee</span>'
        changed = ", ".join(lin.changed_programs) or "—"
        origin = lin.origin or "origin not recorded"
        return (f"<b>{_e(nid)}</b>{badges} <span class=\"muted\">{_e(origin)}, iteration {lin.iteration}; "
                f"changed: {_e(changed)}; Δ {lin.instruction_diff_chars} chars; quality {_fmt(q)}, "
                f"cost {_fmt(c)}</span>")

    def render(parent: str | None, depth: int = 0) -> str:
        kids = sorted(children.get(parent, []), key=lambda n: (nodes[n][1].lineage.iteration if nodes[n][1] else -1, n))
        if not kids or depth > 200:
            return ""
        return '<ul class="tree">' + "".join(f"<li>{label(k)}{render(k, depth + 1)}</li>" for k in kids) + "</ul>"

    return render(None)


def _wins_losses(fr: Frontier, seed: MemberManifest | None) -> str:
    if seed is None or "val" not in seed.splits or not seed.splits["val"].per_example:
        return '<p class="muted">The seed member has no per-example validation scores.</p>'
    base = seed.splits["val"].per_example
    summary, parts = [], []
    for m in fr.members:
        if m.member_id == seed.member_id:
            continue
        mine = m.splits["val"].per_example if "val" in m.splits else {}
        common = sorted(set(base) & set(mine))
        if not common:
            summary.append((m.member_id, 0, 0, 0, 0))
            continue
        diffs = [(ex, mine[ex] - base[ex]) for ex in common]
        wins = sum(d > TIE_EPS for _, d in diffs)
        losses = sum(d < -TIE_EPS for _, d in diffs)
        summary.append((m.member_id, len(common), wins, losses, len(common) - wins - losses))
        top = sorted(diffs, key=lambda t: (-abs(t[1]), t[0]))[:TOP_DIFFERENCES]
        body = "".join(f'<tr><td class="wrap">{_e(ex)}</td><td>{_fmt(base[ex])}</td><td>{_fmt(mine[ex])}</td>'
                       f'<td class="{"add" if d > TIE_EPS else "del" if d < -TIE_EPS else ""}">{d:+.4f}</td></tr>'
                       for ex, d in top)
        parts.append(f"<h3>{_e(m.member_id)} vs {_e(seed.member_id)}: largest differences</h3>"
                     f"<table><tr><th>example</th><th>seed</th><th>member</th><th>Δ</th></tr>{body}</table>")
    if not summary:
        return '<p class="muted">The seed is the only member; nothing to compare.</p>'
    head = "<tr><th>member</th><th>shared examples</th><th>wins</th><th>losses</th><th>ties</th></tr>"
    rows = "".join(f"<tr><td>{_e(a)}</td><td>{b}</td><td>{c}</td><td>{d}</td><td>{e}</td></tr>" for a, b, c, d, e in summary)
    return (f"<p>Validation per-example quality of each member against the seed <b>{_e(seed.member_id)}</b> "
            f"(|Δ| ≤ {TIE_EPS:g} is a tie).</p><table>{head}{rows}</table>" + "\n".join(parts))


def _summary(fr: Frontier, knee: MemberManifest | None) -> str:
    members = fr.members
    items = [("campaign", _e(fr.campaign)), ("frontier members", str(len(members))),
             ("evaluated candidates", str(len(fr.file.all_candidates) or len(members)))]
    if members:
        best = max(members, key=lambda m: (m.objectives["quality"], -m.objectives["cost_usd"]))
        key, _ = _cost_axis(fr)
        unit = "USD/doc" if key == "cost_usd" else "tokens/doc"
        cheap = min(members, key=lambda m: (m.objectives.get(key, 0.0), -m.objectives["quality"]))
        items += [("best quality", f"{_e(best.member_id)} — {_fmt(best.objectives['quality'])}"),
                  ("cheapest", f"{_e(cheap.member_id)} — {_fmt(cheap.objectives.get(key, 0.0))} {unit}, "
                               f"quality {_fmt(cheap.objectives['quality'])}"),
                  ("knee member", _e(knee.member_id) if knee else "–")]
    hist = fr.file.hypervolume_history
    items.append(("final hypervolume", _fmt(hist[-1].hypervolume) if hist else "n/a (no history)"))
    items.append(("objectives", _e(", ".join(f"{k} ({v})" for k, v in fr.file.objectives.items()))))
    cons = {k: v for k, v in fr.file.constraints.model_dump().items() if v is not None}
    items.append(("constraints", _e(", ".join(f"{k} = {v:g}" for k, v in cons.items()) or "none")))
    flagged = [m.member_id for m in members if m.val_only_win]
    if flagged:
        items.append(("val-only wins", _e(", ".join(flagged))))
    dl = "".join(f'<tr><th>{k}</th><td class="wrap">{v}</td></tr>' for k, v in items)
    return f"<table>{dl}</table><h3>Frontier members</h3>" + _members_table(fr)


def _models_cell(settings: Mapping[str, object]) -> str:
    """The member's models as a compact list: one line per distinct model, after the stages that use it."""
    models = settings.get("models")
    if isinstance(models, Mapping) and models:
        stages: dict[str, list[str]] = {}
        for stage, model in sorted(models.items()):
            stages.setdefault(str(model), []).append(str(stage))
        return '<ul class="models">' + "".join(
            f'<li><span class="muted">{_e(", ".join(names))}:</span> {_e(model)}</li>' for model, names in stages.items()
        ) + "</ul>"
    model = settings.get("model")
    return _e(model) if model else "–"


def _members_table(fr: Frontier) -> str:
    """``Frontier.table`` as HTML that fits the page: readable headers, the validation CI in one column, knee
    and val-only win as badges, long texts (models, programs) wrapped and the models listed per stage."""
    table = fr.table()
    manifests = {m.member_id: m for m in fr.members}
    head = ("<tr><th>member</th><th>quality (val)</th><th>95% CI (val)</th><th>test quality</th><th>cost (USD)</th>"
            "<th>tokens</th><th>parent</th><th>changed programs</th><th>models</th></tr>")
    rows = []
    for r in table.itertuples(index=False):
        badges = ('<span class="badge knee">knee</span>' if r.knee else "") + (
            '<span class="badge warn">val-only win</span>' if r.val_only_win else "")
        ci = ("–" if _cell(r.quality_ci_low) == "–" else f"{_cell(r.quality_ci_low)}–{_cell(r.quality_ci_high)}")
        m = manifests.get(r.member)
        models = _models_cell(m.settings) if m is not None else _e(_cell(r.models))
        rows.append(f'<tr><td class="wrap"><b>{_e(r.member)}</b>{badges}</td><td class="num">{_cell(r.quality)}</td>'
                    f'<td class="num">{ci}</td><td class="num">{_cell(r.test_quality)}</td>'
                    f'<td class="num">{_cell(r.cost_usd)}</td><td class="num">{_count(r.tokens)}</td>'
                    f'<td class="wrap">{_e(_cell(r.parent))}</td><td class="wrap">{_e(r.changed_programs or "–")}</td>'
                    f'<td class="wrap">{models}</td></tr>')
    return f'<table class="members">{head}{"".join(rows)}</table>'


def _count(value: object) -> str:
    """A token count with thousands separators ("–" when missing)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{float(value):,.0f}"


def _cell(value: object) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def render_report(fr: Frontier) -> str:
    """The report of a loaded frontier as an HTML string."""
    knee = fr.knee()
    seed = fr.seed()
    body = {
        "Summary": _summary(fr, knee),
        "Pareto frontier": _pareto_plot(fr, knee) + '<p class="muted">Grey: candidates not on the frontier; blue step '
                           "line: the validation frontier; red squares: test-split quality with bootstrap CI; star: "
                           "the knee.</p>",
        "Hypervolume history": _hypervolume_plot(fr),
        "Per-stage cost": _stage_cost_plot(fr) + '<p class="muted">Per pipeline stage, from the deployment runs on the '
                          "validation documents (list price).</p>",
        "Optimization spend": _spend(fr),
        "Prompt diffs against the seed": _prompt_diffs(fr, seed),
        "Lineage": _lineage_tree(fr, knee),
        "Per-example wins and losses": _wins_losses(fr, seed),
    }
    sections = "\n".join(f'<section><h2>{_e(title)}</h2>\n{body[title]}\n</section>' for title in SECTIONS)
    title = f"Frontier report — {fr.campaign}"
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>'
            f"<style>{_CSS}</style></head><body><h1>{_e(title)}</h1>\n{sections}\n</body></html>\n")


def write_report(campaign_dir: str | Path, out_html: str | Path | None = None) -> Path:
    """Write the campaign's report (default ``<campaign_dir>/report.html``) atomically; returns its path."""
    fr = Frontier.load(campaign_dir)
    out = Path(out_html) if out_html is not None else Path(campaign_dir) / "report.html"
    return write_text_atomic(out, render_report(fr))
