"""``league-eval``'s ``meta_strategy`` player: the mixture a league with an exact meta-game plays.

A PSRO-style league's answer is not one of its members but its meta-strategy: a mixture
of the frozen players (``league.meta_strategy``: the Nash mixture of their meta-game, or the
least exploitable one), which is what its ``meta_strategy`` exploitability in the logs
measures. :func:`meta_strategy_player` rebuilds the league of a checkpoint in this process
(no Ray), restores its state, solves the mixture exactly as the run did, and returns it as
one behaviour strategy played from the env's observations
(:func:`~league.population.table_player.table_player`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from league.checkpoint import Checkpoint
    from league.learn.algorithm import Algorithm
    from league.policy import PolicyFactory

__all__ = ["META_STRATEGY", "meta_strategy_player"]

#: The player name ``league-eval`` gives the league's meta-strategy.
META_STRATEGY = "meta_strategy"


def meta_strategy_player(ckpt: Checkpoint, algorithms: Mapping[str, Algorithm]) -> tuple[PolicyFactory, dict[str, float]]:
    """The checkpoint's league meta-strategy as a factory of players, and its weight per frozen player.

    ``algorithms``: the algorithm of each learning policy of the checkpoint (its snapshots
    are built by them).

    Raises:
        ValueError: the run's league solves no meta-strategy (not an OpenSpiel env, a
            self-play league, or no exact meta-game), or holds no frozen player yet; the
            message says what would.
    """
    from league.config import parse_run_config
    from league.envs import make_env
    from league.leagues.builder import make_league
    from league.leagues.coordinated import CoordinatedLeague
    from league.population.table_player import table_player
    from league.resume import restore_league

    cfg = parse_run_config(ckpt.config)
    env = make_env(cfg.env.name, **cfg.env.kwargs)
    try:
        spec, agents = env.spec(env.possible_agents[0]), list(env.possible_agents)
    finally:
        env.close()
    league = make_league(cfg, algorithms, spec, agents, remote=False)
    exact = league.exact if isinstance(league, CoordinatedLeague) else None
    if not isinstance(league, CoordinatedLeague) or exact is None:
        league.close()
        raise ValueError(
            f"{META_STRATEGY} is the mixture a league solves over its frozen players (league.recipe psro, pfsp, alphastar... "
            f"with an exact meta-game: an OpenSpiel env such as kuhn_poker or leduc_poker, and league.meta_game exact or "
            f"league.exploitability_interval > 0); this run is env {cfg.env.name!r}, league.recipe {cfg.league.recipe!r}"
        )
    try:
        restore_league(ckpt, league)
        frozen = league.frozen_policies()
        if not frozen:
            raise ValueError(f"the checkpoint's league holds no frozen player yet: {META_STRATEGY} mixes them (train longer)")
        weights, table = exact.meta_strategy_policy(frozen, league.payoff)
    finally:
        league.close()
    return table_player(exact.game, table, exact.observation), weights
