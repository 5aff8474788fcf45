"""A background thread that trains a learner on batches from a queue (IMPALA-style plans).

The driver's plan puts batches on :attr:`LearnerThread.inqueue` (``Enqueue``) and reads one
:class:`LearnerThreadResult` per update from :meth:`LearnerThread.results`, so sampling and
learning overlap. The thread never dies silently: an exception inside ``learn_on_batch``
ends the thread and is raised by the results stream (as a ``PlanError`` naming it), and a
stopped thread makes that stream raise too, rather than leaving the plan waiting forever.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterable
from typing import Any, NamedTuple

import numpy as np

from league.batch import MultiAgentBatch
from league.runtime.actors import call
from league.flow.iterators import LocalIterator
from league.flow.metrics import NUM_AGENT_STEPS_TRAINED, NUM_ENV_STEPS_TRAINED, PlanMetrics
from league.flow.stages import NOT_READY, SourceStage
from league.runtime.faces import LearnerFace, LearnerHandle

__all__ = ["LearnerThread", "LearnerThreadResult", "LearnerThreadError"]


class LearnerThreadResult(NamedTuple):
    """What the thread reports per batch: the learner's statistics and what it trained on."""

    stats: dict[str, dict[str, float]]
    env_steps: int
    agent_steps: int
    learn_time_s: float


class LearnerThreadError(RuntimeError):
    """The learner thread failed (the original exception is ``__cause__``) or was stopped."""


class _Failure(NamedTuple):
    error: BaseException


class LearnerThread(threading.Thread):
    """Calls ``learner.learn_on_batch(batch, policy_ids)`` for every batch put on :attr:`inqueue`.

    ``learner`` is a local :class:`~league.learn.Learner` or a Ray actor handle with the same
    methods. Updates hold :attr:`lock`; :meth:`get_weights` and :meth:`get_state` take it
    too, so what they read is never a half-applied optimiser step. Reading the learner
    directly is just as safe: a :class:`~league.learn.Learner` holds its own lock in every
    method, and a Ray actor runs one call at a time. With ``drop_stale_rows`` each update
    uses only the rows the policy may still learn from (:mod:`league.learn.staleness`),
    judged when the update starts, not when the batch was queued. Use as a context
    manager, or :meth:`start` and :meth:`stop`; it is a daemon thread, so a forgotten one
    never keeps the process alive.
    """

    def __init__(
        self,
        learner: LearnerHandle,
        policy_ids: Iterable[str] | None = None,
        queue_size: int = 16,
        poll_s: float = 0.05,
        name: str = "learner-thread",
        drop_stale_rows: bool = False,
    ) -> None:
        if isinstance(policy_ids, str):
            raise TypeError(f"LearnerThread needs a list of policy ids, got the string {policy_ids!r}")
        if not isinstance(queue_size, int) or queue_size < 1:
            raise ValueError(f"LearnerThread queue_size must be an integer >= 1, got {queue_size!r}")
        if poll_s <= 0:
            raise ValueError(f"LearnerThread poll_s must be positive, got {poll_s}")
        super().__init__(name=name, daemon=True)
        self.learner = learner
        self.policy_ids = None if policy_ids is None else list(policy_ids)
        #: Batches to learn from (bounded: a full queue is back-pressure on the plan).
        self.inqueue: queue.Queue[MultiAgentBatch] = queue.Queue(maxsize=queue_size)
        #: One :class:`LearnerThreadResult` per update (unbounded, but items are small).
        self.outqueue: queue.Queue[Any] = queue.Queue()
        #: Held during every update.
        self.lock = threading.Lock()
        #: The exception that ended the thread, if any.
        self.error: BaseException | None = None
        self.num_batches = 0
        self.poll_s = poll_s
        self.drop_stale_rows = bool(drop_stale_rows)
        self._stop_requested = threading.Event()

    # Thread body --------------------------------------------------------------------
    def run(self) -> None:
        """Learn from queued batches until :meth:`stop` (or until ``learn_on_batch`` raises)."""
        try:
            while not self._stop_requested.is_set():
                try:
                    batch = self.inqueue.get(timeout=self.poll_s)
                except queue.Empty:
                    continue
                self.outqueue.put(self._learn(batch))
                # Yield the GIL: a reader woken when the update released the learner's lock
                # (a weights broadcast, a snapshot, a checkpoint) gets it before this thread's
                # next update takes it again, instead of waiting behind a run of updates.
                time.sleep(0)
        except BaseException as err:  # noqa: BLE001 - handed to the plan, which raises it
            self.error = err
            self.outqueue.put(_Failure(err))
            self._drop_queued_batches()  # a producer blocked on a full queue must see the error

    def _learn(self, batch: MultiAgentBatch) -> LearnerThreadResult:
        if not isinstance(batch, MultiAgentBatch):
            raise TypeError(f"LearnerThread expects MultiAgentBatch items, got {type(batch).__name__}")
        start = time.perf_counter()
        # The keyword only when set: learners (and stand-ins) without it keep working.
        kwargs = {"drop_stale_rows": True} if self.drop_stale_rows else {}
        with self.lock:
            stats = call(self.learner, LearnerFace.learn_on_batch, batch, self.policy_ids, **kwargs)
        self.num_batches += 1
        if self.policy_ids is None:
            agent_steps = batch.agent_steps()
        else:
            agent_steps = sum(len(batch[p]) for p in self.policy_ids if p in batch)
        return LearnerThreadResult(dict(stats or {}), batch.env_steps, agent_steps, time.perf_counter() - start)

    def _drop_queued_batches(self) -> None:
        try:
            while True:
                self.inqueue.get_nowait()
        except queue.Empty:
            pass

    # Control --------------------------------------------------------------------
    def stop(self, timeout_s: float = 30.0) -> None:
        """Ask the thread to finish (after the update in progress) and wait for it.

        Batches still queued are dropped. Raises :class:`LearnerThreadError` if the thread
        is still running after ``timeout_s`` seconds.
        """
        self.request_stop()
        if self.is_alive():
            self.join(timeout_s)
            if self.is_alive():
                raise LearnerThreadError(f"{self.name} did not stop within {timeout_s} s (an update is still running)")
        self._drop_queued_batches()

    def request_stop(self) -> None:
        """Ask the thread to finish after the update in progress, without waiting for it."""
        self._stop_requested.set()

    @property
    def stopped(self) -> bool:
        """Whether a stop was requested (by :meth:`stop`, :meth:`request_stop` or a closed results stream)."""
        return self._stop_requested.is_set()

    def raise_if_failed(self) -> None:
        """Raise :class:`LearnerThreadError` (caused by the original exception) if the thread failed."""
        if self.error is not None:
            raise LearnerThreadError(f"{self.name} failed: {type(self.error).__name__}: {self.error}") from self.error

    def get_weights(self, policy_ids: list[str] | None = None) -> dict[str, dict[str, np.ndarray]]:
        """A copy of the learner's weights, taken between updates (never during one)."""
        with self.lock:
            weights = call(self.learner, LearnerFace.get_weights, policy_ids)
            # Copied under the lock, in case a learner hands out views of its live parameters.
            return {pid: {k: np.array(v, copy=True) for k, v in w.items()} for pid, w in weights.items()}

    def get_state(self, policy_id: str) -> bytes:
        """The learner's state of ``policy_id`` (``Learner.get_state``), taken between updates."""
        with self.lock:
            return call(self.learner, LearnerFace.get_state, policy_id)

    def __enter__(self) -> LearnerThread:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # Plan source ----------------------------------------------------------------
    def results(self) -> LocalIterator:
        """The thread's results as a plan source; starts the thread on the first pull.

        Yields a :class:`LearnerThreadResult` per update and :data:`NOT_READY` while none
        is waiting. Each result adds to ``num_env_steps_trained`` /
        ``num_agent_steps_trained``, updates the plan's learner statistics and the
        ``learn`` timer, and reports ``learner_queue_size``. Raises
        :class:`LearnerThreadError` once the thread has failed or was stopped, and stops
        the thread when the stream is closed (e.g. the plan is garbage collected).
        """

        def record(item: LearnerThreadResult, metrics: PlanMetrics) -> None:
            metrics.counters[NUM_ENV_STEPS_TRAINED] += item.env_steps
            metrics.counters[NUM_AGENT_STEPS_TRAINED] += item.agent_steps
            metrics.learner_stats.update(item.stats)
            metrics.timer("learn").record(item.learn_time_s)
            metrics.info["learner_queue_size"] = self.inqueue.qsize()

        label = f"LearnerThread({self.name!r}).results()"
        return LocalIterator(SourceStage(lambda: _ResultStream(self), "LearnerThread", label, on_item=record))


class _ResultStream:
    """Iterator over a thread's results: starts it on the first pull, stops it when collected.

    Not a generator on purpose: after a failure every further pull raises again, instead of
    the stream ending and leaving the rest of the plan running without a learner.
    """

    def __init__(self, thread: LearnerThread) -> None:
        self.thread = thread

    def __iter__(self) -> _ResultStream:
        return self

    def __next__(self) -> Any:
        th = self.thread
        if th.ident is None and not th.stopped:  # never started
            th.start()
        try:
            item = th.outqueue.get(timeout=th.poll_s / 10)
        except queue.Empty:
            if th.error is not None:
                th.raise_if_failed()
            if th.stopped or not th.is_alive():
                raise LearnerThreadError(f"{th.name} was stopped; the plan cannot train any more") from None
            return NOT_READY
        if isinstance(item, _Failure):
            th.raise_if_failed()
        return item

    def __del__(self) -> None:
        self.thread.request_stop()
