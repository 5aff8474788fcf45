"""Inference policy for actor-critic models: masked categorical or Gaussian sampling, one forward per batch."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from league.algos.byte_obs import policy_obs
from league.algos.distributions import MASKED_LOGIT, ActionDist, Categorical, masked_logits
from league.learn.onednn import fp32_matmuls
from league.policy import Policy

# masked_logits and MASKED_LOGIT are defined in league.algos.distributions and re-exported here
# (q_models.py imports them from this module).
__all__ = ["ActorCriticPolicy", "masked_logits", "MASKED_LOGIT"]


class ActorCriticPolicy(Policy):
    """Runs a ``(dist_inputs, value)`` model on CPU for samplers and evaluators.

    ``dist`` is the agent's action distribution (masked categorical by default; a
    :class:`~league.algos.distributions.DiagGaussian` for Box actions, whose masks are ignored).
    """

    def __init__(self, model: nn.Module, dist: ActionDist | None = None, learns: bool = True, seed: int | None = None) -> None:
        self.model = model.eval()
        self.dist = dist if dist is not None else Categorical()
        self.learns = learns
        self._gen = torch.Generator().manual_seed(seed if seed is not None else torch.seed() % 2**63)

    def compute_actions(
        self, obs: np.ndarray, action_mask: np.ndarray, explore: bool = True
    ) -> dict[str, np.ndarray]:
        """Sample (or take the mode of) actions; returns actions, action_logp, vf_preds
        (and ``actions_raw``, the unsquashed sample, for Box actions)."""
        # fp32 products in oneDNN where it keeps them fp32 and the batch is big enough to pay
        # for its call (league.learn.onednn): a default-job sampler step (128 boards, mirrored)
        # took 1.2 ms against 1.8 in MKL on one CPU; pong's 26-row batches took twice MKL's time
        with torch.inference_mode(), fp32_matmuls(len(obs)):
            inputs, values = self.model(torch.from_numpy(obs))
            out = self.dist.sample(inputs, torch.from_numpy(action_mask), self._gen, explore)
        return {**{k: v.numpy() for k, v in out.items()}, "vf_preds": values.numpy()}

    def action_probabilities(self, obs: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        """``float64[B, A]``: softmax of the masked logits (what ``explore=True`` samples).

        Illegal actions get exactly 0, not ``exp(MASKED_LOGIT)``'s underflow, so a row
        sums to 1 over its legal actions alone. Box actions have a density, not
        probabilities: ``NotImplementedError`` (exact evaluation is for discrete games).
        """
        if not isinstance(self.dist, Categorical):
            raise NotImplementedError("action_probabilities needs one Discrete action; this policy acts on a Box or MultiDiscrete space")
        with torch.inference_mode():
            logits, _ = self.model(torch.from_numpy(policy_obs(obs)))
            mask = torch.from_numpy(np.asarray(action_mask)).bool()
            # Softmax in float64: float32 logits of a sharp policy would round small legal
            # probabilities to 0 and leave rows summing to 1 only within float32 precision.
            probs = torch.softmax(masked_logits(logits.double(), mask), dim=-1)
            probs = torch.where(mask, probs, torch.zeros_like(probs))
            probs = probs / probs.sum(dim=-1, keepdim=True)
        return probs.numpy()

    def get_weights(self) -> dict[str, np.ndarray]:
        """State dict as numpy arrays."""
        return {k: v.detach().cpu().numpy() for k, v in self.model.state_dict().items()}

    def set_weights(self, weights: dict[str, np.ndarray]) -> None:
        """Load a state dict of numpy arrays."""
        self.model.load_state_dict({k: torch.tensor(v) for k, v in weights.items()})
