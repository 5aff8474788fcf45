"""The one environment contract every sampler drives.

PettingZoo AEC (turn-based), PettingZoo parallel and Gymnasium single-agent envs are
all adapted to :class:`MultiAgentEnv`, whose ``reset``/``step`` return a
:class:`TimeStep`. The contract, which the sampler relies on:

* ``TimeStep.obs`` holds an observation for exactly the agents that must act now
  (AEC: the one agent whose turn it is; parallel: every live agent). ``step`` takes
  one action for each of those agents and no others.
* ``TimeStep.rewards`` holds, per agent, the reward accrued since the previous
  ``TimeStep`` (for any agent, acting now or not). The sampler credits it to that
  agent's last action; so the reward an agent receives between two of its own turns,
  including a final reward caused by the opponent's winning move, lands on its last
  action.
* ``terminated``/``truncated`` name agents whose episode ended at this step. When
  ``done`` is True the whole episode is over: every agent that ever acted appears in
  ``terminated`` or ``truncated`` exactly once over the episode, so an episode's end
  reaches every agent. ``final_obs`` carries the last observation of truncated agents
  (for value bootstrapping).
* ``masks`` has an ``int8[num_actions]`` legal-action mask for every agent in ``obs``
  (all ones when the env has no mask). Policies never pick a masked action.

Observation preprocessing rule (documented once, applied once, in the adapter):
a Dict observation with ``"observation"`` and ``"action_mask"`` keys (PettingZoo
classic) yields the ``observation`` array unchanged in shape, as float32, and the mask;
any other Dict/Tuple observation is flattened with ``gymnasium.spaces.flatten`` to a
1-D float32 vector (keys in the space's sorted order), with an ``action_mask`` key
(if present) split off first; Discrete observations become one-hot float32; Box
observations keep their shape, cast to float32. Only Discrete action spaces are supported.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np

__all__ = ["AgentSpec", "TimeStep", "MultiAgentEnv"]


@dataclass(frozen=True)
class AgentSpec:
    """What a policy needs to know about one agent's spaces, after preprocessing."""

    obs_shape: tuple[int, ...]
    num_actions: int
    has_action_mask: bool


@dataclass
class TimeStep:
    """What the env reports after ``reset`` or ``step`` (see the module docstring)."""

    obs: dict[str, np.ndarray]
    masks: dict[str, np.ndarray]
    rewards: dict[str, float] = field(default_factory=dict)
    terminated: dict[str, bool] = field(default_factory=dict)
    truncated: dict[str, bool] = field(default_factory=dict)
    done: bool = False
    final_obs: dict[str, np.ndarray] = field(default_factory=dict)


class MultiAgentEnv(ABC):
    """A multi-agent environment under the :class:`TimeStep` contract."""

    #: Every agent id that can appear, in a fixed order (its position is the agent index).
    possible_agents: list[str]

    @abstractmethod
    def spec(self, agent: str) -> AgentSpec:
        """Preprocessed observation shape, action count and mask presence of ``agent``."""

    @abstractmethod
    def reset(self, seed: int | None = None) -> TimeStep:
        """Start an episode; returns the first agents to act (no rewards)."""

    @abstractmethod
    def step(self, actions: dict[str, int]) -> TimeStep:
        """Apply one action per agent in the last ``TimeStep.obs``."""

    def close(self) -> None:
        """Release resources (rendering windows, subprocesses)."""
