"""Chunk-plan repair: whatever the model proposes, the chunks are valid."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from argus.designs.chunking import chunk_plan_errors, repair_chunks, window_chunks


def _check(chunks, ids, max_sentences, overlap):
    pos = {s: i for i, s in enumerate(ids)}
    covered = [s for c in chunks for s in c.sentence_ids]
    assert set(covered) == set(ids)  # coverage
    for c in chunks:
        idx = [pos[s] for s in c.sentence_ids]
        assert idx == list(range(idx[0], idx[0] + len(idx)))  # contiguous, ordered
        assert len(idx) <= max_sentences
    for a, b in zip(chunks, chunks[1:]):
        shared = set(a.sentence_ids) & set(b.sentence_ids)
        assert len(shared) == min(overlap, len(a.sentence_ids) - 1)  # the overlap with the previous chunk
        assert pos[a.sentence_ids[0]] < pos[b.sentence_ids[0]]


ids_strategy = st.integers(min_value=1, max_value=60).map(lambda n: [f"S{i}" for i in range(3, 3 + n)])


@settings(max_examples=150, deadline=None)
@given(
    ids=ids_strategy,
    data=st.data(),
    max_sentences=st.integers(min_value=3, max_value=12),
    overlap=st.integers(min_value=0, max_value=3),
)
def test_repair_always_yields_valid_overlapping_chunks(ids, data, max_sentences, overlap):
    vocab = ids + ["S999", "S1"]
    plan = data.draw(st.lists(st.lists(st.sampled_from(vocab), max_size=15), max_size=8))
    chunks, _ = repair_chunks(plan, ids, max_sentences=max_sentences, min_sentences=2, overlap=overlap)
    _check(chunks, ids, max_sentences, min(overlap, max_sentences - 1))


def test_model_boundaries_are_kept_when_valid():
    ids = [f"S{i}" for i in range(1, 13)]
    plan = [ids[0:5], ids[3:9], ids[7:12]]
    chunks, issues = repair_chunks(plan, ids, max_sentences=8, min_sentences=2, overlap=2)
    assert [c.sentence_ids[0] for c in chunks] == ["S1", "S2", "S6"]
    # the second chunk starts at S4 in the proposal; with two sentences of overlap the core starts there
    assert chunks[1].sentence_ids[2] == "S4"
    assert chunk_plan_errors(plan, ids, 8) == []


def test_errors_name_the_problems():
    ids = ["S1", "S2", "S3", "S4"]
    errs = chunk_plan_errors([["S1", "S9"], ["S4", "S3"]], ids, 3)
    text = " ".join(errs)
    assert "S9" in text and "S2" in text and "order" in text


def test_window_fallback():
    ids = [f"S{i}" for i in range(1, 21)]
    chunks = window_chunks(ids, max_sentences=8, overlap=2)
    _check(chunks, ids, 8, 2)
    assert len(chunks) == 4
