"""What every part of gold scoring shares: reading a field from any item shape (pydantic model,
dataclass or dict), sentence ids in document order, and feedback capped to a readable length."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from argus.graph.schema import id_order

MAX_FEEDBACK_LINES = 40


def cap_lines(lines: list[str], limit: int = MAX_FEEDBACK_LINES) -> str:
    """The lines joined, at most ``limit`` of them: the last one left says how many more there were."""
    if len(lines) > limit:
        rest = len(lines) - (limit - 1)
        lines = lines[: limit - 1] + [f"… and {rest} more"]
    return "\n".join(lines)


def sorted_ids(ids: Iterable[str]) -> list[str]:
    """Distinct sentence ids in document order (S2 before S10)."""
    return sorted(set(ids), key=id_order)


def format_ids(ids: Iterable[str]) -> str:
    """Sentence ids as ``S1,S3`` in document order; none as ``∅``."""
    ids = sorted_ids(ids)
    return ",".join(ids) if ids else "∅"


def get_field(obj: Any, name: str, default: Any = None) -> Any:
    """``obj[name]`` of a mapping, ``obj.name`` of anything else; ``default`` when it is missing."""
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)
