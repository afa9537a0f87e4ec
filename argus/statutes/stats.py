"""Statistics of a statute graph as pandas DataFrames, and writing tables to Markdown/CSV.

Tables (all ``pandas.DataFrame``):

- ``nodes``: nodes per hierarchy level with mean/median words of their text;
- ``edges``: edges per type (``contains_*`` hierarchy, ``cites_*`` citations);
- ``citations``: what the citation pass found (mentions, edges intra-/cross-code, partial,
  unresolved, references to laws outside the corpus);
- ``codes``: per code: §§, nodes, outgoing citations intra/cross, incoming cross-code citations;
- ``issues``: parse problems by kind (recorded, not fatal);
- ``paper``: our graph next to the paper's (58 codes, 168,469 nodes, 240,507 edges, 22,253
  citation edges, all intra-code).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from argus.statutes.graph import StatuteGraph
from argus.statutes.model import Level
from argus.statutes.storage import atomic_write_text

PAPER = {"codes": 58, "nodes": 168_469, "edges": 240_507, "citation_edges": 22_253, "cross_code_citation_edges": 0}

_ORDER = [lvl.type_name for lvl in Level]


def word_counts(sg: StatuteGraph) -> dict[str, int]:
    """Words (whitespace tokens) of every node's text; code and unit counts are sums over §§."""
    nodes = sg.graph._node
    counts: dict[str, int] = {}
    for n, a in nodes.items():
        t = a["type"]
        if t == "section":
            counts[n] = len(a["text"].split())
        elif "section" in a:
            counts[n] = len(nodes[a["section"]]["text"][a["start"] : a["end"]].split())
    for n, a in nodes.items():
        if a["type"] == "section":
            w = counts[n]
            p = a.get("parent")
            while p is not None:
                counts[p] = counts.get(p, 0) + w
                p = nodes[p].get("parent")
    counts.setdefault("root", sum(counts.get(c.node_id, 0) for c in sg.codes.values()))
    return counts


def node_table(sg: StatuteGraph, words: dict[str, int] | None = None) -> pd.DataFrame:
    words = words if words is not None else word_counts(sg)
    by_type: dict[str, list[int]] = {}
    for n, t in sg.graph.nodes(data="type"):
        by_type.setdefault(t, []).append(words.get(n, 0))
    rows = []
    for t in sorted(by_type, key=_ORDER.index):
        w = np.array(by_type[t])
        rows.append(
            {
                "level": Level[t.upper()].display,
                "type": t,
                "nodes": len(w),
                "mean_words": round(float(w.mean()), 1),
                "median_words": float(np.median(w)),
                "max_words": int(w.max()),
            }
        )
    df = pd.DataFrame(rows)
    total = pd.DataFrame([{"level": "total", "type": "", "nodes": int(df["nodes"].sum())}])
    return pd.concat([df, total], ignore_index=True)


def edge_table(sg: StatuteGraph) -> pd.DataFrame:
    counts = Counter(k for _, _, k in sg.graph.edges(keys=True))
    rows = [
        {"edge_type": k, "family": k.split("_", 1)[0], "edges": v}
        for k, v in sorted(counts.items(), key=lambda kv: (kv[0].split("_")[0], _ORDER.index(kv[0].split("_", 1)[1])))
    ]
    df = pd.DataFrame(rows)
    total = pd.DataFrame([{"edge_type": "total", "family": "", "edges": int(df["edges"].sum()) if len(df) else 0}])
    return pd.concat([df, total], ignore_index=True)


def citation_table(sg: StatuteGraph) -> pd.DataFrame:
    r = sg.citation_report
    rows = [
        ("references read in Satz text", r.mentions),
        ("citation edges (distinct Satz → target)", r.edges),
        ("  intra-code", r.intra_code),
        ("  cross-code", r.cross_code),
        ("  from relative references (Absatz 2, nach Satz 1 …)", r.relative),
        ("  from references naming a § / Artikel", r.edges - r.relative),
        ("  partial (stop above the written depth)", r.partial),
        ("references not resolvable in the graph", r.unresolved),
        ("references to laws outside the loaded corpus", r.unknown_law),
    ]
    return pd.DataFrame(rows, columns=["measure", "count"])


def code_table(sg: StatuteGraph) -> pd.DataFrame:
    nodes = sg.graph._node
    per_code: dict[str, Counter] = {k: Counter() for k in sg.codes}
    for _, a in nodes.items():
        code = a.get("code")
        if code in per_code:
            per_code[code]["nodes"] += 1
            if a["type"] == "section":
                per_code[code]["sections"] += 1
    for u, v, k, d in sg.graph.edges(keys=True, data=True):
        if not k.startswith("cites_"):
            continue
        src, dst = nodes[u]["code"], nodes[v]["code"]
        if d.get("cross_code"):
            per_code[src]["cites_cross_out"] += 1
            per_code[dst]["cites_cross_in"] += 1
        else:
            per_code[src]["cites_intra"] += 1
    rows = []
    for key, info in sg.codes.items():
        c = per_code[key]
        rows.append(
            {
                "code": key,
                "amtabk": info.amtabk or "",
                "sections": c["sections"],
                "nodes": c["nodes"],
                "cites_intra": c["cites_intra"],
                "cites_cross_out": c["cites_cross_out"],
                "cites_cross_in": c["cites_cross_in"],
            }
        )
    return pd.DataFrame(rows).sort_values("nodes", ascending=False, ignore_index=True)


def issue_table(sg: StatuteGraph) -> pd.DataFrame:
    counts = Counter(i.kind for i in sg.issues)
    return pd.DataFrame(sorted(counts.items()), columns=["issue", "count"])


def paper_comparison(sg: StatuteGraph) -> pd.DataFrame:
    r = sg.citation_report
    ours = {
        "codes": len(sg.codes),
        "nodes": sg.graph.number_of_nodes(),
        "edges": sg.graph.number_of_edges(),
        "citation_edges": r.edges,
        "cross_code_citation_edges": r.cross_code,
    }
    return pd.DataFrame([{"measure": k, "paper (58 codes)": PAPER[k], "this graph": ours[k]} for k in PAPER])


def all_tables(sg: StatuteGraph) -> dict[str, pd.DataFrame]:
    words = word_counts(sg)
    return {
        "nodes": node_table(sg, words),
        "edges": edge_table(sg),
        "citations": citation_table(sg),
        "paper": paper_comparison(sg),
        "codes": code_table(sg),
        "issues": issue_table(sg),
    }


def to_markdown(df: pd.DataFrame, floatfmt: str = ".2f") -> str:
    return df.to_markdown(index=False, floatfmt=floatfmt)


def write_tables(tables: dict[str, pd.DataFrame], out_dir: str | Path, prefix: str = "") -> list[Path]:
    """Write each table as ``<prefix><name>.md`` and ``.csv`` (atomically); return the paths."""
    out = Path(out_dir)
    written = []
    for name, df in tables.items():
        md = out / f"{prefix}{name}.md"
        csv = out / f"{prefix}{name}.csv"
        atomic_write_text(md, to_markdown(df) + "\n")
        atomic_write_text(csv, df.to_csv(index=False))
        written += [md, csv]
    return written
