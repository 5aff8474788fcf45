"""Stopping on, and optimising, any figure a metrics row reports (``stop.metric``, ``eval.metric``).

RLlib's ``stop={"env_runners/episode_return_mean": 200}`` done for league's rows: a *metric
key* names a figure of a ``metrics.jsonl`` row,

- a top-level figure: ``env_steps``, ``episodes``, ``mean_episode_len``, ``eval_return_mean``
  (one value per learning policy), ... (:data:`ROW_FIGURES`);
- a policy's statistic, as the row spells it: ``main/episode_return_mean``, ``main/entropy``;
- an entry of a row's mapping, path parts joined by ``/``: ``eval_return_mean/main``,
  ``win_rate_vs_random/prey``, ``counters/num_env_steps_trained``, ``ratings/openskill/main``.

A key naming one value per policy (``eval_return_mean``) is met when *every* policy's value
is (the worst one decides, as ``stop.return_mean``). ``stop.mode`` says which way: ``max``
stops once the value is ``>=`` the threshold, ``min`` once it is ``<=`` it (a loss).

What can be checked before Ray starts is: a bare key (no ``/``) must be one of
:data:`ROW_FIGURES`, a key with ``/`` must be well formed, thresholds finite numbers and the
mode ``max`` or ``min``. Policy ids and statistics are only known once rows arrive, so a key
that no row ever reported (or that named something other than numbers) gets a warning when
the run ends: the run went on to its other budgets.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "ROW_FIGURES", "STOP_KEYS", "check_metric_key", "check_stop_metric", "require_stop", "lookup", "figures", "metric_stop_met",
    "warn_unreported", "final_value",
]  # fmt: skip

#: The stop criteria; a run with none of them set would train until it is killed.
STOP_KEYS = ("stop.time_s", "stop.env_steps", "stop.iterations", "stop.win_rate", "stop.return_mean", "stop.metric")

#: Top-level figures of a metrics row (league.run.records.metrics_row and the leagues' own
#: metrics()): numbers, or one number per learning policy. Others (counters, ratings,
#: operators) are mappings reached by their entries (``counters/num_env_steps_trained``).
ROW_FIGURES = frozenset(
    {
        "iteration", "env_steps", "time_s", "env_steps_per_s", "train_steps", "episodes", "mean_episode_len",
        "win_rate_vs_random", "eval_return_mean", "eval_return_median", "snapshots", "snapshots_evicted",
        "learner_restores", "lost_sampler_calls", "league_players", "coordinator_restarts", "exploitability", "plan_idle_s",
        "eval_env_steps",
    }
)  # fmt: skip

#: What a metric key met in the rows so far: a figure, something else, or nothing yet.
OK, NOT_A_NUMBER, NEVER = "reported", "not a number", "never reported"


def check_metric_key(key: Any, where: str) -> None:
    """Raise ``ValueError`` naming ``where`` unless ``key`` can name a figure of a metrics row."""
    if not isinstance(key, str) or not key.strip() or key != key.strip():
        raise ValueError(f"{where}: a metric key must be a non-empty string without surrounding spaces, got {key!r}")
    if "/" in key:
        if any(not part for part in key.split("/")):
            raise ValueError(f"{where}: metric key '{key}' has an empty part between '/'s")
        return
    if key not in ROW_FIGURES:
        raise ValueError(
            f"{where}: '{key}' is no figure of a metrics row; name one of {sorted(ROW_FIGURES)}, a policy's statistic "
            "('<policy>/<statistic>', e.g. main/episode_return_mean) or an entry of a row's mapping "
            "('<key>/<entry>', e.g. eval_return_mean/main, counters/num_env_steps_trained)"
        )


def check_stop_metric(metric: Mapping[Any, Any], mode: Any) -> None:
    """Validate ``stop.metric`` (metric key -> finite threshold) and ``stop.mode``."""
    if mode not in ("max", "min"):
        raise ValueError(f"stop.mode must be 'max' (stop at >= the threshold) or 'min' (<=), got {mode!r}")
    for key, threshold in metric.items():
        check_metric_key(key, f"stop.metric.{key}")
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not math.isfinite(threshold):
            raise ValueError(f"stop.metric.{key}: the threshold must be a finite number, got {threshold!r}")


def require_stop(stop: Any) -> None:
    """Raise ``ValueError`` naming the ``stop.*`` keys unless ``stop`` (a
    :class:`~league.run.schema.StopConfig`) sets at least one criterion: a run without one
    would train, silently, until it is killed (``stop.time_s=0`` with the default
    ``stop.env_steps=0``), and a killed run writes no final checkpoint or summary."""
    if stop.time_s or stop.env_steps or stop.iterations or stop.win_rate or stop.return_mean is not None or stop.metric:
        return
    raise ValueError(
        f"no stop criterion: every one of {', '.join(STOP_KEYS)} is off (0, null or empty), so the run would never "
        "end; set one, e.g. stop.time_s=600 (seconds) or stop.env_steps=1000000"
    )


def lookup(row: Mapping[str, Any] | None, key: str) -> Any:
    """The value ``key`` names in ``row`` (None when absent): the key itself, else a prefix up
    to a ``/`` naming a mapping, looked into with the rest (``eval_return_mean/main``)."""
    if not isinstance(row, Mapping):
        return None
    if key in row:
        return row[key]
    cut = key.find("/")
    while cut != -1:
        inner = row.get(key[:cut])
        if isinstance(inner, Mapping):
            found = lookup(inner, key[cut + 1 :])
            if found is not None:
                return found
        cut = key.find("/", cut + 1)
    return None


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def figures(value: Any) -> list[float] | None:
    """A looked-up value as numbers: one, or one per entry of a flat mapping (per policy);
    None for anything else (an empty mapping, None, a string, nested mappings)."""
    if _is_number(value):
        return [float(value)]
    if isinstance(value, Mapping) and value and all(_is_number(v) for v in value.values()):
        return [float(v) for v in value.values()]
    return None


def metric_stop_met(metric: Mapping[str, float], mode: str, row: Mapping[str, Any] | None, status: dict[str, str]) -> bool:
    """Whether any key of ``metric`` reached its threshold in ``row`` (every value of a
    per-policy figure; ``mode`` max: >=, min: <=). ``status`` records what each key met so far."""
    met = False
    for key, threshold in metric.items():
        value = lookup(row, key)
        numbers = figures(value)
        if numbers is not None:
            status[key] = OK
        elif status.get(key) != OK:  # once reported, a key stays reported
            status[key] = NOT_A_NUMBER if value is not None and value != {} else status.get(key, NEVER)
        if numbers and not any(math.isnan(n) for n in numbers):
            met = met or (min(numbers) >= threshold if mode == "max" else max(numbers) <= threshold)
    return met


def warn_unreported(status: Mapping[str, str], row_keys: Iterable[str] = ()) -> None:
    """At the end of a run: a warning naming each ``stop.metric`` key no row reported as numbers."""
    missing = {key: what for key, what in status.items() if what != OK}
    if missing:
        known = sorted(row_keys)
        warnings.warn(
            f"stop.metric: {', '.join(f'{k!r} ({w})' for k, w in missing.items())} in this run's metrics rows, so it "
            f"never stopped the run{f'; the last row had {known}' if known else ''}",
            stacklevel=3,
        )


def final_value(rows: Iterable[Mapping[str, Any]], key: str) -> float | None:
    """``key``'s value in the last of ``rows`` that reported it as numbers (a per-policy figure:
    the mean over policies); None if none did. The figure a sweep optimises for ``eval.metric=<key>``."""
    for row in reversed(list(rows)):
        numbers = figures(lookup(row, key))
        if numbers:
            return sum(numbers) / len(numbers)
    return None
