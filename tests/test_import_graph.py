"""The import graph follows the one layering drawn in docs/ARCHITECTURE.md (scripts/check_imports.py).

Cheap: reads the sources with ``ast``, imports nothing of ``league`` and never Ray.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def check():
    spec = importlib.util.spec_from_file_location("check_imports", ROOT / "scripts" / "check_imports.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("check_imports", module)
    spec.loader.exec_module(module)
    return module


def test_the_package_follows_the_layering(check):
    edges = check.graph()
    assert len(edges) > 50  # the whole package was read
    assert check.violations(edges) == []


def test_layers_are_the_drawn_ones(check):
    names = [name for name, _ in check.LAYERS]
    assert names == ["core", "envs", "runtime", "flow", "sampling", "learn", "algos", "search", "population", "games", "leagues", "run",
                     "report", "cli"]
    drawing = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    for _, prefixes in check.LAYERS:
        for prefix in prefixes:
            if prefix not in ("league", "league._core"):
                assert prefix.removeprefix("league.") in drawing, f"{prefix} is missing from the drawing"


def test_the_check_finds_each_kind_of_violation(check):
    edges = {
        "league.runtime.actors": {"league.flow.stages"},  # runtime below flow
        "league.flow.stages": set(),
        "league.learn.learner": {"league.algos.ppo"},  # learn below algos
        "league.algos.ppo": {"league.algos.sgd"},
        "league.algos.sgd": {"league.algos.ppo"},  # a circle within one layer
        "league.population.coordinator": {"league.leagues.coordinated"},
        "league.leagues.coordinated": set(),
        "league.somewhere_new": set(),  # no layer names it
    }
    found = check.violations(edges, edges)
    assert any("runtime.actors (runtime) imports league.flow.stages (flow)" in v for v in found)
    assert any("learn.learner (learn) imports league.algos.ppo (algos)" in v for v in found)
    assert any("population.coordinator (population) imports league.leagues.coordinated (leagues)" in v for v in found)
    assert "circle: league.algos.ppo <-> league.algos.sgd" in found
    assert "no layer: league.somewhere_new (add its prefix to LAYERS)" in found
    assert len(found) == 5


def test_no_generic_module_imports_a_game(check):
    # The core knows no game: only the plug-ins import league.games, even for typing (the CLI
    # too reaches them through their registries).
    edges = {
        "league.leagues.builder": {"league.games.connect_four"},  # above games, still generic
        "league.algos.ppo": set(),
        "league.games.connect_four": {"league.algos.ppo"},
        "league.cli.eval": {"league.games.connect_four"},  # not even the CLI
    }
    typed = {**edges, "league.run.build": {"league.games.k_in_a_row"}}  # a TYPE_CHECKING import counts too
    found = check.violations(edges, typed)
    assert "game import outside the plug-ins: league.leagues.builder imports league.games.connect_four" in found
    assert "game import outside the plug-ins: league.run.build imports league.games.k_in_a_row" in found
    assert "game import outside the plug-ins: league.cli.eval imports league.games.connect_four" in found
    assert not any(v.startswith("game import outside the plug-ins: league.games") for v in found)


def test_a_circle_through_type_checking_imports_is_found(check):
    edges = {"league.config": {"league.run.env_checks"}, "league.run.env_checks": set()}
    typed = {"league.config": {"league.run.env_checks"}, "league.run.env_checks": {"league.config"}}
    assert check.violations(edges, typed) == ["circle: league.config <-> league.run.env_checks"]


def test_generic_layers_name_no_game():
    # The issue's grep: the generic layers mention no game except in docstrings' examples.
    import re

    pattern = re.compile(r"connect.?four|tictactoe|tic_tac_toe|leduc|kuhn|threat|search_game", re.IGNORECASE)
    for layer in ("algos", "learn", "flow", "sampling"):
        for path in sorted((ROOT / "league" / layer).rglob("*.py")):
            tree = ast.parse(path.read_text(), filename=str(path))
            docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                          if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                          and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                    assert not pattern.search(node.value), f"{path.relative_to(ROOT)}: {node.value!r}"
                if isinstance(node, ast.Name | ast.Attribute | ast.arg):
                    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else node.arg
                    assert not pattern.search(name), f"{path.relative_to(ROOT)}: {name}"


def test_population_is_free_of_ray():
    for path in sorted((ROOT / "league" / "population").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not any(n == "ray" or n.startswith("ray.") for n in names), f"{path.name} imports Ray"
