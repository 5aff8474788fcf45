"""Gumbel AlphaZero's search (Danihelka et al., ICLR 2022, "Policy improvement by planning
with Gumbel"), batched across games: ``algo=alphazero search=gumbel`` and the search target of
``algo=ppo search_simulations=N``.

At each root the search:

1. samples ``m = min(num_considered_actions, legal moves)`` moves without replacement by
   Gumbel-top-k: the ``m`` largest ``g(a) + logits(a)``, ``g`` drawn i.i.d. Gumbel(0, 1)
   (``gumbel=False``, greedy play: ``g = 0``);
2. splits the simulation budget among them by sequential halving: ``ceil(log2 m)`` phases,
   each giving every remaining move ``max(1, floor(n / (ceil(log2 m) * remaining)))`` more
   visits, then keeping the better half by ``g + logits + sigma(completed Q)``
   (:func:`considered_visit_sequence`: simulation ``i`` visits, among the considered moves that
   have exactly ``sequence[i]`` visits, the best by that score, so all roots advance in
   lock-step one simulation at a time);
3. below the root, visits the child the paper's deterministic rule picks:
   ``argmax_a pi'(a) - N(a) / (1 + sum_b N(b))``, ``pi'`` the node's improved policy;
4. returns the selected move (the best surviving move by ``g + logits + sigma(completed Q)``,
   among those visited most) and the improved policy ``softmax(logits + sigma(completed Q))``
   over every legal move, the policy target.

``completed Q`` is each move's mean value where it was visited and, where not, the node's
mixed value: ``(v + sum_b N(b) * sum_{b visited} pi(b) q(b) / sum_{b visited} pi(b)) / (1 +
sum_b N(b))``, ``v`` the value head's estimate at the node (paper, appendix D). Completed Q
values are rescaled to [0, 1] by their min and max at the node, and ``sigma(q) = (c_visit +
max_b N(b)) * c_scale * q``.

The trees live in the C++ core (``league._core.GumbelForest``, ``csrc/gumbel_tree.h``), on the
PUCT forest's storage, descent, expansion and backup: what differs is the move rule (sequential
halving at the root, the improved policy's deficit below it) and what it reads per node (the
prior's logits and the value head's estimate, which completed Q is made of). The game states
stay here, as for :mod:`league.search.puct`, whose helpers describe and evaluate new nodes:
each simulation step descends once in every root's tree, plays the new leaves' moves in Python
and evaluates them in one forward pass. The pure-Python tree this replaced is
``tests/gumbel_oracle.py``, which the forest is tested against.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from league._core import GumbelForest
from league.policy import Policy
from league.search.player import SEARCH_PLAYERS, SearchPlayer
from league.search.puct import Evaluator, describe_nodes, evaluate_nodes, policy_evaluator, simulation_step
from league.search.simulator import Simulator

__all__ = ["C_SCALE", "C_VISIT", "GumbelPlayer", "GumbelSearch", "NUM_CONSIDERED_ACTIONS", "gumbel_search"]

#: The paper's defaults: moves considered at the root (m), and sigma(q) = (c_visit + max N) * c_scale * q.
NUM_CONSIDERED_ACTIONS, C_VISIT, C_SCALE = 16, 50.0, 1.0


@dataclass
class GumbelSearch:
    """What :func:`gumbel_search` returns for ``B`` roots over ``A`` actions."""

    #: ``float64[B, A]``: the improved policy (sums to 1 over legal moves, 0 on illegal ones).
    policy: np.ndarray
    #: ``int64[B]``: the move sequential halving selected (-1 at a terminal root).
    actions: np.ndarray
    #: ``float64[B, A]``: root visits per move (they sum to the simulations at a non-terminal root).
    visits: np.ndarray
    #: ``float64[B]``: the value head's estimate at each root, for the player to move.
    values: np.ndarray


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
    forest = GumbelForest(sim.num_players, sim.num_actions, c_visit, c_scale)
    states = [sim.clone(state) for state in roots]  # node id -> game state
    nodes = describe_nodes(sim, states)
    trees = forest.add_trees(nodes.players, nodes.terminal, nodes.counts, nodes.actions)
    live = np.flatnonzero(~nodes.terminal & (nodes.counts > 0))  # roots are nodes 0 .. len(roots) - 1
    root_returns = np.zeros((len(states), sim.num_players))
    evaluate_nodes(sim, forest, states, nodes, live, evaluate, rng, (forest.roots(trees), root_returns))
    estimates = root_returns[live, nodes.players[live]]
    forest.set_estimates(live, estimates)
    if len(live):
        noise = [rng.gumbel(size=int(nodes.counts[i])) if gumbel else np.zeros(int(nodes.counts[i])) for i in live.tolist()]
        forest.consider(trees[live], np.concatenate(noise), int(num_considered_actions), int(simulations))
    active = trees[live]
    for _ in range(int(simulations) if len(active) else 0):
        simulation_step(sim, forest, states, active, evaluate, rng, forest.set_estimates)
    policy, selected, visits = forest.results(trees)
    values = np.zeros(len(roots))
    values[live] = estimates
    return GumbelSearch(policy, selected, visits, values)


class GumbelPlayer(SearchPlayer):
    """A league policy playing with Gumbel search of ``simulations`` simulations per move
    (``league-eval search=N search_method=gumbel``): greedy play considers the ``m`` moves of
    highest prior without Gumbel noise and plays sequential halving's choice; ``explore`` adds
    the noise (the paper's acting rule). With 0 simulations the policy itself plays.

    Args:
        policy: the policy whose prior and value guide the search.
        simulator: the game's simulator (its observations are the policy's).
        simulations: simulations per move.
        seed: seeds the Gumbel noise and the rollouts of a policy without a value head.
    """

    def __init__(self, policy: Policy, simulator: Simulator, simulations: int, seed: int | None = None) -> None:
        super().__init__(policy, simulator, simulations, seed)
        self._evaluate = policy_evaluator(policy)

    def search_actions(self, positions: Sequence[Any], explore: bool) -> np.ndarray:
        """Sequential halving's move at each position."""
        return gumbel_search(self.simulator, positions, self._evaluate, self.simulations, self._rng, gumbel=explore).actions


SEARCH_PLAYERS.register("gumbel", GumbelPlayer)
