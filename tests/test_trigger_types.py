"""The trigger's type model of the ``types`` part (``argus.designs.sentence.types.TriggerTypes``): trained on
the gold events of annotated complaints, stored as JSON, read by the sentence design for the trigger it
picks; a heads file without it keeps the lexicon's reading."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from argus.errors import ConfigError
from tests.conftest import _split_dirs, needs_data


@pytest.fixture(scope="module")
def trained():
    from argus.training.types import fit_part, gold_triggers

    train, dev = _split_dirs("train"), _split_dirs("dev")
    part = fit_part(train[:12])
    return part, gold_triggers(dev[:4])


@needs_data
def test_the_model_reads_held_out_gold_triggers_better_than_the_lexicon_and_the_majority(trained):
    from argus.designs.sentence.types import lexicon_type, trigger_types

    part, held = trained
    assert part["model"]["features"] and len(part["model"]["classes"]) >= 10
    texts = [t for t, _, _ in held]
    picks = [(t[a:b], a, b) for t, (a, b), _ in held]
    flat = [{c: 1.0 for c in part["model"]["classes"]} for _ in held]  # no head: the lexicon alone decides
    gold = [y for _, _, y in held]
    model = [t for t, _ in trigger_types(part, texts, picks, flat)]
    lexicon = [lexicon_type(p, w, part)[0] for p, (w, _, _) in zip(flat, picks)]
    majority = Counter(gold).most_common(1)[0][1] / len(gold)
    acc = lambda xs: sum(x == y for x, y in zip(xs, gold)) / len(gold)  # noqa: E731
    assert acc(model) > max(majority, acc(lexicon)), (acc(model), acc(lexicon), majority)


@needs_data
def test_the_type_follows_the_trigger_picked_not_the_sentence(trained):
    from argus.designs.sentence.types import trigger_types

    part, _ = trained
    text = "On May 3, 2021, Smith hired Plaintiff as a nurse, and on June 9, 2022, he terminated her employment."
    picks = [("hired", text.index("hired"), text.index("hired") + 5),
             ("terminated", text.index("terminated"), text.index("terminated") + 10)]
    got = trigger_types(part, [text, text], picks, [{}, {}])
    assert [t for t, _ in got] == ["hiring", "termination"]
    assert all(0.0 < p <= 1.0 for _, p in got)


@needs_data
def test_the_model_round_trips_as_json_and_refuses_what_it_cannot_read(trained):
    from argus.designs.sentence.types import TriggerTypes

    part, _ = trained
    data = json.loads(json.dumps(part["model"]))
    text = "Plaintiff complained to Human Resources about the remarks."
    a = text.index("complained")
    assert TriggerTypes(data).decide([text], [(a, a + 10)]) == TriggerTypes(part["model"]).decide([text], [(a, a + 10)])
    with pytest.raises(ConfigError, match="retrain"):
        TriggerTypes({**data, "features": "something-else/1"})
    with pytest.raises(ConfigError, match="corrupt"):
        TriggerTypes({**data, "bias": data["bias"][:-1]})


def test_a_part_without_the_model_keeps_the_lexicon_reading():
    from argus.designs.sentence.types import lexicon_type, trigger_types

    part = {"lexicon": {"fire": {"termination": 5}}, "prior": {"termination": 5, "communication": 5}}
    probs = {"none": 0.1, "communication": 0.6, "termination": 0.3}
    text = "Smith fired her the next day."
    got = trigger_types(part, [text], [("fired", 6, 11)], [probs])
    assert got == [lexicon_type(probs, "fired", part)] and got[0][0] == "termination"
    assert trigger_types(None, [text], [("fired", 6, 11)], [probs])[0][0] == "communication"


def test_the_shipped_heads_carry_the_model():
    from argus.designs.sentence.heads import load_event_heads
    from argus.designs.sentence.types import TRIGGER_TYPE_FEATURES

    model = load_event_heads().parts["types"]["model"]
    assert model["features"] == TRIGGER_TYPE_FEATURES and model["meta"]["events"] > 2000
