"""The ``selfplay`` recipe as a :class:`TrainingLeague`: one learning policy and its snapshot pool."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from league.flow.actors import resolve_lenient, submit
from league.leagues.base import TrainingLeague, Weights, load_frozen_policies
from league.population.payoff import PayoffTable
from league.population.selfplay import SelfPlayPool
from league.sampling.matchups import MatchupSource

__all__ = ["SelfPlayLeague"]


class SelfPlayLeague(TrainingLeague):
    """Wraps a :class:`SelfPlayPool`: a snapshot every ``snapshot_interval`` iterations.

    Args:
        pool: the pool of the learning policy.
        algorithm: the learning policy's algorithm (it builds snapshot policies too).
        fixed: factories of the fixed members (e.g. ``{"random": RandomPolicyFactory()}``).
        snapshot_interval: iterations between snapshots (0: never).
    """

    def __init__(self, pool: SelfPlayPool, algorithm: Any, fixed: Mapping[str, Any], snapshot_interval: int) -> None:
        self.pool = pool
        self.algorithm = algorithm
        self.fixed = dict(fixed)
        self.snapshot_interval = int(snapshot_interval)
        self.learning = [pool.main]
        self._retiring: list[str] = []  # evicted at the last snapshot, removed from samplers at the next

    @property
    def payoff(self) -> PayoffTable:
        """The pool's payoff table (main against its snapshots and fixed members)."""
        return self.pool.payoff

    def frozen_policies(self) -> dict[str, tuple[Any, Weights | None]]:
        """Fixed members, then the snapshots with their weights."""
        out: dict[str, tuple[Any, Weights | None]] = {pid: (f, None) for pid, f in self.fixed.items()}
        out.update({s.policy_id: (self.algorithm, s.weights) for s in self.pool.snapshots})
        return out

    def matchups(self) -> MatchupSource:
        """The pool's current opponent distribution."""
        return self.pool.matchups()

    def record(self, episodes: list[dict[str, Any]]) -> None:
        """Main-vs-opponent results into the payoff table."""
        self.pool.record(episodes)

    def update(self, iteration: int, counters: Mapping[str, int], learner: Any, samplers: Sequence[Any]) -> None:
        """A snapshot of main every ``snapshot_interval`` iterations, loaded on every sampler."""
        if not self.snapshot_interval or iteration % self.snapshot_interval:
            return
        main = self.pool.main
        snap, evicted = self.pool.add_snapshot(learner.get_weights([main])[main], iteration)
        load_frozen_policies(samplers, {snap.policy_id: (self.algorithm, snap.weights)})
        matchups = self.pool.matchups()
        calls = [submit(s, "set_matchups", matchups) for s in samplers]
        # A snapshot evicted now may still play in episodes in progress: it leaves the
        # samplers one snapshot interval later, when those episodes are long over.
        calls += [submit(s, "remove_policy", pid) for pid in self._retiring for s in samplers]
        resolve_lenient(calls, samplers * (1 + len(self._retiring)))  # a restarting sampler gets the league from its hook
        for pid in self._retiring:
            self.pool.payoff.forget(pid)
        self._retiring = [evicted.policy_id] if evicted is not None else []

    def metrics(self, iteration: int, learner: Any) -> dict[str, Any]:
        """The number of snapshots in the pool."""
        return {"snapshots": len(self.pool.snapshots)}

    def state(self) -> dict[str, Any]:
        """The pool's state."""
        return {"pool": self.pool.state()}

    def load_state(self, state: Mapping[str, Any], policies: Mapping[str, Weights]) -> None:
        """Snapshots (with weights from ``policies``) and the payoff table."""
        self.pool.load_state(state["pool"], policies)
