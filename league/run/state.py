"""The built parts of one training run, as one object: :class:`Run`.

:func:`build_run` is what :meth:`league.trainer.Trainer.setup` does, once: read a resume
checkpoint (before Ray starts or any file is written), build the league, the learner, the
samplers and the plan, restore them from the checkpoint if any. The :class:`Run` it returns
holds those parts; the samplers and the plan are the only ones ever replaced (after a
periodic checkpoint with ``checkpoint.exact_resume``, after a dead learner's restore).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar, overload

import torch

from league.config import RunConfig
from league.envs.base import AgentSpec
from league.flow.metrics import NUM_ENV_STEPS_SAMPLED
from league.learn import Learner, LearnerGroup
from league.learn.algorithm import Algorithm
from league.learn.recovery import LearnerDied
from league.leagues import TrainingLeague, make_league
from league.leagues.builder import learning_policy_ids
from league.leagues.selfplay import SelfPlayLeague
from league.population.payoff import PayoffTable
from league.population.selfplay import SelfPlayPool
from league.resume import driver_rng_state, load_resume_checkpoint, restore_league, restore_learner, set_driver_rng_state
from league.run import build, records
from league.run.budget import Budget
from league.run.evaluation import EpisodeFeed, EvaluationRounds
from league.run.headline import Headline, Headlines
from league.run.records import RunClock
from league.run.recovery import recover_learner
from league.runtime import start_ray
from league.runtime.actors import is_ray_actor
from league.runtime.faces import LearnerFace, PlanFace, SamplerHandle

__all__ = ["Run", "RunPart", "build_run", "close_samplers", "FIRST_ROUND_SHARE", "EVAL_STEP_SHARE", "evaluation_has_room"]

#: An evaluation round starts only if the time budget has room for it: as long as the latest
#: round took, or, before any, this share of stop.time_s. Its time limit bounds its steps, not the
#: building of its env copies (seconds for Atari), nor the training calls queued behind it.
FIRST_ROUND_SHARE = 0.2
#: Under a time budget, evaluation games step at most this share of all the env steps stepped:
#: a round that ``eval.interval`` makes due waits until the games already played are within it
#: (not in leagues whose rounds carry the games they decide by: ``schedules_evaluation``).
#: The samplers step evaluation games on the time training would have had; on fast envs with long
#: episodes a round every five iterations was a quarter of the stepping (cooperative pong, read as
#: its state: 20 rounds in a 2-minute run; pong a quarter too: benchmarks/README.md, 2026-12-02).
EVAL_STEP_SHARE = 0.1

T = TypeVar("T")


def evaluation_has_room(eval_env_steps: int, train_env_steps: int, time_budget_s: float) -> bool:
    """Whether a due evaluation round may start: always without a time budget (``stop.time_s`` 0),
    else while the evaluation games' env steps are at most :data:`EVAL_STEP_SHARE` of all env steps."""
    return not time_budget_s or eval_env_steps <= EVAL_STEP_SHARE * (train_env_steps + eval_env_steps)


@dataclass(eq=False)
class Run:
    """One run's built parts (see the module docstring); ``clock`` is the trainer's own."""

    cfg: RunConfig
    clock: RunClock
    learning: list[str]  # the learning policies' ids
    algorithms: dict[str, Algorithm]
    league: TrainingLeague
    learner: Learner | LearnerGroup  # in the driver; a group's learners may be Ray actors
    samplers: list[SamplerHandle]
    plan: PlanFace
    episodes: EpisodeFeed  # training episodes on their way to the league
    evaluation: EvaluationRounds
    initial_states: dict[str, bytes]  # each learning policy's state at its creation: what exploiters are reset to
    fallback_states: dict[str, bytes]  # a dead learner's policies' source before any checkpoint of this run
    headlines: Headlines  # the game's shape and the run's headline figure (league.run.headline)
    resumed_from: Path | None = None  # the checkpoint this run resumed from
    learner_restores: int = 0  # dead learner actors restored so far
    episode_lengths: tuple[int, int] = (0, 0)  # env steps and count of the training episodes seen
    episode_cap: int | None = None  # the env's declared most env steps an episode takes (None: none)

    def episode_len(self) -> float:
        """About how many env steps a training episode takes: their mean so far, or, before any
        finished, the env's declared cap (an episode takes no longer) where it has one, else at
        least what each env copy has stepped (a lower bound on the first one's length)."""
        steps, count = self.episode_lengths
        if count:
            return steps / count
        if self.episode_cap:
            return float(self.episode_cap)
        copies = self.cfg.sampler.num_samplers * self.cfg.sampler.num_envs
        return max(1.0, (self.clock.env_steps - self.clock.start[1]) / copies)

    def headline(self, row: dict[str, Any] | None = None) -> Headline:
        """The run's headline from the latest evaluation (a metric key's from ``row``)."""
        ev = self.evaluation
        return self.headlines.current(ev.win_rates, ev.returns, ev.yardstick_win_rates, row, ev.yardstick_returns)

    @property
    def win_rates(self) -> dict[str, float]:
        """The latest evaluation win rate of each learning policy against the fixed opponent."""
        return self.evaluation.win_rates

    @property
    def pool(self) -> SelfPlayPool | None:
        """The self-play pool of a ``selfplay`` league, else None."""
        return self.league.pool if isinstance(self.league, SelfPlayLeague) else None

    @property
    def payoff(self) -> PayoffTable:
        """The league's payoff table."""
        return self.league.payoff

    def iterate(self, budget: Budget, elapsed: float) -> tuple[dict[str, Any], float]:
        """One iteration, ``elapsed`` seconds into ``budget``'s call: training steps of the plan
        (:meth:`run_plan`), the league's bookkeeping, evaluation rounds started and collected;
        returns its metrics row (:func:`~league.run.records.metrics_row`) and the call's seconds."""
        t0, evaluation = time.perf_counter(), self.evaluation
        train_steps = self.run_plan(budget)
        self.clock.iteration += 1
        stats = self.episodes.next(self.samplers, self.league)
        steps, count = self.episode_lengths
        self.episode_lengths = (steps + sum(int(e["length"]) for e in stats), count + len(stats))
        self.headlines.observe(stats)
        self.league.update(self.clock.iteration, self.plan.metrics.counters, self.learner, self.samplers)
        if self.cfg.eval.interval and self.clock.iteration % self.cfg.eval.interval == 0 and not evaluation.running and self._evaluation_has_room(budget):
            left = budget.time_left_s(elapsed + time.perf_counter() - t0)
            needs = evaluation.round_s if evaluation.round_s is not None else FIRST_ROUND_SHARE * budget.stop.time_s
            if left is None or left >= needs:  # else the run ends before the round could
                evaluation.start(self.samplers, self.league, left, self.episode_len())
        evaluation.collect(self.league, block=False)
        time_s = elapsed + time.perf_counter() - t0
        extra = {
            "learner_restores": self.learner_restores, "lost_sampler_calls": self.episodes.lost_sampler_calls + evaluation.lost_sampler_calls,
            "eval_env_steps": evaluation.env_steps_played, "eval_return_mean": dict(evaluation.returns), "eval_return_median": dict(evaluation.medians),
            "eval_partial": {"asked": evaluation.asked, "played": evaluation.partial} if evaluation.partial else {},
            **evaluation.yardstick_figures(),
        }  # fmt: skip
        row = records.metrics_row(self.clock, time_s, train_steps, stats, self.plan, self.league, self.learner, evaluation.win_rates, extra,
                                  budget.time_left_s(time_s))
        row["headline"] = self.headline(row).as_dict()
        if budget.reached(self.clock, evaluation):  # the last iteration: say if no training episode ever ended
            self.episodes.end_of_run(self.samplers, self.league, time_s)
        return row, time_s

    def _evaluation_has_room(self, budget: Budget) -> bool:
        # A league that decides by its rounds' games (a meta-game, payoffs) gets every round.
        return self.league.schedules_evaluation or evaluation_has_room(self.evaluation.env_steps_played, self.clock.env_steps, budget.stop.time_s)

    def run_plan(self, budget: Budget) -> int:
        """Training steps until the iteration's minimum env steps and time (``cfg.iteration``), or
        ``budget``'s deadline (slow envs: images, 20 agents); returns how many ran."""
        t0, start, minimum = time.perf_counter(), self.clock.env_steps, self.cfg.iteration
        items = 0
        while True:
            t_item = time.perf_counter()
            next(self.plan)
            budget.record_step(time.perf_counter() - t_item)
            items += 1
            self.clock.env_steps = int(self.plan.metrics.counters.get(NUM_ENV_STEPS_SAMPLED, self.clock.env_steps))
            if self.clock.env_steps - start >= minimum.min_env_steps and time.perf_counter() - t0 >= minimum.min_time_s:
                return items
            if budget.past_deadline(budget.step_s):
                return items

    def rebuild_plan(self) -> None:
        """A new plan over the current samplers and learner, its counters carried over."""
        self.plan = _plan(self.cfg, self.samplers, self.learner, self.algorithms, dict(self.plan.metrics.counters))

    def restart_samplers(self) -> None:
        """Replace the samplers by new ones built as a resume from the checkpoint just written
        builds them, and the plan with them; the driver's RNG is put back as a resume restores it."""
        rng, counters = driver_rng_state(), dict(self.plan.metrics.counters)
        close_samplers(self.samplers)
        self.samplers = []
        self.samplers = _samplers(self.cfg, self.clock.iteration, self.algorithms, self.league, self.learner, self.initial_states)
        self.plan = _plan(self.cfg, self.samplers, self.learner, self.algorithms, counters)
        self.episodes.drop()  # flushed into the checkpoint already
        set_driver_rng_state(rng)

    def restore_league_on(self, sampler: SamplerHandle) -> list[Any]:
        """Re-send the league's frozen policies and a matchup source to a restarted sampler
        (the learning policies' weights are re-sent by ``BroadcastWeights``' own hook)."""
        return self.league.restore_on(sampler)

    def restore_learner(self, died: LearnerDied, err: BaseException, checkpoint_root: Path) -> None:
        """A learner actor died: restore its policies (:func:`~league.run.recovery.recover_learner`:
        from the latest checkpoint under ``checkpoint_root``, else the resumed one, else the run's
        start) and rebuild the plan (requests in flight were made with the lost weights), or raise."""
        learner = self.learner
        if not isinstance(learner, LearnerGroup):  # an in-process learner dies with the driver
            raise RuntimeError(f"{died}, but this run's learner is not a learner group: nothing to restore") from err
        recover_learner(
            died, err, learner=learner, samplers=self.samplers, on_failure=self.cfg.learner.on_failure,
            restores_so_far=self.learner_restores, checkpoint_root=checkpoint_root,
            fallback_states=self.fallback_states, fallback_source=str(self.resumed_from or "the run's start"),
        )  # fmt: skip
        self.rebuild_plan()
        self.learner_restores += 1

    def close(self) -> None:
        """Stop the sampler and learner actors and the league's (Ray itself is left to the caller)."""
        close_samplers(self.samplers)
        self.samplers = []
        self.learner.close()
        self.league.close()


class RunPart(Generic[T]):
    """A read-only attribute that is the same-named attribute of one of its owner's parts,
    its ``run`` unless ``of`` names another (``trainer.samplers`` is ``trainer.run.samplers``,
    ``trainer.iteration`` with ``of="clock"`` is ``trainer.clock.iteration``): no copy to keep in step."""

    def __init__(self, doc: str, of: str = "run") -> None:
        self.__doc__ = doc
        self.of = of
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> RunPart[T]: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> T: ...
    def __get__(self, obj: object | None, owner: type | None = None) -> RunPart[T] | T:
        return self if obj is None else getattr(getattr(obj, self.of), self.name)


def build_run(cfg: RunConfig, clock: RunClock) -> Run:
    """Build a run's parts from ``cfg``, restored from ``cfg.resume`` if given (``clock`` too: the
    checkpoint's iteration and env steps); what was built is closed again if a later step fails."""
    specs, episode_cap = build.env_facts(cfg)
    spec, agents = build.agent_spec(cfg, specs)
    learning = learning_policy_ids(cfg)
    algorithms = build.make_algorithms(cfg, spec, learning)
    checkpoint = load_resume_checkpoint(cfg.resume, cfg.checkpoint_dir, asdict(cfg), algorithms) if cfg.resume else None
    if build.uses_ray(cfg):
        start_ray(cfg.ray)
        build.check_ray_resources(cfg)
    league = make_league(cfg, algorithms, spec, agents, remote=cfg.sampler.remote)
    learner: Learner | LearnerGroup | None = None
    samplers: list[SamplerHandle] = []
    try:
        headlines = _headlines(cfg, specs)
        evaluation = EvaluationRounds(
            build.EVAL_OPPONENT, cfg.eval.episodes, cfg.eval.env_steps, cfg.eval.yardstick, headlines.observe, headlines.together,
            cfg.eval.explore,
        )
        counters: dict[str, int] = {}
        if checkpoint is not None:
            restored = restore_league(checkpoint, league)
            evaluation.win_rates, evaluation.best_win_rate = restored.win_rates, restored.best_win_rate
            headlines.best = restored.best_headline  # the headline's best carries on, as the win rate's does
            clock.iteration, clock.env_steps, counters = checkpoint.iteration, checkpoint.env_steps, restored.counters
        torch.manual_seed(cfg.seed)
        learner = build.make_learner(cfg, algorithms)
        # Read before any restore: what exploiters are reset to (a resumed run's fresh learner
        # is seeded as the original's was) and a dead learner's source before any checkpoint.
        initial_states = {pid: learner.get_state(pid) for pid in learning}
        fallback_states = dict(initial_states)
        if checkpoint is not None:
            restore_learner(learner, checkpoint, learning)
            fallback_states = {pid: checkpoint.learner_states[pid] for pid in learning}
        samplers = _samplers(cfg, clock.iteration, algorithms, league, learner, initial_states)
        plan = _plan(cfg, samplers, learner, algorithms, counters)
    except BaseException:
        close_samplers(samplers)
        if learner is not None:
            learner.close()
        league.close()
        raise
    if checkpoint is not None:
        set_driver_rng_state(checkpoint.league.get("rng"))
    clock.start = (clock.iteration, clock.env_steps)
    return Run(
        cfg=cfg, clock=clock, learning=learning, algorithms=algorithms, league=league, learner=learner, samplers=samplers,
        plan=plan, episodes=EpisodeFeed(), evaluation=evaluation, initial_states=initial_states, fallback_states=fallback_states,
        headlines=headlines, episode_cap=episode_cap,
        resumed_from=checkpoint.path if checkpoint is not None else None,
    )  # fmt: skip


def _headlines(cfg: RunConfig, specs: dict[str, AgentSpec]) -> Headlines:
    """The run's headline keeper: its sides are ``env.groups`` (else one per agent)."""
    sides = len(cfg.env.groups) or len(specs)
    # Without groups every agent has the same spaces (build.agent_spec refuses otherwise).
    one_spec = sides < 2 or not cfg.env.groups or len(set(specs.values())) == 1
    return Headlines(cfg.eval.metric, cfg.eval.shape, len(specs), sides, one_spec, cfg.eval.yardstick, cfg.eval.metric_mode)


def close_samplers(samplers: list[SamplerHandle]) -> None:
    """Stop the sampler actors among ``samplers`` (in-process samplers are just dropped)."""
    remote = [s for s in samplers if is_ray_actor(s)]
    if remote:
        import ray

        for s in remote:
            ray.kill(s)


def _samplers(
    cfg: RunConfig, iteration: int, algorithms: dict[str, Algorithm], league: TrainingLeague, learner: LearnerFace, initial_states: dict[str, bytes]
) -> list[SamplerHandle]:
    samplers = build.make_samplers(cfg, iteration, algorithms, league)
    build.load_samplers(samplers, learner, league, initial_states, league.restore_on)
    return samplers


def _plan(
    cfg: RunConfig, samplers: list[SamplerHandle], learner: LearnerFace, algorithms: dict[str, Algorithm], counters: dict[str, int]
) -> PlanFace:
    plan = build.build_plan(cfg, samplers, learner, algorithms)
    plan.metrics.counters.update(counters)
    return plan
