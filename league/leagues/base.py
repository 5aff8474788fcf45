"""What the trainer asks of a league while a run goes on.

A :class:`TrainingLeague` sits between the trainer and the population logic of
:mod:`league.population`: it tells samplers which non-learning policies to load and
which matchup source to use, takes finished episodes, and after each iteration applies
its decisions (new snapshots loaded on every sampler, learning players reset) to the
samplers and the learner. Its state goes into checkpoints as JSON plus the weights of
its frozen policies.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from league.policy import PolicyFactory
from league.runtime.actors import Pending, resolve_lenient, share, submit
from league.runtime.faces import LearnerFace, SamplerFace, SamplerHandle
from league.population.payoff import PayoffTable
from league.sampling.matchups import Matchup, MatchupSource

__all__ = ["IntervalMeasure", "TrainingLeague", "Weights", "load_frozen_policies"]

T = TypeVar("T")

Weights = dict[str, np.ndarray]


def load_frozen_policies(samplers: Sequence[SamplerHandle], policies: Mapping[str, tuple[PolicyFactory, Weights | None]]) -> None:
    """Add frozen policies ``{policy_id: (factory, weights)}`` to every sampler and wait (a
    sampler being restarted gets every frozen policy again from its restart hook)."""
    if not policies:
        return
    calls: list[Pending[None]] = []
    targets: list[SamplerHandle] = []
    for pid, (factory, weights) in policies.items():
        shared = share(weights, samplers) if weights is not None else None
        for sampler in samplers:
            calls.append(submit(sampler, SamplerFace.add_policy, pid, factory, shared, learns=False))
            targets.append(sampler)
    resolve_lenient(calls, targets)


class IntervalMeasure:
    """When a costly league measurement (exact exploitability) taken every ``interval``
    iterations is due: on those iterations, unless the run has less time left than the
    longest one took. A liar's dice league solves a larger meta-game with each snapshot (up
    to ~12 s a measurement), and its last one would otherwise carry the run that long past
    ``stop.time_s``; the headline keeps the latest value measured."""

    def __init__(self, interval: int) -> None:
        self.interval = int(interval)
        self.longest_s = 0.0

    def due(self, iteration: int, time_left_s: float | None = None) -> bool:
        """Whether to measure at ``iteration`` with ``time_left_s`` seconds of the run left (None: no time budget)."""
        if not self.interval or iteration % self.interval:
            return False
        return time_left_s is None or time_left_s >= self.longest_s

    def timed(self, measure: Callable[[], T]) -> T:
        """``measure()``, its duration kept if the longest so far."""
        start = time.perf_counter()
        out = measure()
        self.longest_s = max(self.longest_s, time.perf_counter() - start)
        return out


class TrainingLeague(ABC):
    """The league as the trainer drives it (see the module docstring)."""

    #: Policy ids of the learning players, in order.
    learning: list[str]

    @property
    @abstractmethod
    def payoff(self) -> PayoffTable:
        """Head-to-head results of the league's players."""

    @abstractmethod
    def frozen_policies(self) -> dict[str, tuple[PolicyFactory, Weights | None]]:
        """Every non-learning policy samplers need: ``{policy_id: (factory, weights or None)}``."""

    @abstractmethod
    def matchups(self) -> MatchupSource:
        """The matchup source samplers should use now."""

    @abstractmethod
    def record(self, episodes: list[dict[str, Any]]) -> None:
        """Feed finished training (or league-scheduled evaluation) episodes to the league."""

    @abstractmethod
    def update(self, iteration: int, counters: Mapping[str, int], learner: LearnerFace, samplers: Sequence[SamplerHandle]) -> None:
        """After an iteration: take snapshots / reset players as due, on samplers and learner."""

    def bind(self, samplers: Sequence[SamplerHandle], initial_states: Mapping[str, bytes]) -> None:
        """The run's samplers, once they exist (before the first iteration), and every learning
        policy's learner state at its creation (``Learner.get_state``)."""
        self.samplers = list(samplers)

    def evaluation_source(self, policy_id: str, opponent: str, members: Sequence[str] = ()) -> MatchupSource:
        """The matchups of ``policy_id``'s evaluation games against ``opponent``: one seat at
        random, ``opponent`` on the others (a league of sides puts it on its own side's seats).
        ``members``: ``opponent`` is a mix of these players, one drawn for each other seat."""
        from league.sampling.matchups import OpponentSampling

        return OpponentSampling(policy_id, {m: 1.0 for m in (members or (opponent,))})

    def teammates(self, policy_id: str) -> list[str]:
        """The learning policies that :meth:`teammates_source` seats with ``policy_id`` (itself
        first): a co-op game's team, whose figures one set of evaluation games gives."""
        return [policy_id]

    def teammates_source(self, policy_id: str) -> MatchupSource:
        """The matchups of ``policy_id``'s evaluation games in a co-op game: the league's learning
        policies together (here ``policy_id`` on every seat; a league of sides puts each side's
        own learning policy on its seats)."""
        from league.sampling.matchups import OpponentSampling

        return OpponentSampling(policy_id, {policy_id: 1.0})

    def evaluation_matchups(self) -> list[Matchup]:
        """Matchups of league-scheduled evaluation games (none by default)."""
        return []

    @property
    def schedules_evaluation(self) -> bool:
        """Whether evaluation rounds carry games this league decides by (a meta-game's, a payoff's):
        then every round ``eval.interval`` makes due is played, whatever its share of the stepping."""
        return False

    def metrics(self, iteration: int, learner: LearnerFace, time_left_s: float | None = None) -> dict[str, Any]:
        """Fields this league adds to an iteration's metrics row (``time_left_s``: the run's
        time left, for measurements that must not carry it past ``stop.time_s``)."""
        return {}

    def restore_on(self, sampler: SamplerHandle) -> list[Any]:
        """Re-send frozen policies and the matchup source to a restarted sampler (pending calls)."""
        calls: list[Pending[None]] = []
        for pid, (factory, weights) in self.frozen_policies().items():
            calls.append(submit(sampler, SamplerFace.add_policy, pid, factory, weights, learns=False))
        calls.append(submit(sampler, SamplerFace.set_matchups, self.matchups()))
        return calls

    @abstractmethod
    def state(self) -> dict[str, Any]:
        """JSON-able league state for a checkpoint (weights are saved by the trainer)."""

    @abstractmethod
    def load_state(self, state: Mapping[str, Any], policies: Mapping[str, Weights]) -> None:
        """Restore :meth:`state` output; ``policies`` holds the checkpoint's weights."""

    def frozen_weights(self) -> dict[str, Weights]:
        """Weights of the frozen learned policies (snapshots), to save with a checkpoint."""
        return {pid: w for pid, (_, w) in self.frozen_policies().items() if w is not None}

    def summary(self) -> dict[str, Any]:
        """What the run's ``summary.json`` says about the league."""
        return {"snapshots": [pid for pid, (_, w) in self.frozen_policies().items() if w is not None]}

    def close(self) -> None:
        """Release actors the league owns (none by default)."""
