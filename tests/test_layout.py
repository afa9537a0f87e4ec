"""The package's layout holds (docs/layout.md): layers point one way, no module imports itself round (in
``argus/`` and in ``optimizers/``), and no class grows past :data:`MAX_CLASS_LINES` lines.

Every ``import`` of ``argus`` (of ``optimizers``, for its circles) counts, at the top of a module or inside a function, under ``TYPE_CHECKING``
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

#: the other packages whose modules may not import each other round (argus's own rule, without its layers)
ACYCLIC = ("optimizers",)

#: no class in these folders may span more lines than this (split it along what it does, as the campaign's
#: Scheduler was: planning, claims, records)
MAX_CLASS_LINES = 400
CLASS_SIZE_FOLDERS = ("argus", "optimizers", "metrics", "programs")


def _modules(package: Path = PACKAGE) -> dict[str, Path]:
    out = {}
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imports(modules: dict[str, Path], root: str = "argus") -> dict[str, set[str]]:
    """module → the ``root`` modules it imports (a name imported from a package that is a module counts as
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
                found |= {known(a.name) for a in node.names if a.name.split(".")[0] == root}
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[:len(package) - node.level + 1]
                    name = ".".join(base + ([node.module] if node.module else []))
                else:
                    name = node.module or ""
                if name.split(".")[0] != root:
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


def test_no_import_circle_in_the_other_packages():
    """``optimizers/`` too: no module imports itself round, through any chain (a constant two modules share
    lives in the lower one, as ``MEMBER_STAGES`` and ``ROUTING_KEYS`` do in ``optimizers.config``)."""
    for root in ACYCLIC:
        cycles = _cycles(_imports(_modules(ROOT / root), root))
        assert not cycles, f"import circles in {root}/: {cycles}"


def test_the_import_reader_sees_the_other_packages():
    """The circle check on ``optimizers/`` reads its imports (a reader that saw none would pass any circle)."""
    edges = _imports(_modules(ROOT / "optimizers"), "optimizers")
    assert "optimizers.config" in edges["optimizers.deploy"]
    assert "optimizers.frontier" in edges["optimizers.deploy"]  # a package, imported inside a function


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


def _long_classes(folders=CLASS_SIZE_FOLDERS, limit: int = MAX_CLASS_LINES) -> list[str]:
    """``path:line Class (n lines)`` for each class (nested ones too) longer than ``limit`` lines, from its
    ``class`` line (or first decorator) to its last."""
    out = []
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ClassDef):
                    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                    n = node.end_lineno - first + 1
                    if n > limit:
                        out.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({n} lines)")
    return out


def test_no_class_over_the_limit():
    assert not _long_classes(), f"classes over {MAX_CLASS_LINES} lines (split them):\n" + "\n".join(_long_classes())


def test_the_class_size_check_counts_lines():
    assert _long_classes(limit=1)  # every package here has a class of more than one line
