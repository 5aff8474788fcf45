"""Search as a general operator at play time: any game with a simulator, any league policy.

* :mod:`league.search.simulator`: the :class:`Simulator` seam (what a search needs from a
  game: copy a state, the player to move, legal moves, apply, terminal, returns, and the
  observation a league policy sees) and :data:`SIMULATORS`, where game plug-ins register
  theirs by env name; every perfect-information OpenSpiel game has one
  (:mod:`league.search.openspiel`).
* :mod:`league.search.player`: :class:`PositionPlayer`, a policy that acts from simulator
  states (how ``play_matches`` plays a search).
* :mod:`league.search.mcts`: the yardstick, UCT with random rollouts (OpenSpiel's own
  ``MCTSBot`` on OpenSpiel games): ``league-eval opponents=[mcts]``.
* :mod:`league.search.puct`: AlphaZero-style PUCT over a policy's prior and value head,
  batched across the games played in lock-step: ``league-eval search=N``.
* :mod:`league.search.gumbel`: Gumbel AlphaZero's search (Danihelka et al. 2022): Gumbel-top-k
  root moves, sequential halving of the budget, completed Q values and the improved policy
  ``softmax(logits + sigma(completed Q))``, batched as PUCT is; its own small tree (the
  selection rules differ from PUCT's at the root and below it).
* :mod:`league.search.alphazero`: search as an algorithm of its own, ``algo=alphazero``: a
  policy that acts by search from its env copies' states (``search: puct``, the visits as the
  target; ``search: gumbel``, the improved policy) and learns the search's policy and the
  games' outcomes (registered in :data:`league.algos.ALGORITHMS` on import).
* :mod:`league.search.targets`: search as a policy-improvement target of an actor-critic
  learner, ``algo=ppo search_simulations=N``: PPO's sampler policy acts from its own
  distribution and also records a Gumbel search's improved policy per training row, which
  PPO's loss fits with weight ``search_coef`` (registered in
  :data:`league.algos.actor_critic.SEARCH_TARGET_POLICIES` on import).

Search at play time: ``league-eval search=N`` (PUCT over any league policy with a model;
``search_method=gumbel``: Gumbel's search), :class:`SearchFactory` over :data:`SEARCH_PLAYERS`.
"""

from __future__ import annotations

from league.search.mcts import MCTSFactory, MCTSPlayer, uct_visits
from league.search.player import SEARCH_PLAYERS, PositionPlayer, SearchFactory, SearchPlayer
from league.search.puct import PUCTPlayer, policy_evaluator, puct_visits
from league.search.simulator import SIMULATORS, Simulator, SimulatorMaker, has_simulator, rollout, simulator_for
from league.search.gumbel import GumbelPlayer, GumbelSearch, gumbel_search
from league.search.targets import SearchTargetPolicy
from league.search.alphazero import AlphaZero, AlphaZeroConfig, AlphaZeroPolicy  # noqa: E402 - after puct, which it uses

__all__ = [
    "AlphaZero", "AlphaZeroConfig", "AlphaZeroPolicy", "GumbelPlayer", "GumbelSearch", "MCTSFactory", "MCTSPlayer", "PUCTPlayer", "PositionPlayer",
    "SEARCH_PLAYERS", "SIMULATORS", "SearchFactory", "SearchPlayer", "Simulator", "SimulatorMaker", "has_simulator", "SearchTargetPolicy", "gumbel_search", "policy_evaluator", "puct_visits", "rollout", "simulator_for", "uct_visits",
]
