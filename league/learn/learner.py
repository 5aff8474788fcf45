"""A learner: any number of policies (any algorithms) on one device, updated from batches.

Each policy keeps its own model, optimiser (none when frozen), RNG and algorithm state.
One :meth:`Learner.learn_on_batch` updates every trainable policy in the batch:

- policies whose algorithm offers the stacking hooks (``stack_key()`` and
  ``learn_stacked(states, batches)``), with models of one structure, plain Adam and
  equally long batches, are updated together as one vmapped model (one kernel per op
  for all of them; see :mod:`league.learn.stacking`) — on by default here: it saves
  kernel launches and syncs on CUDA; on CPU it speeds up small MLPs, the plain board conv
  little (1.3x at K=16), and slows the default job's model (0.7x; ``benchmarks/bench_learner.py``). ``league-train`` reaches it with
  ``learner.stack_same_shaped=true`` (off by default there): its plan then hands the
  learner, in one call, the same-config PPO policies whose batches fill after the same
  rollout (:func:`league.algos.compose.build_multi_policy_plan`); each stacked policy's
  statistics carry ``stack_size`` (:data:`~league.flow.metrics.STACK_SIZE`);
- the others, on CUDA, run concurrently on their own CUDA streams (one thread each, so
  one policy's host-side work overlaps another's kernels); on CPU, in turn.

The same class runs in-process (tests, the GPU machine, which has no Ray) or as a Ray
actor (see :mod:`league.learn.placement`); nothing here imports Ray.

Consistency: every public method holds one re-entrant lock, so weights, states and
versions are only ever read between updates, never in the middle of an optimiser step,
even while another thread trains (IMPALA's :class:`~league.learn.learner_thread.LearnerThread`).

Versions and epochs (:mod:`league.learn.staleness`): each policy's weights version grows
by one per update; replacing its weights from outside (:meth:`Learner.set_state`,
:meth:`Learner.set_weights`: a league reset, a checkpoint restore) starts a new epoch, so
``learn_on_batch(..., drop_stale_rows=True)`` never trains the new weights on rows the
old ones produced.
"""

from __future__ import annotations

import contextlib
import io
import threading
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

import numpy as np
import torch

from league.learn.algorithm import Algorithm, PolicyState, read_version, write_version
from league.batch import MultiAgentBatch, SampleBatch
from league.flow.metrics import STACK_SIZE
from league.learn.onednn import fp32_matmuls
from league.learn.stacking import stack_signature
from league.learn.staleness import FreshRows, select_fresh_rows

__all__ = ["PRECISIONS", "check_precision", "Learner"]

#: ``precision`` values: fp32, or bf16 (every update's forward under ``torch.autocast`` in bfloat16).
PRECISIONS = ("fp32", "bf16")


def check_precision(precision: str) -> None:
    """ValueError naming ``learner.precision`` and its values unless ``precision`` is one of :data:`PRECISIONS`."""
    if precision not in PRECISIONS:
        raise ValueError(f"learner.precision must be one of {list(PRECISIONS)}, got {precision!r}")


Stats = dict[str, dict[str, float]]


class Learner:
    """Holds policies on one device and updates them from :class:`MultiAgentBatch` es.

    ``stack_same_shaped``: update stackable same-shaped policies together (results equal
    the one-by-one update up to float rounding; off by default, as ``learner.stack_same_shaped``:
    on CPU the default model's stacked update is slower, benchmarks/README.md). ``overlap_streams``: on CUDA, update the
    remaining policies concurrently on separate streams (ignored on CPU). ``num_threads``:
    the process's torch CPU threads (None: left as they are); a policy added with its own
    ``num_threads`` is updated with that many instead. ``precision="bf16"``: updates run under
    ``torch.autocast`` in bfloat16 (matrix products on AMX units or tensor cores, reductions
    and losses in fp32); weights, gradients and optimiser state stay fp32, and inference
    elsewhere (samplers, evaluation) is unchanged. On this project's CPU (AMX) the default
    job's update was 1.2x faster alone (``benchmarks/bench_precision.py``) but slower inside
    a run (benchmarks/results/strength_history.md), so no config turns it on. ``"fp32"`` on
    CPU runs the update's matrix products in oneDNN where that keeps them fp32
    (:mod:`league.learn.onednn`: 2x MKL's speed on AMD CPUs).
    """

    def __init__(
        self,
        device: str = "cpu",
        seed: int = 0,
        num_threads: int | None = None,
        stack_same_shaped: bool = False,
        overlap_streams: bool = True,
        precision: str = "fp32",
    ) -> None:
        check_precision(precision)
        self.precision = precision
        try:
            self.device = torch.device(device)
        except RuntimeError as err:
            raise ValueError(f"learner device '{device}' is not a valid torch device: {err}") from None
        if self.device.type == "cuda":
            if not torch.cuda.is_available():
                raise ValueError(f"learner device '{device}' requested but CUDA is not available")
            if self.device.index is None:
                self.device = torch.device("cuda", torch.cuda.current_device())
        if num_threads:
            torch.set_num_threads(num_threads)
        self._seed = seed
        self._num_added = 0
        self.stack_same_shaped = bool(stack_same_shaped)
        self.overlap_streams = overlap_streams and self.device.type == "cuda"
        self._policies: dict[str, PolicyState] = {}
        self._algorithms: dict[str, Algorithm] = {}
        self._threads: dict[str, int] = {}  # policies updated with their own CPU thread count
        self._pool: ThreadPoolExecutor | None = None
        self._streams: list[Any] = []
        # Re-entrant: public methods call each other (set_weights -> _require...).
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"Learner(device={self.device}, policies={self.policy_ids()})"

    # Membership ---------------------------------------------------------------
    def add_policy(
        self,
        policy_id: str,
        algorithm: Algorithm,
        weights: Mapping[str, np.ndarray] | None = None,
        frozen: bool = False,
        seed_offset: int | None = None,
        num_threads: int | None = None,
    ) -> None:
        """Host a new policy; ``frozen`` ones get no optimiser and serve inference only (league snapshots).

        The policy's initial weights and RNG derive from ``(learner seed, seed_offset)``;
        ``seed_offset`` defaults to the number of policies added so far (a LearnerGroup
        passes its own count, so placement does not change seeds). ``num_threads``: the
        torch CPU threads its updates run with (None: the learner's), e.g. one thread for
        an off-policy learner that trains while samplers use the other cores, and more for
        an on-policy update the samplers wait for.
        """
        if not isinstance(policy_id, str) or not policy_id:
            raise TypeError(f"policy_id must be a non-empty str, got {policy_id!r}")
        if not isinstance(algorithm, Algorithm):
            raise TypeError(f"policy '{policy_id}': algorithm must be an Algorithm, got {type(algorithm).__name__}")
        if num_threads is not None and (isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 1):
            raise ValueError(f"policy '{policy_id}': num_threads must be an integer >= 1 or None, got {num_threads!r}")
        with self._lock:
            self._add_policy(policy_id, algorithm, weights, frozen, seed_offset)
            if num_threads is not None:
                self._threads[policy_id] = num_threads

    def _add_policy(
        self, policy_id: str, algorithm: Algorithm, weights: Mapping[str, np.ndarray] | None, frozen: bool, seed_offset: int | None
    ) -> None:
        if policy_id in self._policies:
            raise ValueError(f"policy '{policy_id}' is already hosted by this learner")
        offset = self._num_added if seed_offset is None else int(seed_offset)
        self._num_added += 1
        # A forked RNG: creating a policy must not move the caller's global torch RNG.
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self._seed + offset)
            model = algorithm.make_model()
        model = model.to(self.device).eval()
        if weights is not None:
            self._load_weights(policy_id, model, weights)
        rng = np.random.default_rng([self._seed, offset])
        if frozen:
            model.requires_grad_(False)
            state = PolicyState(model, None, rng)
        else:
            state = PolicyState(model, algorithm.make_optimizer(model), rng, algorithm.init_extra_state(model))
        # The lineage starts at the version the weights came with (0 for fresh ones).
        state.weights_version = state.weights_epoch = read_version(model) or 0
        self._algorithms[policy_id] = algorithm
        self._policies[policy_id] = state

    def remove_policy(self, policy_id: str) -> None:
        """Drop a policy, its optimiser state and its algorithm state."""
        with self._lock:
            self._require(policy_id)
            del self._policies[policy_id], self._algorithms[policy_id]
            self._threads.pop(policy_id, None)

    def policy_ids(self) -> list[str]:
        """Hosted policy ids, in insertion order."""
        return list(self._policies)

    def is_frozen(self, policy_id: str) -> bool:
        """Whether ``policy_id`` is inference-only."""
        return self._require(policy_id).frozen

    # Training -----------------------------------------------------------------
    def learn_on_batch(
        self, batch: MultiAgentBatch, policy_ids: list[str] | None = None, drop_stale_rows: bool = False, **_: object
    ) -> Stats:
        """Update each trainable policy in ``policy_ids`` (default: all) that has rows in ``batch``.

        With ``drop_stale_rows`` each policy first drops the rows its current weights may
        not learn from (another epoch's, or more than its algorithm's ``max_policy_lag``
        updates old; see :mod:`league.learn.staleness`); a policy left without rows is not
        updated and gets no statistics, and the others' statistics gain
        :data:`~league.learn.staleness.FRESHNESS_STATS`. Without it the batch is used as
        given. Keyword arguments from ``TrainOneStep`` (``num_epochs``,
        ``minibatch_size``) are accepted and ignored: each algorithm's own config decides
        its update.
        """
        with self._lock:
            todo = self._trainable_in(batch, policy_ids)
            # Without drop_stale_rows the batch is used as given (no FreshRows to report).
            parts = self._fresh_parts(todo, batch) if drop_stale_rows else {pid: (batch[pid], None) for pid in todo}
            todo = [pid for pid in todo if len(parts[pid][0]) > 0]
            rows = MultiAgentBatch({pid: parts[pid][0] for pid in todo}, batch.env_steps)
            groups = self._stack_groups(todo, rows) if self.stack_same_shaped else []
            stacked = {pid for group in groups for pid in group}
            stats: Stats = {}
            with self._cpu_threads(todo):
                for group in groups:
                    with self._autocast():
                        stats.update(self._learn_stacked(group, rows))
                rest = [pid for pid in todo if pid not in stacked]
                stats.update(self._run_each(rest, lambda pid: self._algorithms[pid].learn(self._policies[pid], rows[pid])))
            for pid in todo:
                self._policies[pid].num_updates += 1
                self._advance_version(pid)
                found = parts[pid][1]
                if found is not None:  # drop_stale_rows
                    stats[pid].update(self._freshness_stats(pid, len(rows[pid]), found))
            return {pid: stats[pid] for pid in todo}

    def compute_gradients(
        self, batch: MultiAgentBatch, policy_ids: list[str] | None = None, drop_stale_rows: bool = False
    ) -> dict[str, list[np.ndarray]]:
        """Per-policy gradients (numpy) of each trainable policy's loss on its part of ``batch``
        (its fresh rows only with ``drop_stale_rows``, as in :meth:`learn_on_batch`; a policy
        left without rows gets no gradients)."""
        with self._lock:
            todo = self._trainable_in(batch, policy_ids)
            if drop_stale_rows:
                parts = {pid: rows for pid, (rows, _) in self._fresh_parts(todo, batch).items() if len(rows)}
            else:
                parts = {pid: batch[pid] for pid in todo}
            results = self._run_each(
                list(parts), lambda pid: self._algorithms[pid].compute_gradients(self._policies[pid], parts[pid])
            )
            return {pid: results[pid][0] for pid in parts}

    def apply_gradients(self, grads: dict[str, list[np.ndarray]]) -> None:
        """Apply per-policy gradients from :meth:`compute_gradients` (of this or another learner)."""
        with self._lock:
            for pid in grads:
                if self._require(pid).frozen:
                    raise ValueError(f"policy '{pid}' is frozen: it takes no gradients")
            for pid, g in grads.items():
                hosted = self._policies[pid]
                self._algorithms[pid].apply_gradients(hosted, g)
                hosted.num_updates += 1
                self._advance_version(pid)

    def update_target(self, policy_ids: list[str] | None = None) -> None:
        """Refresh target networks of the given trainable policies (frozen ones have none)."""
        with self._lock:
            for pid in self.policy_ids() if policy_ids is None else policy_ids:
                hosted = self._require(pid)
                if not hosted.frozen:
                    self._algorithms[pid].update_target(hosted)

    def policy_versions(self, policy_ids: list[str] | None = None) -> dict[str, tuple[int, int]]:
        """``{policy_id: (weights version, epoch)}``: what :mod:`league.learn.staleness` judges rows by."""
        with self._lock:
            ids = self.policy_ids() if policy_ids is None else policy_ids
            return {pid: (self._require(pid).weights_version, self._policies[pid].weights_epoch) for pid in ids}

    def algorithm(self, policy_id: str) -> Algorithm:
        """The algorithm (and hyperparameters) of a hosted policy."""
        self._require(policy_id)
        return self._algorithms[policy_id]

    # Weights and state --------------------------------------------------------
    def get_weights(self, policy_ids: list[str] | None = None) -> dict[str, dict[str, np.ndarray]]:
        """Numpy copies of the policies' state dicts (what samplers load; snapshots stay as taken)."""
        with self._lock:
            ids = self.policy_ids() if policy_ids is None else policy_ids
            # copy=True: on CPU, .numpy() would alias the live parameters, and a snapshot
            # taken now would silently follow later updates.
            return {
                pid: {k: v.detach().to("cpu", copy=True).numpy() for k, v in self._require(pid).model.state_dict().items()}
                for pid in ids
            }

    def set_weights(self, weights: Mapping[str, Mapping[str, np.ndarray]]) -> None:
        """Load per-policy numpy state dicts (frozen policies included); each starts a new epoch."""
        with self._lock:
            for pid in weights:
                self._require(pid)
            for pid, w in weights.items():
                hosted = self._policies[pid]
                pristine = self._pristine(pid)
                self._load_weights(pid, hosted.model, w)
                self._start_epoch(pid, read_version(hosted.model), pristine)

    def get_state(self, policy_id: str) -> bytes:
        """One policy's model, optimiser, update count, RNG state and algorithm extras that
        are modules (e.g. DQN's target network), serialised with ``torch.save`` (tensors
        and plain values only): everything its next update depends on."""
        with self._lock:
            return self._get_state(policy_id)

    def _get_state(self, policy_id: str) -> bytes:
        hosted = self._require(policy_id)
        buf = io.BytesIO()
        torch.save(
            {
                "model": hosted.model.state_dict(),
                "optimizer": None if hosted.optimizer is None else hosted.optimizer.state_dict(),  # None: frozen
                "num_updates": hosted.num_updates,
                "rng": hosted.rng.bit_generator.state,
                "extra": {k: v.state_dict() for k, v in hosted.extra.items() if isinstance(v, torch.nn.Module)},
            },
            buf,
        )
        return buf.getvalue()

    def set_state(self, policy_id: str, state: bytes, min_version: int | None = None) -> None:
        """Restore :meth:`get_state` output; loads with ``weights_only=True`` (no code execution).

        The restored weights start a new epoch (see :meth:`_start_epoch`): rows the
        policy's previous weights produced are not theirs to learn from. ``min_version``:
        the epoch starts at no lower version; a learner that replaces a lost one passes
        one above every version the lost one handed out, so none of its rows still on
        the way can pass for the restored weights' own.
        """
        data = torch.load(io.BytesIO(state), map_location=self.device, weights_only=True)
        with self._lock:
            self._set_state(policy_id, data, min_version)

    def _set_state(self, policy_id: str, data: dict[str, Any], min_version: int | None = None) -> None:
        hosted = self._require(policy_id)
        pristine = self._pristine(policy_id)
        hosted.model.load_state_dict(data["model"])
        if data["optimizer"] is not None and hosted.optimizer is not None:
            hosted.optimizer.load_state_dict(data["optimizer"])
        hosted.num_updates = int(data["num_updates"])
        if "rng" in data:  # absent in states saved before it was added
            hosted.rng.bit_generator.state = data["rng"]
        for name, module_state in data.get("extra", {}).items():
            module = hosted.extra.get(name)
            if isinstance(module, torch.nn.Module):
                module.load_state_dict(module_state)
        self._start_epoch(policy_id, read_version(hosted.model), pristine, min_version)

    # Versions -------------------------------------------------------------------
    def _advance_version(self, policy_id: str) -> None:
        """One more update of the policy's weights: bump its version (and its model's buffer)."""
        hosted = self._policies[policy_id]
        hosted.weights_version += 1
        write_version(hosted.model, hosted.weights_version)

    def _pristine(self, policy_id: str) -> bool:
        """The policy still holds the weights it was created with (never updated nor replaced)."""
        hosted = self._policies[policy_id]
        return hosted.weights_version == hosted.weights_epoch == hosted.num_updates == 0

    def _start_epoch(self, policy_id: str, loaded: int | None, pristine: bool, min_version: int | None = None) -> None:
        """Weights just replaced from outside begin a new epoch at a version no row has yet.

        The new version is ``max(current + 1, loaded)``: above every version this learner
        handed out before (so rows the old weights produced fall below the epoch), and,
        when a fresh learner restores a checkpoint, the checkpoint's own version (so a
        resumed run counts versions exactly as the uninterrupted one did). A ``pristine``
        policy (see :meth:`_pristine`) takes the loaded version as it is, 0 included:
        its creation weights made no rows of a lineage that the loaded weights could be
        confused with, short of a sampler that acted with them before the load.
        ``min_version`` (see :meth:`set_state`) raises the start further.
        """
        hosted = self._policies[policy_id]
        loaded = loaded or 0
        version = loaded if pristine else max(hosted.weights_version + 1, loaded)
        if min_version is not None:
            version = max(version, int(min_version))
        hosted.weights_version = hosted.weights_epoch = version
        write_version(hosted.model, version)

    def _fresh_parts(self, pids: list[str], batch: MultiAgentBatch) -> dict[str, tuple[SampleBatch, FreshRows]]:
        """Each policy's rows it may learn from, with what :func:`select_fresh_rows` found."""
        out = {}
        for pid in pids:
            hosted = self._policies[pid]
            found = select_fresh_rows(batch[pid], hosted.weights_version, hosted.weights_epoch, self._algorithms[pid].max_policy_lag())
            hosted.stale_rows_dropped += found.stale
            hosted.old_epoch_rows_dropped += found.old_epoch
            out[pid] = (found.batch, found)
        return out

    def _freshness_stats(self, pid: str, rows_trained: int, found: FreshRows) -> dict[str, float]:
        hosted = self._policies[pid]
        return {
            "weights_version": float(hosted.weights_version),
            "weights_epoch": float(hosted.weights_epoch),
            "rows_trained": float(rows_trained),
            "policy_lag_mean": found.lag_mean,
            "stale_rows_dropped": float(hosted.stale_rows_dropped),
            "old_epoch_rows_dropped": float(hosted.old_epoch_rows_dropped),
        }

    # Internals ----------------------------------------------------------------
    def _require(self, policy_id: str) -> PolicyState:
        try:
            return self._policies[policy_id]
        except KeyError:
            raise KeyError(f"policy '{policy_id}' is not hosted by this learner (hosted: {self.policy_ids()})") from None

    def _load_weights(self, policy_id: str, model: torch.nn.Module, weights: Mapping[str, np.ndarray]) -> None:
        try:
            model.load_state_dict({k: torch.tensor(v) for k, v in weights.items()})
        except RuntimeError as err:
            raise ValueError(f"weights for policy '{policy_id}' do not fit its model: {err}") from None

    def _trainable_in(self, batch: MultiAgentBatch, policy_ids: Iterable[str] | None) -> list[str]:
        """Requested policies with rows in ``batch``; naming a frozen policy explicitly is an error."""
        if not isinstance(batch, MultiAgentBatch):
            raise TypeError(f"learner expects a MultiAgentBatch, got {type(batch).__name__}")
        if policy_ids is None:
            wanted = [pid for pid, s in self._policies.items() if not s.frozen]
        else:
            wanted = list(policy_ids)
            for pid in wanted:
                if self._require(pid).frozen:
                    raise ValueError(f"policy '{pid}' is frozen: it serves inference only and is not trained")
        return [pid for pid in wanted if pid in batch.policy_batches and len(batch[pid]) > 0]

    def _autocast(self) -> contextlib.AbstractContextManager[Any]:
        """The updates' precision: bfloat16 autocast on this device, or fp32 (on CPU with its
        products in oneDNN where that keeps them fp32: :mod:`league.learn.onednn`)."""
        if self.precision == "bf16":
            return torch.autocast(self.device.type, dtype=torch.bfloat16)
        return fp32_matmuls() if self.device.type == "cpu" else contextlib.nullcontext()

    @contextlib.contextmanager
    def _cpu_threads(self, pids: list[str]) -> Iterator[None]:
        """Run the block with the policies' own CPU thread count (the most any of them asks
        for), then put the process's count back; a no-op unless one of them has its own."""
        wanted = max((self._threads[pid] for pid in pids if pid in self._threads), default=None)
        before = torch.get_num_threads() if wanted is not None and self.device.type == "cpu" else None
        if wanted is None or before is None or wanted == before:
            yield
            return
        torch.set_num_threads(wanted)
        try:
            yield
        finally:
            torch.set_num_threads(before)

    def _stack_key(self, pid: str, batch: SampleBatch) -> Hashable | None:
        algo, state = self._algorithms[pid], self._policies[pid]
        algo_key = algo.stack_key()  # None: this algorithm (or config) does not stack
        model_key = stack_signature(state.model, state.optimizer)
        if algo_key is None or model_key is None:
            return None
        columns = tuple((n, v.dtype.str, v.shape[1:]) for n, v in batch.columns.items())
        return (type(algo), algo_key, model_key, len(batch), columns)

    def _stack_groups(self, pids: list[str], batch: MultiAgentBatch) -> list[list[str]]:
        if len(pids) < 2:  # nothing to stack; the signatures cost ~0.2 ms a call (an off-policy step's 8%)
            return []
        groups: dict[Hashable, list[str]] = {}
        for pid in pids:
            key = self._stack_key(pid, batch[pid])
            if key is not None:
                groups.setdefault(key, []).append(pid)
        return [g for g in groups.values() if len(g) > 1]

    def _learn_stacked(self, group: list[str], batch: MultiAgentBatch) -> Stats:
        algo = self._algorithms[group[0]]
        results = algo.learn_stacked([self._policies[p] for p in group], [batch[p] for p in group])
        for stats in results:  # what TrainOneStep counts as num_stacked_updates
            stats[STACK_SIZE] = float(len(group))
        return dict(zip(group, results))

    def _run_each(self, pids: list[str], fn: Callable[[str], Any]) -> dict[str, Any]:
        """``fn(pid)`` (an update: under :meth:`_autocast`) for every policy: concurrently on
        CUDA streams, else in turn."""
        if not self.overlap_streams or len(pids) < 2:
            with self._autocast():
                return {pid: fn(pid) for pid in pids}
        main = torch.cuda.current_stream(self.device)
        streams, pool = self._stream_pool(len(pids))

        def on_stream(i: int) -> Any:
            stream = streams[i]
            stream.wait_stream(main)  # parameters written by earlier work on the main stream
            with torch.cuda.device(self.device), torch.cuda.stream(stream), self._autocast():  # autocast is per thread
                return fn(pids[i])

        futures = [pool.submit(on_stream, i) for i in range(len(pids))]
        try:
            return {pid: future.result() for pid, future in zip(pids, futures)}
        finally:
            # Even when one policy failed, the others' queued kernels must finish before
            # later main-stream work (get_weights...) reads their parameters.
            wait(futures)
            for stream in streams[: len(pids)]:
                main.wait_stream(stream)

    def _stream_pool(self, n: int) -> tuple[list[Any], ThreadPoolExecutor]:
        """At least ``n`` CUDA streams and a thread per stream."""
        pool = self._pool
        if pool is None or len(self._streams) < n:
            if pool is not None:
                pool.shutdown()
            self._streams += [torch.cuda.Stream(self.device) for _ in range(n - len(self._streams))]
            pool = self._pool = ThreadPoolExecutor(max_workers=len(self._streams), thread_name_prefix="learner-stream")
        return self._streams, pool

    def close(self) -> None:
        """Stop the stream worker threads (CUDA only); the learner stays usable."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

