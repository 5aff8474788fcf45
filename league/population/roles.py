"""League roles as configurable recipes: whom a learning player trains against, when it
is snapshot, and whether it is reset afterwards.

A :class:`Role` is a weighted mixture of :class:`OpponentBranch` es. Each branch names
one or more :class:`OpponentPool` s (tried in order, the first with candidates left is
used) and each pool picks among its candidates with one of the existing matchmakers
(uniform FSP, PFSP, Nash) reading the :class:`~league.population.payoff.PayoffTable`.
A branch left without candidates (no snapshots yet, nobody forgotten) gives its weight
to the other branches; a role left with no candidates at all plays itself.

Pools are named by strings so recipes fit in a config file:

* ``"self"``: the player itself;
* ``"own_snapshots"``: the player's frozen snapshots;
* ``"frozen"``: every frozen player (all snapshots and scripted players);
* ``"scripted"``: the scripted players;
* ``"league"``: every player except the player itself;
* ``"learning:<role>"``: the learning players of ``<role>`` (may include the player);
* ``"snapshots:<role>"``: snapshots of players of ``<role>``;
* ``"role:<role>"``: learning players of ``<role>`` and their snapshots.

A role also names the payoff pairs its matchmakers read but the table has not measured
yet (:meth:`Role.needed_pairs`); the coordinator plays evaluation games for them.

Every role factory lives here, built from these pieces: AlphaStar's three roles
(:func:`main_agent_role`, :func:`main_exploiter_role`, :func:`league_exploiter_role`),
plain self-play and fictitious self-play (:func:`self_play_role`,
:func:`fictitious_self_play_role`), prioritised FSP (:func:`pfsp_role`) and PSRO
(:func:`psro_role`). :mod:`league.population.recipes` picks them from configuration.
"""

from __future__ import annotations

import numbers
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from league.population.matchmaking import (
    META_GAME_UTILITIES,
    PFSP_WEIGHTINGS,
    Matchmaker,
    NashMatchmaker,
    PFSPMatchmaker,
    UniformFSPMatchmaker,
)
from league.population.payoff import PayoffTable
from league.population.players import Population

__all__ = [
    "LEAGUE_EXPLOITER",
    "MAIN",
    "MAIN_EXPLOITER",
    "MATCHMAKER_KINDS",
    "OpponentBranch",
    "OpponentPool",
    "Role",
    "SnapshotRule",
    "alphastar_roles",
    "fictitious_self_play_role",
    "league_exploiter_role",
    "main_agent_role",
    "main_exploiter_role",
    "pfsp_role",
    "pool_members",
    "psro_role",
    "self_play_role",
]

MAIN, MAIN_EXPLOITER, LEAGUE_EXPLOITER = "main", "main_exploiter", "league_exploiter"

#: Matchmakers a pool may use.
MATCHMAKER_KINDS: tuple[str, ...] = ("uniform", "pfsp", "nash")

_PLAIN_POOLS = ("self", "own_snapshots", "frozen", "scripted", "league")
_ROLE_POOLS = ("learning", "snapshots", "role")


def _check_pool_name(pool: str) -> None:
    if not isinstance(pool, str):
        raise TypeError(f"pool must be a string, got {pool!r}")
    kind, sep, role = pool.partition(":")
    if pool in _PLAIN_POOLS or (sep and kind in _ROLE_POOLS and role):
        return
    raise ValueError(
        f"unknown opponent pool {pool!r}; expected one of {_PLAIN_POOLS} or "
        f"'<kind>:<role>' with kind in {_ROLE_POOLS}"
    )


def pool_members(pool: str, player_id: str, population: Population) -> list[str]:
    """Ids of the players in ``pool`` as seen by ``player_id``, in population order."""
    _check_pool_name(pool)
    population.get(player_id)
    if pool == "self":
        return [player_id]
    if pool == "own_snapshots":
        return [p.player_id for p in population.snapshots_of(player_id)]
    if pool == "frozen":
        return [p.player_id for p in population if p.frozen]
    if pool == "scripted":
        return population.player_ids(kind="scripted")
    if pool == "league":
        return [p.player_id for p in population if p.player_id != player_id]
    kind, _, role = pool.partition(":")
    learning = population.player_ids(kind="learning", role=role)
    if kind == "learning":
        return learning
    snapshots = population.player_ids(kind="snapshot", role=role)
    return snapshots if kind == "snapshots" else learning + snapshots


def _check_fraction(name: str, value: float | None) -> None:
    if value is not None and not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be in [0, 1] or None, got {value}")


@dataclass(frozen=True)
class OpponentPool:
    """Candidates from one named pool, filtered by win rate, chosen by one matchmaker.

    Attributes:
        pool: pool name (see the module docstring).
        matchmaker: ``"uniform"``, ``"pfsp"`` or ``"nash"``.
        weighting: PFSP weighting (``"hard"``, ``"variance"``, ``"linear"``).
        p: PFSP exponent of the ``"hard"`` weighting.
        max_win_rate: keep only candidates the player beats less often than this
            (AlphaStar's "forgotten" opponents); None keeps all.
        min_win_rate: keep only candidates the player beats at least this often; None
            keeps all. Untrusted pairs read as win rate 0.5 (see ``PayoffTable``).
        utility: meta-game payoff of the ``"nash"`` matchmaker, ``"win_rate"`` or
            ``"return"`` (see ``NashMatchmaker``); other matchmakers ignore it.
        noise_tolerance: posterior standard deviations within which win-rate meta-game
            payoffs count as ties for the ``"nash"`` matchmaker (see ``NashMatchmaker``);
            other matchmakers ignore it.
    """

    pool: str
    matchmaker: str = "uniform"
    weighting: str = "hard"
    p: float = 2.0
    max_win_rate: float | None = None
    min_win_rate: float | None = None
    utility: str = "win_rate"
    noise_tolerance: float = 0.0

    def __post_init__(self) -> None:
        _check_pool_name(self.pool)
        if self.matchmaker not in MATCHMAKER_KINDS:
            raise ValueError(f"matchmaker must be one of {MATCHMAKER_KINDS}, got {self.matchmaker!r}")
        if self.weighting not in PFSP_WEIGHTINGS:
            raise ValueError(f"weighting must be one of {PFSP_WEIGHTINGS}, got {self.weighting!r}")
        if self.p <= 0:
            raise ValueError(f"PFSP exponent p must be > 0, got {self.p}")
        _check_fraction("max_win_rate", self.max_win_rate)
        _check_fraction("min_win_rate", self.min_win_rate)
        if self.utility not in META_GAME_UTILITIES:
            raise ValueError(f"utility must be one of {META_GAME_UTILITIES}, got {self.utility!r}")
        if not np.isfinite(self.noise_tolerance) or self.noise_tolerance < 0:
            raise ValueError(f"noise_tolerance must be finite and >= 0, got {self.noise_tolerance}")

    def candidates(self, player_id: str, population: Population, payoff: PayoffTable) -> list[str]:
        """Pool members that pass the win-rate filters."""
        kept = []
        for candidate in pool_members(self.pool, player_id, population):
            rate = payoff.win_rate(player_id, candidate)
            if self.max_win_rate is not None and rate >= self.max_win_rate:
                continue
            if self.min_win_rate is not None and rate < self.min_win_rate:
                continue
            kept.append(candidate)
        return kept

    def make_matchmaker(self) -> Matchmaker:
        """The matchmaker this pool chooses with."""
        if self.matchmaker == "pfsp":
            return PFSPMatchmaker(self.weighting, self.p)
        if self.matchmaker == "nash":
            return NashMatchmaker(utility=self.utility, noise_tolerance=self.noise_tolerance)
        return UniformFSPMatchmaker()


@dataclass(frozen=True)
class OpponentBranch:
    """One share of a role's games: ``weight`` and the pools it tries, in order."""

    weight: float
    pools: tuple[OpponentPool, ...]
    name: str = ""

    def __post_init__(self) -> None:
        if not np.isfinite(self.weight) or self.weight < 0:
            raise ValueError(f"branch weight must be finite and >= 0, got {self.weight}")
        pools = tuple(self.pools)
        if not pools or not all(isinstance(p, OpponentPool) for p in pools):
            raise TypeError(f"branch {self.name!r} needs a non-empty tuple of OpponentPool, got {self.pools!r}")
        object.__setattr__(self, "pools", pools)

    def distribution(self, player_id: str, population: Population, payoff: PayoffTable) -> dict[str, float]:
        """Opponent probabilities from the first pool with candidates; empty if none has any."""
        for pool in self.pools:
            ids = pool.candidates(player_id, population, payoff)
            if ids:
                probs = pool.make_matchmaker().probabilities(player_id, ids, payoff)
                return {c: float(q) for c, q in zip(ids, probs)}
        return {}

    def needed_pairs(self, player_id: str, population: Population, payoff: PayoffTable) -> list[tuple[str, str]]:
        """Unmeasured payoff pairs the matchmaker of the pool in use (the first with
        candidates, as in :meth:`distribution`) needs, most urgent first."""
        for pool in self.pools:
            ids = pool.candidates(player_id, population, payoff)
            if ids:
                return pool.make_matchmaker().needed_pairs(player_id, ids, payoff)
        return []


@dataclass(frozen=True)
class SnapshotRule:
    """When a learning player is frozen into a snapshot.

    A snapshot is due when ``every_steps`` learner steps have passed since the last
    one, or, once ``min_steps`` have passed, when the player's win rate against the
    players of ``against`` in games since its last snapshot is above ``win_rate`` (the
    ``aggregate`` of per-opponent rates, ``"min"`` or ``"mean"``), every one of them
    backed by at least ``min_games`` games. Both None: never.
    """

    every_steps: int | None = None
    win_rate: float | None = None
    against: str = "league"
    min_games: float = 20.0
    min_steps: int = 0
    aggregate: str = "min"

    def __post_init__(self) -> None:
        steps = self.every_steps
        if steps is not None and (isinstance(steps, bool) or not isinstance(steps, numbers.Integral) or steps < 1):
            raise ValueError(f"every_steps must be a positive int or None, got {self.every_steps!r}")
        _check_fraction("win_rate", self.win_rate)
        _check_pool_name(self.against)
        if self.min_games < 0 or self.min_steps < 0:
            raise ValueError(f"min_games and min_steps must be >= 0, got {self.min_games}, {self.min_steps}")
        if self.aggregate not in ("min", "mean"):
            raise ValueError(f"aggregate must be 'min' or 'mean', got {self.aggregate!r}")

    def due(self, steps_since: int, player_id: str, population: Population, recent: PayoffTable) -> bool:
        """Whether to snapshot now, ``steps_since`` steps after the last snapshot.

        ``recent`` holds only the games played since that snapshot.
        """
        if self.every_steps is not None and steps_since >= self.every_steps:
            return True
        if self.win_rate is None or steps_since < self.min_steps:
            return False
        opponents = [o for o in pool_members(self.against, player_id, population) if o != player_id]
        if not opponents or any(recent.games(player_id, o) < max(self.min_games, 1e-12) for o in opponents):
            return False
        rates = [_raw_win_rate(recent, player_id, o) for o in opponents]
        score = min(rates) if self.aggregate == "min" else float(np.mean(rates))
        return score > self.win_rate


def _raw_win_rate(table: PayoffTable, a: str, b: str) -> float:
    wins, draws, losses = table.counts(a, b)
    return (wins + 0.5 * draws) / (wins + draws + losses)


@dataclass(frozen=True)
class Role:
    """A recipe for one kind of learning player.

    Attributes:
        branches: the weighted opponent branches (weights are normalised).
        snapshot: when the player is snapshot.
        reset_probability: chance of resetting the player to its initial policy right
            after each snapshot (1 for AlphaStar's main exploiters).
    """

    branches: tuple[OpponentBranch, ...]
    snapshot: SnapshotRule = field(default_factory=SnapshotRule)
    reset_probability: float = 0.0

    def __post_init__(self) -> None:
        branches = tuple(self.branches)
        if not branches or not all(isinstance(b, OpponentBranch) for b in branches):
            raise TypeError(f"Role needs a non-empty tuple of OpponentBranch, got {self.branches!r}")
        if sum(b.weight for b in branches) <= 0:
            raise ValueError("Role branch weights must not all be 0")
        if not isinstance(self.snapshot, SnapshotRule):
            raise TypeError(f"Role.snapshot must be a SnapshotRule, got {type(self.snapshot).__name__}")
        _check_fraction("reset_probability", self.reset_probability)
        object.__setattr__(self, "branches", branches)

    def opponent_distribution(self, player_id: str, population: Population, payoff: PayoffTable) -> dict[str, float]:
        """Probability of each opponent for the player's next game (sums to 1)."""
        total: dict[str, float] = {}
        mass = 0.0
        for branch in self.branches:
            if branch.weight == 0:
                continue
            dist = branch.distribution(player_id, population, payoff)
            if dist:
                mass += branch.weight
                for opponent, q in dist.items():
                    total[opponent] = total.get(opponent, 0.0) + branch.weight * q
        if mass == 0.0:
            return {player_id: 1.0}
        return {opponent: q / mass for opponent, q in total.items()}

    def needed_pairs(self, player_id: str, population: Population, payoff: PayoffTable) -> list[tuple[str, str]]:
        """Unmeasured payoff pairs the player's branches (those with weight) need before
        their matchmakers can read them, branch by branch, most urgent first; repeats dropped."""
        out: list[tuple[str, str]] = []
        seen: set[frozenset[str]] = set()
        for branch in self.branches:
            if branch.weight == 0:
                continue
            for a, b in branch.needed_pairs(player_id, population, payoff):
                if frozenset((a, b)) not in seen:
                    seen.add(frozenset((a, b)))
                    out.append((a, b))
        return out

    def choose_opponent(
        self, player_id: str, population: Population, payoff: PayoffTable, rng: np.random.Generator
    ) -> str:
        """One opponent drawn from :meth:`opponent_distribution`."""
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        dist = self.opponent_distribution(player_id, population, payoff)
        ids = list(dist)
        probs = np.fromiter(dist.values(), dtype=np.float64, count=len(ids))
        return ids[int(rng.choice(len(ids), p=probs / probs.sum()))]

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict of the whole recipe."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Role:
        """Inverse of :meth:`to_dict`; unknown keys raise ``TypeError`` from the dataclasses."""
        if not isinstance(data, dict) or "branches" not in data:
            raise ValueError("Role.from_dict needs a dict with a 'branches' list")
        branches = tuple(
            OpponentBranch(
                weight=b["weight"],
                pools=tuple(OpponentPool(**pool) for pool in b["pools"]),
                name=b.get("name", ""),
            )
            for b in data["branches"]
        )
        return cls(
            branches=branches,
            snapshot=SnapshotRule(**data.get("snapshot", {})),
            reset_probability=data.get("reset_probability", 0.0),
        )


# ----------------------------------------------------------------------------- recipes


def self_play_role(snapshot_every: int | None = None) -> Role:
    """Plain self-play: always against itself (snapshots only for the record)."""
    return Role((OpponentBranch(1.0, (OpponentPool("self"),), "self_play"),), SnapshotRule(every_steps=snapshot_every))


def fictitious_self_play_role(snapshot_every: int, self_play: float = 0.0) -> Role:
    """Uniform fictitious self-play: uniform over its own snapshots (itself until it has
    one), plus a ``self_play`` share of games against its current self."""
    _check_fraction("self_play", self_play)
    return Role(
        (
            OpponentBranch(self_play, (OpponentPool("self"),), "self_play"),
            OpponentBranch(1.0 - self_play, (OpponentPool("own_snapshots"),), "fsp"),
        ),
        SnapshotRule(every_steps=snapshot_every),
    )


def pfsp_role(snapshot_every: int, self_play: float = 0.2, weighting: str = "hard", p: float = 2.0) -> Role:
    """Prioritised fictitious self-play: a ``self_play`` share against itself, the rest by
    PFSP (``weighting``, exponent ``p``) over every frozen player (snapshots and scripted)."""
    return Role(
        (
            OpponentBranch(self_play, (OpponentPool("self"),), "self_play"),
            OpponentBranch(1.0 - self_play, (OpponentPool("frozen", "pfsp", weighting, p),), "pfsp"),
        ),
        SnapshotRule(every_steps=snapshot_every),
    )


def psro_role(
    snapshot_every: int,
    self_play: float = 0.0,
    utility: str = "win_rate",
    reset_probability: float = 1.0,
    noise_tolerance: float = 1.0,
) -> Role:
    """PSRO with an RL best response: opponents drawn from the Nash mixture of the frozen
    players' measured meta-game (``utility``: ``"win_rate"`` or ``"return"``), a
    ``self_play`` share against itself. Every snapshot adds a strategy to the meta-game;
    with ``reset_probability`` 1 (PSRO proper) the next best response then trains from the
    initial policy again, with 0 the same policy keeps training (cheaper, but a policy
    that has become nearly deterministic explores too little to find new best responses).

    The Nash is solved only over measured entries; a snapshot not yet measured against
    the others keeps a uniform share, and the league plays the evaluation games it needs
    (see :class:`~league.population.matchmaking.NashMatchmaker`). ``noise_tolerance``:
    win rates closer than this many posterior standard deviations count as ties, and the
    least concentrated of the near-equilibria is played (0: the exact solve)."""
    return Role(
        (
            OpponentBranch(self_play, (OpponentPool("self"),), "self_play"),
            OpponentBranch(
                1.0 - self_play,
                (OpponentPool("frozen", "nash", utility=utility, noise_tolerance=noise_tolerance),),
                "meta_nash",
            ),
        ),
        SnapshotRule(every_steps=snapshot_every),
        reset_probability=reset_probability,
    )


def main_agent_role(
    snapshot_every: int,
    self_play: float = 0.35,
    pfsp: float = 0.5,
    verification: float = 0.15,
    exploiter_win_rate: float = 0.3,
    forgotten_win_rate: float = 0.7,
) -> Role:
    """AlphaStar's main agent.

    ``self_play``: the current main agents (itself included); ``pfsp``: PFSP (hard)
    over every frozen player; ``verification``: main exploiters (current or frozen)
    it beats less than ``exploiter_win_rate``, else its own snapshots it beats less
    than ``forgotten_win_rate``. Snapshot every ``snapshot_every`` steps, never reset.
    """
    return Role(
        (
            OpponentBranch(self_play, (OpponentPool(f"learning:{MAIN}"),), "self_play"),
            OpponentBranch(pfsp, (OpponentPool("frozen", "pfsp"),), "pfsp"),
            OpponentBranch(
                verification,
                (
                    OpponentPool(f"role:{MAIN_EXPLOITER}", "pfsp", "variance", max_win_rate=exploiter_win_rate),
                    OpponentPool("own_snapshots", "pfsp", max_win_rate=forgotten_win_rate),
                ),
                "verification",
            ),
        ),
        SnapshotRule(every_steps=snapshot_every),
    )


def main_exploiter_role(
    snapshot_every: int, win_rate: float = 0.7, min_games: float = 20.0, hopeless_win_rate: float = 0.1
) -> Role:
    """AlphaStar's main exploiter: plays the current main agents (while it wins at least
    ``hopeless_win_rate`` against them; else PFSP-variance over their snapshots).
    Snapshot after ``snapshot_every`` steps or once it beats every main agent more than
    ``win_rate`` over ``min_games`` games each; always reset after a snapshot."""
    return Role(
        (
            OpponentBranch(
                1.0,
                (
                    OpponentPool(f"learning:{MAIN}", min_win_rate=hopeless_win_rate),
                    OpponentPool(f"snapshots:{MAIN}", "pfsp", "variance"),
                ),
                "exploit_mains",
            ),
        ),
        SnapshotRule(every_steps=snapshot_every, win_rate=win_rate, against=f"learning:{MAIN}", min_games=min_games),
        reset_probability=1.0,
    )


def league_exploiter_role(
    snapshot_every: int, win_rate: float = 0.7, min_games: float = 20.0, reset_probability: float = 0.25
) -> Role:
    """AlphaStar's league exploiter: PFSP (hard) over every frozen player. Snapshot after
    ``snapshot_every`` steps or once it beats each of them more than ``win_rate``;
    reset with ``reset_probability`` after each snapshot."""
    return Role(
        (OpponentBranch(1.0, (OpponentPool("frozen", "pfsp"),), "pfsp"),),
        SnapshotRule(every_steps=snapshot_every, win_rate=win_rate, against="frozen", min_games=min_games),
        reset_probability=reset_probability,
    )


def alphastar_roles(snapshot_every: int) -> dict[str, Role]:
    """The three AlphaStar roles keyed by role name, all snapshotting every ``snapshot_every`` steps at most."""
    return {
        MAIN: main_agent_role(snapshot_every),
        MAIN_EXPLOITER: main_exploiter_role(snapshot_every),
        LEAGUE_EXPLOITER: league_exploiter_role(snapshot_every),
    }
