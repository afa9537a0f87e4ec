"""GEPA's reflection step answered as plain text (the instruction in a ``` block)."""

from __future__ import annotations

import json
import logging
import zlib


class TextInstructionProposer:
    """GEPA's reflection prompt (current instruction + examples with feedback), answered as plain
    text with the new instruction in a ``` block — GEPA's own protocol.

    DSPy's default proposer asks for JSON; under a JSON grammar a small local model samples a long
    free string very slowly (minutes per token budget on 2 cores), and plain text is what GEPA's
    reflection prompt was written for. An empty or unusable answer (no text, fewer than
    ``MIN_INSTRUCTION_CHARS`` characters or no words, a loop — see :meth:`loops` — or the parent's
    instruction unchanged) proposes nothing for that component: the candidate keeps its parent's
    instruction, and ``on_fallback`` (component, reason) is told so, for the campaign's log.
    """

    MIN_INSTRUCTION_CHARS = 20

    def __init__(self, lm, max_chars: int = 4000, max_feedback_chars: int = 6000, on_fallback=None):
        self.lm = lm
        self.max_chars = max_chars
        self.max_feedback_chars = max_feedback_chars
        self.on_fallback = on_fallback
        #: (component, reason) of every reflection that fell back to the parent's instruction
        self.fallbacks: list[tuple[str, str]] = []

    @staticmethod
    def loops(text: str) -> str | None:
        """Why ``text`` is a loop rather than an instruction, or None.

        A small model asked to reflect often repeats a few lines until its token limit (the embedded
        SmolLM2 wrote one 8-line block eleven times). Such a text is a loop when, of at least 8
        non-empty lines, fewer than half are distinct, or when a text of 400 characters or more
        compresses (zlib) to under a fifth of its length; a written instruction compresses to about
        half.
        """
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        if len(lines) >= 8 and 2 * len(set(lines)) < len(lines):
            return f"{len(lines) - len(set(lines))} of its {len(lines)} lines repeat earlier ones"
        if len(text) >= 400 and len(zlib.compress(text.encode())) * 5 < len(text):
            return "it repeats itself (it compresses to under a fifth of its length)"
        return None

    def _fall_back(self, name: str, reason: str) -> None:
        self.fallbacks.append((name, reason))
        logging.getLogger("argus").warning("GEPA reflection for %s: %s; the parent's instruction is kept", name, reason)
        if self.on_fallback is not None:
            self.on_fallback(name, reason)

    def _records(self, records) -> list[dict]:
        out = []
        for r in records:
            r = dict(r)
            for k, v in list(r.items()):
                text = v if isinstance(v, str) else json.dumps(v, default=str, ensure_ascii=False)
                if len(text) > self.max_feedback_chars:
                    r[k] = text[: self.max_feedback_chars] + " …"
            out.append(r)
        return out

    def __call__(self, candidate: dict[str, str], reflective_dataset, components_to_update: list[str]) -> dict[str, str]:
        from gepa.strategies.instruction_proposal import InstructionProposalSignature as Proposal

        results: dict[str, str] = {}
        for name in components_to_update:
            if name not in candidate or name not in reflective_dataset:
                continue
            prompt = Proposal.prompt_renderer({
                "current_instruction_doc": candidate[name],
                "dataset_with_feedback": self._records(reflective_dataset[name]),
                "prompt_template": None,
            })
            answer = self.lm(prompt) if isinstance(prompt, str) else self.lm(messages=prompt)
            text = answer[0] if answer else ""
            if isinstance(text, dict):
                text = text.get("text") or ""
            new = Proposal.output_extractor(str(text)).get("new_instruction", "").strip()
            if not str(text).strip() or not new:
                self._fall_back(name, "the reflection model returned an empty answer")
            elif len(new) < self.MIN_INSTRUCTION_CHARS or not any(c.isalpha() for c in new):
                self._fall_back(name, f"the reflection model returned an unusable instruction ({new[:60]!r})")
            elif (why := self.loops(new)) is not None:
                self._fall_back(name, f"the reflection model returned a loop, not an instruction: {why}")
            elif new == candidate[name].strip():
                self._fall_back(name, "the reflection model returned the parent's instruction unchanged")
            else:
                results[name] = new[: self.max_chars]
        return results
