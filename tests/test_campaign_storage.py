"""A campaign's shared finished work (``optimizers.storage.Artifacts`` on ``SharedArtifacts``): the project's own
table ``argus_artifacts`` beside Optuna's, written with an insert that does nothing on conflict, so the first
writer wins between processes; Optuna's tables are left alone. No data or model needed."""

from __future__ import annotations

import multiprocessing as mp

import pytest

from tests.test_campaign_workers import needs_postgres, pg_url  # noqa: F401 - the fixture

NAMES = [f"evals/val-{i:03d}.json" for i in range(30)]


def _racer(url: str, run_dir: str, me: int, barrier, results) -> None:
    """One worker: open the table (creating it, at the same moment as the other), then write every name with
    its own payload at the same moment as the other, then read every name back."""
    from pathlib import Path

    from optimizers.storage import Artifacts, SharedArtifacts

    try:
        barrier.wait(timeout=60)
        art = Artifacts(Path(run_dir), SharedArtifacts(url, "race"))
        barrier.wait(timeout=60)
        written = {name: art.share(name, {"writer": me, "name": name}) for name in NAMES}
        barrier.wait(timeout=60)
        fresh = SharedArtifacts(url, "race")  # no cache: what the database holds
        results.put((me, written, {n: art.get(n) for n in NAMES}, {n: fresh.get(n)[1] for n in NAMES}))
    except BaseException as exc:  # noqa: BLE001 - reported to the test
        barrier.abort()
        results.put((me, repr(exc), None, None))


def test_the_first_of_two_processes_writing_an_artifact_wins(tmp_path):
    """Two processes create the table and write the same 30 names with different payloads at the same moment on
    one SQLite storage: each name is written by exactly one of them, the other is told its write was not
    written, and both (and a third reader) then read the winner's payload."""
    _race(f"sqlite:///{tmp_path / 'optuna.db'}", tmp_path)


@needs_postgres
def test_the_first_of_two_processes_writing_an_artifact_wins_on_postgresql(tmp_path, pg_url):  # noqa: F811
    _race(pg_url, tmp_path)


def _race(url: str, tmp_path) -> None:
    from optimizers.storage import SharedArtifacts

    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_racer, args=(url, str(tmp_path / f"run{i}"), i, barrier, results)) for i in (0, 1)]
    for p in procs:
        p.start()
    got = {}
    for _ in procs:
        me, written, reads, fresh = results.get(timeout=120)
        assert reads is not None, written
        got[me] = (written, reads, fresh)
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    third = SharedArtifacts(url, "race")
    for name in NAMES:
        winners = [me for me in (0, 1) if got[me][0][name]]
        assert len(winners) == 1, (name, winners)  # the loser's write is reported as not written
        first = {"writer": winners[0], "name": name}
        for me in (0, 1):
            assert got[me][1][name] == first and got[me][2][name] == first
        assert third.get(name) == (True, first)


@pytest.fixture()
def sqlite_url(tmp_path):
    return f"sqlite:///{tmp_path / 'optuna.db'}"


def test_artifacts_live_in_their_own_table_not_in_optunas(tmp_path, sqlite_url):
    """The first write stays; ``replace`` overwrites (a worker's running summary); prefixes are matched
    literally; each study sees its own rows; Optuna's study attributes stay empty."""
    import optuna
    import sqlalchemy as sa

    from optimizers.storage import ARTIFACTS_TABLE, Artifacts, SharedArtifacts

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    optuna.create_study(study_name="camp", storage=sqlite_url, directions=["maximize", "minimize"])
    art = Artifacts(tmp_path / "run", SharedArtifacts(sqlite_url, "camp"))
    (tmp_path / "run").mkdir()
    assert art.put("config.json", {"fingerprint": "a"}) is True
    assert art.put("config.json", {"fingerprint": "b"}) is False
    assert art.get("config.json") == {"fingerprint": "a"}
    other = Artifacts(tmp_path / "run", SharedArtifacts(sqlite_url, "camp"))  # another worker, nothing cached
    assert other.share("config.json", {"fingerprint": "c"}) is False
    assert other.get("config.json") == {"fingerprint": "a"}
    assert other.share("spend/w.json", {"usd": 1.0}, replace=True) is True
    assert other.share("spend/w.json", {"usd": 2.0}, replace=True) is True
    assert Artifacts(tmp_path / "run", SharedArtifacts(sqlite_url, "camp")).get("spend/w.json") == {"usd": 2.0}
    for name in ("evals/val-1.json", "evals/val-2.json", "evals_val-3.json", "evals/test-1.json"):
        art.share(name, {"n": name})
    assert art.names("evals/val-") == ["evals/val-1.json", "evals/val-2.json"]
    assert sorted(art.items("evals/")) == ["evals/test-1.json", "evals/val-1.json", "evals/val-2.json"]
    assert Artifacts(tmp_path / "run2", SharedArtifacts(sqlite_url, "another")).names("evals/") == []
    assert optuna.load_study(study_name="camp", storage=sqlite_url).user_attrs == {}
    engine = sa.create_engine(sqlite_url)
    try:
        assert ARTIFACTS_TABLE in sa.inspect(engine).get_table_names()
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT count(*) FROM study_user_attributes")).scalar() == 0
    finally:
        engine.dispose()


def test_without_a_storage_the_files_are_the_artifacts(tmp_path):
    """Optuna's journal file (one process): no shared copy, the files under RUN."""
    from optimizers.storage import Artifacts

    art = Artifacts(tmp_path)
    (tmp_path / "evals").mkdir()
    assert art.put("evals/val-a.json", {"q": 1}) is False  # nothing shared: the file is written
    art.put("evals/val-a.json", {"q": 2})
    assert art.get("evals/val-a.json") == {"q": 2}
    assert art.names("evals/val-") == ["evals/val-a.json"]
    assert art.get("evals/val-b.json") is None


def test_a_campaign_on_a_storage_shares_through_the_table(tmp_path, sqlite_url):
    """The scheduler opens the study and the artifacts table on one URL; the fingerprint goes to the table."""
    from optimizers.config import CampaignConfig
    from optimizers.scheduler import Scheduler
    from optimizers.storage import SharedArtifacts

    cfg = CampaignConfig(name="camp")
    sch = Scheduler(cfg, tmp_path, storage_url=sqlite_url, worker="w", console=None)
    study = sch.open_study()
    art = sch.artifacts()
    sch.check_fingerprint(art)
    assert SharedArtifacts(sqlite_url, "camp").get("config.json") == (True, {"fingerprint": sch.fingerprint(),
                                                                           "campaign": "camp"})
    assert study.user_attrs == {}
