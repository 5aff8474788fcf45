"""A learner: any number of policies (any algorithms) on one device, updated from batches.

The same class runs in-process (tests, the GPU machine, which has no Ray) or as a Ray
actor (``ray.remote(Learner)``, see :mod:`league.learn.placement`); nothing here imports Ray.
"""

from __future__ import annotations

import io
import numpy as np
import torch
from torch import nn

from league.algos.base import Algorithm, PolicyState
from league.batch import MultiAgentBatch

__all__ = ["Learner"]


class Learner:
    """Holds policies on one device and updates them from :class:`MultiAgentBatch` es."""

    def __init__(self, device: str = "cpu", seed: int = 0, num_threads: int | None = None) -> None:
        self.device = torch.device(device)
        if self.device.type == "cuda" and not torch.cuda.is_available():
            raise ValueError(f"learner device '{device}' requested but CUDA is not available")
        if num_threads:
            torch.set_num_threads(num_threads)
        self._seed = seed
        self._policies: dict[str, PolicyState] = {}
        self._algorithms: dict[str, Algorithm] = {}

    # Membership ---------------------------------------------------------------
    def add_policy(
        self,
        policy_id: str,
        algorithm: Algorithm,
        weights: dict[str, np.ndarray] | None = None,
        frozen: bool = False,
    ) -> None:
        """Host a new policy; ``frozen`` ones get no optimiser (league snapshots)."""
        if policy_id in self._policies:
            raise ValueError(f"policy '{policy_id}' is already hosted by this learner")
        torch.manual_seed(self._seed + len(self._policies))
        model = algorithm.make_model().to(self.device)
        if weights is not None:
            model.load_state_dict({k: torch.tensor(v) for k, v in weights.items()})
        optimizer = None if frozen else algorithm.make_optimizer(model)
        rng = np.random.default_rng([self._seed, len(self._policies)])
        self._algorithms[policy_id] = algorithm
        self._policies[policy_id] = PolicyState(model, optimizer, rng, algorithm.init_extra_state(model))

    def remove_policy(self, policy_id: str) -> None:
        """Drop a policy and its optimiser state."""
        self._require(policy_id)
        del self._policies[policy_id], self._algorithms[policy_id]

    def policy_ids(self) -> list[str]:
        """Hosted policy ids, in insertion order."""
        return list(self._policies)

    def is_frozen(self, policy_id: str) -> bool:
        """Whether ``policy_id`` is inference-only."""
        return self._require(policy_id).frozen

    # Training -----------------------------------------------------------------
    def learn_on_batch(
        self, batch: MultiAgentBatch, policy_ids: list[str] | None = None, **_: object
    ) -> dict[str, dict[str, float]]:
        """Update each trainable policy in ``policy_ids`` (default: all) present in ``batch``."""
        wanted = self.policy_ids() if policy_ids is None else policy_ids
        stats: dict[str, dict[str, float]] = {}
        for pid in wanted:
            hosted = self._require(pid)
            if hosted.frozen or pid not in batch.policy_batches or len(batch[pid]) == 0:
                continue
            stats[pid] = self._algorithms[pid].learn(hosted, batch[pid])
            hosted.num_updates += 1
        return stats

    def compute_gradients(self, batch: MultiAgentBatch, policy_ids: list[str] | None = None) -> dict[str, list[np.ndarray]]:
        """Per-policy gradients (numpy) of each trainable policy's loss on its part of ``batch``."""
        wanted = self.policy_ids() if policy_ids is None else policy_ids
        grads: dict[str, list[np.ndarray]] = {}
        for pid in wanted:
            hosted = self._require(pid)
            if not hosted.frozen and pid in batch.policy_batches and len(batch[pid]):
                grads[pid], _ = self._algorithms[pid].compute_gradients(hosted, batch[pid])
        return grads

    def apply_gradients(self, grads: dict[str, list[np.ndarray]]) -> None:
        """Apply per-policy gradients from :meth:`compute_gradients` (of this or another learner)."""
        for pid, g in grads.items():
            hosted = self._require(pid)
            if hosted.frozen:
                raise ValueError(f"policy '{pid}' is frozen: it takes no gradients")
            self._algorithms[pid].apply_gradients(hosted, g)
            hosted.num_updates += 1

    def update_target(self, policy_ids: list[str] | None = None) -> None:
        """Refresh target networks of the given policies (no-op for algorithms without one)."""
        for pid in self.policy_ids() if policy_ids is None else policy_ids:
            self._algorithms[pid].update_target(self._require(pid))

    def algorithm(self, policy_id: str) -> Algorithm:
        """The algorithm (and hyperparameters) of a hosted policy."""
        self._require(policy_id)
        return self._algorithms[policy_id]

    # Weights and state --------------------------------------------------------
    def get_weights(self, policy_ids: list[str] | None = None) -> dict[str, dict[str, np.ndarray]]:
        """CPU numpy state dicts per policy (what samplers load)."""
        ids = self.policy_ids() if policy_ids is None else policy_ids
        return {
            pid: {k: v.detach().cpu().numpy() for k, v in self._require(pid).model.state_dict().items()}
            for pid in ids
        }

    def set_weights(self, weights: dict[str, dict[str, np.ndarray]]) -> None:
        """Load per-policy numpy state dicts."""
        for pid, w in weights.items():
            self._require(pid).model.load_state_dict({k: torch.tensor(v) for k, v in w.items()})

    def get_state(self, policy_id: str) -> bytes:
        """Model and optimiser state of one policy, serialised with ``torch.save`` (tensors only)."""
        hosted = self._require(policy_id)
        buf = io.BytesIO()
        torch.save(
            {
                "model": hosted.model.state_dict(),
                "optimizer": None if hosted.frozen else hosted.optimizer.state_dict(),
                "num_updates": hosted.num_updates,
            },
            buf,
        )
        return buf.getvalue()

    def set_state(self, policy_id: str, state: bytes) -> None:
        """Restore :meth:`get_state` output; loads with ``weights_only=True`` (no code execution)."""
        hosted = self._require(policy_id)
        data = torch.load(io.BytesIO(state), map_location=self.device, weights_only=True)
        hosted.model.load_state_dict(data["model"])
        if data["optimizer"] is not None and hosted.optimizer is not None:
            hosted.optimizer.load_state_dict(data["optimizer"])
        hosted.num_updates = int(data["num_updates"])

    def _require(self, policy_id: str) -> PolicyState:
        try:
            return self._policies[policy_id]
        except KeyError:
            raise KeyError(f"policy '{policy_id}' is not hosted by this learner (hosted: {self.policy_ids()})") from None
