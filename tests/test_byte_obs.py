"""Image pixels kept as bytes from the env to the update (league.algos.byte_obs): every model,
sampler-side policy and learner reads ``uint8`` observations exactly as the float32 frames
``/ 255`` that ``env.kwargs.preprocess.scale`` used to make inside the env."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from league.algos import make_algorithm
from league.algos.byte_obs import model_input, policy_obs
from league.algos.models import build_model, update_normalizers
from league.algos.q_models import build_q_model
from league.batch import Columns as C
from league.batch import MultiAgentBatch, SampleBatch
from league.envs.base import AgentSpec
from league.envs import make_env
from league.envs.preprocess import build_preprocessor
from league.learn import Learner

FRAMES = AgentSpec(obs_shape=(36, 36, 2), num_actions=3, has_action_mask=False)


def _pixels(rows: int, shape: tuple[int, ...] = FRAMES.obs_shape, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, size=(rows, *shape), dtype=np.uint8)


def test_model_input_scales_bytes_and_passes_floats_through():
    pixels = torch.from_numpy(_pixels(2))
    scaled = model_input(pixels)
    assert scaled.dtype == torch.float32 and torch.equal(scaled, pixels.float() / 255)
    floats = torch.rand(2, 3)
    assert model_input(floats) is floats
    assert policy_obs(np.zeros(3, np.uint8)).dtype == np.uint8
    assert policy_obs(np.zeros(3, np.float64)).dtype == np.float32


SAC_SPEC = AgentSpec((8, 8, 2), 2, False, (-1.0, -1.0), (1.0, 1.0))


@pytest.mark.parametrize(
    "build, shape",
    [
        (lambda: build_model("nature_cnn", (36, 36, 2), 3), (36, 36, 2)),
        (lambda: build_model("conv", (8, 8, 2), 3), (8, 8, 2)),
        (lambda: build_model("mlp", (8, 8, 2), 3, normalize_obs=True), (8, 8, 2)),
        (lambda: build_q_model("auto", (36, 36, 2), 3), (36, 36, 2)),
        (lambda: make_algorithm("sac", SAC_SPEC, {"hidden": [16]}).make_model(), (8, 8, 2)),
    ],
    ids=["nature_cnn", "conv", "mlp+normalize_obs", "q_network", "sac"],
)
def test_every_model_reads_bytes_as_value_over_255(build, shape):
    torch.manual_seed(0)
    model = build()
    pixels = torch.from_numpy(_pixels(4, shape))
    floats = pixels.float() / 255
    if getattr(model, "obs_norm", None) is not None:  # the running statistics see the scaled values
        torch.manual_seed(0)
        from_floats = build()
        update_normalizers(model, pixels)
        update_normalizers(from_floats, floats)
        assert torch.allclose(model.obs_norm.mean, from_floats.obs_norm.mean) and torch.allclose(model.obs_norm.var, from_floats.obs_norm.var)
    out_bytes, out_floats = model(pixels), model(floats)
    pairs = zip(out_bytes, out_floats) if isinstance(out_bytes, tuple) else [(out_bytes, out_floats)]
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in pairs)
    if hasattr(model, "q"):  # SAC's critics
        unit = torch.zeros(4, 2)
        assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(model.q(pixels, unit), model.q(floats, unit)))


def test_sampler_policies_act_on_bytes_as_on_scaled_floats():
    pixels = _pixels(6)
    mask = np.ones((6, 3), np.int8)
    for name in ("ppo", "dqn"):
        policy = make_algorithm(name, FRAMES, {"model_kwargs": {"hidden": 32}}).make_policy(seed=0)
        np.testing.assert_allclose(policy.action_probabilities(pixels, mask), policy.action_probabilities(pixels / np.float32(255), mask), atol=1e-6)
    policy = make_algorithm("ppo", FRAMES, {"model_kwargs": {"hidden": 32}}).make_policy(seed=0)
    values = [policy.compute_actions(obs, mask, explore=False)[C.VF_PREDS] for obs in (pixels, pixels / np.float32(255))]
    np.testing.assert_allclose(values[0], values[1], atol=1e-6)


def _ppo_batch(obs: np.ndarray) -> SampleBatch:
    rows = len(obs)
    rng = np.random.default_rng(1)
    return SampleBatch({
        C.OBS: obs,
        C.ACTIONS: rng.integers(0, 3, rows).astype(np.int64),
        C.ACTION_MASK: np.ones((rows, 3), np.float32),
        C.ACTION_LOGP: np.full(rows, np.log(1 / 3), np.float32),
        C.VF_PREDS: rng.normal(size=rows).astype(np.float32),
        C.ADVANTAGES: rng.normal(size=rows).astype(np.float32),
        C.VALUE_TARGETS: rng.normal(size=rows).astype(np.float32),
    })


def test_a_ppo_update_on_bytes_is_the_update_on_scaled_floats():
    pixels = _pixels(64)
    weights = []
    for obs in (pixels, pixels.astype(np.float32) / 255):
        learner = Learner(seed=3)
        learner.add_policy("p", make_algorithm("ppo", FRAMES, {"minibatch_size": 16, "num_epochs": 2, "model_kwargs": {"hidden": 32}}))
        learner.learn_on_batch(MultiAgentBatch({"p": _ppo_batch(obs)}, 64))
        weights.append(learner.get_weights()["p"])
    assert all(np.allclose(weights[0][k], weights[1][k], atol=1e-5) for k in weights[0])


def test_replay_keeps_frames_as_bytes():
    from league.replay.buffer import PrioritizedReplayBuffer

    buffer = PrioritizedReplayBuffer(64, seed=0)
    buffer.add(SampleBatch({C.OBS: _pixels(8), C.ACTIONS: np.zeros(8, np.int64)}))
    assert buffer.sample(4, beta=0.4)[C.OBS].dtype == np.uint8  # a quarter of float32's replay memory


def test_only_uint8_boxes_asked_for_as_bytes_stay_bytes():
    from gymnasium import spaces

    image = spaces.Box(0, 255, (4, 4, 1), np.uint8)
    frame = np.full((4, 4, 1), 200, np.uint8)
    kept = build_preprocessor(image, spaces.Discrete(2), byte_images=True).transform(frame, None)[0]
    assert kept.dtype == np.uint8 and kept.max() == 200
    kept[0, 0, 0] = 0
    assert frame[0, 0, 0] == 200  # a copy: an env reusing its buffer cannot alias it
    assert build_preprocessor(image, spaces.Discrete(2)).transform(frame, None)[0].dtype == np.float32
    ram = spaces.Box(0.0, 1.0, (8,), np.float32)
    assert build_preprocessor(ram, spaces.Discrete(2), byte_images=True).transform(np.zeros(8), None)[0].dtype == np.float32


ALGOS_ON_FRAMES = {
    "ppo": {},
    "dqn": {"learning_starts": 32, "train_batch_size": 32, "buffer_size": 2000, "target_update_interval": 50},
    "impala": {"train_batch_size": 96, "minibatch_size": 48},
}


@pytest.mark.parametrize("algo", sorted(ALGOS_ON_FRAMES))
def test_byte_frames_train_every_kind_of_learner_end_to_end(tmp_path, algo):
    """Pistonball's frames as bytes through a whole (in-process) run: fragments, DQN's C++
    replay (its schema keeps the dtype) or a rollout learner, evaluation, checkpoint."""
    pytest.importorskip("supersuit")
    pytest.importorskip("pymunk")
    from league.cli.train import run_job
    from tests.run_helpers import short_run_values

    env = {"name": "league.games.pistonball", "groups": {"team": ["*"]},
           "kwargs": {"continuous": False, "n_pistons": 3, "max_cycles": 20, "observation_size": [32, 32], "grayscale": True,
                      "preprocess": {"frame_stack": 2}}}  # fmt: skip
    probe = make_env(env["name"], **env["kwargs"])
    assert probe.reset(seed=0).obs["piston_0"].dtype == np.uint8
    params = {"model_kwargs": {"channels": [8, 8, 8], "hidden": 32}, **ALGOS_ON_FRAMES[algo]}
    values = short_run_values(env, batch=96, eval={"episodes": 2}, algo={"name": algo, "params": params})
    if algo != "ppo":  # short_run_values' PPO keys
        values["algo"]["params"] = params
    summary = run_job(values, str(tmp_path))
    assert summary["iterations"] == 2 and summary["env_steps"] > 0
