"""The inference face of a policy, as samplers and evaluators use it.

A sampler knows nothing about algorithms: it calls :meth:`Policy.compute_actions` once
per policy per step on a batch of observations and stores every column the policy
returns (``actions`` always; e.g. ``action_logp`` and ``vf_preds`` for PPO). Learning
algorithms, frozen snapshots and scripted players all implement this interface.

Exact evaluation (:mod:`league.population.exploitability`) needs a policy's action
*distribution* rather than samples: :meth:`Policy.action_probabilities` gives the
distribution ``compute_actions(obs, mask, explore=True)`` draws from, i.e. the policy as
it plays its league games (samplers always act with ``explore=True``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from league.batch import SampleBatch

if TYPE_CHECKING:
    from league.envs.base import AgentSpec
    from league.envs.batched import SimulatorStates

__all__ = [
    "Policy",
    "PolicyFactory",
    "RandomPolicy",
    "RandomPolicyFactory",
    "masked_uniform_actions",
    "masked_uniform_probabilities",
]


def masked_uniform_actions(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One uniformly random legal action per row of an ``[B, A]`` 0/1 mask (vectorised).

    Raises ``ValueError`` if a row has no legal action.
    """
    m = np.asarray(mask, dtype=bool)
    counts = m.sum(axis=1)
    if (counts == 0).any():
        raise ValueError(f"action mask row {int(np.argmin(counts))} has no legal action")
    # k-th legal action, k uniform in [0, count): first index whose cumsum exceeds k.
    k = (rng.random(len(m)) * counts).astype(np.int64)
    actions: np.ndarray = (np.cumsum(m, axis=1) > k[:, None]).argmax(axis=1).astype(np.int64)
    return actions


def masked_uniform_probabilities(mask: np.ndarray) -> np.ndarray:
    """``float64[B, A]``: per row of an ``[B, A]`` 0/1 mask, ``1 / n_legal`` on each legal
    action and 0 on illegal ones (the distribution :func:`masked_uniform_actions` samples).

    Raises ``ValueError`` if a row has no legal action.
    """
    m = np.asarray(mask, dtype=bool)
    counts = m.sum(axis=1, keepdims=True)
    if (counts == 0).any():
        raise ValueError(f"action mask row {int(np.argmin(counts.ravel()))} has no legal action")
    probabilities: np.ndarray = m / counts
    return probabilities


class Policy(ABC):
    """Batched action selection for one policy id."""

    #: Whether samples produced by this policy may be trained on.
    learns: bool = False
    #: Whether the policy acts from its env copies' game states (a search, e.g. AlphaZero's):
    #: the sampler's runner then calls :meth:`compute_actions_at` with them; other policies
    #: are called through :meth:`compute_actions` and nothing reads any state for them.
    needs_states: bool = False

    @abstractmethod
    def compute_actions(
        self, obs: np.ndarray, action_mask: np.ndarray, explore: bool = True
    ) -> dict[str, np.ndarray]:
        """Actions for a batch.

        Args:
            obs: ``float32[B, *obs_shape]``.
            action_mask: ``int8[B, num_actions]``, 1 for legal actions.
            explore: sample (True) or act greedily (False).

        Returns:
            ``{"actions": int64[B], ...}`` plus any per-row columns the algorithm
            wants stored (all with first dimension ``B``). Never a masked action.
            For an agent with a Box action space (``AgentSpec.continuous``) ``actions``
            is ``float32[B, D]`` inside the space's bounds and masks do not apply
            (the mask is all ones and is ignored).
        """

    def compute_actions_at(
        self, states: SimulatorStates, obs: np.ndarray, action_mask: np.ndarray, explore: bool = True
    ) -> dict[str, np.ndarray]:
        """Actions for a batch whose rows' game states are ``states`` (one per row, see
        :meth:`~league.envs.batched.BatchedMultiAgentEnv.simulator_states`); what the runner
        calls for a policy that :attr:`needs_states`. The default ignores them."""
        return self.compute_actions(obs, action_mask, explore)

    def action_probabilities(self, obs: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        """The distribution ``compute_actions(obs, action_mask, explore=True)`` samples from.

        This is the policy as it plays league games (samplers act with ``explore=True``),
        and what exact evaluation reads at every information state.

        Args:
            obs: ``float32[B, *obs_shape]``.
            action_mask: ``int8[B, num_actions]``, 1 for legal actions; every row has one.

        Returns:
            ``float[B, num_actions]`` (float32 or float64): each row sums to 1 over the
            legal actions and is 0 on illegal ones.

        Raises:
            NotImplementedError: the default, for policies that can only sample. It is not
                abstract so that sampling-only policies (test doubles, benchmarks) stay
                valid; exact evaluation then names the class that lacks it.
        """
        raise NotImplementedError(
            f"{type(self).__name__} does not implement action_probabilities(obs, action_mask), "
            "which exact evaluation (exploitability, exact meta-game payoffs) needs"
        )

    def get_weights(self) -> dict[str, np.ndarray]:
        """Parameters as numpy arrays (empty for parameter-free policies)."""
        return {}

    def set_weights(self, weights: dict[str, np.ndarray]) -> None:
        """Load parameters produced by :meth:`get_weights`."""

    def reset_exploration(self) -> None:
        """Start exploring as a fresh policy would (its player was reset to its initial
        state); a no-op for policies whose exploration does not change over time."""


class RandomPolicy(Policy):
    """Uniformly random legal actions: the evaluation yardstick.

    With ``action_bounds`` (a Box action space's flat ``(low, high)``) it draws float32
    actions uniformly inside them instead (an infinite bound is taken as +-1); with
    ``action_nvec`` (a MultiDiscrete space) one legal choice per component.
    """

    def __init__(
        self,
        seed: int | None = None,
        action_bounds: tuple[tuple[float, ...], tuple[float, ...]] | None = None,
        action_nvec: tuple[int, ...] | None = None,
    ) -> None:
        self._rng = np.random.default_rng(seed)
        self._bounds = None
        self._nvec = None if action_nvec is None else [int(n) for n in action_nvec]
        if action_bounds is not None:
            low, high = (np.asarray(b, dtype=np.float64) for b in action_bounds)
            self._bounds = (np.where(np.isfinite(low), low, -1.0), np.where(np.isfinite(high), high, 1.0))

    def compute_actions(
        self, obs: np.ndarray, action_mask: np.ndarray, explore: bool = True
    ) -> dict[str, np.ndarray]:
        """Uniform over the legal actions of each row (or over the Box's bounds, or per MultiDiscrete component)."""
        if self._bounds is not None:
            low, high = self._bounds
            return {"actions": self._rng.uniform(low, high, size=(len(obs), len(low))).astype(np.float32)}
        if self._nvec is not None:
            parts = np.split(np.asarray(action_mask), np.cumsum(self._nvec)[:-1], axis=1)
            return {"actions": np.stack([masked_uniform_actions(m, self._rng) for m in parts], axis=1)}
        return {"actions": masked_uniform_actions(action_mask, self._rng)}

    def action_probabilities(self, obs: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        """``1 / n_legal`` on each legal action of a row (``explore`` changes nothing)."""
        return masked_uniform_probabilities(action_mask)


class PolicyFactory(ABC):
    """What a sampler receives per policy id: builds the inference policy and post-processes
    that policy's trajectories. Algorithms implement it; samplers only call it."""

    @abstractmethod
    def make_policy(self, seed: int | None = None, learns: bool = True) -> Policy:
        """A fresh inference policy (weights arrive later through ``set_weights``)."""

    def postprocess_trajectory(
        self, traj: SampleBatch, next_step: Mapping[str, np.ndarray] | None
    ) -> SampleBatch:
        """One agent's trajectory chunk (one episode, time order) -> batch with the
        algorithm's extra columns (default: unchanged).

        ``next_step`` is what the policy computed for the state after the chunk's last row
        (its ``obs`` plus the columns ``compute_actions`` returned, one row each), or
        ``None`` when the chunk ends in termination (nothing to bootstrap from).
        """
        return traj


class RandomPolicyFactory(PolicyFactory):
    """Factory for :class:`RandomPolicy` (never learns); ``action_bounds`` for Box action spaces,
    ``action_nvec`` for MultiDiscrete ones (:meth:`for_spec` reads both from an agent spec)."""

    def __init__(
        self,
        action_bounds: tuple[tuple[float, ...], tuple[float, ...]] | None = None,
        action_nvec: tuple[int, ...] | None = None,
    ) -> None:
        self.action_bounds = action_bounds
        self.action_nvec = action_nvec

    @classmethod
    def for_spec(cls, spec: AgentSpec | None) -> RandomPolicyFactory:
        """The random player of an agent spec's action space (``None``: plain Discrete)."""
        if spec is None:
            return cls()
        low, high = spec.action_low, spec.action_high
        return cls(None if low is None or high is None else (low, high), spec.action_nvec)

    def make_policy(self, seed: int | None = None, learns: bool = False) -> Policy:
        """A uniformly random legal-action policy."""
        return RandomPolicy(seed, self.action_bounds, self.action_nvec)
