"""Samplers: which stored rows a replay buffer returns.

* :class:`UniformSampler` -- ``n`` slots uniformly with replacement.
* :class:`PrioritizedSampler` -- proportional prioritized replay (Schaul et al. 2016):
  slot ``i`` is drawn with ``P(i) = p_i^alpha / sum_k p_k^alpha``, one draw per
  equal-mass segment (stratified), with float32 importance ``weights``
  ``(N P(i))^-beta`` divided by the largest possible one (that of the lowest-priority
  slot). Priorities live in the C++ sum and min segment trees.

A sample is a :class:`~league.batch.SampleBatch` of the stored columns plus int64
``batch_indexes`` (the slots; pass them to ``update_priorities``) and, prioritized,
``weights``. On a :class:`~league.replay.storage.RingStorage` the whole draw (tree
descent, weights, gather) runs in its C++ core; on other storages the sampler draws the
slots (the prioritized one from C++ trees of its own) and the storage gathers them.

New rows enter a prioritized sampler with the largest priority seen so far (1.0
initially) unless the writer passes priorities. Priorities must be finite and > 0.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

import league._core as _core
from league.batch import SampleBatch
from league.batch import Columns as C
from league.replay.component import Component
from league.replay._checks import batch_size_of, check_priorities, real, unit_interval
from league.replay.storage import RingStorage, Storage

__all__ = ["Sampler", "UniformSampler", "PrioritizedSampler"]

_EMPTY = "cannot sample from an empty replay buffer; add rows first"
_SLOT = "_slot"  # the one-byte column of a prioritized sampler's own tree core


class Sampler(Component):
    """What every sampler offers. A buffer attaches it to its storage once (:meth:`_attach`)."""

    prioritized: ClassVar[bool] = False
    #: Column names a sample adds; a stored batch may not use them.
    reserved: ClassVar[tuple[str, ...]] = (C.BATCH_INDEXES,)

    _storage: Storage | None = None

    def _attach(self, storage: Storage, seed: int) -> None:
        raise NotImplementedError

    def sample(self, batch_size: int, beta: float | None = None) -> SampleBatch:
        """``batch_size`` stored rows plus ``batch_indexes`` (and the sampler's extra columns);
        ``beta``: the importance-weight exponent of a prioritized sampler (None: its own)."""
        raise NotImplementedError

    def _attached(self) -> Storage:
        """The storage :meth:`_attach` gave (a buffer attaches its sampler when built)."""
        if self._storage is None:
            raise RuntimeError(f"{type(self).__name__} is not attached to a storage: use it through a ReplayBuffer")
        return self._storage

    def check_priorities(self, priorities: Any, rows: int) -> np.ndarray | None:
        """Validate priorities a writer was given for ``rows`` new rows (before anything is written)."""
        if priorities is not None:
            raise TypeError(f"a {type(self).__name__} takes no priorities")
        return None

    def on_write(self, slots: np.ndarray, priorities: np.ndarray | None,
                 overwritten: np.ndarray | None = None) -> None:
        """Rows were written to ``slots`` of a storage that does not sample by itself.

        ``overwritten``: priorities of rows of the same batch that were written and then
        overwritten by later ones (a batch larger than a ring); they count as seen.
        """

    def update_priorities(self, batch_indexes: Any, priorities: Any) -> None:
        raise TypeError(f"a {type(self).__name__} has no priorities (use PrioritizedSampler)")


class UniformSampler(Sampler):
    """Draws slots uniformly with replacement from the stored rows."""

    kind = "uniform"

    def __init__(self) -> None:
        self._core: Any = None
        self._rng: np.random.Generator | None = None

    def _attach(self, storage: Storage, seed: int) -> None:
        self._storage = storage
        if isinstance(storage, RingStorage):  # fused: the C++ ring samples itself
            storage._attach(seed, None)
            self._core = storage._core
        else:
            self._rng = np.random.Generator(np.random.PCG64(seed))

    def sample(self, batch_size: int, beta: Any = None) -> SampleBatch:
        """``batch_size`` rows drawn uniformly (with replacement) plus ``batch_indexes``."""
        if beta is not None:
            raise TypeError("a UniformSampler takes no beta")
        core = self._core
        if core is not None:
            n = batch_size if type(batch_size) is int else batch_size_of(batch_size)
            return SampleBatch._trusted(core.sample(n), n)
        n = batch_size_of(batch_size)
        storage, rng = self._attached(), self._rng
        if rng is None:  # not reached: attaching a storage that does not sample itself makes one
            raise RuntimeError("UniformSampler has no generator")
        if not len(storage):
            raise ValueError(_EMPTY)
        slots = rng.integers(0, len(storage), n, dtype=np.int64)
        out = storage.get(slots)
        out[C.BATCH_INDEXES] = slots
        return SampleBatch._trusted(out, n)

    def state_dict(self) -> dict[str, Any]:
        # On a RingStorage the random stream is the core's, saved with the storage.
        return {} if self._rng is None else {"rng": self._rng.bit_generator.state}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if self._rng is not None:
            self._rng.bit_generator.state = state["rng"]


class PrioritizedSampler(Sampler):
    """Proportional prioritized sampling: ``PrioritizedSampler(alpha=0.6, beta=0.4)``.

    ``alpha`` (>= 0, 0 = uniform) is the priority exponent; ``beta`` in [0, 1] the
    importance-weight exponent of :meth:`sample` unless a call gives its own (a schedule).
    """

    kind = "prioritized"
    prioritized = True
    reserved = (C.BATCH_INDEXES, C.WEIGHTS)

    def __init__(self, alpha: float = 0.6, beta: float = 0.4) -> None:
        alpha = real(alpha, "alpha")
        _core.ReplayCore(1, 0, alpha)  # the core's own check: finite and >= 0
        self.alpha = alpha
        self.beta = unit_interval(beta, "beta")
        self._core: Any = None  # the storage's core (fused) ...
        self._tree: Any = None  # ... or trees of our own over a one-byte column

    def _attach(self, storage: Storage, seed: int) -> None:
        self._storage = storage
        if isinstance(storage, RingStorage):  # fused: the C++ ring keeps the trees
            storage._attach(seed, self.alpha)
            self._core = storage._core
        else:
            self._tree = _core.ReplayCore(storage.capacity, seed, self.alpha)

    @property
    def _trees(self) -> Any:
        return self._core if self._core is not None else self._tree

    def sample(self, batch_size: int, beta: float | None = None) -> SampleBatch:
        """Stratified prioritized draw plus ``weights`` and ``batch_indexes``; ``beta`` defaults to ``self.beta``."""
        n = batch_size if type(batch_size) is int else batch_size_of(batch_size)
        b = self.beta if beta is None else beta if type(beta) is float else real(beta, "beta")
        core = self._core
        if core is not None:
            return SampleBatch._trusted(core.sample(n, b), n)
        drawn = self._tree.sample(n, b)  # checks n, beta and emptiness
        slots = drawn[C.BATCH_INDEXES]
        out = self._attached().get(slots)
        out[C.WEIGHTS] = drawn[C.WEIGHTS]
        out[C.BATCH_INDEXES] = slots
        return SampleBatch._trusted(out, n)

    def check_priorities(self, priorities: Any, rows: int) -> np.ndarray | None:
        if priorities is None:
            return None
        return check_priorities(priorities, rows, self.alpha, self._attached().capacity)

    def on_write(self, slots: np.ndarray, priorities: np.ndarray | None,
                 overwritten: np.ndarray | None = None) -> None:
        tree = self._tree
        size = len(tree)
        new = slots >= size
        fresh = int(new.sum())
        if fresh:
            # The trees append in slot order; writers fill the slots after the stored ones.
            rows = np.flatnonzero(new)[np.argsort(slots[new], kind="stable")]
            if not np.array_equal(slots[rows], np.arange(size, size + fresh)):
                raise AssertionError("writers fill new slots right after the stored ones")  # a writer bug
            tree.add({_SLOT: np.zeros(fresh, np.uint8)}, None if priorities is None else priorities[rows])
        if fresh < len(slots):
            old = slots[~new]
            p = np.full(len(old), tree.max_priority) if priorities is None else priorities[~new]
            tree.update_priorities(old, p)
        if overwritten is not None and len(overwritten) and priorities is not None:
            # The largest priority seen includes rows overwritten within this batch (as the C++
            # ring counts them): write them to one slot, then its own priority again.
            slot = int(slots[-1])
            tree.update_priorities(np.full(len(overwritten) + 1, slot), np.append(overwritten, priorities[-1]))

    def update_priorities(self, batch_indexes: Any, priorities: Any) -> None:
        """Set the priorities of stored slots (e.g. ``batch["batch_indexes"]`` from a sample)."""
        self._trees.update_priorities(batch_indexes, priorities)

    @property
    def max_priority(self) -> float:
        """Largest priority seen so far: the default for new rows."""
        return self._trees.max_priority

    def leaf_values(self) -> np.ndarray:
        """``p ** alpha`` per stored slot: sampling probabilities are proportional to it."""
        return self._trees.leaf_values()

    def tree_roots(self) -> tuple[float, float]:
        """``(sum, min)`` of ``p ** alpha`` over stored slots, as the sum and min trees hold them."""
        return self._trees.tree_roots()

    def config(self) -> dict[str, Any]:
        return {"kind": self.kind, "alpha": self.alpha, "beta": self.beta}

    def state_dict(self) -> dict[str, Any]:
        if self._tree is None:  # the trees live in the RingStorage's core, saved with it
            return {}
        state = self._tree.state()
        return {"size": state["size"], "rng": [int(w) for w in state["rng"]], "leaf_values": state["leaf_values"],
                "max_priority": state["max_priority"]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if self._tree is None:
            return
        storage = self._attached()
        size, capacity = int(state["size"]), storage.capacity
        if size != len(storage):
            raise ValueError(f"saved priorities cover {size} slots but the storage holds {len(storage)}")
        self._tree.restore([(_SLOT, np.zeros(size, np.uint8))], size, size if size < capacity else 0,
                           [int(w) for w in state["rng"]], state["leaf_values"], float(state["max_priority"]))
