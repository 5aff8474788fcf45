"""A run's headline: one figure per side that fits the game, and the one figure the final
line prints, ``summary.json`` holds and a Hydra sweep optimises.

The figure that fits depends on the game's shape, which comes from its config and from
the rewards its episodes paid (:class:`RewardEvidence`, fed every training and evaluation
episode):

==============  ======================================================  ===============
shape           what it is                                              headline
==============  ======================================================  ===============
single_agent    one agent (Gymnasium)                                   return
team            one group of every agent (``env.groups={team: [*]}``)   return
coop            several sides, every agent paid the same in every       return
                episode (detected, or ``eval.shape: coop``)
zero_sum        the agents' returns add up to the same total in every   win_rate
                episode (board games, poker: someone wins)
general_sum     several sides, neither (predator and prey)              return
==============  ======================================================  ===============

``return``: each side's mean evaluation return against the evaluation opponents (its
"score"; for a co-op team, the team's return), the headline their mean over sides. Co-op
sides are evaluated together (:func:`plays_together`): each side's learning policy with the
other sides' as partners (:data:`TEAMMATES`), not with random players, so the figure is the
team's return.
``win_rate``: each side's greedy win rate against its yardstick (``eval.yardstick``, a
scripted player a game's preset declares, e.g. connect four's ``negamax``; else the
uniform-random player), the headline their mean. ``eval.metric`` picks the headline
(``auto``: the shape's; ``win_rate``, ``return``, or any metric key of the rows).

Pure functions and one small class: no Ray, no env.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "SHAPES", "SHAPE_METRIC", "SHAPE_ABOUT", "COOP_WARNING_EPISODES", "TEAMMATES", "RewardEvidence", "Headline", "Headlines",
    "game_shape", "plays_together", "choose_headline", "final_figure",
]  # fmt: skip

#: ``eval.shape`` values: ``auto`` (from the config and the rewards) or a declared shape.
SHAPES = ("auto", "single_agent", "team", "coop", "zero_sum", "general_sum")

#: The headline metric of each shape (``eval.metric: auto``).
SHAPE_METRIC = {"single_agent": "return", "team": "return", "coop": "return", "zero_sum": "win_rate", "general_sum": "return"}

#: A few words on each shape, for the final line.
SHAPE_ABOUT = {
    "single_agent": "single agent",
    "team": "one team",
    "coop": "co-op: sides rewarded alike",
    "zero_sum": "zero-sum",
    "general_sum": "general-sum sides",
}

#: Episodes of identical rewards before a run that is not one team is told it looks co-op.
COOP_WARNING_EPISODES = 20

#: Whom co-op sides are evaluated with: the other sides' learning policies, as partners.
TEAMMATES = "teammates"


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-6 * max(1.0, abs(a), abs(b))


@dataclass
class RewardEvidence:
    """What the episodes so far say about how the game pays its agents.

    Attributes:
        episodes: episodes seen (of more than one agent).
        identical: every agent got the same return in every one of them.
        constant_sum: the agents' returns added up to the same total in every one of them.
        nonzero: some agent's return was not 0 (all-zero episodes prove nothing).
    """

    episodes: int = 0
    identical: bool = True
    constant_sum: bool = True
    nonzero: bool = False
    total: float | None = None  # the constant sum, while it holds

    def observe(self, episodes: Iterable[Mapping[str, Any]]) -> None:
        """Take finished episodes' per-agent returns (``episode["returns"]``)."""
        for ep in episodes:
            returns = [float(r) for r in (ep.get("returns") or {}).values()]
            if len(returns) < 2 or not all(math.isfinite(r) for r in returns):
                continue
            self.episodes += 1
            self.nonzero = self.nonzero or any(r != 0.0 for r in returns)
            self.identical = self.identical and all(_close(r, returns[0]) for r in returns)
            total = sum(returns)
            if self.total is None:
                self.total = total
            self.constant_sum = self.constant_sum and _close(total, self.total)

    def shape(self) -> str | None:
        """``coop``, ``zero_sum`` or ``general_sum`` as the rewards so far show it; None before
        any episode that proves one (only all-zero returns so far)."""
        if not self.episodes or not self.nonzero:
            return None
        if self.identical:
            return "coop"
        return "zero_sum" if self.constant_sum else "general_sum"


def game_shape(declared: str, num_agents: int, num_sides: int, evidence: RewardEvidence) -> str | None:
    """The game's shape (:data:`SHAPES`): ``declared`` (``eval.shape``) unless ``auto``; a single
    agent or a single side from the config; else from the rewards (None before any evidence)."""
    if declared != "auto":
        return declared
    if num_agents == 1:
        return "single_agent"
    if num_sides == 1:
        return "team"
    return evidence.shape()


def plays_together(shape: str | None, num_sides: int) -> bool:
    """Whether evaluation games put every side's learning policy on its seats at once (a co-op
    game of several sides: a side played beside random partners shows what it does alone,
    not what the team does), instead of one side against random players."""
    return shape == "coop" and num_sides > 1


def _mean(values: Mapping[str, float]) -> float | None:
    return round(sum(values.values()) / len(values), 5) if values else None


@dataclass(frozen=True)
class Headline:
    """The run's headline now.

    Attributes:
        metric: ``win_rate``, ``return`` or a metric key (``eval.metric``).
        shape: the game's shape (:data:`SHAPES`), None until episodes show it.
        opponent: whom the sides' figures are against (the yardstick, or ``random``).
        sides: each learning policy's (side's) figure, for ``win_rate`` and ``return``.
        value: the headline (the sides' mean; a metric key's value), None before any evaluation.
        best: the best ``value`` of the run so far.
        mode: which way it improves: ``max`` (higher is better) or ``min`` (``eval.metric_mode``).
    """

    metric: str
    shape: str | None
    opponent: str
    sides: dict[str, float] = field(default_factory=dict)
    value: float | None = None
    best: float | None = None
    mode: str = "max"

    @classmethod
    def from_dict(cls, head: Mapping[str, Any]) -> Headline:
        """The headline a metrics row's or ``summary.json``'s ``headline`` mapping holds (what
        :meth:`as_dict` wrote; entries of the wrong type read as absent)."""
        def number(x: Any) -> float | None:
            return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None

        raw = head.get("sides")
        sides = {str(k): float(v) for k, v in (raw.items() if isinstance(raw, Mapping) else ()) if number(v) is not None}
        shape = head.get("shape") if isinstance(head.get("shape"), str) else None
        mode = "min" if head.get("mode") == "min" else "max"
        return cls(str(head.get("metric", "win_rate")), shape, str(head.get("opponent", "random")), sides, number(head.get("value")),
                   number(head.get("best")), mode)  # fmt: skip

    def as_dict(self) -> dict[str, Any]:
        """The ``headline`` mapping of a metrics row and ``summary.json``."""
        return {"metric": self.metric, "shape": self.shape, "opponent": self.opponent, "value": self.value,
                "best": self.best, "mode": self.mode, "sides": dict(self.sides)}  # fmt: skip

    def label(self) -> str:
        """What the figure is, in words: ``win rate vs negamax``, ``mean return``, a metric key."""
        if self.metric == "win_rate":
            return f"win rate vs {self.opponent}"
        if self.metric == "return":
            if self.opponent == TEAMMATES:
                return "team return"
            return "mean return" if self.opponent == "random" or self.shape in ("single_agent", "team") else f"mean return vs {self.opponent}"
        return self.metric


def choose_headline(
    metric: str,
    shape: str | None,
    win_rates: Mapping[str, float],
    returns: Mapping[str, float],
    yardstick: str | None = None,
    yardstick_rates: Mapping[str, float] | None = None,
    opponent: str = "random",
    yardstick_returns: Mapping[str, float] | None = None,
) -> Headline:
    """The headline for ``eval.metric`` = ``metric`` (``auto``: the shape's, ``win_rate`` before
    the shape is known) from each side's latest evaluation figures: win rates and mean returns
    against ``opponent``, and against ``yardstick`` where one is played (its figures are the
    headline's then). A metric key's value is the caller's to fill in (``value`` None)."""
    resolved = (SHAPE_METRIC.get(shape or "", "win_rate")) if metric == "auto" else metric
    if resolved in ("win_rate", "return"):
        if yardstick:
            against, sides = yardstick, dict((yardstick_rates if resolved == "win_rate" else yardstick_returns) or {})
        else:
            against, sides = opponent, dict(win_rates if resolved == "win_rate" else returns)
        return Headline(resolved, shape, against, sides, _mean(sides))
    return Headline(resolved, shape, opponent)


class Headlines:
    """The run's headline as evidence arrives: the shape from the config and the rewards seen,
    the best value so far, and one warning where the rewards look co-op but the run is not one team.

    Args:
        metric: ``eval.metric``.
        declared_shape: ``eval.shape``.
        num_agents: the env's agents.
        num_sides: its sides (``env.groups``, else one per agent).
        one_spec: every agent has the same spaces (so one team could play every seat).
        yardstick: ``eval.yardstick`` (None: none).
        mode: ``eval.metric_mode``: ``max`` (higher is better) or ``min``; the best follows it.
    """

    def __init__(
        self, metric: str, declared_shape: str, num_agents: int, num_sides: int, one_spec: bool, yardstick: str | None, mode: str = "max",
    ) -> None:
        self.metric, self.declared_shape, self.mode = metric, declared_shape, mode
        self.num_agents, self.num_sides, self.one_spec = num_agents, num_sides, one_spec
        self.yardstick = yardstick
        self.evidence = RewardEvidence()
        self.best: float | None = None
        self._latest_key_value: float | None = None  # a metric key's latest value (rows that lack the key keep it)
        self._warned = False

    def observe(self, episodes: Iterable[Mapping[str, Any]]) -> None:
        """Take finished episodes (training or evaluation) as evidence of the game's shape."""
        self.evidence.observe(episodes)
        self._warn_if_coop()

    def shape(self) -> str | None:
        """The game's shape now (:func:`game_shape`)."""
        return game_shape(self.declared_shape, self.num_agents, self.num_sides, self.evidence)

    def together(self) -> bool:
        """Whether evaluation now plays the sides together (:func:`plays_together`)."""
        return plays_together(self.shape(), self.num_sides)

    def current(
        self, win_rates: Mapping[str, float], returns: Mapping[str, float], yardstick_rates: Mapping[str, float],
        row: Mapping[str, Any] | None = None, yardstick_returns: Mapping[str, float] | None = None,
    ) -> Headline:
        """The headline from the latest evaluation figures (a metric key's from ``row``, else its
        latest value: exact exploitability, say, is measured every few iterations), its best
        value so far updated (the highest, or the lowest with ``mode`` min)."""
        opponent = TEAMMATES if self.together() else "random"
        h = choose_headline(self.metric, self.shape(), win_rates, returns, self.yardstick, yardstick_rates, opponent, yardstick_returns)
        value = h.value
        if value is None and h.metric not in ("win_rate", "return"):
            from league.run.stops import figures, lookup

            numbers = figures(lookup(row, h.metric)) if row is not None else None
            if numbers:
                self._latest_key_value = sum(numbers) / len(numbers)
            value = self._latest_key_value
        if value is not None:
            better = max if self.mode == "max" else min
            self.best = value if self.best is None else better(self.best, value)
        return Headline(h.metric, h.shape, h.opponent, h.sides, value, self.best, self.mode)

    def _warn_if_coop(self) -> None:
        ev = self.evidence
        if self._warned or self.declared_shape != "auto" or self.num_sides == 1 or ev.shape() != "coop":
            return
        if ev.episodes < COOP_WARNING_EPISODES:
            return
        self._warned = True
        how = (
            'To train one policy on every seat, declare one team: +env.groups={team: ["*"]}'
            if self.one_spec
            else "Its sides' spaces differ, so each keeps its own policy (env.groups); eval.shape=coop declares the shape"
        )
        warnings.warn(
            f"every agent got the same return in all {ev.episodes} episodes so far: this game looks co-op, but it runs as "
            f"{self.num_sides} sides that play each other as opponents; its headline is the team return. {how}",
            stacklevel=2,
        )


def final_figure(summary: dict[str, Any], history: Iterable[Mapping[str, Any]]) -> str:
    """The final line's figure from ``summary["headline"]``; sets ``summary["final_metric"]``
    (what a sweep optimises) and ``summary["metric"]``. A metric key's value is its last in
    ``history`` (the run's metrics rows)."""
    head = summary.get("headline") or {}
    metric = str(head.get("metric", "win_rate"))
    value = head.get("value")
    if metric not in ("win_rate", "return"):
        from league.run.stops import final_value

        value = final_value(history, metric)
        head["value"] = value
    summary["metric"], summary["final_metric"] = metric, value
    h = dataclasses.replace(Headline.from_dict(head), value=value)
    shape = SHAPE_ABOUT.get(h.shape or "", "shape not yet seen")
    sides = " ".join(f"{pid}={v:.4g}" for pid, v in h.sides.items())
    per_side = f"; per side {sides}" if len(h.sides) > 1 else ""
    shown = "None" if value is None else f"{value:.4g}"
    return f"{h.label()} {shown} ({shape}{per_side})"
