"""The outer search of a campaign (``optimizers.scheduler.Scheduler``): one TPE sampler configuration for the
whole study, seeded by position, its random draws counted, and the report stating both. The scheduler runs
on Optuna's journal file with a synthetic objective (no model, no data)."""

from __future__ import annotations

import json

import optuna
import pytest

from optimizers.config import CampaignConfig
from optimizers.scheduler import STARTUP_TRIALS, Scheduler

#: 4 × 4 × 3 × 2 × 2 = 192 settings: larger than four times the budgets below, so every position is a draw
BIG_SPACE = {"task_model": ["m0", "m1", "m2", "m3"], "temperature": [0.0, 0.3, 0.7, 1.0], "max_retries": [0, 1, 2],
             "framenet_hints": [False, True], "extraction": ["chunked", "sentence"]}


def _objective(s: dict) -> list[float]:
    m = BIG_SPACE["task_model"].index(s["task_model"]) if s["task_model"] in BIG_SPACE["task_model"] else 0
    return [0.2 * m - abs(s["temperature"] - 0.3) + 0.05 * s["max_retries"] + 0.1 * s["framenet_hints"],
            (m + 1) * (1 + s["max_retries"]) * (0.5 if s.get("extraction") == "sentence" else 1.0)]


def _run(tmp_path, trials: int, seed: int = 0, space=BIG_SPACE):
    """A campaign's scheduling loop; (study, plan, scheduler, the sampler each position drew with, the settings)."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    cfg = CampaignConfig(name="search", space=space, budget={"trials": trials}, seed=seed)
    tmp_path.mkdir(parents=True, exist_ok=True)
    sch = Scheduler(cfg, tmp_path, storage_url=None, worker="w", console=None)
    study, plan = sch.open_study(), sch.plan()
    samplers, settings = {}, {}
    while True:
        kind, value = sch.next_trial(study, plan)
        if kind == "done":
            break
        trial = sch.trial(study, *value)
        samplers[value[1]] = study.sampler
        settings[value[1]] = sch.settings(trial)
        study.tell(trial, _objective(settings[value[1]]))
    return study, plan, sch, samplers, settings


def test_one_tpe_sampler_draws_every_position_and_its_random_draws_are_counted(tmp_path):
    trials = STARTUP_TRIALS + 4
    study, plan, sch, samplers, _ = _run(tmp_path, trials)
    assert plan == [None] * trials
    # the study's sampler is TPE for its creation and for every trial, never NSGA-II's default population
    assert type(sch.open_study().sampler) is optuna.samplers.TPESampler
    assert all(type(s) is optuna.samplers.TPESampler for s in samplers.values())
    draws = {t.user_attrs["argus:position"]: t.user_attrs["argus:draw"] for t in study.get_trials()}
    assert draws == {p: "random" if p < STARTUP_TRIALS else "model" for p in range(trials)}
    assert sch.search_summary(study, plan) == {
        "sampler": "TPESampler", "multivariate": True, "n_startup_trials": STARTUP_TRIALS, "seed": 0,
        "positions": trials, "planned": 0, "drawn": trials, "random_draws": STARTUP_TRIALS}


def test_draws_depend_on_the_seed_and_position_only(tmp_path):
    """A resumed campaign (a new process, a new sampler) draws what an uninterrupted one would."""
    trials = STARTUP_TRIALS + 3
    *_, first = _run(tmp_path / "a", trials)
    *_, again = _run(tmp_path / "b", trials)
    *_, other = _run(tmp_path / "c", trials, seed=7)
    assert first == again
    assert first != other


def test_a_retried_draw_keeps_its_settings_and_counts_once(tmp_path):
    """A drawn trial that fails is queued again with its settings: the re-run is no new draw."""
    from optuna.trial import TrialState

    from optimizers.storage import requeue_trial

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    cfg = CampaignConfig(name="search", space=BIG_SPACE, budget={"trials": 2})
    sch = Scheduler(cfg, tmp_path, storage_url=None, worker="w", console=None)
    study, plan = sch.open_study(), sch.plan()
    _, (tid, pos) = sch.next_trial(study, plan)
    trial = sch.trial(study, tid, pos)
    drawn = sch.settings(trial)
    study.tell(trial, state=TrialState.FAIL)
    requeue_trial(study, study.get_trials()[trial.number])
    _, (tid, pos2) = sch.next_trial(study, plan)
    assert pos2 == pos
    again = sch.trial(study, tid, pos2)
    assert sch.settings(again) == drawn
    study.tell(again, _objective(drawn))
    assert sch.search_summary(study, plan)["drawn"] == 1 and sch.search_summary(study, plan)["random_draws"] == 1


def test_a_small_space_is_enumerated_and_draws_nothing(tmp_path):
    study, plan, sch, _, settings = _run(tmp_path, 2, space={"framenet_hints": [False, True]})
    assert all(p is not None for p in plan)
    summary = sch.search_summary(study, plan)
    assert (summary["positions"], summary["planned"], summary["drawn"], summary["random_draws"]) == (2, 2, 0, 0)
    assert sorted(s["framenet_hints"] for s in settings.values()) == [False, True]


@pytest.mark.parametrize("search, expected", [
    ({"sampler": "TPESampler", "multivariate": True, "n_startup_trials": 10, "seed": 3, "positions": 12, "planned": 0,
      "drawn": 12, "random_draws": 10},
     "TPESampler (multivariate, seed 3): 12 completed positions drawn by the sampler, 10 of them at random "
     "(it draws at random until 10 trials are finished)"),
    ({"sampler": "TPESampler", "multivariate": True, "n_startup_trials": 10, "seed": 0, "positions": 2, "planned": 2,
      "drawn": 0, "random_draws": 0},
     "TPESampler (multivariate, seed 0): 2 of 2 trial positions enumerated in a seeded order, not drawn; "
     "0 completed positions drawn by the sampler, 0 of them at random (it draws at random until 10 trials are "
     "finished)"),
    ({}, "not recorded (a frontier file written before the sampler was)"),
])
def test_the_report_names_the_sampler_and_its_random_draws(tmp_path, search, expected):
    from markupsafe import escape

    from optimizers.report import search_text, write_report
    from tests.test_frontier_report import make_campaign

    assert search_text(search) == expected
    make_campaign(tmp_path)
    path = tmp_path / "frontier.json"
    data = json.loads(path.read_text())
    data["search"] = search
    path.write_text(json.dumps(data))
    page = write_report(tmp_path).read_text()
    assert "outer search" in page and str(escape(expected)) in page


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")  # pytest's hook reports it so
def test_a_sigterm_landing_in_a_finalizer_prints_no_traceback_and_still_stops(tmp_path, capsys):
    """A signal that arrives while a library's ``__del__`` runs cannot raise there: Python reports the
    KeyboardInterrupt as an ignored exception with a traceback (a campaign stopped by SIGTERM printed one
    from the regex package's finalizer). Inside ``ctrl_c_stops`` that report is not printed, and the stop
    is kept."""
    import gc
    import signal

    from argus.models.ledger import CostLedger
    from optimizers.budget import StopConditions
    from optimizers.scheduler import ctrl_c_stops

    stop = StopConditions(stop_file=tmp_path / "STOP", ledger=CostLedger(), spent_before=0.0, max_usd=None,
                          deadline=None)

    class Finalized:
        def __del__(self):
            signal.raise_signal(signal.SIGTERM)  # the handler runs here, inside the finalizer

    hook = __import__("sys").unraisablehook
    with ctrl_c_stops(stop):
        Finalized()
        gc.collect()
    assert "Traceback" not in capsys.readouterr().err
    assert stop.interrupted and "SIGTERM" in stop.check()
    assert __import__("sys").unraisablehook is hook and signal.getsignal(signal.SIGTERM) is not None
