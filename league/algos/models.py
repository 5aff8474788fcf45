"""Default actor-critic / Q models for preprocessed observations.

Every model maps ``float32[B, *obs_shape]`` (or ``uint8`` pixels, read as value / 255:
:mod:`league.algos.byte_obs`) to ``(dist_inputs, value float32[B])``: the
distribution inputs are logits ``[B, A]`` for Discrete actions (Q-learning reads them as
Q-values) and ``[B, 2D]`` (means, then log-stds) for a Box of ``D`` dimensions. Pick one
with :func:`build_model`: :class:`MLPModel` for flat observations, :class:`ConvModel` (unstrided
3x3 convs) for boards, :class:`NatureCNNModel` (strided, DQN-Nature scale) for image frames;
``model: auto`` picks by shape (:func:`resolve_model_kind`). Options every actor-critic model takes:

* ``separate_networks``: the value function gets a trunk of its own instead of sharing the
  policy's (then a large value loss cannot swamp the policy's features; see docs/PPO_SCALES.md);
* ``normalize_obs``: observations are standardised by a running mean/std (clipped to +-10);
* ``normalize_values``: the value head predicts standardised returns and its output is
  de-standardised, PopArt-style (van Hasselt et al. 2016): when the statistics move, the
  head's weights are rescaled so its de-standardised output stays the same;
* ``continuous``: a state-independent log-std parameter (``init_log_std``) is appended to the means.

The running statistics are buffers, so they travel to samplers with the weights; learners
update them (:func:`update_normalizers`) before each update from the batch they train on.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

import torch
import torch.distributed as dist
from torch import nn

from league.algos.activations import Tanh
from league.algos.byte_obs import model_input
from league.algos.seams import INPUT_FEATURES, InputFeatures
from league.algos.wrapping import ModelWrapper
from league.typecheck import has_method

__all__ = ["MLPModel", "ConvModel", "NatureCNNModel", "build_model", "input_features", "resolve_model_kind", "MIN_IMAGE_SIDE", "RunningMeanStd", "PopArtValue", "ActorCriticModel", "ScaledValues", "HasInputFeatures"]


class ScaledValues(Protocol):
    """Optional model hook (:class:`ActorCriticModel` has it): the unit value errors are measured in."""

    def value_scale(self) -> float:
        """What value errors are divided by in the loss."""
        ...


class HasInputFeatures(Protocol):
    """Optional model hook (:class:`InputFeaturesModel` has it): fixed features computed from raw observations."""

    def input_features(self, obs: torch.Tensor) -> torch.Tensor:
        """The observations as the trainable layers read them (features appended)."""
        ...


def _init(layer: nn.Module, gain: float) -> nn.Module:
    # Orthogonal init with small policy-head gain: the PPO implementation detail
    # that keeps early policies near-uniform (Engstrom et al. 2020; CleanRL).
    if isinstance(layer, (nn.Linear, nn.Conv2d)):
        nn.init.orthogonal_(layer.weight, gain)
        if layer.bias is not None:
            nn.init.zeros_(layer.bias)
    return layer


class RunningMeanStd(nn.Module):
    """Running mean and variance of a stream of ``[N, *shape]`` batches (parallel merge, as buffers)."""

    # The buffers registered in __init__, declared for the type checker.
    mean: torch.Tensor
    var: torch.Tensor
    count: torch.Tensor

    def __init__(self, shape: Sequence[int] = (), clip: float = 10.0, eps: float = 1e-8) -> None:
        super().__init__()
        self.clip, self.eps = clip, eps
        self.register_buffer("mean", torch.zeros(tuple(shape)))
        self.register_buffer("var", torch.ones(tuple(shape)))
        self.register_buffer("count", torch.tensor(1e-4))

    @torch.no_grad()
    def update(self, x: torch.Tensor) -> None:
        """Merge the batch ``x`` (first dimension: rows) into the statistics.

        Under data-parallel learning (a ``torch.distributed`` group is initialised) the
        batch statistics are summed over the replicas first, so every replica keeps the
        same statistics (each calls this in the same update, on its own shard).
        """
        x = x.to(torch.float64).flatten(1) if x.dim() > 1 else x.to(torch.float64)
        sums = torch.cat([torch.tensor([float(x.shape[0])], dtype=torch.float64, device=x.device), x.sum(0).reshape(-1),
                          x.pow(2).sum(0).reshape(-1)])
        if dist.is_available() and dist.is_initialized():
            dist.all_reduce(sums)
        size = (len(sums) - 1) // 2
        n = sums[0]
        mean = (sums[1:1 + size] / n).reshape(self.mean.shape)
        var = (sums[1 + size:] / n).reshape(self.mean.shape) - mean.pow(2)
        mean, var, n = mean.to(self.mean.dtype), var.clamp_min(0).to(self.mean.dtype), n.to(self.mean.dtype)
        delta, total = mean - self.mean, self.count + n
        m2 = self.var * self.count + var * n + delta.pow(2) * self.count * n / total
        self.mean.add_(delta * n / total)
        self.var.copy_(m2 / total)
        self.count.copy_(total)

    @property
    def std(self) -> torch.Tensor:
        """Standard deviation (``sqrt(var + eps)``)."""
        return torch.sqrt(self.var + self.eps)

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        """``(x - mean) / std``, clipped to ``[-clip, clip]``."""
        return ((x - self.mean) / self.std).clamp(-self.clip, self.clip)


class PopArtValue(RunningMeanStd):
    """Running statistics of value targets that rescale the value head they feed (PopArt's "preserve outputs")."""

    def __init__(self) -> None:
        super().__init__((), clip=math.inf, eps=1e-4)

    @torch.no_grad()
    def update_preserving(self, targets: torch.Tensor, head: nn.Linear) -> None:
        """Merge ``targets`` into the statistics and rescale ``head`` so ``denormalize(head(z))`` is unchanged."""
        old_mean, old_std = self.mean.clone(), self.std.clone()
        self.update(targets)
        head.weight.mul_(old_std / self.std)
        head.bias.mul_(old_std).add_(old_mean - self.mean).div_(self.std)

    def denormalize(self, v: torch.Tensor) -> torch.Tensor:
        """A standardised value back in return units."""
        return v * self.std + self.mean


class ActorCriticModel(nn.Module):
    """What every actor-critic model shares: observation and value normalisers, the Gaussian log-std.

    Subclasses define ``body(obs) -> (policy_out [B, A or D], value_out [B])`` and own
    ``self.vf`` (the value head's last ``nn.Linear``).
    """

    def _setup(self, obs_shape: Sequence[int], num_actions: int, continuous: bool, normalize_obs: bool,
               normalize_values: bool, init_log_std: float) -> None:
        self.obs_norm = RunningMeanStd(tuple(obs_shape)) if normalize_obs else None
        self.value_norm = PopArtValue() if normalize_values else None
        self.log_std = nn.Parameter(torch.full((num_actions,), float(init_log_std))) if continuous else None

    def body(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Policy output and (standardised, if ``normalize_values``) value for normalised observations."""
        raise NotImplementedError

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Distribution inputs (logits ``[B, A]``, or means and log-stds ``[B, 2D]``) and values ``[B]``."""
        obs = model_input(obs)  # uint8 pixels -> [0, 1]
        if self.obs_norm is not None:
            obs = self.obs_norm.normalize(obs)
        pi, value = self.body(obs)
        if self.log_std is not None:
            pi = torch.cat([pi, self.log_std.expand_as(pi)], dim=-1)
        if self.value_norm is not None:
            value = self.value_norm.denormalize(value)
        return pi, value

    def value_scale(self) -> float:
        """What value errors are divided by in the loss: the running return std (1 without ``normalize_values``)."""
        return 1.0 if self.value_norm is None else float(self.value_norm.std)


def _mlp(width: int, hidden: Sequence[int]) -> tuple[nn.Sequential, int]:
    layers: list[nn.Module] = [nn.Flatten()]
    for h in hidden:
        layers += [_init(nn.Linear(width, h), math.sqrt(2)), Tanh()]
        width = h
    return nn.Sequential(*layers), width


class MLPModel(ActorCriticModel):
    """Flattened observation -> tanh MLP trunk (shared, or one per head) -> policy and value heads."""

    def __init__(self, obs_shape: Sequence[int], num_actions: int, hidden: Sequence[int] = (128, 128),
                 separate_networks: bool = False, continuous: bool = False, normalize_obs: bool = False,
                 normalize_values: bool = False, init_log_std: float = 0.0) -> None:
        super().__init__()
        width_in = int(math.prod(obs_shape))
        self.trunk, width = _mlp(width_in, hidden)
        self.vf_trunk = _mlp(width_in, hidden)[0] if separate_networks else None
        self.pi = _init(nn.Linear(width, num_actions), 0.01)
        self.vf = _init(nn.Linear(width, 1), 1.0)
        self._setup(obs_shape, num_actions, continuous, normalize_obs, normalize_values, init_log_std)

    def body(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Policy output ``[B, A]`` and value ``[B]``."""
        z = self.trunk(obs)
        zv = z if self.vf_trunk is None else self.vf_trunk(obs)
        return self.pi(z), self.vf(zv).squeeze(-1)


def channels_first(obs: torch.Tensor) -> torch.Tensor:
    """``[B, H, W, C]`` observations as a contiguous ``[B, C, H, W]`` batch for ``nn.Conv2d``.

    Contiguous, not a permuted view: from a view the convolution returns channels-last
    activations while the gradients coming back are plain, and on CPU the ReLU backward and
    the flatten over such mixed layouts take 27x as long (a connect-four conv update was
    1.6x slower). :class:`ConvModel` keeps one layout end to end instead (:func:`conv_trunk`).
    """
    return obs.permute(0, 3, 1, 2).contiguous()


def conv_trunk(convs: nn.Sequential, fc: nn.Sequential, obs: torch.Tensor) -> torch.Tensor:
    """``fc(convs(x))`` for ``[B, H, W, C]`` observations, channels-last from end to end.

    The board ``[B, H, W, C]`` is already a channels-last ``[B, C, H, W]`` batch (a permuted
    view, no copy), which is the layout oneDNN and cuDNN convolve natively; the activations
    stay channels-last through the ReLUs, and the last one is flattened in ``(H, W, C)``
    order, again a view, with ``fc``'s first weight permuted to that order (so its
    parameters keep ``nn.Flatten``'s ``(C, H, W)`` order: checkpoints and the plain
    ``fc(convs(x))`` read them the same). The gradients come back in the same layout, so no
    backward mixes layouts (:func:`channels_first` says what that costs). The default job's
    PPO update: 1.25-1.35x faster on this CPU than contiguous channels-first
    (``benchmarks/bench_learner_update.py``).

    ``convs`` ends with ``nn.Flatten``; ``fc`` starts with an ``nn.Linear``.
    """
    x = obs.permute(0, 3, 1, 2)
    *layers, _flatten = list(convs)
    for layer in layers:
        x = layer(x)
    linear, *after = list(fc)
    assert isinstance(linear, nn.Linear)  # built by ConvModel._tower
    batch, channels, rows, cols = x.shape
    weight = linear.weight.view(-1, channels, rows, cols).permute(0, 2, 3, 1).reshape(linear.out_features, -1)
    z = torch.nn.functional.linear(x.permute(0, 2, 3, 1).reshape(batch, -1), weight, linear.bias)
    for layer in after:
        z = layer(z)
    return z


class ConvModel(ActorCriticModel):
    """Board observations ``[H, W, C]`` (channels last, as PettingZoo gives them) -> convs -> heads.

    Unstrided, with a linear layer over every output cell: right for boards, far too large for
    image frames (``H * W * 64 * hidden`` weights), which :class:`NatureCNNModel` is for.

    The default is one conv of kernel 4 without padding (the kernel clamped to the board's
    sides: on tic-tac-toe one placement over the whole board): every window of four cells
    in a row, column or diagonal then lies inside one kernel placement, so one cheap layer
    sees every line of connect four (12 placements), and it learned several times more per
    sample there than the MLP (docs/STRENGTH.md). ``padding=None`` keeps the board's size
    ("same"); e.g. ``channels=[32, 64], kernel_size=3, padding=None`` is a deeper tower.
    """

    def __init__(self, obs_shape: Sequence[int], num_actions: int, channels: Sequence[int] = (64,), hidden: int = 128,
                 separate_networks: bool = False, continuous: bool = False, normalize_obs: bool = False,
                 normalize_values: bool = False, init_log_std: float = 0.0, kernel_size: int = 4,
                 padding: int | None = 0) -> None:
        super().__init__()
        if len(obs_shape) != 3:
            raise ValueError(f"ConvModel needs [H, W, C] observations, got shape {tuple(obs_shape)}")
        if not isinstance(kernel_size, int) or kernel_size < 1 or (padding is not None and (not isinstance(padding, int) or padding < 0)):
            raise ValueError(f"ConvModel needs kernel_size >= 1 and padding >= 0 (or None for same-size), got {kernel_size}, {padding}")
        if padding == 0:
            kernel_size = min(kernel_size, int(obs_shape[0]), int(obs_shape[1]))
        geometry = (kernel_size, kernel_size // 2 if padding is None else padding)
        self.convs, self.fc = self._tower(obs_shape, channels, hidden, geometry)
        self.vf_convs: nn.Sequential | None
        self.vf_fc: nn.Sequential | None
        self.vf_convs, self.vf_fc = self._tower(obs_shape, channels, hidden, geometry) if separate_networks else (None, None)
        self.pi = _init(nn.Linear(hidden, num_actions), 0.01)
        self.vf = _init(nn.Linear(hidden, 1), 1.0)
        self._setup(obs_shape, num_actions, continuous, normalize_obs, normalize_values, init_log_std)

    @staticmethod
    def _tower(obs_shape: Sequence[int], channels: Sequence[int], hidden: int, geometry: tuple[int, int] = (3, 1)) -> tuple[nn.Sequential, nn.Sequential]:
        h, w, c = obs_shape
        kernel, pad = geometry
        convs: list[nn.Module] = []
        for ch in channels:
            convs += [_init(nn.Conv2d(c, ch, kernel, padding=pad), math.sqrt(2)), nn.ReLU()]
            c = ch
            h, w = h + 2 * pad - kernel + 1, w + 2 * pad - kernel + 1
        if min(h, w) < 1:
            raise ValueError(f"ConvModel: {len(channels)} conv(s) of kernel {kernel}, padding {pad} leave nothing of a {tuple(obs_shape[:2])} board")
        return nn.Sequential(*convs, nn.Flatten()), nn.Sequential(_init(nn.Linear(c * h * w, hidden), math.sqrt(2)), nn.ReLU())

    def body(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Policy output ``[B, A]`` and value ``[B]``."""
        z = conv_trunk(self.convs, self.fc, obs)
        zv = z if self.vf_convs is None or self.vf_fc is None else conv_trunk(self.vf_convs, self.vf_fc, obs)
        return self.pi(z), self.vf(zv).squeeze(-1)


#: Smallest image side (height and width) the strided encoder takes, and the side from which
#: ``model: auto`` picks it; smaller ``[H, W, C]`` observations (boards) get :class:`ConvModel`.
MIN_IMAGE_SIDE = 32


def conv_output_size(size: int, layers: Sequence[tuple[int, int]]) -> tuple[list[tuple[int, int]], int]:
    """``layers`` ``(kernel, stride)`` along one side of ``size`` pixels, each kernel clamped to the
    side left at that layer (a clamped layer outputs 1), so the side never collapses below 1.

    Returns the clamped ``(kernel, stride)`` per layer and the side that comes out.
    """
    fitted = []
    for kernel, stride in layers:
        kernel, stride = min(int(kernel), size), int(stride)
        fitted.append((kernel, stride))
        size = (size - kernel) // stride + 1
    return fitted, size


class NatureCNNModel(ActorCriticModel):
    """Image observations ``[H, W, C]`` -> the DQN "Nature" encoder (Mnih et al. 2015: 8x8 stride 4,
    4x4 stride 2, 3x3 stride 1, then a ``hidden``-wide linear layer; ReLU) -> heads.

    About 1.7M parameters per trunk for 84x84x4 frames. Kernels shrink to fit where a
    layer would otherwise not fit the frame (for sides from ``MIN_IMAGE_SIDE`` = 32 up to about
    36), per side, so non-square frames work; smaller frames are refused (use ``model=conv``).
    Pixels come as bytes (``env.kwargs.preprocess.scale``, on by default: ``uint8``, read as
    value / 255 at the input) or already scaled floats.
    """

    def __init__(self, obs_shape: Sequence[int], num_actions: int, channels: Sequence[int] = (32, 64, 64),
                 kernels: Sequence[int] = (8, 4, 3), strides: Sequence[int] = (4, 2, 1), hidden: int = 512,
                 separate_networks: bool = False, continuous: bool = False, normalize_obs: bool = False,
                 normalize_values: bool = False, init_log_std: float = 0.0) -> None:
        super().__init__()
        check_image_shape(obs_shape)
        if not len(channels) == len(kernels) == len(strides) or not channels:
            raise ValueError(f"nature_cnn needs one kernel and stride per conv layer, got channels {list(channels)}, "
                             f"kernels {list(kernels)}, strides {list(strides)}")
        h, w, c = (int(x) for x in obs_shape)
        rows, out_h = conv_output_size(h, list(zip(kernels, strides)))
        cols, out_w = conv_output_size(w, list(zip(kernels, strides)))
        layers = [(ch, (kh, kw), (sh, sw)) for ch, (kh, sh), (kw, sw) in zip(channels, rows, cols)]
        self.conv_layers = layers  # (channels, kernel, stride) as built, for inspection
        self.trunk = self._tower(c, layers, out_h * out_w * layers[-1][0], hidden)
        self.vf_trunk = self._tower(c, layers, out_h * out_w * layers[-1][0], hidden) if separate_networks else None
        self.pi = _init(nn.Linear(hidden, num_actions), 0.01)
        self.vf = _init(nn.Linear(hidden, 1), 1.0)
        self._setup(obs_shape, num_actions, continuous, normalize_obs, normalize_values, init_log_std)

    @staticmethod
    def _tower(c: int, layers: Sequence[tuple[int, tuple[int, int], tuple[int, int]]], flat: int, hidden: int) -> nn.Sequential:
        modules: list[nn.Module] = []
        for ch, kernel, stride in layers:
            modules += [_init(nn.Conv2d(c, ch, kernel, stride), math.sqrt(2)), nn.ReLU()]
            c = ch
        return nn.Sequential(*modules, nn.Flatten(), _init(nn.Linear(flat, hidden), math.sqrt(2)), nn.ReLU())

    def body(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Policy output ``[B, A]`` and value ``[B]``."""
        x = channels_first(obs)
        z = self.trunk(x)
        zv = z if self.vf_trunk is None else self.vf_trunk(x)
        return self.pi(z), self.vf(zv).squeeze(-1)


def is_image_shape(obs_shape: Sequence[int]) -> bool:
    """Whether ``model: auto`` reads ``obs_shape`` as an image: ``[H, W, C]`` with both sides at least ``MIN_IMAGE_SIDE``."""
    return len(obs_shape) == 3 and min(int(obs_shape[0]), int(obs_shape[1])) >= MIN_IMAGE_SIDE


def check_image_shape(obs_shape: Sequence[int]) -> None:
    """ValueError naming the shape unless the strided encoder takes it (see :func:`is_image_shape`)."""
    shape = [int(x) for x in obs_shape]
    if len(shape) != 3:
        raise ValueError(f"model nature_cnn needs [H, W, C] image observations, got shape {shape} "
                         "(model=mlp for flat observations)")
    if min(shape[:2]) < MIN_IMAGE_SIDE:
        raise ValueError(f"model nature_cnn needs frames of at least {MIN_IMAGE_SIDE}x{MIN_IMAGE_SIDE} pixels, got shape "
                         f"{shape} ([H, W, C]): use model=conv (unstrided, for boards and small frames) or resize the "
                         "frames larger (env.kwargs.preprocess.resize)")


MODEL_KINDS = ("auto", "mlp", "conv", "nature_cnn")


def build_model(kind: str, obs_shape: Sequence[int], num_actions: int, **kwargs) -> nn.Module:
    """``kind`` is ``"mlp"``, ``"conv"``, ``"nature_cnn"`` or ``"auto"``: nature_cnn for ``[H, W, C]``
    images (both sides at least ``MIN_IMAGE_SIDE`` = 32), conv for smaller ``[H, W, C]`` (boards), else
    mlp; ``kwargs`` go to the model (``hidden``, ``separate_networks``, ``normalize_obs``, ...), but for
    ``symmetry`` (a group the model is averaged over: :mod:`league.algos.symmetry`) and
    ``input_features`` (a registered name: :data:`league.algos.seams.INPUT_FEATURES`)."""
    from league.algos.symmetry import symmetrize  # the wrapper is built on these models

    symmetry = kwargs.pop("symmetry", None)
    name = kwargs.pop("input_features", None)
    if name is None:
        return symmetrize(_build_base_model(kind, obs_shape, num_actions, **kwargs), symmetry, obs_shape, num_actions)
    features = INPUT_FEATURES.get(name, "algo.params.model_kwargs.input_features")(tuple(obs_shape), num_actions)
    if kwargs.get("normalize_obs"):
        raise ValueError("model_kwargs.input_features are exact functions of the raw observations; normalize_obs would "
                         "rescale what the model reads beside them: set algo.params.normalize_obs=false")
    # The features go in first and the symmetry acts on them with the observation: they are
    # functions of the board that move with it (a mirrored board's planes are its planes
    # mirrored), so each row's features are read once however many copies the symmetry averages.
    shape = (*obs_shape[:-1], obs_shape[-1] + features.channels)
    return InputFeaturesModel(symmetrize(_build_base_model(kind, shape, num_actions, **kwargs), symmetry, shape, num_actions),
                              features, int(obs_shape[-1]))


class InputFeaturesModel(ModelWrapper):
    """``base`` reading observations with fixed input features appended as channels on the last
    axis (``model_kwargs.input_features``: a game plug-in's, e.g. connect four's threat planes).

    The features are exact functions of the observation, as AlphaGo's input features
    (liberties, ladders) were of the Go board: the network reads "this column wins now" from
    one cell instead of learning it from a window of cells. ``base`` maps ``[..., C + F]``;
    so this maps ``[..., C]``. Attributes the wrapper lacks (heads, normalisers) are ``base``'s.
    """

    def __init__(self, base: nn.Module, features: InputFeatures, obs_channels: int) -> None:
        super().__init__()
        self.base = base
        self.features = features
        self.feature_channels = obs_channels + features.channels  # what base reads

    def input_features(self, obs: torch.Tensor) -> torch.Tensor:
        """``[..., C + F]``: the observations with their features appended, what ``base`` reads.
        A learner taking several passes over one batch (PPO's epochs) reads them once and hands
        these to :meth:`forward`."""
        obs = model_input(obs)
        return torch.cat([obs, self.features(obs)], -1)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(logits, value)`` of ``base`` on observations ``[..., C]``, or on their
        :meth:`input_features` ``[..., C + F]`` (told apart by the channel count)."""
        with_features = obs.shape[-1] == self.feature_channels
        return self.base(obs if with_features else self.input_features(obs))

    def extra_repr(self) -> str:
        return f"input_features={self.features!r}"


def input_features(model: nn.Module, obs: torch.Tensor) -> torch.Tensor:
    """What ``model`` computes from ``obs`` before its trainable layers, where it says
    (``input_features``: :class:`InputFeaturesModel`'s), else ``obs``; ``model`` takes either.
    Learners read it once per batch instead of once per minibatch and epoch."""
    return model.input_features(obs) if has_method(model, HasInputFeatures.input_features) else obs


def resolve_model_kind(kind: str, obs_shape: Sequence[int]) -> str:
    """The model kind ``kind`` names for ``obs_shape`` (``"auto"`` resolved; ValueError for an unknown kind)."""
    if kind not in MODEL_KINDS:
        raise ValueError(f"unknown model kind '{kind}' (known: {', '.join(MODEL_KINDS)})")
    if kind == "auto":
        return "mlp" if len(obs_shape) != 3 else "nature_cnn" if is_image_shape(obs_shape) else "conv"
    return kind


def _build_base_model(kind: str, obs_shape: Sequence[int], num_actions: int, **kwargs) -> nn.Module:
    model_class = {"mlp": MLPModel, "conv": ConvModel, "nature_cnn": NatureCNNModel}[resolve_model_kind(kind, obs_shape)]
    return model_class(obs_shape, num_actions, **kwargs)


@torch.no_grad()
def update_normalizers(model: nn.Module, obs: torch.Tensor | None = None, value_targets: torch.Tensor | None = None) -> None:
    """Learner side, before an update: merge a batch's observations and value targets into
    ``model``'s running statistics (a no-op for statistics the model does not keep)."""
    obs_norm, value_norm = getattr(model, "obs_norm", None), getattr(model, "value_norm", None)
    if obs_norm is not None and obs is not None:
        obs_norm.update(model_input(obs))
    if value_norm is not None and value_targets is not None:
        value_norm.update_preserving(value_targets, model.vf)
