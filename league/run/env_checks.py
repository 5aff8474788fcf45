"""Checks of a run config against its env, made once by :func:`~league.config.parse_run_config`
(the env is built there already): ``env.groups`` resolved against the env's agents and
specs (explicit, or by agent-id prefix), the group each policy plays, and sampler sizes
bounded by the memory a fragment of observations takes, and exploring starts
(``env.opening_plies``) and a symmetric model (``algo.params.model_kwargs.symmetry``) only
where the game allows them.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from league.run.schema import RunConfig
    from league.envs.base import MultiAgentEnv

__all__ = ["MAX_FRAGMENT_BYTES", "bound_fragment_memory", "resolve_env_groups", "policy_group", "check_openings",
           "check_symmetry", "check_exact_game", "bound_fragment_time", "fit_time_budget",
           "sample_while_learning"]


#: The most observation bytes one sampler's fragment may hold; larger configs are shrunk.
MAX_FRAGMENT_BYTES = 1 << 30
#: With a time budget, one sampler's fragment may take this share of stop.time_s (at least
#: MIN_FRAGMENT_S, at most MAX_FRAGMENT_S): a run's last iteration ends at the deadline only
#: between fragments, so the bound is what a run may overrun by; absolute at long budgets
#: (pistonball over 1800 s: 90 s fragments and batches, 32 s over; 540 s budgets, whose share
#: is 27 s, ended within -8.8 and +6.2 s of it).
FRAGMENT_SHARE, MIN_FRAGMENT_S, MAX_FRAGMENT_S = 0.05, 2.0, 25.0
#: With a time budget, the shares of stop.time_s (at the probe's step time) by which every env
#: copy of a sampler ends its first episode of the env's longest length, the first evaluation
#: round starts (eval.interval iterations), and one evaluation round's env steps are played
#: (a twentieth: at a tenth pistonball's 540 s run spent about a third of its wall time in
#: evaluation rounds, 42k env steps against 119k trained; at a twentieth 14k against 133k, its
#: eight evaluations as clear: benchmarks/README.md, 2026-12-02).
EPISODE_SHARE, FIRST_EVAL_SHARE, EVAL_ROUND_SHARE = 0.2, 0.1, 0.05
#: Algorithms whose training step waits for a batch of train_batch_size fresh rows (DQN's and
#: SAC's train_batch_size is a replay sample).
ROLLOUT_ALGORITHMS = ("ppo", "a2c", "impala", "appo")
#: An env step at least this slow (the probe's), giving the update at least this many observation
#: values (every agent's, summed), makes a run one whose samplers keep sampling while the
#: learner updates (:func:`sample_while_learning`).
SLOW_STEP_S, HEAVY_STEP_VALUES = 0.002, 4096
#: The on-policy algorithms that then train on rows one update old.
ON_POLICY_ALGORITHMS = ("ppo", "a2c")


def fit_time_budget(cfg: RunConfig, step_s: float, episode_limit: int | None, rows_per_step: int = 1, sides: int = 1) -> None:
    """Size a run with ``stop.time_s`` so that its episodes end, and are evaluated, within it, at
    ``step_s`` seconds an env step (the probe's; times 2 for the samplers and the learner sharing
    cores, the samplers stepping side by side on their own cores), with one warning naming every
    change (and :func:`bound_fragment_time`'s own):

    * ``sampler.num_envs`` shrinks until each copy plays an episode of ``episode_limit`` env steps
      (the env's cap, :meth:`~league.envs.base.MultiAgentEnv.episode_limit`; unknown: left) in
      :data:`EPISODE_SHARE` of the budget: a sampler steps its copies in lock-step, so its first
      episodes end after copies x length steps (pistonball's 32 x 125 at about 30 ms a step is
      two minutes);
    * then fragments as :func:`bound_fragment_time` says;
    * ``iteration.min_env_steps`` until ``eval.interval`` iterations take :data:`FIRST_EVAL_SHARE`
      of the budget, in whole rounds of fragments (an iteration ends only between them), and
      ``eval.interval`` where even the shortest iterations (a round, a training step's batch)
      would take longer;
    * ``eval.env_steps`` (0, unbounded, is left) until a round's games, ``eval.env_steps`` for each
      of the ``sides`` learning and each opponent, take :data:`EVAL_ROUND_SHARE` of it, at least
      one whole episode per sampler;
    * ``algo.params.train_batch_size`` of a rollout algorithm (PPO, A2C, IMPALA/APPO; with its
      ``minibatch_size``) until one batch fills as fast as a fragment may take: a training step
      waits for a whole batch, and the run stops only between them (cooperative pong, one paddle
      a group, filled 4000 rows in 30 s and overran a 120 s budget by that).

    ``rows_per_step``: the fewest rows an env step gives a learning policy (its group's seats).
    Fast envs are left as they are: the bounds are far above their sizes."""
    budget = cfg.stop.time_s
    if not budget or step_s <= 0:
        return
    s, per_step = cfg.sampler, 2.0 * step_s
    changes: list[str] = []
    if episode_limit:
        copies = max(1, int(EPISODE_SHARE * budget // (episode_limit * per_step)))
        if copies < s.num_envs:
            changes.append(f"sampler.num_envs {s.num_envs} -> {copies} (an episode lasts up to {episode_limit} steps)")
            s.num_envs = copies
    bound_fragment_time(cfg, step_s)
    side_by_side = min(s.num_samplers, os.cpu_count() or 1) if s.remote else 1
    rate = side_by_side / per_step  # env steps a second, about
    params = cfg.algo.params
    batch = params.get("train_batch_size")
    batch_steps = 0  # env steps a training step waits for: a whole batch of the policy's rows
    if cfg.algo.name in ROLLOUT_ALGORITHMS and isinstance(batch, int) and not isinstance(batch, bool):
        rows = max(1, int(fragment_bound_s(budget) * rate) * max(1, rows_per_step))
        if rows < batch:
            changes.append(f"algo.params.train_batch_size {batch} -> {rows}")
            params["train_batch_size"] = batch = rows
            minibatch = params.get("minibatch_size")
            if isinstance(minibatch, int) and not isinstance(minibatch, bool) and minibatch > rows:
                changes.append(f"algo.params.minibatch_size {minibatch} -> {rows}")
                params["minibatch_size"] = rows
        batch_steps = -(-batch // max(1, rows_per_step))
    if cfg.eval.interval:
        round_of_fragments = s.num_samplers * s.num_envs * s.fragment_length
        first_eval = FIRST_EVAL_SHARE * budget * rate  # env steps by the first evaluation
        steps = max(1, int(first_eval / cfg.eval.interval) // round_of_fragments) * round_of_fragments
        if steps < cfg.iteration.min_env_steps:
            changes.append(f"iteration.min_env_steps {cfg.iteration.min_env_steps} -> {steps} (eval.interval={cfg.eval.interval})")
            cfg.iteration.min_env_steps = steps
        # An iteration is at least a round of fragments and a training step's batch: where even
        # that many iterations are past the first evaluation's share, evaluate more often.
        iteration = max(cfg.iteration.min_env_steps, round_of_fragments, -(-batch_steps // round_of_fragments) * round_of_fragments)
        interval = max(1, int(first_eval // iteration))
        if interval < cfg.eval.interval:
            changes.append(f"eval.interval {cfg.eval.interval} -> {interval}")
            cfg.eval.interval = interval
        # A round plays eval.env_steps per learning side and opponent (random, and the yardstick).
        turns = max(1, sides) * (1 + (cfg.eval.yardstick is not None))
        round_steps = max(1, int(EVAL_ROUND_SHARE * budget * rate / turns))
        if episode_limit:
            round_steps = max(round_steps, episode_limit * max(1, s.num_samplers))
        if round_steps < cfg.eval.env_steps:  # 0: unbounded by choice (rounds still end with the time budget)
            changes.append(f"eval.env_steps {cfg.eval.env_steps} -> {round_steps}")
            cfg.eval.env_steps = round_steps
    if changes:
        warnings.warn(
            f"{'; '.join(changes)}: env '{cfg.env.name}' takes about {1000 * step_s:.1f} ms a step (the config check's probe), "
            f"so with stop.time_s={budget:g} its episodes would not end, or not be evaluated, in time; set these keys "
            "yourself to choose",
            stacklevel=3,
        )


def sample_while_learning(cfg: RunConfig, step_s: float, step_values: int) -> None:
    """On an env whose step takes at least :data:`SLOW_STEP_S` (the probe's ``step_s``) and gives
    the update at least :data:`HEAVY_STEP_VALUES` observation values (``step_values``: every
    agent's observation size, summed; image frames), let the samplers keep sampling while the
    learner updates: ``sampler.mode`` ``auto`` becomes ``async`` and an on-policy ``algo`` (PPO,
    A2C) trains on rows up to one update old (``max_policy_lag`` 1: PPO's ratio is then taken
    against the logged behaviour policy, as Sample Factory's asynchronous PPO does), with a
    warning naming the change.

    Bulk-synchronous PPO leaves the env idle through every update; where both the env and the
    update are slow that is throughput lost. On two cores, 120 s runs of the shipped files,
    against the raw single-process env speed measured beside each (benchmarks/README.md,
    bench_envs_matrix.py): cooperative_pong (48x48x2 frames, 3.8 ms a step) 0.73x -> 1.08x and
    0.89x, pistonball (20 such frames, 22-36 ms) 0.67x -> 0.84x and 0.71x; pursuit (8 views of
    7x7x3, 4 ms) 1.10x -> 1.07x and 0.92x, so small observations are left bulk-synchronous.
    Left alone too: ``sampler.mode=bulk_sync`` (updates stay on-policy), in-process samplers,
    runs with per-policy algorithms (``policies``), and fast envs (the C++ boards and OpenSpiel
    games step in microseconds: their runs are learner-bound). Where ``sampler.mode=async`` was
    chosen (pong's env file: its update was 15% of a run), an on-policy ``max_policy_lag`` 0
    becomes 1 on any env, with a warning: at 0 the rows sampled during an update, 45% of
    pong's, would be dropped."""
    params = cfg.algo.params
    if cfg.policies or cfg.algo.name not in ON_POLICY_ALGORITHMS or params.get("max_policy_lag", 0) != 0 or not cfg.sampler.remote:
        return
    if cfg.sampler.mode == "async":  # chosen (env=pong's file): at lag 0 the rows sampled during an update would be dropped
        params["max_policy_lag"] = 1
        warnings.warn(
            f"algo.params.max_policy_lag 0 -> 1: with sampler.mode=async the samplers sample while {cfg.algo.name} updates, "
            "and at 0 every row sampled meanwhile would be dropped (45% of env=pong's); set sampler.mode=bulk_sync to train on-policy",
            stacklevel=3,
        )
        return
    if step_s < SLOW_STEP_S or step_values < HEAVY_STEP_VALUES or cfg.sampler.mode != "auto":
        return
    cfg.sampler.mode, params["max_policy_lag"] = "async", 1
    warnings.warn(
        f"sampler.mode auto -> async, algo.params.max_policy_lag 0 -> 1: env '{cfg.env.name}' takes about "
        f"{1000 * step_s:.1f} ms a step (the config check's probe) and gives the update {step_values} observation values "
        "a step, so the samplers keep sampling while "
        f"{cfg.algo.name} updates, on rows up to one update old; set sampler.mode=bulk_sync to train on-policy",
        stacklevel=3,
    )


def fragment_bound_s(budget_s: float) -> float:
    """The seconds one sampler's fragment (and a rollout algorithm's batch) may take under a time
    budget of ``budget_s``: :data:`FRAGMENT_SHARE` of it, within [MIN_FRAGMENT_S, MAX_FRAGMENT_S]."""
    return min(MAX_FRAGMENT_S, max(MIN_FRAGMENT_S, FRAGMENT_SHARE * budget_s))


def bound_fragment_time(cfg: RunConfig, step_s: float) -> None:
    """Shrink ``sampler.fragment_length`` (then ``num_envs``) until one sampler's fragment, at
    ``step_s`` seconds an env step (the probe's, times 2 for the samplers and the learner sharing
    cores), fits in :func:`fragment_bound_s` of ``stop.time_s``, with a warning naming the change:
    a ``sample()`` call cannot stop midway, so on a slow env (pistonball: 32 copies x 64 steps at
    about 30 ms a step is a minute) one fragment overran a 45 s budget by 90 s. Called by
    :func:`fit_time_budget`, after it shrank ``num_envs`` for episodes to end."""
    s, budget = cfg.sampler, cfg.stop.time_s
    if not budget:
        return
    bound, per_step = fragment_bound_s(budget), 2.0 * step_s
    if s.num_envs * s.fragment_length * per_step <= bound:
        return
    before = (s.num_envs, s.fragment_length)
    s.fragment_length = max(1, int(bound // (s.num_envs * per_step)))
    s.num_envs = max(1, min(s.num_envs, int(bound // (s.fragment_length * per_step))))
    warnings.warn(
        f"sampler.num_envs x fragment_length {before[0]} x {before[1]} -> {s.num_envs} x {s.fragment_length}: env "
        f"'{cfg.env.name}' takes about {1000 * step_s:.1f} ms a step (the config check's probe), so one fragment would take "
        f"about {before[0] * before[1] * per_step:.0f} s, past {bound:.1f} s of stop.time_s={budget:g}, and a run ends only "
        "between fragments; set sampler.fragment_length and sampler.num_envs yourself to choose",
        stacklevel=4,
    )


def bound_fragment_memory(cfg: RunConfig, specs: Mapping[str, Any]) -> None:
    """Shrink ``sampler.num_envs`` (then ``fragment_length``) until a fragment's observations
    (env copies x steps x agents x observation size, counted as float32: byte frames,
    :func:`league.envs.images.keeps_bytes`, take a quarter, which the specs do not say) fit in
    :data:`MAX_FRAGMENT_BYTES`, with a warning naming the change: image envs (pistonball's 20
    agents see 457x120x3 pixels each) would otherwise allocate tens of GB per sampler."""
    s = cfg.sampler
    per_step = sum(4 * math.prod(spec.obs_shape) for spec in specs.values())
    if s.num_envs * s.fragment_length * per_step <= MAX_FRAGMENT_BYTES:
        return
    before = (s.num_envs, s.fragment_length)
    s.num_envs = max(1, min(s.num_envs, MAX_FRAGMENT_BYTES // (s.fragment_length * per_step)))
    s.fragment_length = max(1, min(s.fragment_length, MAX_FRAGMENT_BYTES // (s.num_envs * per_step)))
    warnings.warn(
        f"env '{cfg.env.name}': {len(specs)} agents observe {per_step / 2**20:.2f} MiB per env step, so sampler.num_envs "
        f"{before[0]} x sampler.fragment_length {before[1]} would hold {before[0] * before[1] * per_step / 2**30:.1f} GiB "
        f"per sampler; using num_envs {s.num_envs}, fragment_length {s.fragment_length}. Shrink the observations "
        "(+env.kwargs.preprocess={grayscale: true, resize: [84, 84]}) or set both sizes yourself",
        stacklevel=2,
    )


def resolve_env_groups(cfg: RunConfig, specs: Mapping[str, Any]) -> dict[str, Any]:
    """``env.groups`` checked against the env's agents (explicit, or by agent-id prefix when the
    agents' spaces differ), written back as explicit patterns; returns group -> spec ({} without groups)."""
    from league.envs.groups import auto_groups, resolve_groups

    patterns = cfg.env.groups
    if not patterns:
        patterns = auto_groups(specs) or {}
        if not patterns and len(set(specs.values())) > 1:
            detail = ", ".join(f"{a}: obs {s.obs_shape}, {s.num_actions} actions" for a, s in specs.items())
            raise ValueError(
                f"env '{cfg.env.name}' gives its agents different spaces ({detail}), and their ids do not split "
                "into sides of identical agents; declare the sides with env.groups, e.g. "
                "'+env.groups={side_a: [agent_a*], side_b: [agent_b*]}'"
            )
    if not patterns:
        return {}
    groups = resolve_groups(patterns, specs, cfg.env.name)
    cfg.env.groups = {g: list(p) if not isinstance(p, str) else [p] for g, p in patterns.items()}
    return {g: specs[members[0]] for g, members in groups.items()}


def policy_group(pid: str, group: str | None, group_specs: Mapping[str, Any]) -> str | None:
    """The group policy ``pid`` plays: its ``group`` key, else the group named ``pid``, else the only group."""
    if not group_specs:
        if group is not None:
            raise ValueError(f"policies.{pid}.group is '{group}', but the env has no groups (env.groups is empty)")
        return None
    if group is None:
        group = pid if pid in group_specs else next(iter(group_specs)) if len(group_specs) == 1 else None
    if group not in group_specs:
        raise ValueError(
            f"policies.{pid} plays no group of env.groups {list(group_specs)}"
            + (f" (its group '{group}' is unknown)" if group else f"; set policies.{pid}.group to one of them")
        )
    return group


def check_openings(cfg: RunConfig, env: MultiAgentEnv) -> None:
    """Check ``env.opening_plies`` against the env: ValueError when negative or past a C++
    board game's bound; on an env that is not a turn-based game of two or more players
    (single-agent, simultaneous moves, Box actions) a warning, and it is set to 0."""
    from league.envs.boards import BOARD_GAMES, resolve_backend
    from league.envs.openings import RandomOpenings

    plies = cfg.env.opening_plies
    if isinstance(plies, bool) or not isinstance(plies, int) or plies < 0:
        raise ValueError(f"env.opening_plies must be an int >= 0, got {plies!r}")
    if plies == 0:
        return
    if resolve_backend(cfg.env.name, cfg.env.backend, dict(cfg.env.kwargs)) == "cpp":
        bound = BOARD_GAMES[cfg.env.name].core.max_opening_plies
        if plies > bound:
            why = "a longer random opening could decide the game before either player acts"
            raise ValueError(f"env.opening_plies={plies} is over {cfg.env.name}'s bound of {bound} ({why})")
        return
    reason = "it has one agent" if len(env.possible_agents) < 2 else None
    if reason is None:
        try:
            RandomOpenings(env, plies, seed=0).reset(seed=cfg.seed)
        except ValueError as err:
            reason = str(err).split(";")[0]
    if reason:
        warnings.warn(
            f"env.opening_plies={plies} ignored for env {cfg.env.name!r}: exploring starts need a turn-based game of "
            f"two or more players with Discrete actions ({reason})",
            stacklevel=2,
        )
        cfg.env.opening_plies = 0


def _unfit(cfg: RunConfig, setting: str, specs: Iterable[Any], check: Callable[[Any], object]) -> bool:
    """Whether ``check(spec)`` refuses some spec in ``specs``; if so, warn that ``setting`` is
    ignored for this env, with the check's reason."""
    for spec in specs:
        try:
            check(spec)
        except ValueError as err:
            warnings.warn(f"{setting} ignored for env {cfg.env.name!r}: {err}", stacklevel=3)
            return True
    return False


def check_symmetry(cfg: RunConfig, specs: Iterable[Any]) -> None:
    """Keep ``algo.params.model_kwargs.symmetry`` only where every spec in ``specs`` fits its group.

    On observations the group does not act on (a flat vector, a board of another shape) it is
    dropped with a warning naming the env and why, as ``env.opening_plies`` is (a symmetry set
    for every env of a sweep). An unknown group name stays an error (the model refuses it by name)."""
    from league.algos.symmetry import SYMMETRIES, symmetry_group

    kwargs = cfg.algo.params.get("model_kwargs") or {}
    kind = kwargs.get("symmetry") if isinstance(kwargs, Mapping) else None
    if isinstance(kind, str) and kind in SYMMETRIES and _unfit(cfg, f"algo.params.model_kwargs.symmetry={kind}", specs,
                                     lambda spec: symmetry_group(kind, spec.obs_shape, spec.num_actions)):
        cfg.algo.params["model_kwargs"] = {k: v for k, v in kwargs.items() if k != "symmetry"}


def check_exact_game(cfg: RunConfig, env: MultiAgentEnv) -> None:
    """What the league's exact path needs (:class:`~league.leagues.exact.ExactMetaGame`), checked
    before Ray starts: ``league.exploitability_interval``, a coordinated recipe's
    ``league.meta_game: exact`` and a ``league.meta_strategy`` other than nash need an OpenSpiel
    game (the exact evaluator walks its tree) or, for the selfplay recipe's exploitability, a
    measure the game's plug-in registered (built here, so that it fails before Ray), and an env
    that would truncate episodes the game can play out (``env.kwargs.max_episode_steps``) would
    be scored as a different game."""
    from league.envs.registry import openspiel_game_of
    from league.leagues.exact import META_STRATEGIES

    league, coordinated = cfg.league, cfg.league.recipe != "selfplay"
    wanted = [
        setting for setting, on in (
            (f"league.exploitability_interval={league.exploitability_interval}", league.exploitability_interval > 0),
            ("league.meta_game=exact", coordinated and league.meta_game == "exact"),
            (f"league.meta_strategy={league.meta_strategy}", coordinated and league.meta_strategy in set(META_STRATEGIES) - {"nash"}),
        ) if on
    ]  # fmt: skip
    game = openspiel_game_of(cfg.env.name)
    if game is None and league.exploitability_interval and not coordinated:  # (then it is all that is wanted)
        from league.population.exploitability_measures import EXPLOITABILITY_MEASURES

        if cfg.env.name in EXPLOITABILITY_MEASURES:  # the game's plug-in measures it; built now so that it fails here
            EXPLOITABILITY_MEASURES.get(cfg.env.name, "env.name")(env)
            return
    if wanted and game is None:
        raise ValueError(
            f"{' and '.join(wanted)} scores players exactly on an OpenSpiel game's tree (kuhn_poker, leduc_poker, "
            f"openspiel:<game>) or, for the selfplay recipe's exploitability, through the game's plug-in (rps), and env "
            f"'{cfg.env.name}' has neither; use league.meta_game=empirical (payoffs from "
            "played games), leave league.meta_strategy=nash and league.exploitability_interval=0"
        )
    if game is None or not (league.exploitability_interval or (coordinated and league.meta_game != "empirical")):
        return
    from league.envs.openspiel_env import OpenSpielEnv

    if isinstance(env, OpenSpielEnv) and env.max_episode_steps is not None:
        longest = env.game.max_game_length()
        if env.max_episode_steps < longest:
            raise ValueError(
                f"env.kwargs.max_episode_steps={env.max_episode_steps} truncates '{cfg.env.name}' episodes, but its game "
                f"lasts up to {longest} decisions: the exact meta-game and exploitability would score a different game; "
                f"raise it to {longest}, drop it, or use league.meta_game=empirical and league.exploitability_interval=0"
            )
