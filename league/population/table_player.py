"""An OpenSpiel ``TabularPolicy`` played as a league policy, from the observations an env shows.

Exact evaluation turns league policies into tables (:func:`~league.population.exploitability.tabular_policy`);
a table such as a league's meta-strategy mixture
(:func:`~league.population.exploitability.mixture_policy`) has no network to play league
games with. :func:`table_player` goes the other way: it reads, at every information state of
the game, the observation the env shows the player to move there (the same ``observation``
as exact evaluation uses, e.g. the training env's ``observe``), and plays that state's row
of the table whenever a policy is shown that observation. So ``league-eval`` can play the
mixture against anyone.

That needs observations that tell information states apart wherever the table plays them
differently; an ``"observation"`` view that forgets the history may not (``ValueError``,
naming the first clash).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from league.envs.openspiel_env import Observer, load_game
from league.policy import Policy, PolicyFactory
from league.population.exploitability import as_observer

__all__ = ["TablePolicy", "TablePolicyFactory", "table_player"]


def _key(obs: np.ndarray) -> bytes:
    return np.ascontiguousarray(obs, dtype=np.float32).tobytes()


class TablePolicy(Policy):
    """Plays fixed action probabilities looked up by observation (``{observation bytes: probs}``).

    ``explore=True`` samples each row's distribution; ``explore=False`` plays its most
    probable action (the lowest on ties), as greedy league policies do.
    """

    def __init__(self, rows: Mapping[bytes, np.ndarray], seed: int | None = None) -> None:
        self._rows = rows
        self._rng = np.random.default_rng(seed)

    def action_probabilities(self, obs: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        """``float64[B, A]``: the table's row at each observation (ValueError for one it never showed)."""
        out = []
        for i, row in enumerate(np.asarray(obs)):
            probs = self._rows.get(_key(row))
            if probs is None:
                raise ValueError(f"row {i}: an observation the table was not read at (not an information state of its game, "
                                 "or shown by another observation function)")
            out.append(probs)
        return np.stack(out) if out else np.zeros((0, np.asarray(action_mask).shape[1]))

    def compute_actions(self, obs: np.ndarray, action_mask: np.ndarray, explore: bool = True) -> dict[str, np.ndarray]:
        """Sampled (``explore``) or most probable actions; the table puts nothing on illegal ones."""
        probs = self.action_probabilities(obs, action_mask)
        if not explore:
            return {"actions": probs.argmax(axis=1).astype(np.int64)}
        cumulative = probs.cumsum(axis=1)
        draws = self._rng.random((len(probs), 1)) * cumulative[:, -1:]
        return {"actions": (draws >= cumulative).sum(axis=1).clip(max=probs.shape[1] - 1).astype(np.int64)}


class TablePolicyFactory(PolicyFactory):
    """Builds :class:`TablePolicy` players of one table (they never learn; no weights)."""

    def __init__(self, rows: Mapping[bytes, np.ndarray]) -> None:
        self.rows = rows

    def make_policy(self, seed: int | None = None, learns: bool = False) -> Policy:
        """A player of the table with its own random stream."""
        return TablePolicy(self.rows, seed)


def table_player(game: Any, table: Any, observation: str | Observer = "info_state") -> TablePolicyFactory:
    """``table`` (a ``TabularPolicy`` of ``game``) as a factory of league players that see
    ``observation`` (an observation kind or an ``Observer``, as in exact evaluation).

    Raises:
        ValueError: two information states show the same observation but the table plays
            them differently (the players could not tell which row to play).
    """
    observe = as_observer(observation)
    load_game(game)  # a bad name fails here, by name
    rows: dict[bytes, np.ndarray] = {}
    for player, keys in enumerate(table.states_per_player):
        for key in keys:
            index = table.state_lookup[key]
            obs_key = _key(np.asarray(observe(table.states[index], player)))
            probs = np.asarray(table.action_probability_array[index], dtype=np.float64)
            seen = rows.setdefault(obs_key, probs)
            if seen is not probs and not np.allclose(seen, probs, atol=1e-9):
                raise ValueError(f"information state {key!r} (player {player}) shows the same observation as another "
                                 "state the table plays differently; play it with an observation that tells them apart "
                                 "(e.g. info_state)")
    return TablePolicyFactory(rows)
