"""The package's layout holds (docs/layout.md): layers point one way, and no module imports itself round.

Every ``import`` of ``argus`` counts, at the top of a module or inside a function, under ``TYPE_CHECKING``
or not: the imports are read with ``ast`` from the source, nothing is imported.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "argus"

#: The layers, bottom first: a unit (a subpackage, or a module at argus's top level) may import the units of
#: the layers below its own and itself, never a unit of its own layer or of one above.
LAYERS: list[tuple[str, ...]] = [
    ("argus.errors", "argus.paths", "argus.io", "argus.terminal", "argus.config"),  # the foundation: one unit
    ("argus.text", "argus.models"),
    ("argus.ingest", "argus.graph", "argus.statutes"),
    ("argus.gate",),
    ("argus.designs",),
    ("argus.pipeline", "argus.output"),
    ("argus.experiments", "argus.training"),
    ("argus.runs",),
    ("argus.cli",),
    ("argus",),  # the package's face
]
FOUNDATION = LAYERS[0]

#: Imports known to break the rules, each with why it still stands (none now: head training, which runs the
#: whole pipeline, moved above it into ``argus.training``). Nothing may be added without the same.
KNOWN: dict[tuple[str, str], str] = {}

MAX_TOP_LEVEL_MODULES = 8


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imports(modules: dict[str, Path]) -> dict[str, set[str]]:
    """module → the argus modules it imports (a name imported from a package that is a module counts as
    that module)."""

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = {}
    for mod, path in modules.items():
        package = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {known(a.name) for a in node.names if a.name.split(".")[0] == "argus"}
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[:len(package) - node.level + 1]
                    name = ".".join(base + ([node.module] if node.module else []))
                else:
                    name = node.module or ""
                if name.split(".")[0] != "argus":
                    continue
                for a in node.names:
                    full = f"{name}.{a.name}"
                    found.add(full if full in modules else known(name))
        edges[mod] = {m for m in found if m and m != mod}
    return edges


def _unit(mod: str) -> str:
    for layer in LAYERS:
        for unit in layer:
            if unit != "argus" and (mod == unit or mod.startswith(unit + ".")):
                return FOUNDATION[0] if unit in FOUNDATION else unit
    return "argus"


def _rank(unit: str) -> int:
    for i, layer in enumerate(LAYERS):
        if unit in layer:
            return i
    raise AssertionError(f"{unit} is in no layer: add it to LAYERS in tests/test_layout.py and to docs/layout.md")


def test_every_module_has_a_layer():
    top = {m for m in _modules() if m.count(".") == 1}
    for mod in top:
        _rank(_unit(mod))


def test_no_import_from_a_lower_layer_to_a_higher_one():
    bad = []
    for mod, targets in _imports(_modules()).items():
        src = _unit(mod)
        for t in sorted(targets):
            dst = _unit(t)
            if dst != src and _rank(dst) >= _rank(src) and (mod, t) not in KNOWN:
                bad.append(f"{mod} ({src}, layer {_rank(src)}) imports {t} ({dst}, layer {_rank(dst)})")
    assert not bad, "imports against the layers (docs/layout.md):\n" + "\n".join(bad)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def test_no_import_circle():
    edges = _imports(_modules())
    graph = {m: {t for t in ts if (m, t) not in KNOWN} for m, ts in edges.items()}
    assert _cycles(graph) == []


def test_the_circle_finder_finds_one():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_few_modules_at_the_top_level():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top


def test_every_subpackage_says_what_it_holds_and_may_import():
    for init in PACKAGE.glob("*/__init__.py"):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        assert "May import" in doc or "may import" in doc, f"{init.relative_to(ROOT)}: say what it may import"


def test_old_module_names_still_import():
    """Kept for one release (docs/layout.md): the old names give the module at its new place."""
    import importlib

    import argus

    for old, new in argus.MOVED.items():
        assert importlib.import_module(old) is importlib.import_module(new), old
