"""K models of one structure trained as one: stacked parameters, vmapped calls, stacked Adam.

:class:`StackedModels` copies the trainable parameters of K same-shaped models into one
``[K, P]`` leaf tensor, runs a per-member function over them with ``torch.func.vmap`` +
``functional_call`` (one kernel per op for all K members instead of K), clips gradient
norms and takes Adam steps per member on the flat tensor, and finally writes parameters
and optimiser state back into the members' own modules and ``torch.optim.Adam`` s. The
members stay the source of truth between updates, so stacking is invisible outside one
update call. Nothing here knows any algorithm: algorithms use it in their
``learn_stacked`` hook (PPO through :func:`league.algos.ppo_stacked.stacked_minibatch_sgd`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, vmap

from league.batch import SampleBatch

__all__ = ["StackedModels", "stack_signature", "stack_columns", "to_device"]


def _trainable(model: nn.Module) -> list[tuple[str, nn.Parameter]]:
    return [(n, p) for n, p in model.named_parameters() if p.requires_grad]


def _adam_compatible(model: nn.Module, optimizer: torch.optim.Optimizer | None) -> bool:
    # The stacked step re-implements plain Adam only; anything else (weight decay,
    # AMSGrad, other optimisers, several param groups) is updated one policy at a time.
    if type(optimizer) is not torch.optim.Adam or len(optimizer.param_groups) != 1:
        return False
    group = optimizer.param_groups[0]
    if group["weight_decay"] or group["amsgrad"] or group["maximize"] or group.get("differentiable"):
        return False
    params = [p for _, p in _trainable(model)]
    return len(group["params"]) == len(params) and all(a is b for a, b in zip(group["params"], params))


def stack_signature(model: nn.Module, optimizer: torch.optim.Optimizer | None) -> Hashable | None:
    """Equal for models :class:`StackedModels` can stack together; ``None`` if this one can't be."""
    if optimizer is not None and not _adam_compatible(model, optimizer):
        return None
    params = tuple((n, tuple(p.shape), p.dtype, p.requires_grad) for n, p in model.named_parameters())
    buffers = tuple((n, tuple(b.shape), b.dtype) for n, b in model.named_buffers())
    devices = {t.device for t in (*model.parameters(), *model.buffers())}
    return (type(model), params, buffers, tuple(sorted(map(str, devices))))


def stack_columns(batches: Sequence[SampleBatch], names: Sequence[str], device: torch.device) -> dict[str, torch.Tensor]:
    """Columns of K equally long batches as ``[K, N, ...]`` tensors on ``device``.

    One host-side stack and one host-to-device copy per column; on CUDA the copy is made
    from pinned memory without blocking, so it overlaps with work already queued.
    """
    return {name: to_device(np.stack([np.asarray(b[name]) for b in batches]), device) for name in names}


def to_device(array: np.ndarray, device: torch.device) -> torch.Tensor:
    """``array`` as a tensor on ``device``: zero-copy on CPU; on CUDA via pinned memory, without blocking."""
    host = torch.from_numpy(np.ascontiguousarray(array))
    if device.type != "cuda":
        return host
    return host.pin_memory().to(device, non_blocking=True)


class _StackedAdam:
    """Adam (as ``torch.optim.Adam`` with defaults otherwise) on a ``[K, P]`` tensor, per-member hyperparameters."""

    def __init__(self, optimizers: Sequence[torch.optim.Optimizer], params: Sequence[Sequence[nn.Parameter]], flat: torch.Tensor) -> None:
        dev = flat.device
        groups = [o.param_groups[0] for o in optimizers]
        self.lr = torch.tensor([float(g["lr"]) for g in groups], device=dev).unsqueeze(1)
        self.beta1 = torch.tensor([float(g["betas"][0]) for g in groups], device=dev).unsqueeze(1)
        self.beta2 = torch.tensor([float(g["betas"][1]) for g in groups], device=dev).unsqueeze(1)
        self.eps = torch.tensor([float(g["eps"]) for g in groups], device=dev).unsqueeze(1)
        self.exp_avg = torch.zeros_like(flat)
        self.exp_avg_sq = torch.zeros_like(flat)
        steps = []
        for k, (opt, member) in enumerate(zip(optimizers, params)):
            state = [opt.state.get(p, {}) for p in member]
            steps.append(float(state[0]["step"]) if state[0] else 0.0)
            if state[0]:
                self.exp_avg[k] = torch.cat([s["exp_avg"].reshape(-1) for s in state])
                self.exp_avg_sq[k] = torch.cat([s["exp_avg_sq"].reshape(-1) for s in state])
        self.step_count = torch.tensor(steps, device=dev).unsqueeze(1)

    @torch.no_grad()
    def step(self, flat: torch.Tensor, grad: torch.Tensor) -> None:
        self.step_count += 1
        self.exp_avg.lerp_(grad, 1 - self.beta1)
        self.exp_avg_sq.mul_(self.beta2).add_((1 - self.beta2) * grad * grad)
        bias1 = 1 - self.beta1**self.step_count
        bias2 = 1 - self.beta2**self.step_count
        denom = (self.exp_avg_sq.sqrt() / bias2.sqrt()).add_(self.eps)
        flat.sub_((self.lr / bias1) * self.exp_avg / denom)


def _copy_all(dst: list[torch.Tensor], src: list[torch.Tensor]) -> None:
    # One multi-tensor kernel on CUDA instead of one copy per (member, parameter).
    if dst:
        torch._foreach_copy_(dst, src)


class StackedModels:
    """K models with the same :func:`stack_signature`, trained as one ``[K, P]`` parameter tensor.

    ``optimizers`` (optional) must be plain ``torch.optim.Adam`` s over each model's
    trainable parameters; their state is read in and written back by :meth:`write_back`.
    """

    def __init__(self, models: Sequence[nn.Module], optimizers: Sequence[torch.optim.Optimizer] | None = None) -> None:
        if not models:
            raise ValueError("StackedModels needs at least one model")
        member_optimizers: Sequence[torch.optim.Optimizer | None] = optimizers or [None] * len(models)
        signatures = {stack_signature(m, o) for m, o in zip(models, member_optimizers)}
        if len(signatures) != 1 or None in signatures:
            raise ValueError("StackedModels needs models of one structure with plain Adam optimisers (see stack_signature)")
        self.models = list(models)
        self.template = models[0]
        named = [_trainable(m) for m in models]
        self._names = [n for n, _ in named[0]]
        self._shapes = [p.shape for _, p in named[0]]
        self._sizes = [p.numel() for _, p in named[0]]
        self._member_params = [[p for _, p in member] for member in named]
        with torch.no_grad():
            flat = torch.stack([torch.cat([p.reshape(-1) for p in member]) for member in self._member_params])
        self.flat = flat.requires_grad_(True)
        trainable = set(self._names)
        self.constants = {
            n: torch.stack([dict(m.named_parameters())[n].detach() for m in models])
            for n, _ in models[0].named_parameters()
            if n not in trainable
        }
        self.constants.update({n: torch.stack([dict(m.named_buffers())[n] for m in models]) for n, _ in models[0].named_buffers()})
        # Constants every member holds alike (a symmetry's index maps, frozen tables) go into
        # vmap unbatched: an index op with a batched index is a generic gather, 1.5x slower
        # for connect four's mirrored conv on CPU than the one index_select it is unbatched.
        self.shared = {n: c[0] for n, c in self.constants.items() if all(torch.equal(c[0], c[k]) for k in range(1, len(c)))}
        self._optimizers = list(optimizers) if optimizers is not None else None
        self._adam = _StackedAdam(self._optimizers, self._member_params, self.flat) if self._optimizers else None

    def __len__(self) -> int:
        return len(self.models)

    def params(self) -> dict[str, torch.Tensor]:
        """Trainable parameters as ``[K, *shape]`` views of the flat tensor (they carry its gradient)."""
        views = torch.split(self.flat, self._sizes, dim=1)
        return {n: v.view(len(self.models), *s) for n, v, s in zip(self._names, views, self._shapes)}

    def map(self, fn: Callable[..., Any], *member_args: Any) -> Any:
        """``fn(call, *args_k)`` for every member k at once (``torch.func.vmap`` over dim 0).

        ``call(*inputs)`` runs member k's forward; every tensor in ``member_args`` has the
        members on dim 0. ``fn`` must be vmap-safe (no ``.item()``, no data-dependent
        Python control flow) and return tensors.
        """
        template = self.template

        def one(tensors: Mapping[str, torch.Tensor], shared: Mapping[str, torch.Tensor], *args: Any) -> Any:
            def call(*inputs: Any) -> Any:
                return functional_call(template, {**tensors, **shared}, inputs)

            return fn(call, *args)

        batched = {**self.params(), **{n: c for n, c in self.constants.items() if n not in self.shared}}
        in_dims = (0, None, *([0] * len(member_args)))
        return vmap(one, in_dims=in_dims, randomness="different")(batched, self.shared, *member_args)

    def zero_grad(self) -> None:
        """Drop the accumulated gradient."""
        self.flat.grad = None

    @torch.no_grad()
    def clip_grad_norm_(self, max_norm: float) -> torch.Tensor:
        """Per-member ``clip_grad_norm_`` (as ``torch.nn.utils``); returns the ``[K]`` norms before clipping."""
        grad = self._grad()
        norms = grad.norm(dim=1)
        grad.mul_(torch.clamp(max_norm / (norms + 1e-6), max=1.0).unsqueeze(1))
        return norms

    def adam_step(self) -> None:
        """One Adam step per member with each member's own lr, betas, eps and step count."""
        if self._adam is None:
            raise ValueError("StackedModels was built without optimizers; adam_step needs them")
        self._adam.step(self.flat.data, self._grad())

    def _grad(self) -> torch.Tensor:
        grad = self.flat.grad
        if grad is None:
            raise ValueError("StackedModels has no gradient yet: run backward on a loss of map()'s output first")
        return grad

    @torch.no_grad()
    def write_back(self) -> None:
        """Copy parameters, buffers and Adam state into the members' modules and optimisers."""
        dst: list[torch.Tensor] = []
        src: list[torch.Tensor] = []
        for k, member in enumerate(self._member_params):
            for p, v in zip(member, torch.split(self.flat.data[k], self._sizes)):
                dst.append(p.data)
                src.append(v.view(p.shape))
        for k, model in enumerate(self.models):
            own = {**dict(model.named_buffers())}
            for n, stacked in self.constants.items():
                if n in own:
                    dst.append(own[n])
                    src.append(stacked[k])
        _copy_all(dst, src)
        if self._adam is not None and self._optimizers is not None:
            self._write_optimizer_state(self._adam, self._optimizers)

    def _write_optimizer_state(self, adam: _StackedAdam, optimizers: list[torch.optim.Optimizer]) -> None:
        dst: list[torch.Tensor] = []
        src: list[torch.Tensor] = []
        steps = adam.step_count.squeeze(1).tolist()  # one device sync, not one per member
        for opt, member, step, m_k, v_k in zip(optimizers, self._member_params, steps, adam.exp_avg, adam.exp_avg_sq):
            for p, m, v in zip(member, torch.split(m_k, self._sizes), torch.split(v_k, self._sizes)):
                state = opt.state[p]
                if not state:
                    # Where torch.optim.Adam keeps it: fused and capturable Adam step on the
                    # parameter's device, plain Adam on the host.
                    fused = opt.param_groups[0].get("fused") or opt.param_groups[0].get("capturable")
                    state["step"] = torch.tensor(0.0, dtype=torch.float32, device=p.device if fused else "cpu")
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"].fill_(step)
                dst += [state["exp_avg"], state["exp_avg_sq"]]
                src += [m.view(p.shape), v.view(p.shape)]
        _copy_all(dst, src)
