"""``argus statutes`` end to end on small codes: build, export, reload, stats, show, cite, errors."""

from __future__ import annotations

import networkx as nx
import pytest
from typer.testing import CliRunner

from argus.paths import data_root
from argus.statutes.cli import app
from argus.statutes.graph import StatuteGraph

DATA = data_root()
pytestmark = pytest.mark.skipif(
    not (DATA / "de_statutes" / "gii" / "MANIFEST.json").exists(),
    reason=f"statute data not found under {DATA} (set ARGUS_DATA_ROOT to the shared data folder)",
)

runner = CliRunner()


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("graph")
    result = runner.invoke(
        app, ["build", "--codes", "AGG,KSchG", "--out", str(out / "g.json"), "--out", str(out / "g.graphml")]
    )
    assert result.exit_code == 0, result.output
    return out


def test_build_writes_reloadable_json_and_graphml(built):
    sg = StatuteGraph.from_json(built / "g.json")
    assert set(sg.codes) == {"AGG", "KSchG"}
    assert sg.citation(sg.locator.section("AGG", "1")).render() == "§ 1 AGG"
    g = nx.read_graphml(built / "g.graphml")
    assert g.number_of_nodes() == sg.graph.number_of_nodes()
    assert g.number_of_edges() == sg.graph.number_of_edges()
    some_satz = next(n for n, t in g.nodes(data="type") if t == "satz")
    assert g.nodes[some_satz]["text"] == sg.text(some_satz)
    assert not list((built).glob("*.tmp"))  # atomic writes leave no temporaries


def test_stats_from_a_saved_graph(built, tmp_path):
    result = runner.invoke(app, ["stats", "--graph", str(built / "g.json"), "--out-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "cites_" in result.output and "paper" in result.output
    assert (tmp_path / "stats_nodes.md").read_text().startswith("| level")
    assert (tmp_path / "stats_citations.csv").exists()


def test_show_and_cite(built):
    result = runner.invoke(app, ["show", "§ 1 Abs. 2 Satz 1 KSchG", "--graph", str(built / "g.json")])
    assert result.exit_code == 0, result.output
    assert "Sozial ungerechtfertigt ist die Kündigung" in result.output
    result = runner.invoke(
        app, ["cite", "§ 1 AGG i.V.m. § 23 Abs. 1 KSchG und § 5 FGG", "--graph", str(built / "g.json")]
    )
    assert result.exit_code == 0, result.output
    assert "(fgg:" in result.output  # FGG is repealed: reported as not in the graph, not dropped


@pytest.mark.parametrize(
    "args, message",
    [
        (["build", "--codes", "NoSuchCode"], "unknown code 'NoSuchCode'"),
        (["retrieve", "  ", "--codes", "AGG"], "empty query"),
        (["retrieve", "Kündigung", "--codes", "AGG", "--expansion", "sideways"], "unknown expansion"),
        (["stats", "--graph", "/nonexistent/graph.json"], "graph file not found"),
        (["build", "--codes", "AGG", "--out", "graph.txt"], "use a .json or .graphml"),
    ],
)
def test_bad_input_gives_a_clear_message(args, message):
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())
