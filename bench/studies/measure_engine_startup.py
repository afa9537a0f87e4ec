"""Benchmark: time to the first token of the embedded model, in process versus out of process.

Each run is a fresh Python process, as a user's first call is:

- ``in-process``: the engine as it ran before it moved out of process — ``llama_cpp.Llama`` loads
  the GGUF in this process (same context size and threads), then one chat completion of one
  token;
- ``managed server``: ``argus.models.lm.build_lm(local/smollm2)``, whose first call starts the managed
  ``llama_cpp.server`` process, waits for its health check and sends the same one-token
  completion through litellm.

Imports common to both (dspy, litellm, argus) are done before the clock starts. A second call on
the warm engine shows the per-call overhead of the HTTP hop.

    python bench/studies/measure_engine_startup.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]

IN_PROCESS = """
import json, os, time
import dspy, litellm  # common imports, not timed
from argus.models.lm import embedded_gguf_path
path = str(embedded_gguf_path())
messages = [{"role": "user", "content": "Say hi"}]
t0 = time.perf_counter()
from llama_cpp import Llama
threads = os.cpu_count() or 1
llama = Llama(model_path=path, n_ctx=8192, n_threads=threads, n_threads_batch=threads, verbose=False, seed=0)
llama.create_chat_completion(messages=messages, max_tokens=1, temperature=0.0)
t1 = time.perf_counter()
llama.create_chat_completion(messages=messages, max_tokens=1, temperature=0.0)
t2 = time.perf_counter()
print(json.dumps({"first_token_s": t1 - t0, "warm_call_s": t2 - t1}))
"""

MANAGED = """
import json, time
import dspy, litellm  # common imports, not timed
from argus.config import LMSpec
from argus.models.lm import build_lm
t0 = time.perf_counter()
lm = build_lm(LMSpec(model="local/smollm2", max_tokens=1, cache=False))
lm("Say hi")
t1 = time.perf_counter()
lm("Say hi")
t2 = time.perf_counter()
print(json.dumps({"first_token_s": t1 - t0, "warm_call_s": t2 - t1}))
"""


def measure(code: str, repeat: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"first_token_s": [], "warm_call_s": []}
    for _ in range(repeat):
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PROJECT,
                             env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": str(Path.home())},
                             timeout=600)
        if res.returncode != 0:
            raise SystemExit(f"run failed ({res.returncode}):\n{res.stderr[-3000:]}")
        figures = json.loads(res.stdout.strip().splitlines()[-1])
        for k, v in figures.items():
            out[k].append(v)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rows = {"in-process (before)": measure(IN_PROCESS, args.repeat), "managed server (after)": measure(MANAGED, args.repeat)}
    print(f"embedded SmolLM2-135M Q4_1, n_ctx 8192, {args.repeat} fresh processes each; seconds min / median / max")
    print(f"{'engine':<24} {'first token':>24} {'warm one-token call':>24}")
    for name, figures in rows.items():
        cells = []
        for key in ("first_token_s", "warm_call_s"):
            v = figures[key]
            cells.append(f"{min(v):.3f} / {statistics.median(v):.3f} / {max(v):.3f}")
        print(f"{name:<24} {cells[0]:>24} {cells[1]:>24}")


if __name__ == "__main__":
    main()
