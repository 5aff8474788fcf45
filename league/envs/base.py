"""The one environment contract every sampler drives.

PettingZoo AEC (turn-based), PettingZoo parallel and Gymnasium single-agent envs are
all adapted to :class:`MultiAgentEnv`, whose ``reset``/``step`` return a
:class:`TimeStep`. The contract, which the sampler relies on:

* ``TimeStep.obs`` holds an observation for exactly the agents that must act now
  (AEC: the one agent whose turn it is; parallel: every live agent). ``step`` takes
  one action for each of those agents and no others (anything else: ``ValueError``).
  An agent that has ended never appears in ``obs`` again in that episode.
* ``TimeStep.rewards`` holds, per agent, the reward accrued since the previous
  ``TimeStep`` (for any agent, acting now or not; entries may be 0.0, a missing agent
  means 0.0; empty after ``reset``). The sampler credits it to that agent's last
  action; so the reward an agent receives between two of its own turns, including a
  final reward caused by the opponent's winning move, lands on its last action. For
  AEC envs the reward of a move is what ``env.rewards`` holds right after it, for
  every agent (PettingZoo's own accounting), so the rewards summed over an episode
  equal what ``env.last()`` would have reported to each agent.
* ``terminated``/``truncated`` name agents whose episode ended at this step (an agent
  appears in at most one of the two). When ``done`` is True the whole episode is
  over and ``obs`` is empty: every agent of the episode (each agent present at
  ``reset`` or acting later, so possibly one that never got to act) appears in
  ``terminated`` or ``truncated`` exactly once over the episode, so an episode's end
  reaches every agent. An agent may end before ``done`` (it then leaves ``obs``).
  ``final_obs`` carries the last observation of exactly the agents in ``truncated``
  (for value bootstrapping), whether the env or the adapter's ``max_episode_steps``
  (counted in ``step`` calls) truncated them, and ``final_masks`` the legal-action mask
  at that observation, by the same rule as ``masks`` (so a bootstrap that maximises over
  actions, as Q-learning's does, sees the real legal actions). Where the state offers
  the agent no legal action at all (e.g. it is not its turn), the adapter reports all
  ones: nothing is known to be illegal.
* ``masks`` has an ``int8[num_actions]`` legal-action mask for every agent in ``obs``
  (all ones when the env has no mask). Policies never pick a masked action.
* Observation arrays are freshly allocated and owned by the caller; a mask may be a
  shared read-only all-ones array. After ``done``, ``step`` raises ``RuntimeError``
  until ``reset``. ``reset(seed)`` with the same seed replays the same episode for the
  same actions. An exception inside the env is re-raised as
  ``RuntimeError("env <name> raised in step: ...")`` chained to the original, and the
  env then needs a ``reset``.

Observation preprocessing rule (documented once, applied once, in the adapter):
a Dict observation whose keys are exactly ``"observation"`` and ``"action_mask"``
(PettingZoo classic) yields the ``observation`` entry unchanged in shape, as float32
(a non-Box entry is converted by the rules below), and the mask; any other Dict/Tuple
observation is flattened with ``gymnasium.spaces.flatten`` to a 1-D float32 vector
(in the space's key order, which Gymnasium sorts for Dicts built from a plain dict),
with an ``action_mask`` key (if present) split off first; Discrete observations become
one-hot float32 (index ``value - start``); Box, MultiBinary and MultiDiscrete
observations keep their shape, cast to float32 (but ``uint8`` image pixels that
``env.kwargs.preprocess.scale`` asks for, kept as bytes: :mod:`league.algos.byte_obs`). Without a mask in the observation,
``info["action_mask"]`` is used when the env provides one, else all ones. Action spaces:
Discrete (policy action ``i`` is env action ``i + space.start``), Box with finite or
infinite bounds (``num_actions`` is its size; policy actions are float32 vectors reshaped
to the space's shape; masks do not apply: a Box agent's mask is all ones and is ignored)
and 1-D MultiDiscrete (policy actions are int64 vectors, component ``k``'s choice ``i`` is
``i + start[k]``; the mask has one flag per choice of every component, in order).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np

__all__ = ["AgentSpec", "TimeStep", "MultiAgentEnv", "informative_mask"]


@dataclass(frozen=True)
class AgentSpec:
    """What a policy needs to know about one agent's spaces, after preprocessing.

    ``has_action_mask`` says the observation space carries a mask; a mask passed in
    ``info`` is honoured too, so policies should always apply ``TimeStep.masks``.
    For a Box action space ``num_actions`` is the number of action dimensions and
    ``action_low``/``action_high`` hold its (flattened) bounds; both are None for Discrete.
    For a MultiDiscrete one ``action_nvec`` holds each component's choice count and
    ``num_actions`` is their sum (one logit and one mask flag per choice, component after component).
    """

    obs_shape: tuple[int, ...]
    num_actions: int
    has_action_mask: bool
    action_low: tuple[float, ...] | None = None
    action_high: tuple[float, ...] | None = None
    action_nvec: tuple[int, ...] | None = None

    @property
    def continuous(self) -> bool:
        """True for a Box action space."""
        return self.action_low is not None


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
    final_masks: dict[str, np.ndarray] = field(default_factory=dict)


def informative_mask(mask: np.ndarray) -> np.ndarray:
    """``mask`` (int8), or all ones when it allows no action: a final mask must leave
    something to choose, and a state where the agent cannot act says nothing is illegal."""
    mask = np.asarray(mask, dtype=np.int8)
    return mask if mask.any() else np.ones_like(mask)


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

    def episode_limit(self) -> int | None:
        """The most env steps (``step`` calls) an episode can take, where the env declares a cap
        (PettingZoo's ``max_cycles``, a Gymnasium ``TimeLimit``, the adapter's ``max_episode_steps``);
        None where it declares none. The config check sizes samplers to a time budget by it."""
        return None
