"""Players, payoff table, matchmakers and ratings of league.population (pure logic)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import chisquare

from league.population import (
    PRIOR_WIN_RATE,
    Elo,
    NashMatchmaker,
    PayoffTable,
    PFSPMatchmaker,
    Player,
    Population,
    Rating,
    RatingTable,
    SelfPlayMatchmaker,
    TrueSkill,
    UniformFSPMatchmaker,
    elo_expected_score,
    elo_update,
    outcome_from_returns,
    pfsp_weights,
    rating_system_from_dict,
    solve_zero_sum,
)

# ------------------------------------------------------------------------------ players


def _league() -> Population:
    pop = Population()
    pop.add(Player("main_0", "main_0", "learning", role="main"))
    pop.add(Player("random", "random", "scripted", frozen=True))
    return pop


def test_player_validation_names_the_problem() -> None:
    with pytest.raises(ValueError, match="kind"):
        Player("x", "x", "teacher")
    with pytest.raises(ValueError, match="frozen"):
        Player("x", "x", "scripted")
    with pytest.raises(ValueError, match="parent_id"):
        Player("x@v0", "x@v0", "snapshot", frozen=True)
    with pytest.raises(ValueError, match="policy_id"):
        Player("x", "", "learning")
    with pytest.raises(TypeError, match="created_step"):
        Player("x", "x", "learning", created_step=1.5)
    assert Player("x", "x", "learning", created_step=np.int64(7)).to_dict()["created_step"] == 7


def test_snapshot_builds_a_family_tree() -> None:
    pop = _league()
    v0 = pop.snapshot("main_0", step=100)
    v1 = pop.snapshot("main_0", step=250)
    assert (v0.player_id, v1.player_id) == ("main_0@v0", "main_0@v1")
    assert v1.policy_id == "main_0@v1" and v1.kind == "snapshot" and v1.frozen
    assert v1.parent_id == "main_0" and v1.role == "main" and v1.created_step == 250
    assert pop.snapshots_of("main_0") == [v0, v1]
    assert pop.latest_snapshot("main_0") == v1
    assert pop.latest_snapshot("random") is None
    fork = pop.add(Player("exploiter_0", "exploiter_0", "learning", role="main_exploiter",
                          parent_id="main_0@v1", created_step=250))
    assert [p.player_id for p in pop.ancestors(fork.player_id)] == ["main_0@v1", "main_0"]
    assert pop.children("main_0@v1") == [fork]
    assert pop.player_ids(kind="snapshot") == ["main_0@v0", "main_0@v1"]
    assert pop.player_ids(role="main") == ["main_0", "main_0@v0", "main_0@v1"]
    assert pop.player_ids(kind="learning", role="main_exploiter") == ["exploiter_0"]
    assert len(pop) == 5 and "main_0@v0" in pop


def test_population_rejects_bad_requests() -> None:
    pop = _league()
    pop.snapshot("main_0", step=10)
    with pytest.raises(ValueError, match="only learning"):
        pop.snapshot("main_0@v0", step=20)
    with pytest.raises(ValueError, match="only learning"):
        pop.snapshot("random", step=20)
    with pytest.raises(ValueError, match="before its latest snapshot"):
        pop.snapshot("main_0", step=5)
    with pytest.raises(KeyError, match="ghost"):
        pop.snapshot("ghost", step=1)
    with pytest.raises(ValueError, match="already"):
        pop.add(Player("main_0", "other", "learning"))
    with pytest.raises(ValueError, match="parent 'nobody'"):
        pop.add(Player("kid", "kid", "learning", parent_id="nobody"))
    with pytest.raises(ValueError, match="kind"):
        pop.players(kind="snapshots")


def test_population_json_round_trip_keeps_tree_and_versions() -> None:
    pop = _league()
    pop.snapshot("main_0", step=100)
    pop.snapshot("main_0", step=200)
    restored = Population.from_dict(json.loads(json.dumps(pop.to_dict())))
    assert list(restored) == list(pop)
    assert restored.snapshot("main_0", step=300).player_id == "main_0@v2"
    with pytest.raises(ValueError, match="unknown Player fields"):
        Player.from_dict({"player_id": "a", "policy_id": "a", "kind": "learning", "colour": 1})


# ------------------------------------------------------------------------------- payoff


def test_payoff_update_keeps_both_directions_consistent() -> None:
    table = PayoffTable()
    table.update("a", "b", "win")
    table.update("b", "a", "draw")
    table.update("b", "a", "win")
    assert table.counts("a", "b") == (1.0, 1.0, 1.0)
    table.update("a", "b", "win")
    assert table.counts("a", "b") == (2.0, 1.0, 1.0)
    assert table.counts("b", "a") == (1.0, 1.0, 2.0)
    assert table.games("b", "a") == 4.0
    assert table.win_rate("a", "b") == pytest.approx(2.5 / 4)
    assert table.win_rate("b", "a") == pytest.approx(1.5 / 4)
    assert table.players() == ["a", "b"]


def test_payoff_decay_shrinks_only_that_pair() -> None:
    table = PayoffTable(decay=0.5)
    table.update("a", "c", "win")
    table.update("a", "b", "win")
    table.update("a", "b", "win")
    table.update("b", "a", "win")
    # wins of a: (1 * 0.5 + 1) * 0.5 = 0.75; then b's win adds a loss of 1.
    assert table.counts("a", "b") == pytest.approx((0.75, 0.0, 1.0))
    assert table.win_rate("a", "b") == pytest.approx(0.75 / 1.75)
    assert table.counts("a", "c") == (1.0, 0.0, 0.0)


def test_payoff_min_games_prior() -> None:
    table = PayoffTable(min_games=3)
    table.update("a", "b", "win")
    table.update("a", "b", "win")
    assert table.win_rate("a", "b") == PRIOR_WIN_RATE == 0.5
    table.update("a", "b", "win")
    assert table.win_rate("a", "b") == 1.0 and table.win_rate("b", "a") == 0.0
    assert table.win_rate("a", "never_seen") == 0.5
    assert table.win_rate("a", "a") == 0.5


def test_payoff_matrix_and_validation() -> None:
    table = PayoffTable()
    table.update("a", "b", "win")
    table.update("c", "a", "draw")
    m = table.win_rate_matrix(["a", "b", "c"])
    np.testing.assert_allclose(m, [[0.5, 1.0, 0.5], [0.0, 0.5, 0.5], [0.5, 0.5, 0.5]])
    np.testing.assert_allclose(m + m.T, np.ones((3, 3)))
    with pytest.raises(ValueError, match="'tie'"):
        table.update("a", "b", "tie")
    with pytest.raises(ValueError, match="itself"):
        table.update("a", "a", "win")
    with pytest.raises(ValueError, match="decay"):
        PayoffTable(decay=0.0)
    with pytest.raises(ValueError, match="duplicates"):
        table.win_rate_matrix(["a", "a"])


def test_payoff_json_round_trip() -> None:
    table = PayoffTable(decay=0.9, min_games=2)
    for outcome in ("win", "loss", "draw", "win"):
        table.update("z", "a", outcome)
    restored = PayoffTable.from_dict(json.loads(json.dumps(table.to_dict())))
    assert (restored.decay, restored.min_games) == (0.9, 2.0)
    assert restored.counts("z", "a") == pytest.approx(table.counts("z", "a"))
    assert restored.win_rate("a", "z") == pytest.approx(table.win_rate("a", "z"))


def test_outcome_from_returns() -> None:
    assert outcome_from_returns(1.0, -1.0) == "win"
    assert outcome_from_returns(0.0, 0.0) == "draw"
    assert outcome_from_returns(-1.0, 1.0) == "loss"


# -------------------------------------------------------------------------- matchmaking


def _payoff_with_rates(player: str, rates: dict[str, tuple[int, int]]) -> PayoffTable:
    """Table where ``player`` has ``(wins, losses)`` against each opponent."""
    table = PayoffTable()
    for opponent, (wins, losses) in rates.items():
        for _ in range(wins):
            table.update(player, opponent, "win")
        for _ in range(losses):
            table.update(player, opponent, "loss")
    return table


def _assert_frequencies(picks: list[str], ids: list[str], probs: np.ndarray) -> None:
    """Chi-square goodness of fit of sampled ids to ``probs`` (zero-probability ids never drawn)."""
    counts = np.array([picks.count(i) for i in ids], dtype=float)
    support = probs > 0
    assert counts[~support].sum() == 0
    _, p_value = chisquare(counts[support], probs[support] / probs[support].sum() * len(picks))
    assert p_value > 1e-3


def test_pfsp_weights_hand_computed() -> None:
    x = np.array([0.0, 0.25, 0.5, 1.0])
    np.testing.assert_allclose(pfsp_weights(x, "hard", p=2), [1.0, 0.5625, 0.25, 0.0])
    np.testing.assert_allclose(pfsp_weights(x, "hard", p=1), [1.0, 0.75, 0.5, 0.0])
    np.testing.assert_allclose(pfsp_weights(x, "variance"), [0.0, 0.1875, 0.25, 0.0])
    np.testing.assert_allclose(pfsp_weights(x, "linear"), [1.0, 0.75, 0.5, 0.0])
    with pytest.raises(ValueError, match="'squared'"):
        pfsp_weights(x, "squared")
    with pytest.raises(ValueError, match="'squared'"):
        PFSPMatchmaker(weighting="squared")
    with pytest.raises(ValueError, match="win rates"):
        pfsp_weights(np.array([1.5]))


def test_pfsp_probabilities_from_payoff() -> None:
    # Win rates of p: 0.75 against a, 0.25 against b, 0.5 against c.
    table = _payoff_with_rates("p", {"a": (3, 1), "b": (1, 3), "c": (2, 2)})
    ids = ["a", "b", "c"]
    hard = PFSPMatchmaker("hard", p=2).probabilities("p", ids, table)
    np.testing.assert_allclose(hard, np.array([0.0625, 0.5625, 0.25]) / 0.875)
    variance = PFSPMatchmaker("variance").probabilities("p", ids, table)
    np.testing.assert_allclose(variance, np.array([0.1875, 0.1875, 0.25]) / 0.625)


def test_pfsp_falls_back_to_uniform_when_all_weights_vanish() -> None:
    table = _payoff_with_rates("p", {"a": (5, 0), "b": (4, 0)})
    np.testing.assert_allclose(PFSPMatchmaker("hard").probabilities("p", ["a", "b"], table), [0.5, 0.5])


def test_pfsp_sampling_matches_its_distribution() -> None:
    table = _payoff_with_rates("p", {"a": (3, 1), "b": (1, 3), "c": (2, 2), "d": (1, 1)})
    ids = ["a", "b", "c", "d"]
    matchmaker = PFSPMatchmaker("hard", p=2)
    picks = matchmaker.choose_opponents("p", ids, table, np.random.default_rng(0), k=20_000)
    probs = matchmaker.probabilities("p", ids, table)
    _assert_frequencies(picks, ids, probs)
    # The check has power: the same draws are far from uniform.
    counts = np.array([picks.count(i) for i in ids])
    assert chisquare(counts).pvalue < 1e-6


def test_uniform_fsp_sampling() -> None:
    ids = ["a", "b", "c", "d", "e"]
    rng = np.random.default_rng(1)
    picks = [UniformFSPMatchmaker().choose_opponent("p", ids, PayoffTable(), rng) for _ in range(10_000)]
    _assert_frequencies(picks, ids, np.full(5, 0.2))


def test_matchmaker_input_validation() -> None:
    rng = np.random.default_rng(0)
    mm = UniformFSPMatchmaker()
    with pytest.raises(ValueError, match="no candidate"):
        mm.choose_opponent("p", [], PayoffTable(), rng)
    with pytest.raises(ValueError, match="duplicates"):
        mm.choose_opponent("p", ["a", "a"], PayoffTable(), rng)
    with pytest.raises(ValueError, match="k must"):
        mm.choose_opponents("p", ["a"], PayoffTable(), rng, k=0)
    with pytest.raises(TypeError, match="Generator"):
        mm.choose_opponent("p", ["a"], PayoffTable(), np.random.RandomState(0))  # type: ignore[arg-type]


def test_self_play_picks_itself_or_latest_snapshot() -> None:
    pop = _league()
    pop.snapshot("main_0", step=1)
    pop.snapshot("main_0", step=2)
    rng = np.random.default_rng(0)
    table = PayoffTable()
    assert SelfPlayMatchmaker().choose_opponent("main_0", ["random", "main_0"], table, rng) == "main_0"
    picks = SelfPlayMatchmaker(pop).choose_opponents(
        "main_0", ["main_0@v0", "main_0@v1", "random"], table, rng, k=50
    )
    assert set(picks) == {"main_0@v1"}
    with pytest.raises(ValueError, match="no population"):
        SelfPlayMatchmaker().choose_opponent("main_0", ["main_0@v1"], table, rng)
    with pytest.raises(ValueError, match="neither"):
        SelfPlayMatchmaker(pop).choose_opponent("main_0", ["random"], table, rng)


def test_solve_zero_sum_rock_paper_scissors() -> None:
    rps = np.array([[0.0, -1.0, 1.0], [1.0, 0.0, -1.0], [-1.0, 1.0, 0.0]])
    row, column, value = solve_zero_sum(rps)
    np.testing.assert_allclose(row, np.full(3, 1 / 3), atol=1e-7)
    np.testing.assert_allclose(column, np.full(3, 1 / 3), atol=1e-7)
    assert value == pytest.approx(0.0, abs=1e-9)


def test_solve_zero_sum_dominant_and_hand_solved_games() -> None:
    dominant = np.array([[0.0, 0.4, 0.3], [-0.4, 0.0, 0.2], [-0.3, -0.2, 0.0]])
    row, column, value = solve_zero_sum(dominant)
    np.testing.assert_allclose(row, [1.0, 0.0, 0.0], atol=1e-9)
    np.testing.assert_allclose(column, [1.0, 0.0, 0.0], atol=1e-9)
    assert value == pytest.approx(0.0, abs=1e-9)
    # [[3, -1], [-2, 1]]: row plays 3/7 on top, column 2/7 on the left, value 1/7.
    row, column, value = solve_zero_sum(np.array([[3.0, -1.0], [-2.0, 1.0]]))
    np.testing.assert_allclose(row, [3 / 7, 4 / 7], atol=1e-7)
    np.testing.assert_allclose(column, [2 / 7, 5 / 7], atol=1e-7)
    assert value == pytest.approx(1 / 7)


def test_solve_zero_sum_satisfies_equilibrium_conditions() -> None:
    rng = np.random.default_rng(3)
    for _ in range(20):
        m = rng.normal(size=(rng.integers(1, 7), rng.integers(1, 7)))
        row, column, value = solve_zero_sum(m)
        assert row.sum() == pytest.approx(1.0) and column.sum() == pytest.approx(1.0)
        assert (row >= 0).all() and (column >= 0).all()
        # Neither side can gain by deviating to a pure strategy.
        assert (row @ m).min() == pytest.approx(value, abs=1e-7)
        assert (m @ column).max() == pytest.approx(value, abs=1e-7)
    with pytest.raises(ValueError, match="2-D"):
        solve_zero_sum(np.zeros(3))


def test_nash_matchmaker_on_empirical_rock_paper_scissors() -> None:
    table = PayoffTable()
    for winner, loser in (("rock", "scissors"), ("scissors", "paper"), ("paper", "rock")):
        for _ in range(10):
            table.update(winner, loser, "win")
    ids = ["rock", "paper", "scissors"]
    matchmaker = NashMatchmaker()
    probs = matchmaker.probabilities("learner", ids, table)
    np.testing.assert_allclose(probs, np.full(3, 1 / 3), atol=1e-7)
    picks = matchmaker.choose_opponents("learner", ids, table, np.random.default_rng(2), k=6000)
    _assert_frequencies(picks, ids, probs)


def test_nash_matchmaker_picks_the_dominant_player() -> None:
    table = PayoffTable()
    for weak in ("w1", "w2"):
        for _ in range(5):
            table.update("strong", weak, "win")
    table.update("w1", "w2", "win")
    table.update("w1", "w2", "loss")
    ids = ["w1", "strong", "w2"]
    rng = np.random.default_rng(0)
    assert set(NashMatchmaker().choose_opponents("learner", ids, table, rng, k=200)) == {"strong"}
    mixed = NashMatchmaker(mix_uniform=0.3).probabilities("learner", ids, table)
    np.testing.assert_allclose(mixed, [0.1, 0.8, 0.1], atol=1e-9)


# ------------------------------------------------------------------------------ ratings


def test_elo_hand_computed() -> None:
    assert elo_expected_score(1200, 1200) == 0.5
    assert elo_expected_score(1600, 1200) == pytest.approx(1 / 1.1)
    # The favourite loses: delta = 32 * (0 - 10/11) = -29.0909...
    new_a, new_b = elo_update(1600, 1200, 0.0, k=32)
    assert new_a == pytest.approx(1600 - 320 / 11) and new_b == pytest.approx(1200 + 320 / 11)
    a, b = Elo(k=16).rate(Rating(1500.0), Rating(1500.0), "win")
    assert (a.mu, b.mu) == (1508.0, 1492.0)
    a, b = Elo().rate(Rating(1500.0), Rating(1500.0), "draw")
    assert (a.mu, b.mu) == (1500.0, 1500.0)
    with pytest.raises(ValueError, match="'won'"):
        Elo().rate(Rating(1500.0), Rating(1500.0), "won")  # type: ignore[arg-type]


def test_trueskill_updates() -> None:
    system = TrueSkill()
    start = system.initial()
    winner, loser = system.rate(start, start, "win")
    assert winner.mu > start.mu > loser.mu
    assert winner.sigma < start.sigma and loser.sigma < start.sigma
    lost_a, lost_b = system.rate(start, start, "loss")
    assert (lost_a, lost_b) == (loser, winner)
    drawn_a, drawn_b = system.rate(start, start, "draw")
    assert drawn_a.mu == pytest.approx(start.mu) and drawn_a.sigma < start.sigma
    assert system.expected_score(start, start) == pytest.approx(0.5)
    assert system.expected_score(winner, loser) > 0.5


@pytest.mark.parametrize("settings", [{}, {"draw_probability": 0.3, "tau": 0.5}, {"draw_probability": 0.0, "beta": 2.0}])
def test_trueskill_closed_form_equals_the_packages_factor_graph(settings: dict) -> None:
    import trueskill

    system = TrueSkill(**settings)
    env = trueskill.TrueSkill(mu=system.mu, sigma=system.sigma, beta=system.beta, tau=system.tau,
                              draw_probability=system.draw_probability)
    rng = np.random.default_rng(0)
    for i in range(300):
        a = Rating(rng.normal(25, 15), rng.uniform(0.1, 10))
        b = Rating(rng.normal(25, 15), rng.uniform(0.1, 10))
        outcome = ("win", "draw", "loss")[i % 3]
        if outcome == "draw" and system.draw_probability == 0.0:
            continue  # the package refuses draws without a draw margin
        ranks = {"win": [0, 1], "draw": [0, 0], "loss": [1, 0]}[outcome]
        (ref_a,), (ref_b,) = env.rate([(env.create_rating(a.mu, a.sigma),), (env.create_rating(b.mu, b.sigma),)], ranks=ranks)
        new_a, new_b = system.rate(a, b, outcome)
        np.testing.assert_allclose([new_a.mu, new_a.sigma, new_b.mu, new_b.sigma],
                                   [ref_a.mu, ref_a.sigma, ref_b.mu, ref_b.sigma], rtol=0, atol=1e-9)


def test_rating_table_history_and_round_trip() -> None:
    table = RatingTable(Elo(k=32, initial_rating=1000.0))
    table.record("a", "b", "win", step=10)
    table.record("a", "c", "draw", step=20)
    table.add_player("a@v0", step=20, rating=table.rating("a"))
    assert table.rating("a").mu == pytest.approx(1016.0 + 32 * (0.5 - elo_expected_score(1016, 1000)))
    # One row per player and step: the latest rating of that step.
    assert [row[:2] for row in table.history] == [(10, "a"), (10, "b"), (20, "c"), (20, "a"), (20, "a@v0")]
    assert [step for step, _ in table.history_of("a")] == [10, 20]
    assert table.history_of("a")[-1][1] == table.rating("a")
    assert table.leaderboard()[-1][0] == "b"
    with pytest.raises(ValueError, match="already"):
        table.add_player("a")
    restored = RatingTable.from_dict(json.loads(json.dumps(table.to_dict())))
    assert restored.ratings() == table.ratings() and restored.history == table.history
    assert isinstance(restored.system, Elo) and restored.system.initial_rating == 1000.0


def test_rating_history_is_thinned_within_its_bound_keeping_each_curves_span() -> None:
    table = RatingTable(Elo(), max_history=40)
    firsts: dict[str, int] = {}
    for step in range(1, 300):
        a, b = ("p", "q") if step % 3 else ("p", "r")
        for pid in (a, b):
            firsts.setdefault(pid, step)
        table.record(a, b, "win" if step % 2 else "loss", step)
        assert len(table.history) <= 40
    for pid in ("p", "q", "r"):
        rows = table.history_of(pid)
        steps = [step for step, _ in rows]
        assert steps == sorted(steps) and len(rows) >= 5
        assert steps[0] == firsts[pid]  # the curve still starts where the player did
        assert rows[-1][1] == table.rating(pid)  # and ends at its current rating
    assert table.history_of("p")[-1][0] == 299
    with pytest.raises(ValueError, match="max_history"):
        RatingTable(Elo(), max_history=1)


def test_trueskill_table_round_trip_and_unknown_system() -> None:
    table = RatingTable(TrueSkill(draw_probability=0.2))
    table.record("x", "y", "loss", step=3)
    restored = RatingTable.from_dict(json.loads(json.dumps(table.to_dict())))
    assert restored.rating("y") == table.rating("y") and restored.rating("y").mu > 25.0
    assert restored.system.to_dict() == table.system.to_dict()
    with pytest.raises(ValueError, match="'glicko'"):
        rating_system_from_dict({"kind": "glicko"})
