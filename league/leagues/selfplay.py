"""The ``selfplay`` recipe as a :class:`TrainingLeague`: one learning policy and its snapshot pool."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from league.runtime.actors import Pending, resolve_lenient, submit
from league.runtime.faces import LearnerFace, SamplerFace, SamplerHandle
from league.flow.metrics import NUM_AGENT_STEPS_SAMPLED
from league.leagues.base import IntervalMeasure, TrainingLeague, Weights, load_frozen_policies
from league.policy import PolicyFactory
from league.population.payoff import PayoffTable
from league.population.placement_ratings import PlacementRatings, placement_ratings
from league.population.selfplay import SelfPlayPool
from league.sampling.matchups import MatchupSource

if TYPE_CHECKING:
    from league.population.exploitability_measures import ExploitabilityMeasure
    from league.learn.algorithm import Algorithm

__all__ = ["SelfPlayLeague"]


class SelfPlayLeague(TrainingLeague):
    """Wraps a :class:`SelfPlayPool`: a snapshot every ``snapshot_steps`` agent steps of main.

    The clock is the learning policy's sampled agent steps (plan counter
    ``num_agent_steps_sampled/<main>``), as for the coordinated recipes, so a snapshot
    means the same amount of play whatever the algorithm and however its iterations run.
    A snapshot evicted from the pool is retired from the samplers at once: each sampler
    keeps it until the episodes that drew it have ended (:meth:`Sampler.remove_policy`).

    Args:
        pool: the pool of the learning policy.
        algorithm: the learning policy's algorithm (it builds snapshot policies too).
        fixed: factories of the fixed members (e.g. ``{"random": RandomPolicyFactory()}``).
        snapshot_steps: main's sampled agent steps between snapshots (0: never).
        exact: main's exact exploitability (an OpenSpiel game's
            :class:`~league.leagues.exact.ExactMetaGame`, or a game plug-in's measure), logged
            every ``exploitability_interval`` iterations (0: never).
    """

    def __init__(
        self,
        pool: SelfPlayPool,
        algorithm: Algorithm,
        fixed: Mapping[str, PolicyFactory],
        snapshot_steps: int,
        exact: ExploitabilityMeasure | None = None,
        exploitability_interval: int = 0,
    ) -> None:
        self.pool = pool
        self.exact = exact
        self._measure = IntervalMeasure(exploitability_interval)  # when exact exploitability is taken
        self.algorithm = algorithm
        self.fixed = dict(fixed)
        self.snapshot_steps = int(snapshot_steps)
        self.learning = [pool.main]
        self.evicted = 0  # snapshots evicted from the pool (and retired from the samplers) so far
        self._last_snapshot_step = 0  # main's agent steps at the latest snapshot
        self._new: list[str] = []  # snapshots taken since the last metrics row
        # Made on the first game of more than two players (False: openskill is not installed).
        self.ratings: PlacementRatings | Literal[False] | None = None

    @property
    def payoff(self) -> PayoffTable:
        """The pool's payoff table (main against its snapshots and fixed members)."""
        return self.pool.payoff

    def frozen_policies(self) -> dict[str, tuple[PolicyFactory, Weights | None]]:
        """Fixed members, then the snapshots with their weights."""
        out: dict[str, tuple[PolicyFactory, Weights | None]] = {pid: (f, None) for pid, f in self.fixed.items()}
        out.update({s.policy_id: (self.algorithm, s.weights) for s in self.pool.snapshots})
        return out

    def matchups(self) -> MatchupSource:
        """The pool's current opponent distribution."""
        return self.pool.matchups()

    def record(self, episodes: list[dict[str, Any]]) -> None:
        """Main-vs-opponent results into the payoff table; games of more than two players
        also into openskill ratings (placements), when installed."""
        self.pool.record(episodes)
        members = {self.pool.main, *self.fixed, *(s.policy_id for s in self.pool.snapshots)}
        for ep in episodes:
            # An episode that drew a snapshot since evicted must not bring it back (as in the payoff table).
            if len(ep["policies"]) > 2 and set(ep["policies"].values()) <= members:
                if self.ratings is None:
                    self.ratings = placement_ratings() or False
                if self.ratings:
                    self.ratings.rate_episode(ep["policies"], ep["returns"])

    def update(self, iteration: int, counters: Mapping[str, int], learner: LearnerFace, samplers: Sequence[SamplerHandle]) -> None:
        """A snapshot of main once it sampled ``snapshot_steps`` agent steps since the last one."""
        main = self.pool.main
        steps = int(counters.get(f"{NUM_AGENT_STEPS_SAMPLED}/{main}", 0))
        if not self.snapshot_steps or steps - self._last_snapshot_step < self.snapshot_steps:
            return
        self._last_snapshot_step = steps
        snap, evicted = self.pool.add_snapshot(learner.get_weights([main])[main], iteration)
        self._new.append(snap.policy_id)
        load_frozen_policies(samplers, {snap.policy_id: (self.algorithm, snap.weights)})
        # New matchups first: Ray runs each sampler's calls in order, so by the time the
        # evicted snapshot is retired no new episode can draw it; episodes in progress keep it.
        calls: list[Pending[None]] = [submit(s, SamplerFace.set_matchups, self.pool.matchups()) for s in samplers]
        if evicted is not None:
            calls += [submit(s, SamplerFace.remove_policy, evicted.policy_id) for s in samplers]
            self.pool.payoff.forget(evicted.policy_id)
            if self.ratings:
                self.ratings.forget(evicted.policy_id)
            self.evicted += 1
        resolve_lenient(calls, list(samplers) * (len(calls) // max(1, len(samplers))))  # a restarting sampler gets the league from its hook

    def metrics(self, iteration: int, learner: LearnerFace, time_left_s: float | None = None) -> dict[str, Any]:
        """The number of snapshots in the pool, those taken since the last row, evictions so far;
        main's exact exploitability every ``exploitability_interval`` iterations (:class:`IntervalMeasure`)."""
        new, self._new = self._new, []
        out: dict[str, Any] = {"snapshots": len(self.pool.snapshots), "new_snapshots": new, "snapshots_evicted": self.evicted}
        if self.ratings:
            out["ratings"] = {"openskill": self.ratings.table()}
        exact = self.exact
        if exact is not None and self._measure.due(iteration, time_left_s):
            main = self.pool.main
            out["exploitability"] = {main: self._measure.timed(lambda: exact.exploitability(self.algorithm, learner.get_weights([main])[main]))}
        return out

    def state(self) -> dict[str, Any]:
        """The pool's state, the snapshot clock and the openskill ratings (games of more than two players)."""
        return {
            "pool": self.pool.state(),
            "last_snapshot_step": self._last_snapshot_step,
            "evicted": self.evicted,
            "openskill": self.ratings.state() if self.ratings else None,
        }

    def load_state(self, state: Mapping[str, Any], policies: Mapping[str, Weights]) -> None:
        """Snapshots (with weights from ``policies``), the payoff table, the snapshot clock and the ratings."""
        self.pool.load_state(state["pool"], policies)
        self._last_snapshot_step = int(state.get("last_snapshot_step", 0))
        self.evicted = int(state.get("evicted", 0))
        if state.get("openskill"):
            self.ratings = placement_ratings() or False
            if self.ratings:
                self.ratings.load_state(state["openskill"])
