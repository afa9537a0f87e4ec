"""Benchmark: statute-graph build time and memory, for the 83-code subset and the full corpus.

For each corpus the XML is first read into memory (the archive is streamed through zstd, never
unpacked to disk), then, each in a fresh subprocess so peak memory is not shared:

- ``plain``: lxml parses every file and does nothing else (the reference: "about 6.3 s" for the
  full corpus on the issue author's machine);
- ``build``: the full build — hierarchy, Satz splitting, citation edges (intra- and cross-code).

Printed per corpus: files, nodes, edges, citation edges, seconds per phase, build ÷ plain ratio,
peak resident memory (RSS) of the process and the RSS growth caused by the build.

    python bench/statutes_build.py                # both corpora
    python bench/statutes_build.py --corpus subset
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
import resource
import subprocess
import sys
import time
from pathlib import Path


def _rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _load(corpus: str):
    from argus.statutes.corpus import XmlSource, archive_sources, subset_sources

    t0 = time.perf_counter()
    if corpus == "subset":
        sources = [XmlSource(s.name, data=s.read()) for s in subset_sources()]
    else:
        sources = list(archive_sources())
    return sources, time.perf_counter() - t0


def measure(corpus: str, mode: str) -> dict:
    sources, t_read = _load(corpus)
    rss_before = _rss_mb()
    out = {"corpus": corpus, "mode": mode, "files": len(sources), "read_s": round(t_read, 2)}
    if mode == "plain":
        from lxml import etree

        t0 = time.perf_counter()
        for s in sources:
            try:
                etree.fromstring(s.data)
            except etree.XMLSyntaxError:
                pass
        out["seconds"] = round(time.perf_counter() - t0, 2)
    else:
        from argus.statutes.graph import build_statute_graph

        t0 = time.perf_counter()
        sg = build_statute_graph(sources)
        out["seconds"] = round(time.perf_counter() - t0, 2)
        t = sg.timings
        out.update(
            parse_s=round(t.parse, 2),
            assemble_s=round(t.assemble, 2),
            citations_s=round(t.citations, 2),
            codes=len(sg.codes),
            nodes=sg.graph.number_of_nodes(),
            edges=sg.graph.number_of_edges(),
            citation_edges=sg.citation_report.edges,
            intra_code=sg.citation_report.intra_code,
            cross_code=sg.citation_report.cross_code,
            unresolved=sg.citation_report.unresolved,
            unknown_law=sg.citation_report.unknown_law,
            issues=len(sg.issues),
            issue_kinds=", ".join(f"{k} {v}" for k, v in sorted(Counter(i.kind for i in sg.issues).items())),
        )
    out["rss_growth_mb"] = round(_rss_mb() - rss_before, 0)
    out["peak_rss_mb"] = round(_peak_mb(), 0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", choices=["subset", "full", "both"], default="both")
    ap.add_argument("--mode", choices=["plain", "build"], help=argparse.SUPPRESS)
    ap.add_argument("--repeat", type=int, default=1, help="runs per measurement (the fastest is kept)")
    args = ap.parse_args()
    if args.mode:  # child process
        print(json.dumps(measure(args.corpus, args.mode)))
        return
    corpora = ["subset", "full"] if args.corpus == "both" else [args.corpus]
    rows = []
    for corpus in corpora:
        results = {}
        for mode in ("plain", "build"):
            best = None
            for _ in range(args.repeat):
                proc = subprocess.run(
                    [sys.executable, str(Path(__file__).resolve()), "--corpus", corpus, "--mode", mode],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                res = json.loads(proc.stdout.strip().splitlines()[-1])
                if best is None or res["seconds"] < best["seconds"]:
                    best = res
            results[mode] = best
        build, plain = results["build"], results["plain"]
        build["plain_lxml_s"] = plain["seconds"]
        build["ratio_build_to_plain"] = round(build["seconds"] / plain["seconds"], 2) if plain["seconds"] else None
        rows.append(build)
    import pandas as pd

    df = pd.DataFrame(rows).set_index("corpus").T
    print(df.to_markdown())


if __name__ == "__main__":
    main()
