"""Exact meta-game payoffs and exploitability of a league on a small OpenSpiel game.

For games small enough to enumerate (kuhn_poker, leduc_poker), the league's frozen
players are scored exactly instead of from sampled games: each frozen policy is read
once into an OpenSpiel ``TabularPolicy`` (cached, it never changes), the expected
return of every new snapshot against every other frozen player fills the payoff
table's meta-game, and exploitability (NashConv / 2) is computed for the learning
players and for the league's meta-strategy, a mixture of the frozen players played as one
behaviour strategy (see :func:`league.population.exploitability.mixture_policy`):
``meta_strategy="nash"``, the Nash mixture of their meta-game (what PSRO's main trains
against); ``"least_exploitable"``, the mixture of them with the least exploitability in
the full game (:class:`~league.population.min_exploitability.MinExploitabilitySolver`),
never more exploitable than the Nash mixture and, as the population grows, never more
than before.

Policies are read through :meth:`league.policy.Policy.action_probabilities` (the
distribution they play league games with) and shown exactly the observations training
showed them: :meth:`ExactMetaGame.from_env` takes the game (with its parameters) and the
observation function from the training env itself, built by the same factory and
``env.kwargs`` as the samplers' envs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from league.population.matchmaking import NashMatchmaker
from league.population.payoff import PayoffTable

if TYPE_CHECKING:
    import pyspiel

    from league.envs.base import MultiAgentEnv
    from league.envs.openspiel_env import Observer
    from league.policy import Policy, PolicyFactory
    from league.population.min_exploitability import MinExploitabilitySolver
    from league.runtime.faces import Weights

__all__ = ["META_STRATEGIES", "ExactMetaGame"]

#: What :meth:`ExactMetaGame.meta_strategy` mixes by (``league.meta_strategy``).
META_STRATEGIES = ("nash", "least_exploitable")


class ExactMetaGame:
    """Exact evaluation of league policies in OpenSpiel game ``game`` (see the module docstring).

    Args:
        game: a game name or a loaded ``pyspiel.Game`` (a simultaneous-move game is
            played turn-based, as :class:`~league.envs.openspiel_env.OpenSpielEnv` plays it).
        observation: what policies are shown: an observation kind (``"info_state"``,
            ``"observation"``) or an ``Observer`` ``(state, player) -> obs``.
        meta_strategy: one of :data:`META_STRATEGIES` (see the module docstring).
        **params: game parameters when ``game`` is a name.

    A league's evaluator comes from :meth:`from_env`, so that it matches training.
    """

    def __init__(
        self, game: str | pyspiel.Game, observation: str | Observer = "info_state", meta_strategy: str = "nash", **params: Any
    ) -> None:
        from league.envs.openspiel_env import OBSERVATION_KINDS, load_game
        from league.population.min_exploitability import MinExploitabilitySolver

        if not callable(observation) and observation not in OBSERVATION_KINDS:
            raise ValueError(f"observation must be one of {OBSERVATION_KINDS} or an Observer, got {observation!r}")
        if meta_strategy not in META_STRATEGIES:
            raise ValueError(f"meta_strategy must be one of {META_STRATEGIES}, got {meta_strategy!r}")
        self.game = load_game(game, **params)
        self.observation = observation
        # Built now so that a game it cannot mix (not two-player zero-sum) fails at startup.
        self._solver = MinExploitabilitySolver(self.game) if meta_strategy == "least_exploitable" else None
        self._tables: dict[str, Any] = {}  # frozen policy id -> TabularPolicy

    @classmethod
    def from_env(cls, env: MultiAgentEnv, meta_strategy: str = "nash") -> ExactMetaGame:
        """The evaluator of the game ``env`` plays (its parameters included), showing
        policies what ``env`` shows them (:meth:`~league.envs.openspiel_env.OpenSpielEnv.observe`),
        with ``meta_strategy`` (:data:`META_STRATEGIES`).

        Raises ``ValueError`` when ``env`` truncates episodes the game can play out
        (``max_episode_steps`` below the game's longest play): training then plays a
        different game from the one that would be evaluated.
        """
        from league.envs.openspiel_env import OpenSpielEnv

        if not isinstance(env, OpenSpielEnv):
            raise TypeError(f"exact evaluation needs an OpenSpielEnv, got {type(env).__name__}")
        longest = env.game.max_game_length()
        if env.max_episode_steps is not None and env.max_episode_steps < longest:
            raise ValueError(
                f"env {env.name!r} truncates episodes after {env.max_episode_steps} steps but its game "
                f"lasts up to {longest} decisions: exact evaluation would score a different game"
            )
        return cls(env.game, observation=env.observe, meta_strategy=meta_strategy)

    def _policy(self, factory: PolicyFactory, weights: Weights | None) -> Policy:
        policy = factory.make_policy(seed=0, learns=False)
        if weights is not None:
            policy.set_weights(dict(weights))
        return policy

    def add_table(self, policy_id: str, table: Any) -> None:
        """Use an existing ``TabularPolicy`` for frozen policy ``policy_id`` (e.g. a CFR solution)."""
        self._tables[policy_id] = table

    def table(self, policy_id: str, frozen: tuple[PolicyFactory, Weights | None]) -> Any:
        """The cached ``TabularPolicy`` of frozen policy ``policy_id`` (``(factory, weights)``)."""
        from league.population.exploitability import tabular_policy

        if policy_id not in self._tables:
            self._tables[policy_id] = tabular_policy(self.game, self._policy(*frozen), self.observation)
        return self._tables[policy_id]

    def expected_return(
        self, a: str, frozen_a: tuple[PolicyFactory, Weights | None], b: str, frozen_b: tuple[PolicyFactory, Weights | None]
    ) -> float:
        """Expected return of frozen policy ``a`` against ``b``, both seatings averaged."""
        from league.population.exploitability import expected_returns

        return float(expected_returns(self.game, self.table(a, frozen_a), self.table(b, frozen_b)))

    def exploitability(self, factory: PolicyFactory, weights: Weights) -> float:
        """Exploitability of a (learning) policy built by ``factory`` with ``weights``,
        played as a snapshot of it would play (built with ``learns=False``: e.g. a DQN
        policy at its schedule's final epsilon)."""
        from league.population.exploitability import exploitability

        return float(exploitability(self.game, self._policy(factory, weights), self.observation))

    def meta_strategy(self, frozen: Mapping[str, tuple[PolicyFactory, Weights | None]], payoff: PayoffTable) -> dict[str, float]:
        """The league's mixture of the frozen players: the Nash mixture of their return
        meta-game in ``payoff``, or their least exploitable mixture (``meta_strategy``)."""
        if self._solver is not None:
            return self._least_exploitable(self._solver, frozen)[0]
        ids = list(frozen)
        weights = NashMatchmaker(utility="return").equilibrium(ids, payoff)
        return {pid: float(w) for pid, w in zip(ids, weights)}

    def latest_meta_strategy(self, frozen: Mapping[str, tuple[PolicyFactory, Weights | None]], payoff: PayoffTable) -> dict[str, float]:
        """The least exploitable mixture last solved (the one whose exploitability was last
        logged), weight 0 for a frozen player that joined since; :meth:`meta_strategy` where
        none was solved, or with the Nash meta-strategy (a small LP). A run's summary reads it:
        solving a 20-member liar's dice mixture again takes ~12 s, past the run's stop.time_s."""
        last = None if self._solver is None else self._solver.last_weights
        if last is None:
            return self.meta_strategy(frozen, payoff)
        return {pid: float(last.get(pid, 0.0)) for pid in frozen}

    def meta_strategy_exploitability(self, frozen: Mapping[str, tuple[PolicyFactory, Weights | None]], payoff: PayoffTable) -> float:
        """Exploitability of :meth:`meta_strategy` played as one behaviour strategy."""
        from league.population.exploitability import exploitability

        if self._solver is not None:
            return self._least_exploitable(self._solver, frozen)[1]
        return float(exploitability(self.game, self.meta_strategy_policy(frozen, payoff)[1]))

    def meta_strategy_policy(
        self, frozen: Mapping[str, tuple[PolicyFactory, Weights | None]], payoff: PayoffTable
    ) -> tuple[dict[str, float], Any]:
        """:meth:`meta_strategy`'s weights and the mixture as one behaviour strategy (an
        OpenSpiel ``TabularPolicy``: :func:`~league.population.exploitability.mixture_policy`)."""
        from league.population.exploitability import mixture_policy

        weights = self.meta_strategy(frozen, payoff)
        mixture = {pid: w for pid, w in weights.items() if w > 1e-9}
        tables = [self.table(pid, frozen[pid]) for pid in mixture]
        return weights, mixture_policy(self.game, tables, list(mixture.values()))

    def _least_exploitable(
        self, solver: MinExploitabilitySolver, frozen: Mapping[str, tuple[PolicyFactory, Weights | None]]
    ) -> tuple[dict[str, float], float]:
        """The solver's mixture of the frozen players and its exploitability (solved again only when they change)."""
        return solver.solve({pid: self.table(pid, frozen[pid]) for pid in frozen})
