"""Citation grammar, code-name resolution, citation edges on real statute text, the court parser."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from argus.errors import InputError
from argus.paths import data_root
from argus.statutes.citation_eval import score_citation_parser
from argus.statutes.citations import ReferenceParser, Style, parse_court_citations
from argus.statutes.codes import registry_from_sources
from argus.statutes.corpus import subset_sources
from argus.statutes.decisions import load_decisions
from argus.statutes.graph import build_statute_graph

DATA = data_root()
pytestmark = pytest.mark.skipif(
    not (DATA / "de_statutes" / "gii" / "MANIFEST.json").exists(),
    reason=f"statute data not found under {DATA} (set ARGUS_DATA_ROOT to the shared data folder)",
)


@pytest.fixture(scope="module")
def registry():
    return registry_from_sources(subset_sources())


@pytest.fixture(scope="module")
def sg():
    return build_statute_graph(subset_sources(["BGB", "AGG", "SGB 1", "SGB 4", "UWG 2004"]))


def _cites(sg, satz):
    return {sg.citation(t).render() for t in sg.cited(satz)}


# -- code names --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, key",
    [
        ("BGB", "BGB"),
        ("UWG", "UWG 2004"),
        ("SGB V", "SGB 5"),
        ("SGB IX", "SGB 9 2018"),
        ("EGBGB", "BGBEG"),
        ("EGGVG", "GVGEG"),
        ("BauGB", "BBauG"),
        ("WEG", "WoEigG"),
        ("Fünftes Buch Sozialgesetzbuch", "SGB 5"),
        ("des Bürgerlichen Gesetzbuchs", "BGB"),
        ("Gesetz gegen den unlauteren Wettbewerb", "UWG 2004"),
        ("Zivilprozeßordnung", "ZPO"),
    ],
)
def test_code_names_resolve_to_corpus_keys(registry, name, key):
    text = name.split(" ", 1)[1] if name.startswith("des ") else name
    assert registry.resolve(text) == key


def test_repealed_codes_are_unknown(registry):
    for old in ("FGG", "BRAGO", "AGBG", "KostO"):
        assert registry.resolve(old) is None


# -- statute-style references ------------------------------------------------------------------


def test_full_statute_reference_and_relative_lists(registry):
    p = ReferenceParser(registry, Style.STATUTE)
    refs = p.parse("nach § 5 Absatz 1 Satz 2 Nummer 3 Buchstabe a und Absatz 3 des Bürgerlichen Gesetzbuchs")
    assert [(r.path.section, r.path.structure()) for r in refs] == [
        ("5", {"absatz": "1", "satz": "2", "nummer": "3", "buchstabe": "a"}),
        ("5", {"absatz": "3"}),
    ]
    assert {r.designator.code for r in refs} == {"BGB"}
    rng = p.parse("die Absätze 1 bis 3", citing_code="BGB")[0]
    assert rng.path.absatz == "1" and rng.path.range_end == "3" and rng.designator.kind == "implicit"


def test_unknown_laws_are_not_attributed_to_the_citing_code(registry):
    p = ReferenceParser(registry, Style.STATUTE)
    ref = p.parse("§ 5 des Gesetzes vom 12. März 1990 gilt", citing_code="BGB")[0]
    assert ref.designator.kind == "unknown"
    assert p.parse("Artikel 6 der Verordnung (EU) 2016/679", citing_code="BGB")[0].designator.kind == "unknown"
    assert p.parse("die Verordnung (EG) Nr. 864/2007", citing_code="BGB") == []


def test_in_statute_citation_edges(sg):
    s622 = sg.locator.section("BGB", "622")
    # "Von den Absätzen 1 bis 3 abweichende Regelungen …"
    assert _cites(sg, s622 + "/abs4/s1") == {"§ 622 Abs. 1 BGB", "§ 622 Abs. 2 BGB", "§ 622 Abs. 3 BGB"}
    # "… nach Absatz 1 Satz 1 über eine Kündigungsschaltfläche …"
    s312k = sg.locator.section("BGB", "312k")
    assert "§ 312k Abs. 1 Satz 1 BGB" in _cites(sg, s312k + "/abs2/s1")
    # AGG § 3 Abs. 1 Satz 2: "in Bezug auf § 2 Abs. 1 Nr. 1 bis 4"
    s3 = sg.locator.section("AGG", "3")
    assert _cites(sg, s3 + "/abs1/s2") >= {f"§ 2 Abs. 1 Satz 1 Nr. {n} AGG" for n in range(1, 5)}


def test_cross_code_edges_when_the_target_is_loaded(sg):
    s2 = sg.locator.section("AGG", "2")
    # "§ 33c des Ersten Buches Sozialgesetzbuch und § 19a des Vierten Buches Sozialgesetzbuch"
    assert _cites(sg, s2 + "/abs2/s1") == {"§ 33c SGB 1", "§ 19a SGB 4"}
    cross = [d for _, _, k, d in sg.graph.edges(keys=True, data=True) if k.startswith("cites_") and d["cross_code"]]
    assert cross and sg.citation_report.cross_code == len(cross)


def test_unloaded_target_is_counted_not_linked():
    sg = build_statute_graph(subset_sources(["AGG"]))
    s2 = sg.locator.section("AGG", "2")
    assert sg.cited(s2 + "/abs2/s1") == []
    assert sg.citation_report.unknown_law >= 2


# -- court-style citations ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            "§ 823 Abs. 1 S. 2 Nr. 3 lit. a BGB",
            [("BGB", "823", {"absatz": "1", "satz": "2", "nummer": "3", "buchstabe": "a"})],
        ),
        ("§ 823 I 1 BGB", [("BGB", "823", {"absatz": "1", "satz": "1"})]),
        ("Art. 3 Abs. 1 GG", [("GG", "3", {"absatz": "1"})]),
        ("§§ 280, 281 BGB", [("BGB", "280", {}), ("BGB", "281", {})]),
        ("§ 280 Abs. 1 i.V.m. § 241 Abs. 2 BGB", [("BGB", "280", {"absatz": "1"}), ("BGB", "241", {"absatz": "2"})]),
        ("§§ 74 ff. HGB", [("HGB", "74", {})]),
        ("HGB § 74a Abs 1 S 1", [("HGB", "74a", {"absatz": "1", "satz": "1"})]),
        ("§ 13 Abs 3a S 6 SGB V", [("SGB 5", "13", {"absatz": "3a", "satz": "6"})]),
        ("§ 5 f. UWG", [("UWG 2004", "5", {})]),
    ],
)
def test_court_citations(registry, text, expected):
    got = [(c.code, c.number, c.structure) for c in parse_court_citations(text, registry)]
    assert got == expected


def test_repealed_code_citation_is_reported_not_dropped(registry):
    (c,) = parse_court_citations("gemäß § 46 Abs. 2 Satz 1 FGG", registry)
    assert c.code is None and c.book == "fgg" and c.designator == "unknown"
    assert c.provisions() == []


_ABS = st.integers(1, 12).map(str)


@settings(max_examples=60, deadline=None)
@given(
    number=st.integers(1, 999).map(str),
    absatz=st.none() | _ABS,
    satz=st.none() | st.integers(1, 9).map(str),
    nummer=st.none() | st.integers(1, 30).map(str),
    style=st.sampled_from(["long", "short", "bare"]),
    code=st.sampled_from(["BGB", "ZPO", "SGB V", "UWG", "HGB"]),
)
def test_rendered_citations_parse_back(registry, number, absatz, satz, nummer, style, code):
    words = {"long": ("Absatz", "Satz", "Nummer"), "short": ("Abs.", "S.", "Nr."), "bare": ("Abs", "S", "Nr")}[style]
    parts = [f"§ {number}"]
    for word, val in zip(words, (absatz, satz, nummer)):
        if val is not None:
            parts.append(f"{word} {val}")
    text = "Nach " + " ".join(parts) + f" {code} ist die Klage begründet."
    (c,) = parse_court_citations(text, registry)
    assert c.code == registry.resolve(code)
    assert c.number == number
    assert c.structure == {k: v for k, v in (("absatz", absatz), ("satz", satz), ("nummer", nummer)) if v is not None}


def test_court_parser_against_the_annotated_decisions(registry):
    score = score_citation_parser(load_decisions(), registry)
    s = score.summary.set_index("level")
    assert s.loc["span", "gold"] == 336  # statute citations that have a book and a number
    assert s.loc["span", "recall"] >= 0.95
    assert s.loc["book+number", "recall"] >= 0.88
    assert s.loc["book+number+structure", "recall"] >= 0.78
    assert s.loc["book+number", "precision"] >= 0.6  # the gold misses many real citations


def test_unknown_code_name_is_an_input_error():
    with pytest.raises(InputError, match="unknown code 'BGBX'"):
        subset_sources(["BGBX"])
