"""Curves over a run, pulled out of its metrics rows.

A curve is a pair of equal-length lists ``(xs, ys)``; x is the row's ``env_steps``
(``iteration`` for rows without it), so runs of different iteration sizes compare.
Only finite numbers become points: a metric absent from a row, ``None`` or NaN is a gap
in that curve, never an error.

Row keys follow :mod:`league.trainer`: ``"<policy>/<stat>"`` for per-policy numbers
(policy ids may contain ``/`` themselves; the stat is what follows the last one), and
nested dicts for ``win_rate_vs_random``, ``exploitability`` and ``ratings``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard

__all__ = [
    "Curve",
    "Curves",
    "EPISODE_STATS",
    "is_number",
    "x_label",
    "policy_stats",
    "nested_curves",
    "rating_curves",
    "scalar_curve",
    "thin",
    "format_step",
]

Curve = tuple[list[float], list[float]]
Curves = dict[str, Curve]

#: Per-policy stats computed from training episodes (the rest are learner statistics).
EPISODE_STATS: tuple[str, ...] = ("episode_return_mean", "train_win_share")


def is_number(value: Any) -> TypeGuard[float]:
    """Whether ``value`` is a finite int or float (booleans are not numbers here)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _x(row: Mapping[str, Any]) -> float | None:
    for key in ("env_steps", "iteration"):
        if is_number(row.get(key)):
            return float(row[key])
    return None


def x_label(rows: Sequence[Mapping[str, Any]]) -> str:
    """Axis label for the x values :func:`policy_stats` and friends use."""
    return "env steps" if any(is_number(r.get("env_steps")) for r in rows) else "iteration"


def _append(curves: Curves, name: str, x: float, y: float) -> None:
    xs, ys = curves.setdefault(name, ([], []))
    xs.append(x)
    ys.append(float(y))


def policy_stats(rows: Sequence[Mapping[str, Any]]) -> dict[str, Curves]:
    """``{policy_id: {stat: curve}}`` from every top-level ``"<policy>/<stat>"`` number."""
    out: dict[str, Curves] = {}
    for row in rows:
        x = _x(row)
        if x is None:
            continue
        for key, value in row.items():
            if "/" not in key or not is_number(value):
                continue
            policy, stat = key.rsplit("/", 1)
            if policy and stat:
                _append(out.setdefault(policy, {}), stat, x, value)
    return out


def nested_curves(rows: Sequence[Mapping[str, Any]], key: str) -> Curves:
    """``{name: curve}`` from rows whose ``key`` is a ``{name: number}`` dict."""
    out: Curves = {}
    for row in rows:
        x, values = _x(row), row.get(key)
        if x is None or not isinstance(values, Mapping):
            continue
        for name, value in values.items():
            if is_number(value):
                _append(out, str(name), x, value)
    return out


def rating_curves(rows: Sequence[Mapping[str, Any]]) -> dict[str, Curves]:
    """``{system: {player_id: curve}}`` from rows' ``ratings`` (``{"elo": {...}, ...}``)."""
    out: dict[str, Curves] = {}
    for row in rows:
        x, ratings = _x(row), row.get("ratings")
        if x is None or not isinstance(ratings, Mapping):
            continue
        for system, table in ratings.items():
            if not isinstance(table, Mapping):
                continue
            curves = out.setdefault(str(system), {})
            for player, value in table.items():
                if is_number(value):
                    _append(curves, str(player), x, value)
    return {system: curves for system, curves in out.items() if curves}


def scalar_curve(rows: Sequence[Mapping[str, Any]], key: str) -> Curve | None:
    """The curve of top-level number ``key``, or None when no row has it."""
    curves: Curves = {}
    for row in rows:
        x = _x(row)
        if x is not None and is_number(row.get(key)):
            _append(curves, key, x, row[key])
    return curves.get(key)


def thin(curve: Curve, max_points: int = 1500) -> Curve:
    """Every k-th point (and always the last) so a curve has at most about ``max_points``.

    Long runs log tens of thousands of rows; inline SVG grows with every vertex.
    """
    if max_points < 2:
        raise ValueError(f"max_points must be >= 2, got {max_points}")
    xs, ys = curve
    if len(xs) <= max_points:
        return curve
    step = math.ceil(len(xs) / max_points)
    idx = list(range(0, len(xs), step))
    if idx[-1] != len(xs) - 1:
        idx.append(len(xs) - 1)
    return [xs[i] for i in idx], [ys[i] for i in idx]


def format_step(step: float) -> str:
    """A step count for an axis: ``12_500 -> "12.5k"``, ``3_000_000 -> "3M"``."""
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(step) >= size:
            return f"{step / size:.3g}{suffix}"
    return str(int(step)) if step == int(step) else f"{step:.3g}"
