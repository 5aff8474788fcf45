"""End to end: a PPO plan learns CartPole in-process; the self-play trainer runs on Ray."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from league.algos import make_algorithm
from league.config import parse_run_config
from league.envs import make_env
from league.flow import ParallelRollouts
from league.learn import Learner
from league.sampling import FixedMatchups, Sampler
from algo_helpers import SOLVED_RETURN, SOLVED_WINDOW, train_until_solved


@pytest.mark.slow
def test_ppo_plan_learns_cartpole_in_process():
    # Seeds 0-6 solve in 29-56 training steps (60k-120k env steps, 10-30 s on 2 busy cores).
    torch.manual_seed(0)
    env = make_env("cartpole")
    spec = env.spec("agent_0")
    algo = make_algorithm(
        "ppo",
        spec,
        {"model": "mlp", "lr": 1e-3, "train_batch_size": 2048, "minibatch_size": 256, "num_epochs": 6, "entropy_coef": 0.0},
    )
    sampler = Sampler(
        "cartpole", policies={"main": algo}, matchups=FixedMatchups({"agent_0": "main"}), num_envs=8, fragment_length=64, seed=0
    )
    learner = Learner(seed=0)
    learner.add_policy("main", algo)
    sampler.set_weights(learner.get_weights())

    from league.flow import BroadcastWeights

    plan = algo.plan_fragment(ParallelRollouts([sampler], mode="bulk_sync"), learner, ["main"]).for_each(
        BroadcastWeights(learner, [sampler], ["main"])
    )
    returns, steps = train_until_solved(plan, sampler, max_items=120)
    first, last = np.mean(returns[:SOLVED_WINDOW]), np.mean(returns[-SOLVED_WINDOW:])
    assert first < 50 and last >= SOLVED_RETURN, (steps, first, last)


@pytest.mark.ray
def test_selfplay_trainer_runs_two_iterations_on_ray(ray_session, tmp_path):
    from league.trainer import MAIN, Trainer

    cfg = parse_run_config(
        {
            "algo": {"name": "ppo", "params": {"train_batch_size": 300, "minibatch_size": 100, "num_epochs": 2}},
            "sampler": {"num_samplers": 2, "num_envs": 4, "fragment_length": 40, "num_cpus": 0, "mode": "bulk_sync"},
            "league": {"snapshot_steps": 1},
            "iteration": {"min_env_steps": 0},
            "eval": {"interval": 1, "episodes": 10},
            "stop": {"iterations": 2, "time_s": 0, "env_steps": 0},
            "verbose": False,
        }
    )
    trainer = Trainer(cfg, tmp_path)
    try:
        summary = trainer.train()
        assert summary["iterations"] == 2
        assert summary["env_steps"] >= 2 * 300 / 2  # self-play: up to 2 agent steps per env step... at least half
        assert summary["final_win_rate_vs_random"] is not None
        assert len(trainer.pool.snapshots) == 2
        # The samplers act with exactly the learner's weights after the broadcast.
        learner_w = trainer.learner.get_weights([MAIN])[MAIN]
        for s in trainer.samplers:
            sampler_w = ray_session.get(s.get_weights.remote([MAIN]))[MAIN]
            for k, v in learner_w.items():
                np.testing.assert_array_equal(sampler_w[k], v)
        # Snapshots are loaded on samplers as frozen policies.
        assert set(ray_session.get(trainer.samplers[0].policy_ids.remote())) >= {MAIN, "random", "main@v1", "main@v2"}
    finally:
        trainer.close()
    ckpt = tmp_path / "checkpoints" / "final"
    assert (ckpt / "policies.pt").is_file() and (ckpt / "learner_main.pt").is_file()
    policies = torch.load(ckpt / "policies.pt", weights_only=True)
    assert set(policies) == {MAIN, "main@v1", "main@v2"}
    league_state = json.loads((ckpt / "league.json").read_text())
    assert league_state["iteration"] == 2
    assert json.loads((tmp_path / "summary.json").read_text())["iterations"] == 2
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in rows] == [1, 2] and "main/policy_loss" in rows[-1]
    # The driver waits on the Ray samplers' rounds; that wait is the plan's idle time, in no
    # operator's: it grows, and stays below the run's wall time.
    assert 0 < rows[0]["plan_idle_s"] <= rows[1]["plan_idle_s"] < rows[1]["time_s"]


@pytest.mark.ray
def test_multi_policy_trainer_composes_fragments(ray_session, tmp_path):
    from league.trainer import Trainer

    small = {"train_batch_size": 200, "minibatch_size": 100, "num_epochs": 1}
    cfg = parse_run_config(
        {
            "policies": {
                "ppo_a": {"algo": "ppo", "params": small},
                "dqn_b": {"algo": "dqn", "params": {"learning_starts": 100, "train_batch_size": 32, "model": "mlp"}},
            },
            "sampler": {"num_samplers": 1, "num_envs": 4, "fragment_length": 40, "num_cpus": 0, "mode": "bulk_sync"},
            # Two learner actors: the policies are placed one per learner by the LearnerGroup.
            "learner": {"num_learners": 2, "num_cpus_per_learner": 0},
            "eval": {"interval": 2, "episodes": 6},
            "iteration": {"min_env_steps": 160},  # one fragment: PPO updates every other iteration
            "stop": {"iterations": 8, "time_s": 0, "env_steps": 0},
            "verbose": False,
        }
    )
    trainer = Trainer(cfg, tmp_path)
    try:
        summary = trainer.train()
        assert "PerPolicyFragments" in str(trainer.plan)
        assert set(summary["win_rates_vs_random"]) == {"ppo_a", "dqn_b"}
        # PPO and DQN both trained, concurrently, in one plan.
        learner_stats = trainer.plan.metrics.snapshot()["learner"]
        assert set(learner_stats) == {"ppo_a", "dqn_b"}
        assert sorted(trainer.learner.assignment().values()) == [0, 1]
        # PPO vs DQN games reached the payoff table.
        assert sum(trainer.payoff.counts("ppo_a", "dqn_b")) > 0
    finally:
        trainer.close()
    policies = torch.load(tmp_path / "checkpoints" / "final" / "policies.pt", weights_only=True)
    assert set(policies) == {"ppo_a", "dqn_b"}
