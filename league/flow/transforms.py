"""Operators that reshape, store or gate the data stream; none of them knows any algorithm."""

from __future__ import annotations

import queue as queue_module
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from league.batch import MultiAgentBatch, SampleBatch
from league.flow.metrics import (
    NUM_AGENT_STEPS_CUT_TO_STACK,
    NUM_AGENT_STEPS_STORED,
    NUM_ENV_STEPS_SAMPLED,
    NUM_ENV_STEPS_STORED,
    PlanMetrics,
)
from league.flow.stages import Operator

__all__ = [
    "SelectExperiences",
    "ConcatBatches",
    "ConcatPolicyBatches",
    "StandardizeFields",
    "StoreToReplayBuffer",
    "Enqueue",
    "WaitUntilTimestepsElapsed",
]


def _require_multi_agent(item: Any, op: str) -> MultiAgentBatch:
    if not isinstance(item, MultiAgentBatch):
        raise TypeError(f"{op} expects a MultiAgentBatch, got {type(item).__name__}")
    return item


def _policy_list(policy_ids: Iterable[str], op: str) -> list[str]:
    if isinstance(policy_ids, str):
        raise TypeError(f"{op} needs a list of policy ids, got the string {policy_ids!r}")
    ids = list(policy_ids)
    if not ids or not all(isinstance(p, str) for p in ids):
        raise ValueError(f"{op} needs a non-empty list of policy id strings, got {ids!r}")
    return ids


class SelectExperiences(Operator):
    """Keeps only the given policies' batches of each ``MultiAgentBatch`` (env steps unchanged)."""

    def __init__(self, policy_ids: Iterable[str]) -> None:
        self.policy_ids = _policy_list(policy_ids, "SelectExperiences")

    def describe(self) -> str:
        return f"SelectExperiences({self.policy_ids})"

    def __call__(self, item: Any, metrics: PlanMetrics) -> MultiAgentBatch:
        return _require_multi_agent(item, self.name).select(self.policy_ids)


_COUNTS = ("env_steps", "agent_steps")


class ConcatBatches(Operator):
    """Accumulates batches until they hold ``min_batch_size`` steps, then outputs their concatenation.

    ``count="env_steps"`` counts ``MultiAgentBatch.env_steps``; ``"agent_steps"``
    counts rows over all policies. Plain ``SampleBatch`` items count their rows. Use
    with ``.combine(...)``: each input yields ``[]`` or ``[concatenated]``.
    """

    kind = "combine"

    def __init__(self, min_batch_size: int, count: str = "env_steps") -> None:
        if not isinstance(min_batch_size, int) or min_batch_size < 1:
            raise ValueError(f"ConcatBatches min_batch_size must be an integer >= 1, got {min_batch_size!r}")
        if count not in _COUNTS:
            raise ValueError(f"ConcatBatches count must be one of {_COUNTS}, got {count!r}")
        self.min_batch_size = min_batch_size
        self.count = count
        self._buffer: list[Any] = []
        self._steps = 0

    def describe(self) -> str:
        suffix = "" if self.count == "env_steps" else ", count=agent_steps"
        return f"ConcatBatches({self.min_batch_size}{suffix})"

    def _size(self, item: Any) -> int:
        if isinstance(item, MultiAgentBatch):
            return item.env_steps if self.count == "env_steps" else item.agent_steps()
        if isinstance(item, SampleBatch):
            return len(item)
        raise TypeError(f"ConcatBatches expects MultiAgentBatch or SampleBatch, got {type(item).__name__}")

    def __call__(self, item: Any, metrics: PlanMetrics) -> list[Any]:
        if self._buffer and type(item) is not type(self._buffer[0]):
            raise TypeError(
                f"ConcatBatches got a {type(item).__name__} after {type(self._buffer[0]).__name__}s; "
                "a stream must hold one kind of batch"
            )
        self._steps += self._size(item)
        self._buffer.append(item)
        if self._steps < self.min_batch_size:
            return []
        parts, self._buffer, self._steps = self._buffer, [], 0
        out = MultiAgentBatch.concat(parts) if isinstance(item, MultiAgentBatch) else SampleBatch.concat(parts)
        metrics.info["last_concat_size"] = self._size(out)
        return [out]


class ConcatPolicyBatches(Operator):
    """Per policy, accumulates rows until that policy holds ``min_batch_size``; outputs the
    policies that are full after the same input together, as one ``MultiAgentBatch``.

    Each policy is output exactly when a :class:`ConcatBatches` of its own rows
    (``count="agent_steps"``) behind ``SelectExperiences([policy])`` would output it, so the
    policies train as often as in one fragment each; what changes is that policies full at
    once reach the learner in one call, cut to the shortest of them (the rows past it, the
    latest, are dropped and counted in ``num_agent_steps_cut_to_stack``): equally long
    batches, which a learner that stacks same-shaped policies (``learner.stack_same_shaped``)
    updates as one. A policy full alone keeps every row. The output's ``env_steps`` add up
    each output policy's env steps, as the one-fragment-per-policy plan counts them.
    Use with ``.combine(...)``: each input yields ``[]`` or ``[batch]``.
    """

    kind = "combine"

    def __init__(self, policy_ids: Iterable[str], min_batch_size: int) -> None:
        if not isinstance(min_batch_size, int) or min_batch_size < 1:
            raise ValueError(f"ConcatPolicyBatches min_batch_size must be an integer >= 1, got {min_batch_size!r}")
        self.policy_ids = _policy_list(policy_ids, "ConcatPolicyBatches")
        self.min_batch_size = min_batch_size
        self._buffers: dict[str, list[SampleBatch]] = {p: [] for p in self.policy_ids}
        self._rows = dict.fromkeys(self.policy_ids, 0)
        self._env_steps = dict.fromkeys(self.policy_ids, 0)

    def describe(self) -> str:
        return f"ConcatPolicyBatches({self.min_batch_size} rows per policy, {self.policy_ids})"

    def __call__(self, item: Any, metrics: PlanMetrics) -> list[Any]:
        batch = _require_multi_agent(item, self.name)
        for pid in self.policy_ids:
            # Env steps count from a policy's last output, as its own ConcatBatches counts them.
            self._env_steps[pid] += batch.env_steps
            if pid in batch and len(batch[pid]):
                self._buffers[pid].append(batch[pid])
                self._rows[pid] += len(batch[pid])
        full = [pid for pid in self.policy_ids if self._rows[pid] >= self.min_batch_size]
        if not full:
            return []
        parts = {pid: SampleBatch.concat(self._buffers[pid]) for pid in full}
        steps = sum(self._env_steps[pid] for pid in full)
        for pid in full:
            self._buffers[pid], self._rows[pid], self._env_steps[pid] = [], 0, 0
        if len(full) > 1:
            rows = min(len(b) for b in parts.values())
            metrics.counters[NUM_AGENT_STEPS_CUT_TO_STACK] += sum(len(b) - rows for b in parts.values())
            parts = {pid: b if len(b) == rows else b[:rows] for pid, b in parts.items()}
        out = MultiAgentBatch(parts, steps)
        metrics.info["last_concat_size"] = out.agent_steps()
        return [out]


def _standardized(column: np.ndarray) -> np.ndarray:
    values = column.astype(np.float64)
    out = (values - values.mean()) / max(float(values.std()), 1e-8)
    return out.astype(column.dtype) if np.issubdtype(column.dtype, np.floating) else out


class StandardizeFields(Operator):
    """Per policy, replaces each named column by ``(x - mean) / max(std, 1e-8)``.

    Returns new batches: the input batches and arrays are left untouched (other columns
    are shared, not copied). A policy batch lacking a named column is a ``ValueError``.
    """

    def __init__(self, fields: Iterable[str]) -> None:
        if isinstance(fields, str):
            raise TypeError(f"StandardizeFields needs a list of column names, got the string {fields!r}")
        self.fields = list(fields)
        if not self.fields:
            raise ValueError("StandardizeFields needs at least one column name")

    def describe(self) -> str:
        return f"StandardizeFields({self.fields})"

    def _one(self, batch: SampleBatch, owner: str) -> SampleBatch:
        columns = dict(batch.columns)
        for name in self.fields:
            if name not in columns:
                raise ValueError(f"StandardizeFields: {owner} has no column '{name}' (has {sorted(columns)})")
            if len(batch):
                columns[name] = _standardized(columns[name])
        return SampleBatch(columns)

    def __call__(self, item: Any, metrics: PlanMetrics) -> Any:
        if isinstance(item, SampleBatch):
            return self._one(item, "the batch")
        batch = _require_multi_agent(item, self.name)
        return MultiAgentBatch(
            {pid: self._one(b, f"policy '{pid}'") for pid, b in batch.policy_batches.items()}, batch.env_steps
        )


class StoreToReplayBuffer(Operator):
    """Adds each item to replay storage and passes it on unchanged.

    ``buffer`` is either one object with ``add(item)`` (e.g. a multi-agent replay
    buffer taking whole ``MultiAgentBatch`` items, or a buffer fed ``SampleBatch``
    items), or a mapping ``{policy_id: buffer}``: each policy's ``SampleBatch`` goes to its
    own buffer, and policies without a buffer are not stored.
    """

    def __init__(self, buffer: Any) -> None:
        if isinstance(buffer, Mapping):
            bad = [p for p, b in buffer.items() if not callable(getattr(b, "add", None))]
            if bad or not buffer:
                raise TypeError(f"StoreToReplayBuffer: every buffer of the mapping needs add(); not {bad}")
        elif not callable(getattr(buffer, "add", None)):
            raise TypeError(f"StoreToReplayBuffer needs an object with add(), got {type(buffer).__name__}")
        self.buffer = buffer

    def describe(self) -> str:
        if isinstance(self.buffer, Mapping):
            return f"StoreToReplayBuffer(per policy: {list(self.buffer)})"
        return f"StoreToReplayBuffer({type(self.buffer).__name__})"

    def __call__(self, item: Any, metrics: PlanMetrics) -> Any:
        if isinstance(self.buffer, Mapping):
            batch = _require_multi_agent(item, self.name)
            for pid, policy_batch in batch.policy_batches.items():
                if pid in self.buffer:
                    self.buffer[pid].add(policy_batch)
                    metrics.counters[NUM_AGENT_STEPS_STORED] += len(policy_batch)
        else:
            self.buffer.add(item)
            if isinstance(item, MultiAgentBatch):
                metrics.counters[NUM_AGENT_STEPS_STORED] += item.agent_steps()
            elif isinstance(item, SampleBatch):
                metrics.counters[NUM_AGENT_STEPS_STORED] += len(item)
        if isinstance(item, MultiAgentBatch):
            metrics.counters[NUM_ENV_STEPS_STORED] += item.env_steps
        return item


class Enqueue(Operator):
    """Puts each item on a ``queue.Queue`` (for another thread) and passes it on.

    Blocks while the queue is full, for at most ``timeout_s`` seconds, then raises a
    ``TimeoutError`` naming the queue: a full queue is back-pressure from its consumer.
    """

    def __init__(self, queue: queue_module.Queue, name: str | None = None, timeout_s: float = 60.0) -> None:
        if not hasattr(queue, "put"):
            raise TypeError(f"Enqueue needs a queue.Queue, got {type(queue).__name__}")
        if timeout_s <= 0:
            raise ValueError(f"Enqueue timeout_s must be positive, got {timeout_s}")
        self.queue = queue
        self.queue_name = name or f"queue@{id(queue):#x}"
        self.timeout_s = timeout_s

    def describe(self) -> str:
        return f"Enqueue({self.queue_name!r})"

    def __call__(self, item: Any, metrics: PlanMetrics) -> Any:
        try:
            self.queue.put(item, timeout=self.timeout_s)
        except queue_module.Full:
            raise TimeoutError(f"queue '{self.queue_name}' stayed full for more than {self.timeout_s} s") from None
        return item


class WaitUntilTimestepsElapsed(Operator):
    """Lets an item through once the ``counter`` grew by ``n`` since the last item let through.

    Use with ``.filter(...)``. The counter defaults to ``num_env_steps_sampled``; any
    counter of the plan's metrics can be named (e.g. ``num_agent_steps_trained``).
    """

    kind = "filter"

    def __init__(self, n: int, counter: str = NUM_ENV_STEPS_SAMPLED) -> None:
        if not isinstance(n, int) or n < 0:
            raise ValueError(f"WaitUntilTimestepsElapsed needs an integer n >= 0, got {n!r}")
        self.n = n
        self.counter = counter
        self._last = 0

    def describe(self) -> str:
        suffix = "" if self.counter == NUM_ENV_STEPS_SAMPLED else f", counter={self.counter!r}"
        return f"WaitUntilTimestepsElapsed({self.n}{suffix})"

    def __call__(self, item: Any, metrics: PlanMetrics) -> bool:
        now = metrics.counters.get(self.counter, 0)
        if now - self._last < self.n:
            return False
        self._last = now
        return True
