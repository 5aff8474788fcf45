"""A model wrapper that answers for the model it wraps.

:class:`~league.algos.models.InputFeaturesModel` (input features) and
:class:`~league.algos.symmetry.SymmetrizedModel` (a board's symmetries) each wrap a model in
``self.base`` and change only its inputs or how its outputs combine. Code that reads the
model's own attributes (``value_norm``, ``obs_norm``, ``log_std``, ...) must find
them through either wrapper, in any order of wrapping.
"""

from __future__ import annotations

from typing import Any

from torch import nn

__all__ = ["ModelWrapper"]


class ModelWrapper(nn.Module):
    """An ``nn.Module`` holding the wrapped model as ``base``; an attribute it lacks is ``base``'s."""

    base: nn.Module

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(super().__getattr__("base"), name)
