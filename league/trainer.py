"""A training run: what ``league-train`` runs, as a loop over iterations.

``Trainer(cfg, run_dir).train()``: build the run's parts once (:func:`league.run.state.build_run`:
the learner, samplers, plan, league and evaluation rounds of a :class:`~league.run.state.Run`,
restored from ``cfg.resume`` if given), then per iteration: run the plan for an iteration's
worth of env steps (:class:`~league.config.IterationConfig`), feed finished episodes to the
league, let it take snapshots and resets, start and collect evaluation rounds
(:mod:`league.run.evaluation`), log a metrics row and write periodic checkpoints
(:class:`~league.run.checkpointer.Checkpointer`), until a stop criterion
(:class:`~league.run.budget.Budget`). A learner actor that dies is restored
(:mod:`league.run.recovery`). At the end: a final checkpoint and ``summary.json``.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from league.config import RunConfig, run_config
from league.learn.algorithm import Algorithm
from league.learn import Learner, LearnerGroup
from league.learn.recovery import LearnerDied, find_learner_died
from league.leagues import TrainingLeague
from league.leagues.builder import SELFPLAY_MAIN
from league.metrics_log import MetricsLogger
from league.population.payoff import PayoffTable
from league.population.selfplay import SelfPlayPool
from league.progress import NoProgress, ProgressReporter, make_progress
from league.run import build
from league.run.budget import Budget
from league.run.checkpointer import Checkpointer
from league.run.evaluation import mix_source, win_rate
from league.run.records import RunClock
from league.run.state import Run, RunPart, build_run
from league.runtime.faces import PlanFace, SamplerHandle

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
        self.cfg = cfg
        run_dir = Path("runs") / time.strftime("%Y-%m-%d_%H-%M-%S") if run_dir is None else run_dir
        self.run_dir = Path(run_dir).resolve()  # resolved before anything reaches an actor
        self.clock = RunClock()
        self.history: deque[dict[str, Any]] = deque(maxlen=HISTORY_ROWS)
        self.checkpointer = Checkpointer(cfg, self.run_dir)
        self.budget = Budget.unlimited()  # the latest train() call's
        self.logger: MetricsLogger | None = None
        self.progress: ProgressReporter = NoProgress()
        self._run: Run | None = None  # built by setup()

    def setup(self) -> Run:
        """Build the run's parts now, if not yet (see :attr:`run`); returns them."""
        return self.run

    @property
    def run(self) -> Run:
        """The run's parts, built once, on first use (:func:`~league.run.state.build_run`: a resume
        checkpoint read before Ray starts or any file is written, then the league, the learner,
        samplers and plan, restored from the checkpoint if any)."""
        if self._run is None:
            self._run = build_run(self.cfg, self.clock)
        return self._run

    # What the run has built and its clock, read from them (league.run.state.RunPart) ---
    plan: RunPart[PlanFace] = RunPart("The run's dataflow plan (``print`` it to see the operator graph); built on first use.")
    samplers: RunPart[list[SamplerHandle]] = RunPart("The run's samplers (Ray actors or in-process objects).")
    learner: RunPart[Learner | LearnerGroup] = RunPart("The run's learner (a :class:`~league.learn.Learner` or a learner group).")
    league: RunPart[TrainingLeague] = RunPart("The league the run trains (:mod:`league.leagues`).")
    learning: RunPart[list[str]] = RunPart("The ids of the learning policies.")
    algorithms: RunPart[dict[str, Algorithm]] = RunPart("Each learning policy's algorithm.")
    pool: RunPart[SelfPlayPool | None] = RunPart("The self-play pool of a ``selfplay`` league, else None.")
    payoff: RunPart[PayoffTable] = RunPart("The league's payoff table.")
    win_rates: RunPart[dict[str, float]] = RunPart("The latest evaluation win rate of each learning policy against the fixed opponent.")
    resumed_from: RunPart[Path | None] = RunPart("The checkpoint this run resumed from, if any.")
    learner_restores: RunPart[int] = RunPart("Dead learner actors restored so far.")
    iteration: RunPart[int] = RunPart("Training iterations so far (a resumed run counts the earlier ones).", of="clock")
    env_steps: RunPart[int] = RunPart("Env steps sampled so far (a resumed run counts the earlier ones).", of="clock")

    @property
    def checkpoint_root(self) -> Path:
        """Where this run writes checkpoints (``checkpoint_dir``, relative to the run directory)."""
        return self.checkpointer.root

    # The loop -------------------------------------------------------------------------
    def train(
        self, *, env_steps: int | None = None, iterations: int | None = None, time_s: float | None = None, since: float | None = None
    ) -> dict[str, Any]:
        """Run until the config's stop criteria, or, given any budget, for that many more env
        steps, iterations or seconds; returns the summary (also written to disk with a
        ``final`` checkpoint). May be called again to train on. ``since``: the
        ``time.perf_counter()`` the time budget counts from (default: now; ``league-train``
        passes its process start, so the process ends by ``stop.time_s``)."""
        started = time.perf_counter() if since is None else since  # the setup (Ray, samplers, their envs) counts too
        Budget.stop_for(self.cfg.stop, self.clock, env_steps=env_steps, iterations=iterations, time_s=time_s)  # refused before setup
        self.setup()  # first: a resumed run's clock counts from its checkpoint
        stop = Budget.stop_for(self.cfg.stop, self.clock, env_steps=env_steps, iterations=iterations, time_s=time_s)
        run = self.run
        if self.logger is None:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            self.logger = MetricsLogger(self.run_dir, tensorboard=self.cfg.logging.tensorboard)
            if self.cfg.verbose:
                resumed = f" (resumed from {run.resumed_from} at iteration {self.iteration})" if run.resumed_from else ""
                print(f"league-train: run directory {self.run_dir}{resumed}\nplan\n{run.plan}", flush=True)
        self.progress = make_progress(self.cfg, self.iteration, self.env_steps)
        self.budget = budget = Budget(stop, started)  # an iteration and evaluation rounds end within its time too
        try:
            while not budget.reached(self.clock, run.evaluation):
                try:
                    self.step(budget.elapsed())
                    self.checkpointer.periodic(run)
                except Exception as err:
                    died = find_learner_died(err)
                    if died is None:
                        raise
                    self.restore_learner_after(died, err)
            run.evaluation.collect(run.league, block=True)
        except BaseException:
            self._finish(budget.elapsed(), failed=True)
            raise
        return self._finish(budget.elapsed())

    def step(self, elapsed: float) -> dict[str, Any]:
        """One iteration (:meth:`~league.run.state.Run.iterate`: training steps of the plan, the
        league's bookkeeping, evaluation), ``elapsed`` seconds into the call; its metrics row, logged."""
        row, time_s = self.run.iterate(self.budget, elapsed)
        self.history.append(row)
        if self.logger is not None:  # None when step() is driven without train()
            self.logger.log(row)
        self.progress.update(row, time_s, self.run.evaluation.best_win_rate)
        return row

    def evaluate(
        self, episodes: int = 200, opponents: Sequence[str] = (EVAL_OPPONENT,), explore: bool | None = None
    ) -> dict[str, dict[str, float]]:
        """Win rate of every learning policy against each of ``opponents`` (the fixed
        evaluation opponent, fixed members or the yardstick, a mix included: one of its players
        drawn per seat), ``episodes`` games each, seats at random; greedy, or sampled with
        ``explore`` (None: as the run's evaluations, ``eval.explore``). The yardstick's games
        open with the env's exploring starts, as the run's evaluation rounds play them."""
        run = self.run
        explore = self.cfg.eval.explore if explore is None else explore
        yardstick = self.cfg.eval.yardstick
        return {pid: {opp: win_rate(run.samplers, pid, opp, episodes, mix_source(run.league, pid, opp), explore, openings=opp == yardstick)
                      for opp in opponents}
                for pid in run.learning}

    def save(self, name: str = "final") -> Path:
        """Write checkpoint ``name`` now (:meth:`~league.run.checkpointer.Checkpointer.save`); returns its directory."""
        self.setup()
        return self.checkpointer.save(self.run, name)

    def _finish(self, elapsed: float, failed: bool = False) -> dict[str, Any]:
        self.progress.close()
        return self.checkpointer.finish(self.run, elapsed, failed)

    # Recovery (the hooks the run's recovery code calls) -------------------------------
    def restore_learner_after(self, died: LearnerDied, err: BaseException) -> None:
        """A learner actor died: restore it and rebuild the plan, or stop (:meth:`.Run.restore_learner`)."""
        self.run.restore_learner(died, err, self.checkpoint_root)

    def restart_samplers(self) -> None:
        """Rebuild the samplers as a resume from the latest checkpoint would (:meth:`.Run.restart_samplers`)."""
        self.run.restart_samplers()

    def restore_league_on(self, sampler: SamplerHandle) -> list[Any]:
        """Re-send the league's frozen policies and matchups to a restarted sampler (:meth:`.Run.restore_league_on`)."""
        return self.run.restore_league_on(sampler)

    def close(self) -> None:
        """Stop sampler and learner actors, close the logs (Ray itself is left to the caller)."""
        self.progress.close()
        if self.logger is not None:
            self.logger.close()
        if self._run is not None:
            self._run.close()
