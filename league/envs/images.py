"""Image observations by config: grayscale, resize, frame stacking and scaling, done by
SuperSuit's PettingZoo wrappers (the usual, maintained tool for this; no hand-written
image code) before the env is adapted.

Asked for with the reserved env kwarg ``preprocess`` (``+env.kwargs.preprocess={resize:
[84, 84], grayscale: true, frame_stack: 4}``), so every place that builds the env from
``env.name`` and ``env.kwargs`` (samplers, evaluation, config checks) builds the same one.
The observation that comes out is ``[H, W, C]`` (channels last, what the conv model takes).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["PREPROCESS_KEYS", "check_preprocess", "wrap_images"]

#: Keys of ``preprocess`` and what they do (in this order).
PREPROCESS_KEYS = {
    "grayscale": "bool: RGB -> one luminance channel (supersuit.color_reduction_v0, mode full)",
    "resize": "[width, height]: bilinear resize (supersuit.resize_v1)",
    "frame_stack": "int >= 1: the last N frames as channels (supersuit.frame_stack_v1)",
    "scale": "bool, default true: pixels 0..255 -> 0..1 as float32 (supersuit.dtype_v0 + normalize_obs_v0)",
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
    stack = options.get("frame_stack", 1)
    if isinstance(stack, bool) or not isinstance(stack, int) or stack < 1:
        raise ValueError(f"env.kwargs.preprocess.frame_stack must be an int >= 1, got {stack!r}")
    return dict(options)


def wrap_images(env: Any, options: Mapping[str, Any], name: str = "env") -> Any:
    """``env`` (a PettingZoo AEC or parallel env) with the image wrappers ``options`` ask for."""
    options = check_preprocess(options)
    try:
        import supersuit as ss
    except ImportError as err:
        raise ImportError(f"env {name}: env.kwargs.preprocess needs SuperSuit (pip install 'league[images]')") from err
    space = env.observation_space(env.possible_agents[0])
    if len(getattr(space, "shape", ()) or ()) not in (2, 3):
        raise ValueError(f"env {name}: env.kwargs.preprocess applies to image observations ([H, W] or [H, W, C]), this env's are {space}")
    if options.get("grayscale"):
        if len(space.shape) != 3 or space.shape[-1] != 3:
            raise ValueError(f"env {name}: grayscale needs RGB observations [H, W, 3], got shape {space.shape}")
        env = ss.color_reduction_v0(env, mode="full")
    if options.get("resize"):
        width, height = options["resize"]
        env = ss.resize_v1(env, x_size=width, y_size=height, linear_interp=True)
    stack = int(options.get("frame_stack", 1))
    if stack > 1:
        env = ss.frame_stack_v1(env, stack)
    shape = env.observation_space(env.possible_agents[0]).shape
    if len(shape) == 2:  # one channel: [H, W] -> [H, W, 1] for the conv model
        env = ss.reshape_v0(env, (*shape, 1))
    if options.get("scale", True):
        env = ss.normalize_obs_v0(ss.dtype_v0(env, np.float32), env_min=0.0, env_max=1.0)
    return env
