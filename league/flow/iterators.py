"""``LocalIterator``: a lazy, driver-side stream built by chaining named operators.

A plan is written as a short chain::

    plan = (ParallelRollouts(samplers, mode="bulk_sync")
            .for_each(SelectExperiences(["p0"]))
            .combine(ConcatBatches(4000))
            .for_each(TrainOneStep(learner)))
    print(plan)        # draws the operator graph
    result = next(plan)  # runs the plan until it produces one item

Nothing runs until an item is pulled. The iterator you pull owns the
:class:`PlanMetrics` all its operators record into (``plan.metrics``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from league.flow.branches import STAR, UnionStage, duplicate_stages
from league.flow.errors import PlanStalledError
from league.flow.metrics import PlanMetrics
from league.flow.render import draw
from league.flow.stages import NOT_READY, ApplyStage, SourceStage, Stage, TakeStage, ZipSourceStage

__all__ = ["LocalIterator", "Concurrently"]

_MAX_IDLE_SLEEP_S = 0.005
#: The timer of the time a plan slept between pulls that had nothing ready (waiting on samplers, queues).
PLAN_IDLE = "plan_idle"


class LocalIterator:
    """A lazy stream of items computed in the driver by a graph of stages.

    Build one from a source (``ParallelRollouts(...)``, ``Replay(...)``,
    ``LocalIterator.from_items(...)``), chain operators with :meth:`for_each`,
    :meth:`filter` and :meth:`combine`, then pull it with ``next(plan)``. ``print(plan)``
    draws the graph; an exception inside an operator surfaces as a
    :class:`~league.flow.errors.PlanError` naming the operator and its path.
    """

    def __init__(self, stage: Stage, metrics: PlanMetrics | None = None) -> None:
        if not isinstance(stage, Stage):
            raise TypeError(f"LocalIterator needs a Stage, got {type(stage).__name__}")
        self.stage = stage
        self.metrics = metrics if metrics is not None else PlanMetrics()
        self._graph: tuple[set[int], list[Stage]] | None = None

    # Building ------------------------------------------------------------------------
    @classmethod
    def from_items(
        cls,
        items: Iterable[Any] | Callable[[], Iterable[Any]],
        name: str = "Items",
        label: str | None = None,
    ) -> LocalIterator:
        """A source reading ``items`` (an iterable, or a callable returning one, called on first pull).

        The iterable may yield :data:`NOT_READY` to say it has nothing yet.
        """
        return cls(SourceStage(items, name, label))

    def _then(self, stage: Stage) -> LocalIterator:
        return LocalIterator(stage, self.metrics)

    def for_each(self, fn: Callable[..., Any], name: str | None = None) -> LocalIterator:
        """Apply ``fn`` to every item (an :class:`Operator` gets ``(item, metrics)``, a function ``(item)``).

        ``fn`` may return :data:`NOT_READY` to output nothing for this item.
        """
        return self._then(ApplyStage(self.stage, fn, "for_each", name))

    def filter(self, fn: Callable[..., Any], name: str | None = None) -> LocalIterator:
        """Keep the items for which ``fn`` is true."""
        return self._then(ApplyStage(self.stage, fn, "filter", name))

    def combine(self, fn: Callable[..., Any], name: str | None = None) -> LocalIterator:
        """Apply ``fn`` returning a list per item; the lists are flattened (an empty list outputs nothing)."""
        return self._then(ApplyStage(self.stage, fn, "combine", name))

    def take(self, n: int) -> LocalIterator:
        """The first ``n`` items, then the end of the stream."""
        return self._then(TakeStage(self.stage, n))

    def zip_with_source_actor(self) -> LocalIterator:
        """``(actor, item)`` pairs; only straight after ``ParallelRollouts(..., mode="async")``."""
        return self._then(ZipSourceStage(self.stage))

    def duplicate(self, n: int, max_buffer: int = 1000) -> list[LocalIterator]:
        """``n`` iterators that each see every item of this one.

        Bounded by back-pressure: a copy more than ``max_buffer`` items ahead of the
        slowest copy gets :data:`NOT_READY` until the slowest catches up. Pulling one
        copy from a plan that does not contain the lagging copy raises
        :class:`~league.flow.errors.PlanStalledError` rather than waiting forever.
        """
        return [self._then(copy) for copy in duplicate_stages(self.stage, n, max_buffer)]

    def union(
        self,
        *others: LocalIterator,
        deterministic: bool = False,
        round_robin_weights: Sequence[int | str] | None = None,
    ) -> LocalIterator:
        """Items of this iterator and ``others`` merged into one stream.

        ``deterministic=True`` merges by round robin (see :func:`Concurrently`), which
        accepts ``round_robin_weights``; ``False`` merges asynchronously.
        """
        mode = "round_robin" if deterministic else "async"
        return Concurrently([self, *others], mode=mode, round_robin_weights=round_robin_weights, name="Union")

    # Pulling -------------------------------------------------------------------------
    def __iter__(self) -> LocalIterator:
        return self

    def try_next(self) -> Any:
        """One pull: the next item or :data:`NOT_READY` if nothing is available right now."""
        if self.metrics.started_at is None:
            self.metrics.started_at = time.perf_counter()
        return self.stage.pull(self.metrics)

    def __next__(self) -> Any:
        """The next item, waiting (with short sleeps) while the plan has nothing ready."""
        if self.metrics.started_at is None:
            self.metrics.started_at = time.perf_counter()
        idle = 0
        while True:
            item = self.stage.pull(self.metrics)
            if item is not NOT_READY:
                return item
            self._raise_if_stalled()
            idle += 1
            # Sources already wait briefly on their actors or queues; the sleep only
            # keeps a plan of purely local, not-ready branches from spinning a core. Its
            # time is the plan's (PLAN_IDLE): no operator's, so the operators' times plus
            # it make up the wall time of the plan's pulls.
            with self.metrics.timer(PLAN_IDLE):
                time.sleep(min(1e-4 * idle, _MAX_IDLE_SLEEP_S))

    def _raise_if_stalled(self) -> None:
        if self._graph is None:
            seen: set[int] = set()
            stages: list[Stage] = []
            todo = [self.stage]
            while todo:
                s = todo.pop()
                if id(s) in seen:
                    continue
                seen.add(id(s))
                stages.append(s)
                todo.extend(s.parents)
            self._graph = (seen, stages)
        reachable, stages = self._graph
        for s in stages:
            reason = s.stall_reason(reachable)
            if reason is not None:
                raise PlanStalledError(f"plan cannot make progress: {reason}")

    # Inspecting ----------------------------------------------------------------------
    def __str__(self) -> str:
        return draw(self.stage)

    def __repr__(self) -> str:
        return draw(self.stage)


_MODES = ("round_robin", "async")


def Concurrently(  # noqa: N802 - named like an operator, as plans read
    ops: Sequence[LocalIterator],
    mode: str = "round_robin",
    output_indexes: Sequence[int] | None = None,
    round_robin_weights: Sequence[int | str] | None = None,
    name: str = "Concurrently",
) -> LocalIterator:
    """Run several iterators in one plan by interleaving their pulls; one merged output stream.

    - ``mode="round_robin"``: branches take turns in order; branch ``i`` gives up to
      ``round_robin_weights[i]`` items per turn (default 1 each). ``"*"`` as a weight
      means "drain": the branch keeps its turn while it has items ready, which suits a
      branch fed by a queue or asynchronous actors (on an always-ready branch it would
      starve the others). A branch with nothing ready ends its turn early, so a replay
      branch that is still filling never blocks the others.
    - ``mode="async"``: one item per branch per turn, skipping branches with nothing
      ready; no weights. The output order follows arrival.
    - ``output_indexes``: only items from these branches are output; the others are
      still pulled for their side effects (e.g. storing to a replay buffer).

    The merged iterator uses the metrics of ``ops[0]``; every operator in every branch
    records into the metrics of whatever iterator is pulled.
    """
    ops = list(ops)
    if not ops or not all(isinstance(op, LocalIterator) for op in ops):
        raise TypeError(f"{name} needs a non-empty list of LocalIterators, got {ops!r}")
    if mode not in _MODES:
        raise ValueError(f"{name} mode must be one of {_MODES}, got {mode!r}")
    n = len(ops)
    if round_robin_weights is None:
        weights: list[int | str] = [1] * n
    else:
        if mode != "round_robin":
            raise ValueError(f"{name}: round_robin_weights need mode='round_robin', got mode={mode!r}")
        weights = list(round_robin_weights)
        if len(weights) != n:
            raise ValueError(f"{name}: {len(weights)} round_robin_weights for {n} branches")
        for w in weights:
            if w != STAR and not (isinstance(w, int) and not isinstance(w, bool) and w >= 1):
                raise ValueError(f"{name}: a round robin weight must be an integer >= 1 or '*', got {w!r}")
    if output_indexes is None:
        outputs = list(range(n))
    else:
        outputs = list(output_indexes)
        bad = [i for i in outputs if not isinstance(i, int) or not 0 <= i < n]
        if bad or not outputs:
            raise ValueError(f"{name}: output_indexes must be a non-empty list of branch indexes in [0, {n}), got {outputs}")
    details = [mode]
    if round_robin_weights is not None:
        details.append(f"weights={weights}")
    if output_indexes is not None:
        details.append(f"output_indexes={outputs}")
    label = f"{name}({', '.join(details)})"
    stage = UnionStage([op.stage for op in ops], weights, outputs, name, label)
    return LocalIterator(stage, ops[0].metrics)
