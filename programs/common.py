"""Shared machinery of the programs: validate, retry with the validation error as feedback, salvage.

Each program declares a DSPy Signature whose docstring and field descriptions are its prompt (what
GEPA evolves). ``RetryingPredict`` wraps one ``dspy.Predict``: when the output does not parse or a
program-specific validator rejects it, the call is repeated with the errors in the ``feedback``
input; when the retries are spent, the last parseable output (or a field-by-field salvage of the
raw text) is returned together with the remaining errors, so the caller can repair
deterministically and log what it did.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, get_args, get_origin

import dspy
import pydantic

FEEDBACK_DESC = (
    "Problems found in your previous answer to this same input, to be fixed now; "
    "empty on the first attempt."
)


@dataclass
class Attempted:
    """Outcome of a ``RetryingPredict`` call."""

    outputs: dict[str, Any] | None
    attempts: int
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.outputs is not None and not self.errors


def _item_type(annotation):
    if get_origin(annotation) is list:
        args = get_args(annotation)
        return args[0] if args else Any
    return None


def salvage_outputs(signature: type[dspy.Signature], text: str) -> dict[str, Any] | None:
    """Parse what can be parsed from a raw (possibly truncated) JSON answer.

    List fields keep their valid items and drop invalid ones; scalar fields must validate. Returns
    ``None`` when nothing usable is found.
    """
    try:
        import json_repair

        data = json_repair.loads(text or "")
    except Exception:
        return None
    if not isinstance(data, dict):
        return None
    out: dict[str, Any] = {}
    for name, f in signature.output_fields.items():
        if name not in data:
            continue
        item = _item_type(f.annotation)
        value = data[name]
        if item is not None:
            if not isinstance(value, list):
                continue
            adapter = pydantic.TypeAdapter(item)
            kept = []
            for v in value:
                try:
                    kept.append(adapter.validate_python(v))
                except pydantic.ValidationError:
                    continue
            out[name] = kept
        else:
            try:
                out[name] = pydantic.TypeAdapter(f.annotation).validate_python(value)
            except pydantic.ValidationError:
                continue
    missing = [n for n in signature.output_fields if n not in out]
    if missing and len(missing) == len(signature.output_fields):
        return None
    for n in missing:
        if _item_type(signature.output_fields[n].annotation) is not None:
            out[n] = []
        else:
            return None
    return out


class RetryingPredict(dspy.Module):
    """``dspy.Predict`` with validation-feedback retries (the signature must have a ``feedback`` input)."""

    def __init__(self, signature: type[dspy.Signature], max_retries: int = 2):
        super().__init__()
        if "feedback" not in signature.input_fields:
            raise TypeError(f"{signature.__name__} needs a 'feedback' input field for retries")
        self.predict = dspy.Predict(signature)
        self.max_retries = max_retries

    def forward(
        self,
        validate: Callable[[dict[str, Any]], list[str]] | None = None,
        choices: dict[str, list[str]] | None = None,
        **inputs,
    ) -> Attempted:
        """``choices`` (e.g. ``{"evidence": chunk_ids}``) lets grammar-constrained models emit only
        those values for the named output properties; other models ignore it (validation covers them).
        """
        from dspy.utils.exceptions import AdapterParseError

        from argus.models.lm import CHOICES_KEY

        config = {CHOICES_KEY: choices} if choices else {}
        signature = self.predict.signature
        feedback = ""
        last: dict[str, Any] | None = None
        errors: list[str] = []
        attempts = 0
        for _ in range(self.max_retries + 1):
            attempts += 1
            try:
                pred = self.predict(**inputs, feedback=feedback, config=config)
                outputs = {k: pred[k] for k in signature.output_fields}
            except AdapterParseError as exc:
                salvaged = salvage_outputs(signature, getattr(exc, "lm_response", "") or "")
                if salvaged is not None:
                    last = salvaged
                errors = [f"the answer was not valid JSON for the output schema: {_short(str(exc))}"]
                feedback = "Your previous answer was rejected: " + "; ".join(errors)
                continue
            last = outputs
            errors = validate(outputs) if validate else []
            if not errors:
                return Attempted(outputs, attempts, [])
            feedback = "Your previous answer was rejected: " + "; ".join(errors[:12])
        return Attempted(last, attempts, errors)


def _short(text: str, n: int = 400) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"
