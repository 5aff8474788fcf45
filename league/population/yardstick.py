"""Strength yardsticks: a policy against scripted players that play well, from both seats.

A win rate against the uniform-random player says little about strength. These measure
what the strength goals name (docs/STRENGTH.md):

* :func:`play_matches`: games of a policy against an opponent on a two-player turn-based
  env, counted per seat (first / second player), each game starting from an optional
  *varied opening*: ``opening_plies`` uniformly random legal moves, the same opening
  played once with the policy in each seat. Against a near-deterministic searcher a
  greedy policy would otherwise replay a handful of games.
* a game's own tactics (connect four's: :mod:`league.games.connect_four.tactics`) live in
  its plug-in.

Games run on the project's env adapter (``make_env``), in lock-step batches: one
``compute_actions`` call per player per step over every game waiting for it. A player that
searches (a :class:`~league.search.PositionPlayer`: ``league-eval``'s ``mcts`` opponent, a
policy with ``search=N``) gets each game's position from its simulator instead
(:meth:`~league.search.Simulator.position`: the env and the moves played since ``reset``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from league.envs import make_env
from league.envs.base import MultiAgentEnv, TimeStep
from league.envs.outcomes import outcome_from_returns
from league.policy import Policy, masked_uniform_actions
from league.search.player import PositionPlayer

__all__ = ["SeatRecord", "GameRecord", "MatchRecord", "play_matches", "random_play_positions"]

#: Draws of an opening before giving up: an opening that ends the game or pays a reward
#: is drawn again (from the same generator, so both seatings still get the same one).
_OPENING_ATTEMPTS = 100


@dataclass
class SeatRecord:
    """Wins, draws and losses of the measured policy in one seat."""

    wins: int = 0
    draws: int = 0
    losses: int = 0

    @property
    def games(self) -> int:
        """Games played in this seat."""
        return self.wins + self.draws + self.losses

    def add(self, outcome: str) -> None:
        """Count one game's ``"win"``, ``"draw"`` or ``"loss"``."""
        name = {"win": "wins", "draw": "draws", "loss": "losses"}[outcome]
        setattr(self, name, getattr(self, name) + 1)


@dataclass(frozen=True)
class GameRecord:
    """One game: its opening's index and moves, the policy's seat and its outcome."""

    opening_index: int
    opening: tuple[int, ...]
    seat: int
    outcome: str  # "win", "draw" or "loss", for the measured policy
    plies: int = 0  # moves in the game, the opening's included


@dataclass
class MatchRecord:
    """A policy's games against one opponent, per seat (index 0: the first player)."""

    seats: list[SeatRecord] = field(default_factory=lambda: [SeatRecord(), SeatRecord()])
    games: list[GameRecord] = field(default_factory=list)  # in the order they were played

    @property
    def total(self) -> SeatRecord:
        """Both seats together."""
        return SeatRecord(*(sum(getattr(s, k) for s in self.seats) for k in ("wins", "draws", "losses")))

    @property
    def score(self) -> float:
        """Share of points, a draw counting half (0.0 without games)."""
        t = self.total
        return (t.wins + 0.5 * t.draws) / t.games if t.games else 0.0

    def add(self, game: GameRecord) -> None:
        """Count one game."""
        self.games.append(game)
        self.seats[game.seat].add(game.outcome)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: totals, score and per-seat counts (not the single games)."""
        t = self.total
        return {
            "games": t.games, "wins": t.wins, "draws": t.draws, "losses": t.losses, "score": round(self.score, 4),
            "seats": [{"wins": s.wins, "draws": s.draws, "losses": s.losses} for s in self.seats],
        }


def _mover(ts: TimeStep, env_name: str) -> str:
    """The one agent to act in ``ts``; ValueError when several act at once."""
    if len(ts.obs) != 1:
        raise ValueError(f"play_matches needs a turn-based env (one agent acting at a time); {env_name!r} asks {sorted(ts.obs)} to act")
    return next(iter(ts.obs))


@dataclass
class _Game:
    env: MultiAgentEnv
    ts: TimeStep
    name: str
    seat_agents: tuple[str, str]  # (first player, second player)
    seat: int  # the measured policy's seat (0: it moves first)
    index: int
    opening: tuple[int, ...]
    returns: dict[str, float] = field(default_factory=dict)
    plies: int = 0  # moves played after the opening
    moves: list[int] = field(default_factory=list)  # every move since reset, the opening's included

    def mover(self) -> str:
        return _mover(self.ts, self.name)

    def apply(self, action: int) -> None:
        self.ts = self.env.step({self.mover(): int(action)})
        self.plies += 1
        self.moves.append(int(action))
        for a, r in self.ts.rewards.items():
            self.returns[a] = self.returns.get(a, 0.0) + float(r)

    def outcome(self) -> str:
        mine, theirs = (self.returns.get(self.seat_agents[s], 0.0) for s in (self.seat, 1 - self.seat))
        return outcome_from_returns(mine, theirs)


def play_matches(
    env_name: str,
    policy: Policy,
    opponent: Policy,
    openings: int,
    opening_plies: int = 0,
    seed: int = 0,
    env_kwargs: Mapping[str, Any] | None = None,
    batch: int = 64,
    explore: bool = False,
    opponent_explore: bool = False,
) -> MatchRecord:
    """Play ``openings`` openings twice each (the policy first, then second) against ``opponent``.

    Seat 0 is the agent that acts first after ``reset``. An opening is ``opening_plies``
    uniformly random legal moves, drawn from a generator seeded by ``(seed, index)``, so
    opening ``index`` is the same in both seatings (and for every policy measured with the
    same ``seed``). An opening that ends the game or pays a reward is drawn again; the
    moves are nobody's: the players take over from the position they leave.

    Args:
        env_name: a two-player turn-based env (``tictactoe``, ``connect_four``...).
        policy: the measured policy; acts greedily unless ``explore``.
        opponent: acts greedily unless ``opponent_explore`` (a scripted player's own
            ``random_ties`` decides how it breaks ties when greedy).
        openings: number of openings; 2 * ``openings`` games in all.
        opening_plies: uniformly random legal moves played before either player acts.
        seed: seeds the openings and the envs' resets.
        env_kwargs: passed to ``make_env``.
        batch: games played at once.

    Raises:
        ValueError: ``openings`` < 1, ``opening_plies`` < 0 or ``batch`` < 1; an env that
            is not two-player turn-based; ``opening_plies`` so long that every opening
            drawn ends the game.
    """
    for name, value, low in (("openings", openings, 1), ("opening_plies", opening_plies, 0), ("batch", batch, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    record = MatchRecord()
    jobs = [(i, seat) for i in range(openings) for seat in (0, 1)]
    for start in range(0, len(jobs), batch):
        for game in _play_batch(env_name, dict(env_kwargs or {}), policy, opponent, jobs[start:start + batch],
                                int(opening_plies), seed, explore, opponent_explore):
            record.add(GameRecord(game.index, game.opening, game.seat, game.outcome(), len(game.opening) + game.plies))
    return record


def _start(env_name: str, env_kwargs: dict[str, Any], index: int, seat: int, opening_plies: int, seed: int) -> _Game:
    """A game of opening ``index`` after its opening, the policy in ``seat``."""
    env = make_env(env_name, **env_kwargs)
    try:
        if len(env.possible_agents) != 2:
            raise ValueError(f"play_matches needs a two-player env; {env_name!r} has agents {env.possible_agents}")
        rng = np.random.default_rng([seed, index])  # the same draws in both seatings
        for _ in range(_OPENING_ATTEMPTS):
            ts = env.reset(seed=seed + index)
            first = _mover(ts, env_name)
            seat_agents = (first, next(a for a in env.possible_agents if a != first))
            moves: list[int] = []
            for _ in range(opening_plies):
                if ts.done or any(ts.rewards.values()):
                    break
                agent = _mover(ts, env_name)
                moves.append(int(masked_uniform_actions(ts.masks[agent][None], rng)[0]))
                ts = env.step({agent: moves[-1]})
            if not ts.done and not any(ts.rewards.values()):
                return _Game(env, ts, env_name, seat_agents, seat, index, tuple(moves), moves=list(moves))
        raise ValueError(f"opening_plies={opening_plies}: {_OPENING_ATTEMPTS} openings drawn on {env_name!r} all ended the game")
    except BaseException:
        env.close()
        raise


def _play_batch(
    env_name: str, env_kwargs: dict[str, Any], policy: Policy, opponent: Policy,
    jobs: list[tuple[int, int]], opening_plies: int, seed: int, explore: bool, opponent_explore: bool,
) -> list[_Game]:
    games: list[_Game] = []
    try:
        for index, seat in jobs:
            games.append(_start(env_name, env_kwargs, index, seat, opening_plies, seed))
        while live := [g for g in games if not g.ts.done]:
            for player, is_policy in ((policy, True), (opponent, False)):
                # Games ended by the policy's move this round drop out before the opponent's.
                turn = [g for g in live if not g.ts.done and (g.mover() == g.seat_agents[g.seat]) == is_policy]
                if not turn:
                    continue
                agents = [g.mover() for g in turn]
                obs = np.stack([g.ts.obs[a] for g, a in zip(turn, agents)])
                masks = np.stack([g.ts.masks[a] for g, a in zip(turn, agents)])
                explores = explore if is_policy else opponent_explore
                if isinstance(player, PositionPlayer):
                    positions = [player.simulator.position(g.env, g.moves) for g in turn]
                    actions = player.act_at(positions, obs, masks, explore=explores)
                else:
                    actions = player.compute_actions(obs, masks, explore=explores)["actions"]
                for g, action in zip(turn, actions):
                    g.apply(int(action))
    finally:
        for g in games:
            g.env.close()
    return games


def random_play_positions(env_name: str, games: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Every position of ``games`` uniformly random games of a turn-based ``env_name``: the
    mover's observations ``float32[N, ...]`` and action masks ``[N, A]``, in play order."""
    rng = np.random.default_rng(seed)
    env = make_env(env_name)
    obs, masks = [], []
    try:
        for _ in range(games):
            ts = env.reset(seed=int(rng.integers(2**31)))
            while not ts.done:
                agent = next(iter(ts.obs))
                obs.append(ts.obs[agent])
                masks.append(ts.masks[agent])
                ts = env.step({agent: int(masked_uniform_actions(ts.masks[agent][None], rng)[0])})
    finally:
        env.close()
    return np.stack(obs).astype(np.float32), np.stack(masks)
