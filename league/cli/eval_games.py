"""``league-eval``'s games: who plays, per-seat outcomes, varied openings and tactics.

:func:`sampler_outcomes` plays every pair on a sampler's evaluation runner (seats drawn
at random per episode); :func:`match_outcomes` plays them with
:func:`~league.population.yardstick.play_matches` (every opening once from each seat);
:func:`tactics` scores the players on the tactics tests game plug-ins register
(:mod:`league.population.tactics`; connect four's: immediate wins and blocks). Outcomes are lists of
``(seat, outcome)`` in the order the games were played, seat 0 being the agent that acts
first after ``reset`` (:func:`describe_env`), and the policy's return in the game where the
sampler's runner played it (None from :func:`match_outcomes`: its board games pay the outcome).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from league.envs.base import AgentSpec
    from league.policy import Policy, PolicyFactory
    from league.population.tactics import TacticsTest

__all__ = ["Outcomes", "describe_env", "sampler_outcomes", "match_outcomes", "tactics"]

#: ``(policy, opponent)`` -> the policy's ``(seat, "win" | "draw" | "loss", return or None)`` per game.
Outcomes = dict[tuple[str, str], list[tuple[int, str, float | None]]]


def describe_env(env_name: str, env_kwargs: Mapping[str, Any], seed: int) -> tuple[AgentSpec, list[str], bool]:
    """The spec of the env's first agent, its agents by seat (the first to act after
    ``reset`` first, then the rest in ``possible_agents`` order), and whether it is a
    two-player turn-based game with Discrete actions."""
    from league.envs import make_env

    env = make_env(env_name, **env_kwargs)
    try:
        spec = env.spec(env.possible_agents[0])
        ts = env.reset(seed=seed)
        order = [*ts.obs, *(a for a in env.possible_agents if a not in ts.obs)]
        turn_based = len(env.possible_agents) == 2 and len(ts.obs) == 1 and not spec.continuous and spec.action_nvec is None
    finally:
        env.close()
    return spec, order, turn_based


def _policy(factory: PolicyFactory, weights: Mapping[str, Any] | None, seed: int) -> Policy:
    policy = factory.make_policy(seed=seed, learns=False)
    if weights is not None:
        policy.set_weights(dict(weights))
    return policy


def sampler_outcomes(
    env_cfg: Mapping[str, Any], factories: Mapping[str, PolicyFactory], weights: Mapping[str, Mapping[str, Any]],
    players: Sequence[str], opponents: Sequence[str], order: Sequence[str],
    episodes: int, explore: bool, seed: int, num_envs: int,
) -> Outcomes:
    """``episodes`` games per pair on a sampler's evaluation runner, seats at random."""
    from league.sampling import OpponentSampling, Sampler

    sampler = Sampler(
        env_cfg["name"],
        env_cfg.get("kwargs") or {},
        policies=dict(factories),
        matchups=OpponentSampling(players[0], {opponents[0]: 1.0}),
        num_envs=num_envs,
        fragment_length=1,
        seed=seed,
        frozen=tuple(factories),
    )
    sampler.set_weights(weights)
    seat = {agent: i for i, agent in enumerate(order)}
    games: Outcomes = {}
    for pid in players:
        for opp in opponents:
            stats = sampler.evaluate(episodes, OpponentSampling(pid, {opp: 1.0}), explore=explore)
            games[(pid, opp)] = [
                (seat[a], ep["outcome"][a], float(ep["returns"][a])) for ep in stats for a, p in ep["policies"].items() if p == pid
            ]
    return games


def match_outcomes(
    env_cfg: Mapping[str, Any], factories: Mapping[str, PolicyFactory], weights: Mapping[str, Mapping[str, Any]],
    players: Sequence[str], opponents: Sequence[str],
    episodes: int, opening_plies: int, explore: bool, seed: int, num_envs: int,
) -> Outcomes:
    """``episodes // 2`` openings per pair, each played once from each seat; every pair
    meets the same openings (they depend on ``seed`` only)."""
    from league.population.yardstick import play_matches

    policies = {pid: _policy(f, weights.get(pid), seed + k) for k, (pid, f) in enumerate(factories.items())}
    games: Outcomes = {}
    for pid in players:
        for opp in opponents:
            record = play_matches(
                env_cfg["name"], policies[pid], policies[opp], episodes // 2, opening_plies, seed,
                env_cfg.get("kwargs") or {}, batch=num_envs, explore=explore, opponent_explore=explore,
            )
            games[(pid, opp)] = [(g.seat, g.outcome, None) for g in record.games]
    return games


def tactics(
    tests: Mapping[str, TacticsTest], factories: Mapping[str, PolicyFactory], weights: Mapping[str, Mapping[str, Any]],
    players: Sequence[str], seed: int,
) -> dict[str, dict[str, dict[str, Any]]]:
    """Each tactics test's figures for each player (greedy, on the seed's positions): test -> player -> figures."""
    return {name: {pid: test.score(_policy(factories[pid], weights.get(pid), seed), seed) for pid in players} for name, test in tests.items()}
