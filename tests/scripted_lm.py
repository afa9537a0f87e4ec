"""A deterministic scripted LM for unit tests (a test double, never used by the product).

It plugs into ``argus.models.lm.MeteredLM`` as a DSPy engine, reads which program is calling from the
output fields named in the system prompt, reads the inputs from the ``[[ ## field ## ]]`` blocks,
and answers with plausible, schema-valid JSON derived from the input text: one event per labeled
sentence, a BEFORE edge between consecutive events, a CAUSES edge where a sentence says
"because" / "in retaliation", etc.; the sentence design's choices pick the sentence's verb as
trigger. Token usage is reported from character counts so that the
ledger has something to add up.
"""

from __future__ import annotations

import json
import re

from dspy.lm15 import Message, Response, TextPart, Usage

_FIELD = re.compile(r"\[\[ ## (\w+) ## \]\]\n(.*?)(?=\n\n\[\[ ## |\Z)", re.S)
_LABELED = re.compile(r"\[(S\d+)\]\s*(.*)")
_WORD = re.compile(r"[a-z]{4,}")
_NAME = re.compile(r"\b([A-Z][a-z]+(?:\s[A-Z][a-z]+)?)\b")
_STOP = {"The", "On", "In", "After", "Before", "When", "While", "Between", "Her", "His", "She", "He", "Two",
         "Plaintiff", "Defendant", "Ignore", "During", "Upon", "By", "As", "For", "Ms", "Mr", "Dr", "That", "This"}
_VERBS = [("hired", "hiring", "hire"), ("terminated", "termination", "terminate"), ("fired", "termination", "fire"),
          ("complain", "complaint", "complain"), ("warning", "discipline", "warn"), ("leave", "leave", "take leave"),
          ("told", "communication", "tell"), ("emailed", "communication", "email"), ("removed", "schedule_change", "remove"),
          ("assigned", "schedule_change", "assign"), ("pregnan", "medical", "become pregnant"), ("promot", "promotion", "promote")]


def request_inputs(request) -> tuple[str, dict[str, str]]:
    """The user text of an engine request and its ``[[ ## field ## ]]`` input blocks by name."""
    user = "\n".join(m.text or "" for m in request.messages)
    return user, {m.group(1): m.group(2).strip() for m in _FIELD.finditer(user)}


class EngineDouble:
    """What ``MeteredLM`` needs of an engine besides ``complete``: ``stream`` (the complete answer
    as events) and ``close``; ``calls`` records what each subclass wants to remember."""

    def __init__(self):
        self.calls: list = []

    def stream(self, request):
        from dspy.lm15 import response_to_events

        return response_to_events(self.complete(request))

    def close(self):
        pass


class HashedEncoder:
    """A sentence encoder for tests: hashed bag of the 4+-letter words (deterministic, no model)."""

    def __init__(self, dim: int):
        self.dim = dim

    def encode(self, texts):
        import zlib

        import numpy as np

        x = np.zeros((len(texts), self.dim), dtype="float32")
        for i, t in enumerate(texts):
            for w in _WORD.findall(t.lower()):
                x[i, zlib.crc32(w.encode()) % self.dim] += 1.0
        return x + 1e-3


class ScriptedEngine(EngineDouble):
    def complete(self, request):
        system = request.system if isinstance(request.system, str) else "".join(p.text for p in (request.system or ()))
        user, inputs = request_inputs(request)
        outputs_section = system.split("Your output fields are:", 1)[-1]
        out_fields = re.findall(r"`(\w+)`", outputs_section.split("All interactions", 1)[0])
        answer = self.answer(out_fields, inputs)
        self.calls.append({"fields": out_fields, "inputs": inputs})
        text = json.dumps(answer)
        return Response(
            id=None, model="scripted", message=Message.assistant([TextPart(text)]), finish_reason="stop",
            usage=Usage(input_tokens=len(system + user) // 4, output_tokens=len(text) // 4,
                        total_tokens=(len(system + user) + len(text)) // 4),
        )

    # ------------------------------------------------------------------ answers per program

    def answer(self, fields: list[str], inputs: dict) -> dict:
        if "fact_ids" in fields:
            ids = [sid for sid, text in _sentences(inputs.get("sentences", "")) if not re.search(r"willful|realleges|malicious", text)]
            return {"fact_ids": ids}
        if "chunks" in fields:
            ids = [sid for sid, _ in _sentences(inputs.get("sentences", ""))]
            size = int(inputs.get("max_chunk_sentences", "6") or 6)
            chunks, start = [], 0
            while start < len(ids):
                chunks.append({"sentence_ids": ids[max(0, start - 2): start + size - 2], "theme": f"part {len(chunks) + 1}"})
                start += size - 2
            return {"chunks": chunks}
        if "relations" in fields and "pairs" in inputs:  # the sentence design's pair-choice program
            text = dict(re.findall(r"^(EV\d+): (.*)$", inputs.get("events", ""), re.M))
            out = []
            for label, a, b in re.findall(r"^(P\d+): (EV\d+) → (EV\d+)$", inputs["pairs"], re.M):
                causal = "CAUSES" if re.search(r"because|retaliat|as a result", text.get(b, ""), re.I) else "NONE"
                out.append({"pair": label, "temporal": "BEFORE", "causal": causal})
            return {"relations": out}
        if "same_occurrence" in fields:
            a, b = inputs.get("event_a", ""), inputs.get("event_b", "")
            same = a.split(":")[0] == b.split(":")[0] and a.split("—")[0] == b.split("—")[0]
            return {"same_occurrence": same, "relation": "NONE" if same else "BEFORE", "reason": "scripted decision"}
        if "temporal_edges" in fields and "entities" in fields:
            graph = self._stage1(inputs.get("facts", ""))
            t, c = self._stage2(inputs.get("facts", ""), graph["events"])
            t = [e for e in t if e["relation"] in ("BEFORE", "SAME_TIME")]
            c = [e for e in c if e["relation"] in ("CAUSES", "ENABLES")]
            return {**graph, "temporal_edges": t, "causal_edges": c}
        if "factual_accuracy" in fields:
            grounded, total = _grounding(inputs.get("graph", ""), inputs.get("sentences", ""))
            score = 1 + round(4 * grounded / total) if total else 1
            why = f"{grounded} of {total} events cite sentences that exist"
            return {f: {"score": score, "rationale": why} for f in fields if f != "feedback"}
        if "event_grounding" in fields:
            ga = _grounding(inputs.get("graph_a", ""), inputs.get("sentences", ""))[0]
            gb = _grounding(inputs.get("graph_b", ""), inputs.get("sentences", ""))[0]
            win = "A" if ga > gb else "B" if gb > ga else "tie"
            return {"event_grounding": win, "evidence_grounding": win, "edge_correctness": win, "overall": win,
                    "reason": f"A grounds {ga} events, B {gb}"}
        if "temporal_edges" in fields:
            stage1 = json.loads(inputs.get("stage1_json", "{}") or "{}")
            t, c = self._stage2(inputs.get("chunk", ""), stage1.get("events", []))
            return {"temporal_edges": t, "causal_edges": c}
        if "entities" in fields:
            return self._stage1(inputs.get("chunk", ""))
        if "events" in fields:
            return {"events": self._choices(inputs.get("sentences", ""), inputs.get("entities", ""))}
        return {f: "" for f in fields}

    def _choices(self, text: str, entity_lines: str) -> list[dict]:
        """The sentence design's choices: a sentence with a known verb gets that event, its trigger the
        word of the sentence holding the verb, the first listed entity it names as agent."""
        entities = [tuple(x.strip() for x in line.split(":", 1)) for line in entity_lines.splitlines() if ":" in line]
        out = []
        for sid, sentence in _sentences(text):
            for key, etype, _ in _VERBS:
                word = next((w.strip('.,;:"()') for w in sentence.split() if key in w.lower()), None)
                if word:
                    named = [eid for eid, rest in entities if rest.split(" (")[0].split()[-1] in sentence]
                    out.append({"sentence": sid, "type": etype, "trigger": word,
                                "participants": [{"entity": e, "role": "agent"} for e in named[:1]],
                                "time": {"kind": "unknown", "value": None}})
                    break
        return out

    def _stage1(self, text: str) -> dict:
        entities: dict[str, dict] = {}
        events = []
        for sid, sentence in _sentences(text):
            names = [n for n in _NAME.findall(sentence) if n.split()[0] not in _STOP]
            for n in names[:2]:
                if n not in entities:
                    entities[n] = {"id": f"E{len(entities) + 1}", "name": n, "kind": "person", "role": "other", "aliases": []}
            etype, verb = "other", "state"
            for key, t, v in _VERBS:
                if key in sentence.lower():
                    etype, verb = t, v
                    break
            date = re.search(r"(January|February|March|April|May|June|July|August|September|October|November|December) \d{1,2}, (\d{4})", sentence)
            time = {"kind": "explicit", "value": date.group(0)} if date else {"kind": "unknown", "value": None}
            events.append({
                "id": f"EV{len(events) + 1}", "type": etype, "verb": verb, "trigger": sentence.split()[0] if sentence else verb,
                "frame": None,
                "participants": [{"entity": entities[n]["id"], "role": "agent" if k == 0 else "patient"} for k, n in enumerate(names[:2])],
                "time": time, "evidence": [sid], "confidence": 0.7,
            })
        return {"entities": list(entities.values()), "events": events}

    def _stage2(self, text: str, events: list[dict]):
        by_sid = {e["evidence"][0]: e["id"] for e in events if e.get("evidence")}
        sentences = dict(_sentences(text))
        temporal, causal = [], []
        for a, b in zip(events, events[1:]):
            temporal.append({"source": a["id"], "target": b["id"], "relation": "BEFORE", "evidence": a["evidence"][:1] + b["evidence"][:1]})
        for sid, sentence in sentences.items():
            if re.search(r"because|in retaliation|as a result", sentence, re.I) and sid in by_sid:
                prev = [e for e in events if e["id"] != by_sid[sid]]
                if prev:
                    causal.append({"source": prev[0]["id"], "target": by_sid[sid], "relation": "CAUSES", "evidence": [sid]})
        return temporal, causal


def _grounding(graph_text: str, sentences_text: str) -> tuple[int, int]:
    """(events whose evidence ids are all labeled sentences, events) in a rendered graph."""
    known = {sid for sid, _ in _sentences(sentences_text)}
    grounded = total = 0
    for line in graph_text.splitlines():
        m = re.match(r"EV\d+ \[.*; evidence (.*)$", line)
        if m:
            total += 1
            ids = [x.strip() for x in m.group(1).split(",")]
            grounded += all(x in known for x in ids)
    return grounded, total


def _sentences(text: str) -> list[tuple[str, str]]:
    out = []
    for line in text.splitlines():
        m = _LABELED.match(line.strip())
        if m:
            out.append((m.group(1), m.group(2)))
    return out


def scripted_lm(engine: EngineDouble | None = None, model: str = "scripted/test", **overrides):
    """A MeteredLM driven by ``engine`` (default: the scripted engine; cache off, so every call is
    counted; ``overrides`` replace the LM settings, e.g. ``cache=True``)."""
    from argus.models.lm import MeteredLM

    engine = engine or ScriptedEngine()

    class _Async:
        async def complete(self, request):
            return engine.complete(request)

        async def aclose(self):
            pass

    settings = dict(cache=False, structured_output="none", price_per_mtok=(1.0, 2.0), temperature=0.0, max_tokens=2000)
    settings.update(overrides)
    return MeteredLM(model, engine=engine, async_engine=_Async(), **settings)
