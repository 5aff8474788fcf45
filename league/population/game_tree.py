"""A summary of an OpenSpiel game's tree for exact evaluation, and the array operations on it.

One depth-first walk over every history of a game gives, per ``TabularPolicy`` row (an
information state), the acting player and its previous own decision, and per terminal its
chance probability, returns and the decisions on its path (:class:`GameTree`, cached per
game). On it, a policy table ``probs[S, A]`` is evaluated in a few numpy operations:
own-action reach (:func:`own_reach`), a mixture's behaviour policy (:func:`mixed_probs`),
expected returns of a seating (:func:`seated_value`), per-player reach of terminals
(:func:`terminal_reach`) and every player's exact best response (:func:`best_responses`).
:mod:`league.population.exploitability` and :mod:`league.population.min_exploitability`
are built on these.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyspiel

__all__ = [
    "GameTree", "game_tree", "uniform_table", "own_reach", "mixed_probs", "seated_value", "terminal_reach", "best_responses",
]


@dataclass(frozen=True)
class GameTree:
    """What exact evaluation needs from a game tree, indexed by ``TabularPolicy`` rows.

    ``parent_row[s]``/``parent_action[s]``: the acting player's previous information
    state and action on the way to row ``s`` (-1 at its first decision);
    ``levels``: rows grouped by how many own decisions precede them (level 0 first);
    terminals: chance probability, returns, and the (row, action) decisions on the
    path, padded with row ``num_rows`` (a row of ones when gathering probabilities).
    """

    state_lookup: dict[str, int]
    row_player: np.ndarray
    parent_row: np.ndarray
    parent_action: np.ndarray
    levels: tuple[np.ndarray, ...]
    perfect_recall: bool
    terminal_chance: np.ndarray
    terminal_returns: np.ndarray
    path_rows: np.ndarray
    path_actions: np.ndarray


# Per-game caches keyed by the game's string (parameters included), oldest dropped first.
_CACHE_SIZE = 8
_TEMPLATES: dict[str, Any] = {}
_TREES: dict[str, GameTree] = {}


def _cached(cache: dict[str, Any], game: pyspiel.Game, build: Any) -> Any:
    key = str(game)
    value = cache.get(key)
    if value is None:
        value = build(game)
        if len(cache) >= _CACHE_SIZE:
            cache.pop(next(iter(cache)))
        cache[key] = value
    return value


def uniform_table(game: pyspiel.Game) -> Any:
    """The cached uniform ``TabularPolicy`` of ``game``; copy it, never modify it."""
    from open_spiel.python.policy import TabularPolicy

    return _cached(_TEMPLATES, game, TabularPolicy)


def game_tree(game: pyspiel.Game) -> GameTree:
    """The cached :class:`GameTree` of ``game``."""
    return _cached(_TREES, game, _build_game_tree)


def _build_game_tree(game: pyspiel.Game) -> GameTree:
    """One depth-first walk over every history of ``game``."""
    if not game.get_type().provides_information_state_string:
        raise ValueError(f"game {game} has no information state strings, needed for exact evaluation")
    lookup = uniform_table(game).state_lookup
    num_rows = len(lookup)
    row_player = np.full(num_rows, -1)
    parent = np.full((num_rows, 2), -2)  # -2: not visited yet
    depth = np.zeros(num_rows, dtype=np.int64)
    recall = [True]
    chances: list[float] = []
    returns: list[list[float]] = []
    paths: list[list[tuple[int, int]]] = []
    last: list[tuple[int, int]] = [(-1, -1)] * game.num_players()
    path: list[tuple[int, int]] = []

    def visit(state: pyspiel.State, chance: float) -> None:
        if state.is_terminal():
            chances.append(chance)
            returns.append(state.returns())
            paths.append(list(path))
            return
        if state.is_chance_node():
            for action, prob in state.chance_outcomes():
                visit(state.child(action), chance * prob)
            return
        player = state.current_player()
        row = lookup[state.information_state_string(player)]
        previous = last[player]
        if parent[row, 0] == -2:
            row_player[row] = player
            parent[row] = previous
            depth[row] = 0 if previous[0] < 0 else depth[previous[0]] + 1
        elif tuple(parent[row]) != previous:
            recall[0] = False
        for action in state.legal_actions():
            last[player] = (row, action)
            path.append((row, action))
            visit(state.child(action), chance)
            path.pop()
        last[player] = previous

    visit(game.new_initial_state(), 1.0)
    width = max(len(p) for p in paths)
    padded = np.array([p + [(num_rows, 0)] * (width - len(p)) for p in paths], dtype=np.int64).reshape(-1, width, 2)
    return GameTree(
        state_lookup=lookup,
        row_player=row_player,
        parent_row=parent[:, 0].copy(),
        parent_action=parent[:, 1].copy(),
        levels=tuple(np.flatnonzero(depth == d) for d in range(int(depth.max()) + 1)),
        perfect_recall=recall[0],
        terminal_chance=np.asarray(chances),
        terminal_returns=np.asarray(returns, dtype=np.float64),
        path_rows=padded[:, :, 0],
        path_actions=padded[:, :, 1],
    )


def own_reach(tree: GameTree, probs: np.ndarray) -> np.ndarray:
    """``float64[K, S]``: for policy tables ``probs[K, S, A]``, the product of each
    policy's probabilities of the acting player's own earlier actions, per row."""
    reach = np.ones(probs.shape[:2])
    for rows in tree.levels[1:]:
        parents, actions = tree.parent_row[rows], tree.parent_action[rows]
        reach[:, rows] = reach[:, parents] * probs[:, parents, actions]
    return reach


def mixed_probs(tree: GameTree, probs: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``float64[S, A]``: the behaviour policy of the mixture of tables ``probs[K, S, A]``
    under normalised weights ``w[K]`` (see :func:`mixture_policy`)."""
    weighted_reach = w[:, None] * own_reach(tree, probs)
    numerator = np.einsum("ks,ksa->sa", weighted_reach, probs)
    denominator = weighted_reach.sum(axis=0)[:, None]
    average = np.einsum("k,ksa->sa", w, probs)
    safe = np.where(denominator > 0.0, denominator, 1.0)
    return np.where(denominator > 0.0, numerator / safe, average)



def seated_value(tree: GameTree, probs_0: np.ndarray, probs_1: np.ndarray) -> np.ndarray:
    """Expected returns per player when player 0 plays ``probs_0`` and player 1 ``probs_1``."""
    joint = np.where((tree.row_player == 0)[:, None], probs_0, probs_1)
    joint = np.vstack([joint, np.ones((1, joint.shape[1]))])
    reach = tree.terminal_chance * joint[tree.path_rows, tree.path_actions].prod(axis=1)
    return reach @ tree.terminal_returns



def terminal_reach(tree: GameTree, probs: np.ndarray) -> np.ndarray:
    """``float64[num_players, T]``: per terminal, the product of ``probs`` (``[S, A]``) over
    each player's own decisions on its path (player ``p``'s contribution to its reach)."""
    padded = np.vstack([probs, np.ones((1, probs.shape[1]))])
    on_path = padded[tree.path_rows, tree.path_actions]
    path_player = np.append(tree.row_player, -1)[tree.path_rows]
    players = range(tree.terminal_returns.shape[1])
    return np.stack([np.where(path_player == p, on_path, 1.0).prod(axis=1) for p in players])



def best_responses(tree: GameTree, probs: np.ndarray, legal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each player's best response against the others playing ``probs`` (``[S, A]``, every
    player's rows), on a perfect-recall tree: ``(values float64[num_players], actions
    int64[S])``, where ``actions[s]`` is the best legal action of row ``s``'s player there.

    Bottom-up over the responder's information states: ``q[s, a]`` sums, over the
    terminals whose last decision of the responder is ``(s, a)``, chance times the
    others' probabilities times its return, plus the values of its information states
    whose previous own decision is ``(s, a)``; a state's value is its best legal ``q``.
    The same numbers as OpenSpiel's ``BestResponsePolicy``, in a few array operations
    instead of a walk over every history.
    """
    num_rows, num_actions = probs.shape
    padded = np.vstack([probs, np.ones((1, num_actions))])
    path_player = np.append(tree.row_player, -1)[tree.path_rows]
    path_probs = padded[tree.path_rows, tree.path_actions]
    terminals, width = tree.path_rows.shape
    values = np.zeros(tree.terminal_returns.shape[1])
    actions = np.zeros(num_rows, dtype=np.int64)
    for p in range(len(values)):
        own = path_player == p
        weight = tree.terminal_chance * np.where(own, 1.0, path_probs).prod(axis=1) * tree.terminal_returns[:, p]
        last = np.where(own, np.arange(width), -1).max(axis=1)
        acted = last >= 0
        q = np.zeros((num_rows, num_actions))
        at = np.arange(terminals)[acted], last[acted]
        np.add.at(q, (tree.path_rows[at], tree.path_actions[at]), weight[acted])
        total = weight[~acted].sum()
        for rows in reversed(tree.levels):
            rows = rows[tree.row_player[rows] == p]
            scored = np.where(legal[rows] > 0, q[rows], -np.inf)
            actions[rows] = scored.argmax(axis=1)
            best = scored.max(axis=1)
            parents = tree.parent_row[rows]
            inner = parents >= 0
            np.add.at(q, (parents[inner], tree.parent_action[rows][inner]), best[inner])
            total += best[~inner].sum()
        values[p] = total
    return values, actions
