"""Gumbel search's pure-Python tree, kept as the oracle :func:`league.search.gumbel.gumbel_search`
is tested against.

Before the tree moved into the C++ core (``league._core.GumbelForest``, ``csrc/gumbel_tree.h``)
the search lived here in Python: a ``_Node`` per node with numpy arrays per move, sequential
halving and the improved policy's rule computed by numpy per node. :func:`gumbel_search` is
that implementation, unchanged; the forest must select the same moves and give the same
visits and improved policies for the same evaluator, simulator and generator
(``tests/test_gumbel_forest.py``). Tests only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from league.search.gumbel import C_SCALE, C_VISIT, NUM_CONSIDERED_ACTIONS, GumbelSearch
from league.search.puct import Evaluator
from league.search.simulator import Simulator, rollout

__all__ = ["considered_visit_sequence", "gumbel_search", "improved_policy", "sigma"]

#: Log-prior floor of a legal move whose prior underflowed to 0.
_MIN_LOGIT = -60.0


def considered_visit_sequence(num_considered: int, simulations: int) -> list[int]:
    """Sequential halving as a schedule: ``sequence[i]`` is the visit count a considered root
    move must have for simulation ``i`` to visit it (see the module docstring). With ``m``
    considered moves and ``n`` simulations: ``ceil(log2 m)`` phases; in each, every remaining
    move gets ``max(1, floor(n / (ceil(log2 m) * remaining)))`` visits; then half remain (at
    least 2). The budget is exactly ``n`` (the last phase is cut where it runs out)."""
    if simulations <= 0:
        return []
    if num_considered <= 1:
        return list(range(simulations))
    phases = math.ceil(math.log2(num_considered))
    sequence: list[int] = []
    visits = 0  # every remaining move has this many visits at a phase's start
    remaining = num_considered
    while len(sequence) < simulations:
        extra = max(1, simulations // (phases * remaining))
        for _ in range(extra):
            sequence.extend([visits] * remaining)
            visits += 1
        remaining = max(2, remaining // 2)
    return sequence[:simulations]


def sigma(completed_q: np.ndarray, max_visits: float, c_visit: float, c_scale: float) -> np.ndarray:
    """The paper's monotone transform of completed Q values at one node: rescaled to [0, 1] by
    their min and max, times ``(c_visit + max_b N(b)) * c_scale``."""
    low, high = completed_q.min(), completed_q.max()
    scaled = (completed_q - low) / max(high - low, 1e-8)
    return (c_visit + max_visits) * c_scale * scaled


def improved_policy(logits: np.ndarray, completed_q: np.ndarray, max_visits: float, c_visit: float, c_scale: float) -> np.ndarray:
    """``softmax(logits + sigma(completed Q))`` over one node's legal moves."""
    z = logits + sigma(completed_q, max_visits, c_visit, c_scale)
    z = np.exp(z - z.max())
    out: np.ndarray = z / z.sum()
    return out


class _Node:
    """A node: its state and mover; per legal move its logit (log prior), visits and value
    summed for the mover; the value head's estimate for the mover (the mixed value's ``v``)."""

    __slots__ = ("state", "player", "terminal", "legal", "logits", "prior", "estimate", "counts", "values", "children")

    def __init__(self, sim: Simulator, state: Any) -> None:
        self.state = state
        self.terminal = sim.is_terminal(state)
        self.player = -1 if self.terminal else sim.current_player(state)
        self.legal = np.zeros(0, dtype=np.int64) if self.terminal else np.asarray(sim.legal_actions(state), dtype=np.int64)
        self.logits = np.zeros(len(self.legal))
        self.prior = np.zeros(len(self.legal))
        self.estimate = 0.0
        self.counts = np.zeros(len(self.legal))
        self.values = np.zeros(len(self.legal))
        self.children: dict[int, _Node] = {}

    def set_prior(self, priors: np.ndarray) -> None:
        """The node's prior over its legal moves from the model's distribution over all actions."""
        prior = np.asarray(priors, dtype=np.float64)[self.legal]
        total = prior.sum()
        self.prior = prior / total if total > 0 else np.full(len(self.legal), 1.0 / len(self.legal))
        self.logits = np.maximum(np.log(np.maximum(self.prior, 1e-300)), _MIN_LOGIT)

    def completed_q(self) -> np.ndarray:
        """Mean values of visited moves; the mixed value for the others (module docstring)."""
        visited = self.counts > 0
        total = self.counts.sum()
        if not visited.any():
            return np.full(len(self.legal), self.estimate)
        q = self.values[visited] / self.counts[visited]
        weights = self.prior[visited]
        mass = weights.sum()
        mean_q = float((weights * q).sum() / mass) if mass > 0 else float(q.mean())
        mixed = (self.estimate + total * mean_q) / (1.0 + total)
        out = np.full(len(self.legal), mixed)
        out[visited] = q
        return out

    def improved(self, c_visit: float, c_scale: float) -> np.ndarray:
        """The improved policy over :attr:`legal`."""
        return improved_policy(self.logits, self.completed_q(), self.counts.max(initial=0.0), c_visit, c_scale)

    def select_interior(self, c_visit: float, c_scale: float) -> int:
        """Index into :attr:`legal` of the deterministic rule's move: ``argmax pi' - N / (1 + sum N)``."""
        return int(np.argmax(self.improved(c_visit, c_scale) - self.counts / (1.0 + self.counts.sum())))


def _score(root: _Node, gumbel: np.ndarray, c_visit: float, c_scale: float) -> np.ndarray:
    """``g + logits + sigma(completed Q)`` of the root's moves."""
    return gumbel + root.logits + sigma(root.completed_q(), root.counts.max(initial=0.0), c_visit, c_scale)


def gumbel_search(
    sim: Simulator, roots: Sequence[Any], evaluate: Evaluator, simulations: int, rng: np.random.Generator,
    num_considered_actions: int = NUM_CONSIDERED_ACTIONS, c_visit: float = C_VISIT, c_scale: float = C_SCALE, gumbel: bool = True,
) -> GumbelSearch:
    """Gumbel search of ``simulations`` simulations from every root state, in lock-step (see the
    module docstring): the roots' priors and values from one forward pass, then one forward pass
    per simulation over every tree's new leaf. ``gumbel=False``: no Gumbel noise (the ``m``
    moves of highest prior are considered; what greedy play uses). The roots are not modified.
    With 0 simulations the improved policy is the prior (every Q completed by the value head)."""
    if isinstance(simulations, bool) or not isinstance(simulations, (int, np.integer)) or simulations < 0:
        raise ValueError(f"gumbel search: simulations must be an integer >= 0, got {simulations!r}")
    if num_considered_actions < 1:
        raise ValueError(f"gumbel search: num_considered_actions must be >= 1, got {num_considered_actions}")
    trees = [_Node(sim, sim.clone(state)) for state in roots]
    live = [tree for tree in trees if not tree.terminal and len(tree.legal)]
    _expand(sim, [(tree, []) for tree in live], evaluate, rng, backup=False)
    noise: dict[int, np.ndarray] = {}
    considered: dict[int, np.ndarray] = {}
    schedules: dict[int, list[int]] = {}
    for tree in live:
        g = rng.gumbel(size=len(tree.legal)) if gumbel else np.zeros(len(tree.legal))
        m = min(num_considered_actions, len(tree.legal))
        top = np.argsort(-(g + tree.logits), kind="stable")[:m]
        mask = np.zeros(len(tree.legal), dtype=bool)
        mask[top] = True
        noise[id(tree)], considered[id(tree)] = g, mask
        schedules[m] = schedules.get(m) or considered_visit_sequence(m, int(simulations))
    for step in range(int(simulations)):
        leaves: list[tuple[_Node, list[tuple[_Node, int]]]] = []
        for tree in live:
            mask = considered[id(tree)]
            wanted = schedules[int(mask.sum())][step]
            due = mask & (tree.counts == wanted)
            if not due.any():  # not met by the schedule; a guard: the least visited considered moves
                due = mask & (tree.counts == tree.counts[mask].min())
            index = int(np.argmax(np.where(due, _score(tree, noise[id(tree)], c_visit, c_scale), -np.inf)))
            node, path = tree, [(tree, index)]
            while True:
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
                index = node.select_interior(c_visit, c_scale)
                path.append((node, index))
            if child.terminal:
                _backup(path, sim.returns(child.state))
            else:
                leaves.append((child, path))
        _expand(sim, leaves, evaluate, rng, backup=True)
    b, a = len(trees), sim.num_actions
    policy, visits, values = np.zeros((b, a)), np.zeros((b, a)), np.zeros(b)
    actions = np.full(b, -1, dtype=np.int64)
    for i, tree in enumerate(trees):
        if tree.terminal or not len(tree.legal):
            continue
        policy[i, tree.legal] = tree.improved(c_visit, c_scale)
        visits[i, tree.legal] = tree.counts
        values[i] = tree.estimate
        mask = considered[id(tree)]
        most = mask & (tree.counts == tree.counts[mask].max())
        actions[i] = int(tree.legal[int(np.argmax(np.where(most, _score(tree, noise[id(tree)], c_visit, c_scale), -np.inf)))])
    return GumbelSearch(policy, actions, visits, values)


def _backup(path: list[tuple[_Node, int]], returns: np.ndarray) -> None:
    for node, index in path:
        node.counts[index] += 1
        node.values[index] += returns[node.player]


def _expand(sim: Simulator, leaves: list[tuple[_Node, list[tuple[_Node, int]]]], evaluate: Evaluator,
            rng: np.random.Generator, backup: bool) -> None:
    """Priors and value estimates of ``leaves`` from one forward pass (a random rollout's return
    where the model has no value head), then (``backup``) their values added along their paths."""
    if not leaves:
        return
    obs = np.stack([sim.observation(leaf.state) for leaf, _ in leaves])
    masks = np.stack([sim.legal_mask(leaf.state) for leaf, _ in leaves])
    priors, values = evaluate(obs, masks)
    for k, (leaf, path) in enumerate(leaves):
        leaf.set_prior(priors[k])
        if values is None:
            returns = rollout(sim, sim.clone(leaf.state), rng)
        else:
            returns = np.full(sim.num_players, -float(values[k]))
            returns[leaf.player] = float(values[k])
        leaf.estimate = float(returns[leaf.player])
        if backup:
            _backup(path, returns)
