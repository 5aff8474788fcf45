"""Writers: which slots new rows go to, and what is written.

* :class:`RingWriter` -- first in, first out: rows go to the next slots in order, the
  oldest are overwritten once the storage is full (a batch larger than the storage keeps
  its last ``capacity`` rows, exactly as if written one at a time).
* :class:`NStepWriter` -- turns one-step transitions into n-step ones per agent
  trajectory, across batch boundaries, then hands them to an inner writer (a
  :class:`RingWriter` unless given). See its docstring for the columns it reads.
* :class:`ReservoirWriter` -- reservoir sampling (Vitter's algorithm R): after ``t`` rows
  offered, every one of them is stored with probability ``capacity / t``; what NFSP's
  supervised (average-policy) buffer needs. Needs a storage that writes any slot
  (:class:`~league.replay.storage.ArrayStorage`).

A writer is attached to its buffer's storage and sampler once; :meth:`Writer._attach`
returns the function :meth:`ReplayBuffer.add <league.replay.ReplayBuffer.add>` calls with
the batch's column dict and the priorities (``None``: the sampler's default).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from league.batch import Columns as C
from league.replay.component import Component
from league.replay._checks import Schema, bind, infer_schema, real
from league.replay.samplers import Sampler
from league.replay.storage import RingStorage, Storage

__all__ = [
    "Writer", "RingWriter", "NStepWriter", "ReservoirWriter", "n_step_transitions",
    "N_STEP_RETURNS", "DISCOUNTS", "NEXT_ACTION_MASK",
]

#: Columns of an n-step transition (besides ``next_obs``): the discounted reward sum over
#: the window, the bootstrap discount (``gamma ** k``, 0 when the window ends in
#: termination), and the legal actions of the bootstrap state.
N_STEP_RETURNS = "n_step_returns"
DISCOUNTS = "discounts"
NEXT_ACTION_MASK = "next_action_mask"

WriteFn = Callable[[dict[str, np.ndarray], Any], None]


class Writer(Component):
    """What every writer offers."""

    #: Writes only at the storage's own cursor (works on a RingStorage).
    appends: ClassVar[bool] = True

    def _attach(self, storage: Storage, sampler: Sampler, seed: int) -> WriteFn:
        """Bind to the buffer's storage and sampler; return ``write(columns, priorities)``."""
        raise NotImplementedError

    def flush(self) -> None:
        """Write whatever the writer holds back (nothing, for most writers)."""

    @property
    def pending_rows(self) -> int:
        """Rows offered but not yet written."""
        return 0


def _bind(storage: Storage, sampler: Sampler, columns: dict[str, np.ndarray], priorities: Any) -> tuple[Any, int, np.ndarray | None]:
    """A batch checked against a random-access storage's schema and the sampler's priorities:
    ``(bound batch, rows, priorities or None)``, before anything is written."""
    bound = storage.bind(columns, sampler.reserved)
    rows = bound[0]
    return bound, rows, sampler.check_priorities(priorities, rows)


def _write_slots(storage: Storage, sampler: Sampler, bound: Any, slots: np.ndarray, take: Any,
                 priorities: np.ndarray | None, overwritten: np.ndarray | None = None) -> None:
    """Copy rows ``take`` of a bound batch to ``slots`` and tell the sampler (random-access storages)."""
    storage.write(slots, bound, take)
    sampler.on_write(slots, None if priorities is None else priorities[take], overwritten)


class RingWriter(Writer):
    """First in, first out (the ring's own order)."""

    kind = "ring"

    def __init__(self) -> None:
        self._cursor = 0
        self._fused = False

    def _attach(self, storage: Storage, sampler: Sampler, seed: int) -> WriteFn:
        if isinstance(storage, RingStorage):  # fused
            # The C++ ring appends at its cursor and updates its trees in one locked call:
            # ReplayBuffer.add calls it directly.
            self._fused = True
            return storage._core.add
        capacity = storage.capacity

        def write(columns: dict[str, np.ndarray], priorities: Any = None) -> None:
            bound, rows, p = _bind(storage, sampler, columns, priorities)
            kept = min(rows, capacity)  # of a batch larger than the storage only the last rows survive
            first = rows - kept
            slots = (self._cursor + first + np.arange(kept, dtype=np.int64)) % capacity
            _write_slots(storage, sampler, bound, slots, slice(first, rows), p, None if p is None else p[:first])
            self._cursor = (self._cursor + rows) % capacity

        return write

    def state_dict(self) -> dict[str, Any]:
        return {} if self._fused else {"cursor": self._cursor}  # the C++ ring keeps its own cursor

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if not self._fused:
            self._cursor = int(state["cursor"])


class ReservoirWriter(Writer):
    """Reservoir sampling: the storage always holds a uniform sample of every row offered.

    The first ``capacity`` rows fill the storage; row ``t`` (0-based) after that replaces a
    uniformly drawn slot with probability ``capacity / (t + 1)`` and is dropped otherwise.
    :attr:`seen` counts the rows offered. Needs a random-access storage.
    """

    kind = "reservoir"
    appends = False

    def __init__(self) -> None:
        self.seen = 0
        self._rng: np.random.Generator | None = None

    def _attach(self, storage: Storage, sampler: Sampler, seed: int) -> WriteFn:
        if not storage.random_access:
            raise TypeError(f"ReservoirWriter replaces randomly chosen slots; {type(storage).__name__} only appends "
                            "at its cursor. Compose it with ArrayStorage.")
        rng = self._rng = np.random.Generator(np.random.PCG64(seed))
        capacity = storage.capacity

        def write(columns: dict[str, np.ndarray], priorities: Any = None) -> None:
            bound, rows, p = _bind(storage, sampler, columns, priorities)
            t = self.seen + np.arange(rows, dtype=np.int64)  # each row's position in the stream
            slots = t.copy()
            late = t >= capacity
            if late.any():
                draw = rng.integers(0, t[late] + 1)  # uniform in [0, t]: kept iff it lands on a slot
                slots[late] = np.where(draw < capacity, draw, -1)
            take = np.flatnonzero(slots >= 0)
            # A slot drawn twice in one batch keeps the later row, as row-by-row writing would.
            reversed_slots = slots[take][::-1]
            _, last = np.unique(reversed_slots, return_index=True)
            take = np.sort(take[len(take) - 1 - last])
            _write_slots(storage, sampler, bound, slots[take], take, p)
            self.seen += rows

        return write

    def state_dict(self) -> dict[str, Any]:
        return {"seen": self.seen, "rng": self._rng.bit_generator.state if self._rng is not None else None}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        seen = int(state["seen"])
        if seen < 0:
            raise ValueError(f"saved row count {seen} is negative")
        if self._rng is None:
            raise RuntimeError("ReservoirWriter is not attached to a storage: load its state through its ReplayBuffer")
        self._rng.bit_generator.state = state["rng"]
        self.seen = seen


class NStepWriter(Writer):
    """n-step transitions per agent trajectory, written through an inner writer.

    ``NStepWriter(n=3, gamma=0.99, inner=None, flush_after=1000)``. Rows are one-step
    transitions in the standard columns of :class:`~league.batch.Columns`: ``rewards``,
    ``next_obs`` (the state after the row; zeros after termination), optionally
    ``next_action_mask``, ``terminateds`` / ``truncateds`` (the row ended its agent's
    episode), and the trajectory key ``eps_id``, ``agent_index`` with the agent-step
    index ``t``. Rows of one trajectory may arrive in any number of batches, in order.

    Row ``t`` becomes a transition once rows ``t .. t+n-1`` of its trajectory are known:
    ``n_step_returns`` = the discounted sum of their rewards, ``next_obs`` /
    ``next_action_mask`` = those of row ``t+n-1``, ``discounts`` = ``gamma ** n``. A
    trajectory that ends (terminated or truncated) writes its last rows with the
    ``k < n`` rewards left and ``gamma ** k``, or 0 when terminated. Until then a
    trajectory's last ``n - 1`` rows wait here (:attr:`pending_rows`). Rows that cannot be
    continued are written the same way as a truncation, bootstrapping from their own
    ``next_obs``: when the next row of their trajectory skips a step (rows dropped on the
    way), when no row of the trajectory arrived for ``flush_after`` writes, and on
    :meth:`flush`. ``n = 1`` writes every row at once.

    Priorities cannot be given (rows leave in another order than they came); they get the
    sampler's default. Rewards must be finite.
    """

    kind = "n_step"

    _NEEDED = ((C.REWARDS, "iuf"), (C.TERMINATEDS, "b"), (C.TRUNCATEDS, "b"), (C.EPS_ID, "iu"),
               (C.AGENT_INDEX, "iu"), (C.T, "iu"))

    def __init__(self, n: int = 3, gamma: float = 0.99, inner: Writer | None = None, flush_after: int = 1000) -> None:
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"NStepWriter n must be an integer >= 1, got {n!r}")
        gamma = real(gamma, "gamma")
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"NStepWriter gamma must be in [0, 1], got {gamma!r}")
        if isinstance(flush_after, bool) or not isinstance(flush_after, (int, np.integer)) or flush_after < 1:
            raise ValueError(f"NStepWriter flush_after must be an integer >= 1, got {flush_after!r}")
        inner = RingWriter() if inner is None else inner
        if not isinstance(inner, Writer) or isinstance(inner, NStepWriter):
            raise TypeError(f"NStepWriter's inner writer must be a RingWriter or ReservoirWriter, got {inner!r}")
        self.n, self.gamma, self.inner, self.flush_after = int(n), gamma, inner, int(flush_after)
        self._schema: Schema = []
        self._pending: list[np.ndarray] = []  # held rows, one array per schema column
        self._touched = np.zeros(0, np.int64)  # per held row: the write that last extended its trajectory
        self._writes = 0
        self._inner_write: WriteFn | None = None

    def _attach(self, storage: Storage, sampler: Sampler, seed: int) -> WriteFn:
        self.inner._owner = self._owner
        self._inner_write = self.inner._attach(storage, sampler, seed)
        self._reserved = sampler.reserved

        def write(columns: dict[str, np.ndarray], priorities: Any = None) -> None:
            if priorities is not None:
                raise TypeError("NStepWriter takes no priorities: its rows get the sampler's default")
            self._write(columns, flush=False)

        return write

    @property
    def pending_rows(self) -> int:
        return len(self._touched)

    def flush(self) -> None:
        """Write every held row now, bootstrapping from its trajectory's last known state."""
        if self.pending_rows:
            self._write(None, flush=True)

    # ------------------------------------------------------------------ the transform
    def _check(self, columns: dict[str, np.ndarray]) -> tuple[Schema, list[np.ndarray]]:
        schema = self._schema
        if not schema:
            needed = self._NEEDED + ((C.NEXT_OBS, "biufc"),)
            missing = [name for name, _ in needed if name not in columns]
            if missing:
                raise ValueError(f"NStepWriter needs columns {missing} (one-step transitions of agent "
                                 f"trajectories); the batch has {sorted(map(str, columns))}")
            for name, kinds in needed:
                a = columns[name]
                if isinstance(a, np.ndarray) and (a.dtype.kind not in kinds or (kinds != "biufc" and a.ndim != 1)):
                    raise TypeError(f"NStepWriter column '{name}' must be 1-D of kind {kinds!r}, got "
                                    f"{a.dtype}{list(a.shape)}")
            schema = infer_schema(columns, self._reserved)
        _, arrays = bind(schema, columns)
        names = [name for name, _, _ in schema]
        rewards = arrays[names.index(C.REWARDS)]
        if rewards.dtype.kind == "f" and not np.isfinite(rewards).all():
            j = int(np.argmax(~np.isfinite(rewards)))
            raise ValueError(f"rewards[{j}] = {float(rewards[j])!r}: rewards must be finite")
        return schema, arrays

    def _write(self, columns: dict[str, np.ndarray] | None, flush: bool) -> None:
        if columns is None:
            schema, rows = self._schema, [held[:0] for held in self._pending]
        else:
            schema, rows = self._check(columns)
        pending = self._pending or [new[:0] for new in rows]
        cols = dict(zip([name for name, _, _ in schema], (np.concatenate([a, b]) for a, b in zip(pending, rows))))
        touched = np.concatenate([self._touched, np.full(len(rows[0]), self._writes, np.int64)])
        ready, extra, held, held_touched = self._transitions(cols, touched, flush)
        if len(ready):
            out = {name: column[ready] for name, column in cols.items()}
            out.update(extra)
            if self._inner_write is None:  # not reached: writes come through the write function _attach returned
                raise RuntimeError("NStepWriter is not attached to a storage")
            self._inner_write(out, None)
        # Committed only once the inner write succeeded: a refused batch leaves everything as it was.
        self._schema = schema
        self._pending = [column[held] for column in cols.values()]
        self._touched = held_touched
        if columns is not None:
            self._writes += 1

    def _transitions(self, col: dict[str, np.ndarray], touched: np.ndarray, flush: bool
                     ) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray, np.ndarray]:
        """``(rows ready, their n-step columns, rows held, the held rows' ages)``; rows index ``col``."""
        total = len(touched)
        none = np.zeros(0, np.int64)
        if total == 0:
            return none, {}, none, none
        eps = col[C.EPS_ID].astype(np.int64, copy=False)
        agent = col[C.AGENT_INDEX].astype(np.int64, copy=False)
        t = col[C.T].astype(np.int64, copy=False)
        order = np.lexsort((t, agent, eps))  # trajectory by trajectory, in time order
        eps, agent, t = eps[order], agent[order], t[order]
        done = (col[C.TERMINATEDS] | col[C.TRUNCATEDS])[order]
        terminated = col[C.TERMINATEDS][order]
        same_traj = (eps[1:] == eps[:-1]) & (agent[1:] == agent[:-1])
        continues = same_traj & (t[1:] == t[:-1] + 1) & ~done[:-1]  # row i and i+1 are one segment
        ends = np.flatnonzero(np.append(~continues, True))  # last row of each segment
        end = ends[np.searchsorted(ends, np.arange(total))]  # per row: its segment's last row
        # A segment is closed when it reached its episode's end, when its trajectory goes on
        # after a gap, when it waited too long, or on flush; an open one holds its last n-1 rows.
        seg_touched = touched[order][end]
        after_gap = np.append(same_traj, False)[end]
        closed = flush | done[end] | after_gap | (self._writes - seg_touched >= self.flush_after)
        length = end - np.arange(total) + 1  # rows from this one to its segment's end
        k = np.minimum(self.n, length)
        ready = closed | (length >= self.n)
        idx = np.flatnonzero(ready)
        keep = np.flatnonzero(~ready)
        by_row = np.argsort(order[keep], kind="stable")  # held rows keep their arrival order
        held, held_touched = order[keep][by_row], seg_touched[keep][by_row]
        if len(idx) == 0:
            return none, {}, held, held_touched
        rewards = col[C.REWARDS][order].astype(np.float64)
        k_r = k[idx]
        returns = np.zeros(len(idx))
        for j in range(self.n):
            inside = j < k_r
            returns[inside] += self.gamma**j * rewards[idx[inside] + j]
        last = idx + k_r - 1  # the row whose next state bootstraps
        discounts = np.where(terminated[last], 0.0, self.gamma ** k_r.astype(np.float64))
        source = order[idx]
        extra = {N_STEP_RETURNS: returns.astype(np.float32), DISCOUNTS: discounts.astype(np.float32),
                 C.NEXT_OBS: col[C.NEXT_OBS][order[last]]}
        if NEXT_ACTION_MASK in col:
            extra[NEXT_ACTION_MASK] = col[NEXT_ACTION_MASK][order[last]]
        return source, extra, held, held_touched

    # ------------------------------------------------------------------ config, state
    def config(self) -> dict[str, Any]:
        return {"kind": self.kind, "n": self.n, "gamma": self.gamma, "inner": self.inner.config(),
                "flush_after": self.flush_after}

    def state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = {"writes": self._writes, "columns": [name for name, _, _ in self._schema],
                                 "touched": self._touched.copy(), "inner": self.inner.state_dict()}
        for i, held in enumerate(self._pending):
            state[f"column_{i}"] = held.copy()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        names, touched = state["columns"], np.asarray(state["touched"])
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise TypeError("columns must be a list of names")
        if touched.dtype != np.int64 or touched.ndim != 1:
            raise ValueError("saved pending-row ages must be int64[rows]")
        arrays = {name: state[f"column_{i}"] for i, name in enumerate(names)}
        if len(arrays) != len(names):
            raise ValueError(f"saved column names repeat: {names}")
        schema: Schema = []
        if names:
            schema = infer_schema(arrays, ())
            rows, pending = bind(schema, arrays)
            if rows != len(touched):
                raise ValueError(f"{rows} pending rows but {len(touched)} ages")
            self._check_pending(schema, arrays)
        elif len(touched):
            raise ValueError("pending rows without columns")
        self.inner.load_state_dict(state["inner"])
        self._schema, self._pending = schema, (pending if names else [])
        self._touched, self._writes = touched.copy(), int(state["writes"])

    def _check_pending(self, schema: Schema, arrays: dict[str, np.ndarray]) -> None:
        """Saved pending rows must be what :meth:`_check` accepts from a first batch."""
        fixed, self._schema = self._schema, []
        try:
            self._check(arrays)
        finally:
            self._schema = fixed


def n_step_transitions(
    obs: np.ndarray, masks: np.ndarray, rewards: np.ndarray,
    next_obs: np.ndarray | None, next_mask: np.ndarray | None, n: int, gamma: float,
) -> dict[str, np.ndarray]:
    """n-step transitions for one chunk of ``T`` consecutive rows of one agent's episode.

    ``next_obs``/``next_mask`` describe the state after the chunk's last row; ``None``
    means the chunk ended in termination. Row ``t`` sums ``k = min(n, T - t)`` rewards, so
    rows within ``n`` of the chunk's end look only as far as the state after the chunk, and
    bootstraps from row ``t + k``'s state with discount ``gamma**k`` (0 when that state is
    the terminal one). Returns ``n_step_returns``, ``discounts`` (float32 ``[T]``),
    ``next_obs`` and ``next_action_mask`` (that state's observation and mask; zeros and
    ones after termination). With ``n = 1`` these are the one-step transitions that
    :class:`NStepWriter` reads.
    """
    steps = len(rewards)
    terminated = next_obs is None
    if terminated:
        next_obs = np.zeros_like(obs[:1])
        next_mask = np.ones_like(masks[:1])
    else:
        next_obs = np.asarray(next_obs, dtype=obs.dtype).reshape(obs[:1].shape)
        next_mask = (np.ones_like(masks[:1]) if next_mask is None
                     else np.asarray(next_mask, dtype=masks.dtype).reshape(masks[:1].shape))
    k = np.minimum(n, steps - np.arange(steps))
    # Zero padding makes every window n long; the rewards past the chunk it adds are 0.
    padded = np.concatenate([rewards.astype(np.float64), np.zeros(n - 1)])
    windows = np.lib.stride_tricks.sliding_window_view(padded, n)
    returns = windows @ (float(gamma) ** np.arange(n))
    discounts = float(gamma) ** k
    bootstrap_row = np.arange(steps) + k  # == steps: the state after the chunk
    if terminated:
        discounts[bootstrap_row == steps] = 0.0
    return {
        N_STEP_RETURNS: returns.astype(np.float32),
        DISCOUNTS: discounts.astype(np.float32),
        C.NEXT_OBS: np.concatenate([obs, next_obs])[bootstrap_row],
        NEXT_ACTION_MASK: np.concatenate([masks, next_mask])[bootstrap_row],
    }
