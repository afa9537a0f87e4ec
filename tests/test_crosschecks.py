"""Cross-checks of hand code against the library that does the same job: the frontier's exact hypervolume
against Optuna's, and the preflight's provider-key table against ``litellm.validate_environment``. Each hand
version exists for a reason (sense handling and a reference convention; no litellm import on the fast path),
so the library is the oracle that keeps it honest when either side changes."""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Iterator
from types import ModuleType

import numpy as np
import pytest
from optuna._hypervolume import compute_hypervolume

from argus.models.preflight import PROVIDER_KEYS, missing_credentials
from optimizers.frontier.pareto import default_reference, hypervolume

# ----------------------------------------------------------------------------- hypervolume vs Optuna

_OBJECTIVES = ("quality", "cost_usd", "latency_s", "tokens")


def _random_front(rng: np.random.Generator, n: int, d: int) -> tuple[dict[str, str], list[list[float]]]:
    """Random senses and ``n`` points in [0, 1]^d, with the awkward cases a campaign produces: values on a
    coarse grid half the time (shared coordinates, weak dominance, identical points) and up to a third of
    the rows repeated verbatim. Random points in d ≤ 4 are mostly dominated, so most fronts have both."""
    senses = {name: str(rng.choice(["max", "min"])) for name in _OBJECTIVES[:d]}
    distinct = max(1, n - int(rng.integers(0, n // 3 + 1)))
    pts = rng.random((distinct, d))
    if rng.random() < 0.5:
        pts = np.round(pts * 4) / 4
    pts = np.vstack([pts, pts[rng.integers(0, distinct, n - distinct)]])
    return senses, pts[rng.permutation(n)].tolist()


def _random_reference(rng: np.random.Generator, senses: dict[str, str]) -> dict[str, float]:
    """A reference some points fall outside of (beyond it in one objective), which the project drops and
    Optuna must be spared (it refuses points worse than the reference)."""
    return {name: float(rng.uniform(-0.1, 0.3) if sense == "max" else rng.uniform(0.7, 1.1))
            for name, sense in senses.items()}


def _optuna_hypervolume(points: list[list[float]], senses: dict[str, str], reference: dict[str, float]) -> float:
    """Optuna's WFG/2-D/3-D hypervolume. Optuna minimises, so maximised objectives are negated (a point and
    the reference alike); points beyond the reference are clipped onto it, which leaves them a box of zero
    measure: the same union as the project's dropping them, reached the other way."""
    sign = np.array([-1.0 if s == "max" else 1.0 for s in senses.values()])
    ref = sign * np.array([reference[n] for n in senses])
    loss = np.minimum(sign * np.array(points, dtype=float), ref)
    return float(compute_hypervolume(loss, ref))


@pytest.mark.parametrize("d", [2, 3, 4])
@pytest.mark.parametrize("seed", range(8))
def test_hypervolume_matches_optuna(d: int, seed: int) -> None:
    """Fronts of 1 to 30 points, every sense mix, the default reference and random ones: the project's sweep
    (2-D) and slicing (3-D and up) agree with Optuna's independent algorithms to 1e-9 relative. 4-D is in
    because ``hypervolume`` claims to be exact for any number of objectives."""
    rng = np.random.default_rng(seed)
    for n in range(1, 31):
        senses, pts = _random_front(rng, n, d)
        explicit = rng.random() < 0.5
        reference = _random_reference(rng, senses) if explicit else default_reference(pts, senses)
        ours = hypervolume(pts, senses, reference if explicit else None)
        theirs = _optuna_hypervolume(pts, senses, reference)
        assert math.isclose(ours, theirs, rel_tol=1e-9, abs_tol=1e-15), (n, senses, reference, pts)


# ----------------------------------------------------------------------------- provider keys vs litellm

#: One model per provider of the table: the docs' own strings for OpenAI and Anthropic (the only hosted
#: providers docs/ and README.md name), a current model of the locked litellm for every other provider.
REPRESENTATIVE = {
    "openai": "openai/gpt-4o-mini",
    "anthropic": "anthropic/claude-sonnet-4-5",
    "gemini": "gemini/gemini-2.5-flash",
    "mistral": "mistral/mistral-large-latest",
    "codestral": "codestral/codestral-latest",
    "groq": "groq/llama-3.3-70b-versatile",
    "together_ai": "together_ai/meta-llama/Llama-3.3-70B-Instruct-Turbo",
    "cohere": "cohere/command-r-plus",
    "deepseek": "deepseek/deepseek-chat",
    "openrouter": "openrouter/anthropic/claude-3.5-sonnet",
    "fireworks_ai": "fireworks_ai/accounts/fireworks/models/llama-v3p1-70b-instruct",
    "xai": "xai/grok-4.20",
    "perplexity": "perplexity/sonar",
    "cerebras": "cerebras/llama-3.3-70b",
    "deepinfra": "deepinfra/meta-llama/Meta-Llama-3.1-70B-Instruct",
    "nvidia_nim": "nvidia_nim/meta/llama3-70b-instruct",
    "ai21": "ai21/jamba-1.5-large",
    "replicate": "replicate/meta/meta-llama-3-70b-instruct",
    "moonshot": "moonshot/kimi-k2.5",
    "dashscope": "dashscope/qwen-max",
    "huggingface": "huggingface/meta-llama/Llama-3.1-8B-Instruct",
}

#: litellm routes ``ai21/...`` chat models to its ``ai21_chat`` provider, whose branch reads the same key.
_ROUTED = {"ai21": "ai21_chat"}


@pytest.fixture(scope="module")
def litellm() -> ModuleType:
    import litellm

    return litellm


@pytest.fixture
def candidates(litellm: ModuleType, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every variable either side mentions, all unset: the names the table lists and every quoted upper-case
    name in ``validate_environment``'s source (its per-provider ``"NAME" in os.environ`` tests)."""
    source = inspect.getsource(litellm.utils.validate_environment)
    names = sorted(set(re.findall(r'"([A-Z][A-Z0-9_]+)"', source)) | {n for v in PROVIDER_KEYS.values() for n in v})
    for name in names:
        monkeypatch.delenv(name, raising=False)
    yield names


def _accepted(litellm: ModuleType, model: str, names: list[str], monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """The names of ``names`` that alone satisfy litellm for ``model``, found by setting each in turn.

    Probing, not parsing: in the locked litellm each provider's branch accepts any one of several names
    (``"A" in os.environ or "B" in os.environ``) but lists only its canonical one(s) in ``missing_keys``
    (Gemini lists both of its names, Anthropic and Fireworks AI one of several), so ``missing_keys`` alone
    cannot say which aliases work. Values are non-empty: litellm tests presence, the table truthiness."""
    found: set[str] = set()
    for name in names:
        monkeypatch.setenv(name, "placeholder-for-the-check")
        if litellm.validate_environment(model=model)["keys_in_environment"]:
            found.add(name)
        monkeypatch.delenv(name)
    return found


def test_every_table_provider_has_a_representative() -> None:
    assert set(REPRESENTATIVE) == set(PROVIDER_KEYS)


@pytest.mark.parametrize("provider", sorted(PROVIDER_KEYS))
def test_the_table_asks_for_what_litellm_asks_for(provider: str, litellm: ModuleType, candidates: list[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The rule, read from the locked litellm's ``validate_environment``: with nothing set, litellm's
    ``missing_keys`` are all names the table knows, and the one name preflight prints is among them; every
    name of the table satisfies litellm on its own (so a key preflight accepts is one the call will find)."""
    model, names = REPRESENTATIVE[provider], PROVIDER_KEYS[provider]
    assert litellm.get_llm_provider(model=model)[1] == _ROUTED.get(provider, provider)
    found = litellm.validate_environment(model=model)
    assert not found["keys_in_environment"]
    assert set(found["missing_keys"]) <= set(names) and names[0] in found["missing_keys"]
    assert missing_credentials(model) == [names[0]]
    assert set(names) <= _accepted(litellm, model, candidates, monkeypatch)


@pytest.mark.parametrize("provider", sorted(PROVIDER_KEYS))
def test_every_name_litellm_accepts_passes_preflight(provider: str, litellm: ModuleType, candidates: list[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The other direction: a variable with which litellm would make the call must not make preflight stop
    the run (exit 2) before it starts."""
    model = REPRESENTATIVE[provider]
    accepted = _accepted(litellm, model, candidates, monkeypatch)
    assert accepted
    refused: set[str] = set()
    for name in sorted(accepted):
        monkeypatch.setenv(name, "placeholder-for-the-check")
        if missing_credentials(model):
            refused.add(name)
        monkeypatch.delenv(name)
    assert not refused, f"preflight refuses {sorted(refused)} for {model}"
