"""Observations read from a pygame screen in one contiguous copy, optionally shrunk and gray.

What the PettingZoo butterfly plug-ins (:mod:`league.games.cooperative_pong`,
:mod:`league.games.pistonball`) share: PettingZoo reads each observation from its pygame
screen through a strided ``surfarray`` view (a slow element-wise copy), and SuperSuit then
shrinks and grays it per agent. Here the region is scaled where it is drawn (pygame's
``smoothscale``: averaging, as a bilinear resize does when shrinking) and copied out once
(``pygame.image.tobytes``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pygame

__all__ = ["observation_shape", "read_screen", "screen_size"]

#: Luminance weights of R, G, B (ITU-R 601, as SuperSuit's ``color_reduction`` mode ``full``).
_LUMINANCE = np.array([0.299, 0.587, 0.114], dtype=np.float32)


def screen_size(value: Sequence[int] | None, game: str) -> tuple[int, int] | None:
    """``observation_size`` as ``(width, height)``, or None for the full region; ``ValueError``
    naming ``game``'s kwarg for anything but two positive ints."""
    if value is None:
        return None
    size: Any = tuple(value) if not isinstance(value, (str, bytes)) else ()
    if len(size) != 2 or not all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in size):
        raise ValueError(f"{game}'s observation_size must be [width, height] (positive ints), got {value!r}")
    return int(size[0]), int(size[1])


def observation_shape(width: int, height: int, grayscale: bool) -> tuple[int, ...]:
    """The shape of an observation ``width`` x ``height`` pixels: ``[height, width]`` gray, else ``[height, width, 3]``."""
    return (height, width) if grayscale else (height, width, 3)


def read_screen(surface: pygame.Surface, size: tuple[int, int] | None, grayscale: bool) -> np.ndarray:
    """``surface`` (a screen or a subsurface of it) as uint8 ``[height, width, 3]`` (or
    ``[height, width]`` with ``grayscale``), scaled to ``size`` (``(width, height)``) first when given."""
    if size is not None:
        surface = pygame.transform.smoothscale(surface, size)
    width, height = surface.get_size()
    frame = np.frombuffer(bytearray(pygame.image.tobytes(surface, "RGB")), dtype=np.uint8).reshape(height, width, 3)
    if grayscale:
        return (frame.astype(np.float32) @ _LUMINANCE).astype(np.uint8)
    return frame
