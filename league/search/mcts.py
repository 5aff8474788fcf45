"""The MCTS yardstick: UCT with random rollouts, the opponent ``league-eval opponents=[mcts]`` plays.

Strength against it is how OpenSpiel's users measure a player of any board game: UCT
(exploration constant ``c = 2``), leaves valued by one uniformly random rollout, the most
visited move played. On OpenSpiel games :class:`MCTSPlayer` is exactly OpenSpiel's own bot
(``open_spiel.python.algorithms.mcts.MCTSBot`` with ``RandomRolloutEvaluator(1)``,
``uct_c=2``, ``solve=True``), so figures compare with theirs; on any other simulator it runs
:func:`uct_visits` here, the same search without the solver.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from league.policy import Policy, PolicyFactory
from league.search.player import PositionPlayer
from league.search.simulator import Simulator, rollout

__all__ = ["MCTSFactory", "MCTSPlayer", "uct_visits"]


class _Node:
    """A UCT node: its state, untried moves, children, visits and the value summed for the
    player who moved into it."""

    __slots__ = ("state", "untried", "children", "visits", "value")

    def __init__(self, state: Any, untried: list[int]) -> None:
        self.state = state
        self.untried = untried
        self.children: dict[int, _Node] = {}
        self.visits = 0
        self.value = 0.0


def uct_visits(sim: Simulator, root_state: Any, simulations: int, rng: np.random.Generator, c: float = 2.0) -> np.ndarray:
    """``int64[num_actions]``: the root's visit count per move after ``simulations`` UCT simulations.

    Each simulation descends by ``Q + c * sqrt(ln N / n)`` while every move of a node was tried,
    expands one untried move (at random), plays one uniformly random rollout from it and adds
    its return, for the player who made each move, along the path.
    """
    root = _Node(sim.clone(root_state), sim.legal_actions(root_state))
    rng.shuffle(root.untried)
    for _ in range(simulations):
        node, path = root, [root]
        movers = []
        while not node.untried and node.children:
            log_n = math.log(node.visits)
            mover = sim.current_player(node.state)
            node = max(node.children.values(), key=lambda ch: ch.value / ch.visits + c * math.sqrt(log_n / ch.visits))
            path.append(node)
            movers.append(mover)
        if node.untried:
            movers.append(sim.current_player(node.state))
            action = node.untried.pop()
            state = sim.clone(node.state)
            sim.apply(state, action)
            untried = [] if sim.is_terminal(state) else sim.legal_actions(state)
            rng.shuffle(untried)
            child = _Node(state, untried)
            node.children[action] = child
            path.append(child)
            node = child
        returns = sim.returns(node.state) if sim.is_terminal(node.state) else rollout(sim, sim.clone(node.state), rng)
        root.visits += 1
        for visited, mover in zip(path[1:], movers):
            visited.visits += 1
            visited.value += float(returns[mover])
    visits = np.zeros(sim.num_actions, dtype=np.int64)
    for action, child in root.children.items():
        visits[action] = child.visits
    return visits


class MCTSPlayer(PositionPlayer):
    """UCT with random rollouts as a player (see the module docstring).

    Args:
        simulator: the game's simulator; an OpenSpiel one plays OpenSpiel's ``MCTSBot``.
        simulations: simulations per move (OpenSpiel's ``max_simulations``).
        seed: seeds the rollouts and tie breaks.
        uct_c: the exploration constant.
    """

    def __init__(self, simulator: Simulator, simulations: int = 1000, seed: int | None = None, uct_c: float = 2.0) -> None:
        if isinstance(simulations, bool) or not isinstance(simulations, (int, np.integer)) or simulations < 1:
            raise ValueError(f"mcts_simulations must be an integer >= 1, got {simulations!r}")
        super().__init__(simulator)
        self.simulations = int(simulations)
        self.uct_c = float(uct_c)
        self._rng = np.random.default_rng(seed)
        self._bot: Any = None
        game = getattr(simulator, "game", None)
        if game is not None:
            from open_spiel.python.algorithms import mcts

            random_state = np.random.RandomState(int(self._rng.integers(2**31)))
            evaluator = mcts.RandomRolloutEvaluator(1, random_state=random_state)
            self._bot = mcts.MCTSBot(game, self.uct_c, self.simulations, evaluator, solve=True, random_state=random_state)

    def act_at(self, positions: Sequence[Any], obs: np.ndarray, action_mask: np.ndarray, explore: bool = False) -> np.ndarray:
        """The search's move at each position, one game after the other (``explore`` changes
        nothing: the search is random already)."""
        actions = np.empty(len(positions), dtype=np.int64)
        for i, state in enumerate(positions):
            if self._bot is not None:
                actions[i] = int(self._bot.step(state))
                continue
            visits = uct_visits(self.simulator, state, self.simulations, self._rng, self.uct_c)
            best = np.flatnonzero(visits == visits.max())
            actions[i] = int(best[self._rng.integers(len(best))])
        return actions


class MCTSFactory(PolicyFactory):
    """Builds :class:`MCTSPlayer` s of one simulator and simulation count (``league-eval``'s ``mcts``)."""

    def __init__(self, simulator: Simulator, simulations: int = 1000) -> None:
        MCTSPlayer(simulator, simulations)  # checks the arguments now, not when a game starts
        self.simulator = simulator
        self.simulations = simulations

    def make_policy(self, seed: int | None = None, learns: bool = False) -> Policy:
        """A fresh player (it never learns)."""
        return MCTSPlayer(self.simulator, self.simulations, seed)
