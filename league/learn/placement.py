"""Placing learners: Ray actors with resource requests, and policies assigned to them.

:class:`LearnerConfig` is the ``learner:`` section of the run config, validated;
:func:`resource_requests` and :func:`gpus_needed` turn it into Ray actor options (GPU
shares may be fractional: four learners at 0.25 share one GPU). :func:`assign_policies`
places policies by an explicit mapping or balanced by parameter count.
:class:`LearnerGroup` has the narrow methods of :class:`~league.learn.learner.Learner`,
so flow operators take either. Ray is imported only when actors are created.

A learner actor that dies makes every call that needs it raise
:class:`~league.learn.recovery.LearnerDied` (naming the learner and its policies) instead
of a raw Ray error; :meth:`LearnerGroup.replace_learner` starts a fresh actor in its place
from saved learner states (e.g. the last checkpoint's).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Concatenate, ParamSpec, TypeVar

import numpy as np
import torch

from league.learn.algorithm import Algorithm
from league.batch import MultiAgentBatch
from league.runtime.actors import actor_handle, submit
from league.learn.learner import Learner, check_precision
from league.learn.recovery import LearnerDied, check_states, gather, kill_learner
from league.runtime.faces import Remote, Weights
from league.sampling.versioning import WEIGHTS_VERSION

__all__ = ["LearnerConfig", "resource_requests", "gpus_needed", "assign_policies", "LearnerGroup"]

P = ParamSpec("P")
R = TypeVar("R")

#: Ray accounts fractional resources in steps of 1e-4.
_RAY_RESOURCE_STEP = 1e-4


@dataclass
class LearnerConfig:
    """The ``learner:`` config section (``RunConfig.learner``): where policies are updated.

    One in-process learner by default; several learner actors (with CPU/GPU shares) when
    ``num_learners > 1`` or the device is ``cuda``. ``assignment`` is ``"auto"``
    (balanced by parameter count) or ``{policy_id: learner index}`` for the policies it
    names (the others are balanced). ``on_failure`` is what the trainer does when a
    learner actor dies: ``"restore"`` its policies from the last checkpoint and go on, or
    ``"stop"`` the run. Validated on construction.

    ``num_threads`` is the learner's torch CPU threads. ``num_threads_while_sampling``
    (None: the same), for the in-process learner beside Ray samplers, is what a policy's
    updates get when they run while the samplers sample (every update in ``async`` mode,
    an off-policy policy's in a ``bulk_sync`` mix): there the samplers hold the other
    cores, and more threads than free cores slow every process down. ``num_threads`` is
    then what the updates the samplers wait for get (an on-policy policy's in ``bulk_sync``).

    ``precision`` is ``"fp32"`` or ``"bf16"``: every update's forward pass under
    ``torch.autocast`` in bfloat16 (see :class:`~league.learn.learner.Learner`).
    """

    device: str = "cpu"
    num_threads: int = 1
    num_threads_while_sampling: int | None = None
    num_learners: int = 1
    num_cpus_per_learner: float = 1.0
    num_gpus_per_learner: float = 0.0
    assignment: Any = "auto"  # "auto" (balanced by size) or {policy_id: learner index}
    # Same-config PPO policies (an AlphaStar league's main and exploiters) share one plan
    # fragment, and those whose batches fill after the same rollout are updated as one
    # vmapped model (algos/compose.py; counted as num_stacked_updates). Off: on this CPU the
    # default job's model updates 0.7x as fast stacked (benchmarks/README.md); meant for GPUs.
    stack_same_shaped: bool = False
    # A learner actor that dies: "restore" its policies from the last checkpoint, or "stop".
    on_failure: str = "restore"
    # fp32, or bf16: updates under torch.autocast (AMX / tensor cores); weights and optimiser stay fp32.
    precision: str = "fp32"

    def __post_init__(self) -> None:
        if self.on_failure not in ("restore", "stop"):
            raise ValueError(f"learner.on_failure must be 'restore' or 'stop', got {self.on_failure!r}")
        check_precision(self.precision)
        kind = self.device.split(":")[0] if isinstance(self.device, str) else None
        if kind not in ("cpu", "cuda"):
            raise ValueError(f"learner.device must be 'cpu', 'cuda' or 'cuda:N', got {self.device!r}")
        optional = () if self.num_threads_while_sampling is None else ("num_threads_while_sampling",)
        for name in ("num_threads", "num_learners", *optional):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"learner.{name} must be an integer >= 1, got {value!r}")
        if not _is_number(self.num_cpus_per_learner) or self.num_cpus_per_learner < 0:
            raise ValueError(f"learner.num_cpus_per_learner must be a number >= 0, got {self.num_cpus_per_learner!r}")
        gpus = self.num_gpus_per_learner
        if not _is_number(gpus) or gpus < 0:
            raise ValueError(f"learner.num_gpus_per_learner must be a number >= 0, got {gpus!r}")
        if gpus > 1:
            raise ValueError(
                f"learner.num_gpus_per_learner must be <= 1 (a learner uses one device), got {gpus}; "
                "use more learners, or data-parallel learners for one big policy"
            )
        if gpus and abs(gpus / _RAY_RESOURCE_STEP - round(gpus / _RAY_RESOURCE_STEP)) > 1e-6:
            raise ValueError(f"learner.num_gpus_per_learner must be a multiple of {_RAY_RESOURCE_STEP} (Ray's resource step), got {gpus}")
        if kind == "cuda" and gpus == 0:
            raise ValueError("learner.device is 'cuda' but learner.num_gpus_per_learner is 0: the learner actors would see no GPU")
        if kind == "cpu" and gpus > 0:
            raise ValueError(f"learner.device is 'cpu' but learner.num_gpus_per_learner is {gpus}: GPUs would be reserved and never used")
        if self.assignment != "auto":
            if not isinstance(self.assignment, Mapping):
                raise ValueError(f"learner.assignment must be 'auto' or a mapping policy_id -> learner index, got {self.assignment!r}")
            for pid, index in self.assignment.items():
                if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < self.num_learners:
                    raise ValueError(
                        f"learner.assignment['{pid}'] = {index!r} is not a learner index in [0, {self.num_learners - 1}]"
                    )

    @classmethod
    def from_config(cls, section: Any) -> LearnerConfig:
        """From a mapping (unknown keys -> ``ValueError``) or an object with these attributes."""
        names = [f.name for f in dataclasses.fields(cls)]
        if isinstance(section, Mapping):
            unknown = sorted(set(section) - set(names))
            if unknown:
                raise ValueError(f"unknown learner config key(s) {unknown}; known: {sorted(names)}")
            return cls(**dict(section))
        return cls(**{n: getattr(section, n) for n in names if hasattr(section, n)})


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def resource_requests(cfg: LearnerConfig) -> list[dict[str, float]]:
    """Ray actor options (``num_cpus``, ``num_gpus``) for each learner actor."""
    return [{"num_cpus": float(cfg.num_cpus_per_learner), "num_gpus": float(cfg.num_gpus_per_learner)} for _ in range(cfg.num_learners)]


def gpus_needed(cfg: LearnerConfig) -> int:
    """Whole GPUs the learners need: a fractional share never spans two GPUs (0.3 each: 3 per GPU)."""
    share = cfg.num_gpus_per_learner
    if share == 0:
        return 0
    per_gpu = math.floor(1.0 / share + 1e-9)
    return math.ceil(cfg.num_learners / per_gpu)


def assign_policies(
    sizes: Mapping[str, int],
    num_learners: int,
    mapping: Mapping[str, int] | None = None,
    loads: Sequence[int] | None = None,
) -> dict[str, int]:
    """Learner index per policy: ``mapping`` first, then largest policies to the least loaded learner.

    ``sizes`` are parameter counts; ``loads`` the parameters each learner already holds.
    A policy in ``mapping`` that is not in ``sizes`` raises ``ValueError``.
    """
    mapping = dict(mapping or {})
    unknown = sorted(set(mapping) - set(sizes))
    if unknown:
        raise ValueError(f"learner assignment names unknown policies {unknown}; policies: {sorted(sizes)}")
    for pid, index in mapping.items():
        if not 0 <= index < num_learners:
            raise ValueError(f"learner assignment puts '{pid}' on learner {index}, but there are {num_learners}")
    load = list(loads) if loads is not None else [0] * num_learners
    if len(load) != num_learners:
        raise ValueError(f"got {len(load)} learner loads for {num_learners} learners")
    out: dict[str, int] = {}
    for pid, index in mapping.items():
        out[pid] = index
        load[index] += sizes[pid]
    for pid in sorted((p for p in sizes if p not in mapping), key=lambda p: (-sizes[p], p)):
        index = min(range(num_learners), key=lambda i: (load[i], i))
        out[pid] = index
        load[index] += sizes[pid]
    return out


def _num_parameters(algorithm: Algorithm) -> int:
    with torch.random.fork_rng(devices=[]):
        return sum(p.numel() for p in algorithm.make_model().parameters())


class LearnerGroup:
    """Several learners (Ray actors or local :class:`Learner` s) behind the Learner interface.

    Each policy lives on one learner. :meth:`learn_on_batch` sends every learner only its
    policies' part of the batch and runs the learners in parallel (actors); results and
    weights are merged. Seeds follow the group's order of additions, so a policy starts
    from the same weights whichever learner hosts it. ``make_learner(index)`` builds a
    learner like ``learners[index]`` (:meth:`from_config` sets it); without it the group
    cannot :meth:`replace_learner`.
    """

    def __init__(
        self,
        learners: Sequence[Remote[Learner]],
        assignment: Mapping[str, int] | str = "auto",
        make_learner: Callable[[int], Remote[Learner]] | None = None,
    ) -> None:
        if not learners:
            raise ValueError("LearnerGroup needs at least one learner")
        self.learners = list(learners)
        self._make_learner = make_learner
        self._offsets: dict[str, int] = {}
        self._dead: dict[int, BaseException] = {}  # learner index -> the error that showed it dead
        if isinstance(assignment, str) and assignment != "auto":
            raise ValueError(f"assignment must be 'auto' or {{policy_id: learner index}}, got {assignment!r}")
        self._mapping = {} if isinstance(assignment, str) else dict(assignment)
        self._owner: dict[str, int] = {}
        self._sizes: dict[str, int] = {}
        self._algorithms: dict[str, Algorithm] = {}
        self._frozen: set[str] = set()
        self._versions_seen: dict[str, int] = {}  # highest weights version seen leaving a learner, per policy
        self._num_added = 0
        self._mapping_checked = False

    @classmethod
    def from_config(cls, cfg: LearnerConfig | Mapping[str, Any] | Any, seed: int = 0, remote: bool = True) -> LearnerGroup:
        """Learners as the config says: Ray actors with its resource requests, or local objects."""
        cfg = cfg if isinstance(cfg, LearnerConfig) else LearnerConfig.from_config(cfg)
        kwargs: dict[str, Any] = {
            "device": cfg.device, "seed": seed, "num_threads": cfg.num_threads, "stack_same_shaped": cfg.stack_same_shaped,
            "precision": cfg.precision,
        }  # fmt: skip
        if not remote:
            make: Callable[[int], Remote[Learner]] = lambda _index: Learner(**kwargs)  # noqa: E731
        else:
            import ray

            available = ray.cluster_resources().get("GPU", 0)
            if gpus_needed(cfg) > available:
                raise ValueError(f"the learner config needs {gpus_needed(cfg)} GPU(s) but the Ray cluster has {available:g}")
            actor, options = ray.remote(Learner), resource_requests(cfg)
            make = lambda index: actor_handle(actor.options(**options[index]).remote(**kwargs))  # noqa: E731
        return cls([make(i) for i in range(cfg.num_learners)], cfg.assignment, make_learner=make)

    # Membership ---------------------------------------------------------------
    def add_policies(self, algorithms: Mapping[str, Algorithm], frozen: Iterable[str] = ()) -> None:
        """Add a set of policies at once, balanced together (largest first); checks the mapping against them."""
        frozen = set(frozen)
        sizes = {pid: _num_parameters(algo) for pid, algo in algorithms.items()}
        known = {**self._sizes, **sizes}
        if not self._mapping_checked:
            assign_policies(known, len(self.learners), self._mapping)  # unknown names raise here
            self._mapping_checked = True
        mapping = {p: i for p, i in self._mapping.items() if p in sizes}
        placement = assign_policies(sizes, len(self.learners), mapping, self._loads())
        for pid, algo in algorithms.items():
            self._add(pid, algo, None, pid in frozen, None, placement[pid], sizes[pid])

    def add_policy(
        self,
        policy_id: str,
        algorithm: Algorithm,
        weights: Mapping[str, np.ndarray] | None = None,
        frozen: bool = False,
        seed_offset: int | None = None,
        learner: int | None = None,
    ) -> None:
        """Host a new policy on ``learner`` (index), else where the mapping says, else on the least loaded one."""
        if policy_id in self._owner:
            raise ValueError(f"policy '{policy_id}' is already hosted by this learner group")
        size = _num_parameters(algorithm)
        if learner is None:
            fixed = {policy_id: self._mapping[policy_id]} if policy_id in self._mapping else None
            learner = assign_policies({policy_id: size}, len(self.learners), fixed, self._loads())[policy_id]
        elif not 0 <= learner < len(self.learners):
            raise ValueError(f"learner index {learner} out of range; the group has {len(self.learners)} learners")
        self._add(policy_id, algorithm, weights, frozen, seed_offset, learner, size)

    def _add(self, pid: str, algo: Algorithm, weights: Weights | None, frozen: bool, seed_offset: int | None, index: int, size: int) -> None:
        offset = self._num_added if seed_offset is None else seed_offset
        self._call(index, Learner.add_policy, pid, algo, weights, frozen, offset)
        self._num_added += 1
        self._owner[pid], self._sizes[pid], self._algorithms[pid], self._offsets[pid] = index, size, algo, offset
        if frozen:
            self._frozen.add(pid)

    def remove_policy(self, policy_id: str) -> None:
        """Drop a policy from its learner."""
        self._call(self._index(policy_id), Learner.remove_policy, policy_id)
        del self._owner[policy_id], self._sizes[policy_id], self._algorithms[policy_id], self._offsets[policy_id]
        self._frozen.discard(policy_id)

    def policy_ids(self) -> list[str]:
        """Hosted policy ids, in insertion order."""
        return list(self._owner)

    def is_frozen(self, policy_id: str) -> bool:
        """Whether ``policy_id`` is inference-only."""
        self._index(policy_id)
        return policy_id in self._frozen

    def algorithm(self, policy_id: str) -> Algorithm:
        """The algorithm of a hosted policy."""
        self._index(policy_id)
        return self._algorithms[policy_id]

    def assignment(self) -> dict[str, int]:
        """Learner index of every hosted policy."""
        return dict(self._owner)

    def policies_on(self, index: int) -> list[str]:
        """Policies hosted by learner ``index``, in insertion order."""
        return [pid for pid, i in self._owner.items() if i == index]

    # Training -----------------------------------------------------------------
    def learn_on_batch(self, batch: MultiAgentBatch, policy_ids: list[str] | None = None, **kwargs: Any) -> dict[str, dict[str, float]]:
        """Each learner trains its policies on its part of ``batch``, all in parallel; merged stats."""
        stats = self._fan_out(Learner.learn_on_batch, batch, policy_ids, **kwargs)
        for pid, policy_stats in stats.items():
            if isinstance(policy_stats, Mapping) and "weights_version" in policy_stats:
                self._note_version(pid, int(policy_stats["weights_version"]))
        return stats

    def compute_gradients(
        self, batch: MultiAgentBatch, policy_ids: list[str] | None = None, drop_stale_rows: bool = False
    ) -> dict[str, list[np.ndarray]]:
        """Per-policy gradients from every learner, merged (see :meth:`Learner.compute_gradients`)."""
        return self._fan_out(Learner.compute_gradients, batch, policy_ids, drop_stale_rows=drop_stale_rows)

    def apply_gradients(self, grads: dict[str, list[np.ndarray]]) -> None:
        """Each policy's gradients applied by its learner."""
        self._per_learner(Learner.apply_gradients, grads)

    def update_target(self, policy_ids: list[str] | None = None) -> None:
        """Refresh target networks on every learner (or of the given policies)."""
        ids = self.policy_ids() if policy_ids is None else policy_ids
        self._per_learner(Learner.update_target, dict.fromkeys(ids), pass_ids=True)

    def policy_versions(self, policy_ids: list[str] | None = None) -> dict[str, tuple[int, int]]:
        """Each policy's ``(weights version, epoch)`` (see :meth:`Learner.policy_versions`)."""
        ids = self.policy_ids() if policy_ids is None else list(policy_ids)
        versions = self._per_learner(Learner.policy_versions, dict.fromkeys(ids), pass_ids=True)
        for pid, (version, _epoch) in versions.items():
            self._note_version(pid, int(version))
        return versions

    def _note_version(self, pid: str, version: int) -> None:
        """Remember the highest weights version of ``pid`` seen leaving a learner."""
        if version > self._versions_seen.get(pid, -1):
            self._versions_seen[pid] = version

    # Weights and state --------------------------------------------------------
    def get_weights(self, policy_ids: list[str] | None = None) -> dict[str, dict[str, np.ndarray]]:
        """Numpy state dicts per policy, fetched from the learners in parallel."""
        ids = self.policy_ids() if policy_ids is None else list(policy_ids)
        merged = self._per_learner(Learner.get_weights, dict.fromkeys(ids), pass_ids=True)
        for pid in ids:  # the versions samplers may act with, and so stamp on rows
            version = merged[pid].get(WEIGHTS_VERSION)
            if version is not None:
                self._note_version(pid, int(np.asarray(version)))
        return {pid: merged[pid] for pid in ids}

    def set_weights(self, weights: Mapping[str, Mapping[str, np.ndarray]]) -> None:
        """Send each policy's weights to its learner."""
        self._per_learner(Learner.set_weights, weights)

    def get_state(self, policy_id: str) -> bytes:
        """See :meth:`Learner.get_state`."""
        return self._call(self._index(policy_id), Learner.get_state, policy_id)

    def set_state(self, policy_id: str, state: bytes) -> None:
        """See :meth:`Learner.set_state`."""
        self._call(self._index(policy_id), Learner.set_state, policy_id, state)

    # Recovery -----------------------------------------------------------------
    def replace_learner(self, index: int, states: Mapping[str, bytes]) -> None:
        """Start a fresh learner in place of learner ``index`` (typically a dead one) and restore its policies.

        The new learner is built like the original (same Ray options: device, CPU and GPU
        shares; same seed); its policies are added again in their order, with their
        algorithms, frozen flags and seed offsets, and each then loads ``states[pid]``
        (``Learner.get_state`` bytes: weights, optimiser, update count, RNG, target
        networks), its epoch starting above every version of it this group saw leave the
        lost learner (weights fetched, updates, version queries). States of policies
        hosted elsewhere are ignored, so a checkpoint's whole ``learner_states`` can be passed. The old actor is killed first (freeing
        its resources); if the new one fails, it is killed too, the error is raised and
        learner ``index`` stays dead.
        """
        if self._make_learner is None:
            raise ValueError("this LearnerGroup was built from learner objects without make_learner: it cannot replace one")
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(self.learners):
            raise ValueError(f"learner index {index!r} out of range; the group has {len(self.learners)} learners")
        pids = self.policies_on(index)
        check_states(index, pids, states)
        kill_learner(self.learners[index])
        self._dead.setdefault(index, RuntimeError(f"learner {index} was replaced"))
        new = self._make_learner(index)
        try:
            pending = [submit(new, Learner.add_policy, p, self._algorithms[p], None, p in self._frozen, self._offsets[p]) for p in pids]
            # Above every version the lost learner handed out: its rows still on the way
            # (in samplers, replay, a half-full train batch) fall below the new epoch.
            pending += [submit(new, Learner.set_state, p, states[p], self._versions_seen.get(p, -1) + 1) for p in pids]
            gather(pending, {index: new}, [index] * len(pending), self.policies_on)
        except BaseException:
            kill_learner(new)
            raise
        self.learners[index] = new
        del self._dead[index]

    def close(self) -> None:
        """Stop the learner actors (local learners are just dropped)."""
        for learner in self.learners:
            kill_learner(learner)

    # Internals ----------------------------------------------------------------
    def _index(self, policy_id: str) -> int:
        try:
            return self._owner[policy_id]
        except KeyError:
            raise KeyError(f"policy '{policy_id}' is not hosted by this learner group (hosted: {self.policy_ids()})") from None

    def _gather(self, pending: Sequence[Any], indices: Sequence[int]) -> list[Any]:
        """Results of calls on ``learners[i]`` (``i`` in ``indices``); a dead one raises :class:`LearnerDied`."""
        try:
            return gather(pending, self.learners, indices, self.policies_on)
        except LearnerDied as err:
            self._dead[err.learner_index] = err.cause if isinstance(err.cause, BaseException) else err
            raise

    def _submit(self, indices: Sequence[int], method: Callable[..., R], args: Sequence[Sequence[Any]], **kwargs: Any) -> list[R]:
        """Call ``method(*args[k], **kwargs)`` (a :class:`Learner` method reference) on
        ``learners[indices[k]]`` in parallel; their results.

        A learner already known dead raises :class:`LearnerDied` before anything is sent.
        """
        for index in indices:
            if index in self._dead:
                cause = self._dead[index]
                raise LearnerDied(index, self.policies_on(index), cause) from cause
        pending = [submit(self.learners[i], method, *a, **kwargs) for i, a in zip(indices, args)]
        return self._gather(pending, indices)

    def _call(self, index: int, method: Callable[Concatenate[Learner, P], R], *args: P.args, **kwargs: P.kwargs) -> R:
        return self._submit([index], method, [args], **kwargs)[0]

    def _loads(self) -> list[int]:
        load = [0] * len(self.learners)
        for pid, index in self._owner.items():
            load[index] += self._sizes[pid]
        return load

    def _fan_out(self, method: Callable[..., Any], batch: MultiAgentBatch, policy_ids: list[str] | None, **kwargs: Any) -> dict[str, Any]:
        if not isinstance(batch, MultiAgentBatch):
            raise TypeError(f"learner group expects a MultiAgentBatch, got {type(batch).__name__}")
        wanted = [p for p in self.policy_ids() if p not in self._frozen] if policy_ids is None else list(policy_ids)
        per: dict[int, list[str]] = {}
        for pid in wanted:
            per.setdefault(self._index(pid), []).append(pid)
        jobs = [(i, pids) for i, pids in per.items() if any(p in batch.policy_batches for p in pids)]
        results = self._submit([i for i, _ in jobs], method, [(batch.select(pids), pids) for _, pids in jobs], **kwargs)
        merged: dict[str, Any] = {}
        for result in results:
            merged.update(result or {})
        return merged

    def _per_learner(self, method: Callable[..., Any], per_policy: Mapping[str, Any], pass_ids: bool = False) -> dict[str, Any]:
        split: dict[int, dict[str, Any]] = {}
        for pid, value in per_policy.items():
            split.setdefault(self._index(pid), {})[pid] = value
        results = self._submit(list(split), method, [(list(part) if pass_ids else part,) for part in split.values()])
        merged: dict[str, Any] = {}
        for result in results:
            merged.update(result or {})
        return merged
