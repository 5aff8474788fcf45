"""Agent groups (issue 15): sides with different spaces, each its own policy and league.

Short runs through ``league-train``'s code path (``run_job``, the config the CLI builds)
on mpe2's predator-prey, speaker-listener and co-op spread, plus the group resolution and
the errors a bad declaration gets.
"""

from __future__ import annotations

import json
from importlib.util import find_spec

import numpy as np
import pytest

from league.cli.train import run_job
from league.config import parse_run_config
from league.envs.base import AgentSpec
from league.envs.groups import auto_groups, resolve_groups
from league.leagues.groups import GroupMatchups

#: On the tests that run mpe2's particle worlds; the rest (group resolution, 3-player hold'em) need no mpe2.
needs_mpe2 = pytest.mark.skipif(find_spec("mpe2") is None, reason="needs mpe2 (pip install -e '.[mpe]')")

# One in-process sampler, tiny PPO batches: each run takes a few seconds.
SHORT = {
    "algo": {"name": "ppo", "params": {"train_batch_size": 128, "minibatch_size": 64, "num_epochs": 1}},
    "sampler": {"num_samplers": 1, "num_envs": 4, "fragment_length": 25, "remote": False},
    "league": {"snapshot_steps": 100, "fixed_opponents": {"random": 0.2}},
    "iteration": {"min_env_steps": 200},
    "eval": {"interval": 1, "episodes": 4},
    "stop": {"iterations": 3, "time_s": 0, "env_steps": 0},
    "logging": {"tensorboard": False, "progress": False},
    "verbose": False,
}

A = AgentSpec((16,), 5, False)
B = AgentSpec((14,), 5, False)


def _values(env: dict, **extra) -> dict:
    return {**SHORT, "env": env, **extra}


def test_groups_resolve_by_pattern_and_auto_by_prefix():
    specs = {"adversary_0": A, "adversary_1": A, "agent_0": B}
    assert resolve_groups({"predator": ["adversary_*"], "prey": ["agent_*"]}, specs) == {
        "predator": ["adversary_0", "adversary_1"],
        "prey": ["agent_0"],
    }
    assert auto_groups(specs) == {"adversary": ["adversary_0", "adversary_1"], "agent": ["agent_0"]}
    assert auto_groups({"player_0": A, "player_1": A}) is None  # symmetric: plain self-play
    assert auto_groups({"p_0": A, "p_1": B}) is None  # ids do not split the spaces: env.groups must say (config error)


@pytest.mark.parametrize(
    "groups, message",
    [
        ({"predator": ["adversary_*"]}, "'agent_0' is in no group"),
        ({"all": ["*"]}, "mixes agents with different spaces"),
        ({"a": ["adversary_*"], "b": ["*"]}, "matches groups"),
        ({"a": ["adversary_*"], "b": ["agent_*"], "c": ["nobody"]}, "matches no agent"),
    ],
)
def test_bad_group_declarations_are_named(groups, message):
    with pytest.raises(ValueError, match=message):
        resolve_groups(groups, {"adversary_0": A, "adversary_1": A, "agent_0": B}, "simple_tag")


def test_group_matchups_seat_a_side_with_one_policy_and_learn_only_learning_seats():
    groups = {"predator": ["adversary_0", "adversary_1"], "prey": ["agent_0"]}
    source = GroupMatchups(
        groups, {"predator": ["pred"], "prey": ["prey"]}, {("pred", "prey"): {"random": 1.0}, ("prey", "predator"): {"pred": 1.0}}
    )
    rng = np.random.default_rng(0)
    seen = set()
    for k in range(40):
        m = source.next_matchup(["adversary_0", "adversary_1", "agent_0"], k, rng)
        assert m.policies["adversary_0"] == m.policies["adversary_1"]  # a side shares its policy
        if m.policies["agent_0"] == "random":
            assert m.learning_agents == {"adversary_0", "adversary_1"}
        else:  # prey in focus against the current predator: both sides learn
            assert m.learning_agents == {"adversary_0", "adversary_1", "agent_0"}
        seen.add(m.policies["agent_0"])
    assert seen == {"random", "prey"}


def test_a_side_is_evaluated_with_the_other_sides_learning_policies_as_teammates():
    from league.leagues.groups import GroupLeague
    from league.population.payoff import PayoffTable

    groups = {"speaker": ["speaker_0"], "listener": ["listener_0"]}
    league = GroupLeague(groups, {"talk": "speaker", "hear": "listener", "hear2": "listener"}, {}, {}, PayoffTable(), snapshot_steps=0)
    rng = np.random.default_rng(0)
    assert league.teammates_source("talk").next_matchup(["speaker_0", "listener_0"], 0, rng).policies == {"speaker_0": "talk", "listener_0": "hear"}
    assert league.teammates_source("hear2").next_matchup(["speaker_0", "listener_0"], 0, rng).policies == {"speaker_0": "talk", "listener_0": "hear2"}
    assert league.teammates("hear2") == ["hear2", "talk"] and league.teammates("talk") == ["talk", "hear"]
    against = league.evaluation_source("talk", "random").next_matchup(["speaker_0", "listener_0"], 0, rng).policies
    assert against == {"speaker_0": "talk", "listener_0": "random:listener"}


@needs_mpe2
def test_simple_tag_trains_predators_and_prey_each_with_its_own_league(tmp_path):
    """The issue's traceback case: two sides with different observation sizes, from the CLI path."""
    summary = run_job(_values({"name": "mpe2.simple_tag_v3", "kwargs": {"max_cycles": 25}}), str(tmp_path))
    cfg = summary["config"]
    assert cfg["env"]["groups"] == {"adversary": ["adversary_0", "adversary_1", "adversary_2"], "agent": ["agent_0"]}
    assert set(cfg["policies"]) == {"adversary", "agent"}  # one learning policy per side, by default
    assert any(s.startswith("adversary@") for s in summary["snapshots"]) and any(s.startswith("agent@") for s in summary["snapshots"])
    assert summary["payoff"]["pairs"], "group-vs-group results reach the payoff table"
    assert set(summary["eval_return_mean"]) == {"adversary", "agent"}
    # Each side's win rate, a share of its 4 evaluation games (SHORT's eval.episodes) as the
    # last metrics row logged it; final_win_rate_vs_random is still the weaker side's.
    rates = summary["win_rates_vs_random"]
    assert set(rates) == {"adversary", "agent"} and summary["final_win_rate_vs_random"] == min(rates.values())
    assert all((4 * r).is_integer() for r in rates.values()), rates
    last = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()][-1]
    assert last["win_rate_vs_random"] == rates
    # The headline (issue 38): the prey never holds the strictly highest return, so no win rate
    # (min or mean) says anything; the sides' returns against random do, and their mean leads.
    head = summary["headline"]
    assert (head["shape"], head["metric"], summary["metric"]) == ("general_sum", "return", "return")
    assert head["sides"] == summary["eval_return_mean"] and head["value"] == summary["final_metric"] == pytest.approx(
        sum(head["sides"].values()) / 2, abs=1e-4
    )
    assert last["headline"]["sides"] == head["sides"]


@needs_mpe2
def test_explicit_groups_and_policies_per_side_with_different_action_spaces(tmp_path):
    env = {"name": "mpe2.simple_speaker_listener_v4", "kwargs": {"max_cycles": 25}, "groups": {"speaker": ["speaker_*"], "listener": ["listener_*"]}}
    policies = {"talk": {"algo": "ppo", "params": {"train_batch_size": 128, "minibatch_size": 64, "num_epochs": 1}, "group": "speaker"}}
    summary = run_job(_values(env, policies=policies), str(tmp_path))
    # "talk" plays the speakers, the listener group gets a policy of its own (algo).
    assert {pid: p["group"] for pid, p in summary["config"]["policies"].items()} == {"talk": "speaker", "listener": "listener"}
    assert set(summary["eval_return_mean"]) == {"talk", "listener"}
    # Both sides are paid alike: the rewards show a co-op game (issue 38), so the headline is the
    # team return, each side evaluated with the other's learning policy, never a meaningless 0.0 win rate.
    head = summary["headline"]
    assert (head["shape"], head["metric"], summary["metric"], head["opponent"]) == ("coop", "return", "return", "teammates")
    assert set(head["sides"]) == {"talk", "listener"} and all(v < 0 for v in head["sides"].values())
    assert summary["final_metric"] == head["value"] == pytest.approx(sum(head["sides"].values()) / 2, abs=1e-4)


@needs_mpe2
def test_one_group_is_a_team_sharing_parameters_and_its_metric_is_return(tmp_path):
    env = {"name": "mpe2.simple_spread_v3", "kwargs": {"max_cycles": 25}, "groups": {"team": ["*"]}}
    summary = run_job(_values(env), str(tmp_path))
    assert list(summary["config"]["policies"]) == ["team"]
    assert summary["metric"] == "return" and summary["final_metric"] == summary["final_return_mean"] < 0


@needs_mpe2
def test_continuous_simple_tag_experiment_runs_one_gaussian_league_per_side(tmp_path):
    """configs/experiment/simple_tag_continuous.yaml (issue 16), as `league-train +experiment=...`
    composes it, shortened: predators and prey each train a Gaussian PPO policy, snapshots are
    taken per side and evaluation reports each side's figures."""
    from league.checkpoint import read_checkpoint
    from league.cli.train import composed_values

    short = [
        "sampler.remote=false", "sampler.num_envs=4", "sampler.fragment_length=25", "algo.params.train_batch_size=128",
        "algo.params.minibatch_size=64", "algo.params.num_epochs=1", "iteration.min_env_steps=100", "league.snapshot_steps=100",
        "eval.interval=1", "eval.episodes=4", "stop.iterations=3", "stop.time_s=0", "stop.env_steps=0", "checkpoint.interval=0",
        "logging=quiet", "verbose=false",
    ]  # fmt: skip
    values = composed_values(["+experiment=simple_tag_continuous", *short])
    assert values["env"]["kwargs"]["continuous_actions"] is True and values["env"]["opening_plies"] == 0
    summary = run_job(values, str(tmp_path))
    assert summary["iterations"] == 3 and set(summary["config"]["policies"]) == {"predator", "prey"}
    row = json.loads((tmp_path / "metrics.jsonl").read_text().splitlines()[-1])
    for side in ("predator", "prey"):
        assert row[f"{side}/num_sgd_updates"] > 0, f"{side} trained"
        assert row[f"{side}/entropy"] > np.log(5), "a 5-dim Gaussian's entropy, beyond any 5-action categorical's"
        assert any(s.startswith(f"{side}@") for s in summary["snapshots"]), f"no {side} snapshot"
    assert set(summary["eval_return_mean"]) == set(summary["win_rates_vs_random"]) == {"predator", "prey"}
    weights = read_checkpoint(summary["checkpoints"][-1]).policies
    assert weights["predator"]["log_std"].shape == weights["prey"]["log_std"].shape == (5,), "diagonal Gaussians over Box(0, 1, (5,))"


@needs_mpe2
@pytest.mark.slow
def test_simple_spread_parameter_sharing_improves_the_team_return(tmp_path):
    """Two agents sharing one PPO policy (one group of every agent) learn to cover the landmarks:
    after 50k env steps the greedy evaluation return is well above the first evaluation's and
    above a uniform-random team's. An env-step budget and one in-process sampler make a seed's
    run repeat exactly; seeds 0-4 ended 10-22 above their first evaluation and 3.4-5 above random
    (-20.8); about 20 s at nice 19 on 2 cores."""
    from league.policy import RandomPolicyFactory
    from league.sampling import FixedMatchups, Sampler

    kwargs = {"max_cycles": 25, "N": 2}
    params = {"train_batch_size": 1000, "minibatch_size": 256, "num_epochs": 10, "lr": 0.003, "entropy_coef": 0.0,
              "normalize_values": True, "normalize_obs": True, "separate_networks": True, "model": "mlp",
              "model_kwargs": {"hidden": [64, 64]}}  # fmt: skip
    values = _values(
        {"name": "mpe2.simple_spread_v3", "kwargs": kwargs, "groups": {"team": ["*"]}},
        algo={"name": "ppo", "params": params}, sampler={"num_samplers": 1, "num_envs": 8, "fragment_length": 25, "remote": False},
        league={"fixed_opponents": {}}, iteration={"min_env_steps": 333}, eval={"interval": 5, "episodes": 64},
        stop={"iterations": 0, "time_s": 0, "env_steps": 50_000}, checkpoint={"interval": 0},
    )  # fmt: skip
    run_job(values, str(tmp_path))
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    evals = [r["eval_return_mean"]["team"] for r in rows if r["iteration"] % 5 == 0]
    assert len(evals) >= 10
    first, final = evals[0], float(np.mean(evals[-3:]))
    agents = [f"agent_{i}" for i in range(2)]
    randoms = FixedMatchups({a: "random" for a in agents})
    sampler = Sampler("mpe2.simple_spread_v3", env_kwargs=kwargs, policies={"random": RandomPolicyFactory()}, frozen=("random",),
                      matchups=randoms, num_envs=8, seed=0)  # fmt: skip
    random_team = float(np.mean([np.mean(list(e["returns"].values())) for e in sampler.evaluate(200, randoms, explore=True)]))
    assert final >= first + 5.0, (first, evals)
    assert final >= random_team + 2.0, (random_team, evals)


@needs_mpe2
@pytest.mark.parametrize(
    "extra, message",
    [
        ({"policies": {"p": {"algo": "ppo", "group": "nope"}}}, "its group 'nope' is unknown"),
        ({"league": {"recipe": "pfsp", "scripted": ["random"]}}, "not available for an env with agent groups"),
    ],
)
def test_bad_group_configs_get_a_message(extra, message):
    values = _values({"name": "mpe2.simple_tag_v3"})
    values.update(extra)
    with pytest.raises(ValueError, match=message):
        parse_run_config(values)


def test_policy_group_without_groups_is_refused():
    with pytest.raises(ValueError, match="the env has no groups"):
        parse_run_config({"env": {"name": "tictactoe"}, "policies": {"p": {"algo": "ppo", "group": "x"}}})


def test_three_player_holdem_fills_the_payoff_table_and_placement_ratings(tmp_path):
    """More than two players: main against each other seat in the payoff table, every hand a
    ranking for openskill (before, only two-seat episodes were counted: nothing here)."""
    pytest.importorskip("openskill")
    values = {
        **SHORT,
        "env": {"name": "texas_holdem", "kwargs": {"num_players": 3}},
        "league": {"snapshot_steps": 100, "self_play_prob": 0.2, "fixed_opponents": {"random": 0.3}},
        "eval": {"interval": 0},
    }
    summary = run_job(values, str(tmp_path))
    assert any({p["a"], p["b"]} == {"main", "random"} and p["wins"] + p["draws"] + p["losses"] > 0 for p in summary["payoff"]["pairs"])
    last = json.loads((tmp_path / "metrics.jsonl").read_text().splitlines()[-1])
    assert "main" in last["ratings"]["openskill"] and "random" in last["ratings"]["openskill"]


def test_predator_prey_episodes_are_rated_as_teams():
    pytest.importorskip("openskill")
    from league.population.placement_ratings import PlacementRatings

    ratings = PlacementRatings()
    for _ in range(20):  # predators (three seats, one policy) always beat the prey
        ratings.rate_episode({"adversary_0": "pred", "adversary_1": "pred", "agent_0": "prey"}, {"adversary_0": 10.0, "adversary_1": 10.0, "agent_0": -10.0})
    ratings.rate_episode({"adversary_0": "pred", "agent_0": "pred"}, {"adversary_0": 1.0, "agent_0": 0.0})  # one policy: nothing to rank
    table = ratings.table()
    assert ratings.games == 20 and table["pred"] > table["prey"]
    restored = PlacementRatings()
    restored.load_state(ratings.state())
    assert restored.table() == table


@needs_mpe2
def test_a_fixed_member_is_one_policy_id_per_side(tmp_path):
    """random on the prey's seats in one env copy and on the predators' in another must not be
    stacked into one batch (16- and 14-dim observations): each side has its own random id."""
    values = _values({"name": "mpe2.simple_tag_v3", "kwargs": {"max_cycles": 25}})
    values["league"] = {"snapshot_steps": 0, "fixed_opponents": {"random": 0.8}}
    values["sampler"] = {**values["sampler"], "num_envs": 12}
    values["stop"] = {"iterations": 2, "time_s": 0, "env_steps": 0}
    summary = run_job(values, str(tmp_path))
    members = {p["b"] for p in summary["payoff"]["pairs"]}
    assert {"random:adversary", "random:agent"} <= members


@needs_mpe2
def test_a_group_league_resumes_with_its_snapshots_payoff_and_ratings(tmp_path):
    first = run_job(_values({"name": "mpe2.simple_tag_v3", "kwargs": {"max_cycles": 25}}), str(tmp_path / "a"))
    resumed = run_job(
        _values({"name": "mpe2.simple_tag_v3", "kwargs": {"max_cycles": 25}}, resume=first["checkpoints"][-1], stop={"iterations": 4, "time_s": 0, "env_steps": 0}),
        str(tmp_path / "b"),
    )
    assert resumed["start_iteration"] == 3 and resumed["iterations"] == 4
    assert first["snapshots"] and set(first["snapshots"]) <= set(resumed["snapshots"])  # restored, then more taken
    pairs = lambda summary: {(p["a"], p["b"]) for p in summary["payoff"]["pairs"]}  # noqa: E731
    assert pairs(first) <= pairs(resumed)


@needs_mpe2
def test_python_api_gives_each_side_its_algorithm(tmp_path):
    from league import Trainer
    from league.algos import DQNConfig
    from league.config import PolicyConfig

    trainer = Trainer(
        "mpe2.simple_tag_v3",
        policies={"hunters": PolicyConfig("ppo", {"train_batch_size": 128, "minibatch_size": 64}, group="predator"), "prey": DQNConfig(learning_starts=50)},
        groups={"predator": ["adversary_*"], "prey": ["agent_*"]},
        env_kwargs={"max_cycles": 25},
        sampler={"num_envs": 4, "fragment_length": 25},
        run_dir=tmp_path,
    )
    try:
        trainer.train(env_steps=600)
        result = trainer.evaluate(episodes=4)
    finally:
        trainer.close()
    assert set(result) == {"hunters", "prey"} and all(set(r) == {"random"} for r in result.values())
    assert all((4 * r["random"]).is_integer() for r in result.values()), result  # a share of its 4 games


@needs_mpe2
@pytest.mark.parametrize("env_file", ["simple_adversary", "simple_push"])
def test_the_mpe_env_files_ppo_runs_its_own_value_trunk_through_snapshots_and_evaluation(env_file, tmp_path):
    """`league-train env=<file>` for the general-sum mpe2 files whose env_algo file gives PPO a
    value trunk of its own with standardised targets, shortened: each side trains, takes and
    evicts snapshots and is evaluated, and its checkpoint holds the value trunk."""
    from league.checkpoint import read_checkpoint
    from league.cli.train import composed_values

    short = [
        "sampler.remote=false", "sampler.num_envs=4", "sampler.fragment_length=25", "algo.params.train_batch_size=128",
        "algo.params.minibatch_size=64", "algo.params.num_epochs=1", "iteration.min_env_steps=100", "league.snapshot_steps=50",
        "league.max_snapshots=1", "eval.interval=1", "eval.episodes=4", "stop.iterations=4", "stop.time_s=0", "stop.env_steps=0",
        "checkpoint.interval=0", "logging=quiet", "verbose=false",
    ]  # fmt: skip
    values = composed_values([f"env={env_file}", *short])
    assert values["algo"]["params"]["separate_networks"] is True and values["algo"]["params"]["normalize_values"] is True
    summary = run_job(values, str(tmp_path))
    sides = set(summary["config"]["policies"])
    assert len(sides) == 2 and set(summary["eval_return_mean"]) == sides
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert rows[-1]["snapshots_evicted"] >= 2, "each side's later snapshots evicted its first"
    for side in sides:
        assert rows[-1][f"{side}/num_sgd_updates"] > 0, f"{side} trained"
        assert any(s.startswith(f"{side}@") for s in summary["snapshots"]), f"no {side} snapshot"
        assert any(name.startswith("vf_trunk") for name in read_checkpoint(summary["checkpoints"][-1]).policies[side]), side
