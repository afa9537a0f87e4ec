"""``argus frontier``: inspect a campaign's quality–cost frontier (table, member choice, HTML report)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Inspect the quality–cost frontier of an optimization campaign (compiled/<campaign>/).")


def _fail(exc: Exception) -> None:
    typer.secho(f"error: {exc}", fg="red", err=True)
    raise typer.Exit(2)


@app.command("show")
def show(directory: Path = typer.Argument(..., help="Campaign directory (holds frontier.json)")) -> None:
    """Print the frontier members, cheapest first."""
    from argus.errors import ArgusError
    from optimizers.frontier import Frontier

    try:
        fr = Frontier.load(directory)
    except ArgusError as exc:
        _fail(exc)
    table = fr.table()
    typer.echo(f"campaign {fr.campaign}: {len(fr.members)} frontier member(s) of "
               f"{len(fr.file.all_candidates) or len(fr.members)} candidate(s)")
    if table.empty:
        typer.echo("(empty frontier)")
    else:
        display = table.astype(object).where(table.notna(), None)
        typer.echo(display.to_markdown(index=False, floatfmt=".4g", missingval="–"))
    if fr.file.hypervolume_history:
        typer.echo(f"hypervolume: {fr.file.hypervolume_history[-1].hypervolume:.4g}")


@app.command("select")
def select(
    directory: Path = typer.Argument(..., help="Campaign directory (holds frontier.json)"),
    max_cost: Optional[float] = typer.Option(None, "--max-cost", help="Highest acceptable USD per document"),
    min_quality: Optional[float] = typer.Option(None, "--min-quality", help="Lowest acceptable validation quality"),
    strategy: str = typer.Option("knee", "--strategy", help="knee | max_quality | min_cost"),
) -> None:
    """Print the chosen member's id and folder."""
    from argus.errors import ArgusError
    from optimizers.frontier import Frontier

    try:
        fr = Frontier.load(directory)
        member = fr.select_member(max_cost=max_cost, min_quality=min_quality, strategy=strategy)
    except ArgusError as exc:
        _fail(exc)
    typer.echo(f"{member.member_id}\t{fr.member_dir(member.member_id)}")


@app.command("report")
def report(
    directory: Path = typer.Argument(..., help="Campaign directory (holds frontier.json)"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="HTML file (default DIR/report.html)"),
) -> None:
    """Write one self-contained HTML report (plots inline) and print its path."""
    from argus.errors import ArgusError
    from optimizers.report import write_report

    try:
        path = write_report(directory, out)
    except ArgusError as exc:
        _fail(exc)
    typer.echo(str(path))


if __name__ == "__main__":
    app()
