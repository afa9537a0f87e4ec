"""Validation and deterministic repair of a chunk plan.

A chunk plan is a list of sentence-id lists proposed by the chunker program. The repaired chunks
always (1) contain only known fact sentences in document order, (2) cover every fact sentence,
(3) are contiguous runs of the fact sequence, (4) hold at most ``max_sentences`` sentences and
(5) share ``overlap`` sentences with the previous chunk. The model's proposal contributes its
boundaries (where a new episode starts); everything else is enforced here.
"""

from __future__ import annotations

from argus.graph.schema import Chunk, id_order


def chunk_plan_errors(plan: list[list[str]], ids: list[str], max_sentences: int) -> list[str]:
    pos = {s: i for i, s in enumerate(ids)}
    errs: list[str] = []
    if not plan:
        return ["no chunks were returned"]
    unknown = sorted({s for c in plan for s in c if s not in pos}, key=id_order)
    if unknown:
        errs.append(f"unknown sentence ids {unknown[:10]}")
    covered = {s for c in plan for s in c}
    missing = [s for s in ids if s not in covered]
    if missing:
        errs.append(f"sentences {missing[:10]}{'…' if len(missing) > 10 else ''} are in no chunk")
    for k, c in enumerate(plan, 1):
        if len(c) > max_sentences:
            errs.append(f"chunk {k} has {len(c)} sentences (maximum {max_sentences})")
        known = [pos[s] for s in c if s in pos]
        if known != sorted(known):
            errs.append(f"chunk {k} is not in document order")
        elif known and known[-1] - known[0] + 1 != len(set(known)):
            errs.append(f"chunk {k} is not a contiguous run of sentences")
    return errs


def repair_chunks(
    plan: list[list[str]],
    ids: list[str],
    *,
    max_sentences: int = 8,
    min_sentences: int = 3,
    overlap: int = 2,
) -> tuple[list[Chunk], list[str]]:
    """Turn any proposal (even an empty one) into valid overlapping chunks; report the changes."""
    issues: list[str] = []
    n = len(ids)
    if n == 0:
        return [], issues
    overlap = max(0, min(overlap, max_sentences - 1))
    core_max = max(1, max_sentences - overlap)
    pos = {s: i for i, s in enumerate(ids)}

    starts: set[int] = set()
    for c in plan:
        known = sorted({pos[s] for s in c if s in pos})
        if known:
            starts.add(known[0])
    if plan and not starts:
        issues.append("the proposed chunks cite no known sentence; using fixed windows")
    starts.discard(0)
    bounds = [0, *sorted(starts), n]
    segments = [(a, b) for a, b in zip(bounds, bounds[1:]) if b > a]

    # Split segments that exceed the core size; keep pieces balanced.
    sized: list[tuple[int, int]] = []
    for a, b in segments:
        length = b - a
        if length <= core_max:
            sized.append((a, b))
            continue
        pieces = -(-length // core_max)
        step = length / pieces
        cuts = [a + round(step * k) for k in range(pieces)] + [b]
        sized.extend((x, y) for x, y in zip(cuts, cuts[1:]) if y > x)
        if plan:
            issues.append(f"split an oversized chunk of {length} sentences into {pieces}")

    # Merge segments below the minimum into a neighbour when the result still fits.
    merged: list[tuple[int, int]] = []
    for a, b in sized:
        if merged and (b - a < min_sentences or merged[-1][1] - merged[-1][0] < min_sentences) and b - merged[-1][0] <= core_max:
            merged[-1] = (merged[-1][0], b)
            if plan:
                issues.append("merged a chunk smaller than the minimum into its neighbour")
        else:
            merged.append((a, b))

    chunks: list[Chunk] = []
    prev_start = -1
    for k, (a, b) in enumerate(merged):
        # overlap with the previous chunk, but never swallow it whole
        start = max(prev_start + 1, a - overlap) if k > 0 else a
        chunks.append(Chunk(id=f"C{k + 1}", sentence_ids=ids[start:b]))
        prev_start = start
    proposed = [sorted(pos[s] for s in c if s in pos) for c in plan]
    if plan and [c.sentence_ids for c in chunks] != [[ids[i] for i in p] for p in proposed]:
        issues.append(f"repaired the proposal of {len(plan)} chunks into {len(chunks)} valid chunks")
    return chunks, issues


def window_chunks(ids: list[str], *, max_sentences: int = 8, overlap: int = 2) -> list[Chunk]:
    """Fixed-size overlapping windows: the fallback when no model plan is available."""
    chunks, _ = repair_chunks([], ids, max_sentences=max_sentences, min_sentences=1, overlap=overlap)
    return chunks


def with_themes(chunks: list[Chunk], plan_themes: list[tuple[list[str], str]]) -> list[Chunk]:
    """Carry the model's theme labels over to the repaired chunks that start where a proposal started."""
    by_first = {ids[0]: theme for ids, theme in plan_themes if ids}
    out = []
    for c in chunks:
        theme = c.theme
        for s in c.sentence_ids:
            if s in by_first:
                theme = by_first[s]
                break
        out.append(c.model_copy(update={"theme": theme}))
    return out
