"""The run configuration: typed sections, validated once, before Ray starts.

Hydra composes ``configs/``; :func:`parse_run_config` turns the resolved plain dict into
these dataclasses and raises ``ValueError`` naming any unknown key (with its full path),
unknown env or unknown algorithm. Configs cross actor boundaries as these plain objects,
never as live ``DictConfig`` s.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from league.algos import ALGORITHMS
from league.run.schema import (
    AlgoConfig,
    CheckpointConfig,
    EnvConfig,
    EvalConfig,
    IterationConfig,
    LeagueConfig,
    LearnerConfig,
    LoggingConfig,
    PolicyConfig,
    RayConfig,
    RunConfig,
    SamplerConfig,
    StopConfig,
)
from league.search.alphazero import check_search_algorithms  # registers algo=alphazero in ALGORITHMS
from league.typecheck import check_field_types

__all__ = [
    "EnvConfig",
    "AlgoConfig",
    "SamplerConfig",
    "LearnerConfig",
    "LeagueConfig",
    "EvalConfig",
    "IterationConfig",
    "StopConfig",
    "RayConfig",
    "CheckpointConfig",
    "LoggingConfig",
    "PolicyConfig",
    "config_dict",
    "RunConfig",
    "parse_run_config",
    "run_config",
]


def config_dict(values: object, what: str = "the config") -> dict[str, Any]:
    """``values`` (``OmegaConf.to_container`` of a ``DictConfig``) as the dict with string keys it is; TypeError otherwise."""
    if not isinstance(values, dict) or not all(isinstance(k, str) for k in values):
        raise TypeError(f"{what} must be a mapping with string keys, got {type(values).__name__}")
    return values


def _is_section(f: dataclasses.Field[Any]) -> bool:
    return f.default_factory is not dataclasses.MISSING and dataclasses.is_dataclass(f.default_factory)


#: Keys that were replaced, and what replaces them (an old config gets this message).
RENAMED_KEYS = {
    "league.snapshot_interval": "league.snapshot_steps (agent steps the learning player samples between "
    "snapshots, for every recipe; e.g. 5 iterations of 4000 env steps are about 12000 agent steps)",
}


def _build(cls: type, values: Any, path: str) -> Any:
    if not isinstance(values, dict):
        raise ValueError(f"config '{path}' must be a mapping, got {values!r}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for key in values:
        full = f"{path}.{key}".lstrip(".")
        if key not in fields and full in RENAMED_KEYS:
            raise ValueError(f"config key '{full}' was replaced by {RENAMED_KEYS[full]}")
    unknown = sorted(set(values) - set(fields))
    if unknown:
        where = f"'{path}'" if path else "the top level"
        raise ValueError(f"unknown config key(s) {[f'{path}.{k}'.lstrip('.') for k in unknown]} at {where}; known: {sorted(fields)}")
    check_field_types(cls, {k: v for k, v in values.items() if not _is_section(fields[k])}, path)
    kwargs = {}
    for name, value in values.items():
        sub = fields[name].default_factory if fields[name].default_factory is not dataclasses.MISSING else None
        if sub is not None and dataclasses.is_dataclass(sub):
            kwargs[name] = _build(sub, value, f"{path}.{name}".lstrip("."))
        else:
            kwargs[name] = value
    return cls(**kwargs)


def parse_run_config(values: dict[str, Any]) -> RunConfig:
    """Validate a resolved config dict: keys, value ranges, env name and algorithm name/params."""
    cfg: RunConfig = _build(RunConfig, values, "")
    if cfg.league.fixed_opponents is None:  # the recipe's default
        cfg.league.fixed_opponents = dict(DEFAULT_FIXED_OPPONENTS) if cfg.league.recipe == "selfplay" else {}
    if cfg.algo.name not in ALGORITHMS:
        raise ValueError(f"unknown algorithm '{cfg.algo.name}' (algo.name); known: {sorted(ALGORITHMS)}")
    from league.envs import make_env
    from league.envs.boards import check_backend, resolve_backend

    check_backend(cfg.env.name, cfg.env.backend, kwargs=cfg.env.kwargs if cfg.env.backend == "cpp" else None)
    try:
        env = make_env(cfg.env.name, **cfg.env.kwargs)
    except ValueError:
        raise
    except TypeError as err:
        raise ValueError(f"env '{cfg.env.name}' rejected env.kwargs {cfg.env.kwargs}: {err}") from err
    from league.run.env_checks import (
        bound_fragment_memory, check_exact_game, check_openings, check_symmetry, fit_time_budget,
        policy_group, resolve_env_groups, sample_while_learning,
    )
    from league.run.env_probe import probe_env

    try:
        specs = {agent: env.spec(agent) for agent in env.possible_agents}
        check_openings(cfg, env)
        step_s, acting = probe_env(cfg, env, specs)  # a kwarg the constructor only stores fails at the first reset or step
        episode_limit = env.episode_limit()
        if resolve_backend(cfg.env.name, cfg.env.backend, cfg.env.kwargs) == "cpp":
            step_s = 0.0  # the probe stepped the PettingZoo game; the samplers step the C++ one, far faster: nothing to size
        check_exact_game(cfg, env)
    finally:
        env.close()

    group_specs = resolve_env_groups(cfg, specs)
    bound_fragment_memory(cfg, specs)
    from league.envs.groups import resolve_groups

    # About the fewest rows an env step gives a learning policy: its group's seats, else the seats
    # acting at once that self-play gives it (at least one: a turn, or its own seat).
    if group_specs:
        rows_per_step = min((len(m) for m in resolve_groups(cfg.env.groups, specs, cfg.env.name).values()), default=1)
    else:
        rows_per_step = max(1, int(acting * min(1.0, cfg.league.self_play_prob)))
    fit_time_budget(cfg, step_s, episode_limit, rows_per_step, sides=max(1, len(group_specs)))  # and fragments (bound_fragment_time)
    sample_while_learning(cfg, step_s, sum(math.prod(s.obs_shape) for s in specs.values()))
    spec = next(iter(specs.values()))
    specs_met = list(group_specs.values()) or [spec]  # what the algorithm's policies will see
    check_symmetry(cfg, specs_met)
    # The algorithm validates its own hyperparameters (unknown keys, ranges), for each spec it meets.
    for group_spec in specs_met:
        _check_algorithm(cfg.algo.name, group_spec, cfg.algo.params)
    policies = {}
    for pid, values in cfg.policies.items():
        pc = _build(PolicyConfig, values, f"policies.{pid}")
        if pc.algo not in ALGORITHMS:
            raise ValueError(f"unknown algorithm '{pc.algo}' (policies.{pid}.algo); known: {sorted(ALGORITHMS)}")
        if pid in ("random",) or "@" in pid:
            raise ValueError(f"policy id '{pid}' is reserved (random, or contains '@' used by snapshots)")
        pc.group = policy_group(pid, pc.group, group_specs)
        _check_algorithm(pc.algo, group_specs[pc.group] if pc.group else spec, pc.params)
        policies[pid] = pc
    cfg.policies = policies
    # An algorithm that acts by search (alphazero) needs an env whose copies hand it game states.
    # So does one whose params ask for a search target (ppo's search_simulations > 0).
    searching = {f"policies.{pid}.algo": pc.algo for pid, pc in policies.items()}
    search_params = {f"policies.{pid}.algo": pc.params for pid, pc in policies.items()}
    if not policies or group_specs:
        searching["algo.name"] = cfg.algo.name
        search_params["algo.name"] = cfg.algo.params
    check_search_algorithms(searching, cfg.env.name, cfg.env.kwargs, cfg.env.backend, search_params)
    if group_specs:
        _fill_group_policies(cfg)
    s = cfg.sampler
    for name in ("num_samplers", "num_envs", "fragment_length"):
        if getattr(s, name) < 1:
            raise ValueError(f"sampler.{name} must be >= 1, got {getattr(s, name)}")
    for key, value, low in (
        ("sampler.num_cpus", s.num_cpus, 0),
        ("sampler.max_consecutive_env_failures", s.max_consecutive_env_failures, 0),
        ("stop.env_steps", cfg.stop.env_steps, 0),
        ("stop.iterations", cfg.stop.iterations, 0),
        ("stop.time_s", cfg.stop.time_s, 0),
        ("stop.win_rate", cfg.stop.win_rate, 0),
        ("eval.interval", cfg.eval.interval, 0),
        ("eval.episodes", cfg.eval.episodes, 1),
        ("eval.env_steps", cfg.eval.env_steps, 0),
        ("iteration.min_env_steps", cfg.iteration.min_env_steps, 0),
        ("iteration.min_time_s", cfg.iteration.min_time_s, 0),
        ("sampler.broadcast_every_env_steps", s.broadcast_every_env_steps, 0),
        ("sampler.max_broadcasts_in_flight", s.max_broadcasts_in_flight, 1),
        ("sampler.matchup_draws", s.matchup_draws, 0),
        ("league.max_snapshots", cfg.league.max_snapshots, 1),
    ):
        if value < low:
            raise ValueError(f"{key} must be >= {low}, got {value}")
    if s.mode not in ("auto", "bulk_sync", "async"):
        raise ValueError(f"sampler.mode must be 'auto', 'bulk_sync' or 'async', got '{s.mode}'")
    from league.sampling.inference import check_inference_config

    check_inference_config(s.inference, s.inference_device, s.inference_num_cpus, s.inference_num_gpus)
    if cfg.league.opponent_sampling not in ("uniform", "pfsp"):
        raise ValueError(f"league.opponent_sampling must be 'uniform' or 'pfsp', got '{cfg.league.opponent_sampling}'")
    if not 0.0 <= cfg.league.self_play_prob <= 1.0:
        raise ValueError(f"league.self_play_prob must lie in [0, 1], got {cfg.league.self_play_prob}")
    _check_fixed_shares(cfg.league)
    _check_league(cfg)
    if isinstance(cfg.ray.address, str) and cfg.ray.address.startswith("ray://"):
        raise ValueError(
            f"ray.address {cfg.ray.address!r}: Ray Client (ray://) is not supported; run league-train on a "
            "cluster node with ray.address=auto (docs/CLUSTER.md)"
        )
    from league.population.scripted import scripted_player_names

    unknown_fixed = sorted(set(cfg.league.fixed_opponents) - set(scripted_player_names()))
    if unknown_fixed:
        raise ValueError(f"league.fixed_opponents has unknown player(s) {unknown_fixed}; known: {scripted_player_names()}")
    if cfg.checkpoint.interval < 0 or cfg.checkpoint.keep_last < 1:
        raise ValueError(
            f"checkpoint.interval must be >= 0 and checkpoint.keep_last >= 1, got {cfg.checkpoint.interval} and {cfg.checkpoint.keep_last}"
        )
    if cfg.resume is not None and (not isinstance(cfg.resume, str) or not cfg.resume):
        raise ValueError(f"resume must be a checkpoint path (a non-empty string) or null, got {cfg.resume!r}")
    from league.run.stops import check_metric_key, check_stop_metric

    check_stop_metric(cfg.stop.metric, cfg.stop.mode)
    if cfg.eval.metric not in ("auto", "win_rate", "return"):
        check_metric_key(cfg.eval.metric, "eval.metric (auto, win_rate, return or a metric key)")
    if cfg.eval.metric_mode not in ("max", "min"):
        raise ValueError(f"eval.metric_mode must be 'max' (higher is better) or 'min' (lower is better), got {cfg.eval.metric_mode!r}")
    if cfg.eval.opponent != "random":
        raise ValueError(f"eval.opponent '{cfg.eval.opponent}' is not supported (known: random)")
    _check_eval(cfg, spec)
    return cfg


def _check_eval(cfg: RunConfig, spec: Any) -> None:
    """``eval.shape`` one of the shapes (and no ``stop.win_rate`` where a declared co-op game's
    sides play together: no win rate is recorded), ``eval.yardstick`` a scripted player that
    plays ``spec``'s agents."""
    from league.run.headline import SHAPES, plays_together

    if cfg.eval.shape not in SHAPES:
        raise ValueError(f"eval.shape must be one of {list(SHAPES)}, got {cfg.eval.shape!r}")
    if cfg.stop.win_rate and plays_together(cfg.eval.shape, len(cfg.env.groups)):
        raise ValueError(
            f"stop.win_rate={cfg.stop.win_rate} can never stop this run: with eval.shape coop its {len(cfg.env.groups)} sides "
            "are evaluated playing together, and nobody wins those games; stop on the team's return instead "
            "(stop.return_mean=<return>)"
        )
    if cfg.eval.yardstick is not None:
        from league.population.scripted import scripted_factory, scripted_members

        if cfg.eval.yardstick == "random":
            raise ValueError("eval.yardstick 'random' is already eval.opponent; name a scripted player (negamax) or null")
        try:
            members = scripted_members(cfg.eval.yardstick)
            for member in members:
                scripted_factory(member, spec, cfg.league.negamax_depth, setting="eval.yardstick")
        except (KeyError, ValueError) as err:
            raise ValueError(f"eval.yardstick '{cfg.eval.yardstick}' cannot play env '{cfg.env.name}': {err}; set eval.yardstick=null") from err
        if len(members) > 1 and cfg.env.groups:
            raise ValueError(
                f"eval.yardstick '{cfg.eval.yardstick}' is a mix of {list(members)}, drawn per seat, which a league of sides "
                f"(env.groups) cannot seat; name one of its players (eval.yardstick={members[0]}) or null"
            )


def _check_algorithm(name: str, spec: Any, params: dict[str, Any]) -> None:
    """Build algorithm ``name`` and its model for agents of ``spec``: its hyperparameters and every
    model option (kind, symmetry, a plug-in's input features) are checked against the env here,
    before Ray starts. The global RNG is left as it was."""
    import torch

    algorithm = ALGORITHMS[name](spec, params)
    with torch.random.fork_rng(devices=[]):
        algorithm.make_model()


def _check_fixed_shares(league: LeagueConfig) -> None:
    """Each fixed member's share a number in [0, 1], and with ``self_play_prob`` at most 1; a
    member of share 0 is dropped (``league.fixed_opponents.random=0``: no random member, as
    ``{}`` cannot say in a file that Hydra merges over the default league's)."""
    shares = league.fixed_opponents or {}
    for pid, share in shares.items():
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0.0 <= share <= 1.0:
            raise ValueError(f"league.fixed_opponents.{pid} must be a share in [0, 1], got {share!r}")
    total = sum(shares.values()) + league.self_play_prob
    if total > 1.0 + 1e-9:
        raise ValueError(
            f"league.fixed_opponents {dict(shares)} plus league.self_play_prob {league.self_play_prob} sum to "
            f"{total:g} > 1; lower them (league.fixed_opponents.<member>=0 drops a member)"
        )
    league.fixed_opponents = {pid: share for pid, share in shares.items() if share > 0}


def _fill_group_policies(cfg: RunConfig) -> None:
    """With groups: one learning policy per group that ``policies`` leaves without one
    (named after the group, learning with ``algo``); the recipe must be selfplay."""
    if cfg.league.recipe != "selfplay":
        raise ValueError(
            f"league.recipe '{cfg.league.recipe}' is not available for an env with agent groups {list(cfg.env.groups)}; "
            "use league=selfplay (each group learns against the other groups' current policies, snapshots and fixed members)"
        )
    played = {pc.group for pc in cfg.policies.values()}
    for g in cfg.env.groups:
        if g not in played:
            if g in cfg.policies or g in ("random",) or "@" in g:
                raise ValueError(f"group '{g}' has no policy, and its name cannot be a policy id; add policies.<id>.group={g}")
            cfg.policies[g] = PolicyConfig(algo=cfg.algo.name, params=dict(cfg.algo.params), group=g)


def _check_league(cfg: RunConfig) -> None:
    """League settings that do not depend on the recipe's roles (those are built later)."""
    league = cfg.league
    from league.leagues.exact import META_STRATEGIES
    from league.population.recipes import RECIPES, build_league

    if league.recipe not in RECIPES:
        raise ValueError(f"unknown league.recipe '{league.recipe}'; known: {list(RECIPES)}")
    if league.meta_game not in ("auto", "exact", "empirical"):
        raise ValueError(f"league.meta_game must be 'auto', 'exact' or 'empirical', got '{league.meta_game}'")
    if league.meta_strategy not in META_STRATEGIES:
        raise ValueError(f"league.meta_strategy must be one of {META_STRATEGIES}, got '{league.meta_strategy}'")
    if league.meta_strategy != "nash" and league.recipe == "selfplay":
        raise ValueError(
            f"league.meta_strategy '{league.meta_strategy}' mixes the frozen players of a coordinated recipe "
            "(fsp, pfsp, psro, alphastar); selfplay has no meta-strategy. Use league=psro, or leave it 'nash'"
        )
    if league.snapshot_steps < (0 if league.recipe == "selfplay" else 1):
        raise ValueError(f"league.snapshot_steps must be >= 1 (>= 0 for selfplay: 0 never snapshots), got {league.snapshot_steps}")
    for key in ("matchup_batch", "eval_episodes_per_pair", "negamax_depth"):
        if getattr(league, key) < 1:
            raise ValueError(f"league.{key} must be >= 1, got {getattr(league, key)}")
    for key in ("eval_pairs", "exploitability_interval"):
        if getattr(league, key) < 0:
            raise ValueError(f"league.{key} must be >= 0, got {getattr(league, key)}")
    if not 0.0 < league.payoff_decay <= 1.0 or league.payoff_min_games < 0:
        raise ValueError(f"league.payoff_decay must be in (0, 1] and payoff_min_games >= 0, got {league.payoff_decay}, {league.payoff_min_games}")
    if league.payoff_decay < 1.0 and league.payoff_min_games >= (1.0 - 1e-9) / (1.0 - league.payoff_decay):
        # A pair's decayed game count never reaches 1 / (1 - decay): no entry would ever count as measured.
        raise ValueError(
            f"league.payoff_min_games {league.payoff_min_games} is never reached with league.payoff_decay "
            f"{league.payoff_decay} (decayed counts stay below {1.0 / (1.0 - league.payoff_decay):.3g}); lower it or raise the decay"
        )
    if league.recipe == "selfplay":
        return
    if league.fixed_opponents:
        raise ValueError(
            f"league.fixed_opponents {dict(league.fixed_opponents)} is a 'selfplay' setting, but the recipe is "
            f"'{league.recipe}'; coordinated recipes take league.scripted members instead. If you wrote "
            f"league.recipe={league.recipe}, choose the recipe's config file with league={league.recipe} (it "
            "leaves the selfplay defaults out), or add league.fixed_opponents={}"
        )
    if cfg.policies and not cfg.env.groups:
        raise ValueError(f"league.recipe '{league.recipe}' trains cfg.algo for every learning player; leave policies empty")
    build_league(league)  # raises naming a bad role, parameter or scripted member
    if league.meta_game_episodes < 0:
        raise ValueError(f"league.meta_game_episodes must be >= 0, got {league.meta_game_episodes}")


#: The selfplay recipe's fixed members when the config names none (``league.fixed_opponents: null``).
DEFAULT_FIXED_OPPONENTS: dict[str, float] = {"random": 0.2}


#: What a Python-built run differs in from ``league-train``'s defaults: samplers in the
#: process (no Ray needed), no console output or TensorBoard, no stop budget (``train``
#: takes one).
PYTHON_DEFAULTS: dict[str, dict[str, Any]] = {
    "sampler": {"remote": False, "num_samplers": 1},
    "logging": {"tensorboard": False, "progress": False},
    "stop": {"env_steps": 0, "time_s": 0},
}


def run_config(
    env: str,
    policies: Mapping[str, Any] | None = None,
    opponents: Mapping[str, float] | None = None,
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    groups: Mapping[str, Any] | None = None,
    preset: str = "auto",
    **sections: Any,
) -> RunConfig:
    """A validated :class:`RunConfig` built in Python: the same object ``league-train``
    builds from Hydra.

    Args:
        env: env name (``connect_four``, a PettingZoo import path...).
        policies: learning policy id -> its algorithm's typed config (``PPOConfig(...)``,
            ``DQNConfig(...)``) or a :class:`PolicyConfig`. None: one ``main`` policy of ``algo``.
        opponents: fixed members and their share of training games, e.g. ``{"random": 0.2}``.
        env_kwargs: the env constructor's keyword arguments (``env.kwargs``).
        groups: the env's sides, ``{"predator": ["adversary_*"], "prey": ["agent_*"]}``
            (``env.groups``); a policy plays the group of its own name, or the one its
            :class:`PolicyConfig` names (``PolicyConfig("ppo", group="predator")``).
        preset: a game's training settings (:mod:`league.presets`): ``auto`` (the env's own, as
            ``league-train`` applies it), ``none``, or a preset's name; applied over the defaults
            and under everything passed here (and :data:`PYTHON_DEFAULTS` but its league).
        sections: any other config section as a dict (``sampler={"num_envs": 16}``, ``seed=3``);
            merged over :data:`PYTHON_DEFAULTS`.
    """
    from league.presets import apply_preset

    by_config = {cls.config_class: name for name, cls in ALGORITHMS.items()}
    values: dict[str, Any] = {key: dict(value) for key, value in PYTHON_DEFAULTS.items()}
    values["env"] = {"name": env, "kwargs": dict(env_kwargs or {}), "groups": {g: list(p) for g, p in (groups or {}).items()}}
    values["verbose"] = False
    values["preset"] = preset
    # What the caller set outranks the preset: its sections' keys, its policies and opponents,
    # and the Python defaults of where and how quietly the run executes.
    touched = {f"{key}.{sub}" for key, section in PYTHON_DEFAULTS.items() if key != "league" for sub in section}
    touched |= {"env.kwargs", "env.groups"}
    if policies:
        touched.add("policies")
    if opponents is not None:
        touched.add("league.fixed_opponents")
    for key, value in sections.items():
        touched |= {f"{key}.{sub}" for sub in value} if isinstance(value, Mapping) else {key}
    for pid, algo_cfg in (policies or {}).items():
        if isinstance(algo_cfg, PolicyConfig):
            values.setdefault("policies", {})[pid] = dataclasses.asdict(algo_cfg)
        elif type(algo_cfg) in by_config:
            values.setdefault("policies", {})[pid] = {"algo": by_config[type(algo_cfg)], "params": dataclasses.asdict(algo_cfg)}
        else:
            known = sorted(c.__name__ for c in by_config)
            raise TypeError(f"policies['{pid}'] is a {type(algo_cfg).__name__}; expected an algorithm config ({known}) or a PolicyConfig")
    if opponents is not None:
        values.setdefault("league", {})["fixed_opponents"] = dict(opponents)
    for key, value in sections.items():
        values[key] = {**values.get(key, {}), **value} if isinstance(value, Mapping) and isinstance(values.get(key), dict) else value
    return parse_run_config(apply_preset(values, touched))
