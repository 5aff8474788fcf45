"""What actor-critic algorithms (PPO, A2C, IMPALA/APPO) share: model and sampler policy.

Their configs all carry ``model`` and ``model_kwargs``; the sampler-side policy samples
masked actions and reports ``action_logp`` and ``vf_preds``. Every model carries the
weights-version buffer (:func:`~league.algos.base.add_version_buffer`), so samplers can
stamp each row with the version of the weights that produced it.
"""

from __future__ import annotations

from torch import nn

from league.algos.base import Algorithm, add_version_buffer
from league.algos.models import build_model
from league.algos.torch_policy import ActorCriticPolicy
from league.policy import Policy

__all__ = ["ActorCriticAlgorithm"]


class ActorCriticAlgorithm(Algorithm):
    """Base of algorithms whose model returns ``(logits, value)``."""

    def make_model(self) -> nn.Module:
        """Actor-critic model chosen by ``config.model`` (see :func:`build_model`), with a version buffer."""
        spec = self.agent_spec
        return add_version_buffer(build_model(self.config.model, spec.obs_shape, spec.num_actions, **self.config.model_kwargs))

    def make_policy(self, seed: int | None = None, learns: bool = True) -> Policy:
        """Sampler-side policy: stochastic masked actions with logp and value."""
        return ActorCriticPolicy(self.make_model(), learns=learns, seed=seed)
