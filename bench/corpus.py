"""Corpus benchmark: ``argus extract`` (the offline default) over N distinct complaints, no cache.

The complaints are made by ``bench/corpus_maker.py`` from the 18 annotated ones (names, dates and
numbers varied, deterministic per ``--seed`` and index); before anything runs, the corpus is checked:
every text distinct, every complaint's sentence list (and FACTS sentence list) different from its
source's and from every other's, so that neither the encoder's embedding store nor its in-memory
``_RECENT`` (keyed by the exact list of sentences) can serve one. Every run below is the real CLI,
``python -m argus.cli extract … --cache-dir <fresh folder>``, in a child process of this one
(``bench/extract_watch.py``), the default design and models, GraphML written.

Printed, per engine configuration (``--engine local``: one; ``--engine ray``: ``--actors 1`` and
``--actors 2``, the same figures for each):

- **cold start s**: wall seconds of ``argus extract ONE.txt`` from a fresh process (a complaint of
  the same making that is not in the corpus; a fresh output and cache folder): interpreter start,
  imports, model loads and one complaint. The OS page cache is warm (the files were read before).
- **complaints/min**: N / wall of the corpus run, start-up included; **steady complaints/min**:
  60 / the seconds per complaint below.
- **s/complaint**: seconds per complaint after start-up, by differencing the two runs: (wall of the
  N-complaint run − wall of the one-complaint run) / (N − 1); both runs pay the same start-up once,
  so it cancels, and what is left is N − 1 complaints' worth of batch time. **start-up s** = cold
  start − s/complaint. (The time to the first EKG, also printed, does not measure start-up: the local
  engine runs up to ``concurrency.documents`` (8) complaints at once and the Ray actors as many each,
  so the first EKG comes after several complaints' work, and the rest in waves.)
- **peak RSS MiB**: ``ru_maxrss`` of the extract process (``os.wait4`` on it), and **tree MiB**, the
  highest sum of the RSS of it and all its descendants sampled every 0.5 s (with Ray: the runtime
  and the pipeline actors).
- **plain pass s/complaint**: in this process, after the runs (nothing else of ours running),
  ``SentenceTransformer`` all-MiniLM-L6-v2 from the embedded package
  (``argus.models.embeddings.load_encoder("embedded")``), ``encoder.encode(sentences, batch_size=32)``
  per complaint over every sentence of it as the pipeline splits it (``argus.text.preprocess`` with
  the configured segmenter), after one warm-up call; the mean over the N complaints.
  **× plain**: s/complaint ÷ plain pass s/complaint — how many plain encoder passes one complaint's
  extraction costs. The runs and the plain pass follow each other on the same cores; each phase
  prints the machine's load averages, since another process's load changes both.

    python bench/corpus.py [--docs 100] [--seed 0] [--engine local|ray] [--keep DIR]
    python bench/corpus.py --docs 20 --engine ray --keep /tmp/corpus-ray       # a quick check
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

sys.path[:0] = [p for p in (str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent))
                if p not in sys.path]

from corpus_maker import annotated_sources, check_corpus, corpus_name, make_corpus, vary  # noqa: E402
from extract_watch import ExtractRun, extract_command, work_folder  # noqa: E402


def ekg_times(out: Path) -> list[float]:
    return sorted(p.stat().st_mtime for p in out.glob("*.ekg.json"))


def run_extract(name: str, inputs, root: Path, *, engine: str, actors: int | None, expect: int) -> ExtractRun:
    out, cache = root / f"out-{name}", root / f"cache-{name}"
    for d in (out, cache):
        shutil.rmtree(d, ignore_errors=True)
    run = ExtractRun(extract_command(inputs, out, cache, engine=engine, actors=actors), out, root / "logs", name).start()
    rc = run.wait()
    run.kill_leftovers()
    written = len(list(out.glob("*.ekg.json")))
    if rc != 0 or written != expect:
        raise SystemExit(f"{name}: argus extract exited {rc} with {written} of {expect} EKG(s); "
                         f"stderr tail:\n{run.stderr_tail()}")
    return run


def plain_pass(sentences: list[list[str]], batch_size: int = 32) -> list[float]:
    """Seconds of ``encoder.encode(s, batch_size)`` for each list, after a warm-up call."""
    from argus.models.embeddings import load_encoder

    encoder = load_encoder("embedded")
    encoder.encode(sentences[0][:batch_size], batch_size=batch_size, show_progress_bar=False)
    times = []
    for s in sentences:
        t0 = time.perf_counter()
        encoder.encode(s, batch_size=batch_size, show_progress_bar=False)
        times.append(time.perf_counter() - t0)
    return times


def _load() -> str:
    """The machine's load averages (1, 5, 15 min): the figures are wall times on shared cores."""
    return "load " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def markdown(rows: list[dict]) -> str:
    cols = list(rows[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---:" for _ in cols) + "|"]
    for r in rows:
        lines.append("| " + " | ".join("" if r[c] is None else str(r[c]) for c in cols) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=int, default=100, help="complaints in the corpus (default 100)")
    ap.add_argument("--seed", type=int, default=0, help="the corpus generator's seed (default 0)")
    ap.add_argument("--engine", choices=("local", "ray"), default="local",
                    help="local: one run; ray: --actors 1 and --actors 2")
    ap.add_argument("--actors", default="1,2", help="with --engine ray: the actor counts (default 1,2)")
    ap.add_argument("--keep", type=Path, default=None, help="keep corpus, outputs and logs here (default: a temp folder, removed)")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures as JSON here")
    args = ap.parse_args(argv)
    if args.docs < 2:
        ap.error("--docs must be at least 2")

    with work_folder(args.keep, "argus-corpus-") as root:
        return _main(args, root)


def _main(args, root: Path) -> int:
    sources = annotated_sources()
    docs_dir = root / "docs"
    shutil.rmtree(docs_dir, ignore_errors=True)
    t0 = time.perf_counter()
    paths = make_corpus(args.docs, docs_dir, args.seed, sources)
    cold_src = sources[args.docs % len(sources)]  # complaint N: of the same making, not in the corpus
    cold_doc = root / "cold" / f"{corpus_name(args.docs, cold_src)}.txt"
    cold_doc.parent.mkdir(parents=True, exist_ok=True)
    cold_doc.write_text(vary(cold_src, args.seed, args.docs), encoding="utf-8")
    check = check_corpus(paths + [cold_doc], sources)
    print(f"corpus: {len(paths)} complaints from {len(sources)} annotated ones (seed {args.seed}) in {root}/docs, "
          f"made and checked in {time.perf_counter() - t0:.1f} s: {check['distinct_texts']} distinct texts and "
          f"{check['distinct_sentence_lists']} distinct sentence lists (with the cold-start complaint), none a "
          f"source's; {check['changed_sentences_mean']:.0%} of a complaint's sentences changed on average "
          f"(at least {check['changed_sentences_min']:.0%})", flush=True)

    configs = [("local", None)] if args.engine == "local" else \
        [("ray", int(a)) for a in args.actors.split(",") if a.strip()]
    runs = []
    for engine, actors in configs:
        label = engine if actors is None else f"ray-{actors}"
        cold = run_extract(f"{label}-cold", [cold_doc], root, engine=engine, actors=actors, expect=1)
        print(f"{label}: cold start {cold.wall_s:.1f} s (one complaint, fresh process, fresh cache), "
              f"peak RSS {cold.maxrss_kib / 1024:.0f} MiB; {_load()}", flush=True)
        full = run_extract(f"{label}-corpus", [docs_dir], root, engine=engine, actors=actors, expect=len(paths))
        times = ekg_times(full.out)
        per_doc = (full.wall_s - cold.wall_s) / (len(paths) - 1)
        runs.append({"label": label, "cold": cold, "full": full, "per_doc": per_doc,
                     "first_ekg_s": times[0] - full.started})
        print(f"{label}: {len(paths)} complaints in {full.wall_s:.1f} s, {per_doc:.2f} s/complaint after start-up "
              f"(differencing), first EKG after {times[0] - full.started:.1f} s; {_load()}", flush=True)

    print("plain pass: encoding every complaint's sentences with the bare SentenceTransformer …", flush=True)
    t0 = time.perf_counter()
    plain = plain_pass([check["sentences"][p] for p in paths])
    plain_mean = sum(plain) / len(plain)
    n_sent = sum(len(check["sentences"][p]) for p in paths)
    print(f"plain pass: {plain_mean:.3f} s/complaint ({n_sent / len(paths):.0f} sentences per complaint on average, "
          f"batch_size 32; {time.perf_counter() - t0:.1f} s with the encoder's load); {_load()}", flush=True)

    rows, raw = [], []
    for r in runs:
        cold, full = r["cold"], r["full"]
        row = {
            "engine": r["label"],
            "complaints": len(paths),
            "wall s": round(full.wall_s, 1),
            "complaints/min": round(60 * len(paths) / full.wall_s, 1),
            "steady complaints/min": round(60 / r["per_doc"], 1),
            "s/complaint": round(r["per_doc"], 2),
            "cold start s": round(cold.wall_s, 1),
            "start-up s": round(cold.wall_s - r["per_doc"], 1),
            "first EKG s": round(r["first_ekg_s"], 1),
            "peak RSS MiB": round(full.maxrss_kib / 1024),
            "tree MiB": round(full.peak_tree_kib() / 1024),
            "plain pass s/complaint": round(plain_mean, 3),
            "× plain": round(r["per_doc"] / plain_mean, 1),
        }
        rows.append(row)
        raw.append({**row, "first_ekg_s": r["first_ekg_s"], "cold_maxrss_kib": cold.maxrss_kib,
                    "cmd": full.cmd})
    print()
    print(markdown(rows))
    if args.json:
        args.json.write_text(json.dumps({"rows": raw, "plain_s": plain, "seed": args.seed}, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
