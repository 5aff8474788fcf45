"""Models as the inference server runs them: on its device, and sliced across samplers' rows.

:func:`place` puts a policy's model on a device behind hooks, so the policy around it runs
unchanged (CPU tensors in and out); :class:`Precomputed` hands one sampler's policy its slice
of a forward pass run once over several samplers' rows (:func:`split_rows`).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

__all__ = ["Precomputed", "place", "split_rows"]


def _to_cpu(out: Any) -> Any:  # a forward's output (a tensor or a tuple of them) back on the CPU
    if isinstance(out, torch.Tensor):
        return out.cpu()
    if isinstance(out, tuple):
        return tuple(_to_cpu(o) for o in out)
    return out


def place(model: nn.Module, device: torch.device) -> None:
    """Move ``model`` to ``device``; off CPU, its forward takes and returns CPU tensors (hooks),
    so the policy around it (which calls ``model(torch.from_numpy(obs))`` and samples on CPU
    with its own CPU generator) runs unchanged and draws exactly what it would locally."""
    model.to(device)
    if device.type == "cpu":
        return
    model.register_forward_pre_hook(lambda _m, args: tuple(a.to(device, non_blocking=True) if isinstance(a, torch.Tensor) else a for a in args))
    model.register_forward_hook(lambda _m, _args, out: _to_cpu(out))


class Precomputed:
    """Stands in for a shared model during one client's ``compute_actions``: called with the
    client's rows, it returns their slice of the forward pass already run over every client's
    rows; called with anything else, or asked for anything else, it is the model itself."""

    def __init__(self, model: nn.Module, rows: torch.Tensor, outputs: Any) -> None:
        self._model, self._rows, self._outputs = model, rows, outputs

    def __call__(self, x: Any, *args: Any, **kwargs: Any) -> Any:
        if not args and not kwargs and isinstance(x, torch.Tensor) and x.shape == self._rows.shape and torch.equal(x, self._rows):
            return self._outputs
        return self._model(x, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)


def split_rows(out: Any, start: int, stop: int) -> Any:
    """Rows ``start:stop`` of a model's output (a tensor, or a tuple of them: ``(logits, value)``)."""
    if isinstance(out, torch.Tensor):
        return out[start:stop]
    if isinstance(out, tuple):
        return tuple(split_rows(o, start, stop) for o in out)
    raise TypeError(f"model output of type {type(out).__name__} cannot be split by rows")
