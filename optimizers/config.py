"""The campaign file (``campaigns/<name>.yaml``) as a typed model: data splits, metric weights, the
settings an Optuna search explores, models, the deployment configuration and the budgets."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from argus.config import LMSpec, read_yaml_mapping
from argus.errors import ConfigError

SETTING_KEYS = ("task_model", "temperature", "max_retries", "framenet_hints")
ROUTING_KEYS = {"sentence.llm": "sentence_llm", "sentence.tau": "sentence_tau", "sentence.pair_llm": "pair_llm",
                "sentence.pair_tau": "pair_tau", "facts.mode": "facts_mode", "facts.tau": "facts_tau",
                "sentence.heads": "heads"}
"""The routing settings a space may search (dotted ArgusConfig key -> SpaceSpec field): how much of the work goes
to a model at all. A member records each under its dotted key; ``optimizers.deploy.member_overrides`` applies it
over the campaign's ``pipeline`` overrides."""
MEMBER_STAGES = ("fact_fallback", "chunker", "stage1", "stage2", "resolver", "sentence")
"""The stages whose model a member fixes: Stage 2 may have its own, every other stage runs the task model
(``optimizers.deploy`` reads it from here, and gives it under its old name ``optimizers.deploy.MEMBER_STAGES``)."""
AUX_PROGRAMS = ("fact_fallback", "chunker", "resolver", "qa")
"""Programs that evolve on their own examples and metric (Stage 1 and Stage 2 evolve in the pipeline)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SplitSpec(_Strict):
    split: str = Field(description="Folder under us_complaints: train or dev")
    docs: int | None = Field(default=None, ge=1, description="Documents to use (None: all)")
    doc_offset: int = Field(default=0, ge=0, description="Documents to skip first")
    ids: list[str] | None = Field(default=None, description="Name the documents (doc ids) instead of docs/doc_offset")
    chunks_per_doc: int | None = Field(
        default=None, ge=1, description="train: chunk examples per document for GEPA's minibatches (None: all). "
        "val/test are scored on whole documents; for them this only sizes the auxiliary programs' examples")


class DataSpec(_Strict):
    root: str | None = Field(default=None, description="us_complaints folder (default: the shared data)")
    train: SplitSpec = Field(default_factory=lambda: SplitSpec(split="train", docs=2, chunks_per_doc=3))
    val: SplitSpec = Field(default_factory=lambda: SplitSpec(split="dev", docs=2, chunks_per_doc=2))
    test: SplitSpec = Field(default_factory=lambda: SplitSpec(split="dev", docs=2, doc_offset=2, chunks_per_doc=2))
    max_sentences: int = Field(default=6, ge=2, description="Sentences per chunk example of the train split")
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
    extraction: list[Literal["chunked", "sentence"]] | None = Field(
        default=None, description="Extraction designs to search (None: chunked): the frontier then holds members "
                                  "of each design and chooses by quality and cost")
    # routing (written with their dotted names in the campaign file, e.g. `sentence.tau: [0.4, 0.6, 1.0]`)
    sentence_llm: list[Literal["measured", "always", "never"]] | None = Field(
        default=None, alias="sentence.llm",
        description="sentence.llm values to search (None: the pipeline's): never (the heads decide alone), always "
                    "(sentences below sentence.tau go to the choice model), measured (where the heads' report found "
                    "the model better)")
    sentence_tau: list[float] | None = Field(
        default=None, alias="sentence.tau",
        description="sentence.tau values to search: type confidence below which a sentence goes to the model (1.0: "
                    "every sentence)")
    pair_llm: list[Literal["measured", "always", "never"]] | None = Field(
        default=None, alias="sentence.pair_llm",
        description="sentence.pair_llm values to search: never (the edge heads decide alone), always (the pairs they "
                    "are unsure of go to the pair-choice program), measured")
    pair_tau: list[float] | None = Field(
        default=None, alias="sentence.pair_tau",
        description="sentence.pair_tau values to search: how close to its head's threshold a pair's P(no relation) must "
                    "be for the pair to go to the model (1.0: every candidate pair)")
    facts_mode: list[Literal["classifier", "hybrid", "llm"]] | None = Field(
        default=None, alias="facts.mode", description="facts.mode values to search (the fact gate)")
    facts_tau: list[float] | None = Field(
        default=None, alias="facts.tau", description="facts.tau values to search: the fact gate's confidence below "
                                                     "which a sentence goes to the fallback model (hybrid)")

    heads: list[str] | None = Field(
        default=None, alias="sentence.heads",
        description="event heads files to search (the sentence design): 'embedded' (the shipped heads) or files "
                    "written by argus train-events (--gold: heads trained on your corrected graphs); with the heads "
                    "deciding alone each is a member at 0 tokens, and the frontier keeps the better")

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @field_validator("heads")
    @classmethod
    def _heads(cls, v: list[str] | None) -> list[str] | None:
        for h in v or []:
            if h != "embedded" and not Path(h).is_file():
                raise ValueError(f"sentence.heads: no heads file {h!r} (a file from argus train-events, or 'embedded')")
        return v

    @field_validator("sentence_tau", "pair_tau", "facts_tau")
    @classmethod
    def _taus(cls, v: list[float] | None, info) -> list[float] | None:
        low = 0.5 if info.field_name == "facts_tau" else 0.0
        if v is not None and not all(low <= x <= 1.0 for x in v):
            raise ValueError(f"every τ must be in [{low}, 1], got {v}")
        return v

    def choices(self, key: str) -> list | None:
        """The values searched for a setting: a field name, or a routing key by its dotted name."""
        return getattr(self, ROUTING_KEYS.get(key, key))


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


class ConcurrencySpec(_Strict):
    num_threads: int = Field(
        default=4, ge=1,
        description="Evaluations run at once, each in its own thread: the validation (and test) documents of a "
        "candidate's deployment runs, GEPA's and DSPy's evaluation of a minibatch or of the train set, and the "
        "auxiliary programs' examples. Results and booked spend do not depend on it (they are gathered by "
        "document / example index, and every call is booked under the phase that made it). The calls these "
        "threads make are bounded by each model's own limits (max_in_flight, rpm, tpm in its spec, process-wide): "
        "the embedded local engine answers one completion at a time, so for it more threads only queue")
    heartbeat_s: int = Field(
        default=10, ge=1,
        description="With an RDB storage (--storage): how often a worker records that its trial is alive")
    grace_s: int = Field(
        default=60, ge=1,
        description="With an RDB storage: a running trial whose worker has recorded no heartbeat for this long is "
        "failed and queued again (a worker on the same machine whose process is gone is noticed at once)")
    poll_s: float = Field(
        default=5.0, gt=0,
        description="With an RDB storage: how often an idle worker looks for queued or stale trials while other "
        "workers run the last open trials")


class TrackingSpec(_Strict):
    mlflow: str | None = Field(
        default=None, description="MLflow tracking URI (e.g. http://127.0.0.1:5000): log the campaign there, one "
        "parent run and a child run per trial (optimizers.tracking; pip install 'argus-kg[track]'). None: off. "
        "`argus optimize --mlflow URI` sets it. A password in it is never printed or recorded")
    experiment: str = Field(default="argus-campaigns", min_length=1, description="The MLflow experiment of the runs")


class CampaignConfig(_Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    programs: list[Literal["stage1", "stage2", "sentence_events", "pair_relations", "fact_fallback", "chunker", "resolver",
                           "qa"]] = Field(
        default_factory=lambda: ["stage1", "stage2"],
        description="Stage 1 / Stage 2 (chunked design) and sentence_events / Stage 2 / pair_relations (sentence design) "
        "evolve jointly "
        "inside the pipeline on chunk examples, each trial the programs its design runs; fact_fallback, chunker, "
        "resolver and qa each evolve on their own examples and metric and their best candidate joins every member "
        "of the trial. Every member is then scored and priced by deployment runs of the whole pipeline",
    )
    data: DataSpec = Field(default_factory=DataSpec)
    metric: MetricSpec = Field(default_factory=MetricSpec)
    space: SpaceSpec = Field(default_factory=SpaceSpec)
    models: ModelsSpec = Field(default_factory=ModelsSpec)
    budget: BudgetSpec = Field(default_factory=BudgetSpec)
    reflection_minibatch_size: int = Field(default=2, ge=1)
    concurrency: ConcurrencySpec = Field(
        default_factory=ConcurrencySpec,
        description="Threads per worker process and, with an RDB storage, how workers notice each other")
    pipeline: dict[str, Any] = Field(
        default_factory=dict,
        description="Dotted ArgusConfig overrides every candidate is evaluated and deployed with (e.g. "
        "chunking.max_sentences, merge.max_pairs); recorded in each member, so `argus extract --frontier` "
        "runs the same configuration")
    objectives: list[Literal["quality", "usd", "tokens", "seconds"]] | None = Field(
        default=None,
        description="The frontier's objectives: [quality, usd], [quality, tokens], [quality, usd, seconds] or "
        "[quality, tokens, seconds] (seconds: measured wall seconds per document of the deployment runs); the "
        "non-dominated set is over all of them. None: quality and USD when a model of the space has a price, else "
        "quality and tokens. The outer search (Optuna) is guided by quality and the cost in USD or tokens")
    default_candidate: bool = Field(
        default=True,
        description="Deploy, beside the trials' candidates, what `argus extract` runs with each task model of the "
        "space (its defaults: offline the sentence design with the heads deciding alone; none of the campaign's "
        "`pipeline` overrides, no evolved program) on the same validation (and, a member, test) documents through "
        "the same deployment runs: it joins the frontier like any candidate, marked as the default")
    tracking: TrackingSpec = Field(
        default_factory=TrackingSpec, description="Experiment tracking (off by default); not part of what workers "
        "sharing a storage must agree on")
    seed: int = 0

    @field_validator("objectives")
    @classmethod
    def _objectives(cls, v: list[str] | None) -> list[str] | None:
        allowed = (["quality", "usd"], ["quality", "tokens"], ["quality", "usd", "seconds"],
                   ["quality", "tokens", "seconds"])
        if v is not None and list(v) not in allowed:
            raise ValueError(f"objectives must be one of {[list(a) for a in allowed]}, got {v}")
        return v

    @classmethod
    def load(cls, path: str | Path) -> "CampaignConfig":
        data = read_yaml_mapping(path, "campaign file")
        try:
            return cls(**data)
        except ValidationError as exc:
            raise ConfigError(f"campaign file {path}: {exc}") from exc

    def model_uses(self) -> list[tuple[str, LMSpec]]:
        """Every model a trial may call, with what uses it (``argus.models.preflight``): each task model in every stage
        a member fixes (Stage 2 its own models when the space lists them), the QA program's model when it evolves,
        the reflection models and, when the metric weighs a judge, the judge models."""
        from argus.config import ArgusConfig

        uses = []
        for model in self.space.task_model:
            uses += [(stage, self.lm_spec(model)) for stage in MEMBER_STAGES
                     if stage != "stage2" or not self.space.stage2_model]
        uses += [("stage2", self.lm_spec(m)) for m in self.space.stage2_model or []]
        if "qa" in self.programs:  # the deployed pipeline's QA stage: the campaign's defaults over the configuration
            defaults = {f"lm.stages.qa.{k}": v for k, v in self.models.defaults.items()}
            uses.append(("qa", ArgusConfig.load(None, {**defaults, **self.pipeline}).lm.for_stage("qa")))
        uses += [("reflection", self.lm_spec(m)) for m in self.space.reflection_model or [self.models.reflection]]
        if self.metric.weights.get("judge", 0) > 0:
            judges = self.space.judge_model or ([self.models.judge] if self.models.judge is not None else [])
            uses += [("judge", self.lm_spec(m)) for m in judges]
        return uses

    def lm_spec(self, model: str | dict, **overrides) -> LMSpec:
        data = dict(self.models.defaults)
        data.update({"model": model} if isinstance(model, str) else dict(model))
        data.update(overrides)
        try:
            return LMSpec(**data)
        except ValidationError as exc:
            raise ConfigError(f"campaign {self.name}: model {model!r}: {exc}") from exc


