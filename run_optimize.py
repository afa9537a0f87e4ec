"""Campaign entry point: ``python run_optimize.py campaigns/<name>.yaml``.

Optimization campaigns (GEPA over every program, the quality–cost Pareto frontier, compiled
artifacts in ``compiled/``) are the subject of a later issue; until they land this script only
says how it will be used and exits with status 2.
"""

from __future__ import annotations

import sys

USAGE = """usage: python run_optimize.py campaigns/<name>.yaml

Runs an optimization campaign: GEPA evolves the prompts of the ARGUS programs
(fact fallback, chunker, Stage 1, Stage 2, cross-chunk resolver) against structural and
judge metrics, and keeps a quality-cost Pareto frontier of compiled programs in compiled/.

Not available yet in this version: campaigns arrive with the optimizers package.
Meanwhile, `argus extract` runs the seed programs (see README.md)."""


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    print(USAGE, file=sys.stderr if argv and argv[0] not in ("-h", "--help") else sys.stdout)
    return 0 if argv and argv[0] in ("-h", "--help") else 2


if __name__ == "__main__":
    sys.exit(main())
