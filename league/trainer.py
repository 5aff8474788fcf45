"""A training run: what ``league-train`` runs, as a loop over iterations.

``Trainer(cfg, run_dir).train()``: build the run's parts (:mod:`league.run.build`),
restore them from ``cfg.resume`` if given (:mod:`league.resume`), then per iteration:
run the plan for an iteration's worth of env steps (:class:`~league.config.IterationConfig`),
feed finished episodes to the league, let it take snapshots and resets, start and
collect evaluation rounds (:mod:`league.run.evaluation`), log a metrics row and write
periodic checkpoints, until a stop criterion. A learner actor that dies is restored
(:mod:`league.run.recovery`). At the end: a final checkpoint and ``summary.json``.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

from league.checkpoint import periodic_name, prune_checkpoints
from league.config import RunConfig, StopConfig, run_config
from league.runtime.actors import is_ray_actor
from league.flow.metrics import NUM_ENV_STEPS_SAMPLED
from league.learn.recovery import LearnerDied, find_learner_died
from league.leagues import TrainingLeague, make_league
from league.leagues.builder import SELFPLAY_MAIN, learning_policy_ids
from league.metrics_log import MetricsLogger
from league.population.payoff import PayoffTable
from league.population.selfplay import SelfPlayPool
from league.progress import NoProgress, ProgressReporter, make_progress
from league.resume import driver_rng_state, load_resume_checkpoint, restore_league, restore_learner, set_driver_rng_state
from league.run import build, records
from league.run.records import RunClock, stop_reached
from league.run.evaluation import EpisodeFeed, EvaluationRounds, win_rate
from league.run.recovery import recover_learner
from league.runtime import start_ray
from league.runtime.faces import LearnerHandle, PlanFace, SamplerHandle

__all__ = ["Trainer", "MAIN", "EVAL_OPPONENT"]

MAIN = SELFPLAY_MAIN
EVAL_OPPONENT = build.EVAL_OPPONENT
HISTORY_ROWS = 10_000  # the latest metrics rows kept in memory (all are in metrics.jsonl)


class Trainer:
    """Builds and runs one training job (see the module docstring).

    ``Trainer(cfg, run_dir)`` takes a validated :class:`RunConfig` (what ``league-train``
    builds from Hydra); ``Trainer("connect_four", policies={"ppo": PPOConfig(), "dqn":
    DQNConfig()}, opponents={"random": 0.2})`` builds the same object in Python
    (:func:`~league.config.run_config`; other sections as keyword dicts).
    """

    def __init__(
        self,
        cfg: RunConfig | str,
        run_dir: str | os.PathLike[str] | None = None,
        *,
        policies: Mapping[str, Any] | None = None,
        opponents: Mapping[str, float] | None = None,
        **sections: Any,
    ) -> None:
        if isinstance(cfg, str):
            cfg = run_config(cfg, policies, opponents, **sections)
        elif policies is not None or opponents is not None or sections:
            raise TypeError("Trainer(cfg: RunConfig, ...) takes no policies, opponents or sections; pass an env name instead")
        if run_dir is None:
            run_dir = Path("runs") / time.strftime("%Y-%m-%d_%H-%M-%S")
        self.cfg = cfg
        self.run_dir = Path(run_dir).resolve()  # resolved before anything reaches an actor
        self.clock = RunClock()
        self.history: deque[dict[str, Any]] = deque(maxlen=HISTORY_ROWS)
        self.episodes = EpisodeFeed()
        self.evaluation = EvaluationRounds(EVAL_OPPONENT, cfg.eval.episodes, cfg.eval.env_steps)
        self.resumed_from: Path | None = None
        self.checkpoints: list[Path] = []
        self.samplers: list[SamplerHandle] = []
        self.learner: LearnerHandle | None = None
        self.league: TrainingLeague | None = None
        self.logger: MetricsLogger | None = None
        self.progress: ProgressReporter = NoProgress()
        self.learner_restores = 0
        self._initial_states: dict[str, bytes] = {}  # each learning policy's state at its creation
        self._plan: PlanFace | None = None  # built by setup()

    @property
    def iteration(self) -> int:
        """Training iterations so far (a resumed run counts the earlier ones)."""
        return self.clock.iteration

    @property
    def env_steps(self) -> int:
        """Env steps sampled so far (a resumed run counts the earlier ones)."""
        return self.clock.env_steps

    @property
    def checkpoint_root(self) -> Path:
        """Where this run writes checkpoints (``checkpoint_dir``, relative to the run directory)."""
        d = Path(self.cfg.checkpoint_dir)
        return d if d.is_absolute() else self.run_dir / d

    @property
    def win_rates(self) -> dict[str, float]:
        """The latest evaluation win rate of each learning policy against the fixed opponent."""
        return self.evaluation.win_rates

    @property
    def pool(self) -> SelfPlayPool | None:
        """The self-play pool of a ``selfplay`` league, else None."""
        return getattr(self.league, "pool", None)

    @property
    def payoff(self) -> PayoffTable:
        """The league's payoff table."""
        return self.league.payoff

    @property
    def plan(self) -> PlanFace:
        """The run's dataflow plan (``print`` it to see the operator graph); built on first use."""
        if self._plan is None:
            self.setup()
        return self._plan

    def setup(self) -> None:
        """Read a resume checkpoint (before Ray starts or any file is written), then build the
        league, the learner, samplers and plan, restored from the checkpoint if any."""
        if self._plan is not None:
            return
        cfg = self.cfg
        spec, agents = build.agent_spec(cfg)
        self.learning = learning_policy_ids(cfg)
        self.algorithms = build.make_algorithms(cfg, spec, self.learning)
        checkpoint = load_resume_checkpoint(cfg.resume, cfg.checkpoint_dir, asdict(cfg), self.algorithms) if cfg.resume else None
        if build.uses_ray(cfg):
            start_ray(cfg.ray)
            build.check_ray_resources(cfg)
        self.league = make_league(cfg, self.algorithms, spec, agents, remote=cfg.sampler.remote)
        counters: dict[str, int] = {}
        if checkpoint is not None:
            restored = restore_league(checkpoint, self.league)
            self.evaluation.win_rates, self.evaluation.best_win_rate = restored.win_rates, restored.best_win_rate
            self.clock.iteration, self.clock.env_steps, counters = checkpoint.iteration, checkpoint.env_steps, restored.counters
            self.resumed_from = checkpoint.path
        torch.manual_seed(cfg.seed)
        self.learner = build.make_learner(cfg, self.algorithms)
        # Read before any restore: what exploiters are reset to (a resumed run's fresh learner
        # is seeded as the original's was) and a dead learner's source before any checkpoint.
        self._initial_states = {pid: self.learner.get_state(pid) for pid in self.learning}
        self._fallback_states = dict(self._initial_states)
        if checkpoint is not None:
            restore_learner(self.learner, checkpoint, self.learning)
            self._fallback_states = {pid: checkpoint.learner_states[pid] for pid in self.learning}
        self._build_samplers_and_plan(counters)
        if checkpoint is not None:
            set_driver_rng_state(checkpoint.league.get("rng"))
        self.clock.start = (self.iteration, self.env_steps)

    def _build_samplers_and_plan(self, counters: dict[str, int]) -> None:
        self.samplers = build.make_samplers(self.cfg, self.iteration, self.algorithms, self.league)
        build.load_samplers(self.samplers, self.learner, self.league, self._initial_states, self.restore_league_on)
        self._rebuild_plan(counters)

    def _rebuild_plan(self, counters: dict[str, int]) -> None:
        self._plan = build.build_plan(self.cfg, self.samplers, self.learner, self.algorithms)
        self._plan.metrics.counters.update(counters)

    def restore_league_on(self, sampler: SamplerHandle) -> list[Any]:
        """Re-send the league's frozen policies and a matchup source to a restarted sampler
        (the learning policies' weights are re-sent by ``BroadcastWeights``' own hook)."""
        return self.league.restore_on(sampler)

    # The loop -------------------------------------------------------------------------
    def train(self, *, env_steps: int | None = None, iterations: int | None = None, time_s: float | None = None) -> dict[str, Any]:
        """Run until the config's stop criteria, or, given any budget, for that many more env
        steps, iterations or seconds; returns the summary (also written to disk with a
        ``final`` checkpoint). May be called again to train on."""
        stop = self.cfg.stop
        if env_steps is not None or iterations is not None or time_s is not None:
            it, steps = self.iteration, self.env_steps
            stop = StopConfig(env_steps=steps + env_steps if env_steps else 0, iterations=it + iterations if iterations else 0, time_s=time_s or 0.0, win_rate=0.0)
        self.setup()
        self._time_budget_s = stop.time_s  # evaluation rounds end within it
        if self.logger is None:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            self.logger = MetricsLogger(self.run_dir, tensorboard=self.cfg.logging.tensorboard)
            if self.cfg.verbose:
                resumed = f" (resumed from {self.resumed_from} at iteration {self.iteration})" if self.resumed_from else ""
                print(f"league-train: run directory {self.run_dir}{resumed}\nplan\n{self.plan}", flush=True)
        self.progress = make_progress(self.cfg, self.iteration, self.env_steps)
        start = time.perf_counter()
        self._deadline = start + stop.time_s if stop.time_s else None  # an iteration ends with the budget too
        try:
            while not stop_reached(stop, self.clock, time.perf_counter() - start, self.win_rates, self.evaluation.returns):
                try:
                    self.step(time.perf_counter() - start)
                    self._periodic_checkpoint()
                except Exception as err:
                    died = find_learner_died(err)
                    if died is None:
                        raise
                    self.restore_learner_after(died, err)
            self.evaluation.collect(self.league, block=True)
        except BaseException:
            self._finish(time.perf_counter() - start, failed=True)
            raise
        return self._finish(time.perf_counter() - start)

    def _run_plan(self) -> int:
        """Training steps until the iteration's minimum env steps and time; returns how many ran."""
        t0, start, minimum = time.perf_counter(), self.env_steps, self.cfg.iteration
        items = 0
        while True:
            next(self.plan)
            items += 1
            self.clock.env_steps = int(self.plan.metrics.counters.get(NUM_ENV_STEPS_SAMPLED, self.env_steps))
            if self.env_steps - start >= minimum.min_env_steps and time.perf_counter() - t0 >= minimum.min_time_s:
                return items
            deadline = getattr(self, "_deadline", None)
            if deadline is not None and time.perf_counter() >= deadline:
                return items  # slow envs (images, 20 agents): the run's time budget ends an iteration early

    def step(self, elapsed: float) -> dict[str, Any]:
        """One iteration: training steps of the plan, the league's bookkeeping, evaluation, a metrics row."""
        t0 = time.perf_counter()
        train_steps = self._run_plan()
        self.clock.iteration += 1
        stats = self.episodes.next(self.samplers, self.league)
        self.league.update(self.iteration, self.plan.metrics.counters, self.learner, self.samplers)
        if self.cfg.eval.interval and self.iteration % self.cfg.eval.interval == 0 and not self.evaluation.running:
            budget = getattr(self, "_time_budget_s", 0.0)
            self.evaluation.start(self.samplers, self.league, budget - (elapsed + time.perf_counter() - t0) if budget else None)
        self.evaluation.collect(self.league, block=False)
        time_s = elapsed + time.perf_counter() - t0
        lost = self.episodes.lost_sampler_calls + self.evaluation.lost_sampler_calls
        extra = {
            "learner_restores": self.learner_restores, "lost_sampler_calls": lost,
            "eval_return_mean": dict(self.evaluation.returns), "eval_return_median": dict(self.evaluation.medians),
        }  # fmt: skip
        row = records.metrics_row(self.clock, time_s, train_steps, stats, self.plan, self.league, self.learner, self.win_rates, extra)
        self.history.append(row)
        if self.logger is not None:  # None when step() is driven without train()
            self.logger.log(row)
        self.progress.update(row, time_s, self.evaluation.best_win_rate)
        return row

    def evaluate(self, episodes: int = 200, opponents: Sequence[str] = (EVAL_OPPONENT,)) -> dict[str, dict[str, float]]:
        """Greedy win rate of every learning policy against each of ``opponents`` (the fixed
        evaluation opponent or fixed members), ``episodes`` games each, seats at random."""
        source = self.league.evaluation_source
        return {pid: {opp: win_rate(self.samplers, pid, opp, episodes, source(pid, opp)) for opp in opponents} for pid in self.learning}

    def save(self, name: str = "final") -> Path:
        """Write checkpoint ``name`` now (see :meth:`save_checkpoint`); returns its directory."""
        self.setup()
        return self.save_checkpoint(name)

    # Recovery and checkpoints ---------------------------------------------------------
    def restore_learner_after(self, died: LearnerDied, err: BaseException) -> None:
        """A learner actor died: restore its policies (:func:`~league.run.recovery.recover_learner`)
        and rebuild the plan (requests in flight were made with the lost weights), or stop."""
        recover_learner(
            died, err, learner=self.learner, samplers=self.samplers, on_failure=self.cfg.learner.on_failure,
            restores_so_far=self.learner_restores, checkpoint_root=self.checkpoint_root,
            fallback_states=self._fallback_states, fallback_source=str(self.resumed_from or "the run's start"),
        )  # fmt: skip
        self._rebuild_plan(dict(self.plan.metrics.counters))
        self.learner_restores += 1

    def _periodic_checkpoint(self) -> None:
        interval = self.cfg.checkpoint.interval
        if not interval or self.iteration % interval:
            return
        self.save_checkpoint(periodic_name(self.iteration))
        prune_checkpoints(self.checkpoint_root, self.cfg.checkpoint.keep_last)
        if self.cfg.checkpoint.exact_resume:
            self.restart_samplers()

    def restart_samplers(self) -> None:
        """Replace the samplers by new ones built as a resume from the checkpoint just written
        builds them, and the plan with them; the driver's RNG is put back as a resume restores it."""
        rng = driver_rng_state()
        self.close_samplers()
        self._build_samplers_and_plan(dict(self.plan.metrics.counters))
        self.episodes.drop()  # flushed into the checkpoint already
        set_driver_rng_state(rng)

    def save_checkpoint(self, name: str, flush: bool = True) -> Path:
        """Write checkpoint ``name`` under :attr:`checkpoint_root` (see :mod:`league.checkpoint`);
        ``flush`` first records episodes already finished on the samplers, so the payoff is current."""
        if flush:
            self.episodes.flush(self.samplers, self.league)
        path = records.write_run_checkpoint(
            self.checkpoint_root, name, self.clock, self.cfg, self.plan, self.league, self.learner, self.win_rates, self.evaluation.best_win_rate
        )
        self.checkpoints = [p for p in self.checkpoints if p != path and p.exists()] + [path]
        return path

    def _finish(self, elapsed: float, failed: bool = False) -> dict[str, Any]:
        self.progress.close()
        summary = self._summary(elapsed)
        try:
            self.save_checkpoint("final", flush=not failed)
        except Exception as err:
            if not failed:
                raise
            # The run's own error is the one to report; a final checkpoint is best effort.
            warnings.warn(f"no final checkpoint written after the failure: {err!r}", stacklevel=2)
        summary["checkpoints"] = [str(p) for p in self.checkpoints]
        with open(self.run_dir / "summary.json", "w") as f:
            json.dump(summary, f, indent=2)
        return summary

    def _summary(self, elapsed: float) -> dict[str, Any]:
        extra = {
            "best_win_rate_vs_random": self.evaluation.best_win_rate,
            "eval_return_mean": dict(self.evaluation.returns),
            "eval_return_median": dict(self.evaluation.medians),
            "final_return_mean": sum(self.evaluation.returns.values()) / len(self.evaluation.returns) if self.evaluation.returns else None,
            "resumed_from": str(self.resumed_from) if self.resumed_from else None,
            "learner_restores": self.learner_restores,
        }
        return records.summary(self.clock, self.cfg, elapsed, self.league, self.win_rates, extra)

    def close_samplers(self) -> None:
        """Stop the sampler actors (in-process samplers are just dropped)."""
        remote = [s for s in self.samplers if is_ray_actor(s)]
        if remote:
            import ray

            for s in remote:
                ray.kill(s)
        self.samplers = []

    def close(self) -> None:
        """Stop sampler and learner actors, close the logs (Ray itself is left to the caller)."""
        self.progress.close()
        if self.logger is not None:
            self.logger.close()
        self.close_samplers()
        if self.learner is not None and hasattr(self.learner, "close"):
            self.learner.close()
        if self.league is not None:
            self.league.close()
