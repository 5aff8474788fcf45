"""Exact exploitability of PettingZoo's Leduc Hold'em (RLCard's rules), the yardstick of its preset.

PettingZoo's ``leduc_holdem_v4`` is not OpenSpiel's ``leduc_poker`` (blinds of 1 and 2 with the
small blind drawn each hand, four actions, chips counted in big blinds), so OpenSpiel's tree
walk cannot score it. Its tree is small all the same: six cards in three ranks, 48 deals (the ranks of two hands and of the board card, and
which seat posts the small blind) of a few dozen betting sequences each. This module walks it
once with RLCard's own game (the rules PettingZoo steps), recording at every decision what
the seat to act is shown (RLCard's 36-value observation, the one the policies see) and its
legal actions, as the project's exact-evaluation summary
(:class:`~league.population.game_tree.GameTree`). A best response is then one batch of the
policy's action probabilities and :func:`~league.population.game_tree.best_responses`: its
information sets have perfect recall
(its card, the board card once shown, who posted the small blind and every action so far),
finer than what the policy sees, so it is the strongest responder.

The exploitability is the best response's mean gain per hand over the two seats. The seats
are interchangeable (the small blind is drawn each hand), so the game's value is 0 for each
and the figure is NashConv / 2, in big blinds a hand.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from dataclasses import dataclass
from itertools import permutations
from typing import Any

import numpy as np

from league.envs.base import MultiAgentEnv
from league.policy import PolicyFactory
from league.population.exploitability import action_probabilities
from league.population.game_tree import GameTree, best_responses
from league.runtime.faces import Weights

__all__ = ["ENVS", "LeducHoldemExploitability", "LeducHoldemTree", "build_tree"]

#: The env names of PettingZoo's Leduc Hold'em.
ENVS = ("leduc_holdem", "pettingzoo.classic.leduc_holdem_v4", "pettingzoo.classic.rlcard_envs.leduc_holdem")

#: Random hands played in the env to check it is the game the tree walked.
_CHECK_HANDS = 50

#: An information set of one seat: (its card's rank, the board card's rank or -1 before it is
#: shown, the seat that posted the small blind, the actions taken so far by both seats).
InfosetKey = tuple[int, int, int, tuple[int, ...]]


@dataclass(frozen=True)
class LeducHoldemTree:
    """Every hand of Leduc Hold'em as the project's exact-evaluation summary.

    ``game`` is a :class:`~league.population.game_tree.GameTree` whose rows are the seats'
    perfect-recall information sets (``rows`` maps each :data:`InfosetKey` to its row; row
    ``s`` belongs to seat ``game.row_player[s]``); ``observations[s]`` and ``masks[s]`` are
    what RLCard shows that seat there (a function of the information set), so a policy's
    probabilities at every row are one batch. ``deal_weight`` holds the probability of each
    of the deals (the ranks drawn and the small blind's seat).
    """

    game: GameTree
    rows: dict[InfosetKey, int]
    observations: np.ndarray
    masks: np.ndarray
    deal_weight: tuple[float, ...]


def build_tree() -> LeducHoldemTree:
    """Walk every deal of RLCard's Leduc Hold'em (about a second)."""
    import rlcard

    encoder: Any = rlcard.make("leduc-holdem")
    game: Any = encoder.game
    game.init_game()
    deck = [*game.dealer.deck, *(player.hand for player in game.players)]  # the six cards
    rows: dict[InfosetKey, int] = {}
    row_player: list[int] = []
    parent: list[tuple[int, int]] = []  # the seat's previous own (row, action), (-1, -1) at its first
    depth: list[int] = []
    observations: list[np.ndarray] = []
    masks: list[np.ndarray] = []
    chances: list[float] = []
    returns: list[tuple[float, float]] = []
    paths: list[list[tuple[int, int]]] = []

    def rank(card: Any) -> int:
        return int(encoder.card2index[card.get_index()]) if card is not None else -1

    def visit(state: Any, chance: float, small_blind: int, history: tuple[int, ...],
              path: list[tuple[int, int]], last: tuple[tuple[int, int], ...]) -> None:  # fmt: skip
        if state.is_over():
            first, second = state.get_payoffs()
            chances.append(chance)
            returns.append((float(first), float(second)))
            paths.append(list(path))
            return
        seat = int(state.game_pointer)
        key: InfosetKey = (rank(state.players[seat].hand), rank(state.public_card), small_blind, history)
        if key not in rows:
            shown = encoder._extract_state(state.get_state(seat))
            mask = np.zeros(len(encoder.actions), dtype=np.int8)
            mask[list(shown["legal_actions"])] = 1
            rows[key] = len(row_player)
            row_player.append(seat)
            parent.append(last[seat])
            depth.append(0 if last[seat][0] < 0 else depth[last[seat][0]] + 1)
            observations.append(np.asarray(shown["obs"], dtype=np.float32))
            masks.append(mask)
        row = rows[key]
        for action in np.flatnonzero(masks[row]):
            # A copy per child, not RLCard's step_back: stepping back there left hands paid
            # as other outcomes (a tied J-J showdown paid 4 big blinds), and 0.3 s are not worth it.
            child = copy.deepcopy(state)
            child.step(encoder.actions[action])
            decision = (row, int(action))
            seen = (decision, last[1]) if seat == 0 else (last[0], decision)
            visit(child, chance, small_blind, history + (int(action),), [*path, decision], seen)

    # Suits decide nothing (RLCard shows and compares ranks only): one deal per ranks drawn,
    # weighted by how many of the 120 ordered draws of three cards give them.
    draws: dict[tuple[int, int, int], list[Any]] = {}
    counts: dict[tuple[int, int, int], int] = defaultdict(int)
    for cards in permutations(deck, 3):
        ranks = (rank(cards[0]), rank(cards[1]), rank(cards[2]))
        draws.setdefault(ranks, list(cards))
        counts[ranks] += 1
    weights = []
    for ranks, (first, second, board) in draws.items():
        for small_blind in (0, 1):
            state = copy.deepcopy(game)
            _deal(state, first, second, board, small_blind)
            weights.append(counts[ranks] / (2 * sum(counts.values())))
            visit(state, weights[-1], small_blind, (), [], ((-1, -1), (-1, -1)))
    num_rows, width = len(row_player), max(len(p) for p in paths)
    padded = np.array([p + [(num_rows, 0)] * (width - len(p)) for p in paths], dtype=np.int64)
    levels = np.asarray(depth)
    tree = GameTree(
        state_lookup={str(key): row for key, row in rows.items()},
        row_player=np.asarray(row_player),
        parent_row=np.asarray([r for r, _ in parent]),
        parent_action=np.asarray([a for _, a in parent]),
        levels=tuple(np.flatnonzero(levels == d) for d in range(int(levels.max()) + 1)),
        perfect_recall=True,  # the keys hold the seat's card, the board and every action so far
        terminal_chance=np.asarray(chances),
        terminal_returns=np.asarray(returns, dtype=np.float64),
        path_rows=padded[:, :, 0],
        path_actions=padded[:, :, 1],
    )
    return LeducHoldemTree(tree, rows, np.stack(observations), np.stack(masks), tuple(weights))


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


class LeducHoldemExploitability:
    """Exact exploitability of a policy in the Leduc Hold'em that ``env`` plays.

    ValueError when ``env`` is not that game: checked by playing a few random hands in it,
    every observation and action mask it shows and every return must be one of the tree's.
    """

    def __init__(self, env: MultiAgentEnv) -> None:
        agents = list(env.possible_agents)
        if len(agents) != 2:
            raise ValueError(f"Leduc Hold'em's exploitability needs two players, env has {agents}")
        self.agents = agents
        self.tree = build_tree()
        self._check(env, _CHECK_HANDS)

    def _check(self, env: MultiAgentEnv, hands: int) -> None:
        """Play ``hands`` uniformly random hands in ``env``; ValueError on anything the tree lacks."""
        tree = self.tree
        shown = [{o.tobytes() + m.tobytes() for o, m, p in zip(tree.observations, tree.masks, tree.game.row_player) if p == s}
                 for s in (0, 1)]  # fmt: skip
        returns = {(float(a), float(b)) for a, b in tree.game.terminal_returns}
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
        probs = action_probabilities(policy, self.tree.observations, self.tree.masks)
        values, _ = best_responses(self.tree.game, probs, self.tree.masks)
        return float(np.mean(values))
