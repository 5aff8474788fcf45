"""The league a run configuration asks for (``league.recipe`` and its settings)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from league.envs.registry import openspiel_game_of
from league.leagues.base import TrainingLeague
from league.population.exploitability_measures import EXPLOITABILITY_MEASURES
from league.population.payoff import PayoffTable
from league.population.recipes import build_league
from league.population.scripted import scripted_factory
from league.population.selfplay import SelfPlayPool

if TYPE_CHECKING:
    from league.config import RunConfig
    from league.envs.base import AgentSpec
    from league.learn.algorithm import Algorithm
    from league.leagues.exact import ExactMetaGame
    from league.population.exploitability_measures import ExploitabilityMeasure

__all__ = ["learning_policy_ids", "make_league", "exploitability_measure"]

SELFPLAY_MAIN = "main"


def learning_policy_ids(cfg: RunConfig) -> list[str]:
    """Ids of the learning policies of a run: ``policies`` keys, the recipe's learning players, or ``main``."""
    if cfg.policies:
        return list(cfg.policies)
    if cfg.league.recipe == "selfplay":
        return [SELFPLAY_MAIN]
    return build_league(cfg.league).learning


def _fixed_opponents(cfg: RunConfig) -> dict[str, float]:
    """``league.fixed_opponents`` as :func:`~league.config.run_config` resolved it (None, the
    recipe's default, is replaced there)."""
    fixed = cfg.league.fixed_opponents
    if fixed is None:
        raise ValueError("league.fixed_opponents is unresolved: build leagues from a validated config (league.config.run_config)")
    return fixed


def exact_meta_game(env_name: str, env_kwargs: Mapping[str, Any], meta_strategy: str = "nash") -> ExactMetaGame:
    """The exact evaluator of the OpenSpiel game ``env_name`` (with ``env_kwargs``) plays,
    built from an env made exactly as the samplers make theirs, so it scores the same game
    (parameters included) and shows policies the same observations; it mixes players by
    ``meta_strategy`` (:data:`~league.leagues.exact.META_STRATEGIES`)."""
    from league.envs import make_env
    from league.leagues.exact import ExactMetaGame

    env = make_env(env_name, **env_kwargs)
    try:
        return ExactMetaGame.from_env(env, meta_strategy=meta_strategy)
    finally:
        env.close()


def exploitability_measure(env_name: str, env_kwargs: Mapping[str, Any]) -> ExploitabilityMeasure:
    """Exact exploitability of policies of the game ``env_name`` (with ``env_kwargs``) plays:
    OpenSpiel's game tree (:func:`exact_meta_game`), else the measure the env's plug-in
    registered (:data:`~league.population.exploitability_measures.EXPLOITABILITY_MEASURES`),
    built from an env made as the samplers make theirs. ValueError naming the env where
    neither exists."""
    from league.envs import make_env

    if openspiel_game_of(env_name) is not None:
        return exact_meta_game(env_name, env_kwargs)
    if env_name not in EXPLOITABILITY_MEASURES:
        raise ValueError(
            f"no exact exploitability for env {env_name!r}: it needs an OpenSpiel game (kuhn_poker, leduc_poker...) or a "
            "game whose plug-in registers a measure (leduc_holdem, rps; docs/PLUGINS.md)"
        )
    env = make_env(env_name, **env_kwargs)
    try:
        return EXPLOITABILITY_MEASURES.get(env_name, "env.name")(env)
    finally:
        env.close()


def _group_league(cfg: RunConfig, algorithms: Mapping[str, Algorithm], spec: AgentSpec) -> TrainingLeague:
    """Each group of ``env.groups`` its learning policies, snapshots and opponents."""
    from league.envs import make_env
    from league.envs.groups import resolve_groups
    from league.leagues.groups import GroupLeague

    league = cfg.league
    env = make_env(cfg.env.name, **cfg.env.kwargs)
    try:
        groups = resolve_groups(cfg.env.groups, {a: env.spec(a) for a in env.possible_agents}, cfg.env.name)
    finally:
        env.close()
    # Only the random player plays every game; a scripted board player refuses other specs.
    fixed = {pid: (scripted_factory(pid, spec, league.negamax_depth), share) for pid, share in _fixed_opponents(cfg).items()}
    return GroupLeague(
        groups,
        {pid: cfg.policies[pid].group for pid in algorithms},
        algorithms,
        fixed,
        PayoffTable(decay=league.payoff_decay, min_games=league.payoff_min_games),
        snapshot_steps=league.snapshot_steps,
        self_play_prob=league.self_play_prob,
        max_snapshots=league.max_snapshots,
        opponent_sampling=league.opponent_sampling,
    )


def make_league(
    cfg: RunConfig, algorithms: Mapping[str, Algorithm], spec: AgentSpec, agents: Sequence[str], remote: bool
) -> TrainingLeague:
    """The run's :class:`TrainingLeague`: one per side with ``env.groups`` (:class:`GroupLeague`),
    several ``policies`` just play each other (:class:`PolicyPairs`), else the recipe's league."""
    league = cfg.league
    if cfg.env.groups:
        return _group_league(cfg, algorithms, spec)
    if league.recipe == "selfplay" and len(algorithms) != 1:
        from league.leagues.pairs import PolicyPairs

        fixed = {pid: (scripted_factory(pid, spec, league.negamax_depth), share) for pid, share in _fixed_opponents(cfg).items()}
        return PolicyPairs(list(algorithms), PayoffTable(decay=league.payoff_decay, min_games=league.payoff_min_games), fixed)
    game = openspiel_game_of(cfg.env.name)
    measured = game is not None or (league.recipe == "selfplay" and cfg.env.name in EXPLOITABILITY_MEASURES)
    if league.exploitability_interval and not measured:
        raise ValueError(
            f"league.exploitability_interval needs an OpenSpiel env (kuhn_poker, leduc_poker...) or, with league.recipe "
            f"selfplay, a game whose plug-in measures it (rps; docs/PLUGINS.md), not '{cfg.env.name}' with recipe "
            f"'{league.recipe}'; set it to 0"
        )
    if league.recipe == "selfplay":
        main = next(iter(algorithms))
        pool = SelfPlayPool(
            main,
            self_play_prob=league.self_play_prob,
            max_snapshots=league.max_snapshots,
            opponent_sampling=league.opponent_sampling,
            payoff=PayoffTable(decay=league.payoff_decay, min_games=league.payoff_min_games),
            fixed_opponents=_fixed_opponents(cfg),
        )
        from league.leagues.selfplay import SelfPlayLeague

        fixed_players = {pid: scripted_factory(pid, spec, league.negamax_depth) for pid in _fixed_opponents(cfg)}
        exact = exploitability_measure(cfg.env.name, cfg.env.kwargs) if league.exploitability_interval else None
        return SelfPlayLeague(pool, algorithms[main], fixed_players, league.snapshot_steps, exact, league.exploitability_interval)

    if league.meta_game == "exact" and game is None:
        raise ValueError(f"league.meta_game 'exact' needs an OpenSpiel env, not '{cfg.env.name}'")
    if league.meta_strategy != "nash" and game is None:
        raise ValueError(
            f"league.meta_strategy '{league.meta_strategy}' solves the full game and needs an OpenSpiel env "
            f"(kuhn_poker, leduc_poker...), not '{cfg.env.name}'; leave it 'nash'"
        )
    if game is None and league.meta_game_episodes and league.recipe in ("pfsp", "psro") and not cfg.eval.interval:
        # The empirical meta-game is measured by league-scheduled evaluation games, which
        # run on evaluation rounds: without them the solver stays on its uniform fallback.
        warnings.warn(
            f"league.recipe '{league.recipe}' on '{cfg.env.name}' measures its meta-game in evaluation rounds, "
            "but eval.interval is 0: opponents stay uniform over the frozen players. Set eval.interval > 0.",
            stacklevel=2,
        )
    if game is not None and league.meta_strategy != "nash" and league.meta_game == "empirical" and not league.exploitability_interval:
        # E.g. a poker env file's setting: with nothing solving the full game it would change nothing.
        warnings.warn(
            f"league.meta_strategy '{league.meta_strategy}' has no effect here: with league.meta_game 'empirical' and "
            "league.exploitability_interval 0 nothing solves the full game; set league.exploitability_interval > 0",
            stacklevel=2,
        )
    exact = None
    if game is not None and (league.meta_game != "empirical" or league.exploitability_interval):
        # With an empirical meta-game: for exploitability only.
        exact = exact_meta_game(cfg.env.name, cfg.env.kwargs, league.meta_strategy)
    # Poker is scored in chips: its meta-game is expected return, not win rate.
    recipe = build_league(league, utility="return" if game is not None else "win_rate")
    from league.leagues.coordinated import CoordinatedLeague

    scripted = {pid: scripted_factory(pid, spec, league.negamax_depth) for pid in recipe.scripted}
    return CoordinatedLeague(
        recipe,
        agents,
        algorithms,
        scripted,
        payoff=PayoffTable(decay=league.payoff_decay, min_games=league.payoff_min_games),
        remote=remote,
        matchup_batch=league.matchup_batch,
        eval_pairs=league.eval_pairs,
        eval_episodes_per_pair=league.eval_episodes_per_pair,
        meta_game_episodes=league.meta_game_episodes,
        exact=exact,
        exploitability_interval=league.exploitability_interval,
        exact_payoffs=league.meta_game != "empirical",
        seed=cfg.seed,
    )
