"""Benchmark: statistics of the 83-code statute graph and the court-citation parser's accuracy.

Prints the node/edge/citation tables (compared with the paper's 58-code graph), the parse issues,
the ten codes with most citation edges, and the court-citation parser scored against the 541
annotations of the 15 decisions (with a breakdown of its disagreements).

    python bench/statutes_stats.py [--out runs/statutes-stats]
"""

from __future__ import annotations

import argparse

from argus.statutes.citation_eval import score_citation_parser
from argus.statutes.corpus import subset_sources
from argus.statutes.decisions import load_decisions
from argus.statutes.graph import build_statute_graph
from argus.statutes.model import ProvisionCitation
from argus.statutes.stats import all_tables, to_markdown, write_tables


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help="also write the tables as Markdown/CSV here")
    args = ap.parse_args()
    sg = build_statute_graph(subset_sources())
    tables = all_tables(sg)
    for name in ("paper", "nodes", "edges", "citations", "issues"):
        print(f"\n## {name}\n" + to_markdown(tables[name], ".1f"))
    top = tables["codes"].assign(cites=lambda d: d.cites_intra + d.cites_cross_out).nlargest(10, "cites")
    print("\n## codes with most outgoing citation edges\n" + to_markdown(top))
    rep = sg.citation_report
    print("\n## most frequent designators of laws outside the subset\n")
    for text, n in rep.unknown_designators.most_common(12):
        print(f"- {n:5d}  {text}")
    score = score_citation_parser(load_decisions(), sg.registry)
    print("\n## court-citation parser vs annotations\n" + to_markdown(score.summary, ".3f"))
    print(
        "\n## agreement per gold citation\n"
        + to_markdown(score.pairs["match"].value_counts().rename_axis("match").reset_index())
    )
    fp = score.pairs[score.pairs.match == "false positive"]
    exists = sum(
        1
        for code, number, art in zip(fp.pred_code, fp.pred_number, fp.pred_article)
        if code and number and sg.find(ProvisionCitation(code, number, article=bool(art))) is not None
    )
    no_code = int(fp.pred_code.isna().sum())
    print(
        f"\n{len(fp)} predictions overlap no annotation: {exists} name a § that exists in the graph (statute "
        f"citations the annotators skipped), {len(fp) - exists - no_code} a § missing from its code, "
        f"{no_code} a law outside the corpus or no code at all."
    )
    if args.out:
        tables["citation_parser"] = score.summary
        tables["citation_parser_pairs"] = score.pairs
        write_tables(tables, args.out)
        print(f"tables written to {args.out}")


if __name__ == "__main__":
    main()
