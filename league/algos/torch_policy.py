"""Inference policy for actor-critic models: masked categorical sampling, one forward per batch."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from league.algos.distributions import MASKED_LOGIT, log_prob, masked_logits
from league.policy import Policy

# masked_logits and MASKED_LOGIT are defined in league.algos.distributions and re-exported here
# (q_models.py imports them from this module).
__all__ = ["ActorCriticPolicy", "masked_logits", "MASKED_LOGIT"]


class ActorCriticPolicy(Policy):
    """Runs a ``(logits, value)`` model on CPU for samplers and evaluators."""

    def __init__(self, model: nn.Module, learns: bool = True, seed: int | None = None) -> None:
        self.model = model.eval()
        self.learns = learns
        self._gen = torch.Generator().manual_seed(seed if seed is not None else torch.seed() % 2**63)

    def compute_actions(
        self, obs: np.ndarray, action_mask: np.ndarray, explore: bool = True
    ) -> dict[str, np.ndarray]:
        """Sample (or argmax) among legal actions; returns actions, action_logp, vf_preds."""
        with torch.inference_mode():
            logits, values = self.model(torch.from_numpy(obs))
            logits = masked_logits(logits, torch.from_numpy(action_mask))
            if explore:
                # Gumbel-max: one vectorised draw per row, exact categorical sampling.
                u = torch.rand(logits.shape, generator=self._gen).clamp_(1e-12, 1.0)
                actions = torch.argmax(logits - torch.log(-torch.log(u)), dim=-1)
            else:
                actions = torch.argmax(logits, dim=-1)
            logp = log_prob(torch.log_softmax(logits, dim=-1), actions)
        return {"actions": actions.numpy(), "action_logp": logp.numpy(), "vf_preds": values.numpy()}

    def action_probabilities(self, obs: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        """``float64[B, A]``: softmax of the masked logits (what ``explore=True`` samples).

        Illegal actions get exactly 0, not ``exp(MASKED_LOGIT)``'s underflow, so a row
        sums to 1 over its legal actions alone.
        """
        with torch.inference_mode():
            logits, _ = self.model(torch.from_numpy(np.asarray(obs, dtype=np.float32)))
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
