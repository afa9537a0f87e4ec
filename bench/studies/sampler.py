"""Which sampler should draw a campaign's trial positions? Hypervolume after N trials, over seeds.

Each candidate sampler runs the campaign's own scheduling path (``optimizers.scheduler.Scheduler``:
``plan``, ``open_study`` on Optuna's journal file, ``next_trial``, ``trial``, ``settings``, the study told
the result), with the sampler built per trial position exactly as the scheduler does (seed = campaign
seed + position), for ``--trials`` N (8, 16 and 32) and ``--seeds`` (10) campaign seeds; it prints the
hypervolume after N trials, mean and spread over the seeds, as a fraction of the best attainable (the
hypervolume of the whole space's Pareto front).

The objective is synthetic, not a scripted-LM campaign. A scripted campaign (``tests/simulated_lm.py``)
costs about 10 s per trial on this machine (5 samplers × 10 seeds × 8 + 16 + 32 trials: about 8 hours), and
its simulated model answers by the instruction text alone, the same whatever the model, temperature or
retries, so the settings would score alike and no sampler could be told apart.
Instead: the campaign's search space (``SpaceSpec``'s keys: task model, temperature, retries, FrameNet
hints, extraction design, with value lists of our choosing; 6 × 4 × 3 × 2 × 2 = 288 settings, so no
position is enumerated: every
position is a sampler draw) and a deterministic two-objective function of the settings (quality up,
USD per document down) with the interactions a campaign meets: strong models cost more, each model has
its best temperature, retries help weak models and cost more, hints help the chunked design only, the
sentence design is cheaper and helps weak models, plus a fixed per-setting jitter. (The demo and
heldout campaigns have two settings each: they are enumerated and draw nothing at all.)

    python bench/studies/sampler.py [--trials 8 16 32] [--seeds 10]
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import optuna  # noqa: E402
from rich.console import Console  # noqa: E402

from optimizers.config import CampaignConfig  # noqa: E402
from optimizers.frontier.pareto import hypervolume, pareto_front  # noqa: E402
from optimizers.scheduler import SPACE_KEYS, STARTUP_TRIALS, Scheduler  # noqa: E402

#: task model -> (USD per document, base quality, best temperature)
MODELS = {
    "local/smollm2": (0.0002, 0.22, 0.0),
    "openai/gpt-4o-mini": (0.002, 0.55, 0.3),
    "gemini/gemini-2.5-flash": (0.004, 0.63, 0.3),
    "anthropic/claude-haiku-4-5": (0.008, 0.60, 0.0),
    "openai/gpt-4o": (0.03, 0.72, 0.3),
    "gemini/gemini-2.5-pro": (0.05, 0.78, 0.7),
}
SPACE = {
    "task_model": list(MODELS),
    "temperature": [0.0, 0.3, 0.7, 1.0],
    "max_retries": [0, 1, 2],
    "framenet_hints": [False, True],
    "extraction": ["chunked", "sentence"],
}
SENSES = {"quality": "max", "cost": "min"}


def objective(s: dict) -> tuple[float, float]:
    """(quality, USD per document) of one setting: deterministic, with interactions and a fixed jitter."""
    price, base, best_t = MODELS[s["task_model"]]
    weak = base < 0.6
    q = base - 0.35 * (s["temperature"] - best_t) ** 2
    q += (0.04 if weak else 0.005) * s["max_retries"]
    cost = price * (1 + 0.3 * s["max_retries"])
    if s["extraction"] == "sentence":
        cost *= 0.35
        q += 0.03 if weak else -0.09
    elif s["framenet_hints"]:
        q += 0.06
        cost *= 1.2
    if s["framenet_hints"] and s["extraction"] == "sentence":
        cost *= 1.05  # hints cost tokens and help nothing there
    h = hashlib.sha256(repr(sorted(s.items())).encode()).digest()
    q += (h[0] / 255 - 0.5) * 0.04
    return max(0.0, min(1.0, q)), cost


ALL = [dict(zip(SPACE, combo)) for combo in itertools.product(*SPACE.values())]
REFERENCE = {"quality": 0.0, "cost": 1.1 * max(objective(s)[1] for s in ALL)}
_points = [dict(zip(("quality", "cost"), objective(s))) for s in ALL]
BEST_HV = hypervolume([_points[i] for i in pareto_front(_points, SENSES)], SENSES, REFERENCE)


def candidates(trials: int) -> dict[str, tuple]:
    """name -> (sampler factory of a seed, random draws of N trials); (None, None): the scheduler's own
    sampler, its random draws counted by ``Scheduler.search_summary``."""
    pop = max(4, trials // 4)
    startup = max(2, trials // 4)
    return {
        "NSGA-II, new per trial, population 50 (before)": (
            lambda seed: optuna.samplers.NSGAIISampler(seed=seed), min(trials, 50)),
        f"NSGA-II, population {pop}": (
            lambda seed: optuna.samplers.NSGAIISampler(population_size=pop, seed=seed), min(trials, pop)),
        f"TPE multivariate, {STARTUP_TRIALS} startup (Scheduler.sampler)": (None, None),
        f"TPE multivariate, {startup} startup": (
            lambda seed: optuna.samplers.TPESampler(multivariate=True, n_startup_trials=startup, seed=seed),
            min(trials, startup)),
        "random": (lambda seed: optuna.samplers.RandomSampler(seed=seed), trials),
    }


class BenchScheduler(Scheduler):
    def __init__(self, *args, factory, **kwargs):
        super().__init__(*args, **kwargs)
        self.factory = factory

    def sampler(self, position: int):
        return super().sampler(position) if self.factory is None else self.factory(self.config.seed + position)


def run_once(factory, trials: int, seed: int, tmp: Path) -> tuple[float, int]:
    """Hypervolume of the N trials' points (a fraction of the best attainable) for one campaign seed, and the
    random draws the scheduler counted (meaningful for its own sampler)."""
    cfg = CampaignConfig(name="bench", space=SPACE, budget={"trials": trials}, seed=seed)
    run_dir = tmp / f"run-{seed}-{time.monotonic_ns()}"
    run_dir.mkdir()
    sch = BenchScheduler(cfg, run_dir, storage_url=None, worker="bench", console=Console(stderr=True), factory=factory)
    study, plan = sch.open_study(), sch.plan()
    assert plan == [None] * trials  # every position is a draw
    while True:
        kind, value = sch.next_trial(study, plan)
        if kind == "done":
            break
        trial = sch.trial(study, *value)
        settings = sch.settings(trial)
        study.tell(trial, list(objective({k: settings[k] for k in SPACE_KEYS if k in settings})))
    points = [{"quality": t.values[0], "cost": t.values[1]} for t in study.get_trials(deepcopy=False)
              if t.values is not None]
    assert len(points) == trials
    return hypervolume(points, SENSES, REFERENCE) / BEST_HV, sch.search_summary(study, plan)["random_draws"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trials", type=int, nargs="+", default=[8, 16, 32])
    ap.add_argument("--seeds", type=int, default=10)
    args = ap.parse_args(argv)
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    import warnings

    warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
    print(f"search space: {len(ALL)} settings ({' x '.join(str(len(v)) for v in SPACE.values())}); "
          f"hypervolume as a fraction of the best attainable; {args.seeds} seeds")
    print("'vs random': the mean paired difference from the random sampler with the same seeds (± its standard error)")
    print(f"{'N':>3}  {'sampler':<48} {'random draws':>12}  {'HV mean':>8}  {'sd':>6}  {'min':>6}  {'max':>6}  "
          f"{'vs random':>15}")
    with tempfile.TemporaryDirectory() as tmp:
        for trials in args.trials:
            rows = {}
            for name, (factory, random_draws) in candidates(trials).items():
                runs = [run_once(factory, trials, 1000 * s, Path(tmp)) for s in range(args.seeds)]
                counted = {r for _, r in runs}
                if random_draws is None:  # the scheduler's own: what it counted (the same for every seed)
                    assert len(counted) == 1, counted
                    random_draws = counted.pop()
                rows[name] = ([hv for hv, _ in runs], random_draws)
            base = rows["random"][0]
            for name, (hvs, random_draws) in rows.items():
                diffs = [a - b for a, b in zip(hvs, base)]
                se = statistics.stdev(diffs) / len(diffs) ** 0.5 if len(diffs) > 1 else 0.0
                sd = statistics.stdev(hvs) if len(hvs) > 1 else 0.0
                print(f"{trials:>3}  {name:<48} {random_draws:>6} of {trials:<3}  {statistics.mean(hvs):8.3f}  "
                      f"{sd:6.3f}  {min(hvs):6.3f}  {max(hvs):6.3f}  {statistics.mean(diffs):+7.3f} ± {se:5.3f}",
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
