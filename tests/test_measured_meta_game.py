"""A measured meta-game: PSRO's Nash (and PFSP's weights) read only payoff entries backed by
games, the league schedules the games they lack (frozen against frozen included), and the
documented fallback covers the entries not measured yet."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable

import numpy as np
import pytest

from league.config import parse_run_config
from league.population import PayoffTable, Player
from league.population.coordinator import LeagueCoordinator
from league.population.evaluation import EvaluationPair, EvaluationScheduler
from league.population.matchmaking import (
    NashMatchmaker,
    PFSPMatchmaker,
    least_concentrated_maximin,
    pfsp_weights,
    solve_zero_sum,
)
from league.population.roles import pfsp_role, psro_role
from league.sampling import Matchup

AGENTS = ["player_0", "player_1"]
FLIP = {"win": "loss", "loss": "win", "draw": "draw"}

#: A judge: the outcome of a game between two policies, from the first one's view.
Judge = Callable[[str, str], str]


def _coordinator(role=None, min_games: float = 5.0) -> LeagueCoordinator:
    return LeagueCoordinator(
        AGENTS,
        roles={"main": role or psro_role(100)},
        players=[Player("main", "main", "learning", role="main")],
        payoff=PayoffTable(min_games=min_games),
        seed=0,
    )


def _snapshot(coord: LeagueCoordinator) -> str:
    """Take the main agent's next snapshot (its snapshot rule fires every 100 steps)."""
    actions = coord.step({"main": coord.state_dict()["steps"]["main"] + 100})
    (snap,) = [a for a in actions if hasattr(a, "snapshot_id")]
    return snap.snapshot_id


_ids = itertools.count(1)


def _play(coord: LeagueCoordinator, matchups: list[Matchup], judge: Judge) -> None:
    """Report one episode per matchup, its outcome decided by ``judge``."""
    episodes = []
    for m in matchups:
        first, second = m.policies["player_0"], m.policies["player_1"]
        outcome = judge(first, second)
        episodes.append({
            "episode_id": next(_ids),
            "policies": {"player_0": first, "player_1": second},
            "outcome": {"player_0": outcome, "player_1": FLIP[outcome]},
        })
    coord.report(episodes)


def _rock_paper_scissors(a: str, b: str) -> str:
    """v1 beats v0, v2 beats v1, v0 beats v2 (and by snapshot number mod 3 beyond)."""
    va, vb = (int(x.rsplit("@v", 1)[1]) % 3 for x in (a, b))
    if va == vb:
        return "draw"
    return "win" if (va - vb) % 3 == 1 else "loss"


def _frozen(coord: LeagueCoordinator) -> list[str]:
    return [p.player_id for p in coord.population if p.frozen]


# --------------------------------------------------------------------- scheduling


def test_psro_schedules_each_new_snapshot_against_the_frozen_players_with_no_seat_learning() -> None:
    coord = _coordinator()
    v0 = _snapshot(coord)
    assert coord.next_evaluation(0) == ([], [])  # one frozen player: nothing to measure
    v1 = _snapshot(coord)
    assert coord.opponent_distribution("main") == pytest.approx({v0: 0.5, v1: 0.5})  # fallback: uniform

    # eval_pairs 0: the meta-game pair is scheduled all the same.
    pairs, matchups = coord.next_evaluation(0)
    assert [(p.player_a, p.player_b, p.purpose) for p in pairs] == [(v1, v0, "meta_game")]
    assert len(matchups) == coord.evaluation.meta_game_episodes == 8
    assert all(m.learning_agents == frozenset() and not m.learns("player_0") and not m.learns("player_1") for m in matchups)
    assert Counter(m.policies["player_0"] for m in matchups) == {v0: 4, v1: 4}  # seats alternate
    _play(coord, matchups, _rock_paper_scissors)
    # Recorded under both frozen ids, mirrored.
    assert coord.payoff.counts(v1, v0) == (8.0, 0.0, 0.0) and coord.payoff.counts(v0, v1) == (0.0, 0.0, 8.0)
    assert coord.next_evaluation(0) == ([], [])  # measured: nothing left to play

    v2 = _snapshot(coord)
    pairs, matchups = coord.next_evaluation(0)
    # The newcomer against the current support (both v0 and v1 under the noise tolerance).
    assert [(p.player_a, p.player_b) for p in pairs] == [(v2, v0), (v2, v1)]
    assert len(matchups) == 16
    # Until measured, the newcomer keeps a uniform share; v0, v1 share the rest by their Nash.
    dist = coord.opponent_distribution("main")
    assert dist[v2] == pytest.approx(1 / 3)
    assert dist[v0] + dist[v1] == pytest.approx(2 / 3) and dist[v1] > dist[v0] > 0.0


def test_meta_game_pairs_come_first_then_the_least_certain_pairs() -> None:
    coord = _coordinator()
    coord.evaluation = EvaluationScheduler(episodes_per_pair=2, meta_game_episodes=6)
    v0, v1 = _snapshot(coord), _snapshot(coord)
    pairs, matchups = coord.next_evaluation(2)
    assert pairs[0].player_a == v1 and pairs[0].player_b == v0 and pairs[0].purpose == "meta_game"
    assert [p.purpose for p in pairs[1:]] == ["uncertainty", "uncertainty"]
    assert all(frozenset((p.player_a, p.player_b)) != frozenset((v0, v1)) for p in pairs[1:])  # no repeat
    assert len(matchups) == 6 + 2 * 2
    off = _coordinator()
    off.evaluation = EvaluationScheduler(meta_game_episodes=0)
    _snapshot(off), _snapshot(off)
    assert off.next_evaluation(0) == ([], [])
    with pytest.raises(ValueError, match="num_pairs"):
        coord.next_evaluation(-1)


def test_newcomers_are_measured_against_the_support_first() -> None:
    table = PayoffTable(min_games=5)
    for _ in range(10):
        table.update("a", "b", "win")
    matchmaker = NashMatchmaker()  # exact solve: b, always beaten, is out of the support
    assert matchmaker.support(["a", "b", "c", "d"], table) == ["a"]
    assert matchmaker.needed_pairs("main", ["a", "b", "c", "d"], table) == [("c", "a"), ("d", "a"), ("c", "b"), ("d", "b")]
    for _ in range(5):
        table.update("c", "a", "draw")
    assert matchmaker.needed_pairs("main", ["a", "b", "c", "d"], table) == [("d", "a"), ("c", "b"), ("d", "b")]


def test_pfsp_gives_an_unmeasured_opponent_the_prior_weight_and_asks_for_its_games() -> None:
    coord = _coordinator(pfsp_role(100, self_play=0.0))
    old = _snapshot(coord)
    for _ in range(10):
        coord.payoff.update("main", old, "win")  # main beats it 90% of the time...
    coord.payoff.update("main", old, "loss")
    new = _snapshot(coord)
    coord.payoff.update("main", new, "win")  # ...and won the one game against the newcomer: not measured
    matchmaker = PFSPMatchmaker("hard", 2.0)
    weights = pfsp_weights(np.array([10 / 11, 0.5]), "hard", 2.0)  # the newcomer at the prior 0.5
    np.testing.assert_allclose(matchmaker.probabilities("main", [old, new], coord.payoff), weights / weights.sum())
    assert coord.meta_game_pairs() == [("main", new)]
    pairs, matchups = coord.next_evaluation(0)
    assert [(p.player_a, p.player_b) for p in pairs] == [("main", new)] and len(matchups) == 8
    assert all(m.learning_agents == frozenset() for m in matchups)  # measuring games train nobody


# ------------------------------------------------------------------------ solving


def test_the_nash_is_never_solved_over_unmeasured_entries(monkeypatch) -> None:
    solved: list[list[str]] = []
    original = NashMatchmaker.equilibrium

    def checked(self, candidates, payoff):  # noqa: ANN001, ANN202
        for a, b in itertools.combinations(candidates, 2):
            assert payoff.measured(a, b), f"solved over the unmeasured pair {a}-{b}"
        solved.append(list(candidates))
        return original(self, candidates, payoff)

    monkeypatch.setattr(NashMatchmaker, "equilibrium", checked)
    coord = _coordinator()
    for _ in range(4):
        _snapshot(coord)
        coord.next_matchups(16)
        pairs, matchups = coord.next_evaluation(0)
        # Half the scheduled games come back at a time: pairs stay unmeasured for a round.
        _play(coord, matchups[: len(matchups) // 2], _rock_paper_scissors)
        coord.next_matchups(16)
        coord.opponent_distribution("main")
        _play(coord, matchups[len(matchups) // 2 :], _rock_paper_scissors)
        coord.next_matchups(16)
    assert solved and max(len(s) for s in solved) == 4  # the whole population, once measured


def test_fallback_uniform_then_nash_over_the_measured_set_with_pending_shares() -> None:
    table = PayoffTable(min_games=5)
    ids = ["a", "b", "c"]
    matchmaker = NashMatchmaker()
    np.testing.assert_allclose(matchmaker.probabilities("main", ids, table), [1 / 3] * 3)  # nothing measured
    for _ in range(4):
        table.update("a", "b", "win")
    np.testing.assert_allclose(matchmaker.probabilities("main", ids, table), [1 / 3] * 3)  # 4 < min_games
    table.update("a", "b", "win")
    assert matchmaker.measured_set(ids, table) == ["a", "b"]
    # Nash over {a, b} (a dominates) takes 2/3, the pending c keeps 1/3.
    np.testing.assert_allclose(matchmaker.probabilities("main", ids, table), [2 / 3, 0.0, 1 / 3], atol=1e-9)
    for _ in range(5):
        table.update("c", "a", "win")
    assert matchmaker.measured_set(ids, table) == ["a", "b"]  # c still lacks its entry against b
    for _ in range(5):
        table.update("c", "b", "loss")
    assert matchmaker.measured_set(ids, table) == ["a", "b", "c"]
    probs = matchmaker.probabilities("main", ids, table)  # rock-paper-scissors now
    np.testing.assert_allclose(probs, [1 / 3] * 3, atol=1e-7)
    mixed = NashMatchmaker(mix_uniform=0.5).probabilities("main", ids, table)
    np.testing.assert_allclose(mixed, [1 / 3] * 3, atol=1e-7)


def test_rock_paper_scissors_snapshots_give_a_mixed_opponent_distribution() -> None:
    for tolerance in (0.0, 1.0):
        coord = _coordinator(psro_role(100, noise_tolerance=tolerance))
        for _ in range(3):
            _snapshot(coord)
            _play(coord, coord.next_evaluation(0)[1], _rock_paper_scissors)
        frozen = _frozen(coord)
        for a, b in itertools.combinations(frozen, 2):  # every frozen-vs-frozen entry was played
            assert coord.payoff.measured(a, b) and coord.payoff.games(a, b) == 8
        dist = coord.opponent_distribution("main")
        assert dist == pytest.approx(dict.fromkeys(frozen, 1 / 3), abs=1e-6)
        drawn = Counter(m.policies["player_0"] if m.policies["player_1"] == "main" else m.policies["player_1"]
                        for m in coord.next_matchups(600))
        assert set(drawn) == set(frozen) and min(drawn.values()) > 120  # not one pure opponent


def test_noise_tolerance_spreads_ties_instead_of_picking_a_vertex() -> None:
    table = PayoffTable(min_games=5)
    ids = ["a", "b", "c", "d"]
    for a, b in itertools.combinations(ids, 2):
        for _ in range(8):
            table.update(a, b, "draw")  # indistinguishable players
    exact = NashMatchmaker().probabilities("main", ids, table)
    assert exact.max() == pytest.approx(1.0)  # the LP's vertex: one arbitrary opponent
    np.testing.assert_allclose(NashMatchmaker(noise_tolerance=1.0).probabilities("main", ids, table), [0.25] * 4, atol=1e-6)
    # Slightly uneven but within noise: still spread; a clear winner over many games: kept.
    table.update("a", "b", "win")
    assert NashMatchmaker(noise_tolerance=1.0).probabilities("main", ids, table).max() < 0.5
    strong = PayoffTable()
    for _ in range(200):
        strong.update("s", "w", "win")
    np.testing.assert_allclose(NashMatchmaker(noise_tolerance=1.0).probabilities("main", ["s", "w"], strong), [1, 0], atol=0.02)
    np.testing.assert_allclose(least_concentrated_maximin(np.zeros((3, 3))), [1 / 3] * 3, atol=1e-6)
    with pytest.raises(ValueError, match="noise_tolerance"):
        NashMatchmaker(noise_tolerance=-1.0)


def test_the_exact_return_meta_game_is_solved_as_before() -> None:
    coord = _coordinator(psro_role(100, utility="return", noise_tolerance=1.0))
    snaps = [_snapshot(coord) for _ in range(3)]
    values = {(snaps[1], snaps[0]): 1.0, (snaps[2], snaps[1]): 2.0, (snaps[0], snaps[2]): 3.0}
    coord.set_expected_returns([(a, b, v) for (a, b), v in values.items()])
    assert coord.meta_game_pairs() == []  # exact entries are measured: nothing to play
    row, _, _ = solve_zero_sum(coord.payoff.return_matrix(snaps))  # the unique equilibrium here
    dist = coord.opponent_distribution("main")
    # The least-norm solve keeps a 1e-7 margin on the value (matchmaking._LP_MARGIN).
    np.testing.assert_allclose([dist[s] for s in snaps], row, atol=1e-6)


# ------------------------------------------------------------------- settings, state


def test_scheduler_settings_round_trip_and_are_checked() -> None:
    scheduler = EvaluationScheduler(meta_game_episodes=4, meta_game_max_pairs=2)
    assert EvaluationScheduler.from_dict(scheduler.to_dict()).to_dict() == scheduler.to_dict()
    old = {"pairs": "learning_vs_all", "criterion": "variance", "episodes_per_pair": 8}  # saved before
    assert EvaluationScheduler.from_dict(old).meta_game_episodes == 8
    table = PayoffTable()
    picked = scheduler.meta_game_schedule([("a", "b"), ("b", "a"), ("a", "c"), ("b", "c")], table)
    assert [(p.player_a, p.player_b) for p in picked] == [("a", "b"), ("a", "c")]  # repeats dropped, capped
    with pytest.raises(ValueError, match="meta_game_episodes"):
        EvaluationScheduler(meta_game_episodes=-1)
    with pytest.raises(ValueError, match="purpose"):
        EvaluationPair("a", "b", 0.1, 0.0, "curiosity")
    with pytest.raises(ValueError, match="noise_tolerance"):
        parse_run_config({"league": {"recipe": "psro", "fixed_opponents": {}, "roles": {"main": {"noise_tolerance": -2.0}}}})


def test_the_meta_game_budget_is_a_checked_league_key() -> None:
    assert parse_run_config({"league": {"recipe": "psro", "fixed_opponents": {}, "meta_game_episodes": 0}}).league.meta_game_episodes == 0
    with pytest.raises(ValueError, match="league.meta_game_episodes"):
        parse_run_config({"league": {"recipe": "psro", "fixed_opponents": {}, "meta_game_episodes": -1}})


# --------------------------------------------------------------------- end to end


def test_psro_on_tictactoe_measures_its_meta_game_and_mixes_its_opponents(tmp_path) -> None:
    from run_helpers import tiny_run_config

    from league.trainer import Trainer

    cfg = tiny_run_config(
        league={"recipe": "psro", "snapshot_steps": 64, "fixed_opponents": {}, "eval_pairs": 0},
        eval={"interval": 1, "episodes": 2},
        stop={"iterations": 5, "time_s": 0, "env_steps": 0},
        checkpoint={"interval": 0, "keep_last": 1},
    )
    assert cfg.league.eval_pairs == 0  # the meta-game is measured all the same
    trainer = Trainer(cfg, tmp_path)
    try:
        trainer.train()
        coord = trainer.league.coordinator
        frozen = _frozen(coord)
        assert len(frozen) >= 3
        for a, b in itertools.combinations(frozen, 2):  # frozen vs frozen: measured by evaluation games
            assert coord.payoff.measured(a, b), (a, b, coord.payoff.counts(a, b))
        assert trainer.league.payoff.games(frozen[0], frozen[1]) >= cfg.league.payoff_min_games
        dist = coord.opponent_distribution("main")
        assert set(dist) == set(frozen)
        assert max(dist.values()) < 0.99 and sum(q > 0.01 for q in dist.values()) >= 2  # not one pure opponent
    finally:
        trainer.close()
