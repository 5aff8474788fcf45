"""Exploring starts: training episodes that begin from a random opening.

In self-play a policy soon stops playing most openings, and the policy in the other seat
never learns to answer them; a strong opponent who does play them then wins (the default
tic-tac-toe league answered every edge opening with a losing move: docs/STRENGTH.md).
Starting a share of training episodes after a few uniformly random legal moves, which
nobody learns from, keeps every opening in the data (Sutton and Barto's *exploring
starts*). Evaluation never uses it.

* :class:`RandomOpenings` wraps one turn-based :class:`~league.envs.base.MultiAgentEnv`;
* the C++ board games do the same in the core (``BoardBatchedEnv(..., opening_plies=k)``).

Each episode opens with ``k`` moves, ``k`` drawn uniformly from ``0..max_plies``.
"""

from __future__ import annotations

import numpy as np

from league.envs.base import AgentSpec, MultiAgentEnv, TimeStep
from league.policy import masked_uniform_actions

__all__ = ["RandomOpenings"]

#: Tries per reset before an episode starts from the env's own first state: an opening
#: that ends the game or pays a reward is played again from a fresh reset.
_ATTEMPTS = 8


class RandomOpenings(MultiAgentEnv):
    """``env`` whose episodes begin after ``0..max_plies`` uniformly random legal moves.

    The env must be turn-based (one agent acts at a time) with Discrete actions. An
    opening never decides the game: one that ends the episode or pays any reward is
    discarded and redrawn (after a few tries the episode starts from the plain reset).

    Raises:
        ValueError: ``max_plies`` < 0, or an env where several agents act at once.
    """

    def __init__(self, env: MultiAgentEnv, max_plies: int, seed: int | None = None) -> None:
        if isinstance(max_plies, bool) or not isinstance(max_plies, (int, np.integer)) or max_plies < 0:
            raise ValueError(f"opening_plies must be an int >= 0, got {max_plies!r}")
        self.env = env
        self.max_plies = int(max_plies)
        self.possible_agents = list(env.possible_agents)
        self._rng = np.random.default_rng(seed)

    def spec(self, agent: str) -> AgentSpec:
        """The wrapped env's spec."""
        return self.env.spec(agent)

    def reset(self, seed: int | None = None) -> TimeStep:
        """A new episode, opened by up to ``max_plies`` random legal moves."""
        for _ in range(_ATTEMPTS):
            ts = self.env.reset(seed)
            plies = int(self._rng.integers(self.max_plies + 1))
            for _ in range(plies):
                ts = self._random_move(ts)
                if ts.done or any(ts.rewards.values()):
                    break
            else:
                ts.rewards = {}  # nothing accrued: the episode starts here
                return ts
        return self.env.reset(seed)

    def _random_move(self, ts: TimeStep) -> TimeStep:
        if len(ts.obs) != 1:
            raise ValueError(
                f"opening_plies needs a turn-based env (one agent acting at a time); {sorted(ts.obs)} act at once. "
                "Set env.opening_plies=0 for this env"
            )
        agent = next(iter(ts.obs))
        if self.env.spec(agent).continuous:
            raise ValueError("opening_plies needs Discrete actions; set env.opening_plies=0 for this env")
        move = int(masked_uniform_actions(ts.masks[agent][None], self._rng)[0])
        return self.env.step({agent: move})

    def step(self, actions: dict[str, int]) -> TimeStep:
        """The wrapped env's step."""
        return self.env.step(actions)

    def close(self) -> None:
        """Close the wrapped env."""
        self.env.close()
