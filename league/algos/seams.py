"""The seams through which a game reaches the models and losses of the generic algorithms.

Two kinds of plug-in, each a :class:`typing.Protocol` with a registry of factories by name
(:class:`league.registry.Registry`; a game package registers its own when imported):

* **Input features** (``algo.params.model_kwargs.input_features=<name>``): fixed, exact
  functions of an observation that a model reads beside it, appended as channels on its
  last axis (a board game's threat planes, as AlphaGo's network read liberties). The model
  (:class:`~league.algos.models.InputFeaturesModel`) computes them; a learner taking
  several passes over one batch computes them once (:func:`~league.algos.models.input_features`).
* **Auxiliary losses** (``algo.params.aux_loss=<name>``, ``aux_loss_coef``,
  ``aux_loss_kwargs``) of the actor-critic algorithms: a per-row target computed once per
  update from the observations and masks (e.g. the moves a search approves), and a term
  of the loss on each minibatch computed from the policy's outputs and that target.
  :class:`ApprovedMovesLoss` is the generic form of the distilled search: the policy is
  pushed to put its probability on a set of moves a searcher approves, never told which.

A factory raises ``ValueError`` when the agent's observation or action spaces do not fit
(the message names the setting); the run's config check calls it before Ray starts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import torch

from league.algos.distributions import MASKED_LOGIT, masked_log_probs
from league.registry import Registry

__all__ = [
    "AUXILIARY_LOSSES",
    "ApprovedMovesLoss",
    "AuxiliaryLoss",
    "AuxiliaryLossFactory",
    "INPUT_FEATURES",
    "InputFeatures",
    "InputFeaturesFactory",
    "auxiliary_loss",
]


class InputFeatures(Protocol):
    """Fixed features of observations ``[B, *obs_shape]``: ``[B, *obs_shape[:-1], channels]``,
    on the observations' device and dtype."""

    channels: int

    def __call__(self, obs: torch.Tensor) -> torch.Tensor: ...


class InputFeaturesFactory(Protocol):
    """Builds the features for agents of ``obs_shape`` and ``num_actions`` (ValueError if they do not fit)."""

    def __call__(self, obs_shape: tuple[int, ...], num_actions: int) -> InputFeatures: ...


class AuxiliaryLoss(Protocol):
    """An extra term of an actor-critic loss (``aux_loss_coef`` times it is added)."""

    def targets(self, obs: torch.Tensor, action_mask: torch.Tensor) -> torch.Tensor:
        """A per-row target column (first dimension ``B``), computed once per update."""
        ...

    def loss(self, dist_inputs: torch.Tensor, action_mask: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """The term (0-dim) on one minibatch: the policy's outputs, masks and the rows' targets."""
        ...


#: Builds the loss for agents of ``obs_shape`` and ``num_actions`` with the config's
#: ``aux_loss_kwargs``: ``factory(obs_shape, num_actions, **aux_loss_kwargs)`` (ValueError if they
#: do not fit; TypeError for a keyword it does not take). ``...``: each factory takes its own
#: keywords (a class such as ``ExactSearchLoss(obs_shape, num_actions, depth=4)``), which a
#: ``Protocol`` with ``**kwargs: Any`` would refuse.
AuxiliaryLossFactory = Callable[..., AuxiliaryLoss]


#: Input features by the name ``model_kwargs.input_features`` takes.
INPUT_FEATURES: Registry[InputFeaturesFactory] = Registry("input features")
#: Auxiliary losses by the name ``aux_loss`` takes.
AUXILIARY_LOSSES: Registry[AuxiliaryLossFactory] = Registry("auxiliary loss")


def auxiliary_loss(name: str | None, obs_shape: tuple[int, ...], num_actions: int,
                   kwargs: dict[str, Any] | None = None, setting: str = "algo.params.aux_loss") -> AuxiliaryLoss | None:
    """The auxiliary loss ``name`` built for this agent, or None for ``name=None``."""
    if name is None:
        return None
    factory = AUXILIARY_LOSSES.get(name, setting)
    try:
        return factory(tuple(obs_shape), int(num_actions), **(kwargs or {}))
    except TypeError as err:  # a keyword the loss does not take
        raise ValueError(f"{setting}_kwargs {kwargs} rejected by {name!r}: {err}") from err


class ApprovedMovesLoss:
    """``-log P(approved moves)``: the policy's total probability on the moves ``approve``
    marks (``bool[B, A]`` from observations and masks), as expert iteration distils a search
    (Anthony et al. 2017). It raises the approved set's mass and says nothing about the
    choice within it; rows where no legal move is approved add 0."""

    def __init__(self, approve: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
        self.approve = approve

    def targets(self, obs: torch.Tensor, action_mask: torch.Tensor) -> torch.Tensor:
        """``bool[B, A]``: the approved moves of each row."""
        return self.approve(obs, action_mask)

    def loss(self, dist_inputs: torch.Tensor, action_mask: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Mean over rows of minus the log of the approved moves' probability (0 on rows approving none)."""
        approved = masked_log_probs(dist_inputs, action_mask).masked_fill(~targets, MASKED_LOGIT).logsumexp(-1)
        return -torch.where(targets.any(-1), approved, torch.zeros_like(approved)).mean()
