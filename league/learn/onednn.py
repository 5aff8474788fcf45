"""fp32 matrix products on CPU through oneDNN where oneDNN keeps them in fp32.

PyTorch sends a CPU float32 ``mm``/``addmm`` (every ``nn.Linear``) to its BLAS (MKL in the
official wheels) and its convolutions to oneDNN. On AMD CPUs MKL's sgemm runs about half
as fast as oneDNN's AVX-512 kernels: on this project's 2-core EPYC a 1024x768 by 768x128
product takes 2.4 ms in MKL and 1.2 ms in oneDNN (one thread), and the default job's PPO
update is 1.4x faster with its products in oneDNN (``benchmarks/bench_learner_update.py``).

PyTorch routes fp32 products to oneDNN only when its fp32 "math mode" allows bfloat16
(``torch.backends.mkldnn.matmul.fp32_precision = "bf16"``: oneDNN's ``fpmath_mode``). That
mode *permits* oneDNN to round the inputs to bfloat16; whether it does depends on the
CPU: with AMX it does, without it (this machine: AVX-512, its bf16 dot products
included) oneDNN runs its fp32 kernel (``ONEDNN_VERBOSE``: ``brg_matmul:avx512_core``,
``f32``). So :func:`fp32_matmuls` turns the mode on only where a probe shows the products
stay exact in fp32 (:func:`onednn_keeps_fp32`): a learner's fp32 update stays fp32 on
every CPU, only faster where oneDNN's fp32 kernel is the faster one.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any

import torch

__all__ = ["MIN_ROWS", "fp32_matmuls", "onednn_keeps_fp32"]


@functools.cache
def onednn_keeps_fp32() -> bool:
    """Whether this CPU's oneDNN computes fp32 products in fp32 under the bf16 math mode.

    The probe: rows of ``1 + 2**-12`` times columns of ones, 128 terms. Rounded to bfloat16
    (8 significant bits) the rows would be 1 and the product 128; in fp32 it is exactly
    ``128 * (1 + 2**-12)``. False as well where PyTorch has no oneDNN.
    """
    if not torch.backends.mkldnn.is_available() or not hasattr(torch.backends.mkldnn, "matmul"):
        return False  # no oneDNN, or a torch before 2.9 (no fp32 math modes)
    a = torch.full((128, 128), 1 + 2**-12)
    with _math_mode("bf16"):
        product = a @ torch.ones(128, 128)
    return bool(torch.equal(product, torch.full((128, 128), 128 * (1 + 2**-12))))


@contextlib.contextmanager
def _math_mode(mode: str) -> Iterator[None]:
    # getattr: torch.backends.mkldnn gains its ``matmul`` settings at import (a module subclass),
    # which torch's type stubs do not declare
    matmul: Any = getattr(torch.backends.mkldnn, "matmul")
    before = matmul.fp32_precision
    matmul.fp32_precision = mode
    try:
        yield
    finally:
        matmul.fp32_precision = before


#: Fewest rows of a batch whose products go to oneDNN in :func:`fp32_matmuls` when it is given
#: ``rows``. Below it a product is bound by the call, not the kernel, and oneDNN's call costs more
#: than MKL's: a PPO policy's forward pass (an MLP of two 128-wide layers) took 240-310 us in
#: oneDNN against 115-185 us in MKL on 8-64 rows, on this project's 2-core EPYC (2026-11-29);
#: from 128 rows on (a board game's sampler batch) the two were within noise there, and oneDNN
#: was faster on the CPU this module was measured on first.
MIN_ROWS = 128


def fp32_matmuls(rows: int | None = None) -> contextlib.AbstractContextManager[None]:
    """A block whose CPU fp32 products run in oneDNN where :func:`onednn_keeps_fp32` (and
    ``rows``, the batch's, is None or at least :data:`MIN_ROWS`), else as they are. The mode is
    process-wide while the block runs (another thread's products in that time take the same,
    still fp32, path)."""
    if rows is not None and rows < MIN_ROWS:
        return contextlib.nullcontext()
    return _math_mode("bf16") if onednn_keeps_fp32() else contextlib.nullcontext()
