"""The stages a plan is built from, and the protocol they follow.

A plan is a graph of :class:`Stage` objects ending in the stage you pull. Pulling is
lazy and happens in the driver: ``stage.pull(metrics)`` returns the next item, or
:data:`NOT_READY` when nothing is available yet (an asynchronous source is waiting on its
actors, a queue is empty, a branch is held back), and raises ``StopIteration`` when the
stream has ended. Sources never block for long: they return ``NOT_READY`` instead, which
is what lets a union interleave branches without threads.

Every stage times itself and counts its items into the :class:`PlanMetrics` it is pulled
with, and wraps any exception from user code in a :class:`PlanError` naming itself and
its path.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any, ClassVar

from league.flow.errors import PlanError
from league.flow.metrics import PlanMetrics

__all__ = ["NOT_READY", "Operator", "Stage", "SourceStage", "ApplyStage", "TakeStage", "ZipSourceStage"]


class _NotReady:
    """Type of :data:`NOT_READY` (a singleton)."""

    _instance: ClassVar[_NotReady | None] = None

    def __new__(cls) -> _NotReady:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NOT_READY"

    def __reduce__(self) -> str:
        return "NOT_READY"


NOT_READY = _NotReady()
"""Returned by a stage (or yielded by a source, or returned by an operator) when it has nothing yet."""


class Operator:
    """Base class of the named operators a plan applies (``TrainOneStep``, ``ConcatBatches``...).

    Subclasses implement ``__call__(item, metrics)``; ``kind`` says which
    :class:`~league.flow.iterators.LocalIterator` method applies them (``"for_each"``:
    one output per item; ``"filter"``: returns a bool; ``"combine"``: returns a list of
    outputs, possibly empty). :meth:`describe` is the label drawn by ``print(plan)``.
    """

    kind: ClassVar[str] = "for_each"

    @property
    def name(self) -> str:
        """Short name used in plan paths, errors and metrics."""
        return type(self).__name__

    def describe(self) -> str:
        """Label drawn by ``print(plan)``; subclasses add their settings."""
        return self.name

    def __call__(self, item: Any, metrics: PlanMetrics) -> Any:
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.describe()


def _callable_name(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__name__", None) or type(fn).__name__


class Stage:
    """One node of a plan: ``name`` (paths, metrics), ``label`` (drawing), ``parents`` (inputs)."""

    def __init__(self, name: str, label: str, parents: tuple[Stage, ...] = ()) -> None:
        self.name = name
        self.label = label
        self.parents = parents

    def pull(self, metrics: PlanMetrics) -> Any:
        """The next item, :data:`NOT_READY`, or ``StopIteration`` at the end of the stream."""
        raise NotImplementedError

    def path(self) -> list[str]:
        """Stage names from the start of this stage's branch (a source or a merge) to here."""
        if len(self.parents) == 1:
            return self.parents[0].path() + [self.name]
        return [self.name]

    def stall_reason(self, reachable: set[int]) -> str | None:
        """Why this stage can never become ready in a plan made of the stages ``reachable`` (ids)."""
        return None

    def error(self, original: BaseException) -> PlanError:
        """``original`` wrapped with this stage's name and path."""
        return PlanError(self.name, self.path(), original)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.label}>"


class SourceStage(Stage):
    """A stage reading an iterable, created lazily on the first pull.

    ``items`` is an iterable or a zero-argument callable returning one; it may yield
    :data:`NOT_READY`. ``on_item(item, metrics)`` runs for each real item (a source uses
    it to count what it produced). ``source_of_last`` (optional) returns the actor that
    produced the latest item, for ``zip_with_source_actor``.
    """

    def __init__(
        self,
        items: Iterable[Any] | Callable[[], Iterable[Any]],
        name: str,
        label: str | None = None,
        on_item: Callable[[Any, PlanMetrics], None] | None = None,
        source_of_last: Callable[[], Any] | None = None,
    ) -> None:
        super().__init__(name, label or name)
        self._items = items
        self._iterator: Iterator[Any] | None = None
        self._on_item = on_item
        self.source_of_last = source_of_last

    def pull(self, metrics: PlanMetrics) -> Any:
        stats = metrics.stage_stats(self, self.name)
        start = time.perf_counter()
        try:
            if self._iterator is None:
                items = self._items() if callable(self._items) else self._items
                self._iterator = iter(items)
            item = next(self._iterator)
            if item is not NOT_READY and self._on_item is not None:
                self._on_item(item, metrics)
        except (StopIteration, PlanError):
            raise
        except Exception as e:
            raise self.error(e) from e
        finally:
            stats.time_s += time.perf_counter() - start
        if item is NOT_READY:
            stats.not_ready += 1
        else:
            stats.items_out += 1
        return item


_KINDS = ("for_each", "filter", "combine")


class ApplyStage(Stage):
    """Applies a function or :class:`Operator` to each item: ``for_each``, ``filter`` or ``combine``.

    Operators are called as ``op(item, metrics)``, plain callables as ``fn(item)``. A
    filtered-out item or an empty combine output makes the stage pull again, so one pull
    returns at most one item.
    """

    def __init__(self, parent: Stage, fn: Callable[..., Any], kind: str, name: str | None = None) -> None:
        if kind not in _KINDS:
            raise ValueError(f"kind must be one of {_KINDS}, got {kind!r}")
        if not callable(fn):
            raise TypeError(f"{kind}() needs a callable, got {type(fn).__name__}")
        is_op = isinstance(fn, Operator)
        if isinstance(fn, Operator):
            if fn.kind != kind:
                raise TypeError(
                    f"{fn.name} is a {fn.kind} operator; apply it with .{fn.kind}({fn.name}(...)), not .{kind}()"
                )
            stage_name, label = name or fn.name, fn.describe()
        else:
            stage_name = name or f"{kind}({_callable_name(fn)})"
            label = stage_name
        super().__init__(stage_name, label, (parent,))
        self.fn = fn
        self.kind = kind
        self._with_metrics = is_op
        self._pending: deque[Any] = deque()

    def pull(self, metrics: PlanMetrics) -> Any:
        parent = self.parents[0]
        while True:
            if self._pending:
                metrics.stage_stats(self, self.name).items_out += 1
                return self._pending.popleft()
            item = parent.pull(metrics)
            if item is NOT_READY:
                return NOT_READY
            stats = metrics.stage_stats(self, self.name)
            stats.items_in += 1
            start = time.perf_counter()
            try:
                out = self.fn(item, metrics) if self._with_metrics else self.fn(item)
                if self.kind == "combine":
                    out = list(out)
            except PlanError:
                raise
            except Exception as e:  # StopIteration included: an operator must not end the plan silently
                raise self.error(e) from e
            finally:
                stats.time_s += time.perf_counter() - start
            if self.kind == "for_each":
                if out is NOT_READY:
                    stats.not_ready += 1
                else:
                    stats.items_out += 1
                return out
            if self.kind == "filter":
                if out:
                    stats.items_out += 1
                    return item
                continue
            self._pending.extend(out)


class TakeStage(Stage):
    """Ends the stream after ``n`` items."""

    def __init__(self, parent: Stage, n: int) -> None:
        if not isinstance(n, int) or n < 0:
            raise ValueError(f"take(n) needs an integer n >= 0, got {n!r}")
        super().__init__(f"Take({n})", f"Take({n})", (parent,))
        self.remaining = n

    def pull(self, metrics: PlanMetrics) -> Any:
        if self.remaining <= 0:
            raise StopIteration
        item = self.parents[0].pull(metrics)
        if item is not NOT_READY:
            self.remaining -= 1
            metrics.stage_stats(self, self.name).items_out += 1
        return item


class ZipSourceStage(Stage):
    """Pairs each item of a source with the actor that produced it: ``(actor, item)``."""

    def __init__(self, parent: Stage) -> None:
        if not isinstance(parent, SourceStage) or parent.source_of_last is None:
            raise TypeError(
                "zip_with_source_actor() works on an iterator straight from a source that "
                "knows its actors, e.g. ParallelRollouts(samplers, mode='async'); got "
                f"{parent.label}"
            )
        super().__init__("ZipWithSourceActor", "ZipWithSourceActor", (parent,))

    def pull(self, metrics: PlanMetrics) -> Any:
        parent = self.parents[0]
        item = parent.pull(metrics)
        if item is NOT_READY:
            return item
        assert isinstance(parent, SourceStage) and parent.source_of_last is not None
        return parent.source_of_last(), item
