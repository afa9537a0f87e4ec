"""Optimization campaigns: GEPA evolves the pipeline's programs inside an Optuna search over settings;
every candidate is scored and priced by deployment runs; the quality–cost frontier of what
``argus extract --frontier`` runs.

A campaign (``campaigns/<name>.yaml``, :class:`optimizers.config.CampaignConfig`) runs as:

1. **Outer search** — Optuna (NSGA-II, two objectives) over the discrete settings (task model per
   stage, reflection and judge model, temperature, retries, FrameNet hints). Each trial is one
   setting, seeded by its position, so a resumed campaign draws what an uninterrupted one would.
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
and phase; a stop file (``RUN/STOP``), Ctrl-C, the wall clock or the USD budget end the campaign
cleanly: a stopped GEPA search is not kept, a stopped trial is re-run on resume, and no test
deployment runs after a stop. A killed campaign resumes from its run directory (Optuna's journal,
one JSON record per finished evaluation, GEPA's finished candidate lists) to the frontier an
uninterrupted run gives. All calls go to ``RUN/ledger.jsonl``.

Threads: ``concurrency.num_threads`` documents of a deployment run, and examples of GEPA's and the
auxiliary programs' evaluations, are evaluated at once; results are gathered by index, and every
call made in a worker thread is booked under the phase that started it
(``optimizers.evaluation.ordered_map``, ``dspy_threads_carry_context``).

Workers (``storage=`` / ``--storage URL``, an SQLAlchemy URL such as ``postgresql://…``): several
processes, on one machine or many, run the trials of one campaign through Optuna's ``RDBStorage``.

- **Trials are positions.** The campaign's settings are planned once (``_plan``: the enumerated
  space in its seeded order, or one NSGA-II draw per position); each position is a queued Optuna
  trial carrying ``argus:position``. A worker claims the open position with the lowest number by
  moving its WAITING trial to RUNNING (atomic in the storage: one worker wins); two workers that
  queued the same position at once leave a duplicate, which the later trial number gives up when
  claimed. The trial budget is the number of positions, whichever worker completes them.
- **Finished work lives in the storage** as study user attributes ``argus:<name>`` — every
  candidate evaluation (``evals/val-<key>.json``, with its lineage), each test evaluation, each
  trial's GEPA candidates and auxiliary programs, the objectives and reference point, and each
  worker's spend summary — first writer wins. The files under ``RUN`` are this worker's cache; the
  frontier, hypervolume and manifests are built from the storage, so every worker writes the same
  frontier, from everything all workers evaluated.
- **Heartbeats.** A worker records a heartbeat for its trial every ``concurrency.heartbeat_s``; a
  RUNNING trial without one for ``concurrency.grace_s`` (its worker died or lost the database) is
  failed and queued again with the same settings and position (``optuna.storages.fail_stale_trials``
  with ``requeue_trial``); a trial whose worker ran on this machine and whose process is gone is queued
  again at once. A live worker's trial is never taken. A stopped worker (stop file, Ctrl-C, budget)
  queues its trial again itself. Idle workers wait while other workers run the last open trials
  (to take over a trial whose worker dies), then write the final frontier.
- **Spend.** Each worker books its calls in its own ledger and phases (``RUN/ledger.<worker>.jsonl``,
  ``RUN/phases.<worker>.json``, ``RUN/status.<worker>.json``; ``<worker>`` is host-pid unless named)
  and shares its spend summary; the campaign's optimization spend is their sum.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import re
import shutil
import signal
import socket
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import dspy

from argus.config import LMSpec
from argus.engine import EngineCrashError
from argus.errors import ConfigError
from argus.io import append_jsonl_line, write_json_atomic
from argus.ledger import CostLedger, ledger_context
from optimizers.budget import SpendBook, StopConditions, merge_spend
from optimizers.config import AUX_PROGRAMS, CampaignConfig
from optimizers.evaluation import CandidateEval, deployment_run, dspy_threads_carry_context, evaluate_examples
from optimizers.proposer import TextInstructionProposer
from optimizers.storage import (
    POSITION,
    Artifacts,
    process_alive,
    rdb_url,
    redact_url,
    requeue_trial,
    schema_lock,
    schema_race,
    trial_position,
)

_log = logging.getLogger("argus")

EVOLVABLE = {"stage1": "programs.stage1.extract.predict", "stage2": "programs.stage2.relate.predict",
             "sentence_events": "programs.sentence_events.choose.predict"}
#: the evolvable programs each extraction design runs (a trial evolves only what its design calls)
DESIGN_PROGRAMS = {"chunked": ("stage1", "stage2"), "sentence": ("sentence_events", "stage2")}


def _hash(obj: Any, n: int = 12) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:n]


class _Evolvable:
    """GEPA component selector: round robin over the components the campaign evolves (the pipeline's
    other predictors keep their instructions)."""

    def __init__(self, names: list[str]):
        self.names = names
        self._next: dict[int, int] = {}

    def __call__(self, state, trajectories, subsample_scores, candidate_idx: int, candidate: dict[str, str]) -> list[str]:
        names = [n for n in self.names if n in candidate]
        k = self._next.get(candidate_idx, 0)
        self._next[candidate_idx] = k + 1
        return [names[k % len(names)]]


# ----------------------------------------------------------------------------- the campaign


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
            from argus.lm import build_lm

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

    @property
    def _rdb(self) -> bool:
        return self.storage_url is not None

    def _file(self, stem: str, ext: str) -> Path:
        """``RUN/<stem>.<ext>``, or ``RUN/<stem>.<worker>.<ext>`` for a worker on an RDB storage."""
        return self.run_dir / (f"{stem}.{self.worker}.{ext}" if self._rdb else f"{stem}.{ext}")

    # -------------------------------------------------------------- helpers
    def lm(self, spec: LMSpec):
        key = _hash(spec.model_dump())
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
        for prog in self._aux_programs():
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

    def _reflection_lm(self, model: str | None = None):
        # the reflection model answers in plain text (TextInstructionProposer); max_tokens bounds it
        return self.lm(self.config.lm_spec(model or self.config.models.reflection, max_tokens=900))

    def _judge(self, judge_model: str | None = None):
        m = self.config.metric
        if m.weights.get("judge", 0) <= 0:
            return None
        model = judge_model or self.config.models.judge
        if model is None:
            raise ConfigError("metric.weights.judge > 0 needs models.judge (or space.judge_model)")
        from metrics.judge import Judge

        return Judge(lm=self.lm(self.config.lm_spec(model, max_tokens=800)), name=_model_name(model))

    def _chunk_metric(self, judge_model: str | None = None):
        from metrics.gepa import GraphMetric

        m = self.config.metric
        return GraphMetric(weights=m.weights, structural_weights=m.structural_weights,
                           coverage_target=m.coverage_target, judge=self._judge(judge_model))

    def _document_quality(self, judge_model: str | None = None):
        from metrics.quality import DocumentQuality

        m = self.config.metric
        return DocumentQuality(m.weights, structural_weights=m.structural_weights, coverage_target=m.coverage_target,
                               judge=self._judge(judge_model))

    def _evolvable(self, settings: dict | None = None) -> list[str]:
        """Predictor names GEPA evolves: the campaign's programs that the trial's design runs (Stage 2
        only where that design runs it)."""
        design = (settings or {}).get("extraction") or "chunked"
        names = [p for p in self.config.programs if p in EVOLVABLE and p in DESIGN_PROGRAMS[design]]
        if design == "sentence" and "stage2" in names and (settings or {}).get("task_model") \
                and not self.pipeline(settings).sentence_stage2:
            names.remove("stage2")
        return [EVOLVABLE[p] for p in names]

    def _aux_programs(self) -> list[str]:
        return [p for p in self.config.programs if p in AUX_PROGRAMS]

    def _status(self, **fields) -> None:
        extra = {"worker": self.worker} if self._rdb else {}
        write_json_atomic(self._file("status", "json"), {**fields, **extra, "time": _now()}, indent=1)

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
        evolves = any(self._evolvable({"extraction": d}) for d in (self.config.space.extraction or ["chunked"]))
        candidates = 1 + (b.max_metric_calls // max(1, 2 * self.config.reflection_minibatch_size) if evolves else 0)
        gepa = b.max_metric_calls * 2 * retries * (1 if evolves else 0)
        aux = len(self._aux_programs()) * b.max_metric_calls * 2
        reflection = (1 + len(self._aux_programs())) * max(1, b.max_metric_calls // max(1, self.config.reflection_minibatch_size))
        deploy = candidates * len(splits["val"]) * calls_per_doc + 2 * len(splits["test"]) * calls_per_doc
        judge = (b.max_metric_calls + candidates * len(splits["val"])) if self._judge_weight() else 0
        optimization = b.trials * (gepa + aux + reflection + judge)
        deployment = b.trials * deploy
        calls = optimization + deployment
        return {"optimization_calls": int(optimization), "deployment_calls": int(deployment), "lm_calls": int(calls),
                "calls_per_document": round(calls_per_doc, 1), "minutes": round(calls * b.seconds_per_call / 60, 1)}

    def _judge_weight(self) -> float:
        return self.config.metric.weights.get("judge", 0.0)

    # -------------------------------------------------------------- objectives fixed once
    def _objective(self) -> dict:
        """Cost unit (``cost_usd`` when a model of the search space has a price, else ``tokens``),
        fixed at the first run and stored in ``RUN/objectives.json`` (and the storage) with the
        hypervolume reference."""
        obj = self._art.get("objectives.json")
        if obj is not None:
            return obj
        models = list(self.config.space.task_model) + list(self.config.space.stage2_model or [])
        paid = any(_model_price(self.config.lm_spec(m)) > 0 for m in models)
        obj = {"cost_key": "cost_usd" if paid else "tokens", "reference": None,
               "why": "a model of the search space has a price" if paid else "every model of the search space is free"}
        self._art.put("objectives.json", obj)
        return self._art.get("objectives.json")

    def _fix_reference(self, obj: dict, evals: list[CandidateEval]) -> dict:
        """The hypervolume reference: quality 0 and twice the largest cost of the first trial (position 1,
        whichever worker ran it; called once it is complete; ``max_cost_per_doc`` when the cost is in USD
        and it is set). Points beyond it add nothing."""
        if obj.get("reference") is not None:
            return obj
        first = [e for e in evals if e.trial == 1]
        if not first:
            return obj
        key = obj["cost_key"]
        bound = self.config.budget.max_cost_per_doc if key == "cost_usd" else None
        top = max(getattr(e, key) for e in first)
        obj = {**obj, "reference": {"quality": 0.0, key: float(bound if bound is not None else (2 * top if top > 0 else 1.0))}}
        self._art.put("objectives.json", obj, replace=True)  # every worker computes the same from position 1
        return obj

    # -------------------------------------------------------------- run
    def run(self) -> CampaignResult:
        import optuna
        from optuna.trial import TrialState
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        from argus.lm import SchemaJSONAdapter
        from argus.pipeline import configure_cache

        cfg = self.config
        t_start = time.monotonic()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        (self.run_dir / "evals").mkdir(exist_ok=True)
        write_json_atomic(self.run_dir / "campaign.json", cfg.model_dump(mode="json"), indent=1)
        configure_cache(self.run_dir / "cache")
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        study = self._open_study()
        self._study = study
        if self._rdb:
            self._art = Artifacts(self.run_dir, study)
            self._check_fingerprint(study)
        ledger_path = self._file("ledger", "jsonl")
        previous = CostLedger.from_jsonl(ledger_path).entries if ledger_path.exists() else []
        ledger = CostLedger(path=ledger_path)
        spend = SpendBook(self.run_dir, ledger, previous, file=self._file("phases", "json").name,
                          on_record=self._share_spend if self._rdb else None)
        stop = StopConditions(self.run_dir / "STOP", ledger, sum(e.cost_usd for e in previous), cfg.budget.max_usd,
                              (t_start + cfg.budget.wall_clock_s) if cfg.budget.wall_clock_s else None,
                              others=self._others_usd if self._rdb else None)
        splits = self._splits()
        objective = self._objective()
        plan = self._planned = self._plan()
        est = self._estimate = self.estimate(splits)
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
            + (f"; worker {self.worker} on {redact_url(self.storage_url)}" if self._rdb else "")
        )
        self._chunk_metric()  # a bad metric or judge configuration fails here, before any LM call
        if not self._rdb:
            for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
                # one process owns a journal: a RUNNING trial was killed mid-trial; it is closed as failed and
                # queued again with the same settings (what it finished is on disk and is reused)
                study._storage.set_trial_state_values(t._trial_id, TrialState.FAIL)
                requeue_trial(study, t)
        done = self._done(study, plan)
        previous_handler = signal.getsignal(signal.SIGINT)
        main_thread = threading.current_thread() is threading.main_thread()

        def on_sigint(signum, frame):
            stop.interrupted = True
            raise KeyboardInterrupt

        if main_thread:
            signal.signal(signal.SIGINT, on_sigint)
        self._current: int | None = None
        try:
            with dspy.context(adapter=SchemaJSONAdapter()), dspy_threads_carry_context(), Progress(
                TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                TextColumn("{task.fields[note]}"), console=self.console,
            ) as progress:
                task = progress.add_task("trials", total=len(plan), completed=len(done), note="")
                while not stop.check():
                    kind, value = self._next_trial(study, plan)
                    if kind == "done":
                        progress.update(task, completed=value, note="")
                        break
                    if kind == "wait":
                        done = self._done(study, plan)
                        progress.update(task, completed=len(done),
                                        note=f"waiting: {value} trial(s) running in other workers")
                        self._status(phase="waiting", running=value, trials_done=len(done))
                        deadline = time.monotonic() + cfg.concurrency.poll_s
                        while time.monotonic() < deadline and not stop.check():
                            time.sleep(min(0.2, cfg.concurrency.poll_s))
                        continue
                    trial_id, position = value
                    self._current = trial_id
                    study.sampler = optuna.samplers.NSGAIISampler(seed=cfg.seed + position)
                    if hasattr(study, "_thread_local"):
                        study._thread_local.cached_all_trials = None  # what Study.ask does: sample from the latest trials
                    trial = optuna.trial.Trial(study, trial_id)
                    settings = self._settings(trial)
                    iteration = position + 1
                    progress.update(task, note=f"trial {iteration}: {_short_settings(settings)}")
                    with self._heartbeat(study, trial_id):
                        evals = self._run_trial(iteration, settings, splits, ledger, spend, stop)
                    if stop.check():
                        break  # the trial is queued again (finally below): a resumed campaign runs it, reusing what is done
                    if not evals:
                        study.tell(trial, state=TrialState.FAIL, skip_if_finished=True)
                        self._current = None
                        break
                    best = max(evals, key=lambda e: (e.quality, -getattr(e, objective["cost_key"])))
                    study.tell(trial, [best.quality, getattr(best, objective["cost_key"])], skip_if_finished=True)
                    self._current = None
                    done = self._done(study, plan)
                    self._update_frontier(splits, ledger, spend, stop, iteration=len(done), wait=False)
                    progress.update(task, completed=len(done), note="")
        except KeyboardInterrupt:
            stop.interrupted = True
            stop.check()
        except EngineCrashError as exc:
            self.console.print(f"[red]{exc}[/red]")
            stop.check()
        finally:
            if main_thread:
                signal.signal(signal.SIGINT, previous_handler)
            if self._current is not None:  # stopped or failed mid-trial: its position is queued again now
                self._release(study, self._current)
                self._current = None
        done = self._done(study, plan)
        # the frontier reflects every finished evaluation (of every worker); after a stop no new deployment runs
        try:  # after a stop, not behind another worker's test deployments: that worker writes the frontier
            self._update_frontier(splits, ledger, spend, stop, iteration=len(done), wait=not stop.check())
        except EngineCrashError as exc:
            self.console.print(f"[red]{exc}[/red]")
            stop.check()
        except Exception as exc:  # noqa: BLE001 - finalization must say what failed, and the run is marked failed
            logging.getLogger("argus").exception("campaign %s: writing the frontier failed", cfg.name)
            self.console.print(f"[red]writing the frontier failed: {type(exc).__name__}: {exc}[/red]")
            stop.failed = True
            stop.reason = stop.reason or f"finalization failed: {type(exc).__name__}: {exc}"
        self._status(phase="stopped" if stop.reason else "done", reason=stop.reason, trials_done=len(done))
        evals = self._all_evals("val")
        frontier_path = self.compiled_dir / "frontier.json"
        members = json.loads(frontier_path.read_text())["members"] if frontier_path.exists() else []
        hv = json.loads(frontier_path.read_text()).get("hypervolume_history", []) if frontier_path.exists() else []
        summary = self._spend_summary(spend)
        result = CampaignResult(self.run_dir, self.compiled_dir, evals, members, hv, stop.reason, stop.spent(),
                                summary["total"]["calls"], time.monotonic() - t_start, failed=stop.failed, spend=summary)
        self.console.print(
            f"campaign {cfg.name}: {len(done)} trial(s), {len(evals)} candidate(s) deployed on validation, frontier "
            f"{members}; optimization spend ${summary['total']['billed_usd']:.4f} billed in {summary['total']['calls']} "
            f"LM calls ({summary['total']['list_tokens']:,} tokens at list)"
            + (f" by all workers; this worker {spend.summary()['total']['calls']} calls" if self._rdb else "")
            + (f"; stopped: {stop.reason}" if stop.reason else "")
        )
        return result

    _SPACE_KEYS = ("task_model", "temperature", "max_retries", "framenet_hints", "stage2_model", "reflection_model",
                   "judge_model", "extraction")

    # -------------------------------------------------------------- trials: positions, claims, heartbeats
    def _plan(self) -> list[dict | None]:
        """The settings of each trial position. A space of at most four times the trial budget is
        enumerated in a seeded shuffled order (no setting twice; a space smaller than the budget gives
        fewer positions, since a repeated setting would find every evaluation already done); a larger one
        gives ``budget.trials`` positions (None) each drawn by NSGA-II with a sampler seeded by the
        position. Either way a re-run trial does not shift what later positions draw."""
        import itertools
        import random

        sp = self.config.space
        keys = [k for k in self._SPACE_KEYS if getattr(sp, k)]
        grid = [dict(zip(keys, combo)) for combo in itertools.product(*(getattr(sp, k) for k in keys))]
        trials = self.config.budget.trials
        if len(grid) > 4 * trials or not grid:
            return [None] * trials
        random.Random(self.config.seed).shuffle(grid)
        return grid[:trials]

    def _open_study(self):
        import optuna

        cfg = self.config
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        if self._rdb:
            from optuna.storages import RDBStorage

            url = rdb_url(self.storage_url)
            kwargs: dict = {"pool_pre_ping": True}
            if url.startswith("sqlite"):
                kwargs["connect_args"] = {"timeout": 60}
            try:
                with warnings.catch_warnings(), schema_lock(url):
                    warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                    for attempt in range(5):
                        try:
                            storage = RDBStorage(url, engine_kwargs=kwargs, heartbeat_interval=cfg.concurrency.heartbeat_s,
                                                 grace_period=cfg.concurrency.grace_s,
                                                 heartbeat_stale_trial_callback=requeue_trial)
                            break
                        except Exception as exc:  # noqa: BLE001 - another worker creating the tables at the same moment
                            if attempt == 4 or not schema_race(exc):
                                raise
                            time.sleep(0.3 * (attempt + 1))
            except ImportError as exc:
                raise ConfigError(f"--storage {redact_url(self.storage_url)}: the database driver is missing ({exc}); "
                                  "for PostgreSQL: pip install 'psycopg[binary]'") from exc
            except Exception as exc:  # noqa: BLE001 - say which storage could not be opened, without its password
                raise ConfigError(f"cannot open the storage {redact_url(self.storage_url)}: {type(exc).__name__}: "
                                  f"{redact_url(str(exc))}") from exc
        else:
            from optuna.storages import JournalStorage
            from optuna.storages.journal import JournalFileBackend

            storage = JournalStorage(JournalFileBackend(str(self.run_dir / "optuna.journal")))
        return optuna.create_study(study_name=cfg.name, storage=storage, directions=["maximize", "minimize"],
                                   sampler=optuna.samplers.NSGAIISampler(seed=cfg.seed), load_if_exists=True)

    def _fingerprint(self) -> str:
        """What makes two campaign files the same campaign for workers sharing a storage: everything but
        the threads, the wall clock, the USD budget, the estimate's pace and the models' servers."""
        def drop(obj):
            if isinstance(obj, dict):
                return {k: drop(v) for k, v in obj.items() if k not in ("api_base", "api_key", "base_url")}
            return [drop(v) for v in obj] if isinstance(obj, list) else obj

        data = self.config.model_dump(mode="json")
        data.pop("concurrency", None)
        for k in ("wall_clock_s", "max_usd", "seconds_per_call"):
            data["budget"].pop(k, None)
        data["models"] = drop(data["models"])
        return _hash(data, 16)

    def _check_fingerprint(self, study) -> None:
        mine = self._fingerprint()
        self._art.share("config.json", {"fingerprint": mine, "campaign": self.config.name})  # no keys in the database
        theirs = (self._art.get("config.json") or {}).get("fingerprint")
        if theirs != mine:
            raise ConfigError(f"the storage holds campaign {self.config.name!r} with another configuration "
                              f"(fingerprint {theirs}, this file {mine}); give the campaign another name or use "
                              "another database")

    def _done(self, study, plan) -> set[int]:
        from optuna.trial import TrialState

        return {p for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
                if (p := trial_position(t)) is not None and p < len(plan)}

    def _next_trial(self, study, plan):
        """("done", n) when every position is complete; ("wait", n) when the n open positions all run in
        other workers; else ("trial", (trial_id, position)) — a position this worker has claimed."""
        from optuna.trial import TrialState

        if self._rdb:
            self._fail_stale(study)
        by_pos: dict[int, list] = {}
        for t in study.get_trials(deepcopy=False):
            p = trial_position(t)
            if p is not None and p < len(plan):
                by_pos.setdefault(p, []).append(t)
        done = {p for p, ts in by_pos.items() if any(t.state == TrialState.COMPLETE for t in ts)}
        if len(done) >= len(plan):
            return "done", len(done)
        for p in range(len(plan)):  # a position nobody queued yet (or lost): queued, with its planned settings
            if p not in done and not any(t.state in (TrialState.WAITING, TrialState.RUNNING) for t in by_pos.get(p, [])):
                study.enqueue_trial(dict(plan[p] or {}), user_attrs={POSITION: p}, skip_if_exists=False)
        claimed = self._claim(study, plan)
        if claimed is not None:
            return "trial", claimed
        running = {p for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
                   if (p := trial_position(t)) is not None and p < len(plan)}
        if not self._rdb:
            self.console.print(f"[yellow]trial position(s) {sorted(running)} are running in another process on this "
                               "run's journal; several workers need an RDB storage (--storage)[/yellow]")
            return "done", len(done)
        return "wait", len(running - done)

    def _claim(self, study, plan):
        """Claim the open position with the lowest number: its WAITING trial moved to RUNNING (atomic in the
        storage). A duplicate (two workers queued one position at once) is given up by the later trial."""
        from optuna.exceptions import UpdateFinishedTrialError
        from optuna.trial import TrialState

        storage = study._storage
        waiting = sorted((t for t in study.get_trials(deepcopy=False, states=(TrialState.WAITING,))
                          if (p := trial_position(t)) is not None and p < len(plan)), key=lambda t: (trial_position(t), t.number))
        for t in waiting:
            if self._rdb:
                storage.record_heartbeat(t._trial_id)  # before the claim: a worker killed right after it still goes stale
            try:
                if not storage.set_trial_state_values(t._trial_id, state=TrialState.RUNNING):
                    continue  # another worker claimed it first
            except UpdateFinishedTrialError:
                continue
            pos = trial_position(t)
            others = [o for o in study.get_trials(deepcopy=False) if o.number != t.number and trial_position(o) == pos]
            if any(o.state == TrialState.COMPLETE or (o.state in (TrialState.RUNNING, TrialState.WAITING)
                                                      and o.number < t.number) for o in others):
                storage.set_trial_system_attr(t._trial_id, "argus:duplicate", True)
                storage.set_trial_state_values(t._trial_id, state=TrialState.FAIL)
                continue
            storage.set_trial_user_attr(t._trial_id, "argus:worker", self.worker)
            storage.set_trial_system_attr(t._trial_id, "argus:host", socket.gethostname())
            storage.set_trial_system_attr(t._trial_id, "argus:pid", os.getpid())
            return t._trial_id, pos
        return None

    def _fail_stale(self, study) -> None:
        """Queue again the trials whose worker is gone: at once when it ran on this machine and its process
        has exited, else after ``concurrency.grace_s`` without a heartbeat (Optuna's ``fail_stale_trials``,
        whose callback is ``requeue_trial``). A live worker's trial is never taken."""
        import optuna
        from optuna.exceptions import UpdateFinishedTrialError
        from optuna.trial import TrialState

        host = socket.gethostname()
        for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            pid = t.system_attrs.get("argus:pid")
            if t.system_attrs.get("argus:host") == host and pid is not None and pid != os.getpid() and not process_alive(int(pid)):
                try:
                    if study._storage.set_trial_state_values(t._trial_id, state=TrialState.FAIL):
                        requeue_trial(study, t)
                except UpdateFinishedTrialError:
                    pass
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            optuna.storages.fail_stale_trials(study)

    def _release(self, study, trial_id: int) -> None:
        """A trial this worker stops: failed and its position queued again (a resumed or another worker runs
        it, reusing what is finished)."""
        from optuna.exceptions import UpdateFinishedTrialError
        from optuna.trial import TrialState

        try:
            if study._storage.set_trial_state_values(trial_id, state=TrialState.FAIL):
                requeue_trial(study, study._storage.get_trial(trial_id))
        except UpdateFinishedTrialError:
            pass
        except Exception:  # noqa: BLE001 - the storage is gone: the heartbeat's grace period queues it again
            _log.warning("campaign %s: could not queue trial %s again", self.config.name, trial_id, exc_info=True)

    @contextlib.contextmanager
    def _heartbeat(self, study, trial_id: int):
        """Record this worker's heartbeat for its trial every ``concurrency.heartbeat_s`` (RDB storage)."""
        if not self._rdb:
            yield
            return
        stopped = threading.Event()

        def beat():
            while not stopped.wait(self.config.concurrency.heartbeat_s):
                try:
                    study._storage.record_heartbeat(trial_id)
                except Exception:  # noqa: BLE001 - a missed beat; after grace_s another worker takes the trial over
                    _log.warning("campaign %s: heartbeat of trial %s failed", self.config.name, trial_id, exc_info=True)

        thread = threading.Thread(target=beat, name="argus-heartbeat", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stopped.set()
            thread.join()

    def _share_spend(self, book: SpendBook) -> None:
        self._art.share(f"spend/{self.worker}.json", book.summary(), replace=True)

    def _others_usd(self) -> float:
        """USD billed by the other workers (their shared summaries; read at most every 10 s)."""
        now = time.monotonic()
        cached = getattr(self, "_others_cache", None)
        if cached is None or now - cached[0] > 10:
            total = 0.0
            for name, book in self._art.items("spend/").items():
                if name != f"spend/{self.worker}.json":
                    total += float(((book or {}).get("total") or {}).get("billed_usd", 0.0))
            cached = self._others_cache = (now, total)
        return cached[1]

    def _spend_summary(self, spend: SpendBook) -> dict:
        """The campaign's optimization spend: this worker's book, or with an RDB storage every worker's."""
        if not self._rdb:
            return spend.summary()
        self._share_spend(spend)
        return merge_spend([book for _, book in sorted(self._art.items("spend/").items())])

    def _settings(self, trial) -> dict:
        cfg = self.config
        settings = {
            "task_model": trial.suggest_categorical("task_model", cfg.space.task_model),
            "temperature": trial.suggest_categorical("temperature", cfg.space.temperature),
            "max_retries": trial.suggest_categorical("max_retries", cfg.space.max_retries),
            "framenet_hints": trial.suggest_categorical("framenet_hints", cfg.space.framenet_hints),
        }
        for key in ("stage2_model", "reflection_model", "judge_model", "extraction"):
            choices = getattr(cfg.space, key)
            if choices:
                settings[key] = trial.suggest_categorical(key, choices)
        if cfg.pipeline:
            settings["pipeline"] = dict(cfg.pipeline)
        return settings

    # -------------------------------------------------------------- one trial
    def _run_trial(self, iteration: int, settings: dict, splits, ledger, spend: SpendBook, stop) -> list[CandidateEval]:
        trial_dir = self.run_dir / "trials" / _hash(settings)
        trial_dir.mkdir(parents=True, exist_ok=True)
        reflection_lm = self._reflection_lm(settings.get("reflection_model"))
        aux: dict[str, str] = {}
        for prog in self._aux_programs():
            if stop.check():
                return []
            self._status(trial=iteration, phase=f"aux:{prog}", settings=settings)
            start = spend.position()
            record = self._run_aux(iteration, prog, settings, splits, reflection_lm, ledger, stop)
            spend.record(iteration, f"aux:{prog}", start)
            if record is None:
                return []
            aux.update(record["instructions"])
        if stop.check():
            return []
        self._status(trial=iteration, phase="gepa", settings=settings)
        start = spend.position()
        candidates = self._gepa(trial_dir, iteration, settings, aux, splits, reflection_lm, ledger, stop)
        spend.record(iteration, "gepa", start)
        if candidates is None:
            return []
        evals: list[CandidateEval] = []
        keys: list[str] = []
        quality = self._document_quality(settings.get("judge_model"))
        for i, (full, parent) in enumerate(candidates):
            key = _hash({"settings": settings, "instructions": full})
            keys.append(key)
            if stop.check():
                return []
            self._status(trial=iteration, phase="val", candidate=i, of=len(candidates), settings=settings)
            start = spend.position()
            ev = self._eval(key, "val", settings, full, splits["val"], quality, ledger)
            spend.record(iteration, "val", start)
            if ev.trial < 1:  # lineage recorded once; a resumed run (or a repeated candidate) finds it as it was
                ev.trial, ev.gepa_index = iteration, i
                if parent is not None and parent < len(keys):
                    ev.parent_key = keys[parent]
                    parent_instr = candidates[parent][0]
                    ev.changed_programs = sorted({k.split(".")[0] for k in full if full[k] != parent_instr.get(k)})
                self._art.put(f"evals/val-{key}.json", ev.to_dict())
            else:  # finished earlier (perhaps by a worker killed before it shared it)
                self._art.share(f"evals/val-{key}.json", ev.to_dict())
            evals.append(ev)
        return evals

    def _gepa(self, trial_dir: Path, iteration: int, settings: dict, aux: dict, splits, reflection_lm, ledger, stop):
        """GEPA on the trial's pipeline; [(instructions of every predictor, parent index)] or None when
        stopped; the first candidate is the seed (the aux programs' best included). A search
        that did not finish is started afresh on resume (its answers come from the cache)."""
        from optimizers.examples import instructions_of

        name = f"trials/{trial_dir.name}/gepa_candidates.json"
        found = self._art.get(name)
        if found is not None:
            self._art.share(name, found)
            return [(c["instructions"], c["parent"]) for c in found]
        student = self.pipeline(settings, aux)
        candidates: list[tuple[dict[str, str], int | None]] = [(instructions_of(student), None)]
        evolvable = self._evolvable(settings)
        if evolvable:
            log_dir = trial_dir / (f"gepa.{self.worker}" if self._rdb else "gepa")
            shutil.rmtree(log_dir, ignore_errors=True)  # a cut-short search is never continued as if it were final
            gepa = dspy.GEPA(
                metric=self._chunk_metric(settings.get("judge_model")),
                instruction_proposer=TextInstructionProposer(reflection_lm, on_fallback=self._reflection_fallback(iteration)),
                max_metric_calls=self.config.budget.max_metric_calls,
                reflection_lm=reflection_lm,
                reflection_minibatch_size=self.config.reflection_minibatch_size,
                candidate_selection_strategy="pareto",
                component_selector=_Evolvable(evolvable),
                track_stats=True,
                log_dir=str(log_dir),
                seed=self.config.seed,
                num_threads=self.num_threads,
                use_merge=False,
                gepa_kwargs={"stop_callbacks": [stop]},
            )
            with ledger_context(ledger, doc_id=f"trial{iteration}", stage="optimize", program="gepa"):
                compiled = gepa.compile(student, trainset=splits["train"])
            if stop.check():
                return None  # GEPA was cut short: its candidates are not final, nothing is saved as if they were
            details = getattr(compiled, "detailed_results", None)
            if details is not None:
                candidates = []
                for i, cand in enumerate(details.candidates):
                    parents = details.parents[i] if i < len(details.parents) else None
                    parent = next((p for p in (parents or []) if p is not None), None)
                    candidates.append((instructions_of(cand), parent))
        self._art.put(name, [{"instructions": c, "parent": p} for c, p in candidates])
        return candidates

    def _reflection_fallback(self, iteration: int):
        """A callback that records a reflection that kept its parent's instruction in ``RUN/campaign.log.jsonl``."""
        def record(component: str, reason: str) -> None:
            append_jsonl_line(self.run_dir / "campaign.log.jsonl", json.dumps({
                "time": _now(), "worker": self.worker, "trial": iteration, "event": "reflection_fallback",
                "component": component, "reason": reason}, ensure_ascii=False))
        return record

    def _aux_path(self, settings: dict, prog: str) -> Path:
        return self.run_dir / self._aux_name(settings, prog)

    @staticmethod
    def _aux_name(settings: dict, prog: str) -> str:
        return f"trials/{_hash(settings)}/aux-{prog}.json"

    def _aux_program(self, prog: str, settings: dict, instructions: dict[str, str] | None = None):
        from optimizers.examples import AuxProgram, apply_instructions

        module = AuxProgram(prog, max_retries=settings["max_retries"])
        lm = self.pipeline(settings).lm(prog)  # the model and budget the deployed pipeline gives this stage
        for _, pred in module.named_predictors():
            pred.lm = lm
        if instructions:
            apply_instructions(module, instructions)
        return module

    def _run_aux(self, iteration: int, prog: str, settings: dict, splits, reflection_lm, ledger, stop) -> dict | None:
        """GEPA on one auxiliary program; its best candidate scored on its own val and test examples."""
        from metrics.gepa import chunker_metric, fact_fallback_metric, qa_metric, resolver_metric
        from optimizers.examples import instructions_of

        path = self._aux_path(settings, prog)
        found = self._art.get(self._aux_name(settings, prog))
        if found is not None:
            self._art.share(self._aux_name(settings, prog), found)
            return found
        metric = {"fact_fallback": fact_fallback_metric, "chunker": chunker_metric, "resolver": resolver_metric,
                  "qa": qa_metric}[prog]
        module = self._aux_program(prog, settings)
        seed = instructions_of(module)
        best = seed
        log_dir = path.parent / (f"gepa-{prog}.{self.worker}" if self._rdb else f"gepa-{prog}")
        shutil.rmtree(log_dir, ignore_errors=True)
        gepa = dspy.GEPA(metric=metric, instruction_proposer=TextInstructionProposer(
            reflection_lm, on_fallback=self._reflection_fallback(iteration)),
                         max_metric_calls=self.config.budget.max_metric_calls, reflection_lm=reflection_lm,
                         reflection_minibatch_size=self.config.reflection_minibatch_size, track_stats=True,
                         log_dir=str(log_dir), seed=self.config.seed, num_threads=self.num_threads,
                         use_merge=False, gepa_kwargs={"stop_callbacks": [stop]})
        with ledger_context(ledger, doc_id=f"trial{iteration}", stage="optimize", program=f"gepa:{prog}"):
            compiled = gepa.compile(module, trainset=splits[f"{prog}:train"], valset=splits[f"{prog}:val"])
        if stop.check():
            return None  # not finished: redone on resume
        details = getattr(compiled, "detailed_results", None)
        if details is not None and details.candidates:
            best = instructions_of(details.candidates[details.best_idx])
        record = {"program": prog, "instructions": best, "seed_instructions": seed}
        for split in ("val", "test"):
            res = evaluate_examples(self._aux_program(prog, settings, best), splits[f"{prog}:{split}"], metric, ledger,
                                    label=f"eval-{prog}-{split}", num_threads=self.num_threads)
            record[split] = res
        self._art.put(self._aux_name(settings, prog), record)
        return record

    def _eval(self, key, split, settings, instructions, documents, quality, ledger) -> CandidateEval:
        """A candidate's deployment runs on a split (``num_threads`` documents at once); what is finished
        (here or, with an RDB storage, by any worker) is reused. A validation evaluation is shared once its
        lineage is set (``_run_trial``), a test evaluation at once."""
        name = f"evals/{split}-{key}.json"
        found = self._art.get(name)
        if found is not None:
            return CandidateEval.from_dict(found)
        pipe = self.pipeline(settings, instructions)
        with ledger_context(ledger, program=f"deploy-{split}"):
            res = deployment_run(pipe, documents, quality, ledger, label=split, num_threads=self.num_threads)
        ev = CandidateEval(key=key, split=split, settings=settings, instructions=instructions, **res)
        self._art.put(name, ev.to_dict(), share=split != "val")
        return CandidateEval.from_dict(self._art.get(name)) if self._rdb and split != "val" else ev

    def _all_evals(self, split: str) -> list[CandidateEval]:
        """Every finished evaluation on a split: this run's files, or with an RDB storage every worker's."""
        return [CandidateEval.from_dict(self._art.get(n)) for n in self._art.names(f"evals/{split}-")]

    # -------------------------------------------------------------- frontier
    def _update_frontier(self, splits, ledger, spend: SpendBook, stop, *, iteration: int, wait: bool = True) -> None:
        """Build and write the frontier from every finished evaluation (with an RDB storage: every worker's),
        deploying members on the test documents first when not done yet. Workers sharing a compiled folder
        take turns (a lock file); after a trial (``wait`` False) a worker skips the update while another
        writes — the later update reads the storage after it, so the last one written has everything."""
        with self._frontier_lock(wait) as mine:
            if mine:
                self._write_frontier(splits, ledger, spend, stop, iteration=iteration)

    @contextlib.contextmanager
    def _frontier_lock(self, wait: bool):
        if not self._rdb:
            yield True
            return
        from filelock import FileLock, Timeout

        self.compiled_dir.mkdir(parents=True, exist_ok=True)
        lock = FileLock(self.compiled_dir / ".frontier.lock")
        try:
            lock.acquire(timeout=-1 if wait else 0)
        except Timeout:
            yield False
            return
        try:
            yield True
        finally:
            lock.release()

    def _write_frontier(self, splits, ledger, spend: SpendBook, stop, *, iteration: int) -> None:
        from optimizers.frontier import (
            Constraints,
            Lineage,
            MemberManifest,
            build_frontier_file,
            dependency_versions,
            flag_val_only_wins,
            instruction_diff_size,
            write_frontier,
            write_member,
        )

        evals = [e for e in self._all_evals("val") if e.trial >= 1]
        if not evals:
            return
        obj = self._objective()
        study = getattr(self, "_study", None)
        if study is not None and 0 in self._done(study, self._planned):
            # the reference is fixed from the first trial once it is complete, never from a cut-short one or
            # from the part of it another worker has shared so far
            obj = self._fix_reference(obj, evals)
        cost_key = obj["cost_key"]
        senses = {"quality": "max", cost_key: "min"}
        by_key = {e.key: e for e in evals}
        data_hash = _hash({name: _examples_hash(ex) for name, ex in splits.items()})
        metric_hash = _hash(self.config.metric.model_dump())
        aux = {e.key: self._aux_for(e.settings) for e in evals}
        versions = dependency_versions()
        refs = {ex.doc_id: ex.ref for ex in splits["val"] + splits["test"]}

        def manifest(ev: CandidateEval, test: CandidateEval | None) -> MemberManifest:
            parent = by_key.get(ev.parent_key) if ev.parent_key else None
            diff = sum(instruction_diff_size(parent.instructions.get(k, ""), v) for k, v in ev.instructions.items()) if parent else 0
            split_scores = {"val": _split_scores(ev)}
            documents = {"val": [refs.get(d, d) for d in ev.doc_ids]}
            if test is not None:
                split_scores["test"] = _split_scores(test)
                documents["test"] = [refs.get(d, d) for d in test.doc_ids]
            return MemberManifest(
                campaign=self.config.name, member_id=ev.key, created=_now(),
                objectives={"quality": ev.quality, "cost_usd": ev.cost_usd, "tokens": ev.tokens, "latency_s": ev.latency_s},
                splits=split_scores,
                lineage=Lineage(parent=ev.parent_key, changed_programs=ev.changed_programs, instruction_diff_chars=diff,
                                iteration=ev.trial, origin="seed" if ev.parent_key is None else "gepa"),
                settings=self._member_settings(ev, aux[ev.key]),
                prompts=ev.instructions, stage_costs=ev.stage_costs, documents=documents,
                dataset_hash=data_hash, metric_hash=metric_hash, versions=versions,
            )

        candidates = [manifest(e, None) for e in evals]
        constraints = Constraints(max_cost_per_doc=self.config.budget.max_cost_per_doc)
        reference = obj.get("reference")
        ff = build_frontier_file(self.config.name, candidates, senses, constraints, reference=reference)
        members = []
        for member_id in ff.members:
            ev = by_key[member_id]
            found = self._art.get(f"evals/test-{ev.key}.json")
            test = CandidateEval.from_dict(found) if found is not None else None
            if test is None and not stop.check():
                self._status(trial=iteration, phase="finalize", member=ev.key)
                start = spend.position()
                test = self._eval(ev.key, "test", ev.settings, ev.instructions, splits["test"],
                                  self._document_quality(ev.settings.get("judge_model")), ledger)
                spend.record(iteration, "test", start)
            members.append(manifest(ev, test))
        members = flag_val_only_wins(members, senses, constraints)
        self.compiled_dir.mkdir(parents=True, exist_ok=True)
        for m in members:
            self._write_programs(self.compiled_dir / m.member_id, by_key[m.member_id])
            write_member(self.compiled_dir, m)
        ff = ff.model_copy(update={"optimization_spend": {**self._spend_summary(spend),
                                                          "estimate": getattr(self, "_estimate", {})},
                                   "reference": reference or ff.reference})
        write_frontier(self.compiled_dir, ff)
        write_json_atomic(self.run_dir / "hypervolume.json", [h.model_dump() for h in ff.hypervolume_history], indent=1)

    def _aux_for(self, settings: dict) -> list[dict]:
        out = []
        for prog in self._aux_programs():
            record = self._art.get(self._aux_name(settings, prog))
            if record is not None:
                out.append(record)
        return out

    def _member_settings(self, ev: CandidateEval, aux: list[dict]) -> dict:
        from optimizers.deploy import member_models

        models = dict(member_models(ev.settings))
        models["reflection"] = ev.settings.get("reflection_model") or _model_name(self.config.models.reflection)
        if self._judge_weight() > 0:
            models["judge"] = ev.settings.get("judge_model") or _model_name(self.config.models.judge)
        out = {**ev.settings, "models": models, "metric": self.config.metric.model_dump()}
        if aux:
            out["aux_quality"] = {a["program"]: {sp: a[sp]["quality"] for sp in ("val", "test")} for a in aux}
        return out

    def _write_programs(self, member_dir: Path, ev: CandidateEval) -> None:
        """The member's programs as ``programs.ArgusPrograms`` JSON state (pickle-free, scrubbed)."""
        from optimizers.deploy import programs_with
        from optimizers.frontier import scrub_secrets

        member_dir.mkdir(parents=True, exist_ok=True)
        progs = programs_with(ev.instructions, ev.settings.get("max_retries", 1))
        tmp = member_dir / "programs.tmp.json"
        progs.save(str(tmp))
        text = tmp.read_text(encoding="utf-8")
        tmp.unlink()
        write_json_atomic(member_dir / "programs.json", scrub_secrets(json.loads(text)), indent=1)


def _model_name(model: str | dict | None) -> str:
    if model is None:
        return ""
    return model if isinstance(model, str) else str(model.get("model", ""))


def _model_price(spec: LMSpec) -> float:
    """USD for a million input plus a million output tokens of a model (0 when free or unknown)."""
    if spec.price_per_mtok is not None:
        return float(sum(spec.price_per_mtok))
    if spec.model.startswith("local/"):
        return 0.0
    try:
        import litellm

        pin, pout = litellm.cost_per_token(model=spec.model, prompt_tokens=1_000_000, completion_tokens=1_000_000)
        return float(pin + pout)
    except Exception:
        return 0.0


def _short_settings(settings: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in settings.items() if k != "pipeline")


def _examples_hash(examples) -> str:
    from optimizers.examples import examples_hash

    return examples_hash(examples)


def _split_scores(ev: CandidateEval):
    from optimizers.frontier import SplitScores, bootstrap_ci

    docs = ev.per_document

    def ci(key):
        vals = [float(d[key]) for d in docs.values()]
        return bootstrap_ci(vals) if len(vals) >= 2 else None

    return SplitScores(
        n=ev.n_docs, quality=ev.quality, quality_ci=ci("quality"), cost_usd=ev.cost_usd, cost_usd_ci=ci("cost_usd"),
        tokens=ev.tokens, tokens_ci=ci("tokens"), latency_s=ev.latency_s, per_example=ev.per_example,
        doc_ids=ev.doc_ids, per_document=docs,
    )


def _now() -> str:
    import datetime as _dt

    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def run_campaign(path: str | Path, *, run_root: str | Path = "runs/campaigns", compiled_root: str | Path = "compiled",
                 lm_builder: LMBuilder | None = None, storage: str | None = None, worker: str | None = None,
                 num_threads: int | None = None) -> CampaignResult:
    """Run (or resume) the campaign file ``path``; with ``storage`` (an SQLAlchemy URL) as one of its
    workers (see the module docstring)."""
    cfg = CampaignConfig.load(path)
    return Campaign(cfg, Path(run_root) / cfg.name, compiled_root, lm_builder=lm_builder, storage=storage,
                    worker=worker, num_threads=num_threads).run()
