"""League recipes from configuration: the ``league/`` Hydra group turned into roles and players.

A recipe names who learns and how each learning player picks opponents:

* ``selfplay``: one learning policy against itself, its snapshots and fixed members,
  run by :class:`~league.population.selfplay.SelfPlayPool` (no coordinator);
* ``fsp``: uniform fictitious self-play, each main agent against its own snapshots;
* ``pfsp``: prioritised fictitious self-play over every frozen player (its snapshots and
  the scripted members), plus a self-play share;
* ``psro``: opponents drawn from the Nash equilibrium of the meta-game over the frozen
  players (PSRO with a continually trained RL best response), solved over measured
  entries only: exact ones on OpenSpiel games, evaluation games elsewhere;
* ``alphastar``: main agents, main exploiters and league exploiters (AlphaStar's roles).

Every recipe other than ``selfplay`` runs on a
:class:`~league.population.coordinator.LeagueCoordinator`; :func:`build_league`
returns its roles (made by the factories of :mod:`league.population.roles`) and initial
players. Each role's parameters can be overridden per
role name under ``league.roles`` (e.g. ``league.roles.main.pfsp=0.6``); an unknown
parameter is an error naming it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from league.population.players import Player
from league.population.scripted import scripted_player_names
from league.population.roles import (
    LEAGUE_EXPLOITER,
    MAIN,
    MAIN_EXPLOITER,
    Role,
    fictitious_self_play_role,
    league_exploiter_role,
    main_agent_role,
    main_exploiter_role,
    pfsp_role,
    psro_role,
)

__all__ = ["RECIPES", "LeagueRecipe", "build_league", "learning_player_ids"]

RECIPES: tuple[str, ...] = ("selfplay", "fsp", "pfsp", "psro", "alphastar")


_FACTORIES: dict[str, dict[str, Callable[..., Role]]] = {
    "fsp": {MAIN: fictitious_self_play_role},
    "pfsp": {MAIN: pfsp_role},
    "psro": {MAIN: psro_role},
    "alphastar": {MAIN: main_agent_role, MAIN_EXPLOITER: main_exploiter_role, LEAGUE_EXPLOITER: league_exploiter_role},
}


@dataclass(frozen=True)
class LeagueRecipe:
    """What a coordinated league starts with: roles by name and the initial players."""

    roles: dict[str, Role]
    players: list[Player]

    @property
    def learning(self) -> list[str]:
        """Policy ids of the learning players, in order."""
        return [p.policy_id for p in self.players if p.kind == "learning"]

    @property
    def scripted(self) -> list[str]:
        """Policy ids of the scripted players."""
        return [p.policy_id for p in self.players if p.kind == "scripted"]


def learning_player_ids(role: str, count: int) -> list[str]:
    """``role``, ``role_1``, ``role_2``... for ``count`` learning players of one role."""
    return [role if i == 0 else f"{role}_{i}" for i in range(count)]


def _role(recipe: str, name: str, snapshot_every: int, overrides: Mapping[str, Any], utility: str) -> Role:
    factory = _FACTORIES[recipe][name]
    params = dict(overrides)
    accepted = set(inspect.signature(factory).parameters) - {"snapshot_every"}
    unknown = sorted(set(params) - accepted)
    if unknown:
        raise ValueError(f"unknown parameter(s) {[f'league.roles.{name}.{k}' for k in unknown]}; known: {sorted(accepted)}")
    if recipe == "psro":
        params.setdefault("utility", utility)
    try:
        return factory(snapshot_every, **params)
    except (TypeError, ValueError) as err:
        raise ValueError(f"league.roles.{name}: {err}") from None


def build_league(league: Any, utility: str = "win_rate") -> LeagueRecipe:
    """Roles and initial players of ``league`` (a :class:`~league.config.LeagueConfig`).

    ``utility`` is the meta-game the ``psro`` recipe solves (``"return"`` for games
    scored in chips, such as poker). Raises ``ValueError`` naming a bad key.
    """
    recipe = league.recipe
    if recipe not in RECIPES or recipe == "selfplay":
        raise ValueError(f"league.recipe '{recipe}' is not a coordinated recipe; known: {list(RECIPES[1:])}")
    unknown_roles = sorted(set(league.roles) - set(_FACTORIES[recipe]))
    if unknown_roles:
        raise ValueError(f"league.roles has role(s) {unknown_roles} that recipe '{recipe}' lacks; it has {sorted(_FACTORIES[recipe])}")
    bad = sorted(set(league.scripted) - set(scripted_player_names()))
    if bad:
        raise ValueError(f"league.scripted has unknown player(s) {bad}; known: {scripted_player_names()}")
    counts = {MAIN: league.num_main_agents}
    if recipe == "alphastar":
        counts.update({MAIN_EXPLOITER: league.num_main_exploiters, LEAGUE_EXPLOITER: league.num_league_exploiters})
    elif league.num_main_exploiters or league.num_league_exploiters:
        raise ValueError(f"league.num_main_exploiters and league.num_league_exploiters need recipe 'alphastar', not '{recipe}'")
    if league.num_main_agents < 1:
        raise ValueError(f"league.num_main_agents must be >= 1, got {league.num_main_agents}")
    roles = {name: _role(recipe, name, league.snapshot_steps, league.roles.get(name, {}), utility) for name in _FACTORIES[recipe]}
    players = [Player(pid, pid, "scripted", frozen=True) for pid in league.scripted]
    for role, count in counts.items():
        if count < 0:
            raise ValueError(f"league: the number of {role} players must be >= 0, got {count}")
        players += [Player(pid, pid, "learning", role=role) for pid in learning_player_ids(role, count)]
    return LeagueRecipe(roles, players)
