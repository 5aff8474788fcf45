"""Scripted players: the generic face of players that search or follow a script.

A game plug-in (``league/games/``) registers its scripted players by name in
:data:`SCRIPTED_PLAYERS` (connect four's ``negamax``, tic-tac-toe's ``minimax``); league
configs (``league.fixed_opponents``, ``league.scripted``) and ``league-eval opponents=``
name them, and :func:`scripted_factory` builds one for an agent's spec. ``random`` (the
uniform legal move) is every game's and needs no plug-in. A plug-in may also register a *mix*
in :data:`SCRIPTED_MIXES`: a yardstick (``eval.yardstick``) of several scripted players, one
drawn for each seat of each evaluation game, so the figure against it is the mean over their
styles (one style is exploitable in ways that say nothing of strength: limit Hold'em's).

:class:`BoardSearchPolicy` is the base of players that score each legal move of a batch of
positions and play the best: with ``explore=True`` ties between equally good moves are
broken at random (so scripted opponents are not perfectly predictable); otherwise the
lowest action index wins. ``action_probabilities`` is the ``explore=True`` distribution:
uniform over the equally best moves, one-hot when one move is best. No masked action is
ever returned.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from league.envs.base import AgentSpec
from league.policy import Policy, PolicyFactory, RandomPolicyFactory
from league.registry import Registry

__all__ = ["BoardSearchPolicy", "SCRIPTED_MIXES", "SCRIPTED_PLAYERS", "ScriptedFactory", "ScriptedMaker", "UNSCORED", "check_board_shape",
           "scripted_factory", "scripted_members", "scripted_player_names"]

#: Score of a move that is illegal or unplayable (below every real score).
UNSCORED = np.iinfo(np.int64).min


class BoardSearchPolicy(Policy):
    """Per-row search: subclasses score the legal moves, this picks the best.

    Args:
        seed: seed of the generator that breaks ties between equally good moves.
        random_ties: break ties at random even when asked to act greedily (an evaluation
            of greedy learned policies against a scripted player that still varies).
    """

    obs_shape: tuple[int, ...]
    num_actions: int

    def __init__(self, seed: int | None = None, random_ties: bool = False) -> None:
        self._rng = np.random.default_rng(seed)
        self.random_ties = bool(random_ties)

    def compute_actions(
        self, obs: np.ndarray, action_mask: np.ndarray, explore: bool = True
    ) -> dict[str, np.ndarray]:
        """Best legal move per row (ties broken at random when ``explore``), for the whole batch at once."""
        top, unscored = self._top(obs, action_mask)
        # ``random_ties`` varies the choice among equally good moves only, not among
        # moves the board could not score (the mask allows them; trust it).
        random_pick = np.full(len(top), True) if explore else (self.random_ties & ~unscored)
        counts = top.sum(axis=1)
        k = np.where(random_pick, (self._rng.random(len(top)) * counts).astype(np.int64), 0)
        # The k-th best move of each row: the first index where the running count exceeds k.
        actions = (np.cumsum(top, axis=1) > k[:, None]).argmax(axis=1).astype(np.int64)
        return {"actions": actions}

    def action_probabilities(self, obs: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        """``float64[B, A]``: uniform over each row's equally best legal moves (one-hot when
        one move is best), the distribution ``compute_actions(explore=True)`` samples."""
        top, _ = self._top(obs, action_mask)
        return top / top.sum(axis=1, keepdims=True)

    def _top(self, obs: np.ndarray, action_mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``bool[B, A]`` the best-scoring legal moves of each row, and ``bool[B]`` rows where
        the board could score none of the legal moves (then all of them, trusting the mask)."""
        obs, mask = self._check(obs, action_mask)
        scores = self._score_batch(obs, mask)
        if scores is None:  # a subclass without a batched scorer: row by row
            top = np.zeros(mask.shape, dtype=bool)
            unscored = np.zeros(len(mask), dtype=bool)
            for row, (moves, none) in enumerate(self._choices(obs, mask)):
                top[row, moves], unscored[row] = True, none
            return top, unscored
        scores = np.where(mask.astype(bool), scores, UNSCORED)
        unscored = (scores == UNSCORED).all(axis=1)
        scores[unscored] = np.where(mask[unscored].astype(bool), 0, UNSCORED)
        best = scores.max(axis=1, keepdims=True)
        return (scores == best) & (scores != UNSCORED), unscored

    def _score_batch(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray | None:
        """Optional batched scorer: ``int64[B, A]`` scores of every move of every row
        (:data:`UNSCORED` where unplayable), or None (the default) to score row by row
        with :meth:`_score_moves`."""
        return None

    def _check(self, obs: np.ndarray, action_mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        obs = np.asarray(obs)
        mask = np.asarray(action_mask)
        if obs.ndim != len(self.obs_shape) + 1 or obs.shape[1:] != self.obs_shape:
            raise ValueError(
                f"{type(self).__name__} expects obs of shape [B, {', '.join(map(str, self.obs_shape))}], "
                f"got {list(obs.shape)}"
            )
        if mask.shape != (len(obs), self.num_actions):
            raise ValueError(
                f"action_mask must have shape [{len(obs)}, {self.num_actions}], got {list(mask.shape)}"
            )
        empty = ~mask.astype(bool).any(axis=1)
        if empty.any():
            raise ValueError(f"action mask row {int(np.argmax(empty))} has no legal action")
        return obs, mask

    def _choices(self, obs: np.ndarray, action_mask: np.ndarray) -> list[tuple[list[int], bool]]:
        """Per row: the best-scoring legal moves (ascending) and whether the board could
        score none of the legal moves (then all of them, trusting the mask)."""
        obs, mask = self._check(obs, action_mask)
        out = []
        for row in range(len(obs)):
            legal = [int(a) for a in np.flatnonzero(mask[row])]
            if not legal:
                raise ValueError(f"action mask row {row} has no legal action")
            scores = self._score_moves(obs[row], legal)
            if not scores:
                out.append((legal, True))
                continue
            best = max(scores.values())
            out.append((sorted(a for a, s in scores.items() if s == best), False))
        return out

    @abstractmethod
    def _score_moves(self, obs: np.ndarray, legal: list[int]) -> dict[int, int]:
        """Score (higher is better for the mover) of each legal move playable on ``obs``."""


class ScriptedFactory(PolicyFactory):
    """Builds scripted players of one class for a sampler (they never learn)."""

    def __init__(self, cls: Callable[..., Policy], **kwargs: Any) -> None:
        self.cls, self.kwargs = cls, kwargs

    def make_policy(self, seed: int | None = None, learns: bool = False) -> Policy:
        """A new scripted player."""
        return self.cls(seed=seed, **self.kwargs)


class ScriptedMaker(Protocol):
    """What a game registers for a scripted player: the factory for agents of ``spec``
    (ValueError naming the game when ``spec`` is not its board). ``depth``: the search depth
    (``league.negamax_depth``, ``league-eval depth=``) where the player searches to one;
    ``random_ties``: break ties at random even when acting greedily."""

    def __call__(self, spec: AgentSpec, depth: int, random_ties: bool) -> PolicyFactory: ...


#: Scripted players by name (``random`` is built in, not registered).
SCRIPTED_PLAYERS: Registry[ScriptedMaker] = Registry("scripted player")


#: Yardsticks of several scripted players by name: the players' names, one drawn per seat and game.
SCRIPTED_MIXES: Registry[tuple[str, ...]] = Registry("scripted mix")


def scripted_members(name: str) -> tuple[str, ...]:
    """The scripted players ``name`` stands for: a registered mix's members, else ``(name,)``."""
    return SCRIPTED_MIXES.get(name, "scripted mix") if name in SCRIPTED_MIXES else (name,)


def scripted_player_names() -> list[str]:
    """``random`` and every registered scripted player."""
    return ["random", *SCRIPTED_PLAYERS.names()]


def scripted_factory(name: str, spec: AgentSpec, depth: int = 2, random_ties: bool = False,
                     setting: str = "scripted player") -> PolicyFactory:
    """The factory of scripted player ``name`` for agents of ``spec``; ValueError when it is
    unknown or cannot play this game (``setting``: the config key that named it)."""
    if name == "random":
        return RandomPolicyFactory.for_spec(spec)
    return SCRIPTED_PLAYERS.get(name, setting)(spec, depth=depth, random_ties=random_ties)


def check_board_shape(name: str, game: str, cls: type[BoardSearchPolicy], spec: AgentSpec) -> None:
    """ValueError unless ``spec`` is the board ``cls`` plays (``obs_shape``, ``num_actions``)."""
    if (tuple(spec.obs_shape), spec.num_actions) != (cls.obs_shape, cls.num_actions):
        raise ValueError(f"scripted player '{name}' plays {game} only; this env's agents see obs {tuple(spec.obs_shape)}")
