"""Replay buffers composed of a storage, a sampler and a writer (C++ underneath).

A :class:`ReplayBuffer` is ``storage + sampler + writer``, each replaceable:

=============  ==============================================================================
storages       :class:`RingStorage` (the C++ ring, ``league._core``: append-only, sampling
               kernels beside the rows), :class:`ArrayStorage` (numpy, writes any slot)
samplers       :class:`UniformSampler`, :class:`PrioritizedSampler` (C++ sum/min segment
               trees; ``alpha``, ``beta``, ``update_priorities``)
writers        :class:`RingWriter` (FIFO overwrite), :class:`NStepWriter` (n-step returns per
               agent trajectory, through an inner writer), :class:`ReservoirWriter`
               (reservoir sampling, NFSP's supervised buffer; needs ``ArrayStorage``)
=============  ==============================================================================

::

    ReplayBuffer(RingStorage(50_000), PrioritizedSampler(alpha=0.6), NStepWriter(n=3, gamma=0.99))
    ReplayBuffer(ArrayStorage(2_000_000), UniformSampler(), ReservoirWriter(), seed=0)   # NFSP's SL buffer
    ReplayBuffer(10_000)                       # RingStorage + UniformSampler + RingWriter
    PrioritizedReplayBuffer(10_000, alpha=0.6)  # RingStorage + PrioritizedSampler + RingWriter

:class:`MultiAgentReplayBuffer` keeps one buffer per policy id (made on demand from a
template composition or a class and its arguments), which DQN's plan uses.

Schemas. A storage's schema (column names, dtypes, trailing shapes) is fixed by the first
batch written; later batches must match it exactly: a missing or extra column or another
trailing shape raises ``ValueError``, another dtype ``TypeError`` (dtypes are never
converted: cast first), both naming the column and both schemas. Non-contiguous arrays
are copied once. Every input (columns, priorities: finite and > 0, NaN refused; batch
sizes, beta in [0, 1], indexes) is validated once, before anything changes. On the C++
ring the checks run in the bindings with the GIL held; the copies and tree work then run
with the GIL released under a per-buffer mutex, so one thread may add while another
samples and updates priorities. Other compositions serialise their Python-side work with
a lock of the buffer's own.

File format (``save``/``load``, :meth:`ReplayBuffer.state_dict`; no pickle, nothing from
the file is executed): an uncompressed ``.npz`` archive read with
``np.load(allow_pickle=False)`` holding

* ``meta``: a uint8 array with UTF-8 JSON. Version 1, for a ring with uniform or
  prioritized sampling (``beta`` 0.4) written FIFO: ``{"format": "league.replay",
  "version": 1, "kind": "uniform" | "prioritized", "capacity", "alpha", "size", "next",
  "rng" (4 uint64 words of the xoshiro256** state), "max_priority", "columns": [names]}``
  with arrays ``column_<i>`` (rows ``[0, size)`` of the i-th column in slot order: slot =
  the value ``batch_indexes`` refers to) and, prioritized, ``leaf_values``
  (``float64[size]``, ``p ** alpha`` per slot). Version 2, any other composition:
  ``{"format": "league.replay", "version": 2, "kind": "composed", "state": ...}`` where
  ``state`` is :meth:`ReplayBuffer.state_dict` (``config``, ``storage``, ``sampler``,
  ``writer``: an n-step writer's held rows and a reservoir's count and random state
  included) with each array replaced by ``{"__array__": name}``, the array stored under
  that name (``storage/column_0``, ...).

A multi-agent file holds ``meta`` with ``"format": "league.replay.multi_agent"``, the
buffer kind and arguments (version 2: the template composition) and one such per-policy
record, with arrays prefixed ``p<k>/``.
"""

from league.replay.buffer import MultiAgentReplayBuffer, PrioritizedReplayBuffer, ReplayBuffer
from league.replay.files import ReplayFileError
from league.replay.samplers import PrioritizedSampler, Sampler, UniformSampler
from league.replay.storage import ArrayStorage, RingStorage, Storage
from league.replay.writers import (
    DISCOUNTS,
    N_STEP_RETURNS,
    NEXT_ACTION_MASK,
    NStepWriter,
    ReservoirWriter,
    RingWriter,
    Writer,
    n_step_transitions,
)

__all__ = [
    "ReplayBuffer", "PrioritizedReplayBuffer", "MultiAgentReplayBuffer", "ReplayFileError",
    "Storage", "RingStorage", "ArrayStorage",
    "Sampler", "UniformSampler", "PrioritizedSampler",
    "Writer", "RingWriter", "NStepWriter", "ReservoirWriter",
    "n_step_transitions", "N_STEP_RETURNS", "DISCOUNTS", "NEXT_ACTION_MASK",
]
