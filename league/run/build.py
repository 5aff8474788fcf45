"""Building a run's parts from its config: algorithms, learner, samplers and the plan.

Plain functions of a validated :class:`~league.config.RunConfig`, so the trainer, a
resume and a rebuild after a checkpoint (``checkpoint.exact_resume``) or a lost learner
all build the same parts the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from typing import Any, cast

import torch

from league.algos import make_algorithm
from league.learn.algorithm import Algorithm
from league.algos.compose import build_multi_policy_plan
from league.config import RunConfig
from league.envs import make_env
from league.envs.base import AgentSpec
from league.envs.factory import EnvFactory
from league.runtime.actors import call, is_ray_actor, provides, resolve, share, submit
from league.runtime.recovery import on_sampler_restart
from league.learn import Learner, LearnerGroup
from league.leagues import TrainingLeague
from league.policy import PolicyFactory, RandomPolicyFactory
from league.population.scripted import scripted_factory, scripted_members
from league.resume import sampler_seed
from league.runtime.faces import (
    InferenceFace,
    InferenceHandle,
    LearnerFace,
    LearnerHandle,
    PlanFace,
    SamplerFace,
    SamplerHandle,
    UsesInference,
)
from league.sampling import Sampler, make_remote_samplers
from league.sampling.inference import make_inference_server

__all__ = [
    "EVAL_OPPONENT",
    "agent_spec",
    "agent_specs",
    "group_agents",
    "success_metric",
    "make_algorithms",
    "uses_ray",
    "check_ray_resources",
    "make_learner",
    "update_threads",
    "make_samplers",
    "inference_server",
    "ServerWeights",
    "weight_receivers",
    "load_samplers",
    "sampling_mode",
    "build_plan",
]

#: The fixed evaluation opponent every sampler holds.
EVAL_OPPONENT = "random"


def env_facts(cfg: RunConfig) -> tuple[dict[str, AgentSpec], int | None]:
    """From one copy of the run's env: every agent -> its spec (in the env's agent order), and
    the most env steps an episode can take where the env declares it (``episode_limit``)."""
    env = make_env(cfg.env.name, **cfg.env.kwargs)
    try:
        return {a: env.spec(a) for a in env.possible_agents}, env.episode_limit()
    finally:
        env.close()


def agent_specs(cfg: RunConfig) -> dict[str, AgentSpec]:
    """Every agent of the run's env -> its spec, in the env's agent order."""
    return env_facts(cfg)[0]


def agent_spec(cfg: RunConfig, specs: dict[str, AgentSpec] | None = None) -> tuple[AgentSpec, list[str]]:
    """The run's agent spec (shared by every agent; with ``env.groups``, the first agent's:
    each policy then gets its group's spec from :func:`make_algorithms`) and its agent ids;
    ``specs``: :func:`agent_specs`'s, where already read."""
    specs = agent_specs(cfg) if specs is None else specs
    if len(set(specs.values())) != 1 and not cfg.env.groups:
        # parse_run_config groups such envs; a config built around it must declare them.
        raise ValueError(f"env '{cfg.env.name}' gives its agents different spaces {specs}; declare its sides in env.groups")
    return next(iter(specs.values())), list(specs)


def group_agents(cfg: RunConfig) -> dict[str, list[str]]:
    """``env.groups`` resolved against the env's agents: ``{group: [agent ids]}`` ({} without groups)."""
    if not cfg.env.groups:
        return {}
    from league.envs.groups import resolve_groups

    return resolve_groups(cfg.env.groups, agent_specs(cfg), cfg.env.name)


def success_metric(cfg: RunConfig) -> str:
    """``eval.metric`` with ``auto`` resolved: ``return`` for a single-agent env or one whose
    agents form a single group (a co-op team: nobody wins against a teammate), else ``win_rate``;
    a metric key (league.run.stops) as it is."""
    if cfg.eval.metric != "auto":
        return cfg.eval.metric
    if len(cfg.env.groups) == 1 or len(agent_specs(cfg)) == 1:
        return "return"
    return "win_rate"


def make_algorithms(cfg: RunConfig, spec: AgentSpec, learning: Sequence[str]) -> dict[str, Algorithm]:
    """Each learning policy's algorithm: its own ``policies`` entry, else ``algo``; a policy
    of a group is built for that group's spec."""
    if cfg.policies:
        specs = agent_specs(cfg) if cfg.env.groups else {}
        groups = group_agents(cfg) if cfg.env.groups else {}
        return {
            pid: make_algorithm(pc.algo, specs[groups[pc.group][0]] if pc.group else spec, pc.params) for pid, pc in cfg.policies.items()
        }
    return {pid: make_algorithm(cfg.algo.name, spec, cfg.algo.params) for pid in learning}


def _learner_group(cfg: RunConfig) -> bool:
    return cfg.learner.num_learners > 1 or cfg.learner.device != "cpu"


def uses_ray(cfg: RunConfig) -> bool:
    """Whether the run needs Ray: sampler actors, or learner actors."""
    return cfg.sampler.remote or _learner_group(cfg)


def check_ray_resources(cfg: RunConfig) -> None:
    """Refuse (or, on a joined cluster, warn about) a run whose sampler and learner actors
    ask Ray for more CPUs or GPUs than it has: they would wait forever (a hang, not an error)."""
    from league.learn.placement import gpus_needed
    from league.runtime.ray_start import check_resources

    s, lc = cfg.sampler, cfg.learner
    cpus = gpus = 0.0
    parts = []
    if s.remote:
        cpus += s.num_samplers * s.num_cpus
        parts.append(f"{s.num_samplers} sampler(s) x sampler.num_cpus={s.num_cpus:g}")
    if s.remote and s.inference == "server":
        cpus += s.inference_num_cpus
        gpus += s.inference_num_gpus
        parts.append(f"the inference server: sampler.inference_num_cpus={s.inference_num_cpus:g}, inference_num_gpus={s.inference_num_gpus:g}")
    if _learner_group(cfg):
        cpus += lc.num_learners * lc.num_cpus_per_learner
        gpus += gpus_needed(lc)
        parts.append(f"{lc.num_learners} learner(s) x learner.num_cpus_per_learner={lc.num_cpus_per_learner:g}"
                     + (f", num_gpus_per_learner={lc.num_gpus_per_learner:g}" if lc.num_gpus_per_learner else ""))  # fmt: skip
    check_resources(cpus, gpus, "; ".join(parts), joined=cfg.ray.address is not None)


def make_learner(cfg: RunConfig, algorithms: Mapping[str, Algorithm]) -> Learner | LearnerGroup:
    """One in-process learner (batches never leave the process), or a group of learner actors."""
    if _learner_group(cfg):
        group = LearnerGroup.from_config(asdict(cfg.learner), seed=cfg.seed, remote=True)
        group.add_policies(dict(algorithms))
        return group
    threads = update_threads(cfg, algorithms)
    # The process's own count is the smallest: the driver's other work (the plan, the
    # league) runs while the samplers sample, and the policies that wait for none raise it.
    learner = Learner(cfg.learner.device, seed=cfg.seed, num_threads=min(threads.values(), default=cfg.learner.num_threads),
                      stack_same_shaped=cfg.learner.stack_same_shaped, precision=cfg.learner.precision)  # fmt: skip
    for pid, algo in algorithms.items():
        learner.add_policy(pid, algo, num_threads=threads[pid])
    return learner


def update_threads(cfg: RunConfig, algorithms: Mapping[str, Algorithm]) -> dict[str, int]:
    """Each learning policy's CPU threads in the in-process learner: ``learner.num_threads``
    for updates the samplers wait for (an on-policy policy's in ``bulk_sync`` mode, or any
    update beside in-process samplers, which never sample meanwhile), and
    ``learner.num_threads_while_sampling`` (when set) for updates that overlap Ray
    samplers' sampling (every policy's in ``async`` mode, an off-policy one's in a
    ``bulk_sync`` mix)."""
    busy = cfg.learner.num_threads_while_sampling
    if busy is None or not cfg.sampler.remote:
        return {pid: cfg.learner.num_threads for pid in algorithms}
    bulk = sampling_mode(cfg, algorithms) == "bulk_sync"
    return {pid: cfg.learner.num_threads if bulk and algo.max_policy_lag() == 0 else busy for pid, algo in algorithms.items()}


def _random_factory(algorithms: Mapping[str, Algorithm]) -> RandomPolicyFactory:
    """The evaluation opponent: uniform over legal actions, over the Box of a continuous-action env,
    or per component of a MultiDiscrete one."""
    return RandomPolicyFactory.for_spec(next((a.agent_spec for a in algorithms.values()), None))


def _yardstick(cfg: RunConfig, algorithms: Mapping[str, Algorithm]) -> dict[str, PolicyFactory]:
    """``eval.yardstick``'s scripted players (a mix's members), by name ({} without one)."""
    if cfg.eval.yardstick is None:
        return {}
    spec = next(a.agent_spec for a in algorithms.values())
    return {m: scripted_factory(m, spec, cfg.league.negamax_depth, setting="eval.yardstick") for m in scripted_members(cfg.eval.yardstick)}


def make_samplers(cfg: RunConfig, iteration: int, algorithms: Mapping[str, Algorithm], league: TrainingLeague) -> list[SamplerHandle]:
    """The run's samplers (Ray actors or in-process), holding every policy the league needs,
    seeded for a run (re)started at ``iteration``."""
    frozen = league.frozen_policies()
    s = cfg.sampler
    kwargs: dict[str, Any] = dict(
        env=EnvFactory(cfg.env.name, cfg.env.kwargs, cfg.env.backend, cfg.env.opening_plies),
        policies={**algorithms, EVAL_OPPONENT: _random_factory(algorithms), **_yardstick(cfg, algorithms), **{pid: f for pid, (f, _) in frozen.items()}},
        frozen=tuple(dict.fromkeys((EVAL_OPPONENT, *_yardstick(cfg, algorithms), *frozen))),
        matchups=league.matchups(),
        num_envs=s.num_envs,
        fragment_length=s.fragment_length,
        max_consecutive_env_failures=s.max_consecutive_env_failures,
        matchup_draws=s.matchup_draws,
    )
    if s.inference == "server":  # one per build: a rebuild's samplers start on a fresh server, as a resume's would
        # A call slot per sampler (their steps batch together) and two for the driver's calls.
        kwargs["inference"] = make_inference_server(s.inference_device, s.remote, s.inference_num_cpus, s.inference_num_gpus,
                                                    max_concurrency=s.num_samplers + 2)  # fmt: skip
    seed = sampler_seed(cfg.seed, iteration)
    if s.remote:
        return list(make_remote_samplers(s.num_samplers, num_cpus=s.num_cpus, seed=seed, **kwargs))
    # In the driver, samplers must leave the process's torch thread count alone.
    return [Sampler(seed=seed, worker_index=i, torch_threads=torch.get_num_threads(), **kwargs) for i in range(s.num_samplers)]


def inference_server(samplers: Sequence[SamplerHandle]) -> InferenceHandle | None:
    """The inference server the run's samplers play through (``sampler.inference: server``), else None."""
    first = samplers[0] if samplers else None
    if first is None or not provides(first, UsesInference.inference_server):
        return None
    return call(first, UsesInference.inference_server)


class ServerWeights:
    """The weight broadcast's one destination when samplers play through an inference server.

    ``BroadcastWeights`` sends it what it would send every sampler; it loads the weights on
    the server and waits until they are loaded, so no sampler's next fragment can act with
    the previous weights (a Ray actor's calls from the driver and from samplers are not
    ordered among themselves; rows acted with old weights would be dropped as stale).
    """

    def __init__(self, server: InferenceHandle) -> None:
        self.server = server

    def set_weights(self, weights: Mapping[str, Mapping[str, Any]]) -> None:
        """Load ``weights`` (per policy id) on the server, once for every sampler."""
        call(self.server, InferenceFace.set_weights, weights)


def weight_receivers(samplers: Sequence[SamplerHandle]) -> list[SamplerHandle]:
    """Where weight broadcasts go: every sampler, or the one inference server they share."""
    server = inference_server(samplers)
    if server is None:
        return list(samplers)
    # BroadcastWeights calls set_weights alone on a receiver (and asks whether it is a Ray
    # actor): ServerWeights has that method, not the rest of a sampler's face.
    return [cast(SamplerHandle, ServerWeights(server))]


def load_samplers(
    samplers: Sequence[SamplerHandle],
    learner: LearnerFace,
    league: TrainingLeague,
    initial_states: Mapping[str, bytes],
    on_restart: Callable[[SamplerHandle], list[Any]],
) -> None:
    """Send the current weights (learning and frozen) and a matchup source per sampler, bind
    the league to them, and register ``on_restart`` for sampler actors Ray restarts."""
    weights = learner.get_weights(league.learning)
    weights.update(league.frozen_weights())
    server = inference_server(samplers)
    if server is not None:  # every policy with weights is on the server: loaded there once
        call(server, InferenceFace.set_weights, weights)
    else:
        shared = share(weights, samplers)
        resolve([submit(s, SamplerFace.set_weights, shared) for s in samplers], samplers)
    league.bind(samplers, initial_states)
    if len(samplers) > 1:  # each sampler its own matchup source (a batch is consumed once)
        resolve([submit(s, SamplerFace.set_matchups, league.matchups()) for s in samplers], samplers)
    for s in samplers:
        if is_ray_actor(s):  # a restarted sampler re-runs __init__: it lost snapshots and matchups
            on_sampler_restart(s, on_restart)
            if server is not None:  # and it may have been the last client of a model: the server's weights again
                on_sampler_restart(s, lambda _s: submit(server, InferenceFace.set_weights, learner.get_weights(league.learning)))


def sampling_mode(cfg: RunConfig, algorithms: Mapping[str, Algorithm]) -> str:
    """``sampler.mode``, with ``auto`` resolved: ``bulk_sync`` when some learning policy is
    on-policy (``max_policy_lag`` 0: a fragment sampled while it updated would be dropped as
    stale), else ``async`` (samplers keep sampling while the learner trains)."""
    if cfg.sampler.mode != "auto":
        return cfg.sampler.mode
    return "bulk_sync" if any(algo.max_policy_lag() == 0 for algo in algorithms.values()) else "async"


def build_plan(cfg: RunConfig, samplers: Sequence[SamplerHandle], learner: LearnerHandle, algorithms: Mapping[str, Algorithm]) -> PlanFace:
    """The run's plan: rollouts from ``samplers`` through every policy's algorithm fragment."""
    from league.flow import LocalIterator, ParallelRollouts

    s = cfg.sampler
    rollouts = ParallelRollouts(list(samplers), mode=sampling_mode(cfg, algorithms))
    if not isinstance(rollouts, LocalIterator):  # only mode="raw" gives a ParallelIterator
        raise ValueError(f"sampler.mode {s.mode!r} makes no plan")
    return build_multi_policy_plan(
        rollouts,
        learner,
        weight_receivers(samplers),
        algorithms,
        broadcast_every_env_steps=s.broadcast_every_env_steps,
        max_broadcasts_in_flight=s.max_broadcasts_in_flight,
        stack=cfg.learner.stack_same_shaped,
    )
