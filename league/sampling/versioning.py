"""Which weights produced a row: the ``weights_version`` column, stamped at action time.

A learner counts, per policy, how often it changed the policy's weights (one per update,
one more when the weights are replaced from outside: a league reset, a checkpoint
restore). The count lives in the model itself, as an ``int64`` buffer named
:data:`WEIGHTS_VERSION` (see :func:`league.learn.algorithm.add_version_buffer`), so it travels
inside every weights dict a learner hands out — weight broadcasts, snapshots,
checkpoints — with no change to how weights move.

On a sampler, :class:`VersionedPolicy` wraps each policy: ``set_weights`` reads the
version from the weights it loads, and ``compute_actions`` adds a ``weights_version``
column (the version of the weights that chose each action). The learner then knows
how stale every row is and whether it predates a reset (:mod:`league.learn.staleness`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from league.policy import Policy

if TYPE_CHECKING:
    from league.envs.batched import SimulatorStates

__all__ = ["WEIGHTS_VERSION", "VersionedPolicy", "version_of"]

#: Name of both the model buffer holding the version and the per-row column.
WEIGHTS_VERSION = "weights_version"


def version_of(weights: Mapping[str, Any]) -> int | None:
    """The version carried by a weights dict, or ``None`` when it carries none (or not as
    one integer: loading such weights then fails with the model's own shape error)."""
    value = weights.get(WEIGHTS_VERSION)
    if value is None:
        return None
    value = np.asarray(value)
    return int(value) if value.size == 1 and np.issubdtype(value.dtype, np.integer) else None


class VersionedPolicy(Policy):
    """A sampler's view of ``policy`` that stamps each action with its weights' version.

    Policies whose weights carry no version (scripted players, models without the
    buffer) are passed through unchanged: no column is added, so their rows are never
    judged by staleness. Every other attribute is read from the wrapped policy.
    """

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        # Decided once, so a policy's rows always have the same columns (chunks concatenate).
        version = version_of(policy.get_weights())
        self.versioned = version is not None
        self.version = version or 0  # a fresh model's own (0) until a learner's weights arrive

    @property
    def learns(self) -> bool:  # type: ignore[override]  # a read-only property for Policy's class attribute
        """Whether the wrapped policy's samples may be trained on."""
        return self.policy.learns

    @property
    def needs_states(self) -> bool:  # type: ignore[override]  # a read-only property for Policy's class attribute
        """Whether the wrapped policy acts from game states."""
        return self.policy.needs_states

    def compute_actions(self, obs: np.ndarray, action_mask: np.ndarray, explore: bool = True) -> dict[str, np.ndarray]:
        """The wrapped policy's outputs plus ``weights_version`` (``int64[B]``) when versioned."""
        return self._stamp(self.policy.compute_actions(obs, action_mask, explore), len(obs))

    def compute_actions_at(
        self, states: SimulatorStates, obs: np.ndarray, action_mask: np.ndarray, explore: bool = True
    ) -> dict[str, np.ndarray]:
        """The wrapped policy's outputs from game states, stamped as :meth:`compute_actions`'."""
        return self._stamp(self.policy.compute_actions_at(states, obs, action_mask, explore), len(obs))

    def _stamp(self, out: dict[str, np.ndarray], n: int) -> dict[str, np.ndarray]:
        if self.versioned:
            out = dict(out)
            out[WEIGHTS_VERSION] = np.full(n, self.version, dtype=np.int64)
        return out

    def action_probabilities(self, obs: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        """The wrapped policy's action distribution (the base class would refuse it)."""
        return self.policy.action_probabilities(obs, action_mask)

    def reset_exploration(self) -> None:
        """The wrapped policy's (the base class's no-op would hide it)."""
        self.policy.reset_exploration()

    def get_weights(self) -> dict[str, np.ndarray]:
        """The wrapped policy's weights (the version buffer included)."""
        return self.policy.get_weights()

    def set_weights(self, weights: dict[str, np.ndarray]) -> None:
        """Load ``weights`` and act with their version from now on.

        The version is part of the model's state, so weights without one (written before
        versions existed) are refused by the model like any weights of another model.
        """
        version = version_of(weights)
        self.policy.set_weights(weights)
        if version is not None:
            self.version = version

    def __getattr__(self, name: str) -> Any:
        # Only reached for names not found on the wrapper (e.g. ``model``, ``epsilon``).
        if name == "policy":  # not set yet (during unpickling): avoid infinite recursion
            raise AttributeError(name)
        return getattr(self.policy, name)

    def __repr__(self) -> str:
        return f"VersionedPolicy({self.policy!r}, version={self.version})"
