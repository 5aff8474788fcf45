"""Who is in the league: player records and the population that holds them.

A :class:`Player` ties a league participant to the policy id that acts for it. Players
come in three kinds:

* ``"learning"``: trained continuously (its policy's weights change);
* ``"snapshot"``: a frozen copy of a learning player taken at some training step;
* ``"scripted"``: a fixed hand-written policy (minimax, random...).

Snapshots point at the learning player they were copied from (``parent_id``), and a
learning player may name the player it was initialised from, so the population is a
family tree. Everything serialises to plain JSON-able dicts.
"""

from __future__ import annotations

from collections.abc import Iterator
import numbers
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["PLAYER_KINDS", "Player", "Population"]

#: The allowed values of :attr:`Player.kind`.
PLAYER_KINDS: tuple[str, ...] = ("learning", "snapshot", "scripted")

_SNAPSHOT_SEPARATOR = "@v"


@dataclass(frozen=True)
class Player:
    """One league participant.

    Attributes:
        player_id: unique id in the population (``"main_0"``, ``"main_0@v3"``).
        policy_id: the policy that acts for this player (several players may share one,
            e.g. scripted players built from the same policy).
        kind: one of :data:`PLAYER_KINDS`.
        role: free-form league role (``"main"``, ``"main_exploiter"``,
            ``"league_exploiter"``...) or None.
        parent_id: the player this one was copied or initialised from (required for
            snapshots), or None.
        created_step: training step (env steps of the parent, for snapshots) at creation.
        frozen: whether its policy's weights never change; snapshots and scripted
            players are always frozen.
    """

    player_id: str
    policy_id: str
    kind: str
    role: str | None = None
    parent_id: str | None = None
    created_step: int = 0
    frozen: bool = False

    def __post_init__(self) -> None:
        for name in ("player_id", "policy_id"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise ValueError(f"Player.{name} must be a non-empty string, got {value!r}")
        if self.kind not in PLAYER_KINDS:
            raise ValueError(f"Player.kind must be one of {PLAYER_KINDS}, got {self.kind!r}")
        for name in ("role", "parent_id"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise TypeError(f"Player.{name} must be a string or None, got {value!r}")
        step = self.created_step
        if isinstance(step, bool) or not isinstance(step, numbers.Integral):
            raise TypeError(f"Player.created_step must be an int, got {step!r}")
        # Normalise numpy integers so to_dict() stays JSON-able.
        object.__setattr__(self, "created_step", int(step))
        object.__setattr__(self, "frozen", bool(self.frozen))
        if self.created_step < 0:
            raise ValueError(f"Player.created_step must be >= 0, got {self.created_step}")
        if self.kind in ("snapshot", "scripted") and not self.frozen:
            raise ValueError(f"a {self.kind} player must be frozen ({self.player_id!r})")
        if self.kind == "snapshot" and self.parent_id is None:
            raise ValueError(f"snapshot player {self.player_id!r} needs a parent_id")
        if self.parent_id == self.player_id:
            raise ValueError(f"player {self.player_id!r} cannot be its own parent")

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict of every field."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Player:
        """Inverse of :meth:`to_dict`; unknown or missing keys raise ``ValueError``."""
        fields = set(cls.__dataclass_fields__)
        unknown = set(data) - fields
        if unknown:
            raise ValueError(f"unknown Player fields: {sorted(unknown)}")
        missing = {"player_id", "policy_id", "kind"} - set(data)
        if missing:
            raise ValueError(f"missing Player fields: {sorted(missing)}")
        return cls(**data)


class Population:
    """The players of a league, with snapshotting and the family tree.

    Players are kept in insertion order. Snapshot ids are ``f"{parent}@v{n}"`` with
    ``n`` counting the parent's snapshots from 0; a snapshot's policy id equals its
    player id, so the policy store keeps the frozen weights under that name.
    """

    def __init__(self, players: list[Player] | None = None) -> None:
        self._players: dict[str, Player] = {}
        self._next_version: dict[str, int] = {}
        for player in players or []:
            self.add(player)

    def add(self, player: Player) -> Player:
        """Add a player; its id must be new and its parent (if any) already present."""
        if not isinstance(player, Player):
            raise TypeError(f"expected a Player, got {type(player).__name__}")
        if player.player_id in self._players:
            raise ValueError(f"player {player.player_id!r} is already in the population")
        if player.parent_id is not None and player.parent_id not in self._players:
            raise ValueError(
                f"parent {player.parent_id!r} of {player.player_id!r} is not in the population"
            )
        self._players[player.player_id] = player
        if player.kind == "snapshot" and player.parent_id is not None:
            # Keep version numbering ahead of snapshots added by hand or from a dict.
            version = _snapshot_version(player.player_id, player.parent_id)
            if version is not None:
                current = self._next_version.get(player.parent_id, 0)
                self._next_version[player.parent_id] = max(current, version + 1)
        return player

    def snapshot(self, player_id: str, step: int) -> Player:
        """Freeze a copy of learning player ``player_id`` taken at training ``step``.

        The snapshot inherits the parent's role, gets id ``f"{player_id}@v{n}"`` and
        policy id equal to that id, and is added to the population. Steps of one
        player's snapshots must not decrease.
        """
        parent = self.get(player_id)
        if parent.kind != "learning":
            raise ValueError(f"only learning players can be snapshot; {player_id!r} is {parent.kind}")
        latest = self.latest_snapshot(player_id)
        if latest is not None and step < latest.created_step:
            raise ValueError(
                f"snapshot step {step} of {player_id!r} is before its latest snapshot "
                f"({latest.player_id!r} at step {latest.created_step})"
            )
        snapshot_id = self.next_snapshot_id(player_id)
        snap = Player(
            player_id=snapshot_id,
            policy_id=snapshot_id,
            kind="snapshot",
            role=parent.role,
            parent_id=player_id,
            created_step=step,
            frozen=True,
        )
        return self.add(snap)

    def next_snapshot_id(self, player_id: str) -> str:
        """The id the next :meth:`snapshot` of ``player_id`` will get."""
        return f"{player_id}{_SNAPSHOT_SEPARATOR}{self._next_version.get(player_id, 0)}"

    def get(self, player_id: str) -> Player:
        """The player with this id; ``KeyError`` naming it if absent."""
        try:
            return self._players[player_id]
        except KeyError:
            raise KeyError(f"no player {player_id!r} in the population") from None

    def __contains__(self, player_id: object) -> bool:
        """Whether a player with this id is present."""
        return player_id in self._players

    def __len__(self) -> int:
        """Number of players."""
        return len(self._players)

    def __iter__(self) -> Iterator[Player]:
        """Players in insertion order (a snapshot of the current list)."""
        return iter(list(self._players.values()))

    def players(self, kind: str | None = None, role: str | None = None) -> list[Player]:
        """Players in insertion order, filtered by ``kind`` and/or ``role`` when given."""
        if kind is not None and kind not in PLAYER_KINDS:
            raise ValueError(f"kind must be one of {PLAYER_KINDS} or None, got {kind!r}")
        return [
            p
            for p in self._players.values()
            if (kind is None or p.kind == kind) and (role is None or p.role == role)
        ]

    def player_ids(self, kind: str | None = None, role: str | None = None) -> list[str]:
        """Ids of :meth:`players` with the same filters."""
        return [p.player_id for p in self.players(kind=kind, role=role)]

    def children(self, player_id: str) -> list[Player]:
        """Players whose parent is ``player_id`` (its snapshots and forks), oldest first."""
        self.get(player_id)
        return [p for p in self._players.values() if p.parent_id == player_id]

    def snapshots_of(self, player_id: str) -> list[Player]:
        """Snapshots taken of ``player_id``, oldest first."""
        return [p for p in self.children(player_id) if p.kind == "snapshot"]

    def latest_snapshot(self, player_id: str) -> Player | None:
        """The most recent snapshot of ``player_id``, or None if it has none."""
        snaps = self.snapshots_of(player_id)
        return snaps[-1] if snaps else None

    def ancestors(self, player_id: str) -> list[Player]:
        """Parent, grandparent, ... of ``player_id`` (nearest first)."""
        chain: list[Player] = []
        current = self.get(player_id)
        while current.parent_id is not None:
            current = self.get(current.parent_id)
            chain.append(current)
        return chain

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict: players in insertion order plus snapshot version counters."""
        return {
            "players": [p.to_dict() for p in self._players.values()],
            "next_version": dict(self._next_version),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Population:
        """Inverse of :meth:`to_dict`."""
        if not isinstance(data, dict) or "players" not in data:
            raise ValueError("Population.from_dict needs a dict with a 'players' list")
        population = cls([Player.from_dict(p) for p in data["players"]])
        for player_id, version in data.get("next_version", {}).items():
            current = population._next_version.get(player_id, 0)
            population._next_version[player_id] = max(current, int(version))
        return population


def _snapshot_version(snapshot_id: str, parent_id: str) -> int | None:
    """``n`` from ``f"{parent_id}@v{n}"``, or None when the id has another form."""
    prefix = f"{parent_id}{_SNAPSHOT_SEPARATOR}"
    suffix = snapshot_id[len(prefix) :]
    if snapshot_id.startswith(prefix) and suffix.isdigit():
        return int(suffix)
    return None
