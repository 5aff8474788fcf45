"""Agent groups as a :class:`TrainingLeague`: each side of the game its own learning policy,
snapshots and opponents (``env.groups``, see :mod:`league.envs.groups`).

Per episode one group is the *focus*: its seats are played by one of its learning policies
(all its seats, so a team shares parameters). Every other group gets, for that episode, one
of its own learning policies with probability ``self_play_prob`` (both sides then learn),
a fixed member (e.g. ``random``) by its share, or otherwise a frozen snapshot of one of its
learning policies, drawn uniformly or by PFSP from the focus policy's results against them.
With a single group (a co-op team), every seat is its policy and every seat learns.

Snapshots are taken per learning policy every ``snapshot_steps`` of its sampled agent steps.
Results go into one payoff table, group against group, a group's return being the mean
over its seats.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from league.flow.metrics import NUM_AGENT_STEPS_SAMPLED
from league.leagues.base import TrainingLeague, Weights, load_frozen_policies
from league.policy import PolicyFactory, RandomPolicyFactory
from league.population.matchmaking import Matchmaker, PFSPMatchmaker, UniformFSPMatchmaker
from league.population.payoff import PayoffTable, outcome_from_returns
from league.population.placement_ratings import placement_ratings
from league.population.selfplay import SelfPlayPool
from league.runtime.actors import Pending, resolve_lenient, submit
from league.runtime.faces import LearnerFace, SamplerFace, SamplerHandle
from league.sampling.matchups import FixedMatchups, Matchup, MatchupSource

if TYPE_CHECKING:
    from league.learn.algorithm import Algorithm

__all__ = ["GroupMatchups", "GroupLeague", "group_returns"]


def group_returns(episode: Mapping[str, Any], groups: Mapping[str, Sequence[str]]) -> dict[str, float]:
    """Each group's return in a finished episode: the mean over its seats."""
    returns = episode["returns"]
    return {g: float(np.mean([returns.get(a, 0.0) for a in members])) for g, members in groups.items()}


class GroupMatchups(MatchupSource):
    """A focus group's learning policy against the other groups' opponents (module docstring).

    Args:
        groups: group -> its agent ids.
        learners: group -> its learning policy ids (each group has at least one).
        opponents: ``(focus policy, other group)`` -> ``{policy id: probability}`` of who
            plays that group when the focus policy is in play.
    """

    def __init__(
        self, groups: Mapping[str, Sequence[str]], learners: Mapping[str, Sequence[str]], opponents: Mapping[tuple[str, str], Mapping[str, float]]
    ) -> None:
        self.groups = {g: list(a) for g, a in groups.items()}
        self.learners = {g: list(p) for g, p in learners.items()}
        self.learning = {p for ps in self.learners.values() for p in ps}
        self.opponents = {key: (list(d), np.asarray(list(d.values()), dtype=np.float64) / sum(d.values())) for key, d in opponents.items()}
        self._focus = [g for g in self.groups if self.learners.get(g)]
        if not self._focus:
            raise ValueError("GroupMatchups needs a group with a learning policy")

    def next_matchup(self, agents: Sequence[str], episode_index: int, rng: np.random.Generator) -> Matchup:
        """One policy per group; seats of learning policies learn."""
        focus = self._focus[int(rng.integers(len(self._focus)))]
        main = self.learners[focus][int(rng.integers(len(self.learners[focus])))]
        chosen = {focus: main}
        for g in self.groups:
            if g != focus:
                ids, probs = self.opponents[(main, g)]
                chosen[g] = ids[int(rng.choice(len(ids), p=probs))]
        policies = {a: chosen[g] for g, members in self.groups.items() for a in members if a in agents}
        missing = [a for a in agents if a not in policies]
        if missing:
            raise ValueError(f"agent(s) {missing} belong to no group of {list(self.groups)}")
        return Matchup(policies, frozenset(a for a, p in policies.items() if p in self.learning))


class GroupLeague(TrainingLeague):
    """Each group's learning policies with their snapshots (see the module docstring).

    Args:
        groups: group -> its agent ids.
        policy_groups: learning policy id -> the group it plays.
        algorithms: learning policy id -> its algorithm (it builds its snapshots' policies).
        fixed: fixed members ``{name: (factory, share of the non-focus groups' games)}``; on
            group ``g``'s seats member ``name`` is policy ``name:g`` (:meth:`seat_id`).
        payoff: the table group-vs-group results go into.
        snapshot_steps: a learning policy's sampled agent steps between its snapshots (0: never).
        self_play_prob: probability that another group plays its current learning policy.
        max_snapshots: snapshots kept per learning policy (oldest evicted).
        opponent_sampling: ``uniform`` or ``pfsp`` over a group's snapshots.
    """

    def __init__(
        self,
        groups: Mapping[str, Sequence[str]],
        policy_groups: Mapping[str, str],
        algorithms: Mapping[str, Algorithm],
        fixed: Mapping[str, tuple[PolicyFactory, float]],
        payoff: PayoffTable,
        snapshot_steps: int,
        self_play_prob: float = 0.2,
        max_snapshots: int = 20,
        opponent_sampling: str = "uniform",
    ) -> None:
        self.groups = {g: list(a) for g, a in groups.items()}
        self.policy_groups = dict(policy_groups)
        self.learning = list(policy_groups)
        unplayed = [g for g in self.groups if g not in self.policy_groups.values()]
        if unplayed:
            raise ValueError(f"group(s) {unplayed} have no learning policy")
        self.algorithms = dict(algorithms)
        self.fixed = dict(fixed)
        self._payoff = payoff
        self.snapshot_steps = int(snapshot_steps)
        self.self_play_prob = float(self_play_prob)
        self.matchmaker: Matchmaker = {"uniform": UniformFSPMatchmaker, "pfsp": PFSPMatchmaker}[opponent_sampling]()
        # A pool per learning policy holds its snapshots (its own opponent logic is not used).
        self.pools = {pid: SelfPlayPool(pid, self_play_prob=0.0, max_snapshots=max_snapshots, payoff=payoff) for pid in self.learning}
        self.evicted = 0
        self.ratings = placement_ratings()  # openskill over group-vs-group results, when installed
        self._last_snapshot_step = {pid: 0 for pid in self.learning}
        self._new: list[str] = []

    @property
    def payoff(self) -> PayoffTable:
        """Group-against-group results of learning policies, snapshots and fixed members."""
        return self._payoff

    def learners(self) -> dict[str, list[str]]:
        """group -> its learning policy ids."""
        return {g: [p for p, pg in self.policy_groups.items() if pg == g] for g in self.groups}

    def seat_id(self, member: str, group: str) -> str:
        """The policy id of fixed member ``member`` on ``group``'s seats (``random:prey``): one id
        per group, since a sampler batches a policy's seats together and the groups' observations
        differ in shape."""
        return f"{member}:{group}"

    def frozen_policies(self) -> dict[str, tuple[PolicyFactory, Weights | None]]:
        """Fixed members (one id per group, the evaluation opponent ``random`` among them),
        then every learning policy's snapshots with their weights."""
        fixed = {**self.fixed, **({} if "random" in self.fixed else {"random": (RandomPolicyFactory(), 0.0)})}
        out: dict[str, tuple[PolicyFactory, Weights | None]] = {
            self.seat_id(pid, g): (f, None) for pid, (f, _) in fixed.items() for g in self.groups
        }
        for pid, pool in self.pools.items():
            out.update({s.policy_id: (self.algorithms[pid], s.weights) for s in pool.snapshots})
        return out

    def opponent_probabilities(self, focus: str, group: str) -> dict[str, float]:
        """Who plays ``group`` while learning policy ``focus`` plays its own group."""
        fixed = {self.seat_id(pid, group): share for pid, (_, share) in self.fixed.items() if share > 0}
        own = self.learners()[group]
        snaps = [s.policy_id for pid in own for s in self.pools[pid].snapshots]
        rest = 1.0 - sum(fixed.values())
        out = dict(fixed)
        current = rest if not snaps else min(self.self_play_prob, rest)
        for pid in own:
            out[pid] = current / len(own)
        if snaps:
            probs = self.matchmaker.probabilities(focus, snaps, self._payoff)
            for sid, p in zip(snaps, probs):
                out[sid] = (rest - current) * float(p)
        return {pid: p for pid, p in out.items() if p > 0} or {own[0]: 1.0}

    def matchups(self) -> MatchupSource:
        """The current opponent distributions of every (focus policy, other group)."""
        opponents = {
            (pid, g): self.opponent_probabilities(pid, g) for pid, pg in self.policy_groups.items() for g in self.groups if g != pg
        }
        return GroupMatchups(self.groups, self.learners(), opponents)

    def evaluation_source(self, policy_id: str, opponent: str, members: Sequence[str] = ()) -> MatchupSource:
        """``policy_id`` on every seat of its group, ``opponent`` (its id for each group, where it
        is a fixed member) on every other seat; a mix (``members``) cannot be seated by side."""
        if len(members) > 1:
            raise ValueError(f"a league of sides seats one opponent per side; '{opponent}' is a mix of {list(members)}")
        mine = self.policy_groups[policy_id]
        frozen = self.frozen_policies()

        def other(g: str) -> str:
            return self.seat_id(opponent, g) if self.seat_id(opponent, g) in frozen else opponent

        return FixedMatchups({a: policy_id if g == mine else other(g) for g, members in self.groups.items() for a in members})

    def _team(self, policy_id: str) -> dict[str, str]:
        """Group -> the learning policy on its seats: ``policy_id`` for its own group, each other
        group's first learning policy."""
        mine = self.policy_groups[policy_id]
        return {g: policy_id if g == mine else pids[0] for g, pids in self.learners().items()}

    def teammates(self, policy_id: str) -> list[str]:
        """``policy_id``, then each other group's first learning policy."""
        team = self._team(policy_id)
        return [policy_id, *(p for p in team.values() if p != policy_id)]

    def teammates_source(self, policy_id: str) -> MatchupSource:
        """``policy_id`` on every seat of its group, each other group's first learning policy on
        its seats: the team of learning policies a co-op game is evaluated by."""
        team = self._team(policy_id)
        return FixedMatchups({a: team[g] for g, members in self.groups.items() for a in members})

    def record(self, episodes: list[dict[str, Any]]) -> None:
        """Every learning policy's group against each other group's policy, by mean group return."""
        members = set(self.learning) | set(self.frozen_policies())
        for ep in episodes:
            seats = ep["policies"]
            played = {g: seats.get(m[0]) for g, m in self.groups.items()}
            returns = group_returns(ep, self.groups)
            if self.ratings is not None and len(self.groups) > 1 and set(seats.values()) <= members:  # not an evicted snapshot's
                self.ratings.rate_episode(seats, ep["returns"])
            for g, pid in played.items():
                if pid not in self.learning:
                    continue
                for h, other in played.items():
                    if h != g and other is not None and other != pid and other in members:
                        self._payoff.update(pid, other, outcome_from_returns(returns[g], returns[h]), return_a=returns[g])

    def update(self, iteration: int, counters: Mapping[str, int], learner: LearnerFace, samplers: Sequence[SamplerHandle]) -> None:
        """A snapshot of each learning policy that sampled ``snapshot_steps`` agent steps since its
        last one; none with a single group (a co-op team has no opponent to hand them to)."""
        if not self.snapshot_steps or len(self.groups) < 2:
            return
        due = [
            pid for pid in self.learning
            if int(counters.get(f"{NUM_AGENT_STEPS_SAMPLED}/{pid}", 0)) - self._last_snapshot_step[pid] >= self.snapshot_steps
        ]  # fmt: skip
        if not due:
            return
        weights = learner.get_weights(due)
        evicted = []
        for pid in due:
            self._last_snapshot_step[pid] = int(counters.get(f"{NUM_AGENT_STEPS_SAMPLED}/{pid}", 0))
            snap, old = self.pools[pid].add_snapshot(weights[pid], iteration)
            self._new.append(snap.policy_id)
            load_frozen_policies(samplers, {snap.policy_id: (self.algorithms[pid], snap.weights)})
            if old is not None:
                evicted.append(old.policy_id)
        # New matchups first, then retire evicted snapshots (as SelfPlayLeague does).
        calls: list[Pending[None]] = [submit(s, SamplerFace.set_matchups, self.matchups()) for s in samplers]
        for sid in evicted:
            calls += [submit(s, SamplerFace.remove_policy, sid) for s in samplers]
            self._payoff.forget(sid)
            if self.ratings is not None:
                self.ratings.forget(sid)
            self.evicted += 1
        resolve_lenient(calls, list(samplers) * (len(calls) // max(1, len(samplers))))

    def metrics(self, iteration: int, learner: LearnerFace, time_left_s: float | None = None) -> dict[str, Any]:
        """Snapshots held, those taken since the last row, evictions so far."""
        new, self._new = self._new, []
        held = sum(len(p.snapshots) for p in self.pools.values())
        out: dict[str, Any] = {"snapshots": held, "new_snapshots": new, "snapshots_evicted": self.evicted}
        if self.ratings is not None and self.ratings.games:
            out["ratings"] = {"openskill": self.ratings.table()}
        return out

    def state(self) -> dict[str, Any]:
        """Each learning policy's snapshot pool and clock, and the payoff table."""
        return {
            "pools": {pid: pool.state() for pid, pool in self.pools.items()},
            "last_snapshot_step": dict(self._last_snapshot_step),
            "evicted": self.evicted,
            "openskill": self.ratings.state() if self.ratings is not None else None,
        }

    def load_state(self, state: Mapping[str, Any], policies: Mapping[str, Weights]) -> None:
        """Snapshots (weights from ``policies``), the payoff table and the snapshot clocks."""
        for pid, pool_state in state.get("pools", {}).items():
            if pid in self.pools:
                self.pools[pid].load_state(pool_state, policies)
        if "payoff" in state:
            self._payoff = PayoffTable.from_dict(state["payoff"])
        for pool in self.pools.values():
            pool.payoff = self._payoff
        self._last_snapshot_step.update({k: int(v) for k, v in state.get("last_snapshot_step", {}).items() if k in self._last_snapshot_step})
        self.evicted = int(state.get("evicted", 0))
        if self.ratings is not None and state.get("openskill"):
            self.ratings.load_state(state["openskill"])
