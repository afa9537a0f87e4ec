"""A simulated LM whose sentence-design choices are the gold events (a test double): where it decides a
sentence it is better than the event heads, so routing sentences to it buys quality for tokens."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.scripted_lm import _sentences
from tests.simulated_lm import SimulatedEngine, simulated_lm_builder


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


class OracleEngine(SimulatedEngine):
    """The simulated engine whose answers to the choice program are the gold events of the sentences it is
    shown (looked up by the sentence's text in the gold files given)."""

    def __init__(self, gold_paths: list[Path]):
        super().__init__()
        self.gold: dict[str, list[dict]] = {}
        for path in gold_paths:
            doc = json.loads(Path(path).read_text(encoding="utf-8"))
            text = {s["id"]: s["text"] for sec in doc["sections"] for p in sec["paragraphs"] for s in p}
            for ev in doc["graph"]["events"]:
                for sid in ev["evidence"][:1]:
                    if sid in text:
                        self.gold.setdefault(_norm(text[sid]), []).append(ev)
        self.choice_calls = 0

    def _choices(self, text: str, entity_lines: str) -> list[dict]:
        self.choice_calls += 1
        out = []
        for sid, sentence in _sentences(text):
            for ev in self.gold.get(_norm(sentence), [])[:2]:
                trigger = ev["trigger"] if ev["trigger"] in sentence else sentence.split()[0]
                out.append({"sentence": sid, "type": ev["type"], "trigger": trigger, "participants": [],
                            "time": ev.get("time") or {"kind": "unknown", "value": None}})
        return out


def oracle_lm_builder(gold_paths: list[Path]):
    """An ``lm_builder`` for a campaign whose every model is the oracle engine."""
    return simulated_lm_builder(OracleEngine(gold_paths))
