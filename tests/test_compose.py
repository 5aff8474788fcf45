"""Per-policy plan composition: different algorithms/hyperparameters train concurrently from one stream."""

from __future__ import annotations

import numpy as np

from league.algos import make_algorithm
from league.algos.compose import build_multi_policy_plan
from league.envs import make_env
from league.flow import ParallelRollouts
from league.learn import Learner
from league.sampling import Sampler
from league.sampling.matchups import FixedMatchups


def _setup(algos_by_pid: dict[str, tuple[str, dict]], env_name: str = "connect_four"):
    env = make_env(env_name)
    spec = env.spec(env.possible_agents[0])
    agents = env.possible_agents
    algorithms = {pid: make_algorithm(name, spec, params) for pid, (name, params) in algos_by_pid.items()}
    pids = list(algorithms)
    sampler = Sampler(
        env_name,
        policies=algorithms,
        matchups=FixedMatchups({a: pids[i % len(pids)] for i, a in enumerate(agents)}),
        num_envs=4,
        fragment_length=32,
        seed=0,
    )
    learner = Learner(seed=0)
    for pid, algo in algorithms.items():
        learner.add_policy(pid, algo)
    sampler.set_weights(learner.get_weights())
    plan = build_multi_policy_plan(ParallelRollouts([sampler], mode="bulk_sync"), learner, [sampler], algorithms)
    return plan, learner, sampler


def test_two_ppo_policies_with_own_batch_sizes_train_concurrently():
    plan, learner, sampler = _setup(
        {
            "small": ("ppo", {"train_batch_size": 64, "minibatch_size": 32, "num_epochs": 1}),
            "big": ("ppo", {"train_batch_size": 256, "minibatch_size": 64, "num_epochs": 1, "lr": 1e-3}),
        }
    )
    text = str(plan)
    assert "PerPolicyFragments" in text and "SelectExperiences(['small'])" in text and "SelectExperiences(['big'])" in text
    trained = {"small": 0, "big": 0}
    for _ in range(10):
        result = next(plan)
        for pid in result.stats:
            trained[pid] += 1
    # Both policies train within the same plan; the small-batch one more often.
    assert trained["small"] > trained["big"] > 0
    # Each policy's weights reached the sampler.
    sw = sampler.get_weights()
    for pid, w in learner.get_weights().items():
        for k, v in w.items():
            np.testing.assert_array_equal(sw[pid][k], v)
    counters = plan.metrics.snapshot()["counters"]
    assert counters["num_env_steps_sampled"] > 0


def test_single_policy_plan_is_just_its_fragment():
    plan, _, _ = _setup({"main": ("ppo", {"train_batch_size": 64, "minibatch_size": 32, "num_epochs": 1})})
    assert "PerPolicyFragments" not in str(plan) and "TrainOneStep" in str(plan)
    assert "main" in next(plan).stats
