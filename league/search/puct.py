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

The trees live in the C++ core (``league._core.PUCTForest``, ``csrc/search_tree.h``): node
statistics, the descent, root noise and the backup, one call per simulation step for every
tree. The game states stay here, a list indexed by node id, since simulators are Python
objects: per step the new leaves' moves are played, described (mover, end, legal moves) and
observed (:func:`~league.search.simulator.observations`) in Python. The pure-Python tree this
replaced is ``tests/puct_oracle.py``, which the forest matches visit for visit.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from itertools import chain
from typing import Any, NamedTuple

import numpy as np

from league._core import PUCT_EXPAND, PUCTForest
from league.policy import Policy, masked_uniform_probabilities
from league.search.player import SEARCH_PLAYERS, SearchPlayer
from league.search.simulator import Simulator, observations, rollout

__all__ = ["Evaluator", "NewNodes", "PUCTPlayer", "describe_nodes", "evaluate_nodes", "one_thread", "policy_evaluator", "puct_visits", "simulation_step"]

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
            with torch.inference_mode(), fp32_matmuls(len(obs)):
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
    forest, trees = _search(sim, roots, evaluate, simulations, rng, c_puct, root_noise)
    return list(forest.root_visits(trees))


def _search(
    sim: Simulator, roots: Sequence[Any], evaluate: Evaluator, simulations: int, rng: np.random.Generator, c_puct: float,
    root_noise: tuple[float, float] | None,
) -> tuple[PUCTForest, np.ndarray]:
    """:func:`puct_visits`' search: the forest (one tree per root, in order) and its tree ids."""
    forest = PUCTForest(sim.num_players, sim.num_actions, c_puct)
    states = [sim.clone(state) for state in roots]  # node id -> game state
    nodes = describe_nodes(sim, states)
    trees = forest.add_trees(nodes.players, nodes.terminal, nodes.counts, nodes.actions)
    pending = np.flatnonzero(~nodes.terminal)  # roots are nodes 0 .. len(roots) - 1
    evaluate_nodes(sim, forest, states, nodes, pending, evaluate, rng, None)
    if root_noise is not None and root_noise[1] > 0:
        alpha, fraction = root_noise
        noisy = [int(i) for i in pending if len(nodes.legal[i]) > 1]
        if noisy:
            noise = np.concatenate([rng.dirichlet(np.full(len(nodes.legal[i]), alpha)) for i in noisy])
            forest.mix_noise(np.asarray(noisy, dtype=np.int64), noise, fraction)
    active = trees[~nodes.terminal & (nodes.counts > 0)]
    for _ in range(simulations if len(active) else 0):
        simulation_step(sim, forest, states, active, evaluate, rng)
    return forest, trees


def simulation_step(
    sim: Simulator, forest: PUCTForest, states: list[Any], trees: np.ndarray, evaluate: Evaluator, rng: np.random.Generator,
    estimates: Callable[[np.ndarray, np.ndarray], None] | None = None,
) -> None:
    """One simulation in each of ``trees`` (a forest's, or a subclass's: its own move rule): the
    descent, the new leaves' moves played on copies of their parents' states (appended to
    ``states``, indexed by node id), their priors and values from one forward pass, and the
    returns backed up. ``estimates(node_ids, values)``: told each evaluated leaf's value for its
    mover before the backup (Gumbel's completed Q reads it)."""
    parents, _, actions, status = forest.select(trees)
    expand = np.flatnonzero(status == PUCT_EXPAND)
    if not len(expand):
        return
    new_states = []
    for parent, action in zip(parents[expand].tolist(), actions[expand].tolist()):
        state = sim.clone(states[parent])
        sim.apply(state, action)
        new_states.append(state)
    leaves = describe_nodes(sim, new_states)
    returns = np.zeros((len(expand), sim.num_players))
    for k in np.flatnonzero(leaves.terminal).tolist():
        returns[k] = sim.returns(new_states[k])
    ids = forest.expand(trees[expand], leaves.players, leaves.terminal, leaves.counts, leaves.actions, returns)
    states.extend(new_states)  # the forest numbers nodes in order: ids run on from len(states)
    live = np.flatnonzero(~leaves.terminal)
    evaluate_nodes(sim, forest, new_states, leaves, live, evaluate, rng, (ids, returns))
    if estimates is not None:
        estimates(ids[live], returns[live, leaves.players[live]])
    forest.backup(trees[expand], returns)


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Torch on one thread for the block: a search's many small forward passes on a sampler, a
    one-core worker; an in-process learner's thread count (learner.num_threads=2) had each of
    them wait on a second thread (connect four, 8 boards, a loaded machine: 10.8 -> 55.7 env steps/s)."""
    import torch

    threads = torch.get_num_threads()
    if threads != 1:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        if threads != 1:
            torch.set_num_threads(threads)


class NewNodes(NamedTuple):
    """New nodes as a forest takes them (:func:`describe_nodes`): mover (-1 when terminal),
    terminal flag, legal-move counts, the moves concatenated, and per node its list of moves."""

    players: np.ndarray
    terminal: np.ndarray
    counts: np.ndarray
    actions: np.ndarray
    legal: list[list[int]]


def describe_nodes(sim: Simulator, states: Sequence[Any]) -> NewNodes:
    """``states`` as a forest takes new nodes: each one's mover (-1 when terminal), terminal flag
    and legal moves (counts, and the moves concatenated)."""
    terminal = np.fromiter((sim.is_terminal(state) for state in states), dtype=bool, count=len(states))
    players = np.full(len(states), -1, dtype=np.int64)
    legal: list[list[int]] = []
    for k, state in enumerate(states):
        if terminal[k]:
            legal.append([])
        else:
            players[k] = sim.current_player(state)
            legal.append(list(sim.legal_actions(state)))
    counts = np.fromiter((len(moves) for moves in legal), dtype=np.int64, count=len(legal))
    actions = np.fromiter(chain.from_iterable(legal), dtype=np.int64, count=int(counts.sum()))
    return NewNodes(players, terminal, counts, actions, legal)


def evaluate_nodes(sim: Simulator, forest: PUCTForest, states: Sequence[Any], nodes: NewNodes, rows: np.ndarray, evaluate: Evaluator,
                   rng: np.random.Generator, backup: tuple[np.ndarray, np.ndarray] | None) -> None:
    """Priors for ``states[rows]`` (described by ``nodes``) from one forward pass; with
    ``backup`` (the states' node ids and the step's returns array), their leaf returns written
    into it: the value head's value for the mover (``-value`` for the other), or a random rollout."""
    if not len(rows):
        return
    rows_list = rows.tolist()
    obs = observations(sim, [states[k] for k in rows_list])
    masks = np.zeros((len(states), sim.num_actions), dtype=np.int8)  # the legal moves, as legal_mask gives them
    masks[np.repeat(np.arange(len(states)), nodes.counts), nodes.actions] = 1
    priors, values = evaluate(obs, masks[rows])
    forest.set_priors(rows if backup is None else backup[0][rows], np.asarray(priors, dtype=np.float64))
    if backup is None:
        return
    returns = backup[1]
    if values is None:
        for k in rows_list:
            returns[k] = rollout(sim, sim.clone(states[k]), rng)
    else:
        v = np.asarray(values, dtype=np.float64).reshape(-1)
        returns[rows] = -v[:, None]
        returns[rows, nodes.players[rows]] = v


class PUCTPlayer(SearchPlayer):
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
        super().__init__(policy, simulator, simulations, seed)
        self.c_puct = float(c_puct)
        self._evaluate = policy_evaluator(policy)

    def search_actions(self, positions: Sequence[Any], explore: bool) -> np.ndarray:
        """The most visited move at each position (``explore``: drawn in proportion to the visits)."""
        actions = np.empty(len(positions), dtype=np.int64)
        for i, visits in enumerate(puct_visits(self.simulator, positions, self._evaluate, self.simulations, self._rng, self.c_puct)):
            if explore:
                actions[i] = int(self._rng.choice(len(visits), p=visits / visits.sum()))
            else:
                actions[i] = int(np.argmax(visits))
        return actions


SEARCH_PLAYERS.register("puct", PUCTPlayer)
