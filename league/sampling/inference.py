"""Inference where the learner is: one server hosts the policies every sampler of a node plays.

The SEED RL shape (issue 36). Without it (``sampler.inference: local``, the default) each
sampler holds CPU copies of every policy it plays (learning policies, snapshots, exploiters,
fixed members) and runs their forward passes itself; weights are broadcast to every sampler.
With ``sampler.inference: server`` one :class:`InferenceServer` (a Ray actor, or a local
object with in-process samplers) holds each policy's model once, on its device (``cpu`` or
``cuda``), and samplers send it observations and masks per policy id and get back whatever
the policy's :meth:`~league.policy.Policy.compute_actions` returns (PPO's ``action_logp`` and
``vf_preds``, DQN's echoed ``action_mask``), plus the ``weights_version`` stamp
(:mod:`league.sampling.versioning`). Weights go to the server once, not to every sampler, and
a league snapshot costs one model on the server however many samplers play it.

Semantics match the local path: the server keeps, per client (a sampler) and policy id, the
policy object the sampler would have built (same factory, same seed, so the same sampling
RNG and, for DQN, the same per-sampler epsilon schedule), sharing one model per policy id
(its ``model`` attribute) across clients. Policies without parameters (the uniform-random
fixed member, scripted searches) stay on the sampler: there is no model to move, and a
round trip would only add latency.

On a sampler, :class:`ServedPolicy` stands in for a local policy; :func:`compute_all` sends
every served policy of a runner step in one call (one round trip per step, not per policy).

Batching across samplers: as a Ray actor the server takes calls concurrently (threads); calls
that arrive while a forward pass runs wait, and the next of them serves them all at once, with
one forward pass per policy id over every waiting sampler's rows (a GPU runs a few large
batches instead of many small ones). Each sampler's rows are then sampled by its own policy
object from its slice of that pass (:class:`~league.sampling.model_placement.Precomputed`), so RNG streams stay per sampler.
One sampler's rows alone, as in-process, run exactly as the local path does.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from league.policy import Policy, PolicyFactory
from league.runtime.actors import actor_handle, call
from league.runtime.faces import InferenceFace, InferenceHandle, Weights
from league.sampling.model_placement import Precomputed, place, split_rows
from league.sampling.versioning import WEIGHTS_VERSION, version_of

if TYPE_CHECKING:
    from league.envs.batched import SimulatorStates
    from torch import nn

__all__ = [
    "INFERENCE_MODES",
    "INFERENCE_DEVICES",
    "InferenceServer",
    "ServedPolicy",
    "Request",
    "check_inference_config",
    "compute_all",
    "make_inference_server",
    "resolve_device",
]

#: ``sampler.inference``: where samplers' forward passes run.
INFERENCE_MODES = ("local", "server")
#: ``sampler.inference_device``: the server's device (``auto``: ``cuda`` when the driver sees one).
INFERENCE_DEVICES = ("cpu", "cuda", "auto")

#: One policy's rows of one runner step: ``(policy id, obs, action mask)``.
Request = tuple[str, np.ndarray, np.ndarray]


def resolve_device(device: str) -> str:
    """``cpu`` or ``cuda`` for an ``inference_device`` value; ``auto`` picks ``cuda`` when
    torch sees one. ValueError for anything else, or ``cuda`` without CUDA."""
    if device not in INFERENCE_DEVICES:
        raise ValueError(f"sampler.inference_device must be one of {INFERENCE_DEVICES}, got {device!r}")
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("sampler.inference_device is 'cuda' but torch sees no CUDA device here (use cpu or auto)")
    return device


def check_inference_config(inference: str, device: str, num_cpus: float, num_gpus: float) -> None:
    """Validate the ``sampler.inference*`` keys (before Ray starts); ValueError names the bad one."""
    if inference not in INFERENCE_MODES:
        raise ValueError(f"sampler.inference must be one of {INFERENCE_MODES}, got {inference!r}")
    if num_cpus < 0 or num_gpus < 0:
        raise ValueError(f"sampler.inference_num_cpus and inference_num_gpus must be >= 0, got {num_cpus} and {num_gpus}")
    if inference == "server":
        resolved = resolve_device(device)
        if resolved == "cpu" and num_gpus > 0:
            raise ValueError(f"sampler.inference_device is cpu but sampler.inference_num_gpus is {num_gpus}: a GPU share would sit unused")
    elif device not in INFERENCE_DEVICES:
        raise ValueError(f"sampler.inference_device must be one of {INFERENCE_DEVICES}, got {device!r}")


@dataclass
class _Call:
    """One ``compute_actions`` call waiting to be served (with others, in one batch)."""

    client: int
    requests: Sequence[Request]
    explore: bool
    results: list[dict[str, np.ndarray]] | None = None
    error: BaseException | None = None
    # Set under the turn lock once the serving thread has finished: results are filled in
    # outside that lock, so a waiter must not read them before this (a half-filled list).
    done: bool = False


@dataclass
class _Hosted:
    """One policy id on the server: its shared model (None: each client keeps a full copy,
    for policies that hold their parameters elsewhere) and the weights' version."""

    model: nn.Module | None
    versioned: bool
    version: int = 0
    clients: dict[int, Policy] = field(default_factory=dict)


class InferenceServer:
    """Hosts policies on one device and computes actions for every sampler (module docstring).

    A client is one sampler (its worker index). Narrow methods, as an actor's should be:
    :meth:`register_client`, :meth:`add_policy`, :meth:`remove_policy`,
    :meth:`compute_actions`, :meth:`set_weights` (the broadcast's one destination),
    :meth:`get_weights`, :meth:`reset_exploration`.
    """

    def __init__(self, device: str = "cpu", torch_threads: int = 1) -> None:
        self.device = torch.device(resolve_device(device))
        self._threads = torch_threads
        self._threads_set: set[int] = set()  # threads whose torch thread count is set
        self._set_threads()
        self._hosted: dict[str, _Hosted] = {}
        # Ray runs a threaded actor's calls at once: models and membership change under
        # _models only, and waiting compute_actions calls are served together (_turn).
        self._models = threading.RLock()
        self._turn = threading.Condition()
        self._waiting: list[_Call] = []
        self._serving = False
        self.merged_forwards = 0  # forward passes that served several clients' rows at once

    def _set_threads(self) -> None:
        # OpenMP's thread count is per thread: each of a threaded actor's call threads would
        # otherwise run (and spin-wait) on every core, taking them from the learner and samplers.
        if self._threads > 0 and threading.get_ident() not in self._threads_set:
            torch.set_num_threads(self._threads)
            self._threads_set.add(threading.get_ident())

    def register_client(self, client: int) -> None:
        """Forget whatever ``client`` held (a sampler starting, or restarted by Ray)."""
        with self._models:
            for pid in [p for p, h in self._hosted.items() if client in h.clients]:
                self.remove_policy(client, pid)

    def add_policy(
        self, client: int, policy_id: str, factory: PolicyFactory, weights: Weights | None, learns: bool, seed: int
    ) -> bool:
        """Host ``policy_id`` for ``client`` (its policy built as the sampler would:
        ``factory.make_policy(seed, learns)``); loads ``weights`` when given. A policy id
        already hosted keeps its model and weights. Returns False, hosting nothing, for a
        policy without parameters or one that searches from game states: the sampler plays it itself."""
        policy = factory.make_policy(seed=seed, learns=learns)
        initial = policy.get_weights()
        with self._models:
            return self._host(client, policy_id, policy, initial, weights)

    def _host(self, client: int, policy_id: str, policy: Policy, initial: dict[str, np.ndarray], weights: Weights | None) -> bool:
        hosted = self._hosted.get(policy_id)
        if hosted is None and (not initial or policy.needs_states):  # a search acts from its sampler's env states
            return False
        if hosted is None:
            model = getattr(policy, "model", None)
            shared = model if isinstance(model, torch.nn.Module) else None
            if shared is not None:
                place(shared, self.device)
            hosted = self._hosted[policy_id] = _Hosted(shared, version_of(initial) is not None)
        elif hosted.model is not None:
            setattr(policy, "model", hosted.model)  # one model per policy id, whichever client asks
        elif hosted.clients:
            policy.set_weights(next(iter(hosted.clients.values())).get_weights())
        hosted.clients[client] = policy
        if weights is not None:
            self._load(policy_id, weights)
        return True

    def remove_policy(self, client: int, policy_id: str) -> None:
        """``client`` no longer plays ``policy_id``; its model goes once no client does."""
        with self._models:
            hosted = self._hosted.get(policy_id)
            if hosted is None:
                return
            hosted.clients.pop(client, None)
            if not hosted.clients:
                del self._hosted[policy_id]

    def compute_actions(self, client: int, requests: Sequence[Request], explore: bool) -> list[dict[str, np.ndarray]]:
        """Each request's outputs, in order: the client's policy's ``compute_actions`` plus
        ``weights_version`` (``int64[B]``) for versioned policies. Served together with the
        calls waiting beside it (module docstring)."""
        call = _Call(client, requests, explore)
        with self._turn:
            self._waiting.append(call)
            while self._serving and not call.done:
                self._turn.wait()
            if not call.done:  # this thread serves every waiting call
                self._serving = True
                batch, self._waiting = self._waiting, []
            else:
                batch = []
        if batch:
            self._set_threads()
            try:
                with self._models:
                    self._serve(batch)
            finally:
                with self._turn:
                    for served in batch:
                        served.done = True
                    self._serving = False
                    self._turn.notify_all()
        if call.error is not None:
            raise call.error
        assert call.results is not None  # served above or by another thread
        return call.results

    def _serve(self, calls: list[_Call]) -> None:
        """Every call's results (or its error): per policy id and explore flag, one forward pass
        of the shared model over every client's rows, then each client's policy on its slice."""
        groups: dict[tuple[str, bool], list[tuple[_Call, int]]] = {}
        for call in calls:
            call.results = [{} for _ in call.requests]
            for j, (pid, _, _) in enumerate(call.requests):
                groups.setdefault((pid, call.explore), []).append((call, j))
        for (pid, explore), members in groups.items():
            try:
                self._serve_policy(pid, explore, members)
            except Exception as err:  # the calls that asked for this policy fail, the others go on
                for call, _ in members:
                    call.error = err
        for call in calls:
            if call.error is not None:
                call.results = None

    def _serve_policy(self, pid: str, explore: bool, members: list[tuple[_Call, int]]) -> None:
        hosted = self._hosted.get(pid)
        inputs = []
        for call, j in members:
            policy = None if hosted is None else hosted.clients.get(call.client)
            if hosted is None or policy is None:
                raise KeyError(f"inference server holds no policy '{pid}' for client {call.client} (holds: {self.policy_ids()})")
            _, obs, mask = call.requests[j]
            # Arrays that came through Ray are read-only; torch warns on wrapping them (one copy: small).
            inputs.append((policy, np.require(obs, requirements="W"), np.require(mask, requirements="W")))
        shared = hosted.model if hosted is not None else None
        merged = None
        if shared is not None and len({call.client for call, _ in members}) > 1:
            rows = np.concatenate([obs for _, obs, _ in inputs])
            with torch.inference_mode():
                merged = shared(torch.from_numpy(rows))
            self.merged_forwards += 1
        start = 0
        for (call, j), (policy, obs, mask) in zip(members, inputs):
            if merged is not None and shared is not None:
                stop = start + len(obs)
                setattr(policy, "model", Precomputed(shared, torch.from_numpy(obs), split_rows(merged, start, stop)))
                start = stop
                try:
                    out = dict(policy.compute_actions(obs, mask, explore))
                finally:
                    setattr(policy, "model", shared)
            else:
                out = dict(policy.compute_actions(obs, mask, explore))
            if hosted is not None and hosted.versioned:
                out[WEIGHTS_VERSION] = np.full(len(obs), hosted.version, dtype=np.int64)
            assert call.results is not None  # set by _serve
            call.results[j] = out

    def set_weights(self, weights: Mapping[str, Weights]) -> None:
        """Load weights per policy id (each must be hosted), for every client at once."""
        with self._models:
            unknown = sorted(set(weights) - set(self._hosted))
            if unknown:
                raise KeyError(f"inference server holds no policy {unknown} (holds: {self.policy_ids()})")
            for pid, w in weights.items():
                self._load(pid, w)

    def _load(self, policy_id: str, weights: Weights) -> None:
        hosted = self._hosted[policy_id]
        targets = list(hosted.clients.values())
        # A shared model is loaded once, through any client's policy (they all hold it).
        for policy in targets[:1] if hosted.model is not None else targets:
            policy.set_weights(dict(weights))
        version = version_of(weights)
        if version is not None:
            hosted.version = version

    def get_weights(self, policy_ids: list[str] | None = None) -> dict[str, dict[str, np.ndarray]]:
        """The weights ``policy_ids`` (all hosted: None) act with."""
        with self._models:
            ids = self.policy_ids() if policy_ids is None else policy_ids
            return {pid: next(iter(self._hosted[pid].clients.values())).get_weights() for pid in ids}

    def reset_exploration(self, client: int, policy_ids: list[str]) -> None:
        """Restart ``client``'s exploration schedules of ``policy_ids`` (per client, as on a sampler)."""
        with self._models:
            for pid in policy_ids:
                self._hosted[pid].clients[client].reset_exploration()

    def policy_ids(self) -> list[str]:
        """Hosted policy ids."""
        return sorted(self._hosted)

    def num_models(self) -> int:
        """Models held (one per policy id with a shared model, one per client otherwise)."""
        return sum(1 if h.model is not None else len(h.clients) for h in self._hosted.values())

    def device_name(self) -> str:
        """The device the models run on (``cpu``, ``cuda:0``)."""
        return str(self.device) if self.device.type == "cpu" else f"cuda:{torch.cuda.current_device()}"


class ServedPolicy(Policy):
    """A sampler's stand-in for a policy hosted on an :class:`InferenceServer`.

    ``compute_actions`` is one call to the server (:func:`compute_all` batches a step's
    calls); weights and exploration resets go to the server too.
    """

    def __init__(self, server: InferenceHandle, client: int, policy_id: str, learns: bool) -> None:
        self.server = server
        self.client = client
        self.policy_id = policy_id
        self.learns = learns

    def compute_actions(self, obs: np.ndarray, action_mask: np.ndarray, explore: bool = True) -> dict[str, np.ndarray]:
        """The server's outputs for these rows (``weights_version`` included when versioned)."""
        return call(self.server, InferenceFace.compute_actions, self.client, [(self.policy_id, obs, action_mask)], explore)[0]

    def get_weights(self) -> dict[str, np.ndarray]:
        """The weights the server acts with for this policy."""
        return call(self.server, InferenceFace.get_weights, [self.policy_id])[self.policy_id]

    def set_weights(self, weights: dict[str, np.ndarray]) -> None:
        """Load weights on the server (every client's copy of this policy id)."""
        call(self.server, InferenceFace.set_weights, {self.policy_id: weights})

    def reset_exploration(self) -> None:
        """Restart this client's exploration schedule on the server."""
        call(self.server, InferenceFace.reset_exploration, self.client, [self.policy_id])

    def __repr__(self) -> str:
        return f"ServedPolicy({self.policy_id!r}, client={self.client})"


def compute_all(
    policies: Sequence[Policy], inputs: Sequence[tuple[np.ndarray, np.ndarray]], explore: bool,
    states: Sequence[SimulatorStates | None] | None = None,
) -> list[dict[str, np.ndarray]]:
    """``policies[i].compute_actions(*inputs[i], explore)`` for every ``i``, with the served
    ones sent in one call per server and client (a runner step's one round trip); where
    ``states[i]`` is given (a policy that :attr:`~league.policy.Policy.needs_states`, never
    served), ``compute_actions_at`` with those game states."""
    results: list[dict[str, np.ndarray] | None] = [None] * len(policies)
    groups: dict[tuple[int, int], list[tuple[int, ServedPolicy]]] = {}
    for i, policy in enumerate(policies):
        if isinstance(policy, ServedPolicy):
            groups.setdefault((id(policy.server), policy.client), []).append((i, policy))
        elif states is not None and (at := states[i]) is not None:
            results[i] = policy.compute_actions_at(at, inputs[i][0], inputs[i][1], explore)
        else:
            results[i] = policy.compute_actions(inputs[i][0], inputs[i][1], explore)
    for served in groups.values():
        first = served[0][1]
        requests = [(p.policy_id, inputs[i][0], inputs[i][1]) for i, p in served]
        for (i, _), out in zip(served, call(first.server, InferenceFace.compute_actions, first.client, requests, explore)):
            results[i] = out
    return [r for r in results if r is not None]


def make_inference_server(
    device: str, remote: bool, num_cpus: float = 0.0, num_gpus: float = 0.0, max_concurrency: int = 16
) -> InferenceHandle:
    """An :class:`InferenceServer` on ``device``: a Ray actor (``num_cpus``/``num_gpus``
    reserved; with 0 GPUs it still sees the node's GPUs, Ray 2.60 hides none from actors
    that reserve none) when ``remote``, else a local object. ``max_concurrency``: calls the
    actor takes at once (at least one per sampler, so that their steps can be batched).

    The actor is not restarted by Ray: it holds every client's policies, which only a
    rebuild of the samplers would send again.
    """
    resolved = resolve_device(device)
    if not remote:
        return InferenceServer(resolved, torch_threads=0)  # in the driver: leave its thread count alone
    import ray

    actor_cls = ray.remote(num_cpus=num_cpus, num_gpus=num_gpus, max_restarts=0)(InferenceServer)
    return actor_handle(actor_cls.options(max_concurrency=max_concurrency).remote(resolved, torch_threads=max(1, int(num_cpus))))
