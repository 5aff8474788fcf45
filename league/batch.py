"""Columnar sample batches: the unit of data between samplers, operators and learners.

A :class:`SampleBatch` is a mapping from column name to a numpy array whose first
dimension is the row count (``obs: float32[N, 6, 7, 2]``, ``actions: int64[N]``...).
A :class:`MultiAgentBatch` maps policy ids to sample batches and records how many
environment steps produced them. Concatenation runs in C++ (``league._core``):
one sizing pass, one allocation per column, copies with the GIL released.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, KeysView, Mapping
from typing import Any, overload

import numpy as np

import league._core as _core

__all__ = ["SampleBatch", "MultiAgentBatch", "Columns"]


class Columns:
    """Standard column names written by samplers and read by algorithms."""

    OBS = "obs"
    ACTIONS = "actions"
    REWARDS = "rewards"
    TERMINATEDS = "terminateds"
    TRUNCATEDS = "truncateds"
    ACTION_MASK = "action_mask"
    ACTION_LOGP = "action_logp"
    VF_PREDS = "vf_preds"
    EPS_ID = "eps_id"
    AGENT_INDEX = "agent_index"
    T = "t"
    NEXT_OBS = "next_obs"
    ADVANTAGES = "advantages"
    VALUE_TARGETS = "value_targets"
    BOOTSTRAP_VALUE = "bootstrap_value"
    WEIGHTS = "weights"
    BATCH_INDEXES = "batch_indexes"


class SampleBatch(Mapping[str, np.ndarray]):
    """A set of equally long numpy columns.

    ``SampleBatch({"obs": obs, "actions": actions})`` checks that every value is a
    numpy array with at least one dimension and that all share the first dimension.
    Rows are selected with slices (``batch[10:20]``, views, no copy) or integer
    index arrays (``batch[idx]``, a copy).
    """

    __slots__ = ("_data", "_count")

    def __init__(self, columns: Mapping[str, Any] | None = None) -> None:
        data: dict[str, np.ndarray] = {}
        count: int | None = None
        first_name = ""
        for name, value in (columns or {}).items():
            if not isinstance(name, str):
                raise TypeError(f"SampleBatch column names must be str, got {name!r}")
            arr = value if isinstance(value, np.ndarray) else np.asarray(value)
            if arr.dtype.hasobject:  # object, or a structured dtype with an object field
                raise TypeError(f"SampleBatch column '{name}' has dtype {arr.dtype} holding Python objects; use numeric arrays")
            if arr.ndim == 0:
                raise ValueError(f"SampleBatch column '{name}' is a scalar; columns need a row dimension")
            if count is None:
                count, first_name = arr.shape[0], name
            elif arr.shape[0] != count:
                raise ValueError(
                    f"SampleBatch column '{name}' has {arr.shape[0]} rows but column "
                    f"'{first_name}' has {count}"
                )
            data[name] = arr
        self._data = data
        self._count = count or 0

    @classmethod
    def _trusted(cls, data: dict[str, np.ndarray], count: int) -> SampleBatch:
        """Wrap already-validated columns (used by the C++ faces; skips checks)."""
        b = cls.__new__(cls)
        b._data = data
        b._count = count
        return b

    # Mapping interface ---------------------------------------------------------
    @overload
    def __getitem__(self, key: str) -> np.ndarray: ...
    @overload
    def __getitem__(self, key: slice | np.ndarray) -> SampleBatch: ...

    def __getitem__(self, key: str | slice | np.ndarray) -> np.ndarray | SampleBatch:
        if isinstance(key, str):
            return self._data[key]
        if isinstance(key, slice):
            start, stop, step = key.indices(self._count)
            count = len(range(start, stop, step))
            return SampleBatch._trusted({k: v[key] for k, v in self._data.items()}, count)
        idx = np.asarray(key)
        if idx.dtype == bool:
            idx = np.flatnonzero(idx)
        if idx.ndim != 1 or not np.issubdtype(idx.dtype, np.integer):
            raise TypeError(f"SampleBatch rows are selected by slice or 1-D integer array, got {key!r}")
        return SampleBatch._trusted({k: v[idx] for k, v in self._data.items()}, len(idx))

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        """Number of rows (not columns), as in RLlib."""
        return self._count

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def keys(self) -> KeysView[str]:
        """Column names."""
        return self._data.keys()

    @property
    def count(self) -> int:
        """Number of rows."""
        return self._count

    @property
    def columns(self) -> dict[str, np.ndarray]:
        """The underlying column dict (read it, do not resize it)."""
        return self._data

    def __setitem__(self, name: str, value: Any) -> None:
        arr = np.asarray(value)
        if arr.ndim == 0 or (self._data and arr.shape[0] != self._count):
            raise ValueError(
                f"column '{name}' has shape {arr.shape} but the batch has {self._count} rows"
            )
        if not self._data:
            self._count = arr.shape[0]
        self._data[name] = arr

    def copy(self) -> SampleBatch:
        """A batch with copies of every column."""
        return SampleBatch._trusted({k: v.copy() for k, v in self._data.items()}, self._count)

    def select(self, names: Iterable[str]) -> SampleBatch:
        """A batch holding only the named columns (views)."""
        return SampleBatch._trusted({k: self._data[k] for k in names}, self._count)

    def shuffle(self, rng: np.random.Generator) -> SampleBatch:
        """Rows in a random order (a copy)."""
        return self[rng.permutation(self._count)]

    def minibatches(self, size: int, rng: np.random.Generator | None = None) -> Iterator[SampleBatch]:
        """Consecutive minibatches of ``size`` rows (the last may be shorter), shuffled if ``rng``."""
        if size <= 0:
            raise ValueError(f"minibatch size must be positive, got {size}")
        order = rng.permutation(self._count) if rng is not None else None
        for start in range(0, self._count, size):
            if order is None:
                yield self[start : start + size]
            else:
                yield self[order[start : start + size]]

    @property
    def nbytes(self) -> int:
        """Total bytes held by the columns."""
        return sum(v.nbytes for v in self._data.values())

    @staticmethod
    def concat(batches: Iterable[SampleBatch]) -> SampleBatch:
        """Concatenate rows of batches with identical schemas (in C++).

        Raises ``ValueError`` naming the column when a column is missing or its dtype or
        trailing shape differs between batches. Empty batches (no columns) are skipped.
        """
        parts = [b for b in batches if b._data]
        if not parts:
            return SampleBatch()
        if len(parts) == 1:
            return parts[0].copy()
        data = _core.concat_columns([b._data for b in parts])
        return SampleBatch._trusted(data, sum(b._count for b in parts))

    def __repr__(self) -> str:
        cols = ", ".join(f"{k}: {v.dtype}{list(v.shape)}" for k, v in self._data.items())
        return f"SampleBatch({self._count} rows; {cols})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SampleBatch):
            return NotImplemented
        return self._data.keys() == other._data.keys() and all(
            np.array_equal(v, other._data[k]) for k, v in self._data.items()
        )

    # Unhashable, as a mutable mapping with __eq__ should be; typeshed types __hash__ as a method.
    __hash__ = None  # type: ignore[assignment]


class MultiAgentBatch:
    """Per-policy sample batches plus the number of environment steps they cover.

    ``env_steps`` counts joint environment steps (one per ``env.step`` call), while
    ``agent_steps()`` counts rows over all policies.
    """

    __slots__ = ("policy_batches", "env_steps")

    def __init__(self, policy_batches: Mapping[str, SampleBatch], env_steps: int) -> None:
        for pid, b in policy_batches.items():
            if not isinstance(b, SampleBatch):
                raise TypeError(f"policy '{pid}' batch must be a SampleBatch, got {type(b).__name__}")
        if env_steps < 0:
            raise ValueError(f"env_steps must be >= 0, got {env_steps}")
        self.policy_batches: dict[str, SampleBatch] = dict(policy_batches)
        self.env_steps = int(env_steps)

    def agent_steps(self) -> int:
        """Rows over all policies."""
        return sum(len(b) for b in self.policy_batches.values())

    def __len__(self) -> int:
        return self.env_steps

    def __getitem__(self, policy_id: str) -> SampleBatch:
        return self.policy_batches[policy_id]

    def __contains__(self, policy_id: object) -> bool:
        return policy_id in self.policy_batches

    def policy_ids(self) -> list[str]:
        """Policies with rows in this batch."""
        return list(self.policy_batches)

    def select(self, policy_ids: Iterable[str]) -> MultiAgentBatch:
        """Only the given policies' batches (same env step count)."""
        wanted = set(policy_ids)
        return MultiAgentBatch({p: b for p, b in self.policy_batches.items() if p in wanted}, self.env_steps)

    @staticmethod
    def concat(batches: Iterable[MultiAgentBatch]) -> MultiAgentBatch:
        """Concatenate per policy; env steps add up."""
        per_policy: dict[str, list[SampleBatch]] = {}
        steps = 0
        for mb in batches:
            steps += mb.env_steps
            for pid, b in mb.policy_batches.items():
                per_policy.setdefault(pid, []).append(b)
        return MultiAgentBatch({p: SampleBatch.concat(bs) for p, bs in per_policy.items()}, steps)

    def __repr__(self) -> str:
        inner = ", ".join(f"{p}: {len(b)}" for p, b in self.policy_batches.items())
        return f"MultiAgentBatch(env_steps={self.env_steps}; {inner})"
