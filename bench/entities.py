"""The sentence design's entity list: cross-validated on the annotated complaints, and on real prose.

``--cv``   6 folds over the 18 annotated complaints grouped by complaint (``argus.training.heads._folds``,
           the folds the other benches use). Per fold the event heads are trained on the training complaints
           (``train_event_heads``: C chosen inside the fold, every learned part of ``PARTS`` fitted on those complaints,
           the ``entities`` part of ``argus.training.entities.fit_part`` among them) and saved; the held-out
           complaints run through the real design (``ArgusPipeline.extract``, config ``sentence.heads`` set to the
           fold's file) twice: with the ``entities`` part, and with the same file without it (the rules alone).
           Each EKG is scored with ``metrics.gold.score_document`` (relaxed tier): mean entity F1 over complaints
           with a 95 % bootstrap interval (``optimizers.frontier.pareto.bootstrap_ci``), the paired difference
           with a 95 % paired bootstrap interval (``argus.experiments.stats.paired_bootstrap_ci``), and the floor
           (``argus.designs.floor``: the caption's parties alone) on the same complaints.
``--ssla`` the individual defendants of securities class-action excerpts (``us_real/ssla/test_old.tsv``, excerpts
           of at most 2,000 characters of the filed text, no headings, OCR breaks): each excerpt through
           ``ArgusPipeline.extract``; the graph's entities with role ``defendant`` and kind ``person`` are the
           prediction. As the dataset recommends, a gold name and a predicted name match when
           ``rapidfuzz.fuzz.partial_ratio`` of the two (whitespace normalized) is at least 80: recall over gold
           names, precision over predicted entities (micro; per-excerpt means beside them), each with a 95 %
           bootstrap interval over excerpts; ``reachable`` is the share of gold names the excerpt itself holds
           (``partial_ratio`` of the name against the whole excerpt ≥ 80): the answer lists every individual
           defendant of the complaint, the excerpt often stops before some are introduced. Rows with index
           ≥ 100 by default, < 100 with ``--dev`` (the rows the rules were developed on).

    python bench/entities.py --cv [--folds 6] [--out out/bench-entities]
    python bench/entities.py --ssla [--dev] [--heads FILE] [--limit N] [--out out/bench-entities]

The shipped heads carry the ``entities`` part only once it is trained into them (``argus train-events`` with the
part in ``PARTS``); ``--heads`` runs ``--ssla`` with another heads file, ``--cv`` adds the part to ``PARTS`` for its
own training when it is not there.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

PART = ("entities", "argus.training.entities")
SSLA = "us_real/ssla/test_old.tsv"


def _ci(xs: list[float]) -> str:
    from optimizers.frontier.pareto import bootstrap_ci

    if not xs:
        return "–"
    lo, hi = bootstrap_ci(xs)
    return f"{statistics.fmean(xs):.3f} [{lo:.3f}, {hi:.3f}]"


def _paired(a: list[float], b: list[float]) -> str:
    from argus.experiments.stats import paired_bootstrap_ci

    d, lo, hi = paired_bootstrap_ci(a, b)
    return f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]"


# ----------------------------------------------------------------------------- cross-validation


def cross_validate(folds: int, out: Path) -> dict:
    from argus.config import ArgusConfig
    from argus.training import heads as H
    from argus.pipeline import ArgusPipeline
    from metrics.gold import load_gold, score_document

    if PART[0] not in [n for n, _ in H.PARTS]:
        # this bench's own training (the shipped PARTS are not touched): after the type lexicon, before the parts
        # trained on the design's own graphs (their shared-participant features read the entity list)
        at = next((i + 1 for i, (n, _) in enumerate(H.PARTS) if n == "types"), 0)
        H.PARTS = (*H.PARTS[:at], PART, *H.PARTS[at:])
    folders = H.annotated_folders(("train", "dev"))
    docs = H.labeled_complaints(folders)
    out.mkdir(parents=True, exist_ok=True)
    rows: dict[str, dict] = {}
    floor_pipe = ArgusPipeline(ArgusConfig.load(None, {"cache_dir": str(out / "cache")}))
    t0 = time.perf_counter()
    for k, (tr, te) in enumerate(H._folds(len(docs), folds)):
        heads = H.train_event_heads([docs[i] for i in tr])
        part = heads.parts.get(PART[0])
        with_part = out / f"heads-fold{k + 1}.json"
        heads.save(with_part)
        rules = out / f"heads-fold{k + 1}-rules.json"
        data = json.loads(with_part.read_text())
        data["parts"] = {n: v for n, v in data["parts"].items() if n != PART[0]}
        rules.write_text(json.dumps(data))
        settings = {n: part.get(n) for n in ("np_min_sentences", "drop_forms", "name_min_count", "stop_rule")} if part else {}
        settings["stop"] = len(part.get("stop", [])) if part else 0
        print(f"fold {k + 1}: trained on {len(tr)} complaints in {time.perf_counter() - t0:.0f} s; part {settings}",
              flush=True)
        for variant, path in (("part", with_part), ("rules", rules)):
            pipe = ArgusPipeline(ArgusConfig.load(None, {"cache_dir": str(out / "cache"), "sentence.heads": str(path)}))
            for i in te:
                folder = folders[i]
                t = time.perf_counter()
                ekg = pipe.extract(folder / "complaint.txt")
                sc = score_document(ekg, load_gold(folder), tiers=("relaxed",))
                row = rows.setdefault(folder.name, {"doc": folder.name, "fold": k + 1})
                row[variant] = sc["relaxed_entities_f1"]
                row[f"{variant}_events_f1"] = sc["relaxed_events_f1"]
                row[f"{variant}_entities"] = len(ekg.graph.entities)
                row[f"{variant}_s"] = round(time.perf_counter() - t, 2)
        for i in te:
            folder = folders[i]
            ekg = floor_pipe.extract_floor(folder / "complaint.txt")
            rows[folder.name]["floor"] = score_document(ekg, load_gold(folder), tiers=("relaxed",))["relaxed_entities_f1"]
        (out / "cv.json").write_text(json.dumps(list(rows.values()), indent=1))
    order = [f.name for f in folders]
    part, rules, floor = ([rows[d][v] for d in order] for v in ("part", "rules", "floor"))
    lines = ["| entity list | complaints | relaxed entity F1 [95 % CI] | Δ vs rules alone [95 % paired CI] | "
             "Δ vs floor [95 % paired CI] | relaxed event F1 |", "|---|---|---|---|---|---|"]
    ev = {v: statistics.fmean(rows[d][f"{v}_events_f1"] for d in order) for v in ("part", "rules")}
    lines.append(f"| rules + entities part (in fold) | {len(order)} | {_ci(part)} | {_paired(part, rules)} | "
                 f"{_paired(part, floor)} | {ev['part']:.3f} |")
    lines.append(f"| rules alone | {len(order)} | {_ci(rules)} | – | {_paired(rules, floor)} | {ev['rules']:.3f} |")
    lines.append(f"| floor (caption parties) | {len(order)} | {_ci(floor)} | – | – | – |")
    lines.append("")
    lines.append("| complaint | fold | part | rules | floor |")
    lines.append("|---|---|---|---|---|")
    for d in order:
        r = rows[d]
        lines.append(f"| {d} | {r['fold']} | {r['part']:.3f} | {r['rules']:.3f} | {r['floor']:.3f} |")
    table = "\n".join(lines)
    (out / "cv.md").write_text(table + "\n")
    print(table)
    return rows


# ----------------------------------------------------------------------------- ssla


def _norm(name: str) -> str:
    return " ".join(name.split())


def ssla_rows(path: Path, dev: bool, limit: int | None) -> list[dict]:
    csv.field_size_limit(1 << 30)
    with path.open(encoding="utf-8", newline="") as fh:
        rows = [r for r in csv.DictReader(fh, delimiter="\t") if (int(r["index"]) < 100) == dev]
    return rows[:limit] if limit else rows


def score_ssla(gold: list[str], predicted: list[list[str]], text: str) -> dict:
    """Matches of one excerpt: gold names found (``partial_ratio`` ≥ 80 with a predicted name), predicted
    entities that match a gold name, gold names the excerpt holds. ``predicted``: each entity's names,
    its name first; the plain score reads the name alone, ``*_any`` any of its names (the surname the
    complaint defines: "Busse" for "Keith E. Busse"), ``*_nodots`` the names without periods as well
    ("Keith E Busse", the answers' own spelling)."""
    from rapidfuzz import fuzz

    gold = [_norm(g) for g in gold if g.strip()]
    ents = [[_norm(n) for n in names if n.strip()] for names in predicted if names and names[0].strip()]
    flat = _norm(text)

    def hit(g: str, names: list[str]) -> bool:
        return any(fuzz.partial_ratio(g, n) >= 80 for n in names)

    out = {"gold": len(gold), "predicted": len(ents), "reachable": sum(fuzz.partial_ratio(g, flat) >= 80 for g in gold)}
    for tag, pick in (("", lambda e: e[:1]), ("_any", lambda e: e), ("_nodots", lambda e: [n.replace(".", "") for n in e[:1]])):
        gs = [g.replace(".", "") for g in gold] if tag == "_nodots" else gold
        out[f"found{tag}"] = sum(any(hit(g, pick(e)) for e in ents) for g in gs)
        out[f"correct{tag}"] = sum(any(hit(g, pick(e)) for g in gs) for e in ents)
    return out


def _ratio_ci(num: list[int], den: list[int], n: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """Σnum / Σden and its 95 % percentile-bootstrap interval over the excerpts."""
    import numpy as np

    num_, den_ = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(num_), size=(n, len(num_)))
    stats = num_[idx].sum(axis=1) / np.maximum(den_[idx].sum(axis=1), 1)
    return float(num_.sum() / max(den_.sum(), 1)), float(np.quantile(stats, 0.025)), float(np.quantile(stats, 0.975))


def ssla(dev: bool, heads: str | None, limit: int | None, out: Path) -> dict:
    from argus.config import ArgusConfig
    from argus.text.documents import RawDocument
    from argus.errors import InputError
    from argus.paths import data_root
    from argus.pipeline import ArgusPipeline

    path = data_root() / SSLA
    rows = ssla_rows(path, dev, limit)
    overrides = {"cache_dir": str(out / "cache")}
    if heads:
        overrides["sentence.heads"] = heads
    pipe = ArgusPipeline(ArgusConfig.load(None, overrides))
    results = []
    pipe.extract(RawDocument(doc_id="warm", source="warm", text=rows[0]["text"]))  # encoders loaded before timing
    for r in rows:
        t = time.perf_counter()
        try:
            ekg = pipe.extract(RawDocument(doc_id=f"ssla-{r['index']}", source=f"ssla:{r['index']}", text=r["text"]))
            entities = ekg.graph.entities
        except InputError:  # an excerpt with no sentence left after cleanup: nothing predicted
            entities = []
        seconds = time.perf_counter() - t
        predicted = [[e.name, *e.aliases] for e in entities if e.role == "defendant" and e.kind == "person"]
        s = score_ssla(r["answer"].split("\n"), predicted, r["text"])
        results.append({"index": int(r["index"]), "seconds": round(seconds, 3), "names": predicted, **s})
    out.mkdir(parents=True, exist_ok=True)
    name = "ssla-dev" if dev else "ssla-test"
    (out / f"{name}.json").write_text(json.dumps(results, indent=1))
    rec = _ratio_ci([x["found"] for x in results], [x["gold"] for x in results])
    prec = _ratio_ci([x["correct"] for x in results], [x["predicted"] for x in results])
    reach = _ratio_ci([x["reachable"] for x in results], [x["gold"] for x in results])
    rec_reach = _ratio_ci([min(x["found"], x["reachable"]) for x in results], [x["reachable"] for x in results])
    macro_r = [x["found"] / x["gold"] for x in results if x["gold"]]
    macro_p = [x["correct"] / x["predicted"] for x in results if x["predicted"]]
    secs = [x["seconds"] for x in results]
    rec_any = _ratio_ci([x["found_any"] for x in results], [x["gold"] for x in results])
    prec_any = _ratio_ci([x["correct_any"] for x in results], [x["predicted"] for x in results])
    rec_nd = _ratio_ci([x["found_nodots"] for x in results], [x["gold"] for x in results])
    prec_nd = _ratio_ci([x["correct_nodots"] for x in results], [x["predicted"] for x in results])
    f = lambda t: f"{t[0]:.3f} [{t[1]:.3f}, {t[2]:.3f}]"  # noqa: E731
    lines = [f"ssla {'index < 100' if dev else 'index ≥ 100'}: {len(results)} excerpts, {sum(x['gold'] for x in results)} gold "
             f"names, {sum(x['predicted'] for x in results)} predicted individual defendants; heads {heads or 'embedded'}",
             "| measure | value [95 % CI over excerpts] |", "|---|---|",
             f"| recall over gold names (micro) | {f(rec)} |",
             f"| precision over predicted (micro) | {f(prec)} |",
             f"| recall, per-excerpt mean | {statistics.fmean(macro_r):.3f} |",
             f"| precision, per-excerpt mean (excerpts with a prediction: {len(macro_p)}) | "
             f"{statistics.fmean(macro_p) if macro_p else float('nan'):.3f} |",
             f"| gold names the excerpt holds (reachable) | {f(reach)} |",
             f"| recall over the reachable gold names | {f(rec_reach)} |",
             f"| recall / precision, periods removed too | {f(rec_nd)} / {f(prec_nd)} |",
             f"| recall / precision, any name of the entity | {f(rec_any)} / {f(prec_any)} |",
             f"| seconds per excerpt (mean, median) | {statistics.fmean(secs):.2f}, {statistics.median(secs):.2f} |"]
    table = "\n".join(lines)
    (out / f"{name}.md").write_text(table + "\n")
    print(table)
    return {"recall": rec, "precision": prec, "reachable": reach}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cv", action="store_true")
    ap.add_argument("--ssla", action="store_true")
    ap.add_argument("--folds", type=int, default=6)
    ap.add_argument("--dev", action="store_true", help="ssla rows with index < 100 (development rows)")
    ap.add_argument("--heads", default=None, help="heads JSON for --ssla (default: the configured, shipped heads)")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--out", type=Path, default=Path("out/bench-entities"))
    args = ap.parse_args()
    if not (args.cv or args.ssla):
        ap.error("choose --cv and/or --ssla")
    if args.cv:
        cross_validate(args.folds, args.out)
    if args.ssla:
        ssla(args.dev, args.heads, args.limit, args.out)


if __name__ == "__main__":
    main()
