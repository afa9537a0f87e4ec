"""GEPA's reflection answered as plain text: an empty or unusable answer keeps the parent's instruction
and says so; a usable one is proposed."""

from __future__ import annotations

import json

import pytest

from optimizers.proposer import TextInstructionProposer

PARENT = "Extract every event of the chunk with its evidence sentences."
RECORDS = {"stage1": [{"Inputs": {"chunk": "[S1] She was fired."}, "Generated Outputs": "{}",
                       "Feedback": "missed gold EV1 (termination 'fired', S1)"}]}


class Answers:
    """A reflection LM that answers each prompt with the next scripted text."""

    def __init__(self, *texts):
        self.texts = list(texts)
        self.prompts = []

    def __call__(self, prompt=None, messages=None):
        self.prompts.append(prompt or messages)
        return [self.texts.pop(0)]


def test_the_shipped_instructions_are_no_loops(tmp_path):
    from optimizers.examples import instructions_of
    from tests.conftest import make_scripted_pipeline

    seeds = instructions_of(make_scripted_pipeline(tmp_path))
    assert len(seeds) >= 6
    assert [name for name, text in seeds.items() if TextInstructionProposer.loops(text)] == []


@pytest.mark.parametrize("answer,reason", [
    ("", "empty answer"),
    ("```\n\n```", "empty answer"),
    ("```\nok\n```", "unusable instruction"),
    ("```\n1234567890 -- 1234567890 !!\n```", "unusable instruction"),
    (f"```\n{PARENT}\n```", "unchanged"),
    # what the embedded SmolLM2 wrote in a demo campaign: one block, again and again, to its token limit
    ("```\n" + "Output:\n\n- Read the input format and identify the task.\n- Provide the instructions.\n\n" * 11 + "```",
     "a loop"),
    ("```\n" + "the entity is mentioned, " * 40 + "\n```", "a loop"),
])
def test_an_unusable_reflection_keeps_the_parent_and_is_logged(answer, reason, tmp_path, caplog):
    logged = []
    proposer = TextInstructionProposer(Answers(answer), on_fallback=lambda c, r: logged.append((c, r)))
    with caplog.at_level("WARNING", logger="argus"):
        out = proposer({"stage1": PARENT}, RECORDS, ["stage1"])
    assert out == {}  # GEPA keeps the parent's instruction for this component
    assert len(logged) == 1 and logged[0][0] == "stage1" and reason in logged[0][1]
    assert proposer.fallbacks == logged and "parent's instruction is kept" in caplog.text


def test_a_usable_reflection_is_proposed():
    new = "Extract one event per sentence that states an action; copy the trigger word exactly."
    proposer = TextInstructionProposer(Answers(f"Here it is:\n```\n{new}\n```"))
    assert proposer({"stage1": PARENT}, RECORDS, ["stage1"]) == {"stage1": new}
    assert proposer.fallbacks == []


def test_the_campaign_writes_fallbacks_to_its_log(tmp_path):
    from optimizers.campaign import Campaign
    from optimizers.config import CampaignConfig

    camp = Campaign.__new__(Campaign)  # only the log writer is exercised
    camp.run_dir, camp.worker, camp.config = tmp_path, "w1", CampaignConfig(name="t")
    record = camp._reflection_fallback(3)
    record("programs.stage1.extract.predict", "the reflection model returned an empty answer")
    (line,) = (tmp_path / "campaign.log.jsonl").read_text().splitlines()
    entry = json.loads(line)
    assert entry["event"] == "reflection_fallback" and entry["trial"] == 3 and entry["worker"] == "w1"
    assert entry["component"] == "programs.stage1.extract.predict" and "empty" in entry["reason"]
