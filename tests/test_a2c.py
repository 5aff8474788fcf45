"""A2C: the loss on a fixed batch against numpy, one step per batch, gradients hooks, both plans."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from league.algos.a2c import A2C
from league.learn.algorithm import PolicyState
from league.batch import Columns as C
from league.batch import MultiAgentBatch, SampleBatch
from league.envs import make_env
from league.envs.base import AgentSpec
from league.flow import BroadcastWeights, ParallelRollouts
from league.learn import Learner
from league.sampling import FixedMatchups, Sampler
from algo_helpers import LinearActorCritic

SPEC = AgentSpec(obs_shape=(3,), num_actions=3, has_action_mask=True)


MB = {
    C.OBS: np.array([[1.0, 0.0, 2.0], [0.5, -1.0, 0.0], [0.0, 1.0, 1.0], [2.0, 2.0, -1.0]], np.float32),
    C.ACTIONS: np.array([0, 1, 2, 1]),
    C.ACTION_MASK: np.array([[1, 1, 1], [1, 1, 0], [0, 1, 1], [1, 1, 1]], np.int8),
    C.ADVANTAGES: np.array([1.0, -0.5, 0.3, 2.0], np.float32),
    C.VALUE_TARGETS: np.array([1.5, 0.2, 0.0, -1.0], np.float32),
}


def _np_loss(model: LinearActorCritic, cfg) -> float:
    obs = MB[C.OBS].astype(np.float64)
    logits = np.where(MB[C.ACTION_MASK] > 0, obs @ model.w.detach().numpy(), -1e9)
    m = logits.max(1, keepdims=True)
    logp_all = logits - m - np.log(np.exp(logits - m).sum(1, keepdims=True))
    logp = logp_all[np.arange(4), MB[C.ACTIONS]]
    adv = MB[C.ADVANTAGES].astype(np.float64)
    if cfg.standardize_advantages:
        adv = (adv - adv.mean()) / (adv.std(ddof=1) + 1e-8)
    pg = -(logp * adv).mean()
    vf = 0.5 * ((obs @ model.u.detach().numpy() - MB[C.VALUE_TARGETS]) ** 2).mean()
    ent = -(np.exp(logp_all) * logp_all).sum(1).mean()
    return pg + cfg.vf_coef * vf - cfg.entropy_coef * ent


@pytest.mark.parametrize("standardize", [False, True])
def test_loss_on_fixed_batch_matches_numpy(standardize):
    algo = A2C(SPEC, {"entropy_coef": 0.05, "vf_coef": 0.25, "standardize_advantages": standardize})
    model = LinearActorCritic()
    loss, stats = algo.loss(model, {k: torch.from_numpy(v) for k, v in MB.items()})
    assert loss.item() == pytest.approx(_np_loss(model, algo.config), rel=1e-5)
    assert stats["total_loss"] == pytest.approx(loss.item())


def test_postprocess_adds_gae_columns_and_bootstraps_only_when_not_terminated():
    algo = A2C(SPEC, {"gamma": 0.5, "lam": 1.0})
    traj = SampleBatch({C.REWARDS: np.array([1.0, 0.0], np.float32), C.VF_PREDS: np.zeros(2, np.float32)})
    out = algo.postprocess_trajectory(traj.copy(), {C.VF_PREDS: np.array([4.0], np.float32)})
    np.testing.assert_allclose(out[C.VALUE_TARGETS], [1.0 + 0.25 * 4.0, 0.5 * 4.0])
    np.testing.assert_allclose(algo.postprocess_trajectory(traj.copy(), None)[C.VALUE_TARGETS], [1.0, 0.0])


def test_learn_is_one_clipped_gradient_step():
    algo = A2C(SPEC, {"max_grad_norm": 0.1})
    model = LinearActorCritic()
    w0 = [p.detach().clone() for p in model.parameters()]
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    stats = algo.learn(PolicyState(model, opt, np.random.default_rng(0)), SampleBatch(MB))
    step = torch.cat([(w0[i] - p.detach()).flatten() for i, p in enumerate(model.parameters())])
    assert stats["grad_norm"] > 0.1  # the raw gradient was clipped...
    assert step.norm().item() == pytest.approx(0.1, rel=1e-4)  # ...to a step of norm 0.1 with lr=1


def _learner(algo: A2C, seed: int = 0) -> Learner:
    learner = Learner(seed=seed)
    learner.add_policy("main", algo)
    return learner


def test_compute_then_apply_gradients_equals_learn():
    algo = A2C(SPEC, {"model": "mlp", "lr": 1e-2})
    batch = MultiAgentBatch({"main": SampleBatch(MB)}, 4)
    direct, split = _learner(algo), _learner(algo)
    direct.learn_on_batch(batch)
    grads = split.compute_gradients(batch)
    assert set(grads) == {"main"} and all(isinstance(g, np.ndarray) for g in grads["main"])
    untouched = split.get_weights()["main"]
    split.apply_gradients(grads)
    after_direct, after_split = direct.get_weights()["main"], split.get_weights()["main"]
    for k in after_direct:
        np.testing.assert_allclose(after_split[k], after_direct[k], rtol=1e-6, atol=1e-7)
    assert any(not np.array_equal(untouched[k], after_split[k]) for k in untouched)


def test_config_validation():
    with pytest.raises(ValueError, match=r"a2c.plan must be one of"):
        A2C(SPEC, {"plan": "hogwild"})
    with pytest.raises(ValueError, match="a2c.lr must be positive"):
        A2C(SPEC, {"lr": 0})
    with pytest.raises(ValueError, match=r"unknown key.*'num_epochs'"):
        A2C(SPEC, {"num_epochs": 2})


def _cartpole_setup(config: dict, seed: int = 0):
    algo = A2C(make_env("cartpole").spec("agent_0"), {"model": "mlp", **config})
    sampler = Sampler(
        "cartpole", policies={"main": algo}, matchups=FixedMatchups({"agent_0": "main"}), num_envs=8, fragment_length=32, seed=seed
    )
    learner = _learner(algo, seed)
    sampler.set_weights(learner.get_weights())
    plan = algo.plan_fragment(ParallelRollouts([sampler], mode="bulk_sync"), learner, ["main"]).for_each(
        BroadcastWeights(learner, [sampler], ["main"])
    )
    return sampler, learner, plan


@pytest.mark.parametrize("plan_kind, operators", [("train_one_step", ["TrainOneStep"]), ("a3c", ["ComputeGradients", "ApplyGradients"])])
def test_plans_train_once_per_batch(plan_kind, operators):
    _, learner, plan = _cartpole_setup({"plan": plan_kind, "train_batch_size": 200})
    drawn = str(plan)
    assert all(op in drawn for op in operators)
    before = learner.get_weights()["main"]
    before = {k: v.copy() for k, v in before.items()}
    for _ in range(3):
        next(plan)
    counters = plan.metrics.counters
    assert counters["num_agent_steps_trained"] >= 3 * 200
    assert counters["num_weight_broadcasts"] == 3
    assert any(not np.array_equal(before[k], v) for k, v in learner.get_weights()["main"].items())


def _mean_return(sampler: Sampler) -> float:
    eps = sampler.pop_episode_stats()
    return float(np.mean([e["returns"]["agent_0"] for e in eps])) if eps else float("nan")


@pytest.mark.slow
def test_a2c_learns_cartpole_in_process():
    torch.manual_seed(0)
    sampler, _, plan = _cartpole_setup({"lr": 3e-3, "train_batch_size": 256, "entropy_coef": 0.0})
    next(plan)
    before = _mean_return(sampler)
    for _ in range(190):
        next(plan)
    after = []
    for _ in range(10):
        next(plan)
        after.append(_mean_return(sampler))
    after_mean = float(np.nanmean(after))
    assert after_mean > max(2.5 * before, 60.0), (before, after)
