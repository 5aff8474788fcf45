"""What actor-critic algorithms (PPO, A2C, IMPALA/APPO) share: model, sampler policy, GAE.

Their configs all carry ``model`` and ``model_kwargs``; the sampler-side policy samples
masked actions and reports ``action_logp`` and ``vf_preds``. Every model carries the
weights-version buffer (:func:`~league.learn.algorithm.add_version_buffer`), so samplers can
stamp each row with the version of the weights that produced it. PPO and A2C also share
their sampler-side postprocessing (:class:`GAEActorCritic`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from torch import nn

from league.learn.algorithm import Algorithm, add_version_buffer
from league.algos.models import build_model
from league.algos.postprocessing import compute_gae
from league.algos.torch_policy import ActorCriticPolicy
from league.batch import Columns as C
from league.batch import SampleBatch
from league.policy import Policy

__all__ = ["ActorCriticAlgorithm", "GAEActorCritic"]


class ActorCriticAlgorithm(Algorithm):
    """Base of algorithms whose model returns ``(logits, value)``."""

    def make_model(self) -> nn.Module:
        """Actor-critic model chosen by ``config.model`` (see :func:`build_model`), with a version buffer."""
        spec = self.agent_spec
        return add_version_buffer(build_model(self.config.model, spec.obs_shape, spec.num_actions, **self.config.model_kwargs))

    def make_policy(self, seed: int | None = None, learns: bool = True) -> Policy:
        """Sampler-side policy: stochastic masked actions with logp and value."""
        return ActorCriticPolicy(self.make_model(), learns=learns, seed=seed)


class GAEActorCritic(ActorCriticAlgorithm):
    """Actor-critic whose samplers add GAE advantages (PPO, A2C; the config has ``gamma`` and ``lam``)."""

    def postprocess_trajectory(self, traj: SampleBatch, next_step: Mapping[str, np.ndarray] | None) -> SampleBatch:
        """Adds ``advantages`` and ``value_targets`` (GAE) to one agent's trajectory chunk,
        bootstrapping from V(next state) unless the chunk ended in termination."""
        bootstrap_value = 0.0 if next_step is None else float(next_step[C.VF_PREDS][0])
        traj[C.ADVANTAGES], traj[C.VALUE_TARGETS] = compute_gae(
            traj[C.REWARDS], traj[C.VF_PREDS], bootstrap_value, self.config.gamma, self.config.lam
        )
        return traj
