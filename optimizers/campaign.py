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
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import dspy

from argus.config import LMSpec
from argus.engine import EngineCrashError
from argus.errors import ConfigError
from argus.io import write_json_atomic
from argus.ledger import CostLedger, ledger_context
from optimizers.config import AUX_PROGRAMS, CampaignConfig
from optimizers.evaluation import CandidateEval, deployment_run, evaluate_examples
from optimizers.budget import SpendBook, StopConditions
from optimizers.proposer import TextInstructionProposer

EVOLVABLE = {"stage1": "programs.stage1.extract.predict", "stage2": "programs.stage2.relate.predict"}


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
    """One campaign run; ``run()`` is resumable from ``run_dir``."""

    def __init__(self, config: CampaignConfig, run_dir: str | Path, compiled_root: str | Path = "compiled", *,
                 lm_builder: LMBuilder | None = None, console=None):
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
        self._classifier = None

    # -------------------------------------------------------------- helpers
    def lm(self, spec: LMSpec):
        key = _hash(spec.model_dump())
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

    def _evolvable(self) -> list[str]:
        return [EVOLVABLE[p] for p in self.config.programs if p in EVOLVABLE]

    def _aux_programs(self) -> list[str]:
        return [p for p in self.config.programs if p in AUX_PROGRAMS]

    def _status(self, **fields) -> None:
        write_json_atomic(self.run_dir / "status.json", {**fields, "time": _now()}, indent=1)

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
        candidates = 1 + (b.max_metric_calls // max(1, 2 * self.config.reflection_minibatch_size) if self._evolvable() else 0)
        gepa = b.max_metric_calls * 2 * retries * (1 if self._evolvable() else 0)
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
        fixed at the first run and stored in ``RUN/objectives.json`` with the hypervolume reference."""
        path = self.run_dir / "objectives.json"
        if path.exists():
            return json.loads(path.read_text(encoding="utf-8"))
        models = list(self.config.space.task_model) + list(self.config.space.stage2_model or [])
        paid = any(_model_price(self.config.lm_spec(m)) > 0 for m in models)
        obj = {"cost_key": "cost_usd" if paid else "tokens", "reference": None,
               "why": "a model of the search space has a price" if paid else "every model of the search space is free"}
        write_json_atomic(path, obj, indent=1)
        return obj

    def _fix_reference(self, obj: dict, evals: list[CandidateEval]) -> dict:
        """The hypervolume reference: quality 0 and twice the largest cost of the first finished trial
        (``max_cost_per_doc`` when the cost is in USD and it is set). Points beyond it add nothing."""
        if obj.get("reference") is not None:
            return obj
        first = [e for e in evals if e.trial == 1]
        if not first:
            return obj
        key = obj["cost_key"]
        bound = self.config.budget.max_cost_per_doc if key == "cost_usd" else None
        top = max(getattr(e, key) for e in first)
        obj = {**obj, "reference": {"quality": 0.0, key: float(bound if bound is not None else (2 * top if top > 0 else 1.0))}}
        write_json_atomic(self.run_dir / "objectives.json", obj, indent=1)
        return obj

    # -------------------------------------------------------------- run
    def run(self) -> CampaignResult:
        import optuna
        from optuna.storages import JournalStorage
        from optuna.storages.journal import JournalFileBackend
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
        ledger_path = self.run_dir / "ledger.jsonl"
        previous = CostLedger.from_jsonl(ledger_path).entries if ledger_path.exists() else []
        ledger = CostLedger(path=ledger_path)
        spend = SpendBook(self.run_dir, ledger, previous)
        stop = StopConditions(self.run_dir / "STOP", ledger, sum(e.cost_usd for e in previous), cfg.budget.max_usd,
                     (t_start + cfg.budget.wall_clock_s) if cfg.budget.wall_clock_s else None)
        splits = self._splits()
        objective = self._objective()
        est = self._estimate = self.estimate(splits)
        self.console.print(
            f"[bold]campaign {cfg.name}[/bold]: {cfg.budget.trials} trial(s), GEPA ≤ {cfg.budget.max_metric_calls} metric "
            f"calls each on {len(splits['train'])} train chunk examples; candidates deployed on "
            f"{len(splits['val'])} validation and members on {len(splits['test'])} test document(s); cost in "
            f"{objective['cost_key']} ({objective['why']}). Estimate: ≤ {est['optimization_calls']} optimization calls "
            f"+ ≤ {est['deployment_calls']} deployment-run calls (~{est['calls_per_document']} per document), about "
            f"{est['minutes']} min at {cfg.budget.seconds_per_call:g} s/call"
            + (f"; USD budget ${cfg.budget.max_usd}" if cfg.budget.max_usd is not None else "")
        )
        self._chunk_metric()  # a bad metric or judge configuration fails here, before any LM call
        storage = JournalStorage(JournalFileBackend(str(self.run_dir / "optuna.journal")))
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        study = optuna.create_study(study_name=cfg.name, storage=storage, directions=["maximize", "minimize"],
                                    sampler=optuna.samplers.NSGAIISampler(seed=cfg.seed), load_if_exists=True)
        for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            # killed or stopped mid-trial: closed as failed and asked again with the same settings;
            # what it finished is on disk and is reused
            study._storage.set_trial_state_values(t._trial_id, TrialState.FAIL)
            study.enqueue_trial(t.params, skip_if_exists=False)
        done = [t for t in study.get_trials(deepcopy=False) if t.state == TrialState.COMPLETE]
        previous_handler = signal.getsignal(signal.SIGINT)

        def on_sigint(signum, frame):
            stop.interrupted = True
            raise KeyboardInterrupt

        signal.signal(signal.SIGINT, on_sigint)
        try:
            with dspy.context(adapter=SchemaJSONAdapter()), Progress(
                TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                TextColumn("{task.fields[note]}"), console=self.console,
            ) as progress:
                task = progress.add_task("trials", total=cfg.budget.trials, completed=len(done), note="")
                while len(done) < cfg.budget.trials and not stop.check():
                    self._next_settings(study, len(done))
                    trial = study.ask()
                    settings = self._settings(trial)
                    iteration = len(done) + 1
                    progress.update(task, note=f"trial {iteration}: {_short_settings(settings)}")
                    evals = self._run_trial(iteration, settings, splits, ledger, spend, stop)
                    if stop.check():
                        break  # the trial stays RUNNING: a resumed campaign runs it again, reusing what is on disk
                    if not evals:
                        study.tell(trial, state=TrialState.FAIL)
                        break
                    best = max(evals, key=lambda e: (e.quality, -getattr(e, objective["cost_key"])))
                    study.tell(trial, [best.quality, getattr(best, objective["cost_key"])])
                    done.append(trial)
                    self._update_frontier(splits, ledger, spend, stop, iteration=len(done))
                    progress.advance(task)
        except KeyboardInterrupt:
            stop.interrupted = True
            stop.check()
        except EngineCrashError as exc:
            self.console.print(f"[red]{exc}[/red]")
            stop.check()
        finally:
            signal.signal(signal.SIGINT, previous_handler)
        # the frontier reflects every finished evaluation; after a stop no new deployment runs
        try:
            self._update_frontier(splits, ledger, spend, stop, iteration=len(done))
        except EngineCrashError as exc:
            self.console.print(f"[red]{exc}[/red]")
            stop.check()
        except Exception as exc:  # noqa: BLE001 - finalization must say what failed, and the run is marked failed
            import logging

            logging.getLogger("argus").exception("campaign %s: writing the frontier failed", cfg.name)
            self.console.print(f"[red]writing the frontier failed: {type(exc).__name__}: {exc}[/red]")
            stop.failed = True
            stop.reason = stop.reason or f"finalization failed: {type(exc).__name__}: {exc}"
        self._status(phase="stopped" if stop.reason else "done", reason=stop.reason, trials_done=len(done))
        evals = self._all_evals("val")
        frontier_path = self.compiled_dir / "frontier.json"
        members = json.loads(frontier_path.read_text())["members"] if frontier_path.exists() else []
        hv = json.loads(frontier_path.read_text()).get("hypervolume_history", []) if frontier_path.exists() else []
        summary = spend.summary()
        result = CampaignResult(self.run_dir, self.compiled_dir, evals, members, hv, stop.reason, stop.spent(),
                                summary["total"]["calls"], time.monotonic() - t_start, failed=stop.failed, spend=summary)
        self.console.print(
            f"campaign {cfg.name}: {len(done)} trial(s), {len(evals)} candidate(s) deployed on validation, frontier "
            f"{members}; optimization spend ${summary['total']['billed_usd']:.4f} billed in {summary['total']['calls']} "
            f"LM calls ({summary['total']['list_tokens']:,} tokens at list)"
            + (f"; stopped: {stop.reason}" if stop.reason else "")
        )
        return result

    _SPACE_KEYS = ("task_model", "temperature", "max_retries", "framenet_hints", "stage2_model", "reflection_model",
                   "judge_model")

    def _next_settings(self, study, position: int) -> None:
        """Seed the trial at ``position``: a space of at most four times the trial budget is
        enumerated in a seeded shuffled order (no setting twice while one is unexplored); a larger one
        is searched by NSGA-II with a sampler seeded by the position. Either way a re-run trial does
        not shift what later positions draw."""
        import itertools
        import random

        import optuna
        from optuna.trial import TrialState

        sp = self.config.space
        keys = [k for k in self._SPACE_KEYS if getattr(sp, k)]
        grid = [dict(zip(keys, combo)) for combo in itertools.product(*(getattr(sp, k) for k in keys))]
        study.sampler = optuna.samplers.NSGAIISampler(seed=self.config.seed + position)
        if len(grid) > 4 * self.config.budget.trials:
            return
        trials = study.get_trials(deepcopy=False)
        if any(t.state == TrialState.WAITING for t in trials):
            return  # an interrupted trial is queued to run again first
        random.Random(self.config.seed).shuffle(grid)
        seen = [t.params for t in trials if t.state == TrialState.COMPLETE]
        fresh = [g for g in grid if g not in seen]
        study.enqueue_trial(fresh[0] if fresh else grid[position % len(grid)])

    def _settings(self, trial) -> dict:
        cfg = self.config
        settings = {
            "task_model": trial.suggest_categorical("task_model", cfg.space.task_model),
            "temperature": trial.suggest_categorical("temperature", cfg.space.temperature),
            "max_retries": trial.suggest_categorical("max_retries", cfg.space.max_retries),
            "framenet_hints": trial.suggest_categorical("framenet_hints", cfg.space.framenet_hints),
        }
        for key in ("stage2_model", "reflection_model", "judge_model"):
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
                ev.save(self.run_dir / "evals" / f"val-{key}.json")
            evals.append(ev)
        return evals

    def _gepa(self, trial_dir: Path, iteration: int, settings: dict, aux: dict, splits, reflection_lm, ledger, stop):
        """GEPA on the trial's pipeline; [(instructions of every predictor, parent index)] or None when
        stopped; the first candidate is the seed (the aux programs' best included). A search
        that did not finish is started afresh on resume (its answers come from the cache)."""
        from optimizers.examples import instructions_of

        result_file = trial_dir / "gepa_candidates.json"
        if result_file.exists():
            return [(c["instructions"], c["parent"]) for c in json.loads(result_file.read_text(encoding="utf-8"))]
        student = self.pipeline(settings, aux)
        candidates: list[tuple[dict[str, str], int | None]] = [(instructions_of(student), None)]
        evolvable = self._evolvable()
        if evolvable:
            log_dir = trial_dir / "gepa"
            shutil.rmtree(log_dir, ignore_errors=True)  # a cut-short search is never continued as if it were final
            gepa = dspy.GEPA(
                metric=self._chunk_metric(settings.get("judge_model")),
                instruction_proposer=TextInstructionProposer(reflection_lm),
                max_metric_calls=self.config.budget.max_metric_calls,
                reflection_lm=reflection_lm,
                reflection_minibatch_size=self.config.reflection_minibatch_size,
                candidate_selection_strategy="pareto",
                component_selector=_Evolvable(evolvable),
                track_stats=True,
                log_dir=str(log_dir),
                seed=self.config.seed,
                num_threads=1,
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
        write_json_atomic(result_file, [{"instructions": c, "parent": p} for c, p in candidates], indent=1)
        return candidates

    def _aux_path(self, settings: dict, prog: str) -> Path:
        return self.run_dir / "trials" / _hash(settings) / f"aux-{prog}.json"

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
        if path.exists():
            return json.loads(path.read_text(encoding="utf-8"))
        metric = {"fact_fallback": fact_fallback_metric, "chunker": chunker_metric, "resolver": resolver_metric,
                  "qa": qa_metric}[prog]
        module = self._aux_program(prog, settings)
        seed = instructions_of(module)
        best = seed
        log_dir = path.parent / f"gepa-{prog}"
        shutil.rmtree(log_dir, ignore_errors=True)
        gepa = dspy.GEPA(metric=metric, instruction_proposer=TextInstructionProposer(reflection_lm),
                         max_metric_calls=self.config.budget.max_metric_calls, reflection_lm=reflection_lm,
                         reflection_minibatch_size=self.config.reflection_minibatch_size, track_stats=True,
                         log_dir=str(log_dir), seed=self.config.seed, num_threads=1,
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
                                    label=f"eval-{prog}-{split}")
            record[split] = res
        write_json_atomic(path, record, indent=1)
        return record

    def _eval(self, key, split, settings, instructions, documents, quality, ledger) -> CandidateEval:
        path = self.run_dir / "evals" / f"{split}-{key}.json"
        if path.exists():
            return CandidateEval.load(path)
        pipe = self.pipeline(settings, instructions)
        with ledger_context(ledger, program=f"deploy-{split}"):
            res = deployment_run(pipe, documents, quality, ledger, label=split)
        ev = CandidateEval(key=key, split=split, settings=settings, instructions=instructions, **res)
        ev.save(path)
        return ev

    def _all_evals(self, split: str) -> list[CandidateEval]:
        return [CandidateEval.load(p) for p in sorted((self.run_dir / "evals").glob(f"{split}-*.json"))]

    # -------------------------------------------------------------- frontier
    def _update_frontier(self, splits, ledger, spend: SpendBook, stop, *, iteration: int) -> None:
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
        if iteration >= 1:  # the reference is fixed from the first finished trial, never from a cut-short one
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
            test_path = self.run_dir / "evals" / f"test-{ev.key}.json"
            test = None
            if test_path.exists():
                test = CandidateEval.load(test_path)
            elif not stop.check():
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
        ff = ff.model_copy(update={"optimization_spend": {**spend.summary(),
                                                          "estimate": getattr(self, "_estimate", {})},
                                   "reference": reference or ff.reference})
        write_frontier(self.compiled_dir, ff)
        write_json_atomic(self.run_dir / "hypervolume.json", [h.model_dump() for h in ff.hypervolume_history], indent=1)

    def _aux_for(self, settings: dict) -> list[dict]:
        out = []
        for prog in self._aux_programs():
            path = self._aux_path(settings, prog)
            if path.exists():
                out.append(json.loads(path.read_text(encoding="utf-8")))
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
                 lm_builder: LMBuilder | None = None) -> CampaignResult:
    cfg = CampaignConfig.load(path)
    return Campaign(cfg, Path(run_root) / cfg.name, compiled_root, lm_builder=lm_builder).run()
