"""SAC: its losses against a hand computation, its refusals, its plan in a mixed continuous league, and learning."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from league.algos import make_algorithm
from league.algos.off_policy import TARGET_MODEL
from league.algos.sac import SAC
from league.batch import SampleBatch
from league.envs.base import AgentSpec
from league.learn.algorithm import PolicyState
from league.replay import DISCOUNTS, N_STEP_RETURNS
from test_continuous import MPE_CONTINUOUS, train_continuous

SPEC = AgentSpec(obs_shape=(3,), num_actions=2, has_action_mask=False, action_low=(-2.0, 0.0), action_high=(2.0, 1.0))


def _batch(n: int = 8, seed: int = 0) -> dict[str, torch.Tensor]:
    rng = np.random.default_rng(seed)
    return {
        "obs": torch.tensor(rng.normal(size=(n, 3)), dtype=torch.float32),
        "actions": torch.tensor(rng.uniform((-2, 0), (2, 1), size=(n, 2)), dtype=torch.float32),
        N_STEP_RETURNS: torch.tensor(rng.normal(size=n), dtype=torch.float32),
        DISCOUNTS: torch.tensor(rng.choice([0.0, 0.99], size=n), dtype=torch.float32),
        "next_obs": torch.tensor(rng.normal(size=(n, 3)), dtype=torch.float32),
    }


def _hand_policy(model: torch.nn.Module, obs: torch.Tensor, noise: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A tanh-squashed Gaussian written out: the action in [-1, 1] and log pi of the env action."""
    out = model.actor(obs)
    mean, log_std = out[:, :2], out[:, 2:]
    log_std = -5.0 + 0.5 * 7.0 * (torch.tanh(log_std) + 1)
    std = log_std.exp()
    u = mean + std * noise
    gauss = (-0.5 * noise**2 - log_std - 0.5 * math.log(2 * math.pi)).sum(-1)
    half = torch.tensor([2.0, 0.5])
    logp = gauss - torch.log(half * (1 - torch.tanh(u) ** 2)).sum(-1)
    return torch.tanh(u), logp


def _hand_losses(model: torch.nn.Module, target: torch.nn.Module, mb: dict[str, torch.Tensor], alpha: float) -> dict[str, torch.Tensor]:
    """SAC's three losses written out, drawing the same noise as :meth:`SAC.loss` after ``torch.manual_seed(0)``."""
    torch.manual_seed(0)
    noise_next, noise_now = torch.randn(len(mb["obs"]), 2), torch.randn(len(mb["obs"]), 2)
    with torch.no_grad():
        a_next, logp_next = _hand_policy(model, mb["next_obs"], noise_next)
        x_next = torch.cat([mb["next_obs"], a_next], -1)
        q_next = torch.min(target.q1(x_next), target.q2(x_next)).squeeze(-1)
        y = mb[N_STEP_RETURNS] + mb[DISCOUNTS] * (q_next - alpha * logp_next)
    unit = torch.stack([mb["actions"][:, 0] / 2, 2 * mb["actions"][:, 1] - 1], -1)  # bounds (-2, 2) and (0, 1)
    x = torch.cat([mb["obs"], unit], -1)
    q_loss = 0.5 * ((model.q1(x).squeeze(-1) - y) ** 2 + (model.q2(x).squeeze(-1) - y) ** 2).mean()
    a_now, logp_now = _hand_policy(model, mb["obs"], noise_now)
    x_now = torch.cat([mb["obs"], a_now], -1)
    pi_loss = (alpha * logp_now - torch.min(model.q1(x_now), model.q2(x_now)).squeeze(-1)).mean()
    alpha_loss = -(model.log_alpha * (logp_now.detach() + (-2.0))).mean()  # target entropy -D, D = 2
    return {"q_loss": q_loss, "policy_loss": pi_loss, "alpha_loss": alpha_loss}


def _setup(initial_alpha: float = 0.3) -> tuple[SAC, torch.nn.Module, torch.nn.Module, dict[str, torch.Tensor]]:
    algo = SAC(SPEC, {"hidden": [16, 16], "initial_alpha": initial_alpha, "gamma": 0.99})
    model = algo.make_model()
    target = algo.init_extra_state(model)[TARGET_MODEL]
    with torch.no_grad():  # a target that differs from the online critics
        for p in target.parameters():
            p.add_(0.1)
    return algo, model, target, _batch()


def test_losses_match_a_hand_computation():
    algo, model, target, mb = _setup()
    torch.manual_seed(0)
    _, stats = algo.loss(model, target, mb)
    hand = _hand_losses(model, target, mb, 0.3)
    for name, value in hand.items():
        assert stats[name] == pytest.approx(value.item(), rel=1e-4, abs=1e-5), name
    assert stats["alpha"] == pytest.approx(0.3)


def test_each_loss_moves_only_its_own_parameters():
    """The summed loss's gradient is, per parameter group, the gradient of that group's own loss:
    critics get the TD loss only (the actor loss leaves them alone), the actor its loss, the temperature its loss."""
    algo, model, target, mb = _setup()
    torch.manual_seed(0)
    loss, _ = algo.loss(model, target, mb)
    hand = _hand_losses(model, target, mb, 0.3)
    groups = {"q_loss": [*model.q1.parameters(), *model.q2.parameters()], "policy_loss": list(model.actor.parameters()),
              "alpha_loss": [model.log_alpha]}
    for name, params in groups.items():
        ours = torch.autograd.grad(loss, params, retain_graph=True)
        expected = torch.autograd.grad(hand[name], params, retain_graph=True)
        for g, e in zip(ours, expected):
            torch.testing.assert_close(g, e, rtol=1e-4, atol=1e-6)


def test_sac_learns_on_a_replayed_batch_and_the_target_follows_slowly():
    algo = SAC(SPEC, {"hidden": [16, 16], "tau": 0.5})
    model = algo.make_model()
    state = PolicyState(model, algo.make_optimizer(model), np.random.default_rng(0), algo.init_extra_state(model))
    batch = SampleBatch({k: v.numpy() for k, v in _batch(32).items()})
    before = state.extra[TARGET_MODEL].q1[1].weight.clone()
    stats = algo.learn(state, batch)
    assert all(isinstance(v, float) and np.isfinite(v) for v in stats.values())
    algo.update_target(state)
    after = state.extra[TARGET_MODEL].q1[1].weight
    torch.testing.assert_close(after, 0.5 * before + 0.5 * model.q1[1].weight)
    assert [g["lr"] for g in state.optimizer.param_groups] == [3e-4, 1e-3, 1e-3]


def test_sac_refuses_discrete_actions_and_bad_config():
    with pytest.raises(ValueError, match="Box action space"):
        make_algorithm("sac", AgentSpec((3,), 4, False), {})
    with pytest.raises(ValueError, match="sac.tau"):
        make_algorithm("sac", SPEC, {"tau": 0.0})
    with pytest.raises(ValueError, match="unknown key"):
        make_algorithm("sac", SPEC, {"epsilon_steps": 10})


SMALL_SAC = {"train_batch_size": 32, "learning_starts": 64, "training_intensity": 2.0, "buffer_size": 2000, "hidden": [32, 32]}


def test_sac_and_ppo_in_one_continuous_league(tmp_path):
    """PPO and SAC policies play mpe2 simple_spread (Box actions) in one run (seats drawn per episode): both train."""
    pytest.importorskip("mpe2")
    policies = {"ppo": {"algo": "ppo", "params": {"train_batch_size": 128, "minibatch_size": 64, "num_epochs": 1}},
                "sac": {"algo": "sac", "params": SMALL_SAC}}
    _, summary = train_continuous(tmp_path, policies=policies, league={"fixed_opponents": {}}, stop={"iterations": 6})
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert summary["iterations"] == 6
    assert any("sac/q_loss" in r for r in rows) and any("ppo/vf_loss" in r for r in rows)


def test_sac_self_play_league_takes_snapshots(tmp_path):
    """SAC under a coordinated recipe (pfsp: two seats) on a continuous multi-agent env: snapshots,
    evaluation against the random player (uniform in the Box), a checkpoint."""
    pytest.importorskip("mpe2")
    _, summary = train_continuous(
        tmp_path, env={"kwargs": {**MPE_CONTINUOUS["kwargs"], "N": 2}}, algo={"name": "sac", "params": SMALL_SAC},
        league={"recipe": "pfsp", "max_snapshots": 20}, eval={"interval": 2, "episodes": 4}, stop={"iterations": 6},
    )
    assert summary["iterations"] == 6 and summary["snapshots"]
    assert (tmp_path / "checkpoints" / "final").is_dir()


@pytest.mark.slow
def test_sac_improves_on_pendulum(tmp_path):
    """A short Pendulum run: the mean return of the last episodes beats the first ones' by a wide margin."""
    trainer, _ = train_continuous(
        tmp_path, env={"name": "gymnasium:Pendulum-v1", "kwargs": {}},
        algo={"name": "sac", "params": {"learning_starts": 500, "hidden": [64, 64]}},
        league={"fixed_opponents": {}}, sampler={"num_envs": 2}, iteration={"min_env_steps": 800},
        stop={"iterations": 0, "env_steps": 6000}, checkpoint={"interval": 0},
    )
    returns = [r["main/episode_return_mean"] for r in trainer.history if r.get("main/episode_return_mean") is not None]
    assert returns[-1] > returns[0] + 300, returns
