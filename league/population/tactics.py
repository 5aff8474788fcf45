"""Tactics tests: positions of one game on which a policy is scored move by move.

Games played against a yardstick say how strong a policy is; a tactics test says which
single moves it gets right (connect four's: wins taken at once, single threats blocked). A
game plug-in registers its test in :data:`TACTICS` under a name, and ``league-eval
tactics=true`` runs every registered test that fits the checkpoint's agents, so a user's
game reaches it the same way (:mod:`league.registry`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from league.envs.base import AgentSpec
from league.policy import Policy
from league.registry import Registry

__all__ = ["TACTICS", "TacticsTest", "tactics_for"]


@dataclass(frozen=True)
class TacticsTest:
    """One game's tactics test.

    Attributes:
        title: what the test is, as a table's title (``"Connect-four tactics (greedy)"``).
        fits: whether the test can score an agent of this spec (its board and moves).
        score: ``(policy, seed) -> figures``: the policy scored on the seed's positions,
            JSON-ready (``league-eval``'s ``tactics`` entry).
        cells: ``figures -> {column: text}``: how a row of figures is printed.
    """

    title: str
    fits: Callable[[AgentSpec], bool]
    score: Callable[[Policy, int], dict[str, Any]]
    cells: Callable[[Mapping[str, Any]], dict[str, str]]


#: Tactics tests by name; game plug-ins register theirs at import.
TACTICS: Registry[TacticsTest] = Registry("tactics test")


def tactics_for(spec: AgentSpec, env_name: str) -> dict[str, TacticsTest]:
    """Every registered tactics test that fits agents of ``spec``, by name.

    Raises:
        ValueError: none fits; names the env and the tests there are.
    """
    found = {name: test for name in TACTICS.names() if (test := TACTICS.get(name, "tactics")).fits(spec)}
    if not found:
        raise ValueError(
            f"tactics=true: no tactics test fits env {env_name!r} (registered: {', '.join(TACTICS.names()) or 'none'}); "
            "a game plug-in registers its own in league.population.tactics.TACTICS (docs/PLUGINS.md)"
        )
    return found
