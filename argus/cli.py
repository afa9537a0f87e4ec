"""The ``argus`` command line."""

from __future__ import annotations

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)


def _mount_subapps() -> None:
    try:
        from argus.statutes.cli import app as statutes_app
    except ImportError:  # the statute graph is optional at import time
        return
    app.add_typer(statutes_app, name="statutes", help="German statute knowledge graph and retrieval")


_mount_subapps()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
