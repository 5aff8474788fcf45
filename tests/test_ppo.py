"""PPO: GAE against hand computation, the loss on a fixed batch against numpy, masking."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from league.algos import PPO, make_algorithm
from league.algos.postprocessing import compute_gae, discount_cumsum
from league.batch import Columns as C
from league.batch import SampleBatch
from league.envs.base import AgentSpec
from algo_helpers import LinearActorCritic

SPEC = AgentSpec(obs_shape=(3,), num_actions=3, has_action_mask=True)


def test_discount_cumsum_matches_loop():
    x = np.array([1.0, 2.0, -1.0, 0.5], dtype=np.float32)
    expected = [1 + 0.9 * 2 + 0.81 * -1 + 0.729 * 0.5, 2 + 0.9 * -1 + 0.81 * 0.5, -1 + 0.9 * 0.5, 0.5]
    np.testing.assert_allclose(discount_cumsum(x, 0.9), expected, rtol=1e-6)


def test_gae_hand_computed_three_steps():
    r = np.array([0.0, 0.0, 1.0], dtype=np.float32)
    v = np.array([0.5, 0.6, 0.7], dtype=np.float32)
    g, lam, boot = 0.9, 0.8, 0.2
    d2 = 1.0 + g * boot - 0.7
    d1 = 0.0 + g * 0.7 - 0.6
    d0 = 0.0 + g * 0.6 - 0.5
    a2 = d2
    a1 = d1 + g * lam * a2
    a0 = d0 + g * lam * a1
    adv, targets = compute_gae(r, v, boot, g, lam)
    np.testing.assert_allclose(adv, [a0, a1, a2], rtol=1e-5)
    np.testing.assert_allclose(targets, adv + v, rtol=1e-6)


def test_gae_lambda_one_terminal_is_discounted_return_minus_value():
    r = np.array([1.0, 0.0, 2.0], dtype=np.float32)
    v = np.array([0.3, -0.2, 0.1], dtype=np.float32)
    adv, targets = compute_gae(r, v, 0.0, 0.95, 1.0)
    returns = np.array([1 + 0.95**2 * 2, 0.95 * 2, 2.0])
    np.testing.assert_allclose(targets, returns, rtol=1e-5)
    np.testing.assert_allclose(adv, returns - v, rtol=1e-5)


def test_postprocess_bootstraps_only_when_not_terminated():
    algo = make_algorithm("ppo", SPEC, {"gamma": 0.5, "lam": 1.0})
    traj = SampleBatch({C.REWARDS: np.zeros(1, np.float32), C.VF_PREDS: np.zeros(1, np.float32)})
    out = algo.postprocess_trajectory(traj.copy(), {C.VF_PREDS: np.array([4.0], np.float32)})
    assert out[C.VALUE_TARGETS][0] == pytest.approx(2.0)
    out = algo.postprocess_trajectory(traj.copy(), None)
    assert out[C.VALUE_TARGETS][0] == 0.0


def _np_loss(model: LinearActorCritic, mb: dict, cfg) -> float:
    w, u = model.w.detach().numpy().astype(np.float64), model.u.detach().numpy().astype(np.float64)
    obs = mb[C.OBS].numpy().astype(np.float64)
    logits = np.where(mb[C.ACTION_MASK].numpy() > 0, obs @ w, -1e9)
    logp_all = logits - np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1, keepdims=True)) - logits.max(1, keepdims=True)
    a = mb[C.ACTIONS].numpy()
    logp = logp_all[np.arange(len(a)), a]
    ratio = np.exp(logp - mb[C.ACTION_LOGP].numpy())
    adv = mb[C.ADVANTAGES].numpy().astype(np.float64)
    adv = (adv - adv.mean()) / (adv.std(ddof=1) + 1e-8)
    pg = -np.minimum(ratio * adv, np.clip(ratio, 1 - cfg.clip_param, 1 + cfg.clip_param) * adv).mean()
    values = obs @ u
    old_v, tgt = mb[C.VF_PREDS].numpy(), mb[C.VALUE_TARGETS].numpy()
    clipped = old_v + np.clip(values - old_v, -cfg.vf_clip_param, cfg.vf_clip_param)
    vf = 0.5 * np.maximum((values - tgt) ** 2, (clipped - tgt) ** 2).mean()
    p = np.exp(logp_all)
    ent = -(p * logp_all).sum(1).mean()
    return pg + cfg.vf_coef * vf - cfg.entropy_coef * ent


def test_ppo_loss_on_fixed_batch_matches_numpy():
    algo = make_algorithm("ppo", SPEC, {"clip_param": 0.1, "vf_clip_param": 0.3, "entropy_coef": 0.05})
    model = LinearActorCritic()
    mb = {
        C.OBS: torch.tensor([[1.0, 0.0, 2.0], [0.5, -1.0, 0.0], [0.0, 1.0, 1.0], [2.0, 2.0, -1.0]]),
        C.ACTIONS: torch.tensor([0, 1, 2, 1]),
        C.ACTION_MASK: torch.tensor([[1, 1, 1], [1, 1, 0], [0, 1, 1], [1, 1, 1]], dtype=torch.int8),
        C.ACTION_LOGP: torch.tensor([-1.0, -0.5, -0.9, -2.0]),
        C.VF_PREDS: torch.tensor([2.0, 0.0, 0.1, 1.0]),
        C.ADVANTAGES: torch.tensor([1.0, -0.5, 0.3, 2.0]),
        C.VALUE_TARGETS: torch.tensor([1.5, 0.2, 0.0, -1.0]),
    }
    loss, stats = algo.loss(model, mb)
    assert loss.item() == pytest.approx(_np_loss(model, mb, algo.config), rel=1e-5)
    assert 0.0 <= stats["clip_frac"] <= 1.0
    assert "aux_loss" not in stats  # no aux_loss: no auxiliary statistic
    loss.backward()
    assert model.w.grad is not None and torch.isfinite(model.w.grad).all()


def test_masked_actions_get_zero_probability_and_no_nan():
    algo = make_algorithm("ppo", AgentSpec((6, 7, 2), 7, True), {"model": "conv"})
    policy = algo.make_policy(seed=0)
    obs = np.random.default_rng(0).random((256, 6, 7, 2), dtype=np.float32)
    mask = np.zeros((256, 7), np.int8)
    mask[np.arange(256), np.arange(256) % 7] = 1  # exactly one legal action per row
    mask[::3, 2] = 1
    out = policy.compute_actions(obs, mask)
    assert mask[np.arange(256), out[C.ACTIONS]].all()
    assert np.isfinite(out[C.ACTION_LOGP]).all() and np.isfinite(out[C.VF_PREDS]).all()
    greedy = policy.compute_actions(obs, mask, explore=False)
    assert mask[np.arange(256), greedy[C.ACTIONS]].all()


def test_learn_reduces_loss_and_raises_policy_probability_of_advantaged_action():
    algo: PPO = make_algorithm("ppo", SPEC, {"num_epochs": 20, "minibatch_size": 64, "lr": 1e-2, "entropy_coef": 0.0})
    model = algo.make_model()
    opt = algo.make_optimizer(model)
    rng = np.random.default_rng(0)
    n = 256
    obs = rng.normal(size=(n, 3)).astype(np.float32)
    actions = rng.integers(0, 3, n)
    batch = SampleBatch(
        {
            C.OBS: obs,
            C.ACTIONS: actions,
            C.ACTION_MASK: np.ones((n, 3), np.int8),
            C.ACTION_LOGP: np.full(n, np.log(1 / 3), np.float32),
            C.VF_PREDS: np.zeros(n, np.float32),
            C.ADVANTAGES: np.where(actions == 2, 1.0, -1.0).astype(np.float32),
            C.VALUE_TARGETS: np.ones(n, np.float32),
        }
    )
    from league.learn.algorithm import PolicyState

    stats = algo.learn(PolicyState(model, opt, rng), batch)
    assert stats["num_sgd_updates"] == 20 * 4
    with torch.no_grad():
        logits, values = model(torch.from_numpy(obs))
    probs = torch.softmax(logits, -1)[:, 2]
    assert probs.mean().item() > 0.45  # started near 1/3, clipped steps push it up
    assert abs(values.mean().item() - 1.0) < 0.5


def test_unknown_algorithm_and_bad_params():
    with pytest.raises(ValueError, match="unknown algorithm 'nope'"):
        make_algorithm("nope", SPEC)
    with pytest.raises(ValueError, match="unknown key.*'lrr'"):
        make_algorithm("ppo", SPEC, {"lrr": 1.0})
    with pytest.raises(ValueError, match="ppo.minibatch_size must be positive"):
        make_algorithm("ppo", SPEC, {"minibatch_size": 0})
    with pytest.raises(ValueError, match="unknown model kind 'resnet'"):
        make_algorithm("ppo", SPEC, {"model": "resnet"}).make_model()


def test_lr_anneals_linearly_over_updates():
    from league.learn.algorithm import PolicyState

    algo = make_algorithm("ppo", SPEC, {"lr": 1e-3, "lr_final": 0.0, "lr_anneal_updates": 4, "num_epochs": 1, "minibatch_size": 8})
    model = algo.make_model()
    state = PolicyState(model, algo.make_optimizer(model), np.random.default_rng(0))
    n = 8
    batch = SampleBatch(
        {
            C.OBS: np.zeros((n, 3), np.float32), C.ACTIONS: np.zeros(n, np.int64), C.ACTION_MASK: np.ones((n, 3), np.int8),
            C.ACTION_LOGP: np.full(n, -1.0, np.float32), C.VF_PREDS: np.zeros(n, np.float32),
            C.ADVANTAGES: np.ones(n, np.float32), C.VALUE_TARGETS: np.zeros(n, np.float32),
        }
    )
    seen = []
    for _ in range(6):
        algo.learn(state, batch)
        seen.append(state.optimizer.param_groups[0]["lr"])
        state.num_updates += 1  # the learner counts updates
    np.testing.assert_allclose(seen, [1e-3, 7.5e-4, 5e-4, 2.5e-4, 0.0, 0.0], atol=1e-12)
