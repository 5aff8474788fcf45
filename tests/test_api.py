"""The Python API: ``league.Trainer`` built from an env name and typed algorithm configs."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import league
from league.algos import DQNConfig, PPOConfig
from league.config import PolicyConfig, parse_run_config, run_config
from league.sampling import PoolMatchups

SMALL_PPO = PPOConfig(train_batch_size=128, minibatch_size=64, num_epochs=1)
SMALL_DQN = DQNConfig(learning_starts=64, train_batch_size=32)


def test_run_config_is_the_object_league_train_builds():
    built = run_config("tictactoe", policies={"p": SMALL_PPO, "d": PolicyConfig("dqn", {"learning_starts": 64})}, opponents={"random": 0.2}, seed=3)
    assert built.policies["p"].algo == "ppo" and built.policies["p"].params["train_batch_size"] == 128
    assert built.policies["d"].algo == "dqn" and built.league.fixed_opponents == {"random": 0.2} and built.seed == 3
    assert built.sampler.remote is False  # no Ray needed from Python unless asked for
    same = parse_run_config({"env": {"name": "tictactoe"}, "policies": {"p": {"algo": "ppo", "params": {"train_batch_size": 128, "minibatch_size": 64}}}})
    assert same.policies["p"].algo == built.policies["p"].algo


def test_bad_policies_and_sections_are_named():
    with pytest.raises(TypeError, match=r"policies\['p'\] is a dict"):
        run_config("tictactoe", policies={"p": {"lr": 1.0}})
    with pytest.raises(ValueError, match="sampler.num_envs"):
        run_config("tictactoe", policies={"p": SMALL_PPO}, sampler={"num_envs": 0})
    with pytest.raises(TypeError, match="takes no policies"):
        league.Trainer(run_config("tictactoe"), policies={"p": SMALL_PPO})


def test_pool_matchups_mix_learning_games_and_fixed_members():
    source = PoolMatchups(["a", "b"], {"random": 0.25})
    rng = np.random.default_rng(0)
    kinds = Counter()
    for i in range(4000):
        m = source.next_matchup(["x", "y"], i, rng)
        if "random" in m.policies.values():
            assert m.learning_agents is not None and len(m.learning_agents) == 1
            (seat,) = m.learning_agents
            assert m.policies[seat] in ("a", "b")
            kinds["fixed"] += 1
        else:
            assert m.learning_agents is None
            kinds["learning"] += 1
    assert abs(kinds["fixed"] / 4000 - 0.25) < 0.03
    with pytest.raises(ValueError, match="sum to <= 1"):
        PoolMatchups(["a"], {"random": 1.5})


def test_a_ppo_and_a_dqn_policy_train_evaluate_and_save(tmp_path):
    trainer = league.Trainer("tictactoe", policies={"ppo": SMALL_PPO, "dqn": SMALL_DQN}, opponents={"random": 0.2},
                             run_dir=tmp_path, iteration={"min_env_steps": 128}, sampler={"num_envs": 4, "fragment_length": 16})  # fmt: skip
    try:
        assert "PerPolicyFragments" in str(trainer.plan)
        first = trainer.train(env_steps=600)
        assert first["env_steps"] >= 600
        again = trainer.train(iterations=2)  # trains on from where it stopped
        assert again["iterations"] == first["iterations"] + 2
        rates = trainer.evaluate(episodes=20, opponents=["random"])
        assert set(rates) == {"ppo", "dqn"} and all(0.0 <= r["random"] <= 1.0 for r in rates.values())
        assert sum(trainer.payoff.counts("ppo", "random")) > 0  # the fixed member played
        path = trainer.save("mine")
        assert (path / "policies.pt").exists() and path.name == "mine"
    finally:
        trainer.close()
