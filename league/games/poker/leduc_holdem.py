"""Exact exploitability of PettingZoo's Leduc Hold'em (RLCard's rules), the yardstick of its preset.

PettingZoo's ``leduc_holdem_v4`` is not OpenSpiel's ``leduc_poker`` (blinds of 1 and 2 with the
small blind drawn each hand, four actions, chips counted in big blinds), so OpenSpiel's tree
walk cannot score it. Its tree is small all the same: six cards in three ranks, 48 deals (the ranks of two hands and of the board card, and
which seat posts the small blind) of a few dozen betting sequences each. This module walks it
once with RLCard's own game (the rules PettingZoo steps), recording at every decision what
the seat to act is shown (RLCard's 36-value observation, the one the policies see) and its
legal actions. A best response then needs one batch of the policy's action probabilities
per seat and one backward pass over the tree: its information sets have perfect recall
(its card, the board card once shown, who posted the small blind and every action so far),
finer than what the policy sees, so it is the strongest responder.

The exploitability is the best response's mean gain per hand over the two seats. The seats
are interchangeable (the small blind is drawn each hand), so the game's value is 0 for each
and the figure is NashConv / 2, in big blinds a hand.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from dataclasses import dataclass, field
from itertools import permutations
from typing import Any

import numpy as np

from league.envs.base import MultiAgentEnv
from league.policy import PolicyFactory
from league.population.exploitability import action_probabilities
from league.runtime.faces import Weights

__all__ = ["ENVS", "LeducHoldemExploitability", "LeducHoldemTree", "best_response", "build_tree"]

#: The env names of PettingZoo's Leduc Hold'em.
ENVS = ("leduc_holdem", "pettingzoo.classic.leduc_holdem_v4", "pettingzoo.classic.rlcard_envs.leduc_holdem")

#: An information set of one seat: (its card's rank, the board card's rank or -1 before it is
#: shown, the seat that posted the small blind, the actions taken so far by both seats).
InfosetKey = tuple[int, int, int, tuple[int, ...]]


@dataclass
class LeducHoldemTree:
    """Every hand of Leduc Hold'em, nodes in depth-first order (a parent before its children).

    ``player[n]`` is the seat to act at node ``n`` (-1 at the end of a hand), ``children[n]``
    maps each legal action to its node, ``payoff[n]`` the two seats' chips (big blinds) at an
    end, ``obs_row[n]`` the row of ``observations[player[n]]`` (and of ``masks``) the seat is
    shown, ``infoset[n]`` the acting seat's perfect-recall information set (a key of
    ``infoset_keys``), ``depth[n]`` the actions taken. ``roots`` holds one node per deal
    (the ranks drawn and the small blind's seat), drawn with probability ``root_weight``.
    """

    player: list[int] = field(default_factory=list)
    children: list[dict[int, int]] = field(default_factory=list)
    payoff: list[tuple[float, float]] = field(default_factory=list)
    obs_row: list[int] = field(default_factory=list)
    infoset: list[int] = field(default_factory=list)
    depth: list[int] = field(default_factory=list)
    roots: list[int] = field(default_factory=list)
    root_weight: list[float] = field(default_factory=list)
    observations: tuple[list[np.ndarray], list[np.ndarray]] = field(default_factory=lambda: ([], []))
    masks: tuple[list[np.ndarray], list[np.ndarray]] = field(default_factory=lambda: ([], []))
    infoset_keys: list[InfosetKey] = field(default_factory=list)


def build_tree() -> LeducHoldemTree:
    """Walk every deal of RLCard's Leduc Hold'em (about a second)."""
    import rlcard

    encoder: Any = rlcard.make("leduc-holdem")
    game: Any = encoder.game
    game.init_game()
    deck = [*game.dealer.deck, *(player.hand for player in game.players)]  # the six cards
    tree = LeducHoldemTree()
    rows: tuple[dict[bytes, int], dict[bytes, int]] = ({}, {})
    infosets: dict[InfosetKey, int] = {}

    def rank(card: Any) -> int:
        return int(encoder.card2index[card.get_index()]) if card is not None else -1

    def visit(state: Any, history: tuple[int, ...], small_blind: int) -> int:
        node = len(tree.player)
        tree.children.append({})
        tree.depth.append(len(history))
        if state.is_over():
            tree.player.append(-1)
            first, second = state.get_payoffs()
            tree.payoff.append((float(first), float(second)))
            tree.obs_row.append(-1)
            tree.infoset.append(-1)
            return node
        seat = int(state.game_pointer)
        shown = encoder._extract_state(state.get_state(seat))
        obs = np.asarray(shown["obs"], dtype=np.float32)
        mask = np.zeros(len(encoder.actions), dtype=np.int8)
        mask[list(shown["legal_actions"])] = 1
        key = obs.tobytes() + mask.tobytes()
        if key not in rows[seat]:
            rows[seat][key] = len(tree.observations[seat])
            tree.observations[seat].append(obs)
            tree.masks[seat].append(mask)
        info: InfosetKey = (rank(state.players[seat].hand), rank(state.public_card), small_blind, history)
        tree.player.append(seat)
        tree.payoff.append((0.0, 0.0))
        tree.obs_row.append(rows[seat][key])
        tree.infoset.append(infosets.setdefault(info, len(infosets)))
        for action in np.flatnonzero(mask):
            # A copy per child, not RLCard's step_back: stepping back there left hands paid
            # as other outcomes (a tied J-J showdown paid 4 big blinds), and 0.3 s are not worth it.
            child = copy.deepcopy(state)
            child.step(encoder.actions[action])
            tree.children[node][int(action)] = visit(child, history + (int(action),), small_blind)
        return node

    # Suits decide nothing (RLCard shows and compares ranks only): one deal per ranks drawn,
    # weighted by how many of the 120 ordered draws of three cards give them.
    draws: dict[tuple[int, int, int], list[Any]] = {}
    counts: dict[tuple[int, int, int], int] = defaultdict(int)
    for cards in permutations(deck, 3):
        ranks = (rank(cards[0]), rank(cards[1]), rank(cards[2]))
        draws.setdefault(ranks, list(cards))
        counts[ranks] += 1
    for ranks, (first, second, board) in draws.items():
        for small_blind in (0, 1):
            state = copy.deepcopy(game)
            _deal(state, first, second, board, small_blind)
            tree.roots.append(visit(state, (), small_blind))
            tree.root_weight.append(counts[ranks] / (2 * sum(counts.values())))
    tree.infoset_keys = [key for key, _ in sorted(infosets.items(), key=lambda item: item[1])]
    return tree


def _deal(state: Any, first: Any, second: Any, board: Any, small_blind: int) -> None:
    """Set RLCard's freshly started ``state`` to one deal: the two hands, the card the dealer
    will show after the first round, and which seat posts the small blind (it acts first)."""
    big_blind = 1 - small_blind
    state.players[0].hand, state.players[1].hand = first, second
    state.players[small_blind].in_chips = state.small_blind
    state.players[big_blind].in_chips = state.big_blind
    state.dealer.deck = [board]
    state.public_card = None
    state.game_pointer = small_blind
    state.round.start_new_round(game_pointer=small_blind, raised=[p.in_chips for p in state.players])
    state.round_counter = 0


def best_response(tree: LeducHoldemTree, responder: int, probs: np.ndarray) -> tuple[float, dict[InfosetKey, int]]:
    """A best response in seat ``responder`` to the other seat playing ``probs[row]`` (its
    action probabilities at each row of ``tree.observations[other]``): its expected chips a
    hand and its action at each of its information sets (a key of ``tree.infoset_keys``)."""
    other = 1 - responder
    size = len(tree.player)
    reach = np.zeros(size)  # chance times the other seat's probabilities of reaching a node
    reach[tree.roots] = tree.root_weight
    for node in range(size):  # parents come before their children
        seat = tree.player[node]
        for action, child in tree.children[node].items():
            reach[child] = reach[node] * (probs[tree.obs_row[node], action] if seat == other else 1.0)
    by_depth: dict[int, list[int]] = defaultdict(list)
    for node, depth in enumerate(tree.depth):
        by_depth[depth].append(node)
    value = np.zeros(size)  # the responder's expected chips from a node on
    choice: dict[int, int] = {}
    for depth in sorted(by_depth, reverse=True):  # an information set's nodes share a depth
        scores: dict[int, dict[int, float]] = defaultdict(lambda: defaultdict(float))
        for node in by_depth[depth]:
            if tree.player[node] == responder:
                for action, child in tree.children[node].items():
                    scores[tree.infoset[node]][action] += reach[node] * value[child]
        for infoset, by_action in scores.items():
            choice[infoset] = max(by_action, key=lambda a: by_action[a])
        for node in by_depth[depth]:
            seat = tree.player[node]
            if seat < 0:
                value[node] = tree.payoff[node][responder]
            elif seat == responder:
                value[node] = value[tree.children[node][choice[tree.infoset[node]]]]
            else:
                row = probs[tree.obs_row[node]]
                value[node] = sum(row[action] * value[child] for action, child in tree.children[node].items())
    mean = float(np.dot(value[tree.roots], tree.root_weight))
    return mean, {tree.infoset_keys[infoset]: action for infoset, action in choice.items()}


class LeducHoldemExploitability:
    """Exact exploitability of a policy in the Leduc Hold'em that ``env`` plays.

    ValueError when ``env`` is not that game: checked by playing a few random hands in it,
    every observation and action mask it shows and every return must be one of the tree's.
    """

    def __init__(self, env: MultiAgentEnv, check_hands: int = 50) -> None:
        agents = list(env.possible_agents)
        if len(agents) != 2:
            raise ValueError(f"Leduc Hold'em's exploitability needs two players, env has {agents}")
        self.agents = agents
        self.tree = build_tree()
        self._check(env, check_hands)

    def _check(self, env: MultiAgentEnv, hands: int) -> None:
        """Play ``hands`` uniformly random hands in ``env``; ValueError on anything the tree lacks."""
        shown = [{o.tobytes() + m.tobytes() for o, m in zip(self.tree.observations[s], self.tree.masks[s])} for s in (0, 1)]
        returns = {p for node, p in enumerate(self.tree.payoff) if self.tree.player[node] < 0}
        rng = np.random.default_rng(0)
        for hand in range(hands):
            step = env.reset(seed=hand)
            total = dict.fromkeys(self.agents, 0.0)
            while True:
                actions = {}
                for agent, obs in step.obs.items():
                    mask = np.asarray(step.masks[agent], dtype=np.int8)
                    if np.asarray(obs, dtype=np.float32).tobytes() + mask.tobytes() not in shown[self.agents.index(agent)]:
                        raise ValueError(f"env shows {agent} an observation RLCard's Leduc Hold'em does not: not that game")
                    actions[agent] = int(rng.choice(np.flatnonzero(mask)))
                step = env.step(actions)
                for agent, reward in step.rewards.items():
                    total[agent] += float(reward)
                if step.done:
                    break
            if (total[self.agents[0]], total[self.agents[1]]) not in returns:
                raise ValueError(f"env paid {total}, not a Leduc Hold'em outcome")

    def exploitability(self, factory: PolicyFactory, weights: Weights) -> float:
        """The best response's gain a hand (big blinds) against the policy, both seats averaged."""
        policy = factory.make_policy(seed=0, learns=False)
        policy.set_weights(dict(weights))
        gains = []
        for seat in (0, 1):
            obs, masks = np.stack(self.tree.observations[seat]), np.stack(self.tree.masks[seat])
            gains.append(best_response(self.tree, 1 - seat, action_probabilities(policy, obs, masks))[0])
        return float(np.mean(gains))
