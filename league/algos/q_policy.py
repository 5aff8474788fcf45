"""Sampler-side inference policy for Q-networks: masked epsilon-greedy action selection.

Where epsilon comes from: the policy counts the rows it acted on with ``explore=True``
(this policy's agent steps on this sampler) and reads ``epsilon(step)`` from its
schedule. So the decay is per sampler: with ``k`` samplers the schedule runs ``k``
times faster in total env steps; a sampler restarted by Ray starts the schedule over.
A policy that does not learn (a league snapshot or a frozen opponent) acts with the
schedule's final epsilon, as a trained player would. Counting locally needs no extra
learner state and no change to how weights travel; ``get_weights``/``set_weights`` carry
the model's state dict only, exactly as the learner produces it.

``compute_actions`` also returns the action mask it was given (column ``action_mask``):
the sampler hands ``postprocess_trajectory`` the policy outputs of the state after a
cut chunk, and this is how that state's mask reaches the n-step targets.

``action_probabilities`` (exact evaluation) is the *exploring* policy, the distribution
``compute_actions(explore=True)`` draws from at the current :attr:`epsilon`: that is how
the policy plays every league game (samplers always explore, frozen snapshots included),
so exact payoffs and exploitability describe the same player the empirical payoff table
sees. For a frozen policy (``learns=False``, as exact evaluation builds it) that is the
schedule's final epsilon; with a final epsilon of 0 it is the greedy policy.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from league.algos.byte_obs import policy_obs
from league.algos.q_models import masked_argmax
from league.algos.schedules import Schedule
from league.batch import Columns as C
from league.policy import Policy, masked_uniform_actions, masked_uniform_probabilities

__all__ = ["EpsilonGreedyQPolicy"]


class EpsilonGreedyQPolicy(Policy):
    """Greedy legal action w.p. ``1 - epsilon``, a uniformly random legal action otherwise."""

    def __init__(self, model: nn.Module, epsilon: Schedule, learns: bool = True, seed: int | None = None) -> None:
        if not isinstance(epsilon, Schedule):
            raise TypeError(f"epsilon must be a Schedule, got {type(epsilon).__name__}")
        self.model = model.eval()
        self.epsilon_schedule = epsilon
        self.learns = learns
        self.steps = 0  # rows acted on with explore=True
        self._rng = np.random.default_rng(seed)

    def reset_exploration(self) -> None:
        """Epsilon from the schedule's start again (its player was reset to its initial state)."""
        self.steps = 0

    @property
    def epsilon(self) -> float:
        """The exploration rate the next exploring call will use."""
        if not self.learns:
            return self.epsilon_schedule.final_value
        return self.epsilon_schedule(self.steps)

    def compute_actions(
        self, obs: np.ndarray, action_mask: np.ndarray, explore: bool = True
    ) -> dict[str, np.ndarray]:
        """Masked epsilon-greedy (``explore``) or masked greedy actions; echoes ``action_mask``."""
        with torch.inference_mode():
            q = self.model(torch.from_numpy(obs))
            actions = masked_argmax(q, torch.from_numpy(action_mask)).numpy()
        if explore:
            eps = self.epsilon
            explore_rows = self._rng.random(len(actions)) < eps
            if explore_rows.any():
                random_actions = masked_uniform_actions(action_mask[explore_rows], self._rng)
                actions = actions.copy()
                actions[explore_rows] = random_actions
            if self.learns:
                self.steps += len(actions)
        return {C.ACTIONS: actions.astype(np.int64, copy=False), C.ACTION_MASK: action_mask}

    def action_probabilities(self, obs: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        """``float64[B, A]``: ``eps / n_legal`` on every legal action, plus ``1 - eps`` on
        the greedy one (so it holds ``(1 - eps) + eps / n_legal``), with ``eps`` =
        :attr:`epsilon`; 0 on illegal actions. Reading it counts no exploration steps.

        The greedy action is :func:`masked_argmax`'s, the lowest index among equal Q-values,
        exactly as ``compute_actions`` picks it.
        """
        with torch.inference_mode():
            q = self.model(torch.from_numpy(policy_obs(obs)))
            greedy = masked_argmax(q, torch.from_numpy(np.asarray(action_mask))).numpy()
        eps = float(self.epsilon)
        probs = eps * masked_uniform_probabilities(action_mask)
        probs[np.arange(len(probs)), greedy] += 1.0 - eps
        return probs

    def get_weights(self) -> dict[str, np.ndarray]:
        """State dict as numpy arrays."""
        return {k: v.detach().cpu().numpy() for k, v in self.model.state_dict().items()}

    def set_weights(self, weights: dict[str, np.ndarray]) -> None:
        """Load a state dict of numpy arrays (epsilon's step count is kept)."""
        self.model.load_state_dict({k: torch.tensor(v) for k, v in weights.items()})
