"""``argus statutes``: build the German statute graph, inspect it, retrieve provisions, evaluate.

Heavy imports (lxml, networkx, pandas, sentence-transformers) happen inside the commands so that
``argus --help`` stays fast.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from argus.terminal import help_markup_mode

from argus.errors import fails_cleanly

app = typer.Typer(
    rich_markup_mode=help_markup_mode(),
    add_completion=False,
    no_args_is_help=True,
    help="German federal statutes as a knowledge graph (§ › Absatz › Satz › Nummer › Buchstabe) "
    "with citation edges, structure-driven retrieval and ToER evaluation.",
)

CodesOpt = typer.Option(
    None,
    "--codes",
    "-c",
    help="Comma-separated codes (jurabk or abbreviation, e.g. 'BGB,SGB 5,UWG'); default: all 83 of the subset.",
)
GraphOpt = typer.Option(
    None, "--graph", "-g", help="Load a graph written by 'build --out x.json' instead of parsing XML."
)
CorpusOpt = typer.Option(
    None, "--corpus", help="Build from the full corpus: a .tar.zst/.tar archive or a folder of XML files."
)


def _console():
    from rich.console import Console

    return Console()


def _split_codes(codes: Optional[str]) -> Optional[list[str]]:
    if codes is None:
        return None
    items = [c.strip() for c in codes.split(",") if c.strip()]
    return items or None


def _load_graph(
    graph: Optional[Path],
    codes: Optional[str],
    corpus: Optional[Path] = None,
    link: bool = True,
    progress: bool = False,
):
    from argus.statutes.corpus import archive_sources, directory_sources, subset_sources
    from argus.statutes.graph import StatuteGraph, build_statute_graph

    if graph is not None:
        sg = StatuteGraph.from_json(graph)
        wanted = _split_codes(codes)
        if wanted:
            for name in wanted:
                sg.code_key(name)  # raises a helpful error for unknown names
        return sg
    if corpus is not None:
        sources = directory_sources(corpus) if corpus.is_dir() else archive_sources(corpus)
    else:
        sources = subset_sources(_split_codes(codes))
    con = _console()
    if progress:
        with con.status("parsing statutes …") as status:
            count = [0]

            def tick(key: str) -> None:
                count[0] += 1
                status.update(f"parsed {count[0]} codes (last: {key})")

            return build_statute_graph(sources, link_citations=link, progress=tick)
    return build_statute_graph(sources, link_citations=link)


def _print_df(df, title: str | None = None, max_rows: int | None = None) -> None:
    from argus.terminal import print_table

    rows = df if max_rows is None else df.head(max_rows)
    cells = []
    for _, row in rows.iterrows():
        line = []
        for col in df.columns:
            v = row[col]
            if isinstance(v, float):
                line.append("" if v != v else f"{v:.3f}" if abs(v) < 100 else f"{v:,.1f}")
            else:
                line.append(str(v))
        cells.append(line)
    headers = [str(c) for c in df.columns]
    print_table(_console(), title or "", headers, cells, right=[str(c) for c in df.columns if df[c].dtype.kind in "if"])


@app.command()
@fails_cleanly
def build(
    codes: Optional[str] = CodesOpt,
    corpus: Optional[Path] = CorpusOpt,
    out: list[Path] = typer.Option(
        [], "--out", "-o", help="Write the graph: .json (reloadable) and/or .graphml; repeatable."
    ),
    citations: bool = typer.Option(True, "--citations/--no-citations", help="Link cites_* edges."),
    node_text: bool = typer.Option(True, "--node-text/--no-node-text", help="GraphML: give every node its full text."),
) -> None:
    """Parse statute XML into the graph, print its size and write it out."""
    from argus.errors import InputError

    sg = _load_graph(None, codes, corpus, link=citations, progress=True)
    t = sg.timings
    con = _console()
    con.print(
        f"[bold]{len(sg.codes)}[/bold] codes, [bold]{sg.number_of_nodes():,}[/bold] nodes, "
        f"[bold]{sg.number_of_edges():,}[/bold] edges ({sg.citation_report.edges:,} citation edges: "
        f"{sg.citation_report.intra_code:,} intra-code, {sg.citation_report.cross_code:,} cross-code) "
        f"in {t.total:.1f} s (parse {t.parse:.1f}, assemble {t.assemble:.1f}, citations {t.citations:.1f})"
    )
    if sg.issues:
        from collections import Counter

        counts = Counter(i.kind for i in sg.issues)
        con.print("issues (recorded, not fatal): " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    for path in out:
        suffix = path.suffix.lower()
        if suffix == ".json":
            sg.to_json(path)
        elif suffix == ".graphml":
            sg.to_graphml(path, node_text=node_text)
        else:
            raise InputError(f"cannot write {path}: use a .json or .graphml file name")
        con.print(f"wrote {path}")


@app.command()
@fails_cleanly
def stats(
    codes: Optional[str] = CodesOpt,
    graph: Optional[Path] = GraphOpt,
    corpus: Optional[Path] = CorpusOpt,
    out_dir: Optional[Path] = typer.Option(None, "--out-dir", help="Also write every table as Markdown and CSV here."),
    all_codes: bool = typer.Option(False, "--all-codes", help="Print the per-code table in full."),
) -> None:
    """Nodes and edges per type and level, citation edges intra- vs cross-code, parse issues."""
    from argus.statutes.stats import all_tables, write_tables

    sg = _load_graph(graph, codes, corpus, progress=graph is None)
    tables = all_tables(sg)
    _print_df(tables["nodes"], "nodes per level (words of node text)")
    _print_df(tables["edges"], "edges per type")
    _print_df(tables["citations"], "citation pass")
    _print_df(tables["paper"], "compared with the paper's graph")
    _print_df(
        tables["codes"],
        "per code" + ("" if all_codes else " (largest 20; --all-codes for all)"),
        None if all_codes else 20,
    )
    if len(tables["issues"]):
        _print_df(tables["issues"], "parse issues (recorded, not fatal)")
    if out_dir is not None:
        written = write_tables(tables, out_dir, prefix="stats_")
        _console().print(f"wrote {len(written)} files to {out_dir}")


@app.command()
@fails_cleanly
def retrieve(
    query: str = typer.Argument(..., help="Case facts or any German text; '-' reads standard input."),
    level: str = typer.Option(
        "satz", "--level", "-l", help="Chunking: code, section (§), absatz, satz, nummer, buchstabe, naive100."
    ),
    k: int = typer.Option(5, "--k", "-k", help="How many chunks to retrieve."),
    expansion: str = typer.Option("none", "--expansion", "-e", help="One-hop expansion: none, parent, cited, hybrid."),
    model: Optional[str] = typer.Option(
        None, "--model", "-m", help="sentence-transformers model name or path (default: offline all-MiniLM-L6-v2)."
    ),
    index: str = typer.Option("exact", "--index", help="exact, or ivf (approximate, for large corpora)."),
    codes: Optional[str] = CodesOpt,
    graph: Optional[Path] = GraphOpt,
    show_text: int = typer.Option(160, "--show-text", help="Characters of chunk text to show (0: none)."),
) -> None:
    """Retrieve the top-k statute chunks for a query and decode them to citations."""
    from argus.errors import InputError
    from argus.statutes.chunking import chunks_for
    from argus.statutes.embeddings import Embedder
    from argus.statutes.retrieval import EXPANSIONS, Retriever
    from argus.statutes.stats import word_counts

    if query == "-":
        query = sys.stdin.read()
    if not query.strip():
        raise InputError("empty query: pass the facts of a case (or '-' to read them from standard input)")
    if expansion not in EXPANSIONS:
        raise InputError(f"unknown expansion {expansion!r}; use one of {', '.join(EXPANSIONS)}")
    sg = _load_graph(graph, codes, progress=graph is None)
    try:
        chunks = chunks_for(sg, level)
    except ValueError as exc:
        raise InputError(str(exc)) from exc
    con = _console()
    with con.status(f"embedding {len(chunks):,} {level} chunks (cached after the first run) …"):
        retriever = Retriever(sg, chunks, Embedder(model), index=index, words=word_counts(sg))
    res = retriever.retrieve(query, k=k, expansion=expansion)
    import pandas as pd

    rows = []
    for rank, (chunk, score) in enumerate(zip(res.chunks, res.scores), 1):
        cites = [sg.citation(n) for n in chunk.nodes[:3]]
        rows.append(
            {
                "rank": rank,
                "score": round(score, 4),
                "citation": "; ".join(c.render() for c in cites if c) + (" …" if len(chunk.nodes) > 3 else ""),
                "words": chunk.words,
                "text": chunk.text[:show_text].replace("\n", " ") if show_text else "",
            }
        )
    _print_df(pd.DataFrame(rows), f"top-{k} {level} chunks ({res.seconds * 1000:.0f} ms incl. query embedding)")
    if res.expanded_nodes:
        exp_rows = [
            {"node": n, "citation": (sg.citation(n).render() if sg.citation(n) else "")} for n in res.expanded_nodes
        ]
        _print_df(pd.DataFrame(exp_rows), f"{expansion} expansion: {len(exp_rows)} nodes")
    con.print(
        f"context handed on: {res.context_words} words; citations: " + ", ".join(c.render() for c in res.citations)
    )


@app.command("eval")
@fails_cleanly
def evaluate_cmd(
    granularities: str = typer.Option(
        "code,section,absatz,satz,nummer,buchstabe,naive100", "--granularities", help="Chunking levels to compare."
    ),
    k: int = typer.Option(5, "--k", "-k"),
    expansions: str = typer.Option("none,parent,cited,hybrid", "--expansions"),
    model: Optional[str] = typer.Option(None, "--model", "-m"),
    index: str = typer.Option("exact", "--index"),
    codes: Optional[str] = CodesOpt,
    graph: Optional[Path] = GraphOpt,
    out_dir: Path = typer.Option(Path("runs/statutes-eval"), "--out-dir", help="Where the Markdown/CSV tables go."),
    parser_only: bool = typer.Option(
        False, "--parser-only", help="Only score the court-citation parser (no embeddings)."
    ),
) -> None:
    """Score the court-citation parser and retrieval (ToER, recall, token-charged ToER) on the 15 decisions."""
    from argus.statutes.citation_eval import score_citation_parser
    from argus.statutes.decisions import load_decisions
    from argus.statutes.stats import write_tables

    sg = _load_graph(graph, codes, progress=graph is None)
    decisions = load_decisions()
    score = score_citation_parser(decisions, sg.registry)
    _print_df(
        score.summary, "court-citation parser vs the 541 annotations (336 statute citations with book and number)"
    )
    write_tables({"citation_parser": score.summary, "citation_parser_pairs": score.pairs}, out_dir)
    if parser_only:
        return
    from argus.statutes.embeddings import Embedder
    from argus.statutes.evaluation import evaluate, write_evaluation

    con = _console()
    with con.status("evaluating …") as status:
        result = evaluate(
            sg,
            decisions,
            Embedder(model),
            granularities=[g.strip() for g in granularities.split(",") if g.strip()],
            k=k,
            expansions=[e.strip() for e in expansions.split(",") if e.strip()],
            index=index,
            progress=lambda msg: status.update(msg),
        )
    _print_df(result.coverage[result.coverage.doc_id == "all"], "gold coverage (paper: 90.3 %)")
    _print_df(result.granularities, "chunk sets")
    for exp in sorted(set(result.results.expansion), key=["none", "parent", "cited", "hybrid"].index):
        _print_df(
            result.table("toer", "all", exp).reset_index(),
            f"ToER@{k}, expansion={exp} (rows: chunking, columns: evaluation depth)",
        )
    _print_df(result.table("recall", "all", "none").reset_index(), f"recall@{k}, no expansion")
    _print_df(
        result.table("toer_charged", "all", "hybrid").reset_index()
        if "hybrid" in set(result.results.expansion)
        else result.table("toer_charged", "all", "none").reset_index(),
        "token-charged ToER",
    )
    written = write_evaluation(result, out_dir)
    con.print(f"wrote {len(written)} files to {out_dir}")


@app.command()
@fails_cleanly
def cite(
    text: str = typer.Argument(
        ..., help="Court-style text with citations, e.g. '§ 823 Abs. 1 BGB i.V.m. Art. 2 Abs. 1 GG'; '-' reads stdin."
    ),
    codes: Optional[str] = CodesOpt,
    graph: Optional[Path] = GraphOpt,
) -> None:
    """Parse court-style statute citations and show the graph node each one resolves to."""
    import pandas as pd

    from argus.errors import InputError
    from argus.statutes.citations import parse_court_citations

    if text == "-":
        text = sys.stdin.read()
    if not text.strip():
        raise InputError("empty text: nothing to parse")
    sg = _load_graph(graph, codes, progress=graph is None)
    rows = []
    for c in parse_court_citations(text, sg.registry):
        provs = c.provisions()
        node = sg.find(provs[0]) if provs else None
        rows.append(
            {
                "text": c.text,
                "code": c.code or f"({c.book or '?'}: not in the graph)",
                "number": c.number or "",
                "structure": ", ".join(f"{k} {v}" for k, v in c.structure.items()),
                "also": "; ".join(", ".join(f"{k} {v}" for k, v in s.items()) for s in c.also),
                "node": node or "",
            }
        )
    if not rows:
        _console().print("no statute citations found")
        return
    _print_df(pd.DataFrame(rows), "citations")


@app.command()
@fails_cleanly
def show(
    citation: str = typer.Argument(..., help="A citation such as '§ 622 Abs. 2 BGB' or 'Art. 3 Abs. 1 GG'."),
    codes: Optional[str] = CodesOpt,
    graph: Optional[Path] = GraphOpt,
) -> None:
    """Print the text of the provision a citation names, with its id and outgoing citations."""
    from argus.errors import InputError
    from argus.statutes.citations import parse_court_citations

    sg = _load_graph(graph, codes, progress=graph is None)
    found = parse_court_citations(citation, sg.registry)
    if not found or not found[0].provisions():
        raise InputError(f"no citation of a loaded code found in {citation!r} (write e.g. '§ 622 Abs. 2 BGB')")
    prov = found[0].provisions()[0]
    node = sg.find(prov)
    if node is None:
        raise InputError(f"{prov.render()}: no such § in {prov.code}")
    con = _console()
    got = sg.citation(node)
    con.print(f"[bold]{got.render() if got else node}[/bold]  ({node})")
    if got is not None and got.specified_depth() < prov.specified_depth():
        con.print(f"[yellow]{prov.render()} does not exist; this is the closest enclosing provision[/yellow]")
    con.print(sg.text(node))
    cited = sg.cited(node) if sg.type_of(node) == "satz" else []
    if cited:
        con.print("cites: " + ", ".join(sg.citation(c).render() for c in cited if sg.citation(c)))
