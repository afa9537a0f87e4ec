"""Encoder runtimes compared on our sentences: speed, cold start, memory, and whether the graphs stay the same.

For each runtime of ``argus.models.encoders`` (``torch``: sentence-transformers in eager torch; ``onnx``:
ONNX Runtime fp32; ``onnx-int8``: dynamic int8 weights; ``openvino``: the fp32 graph on OpenVINO; ``openvino-bf16``: the
same in bfloat16 where the CPU has it), in a fresh process each:

- **cold**: seconds from the process's start to the first sentence encoded (imports, model load; the
  ONNX export is cached beforehand, so this is a user's second run), and whether torch was imported;
- **sentences/s**: one ``Runtime.forward`` over every sentence of the annotated complaints (sentence
  and token vectors of one pass, batches of similar length), after one warm-up batch; the plain
  sentence-transformers pass (``SentenceTransformer.encode``, torch, batch 32: what a user would write) over
  the same sentences is timed in the torch process;
- **peak RSS** of that process (MB);
- **graphs**: every complaint (``us_complaints`` train and dev, and the real opinions under ``us_real``)
  extracted with the offline default on that runtime (``argus.runs.batch.run_batch``, what ``argus extract``
  runs; a fresh cache, so nothing is read back). The EKGs are compared with the torch runtime's: graphs
  identical (entities, events, edges and sentence labels; timings and confidences left out; the largest
  difference of a confidence in the identical graphs beside it), relaxed event and entity F1
  against gold (mean over the annotated complaints) and the paired difference to torch with its 95 %
  bootstrap interval, and the largest difference on one complaint. The no-model floor (``--method floor``)
  is scored on the same complaints as the reference row.

The shipped heads were trained on these complaints, so the F1 figures are in-sample: they compare runtimes
with each other, not the design with anything else (``bench/designs.py`` cross-validates).

    python bench/encoders.py [--runtimes torch,onnx,onnx-int8,openvino,openvino-bf16] [--out out/bench-encoders]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DATA = ROOT.parent / "shared" / "data"


def complaint_files() -> list[Path]:
    return sorted(DATA.glob("us_complaints/*/*/complaint.txt"))


def real_files() -> list[Path]:
    return sorted((DATA / "us_real" / "opinions").glob("*.txt"))


def sentences() -> list[str]:
    from argus.ingest.files import read_document
    from argus.text.preprocess import preprocess

    out = []
    for p in complaint_files():
        out += [s.text for s in preprocess(read_document(p)).sentences]
    return out


def one(runtime: str, started: float) -> dict:
    """The speed figures of one runtime, in this (fresh) process."""
    os.environ["ARGUS_ENCODER_RUNTIME"] = runtime
    from argus.models import embeddings

    embeddings.encode(["Plaintiff was terminated on May 3, 2021."])
    cold = time.time() - started
    torch_loaded = "torch" in sys.modules
    texts = sentences()
    rt = embeddings.encoder_runtime("embedded")
    rt.forward(texts[:32])
    t0 = time.perf_counter()
    rt.forward(texts)
    forward = time.perf_counter() - t0
    out = {"runtime": runtime, "cold_s": cold, "torch_imported": torch_loaded, "sentences": len(texts),
           "per_s": len(texts) / forward, "forward_s": forward}
    if runtime == "torch":
        model = embeddings.load_encoder("embedded")
        model.encode(texts[:32], batch_size=32)
        t0 = time.perf_counter()
        model.encode(texts, batch_size=32)
        out["plain_st_per_s"] = len(texts) / (time.perf_counter() - t0)
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def extract(runtime: str, out: Path, method: str = "sentence") -> float:
    """Every complaint and opinion extracted on ``runtime`` into ``out`` (a fresh process); its wall seconds."""
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "ARGUS_ENCODER_RUNTIME": runtime, "HF_HUB_OFFLINE": "1"}
    docs = [*complaint_files(), *real_files()]
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "argus.cli", "extract", *map(str, docs), "--out", str(out / "ekg"),
                           "--cache-dir", str(out / "cache"), "--no-graphml", "--method", method, "--no-preflight"],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{runtime}: argus extract failed:\n{done.stderr[-3000:]}")
    return time.perf_counter() - t0


def graph_of(path: Path) -> dict:
    """What must stay the same: the graph and the sentence labels (not timings, stages, ledger), confidences
    left out (``confidences`` compares them)."""
    from argus.output.export import load_ekg

    def strip(x):
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if k != "confidence"}
        return [strip(v) for v in x] if isinstance(x, list) else x

    ekg = load_ekg(path)
    return {"graph": strip(ekg.graph.model_dump(mode="json")),
            "sentences": [(s.id, s.fact, s.fact_path) for s in ekg.sentences]}


def confidences(path: Path) -> list[float]:
    from argus.output.export import load_ekg

    g = load_ekg(path).graph
    return [float(x.confidence or 0.0) for x in [*g.events, *g.temporal_edges, *g.causal_edges]
            if hasattr(x, "confidence")]


def scores(run: Path) -> dict[str, dict[str, float]]:
    from bench.rescore import gold_folders, score_run

    return score_run(run / "ekg", gold_folders(DATA / "us_complaints"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runtimes", default="torch,onnx,onnx-int8,openvino,openvino-bf16")
    ap.add_argument("--out", default="out/bench-encoders")
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--skip-graphs", action="store_true", help="speed figures only")
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.one, float(os.environ["BENCH_STARTED"]))))
        return 0
    runtimes = [r for r in args.runtimes.split(",") if r]
    if "torch" not in runtimes:
        runtimes.insert(0, "torch")
    out = Path(args.out)
    # the export is built (and cached) before anything is timed: the cold figures are a second run's
    for r in runtimes:
        if r != "torch":
            subprocess.run([sys.executable, "-c", f"import os; os.environ['ARGUS_ENCODER_RUNTIME']='{r}'; "
                            "from argus.models.embeddings import encode; encode(['warm'])"], cwd=ROOT, check=True)
    speed = {}
    for r in runtimes:
        env = {**os.environ, "BENCH_STARTED": repr(time.time()), "HF_HUB_OFFLINE": "1"}
        done = subprocess.run([sys.executable, __file__, "--one", r], cwd=ROOT, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"{r}: {done.stderr[-3000:]}")
        speed[r] = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"{r}: {speed[r]}", file=sys.stderr)
    plain = speed["torch"]["plain_st_per_s"]
    print(f"\n{speed['torch']['sentences']} sentences of {len(complaint_files())} complaints; 2 cores; the plain "
          f"sentence-transformers pass (torch): {plain:.1f} sentences/s\n")
    print("| runtime | sentences/s (sentence + token vectors) | × plain ST pass | cold start s | torch imported | peak RSS MB |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r, s in speed.items():
        print(f"| {r} | {s['per_s']:.1f} | {s['per_s'] / plain:.2f} | {s['cold_s']:.2f} | {s['torch_imported']} | "
              f"{s['peak_rss_mb']:.0f} |")
    if args.skip_graphs:
        return 0

    from argus.experiments.stats import paired_bootstrap_ci
    from optimizers.frontier.pareto import bootstrap_ci

    walls = {r: extract(r, out / r) for r in runtimes}
    walls["floor"] = extract("torch", out / "floor", method="floor")
    sc = {r: scores(out / r) for r in [*runtimes, "floor"]}
    base = {p.name: graph_of(p) for p in sorted((out / "torch" / "ekg").glob("*.ekg.json"))}
    docs = sorted(sc["torch"])
    print(f"\n{len(base)} documents ({len(docs)} annotated complaints, {len(base) - len(docs)} opinions)\n")
    print("| runtime | graphs identical to torch | max Δ confidence | relaxed event F1 | Δ vs torch [95 % CI] | max abs Δ | "
          "entity F1 | Δ vs torch [95 % CI] | max abs Δ | wall s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in [*runtimes, "floor"]:
        same = sum(graph_of(out / r / "ekg" / name) == g for name, g in base.items()) if r != "floor" else None
        conf = "—"
        if same is not None:
            diffs = [abs(a - b) for name, g in base.items() if graph_of(out / r / "ekg" / name) == g
                     for a, b in zip(confidences(out / r / "ekg" / name), confidences(out / "torch" / "ekg" / name))]
            conf = f"{max(diffs, default=0.0):.4f}"
        cells = []
        for m in ("relaxed_events_f1", "relaxed_entities_f1"):
            a = [sc[r][d][m] for d in docs]
            b = [sc["torch"][d][m] for d in docs]
            lo, hi = bootstrap_ci(a)
            d, dlo, dhi = paired_bootstrap_ci(a, b)
            cells += [f"{statistics.fmean(a):.4f} [{lo:.3f}, {hi:.3f}]", f"{d:+.4f} [{dlo:+.4f}, {dhi:+.4f}]",
                      f"{max(abs(x - y) for x, y in zip(a, b)):.4f}"]
        print(f"| {r} | {'—' if same is None else f'{same}/{len(base)}'} | {conf} | {' | '.join(cells)} | "
              f"{walls[r]:.1f} |")
    (out / "results.json").write_text(json.dumps({"speed": speed, "scores": sc, "walls": walls}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
