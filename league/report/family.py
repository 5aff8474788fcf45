"""The league's family tree: learning players, their snapshots in order, and who came from whom.

Two sources. A league coordinator run stores its :class:`~league.population.Population`
(players with ``kind``, ``parent_id``, ``created_step``), which is read as is. The simple
self-play pool stores only the ids of the snapshots it still holds (``main@v4``...); there
the tree is rebuilt from the ids: ``<policy>@v<n>`` is the n-th snapshot of ``<policy>``,
ids seen in the payoff table or the metrics rows but no longer in the pool were evicted, and the step of
each snapshot is the env steps of the metrics row that names it in ``new_snapshots``
(only for runs that were not resumed, whose rows all lie in this run directory).

The same order (each learning player followed by its snapshots, then fixed opponents)
is the order of the payoff heat map.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from league.population.players import Population
from league.report.data import RunData
from league.report.series import is_number

__all__ = ["TreeNode", "Lane", "Family", "build_family", "player_order", "steps_known"]

_SNAPSHOT_SEPARATOR = "@v"


@dataclass
class TreeNode:
    """One player in the tree.

    Attributes:
        player_id: the player's id.
        kind: ``"learning"``, ``"snapshot"`` or ``"scripted"``.
        step: training step at creation, or None when unknown.
        role: league role, if any.
        active: False for a snapshot the self-play pool has evicted.
    """

    player_id: str
    kind: str
    step: int | None = None
    role: str | None = None
    active: bool = True


@dataclass
class Lane:
    """A learning player, its snapshots oldest first, and the player it started from."""

    player: TreeNode
    snapshots: list[TreeNode] = field(default_factory=list)
    parent_id: str | None = None
    end_step: int | None = None  # the player's latest known step (where its line ends)


@dataclass
class Family:
    """The whole tree.

    Attributes:
        lanes: one per learning player, in league order.
        fixed: scripted or otherwise fixed opponents (no lineage).
        step_label: what the node steps count (for the tree's axis).
        note: a caveat shown under the tree (inferred steps...), or None.
    """

    lanes: list[Lane] = field(default_factory=list)
    fixed: list[TreeNode] = field(default_factory=list)
    step_label: str = "step"
    note: str | None = None

    def nodes(self) -> list[TreeNode]:
        """Every node: each lane's player then its snapshots, then the fixed opponents."""
        out: list[TreeNode] = []
        for lane in self.lanes:
            out.append(lane.player)
            out.extend(lane.snapshots)
        return out + self.fixed


def build_family(run: RunData) -> Family:
    """The family tree of ``run`` (from its league population, else from snapshot ids)."""
    if run.population is not None:
        steps = run.league.get("steps") if run.league else None
        return _from_population(run.population, steps if isinstance(steps, Mapping) else {})
    return _from_snapshot_ids(run)


def player_order(family: Family, players: Iterable[str]) -> list[str]:
    """``players`` in tree order; ids the tree does not know come last, sorted."""
    wanted = list(dict.fromkeys(players))
    rank = {node.player_id: i for i, node in enumerate(family.nodes())}
    known = sorted((p for p in wanted if p in rank), key=rank.__getitem__)
    return known + sorted(p for p in wanted if p not in rank)


def _from_population(population: Population, current_steps: Mapping[str, Any]) -> Family:
    family = Family(step_label="learner steps")
    lanes: dict[str, Lane] = {}
    for player in population:
        node = TreeNode(player.player_id, player.kind, player.created_step, player.role)
        if player.kind == "learning":
            end = current_steps.get(player.player_id)
            lanes[player.player_id] = Lane(node, parent_id=player.parent_id, end_step=int(end) if is_number(end) else None)
        elif player.kind == "snapshot" and player.parent_id in lanes:
            lanes[player.parent_id].snapshots.append(node)
        else:
            family.fixed.append(node)
    family.lanes = list(lanes.values())
    return family


def _learning_ids(run: RunData) -> list[str]:
    policies = run.config_value("policies")
    if isinstance(policies, Mapping) and policies:
        return [str(p) for p in policies]
    if isinstance(run.summary, Mapping) and isinstance(run.summary.get("win_rates_vs_random"), Mapping):
        ids = [str(p) for p in run.summary["win_rates_vs_random"]]
        if ids:
            return ids
    return ["main"]  # the trainer's name for a single learning policy


def _version(player_id: str, parent: str) -> int | None:
    prefix = f"{parent}{_SNAPSHOT_SEPARATOR}"
    suffix = player_id[len(prefix) :]
    return int(suffix) if player_id.startswith(prefix) and suffix.isdigit() else None


def _from_snapshot_ids(run: RunData) -> Family:
    summary = run.summary or {}
    learning = _learning_ids(run)
    held = [str(s) for s in summary.get("snapshots", []) if isinstance(s, str)]
    seen = set(held) | set(run.payoff.players() if run.payoff is not None else [])
    # Evicted snapshots leave the payoff table; the rows still name every snapshot taken.
    seen |= {str(p) for row in run.rows if isinstance(row.get("new_snapshots"), list) for p in row["new_snapshots"]}
    steps = _inferred_steps(run)
    family = Family(step_label="env steps (from the metrics rows)" if steps else "snapshot order")
    claimed: set[str] = set(learning)
    for pid in learning:
        versions = sorted((v, s) for s in seen if (v := _version(s, pid)) is not None)
        last = run.last_row().get("env_steps")
        lane = Lane(TreeNode(pid, "learning", 0 if steps else None), end_step=int(last) if steps and is_number(last) else None)
        for version, snap in versions:
            step = steps(version) if steps else None
            lane.snapshots.append(TreeNode(snap, "snapshot", step, active=snap in held))
            claimed.add(snap)
        family.lanes.append(lane)
    fixed = run.config_value("league.fixed_opponents", {})
    fixed_ids = [str(p) for p in fixed] if isinstance(fixed, Mapping) and len(learning) == 1 else []
    for pid in fixed_ids + sorted(seen - claimed - set(fixed_ids)):
        family.fixed.append(TreeNode(pid, "scripted"))
    if any(not n.active for lane in family.lanes for n in lane.snapshots):
        family.note = "hollow grey snapshots were evicted from the self-play pool (max_snapshots)"
    return family


def _inferred_steps(run: RunData) -> Callable[[int], int | None] | None:
    """``version -> env steps`` for self-play snapshots, or None when it cannot be trusted.

    Each metrics row names the snapshots taken in its iteration (``new_snapshots``); a
    snapshot's step is that row's env steps. Resumed runs lack the earlier rows."""
    summary = run.summary or {}
    if summary.get("resumed_from") or not run.rows:
        return None
    taken: dict[int, int] = {}
    for row in run.rows:
        ids = row.get("new_snapshots")
        if isinstance(ids, list) and is_number(row.get("env_steps")):
            for pid in ids:
                version = str(pid).rpartition(_SNAPSHOT_SEPARATOR)[2]
                if version.isdigit():
                    taken[int(version)] = int(row["env_steps"])
    if not taken:
        return None
    return taken.get


def steps_known(family: Family) -> bool:
    """Whether every lane node has a step, so the tree can be drawn on a step axis."""
    nodes = [n for lane in family.lanes for n in (lane.player, *lane.snapshots)]
    return bool(nodes) and all(n.step is not None for n in nodes)
