"""What a run writes down: an iteration's metrics row, the run's summary, its checkpoints,
and when it stops.

Plain functions of the run's state, so the trainer's loop only says when each is due.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from league.checkpoint import write_checkpoint
from league.config import RunConfig, StopConfig
from league.flow import PLAN_IDLE
from league.leagues import TrainingLeague
from league.metrics_log import episode_metrics
from league.resume import league_state
from league.run.stops import metric_stop_met, warn_unreported
from league.runtime.faces import LearnerHandle, PlanFace

__all__ = ["RunClock", "metrics_row", "summary", "write_run_checkpoint", "stop_reached"]


class RunClock:
    """A run's clock: iterations and env steps so far, where this process began, and the
    latest metrics row (what ``stop.metric`` reads)."""

    def __init__(self) -> None:
        self.iteration = 0
        self.env_steps = 0
        self.start = (0, 0)  # iteration and env steps when this process began
        self.latest_row: dict[str, Any] | None = None  # set by metrics_row
        self.metric_status: dict[str, str] = {}  # stop.metric key -> what the rows had for it (league.run.stops)

    def steps_per_s(self, seconds: float) -> float:
        """Env steps per second sampled by this process in ``seconds``."""
        return round((self.env_steps - self.start[1]) / max(seconds, 1e-9), 1)


def metrics_row(
    run: RunClock,
    time_s: float,
    train_steps: int,
    episodes: Sequence[Mapping[str, Any]],
    plan: PlanFace,
    league: TrainingLeague,
    learner: LearnerHandle,
    win_rates: Mapping[str, float],
    extra: Mapping[str, Any],
    time_left_s: float | None = None,
) -> dict[str, Any]:
    """One iteration's row of ``metrics.jsonl``: progress, episodes, evaluation, counters,
    the league's figures (measured within ``time_left_s``, the run's time left) and each
    policy's learner statistics."""
    metrics = plan.metrics.snapshot()
    run.latest_row = row = {
        "iteration": run.iteration,
        "env_steps": run.env_steps,
        "time_s": round(time_s, 2),
        "env_steps_per_s": run.steps_per_s(time_s),
        "train_steps": train_steps,
        "episodes": len(episodes),
        "mean_episode_len": float(np.mean([e["length"] for e in episodes])) if episodes else None,
        "win_rate_vs_random": dict(win_rates),
        "snapshots": 0,
        **extra,
        "counters": dict(plan.metrics.counters),
        **league.metrics(run.iteration, learner, time_left_s),
        **episode_metrics(list(episodes), league.learning),
        **{f"{pid}/{k}": round(v, 5) for pid, st in metrics.get("learner", {}).items() for k, v in st.items()},
        "operators": metrics.get("operators", {}),
        # Seconds the plan slept between pulls with nothing ready (waiting on samplers), in
        # no operator's time: the operators' time_s plus this make up the plan's wall time.
        "plan_idle_s": round(metrics.get("timers", {}).get(PLAN_IDLE, {}).get("total_s", 0.0), 3),
    }
    return row


def summary(
    run: RunClock, cfg: RunConfig, elapsed: float, league: TrainingLeague, win_rates: Mapping[str, float], extra: Mapping[str, Any]
) -> dict[str, Any]:
    """The run's ``summary.json`` (and a warning for each ``stop.metric`` key never reported)."""
    warn_unreported(run.metric_status, run.latest_row or ())
    return {
        "iterations": run.iteration,
        "env_steps": run.env_steps,
        "wall_time_s": round(elapsed, 1),
        "env_steps_per_s": run.steps_per_s(elapsed),
        # The weakest side's: what summaries said before the headline (league.run.headline) existed.
        "final_win_rate_vs_random": min(win_rates.values()) if win_rates else None,
        "win_rates_vs_random": dict(win_rates),
        **extra,
        **league.summary(),
        "payoff": league.payoff.to_dict(),
        "start_iteration": run.start[0],
        "config": asdict(cfg),
    }


def write_run_checkpoint(
    root: Path,
    name: str,
    run: RunClock,
    cfg: RunConfig,
    plan: PlanFace,
    league: TrainingLeague,
    learner: LearnerHandle,
    win_rates: Mapping[str, float],
    best_win_rate: float | None,
    best_headline: float | None = None,
) -> Path:
    """Checkpoint ``name`` under ``root``: learning and frozen weights, every learning
    policy's learner state, the league's state and the run's counters (:mod:`league.checkpoint`)."""
    learning = league.learning
    policies = learner.get_weights(learning)
    policies.update(league.frozen_weights())
    state = league_state(
        iteration=run.iteration, env_steps=run.env_steps, learning=learning, counters=plan.metrics.counters,
        league=league.state(), payoff=league.payoff, win_rates=win_rates, best_win_rate=best_win_rate,
        best_headline=best_headline,
    )  # fmt: skip
    return write_checkpoint(
        root, name, iteration=run.iteration, env_steps=run.env_steps, config=asdict(cfg), league=state,
        policies=policies, learner_states={pid: learner.get_state(pid) for pid in learning},
    )  # fmt: skip


def _win_rate_met(threshold: float, row: Mapping[str, Any] | None, win_rates: Mapping[str, float]) -> bool:
    """``stop.win_rate``: every side's win rate in the headline (against the yardstick where one
    is played) when the headline is a win rate, else every side's win rate against random."""
    head = (row or {}).get("headline") or {}
    rates: Mapping[str, float] = (head.get("sides") or {}) if head.get("metric") == "win_rate" else win_rates
    return bool(rates) and min(rates.values()) >= threshold


def stop_reached(
    stop: StopConfig, run: RunClock, elapsed: float, win_rates: Mapping[str, float], returns: Mapping[str, float] | None = None
) -> bool:
    """Whether any of ``stop``'s criteria (0, None or empty: off) is met; ``returns``: each learning
    policy's latest evaluation mean return (``stop.return_mean``); ``stop.metric`` reads the
    latest metrics row (:mod:`league.run.stops`)."""
    # First, so that the status of every stop.metric key follows each row (the end-of-run warning).
    metric = bool(stop.metric) and metric_stop_met(stop.metric, stop.mode, run.latest_row, run.metric_status)
    return bool(
        metric
        or (stop.env_steps and run.env_steps >= stop.env_steps)
        or (stop.iterations and run.iteration >= stop.iterations)
        or (stop.time_s and elapsed >= stop.time_s)
        or (stop.win_rate and _win_rate_met(stop.win_rate, run.latest_row, win_rates))
        or (stop.return_mean is not None and returns and min(returns.values()) >= stop.return_mean)
    )
