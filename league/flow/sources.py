"""Sources: where a plan's items come from (sampler actors, a replay buffer, a queue).

Sources never wait long: when nothing has arrived they yield :data:`NOT_READY`, so a
``Concurrently`` merge can interleave them with other branches in one driver thread.
``ParallelRollouts`` over Ray actors survives sampler restarts (:mod:`league.runtime.recovery`).
"""

from __future__ import annotations

import queue as queue_module
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from league.batch import MultiAgentBatch, SampleBatch
from league.flow.iterators import LocalIterator
from league.flow.metrics import NUM_AGENT_STEPS_SAMPLED, NUM_ENV_STEPS_SAMPLED, NUM_SAMPLER_RESTARTS, PlanMetrics
from league.flow.stages import NOT_READY, SourceStage
from league.runtime.actors import call, call_all, check_same_kind, submit
from league.runtime.faces import SamplerFace, SamplerHandle
from league.runtime.recovery import RestartingSamplers

__all__ = ["ParallelIterator", "ParallelRollouts", "Replay", "Dequeue"]

_MODES = ("bulk_sync", "async", "raw")


class RecoveringSourceStage(SourceStage):
    """A source over :class:`~league.runtime.recovery.RestartingSamplers` that counts
    their restarts into the plan's metrics on every pull."""

    def __init__(self, samplers: RestartingSamplers, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.samplers = samplers

    def pull(self, metrics: PlanMetrics) -> Any:
        try:
            return super().pull(metrics)
        finally:
            new = self.samplers.pop_new_restarts()
            if new:
                metrics.counters[NUM_SAMPLER_RESTARTS] += new
            if self.samplers.restarts:
                metrics.info["sampler_restarts"] = dict(self.samplers.restarts)


class _LastSource:
    """Remembers which actor produced the latest item of an asynchronous gather."""

    actor: Any = None

    def __call__(self) -> Any:
        return self.actor


def _gather_async(actors: Sequence[Any], method: Callable[[Any], Any], num_async: int, poll_s: float, last: _LastSource) -> Iterator[Any]:
    if not check_same_kind(actors, "actors of an async gather"):
        # Local objects cannot overlap; call them in turn.
        while True:
            for actor in actors:
                last.actor = actor
                yield call(actor, method)
    import ray

    pending: dict[Any, Any] = {}
    for actor in actors:
        for _ in range(num_async):
            pending[submit(actor, method)] = actor
    while True:
        # Oldest requests first, so that a fast actor cannot starve the others' results.
        ready, _ = ray.wait(list(pending), num_returns=1, timeout=poll_s)
        if not ready:
            yield NOT_READY
            continue
        actor = pending.pop(ready[0])
        result = ray.get(ready[0])
        pending[submit(actor, method)] = actor
        last.actor = actor
        yield result


class ParallelIterator:
    """A set of actors that each produce items by calling ``method`` (``SamplerFace.sample``, a
    method reference: :mod:`league.runtime.faces`) repeatedly.

    This is what ``ParallelRollouts(..., mode="raw")`` returns; turn it into a plan with
    :meth:`gather_sync` or :meth:`gather_async`.
    """

    def __init__(self, actors: Sequence[Any], method: Callable[[Any], Any] = SamplerFace.sample) -> None:
        actors = list(actors)
        if not actors:
            raise ValueError("ParallelIterator needs at least one actor")
        check_same_kind(actors, "ParallelIterator actors")
        self.actors = actors
        self.method = method

    def gather_sync(self) -> LocalIterator:
        """Each item is the list of one result per actor, all requested in parallel."""

        def rounds() -> Iterator[list[Any]]:
            while True:
                yield call_all(self.actors, self.method)

        label = f"ParallelIterator({len(self.actors)} actors).gather_sync()"
        return LocalIterator(SourceStage(rounds, "GatherSync", label))

    def gather_async(self, num_async: int = 1, poll_s: float = 0.001) -> LocalIterator:
        """Each result as soon as it arrives, with ``num_async`` requests in flight per actor.

        Yields :data:`NOT_READY` when nothing arrived within ``poll_s`` seconds. Local
        objects are called one after the other (no overlap is possible).
        """
        _check_num_async(num_async)
        last = _LastSource()
        label = f"ParallelIterator({len(self.actors)} actors).gather_async(num_async={num_async})"
        stage = SourceStage(
            lambda: _gather_async(self.actors, self.method, num_async, poll_s, last),
            "GatherAsync",
            label,
            source_of_last=last,
        )
        return LocalIterator(stage)

    def __repr__(self) -> str:
        return f"ParallelIterator({len(self.actors)} actors, method={self.method!r})"


def _check_num_async(num_async: int) -> None:
    if not isinstance(num_async, int) or num_async < 1:
        raise ValueError(f"num_async must be an integer >= 1, got {num_async!r}")


def _count_sampled(batch: Any, metrics: PlanMetrics) -> None:
    if isinstance(batch, MultiAgentBatch):
        metrics.counters[NUM_ENV_STEPS_SAMPLED] += batch.env_steps
        metrics.counters[NUM_AGENT_STEPS_SAMPLED] += batch.agent_steps()
        for pid, policy_batch in batch.policy_batches.items():  # per policy: the league's clock
            metrics.counters[f"{NUM_AGENT_STEPS_SAMPLED}/{pid}"] += len(policy_batch)
    elif isinstance(batch, SampleBatch):
        metrics.counters[NUM_ENV_STEPS_SAMPLED] += len(batch)
        metrics.counters[NUM_AGENT_STEPS_SAMPLED] += len(batch)
    else:
        raise TypeError(f"a sampler returned {type(batch).__name__}; expected MultiAgentBatch")


def ParallelRollouts(  # noqa: N802 - named like an operator, as plans read
    samplers: Sequence[SamplerHandle],
    mode: str = "bulk_sync",
    num_async: int = 1,
    poll_s: float = 0.001,
    restart_timeout_s: float = 300.0,
) -> LocalIterator | ParallelIterator:
    """Experience from samplers (Ray actors or local objects with ``sample()``).

    - ``"bulk_sync"``: each item is ``MultiAgentBatch.concat`` of one ``sample()`` from
      every sampler, requested in parallel when the item is asked for (so every fragment
      sees the weights broadcast before). Over Ray actors it yields :data:`NOT_READY`
      while the round is out (waiting ``poll_s`` per pull), letting other branches of the
      plan run meanwhile.
    - ``"async"``: each sampler's batch as soon as it arrives, keeping ``num_async``
      requests in flight per sampler; yields :data:`NOT_READY` while none has arrived
      (waiting ``poll_s`` seconds per pull). Supports ``zip_with_source_actor()``.
    - ``"raw"``: the :class:`ParallelIterator` over the samplers, to gather yourself.

    ``bulk_sync`` and ``async`` count ``num_env_steps_sampled`` and
    ``num_agent_steps_sampled`` into the plan's metrics, for the batches they yield.

    Ray sampler actors that die and are restarted by Ray are survived (see
    :mod:`league.runtime.recovery`): the lost fragment is discarded, uncounted; the hooks
    registered with :func:`~league.runtime.recovery.on_sampler_restart` (``BroadcastWeights``
    registers one re-sending weights) run before the sampler is asked again; restarts
    are counted as ``num_sampler_restarts`` and listed per sampler index in
    ``metrics.info["sampler_restarts"]``. A sampler dead for good, or without a usable
    fragment ``restart_timeout_s`` seconds after its restart was noticed, raises
    :class:`~league.runtime.recovery.SamplerDiedError` (in a ``PlanError``).
    """
    samplers = list(samplers)
    if not samplers:
        raise ValueError("ParallelRollouts needs at least one sampler")
    if mode not in _MODES:
        raise ValueError(f"ParallelRollouts mode must be one of {_MODES}, got {mode!r}")
    _check_num_async(num_async)
    parallel = ParallelIterator(samplers, SamplerFace.sample)
    if mode == "raw":
        return parallel
    n = len(samplers)
    label = f"ParallelRollouts({n} samplers, bulk_sync)"
    last = _LastSource()
    if mode == "async":
        label = f"ParallelRollouts({n} samplers, async, num_async={num_async})"
    if check_same_kind(samplers, "ParallelRollouts samplers"):
        restarting = RestartingSamplers(samplers, restart_timeout_s)
        if mode == "bulk_sync":
            # The round is out while the driver does other work (NOT_READY), e.g. an
            # off-policy learner of the same plan training between rounds.
            rounds = lambda: (NOT_READY if parts is None else MultiAgentBatch.concat(parts) for parts in restarting.rounds(poll_s))  # noqa: E731
            return LocalIterator(RecoveringSourceStage(restarting, rounds, "ParallelRollouts", label,
                                                       on_item=_count_sampled))
        stage: SourceStage = RecoveringSourceStage(
            restarting,
            lambda: (NOT_READY if batch is None else batch for batch in restarting.stream(num_async, poll_s, last)),
            "ParallelRollouts",
            label,
            on_item=_count_sampled, source_of_last=last,
        )
        return LocalIterator(stage)
    if mode == "bulk_sync":

        def local_rounds() -> Iterator[MultiAgentBatch]:
            while True:
                yield MultiAgentBatch.concat(call_all(samplers, SamplerFace.sample))

        return LocalIterator(SourceStage(local_rounds, "ParallelRollouts", label, on_item=_count_sampled))
    stage = SourceStage(
        lambda: _gather_async(samplers, SamplerFace.sample, num_async, poll_s, last),
        "ParallelRollouts",
        label,
        on_item=_count_sampled,
        source_of_last=last,
    )
    return LocalIterator(stage)


def Replay(  # noqa: N802 - named like an operator, as plans read
    buffer: Any,
    batch_size: int,
    min_size: int | None = None,
    policy_ids: Sequence[str] | None = None,
) -> LocalIterator:
    """Batches of ``batch_size`` rows sampled from replay storage.

    Without ``policy_ids``: each item is ``buffer.sample(batch_size)``, once
    ``len(buffer) >= min_size`` (default ``batch_size``; not checked if the buffer has no
    ``len``). With ``policy_ids`` (a multi-agent buffer): each item is a
    ``MultiAgentBatch`` of ``buffer.sample(policy_id, batch_size)`` per policy, with
    ``env_steps = batch_size``, once every ``buffer[policy_id]`` holds ``min_size`` rows.
    Yields :data:`NOT_READY` until then, and whenever ``sample`` returns ``None``.
    """
    if not callable(getattr(buffer, "sample", None)):
        raise TypeError(f"Replay needs a buffer with sample(), got {type(buffer).__name__}")
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"Replay batch_size must be an integer >= 1, got {batch_size!r}")
    if isinstance(policy_ids, str):
        raise TypeError(f"Replay policy_ids must be a list of policy ids, got the string {policy_ids!r}")
    threshold = batch_size if min_size is None else min_size
    pids = None if policy_ids is None else list(policy_ids)

    def policy_rows(pid: str) -> int:
        try:
            return len(buffer[pid])
        except (KeyError, ValueError):  # no rows of that policy stored yet
            return 0

    def single() -> Iterator[Any]:
        sized = hasattr(buffer, "__len__")
        while True:
            batch = None if sized and len(buffer) < threshold else buffer.sample(batch_size)
            yield NOT_READY if batch is None else batch

    def per_policy() -> Iterator[Any]:
        assert pids is not None
        while True:
            if any(policy_rows(pid) < threshold for pid in pids):
                yield NOT_READY
                continue
            parts = {pid: buffer.sample(pid, batch_size) for pid in pids}
            yield MultiAgentBatch(parts, batch_size)

    label = f"Replay(batch_size={batch_size}" + ("" if pids is None else f", policies={pids}") + ")"
    return LocalIterator(SourceStage(single if pids is None else per_policy, "Replay", label))


def Dequeue(  # noqa: N802 - named like an operator, as plans read
    queue: queue_module.Queue,
    name: str | None = None,
    timeout_s: float = 60.0,
    poll_s: float = 0.001,
) -> LocalIterator:
    """Items taken from a ``queue.Queue`` (filled by another thread, e.g. a learner thread).

    Waits up to ``poll_s`` per pull and yields :data:`NOT_READY` while the queue is
    empty; raises ``TimeoutError`` naming the queue (wrapped in a ``PlanError``) once it
    has been seen empty continuously for more than ``timeout_s`` seconds.
    """
    if not hasattr(queue, "get"):
        raise TypeError(f"Dequeue needs a queue.Queue, got {type(queue).__name__}")
    if timeout_s <= 0:
        raise ValueError(f"Dequeue timeout_s must be positive, got {timeout_s}")
    queue_name = name or f"queue@{id(queue):#x}"

    def items() -> Iterator[Any]:
        empty_since: float | None = None
        while True:
            try:
                item = queue.get(timeout=poll_s)
            except queue_module.Empty:
                now = time.monotonic()
                if empty_since is None:
                    empty_since = now
                elif now - empty_since > timeout_s:
                    raise TimeoutError(f"queue '{queue_name}' stayed empty for more than {timeout_s} s") from None
                yield NOT_READY
                continue
            empty_since = None
            yield item

    return LocalIterator(SourceStage(items, "Dequeue", f"Dequeue({queue_name!r})"))
