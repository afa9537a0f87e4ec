"""A campaign's frontier as one self-contained static HTML report.

One file, no external URL of any kind, every text HTML-escaped. Sections: summary, Pareto plot,
hypervolume history, per-stage cost, prompt diffs against the seed member, lineage tree, per-example
wins and losses against the seed.

The Pareto plot is interactive: a Plotly figure drawn by plotly.js, whose whole bundle (about 4.8 MB)
is inlined into the page, so the report works offline (and the file is that much larger). Hovering a
point shows the member, its quality interval, its cost per document and per stage and the programs it
changed against the seed; clicking a member opens its prompt diff (a ``<details>``) and marks its
lineage entry (``argus/resources/web/report.js``). The figure travels as JSON in a ``<script
type="application/json">`` block (``argus.output.pages.json_script``: ``<``, ``>`` and ``&`` written as JSON
escapes), never pasted into code; the hover texts in it are HTML-escaped once more, since Plotly reads
a few tags in them. Without JavaScript the page shows the same plot as a PNG (``<noscript>``). The other
plots are base64 PNGs (matplotlib's Agg canvas, no pyplot state).

Like every page of ``argus.output.pages``, the report carries a Content-Security-Policy: its two scripts (plotly.js
and report.js) run by hash and nothing else does; the style elements plotly.js appends are allowed by hash
as well (:func:`plotly_style_sources`), and so is the one style attribute it writes, a hover label's bold
(:data:`PLOTLY_STYLE_ATTRIBUTES`): neither ``'unsafe-inline'`` nor ``'unsafe-eval'`` is needed.

The page is the template ``argus/resources/templates/report.html.j2`` (it extends the layout the
``argus view`` pages share, and inlines ``argus/resources/web/report.css`` and ``report.js``), rendered
by ``argus.output.pages.render_page`` with autoescape on; this module gathers what it shows and draws the plots.
"""

from __future__ import annotations

import base64
import difflib
import functools
import io
import json
import math
import re
from collections.abc import Mapping
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
from markupsafe import Markup
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from argus.io import write_text_atomic
from argus.output.pages import escape, hash_source, json_script, money, render_page
from optimizers.frontier import CandidateRow, Frontier, MemberManifest

TIE_EPS = 1e-9
"""Per-example quality differences at most this large count as ties."""

TOP_DIFFERENCES = 8
"""Rows of the largest per-example differences shown per member."""

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


def _fmt(value: float | None, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.{digits}g}"


def _png(fig: Figure) -> str:
    """The figure as base64 PNG data, for an ``<img src="data:image/png;base64,…">``."""
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")


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


#: the axes the report's Pareto plot can draw: key → label (``AXES`` of a member, a candidate or a split)
AXIS_LABELS = {"quality": "quality", "cost_usd": "cost per document (USD)", "tokens": "tokens per document",
               "latency_s": "seconds per document (measured)"}


def _member_axes(m: MemberManifest) -> dict[str, float | None]:
    """A frontier member's point on every axis (validation): quality, USD, tokens, measured seconds."""
    val = m.splits.get("val")
    seconds = m.objectives.get("latency_s", val.latency_s if val is not None else None)
    return {"quality": m.objectives["quality"], "cost_usd": m.objectives["cost_usd"],
            "tokens": m.objectives.get("tokens", val.tokens if val is not None else None), "latency_s": seconds}


def _test_axes(m: MemberManifest) -> dict[str, float | None]:
    """A member's test-split point on every axis."""
    t = m.splits["test"]
    return {"quality": t.quality, "cost_usd": t.cost_usd, "tokens": t.tokens, "latency_s": t.latency_s}


def _candidate_axes(r: CandidateRow) -> dict[str, float | None]:
    return {"quality": r.quality, "cost_usd": r.cost_usd, "tokens": r.tokens, "latency_s": r.latency_s}


def plot_axes(fr: Frontier) -> list[str]:
    """The axes the plot offers: quality, and each cost the campaign's candidates carry (USD where any is
    above 0 or the campaign minimizes it, tokens, and measured seconds where any was measured)."""
    points = [_candidate_axes(r) for r in fr.file.all_candidates] + [_member_axes(m) for m in fr.members]
    axes = ["quality"]
    if "cost_usd" in fr.senses or any((p["cost_usd"] or 0) > 0 for p in points):
        axes.append("cost_usd")
    axes.append("tokens")
    if any(p["latency_s"] is not None for p in points):
        axes.append("latency_s")
    return axes


def _axis_menus(traces: list[dict[str, list]], modes: list[str], axes: list[str], x0: str, y0: str) -> list[dict]:
    """Plotly ``updatemenus``: two drop-downs that redraw every trace on another x or y axis (values per trace
    and axis in ``traces``; a point without a value on an axis is left out). Quality intervals (error bars)
    show only while y is quality; the frontier's step line only on the cost axis it was drawn for."""
    def button(axis: str, which: str) -> dict:
        data = {which: [t[axis] for t in traces]}
        # the frontier's step line holds on the axes it was drawn for (cost, quality); elsewhere points alone
        home = axis == (x0 if which == "x" else y0)
        data["mode"] = [m if home else "markers" for m in modes]
        if which == "y":
            data["error_y.visible"] = [axis == "quality"] * len(traces)
        layout = {f"{which}axis.title.text": AXIS_LABELS[axis]}
        return {"label": AXIS_LABELS[axis], "method": "update", "args": [data, layout]}

    def menu(which: str, current: str, x: float) -> dict:
        return {"type": "dropdown", "direction": "down", "showactive": True, "x": x, "y": 1.13, "xanchor": "left",
                "yanchor": "top", "active": axes.index(current), "name": f"{which} axis",
                "buttons": [button(a, which) for a in axes]}

    return [menu("x", x0, 0.09), menu("y", y0, 0.59)]


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


FIGURE_ID = "pareto-figure"
"""Id of the ``<script type="application/json">`` block holding the interactive Pareto plot (report.js reads it)."""

_COLORS = {"candidate": "#b0b0b0", "frontier": "#1f6feb", "test": "#d1242f", "knee": "#f0a500"}


@functools.cache
def plotly_bundle() -> Markup:
    """plotly.js (the copy the plotly package ships) as markup for an inline ``<script>``.

    A bundle holding ``</script`` or ``<!--`` would end or confuse its script element; that would be a
    broken plotly release, refused here rather than written into a page.
    """
    from plotly.offline import get_plotlyjs

    js = get_plotlyjs()
    if re.search(r"</script|<!--", js, flags=re.IGNORECASE):
        raise RuntimeError("the plotly.js bundle of this plotly release holds '</script' or '<!--' and cannot be "
                           "inlined into a page; install another plotly version")
    return Markup(js)


_BUNDLE_STYLE = re.compile(r"""document\.createElement\("style"\);?[^;]{0,300}?\.textContent='([^'\\]*)'""")


@functools.cache
def plotly_style_sources() -> tuple[str, ...]:
    """The style elements plotly.js adds to a page, as the report's Content-Security-Policy allows them: by
    the SHA-256 of their text, as the page's own (``argus.output.pages.content_security_policy``).

    plotly.js writes its style rules (modebar, cursors, hover) into an empty ``<style>`` it appends and fills
    with ``insertRule``, which the policy does not check: the hash of the empty text allows that element. The
    bundle also appends fixed style sheets as string literals (maplibre's, for map plots), hashed here from
    the bundle itself. Neither needs ``'unsafe-inline'``, nor does plotly.js need ``'unsafe-eval'`` for the
    scatter plots drawn here (its one ``new Function`` runs only where ``globalThis`` is missing, its
    ``eval`` only for map plots). Should a plotly.js release insert a style the pattern misses, the browser
    shows a CSP violation and the browser tests fail on it.
    """
    sources = [hash_source("")]
    sources += [hash_source(text) for text in _BUNDLE_STYLE.findall(str(plotly_bundle()))]
    return tuple(dict.fromkeys(sources))


PLOTLY_STYLE_ATTRIBUTES = ("font-weight:bold",)
"""The style attributes plotly.js writes into the page, which the report's policy allows by hash
(``'unsafe-hashes'``): a hover label's ``<b>`` becomes ``<tspan style="font-weight:bold">`` (plotly.js sets
the other inline styles through the CSSOM, which the policy does not check). A label's text is escaped
(:func:`_h`), so ``<b>`` is the only tag in it; any other style attribute is blocked."""


def member_anchors(fr: Frontier) -> dict[str, str]:
    """member id -> the short key of its page elements (``diff-<key>``, ``lineage-<key>``), safe in any id."""
    return {m.member_id: f"m{i}" for i, m in enumerate(fr.members)}


def changed_vs_seed(m: MemberManifest, seed: MemberManifest | None) -> list[str]:
    """The programs (a predictor name's first part, as GEPA's lineage counts them) whose instructions differ
    from the seed's."""
    if seed is None:
        return []
    names = set(seed.prompts) | set(m.prompts)
    return sorted({p.split(".")[0] for p in names if seed.prompts.get(p) != m.prompts.get(p)})


def _h(value: object) -> str:
    """Text for a Plotly hover label: HTML-escaped, since Plotly reads tags such as <b> and <a> in it."""
    return str(escape(str(value)))


def _cost_text(usd: float, tokens: float | None) -> str:
    return money(usd) if tokens is None else f"{money(usd)} · {tokens:,.0f} tokens"


def _interval(ci: tuple[float, float] | None) -> str:
    return f" (95% CI {_fmt(ci[0])}–{_fmt(ci[1])})" if ci else ""


def _member_hover(m: MemberManifest, seed: MemberManifest | None, knee: MemberManifest | None) -> str:
    """The hover label of a frontier member: id, quality with its interval, cost per document and per stage,
    the programs it changed against the seed."""
    flags = " · knee" if knee is not None and m.member_id == knee.member_id else ""
    flags += " · val-only win" if m.val_only_win else ""
    flags += " · the default (what argus extract runs)" if m.default else ""
    val, test = m.splits.get("val"), m.splits.get("test")
    lines = [f"<b>{_h(m.member_id)}</b> · frontier member{flags}",
             f"quality {_fmt(m.objectives['quality'])}{_interval(val.quality_ci if val else None)} on validation"]
    if test is not None:
        lines.append(f"test quality {_fmt(test.quality)}{_interval(test.quality_ci)}")
    lines.append(f"cost per document {_cost_text(m.objectives['cost_usd'], m.objectives.get('tokens'))}")
    if m.stage_costs:
        lines.append("cost per stage:")
        lines += [f"· {_h(stage)}: {_cost_text(c.get('usd', 0.0), c.get('tokens'))}"
                  for stage, c in sorted(m.stage_costs.items())]
    if seed is not None and m.member_id == seed.member_id:
        lines.append("the seed: the other members' diffs are against it")
    else:
        lines.append(f"changed against the seed: {_h(', '.join(changed_vs_seed(m, seed)) or 'nothing')}")
    lines.append(f"{_h(m.lineage.origin)}, iteration {m.lineage.iteration} · click: prompt diff and lineage")
    return "<br>".join(lines)


def _candidate_hover(r: CandidateRow) -> str:
    """The hover label of a candidate that is not on the frontier."""
    why = ""
    if not r.feasible:
        why = "infeasible"
    elif r.dominated_by:
        why = "dominated by " + ", ".join(r.dominated_by)
    changed = _h(", ".join(r.changed_programs) or "–")
    lines = [f"<b>{_h(r.id)}</b> · not on the frontier" + (f" ({_h(why)})" if why else ""),
             f"quality {_fmt(r.quality)} on validation",
             f"cost per document {_cost_text(r.cost_usd, r.tokens)}",
             f"{_h(r.origin or 'origin not recorded')}, iteration {r.iteration}; changed against its parent: {changed}"]
    return "<br>".join(lines)


def _error_bars(values: list[float], cis: list[tuple[float, float] | None], color: str) -> dict:
    """Plotly error bars from intervals around ``values`` (none where an interval is missing)."""
    return {"type": "data", "symmetric": False, "color": color, "thickness": 1.2, "width": 4,
            "array": [max(0.0, ci[1] - v) if ci else 0.0 for v, ci in zip(values, cis)],
            "arrayminus": [max(0.0, v - ci[0]) if ci else 0.0 for v, ci in zip(values, cis)]}


def pareto_figure(fr: Frontier, knee: MemberManifest | None, seed: MemberManifest | None) -> dict:
    """The interactive Pareto plot as Plotly's JSON (``data``, ``layout``, ``config``).

    Grey: candidates not on the frontier; blue: the frontier members (validation quality with its 95 %
    interval, a step line between them); red squares: test quality with its interval; a star: the knee.
    A member's points carry its anchor (:func:`member_anchors`) as ``customdata``, which a click reads.
    """
    key, label = _cost_axis(fr)
    anchors = member_anchors(fr)
    hover = "%{text}<extra></extra>"
    fig = go.Figure()
    others = [r for r in fr.file.all_candidates if not r.on_frontier]
    axes = plot_axes(fr)
    traces: list[dict[str, list]] = []  # per trace drawn: axis → its points' values (the axis drop-downs)
    modes: list[str] = []

    def on_axes(points: list[dict[str, float | None]], mode: str = "markers") -> None:
        traces.append({a: [p[a] for p in points] for a in axes})
        modes.append(mode)

    if others:
        on_axes([_candidate_axes(r) for r in others])
        fig.add_scatter(name="other candidates", mode="markers", x=[getattr(r, key) for r in others],
                        y=[r.quality for r in others], text=[_candidate_hover(r) for r in others],
                        hovertemplate=hover, marker={"color": _COLORS["candidate"], "size": 9})
    members = sorted(fr.members, key=lambda m: (_member_x(m, key), -m.objectives["quality"]))
    if members:
        ys = [m.objectives["quality"] for m in members]
        cis = [m.splits["val"].quality_ci if "val" in m.splits else None for m in members]
        on_axes([_member_axes(m) for m in members], "lines+markers")
        fig.add_scatter(name="frontier (val, 95% CI)", mode="lines+markers", x=[_member_x(m, key) for m in members],
                        y=ys, customdata=[anchors[m.member_id] for m in members],
                        text=[_member_hover(m, seed, knee) for m in members], hovertemplate=hover,
                        line={"shape": "hv", "color": _COLORS["frontier"], "width": 1.5},
                        marker={"color": _COLORS["frontier"], "size": 11},
                        error_y=_error_bars(ys, cis, _COLORS["frontier"]))
    tested = [m for m in members if "test" in m.splits]
    if tested:
        ys = [m.splits["test"].quality for m in tested]
        on_axes([_test_axes(m) for m in tested])
        fig.add_scatter(name="test quality (95% CI)", mode="markers", x=[_member_x(m, key) for m in tested], y=ys,
                        customdata=[anchors[m.member_id] for m in tested],
                        text=[_member_hover(m, seed, knee) for m in tested], hovertemplate=hover,
                        marker={"symbol": "square-open", "color": _COLORS["test"], "size": 9},
                        error_y=_error_bars(ys, [m.splits["test"].quality_ci for m in tested], _COLORS["test"]))
    if knee is not None:
        on_axes([_member_axes(knee)])
        fig.add_scatter(name=f"knee ({_h(knee.member_id)})", mode="markers", x=[_member_x(knee, key)],
                        y=[knee.objectives["quality"]], customdata=[anchors[knee.member_id]],
                        text=[_member_hover(knee, seed, knee)], hovertemplate=hover,
                        marker={"symbol": "star", "color": _COLORS["knee"], "size": 20,
                                "line": {"color": "black", "width": 1}})
    fig.update_layout(template="plotly_white", height=500, margin={"l": 60, "r": 20, "t": 60, "b": 60},
                      updatemenus=_axis_menus(traces, modes, axes, key, "quality") if traces else [],
                      annotations=[{"text": "x:", "x": 0.0, "y": 1.11, "xref": "paper", "yref": "paper",
                                    "showarrow": False, "xanchor": "left"},
                                   {"text": "y:", "x": 0.5, "y": 1.11, "xref": "paper", "yref": "paper",
                                    "showarrow": False, "xanchor": "left"}] if traces else [],
                      hovermode="closest", xaxis_title=label, yaxis_title="quality",
                      font={"family": "system-ui, sans-serif", "size": 12}, hoverlabel={"align": "left"},
                      legend={"x": 0.99, "y": 0.02, "xanchor": "right", "yanchor": "bottom",
                              "bgcolor": "rgba(255,255,255,0.8)"})
    figure = json.loads(pio.to_json(fig, validate=True))
    figure["config"] = {"displaylogo": False, "responsive": True}
    return figure


def _hypervolume_plot(fr: Frontier) -> str | None:
    hist = fr.file.hypervolume_history
    if not hist:
        return None
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
    return _png(fig)


def _stage_cost_plot(fr: Frontier) -> str | None:
    members = [m for m in fr.members if m.stage_costs]
    if not members:
        return None
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


def _spend(fr: Frontier) -> dict:
    """What the campaign spent: the total, (label, spend) per phase and per trial and phase, the estimate made
    before the run (None without one); an empty total when none was recorded."""
    spend = fr.file.optimization_spend or {}
    trials = spend.get("by_trial", {})
    est = spend.get("estimate") or {}
    return {
        "total": spend.get("total"),
        "phases": [(_PHASES.get(k, k), v) for k, v in sorted(spend.get("by_phase", {}).items())],
        "trials": [(f"trial {t}: {_PHASES.get(k, k)}", v) for t in sorted(trials, key=int)
                   for k, v in sorted(trials[t].items())],
        "estimate": est if "optimization_calls" in est else None,
    }


def _diff_lines(old: str, new: str, old_name: str, new_name: str) -> list[tuple[str, str]]:
    """The unified diff of two instructions as (class, line): "add", "del", "hunk" or "" for the rest."""
    lines = []
    for line in difflib.unified_diff(old.splitlines(), new.splitlines(), old_name, new_name, lineterm=""):
        cls = ("hunk" if line.startswith("@@") else "add" if line.startswith("+") and not line.startswith("+++")
               else "del" if line.startswith("-") and not line.startswith("---") else "")
        lines.append((cls, line))
    return lines


def _lineage_nodes(fr: Frontier) -> dict[str, tuple[str | None, MemberManifest | CandidateRow | None]]:
    """The frontier members and their ancestors (through all candidates): id -> (parent id, what is recorded
    of it, None when nothing is)."""
    rows = {r.id: r for r in fr.file.all_candidates}
    members = {m.member_id: m for m in fr.members}
    nodes: dict[str, tuple[str | None, MemberManifest | CandidateRow | None]] = {}
    for mid in members:
        cur: str | None = mid
        seen: set[str] = set()
        while cur is not None and cur not in seen:
            seen.add(cur)
            info = members.get(cur) or rows.get(cur)
            lineage = info.lineage if info is not None else None
            nodes.setdefault(cur, (lineage.parent if lineage else None, info))
            cur = lineage.parent if lineage else None
    return nodes


def _ancestry(nodes: Mapping[str, tuple[str | None, object]], member_id: str) -> list[str]:
    """The ids from the oldest recorded ancestor down to ``member_id``."""
    path = [member_id]
    parent = nodes[member_id][0]
    while parent is not None and parent in nodes and parent not in path:
        path.append(parent)
        parent = nodes[parent][0]
    return path[::-1]


def _prompt_diffs(fr: Frontier, seed: MemberManifest | None) -> list[dict]:
    """Per member (the seed first): its anchor, its line of ancestors, the programs it changed against the
    seed, its changed instructions (predictor, note, diff lines) and the unchanged ones."""
    if seed is None:
        return []
    anchors = member_anchors(fr)
    nodes = _lineage_nodes(fr)
    out = []
    for m in sorted(fr.members, key=lambda m: m.member_id != seed.member_id):
        predictors = sorted(set(seed.prompts) | set(m.prompts))
        changed = []
        for p in predictors:
            old, new = seed.prompts.get(p), m.prompts.get(p)
            if old == new:
                continue
            note = " (only in the seed)" if new is None else " (not in the seed)" if old is None else ""
            changed.append((p, note, _diff_lines(old or "", new or "", f"{seed.member_id}/{p}", f"{m.member_id}/{p}")))
        same = [p for p in predictors if seed.prompts.get(p) == m.prompts.get(p)]
        out.append({"member": m.member_id, "key": anchors[m.member_id], "is_seed": m.member_id == seed.member_id,
                    "lineage": m.lineage, "ancestry": _ancestry(nodes, m.member_id),
                    "programs": changed_vs_seed(m, seed), "changed": changed, "same": same})
    return out


def _lineage_tree(fr: Frontier, knee: MemberManifest | None) -> Markup:
    """Nested list of the frontier members and their ancestors (through all candidates); a member's entry has
    the id ``lineage-<anchor>`` (:func:`member_anchors`)."""
    members = {m.member_id: m for m in fr.members}
    anchors = member_anchors(fr)
    nodes = _lineage_nodes(fr)
    if not nodes:
        return Markup('<p class="muted">No members.</p>')
    children: dict[str | None, list[str]] = {}
    for nid, (parent, _) in nodes.items():
        children.setdefault(parent if parent in nodes else None, []).append(nid)

    def label(nid: str) -> Markup:
        info = nodes[nid][1]
        if info is None:
            return Markup(f'<span class="muted">{escape(nid)} (not recorded)</span>')
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
        if getattr(info, "default", False):
            badges += '<span class="badge default">default</span>'
        changed = ", ".join(lin.changed_programs) or "—"
        origin = lin.origin or "origin not recorded"
        return Markup(f'<b>{escape(nid)}</b>{badges} <span class="muted">{escape(origin)}, iteration {lin.iteration}; '
                      f"changed: {escape(changed)}; Δ {lin.instruction_diff_chars} chars; quality {_fmt(q)}, "
                      f"cost {_fmt(c)}</span>")

    def item(nid: str, depth: int) -> str:
        anchor = f' id="lineage-{anchors[nid]}"' if nid in anchors else ""
        return f"<li{anchor}>{label(nid)}{render(nid, depth + 1)}</li>"

    def render(parent: str | None, depth: int = 0) -> str:
        kids = sorted(children.get(parent, []), key=lambda n: (nodes[n][1].lineage.iteration if nodes[n][1] else -1, n))
        if not kids or depth > 200:
            return ""
        return '<ul class="tree">' + "".join(item(k, depth) for k in kids) + "</ul>"

    return Markup(render(None))


def _wins_losses(fr: Frontier, seed: MemberManifest | None) -> dict | None:
    """Each member against the seed on the shared validation examples: ``summary`` rows (member, shared, wins,
    losses, ties) and, per member, its ``largest`` differences (example, seed's, member's, Δ); None when the
    seed has no per-example scores."""
    if seed is None or "val" not in seed.splits or not seed.splits["val"].per_example:
        return None
    base = seed.splits["val"].per_example
    summary, largest = [], []
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
        largest.append((m.member_id, [(ex, base[ex], mine[ex], d) for ex, d in top]))
    return {"summary": summary, "largest": largest}


def _summary(fr: Frontier, knee: MemberManifest | None) -> list[tuple[str, str]]:
    """The summary table's (label, value) rows."""
    members = fr.members
    items = [("campaign", fr.campaign), ("frontier members", str(len(members))),
             ("evaluated candidates", str(len(fr.file.all_candidates) or len(members)))]
    if members:
        best = max(members, key=lambda m: (m.objectives["quality"], -m.objectives["cost_usd"]))
        key, _ = _cost_axis(fr)
        unit = "USD/doc" if key == "cost_usd" else "tokens/doc"
        cheap = min(members, key=lambda m: (m.objectives.get(key, 0.0), -m.objectives["quality"]))
        items += [("best quality", f"{best.member_id} — {_fmt(best.objectives['quality'])}"),
                  ("cheapest", f"{cheap.member_id} — {_fmt(cheap.objectives.get(key, 0.0))} {unit}, "
                               f"quality {_fmt(cheap.objectives['quality'])}"),
                  ("knee member", knee.member_id if knee else "–")]
    default = next((r for r in fr.file.all_candidates if r.default), None)
    if default is not None:
        where = "on the frontier" if default.on_frontier else f"dominated by {', '.join(default.dominated_by) or '–'}"
        items.append(("the default (what argus extract runs)", f"{default.id} — quality {_fmt(default.quality)}, "
                      f"{_fmt(default.tokens)} tokens/doc; {where}"))
    hist = fr.file.hypervolume_history
    items.append(("final hypervolume", _fmt(hist[-1].hypervolume) if hist else "n/a (no history)"))
    items.append(("outer search", search_text(fr.file.search)))
    items.append(("objectives", ", ".join(f"{k} ({v})" for k, v in fr.file.objectives.items())))
    cons = {k: v for k, v in fr.file.constraints.model_dump().items() if v is not None}
    items.append(("constraints", ", ".join(f"{k} = {v:g}" for k, v in cons.items()) or "none"))
    flagged = [m.member_id for m in members if m.val_only_win]
    if flagged:
        items.append(("val-only wins", ", ".join(flagged)))
    return items


def search_text(search: Mapping[str, object]) -> str:
    """The outer search in words (``FrontierFile.search``): the sampler, the positions planned by enumeration,
    and how many of the sampler's draws were random."""
    if not search:
        return "not recorded (a frontier file written before the sampler was)"
    options = (["multivariate"] if search.get("multivariate") else []) + [f"seed {search.get('seed', '?')}"]
    text = f"{search.get('sampler', '?')} ({', '.join(options)}): "
    positions, planned = search.get("positions", 0), search.get("planned", 0)
    if planned:
        text += f"{planned} of {positions} trial positions enumerated in a seeded order, not drawn; "
    drawn, rnd = search.get("drawn", 0), search.get("random_draws", 0)
    text += f"{drawn} completed position{'' if drawn == 1 else 's'} drawn by the sampler, {rnd} of them at random"
    startup = search.get("n_startup_trials")
    if startup is not None:
        text += f" (it draws at random until {startup} trials are finished)"
    return text


def _models_of(settings: Mapping[str, object]) -> list[tuple[str, str]] | str:
    """The member's models, compactly: (the stages that use it, model) per distinct model, else its one model
    ("–" when none)."""
    models = settings.get("models")
    if isinstance(models, Mapping) and models:
        stages: dict[str, list[str]] = {}
        for stage, model in sorted(models.items()):
            stages.setdefault(str(model), []).append(str(stage))
        return [(", ".join(names), model) for model, names in stages.items()]
    model = settings.get("model")
    return str(model) if model else "–"


def _members_table(fr: Frontier) -> list[dict]:
    """``Frontier.table`` as the rows of a table that fits the page: the validation CI in one cell, knee and
    val-only win as flags, the models listed per stage."""
    manifests = {m.member_id: m for m in fr.members}
    rows = []
    for r in fr.table().itertuples(index=False):
        low = _cell(r.quality_ci_low)
        m = manifests.get(r.member)
        rows.append({
            "member": r.member, "knee": r.knee, "val_only_win": r.val_only_win, "default": r.default,
            "quality": _cell(r.quality), "ci": low if low == "–" else f"{low}–{_cell(r.quality_ci_high)}",
            "test_quality": _cell(r.test_quality), "cost_usd": _cell(r.cost_usd), "tokens": _count(r.tokens),
            "parent": _cell(r.parent), "changed_programs": r.changed_programs or "–",
            "models": _models_of(m.settings) if m is not None else _cell(r.models),
        })
    return rows


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
    return render_page(
        "report.html.j2",
        style_src=plotly_style_sources(),
        style_attributes=PLOTLY_STYLE_ATTRIBUTES,
        title=f"Frontier report — {fr.campaign}",
        sections=SECTIONS,
        summary=_summary(fr, knee),
        members=_members_table(fr),
        pareto_png=_pareto_plot(fr, knee),
        pareto_figure=json_script(pareto_figure(fr, knee, seed), FIGURE_ID),
        plotly_js=plotly_bundle(),
        hypervolume_png=_hypervolume_plot(fr),
        reference=", ".join(f"{k} = {_fmt(v)}" for k, v in fr.file.reference.items()),
        stage_cost_png=_stage_cost_plot(fr),
        spend=_spend(fr),
        seed=seed,
        prompt_diffs=_prompt_diffs(fr, seed),
        lineage=_lineage_tree(fr, knee),
        wins_losses=_wins_losses(fr, seed),
        tie_eps=TIE_EPS,
        fmt=_fmt,
    )


def write_report(campaign_dir: str | Path, out_html: str | Path | None = None) -> Path:
    """Write the campaign's report (default ``<campaign_dir>/report.html``) atomically; returns its path."""
    fr = Frontier.load(campaign_dir)
    out = Path(out_html) if out_html is not None else Path(campaign_dir) / "report.html"
    return write_text_atomic(out, render_report(fr))
