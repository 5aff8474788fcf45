"""PUCT search over a league policy, batched across games: what ``league-eval ... search=N`` plays.

AlphaZero's search with a trained policy as its guide: at each node the policy's action
distribution is the prior, a leaf is valued by the policy's value head for the player to
move there (or, for a policy without one, by one uniformly random rollout), and moves are
chosen by ``Q + c_puct * P * sqrt(N) / (1 + n)``, an unvisited move's ``Q`` being the node's
mean value so far. The most visited root move is played (``explore``: one drawn in
proportion to the visits). Search assumes two-player zero-sum games paid at the end: a leaf
value ``v`` for its mover is ``-v`` for the other player.

The games being played advance in lock-step: each simulation step descends once in every
game's tree and evaluates all the new leaves with one forward pass of the model
(:func:`policy_evaluator`), not one per leaf per game.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from league.policy import Policy, PolicyFactory, masked_uniform_probabilities
from league.search.player import PositionPlayer
from league.search.simulator import Simulator, rollout

__all__ = ["Evaluator", "PUCTFactory", "PUCTPlayer", "policy_evaluator", "puct_visits"]

#: ``evaluate(obs[B, ...], masks[B, A]) -> (priors float[B, A], values float[B] or None)``:
#: the policy's distribution and, if it has a value head, its values for the player to move.
Evaluator = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, "np.ndarray | None"]]


def policy_evaluator(policy: Policy) -> Evaluator:
    """The :data:`Evaluator` of a league policy: an actor-critic policy's model in one forward
    pass (softmax of the masked logits, its value head); any other policy's
    ``action_probabilities`` (uniform where it has none) and the ``vf_preds`` its
    ``compute_actions`` reports, if any."""
    from league.algos.distributions import Categorical
    from league.algos.torch_policy import ActorCriticPolicy

    if isinstance(policy, ActorCriticPolicy) and isinstance(policy.dist, Categorical):
        import torch

        from league.algos.distributions import masked_logits
        from league.learn.onednn import fp32_matmuls

        model = policy.model

        def evaluate_model(obs: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
            with torch.inference_mode(), fp32_matmuls():
                logits, values = model(torch.from_numpy(np.ascontiguousarray(obs, dtype=np.float32)))
                mask = torch.from_numpy(np.asarray(masks)).bool()
                probs = torch.softmax(masked_logits(logits.double(), mask), dim=-1)
                probs = torch.where(mask, probs, torch.zeros_like(probs))
            return probs.numpy(), values.double().reshape(-1).numpy()

        return evaluate_model

    def evaluate(obs: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        try:
            priors = np.asarray(policy.action_probabilities(obs, masks), dtype=np.float64)
        except NotImplementedError:
            priors = masked_uniform_probabilities(masks)
        values = policy.compute_actions(obs, masks, explore=False).get("vf_preds")
        return priors, None if values is None else np.asarray(values, dtype=np.float64).reshape(-1)

    return evaluate


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
    root_noise: tuple[float, float] | None = None,
) -> list[np.ndarray]:
    """Per root state, ``float64[num_actions]``: the root's visit count per move after
    ``simulations`` PUCT simulations, all roots searched in lock-step (see the module
    docstring). The roots' priors come from one forward pass first; each simulation then
    adds one leaf to every tree. The root states are not modified.

    ``root_noise=(alpha, fraction)``: AlphaZero's exploration in self-play, each root's prior
    mixed with Dirichlet(``alpha``) noise, ``(1 - fraction) * P + fraction * noise``."""
    trees = [_Node(sim, sim.clone(state)) for state in roots]
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


class PUCTPlayer(PositionPlayer):
    """A league policy playing with PUCT search of ``simulations`` simulations per move (see
    the module docstring); with 0 simulations the policy itself plays.

    Args:
        policy: the policy whose prior and value guide the search.
        simulator: the game's simulator (its observations are the policy's).
        simulations: simulations per move (``league-eval search=N``).
        seed: seeds rollouts and visit-proportional draws.
        c_puct: the exploration constant.
    """

    def __init__(self, policy: Policy, simulator: Simulator, simulations: int, seed: int | None = None, c_puct: float = 1.25) -> None:
        if isinstance(simulations, bool) or not isinstance(simulations, (int, np.integer)) or simulations < 0:
            raise ValueError(f"search must be an integer >= 0 (simulations per move; 0: no search), got {simulations!r}")
        super().__init__(simulator)
        self.policy = policy
        self.simulations = int(simulations)
        self.c_puct = float(c_puct)
        self._evaluate = policy_evaluator(policy)
        self._rng = np.random.default_rng(seed)

    def act_at(self, positions: Sequence[Any], obs: np.ndarray, action_mask: np.ndarray, explore: bool = False) -> np.ndarray:
        """The most visited move at each position (``explore``: drawn in proportion to the visits)."""
        if self.simulations == 0:
            return np.asarray(self.policy.compute_actions(obs, action_mask, explore=explore)["actions"], dtype=np.int64)
        actions = np.empty(len(positions), dtype=np.int64)
        for i, visits in enumerate(puct_visits(self.simulator, positions, self._evaluate, self.simulations, self._rng, self.c_puct)):
            if explore:
                actions[i] = int(self._rng.choice(len(visits), p=visits / visits.sum()))
            else:
                actions[i] = int(np.argmax(visits))
        return actions

    def get_weights(self) -> dict[str, np.ndarray]:
        """The searched policy's weights."""
        return self.policy.get_weights()

    def set_weights(self, weights: dict[str, np.ndarray]) -> None:
        """Load the searched policy's weights."""
        self.policy.set_weights(weights)


class PUCTFactory(PolicyFactory):
    """Builds :class:`PUCTPlayer` s around the policies of another factory (``league-eval search=N``)."""

    def __init__(self, base: PolicyFactory, simulator: Simulator, simulations: int, c_puct: float = 1.25) -> None:
        if isinstance(simulations, bool) or not isinstance(simulations, (int, np.integer)) or simulations < 0:
            raise ValueError(f"search must be an integer >= 0 (simulations per move; 0: no search), got {simulations!r}")
        self.base = base
        self.simulator = simulator
        self.simulations = int(simulations)
        self.c_puct = c_puct

    def make_policy(self, seed: int | None = None, learns: bool = False) -> Policy:
        """The base factory's policy (not learning) playing with search; weights go to it."""
        return PUCTPlayer(self.base.make_policy(seed=seed, learns=False), self.simulator, self.simulations, seed, self.c_puct)
