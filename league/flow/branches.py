"""Stages that split one stream into copies and merge several streams into one.

Splitting (:func:`duplicate_stages`) is bounded: each copy buffers the items the other
copies pulled before it. When some copy is ``max_buffer`` items behind, the others get
:data:`NOT_READY` (back-pressure) until it catches up, so memory never grows without
bound. If the lagging copy is not part of the plan being pulled at all, waiting could
never end; the plan then raises :class:`PlanStalledError` instead of spinning.

Merging (:class:`UnionStage`) visits branches in turns, see :class:`UnionStage`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

from league.flow.metrics import PlanMetrics
from league.flow.stages import NOT_READY, Stage

__all__ = ["DuplicateCopy", "duplicate_stages", "UnionStage", "STAR"]

STAR = "*"


class _SharedUpstream:
    """State shared by the copies of one duplicated stream."""

    def __init__(self, upstream: Stage, n: int, max_buffer: int) -> None:
        self.upstream = upstream
        self.n = n
        self.max_buffer = max_buffer
        self.buffers: list[deque[Any]] = [deque() for _ in range(n)]
        self.copies: list[DuplicateCopy] = []
        self.exhausted = False


class DuplicateCopy(Stage):
    """Copy ``index`` of a duplicated stream: sees every upstream item exactly once."""

    def __init__(self, shared: _SharedUpstream, index: int) -> None:
        super().__init__(f"Duplicate[{index}]", f"Duplicate(copy {index} of {shared.n})", (shared.upstream,))
        self.shared = shared
        self.index = index
        self.waiting_on: int | None = None

    def pull(self, metrics: PlanMetrics) -> Any:
        shared = self.shared
        stats = metrics.stage_stats(self, self.name)
        own = shared.buffers[self.index]
        if own:
            stats.items_out += 1
            return own.popleft()
        if shared.exhausted:
            raise StopIteration
        self.waiting_on = next(
            (j for j, buf in enumerate(shared.buffers) if j != self.index and len(buf) >= shared.max_buffer),
            None,
        )
        if self.waiting_on is not None:
            stats.not_ready += 1
            return NOT_READY
        try:
            item = shared.upstream.pull(metrics)
        except StopIteration:
            shared.exhausted = True
            raise
        if item is NOT_READY:
            return item
        for j, buf in enumerate(shared.buffers):
            if j != self.index:
                buf.append(item)
        stats.items_out += 1
        return item

    def stall_reason(self, reachable: set[int]) -> str | None:
        if self.waiting_on is None:
            return None
        lagging = self.shared.copies[self.waiting_on]
        if id(lagging) in reachable:
            return None
        return (
            f"{self.label} waits for copy {self.waiting_on}, which is {self.shared.max_buffer} items "
            f"behind and is not part of the plan being pulled; pull every copy (e.g. with "
            f"Concurrently([...])), or duplicate into fewer copies"
        )


def duplicate_stages(upstream: Stage, n: int, max_buffer: int) -> list[DuplicateCopy]:
    """``n`` copies of ``upstream``, each buffering at most ``max_buffer`` items."""
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"duplicate(n) needs an integer n >= 1, got {n!r}")
    if not isinstance(max_buffer, int) or max_buffer < 1:
        raise ValueError(f"max_buffer must be an integer >= 1, got {max_buffer!r}")
    shared = _SharedUpstream(upstream, n, max_buffer)
    shared.copies = [DuplicateCopy(shared, i) for i in range(n)]
    return shared.copies


class UnionStage(Stage):
    """Merges branches by turns.

    Branches take turns in index order. In its turn, branch ``i`` gives up to
    ``weights[i]`` items (``"*"``: as many as it has ready, however many); a branch with
    nothing ready ends its turn early, and an exhausted branch leaves the rotation. Items
    from branches not in ``outputs`` are pulled (their side effects happen) but not
    returned. When a whole round finds nothing ready the stage returns
    :data:`NOT_READY`; when every branch is exhausted, the union ends.

    The output order depends only on when branches are ready, so with synchronous
    sources it is reproducible.
    """

    def __init__(
        self,
        branches: Sequence[Stage],
        weights: Sequence[int | str],
        outputs: Sequence[int],
        name: str,
        label: str,
    ) -> None:
        super().__init__(name, label, tuple(branches))
        self.weights = list(weights)
        self.outputs = frozenset(outputs)
        self._active = list(range(len(branches)))
        self._position = 0  # index into _active of the branch whose turn it is
        self._taken = 0  # items taken from it in this turn

    def _end_turn(self) -> None:
        self._taken = 0
        self._position = (self._position + 1) % len(self._active)

    def pull(self, metrics: PlanMetrics) -> Any:
        idle_turns = 0
        while self._active:
            branch = self._active[self._position]
            try:
                item = self.parents[branch].pull(metrics)
            except StopIteration:
                self._active.pop(self._position)
                self._taken = 0
                if self._active:
                    self._position %= len(self._active)
                continue
            if item is NOT_READY:
                self._end_turn()
                idle_turns += 1
                if idle_turns >= len(self._active):
                    metrics.stage_stats(self, self.name).not_ready += 1
                    return NOT_READY
                continue
            idle_turns = 0
            self._taken += 1
            weight = self.weights[branch]
            if isinstance(weight, int) and self._taken >= weight:  # a str weight is STAR (Concurrently checks)
                self._end_turn()
            if branch in self.outputs:
                metrics.stage_stats(self, self.name).items_out += 1
                return item
        raise StopIteration
