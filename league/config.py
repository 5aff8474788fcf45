"""The run configuration: typed sections, validated once, before Ray starts.

Hydra composes ``configs/``; :func:`parse_run_config` turns the resolved plain dict into
these dataclasses and raises ``ValueError`` naming any unknown key (with its full path),
unknown env or unknown algorithm. Configs cross actor boundaries as these plain objects,
never as live ``DictConfig`` s.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from collections.abc import Mapping
from typing import Any

from league.algos import ALGORITHMS
from league.learn.placement import LearnerConfig  # the learner: section, defined (and validated) by the learn layer
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
    "RunConfig",
    "parse_run_config",
    "run_config",
]


@dataclass
class EnvConfig:
    """Which environment: a registered short name or a PettingZoo/Gymnasium import path."""

    name: str = "connect_four"
    kwargs: dict[str, Any] = field(default_factory=dict)
    # Sides of the game: group -> agent-id patterns (fnmatch), e.g. {predator: [adversary_*],
    # prey: [agent_*]}. Every seat of a group is played by one policy (parameter sharing), each
    # group learns with its own policy and snapshots against the other groups' pools; one group
    # of every agent ({team: ["*"]}) is a co-op team. Empty: one symmetric side (self-play),
    # or, when agents differ in spaces, groups by agent-id prefix (see league.envs.groups).
    groups: dict[str, list[str]] = field(default_factory=dict)
    # Who steps the game: "pettingzoo" (the adapters, any env), "cpp" (tictactoe and
    # connect_four in the C++ core, batched: league.envs.boards; same rules and observations)
    # or "auto" (cpp where the env has it and takes no kwargs).
    backend: str = "auto"
    # Exploring starts (league.envs.openings): each training episode of a turn-based game of
    # two or more players opens with 0..opening_plies uniformly random legal moves nobody learns
    # from, so the league keeps meeting openings self-play stops playing (docs/STRENGTH.md).
    # Evaluation plays whole games. Ignored, with a warning, on other envs.
    opening_plies: int = 0


@dataclass
class AlgoConfig:
    """Which algorithm, and its hyperparameters (checked against the algorithm's own config)."""

    name: str = "ppo"
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class SamplerConfig:
    """Sampler actors: how many, env copies each, steps per env copy per fragment."""

    num_samplers: int = 2
    num_envs: int = 32
    fragment_length: int = 64
    # ParallelRollouts mode: bulk_sync, async, or auto: bulk_sync when a learning policy is
    # on-policy (max_policy_lag 0: PPO, A2C by default; rows sampled while it updated would be
    # dropped), async otherwise (IMPALA, APPO, DQN: samplers keep sampling while it trains).
    mode: str = "auto"
    num_cpus: float = 1.0  # Ray CPUs reserved per sampler actor
    # False: samplers run inside the driver process, one after the other (debugging, tests,
    # exactly reproducible runs); with a local learner too, Ray is then never started.
    remote: bool = True
    max_consecutive_env_failures: int = 5
    # After an update, a policy's weights go to the samplers only once this many env steps
    # were sampled since its previous broadcast: 1 (default) sends at most once per rollout
    # fragment, however many gradient steps an off-policy learner made in between (the
    # samplers only read weights when they start a fragment); 0 sends after every update.
    broadcast_every_env_steps: int = 1
    # Ray samplers: at most this many weight broadcasts of a policy may be in flight to a
    # sampler; a broadcast due while the previous ones are unapplied is coalesced into the next.
    max_broadcasts_in_flight: int = 1
    # Training matchups drawn in blocks (league.sampling.matchups.BlockedMatchups): 0, each
    # episode draws its own; k > 0, every num_envs episodes of a sampler play k matchups drawn
    # for them. The same distribution per episode, and a sampler runs a forward pass per
    # policy in play per step: about 2k of them instead of one per league member.
    matchup_draws: int = 0


@dataclass
class LeagueConfig:
    """Who plays whom: a recipe (see :mod:`league.population.recipes`) and its settings.

    ``selfplay`` uses the first block (pool size, shares); every other recipe runs on a
    league coordinator and uses the second. Both take a snapshot of a learning player every
    ``snapshot_steps`` of its sampled agent steps (one clock for every algorithm).
    """

    recipe: str = "selfplay"  # selfplay | fsp | pfsp | psro | alphastar
    snapshot_steps: int = 12_000  # agent steps a learning player samples between snapshots
    # selfplay: one learning policy, its snapshots and fixed members.
    max_snapshots: int = 20  # oldest dropped beyond this
    self_play_prob: float = 0.2  # probability of playing the current policy itself
    opponent_sampling: str = "uniform"  # uniform | pfsp (over snapshots)
    # Fixed league members and their constant share of training games, e.g. {random: 0.1}.
    fixed_opponents: dict[str, float] = field(default_factory=lambda: {"random": 0.2})
    # Coordinated recipes (fsp, pfsp, psro, alphastar).
    num_main_agents: int = 1
    num_main_exploiters: int = 0  # alphastar only
    num_league_exploiters: int = 0  # alphastar only
    scripted: list[str] = field(default_factory=list)  # scripted members: random, negamax, minimax
    negamax_depth: int = 2  # search depth of a scripted negamax member
    roles: dict[str, dict[str, Any]] = field(default_factory=dict)  # per-role recipe parameters
    payoff_decay: float = 0.99
    payoff_min_games: float = 5.0
    eval_pairs: int = 4  # league-scheduled evaluation pairs per evaluation round (eval.interval)
    eval_episodes_per_pair: int = 8
    exploitability_interval: int = 0  # iterations between exact exploitability (OpenSpiel games)
    meta_game: str = "auto"  # exact | empirical | auto (exact on OpenSpiel games)
    # The mixture of frozen players reported as the league's meta-strategy (OpenSpiel games):
    # nash | least_exploitable (league.population.min_exploitability).
    meta_strategy: str = "nash"
    matchup_batch: int = 64  # matchups a sampler fetches from the coordinator at a time
    meta_game_episodes: int = 8  # eval episodes per payoff pair the psro/pfsp solvers still lack, every eval round (0: none)


@dataclass
class IterationConfig:
    """What one training iteration is, the same for every algorithm and every mix.

    RLlib Flow's reporting semantics: an iteration runs the plan until at least
    ``min_env_steps`` env steps were sampled *and* ``min_time_s`` seconds passed (at least
    one training step), however many gradient steps that is: one PPO update of a 4000-row
    batch, or hundreds of DQN steps. A metrics row, the league's bookkeeping and the
    evaluation and checkpoint intervals count these iterations, never plan items.
    """

    min_env_steps: int = 4000
    min_time_s: float = 0.0


@dataclass
class EvalConfig:
    """Evaluation episodes against a fixed opponent (separate from training)."""

    interval: int = 5  # training iterations (see IterationConfig); 0 disables
    episodes: int = 100  # per learning policy, split between the samplers
    # Each learning policy's evaluation games end after this many env steps (all env copies
    # together, split between the samplers; 0: off), whichever of this and `episodes` comes
    # first: episodes still in progress then are dropped, as when stop.time_s ends a round.
    # Evaluation measured in env steps, for envs whose episodes are long or vary in length.
    env_steps: int = 0
    opponent: str = "random"
    # What the final line reports and sweeps optimise: win_rate (against the opponent), return
    # (mean episode return in those games), auto: return for single-agent envs and envs whose
    # agents form one group (a co-op team), win_rate otherwise; or any metric key of the
    # metrics rows (as stop.metric: eval_return_median, main/entropy; league.run.stops).
    metric: str = "auto"


@dataclass
class StopConfig:
    """When the run ends (whichever comes first; 0 disables a criterion)."""

    env_steps: int = 0
    iterations: int = 0
    time_s: float = 540.0
    win_rate: float = 0.0  # stop once eval win rate >= this (0: off)
    # Stop once every learning policy's evaluation mean episode return is >= this (null: off);
    # the criterion for co-op and single-agent envs (cartpole: 475), where nobody wins.
    return_mean: float | None = None
    # Stop once any figure of the metrics rows reaches its threshold: {metric key: threshold},
    # e.g. {eval_return_median: 200}, {main/episode_return_mean: 0.5}, {eval_return_mean/prey: -5}
    # (keys: league.run.stops; a per-policy figure counts once every policy's value reaches it).
    metric: dict[str, float] = field(default_factory=dict)
    mode: str = "max"  # for stop.metric: max stops at >= the threshold, min at <= (a loss)


@dataclass
class RayConfig:
    """Ray: local by default (``address: null``), or ``auto`` / ``ray://...`` for a cluster."""

    address: str | None = None
    num_cpus: int | None = None
    include_dashboard: bool = False
    # A local Ray (address null) listens on 127.0.0.1 only; false: Ray's default (every interface).
    loopback_only: bool = True


@dataclass
class CheckpointConfig:
    """Periodic checkpoints (a final one is always written when the run ends)."""

    interval: int = 20  # training iterations (see IterationConfig) between checkpoints; 0: only the final one
    keep_last: int = 3  # periodic checkpoints kept (older ones deleted); the final one is extra
    # Rebuild the samplers after each periodic checkpoint exactly as a resume from it would:
    # games in progress are dropped, and a resumed run then repeats the uninterrupted one
    # (single sampler, bulk_sync, deterministic algorithm).
    exact_resume: bool = False


@dataclass
class LoggingConfig:
    """Where per-iteration metrics go besides ``metrics.jsonl`` (always written)."""

    tensorboard: bool = True  # event files under <run dir>/tensorboard
    # A live display on a terminal (rich); plain lines when stdout is not a TTY.
    # Both need ``verbose: true``.
    progress: bool = True


@dataclass
class PolicyConfig:
    """One learning policy of a multi-policy run: its algorithm and hyperparameters."""

    algo: str = "ppo"
    params: dict[str, Any] = field(default_factory=dict)
    # The env.groups group this policy plays (default: the group of the same name, or the only one).
    group: str | None = None


@dataclass
class RunConfig:
    """A whole training run.

    With ``policies`` empty, one policy ``main`` uses ``algo`` and learns by self-play
    against snapshots of itself. With ``policies`` set, every named policy learns with its
    own algorithm; they play each other (seats drawn uniformly per episode) and the plan
    is composed from their fragments.
    """

    env: EnvConfig = field(default_factory=EnvConfig)
    algo: AlgoConfig = field(default_factory=AlgoConfig)
    policies: dict[str, Any] = field(default_factory=dict)
    sampler: SamplerConfig = field(default_factory=SamplerConfig)
    learner: LearnerConfig = field(default_factory=LearnerConfig)
    league: LeagueConfig = field(default_factory=LeagueConfig)
    iteration: IterationConfig = field(default_factory=IterationConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    stop: StopConfig = field(default_factory=StopConfig)
    ray: RayConfig = field(default_factory=RayConfig)
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig)
    logging: LoggingConfig = field(default_factory=LoggingConfig)
    seed: int = 0
    checkpoint_dir: str = "checkpoints"
    # A checkpoint directory (or a run / checkpoints directory: its latest checkpoint) to
    # continue from; env, policies, algorithms and model shapes must match this config.
    resume: str | None = None
    verbose: bool = True
    # A game's training settings (league.presets): auto, the env's own preset if a game plug-in
    # has one; none; or a preset's name. Applied before validation (apply_preset), under the
    # user's own settings; after that, the name of the preset applied (or none).
    preset: str = "auto"


def _is_section(f: dataclasses.Field) -> bool:
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
    if cfg.algo.name not in ALGORITHMS:
        raise ValueError(f"unknown algorithm '{cfg.algo.name}' (algo.name); known: {sorted(ALGORITHMS)}")
    from league.envs import make_env
    from league.envs.boards import check_backend

    check_backend(cfg.env.name, cfg.env.backend, kwargs=cfg.env.kwargs if cfg.env.backend == "cpp" else None)
    try:
        env = make_env(cfg.env.name, **cfg.env.kwargs)
    except ValueError:
        raise
    except TypeError as err:
        raise ValueError(f"env '{cfg.env.name}' rejected env.kwargs {cfg.env.kwargs}: {err}") from err
    from league.run.env_checks import bound_fragment_memory, check_openings, check_symmetry, policy_group, resolve_env_groups

    try:
        specs = {agent: env.spec(agent) for agent in env.possible_agents}
        check_openings(cfg, env)
    finally:
        env.close()

    group_specs = resolve_env_groups(cfg, specs)
    bound_fragment_memory(cfg, specs)
    spec = next(iter(specs.values()))
    specs_met = list(group_specs.values()) or [spec]  # what the algorithm's policies will see
    check_symmetry(cfg, specs_met)
    # The algorithm validates its own hyperparameters (unknown keys, ranges), for each spec it meets.
    for group_spec in specs_met:
        ALGORITHMS[cfg.algo.name](group_spec, cfg.algo.params)
    policies = {}
    for pid, values in cfg.policies.items():
        pc = _build(PolicyConfig, values, f"policies.{pid}")
        if pc.algo not in ALGORITHMS:
            raise ValueError(f"unknown algorithm '{pc.algo}' (policies.{pid}.algo); known: {sorted(ALGORITHMS)}")
        if pid in ("random",) or "@" in pid:
            raise ValueError(f"policy id '{pid}' is reserved (random, or contains '@' used by snapshots)")
        pc.group = policy_group(pid, pc.group, group_specs)
        ALGORITHMS[pc.algo](group_specs[pc.group] if pc.group else spec, pc.params)
        policies[pid] = pc
    cfg.policies = policies
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
    if cfg.league.opponent_sampling not in ("uniform", "pfsp"):
        raise ValueError(f"league.opponent_sampling must be 'uniform' or 'pfsp', got '{cfg.league.opponent_sampling}'")
    if not 0.0 <= cfg.league.self_play_prob <= 1.0:
        raise ValueError(f"league.self_play_prob must lie in [0, 1], got {cfg.league.self_play_prob}")
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
    if sum(cfg.league.fixed_opponents.values()) + cfg.league.self_play_prob > 1.0 + 1e-9:
        raise ValueError("league.fixed_opponents shares plus league.self_play_prob must sum to <= 1")
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
    if cfg.eval.opponent != "random":
        raise ValueError(f"eval.opponent '{cfg.eval.opponent}' is not supported (known: random)")
    return cfg


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


#: What a Python-built run differs in from ``league-train``'s defaults: samplers in the
#: process (no Ray needed), no console output or TensorBoard, no stop budget (``train``
#: takes one).
PYTHON_DEFAULTS: dict[str, dict[str, Any]] = {
    "sampler": {"remote": False, "num_samplers": 1},
    "logging": {"tensorboard": False, "progress": False},
    "stop": {"env_steps": 0, "time_s": 0},
    "league": {"fixed_opponents": {}},
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
        values["league"]["fixed_opponents"] = dict(opponents)
    for key, value in sections.items():
        values[key] = {**values.get(key, {}), **value} if isinstance(value, Mapping) and isinstance(values.get(key), dict) else value
    return parse_run_config(apply_preset(values, touched))
