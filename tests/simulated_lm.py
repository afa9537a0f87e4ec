"""A deterministic simulated LM whose output quality depends on the instruction text (a test double).

- Stage 1 extracts an event for every sentence only when its instructions contain
  ``ONE EVENT PER SENTENCE``; otherwise only for the first sentence of the chunk.
- Stage 2 links consecutive events with BEFORE edges only when its instructions contain
  ``CHAIN CONSECUTIVE EVENTS``; otherwise it returns no edges.
- As GEPA's reflection model it rewrites the instruction it is shown: when the feedback says fact
  sentences are cited by no event it adds ``ONE EVENT PER SENTENCE.``; when it names missed gold
  temporal edges it adds ``CHAIN CONSECUTIVE EVENTS.``.

Token usage is the character count / 4, so longer instructions cost more: the seed program is
cheaper and worse, the evolved ones better and dearer, which is what a quality–cost frontier needs.
"""

from __future__ import annotations

import json
import threading

from dspy.lm15 import Message, Response, TextPart, Usage

from tests.scripted_lm import ScriptedEngine, scripted_lm

PHRASE_EVENTS = "ONE EVENT PER SENTENCE"
PHRASE_EDGES = "CHAIN CONSECUTIVE EVENTS"


class SimulatedEngine(ScriptedEngine):
    def __init__(self):
        super().__init__()
        self.reflections = 0
        self._request = threading.local()  # the system prompt of the request this thread is answering

    @property
    def _system(self) -> str:
        return getattr(self._request, "system", "")

    def complete(self, request):
        system = request.system if isinstance(request.system, str) else "".join(p.text for p in (request.system or ()))
        user = "\n".join(m.text or "" for m in request.messages)
        if "I provided an assistant with the following instructions" in (system + user):
            self.reflections += 1
            self.calls.append({"fields": ["reflection"], "inputs": {}})
            return self._text(self.reflect(system + user), system + user)
        self._request.system = system
        return super().complete(request)

    def _text(self, text: str, prompt: str):
        return Response(
            id=None, model="simulated", message=Message.assistant([TextPart(text)]), finish_reason="stop",
            usage=Usage(input_tokens=len(prompt) // 4, output_tokens=len(text) // 4, total_tokens=(len(prompt) + len(text)) // 4),
        )

    def reflect(self, prompt: str) -> str:
        current = prompt.split("```", 2)[1].strip() if prompt.count("```") >= 2 else ""
        new = current
        if "cited by no event" in prompt and PHRASE_EVENTS not in current:
            new = f"{current} {PHRASE_EVENTS}."
        elif "missed gold temporal" in prompt and PHRASE_EDGES not in current:
            new = f"{current} {PHRASE_EDGES}."
        return f"```\n{new.strip()}\n```"

    def _stage1(self, text: str) -> dict:
        graph = super()._stage1(text)
        if PHRASE_EVENTS not in self._system:
            graph["events"] = graph["events"][:1]
            used = {p["entity"] for e in graph["events"] for p in e["participants"]}
            graph["entities"] = [e for e in graph["entities"] if e["id"] in used]
        return graph

    def answer(self, fields, inputs):
        if "new_instruction" in fields:  # DSPy's GEPA instruction proposer
            self.reflections += 1
            prompt = f"```\n{inputs.get('current_instruction', '')}\n```\n{inputs.get('examples_with_feedback', '')}"
            return {"new_instruction": self.reflect(prompt).strip("`\n ")}
        if "temporal_edges" in fields and "entities" not in fields:
            if PHRASE_EDGES not in self._system:
                return {"temporal_edges": [], "causal_edges": []}
            stage1 = json.loads(inputs.get("stage1_json", "{}") or "{}")
            events = stage1.get("events", [])
            edges = [{"source": a["id"], "target": b["id"], "relation": "BEFORE", "evidence": a["evidence"][:1]}
                     for a, b in zip(events, events[1:])]
            return {"temporal_edges": edges, "causal_edges": []}
        return super().answer(fields, inputs)


def simulated_lm_builder(engine: SimulatedEngine | None = None):
    """An ``lm_builder`` for ``optimizers.campaign.Campaign``: every model is the simulated engine."""
    engine = engine or SimulatedEngine()

    def build(spec):
        return scripted_lm(engine, model=f"simulated/{spec.model}", cache=spec.cache, temperature=spec.temperature,
                           max_tokens=spec.max_tokens or 1000)

    build.engine = engine
    return build


__all__ = ["PHRASE_EDGES", "PHRASE_EVENTS", "SimulatedEngine", "simulated_lm_builder"]
