"""The project drives Optuna through its public API only (issue 36): no private attribute of an Optuna
object (``study._storage``, ``FrozenTrial._trial_id``, ``study._thread_local`` …), no private Optuna
module, in any module under ``optimizers/`` or ``argus/``. The scheduler keeps the storage object it
builds and calls its public ``BaseStorage`` methods; trial ids come from
``get_trial_id_from_study_id_trial_number``.

The names checked are the private names Optuna itself defines on its studies, trials, frozen trials,
storages and samplers (read from the installed Optuna), plus the ones the scheduler used to reach for.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import PROJECT

#: always refused, on any expression: what the scheduler reached for before, and Optuna's storage internals
ALWAYS = frozenset({"_storage", "_study_id", "_trial_id", "_thread_local", "cached_all_trials", "_cached_frozen_trial",
                    "_backend", "_get_trials", "_pop_waiting_trial_id", "_directions", "_cached_all_trials"})


def optuna_private_names() -> frozenset[str]:
    """The private (single-underscore) attribute names of Optuna's studies, trials, frozen trials, storages and
    samplers: the instance attributes of live objects and the names their classes (and bases) define."""
    import optuna
    from optuna import storages

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(directions=["maximize", "minimize"])
    trial = study.ask()
    trial.suggest_float("x", 0, 1)
    study.tell(trial, [1.0, 2.0])
    objects = [study, trial, study.get_trials()[0], study.sampler]
    names = {n for obj in objects for n in vars(obj)}
    classes = [type(o) for o in objects] + [
        storages.BaseStorage, storages.InMemoryStorage, storages.RDBStorage, storages.JournalStorage,
        storages._CachedStorage,  # what an RDB study holds (Optuna's own wrapper; exported by optuna.storages)
        optuna.samplers.TPESampler, optuna.samplers.NSGAIISampler, optuna.samplers.RandomSampler]
    for cls in classes:
        names |= {n for c in cls.__mro__ if c.__module__.startswith("optuna") for n in vars(c)}
    return frozenset(n for n in names if n.startswith("_") and not n.startswith("__")) | ALWAYS


def violations(source: str, private: frozenset[str]) -> list[tuple[int, str]]:
    """(line, what) for each use of an Optuna private name in ``source``: an attribute ``x._name`` (on
    ``self``/``cls`` only the :data:`ALWAYS` names: a project class may have its own ``_lock``), a
    ``getattr``/``setattr``/``hasattr``/``delattr`` of such a name, or an import of a private Optuna module."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in private:
            own = isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
            if node.attr in ALWAYS or not own:
                found.append((node.lineno, f".{node.attr}"))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "setattr", "hasattr", "delattr") and len(node.args) >= 2
              and isinstance(node.args[1], ast.Constant) and node.args[1].value in private):
            found.append((node.lineno, f"{node.func.id}(…, {node.args[1].value!r})"))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "optuna":
                modules += [f"{node.module}.{a.name}" for a in node.names]
            for mod in modules:
                parts = mod.split(".")
                if parts[0] == "optuna" and any(p.startswith("_") for p in parts[1:]):
                    found.append((node.lineno, f"import {mod}"))
    return sorted(found)


def test_the_checker_finds_what_the_scheduler_used_to_do():
    """The old scheduler's private reaches are each caught; the public calls that replaced them are not."""
    private = optuna_private_names()
    old = """
study._storage.set_trial_state_values(t._trial_id, TrialState.FAIL)
if hasattr(study, "_thread_local"):
    study._thread_local.cached_all_trials = None
frozen = trial._cached_frozen_trial
from optuna.storages._heartbeat import BaseHeartbeat
import optuna._hypervolume
"""
    assert [w for _, w in violations(old, private)].count("._storage") == 1
    found = {w for _, w in violations(old, private)}
    assert {"._trial_id", "._thread_local", "hasattr(…, '_thread_local')", ".cached_all_trials",
            "._cached_frozen_trial", "import optuna.storages._heartbeat", "import optuna._hypervolume"} <= found
    new = """
storage = self.storage
tid = storage.get_trial_id_from_study_id_trial_number(storage.get_study_id_from_name(study.study_name), t.number)
storage.set_trial_state_values(tid, TrialState.FAIL)
with self._lock:
    pass
"""
    assert violations(new, private) == []


def test_no_module_touches_optuna_private_attributes():
    private = optuna_private_names()
    bad = []
    for package in ("optimizers", "argus"):
        for path in sorted((PROJECT / package).rglob("*.py")):
            for line, what in violations(path.read_text(encoding="utf-8"), private):
                bad.append(f"{path.relative_to(PROJECT)}:{line}: {what}")
    assert not bad, "Optuna's private API used (use its public API, e.g. the storage's BaseStorage methods):\n" + \
        "\n".join(bad)
