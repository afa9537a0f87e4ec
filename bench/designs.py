"""The extraction designs against the floor, cross-validated by complaint, on 2 cores.

For each row (a method, a model, settings) a fresh process runs ``argus.runs.batch.run_batch`` (what
``argus extract`` runs) over the annotated complaints, one after the other (never two engines at
once), and every EKG is scored against gold with ``metrics.gold.score_document`` (relaxed tier):

- the sentence design's event heads are trained out of fold: the complaints are split into
  ``--folds`` groups (``argus.training.heads.cross_validate``'s folds) and each complaint is run with
  the heads trained on the other groups (C chosen inside the fold);
- ``floor`` is the no-model yardstick (``argus.designs.floor``); every other row is read against it: mean
  F1 over complaints with a 95 % bootstrap interval, the paired difference to the floor with a
  95 % paired bootstrap interval, and on how many complaints the row scores at least the floor;
- seconds per complaint are wall seconds of the row's batch divided by its complaints; tokens per
  complaint from the EKGs' ledgers; peak RSS is the highest resident set (VmHWM) of the row's
  process plus that of its engine process, read as the row finishes.

A row with ``--time-limit`` seconds spent (``ROW@SECONDS`` sets a row's own) stops after the complaint
in progress and reports the complaints it finished; its result is rewritten after every complaint, so
a row stopped by a signal reports them too (marked ``stopped``).

    python bench/designs.py [--rows floor,sentence,chunked:local/smollm2,...] [--split all|train|dev]
                            [--folds 6] [--time-limit 1800] [--out out/bench-designs]

Row names: ``floor``; ``sentence`` (the default: heads decide, no model call for local engines);
``sentence-types-edges`` (the fold's heads without the named learned parts: the ladder's lower rungs);
``sentence+choices:MODEL`` (the choice program on the sentences the heads read below τ = 0.6);
``sentence+stage2:MODEL``; ``chunked:MODEL``; ``oneshot:MODEL``. A sentence row may switch one step off:
``+nodates`` (``sentence.date_edges``), ``+nocues`` (``sentence.cue_edges``), ``+notriggertypes``
(``sentence.trigger_types``: the lexicon's reading of types instead of the trigger type model); with
``--reuse-heads`` it runs on the same fold heads as an earlier run, paired.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DEFAULT_ROWS = ("floor,sentence,sentence+choices:local/smollm2,sentence+stage2:local/smollm2,chunked:local/smollm2,"
                "oneshot:local/smollm2,sentence+choices:local/gemma3,chunked:local/gemma3,oneshot:local/gemma3")
METRICS = ("events_f1", "entities_f1", "temporal_f1", "causal_f1")


def row_config(row: str) -> tuple[str, dict]:
    """(method, dotted overrides) of a row name."""
    name, _, model = row.partition(":")
    o: dict = {}
    if model:
        o["lm.default.model"] = model
    if name == "floor":
        return "floor", o
    if name.startswith("sentence"):  # plain "sentence" is the offline default, untouched
        # "sentence-types-edges": the fold's heads without those learned parts (the ladder's lower rungs)
        o.update({"_without_parts": [x for x in name.split("+")[0].split("-")[1:] if x]} if "-" in name else {})
        if "+choices" in name:
            o.update({"sentence.llm": "always", "sentence.tau": 0.6})
        if "+stage2" in name:
            o["sentence.stage2"] = True
        if "+nodates" in name:
            o["sentence.date_edges"] = False
        if "+nocues" in name:
            o["sentence.cue_edges"] = False
        if "+notriggertypes" in name:
            o["sentence.trigger_types"] = False
        return "sentence", o
    if name in ("chunked", "oneshot"):
        return name, o
    raise SystemExit(f"unknown row {row!r}")


def _hwm_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _children(pid: int) -> list[int]:
    out = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if int((p / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(p.name))
            except (OSError, IndexError, ValueError):
                continue
    return out


def run_row(args) -> None:
    """Child: run one row over its complaints, write RESULT.json."""
    from argus.runs.batch import run_batch
    from argus.config import ArgusConfig

    spec = json.loads(args.row_spec)
    method, overrides = spec["method"], spec["overrides"]
    out = Path(spec["out"])
    folds: dict[str, list[str]] = spec["folds"]  # heads file → complaint folders
    t0 = time.perf_counter()
    done: list[str] = []
    engine_hwm = 0
    scored: dict[str, dict] = {}
    on_gold: dict[str, dict] = {}  # folder → the edges drawn on its gold events (sentence rows)
    measuring = 0.0  # seconds spent drawing edges on gold events, left out of the row's wall time

    def write_result() -> None:
        """RESULT.json with every complaint finished so far (rewritten after each: a stopped row keeps them)."""
        nonlocal engine_hwm, measuring
        for child in _children(os.getpid()):
            engine_hwm = max(engine_hwm, _hwm_kb(child))
        for folder in done:
            if folder not in scored:
                scored[folder] = {**_score(out, folder), **{f"gold_events_{k}": v for k, v in on_gold.get(folder, {}).items()
                                                            if k.endswith("_f1")}}
        result = {"row": spec["row"], "method": method, "overrides": overrides,
                  "wall_s": round(time.perf_counter() - t0 - measuring, 1), "complaints": len(done),
                  "peak_rss_mb": round((_hwm_kb(os.getpid()) + engine_hwm) / 1024),
                  "process_rss_mb": round(_hwm_kb(os.getpid()) / 1024), "engine_rss_mb": round(engine_hwm / 1024),
                  "rows": [scored[f] for f in done]}
        tmp = out / "RESULT.json.tmp"
        tmp.write_text(json.dumps(result, indent=1))
        tmp.replace(out / "RESULT.json")

    without = overrides.pop("_without_parts", [])
    for heads, folders in folds.items():
        facts = {"facts.classifier": str(fact_head_of(heads))} if heads and fact_head_of(heads).exists() else {}
        if heads and without and method == "sentence":  # the fold's heads without some of their parts
            data = json.loads(Path(heads).read_text())
            data["parts"] = {k: v for k, v in data.get("parts", {}).items() if k not in without}
            heads = str(out / f"heads-{Path(heads).stem}.json")
            out.mkdir(parents=True, exist_ok=True)
            Path(heads).write_text(json.dumps(data))
        cfg = ArgusConfig.load(None, {"cache_dir": str(out / "cache"), **overrides, **facts,
                                      **({"sentence.heads": heads} if heads and method == "sentence" else {})})
        pipe = None
        for folder in folders:
            if time.perf_counter() - t0 > spec["time_limit"]:
                break
            run_batch([Path(folder) / "complaint.txt"], out / "ekg", cfg, method=method, graphml=False)
            if method == "sentence" and heads:  # the fold's edge sieves given the gold events
                from argus.pipeline import ArgusPipeline
                from argus.training.edges import edges_on_gold
                from metrics.gold import load_gold

                t1 = time.perf_counter()
                pipe = pipe or ArgusPipeline(cfg)
                on_gold[folder] = edges_on_gold(pipe, load_gold(folder))
                measuring += time.perf_counter() - t1  # not the row's: its seconds are argus extract's
            done.append(folder)
            write_result()
    write_result()


def _score(out: Path, folder: str) -> dict:
    """One complaint's EKG of a row scored against its gold graph (relaxed and exact tiers)."""
    from argus.output.export import load_ekg
    from argus.paths import style_of
    from metrics.gold import load_gold, score_document, types_of_matched

    name = Path(folder).name
    f = out / "ekg" / f"{name}.ekg.json"
    if not f.exists():
        return {"doc": name, "failed": True}
    ekg = load_ekg(f)
    gold = load_gold(folder)
    sc = score_document(ekg, gold, tiers=("exact", "relaxed"))
    t = types_of_matched(ekg, gold)  # metrics.gold.types: under the relaxed alignment and blind to type
    matched, typed, found, found_typed = t.matched, t.matched_right, t.found, t.found_right
    return {"doc": name, "failed": False, "style": style_of([name])[0], **{m: sc[f"relaxed_{m}"] for m in METRICS},
            "matched_events": matched, "typed_right": typed, "type_accuracy": typed / matched if matched else float("nan"),
            "found_events": found, "found_typed_right": found_typed,
            "type_accuracy_blind": found_typed / found if found else float("nan"),
            "exact_events_f1": sc["exact_events_f1"], "fact_f1": sc["fact_f1"],
            "tokens": ekg.ledger.totals.tokens, "calls": ekg.ledger.totals.calls,
            "seconds": round(sum(s.seconds for s in ekg.stages), 2),
            "events": len(ekg.graph.events), "entities": len(ekg.graph.entities),
            "ungrounded": sum(not e.grounded for e in ekg.graph.entities) + sum(not e.grounded for e in ekg.graph.events)}


def _fold_heads(docs: list[Path], k: int, out: Path, train_size: int | None = None) -> dict[str, str]:
    """Complaint folder → the heads file trained without its fold (on ``train_size`` of the fold's
    training complaints, every style in turn, where given)."""
    from argus.training.heads import cross_validate, labeled_complaints

    labeled = labeled_complaints(docs)
    cv = cross_validate(labeled, k=k, train_size=train_size)
    files: dict[int, str] = {}
    mapping = {}
    for d in docs:
        h = cv.heads[d.name]
        key = id(h)
        if key not in files:
            path = out / "heads" / f"fold-{len(files) + 1}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            h.save(path)
            files[key] = str(path)
        mapping[str(d)] = files[key]
    _fold_fact_heads(cv, files)
    (out / "heads" / "cv.json").write_text(json.dumps(cv.as_dict(), indent=1))
    (out / "heads" / "map.json").write_text(json.dumps(mapping, indent=1))
    return mapping


def _folder_of(doc: str) -> Path:
    from argus.paths import complaints_dir

    return next(complaints_dir(s) / doc for s in ("train", "dev") if (complaints_dir(s) / doc).exists())


def fact_head_of(heads: str) -> Path:
    """The fact head trained beside a fold's event heads file (``_fold_fact_heads``)."""
    return Path(heads).with_suffix(".facts.json")


def _fold_fact_heads(cv, files: dict[int, str]) -> None:
    """Beside each fold's event heads, the fact head trained on the same training complaints, so that no
    learned part of a row has seen the complaints it is scored on."""
    from argus.gate.fact_eval import labeled_documents, train_context_head

    docs = {d.doc_id: d for d in labeled_documents()}
    for h in {id(h): h for h in cv.heads.values()}.values():
        train = [docs[i] for i in h.meta.get("fold_train", []) if i in docs]
        train_context_head(train).save(fact_head_of(files[id(h)]))


def summarize(results: list[dict]) -> str:
    from argus.experiments.stats import paired_bootstrap_ci
    from optimizers.frontier.pareto import bootstrap_ci

    floor = next((r for r in results if r["row"] == "floor"), None)
    fl = {x["doc"]: x for x in floor["rows"] if not x["failed"]} if floor else {}
    head = ("| row | complaints | event F1 [95 % CI] | Δ event F1 vs floor [95 % paired CI] | ≥ floor | exact event F1 | "
            "entity F1 [95 % CI] | "
            "temporal F1 | causal F1 | s / complaint | tokens / complaint | peak RSS MB |")
    lines = [head, "|" + "---|" * 12]

    def ci(xs):
        lo, hi = bootstrap_ci(xs) if xs else (float("nan"), float("nan"))
        return f"{statistics.fmean(xs):.3f} [{lo:.3f}, {hi:.3f}]" if xs else "–"

    for r in results:
        ok = [x for x in r["rows"] if not x["failed"]]
        peak = r["peak_rss_mb"] or "–"  # not read: the row was stopped before it finished
        if not ok:
            lines.append(f"| {r['row']} | 0 of {r['complaints']} | – | – | – | – | – | – | – | – | – | {peak} |")
            continue
        delta, at_least = "–", "–"
        paired = [x for x in ok if x["doc"] in fl]
        if r is not floor and paired:
            d, lo, hi = paired_bootstrap_ci([x["events_f1"] for x in paired], [fl[x["doc"]]["events_f1"] for x in paired])
            delta = f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]"
            at_least = f"{sum(x['events_f1'] >= fl[x['doc']]['events_f1'] for x in paired)} of {len(paired)}"
        failed = r["complaints"] - len(ok)
        lines.append(
            f"| {r['row']} | {len(ok)}{f' ({failed} failed)' if failed else ''} | {ci([x['events_f1'] for x in ok])} | {delta} | "
            f"{at_least} | {statistics.fmean(x.get('exact_events_f1', float('nan')) for x in ok):.3f} | "
            f"{ci([x['entities_f1'] for x in ok])} | {statistics.fmean(x['temporal_f1'] for x in ok):.3f} | "
            f"{statistics.fmean(x['causal_f1'] for x in ok):.3f} | {r['wall_s'] / max(1, r['complaints']):.1f} | "
            f"{statistics.fmean(x['tokens'] for x in ok):,.0f} | {peak} |")
    return "\n".join(lines)


def _reader() -> dict[str, dict]:
    """doc → the second reader's agreement with gold (``metrics.gold.reader``), where there is one."""
    from argus.paths import complaints_dir
    from metrics.gold import load_gold
    from metrics.gold.reader import reader_agreement

    out = {}
    for split in ("train", "dev"):
        root = complaints_dir(split)
        for d in sorted(root.iterdir()) if root.exists() else []:
            if (d / "gold.json").exists() and (r := reader_agreement(load_gold(d))) is not None:
                out[d.name] = r
    return out


def _mean_ci(xs: list[float]) -> str:
    from optimizers.frontier.pareto import bootstrap_ci

    xs = [x for x in xs if x == x]
    if not xs:
        return "–"
    lo, hi = bootstrap_ci(xs)
    return f"{statistics.fmean(xs):.3f} [{lo:.3f}, {hi:.3f}]"


def relations(results: list[dict]) -> str:
    """Types and relations of each row beside a careful second reader's agreement with gold, on the
    complaints the reader annotated and on all: type accuracy of the events matched to gold, temporal and
    causal F1 end to end and with the gold events given (the edge sieves alone)."""
    reader = _reader()
    lines = ["| row | complaints | types right (events found by sentence; under the relaxed match) | temporal F1 | causal F1 | temporal F1, gold events | "
             "causal F1, gold events |", "|---" * 7 + "|"]
    for r in results:
        ok = [x for x in r["rows"] if not x["failed"]]
        for label, rows in (("all", ok), ("read twice", [x for x in ok if x["doc"] in reader])):
            if not rows:
                continue
            found = sum(x.get("found_events", 0) for x in rows)
            typed = sum(x.get("found_typed_right", 0) for x in rows)
            lines.append(f"| {r['row']} ({label}) | {len(rows)} | {typed / max(1, found):.3f} pooled, "
                         f"{_mean_ci([x.get('type_accuracy_blind', float('nan')) for x in rows])} mean; relaxed "
                         f"{_mean_ci([x.get('type_accuracy', float('nan')) for x in rows])} | "
                         f"{_mean_ci([x['temporal_f1'] for x in rows])} | {_mean_ci([x['causal_f1'] for x in rows])} | "
                         f"{_mean_ci([x.get('gold_events_temporal_f1', float('nan')) for x in rows])} | "
                         f"{_mean_ci([x.get('gold_events_causal_f1', float('nan')) for x in rows])} |")
    if reader:
        vals = list(reader.values())
        lines.append(f"| second reader (same events) | {len(vals)} | {_mean_ci([v['type_agreement'] for v in vals])} | – | – | "
                     f"{_mean_ci([v['temporal_f1'] for v in vals])} | {_mean_ci([v['causal_f1'] for v in vals])} |")
    return "\n".join(lines)


def by_style(results: list[dict]) -> str:
    """Each row's figures per writing style (``styles.json``), each style's mean with its 95 % interval."""
    names = (("events_f1", "relaxed event F1"), ("entities_f1", "entity F1"), ("type_accuracy_blind", "types right"),
             ("temporal_f1", "temporal F1"), ("causal_f1", "causal F1"))
    lines = ["| row | style | complaints | " + " | ".join(n for _, n in names) + " |", "|---" * (len(names) + 3) + "|"]
    for r in results:
        ok = [x for x in r["rows"] if not x["failed"]]
        styles = sorted({x.get("style", "unnamed") for x in ok})
        for st in styles:
            rows = [x for x in ok if x.get("style", "unnamed") == st]
            lines.append(f"| {r['row']} | {st} | {len(rows)} | " + " | ".join(
                _mean_ci([x.get(k, float("nan")) for x in rows]) for k, _ in names) + " |")
    return "\n".join(lines)


def _measured(row: dict, key: str) -> bool:
    """Whether ``row`` has a number for ``key`` (not missing, not NaN)."""
    v = row.get(key)
    return v is not None and v == v


def ladder(results: list[dict]) -> str:
    """Each row against the row before it on the same complaints: the paired difference of every
    metric with its 95 % paired bootstrap interval (a ladder's rungs, lowest first)."""
    from argus.experiments.stats import paired_bootstrap_ci

    names = (("events_f1", "relaxed event F1"), ("exact_events_f1", "exact event F1"), ("entities_f1", "entity F1"),
             ("type_accuracy_blind", "types right (events found by sentence)"), ("temporal_f1", "temporal F1"),
             ("causal_f1", "causal F1"))
    lines = ["| rung | " + " | ".join(f"{n} (Δ vs the rung below)" for _, n in names) + " |", "|---" * (len(names) + 1) + "|"]
    prev = None
    for r in results:
        ok = {x["doc"]: x for x in r["rows"] if not x["failed"]}
        cells = []
        for key, _ in names:
            has = {d: x for d, x in ok.items() if _measured(x, key)}  # a NaN (no event found) left out
            if not has:
                cells.append("–")
                continue
            mean = statistics.fmean(x[key] for x in has.values())
            if prev is None:
                cells.append(f"{mean:.3f}")
                continue
            docs = [d for d in has if d in prev and _measured(prev[d], key)]
            d, lo, hi = paired_bootstrap_ci([has[x][key] for x in docs], [prev[x][key] for x in docs])
            cells.append(f"{mean:.3f} ({d:+.3f} [{lo:+.3f}, {hi:+.3f}])")
        lines.append(f"| {r['row']} | " + " | ".join(cells) + " |")
        prev = ok
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default=DEFAULT_ROWS)
    ap.add_argument("--split", default="all", help="all (train + dev), train or dev")
    ap.add_argument("--folds", type=int, default=6)
    ap.add_argument("--docs", type=int, default=0, help="only the first N complaints (0: all)")
    ap.add_argument("--time-limit", type=float, default=3600.0, help="seconds per row")
    ap.add_argument("--out", type=Path, default=Path("out/bench-designs"))
    ap.add_argument("--combine", type=Path, nargs="*", help="print one table from the results.json of these out folders "
                                                             "(the first floor row found is the yardstick)")
    ap.add_argument("--ladder", action="store_true", help="with --combine: also each row against the row before it "
                                                           "(paired differences, lowest rung first)")
    ap.add_argument("--parts", help="comma-separated learned parts the fold heads train (default: all of "
                                     "argus.training.heads.PARTS)")
    ap.add_argument("--reuse-heads", action="store_true", help="the fold heads an earlier run wrote to OUT/heads")
    ap.add_argument("--train-size", type=int, default=0, help="each fold's heads trained on this many of its training "
                                                               "complaints, every style in turn (0: all; a learning "
                                                               "curve's point, same test folds)")
    ap.add_argument("--styles", action="store_true", help="also print the per-style and the relations tables")
    ap.add_argument("--rescore", type=Path, nargs="*", help="score again the EKGs the rows of these out folders wrote "
                                                             "(results.json rewritten; what was measured in the run, "
                                                             "seconds, memory and the edges on gold events, is kept)")
    ap.add_argument("--row-spec", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.row_spec:
        run_row(args)
        return
    if args.rescore:
        for folder in args.rescore:
            results = json.loads((folder / "results.json").read_text())
            for r in results:
                rdir = folder / r["row"].replace(":", "_").replace("/", "-")
                r["rows"] = [{**x, **_score(rdir, str(_folder_of(x["doc"])))} if not x["failed"] else x for x in r["rows"]]
            (folder / "results.json").write_text(json.dumps(results, indent=1))
            print(f"rescored {folder}")
        return
    if args.combine:
        results, seen = [], set()
        for folder in args.combine:
            for r in json.loads((folder / "results.json").read_text()):
                if r["row"] not in seen:
                    seen.add(r["row"])
                    results.append(r)
        print(summarize(results))
        if args.styles:
            print()
            print(relations(results))
            print()
            print(by_style(results))
        if args.ladder:
            print()
            print(ladder(results))
        return
    from argus.paths import complaints_dir

    splits = ("train", "dev") if args.split == "all" else (args.split,)
    docs = [d for s in splits for d in sorted(complaints_dir(s).iterdir()) if (d / "gold.json").exists()]
    args.out.mkdir(parents=True, exist_ok=True)
    if args.parts is not None:  # the folds train only these learned parts (a ladder without a middle rung)
        from argus.training import heads as heads_module

        keep = [x for x in args.parts.split(",") if x]
        heads_module.PARTS = tuple((n, m) for n, m in heads_module.PARTS if n in keep)
    reuse = args.out / "heads" / "map.json"
    heads = (json.loads(reuse.read_text()) if args.reuse_heads and reuse.exists()
             else _fold_heads(docs, args.folds, args.out, args.train_size or None))
    docs = docs[: args.docs] if args.docs else docs
    results = []
    for item in [r.strip() for r in args.rows.split(",") if r.strip()]:
        row, _, limit = item.partition("@")  # "chunked:local/gemma3@900": that row's own time limit
        method, overrides = row_config(row)
        folds: dict[str, list[str]] = {}
        for d in docs:
            folds.setdefault(heads[str(d)], []).append(str(d))  # every row's fact gate is the fold's
        rdir = args.out / row.replace(":", "_").replace("/", "-")
        shutil.rmtree(rdir, ignore_errors=True)  # a fresh cache: every row pays for its calls
        spec = {"row": row, "method": method, "overrides": overrides, "out": str(rdir), "folds": folds,
                "time_limit": float(limit) if limit else args.time_limit}
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, __file__, "--row-spec", json.dumps(spec)])
        if not (rdir / "RESULT.json").exists():
            raise SystemExit(f"row {row} failed (exit status {proc.returncode}) before finishing a complaint")
        result = json.loads((rdir / "RESULT.json").read_text())
        if proc.returncode:
            result["stopped"] = f"exit status {proc.returncode} after {result['complaints']} complaints"
        results.append(result)
        print(f"{row}: {result['complaints']} complaints in {time.perf_counter() - t0:.0f} s", flush=True)
        (args.out / "results.json").write_text(json.dumps(results, indent=1))
    print(summarize(results))
    if args.styles:
        print()
        print(relations(results))
        print()
        print(by_style(results))


if __name__ == "__main__":
    main()
