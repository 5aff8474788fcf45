"""League coordinator: matchups in batches, reports, snapshots/resets, state, evaluation scheduling."""

from __future__ import annotations

import json

import numpy as np
import pytest

from league.policy import PolicyFactory, RandomPolicy, RandomPolicyFactory
from league.population import PayoffTable, Player
from league.leagues.remote_coordinator import make_remote_coordinator, remote_refill
from league.population.coordinator import LeagueCoordinator, ResetAction, SnapshotAction
from league.population.evaluation import EvaluationScheduler, beta_variance
from league.population.roles import league_exploiter_role, main_agent_role, main_exploiter_role
from league.sampling import Matchup, MatchupBatch, Sampler

AGENTS = ["player_0", "player_1"]


def _coordinator(seed: int = 0, snapshot_every: int = 100) -> LeagueCoordinator:
    roles = {
        "main": main_agent_role(snapshot_every),
        "main_exploiter": main_exploiter_role(10**9, win_rate=0.7, min_games=5),
        "league_exploiter": league_exploiter_role(snapshot_every),
    }
    coord = LeagueCoordinator(AGENTS, roles=roles, seed=seed)
    coord.add_player(Player("init", "init", "scripted", frozen=True))
    coord.add_player(Player("main", "main", "learning", role="main"))
    coord.add_player(Player("me", "me", "learning", role="main_exploiter", parent_id="init"))
    coord.add_player(Player("le", "le", "learning", role="league_exploiter"))
    return coord


def _episode(episode_id: int, policy_0: str, policy_1: str, outcome_0: str) -> dict:
    flip = {"win": "loss", "loss": "win", "draw": "draw"}
    return {
        "episode_id": episode_id,
        "length": 3,
        "returns": {},
        "policies": {"player_0": policy_0, "player_1": policy_1},
        "outcome": {"player_0": outcome_0, "player_1": flip[outcome_0]},
    }


# ---------------------------------------------------------------------------- matchups


def test_matchups_rotate_learners_and_train_only_the_learning_seat() -> None:
    coord = _coordinator()
    matchups = coord.next_matchups(300)
    learners = []
    seats = set()
    for m in matchups:
        assert set(m.policies) == set(AGENTS)
        assert m.learning_agents
        (learner,) = {m.policies[a] for a in m.learning_agents}
        learners.append(learner)
        if len(m.learning_agents) == 1:
            (seat,) = m.learning_agents
            other = next(a for a in AGENTS if a != seat)
            assert m.policies[other] != learner  # the opponent's seat never learns
            seats.add(seat)
        else:
            assert m.policies["player_0"] == m.policies["player_1"]  # self-play: both seats are the learner
    assert learners[:6] == ["main", "me", "le"] * 2
    assert seats == set(AGENTS)
    # The exploiter plays the current main; the league exploiter plays frozen players only.
    assert {m.policies[a] for m in matchups[1::3] for a in AGENTS} == {"me", "main"}
    assert {m.policies[a] for m in matchups[2::3] for a in AGENTS} <= {"le", "init"}
    with pytest.raises(ValueError, match="learning player"):
        coord.next_matchups(2, learners=["init"])
    with pytest.raises(ValueError, match="positive int"):
        coord.next_matchups(0)


def test_matchup_batch_serves_in_order_then_wraps_or_refills() -> None:
    first = [Matchup({"player_0": "a", "player_1": "b"}), Matchup({"player_0": "b", "player_1": "a"})]
    rng = np.random.default_rng(0)
    batch = MatchupBatch(first)
    assert [batch.next_matchup(AGENTS, i, rng) for i in range(3)] == [first[0], first[1], first[0]]
    assert batch.wraps == 1
    calls = []

    def refill(k: int) -> list[Matchup]:
        calls.append(k)
        return [Matchup({"player_0": "c", "player_1": "c"})] * k

    batch = MatchupBatch(first[:1], refill=refill, refill_size=4)
    batch.next_matchup(AGENTS, 0, rng)
    assert batch.next_matchup(AGENTS, 1, rng).policies["player_0"] == "c" and calls == [4]
    with pytest.raises(ValueError, match="agents"):
        MatchupBatch(first).next_matchup(["x", "y"], 0, rng)
    with pytest.raises(ValueError, match="refill"):
        MatchupBatch([])


# ----------------------------------------------------------------------------- reports


def test_report_updates_payoff_and_ratings_once_per_episode() -> None:
    coord = _coordinator()
    episodes = [_episode(i, "me", "main", "win") for i in range(4)] + [_episode(4, "main", "me", "draw")]
    assert coord.report(episodes) == 5
    assert coord.payoff.counts("me", "main") == (4.0, 1.0, 0.0)
    assert coord.ratings["elo"].rating("me").mu > coord.ratings["elo"].rating("main").mu
    assert coord.leaderboard("trueskill")[0][0] == "me"
    before = coord.state_dict()
    assert coord.report(episodes) == 0  # a retried report is not double-counted
    assert coord.state_dict() == before
    skipped = [_episode(10, "main", "main", "draw"), _episode(11, "main", "stranger", "win")]
    assert coord.report(skipped) == 0
    with pytest.raises(ValueError, match="episode_id"):
        coord.report([{"policies": {}}])


def test_dedupe_window_forgets_the_oldest_ids() -> None:
    coord = LeagueCoordinator(AGENTS, roles={"main": main_agent_role(10)}, dedupe_window=3)
    coord.add_player(Player("main", "main", "learning", role="main"))
    coord.add_player(Player("rand", "rand", "scripted", frozen=True))
    coord.report([_episode(i, "main", "rand", "win") for i in range(5)])
    assert coord.report([_episode(4, "main", "rand", "win")]) == 0
    assert coord.report([_episode(0, "main", "rand", "win")]) == 1  # outside the window


def test_players_need_known_roles_and_distinct_policies() -> None:
    coord = _coordinator()
    with pytest.raises(ValueError, match="role"):
        coord.add_player(Player("x", "x", "learning", role="coach"))
    with pytest.raises(ValueError, match="policy id"):
        coord.add_player(Player("y", "main", "scripted", frozen=True))
    with pytest.raises(ValueError, match="two distinct"):
        LeagueCoordinator(["player_0"])


# ------------------------------------------------------------------ snapshots and resets


def test_step_snapshots_by_steps_and_by_win_rate_then_resets_exploiters() -> None:
    coord = _coordinator(snapshot_every=100)
    assert coord.step({"main": 99, "me": 50}) == []
    actions = coord.step({"main": 100})
    assert actions == [SnapshotAction("main", "main@v0", 100)]
    assert coord.population.get("main@v0").frozen
    assert coord.ratings["elo"].rating("main@v0") == coord.ratings["elo"].rating("main")
    assert coord.step({"main": 150}) == []  # 50 steps since the last snapshot

    # The exploiter beats the current main 5-0: snapshot, then reset to its parent "init".
    coord.report([_episode(i, "me", "main", "win") for i in range(4)])
    assert coord.step({"me": 60}) == []  # 4 games < min_games
    coord.report([_episode(4, "main", "me", "loss")])
    actions = coord.step({"me": 70})
    assert actions == [SnapshotAction("me", "me@v0", 70), ResetAction("me", "init", 70)]
    # Games of the old version do not count towards the next snapshot.
    assert coord.step({"me": 80}) == []
    assert coord.payoff.counts("me", "main") == (5.0, 0.0, 0.0)  # the payoff table keeps history

    with pytest.raises(ValueError, match=">= 80"):
        coord.step({"me": 79})
    with pytest.raises(ValueError, match="not a learning player"):
        coord.step({"init": 5})


def test_league_exploiter_resets_with_its_probability() -> None:
    resets = 0
    for seed in range(40):
        coord = _coordinator(seed=seed, snapshot_every=10)
        actions = coord.step({"le": 10})
        assert actions[0] == SnapshotAction("le", "le@v0", 10)
        resets += len(actions) == 2
        if len(actions) == 2:
            assert actions[1] == ResetAction("le", None, 10)  # no parent: its own initial weights
    assert 3 <= resets <= 20  # 25% of 40, loosely


# ------------------------------------------------------------------------------- state


def _exercise(coord: LeagueCoordinator) -> list:
    """A fixed series of calls whose answers depend on the whole state and the generator."""
    out = [coord.next_matchups(40)]
    coord.report([_episode(1000 + i, m.policies["player_0"], m.policies["player_1"], "win" if i % 3 else "loss")
                  for i, m in enumerate(out[0])])
    out.append(coord.step({"main": 300, "me": 300, "le": 300}))
    out.append(coord.next_matchups(40))
    out.append(coord.next_evaluation(3))
    return out


def test_save_restore_gives_the_same_next_decisions() -> None:
    coord = _coordinator(seed=5)
    for i in range(3):
        matchups = coord.next_matchups(30)
        coord.report([_episode(30 * i + j, m.policies["player_0"], m.policies["player_1"], "win" if j % 2 else "draw")
                      for j, m in enumerate(matchups)])
        coord.step({"main": 100 * (i + 1), "me": 90 * (i + 1), "le": 100 * (i + 1)})
    state = json.loads(json.dumps(coord.state_dict()))
    restored = LeagueCoordinator.from_state_dict(state)
    assert restored.state_dict() == coord.state_dict()
    assert _exercise(restored) == _exercise(coord)
    assert restored.report([_episode(5, "main", "init", "win")]) == 0  # seen ids survive the restore


# -------------------------------------------------------------------------- evaluation


def test_beta_variance() -> None:
    assert beta_variance(0, 0, 0) == pytest.approx(1 / 12)
    assert beta_variance(5, 0, 5) > beta_variance(9, 0, 1) > beta_variance(90, 0, 10)
    assert beta_variance(0, 10, 0) == beta_variance(5, 0, 5)
    with pytest.raises(ValueError):
        beta_variance(-1, 0, 0)


def test_evaluation_schedules_least_certain_pairs_first() -> None:
    coord = _coordinator()
    # Uncertainty ranking alone: no meta-game pairs (tests/test_measured_meta_game.py has those).
    coord.evaluation = EvaluationScheduler(episodes_per_pair=4, meta_game_episodes=0)
    # Every candidate pair has a learning player: 6 pairs among 4 players, none with "init" only.
    assert len(coord.evaluation.candidate_pairs(coord.population)) == 6
    for k, pid in enumerate(("me", "le", "init")):
        coord.report([_episode(100 * k + i, "main", pid, "win") for i in range(20)])
    pairs, matchups = coord.next_evaluation(3)
    chosen = {frozenset((p.player_a, p.player_b)) for p in pairs}
    assert chosen == {frozenset(x) for x in (("me", "le"), ("me", "init"), ("le", "init"))}  # unplayed
    assert all(p.uncertainty == pytest.approx(1 / 12) and p.games == 0 for p in pairs)
    assert len(matchups) == 12 and all(m.learning_agents == frozenset() for m in matchups)
    for pair in pairs:  # seats alternate within a pair
        mine = [m for m in matchups if set(m.policies.values()) == {pair.player_a, pair.player_b}]
        assert sorted(m.policies["player_0"] for m in mine) == sorted([pair.player_a, pair.player_b] * 2)
    # Results come back through report(); the measured pairs then rank after the others.
    coord.report([_episode(10**9 + i, m.policies["player_0"], m.policies["player_1"], "win") for i, m in enumerate(matchups)])
    coord.report([_episode(2 * 10**9 + i, "me", "le", "win") for i in range(60)])
    pairs, _ = coord.next_evaluation(6)
    assert frozenset((pairs[-1].player_a, pairs[-1].player_b)) == frozenset(("me", "le"))
    assert [p.uncertainty for p in pairs] == sorted((p.uncertainty for p in pairs), reverse=True)
    fewest = EvaluationScheduler(criterion="fewest_games").schedule(coord.population, coord.payoff, 1, np.random.default_rng(0))
    assert fewest[0].games == min(coord.payoff.games(a, b) for a, b in coord.evaluation.candidate_pairs(coord.population))
    with pytest.raises(ValueError, match="pairs"):
        EvaluationScheduler(pairs="everyone")


# ------------------------------------------------------------------ with a real sampler


class _LearningRandomFactory(PolicyFactory):
    """Random actions, flagged as learning so the sampler records their rows."""

    def make_policy(self, seed: int | None = None, learns: bool = True) -> RandomPolicy:
        policy = RandomPolicy(seed)
        policy.learns = learns
        return policy


def test_sampler_trains_only_the_learning_seat_and_reports_feed_the_league() -> None:
    coord = _coordinator()
    sampler = Sampler(
        "kuhn_poker",
        policies={"main": _LearningRandomFactory(), "me": _LearningRandomFactory(), "init": RandomPolicyFactory()},
        matchups=MatchupBatch(coord.next_matchups(64, learners=["me"])),
        num_envs=4,
        fragment_length=40,
        frozen=("init",),
    )
    batch = sampler.sample()
    assert set(batch.policy_batches) == {"me"}  # "main" played every game but never as the learner
    stats = sampler.pop_episode_stats()
    assert coord.report(stats) == len(stats) > 10
    assert sum(coord.payoff.counts("me", "main")) == len(stats)
    assert coord.report(stats) == 0


@pytest.mark.ray
def test_remote_coordinator(ray_session) -> None:  # noqa: ANN001
    ray = ray_session
    actor = make_remote_coordinator(
        agents=AGENTS,
        roles={"main": main_agent_role(10)},
        players=[Player("main", "main", "learning", role="main"), Player("rand", "rand", "scripted", frozen=True)],
        payoff=PayoffTable(),
        seed=3,
    )
    try:
        local = LeagueCoordinator(
            AGENTS,
            roles={"main": main_agent_role(10)},
            players=[Player("main", "main", "learning", role="main"), Player("rand", "rand", "scripted", frozen=True)],
            seed=3,
        )
        assert ray.get(actor.next_matchups.remote(5)) == local.next_matchups(5)
        assert ray.get(actor.report.remote([_episode(1, "main", "rand", "win")])) == 1
        assert ray.get(actor.step.remote({"main": 10})) == [SnapshotAction("main", "main@v0", 10)]
        source = MatchupBatch([], refill=remote_refill(actor), refill_size=3)
        drawn = [source.next_matchup(AGENTS, i, np.random.default_rng(0)) for i in range(4)]
        assert all(isinstance(m, Matchup) for m in drawn)
        state = ray.get(actor.state_dict.remote())
        assert state["cursor"] == 5 + 6 and "main@v0" in json.dumps(state)
    finally:
        ray.kill(actor)
