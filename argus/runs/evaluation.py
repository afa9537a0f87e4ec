"""The evaluation protocol (``argus eval``): staged pipeline and one-shot baseline against gold,
structural checks, LLM judges, pairwise preference with agreement statistics, judge stability,
merge statistics and cost per document — as pandas DataFrames, written as CSV and Markdown.

Inputs are folders of annotated complaints (``<doc>/complaint.txt`` + ``<doc>/gold.json``, or a
split folder holding such folders), or gold files ``<doc_id>.gold.json`` (``argus annotate serve`` writes
them beside ``<doc_id>.ekg.json``), or folders of them (``find_gold_sources``). The graphs come from
existing output folders (``--staged``, ``--oneshot``: ``<doc_id>.ekg.json`` files, e.g. from ``argus
extract``) or are produced here into
``OUT/staged`` and ``OUT/oneshot`` (resumable: documents already there are not redone). Judge calls
go to ``OUT/ledger.jsonl``; the pipelines' own calls stay in their EKGs and folders.

A document that fails (no graph, an unreadable file, a judge error) is recorded in ``errors.csv``
and the others go on.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pandas as pd

from argus.config import ArgusConfig, LMSpec
from argus.errors import InputError
from argus.io import write_text_atomic
from argus.models.ledger import CostLedger
from argus.graph.schema import DocumentEKG
from argus.ingest.gold import GOLD_SUFFIX, GoldSource, find_gold_sources  # noqa: F401  (their old home)

METHODS = ("floor", "staged", "oneshot")
"""What ``argus eval`` compares by default: the floor (no language model), the pipeline's configured
design and the one-shot baseline; ``chunked`` and ``sentence`` name a design whatever the
configuration says (``argus.runs.batch.METHODS``)."""


@dataclass
class EvalReport:
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    errors: list[dict] = field(default_factory=list)
    out_dir: Path | None = None
    ledger: CostLedger | None = None

    def markdown(self) -> str:
        parts = ["# ARGUS evaluation", ""]
        for name, df in self.tables.items():
            parts += [f"## {TITLES.get(name, name)}", "", _md(df), ""]
        if self.errors:
            parts += ["## Errors", "", _md(pd.DataFrame(self.errors)), ""]
        return "\n".join(parts)


TITLES = {
    "gold_matching": "Gold matching (precision / recall / F1 per element type and tier)",
    "gold_summary": "Gold matching, mean over documents",
    "facts": "Fact extraction against the gold sentence labels",
    "structural": "Structural checks",
    "judge": "Judge scores (criteria 1–5 mapped to [0, 1])",
    "quality": "Quality (weighted structural + judge) and cost per document",
    "merge": "Document-level merging (as in the ARGUS paper's Table 5)",
    "vs_floor": "Each method against the floor (no language model): mean relaxed F1 over documents with a 95 % "
                "bootstrap interval, the paired difference to the floor with its 95 % paired bootstrap interval, "
                "and on how many documents the method scores at least the floor",
    "pairwise": "Staged (A) versus one-shot (B): pairwise preference (as in Table 7)",
    "pairwise_judgments": "Pairwise judgments",
    "stability": "Judge stability under temperature variation (as in Table 11)",
}


def _md(df: pd.DataFrame) -> str:
    if df.empty:
        return "(empty)"
    return df.to_markdown(index=False, floatfmt=".3f")


def find_gold_documents(paths) -> list[Path]:
    """Folders holding ``gold.json`` (and ``complaint.txt``), from documents or split folders."""
    found: list[Path] = []
    for p in map(Path, paths):
        if (p / "gold.json").is_file():
            found.append(p)
        elif p.is_dir():
            found += sorted(d for d in p.iterdir() if (d / "gold.json").is_file())
        else:
            raise InputError(f"{p}: not an annotated document folder (no gold.json) nor a folder of them")
    if not found:
        raise InputError(f"no annotated documents (folders with gold.json) under {', '.join(map(str, paths))}")
    return found


def load_ekgs(folder: Path) -> dict[str, DocumentEKG]:
    out: dict[str, DocumentEKG] = {}
    for f in sorted(Path(folder).glob("*.ekg.json")):
        ekg = DocumentEKG.model_validate_json(f.read_text(encoding="utf-8"))
        out[ekg.doc_id] = ekg
    return out


def _ensure_outputs(docs: list[GoldSource], folder: Path, method: str, config: ArgusConfig, console) -> None:
    from argus.runs.batch import run_batch

    missing = [d.text for d in docs if d.text is not None and not (folder / f"{d.name}.ekg.json").exists()]
    if missing:
        run_batch(missing, folder, config, method=method, skip_existing=True, console=console)


def _seconds(ekg: DocumentEKG) -> float:
    return sum(s.seconds for s in ekg.stages)


def run_evaluation(
    gold_paths,
    out_dir: str | Path,
    config: ArgusConfig | None = None,
    *,
    staged_dir: str | Path | None = None,
    oneshot_dir: str | Path | None = None,
    methods: tuple[str, ...] = METHODS,
    method_dirs: dict[str, str | Path] | None = None,
    run_missing: bool = True,
    use_judges: bool = True,
    judge_factory: Callable[[LMSpec, str, CostLedger], object] | None = None,
    console=None,
) -> EvalReport:
    """Run the protocol and write ``OUT/tables/*.csv|md`` and ``OUT/report.md``.

    Each method's graphs come from ``method_dirs[method]`` (``staged_dir`` / ``oneshot_dir`` for those
    two), by default ``OUT/<method>``, and are produced there first where missing (``run_missing``).
    """
    from rich.console import Console

    from metrics.gold import load_gold, score_document
    from metrics.quality import document_cost, quality_score
    from metrics.judge import judge_sentences
    from metrics.structural import structural_for_ekg

    config = config or ArgusConfig()
    console = console or Console(stderr=True)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    ev = config.eval
    docs = find_gold_sources(gold_paths)
    report = EvalReport(out_dir=out, ledger=CostLedger(path=out / "ledger.jsonl"))

    # ---- graphs
    from argus.runs.batch import METHODS as RUNNABLE

    unknown = [m for m in methods if m not in RUNNABLE]
    if unknown:
        raise InputError(f"unknown method(s) {unknown}; known: {', '.join(RUNNABLE)}")
    given = {"staged": staged_dir, "oneshot": oneshot_dir, **(method_dirs or {})}
    folders = {m: Path(given[m]) if given.get(m) else out / m for m in methods}
    ekgs: dict[str, dict[str, DocumentEKG]] = {}
    for method in methods:
        folder = folders[method]
        if run_missing:
            _ensure_outputs(docs, folder, method, config, console)
        ekgs[method] = load_ekgs(folder) if folder.exists() else {}

    # ---- judges
    judges = []
    factory = judge_factory or _default_judge
    if use_judges:
        specs = ev.judge_specs(config.lm)
        names = _judge_names(specs)
        judges = [factory(spec, name, report.ledger) for spec, name in zip(specs, names)]

    event_judge_for = None
    if ev.llm_match and judges:
        first = judges[0]
        event_judge_for = lambda doc_id: (lambda a, b: first.same_event(a, b, doc_id=doc_id))  # noqa: E731

    gold_rows, fact_rows, struct_rows, judge_rows, quality_rows, merge_rows = [], [], [], [], [], []
    golds = {}
    for d in docs:
        try:
            golds[d.name] = load_gold(d.gold)
        except Exception as exc:  # a broken gold file is reported, the rest go on
            report.errors.append({"doc_id": d.name, "method": "", "step": "load gold", "error": f"{type(exc).__name__}: {exc}"})
    for d in docs:
        gold = golds.get(d.name)
        if gold is None:
            continue
        for method in methods:
            ekg = ekgs[method].get(gold.doc_id)
            if ekg is None:
                report.errors.append({"doc_id": gold.doc_id, "method": method, "step": "graph", "error": f"no {method} EKG in {folders[method]}"})
                continue
            try:
                row = score_document(ekg, gold, tiers=("exact", "relaxed") + (("llm",) if event_judge_for else ()),
                                     event_judge=event_judge_for(gold.doc_id) if event_judge_for else None)
            except Exception as exc:
                report.errors.append({"doc_id": gold.doc_id, "method": method, "step": "gold matching", "error": f"{type(exc).__name__}: {exc}"})
                continue
            gold_rows.append({k: v for k, v in row.items() if not k.startswith(("fact_", "merge_"))})
            fact_rows.append({"doc_id": gold.doc_id, "method": method, **{k[5:]: v for k, v in row.items() if k.startswith("fact_")}})
            if method == "staged":
                merge_rows.append({"doc_id": gold.doc_id, **{k[6:]: v for k, v in row.items() if k.startswith("merge_")}})
            st = structural_for_ekg(ekg, weights=ev.structural_weights, coverage_target=ev.coverage_target)
            struct_rows.append({"doc_id": gold.doc_id, "method": method, **st.components, "structural": st.score,
                                "events": st.details["events"], "temporal_edges": st.details["temporal_edges"],
                                "causal_edges": st.details["causal_edges"]})
            judged = []
            sentences = judge_sentences(ekg)
            for judge in judges:
                try:
                    j = judge.score(ekg.graph, sentences, doc_id=gold.doc_id)
                except Exception as exc:
                    report.errors.append({"doc_id": gold.doc_id, "method": method, "step": f"judge {judge.name}", "error": f"{type(exc).__name__}: {exc}"})
                    continue
                judged.append(j)
                judge_rows.append({"doc_id": gold.doc_id, "method": method, "judge": judge.name, **j.components, "judge_score": j.score,
                                   "failed": j.details.get("failed", False)})
            jmean = None
            if judged:
                from metrics.base import MetricResult

                jmean = MetricResult("judge", sum(j.score for j in judged) / len(judged))
            q = quality_score(st, jmean, ev.quality_weights)
            cost = document_cost(ekg)
            quality_rows.append({"doc_id": gold.doc_id, "method": method, "structural": st.score,
                                 "judge": jmean.score if jmean else math.nan, "quality": q.score,
                                 "cost_usd": cost.usd, "tokens": cost.tokens, "lm_calls": cost.calls,
                                 "cache_hits": cost.cache_hits, "billed_usd": cost.billed_usd,
                                 "seconds": round(_seconds(ekg), 1)})

    tables = report.tables
    tables["gold_matching"] = pd.DataFrame(gold_rows)
    if gold_rows:
        g = tables["gold_matching"]
        num = [c for c in g.columns if c not in ("doc_id", "method") and pd.api.types.is_numeric_dtype(g[c])]
        tables["gold_summary"] = _summary_by_method(g, num)
    tables["facts"] = pd.DataFrame(fact_rows)
    tables["structural"] = pd.DataFrame(struct_rows)
    tables["judge"] = pd.DataFrame(judge_rows)
    q = pd.DataFrame(quality_rows)
    if not q.empty:
        q = pd.concat([q, _mean_rows(q, ["structural", "judge", "quality", "cost_usd", "tokens", "lm_calls", "seconds"])], ignore_index=True)
    tables["quality"] = q
    tables["merge"] = pd.DataFrame(merge_rows)
    if gold_rows and "floor" in methods:
        tables["vs_floor"] = floor_comparison(tables["gold_matching"])

    # ---- pairwise preference and stability
    if judges and set(methods) >= {"staged", "oneshot"}:
        _pairwise(report, docs, golds, ekgs, judges, config, factory)

    _write(report, out)
    return report


FLOOR_METRICS = ("relaxed_events_f1", "relaxed_entities_f1", "relaxed_temporal_f1", "relaxed_causal_f1")


def floor_comparison(gold_matching: pd.DataFrame, metrics: tuple[str, ...] = FLOOR_METRICS,
                     seed: int = 0) -> pd.DataFrame:
    """One row per method and metric: its mean over documents with a 95 % percentile-bootstrap
    interval, the floor's mean on the same documents, the paired difference with its 95 % paired
    bootstrap interval (``argus.experiments.stats.paired_bootstrap_ci``) and the documents where the
    method scores at least the floor. Only documents both have graphs for are paired."""
    from argus.experiments.stats import paired_bootstrap_ci
    from optimizers.frontier.pareto import bootstrap_ci

    df = gold_matching
    floor = df[df["method"] == "floor"].set_index("doc_id")
    rows = []
    for method, g in df.groupby("method", sort=False):
        g = g.set_index("doc_id")
        docs = [d for d in g.index if d in floor.index]
        for metric in metrics:
            if metric not in g or not docs:
                continue
            a = g.loc[docs, metric].astype(float).to_numpy()
            b = floor.loc[docs, metric].astype(float).to_numpy()
            lo, hi = bootstrap_ci(a, seed=seed)
            row = {"method": method, "metric": metric, "documents": len(docs), "mean": a.mean(), "ci_low": lo,
                   "ci_high": hi, "floor_mean": b.mean()}
            if method != "floor":
                d, dlo, dhi = paired_bootstrap_ci(a, b, seed=seed)
                row.update(delta=d, delta_low=dlo, delta_high=dhi, at_least_floor=int((a >= b).sum()))
            rows.append(row)
    return pd.DataFrame(rows)


def _default_judge(spec: LMSpec, name: str, ledger: CostLedger):
    from metrics.judge import Judge

    return Judge.from_spec(spec, name=name, ledger=ledger)


def _judge_names(specs: list[LMSpec]) -> list[str]:
    names, seen = [], {}
    for spec in specs:
        base = spec.model if spec.temperature == 0 else f"{spec.model}@T{spec.temperature:g}"
        seen[base] = seen.get(base, 0) + 1
        names.append(base if seen[base] == 1 else f"{base}#{seen[base]}")
    return names


def _pairwise(report: EvalReport, docs, golds, ekgs, judges, config: ArgusConfig, factory) -> None:
    from metrics.agreement import summarize_pairwise, summarize_stability
    from metrics.judge import judge_sentences

    ev = config.eval
    rows, stab_rows = [], []
    hot = []
    if ev.stability_temperature > 0:
        for spec, judge in zip(ev.judge_specs(config.lm), judges):
            hot_spec = spec.model_copy(update={"temperature": ev.stability_temperature})
            hot.append(factory(hot_spec, f"{judge.name}@T{ev.stability_temperature:g}", report.ledger))
    for d in docs:
        gold = golds.get(d.name)
        if gold is None:
            continue
        a, b = ekgs["staged"].get(gold.doc_id), ekgs["oneshot"].get(gold.doc_id)
        if a is None or b is None:
            continue
        sentences = judge_sentences(a)
        for k, judge in enumerate(judges):
            try:
                res = judge.compare(a.graph, b.graph, sentences, doc_id=gold.doc_id, both_orders=ev.both_orders)
            except Exception as exc:
                report.errors.append({"doc_id": gold.doc_id, "method": "pairwise", "step": f"judge {judge.name}", "error": f"{type(exc).__name__}: {exc}"})
                continue
            for dim, w in res.winners.items():
                rows.append({"doc_id": gold.doc_id, "judge": judge.name, "dimension": dim, "winner": w,
                             "reason": " | ".join(res.reasons)[:300], "failed": res.failed})
            if hot:
                try:
                    res_hot = hot[k].compare(a.graph, b.graph, sentences, doc_id=gold.doc_id, both_orders=ev.both_orders)
                except Exception as exc:
                    report.errors.append({"doc_id": gold.doc_id, "method": "stability", "step": f"judge {hot[k].name}", "error": f"{type(exc).__name__}: {exc}"})
                    continue
                for dim in res.winners:
                    stab_rows.append({"doc_id": gold.doc_id, "judge": judge.name, "dimension": dim,
                                      "winner_t0": res.winners[dim], "winner_t1": res_hot.winners[dim]})
    judgments = pd.DataFrame(rows)
    report.tables["pairwise_judgments"] = judgments
    if not judgments.empty:
        report.tables["pairwise"] = summarize_pairwise(judgments[["doc_id", "judge", "dimension", "winner"]])
    if stab_rows:
        report.tables["stability"] = summarize_stability(pd.DataFrame(stab_rows))


def _mean_rows(df: pd.DataFrame, cols: list[str]) -> pd.DataFrame:
    rows = []
    for method, g in df.groupby("method", sort=False):
        rows.append({"doc_id": "MEAN", "method": method, **{c: g[c].mean() for c in cols if c in g}})
    return pd.DataFrame(rows)


def _summary_by_method(g: pd.DataFrame, num: list[str]) -> pd.DataFrame:
    f1 = [c for c in num if c.endswith("_f1")]
    out = g.groupby("method", sort=False)[f1].mean().reset_index()
    return out


def _write(report: EvalReport, out: Path) -> None:
    tables_dir = out / "tables"
    tables_dir.mkdir(parents=True, exist_ok=True)
    for name, df in report.tables.items():
        write_text_atomic(tables_dir / f"{name}.csv", df.to_csv(index=False))
        write_text_atomic(tables_dir / f"{name}.md", f"# {TITLES.get(name, name)}\n\n{_md(df)}\n")
    write_text_atomic(out / "errors.csv", pd.DataFrame(report.errors, columns=["doc_id", "method", "step", "error"]).to_csv(index=False))
    write_text_atomic(out / "report.md", report.markdown())
    totals = report.ledger.totals() if report.ledger else None
    if totals is not None:
        write_text_atomic(out / "judge_cost.json", json.dumps(totals.as_dict(), indent=2))


def compare_on_gold(folders: list[Path], fold_heads: dict[str, "object"], work: Path,
                    baseline: str = "embedded") -> dict:
    """The offline default (``argus extract``'s code path) on each document of ``folders`` with the heads of
    the fold it was held out of (``fold_heads``: doc_id → EventHeads, from ``cross_validate``) and with the
    ``baseline`` heads, scored against its gold: relaxed event, entity, temporal and causal F1, the mean of
    each with a 95 % bootstrap interval and the paired difference (fold heads − baseline) with a 95 % paired
    bootstrap interval over the documents."""
    import contextlib
    import io
    import statistics

    from rich.console import Console

    from argus.experiments.stats import paired_bootstrap_ci
    from argus.output.export import load_ekg
    from argus.runs.batch import run_batch
    from metrics.gold import load_gold, score_document
    from optimizers.frontier.pareto import bootstrap_ci

    keys = ("events_f1", "entities_f1", "temporal_f1", "causal_f1")
    rows: dict[str, dict[str, dict[str, float]]] = {"yours": {}, "baseline": {}}
    by_heads: dict[int, list[Path]] = {}
    heads_of: dict[int, object] = {}
    for f in folders:
        h = fold_heads.get(f.name)
        if h is None:
            continue
        by_heads.setdefault(id(h), []).append(f)
        heads_of[id(h)] = h
    runs = [("yours", str(_save(heads_of[k], work / f"fold{n}.json")), fs) for n, (k, fs) in enumerate(by_heads.items())]
    runs.append(("baseline", baseline, [f for fs in by_heads.values() for f in fs]))
    for n, (name, heads, fs) in enumerate(runs):
        out = work / f"run{n}"
        cfg = ArgusConfig.load(None, {"cache_dir": str(work / "cache"), "sentence.heads": heads})
        with contextlib.redirect_stdout(io.StringIO()):  # the batch lists the EKGs it wrote on stdout
            run_batch([f / "complaint.txt" for f in fs], out, cfg, method="sentence", graphml=False,
                      console=Console(file=io.StringIO()))
        for f in fs:
            ekg_path = out / f"{f.name}.ekg.json"
            if not ekg_path.exists():  # the batch reported the document as failed
                continue
            sc = score_document(load_ekg(ekg_path), load_gold(f), tiers=("relaxed",))
            rows[name][f.name] = {k: float(sc[f"relaxed_{k}"]) for k in keys}
    docs = sorted(set(rows["yours"]) & set(rows["baseline"]))
    report: dict = {"documents": len(docs), "baseline": baseline}
    for k in keys:
        a = [rows["yours"][d][k] for d in docs]
        b = [rows["baseline"][d][k] for d in docs]
        if not docs:
            continue
        d, lo, hi = paired_bootstrap_ci(a, b)
        report[k] = {"yours": round(statistics.fmean(a), 4), "yours_ci95": [round(x, 4) for x in bootstrap_ci(a)],
                     "baseline": round(statistics.fmean(b), 4), "baseline_ci95": [round(x, 4) for x in bootstrap_ci(b)],
                     "difference": round(d, 4), "difference_ci95": [round(lo, 4), round(hi, 4)]}
    return report


def _save(heads, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    heads.save(path)
    return path
