"""The ``argus`` command line.

    argus extract PATH... --out DIR        complaints → document Event Knowledge Graphs
    argus train-facts --out FILE           train the Fact/Non-Fact classifier
    argus validate OUT_DIR                 check EKG files against the output contract (spans included)
    argus view EKG.json | OUT_DIR [-o F]   one self-contained HTML page per EKG (and a batch index)
    argus eval GOLD... --out DIR           floor, pipeline and one-shot against gold, structural, judges, agreement
    argus train-events --out FILE          train the sentence design's event heads (type, trigger)
    argus annotate export|report …         human-evaluation sheets and their agreement statistics
    argus annotate serve FOLDER            correct a folder's graphs in the browser, saved as gold
    argus schema                           print the EKG JSON Schema
    argus fetch-courtlistener …            download NOS 442 complaints from CourtListener RECAP
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Optional

import typer

from argus.terminal import help_markup_mode

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

app = typer.Typer(add_completion=False, no_args_is_help=True, help="ARGUS: legal event knowledge graphs.",
                  rich_markup_mode=help_markup_mode())  # plain help under 100 columns (argus.terminal)

PREFLIGHT_HELP = ("Skip the check, before the first document or trial, that every model of the run has its API key "
                  "set, its server (api_base) answering and its GGUF file present (argus.models.preflight)")


def _overrides(
    model: Optional[str],
    stage_model: list[str],
    api_base: Optional[str],
    fact_mode: Optional[str],
    tau: Optional[float],
    no_resolver: bool,
    framenet_hints: bool,
    cache_dir: Optional[Path],
    max_chars: Optional[int],
    keep_ungrounded: bool = False,
    grounded_decoding: Optional[bool] = None,
) -> dict:
    given = {
        "lm.default.model": model or None,
        "lm.default.api_base": api_base or None,
        "facts.mode": fact_mode or None,
        "facts.tau": tau,
        "merge.resolver": False if no_resolver else None,
        "extraction.framenet_hints": True if framenet_hints else None,
        "extraction.keep_ungrounded": True if keep_ungrounded else None,
        "extraction.grounded_decoding": grounded_decoding,
        "cache_dir": str(cache_dir) if cache_dir else None,
        "limits.max_document_chars": max_chars or None,
    }
    o = {key: value for key, value in given.items() if value is not None}
    for item in stage_model:
        if "=" not in item:
            raise typer.BadParameter(f"--stage-model expects STAGE=MODEL, got {item!r}")
        stage, m = item.split("=", 1)
        o[f"lm.stages.{stage.strip()}.model"] = m.strip()
    return o


@app.command()
def extract(
    paths: list[Path] = typer.Argument(..., help="Complaint text files and PDFs, or folders of them (scanned pages are "
                                                 "OCR'd with Tesseract)"),
    out: Path = typer.Option(Path("out"), "--out", "-o", help="Output folder"),
    config: Optional[Path] = typer.Option(None, "--config", "-c", help="YAML config (default: ./argus.yaml if present)"),
    model: Optional[str] = typer.Option(None, "--model", help="litellm model string for every stage (default local/smollm2)"),
    stage_model: list[str] = typer.Option([], "--stage-model", help="STAGE=MODEL, repeatable (stage1, stage2, chunker and the other stages)"),
    api_base: Optional[str] = typer.Option(None, "--api-base", help="OpenAI-compatible server for --model"),
    fact_mode: Optional[str] = typer.Option(None, "--fact-mode", help="classifier | hybrid | llm"),
    tau: Optional[float] = typer.Option(None, "--tau", help="fact-classifier confidence threshold"),
    method: str = typer.Option(
        "staged", "--method",
        help="staged (the pipeline, its configured design), chunked, sentence, oneshot (the one-call baseline) or floor "
             "(keyword rules, no language model)"),
    design: Optional[str] = typer.Option(
        None, "--design", help="the pipeline's design: sentence (one event per fact sentence, by choices) or chunked "
                               "(Stage 1 writes each chunk's graph); default: sentence with local/ engines, chunked "
                               "with hosted models"),
    no_resolver: bool = typer.Option(False, "--no-resolver", help="skip LLM cross-chunk resolution"),
    framenet_hints: bool = typer.Option(False, "--framenet-hints", help="give Stage 1 FrameNet-style frame hints"),
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help="DSPy cache directory"),
    max_chars: Optional[int] = typer.Option(None, "--max-chars", help="refuse documents longer than this"),
    skip_existing: bool = typer.Option(False, "--skip-existing", help="do not redo documents whose EKG exists"),
    keep_ungrounded: bool = typer.Option(
        False, "--keep-ungrounded",
        help="keep entities/events whose name or trigger is not in the text, flagged grounded: false (default: they go "
             "to the EKG's rejected list)"),
    grounded_decoding: Optional[bool] = typer.Option(
        None, "--grounded-decoding/--no-grounded-decoding",
        help="grammar-capable engines (the embedded one, vLLM) may write names, aliases and triggers only as word runs "
             "of the chunk (default: on for local/ engines)"),
    no_graphml: bool = typer.Option(False, "--no-graphml", help="write only the JSON"),
    frontier: Optional[Path] = typer.Option(None, "--frontier", help="Use a member of a compiled frontier (compiled/<campaign>)"),
    max_cost: Optional[float] = typer.Option(None, "--max-cost", help="With --frontier: max USD per document"),
    max_tokens: Optional[float] = typer.Option(None, "--max-tokens", help="With --frontier: max tokens per document"),
    max_seconds: Optional[float] = typer.Option(
        None, "--max-seconds", help="With --frontier: max wall seconds per document, as measured by the campaign's "
                                    "deployment runs (the member records the machine and threads)"),
    min_quality: Optional[float] = typer.Option(None, "--min-quality", help="With --frontier: min validation quality"),
    strategy: str = typer.Option("knee", "--strategy", help="With --frontier: knee | max_quality | min_cost"),
    member_id: Optional[str] = typer.Option(None, "--member", help="With --frontier: a member id (instead of the selection flags)"),
    concurrency: Optional[int] = typer.Option(
        None, "--concurrency", "-j", min=1,
        help="LM calls in flight at once across the batch (default: the config's concurrency.max_in_flight, 8); "
             "each model's max_in_flight bounds it further"),
    engine: str = typer.Option("local", "--engine", help="local (threads in this process) | ray (Ray Data: pipeline actors)"),
    address: Optional[str] = typer.Option(None, "--address", help="With --engine ray: the cluster (ray://host:10001, auto); "
                                          "default: a local Ray runtime"),
    actors: Optional[int] = typer.Option(None, "--actors", min=1, help="With --engine ray: pipeline actors (default: 2)"),
    no_preflight: bool = typer.Option(False, "--no-preflight", help=PREFLIGHT_HELP),
    heads: Optional[Path] = typer.Option(None, "--heads", help="event heads file for the sentence design (from argus "
                                                               "train-events, e.g. --gold: your own); default the shipped"),
):
    """Turn complaints into document-level Event Knowledge Graphs (JSON + GraphML)."""
    from argus.runs.batch import METHODS, BatchInterrupted, process_started_at, run_batch, sigterm_as_interrupt
    from argus.config import ArgusConfig
    from argus.errors import ArgusError

    if method not in METHODS:
        raise typer.BadParameter(f"--method must be one of {', '.join(METHODS)}")
    if design is not None and design not in ("chunked", "sentence"):
        raise typer.BadParameter("--design must be chunked or sentence")
    if engine not in ("local", "ray"):
        raise typer.BadParameter("--engine must be local or ray")
    if engine != "ray" and (address is not None or actors is not None):
        raise typer.BadParameter("--address and --actors go with --engine ray")
    if engine == "ray" and frontier is not None:
        raise typer.BadParameter("--frontier runs on the local engine; on Ray, pass the member's settings with --config")
    terminate = contextlib.ExitStack()  # SIGTERM: as Ctrl-C from here on
    terminate.enter_context(sigterm_as_interrupt())
    try:
        from argus.ingest.sources import ocr_preflight

        ocr_preflight(paths)  # a scanned PDF and no Tesseract: stop before anything is read or written
        overrides = _overrides(model, stage_model, api_base, fact_mode, tau, no_resolver, framenet_hints, cache_dir, max_chars,
                               keep_ungrounded, grounded_decoding)
        if design:
            overrides["extraction.design"] = design
        if heads is not None:
            if not heads.is_file():
                raise typer.BadParameter(f"--heads {heads}: no such file (write one with argus train-events)")
            overrides["sentence.heads"] = str(heads)
        pipeline = None
        if frontier is not None:
            from optimizers.deploy import member_config, member_pipeline
            from optimizers.frontier import Frontier

            fr = Frontier.load(frontier)
            chosen = fr.member(member_id) if member_id else fr.select_member(
                max_cost=max_cost, min_quality=min_quality, strategy=strategy, max_tokens=max_tokens,
                max_seconds=max_seconds)
            cfg = member_config(chosen.settings, config_path=config, overrides=overrides)
        else:
            cfg = ArgusConfig.load(config, overrides)
        if not no_preflight:  # before anything is written: the output folder is not even created
            from argus.models.preflight import pipeline_uses, preflight

            preflight(pipeline_uses(cfg, [method]))
        if frontier is not None:
            pipeline, member = member_pipeline(frontier, member=chosen.member_id, config_path=config,
                                               overrides=overrides, frontier=fr)
            cfg = pipeline.config
            o = member.objectives
            typer.echo(f"frontier member {member.member_id}: validation quality {o.get('quality', float('nan')):.3f}, "
                       f"{o.get('tokens', float('nan')):,.0f} tokens and ${o.get('cost_usd', float('nan')):.6f} per document "
                       f"(models {member.settings.get('models')})", err=True)
        since = process_started_at()  # other runs' EKGs count from this command's start
        if engine == "ray":
            from argus.runs.distributed import run_batch_ray

            report = run_batch_ray(paths, out, cfg, method=method, skip_existing=skip_existing, graphml=not no_graphml,
                                   concurrency=concurrency, address=address, actors=actors, since=since)
        else:
            report = run_batch(paths, out, cfg, method=method, skip_existing=skip_existing, graphml=not no_graphml,
                               pipeline=pipeline, concurrency=concurrency, since=since)
    except ArgusError as exc:
        typer.secho(f"error: {exc}", fg="red", err=True)
        raise typer.Exit(2)
    except BatchInterrupted as exc:
        typer.secho(str(exc), fg="yellow", err=True)
        _exit_soon(128 + exc.signum)
        raise typer.Exit(128 + exc.signum)
    except KeyboardInterrupt as exc:  # outside the batch's own loop (loading models, the preflight, its summary)
        signum = signal.SIGTERM if exc.args == ("SIGTERM",) else signal.SIGINT
        typer.secho(f"{'SIGTERM' if signum == signal.SIGTERM else 'interrupt (SIGINT)'}: stopped; what was written is "
                    "complete, nothing is half-written; run the same command with --skip-existing to do the rest",
                    fg="yellow", err=True)
        _exit_soon(128 + signum)
        raise typer.Exit(128 + signum)
    except OSError as exc:  # the output folder itself (cannot be created, …): documents' own failures are recorded
        where = f": {exc.filename}" if exc.filename else ""
        typer.secho(f"error: {exc.strerror or exc}{where}", fg="red", err=True)
        raise typer.Exit(1)
    finally:
        terminate.close()
    raise typer.Exit(0 if report.ok else 1)


def _exit_soon(code: int, grace_s: float = 5.0) -> None:
    """After an interrupted batch: if the process has not exited ``grace_s`` seconds from now (a
    model call still running in a worker thread holds it up), it exits then with ``code`` anyway."""
    import threading

    def force() -> None:
        time.sleep(grace_s)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)

    threading.Thread(target=force, name="argus-exit", daemon=True).start()


def _eval_methods(methods: list[str], no_oneshot: bool) -> tuple[str, ...]:
    """The methods ``argus eval`` compares: the floor first (every method is read against it)."""
    from argus.runs.evaluation import METHODS

    chosen = list(dict.fromkeys(methods or METHODS))
    if no_oneshot and "oneshot" in chosen:
        chosen.remove("oneshot")
    return tuple(["floor"] + [m for m in chosen if m != "floor"])


@app.command("eval")
def eval_command(
    gold: list[Path] = typer.Argument(..., help="Annotated complaint folders (complaint.txt + gold.json), <doc_id>.gold.json "
                                                "files (argus annotate serve), or folders of either"),
    out: Path = typer.Option(Path("eval"), "--out", "-o", help="Output folder (tables/, report.md, ledger.jsonl)"),
    config: Optional[Path] = typer.Option(None, "--config", "-c", help="YAML config (default: ./argus.yaml if present)"),
    staged: Optional[Path] = typer.Option(None, "--staged", help="Existing staged outputs (*.ekg.json); default OUT/staged"),
    oneshot: Optional[Path] = typer.Option(None, "--oneshot", help="Existing one-shot outputs; default OUT/oneshot"),
    no_oneshot: bool = typer.Option(False, "--no-oneshot", help="Leave the one-shot baseline out (no pairwise tables)"),
    methods: list[str] = typer.Option(
        [], "--method", help="Method to evaluate, repeatable: floor, staged, chunked, sentence, oneshot (default: floor, "
                             "staged, oneshot); the floor is always added"),
    no_run: bool = typer.Option(False, "--no-run", help="Do not run the pipeline for documents without outputs"),
    judge: list[str] = typer.Option([], "--judge", help="Judge model, repeatable (default: the config's judge stage)"),
    no_judge: bool = typer.Option(False, "--no-judge", help="Skip all LLM judging"),
    stability_temperature: Optional[float] = typer.Option(None, "--stability-temperature", help="Re-judge at this temperature (0: skip)"),
    llm_match: bool = typer.Option(False, "--llm-match", help="Add the LLM-judged gold-matching tier"),
    model: Optional[str] = typer.Option(None, "--model", help="litellm model string for every pipeline stage"),
    api_base: Optional[str] = typer.Option(None, "--api-base", help="OpenAI-compatible server for --model"),
    no_preflight: bool = typer.Option(False, "--no-preflight", help=PREFLIGHT_HELP),
):
    """Evaluate graphs against gold: matching F1, structural and judge scores, pairwise preference, merge statistics, cost."""
    from argus.config import ArgusConfig
    from argus.errors import ArgusError
    from argus.runs.evaluation import TITLES, run_evaluation

    overrides = _overrides(model, [], api_base, None, None, False, False, None, None)
    if judge:
        overrides["eval.judges"] = list(judge)
    if stability_temperature is not None:
        overrides["eval.stability_temperature"] = stability_temperature
    if llm_match:
        overrides["eval.llm_match"] = True
    try:
        cfg = ArgusConfig.load(config, overrides)
        if not no_preflight:
            from argus.models.preflight import eval_uses, preflight

            preflight(eval_uses(cfg, _eval_methods(methods, no_oneshot), run_missing=not no_run,
                                use_judges=not no_judge))
        report = run_evaluation(gold, out, cfg, staged_dir=staged, oneshot_dir=oneshot,
                                methods=_eval_methods(methods, no_oneshot),
                                run_missing=not no_run, use_judges=not no_judge)
    except ArgusError as exc:
        typer.secho(f"error: {exc}", fg="red", err=True)
        raise typer.Exit(2)
    from rich.console import Console

    console = Console()
    for name in ("gold_summary", "vs_floor", "quality", "merge", "pairwise", "stability"):
        df = report.tables.get(name)
        if df is not None and not df.empty:
            console.print(f"[bold]{TITLES.get(name, name)}[/bold]")
            console.print(df.to_markdown(index=False, floatfmt=".3f"))
    console.print(f"tables: {out / 'tables'}  report: {out / 'report.md'}  errors: {len(report.errors)}")
    raise typer.Exit(0 if not report.errors else 1)


@app.command("optimize")
def optimize_command(
    campaign: Path = typer.Argument(..., help="Campaign YAML (campaigns/<name>.yaml)"),
    run_root: Path = typer.Option(Path("runs/campaigns"), "--run-root", help="Run directories (resumable) live here"),
    compiled: Path = typer.Option(Path("compiled"), "--compiled", help="Where the frontier is written"),
    storage: Optional[str] = typer.Option(
        None, "--storage", envvar="ARGUS_STORAGE", show_envvar=True,
        help="Optuna RDB storage URL (postgresql://user:pw@host/db): run as one of several "
        "workers of the campaign, on this machine or others (default: a journal file in the run directory). A URL "
        "with a password belongs in the environment variable ARGUS_STORAGE: a command line is visible to every "
        "user of the machine (ps, /proc/PID/cmdline)"),
    num_threads: Optional[int] = typer.Option(
        None, "--num-threads", min=1, help="Documents / examples evaluated at once (default: concurrency.num_threads)"),
    mlflow: Optional[str] = typer.Option(
        None, "--mlflow", help="MLflow tracking URI (http://127.0.0.1:5000): one parent run for the campaign, a child "
        "run per trial (overrides tracking.mlflow; pip install 'argus-kg[track]')"),
    no_preflight: bool = typer.Option(False, "--no-preflight", help=PREFLIGHT_HELP),
):
    """Run (or resume) an optimization campaign: GEPA + Optuna, quality–cost frontier in compiled/."""
    from argus.errors import ArgusError

    try:
        if not no_preflight:  # before the first trial (and its imports): the run directory is not even created
            from argus.models.preflight import preflight
            from optimizers.config import CampaignConfig

            preflight(CampaignConfig.load(campaign).model_uses())
        from optimizers.campaign import run_campaign

        result = run_campaign(campaign, run_root=run_root, compiled_root=compiled, storage=storage,
                              num_threads=num_threads, mlflow=mlflow)
    except ArgusError as exc:
        typer.secho(f"error: {exc}", fg="red", err=True)
        raise typer.Exit(2)
    if "SIGTERM" in result.stopped:  # the supervisor's stop: the conventional 128 + 15, the run resumable
        raise typer.Exit(143)
    raise typer.Exit(0 if result.frontier and not result.failed else 1)


annotate_app = typer.Typer(no_args_is_help=True, help="Human evaluation: annotation sheets and agreement statistics; "
                                                        "correcting graphs into gold in the browser",
                           rich_markup_mode=help_markup_mode())
app.add_typer(annotate_app, name="annotate")


@annotate_app.command("export")
def annotate_export(
    graphs: Path = typer.Argument(..., help="A folder of *.ekg.json files, or one file"),
    out: Path = typer.Option(..., "--out", "-o", help="The CSV sheet to write"),
    annotator: str = typer.Option("", "--annotator", help="Prefill the annotator column"),
):
    """Write one CSV row per graph element (entity, event, edge) with its source sentences, to label
    Aligned / Partially Aligned / Misaligned with an error tag."""
    from argus.graph.schema import DocumentEKG
    from metrics.human import export_sheet

    import pydantic

    files = sorted(graphs.glob("*.ekg.json")) if graphs.is_dir() else [graphs]
    if not files or not files[0].exists():
        typer.secho(f"error: no *.ekg.json at {graphs}", fg="red", err=True)
        raise typer.Exit(2)
    try:
        ekgs = [DocumentEKG.model_validate_json(f.read_text(encoding="utf-8")) for f in files]
    except (OSError, UnicodeDecodeError, pydantic.ValidationError) as exc:
        typer.secho(f"error: not a readable EKG file: {str(exc)[:300]}", fg="red", err=True)
        raise typer.Exit(2)
    path = export_sheet(ekgs, out, annotator=annotator)
    typer.echo(f"wrote {path} ({sum(len(e.graph.entities) + len(e.graph.events) + len(e.graph.temporal_edges) + len(e.graph.causal_edges) for e in ekgs)} elements from {len(ekgs)} graph(s))")


@annotate_app.command("report")
def annotate_report(
    sheets: list[Path] = typer.Argument(..., help="Filled sheets, one per annotator"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Also write the table as Markdown here"),
):
    """Label shares, percent agreement, Fleiss' kappa and Krippendorff's alpha over filled sheets."""
    from argus.errors import ArgusError
    from argus.io import write_text_atomic
    from metrics.human import agreement_report, read_sheets

    try:
        report = agreement_report(read_sheets(sheets))
    except ArgusError as exc:
        typer.secho(f"error: {exc}", fg="red", err=True)
        raise typer.Exit(2)
    text = report.to_markdown()
    typer.echo(text)
    if out:
        write_text_atomic(out, text + "\n")


@annotate_app.command("serve")
def annotate_serve(
    folder: Path = typer.Argument(..., help="A folder of *.ekg.json files (argus extract --out), where the gold goes"),
    port: int = typer.Option(8765, "--port", min=0, max=65535, help="TCP port (0: any free one)"),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind: this machine only by default"),
):
    """Correct the graphs of FOLDER in the browser: each document's corrections are saved as <doc_id>.gold.json
    (the shared SPEC format) beside its EKG, with what was changed in <doc_id>.corrections.json."""
    from argus.errors import ArgusError
    from argus.output.annotate import serve

    try:
        serve(folder, host=host, port=port, echo=typer.echo)
    except ArgusError as exc:
        typer.secho(f"error: {exc}", fg="red", err=True)
        raise typer.Exit(2)


@app.command("train-facts")
def train_facts(
    out: Path = typer.Option(Path("fact_classifier.json"), "--out", "-o",
                             help="Head JSON file (or a folder with --finetune)"),
    encoder: str = typer.Option("embedded", "--encoder", help="sentence-transformers / HF model name, or 'embedded'"),
    splits: str = typer.Option("train,dev", "--splits", help="comma-separated splits of us_complaints to train on"),
    features: str = typer.Option("context", "--features",
                                 help="context (sentence, neighbours, section, cues; calibrated) or sentence (the sentence alone)"),
    report: bool = typer.Option(False, "--report",
                                help="leave-one-complaint-out figures, calibration (ECE, reliability PNG) and the tau curve"),
    fallback_report: list[str] = typer.Option([], "--fallback-report",
                                              help="MODEL (or 'oracle'): measure that fallback against the classifier and set its tau; repeatable"),
    eval_split: str = typer.Option("", "--eval-split", help="with --features sentence: split to report figures on"),
    finetune: bool = typer.Option(False, "--finetune", help="fine-tune the encoder end to end instead of a head"),
    epochs: int = typer.Option(3, "--epochs"),
    limit: int = typer.Option(0, "--limit", help="use only the first N training sentences (smoke runs)"),
    folds: int = typer.Option(0, "--folds", min=0, help="with --report / --fallback-report: folds over complaints, "
                                                         "each style dealt over them (0: leave one complaint out)"),
):
    """Train the Fact/Non-Fact sentence classifier on the annotated complaints.

    The default (context features) is measured by leave-one-complaint-out cross-validation with every
    choice made inside the folds; the head that is written is trained on all the given complaints.
    --fallback-report records, per fallback model, the tau at which it beats the classifier (or that
    it never does, so the gate leaves it out)."""
    from argus.errors import ArgusError

    try:
        if features == "context" and not finetune:
            _train_context_facts(out, encoder, splits.split(","), report, fallback_report, folds or None)
            return
        if features != "sentence" and not finetune:
            raise typer.BadParameter("--features must be context or sentence")
        from argus.gate.facts import fact_metrics, gold_examples, train_finetuned, train_head

        texts, labels, groups = gold_examples(splits.split(","))
        if limit:
            texts, labels, groups = texts[:limit], labels[:limit], groups[:limit]
        t0 = time.perf_counter()
        if finetune:
            clf = train_finetuned(texts, labels, out, encoder=encoder, epochs=epochs)
        else:
            clf = train_head(texts, labels, encoder=encoder, groups=groups)
        secs = time.perf_counter() - t0
        figures = {}
        if eval_split:
            et, el, _ = gold_examples([eval_split])
            probs = clf.predict_proba(et)
            figures = fact_metrics(el, [int(p >= 0.5) for p in probs])
        if not finetune:
            clf.meta["eval"] = {eval_split: {k: round(v, 4) for k, v in figures.items()}} if figures else {}
            clf.save(out)
    except ArgusError as exc:
        typer.secho(f"error: {exc}", fg="red", err=True)
        raise typer.Exit(2)
    typer.echo(f"trained on {len(texts)} sentences in {secs:.1f}s → {out}")
    if figures:
        typer.echo(f"{eval_split}: " + ", ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}" for k, v in figures.items()))


@app.command("train-events")
def train_events(
    out: Path = typer.Option(Path("event_heads.json"), "--out", "-o", help="Heads JSON file"),
    encoder: str = typer.Option("embedded", "--encoder", help="sentence-transformers model name, or 'embedded'"),
    splits: Optional[str] = typer.Option(None, "--splits", help="comma-separated splits of us_complaints to train on "
                                                                "(default: train; none with --gold unless given)"),
    gold: Optional[list[Path]] = typer.Option(None, "--gold", help="a folder of your gold files (<doc_id>.gold.json "
                                                                   "beside <doc_id>.txt or .ekg.json, as argus annotate "
                                                                   "serve saves them, or <doc_id>/complaint.txt + "
                                                                   "gold.json folders), or one file; repeatable"),
    drafts: bool = typer.Option(False, "--drafts", help="with --gold: also the documents not yet accepted on the "
                                                        "correction page (status draft)"),
    report: bool = typer.Option(False, "--report", help="also measure the heads with folds over the complaints (every "
                                                          "choice inside the fold) and record the figures in the file; "
                                                          "with --gold, also the offline default with the fold heads "
                                                          "against the shipped heads on your documents, paired"),
    folds: int = typer.Option(6, "--folds", min=2, help="with --report: folds over complaints"),
    parts: str = typer.Option("", "--parts", help="comma-separated learned parts (entities, types, occurrences, "
                                                  "edges) to retrain alone on top of --base, whose heads, other "
                                                  "parts and still valid measurements are kept"),
    base: Optional[Path] = typer.Option(None, "--base", help="with --parts: the heads file to retrain them in "
                                                             "(default: the shipped heads)"),
):
    """Train the sentence design's event heads (event type, trigger word) on the annotated complaints.

    The written heads are fitted on every complaint of the given splits; --report adds their
    cross-validated figures. The shipped heads (argus/resources/event_heads_minilm.json) are trained
    on the train split, so the dev complaints stay unseen. With --parts, only the named learned parts
    are trained again, on the graphs the --base file's heads make; a measurement the file records of a
    part retrained (meta.pair_fallback of edges, meta.fallback of types or occurrences) is dropped, to
    be measured again by its bench."""
    from argus.errors import ArgusError
    from argus.training.heads import (annotated_folders, cross_validate, labeled_complaints, retrain_parts,
                                      train_event_heads)

    import tempfile

    staging = tempfile.TemporaryDirectory(prefix="argus-gold-")
    try:
        t0 = time.perf_counter()
        if splits is None:
            splits = "" if gold else "train"
        folders = annotated_folders([s.strip() for s in splits.split(",") if s.strip()])
        yours: list[Path] = []
        if gold:
            from argus.training.gold import gold_folders

            skipped: list[Path] = []
            yours = gold_folders(list(gold), Path(staging.name), drafts=drafts, skipped=skipped)
            folders += yours
            typer.echo(f"your gold: {len(yours)} documents" + (f", beside {len(folders) - len(yours)} of {splits}"
                                                              if len(folders) > len(yours) else "")
                       + (f"; {len(skipped)} drafts left out (--drafts takes them)" if skipped else ""))
        if parts.strip():
            from argus.designs.sentence.heads import load_event_heads

            names = tuple(dict.fromkeys(p.strip() for p in parts.split(",") if p.strip()))
            heads = load_event_heads(str(base) if base else "embedded")
            for key, bench in retrain_parts(heads, folders, names):
                typer.echo(f"meta.{key} dropped: it measured a part retrained here ({bench} --write measures it again)")
            heads.save(out)
            typer.echo(f"retrained {', '.join(names)} on {len(folders)} complaints in "
                       f"{time.perf_counter() - t0:.1f}s → {out}")
            return
        docs = labeled_complaints(folders)
        heads = train_event_heads(docs, encoder=encoder)
        if report:
            cv = cross_validate(docs, k=folds, encoder=encoder)
            heads.meta["cross_validation"] = cv.as_dict()
            typer.echo(f"cross-validated over {len(docs)} complaints ({cv.folds} folds): type accuracy "
                       f"{cv.type_accuracy:.3f} (on event sentences {cv.type_accuracy_on_events:.3f}), "
                       f"trigger top-1 {cv.trigger_top1:.3f}")
            if yours:
                from argus.runs.evaluation import compare_on_gold

                cmp = compare_on_gold(yours, cv.heads, Path(staging.name) / "compare")
                heads.meta["gold_report"] = cmp
                typer.echo(f"on your {cmp['documents']} documents, the offline default with the heads of the fold "
                           "each was held out of, against the shipped heads (mean [95 % CI]; paired difference):")
                for key, label in (("events_f1", "relaxed event F1"), ("entities_f1", "entity F1"),
                                   ("temporal_f1", "temporal F1"), ("causal_f1", "causal F1")):
                    if key in cmp:
                        r = cmp[key]
                        typer.echo(f"  {label:17} yours {r['yours']:.3f} {r['yours_ci95']}  shipped {r['baseline']:.3f} "
                                   f"{r['baseline_ci95']}  difference {r['difference']:+.3f} {r['difference_ci95']}")
        heads.meta["splits"] = splits
        if yours:
            heads.meta["gold"] = [str(p) for p in gold]
        heads.save(out)
    except ArgusError as exc:
        typer.secho(f"error: {exc}", fg="red", err=True)
        raise typer.Exit(2)
    finally:
        staging.cleanup()
    typer.echo(f"trained on {heads.meta['n_sentences']} sentences of {len(docs)} complaints in "
               f"{time.perf_counter() - t0:.1f}s → {out}")


def _fallback_fn(model: str, docs):
    """The fact-fallback program on ``model`` (metered nowhere: a measurement), or the gold oracle."""
    if model == "oracle":
        gold = {t: int(y) for d in docs for t, y in zip(d.texts, d.labels)}
        return lambda batch: {sid for sid, text in batch if gold.get(text)}
    import dspy

    from argus.config import ArgusConfig
    from argus.models.lm import SchemaJSONAdapter, build_lm
    from programs import ArgusPrograms

    lm = build_lm(ArgusConfig.load(None, {"lm.default.model": model}).lm.for_stage("fact_fallback"))
    programs = ArgusPrograms(max_retries=1)

    def ask(batch):
        with dspy.context(lm=lm, adapter=SchemaJSONAdapter()):
            res = programs.fact_fallback(sentences=batch)
        return None if res.outputs is None else set(res.outputs["fact_ids"])

    return ask


def _train_context_facts(out: Path, encoder: str, splits: list[str], report: bool, fallback_models: list[str],
                         folds: int | None = None) -> None:
    from rich.console import Console

    from argus.gate.fact_eval import cross_validate, fallback_report, labeled_documents, reliability_plot, tau_curve, train_context_head

    console = Console(width=200)
    t0 = time.perf_counter()
    docs = labeled_documents(splits, encoder)
    encode_s = time.perf_counter() - t0
    cv = None
    if report or fallback_models:
        cv = cross_validate(docs, encoder=encoder, folds=folds)
    t1 = time.perf_counter()
    head = train_context_head(docs, encoder=encoder)
    train_s = time.perf_counter() - t1
    head.meta.update({"trained_on": [f"us_complaints/{s}" for s in splits], "train_seconds": round(train_s, 1)})
    if cv is not None:
        head.meta["cross_validation"] = {
            "scheme": (f"{folds} folds over {len(docs)} complaints, each style dealt over them" if folds else
                       f"leave-one-complaint-out over {len(docs)} complaints") + "; C and calibration chosen inside each fold",
            "pooled": {k: round(v, 4) for k, v in cv.pooled.items()},
            "mean_fact_f1": round(cv.mean_f1, 4), "ci95": [round(v, 4) for v in cv.ci95],
            "ece": round(cv.ece, 4), "ece_uncalibrated": round(cv.ece_uncalibrated, 4),
            "no_sections_mean_fact_f1": round(float(cv.per_document["no_sections_fact_f1"].mean()), 4),
        }
    if report and cv is not None:
        console.print(f"[bold]{f'{folds} folds' if folds else 'Leave-one-complaint-out'}[/bold] ({len(docs)} complaints, {sum(len(d.labels) for d in docs)} sentences; "
                      f"features and encoding {encode_s:.0f} s, folds {cv.seconds:.0f} s)")
        typer.echo(cv.per_document.to_markdown(index=False, floatfmt=".3f"))
        console.print(f"pooled Fact P {cv.pooled['precision']:.3f} R {cv.pooled['recall']:.3f} F1 {cv.pooled['f1']:.3f}; "
                      f"mean Fact F1 over complaints {cv.mean_f1:.3f} (95% CI {cv.ci95[0]:.3f}–{cv.ci95[1]:.3f}); "
                      f"ECE {cv.ece:.4f} calibrated, {cv.ece_uncalibrated:.4f} before")
        png = reliability_plot(docs, cv.probs, out.with_suffix(".reliability.png"), ece=cv.ece)
        console.print(f"reliability plot: {png}")
        console.print("[bold]τ curve[/bold] (FACTS-narrative sentences; oracle = a fallback that is always right)")
        typer.echo(tau_curve(docs, cv.probs).to_markdown(index=False, floatfmt=".4f"))
    fallback = dict(head.meta.get("fallback", {}))
    for model in fallback_models:
        res = fallback_report(docs, cv.probs, _fallback_fn(model, docs))
        fallback[model] = {k: (round(v, 4) if isinstance(v, float) else v) for k, v in res.items() if k != "curve"}
        console.print(f"[bold]fallback report: {model}[/bold] — asked about {res['asked']} uncertain narrative sentences; "
                      + (f"best at τ = {res['tau']}: narrative Fact F1 {res['f1_best_fallback']:.4f} vs {res['f1_classifier']:.4f} alone"
                         if res["tau"] is not None else
                         f"never beats the classifier alone (narrative Fact F1 {res['f1_classifier']:.4f}): the gate will not call it"))
        typer.echo(res["curve"].to_markdown(index=False, floatfmt=".4f"))
    if fallback:
        head.meta["fallback"] = fallback
    head.save(out)
    console.print(f"trained on {len(docs)} complaints in {train_s:.1f} s → {out}")


@app.command()
def view(
    path: Path = typer.Argument(..., help="An EKG file (*.ekg.json), or a folder of them (a batch: index + one view each)"),
    out: Optional[Path] = typer.Option(
        None, "--out", "-o",
        help="The HTML file to write (default: <doc_id>.view.html beside the EKG; for a folder, <folder>/index.html, "
             "the views beside it)"),
):
    """Write a self-contained HTML view of an EKG: the text with its marks, events, timeline, graph, entities, cost."""
    from argus.errors import InputError, fails_cleanly
    from argus.output.view import index_documents, write_view

    @fails_cleanly
    def run() -> None:
        if path.is_dir():
            if not any(path.glob("*.ekg.json")):
                raise InputError(f"no *.ekg.json files in {path}")
            index, entries = index_documents(path, out)
            for e in entries:
                if e.view is not None:
                    typer.echo(f"wrote {e.view}")
                if e.error:
                    typer.secho(f"skipped {e.file.name}: {e.error}", fg="yellow", err=True)
            failed = sum(1 for e in entries if e.view is None)
            typer.echo(f"wrote {index} ({len(entries) - failed} of {len(entries)} documents"
                       + (f"; {failed} could not be loaded, listed with their error" if failed else "") + ")")
        else:
            typer.echo(f"wrote {write_view(path, out)}")

    run()


@app.command()
def validate(out: Path = typer.Argument(..., help="A folder of *.ekg.json files, or one file")):
    """Check EKG files against the output contract (schema, spans, evidence ids, ledger totals)."""
    from argus.output.contract import check_file

    files = sorted(out.glob("*.ekg.json")) if out.is_dir() else [out]
    if not files:
        typer.secho(f"no *.ekg.json files in {out}", fg="red", err=True)
        raise typer.Exit(2)
    failed = 0
    for f in files:
        ekg, problems = check_file(f)
        if problems:
            failed += 1
            typer.secho(f"FAIL {f.name}", fg="red")
            for p in problems[:20]:
                typer.echo(f"  {p}")
        else:
            g = ekg.graph
            typer.echo(f"ok   {f.name}: {len(ekg.sentences)} sentences, {len(g.events)} events, "
                       f"{len(g.temporal_edges)}+{len(g.causal_edges)} edges, {ekg.ledger.totals.calls} LM calls")
    typer.echo(f"{len(files) - failed}/{len(files)} files satisfy the contract")
    raise typer.Exit(1 if failed else 0)


@app.command()
def schema(out: Optional[Path] = typer.Option(None, "--out", help="write to a file instead of stdout")):
    """Print the JSON Schema of the document EKG."""
    from argus.io import write_json_atomic
    from argus.graph.schema import export_json_schema

    s = export_json_schema()
    if out:
        write_json_atomic(out, s)
        typer.echo(f"wrote {out}")
    else:
        json.dump(s, sys.stdout, indent=1)
        sys.stdout.write("\n")


def _core_command_invoked(argv: list[str]) -> bool:
    """Whether ``argv`` runs one of the commands defined above (``extract``, ``eval``, …): then the
    sub-apps, whose imports (pandas for the experiments) cost half a second, are not mounted. Anything
    else (no command, ``--help``, a sub-app, an import from a test) mounts them all."""
    words = [a for a in argv[1:2] if not a.startswith("-")]
    core = {c.name or c.callback.__name__.replace("_", "-") for c in app.registered_commands}
    return bool(words) and words[0] in core | {"annotate"}


def _mount_subapps() -> None:
    if _core_command_invoked(sys.argv):
        return
    from argus.ingest.courtlistener import courtlistener_command

    app.command("fetch-courtlistener", help="Download NOS 442 complaints from CourtListener RECAP")(courtlistener_command)
    from argus.experiments.cli import app as experiment_app
    from optimizers.cli import app as frontier_app

    app.add_typer(experiment_app, name="experiment", help="Downstream experiments: claims, clustering and more")

    app.add_typer(frontier_app, name="frontier", help="Inspect, verify and reprice compiled quality–cost frontiers")
    try:
        from argus.statutes.cli import app as statutes_app
    except ImportError:
        return
    app.add_typer(statutes_app, name="statutes", help="German statute knowledge graph and retrieval")


_mount_subapps()


def main() -> None:
    try:
        app()
    finally:
        # the objects left at exit (litellm's, torch's modules and types) join the permanent generation,
        # so the interpreter's last collection does not walk them all: about 1 s off every command
        # that imported litellm, with the same atexit handlers run as before
        import gc

        gc.freeze()


if __name__ == "__main__":
    main()
