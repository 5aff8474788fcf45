"""What a training run shows on the terminal while it runs.

:func:`make_progress` picks one of three reporters from the run config: a live
``rich`` display (a bar towards whichever stop budget is nearest, plus iteration, env
steps, steps/s, time left and the run's headline (:mod:`league.run.headline`: per side the
figure that fits the game, a win rate against the yardstick or a return, and its best so
far) when stdout is a terminal;
one plain line per iteration when it is not (logs, CI); nothing when ``verbose`` is
off. The budget arithmetic is :func:`budget_status`, a pure function.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, Protocol

from league.config import RunConfig, StopConfig

__all__ = ["ProgressReporter", "LiveProgress", "LineProgress", "NoProgress", "budget_status", "format_status", "headline_status", "make_progress"]


def budget_status(
    stop: StopConfig,
    iteration: int,
    env_steps: int,
    elapsed_s: float,
    start_iteration: int = 0,
    start_env_steps: int = 0,
) -> tuple[float, float | None]:
    """``(fraction done, seconds left)`` towards the nearest enabled stop budget.

    The run ends at the first budget reached, so the fraction is the largest of the
    budgets' fractions and the time left the smallest estimate; rates are measured over
    this process's share of the run (``start_*``: counters when it began, e.g. after a
    resume). Seconds left is None when no budget is set or nothing has been measured yet.
    """
    fractions, left = [0.0], []
    rate_window = max(elapsed_s, 1e-9)
    if stop.env_steps:
        fractions.append(env_steps / stop.env_steps)
        done = env_steps - start_env_steps
        if done > 0:
            left.append(max(stop.env_steps - env_steps, 0) * rate_window / done)
    if stop.iterations:
        fractions.append(iteration / stop.iterations)
        done = iteration - start_iteration
        if done > 0:
            left.append(max(stop.iterations - iteration, 0) * rate_window / done)
    if stop.time_s:
        fractions.append(elapsed_s / stop.time_s)
        left.append(max(stop.time_s - elapsed_s, 0.0))
    return min(max(fractions), 1.0), (min(left) if left else None)


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


def best_rating(row: Mapping[str, Any]) -> str:
    """``player=rating`` of the best TrueSkill (conservative) rating in a league row, or ''."""
    table = (row.get("ratings") or {}).get("trueskill") or {}
    if not table:
        return ""
    player, rating = max(table.items(), key=lambda item: item[1])
    return f"{player}={rating:.1f}"


def _returns(row: Mapping[str, Any]) -> str:
    returns = row.get("eval_return_mean") or {}
    return ("return " + " ".join(f"{pid}={r:.3g}" for pid, r in returns.items())) if returns else ""


def _figure(row: Mapping[str, Any], key: str) -> str:
    from league.run.stops import figures, lookup

    value = lookup(row, key)
    if figures(value) is None:
        return "-"
    if isinstance(value, Mapping):
        return " ".join(f"{k}={v:.4g}" for k, v in value.items())
    return f"{value:.4g}"


def league_status(row: Mapping[str, Any], metric: str = "win_rate") -> str:
    """The league part of a status line: evaluation mean returns (unless ``metric`` is
    ``return``: then they lead the line), best rating and exploitability where the row has them."""
    parts = [_returns(row)] if metric != "return" else []
    best = best_rating(row)
    if best:
        parts.append(f"best rating {best}")
    expl = row.get("exploitability") or {}
    if "meta_strategy" in expl:
        parts.append(f"exploitability {expl['meta_strategy']:.4f}")
    return "  ".join(p for p in parts if p)


def headline_status(row: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(figure, metric)`` of a row's ``headline`` (league.run.headline): its label, each side's
    figure and the best value so far, plus the win rate against random where the headline's is
    against a yardstick; None for a row without one."""
    head = row.get("headline")
    if not isinstance(head, Mapping):
        return None
    from league.run.headline import Headline

    h = Headline.from_dict(head)
    metric = h.metric
    if metric not in ("win_rate", "return"):  # a metric key: its latest value (the row's, else the last seen) and the best
        shown = _figure(row, metric)  # per policy where the row has the key
        if shown == "-" and h.value is not None:
            shown = f"{h.value:.4g}"
        return f"{metric} {shown}" + ("" if h.best is None else f" (best {h.best:.4g})"), metric
    sides = " ".join(f"{pid}={v:.3f}" if metric == "win_rate" else f"{pid}={v:.3g}" for pid, v in h.sides.items()) or "-"
    best = "" if h.best is None else f" (best {h.best:.3f})" if metric == "win_rate" else f" (best {h.best:.3g})"
    figure = f"{h.label()} {sides}{best}"
    wr = row.get("win_rate_vs_random") or {}
    if metric == "win_rate" and h.opponent != "random" and wr:
        figure += "  vs random " + " ".join(f"{pid}={w:.3f}" for pid, w in wr.items())
    return figure, metric


def format_status(row: Mapping[str, Any], seconds_left: float | None, best_win_rate: float | None, metric: str = "win_rate") -> str:
    """One-line summary of an iteration's metrics row, led by the run's headline (its
    ``headline``: :func:`headline_status`); a row without one by ``metric`` (``eval.metric``
    resolved from the config alone): the win rate against random, for ``return`` (co-op and
    single-agent envs, where the win rate is a meaningless 0) the evaluation mean return,
    or the figure a metric key names."""
    led = headline_status(row)
    if led is not None:
        figure, metric = led
    elif metric == "return":
        figure = _returns(row) or "return -"
    elif metric != "win_rate":  # a metric key (eval.metric=<key>, league.run.stops)
        figure = f"{metric} {_figure(row, metric)}"
    else:
        wr = row.get("win_rate_vs_random") or {}
        latest = " ".join(f"{pid}={w:.3f}" for pid, w in wr.items()) or "-"
        best = "-" if best_win_rate is None else f"{best_win_rate:.3f}"
        figure = f"win_rate_vs_random {latest} (best {best})"
    line = (
        f"iter {row['iteration']:5d}  steps {row['env_steps']:10,d}  steps/s {row['env_steps_per_s']:8,.1f}  "
        f"left {_duration(seconds_left):>7}  {figure}  snapshots {row.get('snapshots', 0)}"
    )
    league = league_status(row, metric)
    return f"{line}  {league}" if league else line


class ProgressReporter(Protocol):
    """Receives each iteration's metrics row."""

    def update(self, row: Mapping[str, Any], elapsed_s: float, best_win_rate: float | None) -> None:
        """Show the state after one iteration."""

    def close(self) -> None:
        """Stop showing (idempotent)."""


class _Budgeted:
    def __init__(self, stop: StopConfig, start_iteration: int, start_env_steps: int, metric: str = "win_rate") -> None:
        self.stop = stop
        self.metric = metric  # the figure the status leads with (format_status)
        self.start_iteration, self.start_env_steps = start_iteration, start_env_steps

    def _status(self, row: Mapping[str, Any], elapsed_s: float) -> tuple[float, float | None]:
        return budget_status(
            self.stop, row["iteration"], row["env_steps"], elapsed_s, self.start_iteration, self.start_env_steps
        )


class NoProgress:
    """Shows nothing."""

    def update(self, row: Mapping[str, Any], elapsed_s: float, best_win_rate: float | None) -> None:
        """Ignore the row."""

    def close(self) -> None:
        """Nothing to stop."""


class LineProgress(_Budgeted):
    """One plain line per iteration on ``stream`` (stdout by default)."""

    def __init__(self, stop: StopConfig, start_iteration: int = 0, start_env_steps: int = 0, stream: Any = None, metric: str = "win_rate") -> None:
        super().__init__(stop, start_iteration, start_env_steps, metric)
        self.stream = stream

    def update(self, row: Mapping[str, Any], elapsed_s: float, best_win_rate: float | None) -> None:
        """Print the row's status line."""
        _, left = self._status(row, elapsed_s)
        print(format_status(row, left, best_win_rate, self.metric), file=self.stream or sys.stdout, flush=True)

    def close(self) -> None:
        """Nothing to stop."""


class LiveProgress(_Budgeted):
    """A ``rich`` progress bar with the run's status, redrawn in place after each iteration."""

    def __init__(self, stop: StopConfig, start_iteration: int = 0, start_env_steps: int = 0, console: Any = None, metric: str = "win_rate") -> None:
        from rich.progress import BarColumn, Progress, TextColumn

        super().__init__(stop, start_iteration, start_env_steps, metric)
        # Narrow enough for an 80-column terminal.
        self._progress = Progress(
            BarColumn(bar_width=16),
            TextColumn("{task.percentage:>3.0f}%"),
            TextColumn("{task.fields[status]}"),
            console=console,
            auto_refresh=False,
        )
        self._task = self._progress.add_task("train", total=1.0, status="starting")
        self._progress.start()
        self._open = True

    def update(self, row: Mapping[str, Any], elapsed_s: float, best_win_rate: float | None) -> None:
        """Move the bar and rewrite the status text."""
        fraction, left = self._status(row, elapsed_s)
        metric, led = self.metric, headline_status(row)
        if led is not None:
            figure, metric = led
        elif self.metric == "return":
            figure = _returns(row) or "return -"
        else:
            figure = "best win " + ("-" if best_win_rate is None else f"{best_win_rate:.3f}")
        status = (
            f"iter {row['iteration']}  {row['env_steps']:,} steps  {row['env_steps_per_s']:,.0f}/s  "
            f"left {_duration(left)}  {figure}  {league_status(row, metric)}"
        ).rstrip()
        self._progress.update(self._task, completed=fraction, status=status)
        self._progress.refresh()

    def close(self) -> None:
        """Leave the last state on screen and stop redrawing."""
        if self._open:
            self._progress.stop()
            self._open = False


def make_progress(cfg: RunConfig, start_iteration: int = 0, start_env_steps: int = 0) -> ProgressReporter:
    """The reporter for a run: live on a terminal, lines otherwise, none unless ``verbose``;
    it leads with ``eval.metric`` as the final line of ``league-train`` resolves it."""
    if not cfg.verbose:
        return NoProgress()
    from league.run.build import success_metric

    metric = success_metric(cfg)
    if cfg.logging.progress and sys.stdout.isatty():
        return LiveProgress(cfg.stop, start_iteration, start_env_steps, metric=metric)
    return LineProgress(cfg.stop, start_iteration, start_env_steps, metric=metric)
