"""Campaign entry point: ``python run_optimize.py campaigns/<name>.yaml`` (same as ``argus optimize``).

Runs (or resumes) an optimization campaign: GEPA evolves the Stage 1 / Stage 2 instructions inside
an Optuna search over settings, and the quality–cost Pareto frontier of compiled programs is
written to ``compiled/<campaign>/`` (see ``optimizers/campaign.py``).
"""

from __future__ import annotations

import sys

USAGE = """usage: python run_optimize.py campaigns/<name>.yaml [--run-root runs/campaigns] [--compiled compiled]
                              [--storage postgresql://user:pw@host/db] [--num-threads N]

Runs an optimization campaign (resumable from its run directory; stop it with Ctrl-C or by
creating RUN_DIR/STOP) and writes the quality-cost frontier to compiled/<campaign>/.
With --storage, this process is one worker of the campaign: start the same command on this
machine or others (same campaign file, same URL) and the workers share the trials, every
evaluation and the frontier through the database (PostgreSQL: pip install 'psycopg[binary]').
--num-threads: documents / examples evaluated at once (default: the file's concurrency.num_threads).
Then: argus frontier show compiled/<campaign>; argus extract --frontier compiled/<campaign> …"""


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    from typer.main import get_command

    from argus.cli import app

    try:
        # without standalone mode click returns the command's exit code instead of exiting
        code = get_command(app).main(args=["optimize", *argv], prog_name="run_optimize.py", standalone_mode=False)
    except SystemExit as exc:
        return int(exc.code or 0)
    except Exception as exc:
        import click

        if isinstance(exc, click.exceptions.Exit):
            return int(exc.exit_code)
        if isinstance(exc, click.ClickException):
            exc.show()
            return 2
        raise
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())
