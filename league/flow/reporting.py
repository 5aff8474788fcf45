"""Turning a training stream into one metrics dict per reporting iteration."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from league.flow.iterators import LocalIterator
from league.flow.metrics import NUM_AGENT_STEPS_SAMPLED, NUM_ENV_STEPS_SAMPLED, NUM_ENV_STEPS_TRAINED, PlanMetrics
from league.flow.stages import Operator
from league.runtime.actors import call_all
from league.runtime.faces import SamplerFace, SamplerHandle

__all__ = ["StandardMetricsReporting", "summarize_episodes"]


def summarize_episodes(episodes: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Means over episode statistics dicts (``episode_len``, ``returns``, ``policies``).

    Returns ``episodes_this_iter``, ``episode_len_mean`` and, per policy id (an agent's
    return is attributed to ``policies[agent]``, or to the agent name when absent),
    ``policy_return_mean``/``_min``/``_max``.
    """
    summary: dict[str, Any] = {"episodes_this_iter": len(episodes)}
    lengths = [float(e["episode_len"]) for e in episodes if "episode_len" in e]
    if lengths:
        summary["episode_len_mean"] = sum(lengths) / len(lengths)
    per_policy: defaultdict[str, list[float]] = defaultdict(list)
    for episode in episodes:
        policies = episode.get("policies", {})
        for agent, value in episode.get("returns", {}).items():
            per_policy[policies.get(agent, agent)].append(float(value))
    if per_policy:
        summary["policy_return_mean"] = {p: sum(v) / len(v) for p, v in per_policy.items()}
        summary["policy_return_min"] = {p: min(v) for p, v in per_policy.items()}
        summary["policy_return_max"] = {p: max(v) for p, v in per_policy.items()}
    return summary


class _ReportMetrics(Operator):
    """Emits a metrics dict when ``report_interval_s`` passed and ``min_env_steps`` were sampled."""

    kind = "combine"

    def __init__(self, samplers: Sequence[SamplerHandle], report_interval_s: float, min_env_steps: int) -> None:
        self.samplers = list(samplers)
        self.report_interval_s = report_interval_s
        self.min_env_steps = min_env_steps
        self.iteration = 0
        self._last_time: float | None = None
        self._last_counters: dict[str, int] = {}

    @property
    def name(self) -> str:
        return "StandardMetricsReporting"

    def describe(self) -> str:
        return (
            f"StandardMetricsReporting({len(self.samplers)} samplers, "
            f"every {self.report_interval_s} s and {self.min_env_steps} env steps)"
        )

    def __call__(self, item: Any, metrics: PlanMetrics) -> list[dict[str, Any]]:
        now = time.perf_counter()
        start = metrics.started_at if metrics.started_at is not None else now
        last_time = self._last_time if self._last_time is not None else start
        counters = dict(metrics.counters)
        sampled = counters.get(NUM_ENV_STEPS_SAMPLED, 0) - self._last_counters.get(NUM_ENV_STEPS_SAMPLED, 0)
        if now - last_time < self.report_interval_s or sampled < self.min_env_steps:
            return []
        episodes = [e for stats in call_all(self.samplers, SamplerFace.pop_episode_stats) for e in stats]
        elapsed = max(now - last_time, 1e-9)
        delta = {k: v - self._last_counters.get(k, 0) for k, v in counters.items()}
        trained = delta.get(NUM_ENV_STEPS_TRAINED, 0)
        self.iteration += 1
        self._last_time, self._last_counters = now, counters
        snapshot = metrics.snapshot()
        return [
            {
                "iteration": self.iteration,
                "time_total_s": now - start,
                "time_this_iter_s": now - last_time,
                NUM_ENV_STEPS_SAMPLED: counters.get(NUM_ENV_STEPS_SAMPLED, 0),
                NUM_AGENT_STEPS_SAMPLED: counters.get(NUM_AGENT_STEPS_SAMPLED, 0),
                NUM_ENV_STEPS_TRAINED: counters.get(NUM_ENV_STEPS_TRAINED, 0),
                "env_steps_sampled_this_iter": sampled,
                "env_steps_trained_this_iter": trained,
                "env_steps_sampled_per_s": sampled / elapsed,
                "env_steps_trained_per_s": trained / elapsed,
                "counters": counters,
                "counters_this_iter": delta,
                "learner": snapshot["learner"],
                "timers": snapshot["timers"],
                "operators": snapshot["operators"],
                "info": snapshot["info"],
                "episodes": summarize_episodes(episodes),
                "episode_stats": episodes,
            }
        ]


def StandardMetricsReporting(  # noqa: N802 - named like an operator, as plans read
    iterator: LocalIterator,
    samplers: Sequence[SamplerHandle],
    report_interval_s: float = 0.0,
    min_env_steps: int = 0,
) -> LocalIterator:
    """The stream of ``iterator`` turned into per-iteration metrics dicts.

    An item of ``iterator`` ends an iteration once ``report_interval_s`` seconds passed
    and ``min_env_steps`` environment steps were sampled since the last report (items in
    between are consumed and dropped). Each report holds the step counters (totals and
    this iteration's deltas), steps per second, the latest learner statistics, the
    episodes popped from every sampler (``pop_episode_stats``: raw in
    ``episode_stats``, summarized in ``episodes``), and the counters and timers of every
    operator of the plan.
    """
    if not isinstance(iterator, LocalIterator):
        raise TypeError(f"StandardMetricsReporting needs a LocalIterator, got {type(iterator).__name__}")
    if report_interval_s < 0 or not isinstance(min_env_steps, int) or min_env_steps < 0:
        raise ValueError(
            f"StandardMetricsReporting needs report_interval_s >= 0 and an integer min_env_steps >= 0, "
            f"got {report_interval_s!r} and {min_env_steps!r}"
        )
    return iterator.combine(_ReportMetrics(samplers, report_interval_s, min_env_steps))
