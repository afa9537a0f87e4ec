"""Throughput: documents per minute at concurrency 1, 4, 16, 64 against an LM with a set latency.

Every stage's LM is ``openai/fake`` at a loopback ``tests.latency_server.LatencyServer``
(``structured_output: json_object_schema``, ``cache: false``) that answers each call after
``--latency`` seconds with schema-valid JSON, so the run measures the pipeline's scheduling of LM
calls — not a model. The documents are the annotated complaints (``us_complaints/train`` then
``dev`` under the shared data root, 18 in all; ``--docs N`` takes the first N).

For each concurrency N, a fresh process (``--one N``) runs ``argus.runs.batch.run_batch(paths, out,
config, concurrency=N)`` into a fresh output folder (``--via cli``: ``argus extract DOCS --out DIR
--config CFG --concurrency N`` in a further process). The fact classifier and the sentence encoder
are loaded, and one LM call is made (litellm's lazy imports and HTTP client), before the clock
starts and the server's statistics are reset (printed as warm-up; with ``--via cli`` all of it is
inside the wall time). The server is one for all runs, in this process; its statistics are reset
between runs.

Printed per N: documents (ok / failed), LM calls (from the batch's ``ledger.jsonl``; the server's
count of answered calls beside it), wall seconds, documents per minute, the most requests the
server had in flight at once, the limit and the percentage of it reached, peak RSS and threads of
the batch process; and the seconds each stage took, summed over the documents (``stages`` of the
EKGs: the fact gate is mostly CPU — the classifier's encoder — the others mostly LM calls), beside
the seconds spent inside LM calls as the client saw them (``latency_s`` of the ledger entries).

The limit is a lower bound on the wall time of any schedule that sends these calls:
``max(critical path × L, calls × L / N)`` with L = latency (+ half the jitter), calls = the calls the
server answered, and the critical path = the most sequential rounds of LM calls any one document
needs. Per document (from its ledger entries and its EKG):

- fact gate: 1 round if it made calls (its batches run in parallel), plus the calls beyond the
  number of batches (ceil(narrative sentences decided by the LLM / facts.batch_size));
- chunker: one round per call (a call and its retries are sequential);
- extraction: the chunks run in parallel, each Stage 1 then Stage 2 with their retries in
  sequence: the most ``attempts`` (stage1 + stage2) of any one chunk (``minigraphs[].attempts``);
- resolver: 1 round if it made calls (its pairs run in parallel; the resolver has no validator,
  and the server's answers always parse, so no pair is retried).

A document without an EKG (failed) counts its distinct stages with calls, plus Stage 1 / Stage 2
calls beyond one per stage. CPU work (preprocessing, the fact classifier, the encoder, merging)
is not in the limit: the gap to 100 % is that work plus scheduling overhead.

The LM is not a local model: no ``local/`` engine (the embedded SmolLM2 GGUF) is started, so the
peak RSS is the pipeline's own (Python, DSPy, litellm, torch with the MiniLM sentence encoder, the
threads), in a fresh process per N.

    python bench/throughput.py [--latency 2.0] [--jitter 0] [--docs 18] [--concurrency 1,4,16,64] [--via api|cli]
    python bench/throughput.py --docs 3 --latency 0.2 --concurrency 1,4      # a quick check
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter, defaultdict
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
if str(PROJECT) not in sys.path:
    sys.path.insert(0, str(PROJECT))


# ----------------------------------------------------------------------------- shared


def annotated_documents(limit: int | None = None) -> list[Path]:
    """``complaint.txt`` of the annotated complaints, train then dev (each split in name order)."""
    from argus.runs.evaluation import find_gold_documents
    from argus.paths import complaints_dir

    splits = [complaints_dir(s) for s in ("train", "dev") if complaints_dir(s).is_dir()]
    if not splits:
        raise SystemExit(f"no annotated complaints under {complaints_dir('train').parent} (set ARGUS_DATA_ROOT)")
    docs = [d / "complaint.txt" for d in find_gold_documents(splits)]
    return docs[:limit] if limit else docs


def bench_config(url: str, n: int, cache_dir: Path) -> dict:
    """The configuration of one run: every stage's LM at the server, no DSPy cache."""
    return {
        "lm": {"default": {"model": "openai/fake", "api_base": url, "structured_output": "json_object_schema",
                           "cache": False}},
        "concurrency": {"max_in_flight": n},
        "cache_dir": str(cache_dir),
    }


def _vm_status(field: str, pid: str = "self") -> int | None:
    """A ``/proc/<pid>/status`` field in KiB (VmHWM, VmRSS), where Linux provides it."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


class Sampler:
    """Samples this process's thread count (and RSS) every ``interval`` seconds."""

    def __init__(self, interval: float = 0.1):
        self.interval = interval
        self.threads_peak = threading.active_count()
        self.rss_peak_kib = _vm_status("VmRSS") or 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.wait(self.interval):
            self.threads_peak = max(self.threads_peak, threading.active_count())
            self.rss_peak_kib = max(self.rss_peak_kib, _vm_status("VmRSS") or 0)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


# ----------------------------------------------------------------------------- the critical path


def document_rounds(entries: list[dict], ekg: dict | None, batch_size: int) -> int:
    """Sequential rounds of LM calls one document needs (see the module docstring)."""
    calls = Counter(e["stage"] for e in entries)
    rounds = 0
    if ekg is None:  # a failed document: what the ledger alone tells
        rounds += sum(1 for c in calls.values() if c)
        rounds += max(0, calls["stage1"] - 1) + max(0, calls["stage2"] - 1)
        return rounds
    if calls["fact_fallback"]:
        decided = sum(1 for s in ekg["sentences"] if s.get("in_narrative") and s.get("fact_path") == "llm")
        batches = max(1, math.ceil(decided / batch_size))
        rounds += 1 + max(0, calls["fact_fallback"] - batches)
    rounds += calls["chunker"]
    attempts = [sum(mg.get("attempts", {}).get(s, 0) for s in ("stage1", "stage2")) for mg in ekg.get("minigraphs", [])]
    rounds += max(attempts, default=0)
    if calls["resolver"]:
        rounds += 1
    return rounds


def analyse_outputs(out: Path, batch_size: int) -> dict:
    """Calls per stage and rounds per document from a batch's ``ledger.jsonl`` and EKG files."""
    entries: list[dict] = []
    ledger = out / "ledger.jsonl"
    if ledger.exists():
        for line in ledger.read_text(encoding="utf-8").splitlines():
            if line.strip():
                try:
                    entries.append(json.loads(line))
                except ValueError:
                    continue
    by_doc: dict[str, list[dict]] = defaultdict(list)
    for e in entries:
        by_doc[e.get("doc_id") or "?"].append(e)
    ekgs = {}
    for f in out.glob("*.ekg.json"):
        data = json.loads(f.read_text(encoding="utf-8"))
        ekgs[data["doc_id"]] = data
    rounds = {doc: document_rounds(es, ekgs.get(doc), batch_size) for doc, es in by_doc.items()}
    stage_seconds: Counter = Counter()
    for data in ekgs.values():
        for st in data.get("stages", []):
            stage_seconds[st["stage"]] += st["seconds"]
    for doc in ekgs:  # a document without LM calls
        rounds.setdefault(doc, 0)
    errors = []
    if (out / "errors.jsonl").exists():
        errors = [json.loads(x) for x in (out / "errors.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()]
    return {
        "ledger_calls": len(entries),
        "calls_by_stage": dict(Counter(e["stage"] for e in entries)),
        "rounds": rounds,
        "stage_seconds": {k: round(v, 1) for k, v in stage_seconds.items()},
        "lm_seconds": round(sum(float(e.get("latency_s") or 0) for e in entries), 1),
        "critical_rounds": max(rounds.values(), default=0),
        "ok": len(ekgs),
        "failed": len(errors),
        "errors": [f"{e.get('doc_id') or e.get('source')}: {e.get('error')}: {str(e.get('message'))[:200]}" for e in errors[:5]],
    }


# ----------------------------------------------------------------------------- one run (child process)


def run_one(args) -> dict:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    n = args.one
    out = Path(args.out)
    work = out.parent / f"{out.name}.work"
    work.mkdir(parents=True, exist_ok=True)
    paths = annotated_documents(args.docs)
    cfg_data = bench_config(args.url, n, work / "cache")

    import yaml

    from argus.config import ArgusConfig

    config = ArgusConfig(**cfg_data)
    result: dict = {"n": n, "docs": len(paths), "via": args.via}
    if args.via == "cli":
        cfg_file = work / "config.yaml"
        cfg_file.write_text(yaml.safe_dump(cfg_data), encoding="utf-8")
        cmd = [sys.executable, "-m", "argus.cli", "extract", *map(str, paths), "--out", str(out),
               "--config", str(cfg_file), "--concurrency", str(n)]
        with open(work / "extract.log", "w") as log, Sampler():
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=PROJECT)
            wall = time.perf_counter() - t0
        result.update(returncode=proc.returncode, warmup_s=None, wall_s=wall,
                      rss_peak_kib=resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, vmhwm_kib=None,
                      threads_peak=None)
    else:
        from rich.console import Console

        from argus.runs.batch import run_batch
        from argus.models.embeddings import load_encoder
        from argus.pipeline import ArgusPipeline

        t0 = time.perf_counter()
        pipe = ArgusPipeline(config)
        pipe.classifier  # noqa: B018  (loads the fact classifier)
        load_encoder(config.merge.embedding_model)
        pipe.lm("stage1")("warm-up")  # litellm's first call (lazy imports, HTTP client) outside the clock
        base = args.url[: -len("/v1")] if args.url.endswith("/v1") else args.url
        urllib.request.urlopen(urllib.request.Request(f"{base}/stats/reset", data=b"", method="POST"), timeout=30).read()
        warmup = time.perf_counter() - t0
        with Sampler() as sampler:
            t0 = time.perf_counter()
            report = run_batch(paths, out, config, pipeline=pipe, concurrency=n, console=Console(quiet=True))
            wall = time.perf_counter() - t0
        result.update(returncode=0, warmup_s=warmup, wall_s=wall,
                      rss_peak_kib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                      vmhwm_kib=_vm_status("VmHWM"), threads_peak=sampler.threads_peak,
                      rows=len(report.rows))
    result.update(analyse_outputs(out, config.facts.batch_size))
    return result


# ----------------------------------------------------------------------------- the table (parent)


def summarise(r: dict, stats, latency: float) -> dict:
    n = r["n"]
    calls = stats.answered
    limit_s = max(r["critical_rounds"] * latency, calls * latency / n) if calls else 0.0
    docs = r["ok"] + r["failed"]
    return {
        "N": n,
        "docs": f"{r['ok']}/{docs}" if r["failed"] else str(docs),
        "LM calls": r["ledger_calls"],
        "server answered": calls,
        "wall s": round(r["wall_s"], 2),
        "docs/min": round(docs / r["wall_s"] * 60, 2) if r["wall_s"] else 0.0,
        "server max in flight": stats.max_in_flight,
        "critical rounds": r["critical_rounds"],
        "limit s": round(limit_s, 2),
        "limit docs/min": round(docs / limit_s * 60, 2) if limit_s else None,
        "% of limit": round(100 * limit_s / r["wall_s"], 1) if r["wall_s"] else None,
        "peak RSS MiB": round(r["rss_peak_kib"] / 1024, 1) if r.get("rss_peak_kib") else None,
        "threads peak": r.get("threads_peak"),
        "429/500": f"{stats.sent_429}/{stats.sent_500}",
    }


def markdown(rows: list[dict]) -> str:
    cols = list(rows[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---:" for _ in cols) + "|"]
    for r in rows:
        lines.append("| " + " | ".join("" if r[c] is None else str(r[c]) for c in cols) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--latency", type=float, default=2.0, help="seconds per LM call (default 2.0)")
    ap.add_argument("--jitter", type=float, default=0.0, help="plus uniform [0, J] seconds per call")
    ap.add_argument("--docs", type=int, default=None, help="the first N annotated complaints (default: all 18)")
    ap.add_argument("--concurrency", default="1,4,16,64", help="comma-separated values of N")
    ap.add_argument("--via", choices=("api", "cli"), default="api",
                    help="api: run_batch(..., concurrency=N); cli: argus extract --concurrency N")
    ap.add_argument("--keep", type=Path, default=None, help="keep the outputs in this folder (default: a temp folder)")
    ap.add_argument("--json", type=Path, default=None, help="also write the results as JSON here")
    # internal: one run in a fresh process
    ap.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--url", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--out", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--result", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.one is not None:
        result = run_one(args)
        Path(args.result).write_text(json.dumps(result), encoding="utf-8")
        return

    from tests.latency_server import LatencyServer

    levels = [int(x) for x in args.concurrency.split(",") if x.strip()]
    paths = annotated_documents(args.docs)
    root = args.keep or Path(tempfile.mkdtemp(prefix="argus-throughput-"))
    root.mkdir(parents=True, exist_ok=True)
    latency = args.latency + args.jitter / 2
    print(f"throughput: {len(paths)} documents, latency {args.latency:g} s"
          f"{f' + jitter [0, {args.jitter:g}] s' if args.jitter else ''}, concurrency {levels}, via {args.via}; "
          f"outputs under {root}", flush=True)
    rows, raw = [], []
    with LatencyServer(latency_s=args.latency, jitter_s=args.jitter, seed=0) as server:
        for n in levels:
            server.reset_stats()
            out = root / f"n{n}"
            result_file = root / f"n{n}.json"
            cmd = [sys.executable, str(Path(__file__).resolve()), "--one", str(n), "--url", server.url, "--out", str(out),
                   "--result", str(result_file), "--via", args.via, "--latency", str(args.latency)]
            if args.docs:
                cmd += ["--docs", str(args.docs)]
            with open(root / f"n{n}.log", "w") as log:
                proc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=PROJECT)
            if proc.returncode != 0 or not result_file.exists():
                tail = (root / f"n{n}.log").read_text(errors="replace")[-2000:]
                print(f"N={n}: the run failed (exit {proc.returncode}); log tail:\n{tail}", flush=True)
                continue
            r = json.loads(result_file.read_text())
            stats = server.stats()
            row = summarise(r, stats, latency)
            rows.append(row)
            raw.append({**r, "server": stats.to_dict(requests=False)})
            warm = f", warm-up {r['warmup_s']:.1f} s (not timed)" if r.get("warmup_s") is not None else ""
            print(f"N={n:>3}: {row['docs']} docs, {row['LM calls']} LM calls (server answered {row['server answered']}), "
                  f"wall {row['wall s']} s, {row['docs/min']} docs/min, server max in flight {row['server max in flight']}, "
                  f"limit {row['limit s']} s (critical path {row['critical rounds']} rounds), "
                  f"{row['% of limit']} % of limit, peak RSS {row['peak RSS MiB']} MiB{warm}; "
                  f"calls by stage {r['calls_by_stage']}; seconds by stage, summed over documents "
                  f"{r['stage_seconds']} (of which in LM calls, client side: {r['lm_seconds']})", flush=True)
            for e in r.get("errors", []):
                print(f"       failed: {e}", flush=True)
    if not rows:
        raise SystemExit("no run completed")
    top = raw[-1]
    print()
    print(f"peak RSS at N={top['n']}: ru_maxrss {top['rss_peak_kib'] / 1024:.1f} MiB"
          + (f", VmHWM {top['vmhwm_kib'] / 1024:.1f} MiB" if top.get("vmhwm_kib") else "")
          + (f", threads peak {top['threads_peak']}" if top.get("threads_peak") else "")
          + " — a fresh process per N; no local/ model: the embedded GGUF engine is not loaded "
            "(the MiniLM sentence encoder of the fact gate and the merge is)")
    print()
    print(markdown(rows))
    if args.json:
        args.json.write_text(json.dumps(raw, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
