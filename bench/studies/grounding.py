"""Grounding on the dev complaints with the embedded model: with and without grounded decoding.

For each variant, ``argus.runs.batch.run_batch`` (what ``argus extract`` runs) writes the EKGs of the
annotated dev complaints (``us_complaints/dev`` under the shared data root) into
``OUT/<variant>/`` with a fresh DSPy cache, then each EKG is read back with ``argus.output.export.load_ekg``
and checked:

- every entity mention and event trigger span slices the original text to its name, alias or
  trigger (``argus.graph.grounding.span_problems``, the check ``argus validate`` runs; must be empty);
- written = the entities and events Stage 1 wrote (kept + rejected by grounding); grounded share =
  kept ÷ written (entities, events);
- kept items per document; rejected items per document (all kinds: entities, events, names,
  aliases, participations, edges);
- relaxed entity and event F1 against gold (``metrics.gold.score_document``, mean over documents);
- spans by match tier (exact / normalized / fuzzy).

Variants: ``plain`` (``extraction.grounded_decoding: false``) and ``grounded`` (``true``: the engine's
grammar lets Stage 1 write names, aliases and triggers only as word runs of the chunk; the default
for ``local/`` engines since this measurement).

    python bench/studies/grounding.py [--out out/bench-grounding] [--variants plain,grounded] [--docs 6]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from argus.runs.batch import run_batch  # noqa: E402
from argus.config import ArgusConfig  # noqa: E402
from argus.output.export import load_ekg  # noqa: E402
from argus.graph.grounding import span_problems  # noqa: E402
from argus.paths import complaints_dir  # noqa: E402
from metrics.gold import load_gold, score_document  # noqa: E402

VARIANTS = {"plain": {"extraction.grounded_decoding": False}, "grounded": {"extraction.grounded_decoding": True}}


def measure(variant: str, docs: list[Path], out: Path) -> dict:
    folder = out / variant
    shutil.rmtree(folder, ignore_errors=True)
    cfg = ArgusConfig.load(None, {"cache_dir": str(folder / "cache"), **VARIANTS[variant]})
    t0 = time.perf_counter()
    run_batch([d / "complaint.txt" for d in docs], folder, cfg, graphml=False)
    wall = time.perf_counter() - t0
    rows = []
    for d in docs:
        f = folder / f"{d.name}.ekg.json"
        if not f.exists():
            rows.append({"doc": d.name, "failed": True})
            continue
        ekg = load_ekg(f)
        rej = Counter(r.kind for r in ekg.rejected)
        ents, evs = len(ekg.graph.entities), len(ekg.graph.events)
        tiers = Counter(m.match for e in ekg.graph.entities for m in e.mentions)
        tiers.update(e.trigger_match for e in ekg.graph.events if e.trigger_match)
        score = score_document(ekg, load_gold(d), tiers=("relaxed",))
        rows.append({
            "doc": d.name, "failed": False, "problems": span_problems(ekg),
            "entities": ents, "events": evs, "rej_entities": rej["entity"], "rej_events": rej["event"],
            "rejected": sum(rej.values()), "rej_kinds": dict(rej), "tiers": dict(tiers),
            "entity_f1": score["relaxed_entities_f1"], "event_f1": score["relaxed_events_f1"],
            "calls": ekg.ledger.totals.calls, "tokens": ekg.ledger.totals.tokens,
            "examples": [r.reason for r in ekg.rejected if r.kind in ("entity", "event")][:4],
        })
    ok = [r for r in rows if not r["failed"]]
    s = lambda k: sum(r[k] for r in ok)  # noqa: E731
    tiers = Counter()
    for r in ok:
        tiers.update(r["tiers"])
    return {
        "variant": variant, "docs": len(docs), "ok": len(ok), "wall_s": round(wall, 1),
        "span_problems": sum(len(r["problems"]) for r in ok),
        "entities_written": s("entities") + s("rej_entities"), "events_written": s("events") + s("rej_events"),
        "entities_grounded_share": s("entities") / max(1, s("entities") + s("rej_entities")),
        "events_grounded_share": s("events") / max(1, s("events") + s("rej_events")),
        "kept_per_doc": (s("entities") + s("events")) / max(1, len(ok)),
        "entities_per_doc": s("entities") / max(1, len(ok)), "events_per_doc": s("events") / max(1, len(ok)),
        "rejected_per_doc": s("rejected") / max(1, len(ok)),
        "entity_f1": statistics.fmean(r["entity_f1"] for r in ok) if ok else float("nan"),
        "event_f1": statistics.fmean(r["event_f1"] for r in ok) if ok else float("nan"),
        "calls": s("calls"), "tokens": s("tokens"), "tiers": dict(tiers), "rows": rows,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("out/bench-grounding"))
    ap.add_argument("--variants", default="plain,grounded")
    ap.add_argument("--docs", type=int, default=6)
    args = ap.parse_args()
    root = complaints_dir("dev")
    docs = sorted(d for d in root.iterdir() if (d / "gold.json").exists())[: args.docs]
    results = [measure(v, docs, args.out) for v in args.variants.split(",")]
    (args.out / "results.json").write_text(json.dumps(results, indent=2))
    print("| variant | docs ok | entities written | grounded | events written | grounded | kept items/doc "
          "(ent + ev) | rejected/doc (all kinds) | relaxed entity F1 | relaxed event F1 | span problems | calls | wall s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r['variant']} | {r['ok']}/{r['docs']} | {r['entities_written']} | {r['entities_grounded_share']:.1%} | "
              f"{r['events_written']} | {r['events_grounded_share']:.1%} | {r['kept_per_doc']:.1f} "
              f"({r['entities_per_doc']:.1f} + {r['events_per_doc']:.1f}) | {r['rejected_per_doc']:.1f} | "
              f"{r['entity_f1']:.3f} | {r['event_f1']:.3f} | {r['span_problems']} | {r['calls']} | {r['wall_s']} |")
    for r in results:
        print(f"\n{r['variant']}: spans by tier {r['tiers']}")
        for row in r["rows"]:
            if not row["failed"]:
                print(f"  {row['doc']}: {row['entities']} entities, {row['events']} events, rejected {row['rej_kinds']}; "
                      f"F1 ent {row['entity_f1']:.3f} ev {row['event_f1']:.3f}; e.g. {row['examples'][:2]}")
            else:
                print(f"  {row['doc']}: FAILED")


if __name__ == "__main__":
    main()
