"""Fact classification on the annotated dev complaints, for the ``classifier`` and ``hybrid`` modes.

Sentences come from the pipeline's own preprocessing; each gets the gold label of the gold sentence
it overlaps most. Figures are reported over all sentences and over FACTS-narrative sentences (the
ones the graph is built from; the LLM fallback only sees those). ``hybrid`` sends every narrative
sentence below τ to the configured fact-fallback model (default: the embedded SmolLM2-135M), as
``facts.fallback: always`` does.

The shipped classifier is trained on all 18 annotated complaints, dev included, so these figures are
in-sample: they check the gate end to end, they do not measure it. The honest figures come from
``argus train-facts --report`` (leave-one-complaint-out, every choice inside the folds).

    python bench/measure_facts.py [--split dev] [--modes classifier,hybrid] [--tau 0.8] [--config argus.yaml]
"""

from __future__ import annotations

import argparse
import json
import time

from argus.config import ArgusConfig
from argus.text.documents import RawDocument
from argus.gate.fact_eval import gold_label_map
from argus.gate.facts import fact_metrics
from argus.models.ledger import CostLedger
from argus.paths import complaints_dir
from argus.pipeline import ArgusPipeline, DocumentRun


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--split", default="dev")
    ap.add_argument("--modes", default="classifier,hybrid")
    ap.add_argument("--tau", type=float, default=None)
    ap.add_argument("--config", default=None)
    args = ap.parse_args()
    import pandas as pd

    rows = []
    for mode in args.modes.split(","):
        overrides = {"facts.mode": mode, "facts.fallback": "always"}
        if args.tau is not None:
            overrides["facts.tau"] = args.tau
        cfg = ArgusConfig.load(args.config, overrides)
        pipe = ArgusPipeline(cfg)
        y_all, p_all, y_nar, p_nar = [], [], [], []
        ledger = CostLedger()
        sent_to_llm = 0
        t0 = time.perf_counter()
        for d in sorted(complaints_dir(args.split).iterdir()):
            if not (d / "gold.json").exists():
                continue
            gold = json.loads((d / "gold.json").read_text())
            raw = RawDocument(doc_id=d.name, text=(d / "complaint.txt").read_text(encoding="utf-8"), source=str(d))
            doc = pipe.preprocess(raw)
            run = DocumentRun(d.name, ledger)
            doc, report = pipe.gate_facts(doc, run)
            sent_to_llm += report.sent_to_llm
            labels = gold_label_map(doc, gold)
            narrative = set(doc.narrative_ids)
            for s in doc.sentences:
                if s.id not in labels:
                    continue
                y_all.append(labels[s.id])
                p_all.append(int(bool(s.fact)))
                if s.id in narrative:
                    y_nar.append(labels[s.id])
                    p_nar.append(int(bool(s.fact)))
        secs = time.perf_counter() - t0
        t = ledger.totals()
        for scope, y, p in (("all sentences", y_all, p_all), ("FACTS narrative", y_nar, p_nar)):
            m = fact_metrics(y, p)
            rows.append({"split": args.split, "mode": mode, "tau": cfg.facts.tau, "scope": scope, "n": m["n"],
                         "fact_P": m["precision"], "fact_R": m["recall"], "fact_F1": m["f1"], "accuracy": m["accuracy"],
                         "to_llm": sent_to_llm, "lm_calls": t.calls, "tokens": t.tokens, "seconds": round(secs, 1)})
    df = pd.DataFrame(rows)
    with pd.option_context("display.width", 220, "display.float_format", "{:.3f}".format):
        print(df.to_string(index=False))


if __name__ == "__main__":
    main()
