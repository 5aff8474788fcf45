"""League roles: opponent pools, branch mixtures, snapshot rules, AlphaStar recipes."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import chisquare

from league.population import PayoffTable, Player, Population
from league.population.roles import (
    OpponentBranch,
    OpponentPool,
    Role,
    SnapshotRule,
    fictitious_self_play_role,
    league_exploiter_role,
    main_agent_role,
    main_exploiter_role,
    pool_members,
    self_play_role,
)


def _league() -> Population:
    pop = Population()
    pop.add(Player("main_0", "main_0", "learning", role="main"))
    pop.add(Player("me_0", "me_0", "learning", role="main_exploiter"))
    pop.add(Player("le_0", "le_0", "learning", role="league_exploiter"))
    pop.add(Player("random", "random", "scripted", frozen=True))
    pop.snapshot("main_0", 10)
    pop.snapshot("main_0", 20)
    pop.snapshot("me_0", 15)
    return pop


def _record(payoff: PayoffTable, a: str, b: str, wins: int, losses: int) -> None:
    for _ in range(wins):
        payoff.update(a, b, "win")
    for _ in range(losses):
        payoff.update(a, b, "loss")


def test_pools_resolve_against_the_population() -> None:
    pop = _league()
    assert pool_members("self", "main_0", pop) == ["main_0"]
    assert pool_members("own_snapshots", "main_0", pop) == ["main_0@v0", "main_0@v1"]
    assert pool_members("frozen", "le_0", pop) == ["random", "main_0@v0", "main_0@v1", "me_0@v0"]
    assert pool_members("scripted", "le_0", pop) == ["random"]
    assert "main_0" not in pool_members("league", "main_0", pop) and len(pool_members("league", "main_0", pop)) == 6
    assert pool_members("learning:main", "me_0", pop) == ["main_0"]
    assert pool_members("snapshots:main", "me_0", pop) == ["main_0@v0", "main_0@v1"]
    assert pool_members("role:main_exploiter", "main_0", pop) == ["me_0", "me_0@v0"]
    for bad in ("everyone", "learning:", "team:main"):
        with pytest.raises(ValueError, match="pool"):
            pool_members(bad, "main_0", pop)


def test_recipe_validation_names_the_problem() -> None:
    with pytest.raises(ValueError, match="matchmaker"):
        OpponentPool("frozen", matchmaker="elo")
    with pytest.raises(ValueError, match="max_win_rate"):
        OpponentPool("frozen", max_win_rate=1.5)
    with pytest.raises(ValueError, match="weight"):
        OpponentBranch(-1.0, (OpponentPool("self"),))
    with pytest.raises(TypeError, match="OpponentPool"):
        OpponentBranch(1.0, ("self",))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="all be 0"):
        Role((OpponentBranch(0.0, (OpponentPool("self"),)),))
    with pytest.raises(ValueError, match="every_steps"):
        SnapshotRule(every_steps=0)
    with pytest.raises(ValueError, match="aggregate"):
        SnapshotRule(win_rate=0.7, aggregate="median")
    with pytest.raises(ValueError, match="reset_probability"):
        Role((OpponentBranch(1.0, (OpponentPool("self"),)),), reset_probability=2.0)


def _main_payoff() -> PayoffTable:
    payoff = PayoffTable()
    _record(payoff, "main_0", "main_0@v0", 8, 2)  # 0.8
    _record(payoff, "main_0", "main_0@v1", 5, 5)  # 0.5
    _record(payoff, "main_0", "random", 10, 0)  # 1.0
    _record(payoff, "main_0", "me_0@v0", 1, 9)  # 0.1
    _record(payoff, "main_0", "me_0", 2, 8)  # 0.2
    return payoff


def test_main_agent_mixes_self_play_pfsp_and_verification() -> None:
    pop, payoff = _league(), _main_payoff()
    dist = main_agent_role(100).opponent_distribution("main_0", pop, payoff)
    pfsp = {"random": 0.0, "main_0@v0": 0.04, "main_0@v1": 0.25, "me_0@v0": 0.81}  # (1 - x)^2
    pfsp_total = sum(pfsp.values())
    expected = {pid: 0.5 * w / pfsp_total for pid, w in pfsp.items()}
    expected["main_0"] = 0.35
    # Verification: exploiters it beats less than 30%, PFSP-variance x(1 - x): 0.16 and 0.09.
    expected["me_0"] = 0.15 * 0.16 / 0.25
    expected["me_0@v0"] += 0.15 * 0.09 / 0.25
    assert dist.keys() == expected.keys()
    for pid, p in expected.items():
        assert dist[pid] == pytest.approx(p), pid
    assert sum(dist.values()) == pytest.approx(1.0)


def test_verification_falls_back_to_forgotten_snapshots_then_drops_out() -> None:
    pop, payoff = _league(), _main_payoff()
    _record(payoff, "main_0", "me_0", 30, 0)
    _record(payoff, "main_0", "me_0@v0", 30, 0)  # exploiters beaten: fall back to own snapshots
    dist = main_agent_role(100).opponent_distribution("main_0", pop, payoff)
    # Only v1 (win rate 0.5) is "forgotten" (below 0.7); v0 (0.8) is not: v1 gets all 15%.
    pfsp = {c: (1 - payoff.win_rate("main_0", c)) ** 2 for c in ("random", "main_0@v0", "main_0@v1", "me_0@v0")}
    assert dist["main_0@v1"] == pytest.approx(0.5 * pfsp["main_0@v1"] / sum(pfsp.values()) + 0.15)
    assert "me_0" not in dist
    _record(payoff, "main_0", "main_0@v1", 40, 0)
    dist = main_agent_role(100).opponent_distribution("main_0", pop, payoff)
    # Nothing to verify against: its 15% goes to the other two branches in proportion.
    assert dist["main_0"] == pytest.approx(0.35 / 0.85)


def test_empty_league_plays_itself_and_sampling_follows_the_distribution() -> None:
    pop = Population([Player("main_0", "main_0", "learning", role="main")])
    assert main_agent_role(100).opponent_distribution("main_0", pop, PayoffTable()) == {"main_0": 1.0}

    pop, payoff = _league(), _main_payoff()
    role = main_agent_role(100)
    dist = role.opponent_distribution("main_0", pop, payoff)
    rng = np.random.default_rng(0)
    draws = [role.choose_opponent("main_0", pop, payoff, rng) for _ in range(3000)]
    ids = [pid for pid, p in dist.items() if p > 0]
    counts = np.array([draws.count(pid) for pid in ids])
    assert "random" not in draws  # probability 0 under hard PFSP (always beaten)
    assert chisquare(counts, 3000 * np.array([dist[pid] for pid in ids])).pvalue > 1e-3


def test_main_exploiter_targets_mains_until_hopeless() -> None:
    pop, payoff = _league(), PayoffTable()
    role = main_exploiter_role(1000)
    assert role.opponent_distribution("me_0", pop, payoff) == {"main_0": 1.0}
    _record(payoff, "me_0", "main_0", 1, 19)  # 5% < 10%: train on the mains' snapshots instead
    assert role.opponent_distribution("me_0", pop, payoff) == {"main_0@v0": 0.5, "main_0@v1": 0.5}
    _record(payoff, "me_0", "main_0@v0", 1, 9)  # variance weights: 0.09 vs 0.25 (untrusted = 0.5)
    dist = role.opponent_distribution("me_0", pop, payoff)
    assert dist["main_0@v0"] == pytest.approx(0.09 / 0.34)
    assert role.reset_probability == 1.0


def test_league_exploiter_and_plain_recipes() -> None:
    pop, payoff = _league(), PayoffTable()
    _record(payoff, "le_0", "random", 10, 0)
    dist = league_exploiter_role(1000).opponent_distribution("le_0", pop, payoff)
    assert dist["random"] == 0.0 and dist["main_0@v0"] == pytest.approx(1 / 3)
    assert self_play_role().opponent_distribution("main_0", pop, payoff) == {"main_0": 1.0}
    fsp = fictitious_self_play_role(100, self_play=0.2)
    assert fsp.opponent_distribution("main_0", pop, payoff) == pytest.approx(
        {"main_0": 0.2, "main_0@v0": 0.4, "main_0@v1": 0.4}
    )
    assert fsp.opponent_distribution("le_0", pop, payoff) == {"le_0": 1.0}  # no snapshots yet


def test_snapshot_rule_by_steps_and_by_win_rate() -> None:
    pop = _league()
    recent = PayoffTable()
    by_steps = SnapshotRule(every_steps=100)
    assert not by_steps.due(99, "main_0", pop, recent) and by_steps.due(100, "main_0", pop, recent)
    assert not SnapshotRule().due(10**9, "main_0", pop, recent)

    rule = SnapshotRule(win_rate=0.7, against="learning:main", min_games=5, min_steps=10)
    _record(recent, "me_0", "main_0", 4, 0)
    assert not rule.due(50, "me_0", pop, recent)  # 4 games < min_games
    _record(recent, "me_0", "main_0", 1, 0)
    assert rule.due(50, "me_0", pop, recent)
    assert not rule.due(9, "me_0", pop, recent)  # before min_steps
    _record(recent, "me_0", "main_0", 0, 3)  # 5/8 = 0.625
    assert not rule.due(50, "me_0", pop, recent)

    two = PayoffTable()
    _record(two, "le_0", "main_0@v0", 10, 0)
    _record(two, "le_0", "main_0@v1", 6, 4)
    strict = SnapshotRule(win_rate=0.7, against="snapshots:main", min_games=10)
    lenient = SnapshotRule(win_rate=0.7, against="snapshots:main", min_games=10, aggregate="mean")
    assert not strict.due(1, "le_0", pop, two) and lenient.due(1, "le_0", pop, two)


def test_roles_round_trip_through_json() -> None:
    for role in (main_agent_role(7), main_exploiter_role(8), league_exploiter_role(9), fictitious_self_play_role(3, 0.5)):
        data = json.loads(json.dumps(role.to_dict()))
        assert Role.from_dict(data) == role
    with pytest.raises(ValueError, match="branches"):
        Role.from_dict({"snapshot": {}})
