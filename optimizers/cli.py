"""``argus frontier``: inspect a campaign's quality–cost frontier (table, member choice, verification,
repricing at today's prices, HTML report)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from argus.terminal import help_markup_mode

app = typer.Typer(rich_markup_mode=help_markup_mode(), add_completion=False, no_args_is_help=True,
                  help="Inspect, verify and reprice the quality–cost frontier of an optimization campaign "
                       "(compiled/<campaign>/).")


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
    table["tokens"] = table["tokens"].round().astype("Int64")
    typer.echo(f"campaign {fr.campaign}: {len(fr.members)} frontier member(s) of "
               f"{len(fr.file.all_candidates) or len(fr.members)} candidate(s)")
    if table.empty:
        typer.echo("(empty frontier)")
    else:
        display = table.astype(object).where(table.notna(), None)
        typer.echo(display.to_markdown(index=False, floatfmt=".4g", missingval="–"))
    if fr.file.hypervolume_history:
        typer.echo(f"hypervolume: {fr.file.hypervolume_history[-1].hypervolume:.4g}")
    if fr.file.pricing is not None:
        typer.echo(f"USD at {fr.file.pricing.source}, repriced {fr.file.pricing.timestamp}")


@app.command("reprice")
def reprice(
    directory: Path = typer.Argument(..., help="Campaign directory (holds frontier.json)"),
    prices: Optional[Path] = typer.Option(
        None, "--prices", help="YAML file of USD per million input and output tokens per model "
                               "(usd_per_million_tokens: {MODEL: {input: ..., output: ...}}); default: litellm's "
                               "model-cost map"),
) -> None:
    """Recompute every candidate's USD per document from its recorded tokens at today's prices, rebuild the
    frontier and write it (the earlier figures are kept in frontier.json's pricing_history)."""
    from argus.errors import ArgusError
    from optimizers.frontier import reprice_frontier

    try:
        result = reprice_frontier(directory, prices)
    except ArgusError as exc:
        _fail(exc)
    typer.echo(f"repriced {len(result.rows)} candidate(s) at {result.pricing.source}: "
               + ", ".join(f"{m} ${p.input:g}/${p.output:g}" for m, p in result.pricing.prices.items())
               + " per million input/output tokens")
    typer.echo(result.table().to_markdown(index=False, floatfmt=".6g"))
    typer.echo(f"frontier: {', '.join(result.members_after) or '(empty)'}"
               + (f"; joined: {', '.join(result.joined)}" if result.joined else "")
               + (f"; left: {', '.join(result.left)}" if result.left else ""))


@app.command("select")
def select(
    directory: Path = typer.Argument(..., help="Campaign directory (holds frontier.json)"),
    max_cost: Optional[float] = typer.Option(None, "--max-cost", help="Highest acceptable USD per document"),
    max_tokens: Optional[float] = typer.Option(None, "--max-tokens", help="Highest acceptable tokens per document"),
    min_quality: Optional[float] = typer.Option(None, "--min-quality", help="Lowest acceptable validation quality"),
    strategy: str = typer.Option("knee", "--strategy", help="knee | max_quality | min_cost"),
    member: Optional[str] = typer.Option(None, "--member", help="A member id (instead of the selection flags)"),
) -> None:
    """Print the chosen member's id and folder."""
    from argus.errors import ArgusError
    from optimizers.frontier import Frontier

    try:
        fr = Frontier.load(directory)
        chosen = fr.member(member) if member else fr.select_member(max_cost=max_cost, min_quality=min_quality,
                                                                   strategy=strategy, max_tokens=max_tokens)
    except ArgusError as exc:
        _fail(exc)
    typer.echo(f"{chosen.member_id}\t{fr.member_dir(chosen.member_id)}")


@app.command("verify")
def verify(
    directory: Path = typer.Argument(..., help="Campaign directory (holds frontier.json)"),
    documents: Optional[list[str]] = typer.Argument(
        None, help="Complaint files or folders (complaint.txt + gold.json), or <split>/<doc_id>; "
                   "default: the member's documents of --split"),
    split: str = typer.Option("test", "--split", help="With no DOCUMENTS: the member's val or test documents"),
    max_cost: Optional[float] = typer.Option(None, "--max-cost", help="Highest acceptable USD per document"),
    max_tokens: Optional[float] = typer.Option(None, "--max-tokens", help="Highest acceptable tokens per document"),
    min_quality: Optional[float] = typer.Option(None, "--min-quality", help="Lowest acceptable validation quality"),
    strategy: str = typer.Option("knee", "--strategy", help="knee | max_quality | min_cost"),
    member: Optional[str] = typer.Option(None, "--member", help="A member id (instead of the selection flags)"),
    all_members: bool = typer.Option(False, "--all", help="Verify every member"),
    config: Optional[Path] = typer.Option(None, "--config", "-c", help="YAML config (default: ./argus.yaml if present)"),
    tolerance: float = typer.Option(0.15, "--tolerance", help="Relative width of the promised cost interval"),
    no_cache: bool = typer.Option(False, "--no-cache", help="Make every call live (a cold deployment's cost)"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Also write the verification as JSON"),
) -> None:
    """Deploy the selected member on documents and print its promised against its realized cost and
    quality per document; exit 1 when the realized cost lies outside the promised interval."""
    import json

    from argus.errors import ArgusError
    from argus.io import write_json_atomic
    from optimizers.frontier import Frontier
    from optimizers.verify import verify_member

    if split not in ("val", "test"):
        _fail(ValueError("--split must be val or test"))
    try:
        ids = [m.member_id for m in Frontier.load(directory).members] if all_members else [member]
        reports = []
        for mid in ids:
            rep = verify_member(directory, documents or None, split=split, max_cost=max_cost, min_quality=min_quality,
                                strategy=strategy, member=mid, max_tokens=max_tokens, config_path=config, tolerance=tolerance,
                                cache=not no_cache,
                                on_document=lambda d, r: typer.echo(
                                    f"  deployed on {d}: quality {r['quality']:.3f}"
                                    f"{'' if r.get('gold') else ' (no gold annotation: without the gold component)'}, "
                                    f"{r['tokens']:,.0f} tokens, ${r['cost_usd']:.6f}", err=True))
            reports.append(rep)
            table = rep.table().astype(object)
            table = table.where(table.notna(), None)
            typer.echo(f"member {rep.member_id}: cost in {rep.cost_key}; promised interval "
                       f"[{rep.interval[0]:.6g}, {rep.interval[1]:.6g}] per document (±{tolerance:.0%})")
            typer.echo(table.to_markdown(index=False, floatfmt=".4g", missingval="–"))
            for doc, err in rep.errors.items():
                typer.secho(f"  {doc} failed: {err}", fg="red", err=True)
        if out is not None:
            write_json_atomic(out, [{"member": r.member_id, "cost_key": r.cost_key, "ok": r.ok, "interval": r.interval,
                                     "promised": r.promised, "realized": r.realized, "rows": r.rows,
                                     "promised_quality": r.promised_quality, "realized_quality": r.realized_quality,
                                     "errors": r.errors} for r in reports], indent=1)
    except ArgusError as exc:
        _fail(exc)
    bad = [r.member_id for r in reports if not r.ok]
    if bad:
        typer.secho(f"realized cost outside the promised interval (or a document failed): {', '.join(bad)}",
                    fg="red", err=True)
        raise typer.Exit(1)
    typer.echo(json.dumps({"verified": [r.member_id for r in reports], "ok": True}))


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
