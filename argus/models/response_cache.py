"""DSPy's response cache, with litellm's answers kept as plain data.

DSPy keeps what its litellm path returned (a litellm ``ModelResponse``, a pydantic object) in its
disk cache as a pickle. Reading one back imports litellm to rebuild that object, which costs a cached
re-run about 2.5–4 s of a 5 s budget here, for a value of which DSPy then reads only plain fields
(``choices[i].message.content``, ``tool_calls``, ``reasoning_content``, ``model``, ``usage``).

:class:`PlainResponseCache` is DSPy's own ``Cache`` with one change: a litellm response is stored as
its fields in builtin types (DSPy's ``legacy_outputs.plain``), tagged, and read back as DSPy's
``AttributeDict`` (what DSPy's own native cache format gives a legacy response), so a cache hit
imports nothing but what reads it. Everything else (DSPy's native records, other values) is stored
as DSPy stores it, and entries written by plain DSPy (pickled litellm objects) still read back as
before. The cache key, both tiers and the directory layout are DSPy's.

The original usage of a cached answer: DSPy hands a cache hit on with its usage cleared (no call was
made), but the record it keeps has the usage (and the provider's cost) of the call that made it. On a
hit, :class:`PlainResponseCache` tells them to the usage tracker of the call being served
(``dspy.settings.usage_tracker``) if that tracker takes them (an ``add_cached_usage(usage, cost)``
method, as ``argus.models.lm``'s per-call tracker has), so a cache hit is booked with the tokens and list
price of the original call from DSPy's own record: no second store, no second key.
"""

from __future__ import annotations

import contextlib
import os
import threading
from typing import Any

import orjson
from dspy.clients.cache import Cache
from dspy.clients.call_result import CACHE_FORMAT, attributes
from dspy.clients.legacy_outputs import plain
from dspy.dsp.utils.settings import settings

#: the tag of a litellm response kept as plain data (its version: a change of form gets a new one)
PLAIN_RESPONSE = "argus.plain-response/1"


def _is_litellm_response(value: Any) -> bool:
    module = type(value).__module__ or ""
    return module.startswith("litellm.") and hasattr(value, "choices")


def _provider_cost(value: Any) -> float | None:
    """The cost litellm computed for a response of its own (``_hidden_params["response_cost"]``), or None."""
    hidden = getattr(value, "_hidden_params", None)
    cost = hidden.get("response_cost") if isinstance(hidden, dict) else None
    return float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None


def to_plain(value: Any) -> Any:
    """``value`` as DSPy's cache should keep it: a litellm response as a tagged dict of builtins
    (when its fields are plain JSON data) with the provider's cost of the call (``cost``, None when
    litellm had none), anything else unchanged."""
    if not _is_litellm_response(value):
        return value
    fields = plain(value)
    try:  # only builtins, so unpickling it imports no module
        orjson.dumps(fields)
    except TypeError:
        return value
    return {"_argus_format": PLAIN_RESPONSE, "response": fields, "cost": _provider_cost(value)}


def _is_plain(record: Any) -> bool:
    return isinstance(record, dict) and record.get("_argus_format") == PLAIN_RESPONSE


def from_plain(record: Any) -> Any:
    """The inverse of :func:`to_plain`: a tagged record as an ``AttributeDict`` (fields by key and by
    attribute, as DSPy reads a response; new containers throughout); anything else unchanged."""
    return attributes(record["response"]) if _is_plain(record) else record


def original_usage(record: Any) -> tuple[dict, float | None] | None:
    """What the call that made a cached record reported: ``(usage, provider cost)``, read from the record
    as the cache keeps it (a tagged plain response, DSPy's own result record, a pickled litellm response);
    None for anything else. ``usage`` is ``{}`` when the call reported none."""
    if _is_plain(record):
        usage, cost = (record.get("response") or {}).get("usage"), record.get("cost")
    elif isinstance(record, dict) and record.get("_dspy_format") == CACHE_FORMAT:
        usage, cost = record.get("usage"), record.get("cost")
    elif _is_litellm_response(record):
        usage, cost = getattr(record, "usage", None), _provider_cost(record)
    else:
        return None
    usage = plain(dict(usage)) if usage else {}
    return usage, cost if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None


def _tell_original_usage(record: Any) -> None:
    """Hand a hit's original usage to the current call's usage tracker, when it takes it."""
    take = getattr(settings.usage_tracker, "add_cached_usage", None)
    if take is None:
        return
    found = original_usage(record)
    if found is not None:
        take(*found)


class PlainResponseCache(Cache):
    """DSPy's ``Cache`` keeping litellm responses as plain data, and telling a hit's original usage to
    the call's usage tracker (see the module docstring).

    The disk tier is DSPy's own (a ``FanoutCache`` of 16 SQLite shards, built by ``Cache`` itself), opened on
    its first use: a run that calls no model (the offline default) does not create or open it, which took
    0.7 s of a cold ``argus extract`` on a fresh cache folder."""

    def __init__(self, enable_disk_cache: bool, enable_memory_cache: bool, disk_cache_dir: str | None,
                 disk_size_limit_bytes: int | None = 1024 * 1024 * 10, **kwargs):
        self._disk_args = (disk_cache_dir, disk_size_limit_bytes, kwargs)
        self._opening = threading.Lock()
        super().__init__(False, enable_memory_cache, disk_cache_dir, disk_size_limit_bytes, **kwargs)
        self.enable_disk_cache = enable_disk_cache

    @property
    def disk_cache(self):
        found = self.__dict__.get("_disk")
        if found is None:
            if not self.enable_disk_cache:
                return {}
            with self._opening:
                found = self.__dict__.get("_disk")
                if found is None:
                    directory, limit, kwargs = self._disk_args
                    found = Cache(True, False, directory, limit, **kwargs).disk_cache
                    self.__dict__["_disk"] = found
        return found

    @disk_cache.setter
    def disk_cache(self, value) -> None:
        if isinstance(value, dict) and not value:  # Cache.__init__'s "no disk tier" before the first use
            return
        self.__dict__["_disk"] = value

    def put(self, request: dict[str, Any], value: Any, ignored_args_for_cache_key: list[str] | None = None,
            enable_memory_cache: bool = True) -> None:
        super().put(request, to_plain(value), ignored_args_for_cache_key, enable_memory_cache)

    def _prepare_cached_response(self, response):
        _tell_original_usage(response)
        if not _is_plain(response):
            return super()._prepare_cached_response(response)
        answer = from_plain(response)  # (a copy: the cached record is never handed out)
        # as DSPy does for a cached object: no usage (no call was made), and marked as a hit
        answer["usage"] = {}
        object.__setattr__(answer, "cache_hit", True)
        return answer


def configure_plain_response_cache(disk_cache_dir: str) -> PlainResponseCache:
    """Make ``dspy.cache`` a :class:`PlainResponseCache` on ``disk_cache_dir``, with the disk and
    memory tiers and the size limit ``dspy.configure_cache`` gives by default; returns it. A cache folder
    that exists is opened now; a new one is made on the first call that uses it."""
    import dspy
    from dspy.clients import DISK_CACHE_LIMIT

    cache = PlainResponseCache(True, True, disk_cache_dir, DISK_CACHE_LIMIT)
    if os.path.isdir(disk_cache_dir):
        cache.disk_cache  # noqa: B018 - an existing cache is opened now: a damaged one fails here, not mid-run
    # (the lock ``dspy.configure_cache`` holds, so that a concurrent first read of ``dspy.cache`` does
    # not replace it with the default cache)
    with getattr(dspy, "_cache_lock", None) or contextlib.nullcontext():
        dspy.cache = cache
    return cache
