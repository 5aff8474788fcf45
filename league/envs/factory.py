"""How a sampler builds its envs: one picklable description of the env and its options.

:class:`EnvFactory` holds an env's name, kwargs, backend (``env.backend``) and exploring
starts (``env.opening_plies``, :mod:`league.envs.openings`). A sampler asks it for

* one copy (calling it: whole games; the agents' specs),
* the batched env of its training rollouts (:meth:`EnvFactory.batched`, ``openings=True``:
  episodes open with up to ``opening_plies`` random moves), and
* the batched env of its evaluation games (``openings=False``: whole games),

each the C++ game (:class:`~league.envs.boards.BoardBatchedEnv`) on ``backend="cpp"``, an OpenSpiel
game's states stepped in one loop (:class:`~league.envs.openspiel_batched.OpenSpielBatchedEnv`,
the same outputs as the next, 3-7x the env steps/s: benchmarks/bench_openspiel.py) where a copy is a plain
:class:`~league.envs.openspiel_env.OpenSpielEnv`, and N copies of the env behind
:class:`~league.envs.batched.VectorizedEnv` otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from league.envs.base import MultiAgentEnv
from league.envs.batched import BatchedMultiAgentEnv, VectorizedEnv
from league.envs.boards import BoardBatchedEnv, resolve_backend
from league.envs.openings import RandomOpenings
from league.envs.registry import make_env, openspiel_game_of

__all__ = ["EnvFactory"]


class EnvFactory:
    """An env and its options (see the module docstring).

    Args:
        name: a registered env name, module path, ``gymnasium:<id>`` or ``openspiel:<game>``.
        kwargs: the env's keyword arguments (``env.kwargs``).
        backend: ``pettingzoo`` (the adapters, any env), ``cpp`` (the C++ board games) or
            ``auto`` (cpp where the game has it and no kwargs are given); resolved here.
        opening_plies: training episodes of a turn-based game open with ``0..opening_plies``
            random legal moves nobody learns from (evaluation plays whole games).

    Raises:
        ValueError: a backend the env lacks, or ``opening_plies`` not an int >= 0.
    """

    def __init__(self, name: str, kwargs: Mapping[str, Any] | None = None, backend: str = "pettingzoo",
                 opening_plies: int = 0) -> None:
        if isinstance(opening_plies, bool) or not isinstance(opening_plies, (int, np.integer)) or opening_plies < 0:
            raise ValueError(f"opening_plies must be an int >= 0, got {opening_plies!r}")
        self.name = name
        self.kwargs = dict(kwargs or {})
        self.backend = resolve_backend(name, backend, self.kwargs)
        self.opening_plies = int(opening_plies)

    def __call__(self) -> MultiAgentEnv:
        """One copy of the env (whole games)."""
        backend: dict[str, Any] = {} if self.backend == "pettingzoo" else {"backend": self.backend}
        return make_env(self.name, **self.kwargs, **backend)

    def batched(
        self, num_envs: int, rng: np.random.Generator, openings: bool = True, max_consecutive_failures: int = 5
    ) -> BatchedMultiAgentEnv:
        """``num_envs`` copies under the batched contract; ``openings``: with exploring starts
        (training), else whole games (evaluation). ``rng`` seeds the openings;
        ``max_consecutive_failures`` bounds :class:`VectorizedEnv`'s crashes in a row."""
        plies = self.opening_plies if openings else 0
        if self.backend == "cpp":
            return BoardBatchedEnv(self.name, num_envs, seed=int(rng.integers(2**63)) if plies else 0, opening_plies=plies)
        if openspiel_game_of(self.name) is not None:
            batched = self._openspiel_batched(num_envs, rng, plies, max_consecutive_failures)
            if batched is not None:
                return batched
        env_fn = _Opened(self, plies, rng) if plies else self
        return VectorizedEnv(env_fn, num_envs, self.name, max_consecutive_failures=max_consecutive_failures)

    def _openspiel_batched(
        self, num_envs: int, rng: np.random.Generator, plies: int, max_consecutive_failures: int
    ) -> BatchedMultiAgentEnv | None:
        """The OpenSpiel game's batched env, or None where a copy is not a plain OpenSpielEnv
        (a user's factory under an OpenSpiel name)."""
        from league.envs.openspiel_batched import OpenSpielBatchedEnv
        from league.envs.openspiel_env import OpenSpielEnv

        env = self()
        if type(env) is not OpenSpielEnv:
            env.close()
            return None
        return OpenSpielBatchedEnv(env, num_envs, self.name, max_consecutive_failures=max_consecutive_failures,
                                   opening_plies=plies, opening_rng=rng if plies else None)

    def __repr__(self) -> str:
        return (f"EnvFactory({self.name!r}, kwargs={self.kwargs}, backend={self.backend!r}, "
                f"opening_plies={self.opening_plies})")


class _Opened:
    """Picklable ``() -> MultiAgentEnv``: a copy whose episodes open at random
    (:class:`RandomOpenings`, each copy seeded from ``rng``)."""

    def __init__(self, factory: EnvFactory, plies: int, rng: np.random.Generator) -> None:
        self.factory, self.plies, self._rng = factory, plies, rng

    def __call__(self) -> MultiAgentEnv:
        return RandomOpenings(self.factory(), self.plies, seed=int(self._rng.integers(2**63)))
