"""The league coordinator: who plays whom, what the results say, when to snapshot.

:class:`LeagueCoordinator` is a plain object, free of Ray (the league layer runs it as
a Ray actor: :func:`league.leagues.remote_coordinator.make_remote_coordinator`), holding
the league's whole state: the
:class:`Population`, the :class:`PayoffTable`, Elo and TrueSkill :class:`RatingTable` s,
the :class:`Role` of every learning player, and one random generator. Its protocol:

* :meth:`~LeagueCoordinator.next_matchups` hands out matchups in batches, one per
  episode: learning players take turns, each draws an opponent from its role and a
  random seat; only the learning player's seat learns (both when it plays itself).
  Samplers consume a batch through :class:`~league.sampling.matchups.MatchupBatch`,
  which can refill itself from the coordinator.
* :meth:`~LeagueCoordinator.next_evaluation` hands out evaluation matchups (no seat
  learns): first the games the roles' solvers still need to measure their meta-game
  (:meth:`~LeagueCoordinator.meta_game_pairs`, e.g. a new PSRO snapshot against the
  current Nash support, frozen against frozen), then the least certain pairs.
* :meth:`~LeagueCoordinator.report` reads sampler episode stats (``episode_id``,
  ``policies``, ``outcome``) into the payoff table, the ratings and each learning
  player's "games since its last snapshot". Episode ids already seen are skipped, so a
  retried report counts once.
* :meth:`~LeagueCoordinator.step` takes every learning player's cumulative learner
  step count and returns the :class:`SnapshotAction` s and :class:`ResetAction` s due.
  The league applies them to its own state at once; the driver copies the weights
  (learning player -> new snapshot policy; reset source -> learning player) before it
  asks for more matchups.

Episode stats name policies, not players, so the players of one coordinator must have
distinct policy ids. The whole state round-trips through :meth:`state_dict` /
:meth:`load_state_dict` as JSON-able data, generator state included.
"""

from __future__ import annotations

import numbers
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from league.population.evaluation import EvaluationPair, EvaluationScheduler
from league.population.payoff import OUTCOMES, Outcome, PayoffTable, is_outcome
from league.population.players import Player, Population
from league.population.ratings import Elo, RatingTable, TrueSkill
from league.population.roles import Role, alphastar_roles
from league.sampling.matchups import Matchup, MatchupBatch

__all__ = [
    "LeagueCoordinator",
    "ResetAction",
    "SnapshotAction",
]

_RATING_KINDS = ("elo", "trueskill")


@dataclass(frozen=True)
class SnapshotAction:
    """Copy ``player_id``'s current weights into the new frozen policy ``snapshot_id``."""

    player_id: str
    snapshot_id: str
    step: int


@dataclass(frozen=True)
class ResetAction:
    """Reset ``player_id``'s weights to ``source_id``'s (None: the player's own initial weights)."""

    player_id: str
    source_id: str | None
    step: int


class LeagueCoordinator:
    """League state and decisions (see the module docstring).

    Args:
        agents: the env's two agent ids (seats), e.g. ``["player_0", "player_1"]``.
        roles: role name -> :class:`Role`; every learning player's ``role`` must be one
            of these. Defaults to :func:`alphastar_roles` (snapshots every 10^6 steps).
        players: initial players (learning, scripted...), added in order.
        payoff: the payoff table (default: no decay, trusted from 1 game).
        evaluation: the evaluation scheduler (default settings when None).
        seed: seed of the coordinator's generator.
        dedupe_window: how many recent episode ids are remembered to skip repeats.
    """

    def __init__(
        self,
        agents: Sequence[str],
        roles: Mapping[str, Role] | None = None,
        players: Iterable[Player] = (),
        payoff: PayoffTable | None = None,
        evaluation: EvaluationScheduler | None = None,
        seed: int = 0,
        dedupe_window: int = 100_000,
    ) -> None:
        agents = list(agents)
        if len(agents) != 2 or len(set(agents)) != 2 or not all(isinstance(a, str) for a in agents):
            raise ValueError(f"LeagueCoordinator needs two distinct agent ids, got {agents}")
        if dedupe_window < 1:
            raise ValueError(f"dedupe_window must be >= 1, got {dedupe_window}")
        self.agents = agents
        self.roles: dict[str, Role] = dict(alphastar_roles(1_000_000) if roles is None else roles)
        for name, role in self.roles.items():
            if not isinstance(role, Role):
                raise TypeError(f"role {name!r} must be a Role, got {type(role).__name__}")
        self.population = Population()
        self.payoff = payoff if payoff is not None else PayoffTable()
        self.ratings = {"elo": RatingTable(Elo()), "trueskill": RatingTable(TrueSkill())}
        self.evaluation = evaluation or EvaluationScheduler()
        self.dedupe_window = int(dedupe_window)
        self._rng = np.random.default_rng(seed)
        self._cursor = 0
        self._league_step = 0
        self._steps: dict[str, int] = {}  # latest cumulative learner steps per learning player
        self._last_snapshot: dict[str, int] = {}  # step of the last snapshot (or creation)
        self._recent: dict[str, PayoffTable] = {}  # games since the last snapshot, per learning player
        self._seen: deque[int] = deque()
        self._seen_set: set[int] = set()
        for player in players:
            self.add_player(player)

    # Players ----------------------------------------------------------------------
    def add_player(self, player: Player) -> Player:
        """Add a player; a learning one needs a known role, and policy ids must stay unique."""
        if player.kind == "learning" and player.role not in self.roles:
            raise ValueError(
                f"learning player {player.player_id!r} has role {player.role!r}; known roles: {sorted(self.roles)}"
            )
        if any(p.policy_id == player.policy_id for p in self.population):
            raise ValueError(f"policy id {player.policy_id!r} is already used by another player")
        self.population.add(player)
        parent = player.parent_id
        for table in self.ratings.values():
            inherited = table.rating(parent) if parent is not None and parent in table.ratings() else None
            table.add_player(player.player_id, self._league_step, inherited)
        if player.kind == "learning":
            self._steps[player.player_id] = player.created_step
            self._last_snapshot[player.player_id] = player.created_step
            self._recent[player.player_id] = PayoffTable()
        return player

    def _role(self, player: Player) -> Role:
        """A learning player's role (:meth:`add_player` checked that it has a known one)."""
        if player.role is None:
            raise ValueError(f"learning player {player.player_id!r} has no role")
        return self.roles[player.role]

    def learning_players(self) -> list[str]:
        """Ids of the learning players, in population order."""
        return self.population.player_ids(kind="learning")

    # Matchups ---------------------------------------------------------------------
    def next_matchups(self, k: int, learners: Sequence[str] | None = None) -> list[Matchup]:
        """``k`` training matchups, one per episode, learners taking turns."""
        if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
            raise ValueError(f"k must be a positive int, got {k!r}")
        ids = self.learning_players() if learners is None else list(learners)
        if not ids:
            raise ValueError("the league has no learning player to schedule")
        for pid in ids:
            if self.population.get(pid).kind != "learning":
                raise ValueError(f"{pid!r} is not a learning player")
        out = []
        # One opponent distribution per learner and batch: a Nash meta-solver is an LP solve.
        distributions: dict[str, tuple[list[str], np.ndarray]] = {}
        for _ in range(int(k)):
            player = self.population.get(ids[self._cursor % len(ids)])
            self._cursor += 1
            if player.player_id not in distributions:
                role = self._role(player)
                dist = role.opponent_distribution(player.player_id, self.population, self.payoff)
                probs = np.fromiter(dist.values(), dtype=np.float64, count=len(dist))
                distributions[player.player_id] = (list(dist), probs / probs.sum())
            candidates, probs = distributions[player.player_id]
            opponent = self.population.get(candidates[int(self._rng.choice(len(candidates), p=probs))])
            seat = int(self._rng.integers(2))
            learner_seat, other_seat = self.agents[seat], self.agents[1 - seat]
            policies = {learner_seat: player.policy_id, other_seat: opponent.policy_id}
            learning = {learner_seat, other_seat} if opponent.player_id == player.player_id else {learner_seat}
            out.append(Matchup(policies, frozenset(learning)))
        return out

    def matchup_source(self, k: int) -> MatchupBatch:
        """A :class:`MatchupBatch` of :meth:`next_matchups` ``(k)`` (cycles when used up)."""
        return MatchupBatch(self.next_matchups(k))

    def opponent_distribution(self, player_id: str) -> dict[str, float]:
        """The learning player's current opponent probabilities (what its next matchups draw from)."""
        player = self.population.get(player_id)
        if player.kind != "learning":
            raise ValueError(f"{player_id!r} is not a learning player")
        return self._role(player).opponent_distribution(player_id, self.population, self.payoff)

    def meta_game_pairs(self) -> list[tuple[str, str]]:
        """Unmeasured payoff pairs the learning players' roles read (PSRO's meta-game,
        PFSP's win rates), most urgent first, the players' lists interleaved."""
        needs = []
        for pid in self.learning_players():
            role = self._role(self.population.get(pid))
            needs.append(role.needed_pairs(pid, self.population, self.payoff))
        # Round-robin, so one player's less urgent pairs never crowd out another's first ones.
        out: list[tuple[str, str]] = []
        for k in range(max((len(n) for n in needs), default=0)):
            out.extend(n[k] for n in needs if k < len(n))
        return out

    def next_evaluation(self, num_pairs: int) -> tuple[list[EvaluationPair], list[Matchup]]:
        """Evaluation pairs and their matchups (report their episodes as usual): the
        meta-game pairs the solvers need (``evaluation.meta_game_episodes`` games each,
        whatever ``num_pairs``), then the ``num_pairs`` least certain other pairs (0: none)."""
        if isinstance(num_pairs, bool) or not isinstance(num_pairs, numbers.Integral) or num_pairs < 0:
            raise ValueError(f"num_pairs must be an int >= 0, got {num_pairs!r}")
        pairs = self.evaluation.meta_game_schedule(self.meta_game_pairs(), self.payoff)
        if num_pairs:
            taken = {frozenset((p.player_a, p.player_b)) for p in pairs}
            pairs += self.evaluation.schedule(self.population, self.payoff, int(num_pairs), self._rng, exclude=taken)
        return pairs, self.evaluation.matchups(pairs, self.agents, self.population)

    # Results ----------------------------------------------------------------------
    def report(self, episodes: Iterable[Mapping[str, Any]]) -> int:
        """Record finished episodes; returns how many new games between league players
        were recorded (repeats, self-play games and unknown policies are skipped)."""
        by_policy = {p.policy_id: p.player_id for p in self.population}
        recorded = 0
        for episode in episodes:
            try:
                episode_id, seats, outcome = episode["episode_id"], episode["policies"], episode["outcome"]
            except (KeyError, TypeError):
                raise ValueError(
                    f"episode stats need 'episode_id', 'policies' and 'outcome', got {episode!r}"
                ) from None
            if not self._remember(int(episode_id)):
                continue
            if len(seats) != 2 or any(p not in by_policy for p in seats.values()):
                continue
            (seat_a, policy_a), (seat_b, policy_b) = sorted(seats.items())
            a, b = by_policy[policy_a], by_policy[policy_b]
            if a == b:
                continue
            result = outcome[seat_a]
            if not is_outcome(result):
                raise ValueError(f"episode {episode_id}: outcome must be one of {OUTCOMES}, got {result!r}")
            returns = episode.get("returns") or {}
            return_a = returns.get(seat_a) if isinstance(returns, Mapping) else None
            if return_a is None:
                self.payoff.update(a, b, result)
            else:
                self.payoff.update(a, b, result, float(return_a))
            for player_id, opponent_id, view in ((a, b, result), (b, a, _flip(result))):
                if player_id in self._recent:
                    self._recent[player_id].update(player_id, opponent_id, view)
            for table in self.ratings.values():
                table.record(a, b, result, self._league_step)
            recorded += 1
        return recorded

    def _remember(self, episode_id: int) -> bool:
        """Whether the id is new (and remember it, forgetting the oldest past the window)."""
        if episode_id in self._seen_set:
            return False
        self._seen.append(episode_id)
        self._seen_set.add(episode_id)
        if len(self._seen) > self.dedupe_window:
            self._seen_set.discard(self._seen.popleft())
        return True

    # Snapshots and resets ---------------------------------------------------------
    def step(self, learner_steps: Mapping[str, int]) -> list[SnapshotAction | ResetAction]:
        """Take cumulative learner steps per learning player; apply and return the actions now due.

        ``step`` is :meth:`due` then :meth:`apply`. A driver whose samplers pull matchups
        on their own calls the two apart: it loads each new snapshot's weights on the
        samplers in between, so no matchup names a policy a sampler does not have yet.
        """
        actions = self.due(learner_steps)
        self.apply(actions)
        return actions

    def due(self, learner_steps: Mapping[str, int]) -> list[SnapshotAction | ResetAction]:
        """Record the learner steps; return the snapshot (and reset) actions due, unapplied."""
        for pid, steps in learner_steps.items():
            if pid not in self._steps:
                raise ValueError(f"{pid!r} is not a learning player of this league")
            if isinstance(steps, bool) or not isinstance(steps, numbers.Integral) or steps < self._steps[pid]:
                raise ValueError(f"learner steps of {pid!r} must be an int >= {self._steps[pid]}, got {steps!r}")
        self._steps.update({pid: int(s) for pid, s in learner_steps.items()})
        self._league_step = sum(self._steps.values())
        actions: list[SnapshotAction | ResetAction] = []
        for pid in self.learning_players():
            if pid not in learner_steps:
                continue
            player = self.population.get(pid)
            role = self._role(player)
            steps = self._steps[pid]
            if not role.snapshot.due(steps - self._last_snapshot[pid], pid, self.population, self._recent[pid]):
                continue
            actions.append(SnapshotAction(pid, self.population.next_snapshot_id(pid), steps))
            p = role.reset_probability
            if p >= 1.0 or (p > 0.0 and self._rng.random() < p):
                actions.append(ResetAction(pid, player.parent_id, steps))
        return actions

    def apply(self, actions: Sequence[SnapshotAction | ResetAction]) -> None:
        """Add the snapshots of :meth:`due` actions to the league (resets need no league change)."""
        for action in actions:
            if not isinstance(action, SnapshotAction):
                continue
            snap = self.population.snapshot(action.player_id, action.step)
            if snap.player_id != action.snapshot_id:
                raise RuntimeError(f"snapshot {action.snapshot_id!r} was applied out of order (got {snap.player_id!r})")
            for table in self.ratings.values():
                table.add_player(snap.player_id, self._league_step, table.rating(action.player_id))
            self._last_snapshot[action.player_id] = action.step
            self._recent[action.player_id] = PayoffTable()

    def set_expected_returns(self, values: Iterable[tuple[str, str, float]]) -> None:
        """Exact expected returns ``(a, b, return of a against b)`` from an exact evaluator."""
        for a, b, value in values:
            self.payoff.set_expected_return(a, b, float(value))

    # Views ------------------------------------------------------------------------
    def leaderboard(self, system: str = "trueskill") -> list[tuple[str, float]]:
        """``(player_id, conservative rating)`` best first, under ``"elo"`` or ``"trueskill"``."""
        if system not in _RATING_KINDS:
            raise ValueError(f"system must be one of {_RATING_KINDS}, got {system!r}")
        table = self.ratings[system]
        return [(pid, table.system.conservative(r)) for pid, r in table.leaderboard()]

    def view(self) -> dict[str, Any]:
        """What a driver logs each iteration: ratings (conservative), payoff, players, league step."""
        return {
            "ratings": {kind: dict(self.leaderboard(kind)) for kind in _RATING_KINDS},
            "payoff": self.payoff.to_dict(),
            "population": self.population.to_dict(),
            "league_step": self._league_step,
        }

    # State ------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The whole league state as JSON-able data (generator state included)."""
        return {
            "agents": list(self.agents),
            "roles": {name: role.to_dict() for name, role in self.roles.items()},
            "population": self.population.to_dict(),
            "payoff": self.payoff.to_dict(),
            "ratings": {kind: table.to_dict() for kind, table in self.ratings.items()},
            "evaluation": self.evaluation.to_dict(),
            "rng": self._rng.bit_generator.state,
            "cursor": self._cursor,
            "league_step": self._league_step,
            "steps": dict(self._steps),
            "last_snapshot": dict(self._last_snapshot),
            "recent": {pid: table.to_dict() for pid, table in self._recent.items()},
            "seen": list(self._seen),
            "dedupe_window": self.dedupe_window,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Replace this coordinator's state with one from :meth:`state_dict`."""
        restored = LeagueCoordinator(
            state["agents"],
            roles={name: Role.from_dict(role) for name, role in state["roles"].items()},
            payoff=PayoffTable.from_dict(state["payoff"]),
            evaluation=EvaluationScheduler.from_dict(state["evaluation"]),
            dedupe_window=state["dedupe_window"],
        )
        restored.population = Population.from_dict(state["population"])
        restored.ratings = {kind: RatingTable.from_dict(table) for kind, table in state["ratings"].items()}
        restored._rng.bit_generator.state = state["rng"]
        restored._cursor = int(state["cursor"])
        restored._league_step = int(state["league_step"])
        restored._steps = {pid: int(s) for pid, s in state["steps"].items()}
        restored._last_snapshot = {pid: int(s) for pid, s in state["last_snapshot"].items()}
        restored._recent = {pid: PayoffTable.from_dict(t) for pid, t in state["recent"].items()}
        restored._seen = deque(int(e) for e in state["seen"])
        restored._seen_set = set(restored._seen)
        self.__dict__.update(restored.__dict__)

    @classmethod
    def from_state_dict(cls, state: Mapping[str, Any]) -> LeagueCoordinator:
        """A new coordinator with the state of :meth:`state_dict`."""
        coordinator = cls(state["agents"], roles={})
        coordinator.load_state_dict(state)
        return coordinator


def _flip(outcome: Outcome) -> Outcome:
    return "loss" if outcome == "win" else "win" if outcome == "loss" else outcome
