"""The coordinated recipes (fsp, pfsp, psro, alphastar) as a :class:`TrainingLeague`.

A :class:`~league.population.coordinator.LeagueCoordinator` (a Ray actor when samplers
are, see :mod:`league.leagues.remote_coordinator`, else a local object) holds the
league's state and decisions. Samplers pull matchups from it in batches
(:class:`~league.sampling.matchups.MatchupBatch`);
the driver reports finished episodes to it once per iteration and, after each
iteration, hands it every learning player's sampled agent steps: for each snapshot due
the driver loads the player's current weights on every sampler *before* the
coordinator applies the snapshot, so no matchup names a policy a sampler lacks;
resets load the player's initial learner state and push its weights to the samplers.

Evaluation rounds (the trainer's ``evaluation_matchups`` -> samplers' ``evaluate`` ->
:meth:`CoordinatedLeague.record`) carry the games the league's meta-game solvers need
before they may read an entry: on empirical games PSRO's Nash sees only measured
win rates, so each new snapshot is played against the current support and the rest of
the measured set (frozen against frozen, no seat learning), ``meta_game_episodes``
games a pair, whether or not ``eval_pairs`` asks for other evaluation. On OpenSpiel
games with an exact evaluator the new snapshot's entries are exact at once and nothing
needs playing.

The coordinator is saved (its ``state_dict``) after every change of population and
every ``save_every`` iterations; the episodes reported since are kept. If the actor
dies, a new one starts from that state, the kept episodes are reported again (each
counts once: they are not in the saved state), and samplers get a fresh matchup
source. Meanwhile samplers replay their last batch of matchups.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from league.leagues.base import IntervalMeasure, TrainingLeague, Weights, load_frozen_policies
from league.leagues.remote_coordinator import make_remote_coordinator, remote_refill
from league.population.coordinator import LeagueCoordinator, ResetAction, SnapshotAction
from league.population.evaluation import EvaluationScheduler
from league.population.payoff import PayoffTable
from league.population.recipes import LeagueRecipe
from league.policy import PolicyFactory
from league.runtime.actors import call, is_actor_death, is_ray_actor, resolve_lenient, submit
from league.runtime.faces import LearnerFace, Remote, SamplerFace, SamplerHandle
from league.sampling.matchups import Matchup, MatchupBatch, MatchupSource

if TYPE_CHECKING:
    from league.learn.algorithm import Algorithm
    from league.leagues.exact import ExactMetaGame

__all__ = ["CoordinatedLeague", "steps_counter"]

P = ParamSpec("P")
R = TypeVar("R")


def steps_counter(policy_id: str) -> str:
    """The plan counter of agent steps sampled for ``policy_id`` (the league's clock)."""
    return f"num_agent_steps_sampled/{policy_id}"


class CoordinatedLeague(TrainingLeague):
    """Drives a league coordinator for the trainer (see the module docstring).

    Args:
        recipe: roles and initial players (:func:`league.population.recipes.build_league`).
        agents: the env's two agent ids.
        algorithms: learning policy id -> algorithm (also builds its snapshots).
        scripted: scripted player id -> policy factory.
        payoff: the payoff table to start from.
        remote: run the coordinator as a Ray actor.
        matchup_batch: matchups a sampler fetches at a time.
        eval_pairs / eval_episodes_per_pair: league-scheduled evaluation per round (the
            least certain pairs).
        meta_game_episodes: evaluation episodes per pair the roles' meta-game solvers
            still need measured (PSRO's Nash, PFSP), scheduled every evaluation round
            whatever ``eval_pairs`` is; 0 schedules none.
        exact: an exact evaluator (:class:`~league.leagues.exact.ExactMetaGame`) for
            OpenSpiel games: exact meta-game payoffs and exploitability; or None.
        exploitability_interval: iterations between exploitability measurements.
        exact_payoffs: fill the meta-game from ``exact`` (False: ``meta_game: empirical``,
            payoffs measured from games; ``exact`` then only measures exploitability).
        seed: the coordinator's seed.
        save_every: iterations between saves of the coordinator's state.
    """

    def __init__(
        self,
        recipe: LeagueRecipe,
        agents: Sequence[str],
        algorithms: Mapping[str, Algorithm],
        scripted: Mapping[str, PolicyFactory],
        payoff: PayoffTable,
        remote: bool,
        matchup_batch: int = 64,
        eval_pairs: int = 0,
        eval_episodes_per_pair: int = 8,
        meta_game_episodes: int = 8,
        exact: ExactMetaGame | None = None,
        exploitability_interval: int = 0,
        exact_payoffs: bool = True,
        seed: int = 0,
        save_every: int = 10,
    ) -> None:
        self.learning = recipe.learning
        self.algorithms = dict(algorithms)
        self.scripted = dict(scripted)
        self.remote = remote
        self.matchup_batch = int(matchup_batch)
        self.eval_pairs = int(eval_pairs)
        self.meta_game_episodes = int(meta_game_episodes)
        self.exact = exact
        # meta_game "empirical" on an OpenSpiel game: measured payoffs, exact exploitability only.
        self.exact_payoffs = bool(exact_payoffs)
        self._measure = IntervalMeasure(exploitability_interval)  # when exact exploitability is taken
        self.save_every = int(save_every)
        self.samplers: list[SamplerHandle] = []
        self._snapshots: dict[str, tuple[str, Weights]] = {}  # snapshot id -> (learning player, weights)
        self._initial_states: dict[str, bytes] = {}
        self._since_save: list[dict[str, Any]] = []
        self.coordinator_restarts = 0
        kwargs: dict[str, Any] = dict(
            agents=list(agents),
            roles=recipe.roles,
            players=recipe.players,
            payoff=payoff,
            evaluation=EvaluationScheduler(
                "learning_vs_all", "variance", eval_episodes_per_pair, meta_game_episodes=meta_game_episodes
            ),
            seed=seed,
        )
        self.coordinator: Remote[LeagueCoordinator] = make_remote_coordinator(**kwargs) if remote else LeagueCoordinator(**kwargs)
        self._saved = call(self.coordinator, LeagueCoordinator.state_dict)
        self._view = call(self.coordinator, LeagueCoordinator.view)

    # Setup ------------------------------------------------------------------------
    def bind(self, samplers: Sequence[SamplerHandle], initial_states: Mapping[str, bytes]) -> None:
        """The samplers to keep in step, and each learning player's initial learner state (what a reset restores)."""
        self.samplers = list(samplers)
        self._initial_states = {pid: initial_states[pid] for pid in self.learning}

    @property
    def payoff(self) -> PayoffTable:
        """The payoff table as of the last refresh (once per iteration)."""
        return PayoffTable.from_dict(self._view["payoff"])

    def frozen_policies(self) -> dict[str, tuple[PolicyFactory, Weights | None]]:
        """Scripted members, then every snapshot with its weights."""
        out: dict[str, tuple[PolicyFactory, Weights | None]] = {pid: (f, None) for pid, f in self.scripted.items()}
        out.update({sid: (self.algorithms[pid], w) for sid, (pid, w) in self._snapshots.items()})
        return out

    def matchups(self) -> MatchupSource:
        """A batch of matchups that refills itself from the coordinator."""
        first = self._call(LeagueCoordinator.next_matchups, self.matchup_batch)
        coordinator = self.coordinator  # a Ray actor exactly when self.remote
        refill = remote_refill(coordinator) if is_ray_actor(coordinator) else coordinator.next_matchups
        return MatchupBatch(first, refill=refill, refill_size=self.matchup_batch)

    # Results ----------------------------------------------------------------------
    def record(self, episodes: list[dict[str, Any]]) -> None:
        """Report finished episodes to the coordinator (kept until its next save)."""
        if not episodes:
            return
        self._since_save.extend(episodes)
        self._call(LeagueCoordinator.report, episodes)

    @property
    def schedules_evaluation(self) -> bool:
        """Whether its rounds carry meta-game or ``eval_pairs`` games."""
        return bool(self.eval_pairs or self.meta_game_episodes)

    def evaluation_matchups(self) -> list[Matchup]:
        """This round's evaluation matchups: the meta-game pairs the solvers still need
        (frozen against frozen included; no seat learns), then ``eval_pairs`` least
        certain pairs. The trainer plays them and hands the episodes to :meth:`record`."""
        if not self.eval_pairs and not self.meta_game_episodes:
            return []
        _pairs, matchups = self._call(LeagueCoordinator.next_evaluation, self.eval_pairs)
        return matchups

    # Decisions --------------------------------------------------------------------
    def update(self, iteration: int, counters: Mapping[str, int], learner: LearnerFace, samplers: Sequence[SamplerHandle]) -> None:
        """Snapshots and resets due after this iteration; saves the coordinator now and then."""
        steps = {pid: int(counters.get(steps_counter(pid), 0)) for pid in self.learning}
        actions = self._call(LeagueCoordinator.due, steps)
        snaps = [a for a in actions if isinstance(a, SnapshotAction)]
        if snaps:
            current = learner.get_weights(sorted({a.player_id for a in snaps}))
            new = {a.snapshot_id: (a.player_id, current[a.player_id]) for a in snaps}
            load_frozen_policies(samplers, {sid: (self.algorithms[pid], w) for sid, (pid, w) in new.items()})
            self._snapshots.update(new)
            self._call(LeagueCoordinator.apply, actions)
            if self.exact is not None and self.exact_payoffs:
                self._call(LeagueCoordinator.set_expected_returns, self._exact_payoffs(self.exact, list(new)))
        resets = [a for a in actions if isinstance(a, ResetAction)]
        for action in resets:
            self._reset(action, learner)
        if resets:
            weights = learner.get_weights([a.player_id for a in resets])
            resolve_lenient([submit(s, SamplerFace.set_weights, weights) for s in samplers], samplers)
            # A player back at its initial state explores as a fresh one (DQN's epsilon from its start).
            fresh = [a.player_id for a in resets if a.source_id is None]
            if fresh:
                resolve_lenient([submit(s, SamplerFace.reset_exploration, fresh) for s in samplers], samplers)
        if actions or iteration % self.save_every == 0:
            self._save()
        self._view = self._call(LeagueCoordinator.view)

    def _reset(self, action: ResetAction, learner: LearnerFace) -> None:
        source = action.source_id
        if source is None:
            learner.set_state(action.player_id, self._initial_states[action.player_id])
        elif source in self._snapshots:
            learner.set_weights({action.player_id: self._snapshots[source][1]})
        else:
            learner.set_weights({action.player_id: learner.get_weights([source])[source]})

    def _exact_payoffs(self, exact: ExactMetaGame, new_ids: list[str]) -> list[tuple[str, str, float]]:
        frozen = self.frozen_policies()
        values = []
        for sid in new_ids:
            for other in frozen:
                if other != sid:
                    values.append((sid, other, exact.expected_return(sid, frozen[sid], other, frozen[other])))
        return values

    # Metrics ----------------------------------------------------------------------
    def metrics(self, iteration: int, learner: LearnerFace, time_left_s: float | None = None) -> dict[str, Any]:
        """Ratings and population size every iteration; exploitability every ``exploitability_interval``
        (:class:`IntervalMeasure`)."""
        row: dict[str, Any] = {
            "snapshots": len(self._snapshots),
            "league_players": len(self._view["population"]["players"]),
            "ratings": self._view["ratings"],
        }
        if self.exact is not None and self._measure.due(iteration, time_left_s):
            row["exploitability"] = self._measure.timed(lambda: self.exploitability(learner))
        if self.coordinator_restarts:
            row["coordinator_restarts"] = self.coordinator_restarts
        return row

    def exploitability(self, learner: LearnerFace) -> dict[str, float]:
        """Exact exploitability of each learning player and of the league's meta-strategy
        (the Nash mixture of the frozen players' meta-game)."""
        exact = self.exact
        if exact is None:
            raise ValueError("exploitability needs an exact evaluator (the league of an OpenSpiel game)")
        weights = learner.get_weights(self.learning)
        out = {pid: exact.exploitability(self.algorithms[pid], weights[pid]) for pid in self.learning}
        frozen = self.frozen_policies()
        if frozen:
            out["meta_strategy"] = exact.meta_strategy_exploitability(frozen, self.payoff)
        return out

    # State ------------------------------------------------------------------------
    def _save(self) -> None:
        self._saved = self._call(LeagueCoordinator.state_dict)
        self._since_save = []

    def state(self) -> dict[str, Any]:
        """The coordinator's whole state and which learning player each snapshot copies."""
        self._save()
        return {"coordinator": self._saved, "snapshot_sources": {sid: pid for sid, (pid, _) in self._snapshots.items()}}

    def load_state(self, state: Mapping[str, Any], policies: Mapping[str, Weights]) -> None:
        """Restore the coordinator and the snapshots' weights from a checkpoint."""
        sources = dict(state["snapshot_sources"])
        missing = sorted(set(sources) - set(policies))
        if missing:
            raise ValueError(f"no weights for snapshot(s) {missing}")
        self._snapshots = {sid: (pid, dict(policies[sid])) for sid, pid in sources.items()}
        call(self.coordinator, LeagueCoordinator.load_state_dict, state["coordinator"])
        self._saved = state["coordinator"]
        self._since_save = []
        self._view = call(self.coordinator, LeagueCoordinator.view)

    def summary(self) -> dict[str, Any]:
        """Snapshots, final ratings and the coordinator's whole state (population, payoff...);
        with an exact evaluator, also the league's meta-strategy: its weight per frozen player
        (``league.meta_strategy``), the mixture whose exploitability was logged last."""
        out = {"snapshots": list(self._snapshots), "ratings": self._view["ratings"], "league": self._saved}
        frozen = self.frozen_policies()
        if self.exact is not None and frozen:
            out["meta_strategy"] = self.exact.latest_meta_strategy(frozen, self.payoff)
        return out

    # Coordinator failures -----------------------------------------------------------
    def _call(self, method: Callable[Concatenate[LeagueCoordinator, P], R], *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return call(self.coordinator, method, *args, **kwargs)
        except Exception as err:
            if not (self.remote and is_actor_death(err)):
                raise
        self._restart_coordinator()
        return call(self.coordinator, method, *args, **kwargs)

    def _restart_coordinator(self) -> None:
        """A new coordinator actor from the last saved state, the episodes since then
        reported again, and a fresh matchup source on every sampler."""
        import ray

        old = self.coordinator  # an actor: only a remote coordinator is restarted
        try:
            if is_ray_actor(old):
                ray.kill(old)
        except Exception:  # noqa: BLE001 - it is already gone
            pass
        self.coordinator = make_remote_coordinator(agents=self._saved["agents"])
        call(self.coordinator, LeagueCoordinator.load_state_dict, self._saved)
        if self._since_save:
            call(self.coordinator, LeagueCoordinator.report, self._since_save)
        self.coordinator_restarts += 1
        if self.samplers:
            sources = [self.matchups() for _ in self.samplers]
            resolve_lenient([submit(s, SamplerFace.set_matchups, m) for s, m in zip(self.samplers, sources)], self.samplers)

    def close(self) -> None:
        """Stop the coordinator actor."""
        if is_ray_actor(self.coordinator):
            import ray

            ray.kill(self.coordinator)

