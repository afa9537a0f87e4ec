"""Benchmark: statute-graph build time, JSON write time and memory, for the 83-code subset and the full corpus.

For each corpus the XML is first read into memory (the archive is streamed through zstd), or
with ``--sources files`` the build gets it as files on disk instead (the archive unpacked once into
a temporary folder, in archive order; what ``argus statutes build --corpus <folder>`` does), so the
XML is not part of the build's memory. Then, each in a fresh subprocess so peak memory is not shared:

- ``plain``: lxml parses every file and does nothing else (the reference);
- ``build``: the full build — hierarchy, Satz splitting, citation edges (intra- and cross-code) —
  then the graph written as JSON (``StatuteGraph.to_json``, what ``argus statutes build -o x.json``
  does) into a temporary folder, optionally (``--graphml``) as GraphML too, then its hashes.

Printed per corpus: files, nodes, edges, citation edges, seconds per phase, build ÷ plain ratio,
JSON write seconds and size, the CPU figures that explain the ratio, and memory:

- ``cpu_s`` and ``cpu_ratio_build_to_plain``: the build's CPU seconds (the building process and its
  helpers) and their ratio to the plain parse's: the work, however many cores did it;
- ``two_process_speedup``: two processes each parsing every file at once, against one alone (2.0
  on a machine that gives a full second core); build ÷ plain is about the CPU ratio divided by it;

- ``peak_rss_build_mb`` / ``peak_rss_mb``: the building process's peak resident memory after the
  build / after the write too (``ru_maxrss``; it includes the XML held in memory);
- ``helper_peak_rss_mb``: the largest peak of a helper process (``RUSAGE_CHILDREN``);
- ``tree_peak_pss_mb``: the peak of the summed proportional set size (PSS) of the building process
  and its helpers, sampled every 50 ms by this process until the hashing starts: what the machine
  had to hold at once (forked pages shared by several processes count once);
- with ``--reload``: ``json_load_s`` and ``json_load_peak_rss_mb``, ``StatuteGraph.from_json`` of
  the written JSON in a fresh process (what ``argus statutes retrieve --graph x.json`` does first);
- ``graph_hash`` (:func:`argus.statutes.digest.graph_digest`: nodes, edges, attributes in canonical
  order) and ``layout_hash`` (:func:`~argus.statutes.digest.layout_digest`: also every order and
  the side tables).

    python bench/statutes_build.py                # both corpora
    python bench/statutes_build.py --corpus full --repeat 2
    python bench/statutes_build.py --corpus full --graphml --reload
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's argus, not an installed one


def _rss_mb(field: str = "VmRSS") -> float:
    """This process's resident memory (``field`` of ``/proc/self/status``: ``VmHWM`` is its peak)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


def _peak_mb(who: int = resource.RUSAGE_SELF) -> float:
    return resource.getrusage(who).ru_maxrss / 1024


def _load(corpus: str, folder: str | None = None):
    """The corpus's sources: XML in memory, or with a ``folder`` (the unpacked archive; any value
    for the subset) files."""
    from argus.statutes.corpus import XmlSource, archive_sources, subset_sources

    t0 = time.perf_counter()
    if corpus == "subset":
        sources = subset_sources()
        if folder is None:
            sources = [XmlSource(s.name, data=s.read()) for s in sources]
    elif folder is not None:
        names = (Path(folder) / "ORDER").read_text().split("\n")
        sources = [XmlSource(name, Path(folder) / name) for name in names]
    else:
        sources = list(archive_sources())
    return sources, time.perf_counter() - t0


def _unpack(tmp: str) -> str:
    """The corpus archive's XML files in ``tmp``, and their order in the archive in ``tmp/ORDER``."""
    from argus.statutes.corpus import archive_sources

    names = []
    for source in archive_sources():
        (Path(tmp) / source.name).write_bytes(source.read())
        names.append(source.name)
    (Path(tmp) / "ORDER").write_text("\n".join(names))
    return tmp


def _cpu_s() -> float:
    """CPU seconds (user and system) of this process and of its helpers that have ended."""
    own, helpers = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + helpers.ru_utime + helpers.ru_stime


def _plain_parse(sources) -> None:
    from lxml import etree

    for s in sources:
        try:
            etree.fromstring(s.data)
        except etree.XMLSyntaxError:
            pass


def _two_at_once(sources) -> float:
    """Wall seconds for two forked processes to each parse every file at the same time."""
    t0 = time.perf_counter()
    pids = []
    for _ in range(2):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            try:
                _plain_parse(sources)
            finally:
                os._exit(0)
        pids.append(pid)
    for pid in pids:
        os.waitpid(pid, 0)
    return time.perf_counter() - t0


def _build(sources, out: dict, graphml: bool, reload: bool) -> None:
    from argus.statutes.digest import graph_digest, layout_digest
    from argus.statutes.graph import build_statute_graph

    t0, c0 = time.perf_counter(), _cpu_s()
    sg = build_statute_graph(sources)
    out["seconds"] = round(time.perf_counter() - t0, 2)
    out["cpu_s"] = round(_cpu_s() - c0, 2)  # the workers have ended: their time is in RUSAGE_CHILDREN
    out["peak_rss_build_mb"] = round(_peak_mb(), 0)
    t = sg.timings
    out.update(
        parse_s=round(t.parse, 2),
        assemble_s=round(t.assemble, 2),
        citations_s=round(t.citations, 2),
        codes=len(sg.codes),
        nodes=sg.number_of_nodes(),
        edges=sg.number_of_edges(),
        citation_edges=sg.citation_report.edges,
        intra_code=sg.citation_report.intra_code,
        cross_code=sg.citation_report.cross_code,
        unresolved=sg.citation_report.unresolved,
        unknown_law=sg.citation_report.unknown_law,
        issues=len(sg.issues),
        issue_kinds=", ".join(f"{k} {v}" for k, v in sorted(Counter(i.kind for i in sg.issues).items())),
    )
    with tempfile.TemporaryDirectory(prefix="statutes-bench-") as tmp:
        path = Path(tmp) / "graph.json"
        t0 = time.perf_counter()
        sg.to_json(path)
        out["json_write_s"] = round(time.perf_counter() - t0, 2)
        out["json_mb"] = round(path.stat().st_size / 1e6, 0)
        if reload:
            kept = Path(tempfile.mkdtemp(prefix="statutes-bench-")) / "graph.json"
            path.rename(kept)
        else:
            path.unlink()
        if graphml:
            path = Path(tmp) / "graph.graphml"
            t0 = time.perf_counter()
            sg.to_graphml(path)
            out["graphml_write_s"] = round(time.perf_counter() - t0, 2)
            out["graphml_mb"] = round(path.stat().st_size / 1e6, 0)
    out["peak_rss_mb"] = round(_peak_mb(), 0)
    out["helper_peak_rss_mb"] = round(_peak_mb(resource.RUSAGE_CHILDREN), 0)
    print("hashing", flush=True)  # the sampler stops here: hashing is no part of the build
    out["graph_hash"] = graph_digest(sg.graph)
    out["layout_hash"] = layout_digest(sg)
    if reload:  # in a fresh process, after the sampling: its memory is the load's alone
        del sg
        done = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--mode", "load", "--folder", str(kept)],
            stdout=subprocess.PIPE, text=True, check=True,
        )  # fmt: skip
        out.update(json.loads(done.stdout.splitlines()[-1]))
        shutil.rmtree(kept.parent)


def _load_json(path: str) -> dict:
    """``StatuteGraph.from_json`` of a written graph: seconds and this process's peak memory."""
    from argus.statutes.graph import StatuteGraph

    t0 = time.perf_counter()
    sg = StatuteGraph.from_json(path)
    seconds = time.perf_counter() - t0
    assert sg.number_of_nodes() > 0
    # VmHWM, not ru_maxrss: Linux carries the latter over an exec, so a process started by the
    # building process would report that one's peak when it was larger
    return {"json_load_s": round(seconds, 2), "json_load_peak_rss_mb": round(_rss_mb("VmHWM"), 0)}


def measure(corpus: str, mode: str, graphml: bool, folder: str | None, reload: bool = False) -> dict:
    sources, t_read = _load(corpus, folder if mode == "build" else None)
    rss_before = _rss_mb()
    out = {"corpus": corpus, "mode": mode, "files": len(sources), "read_s": round(t_read, 2)}
    if mode == "plain":
        t0, c0 = time.perf_counter(), _cpu_s()
        _plain_parse(sources)
        out["seconds"] = round(time.perf_counter() - t0, 2)
        out["cpu_s"] = round(_cpu_s() - c0, 2)
        out["peak_rss_mb"] = round(_peak_mb(), 0)
        # how much two processes get done at once on this machine, against one alone
        out["two_process_speedup"] = round(2 * out["seconds"] / _two_at_once(sources), 2)
    else:
        _build(sources, out, graphml, reload)
    out["rss_growth_mb"] = round(_rss_mb() - rss_before, 0)
    return out


# --------------------------------------------------------------------------------------------
# Memory of a process tree, sampled from outside


def _tree_pids(pid: int) -> list[int]:
    pids, todo = [], [pid]
    while todo:
        p = todo.pop()
        pids.append(p)
        try:
            for task in Path(f"/proc/{p}/task").iterdir():
                todo.extend(int(c) for c in (task / "children").read_text().split())
        except OSError:
            continue
    return pids


def _pss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _run_child(corpus: str, mode: str, graphml: bool, folder: str | None, reload: bool) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--corpus", corpus, "--mode", mode]
    if graphml:
        cmd.append("--graphml")
    if reload and mode == "build":
        cmd.append("--reload")
    if folder:
        cmd += ["--folder", folder]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    peak = [0.0]
    sampling = threading.Event()
    sampling.set()

    def sample() -> None:
        while proc.poll() is None and sampling.is_set():
            peak[0] = max(peak[0], sum(_pss_mb(p) for p in _tree_pids(proc.pid)))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    lines = []
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.strip() == "hashing":
            sampling.clear()
        lines.append(line)
    if proc.wait() != 0:
        raise SystemExit(f"benchmark child failed ({corpus}, {mode})")
    sampling.clear()
    sampler.join()
    res = json.loads(lines[-1])
    res["tree_peak_pss_mb"] = round(peak[0], 0)
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", choices=["subset", "full", "both"], default="both")
    ap.add_argument("--mode", choices=["plain", "build", "load"], help=argparse.SUPPRESS)
    ap.add_argument("--repeat", type=int, default=1, help="runs per measurement (the fastest is kept)")
    ap.add_argument("--graphml", action="store_true", help="also time the GraphML write")
    ap.add_argument(
        "--reload", action="store_true", help="also time StatuteGraph.from_json of the written JSON (a fresh process)"
    )
    ap.add_argument(
        "--sources", choices=["memory", "files"], default="memory", help="the build gets the XML in memory, or as files"
    )
    ap.add_argument("--folder", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.mode == "load":  # child process: --folder is the JSON file
        print(json.dumps(_load_json(args.folder)))
        return
    if args.mode:  # child process
        print(json.dumps(measure(args.corpus, args.mode, args.graphml, args.folder, args.reload)))
        return
    corpora = ["subset", "full"] if args.corpus == "both" else [args.corpus]
    rows = []
    with tempfile.TemporaryDirectory(prefix="statutes-corpus-") as tmp:
        for corpus in corpora:
            folder = None  # with files: the unpacked archive (the subset is files already)
            if args.sources == "files":
                folder = _unpack(tmp) if corpus == "full" else "subset"
            results = {}
            for mode in ("plain", "build"):
                best = None
                for _ in range(args.repeat):
                    res = _run_child(corpus, mode, args.graphml, folder, args.reload)
                    if best is None or res["seconds"] < best["seconds"]:
                        best = res
                results[mode] = best
            build, plain = results["build"], results["plain"]
            build["sources"] = args.sources
            build["plain_lxml_s"] = plain["seconds"]
            build["ratio_build_to_plain"] = round(build["seconds"] / plain["seconds"], 2) if plain["seconds"] else None
            # what the build costs in CPU against the plain parse (no matter how many cores ran it),
            # and how much of a second core this machine gave: build ÷ plain is about their quotient
            build["cpu_ratio_build_to_plain"] = round(build["cpu_s"] / plain["cpu_s"], 2) if plain["cpu_s"] else None
            build["two_process_speedup"] = plain["two_process_speedup"]
            rows.append(build)
    import pandas as pd

    df = pd.DataFrame(rows).set_index("corpus").T
    print(df.to_markdown())


if __name__ == "__main__":
    main()
