"""``argus experiment <name>``: each experiment module exposes a typer ``command`` function."""

from __future__ import annotations

import functools
import importlib

import typer

from argus.errors import ArgusError

app = typer.Typer(no_args_is_help=True, help="Downstream experiments on the event graphs")

#: experiment name → module under argus.experiments that defines ``command``
EXPERIMENTS = {"claims": "claims", "clustering": "clustering", "qa": "qa", "barexam": "barexam"}


def _mount() -> None:
    for name, module in EXPERIMENTS.items():
        try:
            mod = importlib.import_module(f"argus.experiments.{module}")
        except ImportError:
            continue
        command = getattr(mod, "command", None)
        if command is not None:
            app.command(name)(_reporting_errors(command))


def _reporting_errors(command):
    """Every experiment reports a project error as one line and exits 2 (no traceback)."""

    @functools.wraps(command)
    def run(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except ArgusError as exc:
            typer.secho(f"error: {exc}", fg="red", err=True)
            raise typer.Exit(2) from exc

    return run


_mount()
