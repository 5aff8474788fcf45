"""``holdem_rules``: a rule-based limit Texas Hold'em player, the yardstick of PettingZoo's
``texas_holdem`` (two or more players) where no exact measure is tractable.

It plays the hands RLCard's limit Hold'em rule agent (``limit-holdem-rule-v1``) plays, from
what a seat's observation shows: PettingZoo's 72 values, 52 card indicators (the hand and the
board together, suits of 13 ranks from the ace up) and each betting round's raise count; its
actions are call, raise, fold and check. Before the flop the two cards are the hand: pairs,
two cards from ten up and a suited ace raise, anything else checks when it may and folds
otherwise. From the flop on the hand and the board cannot be told apart, so the player reads
the best five-card hand among every card it sees: two pair or better raises, a pair of tens or
better calls, anything else checks or folds. It never bluffs and never folds a strong hand, so
a policy scores against it by value-betting better hands and folding worse ones, which the
uniform-random player (a third of whose replies to a bet are folds) does not ask for.
"""

from __future__ import annotations

import numpy as np

from league.envs.base import AgentSpec
from league.policy import PolicyFactory
from league.population.scripted import BoardSearchPolicy, ScriptedFactory, check_board_shape

__all__ = ["CALL", "CHECK", "FOLD", "RAISE", "HoldemRulesPlayer", "hand_categories", "make_holdem_rules"]

#: PettingZoo's (RLCard's) limit Hold'em actions.
CALL, RAISE, FOLD, CHECK = 0, 1, 2, 3
#: Hand categories of :func:`hand_categories`, weakest first.
HIGH_CARD, PAIR, TWO_PAIR, TRIPS, STRAIGHT, FLUSH, FULL_HOUSE, QUADS, STRAIGHT_FLUSH = range(9)
_TEN = 8  # rank index of a ten, ranks counted from the deuce (0) to the ace (12)

# Each intent's preference over the four actions (a higher score is played first): raise
# where it may, else call, else check; call where facing a bet, check where not; check, else fold.
_PREFERENCES = np.array([
    # call raise fold check
    [2, 3, 0, 1],  # raise
    [2, 1, 0, 3],  # call (or check)
    [1, 0, 2, 3],  # check, else fold
], dtype=np.int64)
_RAISE, _CALL, _PASSIVE = range(3)


def _cards(obs: np.ndarray) -> np.ndarray:
    """``bool[B, 4, 13]``: the cards a seat sees, by suit and rank (the deuce first, the ace last)."""
    cards = np.asarray(obs)[:, :52].reshape(-1, 4, 13) > 0.5
    return np.roll(cards, -1, axis=2)  # PettingZoo counts each suit from the ace


def _has_straight(present: np.ndarray) -> np.ndarray:
    """``bool[...]``: five ranks in a row among ``present`` (``bool[..., 13]``), the ace low too."""
    ranks = np.concatenate([present[..., -1:], present], axis=-1)  # the ace below the deuce
    run = np.zeros(present.shape[:-1], dtype=np.int64)
    found = np.zeros(present.shape[:-1], dtype=bool)
    for r in range(ranks.shape[-1]):
        run = np.where(ranks[..., r], run + 1, 0)
        found |= run >= 5
    return found


def hand_categories(cards: np.ndarray) -> np.ndarray:
    """``int64[B]``: the best five-card hand category (:data:`HIGH_CARD` ... :data:`STRAIGHT_FLUSH`)
    among each row's cards (``bool[B, 4, 13]``, any number of them)."""
    counts = cards.sum(axis=1)  # [B, 13] cards of each rank
    suited = cards.sum(axis=2)  # [B, 4] cards of each suit
    pairs, trips = (counts >= 2).sum(axis=1), (counts >= 3).sum(axis=1)
    flush_suits = suited >= 5
    category = np.full(len(cards), HIGH_CARD, dtype=np.int64)
    for reached, level in (
        (pairs >= 1, PAIR), (pairs >= 2, TWO_PAIR), (trips >= 1, TRIPS), (_has_straight(counts > 0), STRAIGHT),
        (flush_suits.any(axis=1), FLUSH), ((trips >= 1) & (pairs >= 2), FULL_HOUSE), ((counts >= 4).any(axis=1), QUADS),
        ((_has_straight(cards) & flush_suits).any(axis=1), STRAIGHT_FLUSH),
    ):
        category = np.where(reached, level, category)
    return category


class HoldemRulesPlayer(BoardSearchPolicy):
    """The rule-based limit Hold'em player above, for a batch of PettingZoo observations."""

    obs_shape = (72,)
    num_actions = 4

    def intents(self, obs: np.ndarray) -> np.ndarray:
        """``int64[B]``: raise (0), call (1) or check-else-fold (2) for each row."""
        cards = _cards(obs)
        seen = cards.sum(axis=(1, 2))
        held = np.argwhere(cards)  # one (row, suit, rank) per card seen, in row order
        preflop = seen == 2
        intent = np.full(len(cards), _PASSIVE, dtype=np.int64)
        if preflop.any():
            hand = held[np.isin(held[:, 0], np.flatnonzero(preflop))].reshape(-1, 2, 3)
            rows, suits, values = hand[:, 0, 0], hand[:, :, 1], hand[:, :, 2]
            playable = (values[:, 0] == values[:, 1]) | (values.min(axis=1) >= _TEN)
            playable |= (values.max(axis=1) == 12) & (suits[:, 0] == suits[:, 1])
            intent[rows] = np.where(playable, _RAISE, _PASSIVE)
        later = ~preflop
        if later.any():
            category = hand_categories(cards[later])
            counts = cards[later].sum(axis=1)
            high_pair = (counts[:, _TEN:] >= 2).any(axis=1)
            intent[later] = np.where(category >= TWO_PAIR, _RAISE, np.where((category == PAIR) & high_pair, _CALL, _PASSIVE))
        return intent

    def _score_batch(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Each action's place in the row's intent's preference (the legal best is played)."""
        return _PREFERENCES[self.intents(obs)]

    def _score_moves(self, obs: np.ndarray, legal: list[int]) -> dict[int, int]:
        # BoardSearchPolicy's row-by-row path, which it takes only without a batched scorer
        scores = self._score_batch(obs[None], np.ones((1, self.num_actions), dtype=np.int8))[0]
        return {a: int(scores[a]) for a in legal}


def make_holdem_rules(spec: AgentSpec, depth: int = 0, random_ties: bool = False) -> PolicyFactory:
    """The ``holdem_rules`` scripted player for PettingZoo's limit Texas Hold'em (``depth`` and
    ``random_ties`` are ignored: it does not search and never ties)."""
    check_board_shape("holdem_rules", "limit Texas Hold'em (pettingzoo.classic.texas_holdem_v4)", HoldemRulesPlayer, spec)
    return ScriptedFactory(HoldemRulesPlayer)
