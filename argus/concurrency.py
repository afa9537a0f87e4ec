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

Provider faults (HTTP 429, 408/409, 5xx, timeouts, dropped connections) are retried by
``call_with_retries`` with exponential backoff and jitter, honouring ``Retry-After``; the waits come
from litellm's own ``calculate_retry_after``. A call that keeps failing raises, and fails its document.
A call refused for its credentials (HTTP 401, an authentication error, or a client that had no key to
send; ``credentials_fault``) is a configuration error: ``CredentialsError`` at once, never retried.
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
    the ledger attribution (``argus.ledger.ledger_context``) and DSPy's settings (``dspy.context``)
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


def fault_status(exc: BaseException) -> int | None:
    """The HTTP status a provider fault carries (408 for timeouts, 503 for transport failures), or None."""
    for e in _chain(exc):
        for attr in ("status_code", "status"):
            status = getattr(e, attr, None)
            if isinstance(status, int) and not isinstance(status, bool):
                return status
    for e in _chain(exc):
        name = type(e).__name__
        if "Timeout" in name and "Lock" not in name:
            return 408
        if name in ("APIConnectionError", "ServiceUnavailableError", "InternalServerError", "LMTransportError",
                    "LMServerError", "ConnectError", "ReadError", "RemoteProtocolError"):
            return 503
        if name in ("RateLimitError", "LMRateLimitError"):
            return 429
    return None


_AUTH_ERRORS = ("AuthenticationError", "PermissionDeniedError", "LMAuthError", "AuthError")
#: what a client says when it had no key to send (the OpenAI SDK's "Missing credentials. Please pass an
#: `api_key` …", litellm's "Missing Anthropic API Key", "Missing Gemini API key"): a 500 or a connection error
#: to litellm, a missing key to the user
_MISSING_KEY = re.compile(r"\bmissing (?:\w+ )?(?:api[ _-]?key|credentials)\b|api_key client option must be set",
                          re.IGNORECASE)


def credentials_fault(exc: BaseException) -> bool:
    """Whether a failed call was refused for its credentials, or made without any: an authentication or
    permission error (litellm's, DSPy's; HTTP 401), or — whatever status litellm gave it — a client that
    could not send a request for want of a key (the innermost error says so)."""
    chain = list(_chain(exc))
    for e in chain:
        if type(e).__name__ in _AUTH_ERRORS:
            return True
        if any(getattr(e, attr, None) == 401 for attr in ("status_code", "status")):
            return True
    return bool(_MISSING_KEY.search(str(chain[-1])))


def retryable(exc: BaseException) -> bool:
    """Whether a failed call is worth repeating: rate limits, timeouts, conflicts and server errors."""
    from litellm.utils import should_retry

    status = fault_status(exc)
    return status is not None and should_retry(status)


def retry_wait(exc: BaseException, attempt: int, max_retries: int) -> float:
    """Seconds to wait before retry ``attempt`` (1-based): the provider's ``Retry-After`` when it
    sent a reasonable one (≤ 60 s), else exponential backoff; with jitter either way (litellm's
    ``calculate_retry_after``)."""
    import math

    from litellm.utils import calculate_retry_after

    headers = None
    for e in _chain(exc):
        response = getattr(e, "response", None)
        found = getattr(response, "headers", None) if response is not None else None
        if found is not None and found.get("retry-after"):
            headers = found
            break
        after = getattr(e, "retry_after", None)
        if isinstance(after, (int, float)) and after > 0:
            headers = {"retry-after": str(math.ceil(after))}
            break
    return float(calculate_retry_after(remaining_retries=max_retries - attempt + 1, max_retries=max_retries,
                                       response_headers=headers))


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
    "model_limiter",
    "ordered_map",
    "parallel_map",
    "retry_wait",
    "retryable",
    "watching_outages",
]
