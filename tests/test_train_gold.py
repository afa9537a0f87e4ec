"""Training on the user's gold (issue 49, item 4): ``argus train-events --gold`` reads folders of gold files
in the correction page's layout (``<doc_id>.gold.json`` beside its text) and the corpus's, checks each against
its text, trains with the same folds and report, compares the result with the shipped heads on the user's
documents (paired), ``argus extract --heads`` runs with it, and a campaign that lists two heads files puts the
better one on the frontier at 0 tokens."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from argus.cli import app
from argus.errors import InputError
from argus.paths import complaints_dir
from argus.training.gold import gold_folders
from tests.conftest import needs_data

pytestmark = needs_data

def _dev(n: int) -> list:
    return sorted(d for d in complaints_dir("dev").iterdir() if (d / "gold.json").exists())[:n]


def _page_layout(folder, docs) -> None:
    """The correction page's layout: ``<doc_id>.gold.json`` with ``<doc_id>.txt`` beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    for d in docs:
        shutil.copy(d / "gold.json", folder / f"{d.name}.gold.json")
        shutil.copy(d / "complaint.txt", folder / f"{d.name}.txt")


def test_every_gold_of_the_corpus_fits_its_text():
    """The check passes the 78 annotated complaints (their page furniture, hyphenation and reading slips)."""
    from argus.training.gold import check_gold

    for split in ("train", "dev"):
        for d in complaints_dir(split).iterdir():
            if (d / "gold.json").exists():
                check_gold(d)


def test_both_layouts_are_read_and_each_gold_is_checked_against_its_text(tmp_path):
    docs = _dev(3)
    _page_layout(tmp_path / "mine", docs[:2])
    corpus = tmp_path / "corpus"
    shutil.copytree(docs[2], corpus / docs[2].name)
    folders = gold_folders([tmp_path / "mine", corpus], tmp_path / "staging")
    assert sorted(f.name for f in folders) == sorted(d.name for d in docs)
    staged = next(f for f in folders if f.name == docs[0].name)
    assert (staged / "complaint.txt").read_text() == (docs[0] / "complaint.txt").read_text()
    # the text may come from the EKG the page started from
    (tmp_path / "mine" / f"{docs[1].name}.txt").rename(tmp_path / "mine" / "moved.txt")
    (tmp_path / "mine" / f"{docs[1].name}.ekg.json").write_text(
        json.dumps({"text": (docs[1] / "complaint.txt").read_text()}))
    assert len(gold_folders([tmp_path / "mine"], tmp_path / "staging2")) == 2
    # a gold whose spans do not hold its sentences, one without its text, a document named twice, no gold at all
    bad = json.loads((docs[0] / "gold.json").read_text())
    bad["sections"][0]["paragraphs"][0][0]["span"] = [10**7, 10**7 + 5]
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "x.gold.json").write_text(json.dumps(bad))
    (tmp_path / "bad" / "x.txt").write_text((docs[0] / "complaint.txt").read_text())
    with pytest.raises(InputError, match="does not hold its text"):
        gold_folders([tmp_path / "bad"], tmp_path / "s3")
    (tmp_path / "alone").mkdir()
    shutil.copy(docs[0] / "gold.json", tmp_path / "alone" / "y.gold.json")
    with pytest.raises(InputError, match="no text beside it"):
        gold_folders([tmp_path / "alone"], tmp_path / "s4")
    with pytest.raises(InputError, match="given twice"):
        gold_folders([corpus, corpus / docs[2].name], tmp_path / "s5")
    # a draft (the page writes every edit; the user accepts a document when done) is left out unless asked for
    draft = json.loads((docs[0] / "gold.json").read_text())
    draft["annotation"] = {"status": "draft"}
    (tmp_path / "drafts").mkdir()
    (tmp_path / "drafts" / "d.gold.json").write_text(json.dumps(draft))
    (tmp_path / "drafts" / "d.txt").write_text((docs[0] / "complaint.txt").read_text())
    skipped: list = []
    with pytest.raises(InputError, match="only drafts"):
        gold_folders([tmp_path / "drafts"], tmp_path / "s7", skipped=skipped)
    assert [p.name for p in skipped] == ["d.gold.json"]
    assert [f.name for f in gold_folders([tmp_path / "drafts"], tmp_path / "s8", drafts=True)] == ["d"]
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no gold here"):
        gold_folders([tmp_path / "empty"], tmp_path / "s6")


@pytest.fixture(scope="module")
def your_heads(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gold")
    _page_layout(tmp / "mine", _dev(4))
    out = tmp / "your_heads.json"
    res = CliRunner().invoke(app, ["train-events", "--gold", str(tmp / "mine"), "--out", str(out), "--report",
                                   "--folds", "2"])
    assert res.exit_code == 0, res.output
    return tmp, out, res.output


def test_train_events_on_your_gold_writes_heads_with_a_report_against_the_shipped(your_heads):
    tmp, out, output = your_heads
    data = json.loads(out.read_text())
    meta = data["meta"]
    assert sorted(meta["trained_on"]) == sorted(d.name for d in _dev(4)) and meta["gold"] == [str(tmp / "mine")]
    assert meta["cross_validation"]["folds"] == 2 and set(data["parts"]) >= {"types", "edges"}
    report = meta["gold_report"]
    assert report["documents"] == 4 and report["baseline"] == "embedded"
    ev = report["events_f1"]
    assert 0.0 < ev["yours"] <= 1.0 and 0.0 < ev["baseline"] <= 1.0
    assert ev["difference"] == pytest.approx(ev["yours"] - ev["baseline"], abs=1e-3)
    assert ev["difference_ci95"][0] <= ev["difference"] <= ev["difference_ci95"][1]
    assert "on your 4 documents" in output and "relaxed event F1" in output


def test_extract_runs_with_your_heads(your_heads, tmp_path):
    _, heads, _ = your_heads
    doc = _dev(1)[0] / "complaint.txt"
    res = CliRunner().invoke(app, ["extract", str(doc), "--out", str(tmp_path / "out"), "--heads", str(heads),
                                   "--cache-dir", str(tmp_path / "cache"), "--no-graphml"])
    assert res.exit_code == 0, res.output
    ekg = json.loads(next((tmp_path / "out").glob("*.ekg.json")).read_text())
    assert ekg["graph"]["events"]
    res = CliRunner().invoke(app, ["extract", str(doc), "--out", str(tmp_path / "o2"), "--heads", str(tmp_path / "no.json")])
    assert res.exit_code != 0 and "no such file" in res.output


def test_a_campaign_over_two_heads_files_keeps_the_better_at_zero_tokens(your_heads):
    from optimizers.campaign import Campaign, CampaignConfig
    from optimizers.frontier import Frontier
    from tests.test_campaign import CAMPAIGN

    tmp, heads, _ = your_heads
    with pytest.raises(Exception, match="no heads file"):
        CampaignConfig(**{**CAMPAIGN, "space": {"task_model": ["local/smollm2"], "sentence.heads": ["missing.json"]}})
    cfg = CampaignConfig(**{
        **CAMPAIGN, "name": "headstest", "programs": ["sentence_events"],
        "space": {"task_model": ["local/smollm2"], "extraction": ["sentence"], "sentence.heads": ["embedded", str(heads)]},
        "pipeline": {"sentence.llm": "never", "sentence.pair_llm": "never"},
        "metric": {"weights": {"structural": 0.5, "judge": 0.0, "gold": 0.5}},
        "budget": {"trials": 2, "max_metric_calls": 2, "seconds_per_call": 0.01},
    })
    result = Campaign(cfg, tmp / "run", tmp / "compiled").run()
    val = [e for e in result.evaluations if e.split == "val"]
    by_heads = {}
    for e in val:
        by_heads.setdefault(e.settings.get("sentence.heads"), []).append(e)
    assert set(by_heads) == {"embedded", str(heads)}, [e.settings for e in val]
    assert all(e.tokens == 0 for e in val)
    best = max(val, key=lambda e: e.quality)
    fr = Frontier.load(tmp / "compiled" / "headstest")
    free = [m for m in fr.members if m.objectives["tokens"] == 0]
    assert free and max(m.objectives["quality"] for m in free) == pytest.approx(best.quality, abs=1e-6)
    assert {m.settings.get("sentence.heads") for m in free if m.objectives["quality"] == max(
        x.objectives["quality"] for x in free)} == {best.settings["sentence.heads"]}
