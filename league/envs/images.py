"""Frames by config: frame skipping, grayscale, resize, frame stacking and scaling, done by
SuperSuit's PettingZoo wrappers (the usual, maintained tool for this; no hand-written
image code) before the env is adapted.

``frame_skip`` and ``frame_stack`` apply to any observation (an Atari game's RAM bytes
too); ``grayscale`` and ``resize`` to images only; ``scale`` defaults to on for images and
off otherwise, and leaves ``uint8`` pixels as bytes that the models divide by 255
(:func:`keeps_bytes`).

Asked for with the reserved env kwarg ``preprocess`` (``+env.kwargs.preprocess={resize:
[84, 84], grayscale: true, frame_stack: 4}``), so every place that builds the env from
``env.name`` and ``env.kwargs`` (samplers, evaluation, config checks) builds the same one.
The observation that comes out is ``[H, W, C]`` (channels last, what the conv model takes).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["PREPROCESS_KEYS", "check_preprocess", "keeps_bytes", "wrap_each_observation", "wrap_over_time"]

#: Keys of ``preprocess`` and what they do (in this order).
PREPROCESS_KEYS = {
    "frame_skip": "int >= 1: each action held for N env steps, their rewards summed (supersuit.frame_skip_v0)",
    "grayscale": "bool: RGB -> one luminance channel (supersuit.color_reduction_v0, mode full)",
    "resize": "[width, height]: bilinear resize (supersuit.resize_v1)",
    "frame_stack": "int >= 1: the last N frames as channels (supersuit.frame_stack_v1)",
    "scale": "bool, default true for images: observations from their space's bounds to 0..1 (uint8 pixels stay bytes the models read as value / 255; other bounded spaces supersuit.dtype_v0 + normalize_obs_v0 to float32)",
}


def check_preprocess(options: Any) -> dict[str, Any]:
    """``preprocess`` validated: a mapping of known keys with sensible values (ValueError otherwise)."""
    if not isinstance(options, Mapping):
        raise ValueError(f"env.kwargs.preprocess must be a mapping of {list(PREPROCESS_KEYS)}, got {options!r}")
    unknown = sorted(set(options) - set(PREPROCESS_KEYS))
    if unknown:
        raise ValueError(f"env.kwargs.preprocess has unknown key(s) {unknown}; known: " + "; ".join(f"{k} ({v})" for k, v in PREPROCESS_KEYS.items()))
    size = options.get("resize")
    if size is not None and not (isinstance(size, (list, tuple)) and len(size) == 2 and all(isinstance(x, int) and x > 0 for x in size)):
        raise ValueError(f"env.kwargs.preprocess.resize must be [width, height] (positive ints), got {size!r}")
    for key in ("frame_skip", "frame_stack"):
        count = options.get(key, 1)
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValueError(f"env.kwargs.preprocess.{key} must be an int >= 1, got {count!r}")
    return dict(options)


def wrap_each_observation(env: Any, options: Mapping[str, Any], name: str = "env") -> Any:
    """``env`` (a PettingZoo AEC or parallel env) with the wrappers ``options`` ask for that
    change each observation on its own (grayscale, resize, the channel axis, scale): safe on
    an AEC env that is stepped as a parallel one."""
    options = check_preprocess(options)
    ss = _supersuit(name)
    space = env.observation_space(env.possible_agents[0])
    is_image = len(getattr(space, "shape", ()) or ()) in (2, 3)
    if not is_image and (options.get("grayscale") or options.get("resize")):
        raise ValueError(f"env {name}: env.kwargs.preprocess grayscale and resize apply to image observations ([H, W] or [H, W, C]), this env's are {space}")
    if options.get("grayscale"):
        if len(space.shape) != 3 or space.shape[-1] != 3:
            raise ValueError(f"env {name}: grayscale needs RGB observations [H, W, 3], got shape {space.shape}")
        env = ss.color_reduction_v0(env, mode="full")
    if options.get("resize"):
        width, height = options["resize"]
        env = ss.resize_v1(env, x_size=width, y_size=height, linear_interp=True)
    shape = env.observation_space(env.possible_agents[0]).shape
    if is_image and len(shape) == 2:  # one channel: [H, W] -> [H, W, 1] for the conv model (a stack adds channels)
        env = ss.reshape_v0(env, (*shape, 1))
    if options.get("scale", is_image) and not keeps_bytes(env, options):
        if not (np.all(np.isfinite(space.low)) and np.all(np.isfinite(space.high))):
            raise ValueError(f"env {name}: env.kwargs.preprocess.scale needs bounded observations, this env's are {space}; set scale: false")
        env = ss.normalize_obs_v0(ss.dtype_v0(env, np.float32), env_min=0.0, env_max=1.0)
    return env


def keeps_bytes(env: Any, options: Mapping[str, Any]) -> bool:
    """Whether ``scale`` leaves ``env``'s observations as bytes: asked for (the default for
    images) on ``uint8`` pixels over 0..255, which the models divide by 255 at their input
    (:mod:`league.algos.byte_obs`; a quarter of float32's memory on the way to the update)."""
    space = env.observation_space(env.possible_agents[0])
    shape = getattr(space, "shape", None) or ()
    is_image = len(shape) in (2, 3)
    return (bool(options.get("scale", is_image)) and is_image and getattr(space, "dtype", None) == np.uint8
            and bool(np.all(space.low == 0)) and bool(np.all(space.high == 255)))


def wrap_over_time(env: Any, options: Mapping[str, Any], name: str = "env") -> Any:
    """``env`` with the wrappers ``options`` ask for that span steps (frame skip, then frame
    stack: a stack holds one frame per decision). On the env as it is stepped: SuperSuit's
    stack on an AEC env stepped as a parallel one fills only the first agent's at a reset."""
    options = check_preprocess(options)
    skip, stack = int(options.get("frame_skip", 1)), int(options.get("frame_stack", 1))
    if skip > 1:
        raw = env.unwrapped
        if getattr(raw, "np_random", None) is None:
            # SuperSuit's parallel frame skip draws each skip from the env's np_random (a range
            # of skips); ours is one number, so any generator gives it. Cooperative pong has none.
            raw.np_random = np.random.default_rng(0)
        env = _supersuit(name).frame_skip_v0(env, skip)
    if stack > 1:
        env = _supersuit(name).frame_stack_v1(env, stack)
    return env


def _supersuit(name: str) -> Any:
    try:
        import supersuit
    except ImportError as err:
        raise ImportError(f"env {name}: env.kwargs.preprocess needs SuperSuit (pip install 'league[images]')") from err
    return supersuit
