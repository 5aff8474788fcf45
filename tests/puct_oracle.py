"""PUCT's pure-Python tree, kept as the oracle :func:`league.search.puct.puct_visits` is tested against.

Before issue 37 the search's tree lived here in Python: a ``_Node`` per node with numpy arrays
per move, selection by numpy per node, backup in Python. :func:`puct_visits` is that
implementation, unchanged; the C++ forest (``league._core.PUCTForest``, ``csrc/search_tree.h``)
must give the same visit counts for the same evaluator, simulator and generator
(``tests/test_puct_forest.py``). Tests only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from league.search.puct import Evaluator
from league.search.simulator import Simulator, rollout

__all__ = ["puct_visits"]


class _Node:
    """A PUCT node: its state and mover; per move its prior, visits and value summed for the
    mover; the node's own visits and value (for its mover), which unvisited moves start from."""

    __slots__ = ("state", "player", "terminal", "legal", "prior", "counts", "values", "children", "visits", "value")

    def __init__(self, sim: Simulator, state: Any) -> None:
        self.state = state
        self.terminal = sim.is_terminal(state)
        self.player = -1 if self.terminal else sim.current_player(state)
        self.legal = np.zeros(0, dtype=np.int64) if self.terminal else np.asarray(sim.legal_actions(state), dtype=np.int64)
        self.prior = np.zeros(0)
        self.counts = np.zeros(len(self.legal))
        self.values = np.zeros(len(self.legal))
        self.children: dict[int, _Node] = {}
        self.visits = 0
        self.value = 0.0

    def select(self, c_puct: float) -> int:
        """Index into :attr:`legal` of the move PUCT picks."""
        first = self.value / self.visits if self.visits else 0.0
        q = np.where(self.counts > 0, self.values / np.maximum(self.counts, 1), first)
        u = c_puct * self.prior * math.sqrt(max(self.visits, 1)) / (1.0 + self.counts)
        return int(np.argmax(q + u))


def _backup(path: list[tuple[_Node, int]], leaf: _Node, returns: np.ndarray) -> None:
    for node, index in path:
        node.counts[index] += 1
        node.values[index] += returns[node.player]
        node.visits += 1
        node.value += returns[node.player]
    if not leaf.terminal:
        leaf.visits += 1
        leaf.value += returns[leaf.player]


def _leaf_returns(num_players: int, player: int, value: float) -> np.ndarray:
    """A value for ``player`` as returns of every player (zero-sum: the others get ``-value``)."""
    out = np.full(num_players, -value)
    out[player] = value
    return out


def puct_visits(
    sim: Simulator, roots: Sequence[Any], evaluate: Evaluator, simulations: int, rng: np.random.Generator, c_puct: float = 1.25,
    root_noise: tuple[float, float] | None = None, keep: list[Any] | None = None,
) -> list[np.ndarray]:
    """Per root state, ``float64[num_actions]``: the root's visit count per move after
    ``simulations`` PUCT simulations, all roots searched in lock-step (see the module
    docstring). The roots' priors come from one forward pass first; each simulation then
    adds one leaf to every tree. The root states are not modified.

    ``root_noise=(alpha, fraction)``: AlphaZero's exploration in self-play, each root's prior
    mixed with Dirichlet(``alpha``) noise, ``(1 - fraction) * P + fraction * noise``."""
    trees = [_Node(sim, sim.clone(state)) for state in roots]
    if keep is not None:  # (tests) the root nodes, to compare statistics beyond the visits
        keep.extend(trees)
    pending: list[tuple[_Node, list[tuple[_Node, int]]]] = [(tree, []) for tree in trees if not tree.terminal]
    _evaluate(sim, pending, evaluate, rng, backup=False)
    if root_noise is not None and root_noise[1] > 0:
        alpha, fraction = root_noise
        for tree, _ in pending:
            if len(tree.legal) > 1:
                tree.prior = (1.0 - fraction) * tree.prior + fraction * rng.dirichlet(np.full(len(tree.legal), alpha))
    for _ in range(simulations):
        leaves: list[tuple[_Node, list[tuple[_Node, int]]]] = []
        for tree in trees:
            if tree.terminal or len(tree.legal) == 0:
                continue
            node, path = tree, []
            while True:
                index = node.select(c_puct)
                path.append((node, index))
                action = int(node.legal[index])
                child = node.children.get(action)
                if child is None:
                    state = sim.clone(node.state)
                    sim.apply(state, action)
                    child = node.children[action] = _Node(sim, state)
                    break
                if child.terminal:
                    break
                node = child
            if child.terminal:
                _backup(path, child, sim.returns(child.state))
            else:
                leaves.append((child, path))
        _evaluate(sim, leaves, evaluate, rng, backup=True)
    out = []
    for tree in trees:
        visits = np.zeros(sim.num_actions)
        visits[tree.legal] = tree.counts
        out.append(visits)
    return out


def _evaluate(sim: Simulator, leaves: list[tuple[_Node, list[tuple[_Node, int]]]], evaluate: Evaluator,
              rng: np.random.Generator, backup: bool) -> None:
    """Priors for ``leaves`` from one forward pass, then (``backup``) their values added along their paths."""
    if not leaves:
        return
    obs = np.stack([sim.observation(leaf.state) for leaf, _ in leaves])
    masks = np.stack([sim.legal_mask(leaf.state) for leaf, _ in leaves])
    priors, values = evaluate(obs, masks)
    for k, (leaf, path) in enumerate(leaves):
        prior = np.asarray(priors[k], dtype=np.float64)[leaf.legal]
        total = prior.sum()
        leaf.prior = prior / total if total > 0 else np.full(len(leaf.legal), 1.0 / len(leaf.legal))
        if not backup:
            continue
        if values is None:
            returns = rollout(sim, sim.clone(leaf.state), rng)
        else:
            returns = _leaf_returns(sim.num_players, leaf.player, float(values[k]))
        _backup(path, leaf, returns)
