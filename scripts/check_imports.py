"""The import graph of ``league``: no circle between modules, no import from a lower layer to a higher one.

The layers, lowest first, are listed in :data:`LAYERS` (the same drawing is in
``docs/ARCHITECTURE.md``). A module may import modules of its own layer or lower ones,
and every module of the package must belong to a layer. Imports are read with :mod:`ast`
(every ``import`` / ``from ... import``, at module level or inside functions,
``TYPE_CHECKING`` blocks excepted); a name imported from a package counts as an import
of its submodule when one of that name exists.

The game plug-ins (``league.games``) are imported by no module outside them (they are
loaded by entry point), and circles are looked for with ``TYPE_CHECKING`` imports counted.

Usage: ``python scripts/check_imports.py`` (exit status 1 and a list of violations, else 0).
``tests/test_import_graph.py`` runs the same check (:func:`violations`) with the tests.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "league"

#: Layers, lowest first: module (or package) prefixes under ``league.`` (``league`` alone:
#: the package's ``__init__``, which may lazily expose the top, e.g. ``league.Trainer``).
LAYERS: list[tuple[str, list[str]]] = [
    ("core", ["league._core", "league.batch", "league.replay", "league.typecheck", "league.checkpoint", "league.registry",
              "league.presets"]),
    ("envs", ["league.envs", "league.policy"]),
    ("runtime", ["league.runtime"]),
    ("flow", ["league.flow"]),
    ("sampling", ["league.sampling"]),
    ("learn", ["league.learn"]),
    ("algos", ["league.algos"]),
    ("search", ["league.search"]),
    ("population", ["league.population"]),
    ("games", ["league.games"]),
    ("leagues", ["league.leagues"]),
    ("run", ["league.config", "league.resume", "league.metrics_log", "league.progress", "league.run", "league.trainer"]),
    ("report", ["league.report"]),
    ("cli", ["league.cli", "league"]),
]


def _match(module: str) -> tuple[int, str] | None:
    """(layer index, prefix) of the longest prefix in :data:`LAYERS` matching ``module``."""
    best: tuple[int, str] | None = None
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and (best is None or len(prefix) > len(best[1])):
                best = (index, prefix)
    return best


def layer_of(module: str) -> int:
    """Index in :data:`LAYERS` of the longest prefix matching ``module`` (the top layer if none)."""
    match = _match(module)
    return len(LAYERS) - 1 if match is None else match[0]


def unlayered(edges: dict[str, set[str]]) -> list[str]:
    """Modules that no layer names (only the bare package prefix ``league`` matches them)."""
    out = []
    for module in sorted(edges):
        match = _match(module)
        if match is None or (match[1] == "league" and module != "league"):
            out.append(module)
    return out


def module_name(path: Path) -> str:
    """``league/x/y.py`` -> ``league.x.y`` (a package's ``__init__`` is the package)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports_of(path: Path, modules: set[str], type_checking: bool = False) -> set[str]:
    """The ``league`` modules that the file at ``path`` imports (``type_checking``: those of
    ``TYPE_CHECKING`` blocks too)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    skip: set[int] = set()
    for node in ast.walk(tree):
        if not type_checking and isinstance(node, ast.If) and _is_type_checking(node):
            skip.update(id(n) for child in node.body for n in ast.walk(child))
    own = module_name(path)
    package = own if path.name == "__init__.py" else own.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            submodules = {f"{target}.{alias.name}" for alias in node.names} & modules
            if len(submodules) < len(node.names):  # some name is not a submodule: the module itself is used
                found.add(target)
            found.update(submodules)
    return {m for m in found if m in modules and m != own}


def graph(type_checking: bool = False) -> dict[str, set[str]]:
    """Module -> the league modules it imports (``type_checking``: ``TYPE_CHECKING`` imports included)."""
    files = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    modules = set(files) | {"league._core"}
    return {name: imports_of(path, modules, type_checking) for name, path in files.items()}


#: The package of game plug-ins, which no module outside it imports: the core knows no game
#: (plug-ins reach it through registries, loaded by entry point).
GAMES = "league.games"


def game_imports(edges: dict[str, set[str]]) -> list[str]:
    """Imports of :data:`GAMES` by modules outside it."""
    return [
        f"{module} imports {target}"
        for module, targets in sorted(edges.items())
        if not (module == GAMES or module.startswith(GAMES + "."))
        for target in sorted(targets)
        if target == GAMES or target.startswith(GAMES + ".")
    ]


def upward_imports(edges: dict[str, set[str]]) -> list[str]:
    """Imports from a lower layer to a higher one (a package's ``__init__`` re-exporting its own modules is fine)."""
    out = []
    for module, targets in sorted(edges.items()):
        for target in sorted(targets):
            if target.startswith(module + "."):
                continue
            if layer_of(target) > layer_of(module):
                out.append(f"{module} ({LAYERS[layer_of(module)][0]}) imports {target} ({LAYERS[layer_of(target)][0]})")
    return out


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Circles between modules (Tarjan's strongly connected components of more than one module)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w.startswith(v + "."):  # a package importing its own submodules is not a circle
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def violations(edges: dict[str, set[str]] | None = None, typed_edges: dict[str, set[str]] | None = None) -> list[str]:
    """Every violation of the layering in the import graph (``edges``: :func:`graph`'s by default;
    circles are looked for in ``typed_edges``, which counts ``TYPE_CHECKING`` imports too)."""
    edges = graph() if edges is None else edges
    typed_edges = graph(type_checking=True) if typed_edges is None else typed_edges
    problems = [f"no layer: {module} (add its prefix to LAYERS)" for module in unlayered(edges)]
    problems += [f"upward import: {line}" for line in upward_imports(edges)]
    problems += [f"game import outside the plug-ins: {line}" for line in game_imports(typed_edges)]
    problems += [f"circle: {' <-> '.join(c)}" for c in cycles(typed_edges)]
    return problems


def main() -> int:
    """Print the violations; exit status 1 if any."""
    edges = graph()
    problems = violations(edges)
    for line in problems:
        print(line)
    print(f"check_imports: {len(edges)} modules, {sum(map(len, edges.values()))} imports, {len(problems)} violations")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
