"""Models that read board observations with their threat planes (model_kwargs.input_features=
connect_four_threats | tictactoe_threats): the planes reach the network, the mirror and d4 stay
exact, checkpoints round-trip, and settings that do not fit are refused by name."""

from __future__ import annotations

import pytest
import torch

from league.algos import make_algorithm
from league.algos.models import ConvModel, InputFeaturesModel, MLPModel, build_model
from league.algos.symmetry import SymmetrizedModel
from league.envs.base import AgentSpec
from league.games.k_in_a_row import THREAT_PLANES, ThreatPlanes
from league.population.yardstick import random_play_positions

C4 = AgentSpec((6, 7, 2), 7, True)


def test_the_network_reads_the_planes_and_the_mirror_stays_exact() -> None:
    torch.manual_seed(0)
    model = build_model("conv", (6, 7, 2), 7, symmetry="flip_lr", input_features="connect_four_threats")
    assert isinstance(model, InputFeaturesModel) and isinstance(model.base, SymmetrizedModel)  # planes read once per row
    assert isinstance(model.features, ThreatPlanes) and model.features.rules.name == "connect_four"
    assert isinstance(model.base.base, ConvModel) and model.base.base.convs[0].in_channels == 2 + len(THREAT_PLANES)
    obs, _ = random_play_positions("connect_four", 3, seed=1)
    obs = torch.from_numpy(obs)
    logits, value = model(obs)
    m_logits, m_value = model(obs.flip(2))  # every board mirrored left-right
    torch.testing.assert_close(m_logits.flip(1), logits, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(m_value, value, rtol=1e-5, atol=1e-5)
    # The planes are inputs: zeroing their weights changes the outputs.
    with torch.no_grad():
        model.base.base.convs[0].weight[:, 2:] = 0
    assert not torch.allclose(model(obs)[0], logits, atol=1e-4)


def test_d4_stays_exact_on_tictactoe_and_mlps_take_the_planes_too() -> None:
    from test_symmetry import _assert_d4_invariant

    torch.manual_seed(0)
    model = build_model("mlp", (3, 3, 2), 9, symmetry="d4", input_features="tictactoe_threats")
    assert isinstance(model.base.base, MLPModel)
    _assert_d4_invariant(model)


def test_ppo_reads_the_planes_once_per_update_with_the_same_result(monkeypatch) -> None:
    """The model answers the same on boards and on their input_features; PPO hands it the
    features, read once for all epochs, and its update is the same as reading them per minibatch."""
    import numpy as np

    import league.algos.models as models
    import league.algos.ppo as ppo
    import league.games.k_in_a_row as k_in_a_row
    from league.batch import MultiAgentBatch
    from league.cli.train import composed_values
    from league.learn import Learner
    from tests.test_gpu import _board_batch

    params = {**composed_values()["algo"]["params"], "num_epochs": 3, "minibatch_size": 128}  # the connect_four preset's
    assert params["model_kwargs"]["input_features"] == "connect_four_threats"
    obs = torch.from_numpy(random_play_positions("connect_four", 3, seed=1)[0])
    model = make_algorithm("ppo", C4, params).make_model()
    features = models.input_features(model, obs)
    assert features.shape[-1] == 2 + len(THREAT_PLANES) and models.input_features(model.base.base, obs) is obs
    torch.testing.assert_close(model(features), model(obs), rtol=0, atol=0)
    batch = _board_batch(600, seed=4)
    calls = []
    reading = k_in_a_row.threat_planes
    monkeypatch.setattr(k_in_a_row, "threat_planes", lambda o, rules: calls.append(len(o)) or reading(o, rules))

    def update() -> dict[str, np.ndarray]:
        learner = Learner("cpu", seed=5)
        learner.add_policy("main", make_algorithm("ppo", C4, params))
        learner.learn_on_batch(MultiAgentBatch({"main": batch}, len(batch)))
        weights = learner.get_weights()["main"]
        learner.close()
        return weights

    once = update()
    assert calls == [600]  # one reading of the whole batch
    calls.clear()
    monkeypatch.setattr(ppo, "input_features", lambda model, obs: obs)  # as before: per minibatch and epoch
    per_minibatch = update()
    assert len(calls) == 3 * 5
    for key, value in once.items():
        np.testing.assert_allclose(value, per_minibatch[key], rtol=1e-5, atol=1e-6, err_msg=key)


def test_a_checkpointed_model_loads_and_answers_the_same() -> None:
    params = {"model": "conv", "model_kwargs": {"symmetry": "flip_lr", "input_features": "connect_four_threats"}}
    torch.manual_seed(1)
    saved = make_algorithm("ppo", C4, params).make_model()
    torch.manual_seed(2)
    loaded = make_algorithm("ppo", C4, params).make_model()
    loaded.load_state_dict(saved.state_dict())
    obs = torch.from_numpy(random_play_positions("connect_four", 2, seed=3)[0])
    torch.testing.assert_close(loaded(obs), saved(obs))
    assert any(key.startswith("base.base.") for key in saved.state_dict())


def test_settings_that_do_not_fit_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="model_kwargs.input_features reads connect_four boards \\(\\[6, 7, 2\\] observations"
                                         ".*unset algo.params.model_kwargs.input_features"):
        build_model("conv", (3, 3, 2), 9, input_features="connect_four_threats")
    with pytest.raises(ValueError, match="model_kwargs.input_features reads tictactoe boards"):
        build_model("conv", (6, 7, 2), 7, input_features="tictactoe_threats")
    with pytest.raises(ValueError, match="input_features: unknown input features 'go'; known: .*connect_four_threats"):
        build_model("conv", (6, 7, 2), 7, input_features="go")
    with pytest.raises(ValueError, match="normalize_obs=false"):
        build_model("conv", (6, 7, 2), 7, input_features="connect_four_threats", normalize_obs=True)


def test_another_env_does_not_inherit_the_planes() -> None:
    from league.cli.train import composed_values
    from league.config import parse_run_config

    assert composed_values()["algo"]["params"]["model_kwargs"]["input_features"] == "connect_four_threats"  # the default job's
    cfg = parse_run_config(composed_values(["env.name=tictactoe"]))  # its own preset, nothing of connect four's
    assert cfg.preset == "tictactoe" and "input_features" not in cfg.algo.params["model_kwargs"]
    model = make_algorithm(cfg.algo.name, AgentSpec((3, 3, 2), 9, True), cfg.algo.params).make_model()
    assert not any(isinstance(m, InputFeaturesModel) for m in model.modules())


def test_policies_with_planes_stack_with_their_like_only() -> None:
    # The planes are read once per batch outside vmap (tests/test_stacked_plan.py: the default
    # model stacked equals it one by one), so such policies stack, with each other only.
    plain = make_algorithm("ppo", C4, {"model": "conv"}).stack_key()
    planes = {"model": "conv", "model_kwargs": {"input_features": "connect_four_threats"}}
    assert plain is not None and make_algorithm("ppo", C4, planes).stack_key() not in (None, plain)
