"""Bounded concurrency for LM calls: ordered parallel maps, per-model limits, retries of provider faults.

Three bounds hold at once (each is optional except the first):

- the run's ``concurrency.max_in_flight`` (``ArgusConfig``; ``argus extract --concurrency N``): LM
  calls in flight across everything one pipeline does — documents × chunks × stages;
- a model's ``max_in_flight`` (``LMSpec``), process-wide: what its server takes (a local server 2,
  a hosted API 32); the managed local engine runs one completion at a time, so ``local/`` models
  default to 1 and further requests wait here;
- a model's ``rpm`` / ``tpm``: requests and tokens per minute, over a sliding 60 s window.

Work is fanned out with ``parallel_map``, which returns results in input order whatever order they
finish in — the pipeline's outputs (ids, merge order, merge log) are those of a sequential run given
the same LM answers — and runs each item in a copy of the caller's ``contextvars`` context, so the
ledger attribution and DSPy's settings (``dspy.context``) follow the work into worker threads.

Provider faults are classified by DSPy's own taxonomy (``dspy.utils.exceptions``; see ``lm_fault``):
what DSPy calls retryable (``is_retryable_lm_error``: rate limits, timeouts, server errors, dropped
connections) is retried by ``call_with_retries`` with exponential backoff and jitter (litellm's
``calculate_retry_after``), honouring the provider's ``Retry-After`` (``LMProviderError.retry_after``);
the wait is outside the model's limiter slot. A call that keeps failing raises, and fails its document.
A call refused for its credentials (``LMAuthError``: HTTP 401/403, an authentication error; DSPy's
``LMNotConfiguredError``; or a client that had no key to send; ``credentials_fault``) is a configuration
error: ``CredentialsError`` at once, never retried.
"""

from __future__ import annotations

import contextlib
import contextvars
import re
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, TypeVar

from argus.errors import CredentialsError, LMCallError

T = TypeVar("T")
R = TypeVar("R")


def ordered_map(fn: Callable[[T], R], items: Iterable[T], max_workers: int = 1, *,
                name: str = "argus") -> Iterator[R]:
    """``fn`` over ``items`` with up to ``max_workers`` items at once; yields the results in input
    order, each as soon as it and every item before it have finished — a sequential loop's order,
    whatever order the threads finish in.

    Each item runs in a copy of the caller's ``contextvars`` context, taken when it is submitted, so
    the ledger attribution (``argus.models.ledger.ledger_context``) and DSPy's settings (``dspy.context``)
    follow the work into the worker thread. An exception an item raises is raised here when its turn
    comes — the one a sequential loop would have raised — after the items not yet started are
    cancelled (running ones finish). With ``max_workers`` 1 the items run one by one in the caller's
    thread. ``name`` prefixes the worker threads' names.
    """
    items = list(items)
    if max_workers <= 1 or len(items) <= 1:
        for x in items:
            yield fn(x)
        return
    pool = ThreadPoolExecutor(max_workers=min(max_workers, len(items)), thread_name_prefix=name)
    try:
        futures = [pool.submit(contextvars.copy_context().run, fn, x) for x in items]
        for fut in futures:
            yield fut.result()
    finally:  # an exception here or in the consumer (Ctrl-C): nothing new starts, running items finish
        pool.shutdown(wait=True, cancel_futures=True)


def parallel_map(fn: Callable[[T], R], items: Iterable[T], max_workers: int) -> list[R]:
    """``[fn(x) for x in items]`` with up to ``max_workers`` items at once (see ``ordered_map``)."""
    return list(ordered_map(fn, items, max_workers))


class Slots:
    """A counting bound on calls in flight (``None``: unbounded) that also reports its peak."""

    def __init__(self, limit: int | None):
        self._cond = threading.Condition()
        self.limit = limit
        self.in_flight = 0
        self.peak = 0

    def set_limit(self, limit: int | None) -> None:
        with self._cond:
            self.limit = limit
            self._cond.notify_all()

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        with self._cond:
            while self.limit is not None and self.in_flight >= self.limit:
                self._cond.wait()
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        try:
            yield
        finally:
            with self._cond:
                self.in_flight -= 1
                self._cond.notify()


@dataclass
class ModelLimiter:
    """Process-wide bounds of one model endpoint: calls in flight, requests and tokens per minute.

    Tokens are booked when a call starts, at an estimate (prompt characters / 4 + the output budget),
    and corrected to the call's reported usage when it returns, so a tokens-per-minute limit holds
    before the provider would have answered 429.
    """

    max_in_flight: int | None = None
    rpm: int | None = None
    tpm: int | None = None
    window_s: float = 60.0
    _slots: Slots = field(default_factory=lambda: Slots(None))
    _lock: threading.Condition = field(default_factory=threading.Condition)
    _requests: deque = field(default_factory=deque)  # start times
    _tokens: deque = field(default_factory=deque)  # [start time, tokens] (mutable: corrected on return)

    def __post_init__(self):
        self._slots.set_limit(self.max_in_flight)

    def configure(self, max_in_flight: int | None, rpm: int | None, tpm: int | None) -> None:
        with self._lock:
            self.max_in_flight, self.rpm, self.tpm = max_in_flight, rpm, tpm
            self._lock.notify_all()
        self._slots.set_limit(max_in_flight)

    @property
    def peak_in_flight(self) -> int:
        return self._slots.peak

    def _expire(self, now: float) -> None:
        while self._requests and self._requests[0] <= now - self.window_s:
            self._requests.popleft()
        while self._tokens and self._tokens[0][0] <= now - self.window_s:
            self._tokens.popleft()

    def _wait_for_rate(self, estimate: int) -> list:
        with self._lock:
            while True:
                now = time.monotonic()
                self._expire(now)
                waits = []
                if self.rpm is not None and len(self._requests) >= self.rpm:
                    waits.append(self._requests[0] + self.window_s - now)
                if self.tpm is not None and self._tokens:
                    used = sum(t for _, t in self._tokens)
                    if used + estimate > self.tpm:  # a call larger than the limit runs alone in a window
                        waits.append(self._tokens[0][0] + self.window_s - now)
                if not waits:
                    self._requests.append(now)
                    booking = [now, estimate]
                    self._tokens.append(booking)
                    return booking
                self._lock.wait(timeout=max(0.01, min(waits)))

    @contextlib.contextmanager
    def slot(self, estimate_tokens: int = 0) -> Iterator[list]:
        """Hold one call's place; yields its token booking (``booking[1] = actual`` corrects it)."""
        with self._slots.hold():
            booking = self._wait_for_rate(estimate_tokens) if (self.rpm or self.tpm) else [time.monotonic(), 0]
            yield booking
            with self._lock:
                self._lock.notify_all()


_LIMITERS: dict[tuple, ModelLimiter] = {}
_LIMITERS_LOCK = threading.Lock()


def model_limiter(key: tuple, max_in_flight: int | None, rpm: int | None, tpm: int | None) -> ModelLimiter:
    """The process-wide limiter of a model endpoint (``key``: model, server); the latest settings win."""
    with _LIMITERS_LOCK:
        limiter = _LIMITERS.get(key)
        if limiter is None:
            limiter = _LIMITERS[key] = ModelLimiter(max_in_flight, rpm, tpm)
        elif (limiter.max_in_flight, limiter.rpm, limiter.tpm) != (max_in_flight, rpm, tpm):
            limiter.configure(max_in_flight, rpm, tpm)
        return limiter


# ----------------------------------------------------------------------------- provider faults


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """The exception and what it was raised from (DSPy wraps litellm's errors in its own)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _faults(exc: BaseException) -> Iterator[BaseException]:
    """The errors along ``exc`` and what it was raised from that DSPy's taxonomy classifies, each as a
    DSPy ``LMError``: DSPy's own errors as raised; lm15's, litellm's or an SDK's (a fault raised where DSPy
    did not project it: a custom engine, a caller's code) as DSPy's error boundary and its litellm engine
    project them (``dspy.clients.errors.wrap_error``, ``dspy.clients.engines.litellm_errors.to_lm15_error``:
    litellm's exception classes, else an HTTP status). An ``LMUnexpectedError`` is DSPy saying it could not
    classify the failure: it is passed over, and its cause looked at."""
    from dspy import lm15
    from dspy.clients.engines.litellm_errors import to_lm15_error
    from dspy.clients.errors import wrap_error
    from dspy.utils.exceptions import LMError, LMUnexpectedError

    for e in _chain(exc):
        if not isinstance(e, LMError):
            if not isinstance(e, lm15.LM15Error):
                e = to_lm15_error(e)
            if not isinstance(e, lm15.LM15Error):
                continue  # not a provider fault: a defect, or an error of the caller's own
            e = wrap_error(e, model="")
        if type(e) is not LMUnexpectedError:
            yield e


def lm_fault(exc: BaseException):
    """The provider fault of a failed call as a DSPy ``LMError`` (``dspy.utils.exceptions``), or None when
    DSPy's taxonomy does not classify it (a defect, not a provider fault): the first one along ``exc`` and
    what it was raised from (see ``_faults``)."""
    return next(_faults(exc), None)


def fault_status(exc: BaseException) -> int | None:
    """The HTTP status of a provider fault (``LMProviderError.status``; without one, 429 for a rate limit,
    408 for a timeout, 401 for an authentication error, 503 for a server or transport failure), or None."""
    from dspy.utils.exceptions import LMAuthError, LMRateLimitError, LMServerError, LMTimeoutError, LMTransportError

    fault = lm_fault(exc)
    if fault is None:
        return None
    if isinstance(fault.status, int) and not isinstance(fault.status, bool):
        return fault.status
    implied = ((LMRateLimitError, 429), (LMTimeoutError, 408), (LMAuthError, 401), (LMServerError, 503),
               (LMTransportError, 503))
    return next((status for cls, status in implied if isinstance(fault, cls)), None)


#: what a client says when it had no key to send (the OpenAI SDK's "Missing credentials. Please pass an
#: `api_key` …", litellm's "Missing Anthropic API Key", "Missing Gemini API key"): a 500 or a connection error
#: to litellm, a missing key to the user
_MISSING_KEY = re.compile(r"\bmissing (?:\w+ )?(?:api[ _-]?key|credentials)\b|api_key client option must be set",
                          re.IGNORECASE)


def credentials_fault(exc: BaseException) -> bool:
    """Whether a failed call was refused for its credentials, or made without any: DSPy's ``LMAuthError``
    (an authentication or permission error, HTTP 401/403) or ``LMNotConfiguredError`` anywhere along the
    failure, or — whatever status litellm gave it — a client that could not send a request for want of a
    key (the innermost error says so)."""
    from dspy.utils.exceptions import LMAuthError, LMNotConfiguredError

    if any(isinstance(fault, (LMAuthError, LMNotConfiguredError)) for fault in _faults(exc)):
        return True
    return bool(_MISSING_KEY.search(str(list(_chain(exc))[-1])))


def retryable(exc: BaseException) -> bool:
    """Whether a failed call is worth repeating: DSPy's ``is_retryable_lm_error`` of its provider fault
    (rate limits, timeouts, server errors, transport failures)."""
    from dspy.utils.exceptions import is_retryable_lm_error

    fault = lm_fault(exc)
    return fault is not None and is_retryable_lm_error(fault)


def retry_wait(exc: BaseException, attempt: int, max_retries: int) -> float:
    """Seconds to wait before retry ``attempt`` (1-based): the provider's ``Retry-After``
    (``LMProviderError.retry_after``) when it sent a reasonable one (≤ 60 s), else exponential backoff
    (litellm's ``calculate_retry_after``); with litellm's jitter (≤ 0.75 s) either way."""
    import random

    from litellm.constants import JITTER
    from litellm.utils import calculate_retry_after

    fault = lm_fault(exc)
    after = getattr(fault, "retry_after", None)
    if isinstance(after, (int, float)) and not isinstance(after, bool) and 0 < after <= 60:
        return float(after) + JITTER * random.random()
    return float(calculate_retry_after(remaining_retries=max_retries - attempt + 1, max_retries=max_retries,
                                       response_headers=None))


class ProviderFault(LMCallError):
    """A model call that kept failing with provider faults (429, 5xx, timeouts) through its retries."""


_OUTAGE_LOCK = threading.Lock()
_OUTAGE_WATCHERS: list[list[BaseException]] = []


@contextlib.contextmanager
def watching_outages() -> Iterator[list[BaseException]]:
    """A list that collects every call that could not reach its model (``ProviderFault`` after the
    retries, ``CredentialsError``) raised in any thread while the block runs, whoever caught it
    afterwards: a search whose metric or reflection caught such failures scored nothing real."""
    seen: list[BaseException] = []
    with _OUTAGE_LOCK:
        _OUTAGE_WATCHERS.append(seen)
    try:
        yield seen
    finally:
        with _OUTAGE_LOCK:
            _OUTAGE_WATCHERS.remove(seen)


def _outage(exc: BaseException) -> BaseException:
    with _OUTAGE_LOCK:
        for seen in _OUTAGE_WATCHERS:
            seen.append(exc)
    return exc


def call_with_retries(call: Callable[[], R], *, retries: int, describe: str = "LM call",
                      sleep: Callable[[float], None] = time.sleep, on_retry: Callable[[BaseException, float], None] | None = None) -> R:
    """Run ``call``; repeat it up to ``retries`` times on provider faults, waiting as ``retry_wait``
    says. Other exceptions pass through at once; a call refused for its credentials (``credentials_fault``)
    raises ``CredentialsError`` at once. After the last retry ``ProviderFault`` is raised from the last
    fault."""
    attempt = 0
    while True:
        try:
            return call()
        except Exception as exc:
            if credentials_fault(exc):
                raise _outage(CredentialsError(
                    f"{describe} was refused for its credentials, or had none to send ({type(exc).__name__}: "
                    f"{str(exc)[:300]}); set the model's API key (the provider's variable, e.g. OPENAI_API_KEY, or "
                    "the one its api_key_env names) — a configuration error, not retried")) from exc
            if not retryable(exc):
                raise
            attempt += 1
            if attempt > retries:
                raise _outage(ProviderFault(
                    f"{describe} failed {attempt} time(s) with provider faults; last: {type(exc).__name__} "
                    f"(HTTP {fault_status(exc)}): {str(exc)[:300]}"
                )) from exc
            wait = retry_wait(exc, attempt, retries)
            if on_retry is not None:
                on_retry(exc, wait)
            sleep(wait)


__all__ = [
    "ModelLimiter",
    "ProviderFault",
    "Slots",
    "call_with_retries",
    "credentials_fault",
    "fault_status",
    "lm_fault",
    "model_limiter",
    "ordered_map",
    "parallel_map",
    "retry_wait",
    "retryable",
    "watching_outages",
]
