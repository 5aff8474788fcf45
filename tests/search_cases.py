"""What the search forests' tests search: a stand-in network and positions of random games
(tests/test_puct_forest.py, tests/test_gumbel_forest.py). Tests only."""

from __future__ import annotations

import numpy as np

from league.search.simulator import Simulator

__all__ = ["hashed_evaluator", "random_positions"]


def hashed_evaluator(num_actions: int, seed: int = 0, values: bool = True):
    """A stand-in network, a pure function of the observation: softmax of a fixed random linear
    map of it (masked), and a tanh value; ``values=False``: no value head (random rollouts)."""
    rng = np.random.default_rng(seed)
    weights: dict[int, np.ndarray] = {}

    def evaluate(obs, masks):
        flat = np.asarray(obs, dtype=np.float64).reshape(len(obs), -1)
        if flat.shape[1] not in weights:
            weights[flat.shape[1]] = rng.normal(size=(flat.shape[1], num_actions + 1))
        out = flat @ weights[flat.shape[1]]
        logits = np.where(masks > 0, out[:, :num_actions], -np.inf)
        probs = np.exp(logits - logits.max(axis=1, keepdims=True))
        probs /= probs.sum(axis=1, keepdims=True)
        return probs, (np.tanh(out[:, -1] / 4.0) if values else None)

    return evaluate


def random_positions(sim: Simulator, count: int, max_plies: int, seed: int, include_terminal: bool = True) -> list:
    """Positions of random games, ``max_plies`` deep at most (a terminal one first if asked)."""
    rng = np.random.default_rng(seed)
    out = []
    if include_terminal:
        state = sim.initial_state()
        while not sim.is_terminal(state):
            legal = sim.legal_actions(state)
            sim.apply(state, legal[int(rng.integers(len(legal)))])
        out.append(state)
    while len(out) < count:
        state = sim.initial_state()
        for _ in range(int(rng.integers(0, max_plies + 1))):
            legal = sim.legal_actions(state)
            sim.apply(state, legal[int(rng.integers(len(legal)))])
            if sim.is_terminal(state):
                break
        if not sim.is_terminal(state):
            out.append(state)
    return out
