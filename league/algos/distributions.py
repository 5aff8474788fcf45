"""The categorical distribution over legal actions that every actor-critic method shares.

Illegal actions (``mask == 0``) get the logit :data:`MASKED_LOGIT`: finite, so
log-softmax and entropy stay NaN-free, and far below any real logit, so sampling and
argmax never choose it and its probability is exactly 0 after the softmax (``exp``
underflows). Used by PPO, A2C, IMPALA/APPO (learner side) and
:class:`~league.algos.torch_policy.ActorCriticPolicy` (sampler side).

CleanRL-style: plain functions on tensors, free of ``.item()`` and data-dependent control
flow, so they also run under ``torch.func.vmap`` (the stacked PPO update)::

    log_probs = masked_log_probs(logits, mask)   # [B, A]
    logp = log_prob(log_probs, actions)          # [B]
    ent = entropy(log_probs)                     # [B]

Box actions use a diagonal Gaussian instead (:class:`DiagGaussian`): the model's first
output is ``[B, 2D]`` (means, then log-stds). The sampler keeps the Gaussian sample itself
in ``actions_raw`` and sends the env ``actions``, the sample clipped or tanh-squashed into
the space's bounds. :func:`action_dist` picks the distribution of an agent spec; both
kinds answer ``logp_entropy(inputs, batch)`` and ``sample(inputs, mask, generator, explore)``,
so the losses read the same for discrete and continuous actions.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from league.envs.base import AgentSpec

__all__ = [
    "MASKED_LOGIT", "masked_logits", "masked_log_probs", "log_prob", "entropy",
    "ACTIONS_RAW", "Categorical", "DiagGaussian", "MultiCategorical", "ActionDist", "action_dist", "SQUASHES",
]

#: Column of the unsquashed Gaussian sample behind a Box action (what log-probs are taken of).
ACTIONS_RAW = "actions_raw"
#: How a Gaussian sample reaches a Box space's bounds: clipped, or squashed by tanh.
SQUASHES = ("clip", "tanh")
_LOG_2PI = math.log(2 * math.pi)

#: Logit given to illegal actions: finite (so entropy and log-softmax stay NaN-free) and
#: far below any real logit (so sampling and argmax never choose it).
MASKED_LOGIT = -1e9


def masked_logits(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``logits`` with illegal actions (``mask == 0``) pushed to :data:`MASKED_LOGIT`."""
    return torch.where(mask.bool(), logits, torch.full_like(logits, MASKED_LOGIT))


def masked_log_probs(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``[B, A]`` log-probabilities of every action; illegal ones are about ``MASKED_LOGIT``."""
    return torch.log_softmax(masked_logits(logits, mask), dim=-1)


def log_prob(log_probs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
    """``[B]`` log-probability of each row's action (``actions``: ``[B]``, any integer or float dtype)."""
    return log_probs.gather(1, actions.long().unsqueeze(1)).squeeze(1)


def _total(terms: Iterable[torch.Tensor]) -> torch.Tensor:
    """``t0 + t1 + ...`` of one or more tensors (``sum()`` without its ``0`` start)."""
    total: torch.Tensor = functools.reduce(operator.add, terms)
    return total


def entropy(log_probs: torch.Tensor) -> torch.Tensor:
    """``[B]`` entropy of each row's distribution.

    No mask needed: an illegal action has probability exactly 0 and a finite log-probability,
    so it adds exactly 0 here.
    """
    return -(log_probs.exp() * log_probs).sum(-1)


class Categorical:
    """The masked categorical over ``Discrete`` actions (model output: logits ``[B, A]``)."""

    #: Batch columns :meth:`logp_entropy` reads.
    columns = ("actions", "action_mask")

    def logp_entropy(self, inputs: torch.Tensor, batch: Mapping[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """``[B]`` log-probability of each row's action under the masked logits, and ``[B]`` entropy."""
        log_probs = masked_log_probs(inputs, batch["action_mask"])
        return log_prob(log_probs, batch["actions"]), entropy(log_probs)

    def sample(
        self, inputs: torch.Tensor, mask: torch.Tensor, generator: torch.Generator, explore: bool
    ) -> dict[str, torch.Tensor]:
        """``actions`` (sampled by Gumbel-max, or argmax) among legal ones and their ``action_logp``."""
        logits = masked_logits(inputs, mask)
        if explore:
            u = torch.rand(logits.shape, generator=generator).clamp_(1e-12, 1.0)
            actions = torch.argmax(logits - torch.log(-torch.log(u)), dim=-1)
        else:
            actions = torch.argmax(logits, dim=-1)
        return {"actions": actions, "action_logp": log_prob(torch.log_softmax(logits, dim=-1), actions)}


class DiagGaussian:
    """A diagonal Gaussian over a ``Box`` of ``D`` dimensions (model output: ``[B, 2D]``, means then log-stds).

    The sample ``u`` is kept raw (``actions_raw``); the env gets ``a``:

    * ``squash="clip"``: ``a = clip(u, low, high)`` and the log-probability is the Gaussian's
      of ``u`` (CleanRL, SB3: the ratio PPO needs is between densities of ``u``); infinite
      bounds are left unclipped.
    * ``squash="tanh"``: ``a = low + (tanh(u) + 1) (high - low) / 2``, and the log-probability
      is the density of ``a`` (change of variables: minus ``sum log |da/du|``). Needs finite bounds.

    Masks do not apply: a Box agent's mask is all ones and is ignored. The entropy is the
    Gaussian's (of ``u``), exact for ``clip``'s log-probabilities and the usual surrogate for ``tanh``.
    """

    columns = (ACTIONS_RAW,)

    def __init__(self, low: tuple[float, ...], high: tuple[float, ...], squash: str = "clip") -> None:
        if squash not in SQUASHES:
            raise ValueError(f"squash must be one of {SQUASHES}, got {squash!r}")
        lo, hi = torch.tensor(low, dtype=torch.float32), torch.tensor(high, dtype=torch.float32)
        if squash == "tanh" and not (torch.isfinite(lo).all() and torch.isfinite(hi).all()):
            raise ValueError(f"squash='tanh' needs finite action bounds, got low={list(low)} high={list(high)}; use squash='clip'")
        self.low, self.high, self.squash = lo, hi, squash
        self._half = (hi - lo) / 2
        self._log_half = torch.log(self._half).sum() if squash == "tanh" else torch.zeros(())

    @staticmethod
    def split(inputs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(mean, log_std)``, each ``[B, D]``, from a ``[B, 2D]`` model output."""
        mean, log_std = inputs.chunk(2, dim=-1)
        return mean, log_std

    def gaussian_logp(self, inputs: torch.Tensor, raw: torch.Tensor) -> torch.Tensor:
        """``[B]`` log-density of the raw sample ``u`` under the Gaussian (no squash term)."""
        mean, log_std = self.split(inputs)
        z = (raw - mean) * torch.exp(-log_std)
        return (-0.5 * z.pow(2) - log_std - 0.5 * _LOG_2PI).sum(-1)

    def squash_log_det(self, raw: torch.Tensor) -> torch.Tensor:
        """``[B]`` ``sum log |da/du|`` of the squash (0 for ``clip``)."""
        if self.squash == "clip":
            return torch.zeros(raw.shape[:-1], dtype=raw.dtype, device=raw.device)
        # log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u)), stable for large |u|.
        log_dtanh = 2 * (math.log(2) - raw - torch.nn.functional.softplus(-2 * raw))
        return log_dtanh.sum(-1) + self._log_half.to(raw.device)

    def log_prob(self, inputs: torch.Tensor, raw: torch.Tensor) -> torch.Tensor:
        """``[B]`` log-probability of the action that ``raw`` became (see the class docstring)."""
        return self.gaussian_logp(inputs, raw) - self.squash_log_det(raw)

    def entropy(self, inputs: torch.Tensor) -> torch.Tensor:
        """``[B]`` entropy of the Gaussian: ``sum(log_std) + D (1 + log 2 pi) / 2``."""
        _, log_std = self.split(inputs)
        return (log_std + 0.5 * (1 + _LOG_2PI)).sum(-1)

    def to_env(self, raw: torch.Tensor) -> torch.Tensor:
        """The env action of a raw sample: clipped, or squashed, into ``[low, high]``."""
        low, high = self.low.to(raw.device), self.high.to(raw.device)
        if self.squash == "tanh":
            return low + (torch.tanh(raw) + 1) * self._half.to(raw.device)
        return torch.maximum(torch.minimum(raw, high), low)

    def logp_entropy(self, inputs: torch.Tensor, batch: Mapping[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """``[B]`` log-probability of each row's ``actions_raw`` and ``[B]`` entropy."""
        return self.log_prob(inputs, batch[ACTIONS_RAW]), self.entropy(inputs)

    def sample(
        self, inputs: torch.Tensor, mask: torch.Tensor | None, generator: torch.Generator, explore: bool
    ) -> dict[str, torch.Tensor]:
        """``actions_raw`` (``mean + std * noise``, or the mean), ``actions`` in bounds, ``action_logp``."""
        mean, log_std = self.split(inputs)
        raw = mean + torch.exp(log_std) * torch.randn(mean.shape, generator=generator) if explore else mean
        return {"actions": self.to_env(raw), ACTIONS_RAW: raw, "action_logp": self.log_prob(inputs, raw)}


class MultiCategorical:
    """Independent masked categoricals over a ``MultiDiscrete`` space (model output: ``[B, sum(nvec)]``
    logits, component after component; the mask has the same layout). Actions are ``int64[B, K]``;
    log-probabilities and entropies are sums over the components."""

    columns = ("actions", "action_mask")

    def __init__(self, nvec: tuple[int, ...]) -> None:
        self.nvec = [int(n) for n in nvec]

    def _parts(self, inputs: torch.Tensor, mask: torch.Tensor) -> list[torch.Tensor]:
        return [masked_log_probs(x, m) for x, m in zip(inputs.split(self.nvec, -1), mask.split(self.nvec, -1))]

    def logp_entropy(self, inputs: torch.Tensor, batch: Mapping[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """``[B]`` summed log-probability of each row's action vector, and ``[B]`` summed entropy."""
        parts = self._parts(inputs, batch["action_mask"])
        actions = batch["actions"].long()
        logp = _total(log_prob(lp, actions[:, k]) for k, lp in enumerate(parts))
        return logp, _total(entropy(lp) for lp in parts)

    def sample(
        self, inputs: torch.Tensor, mask: torch.Tensor, generator: torch.Generator, explore: bool
    ) -> dict[str, torch.Tensor]:
        """``actions`` ``[B, K]`` (each component sampled among its legal choices, or argmax) and ``action_logp``."""
        one = Categorical()
        outs = [one.sample(x, m, generator, explore) for x, m in zip(inputs.split(self.nvec, -1), mask.split(self.nvec, -1))]
        return {"actions": torch.stack([o["actions"] for o in outs], -1), "action_logp": _total(o["action_logp"] for o in outs)}


#: Any of the distributions (they share ``columns``, ``logp_entropy`` and ``sample``).
ActionDist = Categorical | DiagGaussian | MultiCategorical


def action_dist(spec: AgentSpec, squash: str = "clip") -> ActionDist:
    """:class:`DiagGaussian` for an agent spec with a Box action space (``spec.action_low`` set),
    :class:`MultiCategorical` for a MultiDiscrete one (``spec.action_nvec``), else :class:`Categorical`."""
    if spec.action_nvec is not None:
        return MultiCategorical(tuple(spec.action_nvec))
    low, high = spec.action_low, spec.action_high
    if low is None or high is None:
        return Categorical()
    return DiagGaussian(tuple(low), tuple(high), squash)
