"""``argus experiment <name>``: each experiment module exposes a typer ``command`` function."""

from __future__ import annotations

import importlib

import typer

from argus.terminal import help_markup_mode

from argus.errors import fails_cleanly

app = typer.Typer(no_args_is_help=True, help="Downstream experiments on the event graphs",
                  rich_markup_mode=help_markup_mode())

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
            app.command(name)(fails_cleanly(command))



_mount()
