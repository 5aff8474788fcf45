"""Input checks shared by the replay components: one place, one wording.

Every public entry point of :mod:`league.replay` validates its arguments once, here or in
the C++ bindings (``league._core``), before any state changes, so a refused call leaves
the buffer exactly as it was. The messages follow the C++ bindings' wording, so a column
refused by the C++ ring and by the numpy storage reads the same.
"""

from __future__ import annotations

import hashlib
import math
import operator
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from league.batch import MultiAgentBatch, SampleBatch

#: The most rows any storage holds (the C++ core's limit, kept by the numpy storage too).
MAX_CAPACITY = 2**40

Schema = list[tuple[str, np.dtype, tuple[int, ...]]]


def seed64(seed: Any) -> int:
    """A 64-bit seed from ``seed`` (``None``: a fresh random one)."""
    if seed is None:
        return int.from_bytes(os.urandom(8), "little")
    try:
        seed = operator.index(seed)
    except TypeError:
        raise TypeError(f"seed must be an int or None, got {type(seed).__name__}") from None
    if not 0 <= seed < 2**64:
        raise ValueError(f"seed must be in [0, 2**64), got {seed}")
    return seed


def derive_seed(seed: int, label: str) -> int:
    """A distinct, reproducible 64-bit seed for ``label`` (a policy id, a component) from ``seed``."""
    digest = hashlib.blake2b(f"{seed64(seed)}/{label}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def count(value: Any, what: str) -> int:
    """``value`` as an int (bools and floats refused)."""
    if type(value) is int:
        return value
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an int, got {type(value).__name__}") from None


def capacity_of(value: Any) -> int:
    """A valid capacity: an int in [1, 2**40]."""
    capacity = count(value, "capacity")
    if capacity <= 0:
        raise ValueError(f"capacity must be a positive integer, got {capacity}")
    if capacity > MAX_CAPACITY:
        raise ValueError(f"capacity {capacity} exceeds the maximum of 2**40 rows")
    return capacity


def real(value: Any, what: str) -> float:
    """``value`` as a float (bools and non-numbers refused)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{what} must be a real number, got {type(value).__name__}")
    return float(value)


def unit_interval(value: Any, what: str) -> float:
    """A real number in [0, 1]."""
    x = real(value, what)
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"{what} must be in [0, 1], got {x!r}")
    return x


def batch_size_of(value: Any) -> int:
    """A positive int batch size."""
    n = value if type(value) is int else count(value, "batch_size")
    if n <= 0:
        raise ValueError(f"batch_size must be a positive integer, got {n}")
    return n


def columns_of(batch: Any) -> dict[str, np.ndarray]:
    """The column dict of a SampleBatch or a mapping of arrays (validated by SampleBatch)."""
    if isinstance(batch, SampleBatch):
        return batch._data
    if isinstance(batch, MultiAgentBatch):
        raise TypeError("this buffer stores one policy's rows; use MultiAgentReplayBuffer for a MultiAgentBatch")
    if isinstance(batch, Mapping):
        return SampleBatch(batch)._data
    raise TypeError(f"add() takes a SampleBatch or a mapping of arrays, got {type(batch).__name__}")


# ------------------------------------------------------------------------ schemas
def describe(dtype: np.dtype, trailing: tuple[int, ...]) -> str:
    """``float32[*, 84]``: a column's schema (everything but the row count)."""
    return f"{dtype}[*{''.join(f', {d}' for d in trailing)}]"


def describe_schema(schema: Schema) -> str:
    return "{" + ", ".join(f"{name}: {describe(dt, tr)}" for name, dt, tr in schema) + "}"


def describe_columns(columns: Mapping[Any, Any]) -> str:
    parts = []
    for name, value in columns.items():
        label = name if isinstance(name, str) else repr(name)
        if isinstance(value, np.ndarray):
            got = describe(value.dtype, value.shape[1:]) if value.ndim else f"{value.dtype}[]"
        else:
            got = type(value).__name__
        parts.append(f"{label}: {got}")
    return "{" + ", ".join(parts) + "}"


def _storable(name: str, value: Any) -> np.ndarray:
    if not isinstance(value, np.ndarray):
        raise TypeError(f"column '{name}' must be a numpy array, got {type(value).__name__}")
    if value.ndim < 1:
        raise ValueError(f"column '{name}' must have at least one dimension (rows)")
    if value.dtype.hasobject:
        raise TypeError(f"column '{name}' has dtype {value.dtype}, which holds Python objects and cannot be copied")
    if value.dtype.kind not in "biufc":
        raise TypeError(f"column '{name}' has dtype {value.dtype}; replay buffers store bool, integer, float or "
                        "complex columns")
    return value


def infer_schema(columns: Mapping[Any, Any], reserved: tuple[str, ...]) -> Schema:
    """The schema a first batch fixes (refusing empty batches, reserved names, unstorable dtypes)."""
    if not columns:
        raise ValueError("cannot add a batch with no columns")
    schema: Schema = []
    for name, value in columns.items():
        if not isinstance(name, str):
            raise TypeError(f"column names must be str, got {name!r}")
        if name in reserved:
            raise ValueError(f"column '{name}' is reserved: sample() writes it; drop it before adding")
        a = _storable(name, value)
        schema.append((name, a.dtype, tuple(a.shape[1:])))
    return schema


def bind(schema: Schema, columns: Mapping[Any, Any]) -> tuple[int, list[np.ndarray]]:
    """``(rows, arrays in schema order)`` of ``columns``, which must match ``schema`` exactly."""
    if len(columns) != len(schema):
        known = {name for name, _, _ in schema}
        for name in columns:
            if name not in known:
                raise ValueError(f"column {name!r} is not in the buffer's schema: batch {describe_columns(columns)}, "
                                 f"buffer {describe_schema(schema)}")
    arrays: list[np.ndarray] = []
    rows = 0
    for c, (name, dtype, trailing) in enumerate(schema):
        if name not in columns:
            raise ValueError(f"column '{name}' is missing from the batch: batch {describe_columns(columns)}, "
                             f"buffer {describe_schema(schema)}")
        a = columns[name]
        if not isinstance(a, np.ndarray):
            raise TypeError(f"column '{name}' must be a numpy array, got {type(a).__name__}")
        if a.ndim != len(trailing) + 1 or a.shape[1:] != trailing:
            got = describe(a.dtype, a.shape[1:]) if a.ndim else f"{a.dtype}[]"
            raise ValueError(f"column '{name}' is {got} in the batch but {describe(dtype, trailing)} in the buffer")
        if a.dtype != dtype:
            raise TypeError(f"column '{name}' is {describe(a.dtype, trailing)} in the batch but "
                            f"{describe(dtype, trailing)} in the buffer (dtypes are not converted; cast the column first)")
        if c == 0:
            rows = a.shape[0]
        elif a.shape[0] != rows:
            raise ValueError(f"column '{name}' has {a.shape[0]} rows but column '{schema[0][0]}' has {rows}")
        arrays.append(a)
    return rows, arrays


# ------------------------------------------------------------------------ priorities
def priority_bounds(alpha: float, capacity: int) -> tuple[float, float]:
    """Raw priorities whose ``p ** alpha`` stays a positive normal double with a finite sum (as in C++)."""
    if alpha == 0:
        return 0.0, math.inf
    leaves = float(1 << max(capacity - 1, 0).bit_length())

    def power(x: float, y: float) -> float:
        try:
            return math.pow(x, y)
        except OverflowError:
            return math.inf

    return power(1e-300, 1.0 / alpha), power(1e300 / leaves, 1.0 / alpha)


def check_priorities(priorities: Any, rows: int, alpha: float, capacity: int, rows_of: str = "the batch") -> np.ndarray:
    """``priorities`` as float64[rows], each finite, > 0 and in range for ``alpha`` (else a clear error)."""
    try:
        a = np.asarray(priorities)
    except Exception:  # noqa: BLE001 -- whatever numpy cannot read is not array-like
        raise TypeError(f"priorities must be array-like, got {type(priorities).__name__}") from None
    if a.dtype.kind not in "iuf":
        raise TypeError(f"priorities must be real numbers, got dtype {a.dtype}")
    if a.ndim != 1:
        raise ValueError(f"priorities must be 1-D, got {a.dtype}[{', '.join(map(str, a.shape))}]")
    if len(a) != rows:
        raise ValueError(f"priorities has {len(a)} entries but {rows_of} has {rows}")
    p = a.astype(np.float64)
    low, high = priority_bounds(alpha, capacity)
    invalid = ~((p > 0) & np.isfinite(p))
    bad = invalid | ~((p >= low) & (p <= high))
    if bad.any():  # the first bad entry, named as the C++ core names it
        j = int(np.argmax(bad))
        if invalid[j]:
            raise ValueError(f"priorities[{j}] = {float(p[j])!r}: priorities must be finite and > 0 "
                             "(add a small epsilon to |TD error|)")
        raise ValueError(f"priorities[{j}] = {float(p[j])!r} is out of range for alpha {alpha!r}: p ** alpha must "
                         "stay within [1e-300, 1e300 / capacity]")
    return p
