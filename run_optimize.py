"""Campaign entry point: ``python run_optimize.py campaigns/<name>.yaml`` (same as ``argus optimize``).

Runs (or resumes) an optimization campaign: GEPA evolves the programs' instructions inside an
Optuna search over settings, and the quality–cost Pareto frontier of compiled programs is written
to ``compiled/<campaign>/`` (see ``optimizers/campaign.py``). ``--help`` prints the options of
``argus optimize``, which this script runs.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    from typer.main import get_command

    from argus.cli import app

    try:
        # without standalone mode click returns the command's exit code instead of exiting
        code = get_command(app).main(args=["optimize", *argv], prog_name="run_optimize.py", standalone_mode=False)
    except SystemExit as exc:
        return int(exc.code or 0)
    except Exception as exc:
        # click's usage errors and exits (typer vendors click, so matched by what they carry)
        if hasattr(exc, "show") and hasattr(exc, "exit_code"):
            exc.show()
            return int(exc.exit_code)
        if type(exc).__name__ == "Exit" and hasattr(exc, "exit_code"):
            return int(exc.exit_code)
        raise
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())
