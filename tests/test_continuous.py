"""Box action spaces (diagonal Gaussian, clipped or tanh-squashed) and MultiDiscrete ones (independent
masked categoricals), value and observation normalisation, separate policy/value networks, and
continuous-action runs of PPO, A2C and IMPALA/APPO."""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces
from torch import distributions as D

from league.algos import make_algorithm
from league.algos.actor_critic import VALUE_SCALE
from league.algos.distributions import ACTIONS_RAW, Categorical, DiagGaussian, MultiCategorical, action_dist
from league.algos.models import MLPModel, PopArtValue, RunningMeanStd, update_normalizers
from league.batch import Columns as C
from league.envs import make_env
from league.envs.base import AgentSpec
from league.envs.gym_env import GymnasiumEnv
from league.envs.registry import register_env
from league.trainer import Trainer
from run_helpers import tiny_run_config

LOW, HIGH = (-2.0, 0.0, -1.0), (2.0, 1.0, 3.0)
BOX = AgentSpec(obs_shape=(4,), num_actions=3, has_action_mask=False, action_low=LOW, action_high=HIGH)


def _inputs(batch: int = 7, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    inputs = torch.cat([torch.randn(batch, 3, generator=gen) * 2, torch.randn(batch, 3, generator=gen) * 0.5], dim=-1)
    raw = torch.randn(batch, 3, generator=gen) * 3
    return inputs, raw


def test_clip_log_prob_and_entropy_are_the_gaussians():
    inputs, raw = _inputs()
    mean, log_std = inputs.chunk(2, -1)
    ref = D.Independent(D.Normal(mean, log_std.exp()), 1)
    dist = DiagGaussian(LOW, HIGH, "clip")
    torch.testing.assert_close(dist.log_prob(inputs, raw), ref.log_prob(raw))
    torch.testing.assert_close(dist.entropy(inputs), ref.entropy())
    logp, ent = dist.logp_entropy(inputs, {ACTIONS_RAW: raw})
    torch.testing.assert_close(logp, ref.log_prob(raw))


def test_tanh_log_prob_is_the_density_of_the_squashed_action():
    inputs, raw = _inputs(seed=1)
    raw = raw.clamp(-4, 4)  # torch's TanhTransform inverts the action: keep atanh well conditioned
    mean, log_std = inputs.chunk(2, -1)
    low, high = torch.tensor(LOW), torch.tensor(HIGH)
    ref = D.Independent(D.TransformedDistribution(
        D.Normal(mean, log_std.exp()), [D.TanhTransform(), D.AffineTransform((low + high) / 2, (high - low) / 2)]), 1)
    dist = DiagGaussian(LOW, HIGH, "tanh")
    action = dist.to_env(raw)
    torch.testing.assert_close(dist.log_prob(inputs, raw), ref.log_prob(action), rtol=1e-4, atol=1e-3)
    torch.testing.assert_close(dist.entropy(inputs), D.Independent(D.Normal(mean, log_std.exp()), 1).entropy())


@pytest.mark.parametrize("squash", ["clip", "tanh"])
def test_sampled_actions_stay_inside_the_bounds(squash):
    dist = DiagGaussian(LOW, HIGH, squash)
    inputs = torch.cat([torch.randn(500, 3) * 20, torch.full((500, 3), 1.5)], dim=-1)  # far outside, wide
    gen = torch.Generator().manual_seed(0)
    for explore in (True, False):
        out = dist.sample(inputs, None, gen, explore)
        a = out["actions"]
        assert (a >= torch.tensor(LOW)).all() and (a <= torch.tensor(HIGH)).all()
        assert torch.isfinite(out["action_logp"]).all()
        torch.testing.assert_close(out["action_logp"], dist.log_prob(inputs, out[ACTIONS_RAW]))


def test_infinite_bounds_need_clip_and_then_pass_through():
    with pytest.raises(ValueError, match="finite action bounds"):
        DiagGaussian((-math.inf,), (math.inf,), "tanh")
    with pytest.raises(ValueError, match="squash must be one of"):
        DiagGaussian((-1.0,), (1.0,), "sigmoid")
    raw = torch.tensor([[-50.0], [50.0]])
    assert torch.equal(DiagGaussian((-math.inf,), (math.inf,), "clip").to_env(raw), raw)
    with pytest.raises(ValueError, match="squash"):
        make_algorithm("ppo", BOX, {"squash": "sigmoid"})


def test_action_dist_follows_the_spec():
    assert isinstance(action_dist(AgentSpec((4,), 3, False)), Categorical)
    assert isinstance(action_dist(BOX, "tanh"), DiagGaussian)


def test_running_mean_std_matches_numpy_over_batches():
    rms = RunningMeanStd((2,))
    rng = np.random.default_rng(0)
    chunks = [rng.normal(3, 5, size=(n, 2)) for n in (10, 1, 50, 7)]
    for chunk in chunks:
        rms.update(torch.tensor(chunk, dtype=torch.float32))
    both = np.concatenate(chunks)
    np.testing.assert_allclose(rms.mean.numpy(), both.mean(0), rtol=1e-3)
    np.testing.assert_allclose(rms.var.numpy(), both.var(0), rtol=1e-3)


def test_running_statistics_are_summed_over_data_parallel_replicas():
    """In a (one-replica) process group the statistics go through all_reduce and come out the same."""
    import torch.distributed as dist

    if dist.is_initialized():
        pytest.skip("a process group is already initialised in this process")
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
    try:
        rms = RunningMeanStd((3,))
        x = torch.randn(50, 3) * 4 + 1
        rms.update(x)
    finally:
        dist.destroy_process_group()
    plain = RunningMeanStd((3,))
    plain.update(x)
    torch.testing.assert_close(rms.mean, plain.mean)
    torch.testing.assert_close(rms.var, plain.var)


def test_popart_update_preserves_the_value_output_and_round_trips():
    model = MLPModel((4,), 2, hidden=(8,), normalize_values=True)
    obs = torch.randn(16, 4)
    before = model(obs)[1].detach().clone()
    update_normalizers(model, obs, torch.randn(64) * 100 + 500)  # returns of a large scale
    torch.testing.assert_close(model(obs)[1], before, rtol=1e-4, atol=1e-3)
    assert model.value_scale() == pytest.approx(100, rel=0.3)
    norm = PopArtValue()
    norm.update(torch.tensor([10.0, 20.0, 30.0]))
    x = torch.tensor([1.0, -2.0])
    torch.testing.assert_close((norm.denormalize(x) - norm.mean) / norm.std, x)


def test_observation_normalisation_travels_with_the_weights():
    algo = make_algorithm("ppo", BOX, {"normalize_obs": True})
    model = algo.make_model()
    t = {C.OBS: torch.randn(32, 4) * 10 + 3}
    algo.prepare(model, t)
    assert VALUE_SCALE in t and torch.all(t[VALUE_SCALE] == 1.0)
    policy = algo.make_policy(seed=0)
    policy.set_weights({k: v.numpy() for k, v in model.state_dict().items()})
    assert np.allclose(policy.model.obs_norm.mean.numpy(), model.obs_norm.mean.numpy())
    assert not np.allclose(policy.model.obs_norm.mean.numpy(), 0.0)


def test_separate_networks_keep_the_value_loss_off_the_policy_trunk():
    for separate in (False, True):
        model = MLPModel((4,), 2, hidden=(8,), separate_networks=separate)
        _, value = model(torch.randn(5, 4))
        value.pow(2).mean().backward()
        touched = model.trunk[1].weight.grad is not None and model.trunk[1].weight.grad.abs().sum() > 0
        assert touched != separate


def test_gaussian_policies_have_no_action_probabilities():
    policy = make_algorithm("ppo", BOX, {}).make_policy(seed=0)
    out = policy.compute_actions(np.zeros((2, 4), np.float32), np.ones((2, 3), np.int8))
    assert out["actions"].shape == (2, 3) and out[ACTIONS_RAW].shape == (2, 3) and out["vf_preds"].shape == (2,)
    with pytest.raises(NotImplementedError, match="Box or MultiDiscrete"):
        policy.action_probabilities(np.zeros((2, 4), np.float32), np.ones((2, 3), np.int8))


def test_box_env_adapter_takes_float_actions_and_reports_bounds():
    env = make_env("gymnasium:Pendulum-v1")
    spec = env.spec("agent_0")
    assert spec.continuous and spec.num_actions == 1 and spec.action_low == (-2.0,) and spec.action_high == (2.0,)
    ts = env.reset(seed=0)
    assert ts.masks["agent_0"].tolist() == [1]
    ts = env.step({"agent_0": np.array([0.5], dtype=np.float32)})
    assert "agent_0" in ts.rewards
    env.close()


def test_stacked_updates_refuse_what_they_cannot_keep():
    assert make_algorithm("ppo", BOX, {}).stack_key() is None
    discrete = AgentSpec((4,), 3, False)
    assert make_algorithm("ppo", discrete, {}).stack_key() is not None
    assert make_algorithm("ppo", discrete, {"normalize_values": True}).stack_key() is None


#: mpe2 simple_spread with Box actions, episodes of 25 steps.
MPE_CONTINUOUS = {"name": "mpe2.simple_spread_v3", "kwargs": {"continuous_actions": True, "max_cycles": 25}}


def train_continuous(run_dir: Any, **overrides: Any) -> tuple[Trainer, dict[str, Any]]:
    """A short in-process run (tests/run_helpers.py's tiny run on the continuous env, 5 iterations of
    64+ env steps, snapshots every 150 agent steps, no evaluation); ``overrides`` merge per section."""
    sections: dict[str, Any] = {
        "env": MPE_CONTINUOUS,
        "league": {"recipe": "selfplay", "snapshot_steps": 150, "max_snapshots": 2, "fixed_opponents": {}},
        "sampler": {"num_envs": 4, "mode": "auto"},
        "iteration": {"min_env_steps": 64},
        "eval": {"interval": 0},
        "stop": {"iterations": 5},
        "checkpoint": {"interval": 3, "keep_last": 2},
    }
    for key, value in overrides.items():
        sections[key] = {**sections[key], **value} if isinstance(value, dict) and key in sections else value
    trainer = Trainer(tiny_run_config(**sections), run_dir)
    try:
        summary = trainer.train()
    finally:
        trainer.close()
    return trainer, summary


ON_POLICY = {
    "ppo": {"train_batch_size": 128, "minibatch_size": 64, "num_epochs": 1, "normalize_values": True, "normalize_obs": True},
    "a2c": {"train_batch_size": 128, "separate_networks": True, "squash": "tanh"},
    "impala": {"train_batch_size": 128, "normalize_values": True},
    "appo": {"train_batch_size": 128, "minibatch_size": 64, "squash": "tanh"},
}  # fmt: skip


@pytest.mark.parametrize("algo", sorted(ON_POLICY))
def test_actor_critic_algorithms_train_on_a_continuous_multi_agent_env(algo, tmp_path):
    """mpe2 simple_spread with Box actions: three agents, parameter sharing, snapshots taken."""
    pytest.importorskip("mpe2")
    trainer, summary = train_continuous(tmp_path, algo={"name": algo, "params": ON_POLICY[algo]})
    assert summary["iterations"] == 5 and summary["snapshots"]
    assert any(k.startswith("main/") and k.endswith("entropy") for k in trainer.history[-1])


@pytest.mark.parametrize("algo", ["ppo", "sac"])
def test_continuous_runs_resume_with_their_running_statistics(algo, tmp_path):
    """A continuous run's checkpoint restores the model with its normalisers (PPO) or twin critics and
    temperature (SAC), and the resumed run goes on from the saved iteration."""
    pytest.importorskip("mpe2")
    params = ({"train_batch_size": 128, "minibatch_size": 64, "num_epochs": 1, "normalize_obs": True, "normalize_values": True}
              if algo == "ppo" else {"train_batch_size": 32, "learning_starts": 64, "training_intensity": 2.0,
                                     "buffer_size": 2000, "hidden": [32, 32]})
    first, summary = train_continuous(tmp_path / "run", algo={"name": algo, "params": params})
    saved = first.learner.get_weights(["main"])["main"]
    if algo == "ppo":
        assert not np.allclose(saved["obs_norm.mean"], 0.0) and saved["value_norm.count"] > 1
    resumed, again = train_continuous(tmp_path / "resumed", algo={"name": algo, "params": params}, resume=str(tmp_path / "run"),
                                      stop={"iterations": 6})
    assert summary["iterations"] == 5 and again["start_iteration"] == 5 and again["iterations"] == 6
    if algo == "ppo":  # the statistics went on counting from the checkpoint's, not from zero
        assert resumed.learner.get_weights(["main"])["main"]["value_norm.count"] > saved["value_norm.count"]


class ReachTarget(gym.Env):
    """One-step episodes: observe a target in [-1, 1]^2, act in [-2, 2]^2, reward ``-|action - target|^2``."""

    observation_space = spaces.Box(-1, 1, (2,), np.float32)
    action_space = spaces.Box(-2, 2, (2,), np.float32)

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.target = self.np_random.uniform(-1, 1, 2).astype(np.float32)
        return self.target.copy(), {}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict]:
        return self.target.copy(), -float(np.sum((np.asarray(action) - self.target) ** 2)), True, False, {}


@pytest.mark.parametrize("squash", ["clip", "tanh"])
def test_ppo_moves_its_gaussian_onto_the_target(squash, tmp_path):
    """PPO on Box actions learns what to do: the greedy action lands near each observed target."""
    register_env("reach_target", lambda **kw: GymnasiumEnv(ReachTarget(), name="reach_target", **kw), overwrite=True)
    params = {"train_batch_size": 1024, "minibatch_size": 256, "num_epochs": 10, "lr": 3e-3, "squash": squash,
              "normalize_values": True, "model_kwargs": {"hidden": [32]}}
    trainer, _ = train_continuous(
        tmp_path, env={"name": "reach_target", "kwargs": {}}, algo={"name": "ppo", "params": params},
        league={"fixed_opponents": {}}, sampler={"num_envs": 16}, iteration={"min_env_steps": 1024},
        stop={"iterations": 0, "env_steps": 12_000}, checkpoint={"interval": 0},
    )
    policy = make_algorithm("ppo", make_env("reach_target").spec("agent_0"), params).make_policy(seed=0)
    policy.set_weights(trainer.learner.get_weights(["main"])["main"])
    targets = np.random.default_rng(0).uniform(-1, 1, (64, 2)).astype(np.float32)
    greedy = policy.compute_actions(targets, np.ones((64, 2), np.int8), explore=False)["actions"]
    assert np.abs(greedy - targets).mean() < 0.25, np.abs(greedy - targets).mean()


def test_multi_categorical_matches_independent_torch_categoricals():
    nvec = (3, 2, 4)
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(6, 9, generator=gen) * 2
    mask = torch.ones(6, 9)
    mask[0, 0] = mask[1, 3] = mask[2, 5] = mask[2, 6] = 0  # some illegal choices, each component keeps one
    dist = MultiCategorical(nvec)
    out = dist.sample(logits, mask, gen, explore=True)
    actions = out["actions"]
    assert actions.shape == (6, 3) and actions.dtype == torch.int64
    ref_logp, ref_ent = torch.zeros(6), torch.zeros(6)
    for k, (x, m) in enumerate(zip(logits.split(nvec, -1), mask.split(nvec, -1))):
        ref = D.Categorical(logits=x.masked_fill(m == 0, -1e9))
        assert (m.gather(1, actions[:, k:k + 1]) == 1).all()  # never an illegal choice
        ref_logp += ref.log_prob(actions[:, k])
        ref_ent += ref.entropy()
    logp, ent = dist.logp_entropy(logits, {"actions": actions, "action_mask": mask})
    torch.testing.assert_close(logp, ref_logp)
    torch.testing.assert_close(out["action_logp"], ref_logp)
    torch.testing.assert_close(ent, ref_ent, rtol=1e-4, atol=1e-5)


class MatchDigits(gym.Env):
    """One-step episodes: observe two digits (one-hot), answer with a MultiDiscrete([3, 4]) action; +1 per match."""

    observation_space = spaces.MultiBinary(7)
    action_space = spaces.MultiDiscrete([3, 4], start=[1, 0])

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.digits = (int(self.np_random.integers(3)), int(self.np_random.integers(4)))
        obs = np.zeros(7, np.int8)
        obs[self.digits[0]] = obs[3 + self.digits[1]] = 1
        return obs, {}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict]:
        assert action.shape == (2,) and action[0] >= 1  # the space's start reaches the env
        reward = float(action[0] - 1 == self.digits[0]) + float(action[1] == self.digits[1])
        return np.zeros(7, np.int8), reward, True, False, {}


def test_ppo_learns_a_multi_discrete_action_space(tmp_path):
    """PPO on MultiDiscrete actions, evaluated against a random player that draws one choice per component."""
    register_env("match_digits", lambda **kw: GymnasiumEnv(MatchDigits(), name="match_digits", **kw), overwrite=True)
    spec = make_env("match_digits").spec("agent_0")
    assert spec.action_nvec == (3, 4) and spec.num_actions == 7 and not spec.continuous
    with pytest.raises(ValueError, match="dqn needs a Discrete action space"):
        make_algorithm("dqn", spec, {})
    params = {"train_batch_size": 512, "minibatch_size": 128, "num_epochs": 4, "lr": 3e-3, "model_kwargs": {"hidden": [32]}}
    trainer, _ = train_continuous(
        tmp_path, env={"name": "match_digits", "kwargs": {}}, algo={"name": "ppo", "params": params},
        league={"fixed_opponents": {}}, sampler={"num_envs": 16}, iteration={"min_env_steps": 512},
        eval={"interval": 2, "episodes": 4}, stop={"iterations": 0, "env_steps": 8_000}, checkpoint={"interval": 0},
    )
    returns = [r["main/episode_return_mean"] for r in trainer.history if r.get("main/episode_return_mean") is not None]
    assert returns[-1] > 1.8 > returns[0], returns
