"""PettingZoo's cooperative pong with its screen read once a frame, optionally downscaled.

PettingZoo 1.27's ``cooperative_pong_v6`` calls ``render()`` after every agent's move, and
with ``render_mode="rgb_array"`` (the only way its screen gets drawn without a window) each
call copies the 280x480 screen through a strided view and throws the copy away; each agent's
observation is another such copy, and SuperSuit's grayscale and resize then run once per
agent on the same screen. Those copies and transforms are most of a step here (1.3-1.4 ms
per copy, about 1.7 ms per agent to shrink a frame, against 0.03 ms to draw it).

This module is the same game, built from PettingZoo's own classes, with the same rewards and
ends. The screen is drawn after every move whatever the render mode (so observations are
never blank), an observation is read once a frame (both paddles see the whole screen) with
one contiguous copy, and a frame is copied for ``render()`` only when asked. With the default
kwargs its observations are PettingZoo's, value for value. Two kwargs of its own shrink the
screen where it is drawn, so no wrapper copies it full-size:

* ``observation_size=[width, height]``: the screen scaled by pygame's ``smoothscale``
  (averaging, as a bilinear resize does when shrinking);
* ``grayscale=True``: one luminance channel (ITU-R 601 weights, as SuperSuit's
  ``color_reduction`` mode ``full``), observations ``[height, width]``.

A third reads the game instead of its screen, as an Atari game's ``obs_type="ram"`` does:
``obs_type="state"`` gives every paddle the six numbers the screen shows, the ball's centre
and velocity and both paddles' heights (:data:`STATE_FIELDS`, each scaled to about [-1, 1]);
``obs_type="rgb_image"`` (the default) is the screen.

It is a PettingZoo module like any user's: ``env.name=league.games.cooperative_pong``
(``configs/env/cooperative_pong.yaml``) with PettingZoo's kwargs and those three; ``env()``
is the AEC env, ``parallel_env()`` the parallel one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium.utils import EzPickle, seeding
from pettingzoo.butterfly.cooperative_pong.cooperative_pong import CooperativePong
from pettingzoo.butterfly.cooperative_pong.cooperative_pong import raw_env as _PettingZooRawEnv
from pettingzoo.utils import wrappers
from pettingzoo.utils.conversions import parallel_wrapper_fn

from league.games.screens import observation_shape, read_screen, screen_size

__all__ = ["OBS_TYPES", "STATE_FIELDS", "env", "parallel_env", "raw_env"]

#: What ``obs_type`` may be: the screen, or the game's state as numbers.
OBS_TYPES = ("rgb_image", "state")
#: The numbers of ``obs_type="state"``, in order: positions over the screen's width or height,
#: the ball's velocity over its speed.
STATE_FIELDS = ("ball_x", "ball_y", "ball_vx", "ball_vy", "left_paddle_y", "right_paddle_y")


class _DrawnGame(CooperativePong):
    """The game, drawing its screen after every move and reading it once a frame."""

    def __init__(self, *args: Any, observation_size: tuple[int, int] | None = None, grayscale: bool = False,
                 obs_type: str = "rgb_image", **kwargs: Any) -> None:  # fmt: skip
        super().__init__(*args, **kwargs)
        self.observation_size = observation_size
        self.grayscale = grayscale
        self.obs_type = obs_type
        self._frame: np.ndarray | None = None
        width, height = observation_size or (self.s_width, self.s_height)
        space: gymnasium.spaces.Box[Any]
        if obs_type == "state":
            space = gymnasium.spaces.Box(low=-1.5, high=1.5, shape=(len(STATE_FIELDS),), dtype=np.float32)
        else:
            space = gymnasium.spaces.Box(low=0, high=255, shape=observation_shape(width, height, grayscale), dtype=np.uint8)
        self.observation_space = [space for _ in range(self.num_agents)]

    def render(self) -> np.ndarray | None:
        """Draw the screen (the game calls this after every move); a window's frame is shown
        as PettingZoo shows it. Returns nothing: :meth:`full_frame` copies the screen."""
        self._frame = None
        if self.render_mode == "human":
            return super().render()
        self.draw()
        return None

    def full_frame(self) -> np.ndarray:
        """The screen as ``[height, width, 3]`` uint8 (what PettingZoo's ``observe`` returns)."""
        assert self.screen is not None
        return read_screen(self.screen, None, grayscale=False)

    def observe(self) -> np.ndarray:
        """Every agent's observation of the current frame (computed once, a copy each)."""
        if self._frame is None:
            assert self.screen is not None
            self._frame = self.state_numbers() if self.obs_type == "state" else read_screen(self.screen, self.observation_size, self.grayscale)
        return self._frame.copy()

    def state_numbers(self) -> np.ndarray:
        """:data:`STATE_FIELDS` of the current frame, float32."""
        ball, speed = self.ball._rect, self.ball._speed  # noqa: SLF001 - where PettingZoo's ball keeps them (no public face)
        scale = float(self.speed[0]) or 1.0
        return np.array(
            [ball.centerx / self.s_width, ball.centery / self.s_height, speed[0] / scale, speed[1] / scale,
             self.p0.rects[0].centery / self.s_height, self.p1.rects[0].centery / self.s_height],
            dtype=np.float32,
        )  # fmt: skip


class raw_env(_PettingZooRawEnv):  # noqa: N801 - PettingZoo's name for the unwrapped env
    """PettingZoo's cooperative pong env over :class:`_DrawnGame`.

    Args:
        observation_size: ``[width, height]`` the screen is scaled to for observations, or
            None for the full screen.
        grayscale: observations of one luminance channel (``[height, width]``).
        obs_type: ``"rgb_image"`` (the screen) or ``"state"`` (:data:`STATE_FIELDS`).
        **kwargs: PettingZoo's (``max_cycles``, ``ball_speed``, ``render_mode``...).
    """

    def __init__(self, observation_size: Sequence[int] | None = None, grayscale: bool = False, obs_type: str = "rgb_image",
                 **kwargs: Any) -> None:  # fmt: skip
        if obs_type not in OBS_TYPES:
            raise ValueError(f"cooperative pong's obs_type must be one of {list(OBS_TYPES)}, got {obs_type!r}")
        if obs_type == "state" and (observation_size is not None or grayscale):
            raise ValueError("cooperative pong's observation_size and grayscale shape its screen: drop them with obs_type=state")
        self._observation_size = screen_size(observation_size, "cooperative pong")
        self._grayscale = bool(grayscale)
        self._obs_type = obs_type
        super().__init__(**kwargs)
        EzPickle.__init__(self, observation_size=observation_size, grayscale=grayscale, obs_type=obs_type, **kwargs)  # pickles rebuild it whole

    def _seed(self, seed: int | None = None) -> None:
        self.randomizer, seed = seeding.np_random(seed)
        self.env = _DrawnGame(self.randomizer, observation_size=self._observation_size, grayscale=self._grayscale,
                              obs_type=self._obs_type, **self._kwargs)  # fmt: skip

    def render(self) -> np.ndarray | None:
        """The current frame (``render_mode="rgb_array"``), a window's (``"human"``), or None
        with Gymnasium's warning when no render mode was given."""
        if self.render_mode == "rgb_array":
            return self.env.full_frame()
        if self.render_mode is None:
            gymnasium.logger.warn("You are calling render method without specifying any render mode.")
            return None
        return self.env.render()


def env(**kwargs: Any) -> Any:
    """The AEC env, wrapped as PettingZoo wraps ``cooperative_pong_v6.env()``."""
    game: Any = raw_env(**kwargs)
    game = wrappers.AssertOutOfBoundsWrapper(game)
    return wrappers.OrderEnforcingWrapper(game)


#: The parallel env (PettingZoo's conversion of :func:`env`).
parallel_env = parallel_wrapper_fn(env)
