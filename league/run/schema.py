"""The run configuration's sections: typed dataclasses whose defaults are the one source of
every default (``configs/*.yaml`` lists the same values, checked by tests/test_presets.py).

:mod:`league.config` validates a plain dict into them (:func:`~league.config.parse_run_config`)
and re-exports them; the checks of a config against its env (:mod:`league.run.env_checks`)
read them from here, so neither module imports the other's importer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from league.learn.placement import LearnerConfig  # the learner: section, defined (and validated) by the learn layer

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
    # Where the samplers' forward passes run (league.sampling.inference, issue 36): local, each
    # sampler its own CPU copies of every policy it plays; server, one inference server (a Ray
    # actor when samplers are) holds each policy once on inference_device (cpu, cuda, or auto:
    # cuda when there is one) and answers every sampler; weights go to it once, not to each sampler.
    inference: str = "local"
    inference_device: str = "auto"
    inference_num_cpus: float = 0.0  # Ray CPUs reserved for the server actor (it mostly waits on samplers)
    inference_num_gpus: float = 0.0  # Ray GPU share reserved for it (0: unreserved; Ray still lets it see the GPU)


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
    # None (the default): the recipe's own, {random: 0.2} for selfplay and none for the
    # coordinated recipes (they take league.scripted members instead); resolved by parse_run_config.
    fixed_opponents: dict[str, float] | None = None
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

    interval: int = 5  # training iterations (see IterationConfig); 0 disables; under stop.time_s a round also waits while evaluation games are past run.state.EVAL_STEP_SHARE of all env steps
    episodes: int = 100  # per learning policy, split between the samplers
    # Each learning policy's evaluation games end after this many env steps (all env copies
    # together, split between the samplers; 0: off), whichever of this and `episodes` comes
    # first: episodes still in progress then are dropped, as when stop.time_s ends a round.
    # Evaluation measured in env steps, for envs whose episodes are long or vary in length: by
    # default a round of 100 board games (a few thousand steps) plays whole, and one of Atari
    # games (thousands of steps each) asks only for as many episodes as half the bound finishes
    # at the training episodes' length, on that many env copies (league.run.evaluation).
    env_steps: int = 20_000
    opponent: str = "random"
    # A scripted player (league.population.scripted.SCRIPTED_PLAYERS, at league.negamax_depth)
    # every learning policy also plays each round: the win-rate headline's opponent, where a
    # game's preset declares one (connect four: negamax), or a mix of them (SCRIPTED_MIXES: one
    # drawn per seat and game; limit Hold'em: holdem_styles). null: none (the opponent above).
    # Its games open as training's do (env.opening_plies random moves): a deterministic player
    # and a greedy policy would otherwise replay one game from each seat, a headline of 0, 0.5 or 1.
    yardstick: str | None = None
    # The game's shape (league.run.headline): auto (from the agents, env.groups and the rewards
    # paid: every agent alike is coop, returns summing to a constant zero_sum, else
    # general_sum), or single_agent, team, coop, zero_sum, general_sum declared.
    shape: str = "auto"
    # The headline: what the final line reports, summary.json holds and sweeps optimise.
    # win_rate (each side's against the yardstick, else the opponent; mean over sides), return
    # (each side's mean evaluation return; mean over sides), auto: the shape's (return for
    # single_agent, team, coop and general_sum, win_rate for zero_sum); or any metric key of
    # the metrics rows (as stop.metric: eval_return_median, main/entropy; league.run.stops).
    metric: str = "auto"
    # Which way the headline improves: max (higher is better) or min (a metric key such as
    # exploitability/meta_strategy, the poker presets' headline). The run's best follows it.
    metric_mode: str = "max"
    # How the learning policies act in evaluation games: greedily (false: the most likely
    # action, as board games are judged) or sampling their distribution (true: the mixed
    # strategy they train, as imperfect-information games need: a poker policy's greedy
    # play is a different, more exploitable player; limit Hold'em's preset sets it).
    explore: bool = False


@dataclass
class StopConfig:
    """When the run ends (whichever comes first; 0 disables a criterion)."""

    env_steps: int = 0
    iterations: int = 0
    time_s: float = 540.0
    # Stop once every side's win rate in the headline (against eval.yardstick where one is
    # played, else the opponent) is >= this (0: off); a return headline: use return_mean.
    win_rate: float = 0.0
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
