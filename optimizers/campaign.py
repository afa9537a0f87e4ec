"""Optimization campaigns: GEPA evolves the pipeline's programs inside an Optuna search over settings;
every candidate is scored and priced by deployment runs; the quality–cost frontier of what
``argus extract --frontier`` runs.

A campaign (``campaigns/<name>.yaml``, :class:`optimizers.config.CampaignConfig`) runs as:

1. **Outer search** — Optuna (two objectives) over the discrete settings (task model per stage,
   reflection and judge model, temperature, retries, FrameNet hints, design). Each trial is one
   setting: a small space is enumerated in a seeded order, a larger one drawn by multivariate TPE
   (random for the first 10 finished trials) seeded by the position, so a resumed campaign draws what
   an uninterrupted one would.
2. **Inner search** — the auxiliary programs listed (fact fallback, chunker, resolver, QA) evolve
   first on their own gold-derived examples and metrics; their best instructions join the trial's
   pipeline. Then ``dspy.GEPA`` evolves Stage 1 and Stage 2 *inside* ``argus.pipeline.ArgusPipeline``
   (the student is the pipeline; its minibatches are gold chunk windows run through
   ``forward(document, chunk)``, the pipeline's own Stage 1 → repair → Stage 2 → repair code)
   against ``metrics.gepa.GraphMetric`` with per-predictor feedback.
3. **Deployment runs** — every GEPA candidate is built by ``optimizers.deploy.pipeline_for`` (what
   deployment builds) and run on the whole validation documents: quality per document from
   ``metrics.quality.DocumentQuality`` (structural + gold + judge as weighted), cost per document
   from the run's own ledger at list price (USD, or tokens when every model is free). Metric, judge,
   reflection and GEPA calls are optimization spend, booked apart (``RUN/spend.json``,
   ``frontier.json: optimization_spend``), never in a member's cost.
4. **Frontier** — ``optimizers.frontier.build_frontier_file`` over every candidate, with the cost
   unit and hypervolume reference fixed once per campaign (``RUN/objectives.json``); members are
   deployed on the test documents too; artifacts as in ``optimizers.frontier``.

Lifecycle: an estimate is printed first; a progress bar runs; ``RUN/status.json`` names the trial
and phase; a stop file (``RUN/STOP``), Ctrl-C, SIGTERM (``argus optimize`` then exits 143), the wall
clock or the USD budget end the campaign cleanly: a stopped GEPA search is not kept, a stopped trial
is re-run on resume, and no test deployment runs after a stop. A killed campaign resumes from its run directory (Optuna's journal,
one JSON record per finished evaluation, GEPA's finished candidate lists) to the frontier an
uninterrupted run gives. All calls go to ``RUN/ledger.jsonl``.

Threads: ``concurrency.num_threads`` documents of a deployment run, and examples of GEPA's and the
auxiliary programs' evaluations, are evaluated at once; results are gathered by index, and every
call made in a worker thread is booked under the phase that started it
(``optimizers.evaluation.ordered_map``, ``dspy_threads_carry_context``).

A deployment run (or a GEPA search, ``optimizers.search``) whose model cannot be reached (calls failed through their retries:
``ProviderFault``, ``CredentialsError``) is not kept — it would score the candidate 0 at no cost, the
frontier's cheapest member for good — and ends the campaign as failed (``ProviderOutage``, exit status
1); the same command resumes it.

A damaged record of finished work in RUN (not JSON, or JSON of another shape) stops the campaign with an
``InputError`` naming the file (``optimizers.storage.read_record``); the compiled folder is rewritten
from RUN on every run, so a damaged ``frontier.json`` or manifest there is replaced by a resume.

Workers (``storage=`` / ``--storage URL`` or the environment variable ``ARGUS_STORAGE``, where a URL with a
password belongs: a command line is visible to every user of the machine; an SQLAlchemy URL such as
``postgresql://…``): several
processes, on one machine or many, run the trials of one campaign through Optuna's ``RDBStorage``;
finished work is shared in the storage, and every worker writes the same frontier (see
``optimizers.scheduler``).

Tracking (``tracking.mlflow`` / ``--mlflow URI``, off by default): ``optimizers.tracking`` logs the
campaign to MLflow — a parent run, a child run per trial, the frontier as artifacts — without ever
holding it up.

The code is in three parts, which :meth:`Campaign.run` orchestrates:

- ``optimizers.scheduler`` — the study, which trial a worker runs next (claims, heartbeats, stale
  trials), the workers' spend, the status and stop files;
- ``optimizers.search`` — one trial: the auxiliary programs' and the pipeline's GEPA searches, and the
  candidates' deployment runs on the validation documents;
- ``optimizers.assembly`` — deployment results → member manifests, programs and the frontier file.

:class:`Campaign` keeps what they share: the models, the pipelines candidates deploy, the metrics, the
data splits and the deployment runs.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import dspy
from rich.markup import escape

from argus.config import LMSpec
from argus.models.engine import EngineCrashError
from argus.errors import ConfigError, InputError
from argus.io import write_json_atomic
from argus.models.ledger import CostLedger, ledger_context
from optimizers.assembly import FrontierAssembly, model_name
from optimizers.budget import SpendBook
from optimizers.config import CampaignConfig
from optimizers.evaluation import CandidateEval, deployment_run, dspy_threads_carry_context, machine_info
from optimizers.scheduler import Scheduler, WorkerSpend, ctrl_c_stops
from optimizers.search import ProviderOutage, TrialSearch, aux_programs, design_programs, reflection_fallback
from optimizers.storage import Artifacts, content_hash, redact_url
from optimizers.tracking import open_tracker


@dataclass
class CampaignResult:
    run_dir: Path
    compiled_dir: Path
    evaluations: list[CandidateEval]
    frontier: list[str]
    hypervolume_history: list[dict]
    stopped: str = ""
    spent_usd: float = 0.0
    calls: int = 0
    seconds: float = 0.0
    #: stopped by a failure (the local engine crashed), not by the user or a budget
    failed: bool = False
    spend: dict = field(default_factory=dict)


LMBuilder = Callable[[LMSpec], Any]

#: a document of a deployment run that failed with one of these could not reach its model: no score of the candidate
_OUTAGES = ("ProviderFault", "CredentialsError")


class Campaign:
    """One campaign run (or one worker of it, with ``storage``); ``run()`` is resumable from ``run_dir``.

    ``storage``: an SQLAlchemy URL (``postgresql://user:pw@host/db``) — the campaign's trials and
    finished work live there and several workers may run at once; None: Optuna's journal file in
    ``run_dir`` (one process). ``worker``: this worker's name (default host-pid) in its ledger,
    phases and status files. ``num_threads``: overrides ``concurrency.num_threads``.
    """

    def __init__(self, config: CampaignConfig, run_dir: str | Path, compiled_root: str | Path = "compiled", *,
                 lm_builder: LMBuilder | None = None, console=None, storage: str | None = None,
                 worker: str | None = None, num_threads: int | None = None):
        from rich.console import Console

        self.config = config
        self.run_dir = Path(run_dir)
        self.compiled_dir = Path(compiled_root) / config.name
        self.console = console or Console(stderr=True)
        if lm_builder is None:
            from argus.models.lm import build_lm

            lm_builder = build_lm
        self.lm_builder = lm_builder
        self._lms: dict[str, Any] = {}
        self._lms_lock = threading.Lock()
        self._classifier = None
        self.storage_url = storage
        self.worker = re.sub(r"[^A-Za-z0-9_.-]", "_", worker or f"{socket.gethostname()}-{os.getpid()}")
        self.num_threads = int(num_threads or config.concurrency.num_threads)
        if self.num_threads < 1:
            raise ConfigError("num_threads must be at least 1")
        self._art = Artifacts(self.run_dir)
        self.scheduler = Scheduler(config, self.run_dir, storage_url=storage, worker=self.worker, console=self.console)

    # -------------------------------------------------------------- run
    def run(self) -> CampaignResult:
        """Run (or resume) the campaign: trials until every position is complete or a stop, then the
        frontier; what this worker spent and found."""
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        from argus.models.lm import SchemaJSONAdapter
        from argus.pipeline import configure_cache

        cfg, scheduler = self.config, self.scheduler
        rdb = scheduler.rdb
        t_start = time.monotonic()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        (self.run_dir / "evals").mkdir(exist_ok=True)
        record = cfg.model_dump(mode="json")
        if cfg.tracking.mlflow:
            record["tracking"]["mlflow"] = redact_url(cfg.tracking.mlflow)
        write_json_atomic(self.run_dir / "campaign.json", record, indent=1)
        configure_cache(self.run_dir / "cache")
        study = scheduler.open_study()
        if rdb:
            self._art = scheduler.artifacts()
            scheduler.check_fingerprint(self._art)
        ledger_path = scheduler.file("ledger", "jsonl")
        previous = CostLedger.from_jsonl(ledger_path).entries if ledger_path.exists() else []
        ledger = CostLedger(path=ledger_path)
        worker_spend = WorkerSpend(self._art, self.worker, rdb=rdb)
        spend = SpendBook(self.run_dir, ledger, previous, file=scheduler.file("phases", "json").name,
                          on_record=worker_spend.share if rdb else None)
        stop = scheduler.stop_conditions(ledger, sum(e.cost_usd for e in previous), t_start,
                                         others=worker_spend.others_usd if rdb else None)
        splits = self._splits()
        plan = scheduler.plan()
        est = self.estimate(splits)
        search = TrialSearch(cfg, self.run_dir, self._art, worker=self.worker, rdb=rdb, num_threads=self.num_threads,
                             lm=self.lm, pipeline=self.pipeline, chunk_metric=self._chunk_metric,
                             quality=self._document_quality, evaluate=self._eval, status=scheduler.status)
        assembly = FrontierAssembly(cfg, self.run_dir, self.compiled_dir, self._art, rdb=rdb, evaluate=self._eval,
                                    quality=self._document_quality, status=scheduler.status,
                                    spend_summary=worker_spend.summary, estimate=est,
                                    first_trial_done=lambda: 0 in scheduler.done(study, plan),
                                    search=lambda: scheduler.search_summary(study, plan))
        objective = assembly.objective()
        short = len(plan) < cfg.budget.trials
        self.console.print(
            f"[bold]campaign {cfg.name}[/bold]: {len(plan)} trial(s)"
            + (f" (the search space has only {len(plan)} setting(s))" if short else "")
            + f", GEPA ≤ {cfg.budget.max_metric_calls} metric "
            f"calls each on {len(splits['train'])} train chunk examples; candidates deployed on "
            f"{len(splits['val'])} validation and members on {len(splits['test'])} test document(s); cost in "
            f"{objective['cost_key']} ({objective['why']}). Estimate: ≤ {est['optimization_calls']} optimization calls "
            f"+ ≤ {est['deployment_calls']} deployment-run calls (~{est['calls_per_document']} per document), about "
            f"{est['minutes']} min at {cfg.budget.seconds_per_call:g} s/call"
            + (f"; USD budget ${cfg.budget.max_usd}" if cfg.budget.max_usd is not None else "")
            + f"; {self.num_threads} thread(s)"
            + (f"; worker {self.worker} on {redact_url(self.storage_url)}" if rdb else "")
        )
        self._chunk_metric()  # a bad metric or judge configuration fails here, before any LM call
        # missing mlflow or a tracking server that cannot be reached fails here too
        tracker = open_tracker(cfg, self._art, worker=self.worker, storage_url=self.storage_url)
        if tracker.where:
            self.console.print(f"tracked in {tracker.where}")
        if not rdb:
            scheduler.recover(study)
        done = scheduler.done(study, plan)
        tracker.resume(done, assembly.evaluations)
        claimed: int | None = None  # the trial this worker runs: released (queued again) if it does not finish
        with ctrl_c_stops(stop):
            try:
                with dspy.context(adapter=SchemaJSONAdapter()), dspy_threads_carry_context(), Progress(
                    TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    TextColumn("{task.fields[note]}"), console=self.console,
                ) as progress:
                    task = progress.add_task("trials", total=len(plan), completed=len(done), note="")
                    if cfg.default_candidate:
                        progress.update(task, note="the default: what argus extract runs")
                        self._default_candidates(splits, ledger, spend, stop)
                    while not stop.check():
                        kind, value = scheduler.next_trial(study, plan)
                        if kind == "done":
                            progress.update(task, completed=value, note="")
                            break
                        if kind == "wait":
                            done = scheduler.done(study, plan)
                            progress.update(task, completed=len(done),
                                            note=f"waiting: {value} trial(s) running in other workers")
                            scheduler.wait(stop, running=value, trials_done=len(done))
                            continue
                        claimed, position = value
                        trial = scheduler.trial(study, claimed, position)
                        settings = scheduler.settings(trial)
                        iteration = position + 1
                        progress.update(task, note=f"trial {iteration}: {_short_settings(settings)}")
                        tracker.trial_started(iteration, settings)
                        with scheduler.heartbeat(study, claimed):
                            evals = search.run(iteration, settings, splits, ledger, spend, stop)
                        if stop.check():
                            # the trial is queued again (finally below): a resumed campaign runs it, reusing what is done
                            break
                        scheduler.finish(study, trial, evals, objective["cost_key"])
                        claimed = None
                        tracker.trial_finished(iteration, evals)
                        if not evals:
                            break
                        done = scheduler.done(study, plan)
                        assembly.update(splits, ledger, spend, stop, iteration=len(done), wait=False)
                        tracker.frontier_written(*assembly.written)
                        progress.update(task, completed=len(done), note="")
            except KeyboardInterrupt:
                stop.interrupted = True
                stop.check()
            except EngineCrashError as exc:
                self.console.print(f"[red]{escape(str(exc))}[/red]")
                stop.check()
            except ProviderOutage as exc:
                self.console.print(f"[red]{escape(str(exc))}[/red]")
                stop.failed, stop.reason = True, str(exc)
            finally:
                if claimed is not None:  # stopped or failed mid-trial: its position is queued again now
                    scheduler.release(study, claimed)
                    tracker.trial_stopped(position + 1)
        done = scheduler.done(study, plan)
        # the frontier reflects every finished evaluation (of every worker); after a stop no new deployment runs
        try:  # after a stop, not behind another worker's test deployments: that worker writes the frontier
            assembly.update(splits, ledger, spend, stop, iteration=len(done), wait=not stop.check())
        except EngineCrashError as exc:
            self.console.print(f"[red]{escape(str(exc))}[/red]")
            stop.check()
        except ProviderOutage as exc:
            self.console.print(f"[red]{escape(str(exc))}[/red]")
            stop.failed, stop.reason = True, str(exc)
        except InputError:  # a damaged record of finished work: the user's to remove (it names the file)
            scheduler.status(phase="stopped", reason="a record in the run directory cannot be read", trials_done=len(done))
            raise
        except Exception as exc:  # noqa: BLE001 - finalization must say what failed, and the run is marked failed
            logging.getLogger("argus").exception("campaign %s: writing the frontier failed", cfg.name)
            self.console.print(f"[red]writing the frontier failed: {type(exc).__name__}: {exc}[/red]")
            stop.failed = True
            stop.reason = stop.reason or f"finalization failed: {type(exc).__name__}: {exc}"
        scheduler.status(phase="stopped" if stop.reason else "done", reason=stop.reason, trials_done=len(done))
        tracker.frontier_written(*assembly.written)
        tracker.finish(self.compiled_dir, "FAILED" if stop.failed else "KILLED" if stop.reason else "FINISHED")
        evals = assembly.evaluations("val")
        frontier_path = self.compiled_dir / "frontier.json"
        members = json.loads(frontier_path.read_text())["members"] if frontier_path.exists() else []
        hv = json.loads(frontier_path.read_text()).get("hypervolume_history", []) if frontier_path.exists() else []
        summary = worker_spend.summary(spend)
        result = CampaignResult(self.run_dir, self.compiled_dir, evals, members, hv, stop.reason, stop.spent(),
                                summary["total"]["calls"], time.monotonic() - t_start, failed=stop.failed, spend=summary)
        self.console.print(
            f"campaign {cfg.name}: {len(done)} trial(s), {len(evals)} candidate(s) deployed on validation, frontier "
            f"{members}; optimization spend ${summary['total']['billed_usd']:.4f} billed in {summary['total']['calls']} "
            f"LM calls ({summary['total']['list_tokens']:,} tokens at list)"
            + (f" by all workers; this worker {spend.summary()['total']['calls']} calls" if rdb else "")
            + (f"; stopped: {stop.reason}" if stop.reason else "")
        )
        return result

    # -------------------------------------------------------------- what the parts share
    def lm(self, spec: LMSpec):
        """The LM for a spec: one object per spec, shared by every candidate and thread."""
        key = content_hash(spec.model_dump())
        with self._lms_lock:  # deployment threads ask at once: one LM object per spec
            if key not in self._lms:
                self._lms[key] = self.lm_builder(spec)
            return self._lms[key]

    def _overrides(self) -> dict:
        """What a campaign adds under every member's settings: its model defaults (servers, context
        size) and its cache folder. Not recorded in members (a deployment brings its own)."""
        from optimizers.deploy import MEMBER_STAGES

        o = {f"lm.stages.{stage}.{k}": v for stage in MEMBER_STAGES + ("qa",) for k, v in self.config.models.defaults.items()}
        o["cache_dir"] = str(self.run_dir / "cache")
        return o

    def pipeline(self, settings: dict, instructions: dict[str, str] | None = None):
        """The pipeline a candidate deploys (``optimizers.deploy.pipeline_for``)."""
        from optimizers.deploy import pipeline_for

        pipe = pipeline_for(settings, instructions=instructions, overrides=self._overrides(), lm_builder=self.lm,
                            classifier=self._classifier)
        if self._classifier is None:
            self._classifier = pipe.classifier  # loaded once, shared by every candidate
        return pipe

    def _splits(self) -> dict:
        """The campaign's examples: ``train`` (gold chunk windows for GEPA's minibatches), ``val`` and ``test``
        (whole documents for deployment runs), and ``<program>:<split>`` for each auxiliary program."""
        from optimizers.examples import (
            chunk_examples,
            chunker_examples,
            document_examples,
            fact_examples,
            qa_examples,
            resolver_examples,
        )

        d = self.config.data
        root = Path(d.root) if d.root else None
        out: dict = {}
        t = d.train
        out["train"] = chunk_examples(t.split, docs=t.docs, doc_offset=t.doc_offset, ids=t.ids,
                                      chunks_per_doc=t.chunks_per_doc, max_sentences=d.max_sentences,
                                      overlap=d.overlap, root=root)
        for name in ("val", "test"):
            s = getattr(d, name)
            out[name] = document_examples(s.split, docs=s.docs, doc_offset=s.doc_offset, ids=s.ids, root=root)
        for name in ("train", "val", "test"):
            if not out[name]:
                s = getattr(d, name)
                raise ConfigError(f"campaign {self.config.name}: the {name} split ({s.split}) has no annotated documents")
        train_docs = {ex.doc_id for ex in out["train"]}
        overlap = train_docs & {ex.doc_id for ex in out["val"] + out["test"]}
        if overlap:
            self.console.print(f"[yellow]note: documents {sorted(overlap)} are in the train split and in val/test; "
                               "their scores are not held out[/yellow]")
        for prog in aux_programs(self.config):
            for name in ("train", "val", "test"):
                s = getattr(d, name)
                kw = dict(docs=s.docs, doc_offset=s.doc_offset, ids=s.ids)
                per = s.chunks_per_doc or 2
                if prog == "fact_fallback":
                    out[f"{prog}:{name}"] = fact_examples(s.split, batches_per_doc=s.chunks_per_doc, root=root, **kw)
                elif prog == "qa":
                    out[f"{prog}:{name}"] = qa_examples(s.split, questions_per_doc=3 * per, **kw)
                elif prog == "resolver":
                    out[f"{prog}:{name}"] = resolver_examples(s.split, pairs_per_doc=3 * per, root=root, **kw)
                else:
                    out[f"{prog}:{name}"] = chunker_examples(s.split, max_sentences=max(d.max_sentences, 3), root=root, **kw)
        return out

    def _judge(self, judge_model: str | None = None):
        """The LM judge of the quality metrics (None when the metric gives the judge no weight)."""
        m = self.config.metric
        if m.weights.get("judge", 0) <= 0:
            return None
        model = judge_model or self.config.models.judge
        if model is None:
            raise ConfigError("metric.weights.judge > 0 needs models.judge (or space.judge_model)")
        from metrics.judge import Judge

        return Judge(lm=self.lm(self.config.lm_spec(model, max_tokens=800)), name=model_name(model))

    def _chunk_metric(self, judge_model: str | None = None):
        """GEPA's metric on chunk windows, with per-predictor feedback."""
        from metrics.gepa import GraphMetric

        m = self.config.metric
        return GraphMetric(weights=m.weights, structural_weights=m.structural_weights,
                           coverage_target=m.coverage_target, judge=self._judge(judge_model))

    def _document_quality(self, judge_model: str | None = None):
        """The quality of a deployment run's documents (structural + gold + judge as weighted)."""
        from metrics.quality import DocumentQuality

        m = self.config.metric
        return DocumentQuality(m.weights, structural_weights=m.structural_weights, coverage_target=m.coverage_target,
                               judge=self._judge(judge_model))

    def estimate(self, splits: dict) -> dict:
        """LM calls a campaign will make at most, roughly: optimization (GEPA's task calls on chunk
        minibatches, reflection, judge) and deployment runs (candidates × validation documents, frontier
        members × test documents)."""
        from argus.config import ArgusConfig

        b = self.config.budget
        cfg = ArgusConfig.load(None, {**self._overrides(), **dict(self.config.pipeline)})
        retries = 1 + max(self.config.space.max_retries)
        per_doc = []
        for doc in splits["val"] + splits["test"]:
            gold = json.loads(doc.gold_path.read_text(encoding="utf-8"))
            facts = sum(1 for sec in gold["sections"] if sec["kind"] == "facts" for p in sec["paragraphs"] for s in p if s["fact"])
            step = max(1, cfg.chunking.max_sentences - cfg.chunking.overlap)
            chunks = max(1, math.ceil(max(0, facts - cfg.chunking.overlap) / step))
            pairs = min(cfg.merge.max_pairs, chunks * cfg.merge.top_k) if cfg.merge.resolver and chunks > 1 else 0
            per_doc.append((1 if cfg.chunking.use_llm and facts > cfg.chunking.max_sentences else 0) + 2 * chunks * retries + pairs)
        calls_per_doc = sum(per_doc) / max(1, len(per_doc))
        evolves = any(design_programs(self.config, d) for d in (self.config.space.extraction or ["chunked"]))
        candidates = 1 + (b.max_metric_calls // max(1, 2 * self.config.reflection_minibatch_size) if evolves else 0)
        gepa = b.max_metric_calls * 2 * retries * (1 if evolves else 0)
        n_aux = len(aux_programs(self.config))
        aux = n_aux * b.max_metric_calls * 2
        reflection = (1 + n_aux) * max(1, b.max_metric_calls // max(1, self.config.reflection_minibatch_size))
        deploy = candidates * len(splits["val"]) * calls_per_doc + 2 * len(splits["test"]) * calls_per_doc
        judged = self.config.metric.weights.get("judge", 0.0)
        judge = (b.max_metric_calls + candidates * len(splits["val"])) if judged else 0
        optimization = b.trials * (gepa + aux + reflection + judge)
        deployment = b.trials * deploy
        calls = optimization + deployment
        return {"optimization_calls": int(optimization), "deployment_calls": int(deployment), "lm_calls": int(calls),
                "calls_per_document": round(calls_per_doc, 1), "minutes": round(calls * b.seconds_per_call / 60, 1)}

    def _eval(self, key, split, settings, instructions, documents, quality, ledger) -> CandidateEval:
        """A candidate's deployment runs on a split (``num_threads`` documents at once); what is finished
        (here or, with an RDB storage, by any worker) is reused. A validation evaluation is shared once its
        lineage is set (``TrialSearch.run``), a test evaluation at once."""
        name = f"evals/{split}-{key}.json"
        found = self._art.get(name)
        if found is not None:
            return CandidateEval.from_dict(found)
        pipe = self.pipeline(settings, instructions)
        with ledger_context(ledger, program=f"deploy-{split}"):
            res = deployment_run(pipe, documents, quality, ledger, label=split, num_threads=self.num_threads)
        outage = next((f"{doc}: {err}" for doc, err in (res.get("errors") or {}).items()
                       if err.split(":", 1)[0] in _OUTAGES), None)
        if outage:  # scored 0 at no cost, it would join the frontier as its cheapest member, and stay there
            raise ProviderOutage(f"the {split} deployment run of candidate {key} could not reach its model "
                                 f"({outage[:400]}); it is not kept: run the same command again to resume once "
                                 "the model answers")
        ev = CandidateEval(key=key, split=split, settings=settings, instructions=instructions, machine=machine_info(),
                           num_threads=self.num_threads, **res)
        self._art.put(name, ev.to_dict(), share=split != "val")
        return CandidateEval.from_dict(self._art.get(name)) if self.scheduler.rdb and split != "val" else ev

    def _default_candidates(self, splits, ledger, spend, stop) -> list[CandidateEval]:
        """Deploy what ``argus extract`` runs with each task model of the space (``default_settings``) on the
        validation documents, through the same deployment runs as every candidate (``_eval``); trial 0, marked
        ``default``. Finished once, reused by a resumed run and by every worker."""
        from optimizers.deploy import default_settings
        from optimizers.examples import instructions_of

        out = []
        for model in dict.fromkeys(self.config.space.task_model):
            if stop.check():
                break
            settings = default_settings(model)
            instructions = instructions_of(self.pipeline(settings))
            key = content_hash({"settings": settings, "instructions": instructions})
            self.scheduler.status(trial=0, phase="default", settings=settings)
            start = spend.position()
            ev = self._eval(key, "val", settings, instructions, splits["val"], self._document_quality(), ledger)
            spend.record(0, "default", start)
            if not ev.default:
                ev.default, ev.trial = True, 0
                self._art.put(f"evals/val-{key}.json", ev.to_dict())
            self._art.share(f"evals/val-{key}.json", ev.to_dict())
            out.append(ev)
        return out

    # -------------------------------------------------------------- a worker's steps one at a time
    # (the worker tests drive them directly; the scheduler and the search do the work)
    def _plan(self) -> list[dict | None]:
        return self.scheduler.plan()

    def _open_study(self):
        return self.scheduler.open_study()

    def _next_trial(self, study, plan):
        return self.scheduler.next_trial(study, plan)

    def _release(self, study, trial_id: int) -> None:
        self.scheduler.release(study, trial_id)

    def _check_fingerprint(self, study) -> None:
        self.scheduler.check_fingerprint(self._art)

    def _reflection_fallback(self, iteration: int):
        return reflection_fallback(self.run_dir, self.worker, iteration)


def _short_settings(settings: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in settings.items() if k != "pipeline")


def run_campaign(path: str | Path, *, run_root: str | Path = "runs/campaigns", compiled_root: str | Path = "compiled",
                 lm_builder: LMBuilder | None = None, storage: str | None = None, worker: str | None = None,
                 num_threads: int | None = None, mlflow: str | None = None) -> CampaignResult:
    """Run (or resume) the campaign file ``path``; with ``storage`` (an SQLAlchemy URL) as one of its
    workers (see the module docstring); ``mlflow``: a tracking URI that overrides ``tracking.mlflow``."""
    cfg = CampaignConfig.load(path)
    if mlflow:
        cfg = cfg.model_copy(update={"tracking": cfg.tracking.model_copy(update={"mlflow": mlflow})})
    return Campaign(cfg, Path(run_root) / cfg.name, compiled_root, lm_builder=lm_builder, storage=storage,
                    worker=worker, num_threads=num_threads).run()
