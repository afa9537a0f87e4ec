"""Programs: retries with validation feedback, salvage of broken JSON."""

from __future__ import annotations

import json

import dspy
import pytest
from pydantic import BaseModel, Field

from argus.models.lm import MeteredLM, SchemaJSONAdapter, signature_output_schema
from programs import ArgusPrograms
from programs.common import salvage_outputs
from programs.stage1 import ExtractEntitiesAndEvents


class SequenceEngine:
    """Answers with the given texts in order; records the prompts."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.prompts = []

    def complete(self, request):
        from dspy.lm15 import Message, Response, TextPart, Usage

        self.prompts.append("\n".join(m.text or "" for m in request.messages))
        return Response(id=None, model="seq", message=Message.assistant([TextPart(self.answers.pop(0))]),
                        finish_reason="stop", usage=Usage(input_tokens=10, output_tokens=5, total_tokens=15))


def _lm(engine):
    return MeteredLM("seq/test", engine=engine, cache=False, structured_output="none")


GOOD_EVENT = {"id": "EV1", "type": "hiring", "verb": "hire", "trigger": "hired", "frame": None,
              "participants": [{"entity": "E1", "role": "agent"}], "time": {"kind": "explicit", "value": "2019-03"},
              "evidence": ["S1"], "confidence": 0.9}
GOOD_ENTITY = {"id": "E1", "name": "Acme", "kind": "organization", "role": "employer", "aliases": []}


def test_stage1_retries_with_the_validation_error_as_feedback():
    bad = {"entities": [GOOD_ENTITY], "events": [{**GOOD_EVENT, "evidence": ["S9"]}]}
    good = {"entities": [GOOD_ENTITY], "events": [GOOD_EVENT]}
    engine = SequenceEngine([json.dumps(bad), json.dumps(good)])
    progs = ArgusPrograms(max_retries=2)
    with dspy.context(lm=_lm(engine), adapter=SchemaJSONAdapter()):
        res = progs.stage1(chunk_text="[S1] Acme hired Jo in March 2019.", sentence_ids=["S1"])
    assert res.ok and res.attempts == 2
    assert "S9" in engine.prompts[1] and "rejected" in engine.prompts[1]
    assert res.outputs["events"][0].evidence == ["S1"]


def test_retries_are_bounded_and_the_last_output_is_returned_with_errors():
    bad = json.dumps({"entities": [GOOD_ENTITY], "events": [{**GOOD_EVENT, "evidence": ["S9"]}]})
    engine = SequenceEngine([bad, bad])
    progs = ArgusPrograms(max_retries=1)
    with dspy.context(lm=_lm(engine), adapter=SchemaJSONAdapter()):
        res = progs.stage1(chunk_text="[S1] x", sentence_ids=["S1"])
    assert not res.ok and res.attempts == 2 and res.outputs is not None
    assert any("S9" in e for e in res.errors)


def test_salvage_keeps_valid_items_of_a_truncated_answer():
    text = json.dumps({"entities": [GOOD_ENTITY, {"id": "E2", "name": 5}], "events": [GOOD_EVENT]})[:-30]
    out = salvage_outputs(ExtractEntitiesAndEvents, text)
    assert out is not None and [e.id for e in out["entities"]] == ["E1"]


def test_output_schema_for_grammars_is_self_contained_and_capped():
    schema = signature_output_schema(ExtractEntitiesAndEvents, {"events": 5, "*": 7, "string": 50})
    text = json.dumps(schema)
    assert "$ref" not in text and "$defs" not in text
    assert schema["properties"]["events"]["maxItems"] == 5
    assert schema["properties"]["entities"]["maxItems"] == 7
    assert schema["properties"]["entities"]["items"]["properties"]["name"]["maxLength"] == 50
    assert schema["properties"]["events"]["items"]["properties"]["evidence"]["minItems"] == 1
    assert set(schema["required"]) == {"entities", "events"}


def test_compiled_state_is_json_and_round_trips(tmp_path):
    progs = ArgusPrograms()
    progs.stage1.extract.predict.signature = progs.stage1.extract.predict.signature.with_instructions("EVOLVED PROMPT")
    path = tmp_path / "programs.json"
    progs.save(str(path))
    state = json.loads(path.read_text())
    assert any("EVOLVED PROMPT" in json.dumps(v) for v in state.values())
    again = ArgusPrograms()
    again.load(str(path))
    assert again.stage1.extract.predict.signature.instructions == "EVOLVED PROMPT"


def test_long_string_caps_are_left_to_max_tokens():
    """llama.cpp turns maxLength into nested grammar rules and crashes on long ones (seen at 4000)."""
    from dspy.teleprompt.gepa.instruction_proposal import ProposeInstruction

    from argus.models.lm import MAX_GRAMMAR_STRING, signature_output_schema

    short = signature_output_schema(ProposeInstruction, {"string": 60})
    assert short["properties"]["new_instruction"]["maxLength"] == 60
    long = signature_output_schema(ProposeInstruction, {"string": MAX_GRAMMAR_STRING + 1})
    assert "maxLength" not in long["properties"]["new_instruction"]


class _Heading(BaseModel):
    title: str = Field(description="the heading's words", default="")
    description: str = Field(description="what follows", examples=["the facts"])


class _Summarize(dspy.Signature):
    """Summarize a section."""

    text: str = dspy.InputField()
    heading: _Heading = dspy.OutputField(desc="a heading")
    examples: list[str] = dspy.OutputField(desc="example sentences")


def test_properties_named_like_schema_keywords_survive_the_grammar_schema():
    """``title``, ``description``, ``default`` and ``examples`` are dropped as keywords, never as
    property names: an output with a ``title`` field keeps it (and it stays required)."""
    import jsonschema

    schema = signature_output_schema(_Summarize)
    assert set(schema["properties"]) == {"heading", "examples"} and set(schema["required"]) == {"heading", "examples"}
    heading = schema["properties"]["heading"]
    assert set(heading["properties"]) == {"title", "description"}
    assert "description" not in heading["properties"]["title"] and "default" not in heading["properties"]["title"]
    assert "examples" not in heading["properties"]["description"]
    jsonschema.validate({"heading": {"title": "Facts", "description": "x"}, "examples": ["a"]}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"heading": {"title": "Facts"}, "examples": []}, schema)
