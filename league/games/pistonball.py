"""PettingZoo's pistonball with every piston's view drawn and read where it is drawn.

PettingZoo 1.27's ``pistonball_v6`` crops each piston's observation from its pygame screen,
which it redraws only when a render mode is set: without one every observation after reset is
the first frame. Each of the 20 crops (457x120 RGB) is then copied through a strided view and,
with SuperSuit's preprocessing, grayed and resized per piston: most of a step here.

This module is the same game (PettingZoo's class, rules, rewards and ends), with:

* the screen drawn after every cycle whatever the render mode (``render()`` still returns a
  frame only for the mode asked; without one it warns and returns None, as PettingZoo's does);
* ``observation_size=[width, height]`` and ``grayscale`` (kwargs of its own): each piston's
  view scaled and grayed where it is drawn and copied out once
  (:func:`league.games.screens.read_screen`), no SuperSuit pass per piston. Without them the
  observations are PettingZoo's, value for value.

``env.name=league.games.pistonball`` (``configs/env/pistonball.yaml``); ``env()`` is the
AEC env, ``parallel_env()`` the parallel one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium
import numpy as np
import pygame
from gymnasium.utils import EzPickle
from pettingzoo.butterfly.pistonball.pistonball import raw_env as _PettingZooRawEnv
from pettingzoo.utils import wrappers
from pettingzoo.utils.conversions import parallel_wrapper_fn

from league.games.screens import observation_shape, read_screen, screen_size

__all__ = ["env", "parallel_env", "raw_env"]


class raw_env(_PettingZooRawEnv):  # noqa: N801 - PettingZoo's name for the unwrapped env
    """PettingZoo's pistonball env, its screen always drawn, its views optionally shrunk.

    Args:
        observation_size: ``[width, height]`` each piston's view is scaled to, or None for
            PettingZoo's 120 x 457.
        grayscale: views of one luminance channel (``[height, width]``).
        render_mode: as PettingZoo's (None, ``"rgb_array"``, ``"human"``).
        **kwargs: PettingZoo's (``n_pistons``, ``continuous``, ``max_cycles``...).
    """

    def __init__(self, observation_size: Sequence[int] | None = None, grayscale: bool = False,
                 render_mode: str | None = None, **kwargs: Any) -> None:  # fmt: skip
        self._observation_size = screen_size(observation_size, "pistonball")
        self._grayscale = bool(grayscale)
        super().__init__(render_mode=render_mode, **kwargs)
        EzPickle.__init__(self, observation_size=observation_size, grayscale=grayscale, render_mode=render_mode, **kwargs)
        # PettingZoo's draw() draws nothing without a render mode, and observations are read
        # from the screen it draws: draw as for rgb_array (which adds no copy to a step).
        self._asked_render_mode = render_mode
        if render_mode is None:
            self.render_mode = "rgb_array"
        self._view_height = self.screen_height - 2 * self.wall_width - self.piston_body_height
        width, height = self._observation_size or (3 * self.piston_width, self._view_height)
        space = gymnasium.spaces.Box(low=0, high=255, shape=observation_shape(width, height, self._grayscale), dtype=np.uint8)
        self.observation_spaces = dict.fromkeys(self.agents, space)

    def observe(self, agent: str) -> np.ndarray:
        """Piston ``agent``'s view: the screen above its own and its two neighbours' columns."""
        if self._observation_size is None and not self._grayscale:
            return super().observe(agent)
        left = self.wall_width + self.piston_width * (self.agent_name_mapping[agent] - 1)
        view = pygame.Rect(left, self.wall_width, 3 * self.piston_width, self._view_height)
        return read_screen(self.screen.subsurface(view), self._observation_size, self._grayscale)

    def render(self) -> np.ndarray | None:
        """The current frame for the render mode asked; without one, Gymnasium's warning and None."""
        if self._asked_render_mode is None:
            gymnasium.logger.warn("You are calling render method without specifying any render mode.")
            return None
        return super().render()


def env(**kwargs: Any) -> Any:
    """The AEC env, wrapped as PettingZoo wraps ``pistonball_v6.env()``."""
    game: Any = raw_env(**kwargs)
    if game.continuous:
        game = wrappers.ClipOutOfBoundsWrapper(game)
    else:
        game = wrappers.AssertOutOfBoundsWrapper(game)
    return wrappers.OrderEnforcingWrapper(game)


#: The parallel env (PettingZoo's conversion of :func:`env`).
parallel_env = parallel_wrapper_fn(env)
