"""Replay buffers implemented in C++ (``league._core.ReplayCore``).

* :class:`ReplayBuffer` -- columnar ring storage, uniform sampling with replacement.
* :class:`PrioritizedReplayBuffer` -- proportional prioritized replay (sum tree + min
  tree, stratified sampling, importance weights).
* :class:`MultiAgentReplayBuffer` -- one buffer per policy id, created on demand.

Storage is allocated once, from the schema (column names, dtypes, trailing shapes) of
the first batch added. Later batches must match it exactly: a missing or extra column
or another trailing shape raises ``ValueError``, another dtype raises ``TypeError``
(dtypes are never converted: cast first), both naming the column and both schemas.
Non-contiguous arrays are accepted and copied once into C order. Validation happens
once, in the C++ bindings with the GIL held; the copies and tree work then run with
the GIL released under a per-buffer mutex, so one thread may add while another
samples and updates priorities.

File format (``save``/``load``; no pickle, nothing from the file is executed): an
uncompressed ``.npz`` archive read with ``np.load(allow_pickle=False)`` holding

* ``meta``: a uint8 array with UTF-8 JSON ``{"format": "league.replay", "version": 1,
  "kind": "uniform" | "prioritized", "capacity", "alpha", "size", "next", "rng"
  (4 uint64 words of the xoshiro256** state), "max_priority", "columns": [names]}``;
* ``column_<i>``: rows ``[0, size)`` of the i-th column in slot order (slot = the
  value ``batch_indexes`` refers to);
* ``leaf_values``: ``float64[size]``, ``p ** alpha`` per slot (prioritized only).

A multi-agent file holds ``meta`` with ``"format": "league.replay.multi_agent"``, the
buffer kind and arguments and one such per-policy record, with arrays prefixed ``p<k>/``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import operator
import os
import threading
import zipfile
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from league import _core
from league.batch import MultiAgentBatch, SampleBatch

__all__ = ["ReplayBuffer", "PrioritizedReplayBuffer", "MultiAgentReplayBuffer", "ReplayFileError"]

_FORMAT = "league.replay"
_MULTI_FORMAT = "league.replay.multi_agent"
_VERSION = 1


class ReplayFileError(ValueError):
    """A replay file is truncated, corrupt, foreign or of another buffer kind."""


def _seed64(seed: int | None) -> int:
    if seed is None:
        return int.from_bytes(os.urandom(8), "little")
    try:
        seed = operator.index(seed)
    except TypeError:
        raise TypeError(f"seed must be an int or None, got {type(seed).__name__}") from None
    if not 0 <= seed < 2**64:
        raise ValueError(f"seed must be in [0, 2**64), got {seed}")
    return seed


def _count(value: Any, what: str) -> int:
    if type(value) is int:
        return value
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an int, got {type(value).__name__}") from None


def _columns_of(batch: Any) -> dict[str, np.ndarray]:
    """The column dict of a SampleBatch or a mapping of arrays (validated by SampleBatch)."""
    if type(batch) is SampleBatch or isinstance(batch, SampleBatch):
        return batch._data
    if isinstance(batch, MultiAgentBatch):
        raise TypeError("this buffer stores one policy's rows; use MultiAgentReplayBuffer for a MultiAgentBatch")
    if isinstance(batch, Mapping):
        return SampleBatch(batch)._data
    raise TypeError(f"add() takes a SampleBatch or a mapping of arrays, got {type(batch).__name__}")


class ReplayBuffer:
    """Uniform replay over a ring of ``capacity`` rows.

    ``add(batch)`` appends the batch's rows (the oldest are overwritten once full);
    ``sample(n)`` draws ``n`` stored rows uniformly with replacement and returns them
    with an int64 ``batch_indexes`` column (their slots). ``seed`` fixes the stream.
    """

    _kind = "uniform"

    def __init__(self, capacity: int, seed: int | None = None) -> None:
        self._core = _core.ReplayCore(_count(capacity, "capacity"), _seed64(seed))

    def add(self, batch: SampleBatch | Mapping[str, np.ndarray]) -> None:
        """Append the rows of ``batch`` (a SampleBatch or a mapping of equally long arrays)."""
        self._core.add(batch._data if type(batch) is SampleBatch else _columns_of(batch))

    def sample(self, batch_size: int) -> SampleBatch:
        """``batch_size`` rows drawn uniformly (with replacement) plus ``batch_indexes``."""
        n = batch_size if type(batch_size) is int else _count(batch_size, "batch_size")
        return SampleBatch._trusted(self._core.sample(n), n)

    def __len__(self) -> int:
        """Rows currently stored (at most ``capacity``)."""
        return len(self._core)

    @property
    def capacity(self) -> int:
        """The most rows the buffer holds."""
        return self._core.capacity

    def schema(self) -> list[tuple[str, np.dtype, tuple[int, ...]]]:
        """``(name, dtype, trailing shape)`` per column; empty before the first add."""
        return self._core.schema()

    def stored(self) -> SampleBatch:
        """A copy of every stored row in slot order (row ``i`` is slot ``i``)."""
        state = self._core.state()
        return SampleBatch._trusted(dict(state["columns"]), state["size"])

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self)}/{self.capacity} rows)"

    # ---------------------------------------------------------------- save/load
    def _meta(self, state: dict[str, Any]) -> dict[str, Any]:
        return {
            "format": _FORMAT, "version": _VERSION, "kind": self._kind, "capacity": self.capacity,
            "alpha": self._core.alpha, "size": state["size"], "next": state["next"], "rng": state["rng"],
            "max_priority": state["max_priority"], "columns": [name for name, _ in state["columns"]],
        }

    def _arrays(self, prefix: str = "") -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        state = self._core.state()
        arrays = {f"{prefix}column_{i}": col for i, (_, col) in enumerate(state["columns"])}
        if state["leaf_values"] is not None:
            arrays[f"{prefix}leaf_values"] = state["leaf_values"]
        return self._meta(state), arrays

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write contents, priorities, write position and RNG state to ``path`` (see module doc)."""
        meta, arrays = self._arrays()
        _write_npz(path, meta, arrays)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> ReplayBuffer:
        """Rebuild a saved buffer exactly; the same calls then give the same samples.

        ``ReplayBuffer.load`` accepts either kind of single-buffer file and returns the
        matching class; ``PrioritizedReplayBuffer.load`` accepts only prioritized files.
        Raises :class:`ReplayFileError` (a ``ValueError``) for a truncated or foreign file.
        """
        with _open_npz(path) as (meta, arrays):
            _expect(meta, "format", _FORMAT, path)
            return _restore(cls, meta, arrays, "", path)


class PrioritizedReplayBuffer(ReplayBuffer):
    """Proportional prioritized replay: row ``i`` is drawn with ``P(i) = p_i^alpha / sum p^alpha``.

    ``add(batch, priorities=None)`` gives new rows the largest priority seen so far
    (1.0 initially) unless priorities are given. ``sample(n, beta)`` draws one row per
    equal-mass segment and adds float32 ``weights`` = ``(N P(i))^-beta`` divided by the
    largest possible weight (that of the lowest-priority stored row) and ``batch_indexes``.
    Priorities must be finite and > 0.
    """

    _kind = "prioritized"

    def __init__(self, capacity: int, alpha: float = 0.6, seed: int | None = None) -> None:
        self._core = _core.ReplayCore(_count(capacity, "capacity"), _seed64(seed), _real(alpha, "alpha"))

    def add(self, batch: SampleBatch | Mapping[str, np.ndarray], priorities: Any = None) -> None:
        """Append rows with ``priorities`` (one per row) or the maximum priority so far."""
        self._core.add(batch._data if type(batch) is SampleBatch else _columns_of(batch), priorities)

    def sample(self, batch_size: int, beta: float = 0.4) -> SampleBatch:  # type: ignore[override]
        """Stratified prioritized draw plus ``weights`` and ``batch_indexes``; ``beta`` in [0, 1]."""
        n = batch_size if type(batch_size) is int else _count(batch_size, "batch_size")
        return SampleBatch._trusted(self._core.sample(n, beta if type(beta) is float else _real(beta, "beta")), n)

    def update_priorities(self, batch_indexes: Any, priorities: Any) -> None:
        """Set the priorities of stored slots (e.g. ``batch["batch_indexes"]`` from a sample)."""
        self._core.update_priorities(batch_indexes, priorities)

    @property
    def alpha(self) -> float:
        """Priority exponent (0 = uniform)."""
        return self._core.alpha

    @property
    def max_priority(self) -> float:
        """Largest priority seen so far: the default for new rows."""
        return self._core.max_priority

    def leaf_values(self) -> np.ndarray:
        """``p ** alpha`` per stored slot: sampling probabilities are proportional to it."""
        return self._core.leaf_values()

    def tree_roots(self) -> tuple[float, float]:
        """``(sum, min)`` of ``p ** alpha`` over stored slots, as the sum and min trees hold them."""
        return self._core.tree_roots()


def _real(value: Any, what: str) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{what} must be a real number, got {type(value).__name__}")
    return float(value)


class MultiAgentReplayBuffer:
    """One replay buffer per policy id, created when a policy's rows first arrive.

    ``MultiAgentReplayBuffer(PrioritizedReplayBuffer, capacity=100_000, alpha=0.6)``:
    every policy gets ``buffer_class(**buffer_kwargs)``. A given ``seed`` is turned into
    a distinct, reproducible seed per policy id.
    """

    def __init__(self, buffer_class: type[ReplayBuffer] = ReplayBuffer, **buffer_kwargs: Any) -> None:
        if not (isinstance(buffer_class, type) and issubclass(buffer_class, ReplayBuffer)):
            raise TypeError(f"buffer_class must be ReplayBuffer or a subclass, got {buffer_class!r}")
        buffer_class(**buffer_kwargs)  # fail now on bad kwargs, not at the first add (storage is lazy)
        self.buffer_class = buffer_class
        self.buffer_kwargs = dict(buffer_kwargs)
        self.buffers: dict[str, ReplayBuffer] = {}
        self._lock = threading.Lock()

    def _buffer_for(self, policy_id: str) -> ReplayBuffer:
        buf = self.buffers.get(policy_id)
        if buf is None:
            with self._lock:
                buf = self.buffers.get(policy_id)
                if buf is None:
                    kwargs = dict(self.buffer_kwargs)
                    if kwargs.get("seed") is not None:
                        kwargs["seed"] = _policy_seed(kwargs["seed"], policy_id)
                    buf = self.buffers[policy_id] = self.buffer_class(**kwargs)
        return buf

    def __getitem__(self, policy_id: str) -> ReplayBuffer:
        """The buffer of ``policy_id`` (``ValueError`` if it has none yet)."""
        buf = self.buffers.get(policy_id)
        if buf is None:
            raise ValueError(f"no replay buffer for policy {policy_id!r} yet (have {sorted(self.buffers)})")
        return buf

    def add(self, batch: MultiAgentBatch, priorities: Mapping[str, Any] | None = None) -> None:
        """Add each policy's rows to its buffer; ``priorities`` maps policy ids to arrays."""
        if not isinstance(batch, MultiAgentBatch):
            raise TypeError(f"MultiAgentReplayBuffer.add takes a MultiAgentBatch, got {type(batch).__name__}")
        if priorities is not None:
            unknown = set(priorities) - set(batch.policy_batches)
            if unknown:
                raise ValueError(f"priorities given for policies not in the batch: {sorted(unknown)}")
        for pid, rows in batch.policy_batches.items():
            buf = self._buffer_for(pid)
            if priorities is not None and pid in priorities:
                buf.add(rows, priorities[pid])  # type: ignore[call-arg]
            else:
                buf.add(rows)

    def sample(self, policy_id: str, batch_size: int, **kwargs: Any) -> SampleBatch:
        """Sample from one policy's buffer (``beta=`` for prioritized buffers)."""
        return self[policy_id].sample(batch_size, **kwargs)

    def update_priorities(self, policy_id: str, batch_indexes: Any, priorities: Any) -> None:
        """Update priorities in one policy's (prioritized) buffer."""
        buf = self[policy_id]
        if not isinstance(buf, PrioritizedReplayBuffer):
            raise TypeError(f"policy {policy_id!r} has a {type(buf).__name__}, which has no priorities")
        buf.update_priorities(batch_indexes, priorities)

    def policy_ids(self) -> list[str]:
        """Policies with a buffer."""
        return list(self.buffers)

    def __len__(self) -> int:
        """Rows stored over all policies."""
        return sum(len(b) for b in self.buffers.values())

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write every policy's buffer into one file (see module doc)."""
        records, arrays = [], {}
        for k, (pid, buf) in enumerate(self.buffers.items()):
            meta, arr = buf._arrays(prefix=f"p{k}/")
            records.append({"policy_id": pid, **meta})
            arrays.update(arr)
        meta = {"format": _MULTI_FORMAT, "version": _VERSION, "buffer_kind": self.buffer_class._kind,
                "buffer_kwargs": self.buffer_kwargs, "policies": records}
        _write_npz(path, meta, arrays)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> MultiAgentReplayBuffer:
        """Rebuild a saved multi-agent buffer exactly (see :meth:`ReplayBuffer.load`)."""
        with _open_npz(path) as (meta, arrays):
            _expect(meta, "format", _MULTI_FORMAT, path)
            kind = meta.get("buffer_kind")
            kinds: dict[Any, type[ReplayBuffer]] = {"uniform": ReplayBuffer, "prioritized": PrioritizedReplayBuffer}
            buffer_class = kinds.get(kind)
            kwargs, records = meta.get("buffer_kwargs"), meta.get("policies")
            if buffer_class is None or not isinstance(kwargs, dict) or not isinstance(records, list):
                raise ReplayFileError(f"{os.fspath(path)}: malformed multi-agent replay metadata")
            try:
                out = cls(buffer_class, **kwargs)
            except (TypeError, ValueError) as e:
                raise ReplayFileError(f"{os.fspath(path)}: bad buffer arguments {kwargs!r}: {e}") from e
            for k, record in enumerate(records):
                if not isinstance(record, dict) or not isinstance(record.get("policy_id"), str):
                    raise ReplayFileError(f"{os.fspath(path)}: malformed policy record {k}")
                out.buffers[record["policy_id"]] = _restore(buffer_class, record, arrays, f"p{k}/", path, exact=True)
            return out


def _policy_seed(seed: int, policy_id: str) -> int:
    digest = hashlib.blake2b(f"{_seed64(seed)}/{policy_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


# -------------------------------------------------------------------- file format
def _write_npz(path: str | os.PathLike[str], meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    # Write beside the target, then rename: an interrupted save never leaves a torn file.
    path = os.fspath(path)
    tmp = f"{path}.tmp-{os.getpid()}-{threading.get_ident()}"
    payload = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    try:
        with open(tmp, "wb") as f:
            np.savez(f, meta=payload, **arrays)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


@contextlib.contextmanager
def _open_npz(path: str | os.PathLike[str]) -> Iterator[tuple[dict[str, Any], Any]]:
    """Yield ``(meta, npz)`` of a replay file; every read error becomes ReplayFileError."""
    where, npz = os.fspath(path), None
    try:
        try:
            npz = np.load(where, allow_pickle=False)
            if not isinstance(npz, np.lib.npyio.NpzFile):
                raise ReplayFileError(f"{where} is a single .npy array, not a league replay file")
            raw = npz["meta"]
            meta = json.loads(raw.tobytes().decode()) if raw.dtype == np.uint8 else None
        except (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile) as e:
            if isinstance(e, ReplayFileError):
                raise
            raise ReplayFileError(f"{where} is not a readable league replay file "
                                  f"(truncated or foreign): {type(e).__name__}: {e}") from e
        if not isinstance(meta, dict):
            raise ReplayFileError(f"{where} has no league replay metadata")
        yield meta, npz
    finally:
        if npz is not None and hasattr(npz, "close"):
            npz.close()


def _expect(meta: dict[str, Any], key: str, value: Any, path: str | os.PathLike[str]) -> None:
    if meta.get(key) != value:
        raise ReplayFileError(f"{os.fspath(path)}: expected {key} {value!r}, found {meta.get(key)!r}")
    if meta.get("version") != _VERSION:
        raise ReplayFileError(f"{os.fspath(path)}: unsupported format version {meta.get('version')!r}")


def _restore(cls: type[ReplayBuffer], meta: dict[str, Any], npz: Any, prefix: str,
             path: str | os.PathLike[str], exact: bool = False) -> ReplayBuffer:
    """Rebuild one buffer from its metadata record and arrays; ``exact`` forbids a kind switch."""
    where = os.fspath(path)
    kind = meta.get("kind")
    if not exact and cls is ReplayBuffer and kind == PrioritizedReplayBuffer._kind:
        cls = PrioritizedReplayBuffer
    if kind != cls._kind:
        raise ReplayFileError(f"{where} holds a {kind!r} buffer; {cls.__name__}.load reads {cls._kind!r} ones")
    try:
        names = meta["columns"]
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise TypeError("columns must be a list of names")
        expected = {f"{prefix}column_{i}" for i in range(len(names))}
        if kind == "prioritized":
            expected.add(f"{prefix}leaf_values")
        present = {k for k in npz.files if k != "meta" and k.startswith(prefix)}
        if present != expected:
            raise ValueError(f"arrays {sorted(present)} do not match the metadata (expected {sorted(expected)})")
        buf = cls.__new__(cls)
        alpha = meta["alpha"] if kind == "prioritized" else None
        if kind == "prioritized" and (isinstance(alpha, bool) or not isinstance(alpha, (int, float))):
            raise TypeError(f"alpha must be a number, got {alpha!r}")
        buf._core = _core.ReplayCore(int(meta["capacity"]), 0, alpha)
        columns = [(name, npz[f"{prefix}column_{i}"]) for i, name in enumerate(names)]
        leaves = npz[f"{prefix}leaf_values"] if kind == "prioritized" else None
        buf._core.restore(columns, int(meta["size"]), int(meta["next"]), [int(w) for w in meta["rng"]],
                          leaves, float(meta["max_priority"]))
    except (KeyError, TypeError, ValueError, OverflowError, MemoryError, OSError, EOFError, zipfile.BadZipFile) as e:
        raise ReplayFileError(f"{where} is not a valid league replay file: {type(e).__name__}: {e}") from e
    return buf
