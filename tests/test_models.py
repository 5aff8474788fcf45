"""Default models: the strided Nature-CNN encoder for image frames (scale, shapes, kernels fitted
to small frames), ``model: auto``'s choice between boards and images, and the errors."""

from __future__ import annotations

import pytest
import torch

from league.algos import make_algorithm
from league.algos.models import (
    MIN_IMAGE_SIDE,
    ConvModel,
    MLPModel,
    NatureCNNModel,
    build_model,
    resolve_model_kind,
    update_normalizers,
)
from league.algos.q_models import QNetwork, build_q_model
from league.envs.base import AgentSpec


def _params(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def test_nature_cnn_on_atari_frames_is_nature_scale():
    """84x84x4: 8x8/4 -> 20x20, 4x4/2 -> 9x9, 3x3/1 -> 7x7, 7*7*64 -> 512: about 1.7M parameters,
    where the unstrided conv model would have 84*84*64*128 = 58M in its linear layer alone."""
    model = build_model("nature_cnn", (84, 84, 4), 18)
    assert isinstance(model, NatureCNNModel)
    assert model.conv_layers == [(32, (8, 8), (4, 4)), (64, (4, 4), (2, 2)), (64, (3, 3), (1, 1))]
    assert 1_500_000 < _params(model) < 2_000_000
    separate = build_model("nature_cnn", (84, 84, 4), 18, separate_networks=True)
    assert 3_000_000 < _params(separate) < 4_000_000  # a second trunk for the value function


def test_nature_cnn_output_shapes_discrete_continuous_and_options():
    obs = torch.rand(5, 48, 48, 2)
    logits, value = build_model("nature_cnn", (48, 48, 2), 3)(obs)
    assert logits.shape == (5, 3) and value.shape == (5,)
    model = build_model("nature_cnn", (48, 48, 2), 2, continuous=True, init_log_std=-0.5, separate_networks=True,
                        normalize_obs=True, normalize_values=True)
    update_normalizers(model, obs, torch.randn(5) * 10 + 3)
    dist_inputs, value = model(obs)
    assert dist_inputs.shape == (5, 4) and value.shape == (5,)
    assert torch.allclose(dist_inputs[:, 2:], torch.full((5, 2), -0.5))
    assert model.value_scale() > 1.0 and torch.isfinite(value).all()
    (dist_inputs.sum() + value.sum()).backward()
    assert all(p.grad is not None for p in model.trunk.parameters()) and all(p.grad is not None for p in model.vf_trunk.parameters())


@pytest.mark.parametrize("shape", [(32, 32, 1), (33, 35, 3), (36, 36, 1), (32, 200, 3), (120, 457, 3)])
def test_kernels_fit_small_and_non_square_frames(shape):
    """Sides from 32 up: a kernel larger than what is left of the frame shrinks to it, so the
    spatial size never falls below 1 (32x32: 7x7 after the first layer, 2x2 after the second,
    so the 3x3 becomes 2x2)."""
    model = build_model("nature_cnn", shape, 4)
    logits, value = model(torch.rand(2, *shape))
    assert logits.shape == (2, 4) and value.shape == (2,) and torch.isfinite(logits).all()
    if shape == (32, 32, 1):
        assert model.conv_layers[-1] == (64, (2, 2), (1, 1))


@pytest.mark.parametrize(
    ("shape", "kind", "model_class"),
    [
        ((3, 3, 2), "conv", ConvModel),  # tic-tac-toe
        ((6, 7, 2), "conv", ConvModel),  # connect four
        ((19, 19, 17), "conv", ConvModel),  # go
        ((31, 200, 3), "conv", ConvModel),  # one side below 32
        ((MIN_IMAGE_SIDE, MIN_IMAGE_SIDE, 1), "nature_cnn", NatureCNNModel),
        ((48, 48, 2), "nature_cnn", NatureCNNModel),  # env=pistonball
        ((84, 84, 4), "nature_cnn", NatureCNNModel),
        ((48, 48), "mlp", MLPModel),  # not [H, W, C]
        ((128,), "mlp", MLPModel),
    ],
)
def test_auto_picks_conv_for_boards_and_nature_cnn_for_images(shape, kind, model_class):
    assert resolve_model_kind("auto", shape) == kind
    assert type(build_model("auto", shape, 4)) is model_class


def test_auto_rule_is_the_same_for_actor_critic_and_q_models():
    image, board = AgentSpec((48, 48, 2), 3, False), AgentSpec((6, 7, 2), 7, True)
    for algo in ("ppo", "impala", "dqn"):
        model = make_algorithm(algo, image, {"model": "auto"}).make_model()
        body = model.body if isinstance(model, QNetwork) else model
        assert isinstance(body, NatureCNNModel), algo
    q_board = build_q_model("auto", board.obs_shape, board.num_actions)
    assert isinstance(q_board.body, ConvModel)
    assert q_board(torch.rand(3, 6, 7, 2)).shape == (3, 7)
    assert build_q_model("nature_cnn", (48, 48, 2), 3)(torch.rand(3, 48, 48, 2)).shape == (3, 3)


def test_explicit_conv_still_builds_on_images():
    assert isinstance(build_model("conv", (40, 40, 1), 3, channels=(4,), hidden=8), ConvModel)


def test_errors_name_the_shape_and_the_fix():
    with pytest.raises(ValueError, match=r"at least 32x32 pixels, got shape \[6, 7, 2\].*use model=conv"):
        build_model("nature_cnn", (6, 7, 2), 7)
    with pytest.raises(ValueError, match=r"got shape \[31, 64, 3\].*model=conv"):
        build_model("nature_cnn", (31, 64, 3), 7)
    with pytest.raises(ValueError, match=r"needs \[H, W, C\] image observations, got shape \[4\]"):
        build_model("nature_cnn", (4,), 2)
    with pytest.raises(ValueError, match="one kernel and stride per conv layer"):
        build_model("nature_cnn", (48, 48, 2), 2, channels=(16, 32))
    with pytest.raises(ValueError, match="unknown model kind 'cnn' .*nature_cnn"):
        build_model("cnn", (48, 48, 2), 2)
    with pytest.raises(ValueError, match="nature_cnn needs frames of at least"):
        make_algorithm("ppo", AgentSpec((3, 3, 2), 9, True), {"model": "nature_cnn"}).make_model()


def test_line_conv_sees_every_window_of_four_on_a_connect_four_board():
    """kernel 4, no padding: one placement per 4x4 block (3 x 4 on connect four), and a
    board whose only pieces form one line of four changes the output wherever the line is."""
    model = build_model("conv", (6, 7, 2), 7, channels=[8], hidden=16)  # the default: kernel 4, no padding
    assert model.fc[0].in_features == 8 * 3 * 4
    assert build_model("conv", (3, 3, 2), 9, channels=[8]).fc[0].in_features == 8  # clamped to the board
    assert build_model("conv", (6, 7, 2), 7, channels=[8, 8], kernel_size=3, padding=None).fc[0].in_features == 8 * 6 * 7
    empty = model(torch.zeros(1, 6, 7, 2))[0]
    for cells in ([(5, c) for c in range(3, 7)], [(r, 6) for r in range(2, 6)], [(r, r) for r in range(2, 6)]):
        board = torch.zeros(1, 6, 7, 2)
        for r, c in cells:
            board[0, r, c, 0] = 1.0
        assert not torch.allclose(model(board)[0], empty)
    with pytest.raises(ValueError, match="leave nothing of a \\(6, 7\\) board"):
        build_model("conv", (6, 7, 2), 7, channels=[8, 8], kernel_size=4)
    with pytest.raises(ValueError, match="kernel_size >= 1 and padding >= 0"):
        build_model("conv", (6, 7, 2), 7, kernel_size=0)


def test_sigmoid_tanh_is_tanh_in_value_gradient_and_under_vmap():
    from torch.func import grad, vmap

    from league.algos.activations import tanh

    x = torch.cat([torch.linspace(-30, 30, 1001), torch.tensor([0.0, 1e-8, -1e-8, 1e4, -1e4])])
    assert torch.allclose(tanh(x), torch.tanh(x), atol=3e-7, rtol=0)
    with torch.no_grad():  # the in-place inference path
        assert torch.allclose(tanh(x), torch.tanh(x), atol=3e-7, rtol=0)
    special = tanh(torch.tensor([float("nan"), float("inf"), -float("inf")]))
    assert torch.isnan(special[0]) and special[1:].tolist() == [1.0, -1.0]
    xd = torch.randn(7, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(tanh, (xd,)) and torch.autograd.gradgradcheck(tanh, (xd,))
    rows = torch.randn(3, 5)
    ours = vmap(grad(lambda v: tanh(v).sum()))(rows)
    assert torch.allclose(ours, 1 - torch.tanh(rows) ** 2, atol=1e-6)


def test_mlp_uses_the_fast_tanh_and_keeps_its_state_dict_keys():
    from league.algos.activations import Tanh

    model = MLPModel((9,), 4)
    assert any(isinstance(m, Tanh) for m in model.modules()) and not any(isinstance(m, torch.nn.Tanh) for m in model.modules())
    # The keys checkpoints written with nn.Tanh carry: they still load.
    assert set(model.state_dict()) == {"pi.bias", "pi.weight", "trunk.1.weight", "trunk.1.bias", "trunk.3.bias",
                                       "trunk.3.weight", "vf.bias", "vf.weight"}


def test_adam_is_fused_where_the_kernel_runs_and_steps_like_plain_adam():
    from league.learn.algorithm import adam

    torch.manual_seed(0)
    a, b = torch.nn.Linear(4, 3), torch.nn.Linear(4, 3)
    b.load_state_dict(a.state_dict())
    fused, plain = adam(a.parameters(), lr=1e-2, eps=1e-5), torch.optim.Adam(b.parameters(), lr=1e-2, eps=1e-5)
    assert fused.param_groups[0]["fused"] and not plain.param_groups[0]["fused"]
    for _ in range(5):
        x = torch.randn(8, 4)
        for model, opt in ((a, fused), (b, plain)):
            opt.zero_grad()
            model(x).pow(2).sum().backward()
            opt.step()
    for p, q in zip(a.parameters(), b.parameters()):
        assert torch.allclose(p, q, atol=1e-6)
    half = torch.nn.Linear(2, 2).to(torch.float16)  # no fused kernel for it here: the default Adam
    assert not adam(half.parameters(), lr=1e-3).param_groups[0]["fused"]


def test_nature_cnn_sees_contiguous_channels_first_batches():
    # From a permuted view the conv returns channels-last activations and the CPU backward
    # over mixed layouts is many times slower; the values must not change either way.
    from league.algos.models import channels_first

    obs = torch.rand(5, 36, 36, 3)
    x = channels_first(obs)
    assert x.is_contiguous() and torch.equal(x, obs.permute(0, 3, 1, 2))
    model = NatureCNNModel((36, 36, 3), 4)
    assert model.trunk[:-3](x).is_contiguous()
    pi, value = model(obs)
    assert pi.shape == (5, 4) and value.shape == (5,)


@pytest.mark.parametrize("kwargs", [{}, {"channels": [8, 16], "kernel_size": 3, "padding": None}, {"separate_networks": True}])
def test_channels_last_conv_trunk_reads_the_parameters_as_the_plain_one(kwargs):
    """ConvModel's trunk runs channels-last with fc's weight permuted to the (H, W, C) flatten;
    outputs and every parameter's gradient equal the plain fc(convs(channels_first(obs))), so
    checkpoints from before read the same (and the activations really are channels-last)."""
    from league.algos.models import channels_first, conv_trunk

    torch.manual_seed(0)
    model = ConvModel((6, 7, 3), 7, **kwargs)
    obs = torch.rand(11, 6, 7, 3)

    def plain(m, x):
        z = m.fc(m.convs(channels_first(x)))
        zv = z if m.vf_convs is None else m.vf_fc(m.vf_convs(channels_first(x)))
        return m.pi(z), m.vf(zv).squeeze(-1)

    grads = []
    for forward in (lambda m, x: m(x), plain):
        model.zero_grad()
        pi, value = forward(model, obs)
        (pi.pow(2).sum() + value.sum()).backward()
        grads.append(([p.grad.clone() for p in model.parameters()], pi.detach(), value.detach()))
    (fast, pi_fast, v_fast), (slow, pi_slow, v_slow) = grads
    assert torch.allclose(pi_fast, pi_slow, atol=1e-6) and torch.allclose(v_fast, v_slow, atol=1e-6)
    for a, b in zip(fast, slow):
        assert torch.allclose(a, b, atol=1e-5)
    activations = model.convs[:-1](obs.permute(0, 3, 1, 2))
    assert activations.is_contiguous(memory_format=torch.channels_last)
    assert conv_trunk(model.convs, model.fc, obs).shape == (11, model.fc[0].out_features)


def test_both_wrappers_answer_for_the_model_they_wrap():
    # Input features (threat planes) around a symmetrised conv (connect four's preset): the learner's
    # normaliser update and the value scale read the conv's own attributes through both.
    from league.algos.models import InputFeaturesModel, build_model, update_normalizers
    from league.algos.symmetry import SymmetrizedModel

    model = build_model("conv", (6, 7, 2), 7, symmetry="flip_lr", input_features="connect_four_threats", normalize_values=True)
    assert isinstance(model, InputFeaturesModel) and isinstance(model.base, SymmetrizedModel)
    conv = model.base.base
    assert model.value_norm is conv.value_norm and model.vf is conv.vf and model.log_std is None
    update_normalizers(model, value_targets=torch.full((16,), 3.0))
    assert conv.value_norm.mean.item() != 0.0  # the update reached the conv's own statistics
    with pytest.raises(AttributeError, match="no_such_attribute"):
        model.no_such_attribute
