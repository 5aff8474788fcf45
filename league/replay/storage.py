"""Storages: where a replay buffer's rows live.

A storage holds up to ``capacity`` rows in slots ``0 .. capacity - 1``; its schema (column
names, dtypes, trailing shapes) is fixed by the first batch written, and later batches
must match it exactly (dtypes are never converted). Slots are filled from 0 upwards, so
the stored rows are always slots ``[0, len)``; ``batch_indexes`` in a sample are slots.

* :class:`RingStorage` -- the C++ ring (``league._core.ReplayCore``): rows are appended at
  its cursor, the oldest overwritten once full. It carries the sampling kernels beside the
  rows (a uniform gather, or the sum/min segment trees of a prioritized sampler, under the
  same lock), so a sampler on it runs entirely in C++ with the GIL released. It cannot
  write a chosen slot: writers that need that (:class:`~league.replay.writers.ReservoirWriter`)
  refuse it at composition time.
* :class:`ArrayStorage` -- numpy columns with writes to any slots. Samplers on it draw
  slots themselves (the prioritized one still descends the C++ trees) and gather with
  numpy. Not shared between threads except through its :class:`~league.replay.ReplayBuffer`,
  which serialises the calls that touch it.

A storage belongs to one buffer: the buffer attaches it (and its sampler configures it).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

import league._core as _core
from league.batch import SampleBatch
from league.replay._checks import Schema, bind, capacity_of, infer_schema

__all__ = ["Storage", "RingStorage", "ArrayStorage"]


class Storage:
    """What every storage offers: capacity, length, schema, a copy of its rows, state.

    ``fused`` storages run their samplers' kernels themselves (the C++ ring);
    ``random_access`` ones accept writes to any slots (:meth:`ArrayStorage.write`).
    """

    kind: ClassVar[str] = ""
    fused: ClassVar[bool] = False
    random_access: ClassVar[bool] = False

    _owner: object | None = None

    @property
    def capacity(self) -> int:
        """The most rows the storage holds."""
        raise NotImplementedError

    def __len__(self) -> int:
        """Rows stored: slots ``[0, len)``."""
        raise NotImplementedError

    def schema(self) -> Schema:
        """``(name, dtype, trailing shape)`` per column; empty before the first write."""
        raise NotImplementedError

    def stored(self) -> SampleBatch:
        """A copy of every stored row in slot order (row ``i`` is slot ``i``)."""
        raise NotImplementedError

    def config(self) -> dict[str, Any]:
        """JSON constructor arguments plus ``kind`` (what save files record)."""
        return {"kind": self.kind, "capacity": self.capacity}

    def state_dict(self) -> dict[str, Any]:
        """Contents as plain values and numpy arrays (no pickle needed to store it)."""
        raise NotImplementedError

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` output into this (empty) storage."""
        raise NotImplementedError

    # What random-access storages add (:class:`ArrayStorage`); the others refuse it.
    def bind(self, columns: dict[str, np.ndarray], reserved: tuple[str, ...]) -> tuple[int, list[np.ndarray], Schema]:
        """Validate ``columns``: ``(rows, arrays in schema order, schema)`` (random-access storages)."""
        raise TypeError(f"{type(self).__name__} is not a random-access storage")

    def write(self, slots: np.ndarray, bound: tuple[int, list[np.ndarray], Schema], take: Any = slice(None)) -> None:
        """Copy rows ``take`` of a bound batch into ``slots`` (random-access storages)."""
        raise TypeError(f"{type(self).__name__} is not a random-access storage")

    def get(self, slots: np.ndarray) -> dict[str, np.ndarray]:
        """Rows at ``slots`` (random-access storages)."""
        raise TypeError(f"{type(self).__name__} is not a random-access storage")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(capacity={self.capacity})"


class RingStorage(Storage):
    """The C++ columnar ring: ``capacity`` rows, appended at a cursor, oldest overwritten.

    ``RingStorage(capacity)``; the buffer it is composed into builds its C++ core with
    the buffer's seed and, for a :class:`~league.replay.samplers.PrioritizedSampler`, its
    ``alpha`` (the priority trees then live in the core beside the rows and are saved
    with them).
    """

    kind = "ring"
    fused = True

    def __init__(self, capacity: int) -> None:
        capacity = capacity_of(capacity)
        self._capacity = capacity
        self._core = _core.ReplayCore(capacity, 0)  # replaced when a buffer attaches the storage

    def _attach(self, seed: int, alpha: float | None) -> None:
        """Build the core for its buffer: the random stream and (prioritized) the trees' alpha."""
        self._core = _core.ReplayCore(self._capacity, seed, alpha)

    @property
    def capacity(self) -> int:
        return self._capacity

    def __len__(self) -> int:
        return len(self._core)

    def schema(self) -> Schema:
        return self._core.schema()

    def stored(self) -> SampleBatch:
        state = self._core.state()
        return SampleBatch._trusted(dict(state["columns"]), state["size"])

    def state_dict(self) -> dict[str, Any]:
        """Rows, cursor and random stream; with priorities, the leaf values and the running maximum."""
        state = self._core.state()
        out: dict[str, Any] = {"size": state["size"], "next": state["next"], "rng": [int(w) for w in state["rng"]],
                               "columns": [name for name, _ in state["columns"]]}
        for i, (_, column) in enumerate(state["columns"]):
            out[f"column_{i}"] = column
        if state["leaf_values"] is not None:
            out["leaf_values"] = state["leaf_values"]
            out["max_priority"] = state["max_priority"]
        return out

    def load_state_dict(self, state: dict[str, Any]) -> None:
        prioritized = self._core.alpha is not None
        if prioritized != ("leaf_values" in state):
            raise ValueError("the state's priorities do not match this storage's sampler "
                             f"({'prioritized' if prioritized else 'uniform'})")
        names = state["columns"]
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise TypeError("columns must be a list of names")
        columns = [(name, state[f"column_{i}"]) for i, name in enumerate(names)]
        leaves = state["leaf_values"] if prioritized else None
        max_priority = float(state["max_priority"]) if prioritized else 1.0
        self._core.restore(columns, int(state["size"]), int(state["next"]), [int(w) for w in state["rng"]],
                           leaves, max_priority)


class ArrayStorage(Storage):
    """``capacity`` rows in numpy columns, written at any slots (what a reservoir needs).

    Columns are allocated at the first write, from its schema. Writers call
    :meth:`bind` (validate a batch against the schema, fixing it on the first batch)
    and then :meth:`write` (copy chosen rows into chosen slots); samplers call :meth:`get`.
    """

    kind = "array"
    random_access = True

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity_of(capacity)
        self._schema: Schema = []
        self._columns: list[np.ndarray] = []
        self._size = 0

    @property
    def capacity(self) -> int:
        return self._capacity

    def __len__(self) -> int:
        return self._size

    def schema(self) -> Schema:
        return list(self._schema)

    def bind(self, columns: dict[str, np.ndarray], reserved: tuple[str, ...]) -> tuple[int, list[np.ndarray], Schema]:
        """Validate ``columns``: ``(rows, arrays in schema order, schema)``; nothing is stored yet."""
        schema = self._schema or infer_schema(columns, reserved)
        rows, arrays = bind(schema, columns)
        return rows, arrays, schema

    def write(self, slots: np.ndarray, bound: tuple[int, list[np.ndarray], Schema], take: Any = slice(None)) -> None:
        """Copy rows ``take`` of a bound batch into ``slots`` (the first write fixes the schema).

        New slots must continue the filled range (``len``, ``len + 1``, ... in order).
        """
        _, arrays, schema = bound
        if not self._schema:
            self._schema = schema
            self._columns = [np.empty((self._capacity,) + trailing, dtype) for _, dtype, trailing in schema]
        for column, a in zip(self._columns, arrays):
            column[slots] = a[take]
        if len(slots):
            self._size = max(self._size, int(slots.max()) + 1)

    def get(self, slots: np.ndarray) -> dict[str, np.ndarray]:
        """Rows at ``slots`` (a copy), as a column dict."""
        return {name: column[slots] for (name, _, _), column in zip(self._schema, self._columns)}

    def stored(self) -> SampleBatch:
        return SampleBatch._trusted(
            {name: column[: self._size].copy() for (name, _, _), column in zip(self._schema, self._columns)}, self._size
        )

    def state_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"size": self._size, "columns": [name for name, _, _ in self._schema]}
        for i, column in enumerate(self._columns):
            out[f"column_{i}"] = column[: self._size].copy()
        if not self._columns:  # a schema-less storage has no arrays to carry dtypes
            out["columns"] = []
        return out

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if self._schema:
            raise ValueError("load_state_dict needs a fresh storage")
        names, size = state["columns"], int(state["size"])
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise TypeError("columns must be a list of names")
        if not 0 <= size <= self._capacity:
            raise ValueError(f"saved size {size} does not fit capacity {self._capacity}")
        if not names:
            if size:
                raise ValueError("saved storage has rows but no columns")
            return
        arrays = {}
        for i, name in enumerate(names):
            a = state[f"column_{i}"]
            if not isinstance(a, np.ndarray) or a.ndim < 1 or len(a) != size:
                raise ValueError(f"saved column '{name}' does not hold {size} rows")
            arrays[name] = a
        if len(arrays) != len(names):
            raise ValueError(f"saved column names repeat: {names}")
        schema = infer_schema(arrays, ())
        rows, bound = bind(schema, arrays)
        self.write(np.arange(size, dtype=np.int64), (rows, bound, schema))
