"""Potential-based reward shaping for any env (Ng, Harada & Russell, 1999).

A game whose only reward comes at the end (chess: a win, a loss or a draw after a hundred
moves or more) gives a learner next to nothing to go on in a short run. Shaping by a
potential ``phi`` of the observation adds, to each agent's reward for a transition from its
observation ``o`` to its next one ``o'``, ``gamma * phi(o') - phi(o)`` (``phi`` of the end
of an episode is 0): an agent is paid as soon as its position improves by the measure, and
what the rewards add up to over an episode is unchanged but for ``-phi`` of its first
observation (with ``gamma`` 1, the default): so win rates read from returns, and the
policies that are optimal, stay what they were.

Asked for with the reserved env kwarg ``shaping`` (``+env.kwargs.shaping={potential:
chess_material, scale: 0.5}``), so samplers, evaluation and config checks all build the
same env; the potential is named, registered by a game plug-in (or a user's module) with
:func:`register_potential`. The core knows no potential of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from league.envs.base import AgentSpec, MultiAgentEnv, TimeStep
from league.registry import Registry

__all__ = ["POTENTIALS", "Potential", "QUANTUM", "SHAPING_KEYS", "ShapedRewards", "check_shaping", "register_potential"]

#: A potential: an agent's observation (as the env adapter yields it) -> a float.
Potential = Callable[[np.ndarray], float]

#: Every potential and shaped term is a whole multiple of this (2^-10): sums of them are then
#: exact in float32 (below 2^14), so an episode's shaped return is its own to the last bit and a
#: drawn game stays a draw; unrounded, a chess draw summed to +-1e-8 in float32 and evaluation,
#: which gives the win to the strictly highest return, scored 19 of 20 games decisive.
QUANTUM = 2.0**-10

#: Potentials by name (a game plug-in's seam: ``league.games.chess`` registers ``chess_material``).
POTENTIALS: Registry[Potential] = Registry("reward potential")

#: Keys of ``shaping`` and what they do.
SHAPING_KEYS = {
    "potential": "str: a registered potential's name (register_potential)",
    "scale": "float, default 1: the potential is multiplied by this",
    "gamma": "float in [0, 1], default 1: gamma * phi(next) - phi(now); 1 keeps an episode's return but for -phi(first)",
}


def register_potential(name: str, potential: Potential) -> Potential:
    """Make ``potential`` available as ``env.kwargs.shaping.potential=<name>``; returns it."""
    return POTENTIALS.register(name, potential)


def check_shaping(options: Any) -> dict[str, Any]:
    """``shaping`` validated: known keys, a registered potential, numbers where numbers go
    (ValueError naming the key and the value otherwise)."""
    if not isinstance(options, Mapping):
        raise ValueError(f"env.kwargs.shaping must be a mapping of {list(SHAPING_KEYS)}, got {options!r}")
    unknown = sorted(set(options) - set(SHAPING_KEYS))
    if unknown:
        raise ValueError(f"env.kwargs.shaping has unknown key(s) {unknown}; known: " + "; ".join(f"{k} ({v})" for k, v in SHAPING_KEYS.items()))
    if "potential" not in options:
        raise ValueError(f"env.kwargs.shaping needs a potential (known: {POTENTIALS.names()})")
    POTENTIALS.get(str(options["potential"]), "env.kwargs.shaping.potential")
    for key, low, high in (("scale", -np.inf, np.inf), ("gamma", 0.0, 1.0)):
        value = options.get(key, 1.0)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
            raise ValueError(f"env.kwargs.shaping.{key} must be a number{'' if key == 'scale' else ' in [0, 1]'}, got {value!r}")
    return dict(options)


class ShapedRewards(MultiAgentEnv):
    """``env`` with ``gamma * phi(o') - phi(o)`` added to each agent's reward for the transition
    between two of its observations (``phi`` = ``scale`` x the potential; 0 at an episode's
    end, the final observation's for a truncated agent, which is bootstrapped from it)."""

    def __init__(self, env: MultiAgentEnv, potential: Potential, scale: float = 1.0, gamma: float = 1.0) -> None:
        self.env, self.potential, self.scale, self.gamma = env, potential, float(scale), float(gamma)
        self.possible_agents = env.possible_agents
        self._last: dict[str, float] = {}  # each agent's phi at its latest observation

    def spec(self, agent: str) -> AgentSpec:
        """The wrapped env's spec: shaping changes no space."""
        return self.env.spec(agent)

    def episode_limit(self) -> int | None:
        """The wrapped env's episode cap."""
        return self.env.episode_limit()

    def _phi(self, obs: np.ndarray) -> float:
        return _on_grid(self.scale * float(self.potential(obs)))

    def _term(self, phi: float, agent: str) -> float:
        return _on_grid(self.gamma * phi - self._last[agent])

    def reset(self, seed: int | None = None) -> TimeStep:
        """Reset the wrapped env; the first observations' potentials are remembered."""
        ts = self.env.reset(seed=seed)
        self._last = {agent: self._phi(obs) for agent, obs in ts.obs.items()}
        return ts

    def step(self, actions: dict[str, Any]) -> TimeStep:
        """Step the wrapped env and add each shaped term to the reward it credits."""
        ts = self.env.step(actions)
        ended = [(agent, 0.0) for agent in ts.terminated]
        ended += [(agent, self._phi(ts.final_obs[agent]) if agent in ts.final_obs else 0.0) for agent in ts.truncated]
        for agent, phi in ended:
            if agent in self._last:
                ts.rewards[agent] = ts.rewards.get(agent, 0.0) + self._term(phi, agent)
                del self._last[agent]
        for agent, obs in ts.obs.items():
            phi = self._phi(obs)
            if agent in self._last:  # an agent first seen now (a turn-based game's second player) starts here
                ts.rewards[agent] = ts.rewards.get(agent, 0.0) + self._term(phi, agent)
            self._last[agent] = phi
        return ts

    def close(self) -> None:
        """Close the wrapped env."""
        self.env.close()

    def __getattr__(self, name: str) -> Any:
        # What the wrapped env offers beyond the contract (state cloning, rendering) stays reachable.
        if name == "env":
            raise AttributeError(name)
        return getattr(self.env, name)


def _on_grid(value: float) -> float:
    """``value`` rounded to a whole multiple of :data:`QUANTUM`."""
    return round(value / QUANTUM) * QUANTUM


def wrap_shaping(env: MultiAgentEnv, options: Mapping[str, Any]) -> ShapedRewards:
    """``env`` shaped as ``options`` (the ``shaping`` kwarg, checked) ask."""
    options = check_shaping(options)
    potential = POTENTIALS.get(str(options["potential"]), "env.kwargs.shaping.potential")
    return ShapedRewards(env, potential, options.get("scale", 1.0), options.get("gamma", 1.0))
