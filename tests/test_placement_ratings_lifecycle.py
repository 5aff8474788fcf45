"""Placement ratings (openskill, games of 3+ players or of several groups) across a league's
life: a checkpoint and its resume keep them, an evicted snapshot leaves them, and an episode
that drew a snapshot before its eviction and ended after it does not bring it back.

Unit-level: the leagues are built directly and fed episode stats dicts as the samplers
report them; ``update`` runs with no samplers and a learner that hands out fixed weights.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from league.flow.metrics import NUM_AGENT_STEPS_SAMPLED
from league.leagues.groups import GroupLeague
from league.leagues.selfplay import SelfPlayLeague
from league.policy import RandomPolicyFactory
from league.population.payoff import PayoffTable
from league.population.selfplay import SelfPlayPool

pytest.importorskip("openskill")

SEATS = ("player_0", "player_1", "player_2")


class _Learner:
    """Weights for any policy asked (the leagues only snapshot them)."""

    def get_weights(self, ids):
        return {pid: {"w": np.zeros(2, dtype=np.float32)} for pid in ids}


def _hand(policies: dict[str, str], winner: str) -> dict:
    """A finished 3-player episode: ``winner``'s seat first, the others tied behind."""
    returns = {a: (1.0 if a == winner else -0.5) for a in policies}
    outcome = {a: ("win" if a == winner else "loss") for a in policies}
    return {"policies": policies, "returns": returns, "outcome": outcome, "length": 5}


def _selfplay_league() -> SelfPlayLeague:
    pool = SelfPlayPool("main", self_play_prob=0.2, max_snapshots=1, fixed_opponents={"random": 0.3})
    return SelfPlayLeague(pool, algorithm=None, fixed={"random": RandomPolicyFactory()}, snapshot_steps=10)


def _snapshot(league, steps: int, *policies: str) -> None:
    counters = {f"{NUM_AGENT_STEPS_SAMPLED}/{pid}": steps for pid in policies}
    league.update(steps, counters, _Learner(), [])


def _three_way(snapshot: str) -> list[dict]:
    seats = dict(zip(SEATS, ("main", snapshot, "random")))
    return [_hand(seats, winner) for winner in ("player_0", "player_0", "player_1", "player_2")]


def test_selfplay_forgets_an_evicted_snapshot_and_a_late_episode_does_not_bring_it_back():
    league = _selfplay_league()
    _snapshot(league, 10, "main")
    league.record(_three_way("main@v1"))
    assert {"main", "main@v1", "random"} <= set(league.ratings.table())
    _snapshot(league, 20, "main")  # main@v2 in, main@v1 evicted (max_snapshots=1)
    assert [s.policy_id for s in league.pool.snapshots] == ["main@v2"]
    assert "main@v1" not in league.ratings.table()
    games = league.ratings.games
    # A hand dealt before the eviction, finished after it.
    league.record(_three_way("main@v1"))
    assert "main@v1" not in league.ratings.table() and league.ratings.games == games
    assert "main@v1" not in league.metrics(2, _Learner())["ratings"]["openskill"]
    league.record(_three_way("main@v2"))  # the current snapshot is rated
    assert "main@v2" in league.ratings.table() and league.ratings.games == games + 4


def test_selfplay_ratings_survive_a_checkpoint_and_resume():
    league = _selfplay_league()
    _snapshot(league, 10, "main")
    league.record(_three_way("main@v1") * 3)
    table, games = league.ratings.table(), league.ratings.games
    state = json.loads(json.dumps(league.state()))  # as a checkpoint writes it
    resumed = _selfplay_league()
    resumed.load_state(state, {"main@v1": _Learner().get_weights(["main@v1"])["main@v1"]})
    assert resumed.ratings and resumed.ratings.table() == table and resumed.ratings.games == games
    assert resumed.metrics(1, _Learner())["ratings"]["openskill"] == table
    # Rating goes on from the restored values, not from scratch.
    fresh = _selfplay_league()
    _snapshot(fresh, 10, "main")
    resumed.record(_three_way("main@v1"))
    fresh.record(_three_way("main@v1"))
    assert resumed.ratings.table() != fresh.ratings.table()


def test_two_player_selfplay_keeps_no_placement_ratings_in_its_checkpoint():
    league = _selfplay_league()
    league.record([{"policies": {"a": "main", "b": "random"}, "returns": {"a": 1.0, "b": -1.0}, "outcome": {"a": "win", "b": "loss"}, "length": 3}])
    assert not league.ratings and league.state()["openskill"] is None


def _group_league() -> GroupLeague:
    return GroupLeague(
        groups={"predator": ["adversary_0", "adversary_1"], "prey": ["agent_0"]},
        policy_groups={"hunters": "predator", "runner": "prey"},
        algorithms={"hunters": None, "runner": None},
        fixed={"random": (RandomPolicyFactory(), 0.2)},
        payoff=PayoffTable(),
        snapshot_steps=10,
        max_snapshots=1,
    )


def _chase(hunters: str, runner: str, caught: bool) -> dict:
    seats = {"adversary_0": hunters, "adversary_1": hunters, "agent_0": runner}
    returns = {"adversary_0": 10.0, "adversary_1": 10.0, "agent_0": -10.0} if caught else {"adversary_0": -1.0, "adversary_1": -1.0, "agent_0": 1.0}
    outcome = {a: ("win" if (a != "agent_0") == caught else "loss") for a in seats}
    return {"policies": seats, "returns": returns, "outcome": outcome, "length": 25}


def test_group_league_does_not_rate_an_episode_of_an_evicted_snapshot():
    league = _group_league()
    _snapshot(league, 10, "hunters", "runner")
    league.record([_chase("hunters@v1", "runner", True), _chase("hunters", "runner@v1", False)])
    assert {"hunters@v1", "runner@v1"} <= set(league.ratings.table())
    _snapshot(league, 20, "hunters", "runner")  # the v2s in, the v1s evicted
    table = league.ratings.table()
    assert "hunters@v1" not in table and "runner@v1" not in table
    games = league.ratings.games
    # Episodes that drew the v1s before their eviction, finished after it.
    league.record([_chase("hunters@v1", "runner", True), _chase("hunters", "runner@v1", False)])
    table = league.ratings.table()
    assert "hunters@v1" not in table and "runner@v1" not in table and league.ratings.games == games
    league.record([_chase("hunters@v2", "runner", False)])  # a current snapshot is rated
    assert "hunters@v2" in league.ratings.table() and league.ratings.games == games + 1
