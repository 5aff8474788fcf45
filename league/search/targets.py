"""Search as a policy-improvement target of an actor-critic learner: ``algo=ppo
search_simulations=N``, the sampler's side.

:class:`SearchTargetPolicy` is PPO's sampler policy plus a search: it acts from its own
distribution exactly as :class:`~league.algos.torch_policy.ActorCriticPolicy` does (same
actions, ``action_logp`` and ``vf_preds``, so PPO's ratio stays on-policy), and for each
training row also runs a Gumbel search of ``search_simulations`` simulations from the row's
game state (:func:`league.search.gumbel.gumbel_search`, batched across the env copies, guided
by the same model) and records its improved policy in the :data:`SEARCH_POLICY` column, which
PPO's loss fits with weight ``search_coef`` (:func:`~league.algos.actor_critic.search_cross_entropy`).

It declares :attr:`~league.policy.Policy.needs_states`, so the sampler's runner hands it its
rows' game states; it searches only while exploring (training rollouts): evaluation
(``explore=False``, nothing recorded) and rows without states carry an all-zero column, which
the loss skips. Frozen snapshots are plain actor-critic policies (nothing of theirs is learnt).

Why Gumbel's improved policy rather than PUCT's visit distribution: at the few simulations a
sampler can afford per move, visit counts are a coarse, noisy histogram (8 simulations over 9
moves put 0 or 1 visits on most), while the improved policy keeps the prior's shape and moves
it by the completed Q values, a policy improvement by construction even with few simulations
(the paper's result); measured in benchmarks/README.md (issue 37).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from torch import nn

from league.algos.actor_critic import SEARCH_POLICY, SEARCH_TARGET_POLICIES
from league.algos.distributions import ActionDist
from league.algos.torch_policy import ActorCriticPolicy
from league.envs.batched import SimulatorStates
from league.search.gumbel import gumbel_search
from league.search.puct import one_thread, policy_evaluator, puct_visits
from league.search.simulator import SimulatorCache

__all__ = ["SearchTargetPolicy"]


class SearchTargetPolicy(ActorCriticPolicy):
    """An actor-critic sampler policy that records a search's policy per training row (module docstring).

    Args:
        model, dist, learns, seed: as :class:`ActorCriticPolicy`'s.
        config: the algorithm's config: ``search_simulations`` (> 0), and Gumbel's keys where it
            has them (``num_considered_actions``, ``c_visit``, ``c_scale``; else :func:`gumbel_search`'s).
        search: "gumbel" (the improved policy) or "puct" (the visit distribution, no root noise).
    """

    needs_states = True

    def __init__(self, model: nn.Module, dist: ActionDist, config: Any, learns: bool = True, seed: int | None = None,
                 search: str = "gumbel") -> None:
        super().__init__(model, dist, learns=learns, seed=seed)
        if search not in ("gumbel", "puct"):
            raise ValueError(f"search must be 'gumbel' or 'puct', got {search!r}")
        self.config = config
        self.search = search
        self._rng = np.random.default_rng(seed)
        self._evaluate = policy_evaluator(self)
        self._simulator = SimulatorCache("algo.params.search_simulations")

    def compute_actions(self, obs: np.ndarray, action_mask: np.ndarray, explore: bool = True) -> dict[str, np.ndarray]:
        """The actor-critic policy's columns, and an all-zero :data:`SEARCH_POLICY` (no search)."""
        out = super().compute_actions(obs, action_mask, explore)
        out[SEARCH_POLICY] = np.zeros(np.shape(action_mask), dtype=np.float32)
        return out

    def compute_actions_at(
        self, states: SimulatorStates, obs: np.ndarray, action_mask: np.ndarray, explore: bool = True
    ) -> dict[str, np.ndarray]:
        """Acts as :meth:`compute_actions`; while exploring, the search's policy from each row's state."""
        out = self.compute_actions(obs, action_mask, explore)
        if not explore:
            return out
        if len(states.states) != len(obs):
            raise ValueError(f"search target: {len(states.states)} game states for {len(obs)} rows")
        out[SEARCH_POLICY] = self.search_policy(states).astype(np.float32)
        return out

    def search_policy(self, states: SimulatorStates) -> np.ndarray:
        """``float64[B, A]``: the search's policy at each state (sums to 1 over the legal moves)."""
        cfg, sim = self.config, self._simulator(states.env_name, states.env_kwargs)
        with one_thread():
            if self.search == "puct":
                visits = np.stack(puct_visits(sim, states.states, self._evaluate, cfg.search_simulations, self._rng))
                return visits / np.maximum(visits.sum(axis=1, keepdims=True), 1.0)
            # Gumbel's keys where the config has them (AlphaZero's), else gumbel_search's defaults (PPO's).
            keys = {k: getattr(cfg, k) for k in ("num_considered_actions", "c_visit", "c_scale") if hasattr(cfg, k)}
            return gumbel_search(sim, states.states, self._evaluate, cfg.search_simulations, self._rng, **keys).policy


def make_search_target_policy(model: nn.Module, dist: ActionDist, config: Any, learns: bool, seed: int | None) -> SearchTargetPolicy:
    """:data:`~league.algos.actor_critic.SEARCH_TARGET_POLICIES`' maker: Gumbel's improved policy."""
    return SearchTargetPolicy(model, dist, config, learns, seed, search=TARGET_SEARCH)


#: The search whose policy is the target ("gumbel"; "puct" for comparisons: module docstring).
TARGET_SEARCH = "gumbel"

SEARCH_TARGET_POLICIES.register("search", make_search_target_policy)
