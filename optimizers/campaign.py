"""Optimization campaigns: GEPA over the extraction programs inside an Optuna search over settings,
a true quality–cost Pareto frontier, compiled pickle-free artifacts.

A campaign (``campaigns/<name>.yaml``, :class:`CampaignConfig`) names the programs whose
instructions GEPA evolves (Stage 1 and Stage 2, jointly, on chunk examples), the data splits, the
metric weights, the candidate space and the budgets. It runs as:

1. **Outer search** — Optuna, two objectives (maximize quality, minimize cost per document), over
   the discrete settings (task model per stage, reflection and judge model, temperature, retries,
   FrameNet hints). Each trial is one setting.
2. **Inner search** — ``dspy.GEPA`` evolves the instructions of Stage 1 and Stage 2 for that
   setting against ``metrics.gepa.GraphMetric`` (structural + judge + gold, with per-predictor
   feedback), keeping every candidate it accepts with its parent; the fact fallback, the chunker,
   the resolver and document QA, when listed, evolve on their own examples and metrics and their best
   candidate (and its cost per document) joins every member of the trial.
3. **Frontier** — every GEPA candidate of every trial is evaluated on the validation split with a
   metered LM (quality; USD and tokens per document from the one campaign ledger). The frontier is
   the non-dominated set over (quality, cost) under ``max_cost_per_doc``; each member is re-scored
   on the held-out test split with bootstrap intervals, members that win only on validation are
   flagged, and the hypervolume is recorded after each trial.
4. **Artifacts** — ``compiled/<campaign>/<member>/programs.json`` (the DSPy JSON state of
   ``programs.ArgusPrograms`` with the evolved instructions) and ``manifest.json`` (objectives,
   per-split scores, lineage, settings, hashes, versions); ``frontier.json`` beside them.

Lifecycle: an estimate is printed first; a rich progress bar runs; a stop file (``RUN/STOP``) or
Ctrl-C ends the campaign cleanly after writing the frontier so far; a killed campaign resumes from
its run directory: Optuna's journal keeps finished trials, GEPA's run directory its state, and
every candidate evaluation is a JSON record keyed by the hash of its settings and instructions, so
nothing finished is evaluated again. All models' calls (task, reflection, judge) go to
``RUN/ledger.jsonl``.
"""

from __future__ import annotations

import hashlib
import json
import signal
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal

import dspy
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from argus.config import LMSpec
from argus.engine import EngineCrashError, engine_crashes
from argus.errors import ConfigError
from argus.io import write_json_atomic
from argus.ledger import CostLedger, ledger_context

SETTING_KEYS = ("task_model", "temperature", "max_retries", "framenet_hints")
AUX_PROGRAMS = {"fact_fallback": 256, "chunker": 512, "resolver": 160, "qa": 300}  #: program → max_tokens of its calls


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SplitSpec(_Strict):
    split: str = Field(description="Folder under us_complaints: train or dev")
    docs: int | None = Field(default=None, ge=1, description="Documents to use (None: all)")
    doc_offset: int = Field(default=0, ge=0, description="Documents to skip first")
    chunks_per_doc: int | None = Field(default=None, ge=1)


class DataSpec(_Strict):
    root: str | None = Field(default=None, description="us_complaints folder (default: the shared data)")
    train: SplitSpec = Field(default_factory=lambda: SplitSpec(split="train", docs=2, chunks_per_doc=3))
    val: SplitSpec = Field(default_factory=lambda: SplitSpec(split="dev", docs=2, chunks_per_doc=2))
    test: SplitSpec = Field(default_factory=lambda: SplitSpec(split="dev", docs=2, doc_offset=2, chunks_per_doc=2))
    max_sentences: int = Field(default=6, ge=2)
    overlap: int = Field(default=2, ge=0)


class MetricSpec(_Strict):
    weights: dict[str, float] = Field(default_factory=lambda: {"structural": 0.5, "judge": 0.0, "gold": 0.5})
    structural_weights: dict[str, float] | None = None
    coverage_target: float = Field(default=0.7, gt=0, le=1)


class SpaceSpec(_Strict):
    task_model: list[str] = Field(default_factory=lambda: ["local/smollm2"], description="Stage 1 (and Stage 2 unless stage2_model)")
    stage2_model: list[str] | None = Field(default=None, description="Stage 2's own model list (None: the Stage 1 model)")
    reflection_model: list[str] | None = Field(default=None, description="Reflection models to search (None: models.reflection)")
    judge_model: list[str] | None = Field(default=None, description="Judge models to search (None: models.judge)")
    temperature: list[float] = Field(default_factory=lambda: [0.0])
    max_retries: list[int] = Field(default_factory=lambda: [0])
    framenet_hints: list[bool] = Field(default_factory=lambda: [False])


class ModelsSpec(_Strict):
    reflection: str | dict = "local/smollm2"
    judge: str | dict | None = None
    defaults: dict = Field(default_factory=dict, description="LMSpec fields applied to every model (api_base, n_ctx, …)")


class BudgetSpec(_Strict):
    trials: int = Field(default=2, ge=1)
    max_metric_calls: int = Field(default=12, ge=1, description="GEPA metric calls per trial")
    max_usd: float | None = Field(default=None, ge=0, description="Summed over ALL models (task, judge, reflection)")
    wall_clock_s: float | None = Field(default=None, gt=0)
    max_cost_per_doc: float | None = Field(default=None, ge=0, description="Frontier constraint (USD per document)")
    seconds_per_call: float = Field(default=12.0, gt=0, description="For the estimate only")


class CampaignConfig(_Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    programs: list[Literal["stage1", "stage2", "fact_fallback", "chunker", "resolver", "qa"]] = Field(
        default_factory=lambda: ["stage1", "stage2"],
        description="Stage 1 / Stage 2 evolve jointly on chunk examples (the frontier's quality); "
        "fact_fallback, chunker, resolver and qa each evolve on their own examples and metric, their best candidate "
        "joins every member of the trial and their cost per document is added to the member's",
    )
    data: DataSpec = Field(default_factory=DataSpec)
    metric: MetricSpec = Field(default_factory=MetricSpec)
    space: SpaceSpec = Field(default_factory=SpaceSpec)
    models: ModelsSpec = Field(default_factory=ModelsSpec)
    budget: BudgetSpec = Field(default_factory=BudgetSpec)
    reflection_minibatch_size: int = Field(default=2, ge=1)
    seed: int = 0

    @classmethod
    def load(cls, path: str | Path) -> "CampaignConfig":
        p = Path(path)
        if not p.is_file():
            raise ConfigError(f"campaign file {p} does not exist")
        try:
            data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as exc:
            raise ConfigError(f"campaign file {p} is not valid YAML: {exc}") from exc
        try:
            return cls(**data)
        except ValidationError as exc:
            raise ConfigError(f"campaign file {p}: {exc}") from exc

    def lm_spec(self, model: str | dict, **overrides) -> LMSpec:
        data = dict(self.models.defaults)
        data.update({"model": model} if isinstance(model, str) else dict(model))
        data.update(overrides)
        try:
            return LMSpec(**data)
        except ValidationError as exc:
            raise ConfigError(f"campaign {self.name}: model {model!r}: {exc}") from exc


def _hash(obj: Any, n: int = 12) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:n]


# ----------------------------------------------------------------------------- stopping


class StopRequested(Exception):
    pass


@dataclass
class _Stop:
    """Stop file, Ctrl-C, wall clock and USD budget in one place (also a GEPA stop callback)."""

    stop_file: Path
    ledger: CostLedger
    spent_before: float
    max_usd: float | None
    deadline: float | None
    interrupted: bool = False
    reason: str = ""
    crashes_before: int = field(default_factory=engine_crashes)
    failed: bool = False

    def spent(self) -> float:
        return self.spent_before + sum(e.cost_usd for e in self.ledger.entries)

    def check(self) -> str:
        if self.interrupted:
            self.reason = "interrupted (Ctrl-C)"
        elif engine_crashes() > self.crashes_before:
            self.failed = True
            self.reason = ("the local engine crashed twice in one call (see the log above); "
                           "run the same command again to resume")
        elif self.stop_file.exists():
            self.reason = f"stop file {self.stop_file}"
        elif self.deadline is not None and time.monotonic() > self.deadline:
            self.reason = "wall-clock budget reached"
        elif self.max_usd is not None and self.spent() >= self.max_usd:
            self.reason = f"USD budget reached (${self.spent():.4f} of ${self.max_usd})"
        return self.reason

    def __call__(self, gepa_state=None) -> bool:  # gepa's StopperProtocol
        return bool(self.check())


# ----------------------------------------------------------------------------- reflection


class TextInstructionProposer:
    """GEPA's reflection prompt (current instruction + examples with feedback), answered as plain
    text with the new instruction in a ``` block — GEPA's own protocol.

    DSPy's default proposer asks for JSON; under a JSON grammar a small local model samples a long
    free string very slowly (minutes per token budget on 2 cores), and plain text is what GEPA's
    reflection prompt was written for. An empty or unusable answer proposes nothing for that
    component (GEPA then moves on).
    """

    def __init__(self, lm, max_chars: int = 4000, max_feedback_chars: int = 6000):
        self.lm = lm
        self.max_chars = max_chars
        self.max_feedback_chars = max_feedback_chars

    def _records(self, records) -> list[dict]:
        out = []
        for r in records:
            r = dict(r)
            for k, v in list(r.items()):
                text = v if isinstance(v, str) else json.dumps(v, default=str, ensure_ascii=False)
                if len(text) > self.max_feedback_chars:
                    r[k] = text[: self.max_feedback_chars] + " …"
            out.append(r)
        return out

    def __call__(self, candidate: dict[str, str], reflective_dataset, components_to_update: list[str]) -> dict[str, str]:
        from gepa.strategies.instruction_proposal import InstructionProposalSignature as Proposal

        results: dict[str, str] = {}
        for name in components_to_update:
            if name not in candidate or name not in reflective_dataset:
                continue
            prompt = Proposal.prompt_renderer({
                "current_instruction_doc": candidate[name],
                "dataset_with_feedback": self._records(reflective_dataset[name]),
                "prompt_template": None,
            })
            answer = self.lm(prompt) if isinstance(prompt, str) else self.lm(messages=prompt)
            text = answer[0] if answer else ""
            if isinstance(text, dict):
                text = text.get("text") or ""
            new = Proposal.output_extractor(str(text)).get("new_instruction", "").strip()
            if new and new != candidate[name].strip():
                results[name] = new[: self.max_chars]
        return results


# ----------------------------------------------------------------------------- evaluation


@dataclass
class CandidateEval:
    """The evaluation of one candidate (settings + instructions) on one split; stored as JSON."""

    key: str
    split: str
    settings: dict
    instructions: dict[str, str]
    per_example: dict[str, float]
    quality: float
    cost_usd: float  # per document
    tokens: float  # per document
    latency_s: float
    n_docs: int
    stage_costs: dict[str, dict[str, float]] = field(default_factory=dict)
    trial: int = -1
    gepa_index: int = -1
    parent_key: str | None = None
    changed_programs: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, path: Path) -> "CandidateEval":
        return cls(**json.loads(path.read_text(encoding="utf-8")))

    def save(self, path: Path) -> None:
        write_json_atomic(path, self.__dict__, indent=1)


def evaluate_candidate(program: dspy.Module, examples: list, metric, ledger: CostLedger, *, label: str) -> dict:
    """Quality per example and cost per document of ``program`` on ``examples`` (metered)."""
    local = CostLedger()
    per_example: dict[str, float] = {}
    t0 = time.perf_counter()
    for ex in examples:
        with ledger_context(local, doc_id=ex.example_id, program=label):
            try:
                pred = program(**ex.inputs())
            except EngineCrashError:
                raise  # the engine, not the candidate, failed: no score, the campaign stops and resumes
            except Exception as exc:  # one failing example scores 0, the evaluation goes on
                pred = dspy.Prediction(entities=[], events=[], temporal_edges=[], causal_edges=[], error=str(exc))
        with ledger_context(local, doc_id=ex.example_id, stage="judge", program="metric"):
            per_example[ex.example_id] = float(metric(ex, pred).score)
    ledger.extend(local.entries)
    docs = {ex.doc_id for ex in examples} or {"-"}
    stage_costs: dict[str, dict[str, float]] = {}
    for e in local.entries:
        s = stage_costs.setdefault(e.stage, {"usd": 0.0, "tokens": 0.0})
        s["usd"] += e.list_cost_usd / len(docs)
        s["tokens"] += e.list_tokens / len(docs)
    return {
        "per_example": per_example,
        "quality": statistics.fmean(per_example.values()) if per_example else 0.0,
        "cost_usd": sum(e.list_cost_usd for e in local.entries) / len(docs),
        "tokens": sum(e.list_tokens for e in local.entries) / len(docs),
        "latency_s": (time.perf_counter() - t0) / len(docs),
        "n_docs": len(docs),
        "stage_costs": stage_costs,
    }


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


LMBuilder = Callable[[LMSpec], Any]


class Campaign:
    """One campaign run; ``run()`` is resumable from ``run_dir``."""

    def __init__(
        self,
        config: CampaignConfig,
        run_dir: str | Path,
        compiled_root: str | Path = "compiled",
        *,
        lm_builder: LMBuilder | None = None,
        console=None,
    ):
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

    # -------------------------------------------------------------- helpers
    def lm(self, spec: LMSpec):
        key = _hash(spec.model_dump())
        if key not in self._lms:
            self._lms[key] = self.lm_builder(spec)
        return self._lms[key]

    def _splits(self):
        from optimizers.examples import chunk_examples

        d = self.config.data
        root = Path(d.root) if d.root else None
        out = {}
        for name in ("train", "val", "test"):
            s = getattr(d, name)
            out[name] = chunk_examples(s.split, docs=s.docs, doc_offset=s.doc_offset, chunks_per_doc=s.chunks_per_doc,
                                       max_sentences=d.max_sentences, overlap=d.overlap, root=root)
            if not out[name]:
                raise ConfigError(f"campaign {self.config.name}: the {name} split ({s.split}) has no annotated documents")
        from optimizers.examples import chunker_examples, fact_examples, qa_examples, resolver_examples

        for prog in self._aux_programs():
            for name in ("train", "val", "test"):
                s = getattr(d, name)
                if prog == "fact_fallback":
                    out[f"{prog}:{name}"] = fact_examples(s.split, docs=s.docs, doc_offset=s.doc_offset,
                                                          batches_per_doc=s.chunks_per_doc, root=root)
                elif prog == "qa":
                    out[f"{prog}:{name}"] = qa_examples(s.split, docs=s.docs, doc_offset=s.doc_offset,
                                                        questions_per_doc=3 * (s.chunks_per_doc or 2))
                elif prog == "resolver":
                    out[f"{prog}:{name}"] = resolver_examples(s.split, docs=s.docs, doc_offset=s.doc_offset,
                                                              pairs_per_doc=3 * (s.chunks_per_doc or 2), root=root)
                else:
                    out[f"{prog}:{name}"] = chunker_examples(s.split, docs=s.docs, doc_offset=s.doc_offset,
                                                             max_sentences=max(d.max_sentences, 3), root=root)
        return out

    def _reflection_lm(self, model: str | None = None):
        # the reflection model answers in plain text (TextInstructionProposer); max_tokens bounds it
        return self.lm(self.config.lm_spec(model or self.config.models.reflection, max_tokens=900))

    def _metric(self, judge_model: str | None = None):
        from metrics.gepa import GraphMetric

        judge = None
        m = self.config.metric
        if m.weights.get("judge", 0) > 0:
            model = judge_model or self.config.models.judge
            if model is None:
                raise ConfigError("metric.weights.judge > 0 needs models.judge (or space.judge_model)")
            from metrics.judge import Judge

            judge = Judge(lm=self.lm(self.config.lm_spec(model, max_tokens=800)), name=_model_name(model))
        return GraphMetric(weights=m.weights, structural_weights=m.structural_weights,
                           coverage_target=m.coverage_target, judge=judge)

    def _program(self, settings: dict, instructions: dict[str, str] | None = None):
        from optimizers.examples import ChunkGraphProgram, apply_instructions

        prog = ChunkGraphProgram(max_retries=settings["max_retries"], framenet_hints=settings["framenet_hints"])
        spec1 = self.config.lm_spec(settings["task_model"], temperature=settings["temperature"], max_tokens=1400)
        spec2 = self.config.lm_spec(settings.get("stage2_model") or settings["task_model"], temperature=settings["temperature"],
                                    max_tokens=700)
        prog.stage1.extract.predict.lm = self.lm(spec1)
        prog.stage2.relate.predict.lm = self.lm(spec2)
        if instructions:
            apply_instructions(prog, instructions)
        return prog

    def _evolvable(self) -> list[str]:
        names = {"stage1": "stage1.extract.predict", "stage2": "stage2.relate.predict"}
        return [names[p] for p in self.config.programs if p in names]

    def _aux_programs(self) -> list[str]:
        return [p for p in self.config.programs if p in AUX_PROGRAMS]

    def estimate(self, n_train: int, n_val: int, n_test: int) -> dict:
        b = self.config.budget
        calls_per_example = 2 * (1 + max(self.config.space.max_retries))
        candidates = max(2, b.max_metric_calls // max(1, n_val) + 1)
        task_calls = b.trials * (b.max_metric_calls + candidates * n_val + 2 * n_test) * calls_per_example
        reflection = b.trials * max(1, b.max_metric_calls // max(1, self.config.reflection_minibatch_size))
        judge = task_calls // calls_per_example if self.config.metric.weights.get("judge", 0) > 0 else 0
        calls = task_calls + reflection + judge
        return {"lm_calls": calls, "minutes": round(calls * b.seconds_per_call / 60, 1)}

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
        spent_before = sum(e.cost_usd for e in CostLedger.from_jsonl(ledger_path).entries) if ledger_path.exists() else 0.0
        ledger = CostLedger(path=ledger_path)
        stop = _Stop(self.run_dir / "STOP", ledger, spent_before, cfg.budget.max_usd,
                     (t_start + cfg.budget.wall_clock_s) if cfg.budget.wall_clock_s else None)
        splits = self._splits()
        est = self.estimate(len(splits["train"]), len(splits["val"]), len(splits["test"]))
        self.console.print(
            f"[bold]campaign {cfg.name}[/bold]: {cfg.budget.trials} trial(s), GEPA ≤ {cfg.budget.max_metric_calls} metric "
            f"calls each; train/val/test = {len(splits['train'])}/{len(splits['val'])}/{len(splits['test'])} chunk examples. "
            f"Estimate: ≤ {est['lm_calls']} LM calls, about {est['minutes']} min at {cfg.budget.seconds_per_call:g} s/call"
            + (f"; USD budget ${cfg.budget.max_usd}" if cfg.budget.max_usd is not None else "")
        )
        self._metric()  # a bad metric or judge configuration fails here, before any LM call
        storage = JournalStorage(JournalFileBackend(str(self.run_dir / "optuna.journal")))
        sampler = optuna.samplers.NSGAIISampler(seed=cfg.seed)
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        study = optuna.create_study(study_name=cfg.name, storage=storage, directions=["maximize", "minimize"],
                                    sampler=sampler, load_if_exists=True)
        for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            # killed mid-trial: its GEPA state and finished evaluations are on disk; run it again
            study._storage.set_trial_state_values(t._trial_id, TrialState.FAIL)
            study.enqueue_trial(t.params, skip_if_exists=False)
        done = [t for t in study.get_trials(deepcopy=False) if t.state == TrialState.COMPLETE]
        previous_handler = signal.getsignal(signal.SIGINT)

        def on_sigint(signum, frame):
            stop.interrupted = True
            raise KeyboardInterrupt

        signal.signal(signal.SIGINT, on_sigint)
        hv_history = self._load_hv_history()
        try:
            with dspy.context(adapter=SchemaJSONAdapter()), Progress(
                TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                TextColumn("{task.fields[note]}"), console=self.console,
            ) as progress:
                task = progress.add_task("trials", total=cfg.budget.trials, completed=len(done), note="")
                while len(done) < cfg.budget.trials and not stop.check():
                    trial = study.ask()
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
                    metric = self._metric(settings.get("judge_model"))
                    reflection_lm = self._reflection_lm(settings.get("reflection_model"))
                    progress.update(task, note=f"trial {trial.number}: {settings}")
                    evals = self._run_trial(trial.number, settings, splits, metric, reflection_lm, ledger, stop)
                    for prog in self._aux_programs():
                        if not stop.check():
                            self._run_aux(trial.number, prog, settings, splits, reflection_lm, ledger, stop)
                    if stop.check():
                        break  # the trial stays RUNNING: a resumed campaign runs it again, reusing what is on disk
                    if not evals:
                        study.tell(trial, state=TrialState.FAIL)
                        break
                    best = max(evals, key=lambda e: (e.quality, -e.cost_usd))
                    study.tell(trial, [best.quality, best.cost_usd])
                    done.append(trial)
                    hv_history = self._update_frontier(splits, ledger, hv_history, iteration=len(done), stop=stop)
                    progress.advance(task)
        except KeyboardInterrupt:
            stop.interrupted = True
            stop.reason = "interrupted (Ctrl-C)"
        except EngineCrashError as exc:
            self.console.print(f"[red]{exc}[/red]")
            stop.check()
        finally:
            signal.signal(signal.SIGINT, previous_handler)
        # whatever happened, the frontier reflects every finished evaluation; after a stop no new
        # test evaluations are run (a resumed campaign adds them)
        try:
            hv_history = self._update_frontier(splits, ledger, hv_history, iteration=len(done), stop=stop)
        except EngineCrashError as exc:
            self.console.print(f"[red]{exc}[/red]")
            stop.check()
        evals = self._all_evals("val")
        members = json.loads((self.compiled_dir / "frontier.json").read_text())["members"] if (self.compiled_dir / "frontier.json").exists() else []
        result = CampaignResult(self.run_dir, self.compiled_dir, evals, members, hv_history, stop.reason,
                                stop.spent(), len(CostLedger.from_jsonl(ledger_path).entries) if ledger_path.exists() else 0,
                                time.monotonic() - t_start, failed=stop.failed)
        self.console.print(
            f"campaign {cfg.name}: {len(done)} trial(s), {len(evals)} candidate(s) evaluated, frontier {members}; "
            f"spent ${result.spent_usd:.4f} in {result.calls} LM calls"
            + (f"; stopped: {stop.reason}" if stop.reason else "")
        )
        return result

    # -------------------------------------------------------------- one trial
    def _run_trial(self, number: int, settings: dict, splits, metric, reflection_lm, ledger, stop) -> list[CandidateEval]:
        from optimizers.examples import instructions_of

        trial_dir = self.run_dir / "trials" / _hash(settings)
        trial_dir.mkdir(parents=True, exist_ok=True)
        seed_prog = self._program(settings)
        seed_instr = instructions_of(seed_prog)
        candidates: list[tuple[dict[str, str], int | None]] = [(seed_instr, None)]
        result_file = trial_dir / "gepa_candidates.json"
        if result_file.exists():
            saved = json.loads(result_file.read_text(encoding="utf-8"))
            candidates = [(c["instructions"], c["parent"]) for c in saved]
        elif not stop.check() and self._evolvable():
            evolvable = set(self._evolvable())
            gepa = dspy.GEPA(
                metric=metric,
                instruction_proposer=TextInstructionProposer(reflection_lm),
                max_metric_calls=self.config.budget.max_metric_calls,
                reflection_lm=reflection_lm,
                reflection_minibatch_size=self.config.reflection_minibatch_size,
                candidate_selection_strategy="pareto",
                component_selector="round_robin",
                track_stats=True,
                log_dir=str(trial_dir / "gepa"),
                seed=self.config.seed,
                num_threads=1,
                use_merge=False,
                gepa_kwargs={"stop_callbacks": [stop]},
            )
            student = seed_prog  # predictors outside ``programs`` get their seed instructions back below
            with ledger_context(ledger, doc_id=f"trial{number}", stage="optimize", program="gepa"):
                compiled = gepa.compile(student, trainset=splits["train"], valset=splits["val"])
            if stop.check():
                return []  # GEPA was cut short: its candidates are not final, nothing is saved as if they were
            details = getattr(compiled, "detailed_results", None)
            if details is not None:
                candidates = []
                for i, cand in enumerate(details.candidates):
                    instr = instructions_of(cand)
                    instr = {k: (v if k in evolvable else seed_instr[k]) for k, v in instr.items()}
                    parents = details.parents[i] if i < len(details.parents) else None
                    parent = next((p for p in (parents or []) if p is not None), None)
                    candidates.append((instr, parent))
            write_json_atomic(result_file, [{"instructions": c, "parent": p} for c, p in candidates], indent=1)
        evals: list[CandidateEval] = []
        keys: list[str] = []
        for i, (instr, parent) in enumerate(candidates):
            key = _hash({"settings": settings, "instructions": instr})
            keys.append(key)
            if stop.check():
                break
            ev = self._eval(key, "val", settings, instr, splits["val"], metric, ledger)
            before = dict(ev.__dict__)
            ev.trial, ev.gepa_index = number, i
            if parent is not None and parent < len(keys):
                ev.parent_key = keys[parent]
                parent_instr = candidates[parent][0]
                ev.changed_programs = [k.split(".")[0] for k in instr if instr[k] != parent_instr.get(k)]
            if ev.__dict__ != before:  # lineage recorded once; a resumed run finds it as it was
                ev.save(self.run_dir / "evals" / f"val-{key}.json")
            evals.append(ev)
        return evals

    def _aux_program(self, prog: str, settings: dict, instructions: dict[str, str] | None = None):
        from optimizers.examples import AuxProgram, apply_instructions

        module = AuxProgram(prog, max_retries=settings["max_retries"])
        spec = self.config.lm_spec(settings["task_model"], temperature=settings["temperature"], max_tokens=AUX_PROGRAMS[prog])
        for _, pred in module.named_predictors():
            pred.lm = self.lm(spec)
        if instructions:
            apply_instructions(module, instructions)
        return module

    def _aux_path(self, settings: dict, prog: str) -> Path:
        return self.run_dir / "trials" / _hash(settings) / f"aux-{prog}.json"

    def _run_aux(self, number: int, prog: str, settings: dict, splits, reflection_lm, ledger, stop) -> dict | None:
        """GEPA on one auxiliary program; its best candidate scored on val and test (cost per document)."""
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
        gepa = dspy.GEPA(metric=metric, instruction_proposer=TextInstructionProposer(reflection_lm),
                         max_metric_calls=self.config.budget.max_metric_calls, reflection_lm=reflection_lm,
                         reflection_minibatch_size=self.config.reflection_minibatch_size, track_stats=True,
                         log_dir=str(path.parent / f"gepa-{prog}"), seed=self.config.seed, num_threads=1,
                         use_merge=False, gepa_kwargs={"stop_callbacks": [stop]})
        with ledger_context(ledger, doc_id=f"trial{number}", stage="optimize", program=f"gepa:{prog}"):
            compiled = gepa.compile(module, trainset=splits[f"{prog}:train"], valset=splits[f"{prog}:val"])
        details = getattr(compiled, "detailed_results", None)
        if details is not None and details.candidates:
            best = instructions_of(details.candidates[details.best_idx])
        if stop.check():
            return None  # not finished: redone (from GEPA's saved state) on resume
        record = {"program": prog, "instructions": best, "seed_instructions": seed}
        for split in ("val", "test"):
            res = evaluate_candidate(self._aux_program(prog, settings, best), splits[f"{prog}:{split}"], metric, ledger,
                                     label=f"eval-{prog}-{split}")
            record[split] = {k: res[k] for k in ("quality", "cost_usd", "tokens", "n_docs", "per_example")}
        write_json_atomic(path, record, indent=1)
        return record

    def _aux_for(self, settings: dict) -> list[dict]:
        out = []
        for prog in self._aux_programs():
            path = self._aux_path(settings, prog)
            if path.exists():
                out.append(json.loads(path.read_text(encoding="utf-8")))
        return out

    def _eval(self, key, split, settings, instructions, examples, metric, ledger) -> CandidateEval:
        path = self.run_dir / "evals" / f"{split}-{key}.json"
        if path.exists():
            return CandidateEval.load(path)
        prog = self._program(settings, instructions)
        res = evaluate_candidate(prog, examples, metric, ledger, label=f"eval-{split}")
        ev = CandidateEval(key=key, split=split, settings=settings, instructions=instructions, **res)
        ev.save(path)
        return ev

    def _all_evals(self, split: str) -> list[CandidateEval]:
        return [CandidateEval.load(p) for p in sorted((self.run_dir / "evals").glob(f"{split}-*.json"))]

    def _load_hv_history(self) -> list[dict]:
        path = self.run_dir / "hypervolume.json"
        return json.loads(path.read_text()) if path.exists() else []

    # -------------------------------------------------------------- frontier
    def _update_frontier(self, splits, ledger, hv_history, *, iteration: int, stop):
        from optimizers.frontier import (
            FrontierFile,
            Lineage,
            MemberManifest,
            dependency_versions,
            flag_val_only_wins,
            hypervolume,
            instruction_diff_size,
            pareto_front,
            write_frontier,
            write_member,
        )

        evals = self._all_evals("val")
        if not evals:
            return hv_history
        # Cost in USD; in tokens when every model is free (local models), where USD cannot separate anything.
        cost_key = "cost_usd" if any(e.cost_usd > 0 for e in evals) else "tokens"
        senses = {"quality": "max", cost_key: "min"}
        aux_of = {e.key: self._aux_for(e.settings) for e in evals}

        def total(e, split: str, field: str) -> float:
            base = getattr(e, field)
            return base + sum(a[split][field] for a in aux_of.get(e.key, []) if split in a)

        points = [{"quality": e.quality, "cost_usd": total(e, "val", "cost_usd"), "tokens": total(e, "val", "tokens")} for e in evals]
        constraints = None
        if self.config.budget.max_cost_per_doc is not None:
            constraints = {"cost_usd": ("<=", self.config.budget.max_cost_per_doc)}
        front = pareto_front([{k: p[k] for k in senses} for p in points], senses, constraints and (constraints if cost_key == "cost_usd" else None))
        ref = {"quality": 0.0, cost_key: 1.1 * max((p[cost_key] for p in points), default=0.0) or 1.0}
        hv = hypervolume([{k: points[i][k] for k in senses} for i in front], senses, ref)
        if not hv_history or hv_history[-1].get("iteration") != iteration:
            hv_history = hv_history + [{"iteration": iteration, "hypervolume": hv, "frontier_size": len(front)}]
            write_json_atomic(self.run_dir / "hypervolume.json", hv_history, indent=1)
        by_key = {e.key: e for e in evals}
        seed_key = next((e.key for e in evals if e.parent_key is None and e.gepa_index == 0), evals[0].key)
        data_hash = {name: _examples_hash(ex) for name, ex in splits.items()}
        metric_hash = _hash(self.config.metric.model_dump())
        manifests = []
        for i in front:
            ev = evals[i]
            test = None
            if stop is None or not stop.check():
                # scored with the member's own metric (its judge, when the judge is searched too);
                # evaluate_candidate scores a failing example 0, so an error here is the engine's
                test = self._eval(ev.key, "test", ev.settings, ev.instructions, splits["test"],
                                  self._metric(ev.settings.get("judge_model")), ledger)
            elif (self.run_dir / "evals" / f"test-{ev.key}.json").exists():
                test = CandidateEval.load(self.run_dir / "evals" / f"test-{ev.key}.json")
            aux = aux_of.get(ev.key, [])
            split_scores = {"val": _split_scores(ev, total(ev, "val", "cost_usd"), total(ev, "val", "tokens"))}
            if test is not None:
                split_scores["test"] = _split_scores(test, total(test, "test", "cost_usd") if aux else test.cost_usd,
                                                     total(test, "test", "tokens") if aux else test.tokens)
            parent = by_key.get(ev.parent_key) if ev.parent_key else None
            diff = sum(instruction_diff_size(parent.instructions.get(k, ""), v) for k, v in ev.instructions.items()) if parent else 0
            manifests.append(MemberManifest(
                campaign=self.config.name,
                member_id=ev.key,
                created=_now(),
                objectives={"quality": ev.quality, "cost_usd": points[i]["cost_usd"], "tokens": points[i]["tokens"],
                            "latency_s": ev.latency_s},
                splits=split_scores,
                val_only_win=False,
                lineage=Lineage(parent=ev.parent_key, changed_programs=ev.changed_programs, instruction_diff_chars=diff,
                                iteration=ev.trial, origin="seed" if ev.key == seed_key or ev.parent_key is None else "gepa"),
                settings={**ev.settings, "models": {**{st: ev.settings["task_model"] for st in ("stage1", *[a["program"] for a in aux])},
                                                    "stage2": ev.settings.get("stage2_model") or ev.settings["task_model"],
                                                    "reflection": ev.settings.get("reflection_model") or _model_name(self.config.models.reflection),
                                                    **({"judge": ev.settings.get("judge_model") or _model_name(self.config.models.judge)}
                                                       if self.config.metric.weights.get("judge", 0) > 0 else {})},
                          **({"aux_quality": {a["program"]: {sp: a[sp]["quality"] for sp in ("val", "test")} for a in aux}} if aux else {})},
                prompts={**ev.instructions, **{k: v for a in aux for k, v in a["instructions"].items()}},
                stage_costs={**ev.stage_costs, **{a["program"]: {"usd": a["val"]["cost_usd"], "tokens": a["val"]["tokens"]} for a in aux}},
                dataset_hash=_hash(data_hash),
                metric_hash=metric_hash,
                versions=dependency_versions(),
            ))
        manifests = flag_val_only_wins(manifests)
        self.compiled_dir.mkdir(parents=True, exist_ok=True)
        for m in manifests:
            self._write_programs(self.compiled_dir / m.member_id, by_key[m.member_id], m.prompts)
            write_member(self.compiled_dir, m)
        summary = [{"id": e.key, "quality": e.quality, "cost_usd": points[i]["cost_usd"], "tokens": points[i]["tokens"],
                    "on_frontier": i in front, "trial": e.trial, "parent": e.parent_key,
                    "origin": "seed" if e.parent_key is None else "gepa"} for i, e in enumerate(evals)]
        write_frontier(self.compiled_dir, FrontierFile(
            campaign=self.config.name,
            objectives=senses,
            reference=ref,
            members=[m.member_id for m in manifests],
            all_candidates=summary,
            hypervolume_history=hv_history,
            constraints={"max_cost_per_doc": self.config.budget.max_cost_per_doc},
        ))
        return hv_history

    def _write_programs(self, member_dir: Path, ev: CandidateEval, instructions: dict[str, str] | None = None) -> None:
        """The member's programs as ``programs.ArgusPrograms`` JSON state (pickle-free)."""
        from optimizers.examples import apply_instructions
        from programs import ArgusPrograms

        member_dir.mkdir(parents=True, exist_ok=True)
        progs = ArgusPrograms(max_retries=ev.settings.get("max_retries", 1))
        apply_instructions(progs, instructions or ev.instructions)
        tmp = member_dir / "programs.tmp.json"
        progs.save(str(tmp))
        text = tmp.read_text(encoding="utf-8")
        tmp.unlink()
        from optimizers.frontier import scrub_secrets

        state = scrub_secrets(json.loads(text))
        write_json_atomic(member_dir / "programs.json", state, indent=1)


def _model_name(model: str | dict | None) -> str:
    if model is None:
        return ""
    return model if isinstance(model, str) else str(model.get("model", ""))


def _examples_hash(examples) -> str:
    from optimizers.examples import examples_hash

    return examples_hash(examples)


def _split_scores(ev: CandidateEval, cost_usd: float | None = None, tokens: float | None = None):
    from optimizers.frontier import SplitScores, bootstrap_ci

    vals = list(ev.per_example.values())
    return SplitScores(
        n=len(vals),
        quality=ev.quality,
        quality_ci=bootstrap_ci(vals) if len(vals) >= 2 else None,
        cost_usd=ev.cost_usd if cost_usd is None else cost_usd,
        cost_usd_ci=None,
        tokens=ev.tokens if tokens is None else tokens,
        latency_s=ev.latency_s,
        per_example=ev.per_example,
    )


def _now() -> str:
    import datetime as _dt

    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def run_campaign(path: str | Path, *, run_root: str | Path = "runs/campaigns", compiled_root: str | Path = "compiled",
                 lm_builder: LMBuilder | None = None) -> CampaignResult:
    cfg = CampaignConfig.load(path)
    return Campaign(cfg, Path(run_root) / cfg.name, compiled_root, lm_builder=lm_builder).run()
