"""Configuration in one typed place: a YAML file plus command-line overrides.

    lm:
      default: {model: local/smollm2}          # the embedded, offline model
      stages:
        stage1: {model: openai/gpt-4o-mini, max_in_flight: 32, rpm: 500}   # any litellm model per stage
        resolver: {model: openai/qwen2.5-7b, api_base: "http://127.0.0.1:8000/v1"}
    facts: {mode: hybrid, tau: 0.8}
    chunking: {max_sentences: 8, overlap: 2}
    extraction: {design: sentence, framenet_hints: false, max_retries: 2}   # default: sentence for local/ engines
    sentence: {llm: measured, tau: 0.6, batch_size: 6}   # the sentence-level design
    merge: {resolver: true, top_k: 2}
    concurrency: {max_in_flight: 16}           # LM calls in flight across the run
    cache_dir: .argus_cache

Stage names: fact_fallback, chunker, stage1, stage2, resolver, sentence, oneshot, judge, qa, reflection.
A stage entry overrides only the keys it sets; the rest comes from ``lm.default``.
API keys are never stored here: a spec names the environment variable (``api_key_env``) or the
provider's usual variable is used (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, …).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from argus.errors import ConfigError

STAGES = ("fact_fallback", "chunker", "stage1", "stage2", "resolver", "sentence", "oneshot", "judge", "qa", "reflection")
PIPELINE_STAGES = ("fact_fallback", "chunker", "stage1", "stage2", "resolver")
SENTENCE_STAGES = ("fact_fallback", "sentence", "stage2")
DEFAULT_CONFIG_FILE = "argus.yaml"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# Output budgets that keep a tiny local model from looping forever; hosted models get the same
# max_tokens unless a stage sets its own.
DEFAULT_MAX_TOKENS = {
    "fact_fallback": 256,
    "chunker": 512,
    "stage1": 1400,
    "stage2": 700,
    "resolver": 160,
    "sentence": 900,
    "oneshot": 2500,
    "judge": 800,
    "qa": 300,
    "reflection": 2000,
}


class LMSpec(_Strict):
    """How to call the language model of one stage."""

    model: str = "local/smollm2"
    api_base: str | None = Field(default=None, description="OpenAI-compatible server URL (vLLM, llama.cpp, Ollama)")
    api_key_env: str | None = Field(default=None, description="Name of the environment variable holding the key")
    temperature: float = 0.0
    max_tokens: int | None = None
    cache: bool = True
    num_retries: int = Field(
        default=2, ge=0,
        description="Retries of a call that met a provider fault (429, 5xx, timeout, dropped connection), with "
                    "exponential backoff and jitter, honouring Retry-After; then the call fails its document",
    )
    timeout_s: float | None = Field(
        default=None, gt=0,
        description="Seconds one call may take (None: 120 for remote models, no limit for local/ engines)",
    )
    max_in_flight: int | None = Field(
        default=None, ge=1,
        description="Calls to this model in flight at once, process-wide (a local server may take 2, a hosted API "
                    "32; None: no per-model bound, local/ engines 1)",
    )
    rpm: int | None = Field(default=None, ge=1, description="Requests per minute to this model (sliding window)")
    tpm: int | None = Field(
        default=None, ge=1,
        description="Tokens per minute to this model (sliding window; a call is booked at prompt chars/4 + max_tokens "
                    "when it starts and at its reported usage when it returns)",
    )
    n_ctx: int = Field(default=8192, description="Context size for local GGUF models")
    n_threads: int | None = None
    price_per_mtok: tuple[float, float] | None = Field(
        default=None, description="(input, output) USD per million tokens; overrides litellm's price table"
    )
    structured_output: Literal["auto", "json_object_schema", "json_schema", "native", "none"] = "auto"
    grammar_limits: dict[str, int] | Literal[False] | None = Field(
        default=None,
        description="maxItems/maxLength caps for grammar-constrained models (merged over the defaults; false disables)",
    )

    @field_validator("model")
    @classmethod
    def _model_nonempty(cls, v: str) -> str:
        if not v or not v.strip():
            raise ValueError("model must be a non-empty litellm model string or local/<name>")
        return v.strip()


def merged_spec(base: LMSpec, override: dict, where: str, default_max_tokens: int | None = None) -> LMSpec:
    """``base`` with ``override`` applied; a different model does not inherit the base's server
    (``api_base``) unless the override names one. ``where`` prefixes a validation error."""
    data = base.model_dump()
    override = dict(override)
    if "model" in override and override["model"] != data["model"] and "api_base" not in override:
        data["api_base"] = None
    data.update(override)
    if data.get("max_tokens") is None and default_max_tokens is not None:
        data["max_tokens"] = default_max_tokens
    try:
        return LMSpec(**data)
    except ValidationError as exc:
        raise ConfigError(f"{where}: {exc}") from exc


class LMConfig(_Strict):
    default: LMSpec = Field(default_factory=LMSpec)
    stages: dict[str, dict] = Field(default_factory=dict)

    @field_validator("stages")
    @classmethod
    def _known_stages(cls, v: dict) -> dict:
        unknown = set(v) - set(STAGES)
        if unknown:
            raise ValueError(f"unknown stage(s) {sorted(unknown)}; known: {', '.join(STAGES)}")
        return v

    def for_stage(self, stage: str) -> LMSpec:
        if stage not in STAGES:
            raise ConfigError(f"unknown stage {stage!r}; known: {', '.join(STAGES)}")
        return merged_spec(self.default, self.stages.get(stage) or {}, f"lm.stages.{stage}",
                           default_max_tokens=DEFAULT_MAX_TOKENS[stage])


class FactsConfig(_Strict):
    mode: Literal["classifier", "hybrid", "llm"] = "hybrid"
    tau: float = Field(default=0.8, ge=0.5, le=1.0, description="Confidence threshold on max softmax probability")
    fallback: Literal["measured", "always"] = Field(
        default="measured",
        description="measured: in hybrid mode, call the fallback model only where the classifier's fallback report "
                    "found it better (at the τ measured there); the embedded model, or a model measured no better, "
                    "leaves the classifier alone. always: every narrative sentence below tau goes to the model",
    )
    classifier: str = Field(default="embedded", description="'embedded', a head JSON file, or a fine-tuned model dir")
    batch_size: int = Field(default=12, ge=1, description="Sentences per LLM fallback call")


class ChunkingConfig(_Strict):
    use_llm: bool = True
    max_sentences: int = Field(default=8, ge=2)
    min_sentences: int = Field(default=3, ge=1)
    overlap: int = Field(default=2, ge=0, le=3)


class ExtractionConfig(_Strict):
    design: Literal["chunked", "sentence"] | None = Field(
        default=None,
        description="chunked: LLM chunking, Stage 1 writes entities and events per chunk, Stage 2 relations, "
                    "merging and the resolver; sentence: one event per fact sentence chosen among given options "
                    "(encoder heads, the choice program where they are unsure), the document's entity list, Stage 2 "
                    "over neighbouring events and date order (argus extract --design). None (default): sentence "
                    "when the sentence stage runs on a local/ engine, where it was measured far above the chunked "
                    "design (README), chunked otherwise, as before for hosted models")
    framenet_hints: bool = False
    max_retries: int = Field(default=1, ge=0, le=5, description="Retries with validation feedback per Stage 1/2 call")
    keep_ungrounded: bool = Field(
        default=False,
        description="Keep entities and events whose name or trigger is not found in the text, flagged grounded: false "
                    "(default: they leave the graph for the EKG's rejected list; argus extract --keep-ungrounded)")
    grounded_decoding: bool | None = Field(
        default=None,
        description="Grammar-capable engines may write entity names, aliases and triggers only as word runs of the "
                    "chunk (argus.graph.grounding.chunk_phrases); other engines ignore it. None (default): on when Stage 1 "
                    "runs on a local/ engine, where it was measured to help (README), off otherwise "
                    "(argus extract --grounded-decoding / --no-grounded-decoding)")


class SentenceConfig(_Strict):
    """The sentence-level design (``extraction.design: sentence``)."""

    heads: str = Field(default="embedded", description="Event heads: 'embedded' or a file from argus train-events")
    batch_size: int = Field(default=6, ge=1, le=40, description="Consecutive fact sentences per choice call and per "
                                                                 "Stage 2 window")
    llm: Literal["measured", "always", "never"] = Field(
        default="measured",
        description="measured: the choice program decides the sentences whose type the heads read with confidence "
                    "below tau, where the heads' report measured that model to help (argus train-events "
                    "--fallback-report); the embedded model, or a model measured no better, leaves the heads alone. "
                    "always: every sentence below tau goes to the model (tau 1.0: every sentence). never: heads only")
    tau: float = Field(default=0.6, ge=0.0, le=1.0, description="Type confidence below which a sentence goes to the model")
    min_event_probability: float = Field(default=0.35, ge=0.0, le=1.0,
                                         description="Sentences the type head reads as an event with less are skipped")
    stage2: bool | None = Field(
        default=None,
        description="Stage 2 relations over each batch's events. None (default): on unless Stage 2 runs on a local/ "
                    "engine, where it was measured to lower temporal F1 below the date order alone at about 30 s per "
                    "batch (README)")
    date_edges: bool = Field(default=True, description="BEFORE / SAME_TIME edges between events with explicit dates")
    event_words: bool = Field(default=True, description="A trigger is a verb or an event noun of its sentence "
                                                        "(argus.text.words.event_word); a sentence without one (a "
                                                        "fragment, a citation) gives no event. False: the trigger "
                                                        "head's best word, whatever it is")
    trigger_types: bool = Field(default=True, description="The type of an event read from its trigger in its sentence "
                                                          "(the heads file's trigger type model, weighed with the type "
                                                          "head), where the heads file has one. False: the type head's "
                                                          "reading of the sentence weighed with the trigger lexicon")
    cue_edges: bool = Field(default=True, description="Causal edges to the causes an effect's sentence names after a "
                                                      "causal connective ('in retaliation for her complaint'), beside "
                                                      "the causal head's")
    edge_heads: bool = Field(default=True, description="Temporal and causal edges drawn by the heads file's pair heads "
                                                       "(argus.designs.sentence.temporal / causal), where it has them")
    resolver: bool = Field(default=False, description="Cross-batch candidate pairs (merge.top_k, min_similarity, max_pairs) "
                                                      "decided by the resolver program, as in the chunked design")
    pair_llm: Literal["measured", "always", "never"] = Field(
        default="measured",
        description="measured: the pair-choice program (Stage 2's model) decides the candidate pairs the temporal and "
                    "causal heads are unsure of (P(no relation) within pair_tau of the head's threshold), where "
                    "bench/pair_fallback.py measured that model to help; the embedded model, or a model measured no "
                    "better, leaves the heads alone. always: every unsure pair goes to the model. never: heads only")
    pair_tau: float = Field(default=0.1, ge=0.0, le=1.0,
                            description="How close to its head's threshold a pair's P(no relation) must be for the pair "
                                        "to go to the model (1.0: every candidate pair)")
    pair_batch: int = Field(default=8, ge=1, le=40, description="Pairs per pair-choice call")
    pair_max: int = Field(default=64, ge=0, description="At most this many pairs of a document go to the model, the "
                                                        "most unsure first")


class MergeConfig(_Strict):
    resolver: bool = True
    top_k: int = Field(default=2, ge=1)
    min_similarity: float = Field(default=0.55, ge=-1.0, le=1.0)
    max_pairs: int = Field(default=24, ge=0)
    embedding_model: str = "embedded"


class EncoderConfig(_Strict):
    runtime: Literal["auto", "onnx", "onnx-int8", "openvino", "openvino-bf16", "torch"] = Field(
        default="auto",
        description="Runtime of the sentence encoder (argus.models.encoders): auto (for the embedded encoder and "
                    "other local sentence-transformers folders: OpenVINO in bfloat16 on a CPU that computes it "
                    "natively, ONNX Runtime fp32 elsewhere; torch for other encoders), onnx, onnx-int8, openvino, "
                    "openvino-bf16, torch; $ARGUS_ENCODER_RUNTIME when set overrides auto")


class ConcurrencyConfig(_Strict):
    """How much runs at once (see ``argus.models.concurrency``). Outputs do not depend on it: given the same
    LM answers, a run at any concurrency writes the graphs a sequential run writes."""

    max_in_flight: int = Field(
        default=8, ge=1,
        description="LM calls in flight at once across the run (documents × chunks × stages; argus extract "
                    "--concurrency); each model's own max_in_flight bounds it further",
    )
    max_documents: int | None = Field(
        default=None, ge=1, description="Documents in flight at once in a batch (None: max_in_flight)",
    )

    @property
    def documents(self) -> int:
        return self.max_documents or self.max_in_flight


class LimitsConfig(_Strict):
    max_document_chars: int = Field(default=1_000_000, ge=1000)
    max_narrative_sentences: int = Field(default=600, ge=1)


class EvalConfig(_Strict):
    """Evaluation settings (``argus eval``) and the weights of the quality score."""

    judges: list[str | dict] = Field(
        default_factory=list,
        description="Judge models: model strings or LMSpec mappings, each over lm.stages.judge; empty: that stage's model",
    )
    quality_weights: dict[str, float] = Field(default_factory=lambda: {"structural": 0.5, "judge": 0.5})
    structural_weights: dict[str, float] | None = Field(default=None, description="None: metrics.structural.DEFAULT_WEIGHTS")
    coverage_target: float = Field(default=0.7, gt=0.0, le=1.0)
    stability_temperature: float = Field(default=0.7, ge=0.0, le=2.0, description="0 skips the stability re-judging")
    both_orders: bool = Field(default=True, description="Judge each pair as (A, B) and (B, A); disagreement is a tie")
    llm_match: bool = Field(default=False, description="Add the LLM-judged gold-matching tier (first judge)")

    def judge_specs(self, lm: "LMConfig") -> list[LMSpec]:
        base = lm.for_stage("judge")
        if not self.judges:
            return [base]
        return [merged_spec(base, {"model": j} if isinstance(j, str) else j, "eval.judges") for j in self.judges]


class ArgusConfig(_Strict):
    lm: LMConfig = Field(default_factory=LMConfig)
    facts: FactsConfig = Field(default_factory=FactsConfig)
    chunking: ChunkingConfig = Field(default_factory=ChunkingConfig)
    extraction: ExtractionConfig = Field(default_factory=ExtractionConfig)
    sentence: SentenceConfig = Field(default_factory=SentenceConfig)
    merge: MergeConfig = Field(default_factory=MergeConfig)
    encoder: EncoderConfig = Field(default_factory=EncoderConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    concurrency: ConcurrencyConfig = Field(default_factory=ConcurrencyConfig)
    eval: EvalConfig = Field(default_factory=EvalConfig)
    segmenter: str = "legal"
    cache_dir: Path = Path(".argus_cache")

    @classmethod
    def load(cls, path: str | Path | None = None, overrides: dict | None = None) -> "ArgusConfig":
        """Read ``path`` (or ``./argus.yaml`` when present) and apply dotted ``overrides``."""
        data: dict = {}
        if path is None and Path(DEFAULT_CONFIG_FILE).exists():
            path = DEFAULT_CONFIG_FILE
        if path is not None:
            data = read_yaml_mapping(path, "config file")
        for dotted, value in (overrides or {}).items():
            _set_dotted(data, dotted, value)
        try:
            return cls(**data)
        except ValidationError as exc:
            raise ConfigError(f"invalid configuration: {exc}") from exc


def read_yaml_mapping(path: str | Path, what: str) -> dict:
    """The mapping a YAML file holds; ``ConfigError`` naming ``what`` and the file when it is missing,
    not YAML, or not a mapping at the top level (an empty file is an empty mapping)."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{what} {p} does not exist")
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{what} {p} is not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{what} {p} must hold a mapping at the top level")
    return data


def _set_dotted(data: dict, dotted: str, value) -> None:
    keys = dotted.split(".")
    cur = data
    for k in keys[:-1]:
        nxt = cur.get(k)
        if not isinstance(nxt, dict):
            nxt = {}
            cur[k] = nxt
        cur = nxt
    cur[keys[-1]] = value
