"""Soak: N distinct complaints (default 1,000) in one ``argus extract`` run, SIGTERM'd and resumed; nothing lost or doubled.

The complaints are ``bench/corpus_maker.py``'s (names, dates and numbers of the 18 annotated ones
varied, deterministic per ``--seed``; checked distinct, so no cache serves one). The run is the real
CLI in a child process, ``python -m argus.cli extract DOCS/ --out OUT --cache-dir CACHE`` (the
offline default, GraphML written; ``--engine ray`` adds ``--engine ray --actors A``):

1. **SIGTERM** at a seeded random point: once the output folder holds a number of EKGs drawn from
   5–15 % of N, after a further 0–2 s (so that it lands inside a document). The run must exit 143
   ("rerun with --skip-existing"); it is timed from the signal to its exit.
2. **Resume**: the same command with ``--skip-existing``, uninterrupted but for, with
   ``--engine ray``, one pipeline actor **SIGKILL**ed at a seeded random point (once the resumed run
   has written 20–50 % of what it has to do; the actor is a descendant of the extract process
   whose command line names ``PipelineActor``). The run must exit 0.
3. **Checks**, each printed in the summary table; the exit status is 1 if any fails:
   every complaint has exactly one EKG in OUT (0 lost, 0 that are not the corpus's); no EKG was
   written twice, counted by inotify (``IN_MOVED_TO`` on OUT: argus writes every output to a
   temporary file and ``os.replace``s it, so each rename onto ``X.ekg.json`` is one write of that
   EKG, by either run); every EKG parses and validates (``DocumentEKG.model_validate_json``) with its
   file's document id and source, and every GraphML parses as XML; no temporary file (``.*.tmp``),
   claim (``*.claim``) or ``errors.jsonl`` is left in OUT (after the SIGTERM as well as at the end);
   the resumed run skipped exactly the EKGs that were there; no process of the runs is left
   running (the Ray runtime is stopped); the resident memory is flat (below).

   The run's record per document is ``summary.csv``: it must hold one row per complaint, none twice,
   after the resume (a resumed run keeps the earlier run's rows). The ledger (``ledger.jsonl``) has
   one line per *language-model call* (``argus.models.ledger``), not per document, and the offline
   default makes none (its heads decide alone), so there is no ledger; its line count is printed. A resumed run appends
   nothing for the documents it skips (``BatchWriter.write`` returns before the ledger for them).
4. **Memory**: the RSS of the extract process (with Ray: of it and all its descendants, the
   runtime and the actors) is sampled every 0.5 s together with the EKGs in OUT. The SIGTERM ends
   one process and the resume starts another (and a SIGKILLed actor is replaced by a fresh one), so
   flatness is measured on the last uninterrupted segment: from the resume (Ray: from the actor's
   kill) to the end. The samples taken while the EKGs in OUT went from D − w to D make "RSS at
   document D", with w = 18, the number of source complaints (each window holds every source's
   variant once, so both see the same mix of document sizes); printed as their 10th percentile
   (the floor), median and maximum. The check is on the floor: with 8 complaints in flight (the
   default ``concurrency.documents``; with Ray, 8 per actor) the RSS swings by ±300 MiB with which
   complaints and stages happen to coincide, and with the machine's load, which stretches the time
   each spends in its stage, so the median and the peak move without any growth; memory kept from
   one document to the next raises the floor. The samples count from when the segment has written
   as many EKGs as there are complaints in flight (before, it loads its models and fills up); the
   points: D₁ = that + max(N/10, w) documents, D₂ = N − the complaints in flight (the last ones
   drain the batch: fewer in flight, less memory, which would flatter D₂). The check: floor(D₂) /
   floor(D₁) ≤ 1 + ``--rss-tolerance`` (default 0.10). The SIGTERM falls early (5–15 %) so that this
   segment spans most of the run (at N = 1,000: from about document 210 to 992). With a small N the two windows overlap (D₂ − D₁ < w)
   and the check would say little: the ratio is then printed and not judged; it is the long soak's.

Prints the figures as it goes, then the summary table, and ``SOAK docs=… ekgs=… lost=… twice=… ok=…``.

    python bench/soak.py [--docs 1000] [--seed 0] [--engine local|ray] [--actors 2] [--keep DIR]
    python bench/soak.py --docs 50                  # what tests/test_soak.py runs (about 3 minutes on 2 cores)
    python bench/soak.py --docs 100 --engine ray    # SIGTERM + resume + one actor SIGKILLed
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import sys
import time
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

sys.path[:0] = [p for p in (str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent))
                if p not in sys.path]

from argus.config import ArgusConfig  # noqa: E402
from corpus_maker import annotated_sources, check_corpus, make_corpus  # noqa: E402
from extract_watch import (ExtractRun, MoveCounter, cmdline, descendants, extract_command, wait_until,  # noqa: E402
                           work_folder)  # noqa: E402

ACTOR_MARK = "PipelineActor"


class Checks:
    def __init__(self):
        self.rows: list[tuple[str, str, bool | None]] = []

    def add(self, name: str, value, ok: bool | None = True) -> bool:
        """A row of the table; ``ok`` None: a figure, not a check."""
        self.rows.append((name, str(value), ok))
        mark = "" if ok is None else ("ok" if ok else "FAILED")
        print(f"  {name}: {value} {mark}".rstrip(), flush=True)
        return bool(ok) or ok is None

    @property
    def failed(self) -> list[str]:
        return [n for n, _, ok in self.rows if ok is False]

    def markdown(self) -> str:
        lines = ["| check | value | |", "|---|---:|:---:|"]
        for n, v, ok in self.rows:
            lines.append(f"| {n} | {v} | {'' if ok is None else ('ok' if ok else '**FAILED**')} |")
        return "\n".join(lines)


def leftovers_in(out: Path) -> dict[str, list[str]]:
    files = [p.name for p in out.iterdir()] if out.exists() else []
    return {"temporary": sorted(f for f in files if f.endswith(".tmp")),
            "claims": sorted(f for f in files if f.endswith(".claim")),
            "errors.jsonl": [f for f in files if f == "errors.jsonl"]}


def rss_at(samples, done: int, width: int, key: str, after: float = 0.0, warm: int = 0) -> dict | None:
    """10th percentile ("floor"), median and maximum of ``key`` (KiB) sampled (after ``after``
    seconds of the run, once ``warm`` EKGs were in OUT) while the EKGs went from ``done - width`` to ``done``."""
    vals = sorted(getattr(s, key) for s in samples
                  if max(done - width, warm) <= s.done <= done and s.t >= after and getattr(s, key))
    if not vals:
        return None
    return {"floor": vals[len(vals) // 10], "median": vals[len(vals) // 2], "max": vals[-1], "samples": len(vals)}


def actor_pids(pid: int) -> list[int]:
    return sorted(p for p in descendants(pid) if ACTOR_MARK in cmdline(p))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=int, default=1000, help="complaints (default 1000)")
    ap.add_argument("--seed", type=int, default=0, help="seeds the corpus and the points of the faults (default 0)")
    ap.add_argument("--engine", choices=("local", "ray"), default="local")
    ap.add_argument("--actors", type=int, default=2, help="with --engine ray: pipeline actors (default 2)")
    ap.add_argument("--rss-tolerance", type=float, default=0.10,
                    help="the most RSS may grow from D1 to D2, as a fraction (default 0.10)")
    ap.add_argument("--timeout", type=float, default=None,
                    help="seconds a run may take before it counts as hung (default 300 + 60 per complaint)")
    ap.add_argument("--keep", type=Path, default=None, help="keep corpus, outputs and logs here (default: a temp folder, removed)")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures and the RSS samples as JSON here")
    args = ap.parse_args(argv)
    if args.docs < 10:
        ap.error("--docs must be at least 10")
    with work_folder(args.keep, "argus-soak-") as root:
        return soak(args, root)


def soak(args, root: Path) -> int:
    n = args.docs
    rng = random.Random(f"soak:{args.seed}")
    timeout = args.timeout or 300 + 60 * n
    docs_dir, out, cache, logs = root / "docs", root / "out", root / "cache", root / "logs"
    for d in (docs_dir, out, cache, logs):
        shutil.rmtree(d, ignore_errors=True)
    checks = Checks()
    t_all = time.perf_counter()

    sources = annotated_sources()
    paths = make_corpus(n, docs_dir, args.seed, sources)
    corpus = check_corpus(paths, sources)
    print(f"soak: {n} complaints (seed {args.seed}, engine {args.engine}"
          f"{f', {args.actors} actors' if args.engine == 'ray' else ''}) under {root}", flush=True)
    checks.add("complaints (distinct texts / sentence lists)",
               f"{corpus['distinct_texts']} / {corpus['distinct_sentence_lists']}",
               corpus["distinct_texts"] == corpus["distinct_sentence_lists"] == n)
    ids = {p.stem for p in paths}
    actors = args.actors if args.engine == "ray" else None
    moves = MoveCounter(out).start()

    # 1. the run, SIGTERM'd at a random point
    kill_at = rng.randint(max(1, n * 5 // 100), max(1, n * 15 // 100))
    delay = rng.uniform(0.0, 2.0)
    first = ExtractRun(extract_command([docs_dir], out, cache, engine=args.engine, actors=actors),
                       out, logs, "run1").start()
    print(f"run 1 (pid {first.pid}): SIGTERM once {kill_at} EKGs are written, + {delay:.2f} s", flush=True)
    reached = wait_until(lambda: first.done() >= kill_at or first.proc.poll() is not None, timeout)
    if reached and first.proc.poll() is None:
        time.sleep(delay)
        t_sig = time.perf_counter()
        first.signal(signal.SIGTERM)
        rc1 = first.wait(timeout=120)
        stop_s = time.perf_counter() - t_sig
    else:
        rc1 = first.wait(timeout=5)
        stop_s = float("nan")
    at_kill = first.done()
    checks.add("run 1: exit status after SIGTERM", f"{rc1} ({stop_s:.1f} s after the signal, {at_kill} EKGs)",
               rc1 == 143 and "SIGTERM" in first.stderr_tail())
    left = leftovers_in(out)
    checks.add("run 1: temporary / claim files left after SIGTERM",
               f"{len(left['temporary'])} / {len(left['claims'])}", not left["temporary"] and not left["claims"])
    lingering = first.kill_leftovers()
    checks.add("run 1: processes left running", len(lingering) if not lingering else
               f"{len(lingering)}: {sorted(set(v[:60] for v in lingering.values()))}", not lingering)

    # 2. the resume (Ray: one actor SIGKILLed on the way)
    resume = ExtractRun(extract_command([docs_dir], out, cache, engine=args.engine, actors=actors, skip_existing=True),
                        out, logs, "run2").start()
    segment_start, segment_t = at_kill, 0.0
    killed = None
    if args.engine == "ray":
        todo = n - at_kill
        sigkill_at = at_kill + rng.randint(max(1, todo * 20 // 100), max(1, todo * 50 // 100))
        print(f"run 2 (pid {resume.pid}, --skip-existing): SIGKILL a pipeline actor once {sigkill_at} EKGs are written",
              flush=True)
        if wait_until(lambda: resume.done() >= sigkill_at or resume.proc.poll() is not None, timeout):
            pids = actor_pids(resume.pid)
            if pids and resume.proc.poll() is None:
                killed = rng.choice(pids)
                segment_start = resume.done()
                os.kill(killed, signal.SIGKILL)
                segment_t = time.perf_counter() - resume._t0
                print(f"  SIGKILL {killed} ({cmdline(killed)[:80] or 'gone'}) at {segment_start} EKGs; actors were {pids}",
                      flush=True)
            else:
                print("  no pipeline actor found among the run's processes:\n    "
                      + "\n    ".join(sorted({cmdline(p)[:100] for p in descendants(resume.pid)})), flush=True)
        checks.add("run 2: a pipeline actor SIGKILLed", f"pid {killed} at {segment_start} EKGs" if killed else "none found",
                   killed is not None)
    else:
        print(f"run 2 (pid {resume.pid}, --skip-existing): to the end", flush=True)
    rc2 = resume.wait(timeout=timeout)
    checks.add("run 2: exit status", f"{rc2} ({resume.wall_s:.0f} s)", rc2 == 0)
    lingering = resume.kill_leftovers()
    checks.add("run 2: processes left running", len(lingering) if not lingering else
               f"{len(lingering)}: {sorted(set(v[:60] for v in lingering.values()))}", not lingering)
    skipped = len(re.findall(r": exists, skipped", (logs / "run2.err").read_text(errors="replace")))
    checks.add("run 2: skipped as existing (= EKGs after run 1)", f"{skipped} (of {at_kill})", skipped == at_kill)
    written = moves.stop()

    # 3. the output folder
    ekgs = {p.name[: -len(".ekg.json")]: p for p in out.glob("*.ekg.json")}
    lost = sorted(ids - set(ekgs))
    strange = sorted(set(ekgs) - ids)
    twice = sorted(k for k, v in written.items() if k.endswith(".ekg.json") and v > 1)
    unseen = sorted(k for k in ekgs if written.get(f"{k}.ekg.json", 0) == 0)
    graphml_rewrites = sum(1 for k, v in written.items() if k.endswith(".graphml") and v > 1)
    checks.add("EKGs in OUT", f"{len(ekgs)} of {n}", len(ekgs) == n and not strange)
    checks.add("lost (no EKG)", len(lost) if not lost else f"{len(lost)}: {lost[:5]}", not lost)
    checks.add("written twice (inotify renames onto X.ekg.json)",
               len(twice) if not twice else f"{len(twice)}: {twice[:5]}", not twice and not moves.overflowed)
    checks.add("EKGs whose write inotify did not see", len(unseen), not unseen)
    checks.add("GraphML written twice (its EKG was not yet: the SIGTERM fell between)", graphml_rewrites, None)
    bad = []
    for doc_id, p in sorted(ekgs.items()):
        from argus.graph.schema import DocumentEKG

        try:
            ekg = DocumentEKG.model_validate_json(p.read_text(encoding="utf-8"))
            if ekg.doc_id != doc_id or Path(ekg.source).name != f"{doc_id}.txt":
                bad.append(f"{p.name}: doc_id {ekg.doc_id!r}, source {ekg.source!r}")
        except Exception as exc:  # noqa: BLE001 - any failure is the finding
            bad.append(f"{p.name}: {type(exc).__name__}: {str(exc)[:200]}")
        g = out / f"{doc_id}.graphml"
        try:
            ET.parse(g)
        except (ET.ParseError, OSError) as exc:
            bad.append(f"{g.name}: {exc}")
    checks.add("EKGs that do not validate / GraphML that does not parse", len(bad) if not bad else f"{len(bad)}: {bad[:3]}",
               not bad)
    left = leftovers_in(out)
    checks.add("temporary / claim files / errors.jsonl left at the end",
               f"{len(left['temporary'])} / {len(left['claims'])} / {len(left['errors.jsonl'])}",
               not any(left.values()))
    import csv

    try:
        summary = [r["doc_id"] for r in csv.DictReader((out / "summary.csv").open(newline="", encoding="utf-8"))]
    except (OSError, KeyError, csv.Error):
        summary = []
    doubled = sorted(k for k, v in Counter(summary).items() if v > 1)
    checks.add("summary.csv: one row per complaint (rows, missing, doubled)",
               f"{len(summary)}, {len(ids - set(summary))}, {len(doubled)}",
               len(summary) == n and set(summary) == ids and not doubled)
    ledger = out / "ledger.jsonl"
    ledger_lines = sum(1 for line in ledger.read_text().splitlines() if line.strip()) if ledger.exists() else 0
    checks.add("ledger.jsonl lines (one per LM call; the offline default makes none)",
               ledger_lines if ledger.exists() else "0 (no file)", None)

    # 4. memory on the last uninterrupted segment
    width = len(sources)
    in_flight = ArgusConfig().concurrency.documents * (actors or 1)
    warm = min(n, segment_start + in_flight)  # the segment's first complaints: loading, filling up
    d2 = max(warm, n - in_flight)
    d1 = min(d2, warm + max(n // 10, width))
    key = "tree_kib" if args.engine == "ray" else "rss_kib"
    r1, r2 = (rss_at(resume.samples, d, width, key, segment_t, warm) for d in (d1, d2))
    what = "extract process + descendants" if args.engine == "ray" else "extract process"
    ratio = float("nan")
    if r1 and r2:
        ratio = r2["floor"] / r1["floor"]
        for k in ("median", "max"):
            checks.add(f"RSS {k} ({what}) at document {d1} → {d2}",
                       f"{r1[k] / 1024:.0f} → {r2[k] / 1024:.0f} MiB (× {r2[k] / r1[k]:.3f})", None)
        apart = d2 - d1 >= width  # with a small N the two windows overlap: the ratio is printed, not judged
        checks.add(f"RSS floor, 10th percentile ({what}) at document {d1} → {d2}",
                   f"{r1['floor'] / 1024:.0f} → {r2['floor'] / 1024:.0f} MiB (× {ratio:.3f})"
                   + ("" if apart else f"; windows overlap ({d2 - d1} < {width} complaints apart): not judged"),
                   ratio <= 1 + args.rss_tolerance if apart else None)
    else:
        checks.add(f"RSS ({what}) at document {d1} → {d2}", "not sampled", False)
    checks.add("peak RSS, run 1 / run 2 (ru_maxrss of the extract process)",
               f"{first.maxrss_kib / 1024:.0f} / {resume.maxrss_kib / 1024:.0f} MiB", None)
    if args.engine == "ray":
        checks.add("peak RSS of the process tree, run 1 / run 2",
                   f"{first.peak_tree_kib() / 1024:.0f} / {resume.peak_tree_kib() / 1024:.0f} MiB", None)
    per_doc = resume.wall_s / max(1, n - at_kill)
    checks.add("run 2: seconds per complaint (its wall / its complaints, start-up included)", f"{per_doc:.2f}", None)
    checks.add("soak wall", f"{time.perf_counter() - t_all:.0f} s", None)

    print()
    print(checks.markdown())
    ok = not checks.failed
    print(f"\nSOAK docs={n} ekgs={len(ekgs)} lost={len(lost)} twice={len(twice)} invalid={len(bad)} "
          f"leftover={sum(map(len, left.values()))} rss_ratio={ratio:.3f} "
          f"ok={'yes' if ok else 'no'}" + ("" if ok else f" failed={'; '.join(checks.failed)}"))
    if args.json:
        args.json.write_text(json.dumps({
            "checks": checks.rows, "kill_at": kill_at, "segment_start": segment_start, "segment_t": segment_t,
            "killed_actor": killed,
            "samples": {r.name: [s.__dict__ for s in r.samples] for r in (first, resume)},
        }, indent=1), encoding="utf-8")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
