"""Recorded rows of a batched runner, on arrays (the array form of ``tests/runner_oracle.py``'s per-agent trajectories).

Rows are stored in blocks (one per policy per step: the rows that policy recorded), and
per-row bookkeeping (reward, end flags, episode, agent, agent-step index) lives in flat
arrays indexed by a row id. ``last[i, a]`` is the id of agent ``a``'s latest row in env
copy ``i`` (-1 when it has none open): rewards reported later are added to it, so a final
reward caused by the opponent's move lands on the agent's last action. At a fragment's
end :meth:`RowStore.split` groups each policy's rows into per-(episode, agent) chunks in
time order and carries every open (pending) row over to the next fragment.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from league.batch import Columns as C

__all__ = ["RowStore", "PolicyRows"]


def _gather_rows(blocks: list[tuple[int, dict[str, np.ndarray]]], rows: np.ndarray) -> dict[str, np.ndarray]:
    """Rows ``rows`` (positions in the blocks laid end to end) of every column, in that order,
    each column copied once: a fragment's image observations are most of its bytes, and
    concatenating the blocks first, then selecting, then ordering copied them three times."""
    sizes = np.array([len(next(iter(c.values()))) for _, c in blocks], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    # The output positions grouped by the block that holds their row, in one sort.
    block_of = np.searchsorted(offsets, rows, side="right") - 1
    by_block = np.argsort(block_of, kind="stable")
    bounds = np.searchsorted(block_of[by_block], np.arange(len(blocks) + 1))
    parts = [(b, by_block[bounds[b] : bounds[b + 1]]) for b in range(len(blocks)) if bounds[b] < bounds[b + 1]]
    out: dict[str, np.ndarray] = {}
    for k, first in blocks[0][1].items():
        col = np.empty((len(rows), *first.shape[1:]), dtype=first.dtype)
        for b, where in parts:
            col[where] = blocks[b][1][k][rows[where] - offsets[b]]
        out[k] = col
    return out


@dataclass
class PolicyRows:
    """One policy's closed rows of a fragment, grouped into chunks.

    ``columns``: the batch columns, chunk after chunk (each chunk one agent of one
    episode, in time order). ``starts``: first row of each chunk. ``pending``: per chunk,
    the row id (into ``pending_columns``) of the agent's open row that follows the chunk,
    or -1 when the chunk reaches the agent's episode end. ``ids``: store ids of the rows.
    """

    columns: dict[str, np.ndarray]
    starts: np.ndarray
    pending: np.ndarray
    ids: np.ndarray


class RowStore:
    """Rows of ``num_envs`` copies with ``num_agents`` agents each (see module docstring)."""

    def __init__(self, num_envs: int, num_agents: int) -> None:
        self.last = np.full((num_envs, num_agents), -1, dtype=np.int64)
        self._size = 0
        self._cap = 0
        self._meta: dict[str, np.ndarray] = {}
        self._blocks: dict[int, list[tuple[int, dict[str, np.ndarray]]]] = {}
        self._grow(1024)

    def _grow(self, need: int) -> None:
        cap = max(need, 2 * self._cap)
        fields = {"reward": np.float32, "term": bool, "trunc": bool, "eps": np.int64, "agent": np.int32, "t": np.int32}
        meta = {k: np.zeros(cap, dtype=dt) for k, dt in fields.items()}
        for k, v in self._meta.items():
            meta[k][: self._size] = v[: self._size]
        self._meta, self._cap = meta, cap

    def add(
        self, code: int, env: np.ndarray, agent: np.ndarray, eps: np.ndarray, t: np.ndarray, columns: dict[str, np.ndarray]
    ) -> None:
        """Open one row per (env, agent) for policy ``code``; ``columns`` are owned copies."""
        m = len(env)
        start = self._size
        if start + m > self._cap:
            self._grow(start + m)
        meta = self._meta
        sl = slice(start, start + m)
        meta["reward"][sl] = 0.0
        meta["term"][sl] = False
        meta["trunc"][sl] = False
        meta["eps"][sl] = eps
        meta["agent"][sl] = agent
        meta["t"][sl] = t
        self.last[env, agent] = np.arange(start, start + m)
        self._size = start + m
        self._blocks.setdefault(code, []).append((start, columns))

    def credit(self, rewards: np.ndarray) -> None:
        """Add ``rewards[N, num_agents]`` to each agent's latest open row (dropped without one)."""
        env, agent = np.nonzero(rewards)
        if len(env):
            rows = self.last[env, agent]
            ok = rows >= 0
            self._meta["reward"][rows[ok]] += rewards[env[ok], agent[ok]]

    def end(self, env: np.ndarray, agent: np.ndarray, truncated: np.ndarray) -> np.ndarray:
        """Close the open rows of these (env, agent) pairs as their episode's last; returns
        the row ids closed (-1 where the agent had no open row)."""
        rows = self.last[env, agent]
        ok = rows >= 0
        self._meta["term"][rows[ok]] = ~truncated[ok]
        self._meta["trunc"][rows[ok]] = truncated[ok]
        self.last[env, agent] = -1
        return rows

    def drop_env(self, env: int, eps: int) -> None:
        """Void episode ``eps`` of copy ``env`` (its env failed): its rows are never emitted."""
        self.last[env] = -1
        self._meta["eps"][: self._size][self._meta["eps"][: self._size] == eps] = -1

    def outputs_of(self, row: int) -> dict[str, np.ndarray]:
        """The stored columns of one row, one row each (for a bootstrap from a pending row)."""
        for blocks in self._blocks.values():
            for start, cols in blocks:
                n = len(next(iter(cols.values())))
                if start <= row < start + n:
                    return {k: v[row - start : row - start + 1] for k, v in cols.items()}
        raise KeyError(row)

    def split(self) -> dict[int, PolicyRows]:
        """Closed rows per policy code, grouped into chunks; open rows are kept for the next fragment."""
        size = self._size
        meta = {k: v[:size] for k, v in self._meta.items()}
        pending_mask = np.zeros(size, dtype=bool)
        open_rows = self.last[self.last >= 0]
        pending_mask[open_rows] = True
        # The open row following each (episode, agent): its outputs bootstrap the cut chunk.
        open_of = {(int(meta["eps"][r]), int(meta["agent"][r])): int(r) for r in open_rows}
        out: dict[int, PolicyRows] = {}
        carry: list[tuple[int, np.ndarray, dict[str, np.ndarray]]] = []
        for code, blocks in self._blocks.items():
            ids = np.concatenate([np.arange(s, s + len(next(iter(c.values())))) for s, c in blocks])
            keep = pending_mask[ids]
            emit = ~keep & (meta["eps"][ids] >= 0)
            # Which stored rows go out, in chunk order, found on the ids alone: each column
            # (image observations are most of a fragment's bytes) is then gathered once.
            emitted = np.flatnonzero(emit)
            order = np.lexsort((meta["agent"][ids[emitted]], meta["eps"][ids[emitted]]))  # stable: a chunk's rows stay in time order
            kept = np.flatnonzero(keep)
            if kept.size:
                carry.append((code, ids[kept], _gather_rows(blocks, kept)))
            if not emitted.size:
                continue
            ids, cols = ids[emitted[order]], _gather_rows(blocks, emitted[order])
            eps, agent = meta["eps"][ids], meta["agent"][ids]
            new = np.ones(len(ids), dtype=bool)
            new[1:] = (eps[1:] != eps[:-1]) | (agent[1:] != agent[:-1])
            starts = np.flatnonzero(new)
            last = np.append(starts[1:], len(ids)) - 1
            ended = meta["term"][ids[last]] | meta["trunc"][ids[last]]
            pending = np.array(
                [-1 if e else open_of.get((int(eps[j]), int(agent[j])), -1) for j, e in zip(last, ended)], dtype=np.int64
            )
            cols[C.REWARDS] = meta["reward"][ids]
            cols[C.TERMINATEDS] = meta["term"][ids]
            cols[C.TRUNCATEDS] = meta["trunc"][ids]
            cols[C.EPS_ID] = eps
            cols[C.AGENT_INDEX] = agent
            cols[C.T] = meta["t"][ids]
            out[code] = PolicyRows(cols, starts, pending, ids)
        self._pending_outputs = {}
        for code, ids, cols in carry:
            for j, r in enumerate(ids):
                self._pending_outputs[int(r)] = {k: v[j : j + 1] for k, v in cols.items()}
        self._restart(carry, meta)
        return out

    def pending_outputs(self, old_row: int) -> dict[str, np.ndarray]:
        """Columns of an open row by its id before the last :meth:`split` (one row each)."""
        return self._pending_outputs[old_row]

    def _restart(self, carry: list, meta: dict[str, np.ndarray]) -> None:
        """The next fragment's store: only the carried open rows, renumbered from 0."""
        remap = np.full(max(self._size, 1), -1, dtype=np.int64)
        old_meta = {k: v.copy() for k, v in meta.items()}
        self._size = 0
        self._blocks = {}
        for code, ids, cols in carry:
            start = self._size
            m = len(ids)
            for k in old_meta:
                self._meta[k][start : start + m] = old_meta[k][ids]
            remap[ids] = np.arange(start, start + m)
            self._size = start + m
            self._blocks.setdefault(code, []).append((start, cols))
        live = self.last >= 0
        self.last[live] = remap[self.last[live]]
