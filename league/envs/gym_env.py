"""A Gymnasium single-agent env as the one-agent case of :class:`MultiAgentEnv`.

The one agent is called ``"agent_0"``. Its mask comes from a Dict observation's
``action_mask`` or from ``info["action_mask"]`` (all ones otherwise), by the same
preprocessing rule as every other env.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from league.envs.base import AgentSpec, MultiAgentEnv, TimeStep, informative_mask
from league.envs.preprocess import build_preprocessor

__all__ = ["GymnasiumEnv", "GYM_AGENT"]

#: The id of the single agent of a Gymnasium env.
GYM_AGENT = "agent_0"


class GymnasiumEnv(MultiAgentEnv):
    """A ``gymnasium.Env`` with a Discrete or Box action space, seen as one agent.

    Args:
        env: the Gymnasium env, e.g. ``gymnasium.make("CartPole-v1")``.
        name: used in error messages; defaults to the env's spec id.
        max_episode_steps: truncate after this many steps (on top of any
            ``TimeLimit`` the env already has); None leaves truncation to the env.
    """

    def __init__(self, env: Any, name: str | None = None, max_episode_steps: int | None = None) -> None:
        if max_episode_steps is not None and (
            isinstance(max_episode_steps, bool)
            or not isinstance(max_episode_steps, (int, np.integer))
            or max_episode_steps < 1
        ):
            raise ValueError(f"max_episode_steps must be a positive int or None, got {max_episode_steps!r}")
        self.env = env
        env_spec = getattr(env, "spec", None)
        self.name = name or (env_spec.id if env_spec is not None else type(env).__name__)
        self.max_episode_steps = None if max_episode_steps is None else int(max_episode_steps)
        self.possible_agents = [GYM_AGENT]
        try:
            self._pre = build_preprocessor(env.observation_space, env.action_space, GYM_AGENT)
        except (TypeError, ValueError) as err:
            raise type(err)(f"env {self.name}: {err}") from err
        self._transform = self._pre.transform
        self._env_action = self._pre.env_action
        self._steps = 0
        self._running = False

    def spec(self, agent: str) -> AgentSpec:
        """Preprocessed spaces of the one agent ``"agent_0"``."""
        if agent != GYM_AGENT:
            raise ValueError(f"env {self.name}: unknown agent {agent!r}; the only agent is {GYM_AGENT!r}")
        return self._pre.spec

    def reset(self, seed: int | None = None) -> TimeStep:
        """Reset (seeded when ``seed`` is given) and return the agent's first observation."""
        try:
            raw_obs, info = self.env.reset(seed=seed)
            obs, mask = self._transform(raw_obs, info)
        except Exception as err:
            self._running = False
            raise RuntimeError(f"env {self.name} raised in reset: {type(err).__name__}: {err}") from err
        self._steps = 0
        self._running = True
        return TimeStep(obs={GYM_AGENT: obs}, masks={GYM_AGENT: mask})

    def step(self, actions: dict[str, Any]) -> TimeStep:
        """Apply ``actions["agent_0"]`` (an int, or a float vector for a Box action space)."""
        if not self._running:
            raise RuntimeError(f"env {self.name}: step() called before reset() or after the episode ended")
        if len(actions) != 1 or GYM_AGENT not in actions:
            raise ValueError(
                f"env {self.name}: step() takes exactly one action for {GYM_AGENT!r}; "
                f"got actions for {sorted(actions)}"
            )
        try:
            raw_obs, reward, terminated, truncated, info = self.env.step(self._env_action(actions[GYM_AGENT]))
            obs, mask = self._transform(raw_obs, info)
        except Exception as err:
            self._running = False
            raise RuntimeError(f"env {self.name} raised in step: {type(err).__name__}: {err}") from err
        self._steps += 1
        ts = TimeStep(obs={}, masks={}, rewards={GYM_AGENT: float(reward)})
        if terminated:
            ts.terminated[GYM_AGENT] = True
        elif truncated or (self.max_episode_steps is not None and self._steps >= self.max_episode_steps):
            ts.truncated[GYM_AGENT] = True
            ts.final_obs[GYM_AGENT] = obs
            ts.final_masks[GYM_AGENT] = informative_mask(mask)
        else:
            ts.obs[GYM_AGENT] = obs
            ts.masks[GYM_AGENT] = mask
            return ts
        ts.done = True
        self._running = False
        return ts

    def close(self) -> None:
        """Close the wrapped env."""
        self.env.close()

    def episode_limit(self) -> int | None:
        """The adapter's ``max_episode_steps`` or the env's registered ``TimeLimit``
        (``spec.max_episode_steps``), whichever ends an episode first; None without either."""
        registered = getattr(getattr(self.env, "spec", None), "max_episode_steps", None)
        limits = [n for n in (self.max_episode_steps, registered) if isinstance(n, int) and n > 0]
        return min(limits) if limits else None
