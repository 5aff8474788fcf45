"""The observation preprocessing rule of :mod:`league.envs.base`, compiled per agent.

:func:`build_preprocessor` inspects an agent's observation and action spaces once and
returns an :class:`ObsPreprocessor`: the agent's :class:`~league.envs.base.AgentSpec`
plus a ``transform(raw_obs, info) -> (obs, mask)`` closure specialised for that space,
so the per-step work is one or two array conversions and no space inspection.

Every array ``transform`` returns is freshly allocated and owned by the caller, except
the all-ones mask of an agent without a mask, which is one shared read-only array.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import gymnasium.spaces as spaces
import numpy as np

from league.envs.base import AgentSpec

__all__ = ["ObsPreprocessor", "Transform", "build_preprocessor", "MASK_KEY", "OBS_KEY"]

#: Key of the legal-action mask in a Dict observation or in an info dict.
MASK_KEY = "action_mask"
#: Key of the observation proper in a PettingZoo-classic Dict observation.
OBS_KEY = "observation"

#: ``transform(raw_obs, info) -> (float32 obs, int8 mask)``; ``info`` may be None.
Transform = Callable[[Any, "Mapping[str, Any] | None"], tuple[np.ndarray, np.ndarray]]

_ObsFn = Callable[[Any], np.ndarray]


@dataclass(frozen=True)
class ObsPreprocessor:
    """One agent's preprocessed spec and its per-step observation transform.

    Attributes:
        spec: shapes after preprocessing.
        transform: ``(raw_obs, info) -> (float32[*spec.obs_shape], int8[num_actions])``.
            The mask comes from the observation when the space carries one, else from
            ``info["action_mask"]`` when present, else it is all ones.
        action_start: the env action for policy action ``i`` is ``i + action_start``
            (``Discrete(n, start=...)``; 0 almost always).
        action_shape: a Box or MultiDiscrete action space's shape (None for Discrete).
        action_starts: a MultiDiscrete space's per-component ``start`` (None otherwise).
    """

    spec: AgentSpec
    transform: Transform
    action_start: int
    action_shape: tuple[int, ...] | None = None
    action_starts: np.ndarray | None = None

    def env_action(self, action: Any) -> Any:
        """The env's action for a policy action: ``int(action) + action_start`` (Discrete),
        a float32 array of the Box's shape, or an int64 vector plus each component's start (MultiDiscrete)."""
        if self.action_shape is None:
            return int(action) + self.action_start
        if self.action_starts is not None:
            return np.asarray(action, dtype=np.int64).reshape(self.action_shape) + self.action_starts
        return np.asarray(action, dtype=np.float32).reshape(self.action_shape)


def build_preprocessor(
    observation_space: spaces.Space, action_space: spaces.Space, agent: str = "agent", byte_images: bool = False
) -> ObsPreprocessor:
    """Compile the preprocessing rule for one agent's spaces.

    ``byte_images``: a ``uint8`` Box observation is kept as bytes (image pixels the models read
    as value / 255, :mod:`league.algos.byte_obs`; what ``env.kwargs.preprocess.scale`` asks for)
    instead of cast to float32.

    Raises:
        TypeError: the action space is not ``Discrete``, ``Box`` or 1-D ``MultiDiscrete``, or the observation
            space (or a part of it) has no fixed-size float representation.
        ValueError: an ``action_mask`` entry does not hold one flag per action.
    """
    bounds: dict[str, Any] = {}
    if isinstance(action_space, spaces.Box):
        num_actions = int(np.prod(action_space.shape))
        bounds = {"action_low": tuple(float(x) for x in np.ravel(action_space.low)),
                  "action_high": tuple(float(x) for x in np.ravel(action_space.high))}
    elif isinstance(action_space, spaces.Discrete):
        num_actions = int(action_space.n)
    elif isinstance(action_space, spaces.MultiDiscrete) and len(action_space.shape) == 1:
        num_actions = int(np.sum(action_space.nvec))
        bounds = {"action_nvec": tuple(int(n) for n in action_space.nvec)}
    else:
        raise TypeError(
            f"agent {agent!r}: only Discrete, Box and 1-D MultiDiscrete action spaces are supported, got {action_space}"
        )
    ones = np.ones(num_actions, dtype=np.int8)
    ones.flags.writeable = False

    if isinstance(observation_space, spaces.Dict) and MASK_KEY in observation_space.spaces:
        _check_mask_space(observation_space.spaces[MASK_KEY], num_actions, agent)
        rest = {k: s for k, s in observation_space.spaces.items() if k != MASK_KEY}
        if set(rest) == {OBS_KEY}:
            # PettingZoo classic: the "observation" entry keeps its own shape.
            shape, inner = _compile(rest[OBS_KEY], agent)
            transform = _classic_transform(inner)
        else:
            shape, obs_fn = _flattener(spaces.Dict(rest), agent)
            transform = _with_obs_mask(obs_fn)
        has_mask = True
    else:
        if byte_images and isinstance(observation_space, spaces.Box) and observation_space.dtype == np.uint8:
            shape, obs_fn = tuple(observation_space.shape), _as_uint8
        else:
            shape, obs_fn = _compile(observation_space, agent)
        transform = _with_info_mask(obs_fn, ones)
        has_mask = False

    spec = AgentSpec(obs_shape=tuple(int(d) for d in shape), num_actions=num_actions,
                     has_action_mask=has_mask, **bounds)
    if isinstance(action_space, spaces.MultiDiscrete):
        starts = np.asarray(action_space.start, dtype=np.int64)
        return ObsPreprocessor(spec=spec, transform=transform, action_start=0, action_shape=tuple(action_space.shape), action_starts=starts)
    if isinstance(action_space, spaces.Box):
        return ObsPreprocessor(spec=spec, transform=transform, action_start=0, action_shape=tuple(action_space.shape))
    return ObsPreprocessor(spec=spec, transform=transform, action_start=int(action_space.start))


def _check_mask_space(space: spaces.Space, num_actions: int, agent: str) -> None:
    shape = getattr(space, "shape", None)
    if not isinstance(space, (spaces.Box, spaces.MultiBinary)) or shape != (num_actions,):
        raise ValueError(
            f"agent {agent!r}: observation['{MASK_KEY}'] must be a Box or MultiBinary of "
            f"shape ({num_actions},) (one flag per action), got {space}"
        )


def _compile(space: spaces.Space, agent: str) -> tuple[tuple[int, ...], _ObsFn]:
    """Shape and converter for a space with no mask to split off."""
    if isinstance(space, (spaces.Box, spaces.MultiBinary, spaces.MultiDiscrete)):
        return tuple(space.shape), _as_float32
    if isinstance(space, spaces.Discrete):
        return (int(space.n),), _one_hot_fn(int(space.n), int(space.start))
    if isinstance(space, (spaces.Dict, spaces.Tuple)):
        return _flattener(space, agent)
    raise TypeError(
        f"agent {agent!r}: unsupported observation space {space} (supported: Box, "
        "Discrete, MultiBinary, MultiDiscrete, and Dict/Tuple of those)"
    )


def _as_float32(x: Any) -> np.ndarray:
    # np.array (not asarray) so an env that reuses its own buffer cannot alias ours.
    return np.array(x, dtype=np.float32)


def _as_uint8(x: Any) -> np.ndarray:
    # A copy, as _as_float32's: an env reusing its frame buffer cannot alias ours.
    return np.array(x, dtype=np.uint8)


def _one_hot_fn(n: int, start: int) -> _ObsFn:
    def one_hot(x: Any) -> np.ndarray:
        out = np.zeros(n, dtype=np.float32)
        out[int(x) - start] = 1.0
        return out

    return one_hot


def _flattener(space: spaces.Dict | spaces.Tuple, agent: str) -> tuple[tuple[int, ...], _ObsFn]:
    try:
        size = int(spaces.flatdim(space))
    except (ValueError, NotImplementedError, TypeError) as err:
        raise TypeError(f"agent {agent!r}: cannot flatten observation space {space}: {err}") from err
    flatten = spaces.flatten

    def flat(x: Any) -> np.ndarray:
        # flatten concatenates into a new array, so the cast never aliases env memory.
        return np.asarray(flatten(space, x), dtype=np.float32)

    return (size,), flat


def _classic_transform(inner: _ObsFn) -> Transform:
    if inner is _as_float32:
        # The hot path of every PettingZoo classic game: no nested call per step.
        def transform(raw: Any, info: Mapping[str, Any] | None) -> tuple[np.ndarray, np.ndarray]:
            return (np.array(raw[OBS_KEY], dtype=np.float32),
                    np.array(raw[MASK_KEY], dtype=np.int8))

        return transform

    def transform_nested(raw: Any, info: Mapping[str, Any] | None) -> tuple[np.ndarray, np.ndarray]:
        return inner(raw[OBS_KEY]), np.array(raw[MASK_KEY], dtype=np.int8)

    return transform_nested


def _with_obs_mask(obs_fn: _ObsFn) -> Transform:
    def transform(raw: Any, info: Mapping[str, Any] | None) -> tuple[np.ndarray, np.ndarray]:
        return obs_fn(raw), np.array(raw[MASK_KEY], dtype=np.int8)

    return transform


def _with_info_mask(obs_fn: _ObsFn, ones: np.ndarray) -> Transform:
    def transform(raw: Any, info: Mapping[str, Any] | None) -> tuple[np.ndarray, np.ndarray]:
        mask = info.get(MASK_KEY) if info else None
        return obs_fn(raw), ones if mask is None else np.array(mask, dtype=np.int8)

    return transform
