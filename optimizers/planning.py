"""Planning a campaign's trials: the settings of each trial position (the enumerated space in its seeded
order, or a sampler draw per position), the study's sampler, a claimed trial's settings and the outer search
as the frontier file states it.

:class:`TrialPlanner` is the planning part of ``optimizers.scheduler.Scheduler``; the claims on the study
are ``optimizers.claims``, this worker's records ``optimizers.records``.
"""

from __future__ import annotations

import warnings

from optimizers.config import ROUTING_KEYS, CampaignConfig
from optimizers.storage import DRAW, trial_position

STARTUP_TRIALS = 10
"""The outer search's random draws: TPE draws at random until this many trials are finished, then from its
model of them (Optuna's default; ``bench/studies/sampler.py`` measured fewer as worse on the campaign's space)."""

#: the settings of the search space a trial position may fix, in the order a planned setting lists them
SPACE_KEYS = ("task_model", "temperature", "max_retries", "framenet_hints", "stage2_model", "reflection_model",
              "judge_model", "extraction", *ROUTING_KEYS)


class TrialPlanner:
    """What each trial of one campaign tries: the planned positions, the sampler that draws the others, and
    a claimed trial's settings. It holds no state but the campaign's configuration."""

    def __init__(self, config: CampaignConfig):
        self.config = config

    def plan(self) -> list[dict | None]:
        """The settings of each trial position. A space of at most four times the trial budget is
        enumerated in a seeded shuffled order (no setting twice; a space smaller than the budget gives
        fewer positions, since a repeated setting would find every evaluation already done); a larger one
        gives ``budget.trials`` positions (None) each drawn by :meth:`sampler` (multivariate TPE, seeded by
        the position). Either way a re-run trial does not shift what later positions draw."""
        import itertools
        import random

        sp = self.config.space
        keys = [k for k in SPACE_KEYS if sp.choices(k)]
        grid = [dict(zip(keys, combo)) for combo in itertools.product(*(sp.choices(k) for k in keys))]
        trials = self.config.budget.trials
        if len(grid) > 4 * trials or not grid:
            return [None] * trials
        random.Random(self.config.seed).shuffle(grid)
        return grid[:trials]

    def sampler(self, position: int):
        """The study's sampler for the trial at ``position``: Optuna's multivariate TPE, the same settings for
        every trial, its random stream seeded by the campaign seed plus the position. TPE keeps no state of
        its own (it models the study's finished trials), so this is one sampler for the whole study whose
        draws do not depend on which process makes them: a resumed campaign, or another worker, draws what
        an uninterrupted one would. Its first :data:`STARTUP_TRIALS` draws are random."""
        import optuna

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)  # multivariate
            return optuna.samplers.TPESampler(multivariate=True, n_startup_trials=STARTUP_TRIALS,
                                              seed=self.config.seed + position)

    def settings(self, trial) -> dict:
        """The trial's settings: its planned (or drawn) point of the search space and the campaign's
        pipeline settings."""
        from optuna.trial import TrialState

        cfg = self.config
        study = trial.study
        # drawn: no planned settings (a planned position, or a re-run, carries them as fixed params); the
        # sampler draws at random until STARTUP_TRIALS trials are finished (what TPESampler counts)
        frozen = next(t for t in study.get_trials(deepcopy=False) if t.number == trial.number)
        drawn = not frozen.system_attrs.get("fixed_params")
        finished = len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED))) if drawn else 0
        settings = {
            "task_model": trial.suggest_categorical("task_model", cfg.space.task_model),
            "temperature": trial.suggest_categorical("temperature", cfg.space.temperature),
            "max_retries": trial.suggest_categorical("max_retries", cfg.space.max_retries),
            "framenet_hints": trial.suggest_categorical("framenet_hints", cfg.space.framenet_hints),
        }
        for key in ("stage2_model", "reflection_model", "judge_model", "extraction", *ROUTING_KEYS):
            choices = cfg.space.choices(key)
            if choices:
                settings[key] = trial.suggest_categorical(key, choices)
        if drawn and DRAW not in trial.user_attrs:  # a re-run of a drawn trial carries its draw (requeue_trial)
            trial.set_user_attr(DRAW, "random" if finished < STARTUP_TRIALS else "model")
        if cfg.pipeline:
            settings["pipeline"] = dict(cfg.pipeline)
        return settings

    def search_summary(self, study, plan, sampler=None) -> dict:
        """The outer search as the frontier file and the report state it: the sampler (``sampler``, default
        :meth:`sampler` at position 0), the positions planned by enumeration, and of the completed positions how
        many the sampler drew and how many of those draws were random (``argus:draw`` of each position's
        complete trial)."""
        from optuna.trial import TrialState

        draws: dict[int, str] = {}
        for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
            p = trial_position(t)
            if p is not None and p < len(plan) and DRAW in t.user_attrs:
                draws[p] = t.user_attrs[DRAW]
        sampler = self.sampler(0) if sampler is None else sampler
        return {"sampler": type(sampler).__name__, "multivariate": True, "n_startup_trials": STARTUP_TRIALS,
                "seed": self.config.seed, "positions": len(plan), "planned": sum(p is not None for p in plan),
                "drawn": len(draws), "random_draws": sum(d == "random" for d in draws.values())}
