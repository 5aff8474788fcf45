"""Exact meta-game payoffs and exploitability of a league on a small OpenSpiel game.

For games small enough to enumerate (kuhn_poker, leduc_poker), the league's frozen
players are scored exactly instead of from sampled games: each frozen policy is read
once into an OpenSpiel ``TabularPolicy`` (cached, it never changes), the expected
return of every new snapshot against every other frozen player fills the payoff
table's meta-game, and exploitability (NashConv / 2) is computed for the learning
players and for the league's meta-strategy: the Nash mixture of the frozen players'
meta-game, played as one behaviour strategy (see
:func:`league.population.exploitability.mixture_policy`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from league.population.matchmaking import NashMatchmaker
from league.population.payoff import PayoffTable

__all__ = ["ExactMetaGame"]


class ExactMetaGame:
    """Exact evaluation of league policies in OpenSpiel game ``game`` (see the module docstring)."""

    def __init__(self, game: str) -> None:
        from league.envs.openspiel_env import load_game

        self.game = load_game(game)
        self._tables: dict[str, Any] = {}  # frozen policy id -> TabularPolicy

    def _policy(self, factory: Any, weights: Mapping[str, Any] | None) -> Any:
        policy = factory.make_policy(seed=0, learns=False)
        if weights is not None:
            policy.set_weights(dict(weights))
        return policy

    def add_table(self, policy_id: str, table: Any) -> None:
        """Use an existing ``TabularPolicy`` for frozen policy ``policy_id`` (e.g. a CFR solution)."""
        self._tables[policy_id] = table

    def table(self, policy_id: str, frozen: tuple[Any, Mapping[str, Any] | None]) -> Any:
        """The cached ``TabularPolicy`` of frozen policy ``policy_id`` (``(factory, weights)``)."""
        from league.population.exploitability import tabular_policy

        if policy_id not in self._tables:
            self._tables[policy_id] = tabular_policy(self.game, self._policy(*frozen))
        return self._tables[policy_id]

    def expected_return(self, a: str, frozen_a: tuple[Any, Any], b: str, frozen_b: tuple[Any, Any]) -> float:
        """Expected return of frozen policy ``a`` against ``b``, both seatings averaged."""
        from league.population.exploitability import expected_returns

        return float(expected_returns(self.game, self.table(a, frozen_a), self.table(b, frozen_b)))

    def exploitability(self, factory: Any, weights: Mapping[str, Any]) -> float:
        """Exploitability of a (learning) policy built by ``factory`` with ``weights``."""
        from league.population.exploitability import exploitability

        return float(exploitability(self.game, self._policy(factory, weights)))

    def meta_strategy(self, frozen: Mapping[str, tuple[Any, Any]], payoff: PayoffTable) -> dict[str, float]:
        """The Nash mixture of the frozen players under the return meta-game."""
        ids = list(frozen)
        weights = NashMatchmaker(utility="return").equilibrium(ids, payoff)
        return {pid: float(w) for pid, w in zip(ids, weights)}

    def meta_strategy_exploitability(self, frozen: Mapping[str, tuple[Any, Any]], payoff: PayoffTable) -> float:
        """Exploitability of :meth:`meta_strategy` played as one behaviour strategy."""
        from league.population.exploitability import mixture_exploitability

        mixture = {pid: w for pid, w in self.meta_strategy(frozen, payoff).items() if w > 1e-9}
        tables = [self.table(pid, frozen[pid]) for pid in mixture]
        return float(mixture_exploitability(self.game, tables, list(mixture.values())))
