"""Who plays whom: per-episode policy assignment for samplers.

A :class:`MatchupSource` is asked once per episode (never per step) for a
:class:`Matchup`: which policy controls each agent, and which seats learn from the
episode. Sources are small picklable objects; the driver (or the league) replaces a
sampler's source whenever the opponent distribution changes.
"""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "Matchup", "MatchupSource", "FixedMatchups", "FunctionMatchups", "OpponentSampling", "UniformMatchups", "PoolMatchups",
    "MatchupBatch", "BlockedMatchups",
]


@dataclass(frozen=True)
class Matchup:
    """Policy per agent for one episode; ``learning_agents`` None means every seat may learn."""

    policies: Mapping[str, str]
    learning_agents: frozenset[str] | None = None

    def learns(self, agent: str) -> bool:
        """Whether samples of ``agent`` in this episode may reach a learner."""
        return self.learning_agents is None or agent in self.learning_agents


class MatchupSource(ABC):
    """Chooses a :class:`Matchup` per episode."""

    @abstractmethod
    def next_matchup(self, agents: Sequence[str], episode_index: int, rng: np.random.Generator) -> Matchup:
        """The matchup for the next episode of an env whose agents are ``agents``."""


class FixedMatchups(MatchupSource):
    """The same agent -> policy mapping every episode."""

    def __init__(self, policies: Mapping[str, str]) -> None:
        self.policies = dict(policies)

    def next_matchup(self, agents: Sequence[str], episode_index: int, rng: np.random.Generator) -> Matchup:
        """``policies`` for every episode (all agents must be mapped)."""
        missing = [a for a in agents if a not in self.policies]
        if missing:
            raise ValueError(f"FixedMatchups has no policy for agent(s) {missing}")
        return Matchup(self.policies)


class FunctionMatchups(MatchupSource):
    """RLlib-style mapping: a callable ``(agent_id, episode_index) -> policy_id``, called per episode."""

    def __init__(self, fn: Callable[[str, int], str]) -> None:
        self.fn = fn

    def next_matchup(self, agents: Sequence[str], episode_index: int, rng: np.random.Generator) -> Matchup:
        """Calls ``fn`` once per agent at the start of the episode."""
        return Matchup({a: self.fn(a, episode_index) for a in agents})


class OpponentSampling(MatchupSource):
    """Self-play: the learning policy takes a random seat; every other seat gets an opponent
    drawn from ``opponents`` (policy id -> probability). Only the learner's seat learns,
    except when it plays itself, where both seats do."""

    def __init__(self, learner: str, opponents: Mapping[str, float]) -> None:
        if not opponents:
            raise ValueError("OpponentSampling needs at least one opponent")
        probs = np.asarray(list(opponents.values()), dtype=np.float64)
        if (probs < 0).any() or not np.isfinite(probs).all() or probs.sum() <= 0:
            raise ValueError(f"opponent probabilities must be finite, >= 0 and not all 0: {dict(opponents)}")
        self.learner = learner
        self.opponent_ids = list(opponents)
        self.probs = probs / probs.sum()

    def next_matchup(self, agents: Sequence[str], episode_index: int, rng: np.random.Generator) -> Matchup:
        """Random seat for the learner, sampled opponents elsewhere."""
        seat = agents[int(rng.integers(len(agents)))]
        policies = {}
        for a in agents:
            policies[a] = self.learner if a == seat else self.opponent_ids[int(rng.choice(len(self.probs), p=self.probs))]
        learning = frozenset(a for a, p in policies.items() if p == self.learner)
        return Matchup(policies, learning)


class UniformMatchups(MatchupSource):
    """Every seat draws its policy uniformly from ``policy_ids`` each episode; all seats learn.

    The simplest way to let several learning policies (possibly of different algorithms)
    play each other and themselves.
    """

    def __init__(self, policy_ids: Sequence[str]) -> None:
        if not policy_ids:
            raise ValueError("UniformMatchups needs at least one policy id")
        self.policy_ids = list(policy_ids)

    def next_matchup(self, agents: Sequence[str], episode_index: int, rng: np.random.Generator) -> Matchup:
        """Independent uniform draws per seat."""
        picks = rng.integers(len(self.policy_ids), size=len(agents))
        return Matchup({a: self.policy_ids[int(k)] for a, k in zip(agents, picks)})


class PoolMatchups(MatchupSource):
    """Learning policies against each other and against fixed members.

    With probability ``sum(fixed.values())`` an episode seats one learning policy (drawn
    uniformly, its seat at random, the only seat that learns) against fixed members drawn
    by share; otherwise every seat draws a learning policy uniformly and all seats learn
    (:class:`UniformMatchups`).
    """

    def __init__(self, learning: Sequence[str], fixed: Mapping[str, float]) -> None:
        if not learning:
            raise ValueError("PoolMatchups needs at least one learning policy id")
        shares = np.asarray(list(fixed.values()), dtype=np.float64)
        if (shares < 0).any() or not np.isfinite(shares).all() or shares.sum() > 1.0 + 1e-9:
            raise ValueError(f"fixed member shares must be finite, >= 0 and sum to <= 1: {dict(fixed)}")
        self.learning = list(learning)
        self.fixed_share = float(shares.sum())
        self._among_learning = UniformMatchups(self.learning)
        # A game against fixed members is a self-play opponent draw of one learning policy.
        self._against_fixed = [OpponentSampling(pid, fixed) for pid in self.learning] if self.fixed_share > 0 else []

    def next_matchup(self, agents: Sequence[str], episode_index: int, rng: np.random.Generator) -> Matchup:
        """A game against fixed members with their total share, else learning policies only."""
        if not self._against_fixed or rng.random() >= self.fixed_share:
            return self._among_learning.next_matchup(agents, episode_index, rng)
        learner = self._against_fixed[int(rng.integers(len(self._against_fixed)))]
        return learner.next_matchup(agents, episode_index, rng)


class MatchupBatch(MatchupSource):
    """A :class:`MatchupSource` that hands out precomputed matchups in order.

    When the batch runs out it asks ``refill(refill_size)`` for a new one (a league
    coordinator's ``next_matchups``, or
    :func:`~league.leagues.remote_coordinator.remote_refill` of a coordinator actor);
    without ``refill``, or when a refill fails (counted in :attr:`refill_failures`), it
    starts over from the first matchup and counts the wrap in :attr:`wraps`.
    """

    def __init__(
        self,
        matchups: Sequence[Matchup],
        refill: Callable[[int], Sequence[Matchup]] | None = None,
        refill_size: int | None = None,
    ) -> None:
        self._matchups = list(matchups)
        if not self._matchups and refill is None:
            raise ValueError("MatchupBatch needs matchups or a refill callable")
        if not all(isinstance(m, Matchup) for m in self._matchups):
            raise TypeError("MatchupBatch takes Matchup objects")
        self.refill = refill
        self.refill_size = int(refill_size or max(len(self._matchups), 1))
        self._position = 0
        self.wraps = 0
        self.refill_failures = 0

    def _refill(self, refill: Callable[[int], Sequence[Matchup]]) -> bool:
        """Fetch a new batch; on failure (e.g. the coordinator actor died) keep the old one.

        Sampling must not stop because the league is briefly away: the driver restores
        the coordinator and sends a fresh source; meanwhile the last batch is replayed.
        """
        try:
            matchups = list(refill(self.refill_size))
        except Exception as err:  # noqa: BLE001 - any failure of the remote call
            self.refill_failures += 1
            if self.refill_failures == 1:
                warnings.warn(f"matchup refill failed, replaying the last batch: {err!r}", stacklevel=3)
            return False
        if not matchups:
            raise RuntimeError("MatchupBatch refill returned no matchups")
        self._matchups = matchups
        return True

    def next_matchup(self, agents: Sequence[str], episode_index: int, rng: np.random.Generator) -> Matchup:
        """The next matchup of the batch (see the class docstring when it runs out)."""
        if self._position >= len(self._matchups):
            if self.refill is None or not self._refill(self.refill):
                if not self._matchups:
                    raise RuntimeError("MatchupBatch has no matchups: its first refill failed")
                self.wraps += 1
            self._position = 0
        matchup = self._matchups[self._position]
        self._position += 1
        if set(matchup.policies) != set(agents):
            raise ValueError(f"matchup seats {sorted(matchup.policies)} do not match the env's agents {sorted(agents)}")
        return matchup


class BlockedMatchups(MatchupSource):
    """``source``'s matchups drawn a few at a time: every ``block`` consecutive episodes play
    only the ``draws`` matchups drawn from ``source`` for that block, each episode one of
    them uniformly at random.

    Each episode's matchup is still distributed exactly as ``source``'s (one of ``draws``
    independent draws, picked uniformly, is a draw); only episodes of one block are
    correlated. What it buys is a small number of policies in play at once: a sampler
    runs one forward pass per policy in play per step, so with a pool of N snapshots it
    makes about ``2 * draws`` passes per step instead of N (episodes of the previous block
    are still running). Draws are kept per agent list (envs whose agents vary).
    """

    def __init__(self, source: MatchupSource, draws: int, block: int) -> None:
        if draws < 1 or block < 1:
            raise ValueError(f"BlockedMatchups needs draws >= 1 and block >= 1, got {draws} and {block}")
        self.source, self.draws, self.block = source, int(draws), int(block)
        self._drawn: dict[tuple[str, ...], tuple[list[Matchup], int]] = {}  # agents -> (draws, episodes left)

    def next_matchup(self, agents: Sequence[str], episode_index: int, rng: np.random.Generator) -> Matchup:
        """One of this block's draws, uniformly; a new block's draws when the block is played."""
        key = tuple(agents)
        drawn, left = self._drawn.get(key, ([], 0))
        if left == 0:
            drawn, left = [self.source.next_matchup(agents, episode_index, rng) for _ in range(self.draws)], self.block
        self._drawn[key] = (drawn, left - 1)
        return drawn[int(rng.integers(len(drawn)))]
