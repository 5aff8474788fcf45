"""A PettingZoo ``aec_to_parallel`` env that observes each agent once a step, and looks up
the AEC env's bookkeeping without a walk down its wrappers.

PettingZoo's ``aec_to_parallel`` steps its AEC env one agent at a time: before each action it
asks ``last()``, whose observation it discards, then observes every agent again; and for each
agent's action it reads ``rewards`` of every agent, ``agents``, ``terminations``... each
lookup passing down every wrapper's ``__getattr__`` (PettingZoo's checks, SuperSuit's
per-observation wrappers: eight layers and more). Observing is most of an image env's step
(pistonball copies its screen for each piston) and the lookups grow with the square of the
agents (pistonball's 20: 800k ``__getattr__`` calls in 116 steps, 40% of its step time).
"""

from __future__ import annotations

from typing import Any

from pettingzoo.utils.conversions import aec_to_parallel_wrapper
from pettingzoo.utils.wrappers import BaseWrapper

__all__ = ["BOOKKEEPING", "LastWithoutObservation", "observe_once_parallel"]

#: The AEC attributes ``aec_to_parallel``'s step reads per agent; each is read from the env that
#: holds it (the first down the wrappers to define it), not through every wrapper on the way.
BOOKKEEPING = ("agents", "agent_selection", "rewards", "terminations", "truncations", "infos")


def _holder(env: Any, name: str) -> Any:
    """The first of ``env`` and the envs it wraps (``.env``) that defines ``name`` itself (in
    its instance dict or its class), so that reading it there is what reading it through
    every wrapper's ``__getattr__`` would give."""
    obj = env
    while name not in vars(obj) and not hasattr(type(obj), name):
        inner = vars(obj).get("env")
        if inner is None:
            return env  # nobody defines it: leave it to the wrappers (they raise as they would)
        obj = inner
    return obj


class LastWithoutObservation(BaseWrapper):
    """An AEC env whose ``last()`` skips the observation (``aec_to_parallel`` discards it) and
    whose bookkeeping attributes are read from the env that holds them."""

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self._holders: dict[str, Any] = {}

    def last(self, observe: bool = True) -> Any:
        """``last()`` without the observation."""
        return super().last(observe=False)

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        """Reset, and find the bookkeeping's holders again (a wrapper's reset may set its own)."""
        self.env.reset(seed=seed, options=options)
        self._holders = {name: _holder(self.env, name) for name in BOOKKEEPING}

    def _read(self, name: str) -> Any:
        holder = self._holders.get(name)
        return getattr(self.env if holder is None else holder, name)

    agents = property(lambda self: self._read("agents"))
    agent_selection = property(lambda self: self._read("agent_selection"))
    rewards = property(lambda self: self._read("rewards"))
    terminations = property(lambda self: self._read("terminations"))
    truncations = property(lambda self: self._read("truncations"))
    infos = property(lambda self: self._read("infos"))


def observe_once_parallel(aec: Any) -> Any:
    """``aec_to_parallel(aec)`` whose step observes each agent once and reads the AEC env's
    bookkeeping from where it lives: the same game step for step (tested on pistonball)."""
    return aec_to_parallel_wrapper(LastWithoutObservation(aec))
