"""A replay buffer = a storage + a sampler + a writer; and one buffer per policy.

:class:`ReplayBuffer` composes the three (see :mod:`league.replay`);
:class:`PrioritizedReplayBuffer` is the common composition under one name;
:class:`MultiAgentReplayBuffer` keeps one buffer per policy id, made on demand.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import Any

import numpy as np

from league.batch import MultiAgentBatch, SampleBatch
from league.replay import files
from league.replay._checks import columns_of, count, derive_seed, seed64
from league.replay.samplers import PrioritizedSampler, Sampler, UniformSampler
from league.replay.storage import ArrayStorage, RingStorage, Storage
from league.replay.writers import NStepWriter, ReservoirWriter, RingWriter, Writer

__all__ = ["ReplayBuffer", "PrioritizedReplayBuffer", "MultiAgentReplayBuffer"]

STORAGES: dict[str, type[Storage]] = {"ring": RingStorage, "array": ArrayStorage}
SAMPLERS: dict[str, type[Sampler]] = {"uniform": UniformSampler, "prioritized": PrioritizedSampler}
WRITERS: dict[str, type[Writer]] = {"ring": RingWriter, "n_step": NStepWriter, "reservoir": ReservoirWriter}


def _check_free(component: Any, what: str) -> None:
    if not isinstance(component, {"storage": Storage, "sampler": Sampler, "writer": Writer}[what]):
        raise TypeError(f"{what} must be a {what.capitalize()}, got {type(component).__name__}")
    if component._owner is not None:
        raise ValueError(f"this {type(component).__name__} already belongs to another buffer; give each buffer "
                         f"its own {what}")


class ReplayBuffer:
    """Rows written by ``writer`` into ``storage``, drawn by ``sampler``.

    ``ReplayBuffer(storage, sampler=UniformSampler(), writer=RingWriter(), seed=None)``;
    an int ``storage`` (or ``capacity=``) is a capacity: ``ReplayBuffer(10_000)`` is a
    uniform FIFO ring.
    ``seed`` fixes every random stream of the composition (the C++ core's, and those the
    sampler and writer derive from it). Each component belongs to one buffer.

    ``add(batch, priorities=None)`` offers rows (a :class:`~league.batch.SampleBatch` or a
    mapping of equally long arrays) to the writer; ``sample(n, **kw)`` draws ``n`` rows
    with ``batch_indexes`` (``beta=`` for a prioritized sampler);
    ``update_priorities(batch_indexes, priorities)`` re-weights drawn slots. Every input
    is validated once, before anything changes. Calls may come from several threads.
    """

    def __init__(self, storage: Storage | int | None = None, sampler: Sampler | None = None,
                 writer: Writer | None = None, *, seed: int | None = None, capacity: int | None = None) -> None:
        if capacity is not None:  # ReplayBuffer(capacity=...): the keyword form of an int storage
            if storage is not None:
                raise TypeError("give a storage or a capacity, not both")
            storage = capacity
        if storage is None:
            raise TypeError("ReplayBuffer needs a storage (or a capacity: a RingStorage of that many rows)")
        if not isinstance(storage, Storage):
            storage = RingStorage(count(storage, "capacity"))
        sampler = UniformSampler() if sampler is None else sampler
        writer = RingWriter() if writer is None else writer
        seed = seed64(seed)
        for component, what in ((storage, "storage"), (sampler, "sampler"), (writer, "writer")):
            _check_free(component, what)
        storage._owner = sampler._owner = writer._owner = self
        try:
            sampler._attach(storage, seed if storage.fused else derive_seed(seed, "sampler"))
            self._write = writer._attach(storage, sampler, derive_seed(seed, "writer"))
        except BaseException:
            storage._owner = sampler._owner = writer._owner = None
            raise
        self.storage, self.sampler, self.writer = storage, sampler, writer
        # The C++ ring locks itself; Python-side state (a numpy storage, a writer that
        # holds rows back) is serialised by one lock shared by the calls that touch it.
        lock = threading.RLock()
        self._add_lock = None if storage.fused and type(writer) is RingWriter else lock
        self._sample_lock = None if storage.fused else lock

    #: What format version 1 files call this class's composition (see :meth:`_legacy_kind`).
    _kind = "uniform"

    @staticmethod
    def from_config(config: Mapping[str, Any] | object, seed: int | None = None) -> ReplayBuffer:
        """A new, empty :class:`ReplayBuffer` of the composition ``config`` (:meth:`config`'s output)."""
        if not isinstance(config, Mapping):
            raise TypeError(f"a buffer config is a mapping, got {type(config).__name__}")
        return ReplayBuffer(_build(STORAGES, config.get("storage")), _build(SAMPLERS, config.get("sampler")),
                            _build(WRITERS, config.get("writer")), seed=seed)

    def config(self) -> dict[str, Any]:
        """The composition as JSON values: ``{"storage": ..., "sampler": ..., "writer": ...}``."""
        return {"storage": self.storage.config(), "sampler": self.sampler.config(), "writer": self.writer.config()}

    # ---------------------------------------------------------------- data
    def add(self, batch: SampleBatch | Mapping[str, np.ndarray], priorities: Any = None) -> None:
        """Offer the rows of ``batch`` to the writer (``priorities``: one per row, prioritized samplers only)."""
        columns = batch._data if type(batch) is SampleBatch else columns_of(batch)
        lock = self._add_lock
        if lock is None:
            self._write(columns, priorities)
        else:
            with lock:
                self._write(columns, priorities)

    def sample(self, batch_size: int, beta: float | None = None) -> SampleBatch:
        """``batch_size`` rows from the sampler, plus ``batch_indexes`` (and ``weights`` if
        prioritized: ``beta``, the importance-weight exponent, defaults to the sampler's)."""
        lock = self._sample_lock
        if lock is None:
            return self.sampler.sample(batch_size, beta)
        with lock:
            return self.sampler.sample(batch_size, beta)

    def update_priorities(self, batch_indexes: Any, priorities: Any) -> None:
        """Set the priorities of stored slots (``batch["batch_indexes"]`` of a sample); prioritized samplers only."""
        lock = self._sample_lock
        if lock is None:
            self.sampler.update_priorities(batch_indexes, priorities)
        else:
            with lock:
                self.sampler.update_priorities(batch_indexes, priorities)

    def flush(self) -> None:
        """Write the rows the writer holds back (an n-step writer's open trajectories)."""
        with self._add_lock or _NO_LOCK:
            self.writer.flush()

    def __len__(self) -> int:
        """Rows currently stored (at most ``capacity``)."""
        return len(self.storage)

    @property
    def capacity(self) -> int:
        """The most rows the buffer holds."""
        return self.storage.capacity

    def schema(self) -> list[tuple[str, np.dtype, tuple[int, ...]]]:
        """``(name, dtype, trailing shape)`` per stored column; empty before the first write."""
        return self.storage.schema()

    def stored(self) -> SampleBatch:
        """A copy of every stored row in slot order (row ``i`` is slot ``i``)."""
        with self._sample_lock or _NO_LOCK:
            return self.storage.stored()

    # Priority introspection (prioritized samplers).
    def _prioritized(self) -> PrioritizedSampler:
        if not isinstance(self.sampler, PrioritizedSampler):
            raise TypeError(f"a {type(self.sampler).__name__} has no priorities")
        return self.sampler

    @property
    def alpha(self) -> float:
        """Priority exponent (0 = uniform)."""
        return self._prioritized().alpha

    @property
    def max_priority(self) -> float:
        """Largest priority seen so far: the default for new rows."""
        return self._prioritized().max_priority

    def leaf_values(self) -> np.ndarray:
        """``p ** alpha`` per stored slot: sampling probabilities are proportional to it."""
        return self._prioritized().leaf_values()

    def tree_roots(self) -> tuple[float, float]:
        """``(sum, min)`` of ``p ** alpha`` over stored slots, as the sum and min trees hold them."""
        return self._prioritized().tree_roots()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self)}/{self.capacity} rows: {self.storage!r}, {self.sampler!r}, " \
               f"{self.writer!r})"

    # ---------------------------------------------------------------- state, files
    def state_dict(self) -> dict[str, Any]:
        """``{"config", "storage", "sampler", "writer"}``: JSON values and numpy arrays only."""
        with self._add_lock or _NO_LOCK, self._sample_lock or _NO_LOCK:
            return {"config": self.config(), "storage": self.storage.state_dict(),
                    "sampler": self.sampler.state_dict(), "writer": self.writer.state_dict()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state_dict` output into this empty buffer of the same composition."""
        if state.get("config") != self.config():
            raise ValueError(f"the state is of the composition {state.get('config')!r}, this buffer is "
                             f"{self.config()!r}")
        if len(self) or self.schema() or self.writer.pending_rows:
            raise ValueError("load_state_dict needs an empty buffer")
        self.storage.load_state_dict(state["storage"])
        self.sampler.load_state_dict(state["sampler"])
        self.writer.load_state_dict(state["writer"])

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write contents, priorities, positions, random streams and held rows to ``path`` (no pickle)."""
        _save_buffer(self, path)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> ReplayBuffer:
        """Rebuild a saved buffer exactly; the same calls then give the same results.

        ``ReplayBuffer.load`` reads any single-buffer file and returns the saved class;
        ``PrioritizedReplayBuffer.load`` only prioritized ones. Raises
        :class:`~league.replay.ReplayFileError` (a ``ValueError``) for a truncated, corrupt
        or foreign file.
        """
        return _load_buffer(cls, path)

    def _legacy_kind(self) -> str | None:
        """``"uniform"``/``"prioritized"`` for the compositions format version 1 describes, else None."""
        if type(self.storage) is not RingStorage or type(self.writer) is not RingWriter:
            return None
        if type(self.sampler) is UniformSampler:
            return "uniform"
        if type(self.sampler) is PrioritizedSampler and self.sampler.beta == PrioritizedReplayBuffer.DEFAULT_BETA:
            return "prioritized"
        return None


class _NoLock:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


_NO_LOCK = _NoLock()


def _build(registry: Mapping[str, type], config: Any) -> Any:
    if not isinstance(config, Mapping) or config.get("kind") not in registry:
        raise ValueError(f"unknown component {config!r}; known kinds: {sorted(registry)}")
    kwargs = {k: v for k, v in config.items() if k != "kind"}
    if registry is WRITERS and isinstance(kwargs.get("inner"), Mapping):
        kwargs["inner"] = _build(WRITERS, kwargs["inner"])
    return registry[config["kind"]](**kwargs)


class PrioritizedReplayBuffer(ReplayBuffer):
    """``RingStorage(capacity)`` + ``PrioritizedSampler(alpha)`` + ``RingWriter()`` under one name.

    ``sample(n, beta=0.4)``; ``add(batch, priorities=None)`` gives new rows the largest
    priority seen so far (1.0 initially) unless priorities are given.
    """

    DEFAULT_BETA = 0.4
    _kind = "prioritized"

    def __init__(self, capacity: int, alpha: float = 0.6, seed: int | None = None) -> None:
        super().__init__(RingStorage(capacity), PrioritizedSampler(alpha, self.DEFAULT_BETA), RingWriter(), seed=seed)

    def sample(self, batch_size: int, beta: float | None = DEFAULT_BETA) -> SampleBatch:
        """Stratified prioritized draw plus ``weights`` and ``batch_indexes``; ``beta`` in [0, 1]."""
        return self.sampler.sample(batch_size, beta)


# ------------------------------------------------------------------------ per policy
class MultiAgentReplayBuffer:
    """One replay buffer per policy id, created when a policy's rows first arrive.

    Either from a composition, ``MultiAgentReplayBuffer(ReplayBuffer(RingStorage(50_000),
    PrioritizedSampler(0.6), NStepWriter(3, 0.99)), seed=0)`` (the template is only a
    description: every policy gets a fresh buffer of the same composition), or from a
    class and its arguments, ``MultiAgentReplayBuffer(PrioritizedReplayBuffer,
    capacity=100_000, alpha=0.6, seed=0)``. A given ``seed`` is turned into a distinct,
    reproducible seed per policy id.
    """

    def __init__(self, buffer: type[ReplayBuffer] | ReplayBuffer = ReplayBuffer, **buffer_kwargs: Any) -> None:
        if isinstance(buffer, ReplayBuffer):
            unknown = set(buffer_kwargs) - {"seed"}
            if unknown:
                raise TypeError(f"with a template buffer the only argument is seed, got {sorted(unknown)}")
            seed = buffer_kwargs.get("seed")
            if seed is not None:
                seed64(seed)
            self.template: dict[str, Any] | None = buffer.config()
            self.buffer_class: type[ReplayBuffer] = ReplayBuffer
        else:
            if not (isinstance(buffer, type) and issubclass(buffer, ReplayBuffer)):
                raise TypeError(f"buffer_class must be ReplayBuffer or a subclass, got {buffer!r}")
            buffer(**buffer_kwargs)  # fail now on bad kwargs, not at the first add (storage is lazy)
            self.template = None
            self.buffer_class = buffer
        self.buffer_kwargs = dict(buffer_kwargs)
        self.buffers: dict[str, ReplayBuffer] = {}
        self._lock = threading.Lock()

    def _make(self, policy_id: str) -> ReplayBuffer:
        kwargs = dict(self.buffer_kwargs)
        if kwargs.get("seed") is not None:
            kwargs["seed"] = derive_seed(kwargs["seed"], policy_id)
        if self.template is not None:
            return ReplayBuffer.from_config(self.template, **kwargs)
        return self.buffer_class(**kwargs)

    def _buffer_for(self, policy_id: str) -> ReplayBuffer:
        buf = self.buffers.get(policy_id)
        if buf is None:
            with self._lock:
                buf = self.buffers.get(policy_id)
                if buf is None:
                    buf = self.buffers[policy_id] = self._make(policy_id)
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
                buf.add(rows, priorities[pid])
            else:
                buf.add(rows)

    def sample(self, policy_id: str, batch_size: int, **kwargs: Any) -> SampleBatch:
        """Sample from one policy's buffer (``beta=`` for prioritized buffers)."""
        return self[policy_id].sample(batch_size, **kwargs)

    def update_priorities(self, policy_id: str, batch_indexes: Any, priorities: Any) -> None:
        """Update priorities in one policy's (prioritized) buffer."""
        buf = self[policy_id]
        if not buf.sampler.prioritized:
            raise TypeError(f"policy {policy_id!r} has a {type(buf).__name__} with a {type(buf.sampler).__name__}, "
                            "which has no priorities")
        buf.update_priorities(batch_indexes, priorities)

    def forget(self, policy_id: str) -> None:
        """Drop ``policy_id``'s buffer and the rows its writer holds; a fresh one is made on its next rows."""
        with self._lock:
            self.buffers.pop(policy_id, None)

    def flush(self) -> None:
        """Write the rows every policy's writer holds back."""
        for buf in list(self.buffers.values()):
            buf.flush()

    def policy_ids(self) -> list[str]:
        """Policies with a buffer."""
        return list(self.buffers)

    def __len__(self) -> int:
        """Rows stored over all policies."""
        return sum(len(b) for b in self.buffers.values())

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write every policy's buffer into one file (see :mod:`league.replay`)."""
        _save_multi(self, path)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> MultiAgentReplayBuffer:
        """Rebuild a saved multi-agent buffer exactly (see :meth:`ReplayBuffer.load`)."""
        return _load_multi(cls, path)


# ------------------------------------------------------------------------ files: one buffer
def _record(buf: ReplayBuffer, prefix: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The metadata record and arrays of one buffer (array names under ``prefix``)."""
    kind = buf._legacy_kind()
    state = buf.state_dict()
    if kind is None:
        arrays: dict[str, np.ndarray] = {}
        tree = files.flatten(state, prefix, arrays)
        return {"format": files.FORMAT, "version": 2, "kind": files.COMPOSED, "state": tree}, arrays
    storage = state["storage"]
    meta = {
        "format": files.FORMAT, "version": 1, "kind": kind, "capacity": buf.capacity,
        "alpha": buf.alpha if kind == "prioritized" else None, "size": storage["size"], "next": storage["next"],
        "rng": storage["rng"], "max_priority": storage.get("max_priority", 1.0), "columns": storage["columns"],
    }
    arrays = {f"{prefix}column_{i}": storage[f"column_{i}"] for i in range(len(storage["columns"]))}
    if kind == "prioritized":
        arrays[f"{prefix}leaf_values"] = storage["leaf_values"]
    return meta, arrays


def _save_buffer(buf: ReplayBuffer, path: str | os.PathLike[str]) -> None:
    meta, arrays = _record(buf, "")
    files.write_npz(path, meta, arrays)


def _load_buffer(cls: type[ReplayBuffer], path: str | os.PathLike[str]) -> ReplayBuffer:
    with files.open_npz(path) as (meta, npz):
        files.expect(meta, files.FORMAT, path)
        return _restore(cls, meta, npz, "", path)


def _restore(cls: type[ReplayBuffer], meta: dict[str, Any], npz: Any, prefix: str, path: str | os.PathLike[str],
            exact: bool = False) -> ReplayBuffer:
    """Rebuild one buffer from its metadata record and arrays; ``exact`` forbids a kind switch."""
    where = os.fspath(path)
    kind = meta.get("kind")
    if not exact and cls is ReplayBuffer and kind == PrioritizedReplayBuffer._kind:
        cls = PrioritizedReplayBuffer
    if kind == files.COMPOSED and meta.get("version") == 2 and cls is ReplayBuffer:
        return _restore_composed(meta, npz, prefix, where)
    if kind != cls._kind or meta.get("version") != 1:
        raise files.ReplayFileError(f"{where} holds a {kind!r} buffer (format version {meta.get('version')!r}); "
                              f"{cls.__name__}.load reads {cls._kind!r} ones")
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
        capacity = int(meta["capacity"])
        if kind == "prioritized":
            alpha = meta["alpha"]
            if isinstance(alpha, bool) or not isinstance(alpha, (int, float)):
                raise TypeError(f"alpha must be a number, got {alpha!r}")
            buf: ReplayBuffer = PrioritizedReplayBuffer(capacity, alpha, seed=0)
        else:
            buf = ReplayBuffer(capacity, seed=0)
        state: dict[str, Any] = {"size": meta["size"], "next": meta["next"], "rng": meta["rng"], "columns": names}
        for i in range(len(names)):
            state[f"column_{i}"] = npz[f"{prefix}column_{i}"]
        if kind == "prioritized":
            state["leaf_values"] = npz[f"{prefix}leaf_values"]
            state["max_priority"] = float(meta["max_priority"])
        if not isinstance(state["rng"], list):
            raise TypeError("rng must be a list of 4 words")
        buf.storage.load_state_dict(state)
    except files.READ_ERRORS as e:
        raise files.ReplayFileError(f"{where} is not a valid league replay file: {type(e).__name__}: {e}") from e
    return buf


def _restore_composed(meta: dict[str, Any], npz: Any, prefix: str, where: str) -> ReplayBuffer:
    try:
        used: set[str] = set()
        state = files.unflatten(meta.get("state"), npz, prefix, used)
        present = {k for k in npz.files if k != "meta" and k.startswith(prefix)}
        if present != used:
            raise ValueError(f"arrays {sorted(present - used)} are not in the metadata")
        if not isinstance(state, dict):
            raise TypeError("state must be a mapping")
        buf = ReplayBuffer.from_config(state.get("config"), seed=0)
        buf.load_state_dict(state)
    except files.READ_ERRORS as e:
        raise files.ReplayFileError(f"{where} is not a valid league replay file: {type(e).__name__}: {e}") from e
    return buf


# ------------------------------------------------------------------------ per policy
def _save_multi(multi: MultiAgentReplayBuffer, path: str | os.PathLike[str]) -> None:
    records, arrays = [], {}
    for k, (pid, buf) in enumerate(multi.buffers.items()):
        meta, arr = _record(buf, f"p{k}/")
        records.append({"policy_id": pid, **meta})
        arrays.update(arr)
    if multi.template is None:
        meta = {"format": files.MULTI_FORMAT, "version": 1, "buffer_kind": multi.buffer_class._kind,
                "buffer_kwargs": multi.buffer_kwargs, "policies": records}
    else:
        meta = {"format": files.MULTI_FORMAT, "version": 2, "buffer_kind": files.COMPOSED, "template": multi.template,
                "buffer_kwargs": multi.buffer_kwargs, "policies": records}
    files.write_npz(path, meta, arrays)


def _load_multi(cls: type[MultiAgentReplayBuffer], path: str | os.PathLike[str]) -> MultiAgentReplayBuffer:
    where = os.fspath(path)
    with files.open_npz(path) as (meta, npz):
        files.expect(meta, files.MULTI_FORMAT, path)
        kind = meta.get("buffer_kind")
        kwargs, records = meta.get("buffer_kwargs"), meta.get("policies")
        kinds: dict[Any, type[ReplayBuffer]] = {"uniform": ReplayBuffer, "prioritized": PrioritizedReplayBuffer,
                                                files.COMPOSED: ReplayBuffer}
        buffer_class = kinds.get(kind)
        if buffer_class is None or not isinstance(kwargs, dict) or not isinstance(records, list):
            raise files.ReplayFileError(f"{where}: malformed multi-agent replay metadata")
        try:
            if kind == files.COMPOSED:
                out = cls(ReplayBuffer.from_config(meta.get("template"), seed=0), **kwargs)
            else:
                out = cls(buffer_class, **kwargs)
        except files.READ_ERRORS as e:
            raise files.ReplayFileError(f"{where}: bad buffer arguments {kwargs!r}: {e}") from e
        for k, record in enumerate(records):
            if not isinstance(record, dict) or not isinstance(record.get("policy_id"), str):
                raise files.ReplayFileError(f"{where}: malformed policy record {k}")
            buf = _restore(buffer_class, record, npz, f"p{k}/", path, exact=True)
            if kind == files.COMPOSED and buf.config() != out.template:
                raise files.ReplayFileError(f"{where}: policy {record['policy_id']!r} has another composition than the "
                                      "template")
            out.buffers[record["policy_id"]] = buf
        return out
