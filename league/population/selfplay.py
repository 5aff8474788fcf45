"""Self-play with a pool of frozen snapshots: the simplest league recipe.

One learning policy (``main``) plays itself with probability ``self_play_prob``, each
fixed league member (e.g. a scripted player) with its configured share, and otherwise a
frozen snapshot of its past versions, drawn uniformly or by PFSP from the payoff table. The pool turns this into a :class:`~league.sampling.OpponentSampling`
matchup source for samplers, and records training outcomes in the payoff table.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from league.population.matchmaking import Matchmaker, PFSPMatchmaker, UniformFSPMatchmaker
from league.population.payoff import PayoffTable, outcome_from_returns
from league.sampling.matchups import OpponentSampling

__all__ = ["Snapshot", "SelfPlayPool"]


@dataclass
class Snapshot:
    """A frozen copy of the learning policy."""

    policy_id: str
    iteration: int
    weights: dict[str, np.ndarray]


class SelfPlayPool:
    """Snapshots of one learning policy and the opponent distribution over them."""

    def __init__(
        self,
        main: str = "main",
        self_play_prob: float = 0.5,
        max_snapshots: int = 20,
        opponent_sampling: str = "uniform",
        payoff: PayoffTable | None = None,
        fixed_opponents: Mapping[str, float] | None = None,
    ) -> None:
        if max_snapshots < 1:
            raise ValueError(f"max_snapshots must be >= 1, got {max_snapshots}")
        self.main = main
        self.self_play_prob = float(self_play_prob)
        self.max_snapshots = max_snapshots
        self.matchmaker: Matchmaker = {"uniform": UniformFSPMatchmaker, "pfsp": PFSPMatchmaker}[opponent_sampling]()
        self.payoff = payoff or PayoffTable(decay=0.99, min_games=5)
        self.snapshots: list[Snapshot] = []
        self._version = 0
        # Fixed league members (e.g. scripted players) with a constant share of training games.
        self.fixed_opponents = dict(fixed_opponents or {})
        share = sum(self.fixed_opponents.values())
        if any(p < 0 for p in self.fixed_opponents.values()) or share + self.self_play_prob > 1.0 + 1e-9:
            raise ValueError(
                f"fixed opponent shares {self.fixed_opponents} plus self_play_prob {self.self_play_prob} must be >= 0 and sum to <= 1"
            )

    def add_snapshot(self, weights: Mapping[str, np.ndarray], iteration: int) -> tuple[Snapshot, Snapshot | None]:
        """Freeze ``weights`` as a new snapshot; returns it and the evicted oldest one (or None)."""
        self._version += 1
        snap = Snapshot(f"{self.main}@v{self._version}", iteration, {k: np.array(v, copy=True) for k, v in weights.items()})
        self.snapshots.append(snap)
        evicted = self.snapshots.pop(0) if len(self.snapshots) > self.max_snapshots else None
        return snap, evicted

    def opponent_probabilities(self) -> dict[str, float]:
        """Policy id -> probability of being the next training opponent."""
        fixed = sum(self.fixed_opponents.values())
        out = {pid: p for pid, p in self.fixed_opponents.items() if p > 0}
        if not self.snapshots:
            out[self.main] = 1.0 - fixed
            return out
        ids = [s.policy_id for s in self.snapshots]
        probs = self.matchmaker.probabilities(self.main, ids, self.payoff)
        out[self.main] = self.self_play_prob
        for pid, p in zip(ids, probs):
            out[pid] = (1.0 - self.self_play_prob - fixed) * float(p)
        return out

    def matchups(self) -> OpponentSampling:
        """The matchup source samplers should use now."""
        return OpponentSampling(self.main, self.opponent_probabilities())

    def record(self, episodes: Iterable[Mapping[str, Any]]) -> None:
        """Update the payoff table from sampler episode stats (main vs a current member only)."""
        members = {s.policy_id for s in self.snapshots} | set(self.fixed_opponents)
        for ep in episodes:
            seats = ep["policies"]
            main_seats = [a for a, p in seats.items() if p == self.main]
            others = [a for a, p in seats.items() if p != self.main]
            if len(main_seats) != 1:
                continue
            # An episode that began before its snapshot was evicted ends afterwards: its result
            # must not bring the evicted snapshot back into the (bounded) payoff table.
            if len(others) == 1 and seats[others[0]] in members:
                self.payoff.update(self.main, seats[others[0]], ep["outcome"][main_seats[0]])
            elif len(others) > 1:  # more than two players: main against each other seat, by return
                mine = ep["returns"][main_seats[0]]
                for a in others:
                    if seats[a] in members:
                        self.payoff.update(self.main, seats[a], outcome_from_returns(mine, ep["returns"][a]))

    def state(self) -> dict[str, Any]:
        """JSON-able description (weights are saved separately by the trainer)."""
        return {
            "main": self.main,
            "version": self._version,
            "snapshots": [{"policy_id": s.policy_id, "iteration": s.iteration} for s in self.snapshots],
            "payoff": self.payoff.to_dict(),
        }

    def load_state(self, state: Mapping[str, Any], snapshot_weights: Mapping[str, Mapping[str, np.ndarray]]) -> None:
        """Restore :meth:`state` output plus each snapshot's weights (a checkpoint resume).

        The settings (shares, ``max_snapshots``, opponent sampling) stay this pool's own,
        so a resumed run may change them; beyond ``max_snapshots`` the oldest are dropped.
        The payoff table is replaced by the saved one (``self.payoff`` is a new object).
        """
        if not isinstance(state, Mapping) or state.get("main") != self.main:
            found = state.get("main") if isinstance(state, Mapping) else type(state).__name__
            raise ValueError(f"pool state is for learning policy {found!r}, this pool's is {self.main!r}")
        entries = state.get("snapshots")
        version = state.get("version")
        if not isinstance(entries, list) or not isinstance(version, int) or version < len(entries):
            raise ValueError("malformed pool state: needs 'snapshots' (a list) and 'version' (an int >= their number)")
        snapshots = []
        for entry in entries:
            pid = entry.get("policy_id") if isinstance(entry, Mapping) else None
            if not isinstance(pid, str) or not pid.startswith(f"{self.main}@"):
                raise ValueError(f"malformed snapshot entry {entry!r} for learning policy {self.main!r}")
            if pid not in snapshot_weights:
                raise ValueError(f"no weights for snapshot '{pid}'")
            weights = {k: np.array(v, copy=True) for k, v in snapshot_weights[pid].items()}
            snapshots.append(Snapshot(pid, int(entry.get("iteration", 0)), weights))
        self.snapshots = snapshots[-self.max_snapshots :]
        self._version = version
        self.payoff = PayoffTable.from_dict(state["payoff"]) if "payoff" in state else self.payoff
