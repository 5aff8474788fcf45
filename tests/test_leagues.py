"""Coordinated league recipes driven by the trainer: config, snapshots, resets, exploitability,
resume, and a coordinator actor that dies mid-run."""

from __future__ import annotations

import time

import numpy as np
import pytest

from league.config import parse_run_config
from league.leagues import CoordinatedLeague, steps_counter
from league.population.payoff import PayoffTable
from league.population.recipes import build_league
from league.trainer import Trainer

SMALL_PPO = {"name": "ppo", "params": {"train_batch_size": 256, "minibatch_size": 128, "num_epochs": 1}}


def _config(recipe: str, env: str = "tictactoe", remote: bool = False, **league):
    values = {
        "env": {"name": env},
        "algo": SMALL_PPO,
        "league": {"recipe": recipe, "snapshot_steps": 300, "fixed_opponents": {}, **league},
        "sampler": {"remote": remote, "num_samplers": 2, "num_envs": 4, "fragment_length": 16, "num_cpus": 0, "mode": "bulk_sync"},
        "eval": {"interval": 2, "episodes": 8},
        "iteration": {"min_env_steps": 0},
        "stop": {"iterations": 4, "time_s": 0, "env_steps": 0},
        "logging": {"tensorboard": False},
        "verbose": False,
    }
    return parse_run_config(values)


@pytest.mark.parametrize(
    ("league", "message"),
    [
        ({"recipe": "nope"}, "unknown league.recipe 'nope'"),
        ({"recipe": "pfsp", "roles": {"main": {"pfsp_share": 0.5}}}, "league.roles.main.pfsp_share"),
        ({"recipe": "pfsp", "roles": {"main_exploiter": {}}}, "role(s) ['main_exploiter']"),
        ({"recipe": "pfsp", "scripted": ["stockfish"]}, "league.scripted has unknown player(s) ['stockfish']"),
        ({"recipe": "pfsp", "fixed_opponents": {"random": 0.2}}, "league.fixed_opponents {'random': 0.2} is a 'selfplay' setting"),
        ({"recipe": "fsp", "num_main_exploiters": 1}, "need recipe 'alphastar'"),
        ({"recipe": "psro", "meta_game": "guess"}, "league.meta_game"),
        ({"recipe": "alphastar", "roles": {"main": {"self_play": -1.0}}}, "league.roles.main"),
    ],
)
def test_bad_league_settings_are_named(league, message):
    with pytest.raises(ValueError, match=None) as info:
        parse_run_config({"league": {"fixed_opponents": {}, **league}})
    assert message in str(info.value)


def test_ray_client_addresses_are_refused_before_anything_starts():
    with pytest.raises(ValueError, match=r"Ray Client \(ray://\) is not supported"):
        parse_run_config({"ray": {"address": "ray://head:10001"}})


def test_alphastar_recipe_builds_every_role_and_player():
    cfg = _config("alphastar", num_main_agents=2, num_main_exploiters=1, num_league_exploiters=2, scripted=["random"])
    recipe = build_league(cfg.league)
    assert set(recipe.roles) == {"main", "main_exploiter", "league_exploiter"}
    assert recipe.learning == ["main", "main_1", "main_exploiter", "league_exploiter", "league_exploiter_1"]
    assert recipe.scripted == ["random"]
    assert recipe.roles["main_exploiter"].reset_probability == 1.0


@pytest.mark.parametrize("recipe", ["psro", "selfplay"])
def test_exploitability_needs_an_openspiel_env(recipe, tmp_path):
    # Refused by the config check, before Ray starts (issue 38: it was refused at setup).
    with pytest.raises(ValueError, match=r"league.exploitability_interval=1 scores players exactly .* env 'tictactoe' has neither"):
        _config(recipe, exploitability_interval=1)


def test_pfsp_league_snapshots_and_feeds_the_coordinator(tmp_path):
    trainer = Trainer(_config("pfsp", scripted=["random"], eval_pairs=2), tmp_path)
    summary = trainer.train()
    trainer.close()
    league = trainer.league
    assert isinstance(league, CoordinatedLeague)
    counters = trainer.plan.metrics.counters
    steps = counters[steps_counter("main")]
    assert steps > 0
    # One snapshot per 300 sampled agent steps at most (taken after whole iterations).
    assert 1 <= len(summary["snapshots"]) <= steps // 300
    for sampler in trainer.samplers:
        assert set(summary["snapshots"]) | {"random", "main"} <= set(sampler.policy_ids())
        for sid in summary["snapshots"]:  # samplers hold exactly the saved snapshot weights
            for k, v in sampler.get_weights([sid])[sid].items():
                np.testing.assert_array_equal(v, league.frozen_weights()[sid][k])
    payoff = PayoffTable.from_dict(summary["payoff"])
    assert payoff.games("main", "random") > 0  # training and evaluation games were reported
    population = summary["league"]["population"]["players"]
    assert {p["player_id"] for p in population} >= {"main", "random", *summary["snapshots"]}
    row = trainer.history[-1]
    assert set(row["ratings"]["elo"]) >= {"main", "random"} and row["league_players"] == len(population)


def test_main_exploiter_is_reset_to_its_initial_weights_after_its_snapshot(tmp_path):
    cfg = _config("alphastar", num_main_exploiters=1, num_league_exploiters=0)
    trainer = Trainer(cfg, tmp_path)
    trainer.setup()
    initial = trainer.learner.get_weights(["main_exploiter"])["main_exploiter"]
    for _ in range(30):
        trainer.step(0.0)
        if "main_exploiter@v0" in trainer.league.frozen_weights():
            break
    snaps = {sid for sid in trainer.league.frozen_weights() if sid.startswith("main_exploiter@")}
    assert snaps == {"main_exploiter@v0"}
    after = trainer.learner.get_weights(["main_exploiter"])["main_exploiter"]
    snapshot = trainer.league.frozen_weights()["main_exploiter@v0"]
    # The version counter starts a new epoch at a reset (rows sampled before it are never
    # trained on); every parameter is back to its initial value.
    assert int(after["weights_version"]) > int(initial["weights_version"])
    params = [k for k in initial if k != "weights_version"]
    for k in params:
        np.testing.assert_array_equal(after[k], initial[k])  # reset...
        np.testing.assert_array_equal(trainer.samplers[0].get_weights(["main_exploiter"])["main_exploiter"][k], initial[k])
    # ...after a snapshot of its trained weights (which moved away from the initial ones).
    assert any(not np.array_equal(snapshot[k], initial[k]) for k in params)
    trainer.close()


def test_psro_on_kuhn_logs_exact_exploitability(tmp_path):
    # Every logged figure is recomputed by OpenSpiel's own tree walks (none of the league's
    # game-tree code): main's exploitability, each frozen pair's exact payoff entry, and the
    # exploitability of the meta-Nash mixture of the frozen players.
    import pyspiel

    from league.envs import make_env
    from poker_helpers import league_table, openspiel_expected_return, openspiel_exploitability, openspiel_mixture_exploitability

    cfg = _config("psro", env="kuhn_poker", exploitability_interval=1)
    trainer = Trainer(cfg, tmp_path)
    try:
        trainer.train()
        rows = [r for r in trainer.history if "exploitability" in r]
        assert len(rows) == 4
        last = rows[-1]["exploitability"]
        game, observe = pyspiel.load_game("kuhn_poker"), make_env("kuhn_poker").observe
        main = league_table(game, trainer.algorithms["main"], trainer.learner.get_weights(["main"])["main"], observe)
        assert last["main"] == pytest.approx(openspiel_exploitability(game, main), abs=1e-9)
        frozen = trainer.league.frozen_policies()
        assert len(frozen) >= 2, "too few snapshots: the exact meta-game was never filled"
        tables = {pid: league_table(game, factory, weights, observe) for pid, (factory, weights) in frozen.items()}
        payoff = trainer.league.payoff
        for a in tables:
            for b in tables:
                if a != b:
                    assert payoff.expected_return(a, b) == pytest.approx(openspiel_expected_return(game, tables[a], tables[b]), abs=1e-9)
        mixture = trainer.league.summary()["meta_strategy"]
        assert set(mixture) == set(frozen) and sum(mixture.values()) == pytest.approx(1.0)
        expected = openspiel_mixture_exploitability(game, [tables[p] for p in mixture], list(mixture.values()))
        assert last["meta_strategy"] == pytest.approx(expected, abs=1e-9)
    finally:
        trainer.close()


def test_coordinated_run_resumes_with_its_league(tmp_path):
    first = Trainer(_config("pfsp", scripted=["random"]), tmp_path / "a")
    first.train()
    first.close()
    saved = first.league.state()["coordinator"]
    cfg = _config("pfsp", scripted=["random"])
    cfg.resume = str(tmp_path / "a")
    cfg.stop.iterations = 5
    resumed = Trainer(cfg, tmp_path / "b")
    resumed.setup()
    try:
        restored = resumed.league.state()["coordinator"]
        assert restored["population"] == saved["population"] and restored["payoff"] == saved["payoff"]
        assert set(resumed.league.frozen_weights()) == set(first.league.frozen_weights())
        assert set(first.league.frozen_weights()) <= set(resumed.samplers[0].policy_ids())
    finally:
        resumed.close()



def test_a_resumed_league_resets_exploiters_to_their_original_initial_weights(tmp_path):
    cfg = _config("alphastar", num_main_exploiters=1, snapshot_steps=100_000)
    first = Trainer(cfg, tmp_path / "a")
    first.train()
    first.close()
    fresh = Trainer(_config("alphastar", num_main_exploiters=1, snapshot_steps=100_000), tmp_path / "fresh")
    fresh.setup()
    initial = fresh.learner.get_weights(["main_exploiter"])["main_exploiter"]
    fresh.close()
    resumed_cfg = _config("alphastar", num_main_exploiters=1, snapshot_steps=100_000)
    resumed_cfg.resume = str(tmp_path / "a")
    resumed = Trainer(resumed_cfg, tmp_path / "b")
    resumed.setup()
    try:
        trained = resumed.learner.get_weights(["main_exploiter"])["main_exploiter"]
        assert any(not np.array_equal(trained[k], initial[k]) for k in initial)  # it did resume trained weights
        # The exploiter's snapshot falls due (its learner steps pass snapshot_steps): it is
        # snapshotted, then reset to the first run's initial weights, not the resumed ones.
        counters = dict(resumed.plan.metrics.counters)
        counters[steps_counter("main_exploiter")] = counters.get(steps_counter("main_exploiter"), 0) + 100_000
        resumed.league.update(resumed.iteration + 1, counters, resumed.learner, resumed.samplers)
        (snapshot,) = [sid for sid in resumed.league.frozen_weights() if sid.startswith("main_exploiter@")]
        for k in initial:
            np.testing.assert_array_equal(resumed.league.frozen_weights()[snapshot][k], trained[k])
        after = resumed.learner.get_weights(["main_exploiter"])["main_exploiter"]
        on_sampler = resumed.samplers[0].get_weights(["main_exploiter"])["main_exploiter"]
        for k in (k for k in initial if k != "weights_version"):
            np.testing.assert_array_equal(after[k], initial[k])
            np.testing.assert_array_equal(on_sampler[k], initial[k])
    finally:
        resumed.close()

@pytest.mark.ray
def test_coordinator_actor_death_loses_and_doubles_no_game(ray_session):
    cfg = _config("pfsp", scripted=["random"], remote=True)
    recipe = build_league(cfg.league)
    from league.algos import make_algorithm
    from league.envs import make_env

    env = make_env("tictactoe")
    spec = env.spec(env.possible_agents[0])
    algos = {"main": make_algorithm("ppo", spec, SMALL_PPO["params"])}
    from league.policy import RandomPolicyFactory

    league = CoordinatedLeague(recipe, env.possible_agents, algos, {"random": RandomPolicyFactory()}, PayoffTable(), remote=True)

    def episodes(start, n):
        return [
            {"episode_id": start + i, "policies": {"player_1": "main", "player_2": "random"}, "outcome": {"player_1": "win", "player_2": "loss"}, "returns": {"player_1": 1.0, "player_2": -1.0}}
            for i in range(n)
        ]

    league.record(episodes(0, 5))
    league.state()  # saves the coordinator, as a checkpoint or the periodic save does
    league.record(episodes(5, 3))
    ray_session.kill(league.coordinator)
    league.record(episodes(8, 4))  # finds the actor dead: restores, replays 5..7, then reports 8..11
    league.record(episodes(8, 4))  # a retried report counts once
    assert league.coordinator_restarts == 1
    view = ray_session.get(league.coordinator.view.remote())
    assert PayoffTable.from_dict(view["payoff"]).games("main", "random") == 12
    assert len(league.matchups().next_matchup(env.possible_agents, 0, np.random.default_rng(0)).policies) == 2
    league.close()


def test_exact_meta_strategy_finds_the_equilibrium_member_of_a_population():
    # A population of uniform random, two pure strategies and a CFR solution: the meta-Nash
    # under exact returns must lean on the CFR policy, so its mixture is about as unexploitable.
    import pyspiel
    from open_spiel.python.policy import TabularPolicy

    from league.leagues import ExactMetaGame
    from league.population.exploitability import exploitability
    from poker_helpers import cfr_table

    game = pyspiel.load_game("kuhn_poker")
    nash_table = cfr_table(game, 300)
    members = {"cfr": nash_table, "uniform": TabularPolicy(game)}
    for name, action in (("always_pass", 0), ("always_bet", 1)):
        pure = TabularPolicy(game)
        pure.action_probability_array[:] = 0.0
        pure.action_probability_array[:, action] = 1.0
        members[name] = pure
    exact = ExactMetaGame("kuhn_poker")
    for pid, table in members.items():
        exact.add_table(pid, table)
    frozen = {pid: (None, None) for pid in members}
    payoff = PayoffTable()
    for a in members:
        for b in members:
            if a < b:
                payoff.set_expected_return(a, b, exact.expected_return(a, frozen[a], b, frozen[b]))
    # Entries worked out by hand (one chip ante, one chip bet; seatings averaged): a bet
    # always meets a fold against always_pass, so always_bet collects the ante from either seat.
    # Against uniform play always_pass folds to every bet and wins nothing back: -1/2 from
    # either seat; always_bet wins the ante when uniform folds, 1/2 as first player and
    # 1/4 as second (uniform must pass, then fold): 3/8 averaged.
    assert payoff.expected_return("always_bet", "always_pass") == pytest.approx(1.0, abs=1e-12)
    assert payoff.expected_return("always_pass", "always_bet") == pytest.approx(-1.0, abs=1e-12)
    assert payoff.expected_return("always_pass", "uniform") == pytest.approx(-0.5, abs=1e-12)
    assert payoff.expected_return("always_bet", "uniform") == pytest.approx(0.375, abs=1e-12)
    mixture = exact.meta_strategy(frozen, payoff)
    assert mixture["cfr"] > 0.5, mixture
    cfr_value = exploitability(game, nash_table)
    assert cfr_value < 0.02
    assert exact.meta_strategy_exploitability(frozen, payoff) <= cfr_value + 0.02
    assert exploitability(game, members["uniform"]) == pytest.approx(0.4583, abs=1e-3)


def test_a_reset_dqn_exploiter_explores_again_from_its_schedule_start(tmp_path, monkeypatch):
    # Reset to its initial weights, the exploiter used to keep exploring at the epsilon its
    # trained predecessor had reached on each sampler (the schedule counted on).
    values = {
        "env": {"name": "tictactoe"},
        "algo": {"name": "dqn", "params": {"train_batch_size": 16, "learning_starts": 32, "training_intensity": 1.0,
                                           "epsilon_steps": 200, "target_update_interval": 50}},
        "league": {"recipe": "alphastar", "snapshot_steps": 300, "num_main_exploiters": 1, "num_league_exploiters": 0,
                   "fixed_opponents": {}},
        "sampler": {"remote": False, "num_samplers": 1, "num_envs": 4, "fragment_length": 16, "num_cpus": 0, "mode": "bulk_sync"},
        "eval": {"interval": 0}, "iteration": {"min_env_steps": 0},
        "stop": {"iterations": 4, "time_s": 0, "env_steps": 0}, "logging": {"tensorboard": False}, "verbose": False,
    }  # fmt: skip
    from league.algos.dqn import DQN

    made = []  # (algorithm, policy): every policy the DQN algorithms' public factory makes
    make_policy = DQN.make_policy
    monkeypatch.setattr(DQN, "make_policy", lambda self, *a, **k: made.append((self, make_policy(self, *a, **k))) or made[-1][1])
    trainer = Trainer(parse_run_config(values), tmp_path)
    trainer.setup()
    # The sampler's own (learning) exploiter policy.
    (policy,) = [p for algo, p in made if algo is trainer.algorithms["main_exploiter"] and p.learns]
    seen = []
    for _ in range(300):
        trainer.step(0.0)
        seen.append(policy.epsilon)
        if "main_exploiter@v0" in trainer.league.frozen_weights():
            break
    trainer.close()
    assert "main_exploiter@v0" in trainer.league.frozen_weights()
    assert min(seen[:-1]) < 1.0  # it had explored less and less before its snapshot...
    assert seen[-1] == 1.0  # ...and starts again from the schedule's start after its reset


def test_interval_measure_is_due_on_its_iterations_while_the_longest_one_fits():
    from league.leagues.base import IntervalMeasure

    measure = IntervalMeasure(4)
    assert [i for i in range(1, 13) if measure.due(i)] == [4, 8, 12]
    assert measure.due(4, time_left_s=0.0)  # nothing measured yet: no cost known
    assert measure.timed(lambda: time.sleep(0.05) or "figure") == "figure"
    assert measure.longest_s >= 0.05
    assert not measure.due(8, time_left_s=0.01) and measure.due(8, time_left_s=1.0) and measure.due(8, None)
    assert not IntervalMeasure(0).due(4)


def test_a_league_skips_exploitability_that_would_carry_the_run_past_its_time(tmp_path):
    # The run's last measurement is skipped when less time is left than the longest took
    # (issue 38: liar's dice's last meta-game solve took its run 12 s past stop.time_s).
    trainer = Trainer(_config("psro", env="kuhn_poker", exploitability_interval=1), tmp_path)
    try:
        trainer.train()
        league, iteration = trainer.league, trainer.history[-1]["iteration"]
        assert "exploitability" in league.metrics(iteration, trainer.learner)
        assert "exploitability" in league.metrics(iteration, trainer.learner, time_left_s=60.0)
        assert "exploitability" not in league.metrics(iteration, trainer.learner, time_left_s=0.0)
    finally:
        trainer.close()
