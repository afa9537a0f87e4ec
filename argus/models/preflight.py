"""Preflight: every model a run will call is checked before its first document or trial.

Without it a missing API key shows only when the first call is made — after the fact gate and the
chunker have run — and a local server that is not up only after the call's retries. ``argus extract``,
``argus eval`` and ``argus optimize`` call :func:`preflight` first (``--no-preflight`` skips it): a
problem is one line naming the model, the stages that use it and the variable or server, exit status 2,
and nothing is written.

What is checked, once per model (model string, ``api_base``, ``api_key_env``):

- ``local/...`` (the managed engine, no key): its GGUF file exists (``argus.models.lm.check_local_model``);
- ``api_key_env``: the variable it names is set;
- ``api_base`` (a local or self-hosted server: llama.cpp, vLLM, Ollama): a TCP connection to it opens
  within ``timeout_s`` (1 s); the URL is shown without user, password or query. An ``openai/`` model on
  such a server needs no key (``argus.models.lm.build_lm`` sends a placeholder); another provider's key is
  checked as below;
- a hosted provider of :data:`PROVIDER_KEYS` (OpenAI, Anthropic, Gemini, Mistral, Groq, …): its key
  variable is set (checked here, in microseconds, without importing litellm);
- otherwise, ``litellm.validate_environment(model)``, which returns ``{"keys_in_environment": bool,
  "missing_keys": [names]}``: a missing variable that holds a credential (its name has KEY, TOKEN,
  SECRET, PASSWORD or CREDENTIALS) is a problem; variables naming a server, region, project or API
  version have defaults or other sources and are left to the call.

litellm is imported only when a model outside that table needs its check (importing it takes seconds), so
a missing key of a common provider fails in well under a second.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

from argus.config import PIPELINE_STAGES, ArgusConfig, LMSpec
from argus.errors import ConfigError, PreflightError

#: seconds a server has to accept a connection
CONNECT_TIMEOUT_S = 1.0

ModelUse = tuple[str, LMSpec]
"""(what uses the model — a stage, "judge", "reflection" —, its spec)."""

_CREDENTIAL_VARIABLE = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|CREDENTIALS", re.IGNORECASE)


# ----------------------------------------------------------------------------- which models a run calls


def pipeline_uses(config: ArgusConfig, methods: Iterable[str]) -> list[ModelUse]:
    """The stages (with their models) that ``methods`` (``argus.runs.batch.METHODS``) may call under ``config``."""
    lm = config.lm
    stages: list[str] = []
    for method in methods:
        if method == "floor":
            continue
        design = method
        if method == "staged":
            design = config.extraction.design or (
                "sentence" if lm.for_stage("sentence").model.startswith("local/") else "chunked")
        wanted = ["fact_fallback"] if config.facts.mode != "classifier" else []
        if design == "oneshot":
            wanted.append("oneshot")
        elif design == "sentence":
            s = config.sentence
            stage2 = s.stage2 if s.stage2 is not None else not lm.for_stage("stage2").model.startswith("local/")
            wanted += (["sentence"] if s.llm != "never" else []) + (["stage2"] if stage2 else []) + (
                ["resolver"] if s.resolver else [])
        else:
            wanted += [st for st in PIPELINE_STAGES if st != "fact_fallback"
                       and not (st == "chunker" and not config.chunking.use_llm)
                       and not (st == "resolver" and not config.merge.resolver)]
        stages += [st for st in wanted if st not in stages]
    return [(stage, lm.for_stage(stage)) for stage in stages]


def eval_uses(config: ArgusConfig, methods: Iterable[str], *, run_missing: bool = True,
              use_judges: bool = True) -> list[ModelUse]:
    """The models ``argus eval`` may call: the methods' stages (when it runs them) and the judges."""
    uses = pipeline_uses(config, methods) if run_missing else []
    if use_judges:
        uses += [("judge", spec) for spec in config.eval.judge_specs(config.lm)]
    return uses


# ----------------------------------------------------------------------------- the checks


def shown_url(url: str) -> str:
    """``url`` without user, password, query or fragment: what a message may print."""
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    return f"{parts.scheme}://{host}{parts.path}" if parts.scheme else host + parts.path


def unreachable(url: str, timeout_s: float = CONNECT_TIMEOUT_S) -> str | None:
    """Why a TCP connection to the server of ``url`` does not open within ``timeout_s`` (None when it does)."""
    parts = urlsplit(url)
    try:
        host, port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:  # a port that is not a number
        return f"not a server URL ({exc})"
    if not host:
        return "not a server URL (no host)"
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return None
    except ConnectionRefusedError:
        return "connection refused"
    except socket.gaierror:
        return "unknown host"
    except TimeoutError:
        return f"no answer within {timeout_s:g} s"
    except OSError as exc:
        return exc.strerror or type(exc).__name__


#: Hosted providers whose one credential is an environment variable (any one of the names), as
#: ``litellm.validate_environment`` names it: a model ``provider/...`` of these is checked here, without
#: importing litellm, so that a missing key fails at once (``tests/test_preflight.py`` holds the table to
#: the locked litellm). Providers with other sources of credentials (AWS profiles and roles for Bedrock,
#: Azure AD tokens, Google application-default credentials for Vertex AI) and bare model names are left
#: to litellm.
PROVIDER_KEYS: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "mistral": ("MISTRAL_API_KEY",),
    "codestral": ("CODESTRAL_API_KEY",),
    "groq": ("GROQ_API_KEY",),
    "together_ai": ("TOGETHERAI_API_KEY",),
    "cohere": ("COHERE_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "fireworks_ai": ("FIREWORKS_AI_API_KEY", "FIREWORKS_API_KEY", "FIREWORKSAI_API_KEY", "FIREWORKS_AI_TOKEN"),
    "xai": ("XAI_API_KEY",),
    "perplexity": ("PERPLEXITYAI_API_KEY",),
    "cerebras": ("CEREBRAS_API_KEY",),
    "deepinfra": ("DEEPINFRA_API_KEY",),
    "nvidia_nim": ("NVIDIA_NIM_API_KEY",),
    "ai21": ("AI21_API_KEY",),
    "replicate": ("REPLICATE_API_KEY",),
    "moonshot": ("MOONSHOT_API_KEY",),
    "dashscope": ("DASHSCOPE_API_KEY",),
    "huggingface": ("HUGGINGFACE_API_KEY",),
}


def missing_credentials(model: str, api_base: str | None = None) -> list[str]:
    """The credential variables ``model`` needs that are not set: from :data:`PROVIDER_KEYS` for the
    providers it lists (one name is shown, the first), else as ``litellm.validate_environment`` reports."""
    provider = model.split("/", 1)[0] if "/" in model else None
    if provider in PROVIDER_KEYS:
        names = PROVIDER_KEYS[provider]
        return [] if any(os.environ.get(n) for n in names) else [names[0]]
    return _litellm_missing_credentials(model, api_base)


def _litellm_missing_credentials(model: str, api_base: str | None = None) -> list[str]:
    """The credential variables ``litellm.validate_environment`` reports missing for ``model``."""
    import contextlib
    import io

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download at import (as argus.models.lm)
    import litellm

    with contextlib.redirect_stdout(io.StringIO()):  # litellm prints a provider list for models it cannot place
        try:
            found = litellm.validate_environment(model=model, api_base=api_base)
        except Exception:  # noqa: BLE001 - a model string litellm cannot parse: the call will say what is wrong
            return []
    return [v for v in found.get("missing_keys") or [] if _CREDENTIAL_VARIABLE.search(v)]


def _key_problem(spec: LMSpec) -> str | None:
    if spec.api_key_env:
        if not os.environ.get(spec.api_key_env):
            return f"reads its API key from {spec.api_key_env}, which is not set"
        return None
    if spec.api_base and spec.model.startswith("openai/"):
        return None  # an OpenAI-compatible server: build_lm sends a placeholder key when none is set
    missing = missing_credentials(spec.model, spec.api_base)
    if missing:
        return f"needs {' and '.join(missing)}, which {'is' if len(missing) == 1 else 'are'} not set"
    return None


def check_models(uses: Sequence[ModelUse], timeout_s: float = CONNECT_TIMEOUT_S) -> list[str]:
    """One line per model of ``uses`` that cannot be called (see the module docstring); empty when all can."""
    by_model: dict[tuple, tuple[LMSpec, list[str]]] = {}
    for role, spec in uses:
        key = (spec.model, spec.api_base, spec.api_key_env)
        by_model.setdefault(key, (spec, []))[1].append(role)
    servers = sorted({spec.api_base for spec, _ in by_model.values()
                      if spec.api_base and not spec.model.startswith("local/")})
    with ThreadPoolExecutor(max_workers=max(1, len(servers))) as pool:  # each server within the one timeout
        down = dict(zip(servers, pool.map(lambda url: unreachable(url, timeout_s), servers)))
    problems = []
    for spec, roles in by_model.values():
        what = f"model {spec.model} ({', '.join(dict.fromkeys(roles))})"
        if spec.model.startswith("local/"):
            from argus.models.lm import check_local_model

            try:
                check_local_model(spec.model)
            except ConfigError as exc:
                problems.append(f"{what}: {exc}")
            continue
        if spec.api_base and down.get(spec.api_base):
            problems.append(f"{what}: the server at {shown_url(spec.api_base)} is not reachable "
                            f"({down[spec.api_base]})")
            continue
        why = _key_problem(spec)
        if why:
            problems.append(f"{what} {why}")
    return problems


def preflight(uses: Sequence[ModelUse], timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """``PreflightError`` — one line naming every model that cannot be called and why — before a run starts."""
    problems = check_models(uses, timeout_s)
    if problems:
        raise PreflightError("preflight: " + "; ".join(problems)
                             + "; nothing was run (--no-preflight skips this check)")


__all__ = ["CONNECT_TIMEOUT_S", "ModelUse", "check_models", "eval_uses", "missing_credentials", "pipeline_uses",
           "preflight", "PROVIDER_KEYS", "shown_url", "unreachable"]
