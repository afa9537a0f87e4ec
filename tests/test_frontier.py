"""Pareto frontier: dominance, hypervolume, knee, selection, bootstrap, secrets, manifest round trips."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from argus.errors import ConfigError, InputError
from optimizers.frontier import (
    CandidateRow,
    Constraints,
    Frontier,
    FrontierFile,
    Lineage,
    MemberManifest,
    SplitScores,
    bootstrap_ci,
    build_frontier_file,
    default_reference,
    dominates,
    flag_val_only_wins,
    hypervolume,
    hypervolume_history,
    instruction_diff_size,
    knee_point,
    pareto_front,
    scrub_secrets,
    write_frontier,
    write_member,
)

QC = {"quality": "max", "cost_usd": "min"}


def P(q: float, c: float) -> dict[str, float]:
    return {"quality": q, "cost_usd": c}


def manifest(mid: str, q: float, c: float, *, test: tuple[float, float] | None = None, parent: str | None = None,
             origin: str = "gepa", iteration: int = 1, **extra) -> MemberManifest:
    splits = {"val": SplitScores(n=10, quality=q, cost_usd=c, tokens=c * 1e5)}
    if test is not None:
        splits["test"] = SplitScores(n=10, quality=test[0], cost_usd=test[1])
    return MemberManifest(campaign="camp", member_id=mid, objectives={"quality": q, "cost_usd": c, "tokens": c * 1e5},
                          splits=splits, lineage=Lineage(parent=parent, origin=origin, iteration=iteration),
                          dataset_hash="d0", metric_hash="m0", **extra)


# --- dominance and the front ------------------------------------------------------------------


def test_dominates_respects_senses():
    assert dominates(P(0.8, 1), P(0.7, 2), QC)
    assert dominates(P(0.8, 1), P(0.8, 2), QC)
    assert not dominates(P(0.8, 1), P(0.8, 1), QC)
    assert not dominates(P(0.9, 3), P(0.7, 1), QC)
    assert dominates([1, 1], [2, 2], {"a": "min", "b": "min"})


def test_pareto_front_hand_made_points_and_duplicates():
    pts = [P(0.5, 1), P(0.8, 3), P(0.4, 2), P(0.8, 3), P(0.9, 5), P(0.3, 6)]
    # (0.4, 2) is dominated by (0.5, 1); (0.3, 6) is dominated in both objectives; duplicates stay
    assert pareto_front(pts, QC) == [0, 1, 3, 4]
    assert pareto_front([], QC) == []
    assert pareto_front([P(0.5, 1), P(float("nan"), 0)], QC) == [0]


def test_pareto_front_constraints_remove_points():
    pts = [P(0.5, 1), P(0.8, 3), P(0.9, 5)]
    assert pareto_front(pts, QC, {"max_cost_per_doc": 4}) == [0, 1]
    assert pareto_front(pts, QC, Constraints(max_cost_per_doc=4, min_quality=0.6)) == [1]
    # an infeasible point does not dominate feasible ones
    assert pareto_front([P(0.9, 0.5), P(0.5, 1)], QC, {"min_quality": 0.95}) == []
    assert pareto_front([P(0.5, 1), P(0.9, 0.5)], QC, {"max_cost_per_doc": 0.8}) == [1]
    # the {objective: (op, bound)} spelling
    assert pareto_front(pts, QC, {"cost_usd": ("<=", 4), "quality": (">=", 0.6)}) == [1]
    with pytest.raises(ValueError, match="unsupported constraint"):
        pareto_front(pts, QC, {"cost_usd": (">=", 4)})


def test_pareto_front_three_objectives():
    senses = {"quality": "max", "cost_usd": "min", "latency_s": "min"}
    pts = [
        {"quality": 0.8, "cost_usd": 2, "latency_s": 5},
        {"quality": 0.8, "cost_usd": 2, "latency_s": 3},  # dominates the first
        {"quality": 0.6, "cost_usd": 1, "latency_s": 9},
        {"quality": 0.5, "cost_usd": 3, "latency_s": 1},
        {"quality": 0.4, "cost_usd": 3, "latency_s": 2},  # dominated by the fourth
    ]
    assert pareto_front(pts, senses) == [1, 2, 3]


# --- hypervolume ------------------------------------------------------------------------------


def test_hypervolume_2d_hand_computed():
    ref = {"quality": 0.0, "cost_usd": 4.0}
    assert hypervolume([P(0.5, 1), P(0.8, 3)], QC, ref) == pytest.approx(1.8)
    # a dominated point and a point outside the reference add nothing
    assert hypervolume([P(0.5, 1), P(0.8, 3), P(0.4, 2), P(0.9, 5)], QC, ref) == pytest.approx(1.8)
    assert hypervolume([P(0.9, 5)], QC, ref) == 0.0
    assert hypervolume([], QC, ref) == 0.0


def test_default_reference_convention():
    assert default_reference([P(0.5, 1), P(0.8, 3)], QC) == {"quality": 0.0, "cost_usd": pytest.approx(3.3)}
    assert default_reference([P(0.5, 0), P(0.8, 0)], QC) == {"quality": 0.0, "cost_usd": 1.0}
    # with the default reference: 0.5·(3.3−1) + 0.3·(3.3−3)
    assert hypervolume([P(0.5, 1), P(0.8, 3)], QC) == pytest.approx(0.5 * 2.3 + 0.3 * 0.3)


def _grid_hypervolume(points: list[tuple[int, int, int]], ref: tuple[int, int, int]) -> int:
    """Unit cells [x, x+1)×[y, y+1)×[z, z+1) below ref that some (minimization) point covers."""
    count = 0
    for cell in itertools.product(*(range(r) for r in ref)):
        if any(all(p[k] <= cell[k] for k in range(3)) for p in points):
            count += 1
    return count


def test_hypervolume_3d_matches_grid_count():
    rng = np.random.default_rng(7)
    senses = {"a": "min", "b": "min", "c": "min"}
    ref = (6, 6, 6)
    for _ in range(15):
        pts = [tuple(int(v) for v in rng.integers(0, 7, size=3)) for _ in range(int(rng.integers(1, 7)))]
        expected = _grid_hypervolume(pts, ref)
        got = hypervolume([list(p) for p in pts], senses, dict(zip(senses, ref)))
        assert got == pytest.approx(expected), pts


def test_hypervolume_3d_with_a_maximized_objective():
    senses = {"quality": "max", "cost_usd": "min", "latency_s": "min"}
    pts = [{"quality": 3, "cost_usd": 1, "latency_s": 2}, {"quality": 1, "cost_usd": 0, "latency_s": 0}]
    ref = {"quality": 0, "cost_usd": 3, "latency_s": 3}
    # mirror quality to 3 - q so that it is minimized on the same grid
    grid = _grid_hypervolume([(0, 1, 2), (2, 0, 0)], (3, 3, 3))
    assert hypervolume(pts, senses, ref) == pytest.approx(grid)


def test_hypervolume_history_grows_with_iterations():
    pts = [P(0.5, 1), P(0.4, 0.5), P(0.8, 3), P(0.3, 3)]
    hist = hypervolume_history(pts, [0, 1, 1, 2], QC, {"quality": 0, "cost_usd": 4})
    assert [h.iteration for h in hist] == [0, 1, 2]
    assert [h.frontier_size for h in hist] == [1, 3, 3]
    hv = [h.hypervolume for h in hist]
    assert hv == sorted(hv) and hv[0] == pytest.approx(1.5)


# --- knee -------------------------------------------------------------------------------------


def test_knee_on_a_convex_front():
    pts = [P(0.30, 0.0), P(0.80, 1.0), P(0.85, 5.0), P(0.90, 10.0), P(0.5, 6.0)]
    assert knee_point(pts, QC) == 1


def test_knee_small_and_flat_fronts_pick_max_quality():
    assert knee_point([P(0.3, 1)], QC) == 0
    assert knee_point([P(0.3, 1), P(0.9, 2)], QC) == 1
    assert knee_point([P(0.5, 1), P(0.5, 1)], QC) == 0
    # collinear front: no point bulges beyond the line between the extremes
    assert knee_point([P(0.2, 1), P(0.5, 2), P(0.8, 3)], QC) == 2
    with pytest.raises(ValueError):
        knee_point([], QC)


# --- bootstrap --------------------------------------------------------------------------------


def test_bootstrap_ci_contains_mean_and_narrows():
    rng = np.random.default_rng(1)
    small = rng.uniform(0, 1, 20)
    large = rng.uniform(0, 1, 400)
    lo, hi = bootstrap_ci(small, n_resamples=1000)
    assert lo <= small.mean() <= hi
    lo2, hi2 = bootstrap_ci(large, n_resamples=1000)
    assert lo2 <= large.mean() <= hi2
    assert hi2 - lo2 < hi - lo
    assert bootstrap_ci(small, seed=3) == bootstrap_ci(small, seed=3)
    with pytest.raises(ValueError):
        bootstrap_ci([])


def test_bootstrap_ci_is_scipy_percentile_bootstrap():
    from scipy.stats import bootstrap

    values = np.random.default_rng(4).uniform(0, 1, 30)
    ref = bootstrap((values,), np.mean, method="percentile", n_resamples=1500, confidence_level=0.9,
                    rng=np.random.default_rng(9)).confidence_interval
    assert bootstrap_ci(values, n_resamples=1500, level=0.9, seed=9) == pytest.approx((ref.low, ref.high))


def test_bootstrap_ci_degenerate_samples_are_points():
    assert bootstrap_ci([0.4]) == (0.4, 0.4)
    # all equal (a free model's cost on every document): a point, where BCa would give NaN
    assert bootstrap_ci([0.0, 0.0, 0.0]) == (0.0, 0.0)
    assert bootstrap_ci([0.1] * 7) == (0.1, 0.1)


def test_instruction_diff_size():
    assert instruction_diff_size("abc", "abc") == 0
    assert instruction_diff_size("abc", "abd") == 2
    assert instruction_diff_size("", "hello") == 5


# --- val-only wins ----------------------------------------------------------------------------


def test_flag_val_only_wins():
    members = [
        manifest("a", 0.6, 1.0, test=(0.60, 1.0)),
        manifest("b", 0.9, 2.0, test=(0.55, 2.0)),  # best on val, dominated by a on test: flagged
        manifest("c", 0.8, 1.5, test=(0.70, 1.5)),  # holds up on test
        manifest("d", 0.5, 3.0, test=(0.40, 3.0)),  # off the val frontier: never flagged
        manifest("e", 0.95, 5.0),  # on the val frontier without test scores: not flagged
    ]
    flagged = {m.member_id: m.val_only_win for m in flag_val_only_wins(members)}
    assert flagged == {"a": False, "b": True, "c": False, "d": False, "e": False}
    assert not any(m.val_only_win for m in members)  # inputs untouched
    # a candidate off the val frontier can still expose frontier members on test
    members.append(manifest("f", 0.3, 4.0, test=(0.95, 0.1)))
    flagged = {m.member_id: m.val_only_win for m in flag_val_only_wins(members)}
    assert flagged == {"a": True, "b": True, "c": True, "d": False, "e": False, "f": False}


# --- secrets ----------------------------------------------------------------------------------


def test_scrub_secrets_drops_keys_and_rejects_credentials():
    data = {"settings": {"models": {"stage1": "openai/gpt-4o-mini"}, "api_key": "x", "API_BASE": "http://10.0.0.1",
                         "lm": {"openai_api_key": "y", "base_url": "http://h", "Authorization": "z", "tokens": 5}},
            "list": [{"password": "p", "keep": 1}], "note": "a task-specific instruction"}
    clean = scrub_secrets(data)
    assert clean == {"settings": {"models": {"stage1": "openai/gpt-4o-mini"}, "lm": {"tokens": 5}},
                     "list": [{"keep": 1}], "note": "a task-specific instruction"}
    assert "api_key" in data["settings"]  # the input is not modified
    for bad in ["sk-proj-abcdefghijklmnopqrstuvwxyz", "sk-ant-api03-abcdefghijklmnop", "Bearer abc.def",
                "xoxb-123456789012-abc", "ghp_" + "a" * 36, "https://user:hunter2@example.com/v1"]:
        with pytest.raises(ValueError, match=r"credential at \$\.settings\.x"):
            scrub_secrets({"settings": {"x": bad}})
    with pytest.raises(ValueError):
        scrub_secrets({"prompts": {"stage1": "Use the key sk-abcdefghijklmnopqrstuvwx to call."}})


# --- manifests, the frontier file, Frontier ---------------------------------------------------


def write_campaign(root, candidates, frontier_file):
    """What a campaign leaves on disk: the manifests of the frontier's members and frontier.json."""
    for c in candidates:
        if c.member_id in frontier_file.members:
            write_member(root, c)
    write_frontier(root, frontier_file)
    return root


@pytest.fixture
def campaign(tmp_path):
    cands = [
        manifest("seed", 0.50, 0.010, origin="seed", iteration=0, test=(0.48, 0.011)),
        manifest("m1", 0.70, 0.020, parent="seed", test=(0.66, 0.021)),
        manifest("m2", 0.80, 0.050, parent="m1", iteration=2, test=(0.79, 0.050)),
        manifest("m3", 0.60, 0.040, parent="seed", iteration=2),  # dominated by m1
        manifest("m4", 0.85, 0.200, parent="m2", iteration=3),
    ]
    cands = flag_val_only_wins(cands)
    return write_campaign(tmp_path, cands, build_frontier_file("camp", cands, QC, Constraints(max_cost_per_doc=0.1)))


def test_build_frontier_file(campaign):
    ff = FrontierFile.model_validate_json((campaign / "frontier.json").read_text())
    assert ff.members == ["seed", "m1", "m2"]
    rows = {r.id: r for r in ff.all_candidates}
    assert rows["m3"].dominated_by == ["m1"] and not rows["m3"].on_frontier
    assert not rows["m4"].feasible and not rows["m4"].on_frontier
    assert ff.reference == {"quality": 0.0, "cost_usd": pytest.approx(0.22)}
    assert [h.frontier_size for h in ff.hypervolume_history] == [1, 2, 3, 3]


def test_manifest_round_trip_without_secrets(tmp_path):
    m = manifest("m1", 0.7, 0.02, settings={"models": {"stage1": "openai/gpt-4o-mini"}, "temperature": 0.7,
                                            "api_key": "hidden", "api_base": "http://secret.internal/v1",
                                            "lm": {"stage1": {"model": "x", "api_base": "http://secret/v1"}}},
                 prompts={"stage1.predict": "Extract events."})
    programs = tmp_path / "state.json"
    programs.write_text(json.dumps({"stage1.predict": {"lm": {"model": "openai/x", "api_base": "http://secret/v1"},
                                                      "demos": []}}))
    member_dir = write_member(tmp_path / "camp", m, programs_source=programs)
    write_frontier(tmp_path / "camp", FrontierFile(campaign="camp", members=["m1"]))
    for path in member_dir.iterdir():
        text = path.read_text()
        assert "api_key" not in text and "api_base" not in text and "secret" not in text
    fr = Frontier.load(tmp_path / "camp")
    loaded = fr.members[0]
    assert loaded.settings == {"models": {"stage1": "openai/gpt-4o-mini"}, "temperature": 0.7, "lm": {"stage1": {"model": "x"}}}
    assert loaded.model_dump(exclude={"settings"}) == m.model_dump(exclude={"settings"})
    assert fr.member_dir("m1") == member_dir
    assert json.loads((member_dir / "programs.json").read_text()) == {"stage1.predict": {"lm": {"model": "openai/x"},
                                                                                         "demos": []}}
    assert loaded.versions["python"]


def test_write_member_refuses_credentials(tmp_path):
    m = manifest("m1", 0.7, 0.02, settings={"header": "Bearer abcdef123456"})
    with pytest.raises(ValueError):
        write_member(tmp_path, m)
    assert not (tmp_path / "m1" / "manifest.json").exists()


def test_unmeasured_objectives_and_candidate_rows():
    m = MemberManifest(campaign="c", member_id="m", objectives={"quality": 0.5, "cost_usd": 0.1, "latency_s": None},
                       dataset_hash="d", metric_hash="m")
    assert m.objectives == {"quality": 0.5, "cost_usd": 0.1}
    with pytest.raises(ValueError, match="lack"):
        MemberManifest(campaign="c", member_id="m", objectives={"quality": 0.5}, dataset_hash="d", metric_hash="m")
    row = CandidateRow.model_validate({"id": "x", "quality": 0.5, "cost_usd": 0.1, "on_frontier": False, "trial": 3,
                                       "parent": "s"})
    assert row.lineage == Lineage(parent="s", iteration=3, origin="")
    assert row.model_dump()["iteration"] == 3


def test_member_id_must_be_a_folder_name():
    with pytest.raises(ValueError):
        manifest("../evil", 0.5, 0.1)


def test_table_and_select(campaign):
    fr = Frontier.load(campaign)
    table = fr.table()
    assert list(table["member"]) == ["seed", "m1", "m2"]
    assert {"quality", "quality_ci_low", "cost_usd", "tokens", "test_quality", "val_only_win", "parent",
            "changed_programs", "models"} <= set(table.columns)
    assert fr.select_member(strategy="max_quality").member_id == "m2"
    assert fr.select_member(strategy="min_cost").member_id == "seed"
    assert fr.select_member().member_id == "m1"  # knee of (0.5, .01), (0.7, .02), (0.8, .05)
    assert fr.select_member(max_cost=0.015).member_id == "seed"
    assert fr.select_member(min_quality=0.75).member_id == "m2"
    assert fr.select_member(max_cost=0.03, strategy="max_quality").member_id == "m1"
    with pytest.raises(InputError, match=r"quality 0\.5–0\.8, cost_usd 0\.01–0\.05 and tokens 1,000–5,000"):
        fr.select_member(max_cost=0.02, min_quality=0.9)
    with pytest.raises(ConfigError):
        fr.select_member(strategy="cheapest")
    with pytest.raises(InputError, match="not a frontier member"):
        fr.member_dir("m4")


def test_load_errors_name_the_file(tmp_path, campaign):
    with pytest.raises(InputError, match="not found"):
        Frontier.load(tmp_path / "nope")
    (campaign / "frontier.json").write_text("{not json")
    with pytest.raises(InputError, match="frontier.json"):
        Frontier.load(campaign)
    (campaign / "frontier.json").write_text(json.dumps({"campaign": "c", "members": ["m1"], "extra": 1}))
    with pytest.raises(InputError, match="frontier.json"):
        Frontier.load(campaign)
    (campaign / "frontier.json").write_text(json.dumps({"campaign": "c", "members": ["ghost"]}))
    with pytest.raises(InputError, match=r"ghost[/\\]manifest.json"):
        Frontier.load(campaign)
    (campaign / "m1" / "manifest.json").write_text("[]")
    (campaign / "frontier.json").write_text(json.dumps({"campaign": "c", "members": ["m1"]}))
    with pytest.raises(InputError, match=r"m1[/\\]manifest.json"):
        Frontier.load(campaign)


def test_frontier_over_tokens(tmp_path):
    senses = {"quality": "max", "tokens": "min"}
    cands = [manifest("a", 0.3, 0.0), manifest("b", 0.7, 0.0), manifest("c", 0.75, 0.0), manifest("d", 0.2, 0.0)]
    cands = [c.model_copy(update={"objectives": {**c.objectives, "tokens": t}})
             for c, t in zip(cands, [100, 200, 900, 150])]
    ff = build_frontier_file("camp", cands, senses)
    assert ff.members == ["a", "b", "c"] and ff.reference == {"quality": 0.0, "tokens": pytest.approx(990)}
    write_campaign(tmp_path, cands, ff)
    fr = Frontier.load(tmp_path)
    assert fr.knee().member_id == "b"
    assert fr.cost_objective == "tokens"
    assert fr.select_member(strategy="min_cost").member_id == "a"
    assert fr.select_member(strategy="max_quality").member_id == "c"
