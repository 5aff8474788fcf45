"""Data-parallel learning of big policies: N replicas, each on its share of a batch, gradients averaged.

Every replica is a :class:`DataParallelLearner` in its own process (a Ray actor, or a
process started by ``torch.multiprocessing`` / ``torchrun``), joined in one
``torch.distributed`` group (gloo on CPU, NCCL on GPU). Policies start from rank 0's
weights; each trainable parameter gets a hook that all-reduces (averages) its gradient as
soon as backward has produced it, so by the time the algorithm clips and steps, every
replica holds the same averaged gradient and the replicas stay identical. With equally
long shards the averaged gradient equals the gradient of the mean loss over the whole
batch (for losses that are means over rows).

This works with any algorithm that computes gradients with ``loss.backward()`` and runs
the same number of backward passes on every replica (true for equally long shards;
:func:`shard_batch` makes them so). :class:`DataParallelGroup` drives N replica actors
with the Learner interface, so flow operators take it like a Learner.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
import torch.distributed as dist

from league.learn.algorithm import Algorithm, read_version
from league.batch import MultiAgentBatch
from league.runtime.actors import actor_handle, call, call_all, resolve, submit
from league.learn.learner import Learner, check_precision
from league.learn.staleness import select_fresh_rows

if TYPE_CHECKING:
    from ray.actor import ActorHandle

__all__ = ["shard_batch", "DataParallelLearner", "DataParallelGroup"]


def shard_batch(batch: MultiAgentBatch, num_shards: int) -> list[MultiAgentBatch]:
    """``num_shards`` contiguous, equally long shards of every policy's rows.

    Equal lengths keep every replica's number of minibatches (and so of collective
    calls) the same; the last ``len % num_shards`` rows of each policy are dropped.
    Environment steps are split as evenly as possible.
    """
    if not isinstance(num_shards, int) or num_shards < 1:
        raise ValueError(f"num_shards must be an integer >= 1, got {num_shards!r}")
    shards: list[dict[str, Any]] = [{} for _ in range(num_shards)]
    for pid, rows in batch.policy_batches.items():
        size = len(rows) // num_shards
        for i in range(num_shards):
            shards[i][pid] = rows[i * size : (i + 1) * size]
    base, extra = divmod(batch.env_steps, num_shards)
    return [MultiAgentBatch(s, base + (1 if i < extra else 0)) for i, s in enumerate(shards)]


class DataParallelLearner(Learner):
    """One replica of a data-parallel learner group (see module docstring).

    Joins the process group now if ``init_method`` is given (e.g. ``"tcp://host:port"``
    or ``"file:///tmp/pg"``), else at :meth:`join`. All replicas must add and remove
    the same policies in the same order. One replica per process.
    """

    def __init__(
        self,
        rank: int,
        world_size: int,
        init_method: str | None = None,
        device: str = "cpu",
        seed: int = 0,
        num_threads: int | None = None,
        backend: str | None = None,
        timeout_s: float = 120.0,
        precision: str = "fp32",
    ) -> None:
        # Stacked updates bypass per-parameter hooks, so replicas update policies one by one.
        super().__init__(device, seed, num_threads, stack_same_shaped=False, overlap_streams=False, precision=precision)
        if not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} is not in [0, {world_size})")
        self.rank, self.world_size = rank, world_size
        self.backend = backend or ("nccl" if self.device.type == "cuda" else "gloo")
        self._timeout = timedelta(seconds=timeout_s)
        self._hooks: dict[str, list[Any]] = {}
        if init_method is not None:
            self.join(init_method)

    def free_address(self) -> str:
        """A ``tcp://`` init method on this replica's host with a port free right now (rank 0 offers it)."""
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("", 0))
            port = s.getsockname()[1]
        ray = sys.modules.get("ray")
        # Inside a Ray actor, Ray knows the address other nodes reach this one at.
        host = ray.util.get_node_ip_address() if ray is not None and ray.is_initialized() else "127.0.0.1"
        return f"tcp://{host}:{port}"

    def join(self, init_method: str) -> None:
        """Join the process group (blocks until all ``world_size`` replicas have joined)."""
        if dist.is_initialized():
            raise RuntimeError("this process already belongs to a torch.distributed group")
        if self.device.type == "cuda":
            torch.cuda.set_device(self.device)
        dist.init_process_group(self.backend, init_method=init_method, rank=self.rank, world_size=self.world_size, timeout=self._timeout)

    def add_policy(
        self,
        policy_id: str,
        algorithm: Algorithm,
        weights: Mapping[str, np.ndarray] | None = None,
        frozen: bool = False,
        seed_offset: int | None = None,
        num_threads: int | None = None,
    ) -> None:
        """Host a policy with rank 0's weights; trainable ones average gradients over replicas."""
        if not dist.is_initialized():
            raise RuntimeError("DataParallelLearner has not joined its process group yet (call join)")
        super().add_policy(policy_id, algorithm, weights, frozen, seed_offset, num_threads)
        state = self._policies[policy_id]
        model = state.model
        with torch.no_grad():
            for tensor in model.state_dict().values():
                dist.broadcast(tensor, src=0)
        # Rank 0's weights came with rank 0's version: every replica starts the same lineage.
        state.weights_version = state.weights_epoch = read_version(model) or 0
        if not frozen:
            self._hooks[policy_id] = [p.register_post_accumulate_grad_hook(self._average_grad) for p in model.parameters() if p.requires_grad]

    def remove_policy(self, policy_id: str) -> None:
        """Drop a policy and its gradient hooks."""
        super().remove_policy(policy_id)
        for handle in self._hooks.pop(policy_id, []):
            handle.remove()

    def _average_grad(self, param: torch.Tensor) -> None:
        # Synchronous on purpose: the algorithm may clip the gradient norm right after
        # backward, and that must see the averaged gradient. Gloo has no AVG reduction.
        grad = param.grad
        if grad is None:  # not reached: the hook runs once backward accumulated a gradient
            return
        dist.all_reduce(grad, op=dist.ReduceOp.SUM)
        grad.div_(self.world_size)

    def close(self) -> None:
        """Leave the process group."""
        super().close()
        if not dist.is_initialized():
            return
        # Leave together: a replica tearing its gloo pairs down while a peer still reads
        # from them can abort the peer ("terminate called without an active exception").
        try:
            if self.backend == "gloo":
                dist.monitored_barrier(timeout=min(self._timeout, timedelta(seconds=10)))
            else:
                dist.barrier()
        except RuntimeError:
            pass  # a peer is gone already: there is nobody to wait for
        dist.destroy_process_group()


class DataParallelGroup:
    """N :class:`DataParallelLearner` Ray actors behind the Learner interface.

    ``learn_on_batch`` shards the batch (:func:`shard_batch`), every replica trains on
    its shard, and the statistics are averaged over replicas; weights and state come
    from rank 0 (all replicas hold the same).
    """

    def __init__(
        self,
        num_replicas: int,
        device: str = "cpu",
        seed: int = 0,
        num_threads: int = 1,
        num_cpus: float = 1.0,
        num_gpus: float = 0.0,
        backend: str | None = None,
        precision: str = "fp32",
    ) -> None:
        if not isinstance(num_replicas, int) or num_replicas < 1:
            raise ValueError(f"num_replicas must be an integer >= 1, got {num_replicas!r}")
        check_precision(precision)  # here, not in N actor constructors behind Ray's error wrapping
        #: The replicas' update precision (``learner.precision``: ``fp32`` or ``bf16``).
        self.precision = precision
        if device.startswith("cuda") and num_gpus == 0:
            raise ValueError("data-parallel replicas on 'cuda' need num_gpus > 0 (one GPU each for NCCL)")
        import ray

        self._algorithms: dict[str, Algorithm] = {}
        self._dropped: dict[str, list[int]] = {}  # policy id -> [stale, old epoch] rows dropped so far
        actor = ray.remote(DataParallelLearner).options(num_cpus=num_cpus, num_gpus=num_gpus)
        self.replicas: list[ActorHandle[Any]] = [
            actor_handle(actor.remote(r, num_replicas, None, device, seed, num_threads, backend, precision=precision))
            for r in range(num_replicas)
        ]
        address = call(self.replicas[0], DataParallelLearner.free_address)
        call_all(self.replicas, DataParallelLearner.join, address)

    def add_policy(self, policy_id: str, algorithm: Algorithm, weights: Mapping[str, np.ndarray] | None = None, frozen: bool = False, seed_offset: int | None = None) -> None:
        """Host a policy on every replica (rank 0's initial weights win)."""
        call_all(self.replicas, DataParallelLearner.add_policy, policy_id, algorithm, weights, frozen, seed_offset)
        self._algorithms[policy_id] = algorithm
        self._dropped[policy_id] = [0, 0]

    def remove_policy(self, policy_id: str) -> None:
        """Drop a policy on every replica."""
        call_all(self.replicas, DataParallelLearner.remove_policy, policy_id)
        self._algorithms.pop(policy_id, None)
        self._dropped.pop(policy_id, None)

    def policy_ids(self) -> list[str]:
        """Hosted policy ids."""
        return call(self.replicas[0], DataParallelLearner.policy_ids)

    def is_frozen(self, policy_id: str) -> bool:
        """Whether ``policy_id`` is inference-only."""
        return call(self.replicas[0], DataParallelLearner.is_frozen, policy_id)

    def algorithm(self, policy_id: str) -> Algorithm:
        """The algorithm of a hosted policy."""
        return call(self.replicas[0], DataParallelLearner.algorithm, policy_id)

    def learn_on_batch(
        self, batch: MultiAgentBatch, policy_ids: list[str] | None = None, drop_stale_rows: bool = False, **kwargs: Any
    ) -> dict[str, dict[str, float]]:
        """Every replica trains on its shard; statistics averaged over replicas.

        ``drop_stale_rows`` (see :meth:`Learner.learn_on_batch`) is applied here, once,
        before sharding: replicas filtering their own shards could keep different numbers
        of rows, run different numbers of collective calls, and hang.
        """
        fresh: dict[str, dict[str, float]] = {}
        if drop_stale_rows:
            batch, fresh = self._fresh_rows(batch, policy_ids)
        shards = shard_batch(batch, len(self.replicas))
        pending = [submit(r, DataParallelLearner.learn_on_batch, s, policy_ids, **kwargs) for r, s in zip(self.replicas, shards)]
        stats = _average_stats(resolve(pending, self.replicas))
        for pid in stats:
            stats[pid].update(fresh.get(pid, {}))
        return stats

    def _fresh_rows(self, batch: MultiAgentBatch, policy_ids: list[str] | None) -> tuple[MultiAgentBatch, dict[str, dict[str, float]]]:
        """``batch`` without the rows rank 0's versions rule out; the freshness statistics each kept policy gets."""
        pids = [p for p in (policy_ids if policy_ids is not None else list(batch.policy_batches)) if p in batch.policy_batches]
        pids = [p for p in pids if p in self._algorithms and len(batch[p])]
        versions = call(self.replicas[0], DataParallelLearner.policy_versions, pids)
        parts, fresh = dict(batch.policy_batches), {}
        for pid in pids:
            version, epoch = versions[pid]
            found = select_fresh_rows(batch[pid], version, epoch, self._algorithms[pid].max_policy_lag())
            dropped = self._dropped[pid]
            dropped[0] += found.stale
            dropped[1] += found.old_epoch
            parts[pid] = found.batch
            fresh[pid] = {
                "weights_version": float(version + 1),  # after this update
                "weights_epoch": float(epoch),
                "rows_trained": float(len(found.batch) // len(self.replicas) * len(self.replicas)),
                "policy_lag_mean": found.lag_mean,
                "stale_rows_dropped": float(dropped[0]),
                "old_epoch_rows_dropped": float(dropped[1]),
            }
        kept = {pid: rows for pid, rows in parts.items() if len(rows)}
        return MultiAgentBatch(kept, batch.env_steps), {pid: fresh[pid] for pid in fresh if pid in kept}

    def compute_gradients(
        self, batch: MultiAgentBatch, policy_ids: list[str] | None = None, drop_stale_rows: bool = False
    ) -> dict[str, list[np.ndarray]]:
        """Gradients averaged over replicas' shards (rank 0's copy; all are equal); rows
        chosen before sharding with ``drop_stale_rows``, as in :meth:`learn_on_batch`."""
        if drop_stale_rows:
            batch, _ = self._fresh_rows(batch, policy_ids)
        shards = shard_batch(batch, len(self.replicas))
        pending = [submit(r, DataParallelLearner.compute_gradients, s, policy_ids) for r, s in zip(self.replicas, shards)]
        return resolve(pending, self.replicas)[0]

    def apply_gradients(self, grads: dict[str, list[np.ndarray]]) -> None:
        """The same gradients applied on every replica (keeps them identical)."""
        call_all(self.replicas, DataParallelLearner.apply_gradients, grads)

    def update_target(self, policy_ids: list[str] | None = None) -> None:
        """Refresh target networks on every replica."""
        call_all(self.replicas, DataParallelLearner.update_target, policy_ids)

    def get_weights(self, policy_ids: list[str] | None = None) -> dict[str, dict[str, np.ndarray]]:
        """Rank 0's weights."""
        return call(self.replicas[0], DataParallelLearner.get_weights, policy_ids)

    def set_weights(self, weights: Mapping[str, Mapping[str, np.ndarray]]) -> None:
        """Load weights on every replica."""
        call_all(self.replicas, DataParallelLearner.set_weights, weights)

    def get_state(self, policy_id: str) -> bytes:
        """Rank 0's model and optimiser state."""
        return call(self.replicas[0], DataParallelLearner.get_state, policy_id)

    def set_state(self, policy_id: str, state: bytes) -> None:
        """Restore a state on every replica."""
        call_all(self.replicas, DataParallelLearner.set_state, policy_id, state)

    def policy_versions(self, policy_ids: list[str] | None = None) -> dict[str, tuple[int, int]]:
        """Rank 0's ``(weights version, epoch)`` per policy (all replicas hold the same)."""
        return call(self.replicas[0], DataParallelLearner.policy_versions, policy_ids)

    def close(self) -> None:
        """Leave the process group and stop the actors."""
        import ray

        call_all(self.replicas, DataParallelLearner.close)
        for r in self.replicas:
            ray.kill(r)


def _average_stats(per_replica: Sequence[dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for pid, first in per_replica[0].items():
        out[pid] = {k: float(np.mean([r[pid][k] for r in per_replica])) for k in first}
    return out
