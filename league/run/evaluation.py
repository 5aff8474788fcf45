"""Episode results on their way from the samplers to the league, and evaluation rounds.

:class:`EpisodeFeed` fetches finished training episodes one iteration late, and records them
in the league; a remote sampler answers on its bookkeeping thread
(:data:`~league.sampling.BOOKKEEPING_GROUP`), so no fetch waits behind a ``sample()`` in flight,
not even the one before a checkpoint or at the run's end.
:class:`EvaluationRounds` plays greedy games of every learning policy against the fixed
evaluation opponent (co-op sides: with each other, :data:`~league.run.headline.TEAMMATES`),
plus the league's own scheduled games, on the samplers' separate env copies, without
blocking training: results are collected once all have arrived.
A sampler lost mid-call (its node died) costs its episodes, never the run.
"""

from __future__ import annotations

import statistics
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from league.run.headline import TEAMMATES
from league.runtime.actors import Pending, is_ray_actor, resolve, resolve_lenient, submit, submit_in_group
from league.runtime.faces import SamplerFace, SamplerHandle
from league.leagues import TrainingLeague
from league.population.scripted import scripted_members
from league.sampling import MatchupBatch, MatchupSource, OpponentSampling, bookkeeping_group

#: Iterations in a row without a finished training episode before a warning says why.
QUIET_ITERATIONS_WARNING = 4
#: Seconds of training without any finished training episode before that warning, however few
#: iterations fit in them (one iteration of an image env can take minutes).
QUIET_SECONDS_WARNING = 60.0

__all__ = ["EpisodeFeed", "EvaluationRounds", "mix_source", "win_rate", "wins_of", "returns_of", "mean_return_of", "median_return_of"]


def wins_of(policy_id: str, episodes: Sequence[Mapping[str, Any]]) -> float:
    """The share of ``episodes`` that ``policy_id`` won (draws are not wins; a team on several
    seats wins an episode once, when one of its seats has the highest return)."""
    wins = sum(1 for e in episodes if any(p == policy_id and e["outcome"][a] == "win" for a, p in e["policies"].items()))
    return wins / len(episodes)


def returns_of(policy_id: str, episodes: Sequence[Mapping[str, Any]]) -> list[float]:
    """``policy_id``'s return in each episode it played (a team's: the mean over its seats)."""
    return [
        sum(seats) / len(seats)
        for e in episodes
        if (seats := [e["returns"][a] for a, p in e["policies"].items() if p == policy_id])
    ]


def mean_return_of(policy_id: str, episodes: Sequence[Mapping[str, Any]]) -> float | None:
    """``policy_id``'s mean episode return (a team's: the mean over its seats), None without a seat."""
    per_episode = returns_of(policy_id, episodes)
    return sum(per_episode) / len(per_episode) if per_episode else None


def median_return_of(policy_id: str, episodes: Sequence[Mapping[str, Any]]) -> float | None:
    """``policy_id``'s median episode return (a team's per episode: the mean over its seats),
    None without a seat; unlike the mean, a few outlier episodes barely move it."""
    per_episode = returns_of(policy_id, episodes)
    return float(statistics.median(per_episode)) if per_episode else None


def mix_source(league: TrainingLeague, policy_id: str, opponent: str) -> MatchupSource:
    """``league``'s evaluation matchups of ``policy_id`` against ``opponent``, a scripted mix's
    players drawn per seat where it is one (a league that never meets a mix keeps the two-argument
    :meth:`~league.leagues.TrainingLeague.evaluation_source`)."""
    members = scripted_members(opponent)
    return league.evaluation_source(policy_id, opponent, members) if len(members) > 1 else league.evaluation_source(policy_id, opponent)


def win_rate(
    samplers: Sequence[SamplerHandle], policy_id: str, opponent: str, episodes: int, matchups: MatchupSource | None = None,
    explore: bool = False, openings: bool = False,
) -> float:
    """Win rate of ``policy_id`` against ``opponent`` over ``episodes`` games split between
    the samplers (it waits for them), greedy unless ``explore`` (``eval.explore``: the policies
    sample their actions), from the env's exploring starts with ``openings`` (as a run plays its
    yardstick); ``matchups``: the league's
    :meth:`~league.leagues.TrainingLeague.evaluation_source` (default: a random seat)."""
    per = max(1, episodes // len(samplers))
    matchups = matchups or OpponentSampling(policy_id, {opponent: 1.0})
    results = resolve([submit(s, SamplerFace.evaluate, per, matchups, explore=explore, openings=openings) for s in samplers],
                      list(samplers))
    return wins_of(policy_id, [e for eps in results for e in eps])


class EpisodeFeed:
    """Training episodes' statistics from the samplers into the league (see the module docstring)."""

    def __init__(self) -> None:
        self.lost_sampler_calls = 0  # bookkeeping calls to samplers that died mid-call
        self.finished = 0  # training episodes fetched so far
        self._quiet_iterations = 0  # iterations in a row without a finished episode
        self._started = time.perf_counter()
        self._asked_at: float | None = None  # when the calls in flight were sent: what they cover
        self._warned = False  # in this quiet spell
        self._pending: list[Pending[list[dict[str, Any]]]] = []
        self._flushed: list[dict[str, Any]] = []  # recorded at a checkpoint, reported with the next row

    def next(self, samplers: Sequence[SamplerHandle], league: TrainingLeague) -> list[dict[str, Any]]:
        """Record the episodes asked for last time, ask again; returns them (and any flushed)."""
        covered = self._asked_at  # the episodes fetched now finished before about this time
        fresh = self._fetch(samplers)
        self._quiet_iterations = 0 if fresh else self._quiet_iterations + 1
        quiet_s = 0.0 if covered is None else covered - self._started
        long_quiet = not self.finished and covered is not None and quiet_s >= QUIET_SECONDS_WARNING
        if self._quiet_iterations >= QUIET_ITERATIONS_WARNING or long_quiet:
            self.warn_quiet(f"{self._quiet_iterations} iterations" if self.finished else f"the first {max(quiet_s, 0):.0f} s")
        league.record(fresh)
        out, self._flushed = self._flushed + fresh, []
        self._pending = [submit_in_group(s, bookkeeping_group(s), SamplerFace.pop_episode_stats) for s in samplers]
        self._asked_at = time.perf_counter()
        return out

    def warn_quiet(self, spell: str) -> None:
        """Say (once per spell without finished episodes) that no training episode finished in
        ``spell``, and what to change: the league, the figures and the sampler shares all need whole episodes."""
        if self._warned:
            return
        self._warned = True
        warnings.warn(
            f"no training episode finished in {spell}: episodes are longer than what the samplers step in that time "
            "(every env copy must play a whole episode). Lower sampler.num_envs, raise iteration.min_env_steps or "
            "the time budget, or cap episodes (env.kwargs.max_cycles for PettingZoo, +env.kwargs.max_episode_steps=N for any env)",
            stacklevel=3,
        )

    def end_of_run(self, samplers: Sequence[SamplerHandle], league: TrainingLeague, seconds: float) -> None:
        """The run's last iteration: fetch its episodes now (:meth:`flush`) and warn if the run,
        ``seconds`` long, finished no training episode at all (a short run fits fewer iterations
        than the warning's count)."""
        self.flush(samplers, league)
        if not self.finished:
            self.warn_quiet(f"this run ({seconds:.0f} s)")

    def flush(self, samplers: Sequence[SamplerHandle], league: TrainingLeague) -> None:
        """Record the episodes asked for now (before a checkpoint); they are reported next time."""
        if self._pending:
            fresh = self._fetch(samplers)
            league.record(fresh)
            self._flushed.extend(fresh)
            if fresh:
                self._quiet_iterations = 0

    def drop(self) -> None:
        """Forget the calls in flight (their samplers are being replaced)."""
        self._pending = []

    def _fetch(self, samplers: Sequence[SamplerHandle]) -> list[dict[str, Any]]:
        pending, self._pending = self._pending, []
        if not pending:
            return []
        results, failed = resolve_lenient(pending, list(samplers), default=[])
        self.lost_sampler_calls += failed
        fresh = [e for eps in results for e in eps]
        if fresh:
            self.finished += len(fresh)
            self._warned = False
        return fresh


class EvaluationRounds:
    """Evaluation against ``opponent`` (and ``yardstick``, a scripted player, where one is
    given: its games open with the env's exploring starts, ``env.opening_plies``, so that a
    deterministic player and a greedy policy play more than one game from each seat) and the
    league's scheduled games, greedy or, with ``explore`` (``eval.explore``),
    the policies sampling their actions; ``observe`` is handed every round's episodes.
    While ``together()`` says so (a co-op game of several sides), each learning policy plays
    with the league's other learning policies as partners instead of against ``opponent``
    (:meth:`~league.leagues.TrainingLeague.teammates_source`): its return is then the team's,
    and no win rate is recorded (nobody wins a co-op game).

    Attributes:
        win_rates: the latest win rate of each learning policy against the opponent.
        yardstick_win_rates: the latest win rate of each learning policy against the yardstick.
        yardstick_returns: the latest mean episode return of each learning policy against it.
        returns: the latest mean episode return of each learning policy in those games
            (the success metric of co-op and single-agent envs, where nobody wins).
        medians: the latest median episode return of each learning policy in those games.
        best_win_rate: the best, over rounds, of the worst policy's win rate.
        lost_sampler_calls: evaluation calls lost with their sampler.
        env_steps_played: env steps of the finished evaluation games this process collected
            (the samplers' work besides training: games cut short by a bound are not counted).
    """

    def __init__(
        self, opponent: str, episodes: int, env_steps: int = 0, yardstick: str | None = None,
        observe: Callable[[Sequence[Mapping[str, Any]]], None] | None = None,
        together: Callable[[], bool] | None = None, explore: bool = False,
    ) -> None:  # fmt: skip
        self.opponent = opponent
        self.explore = explore  # every game of a round, the league's own included
        self.together = together  # the run's headline says whether the sides play as one team
        self._round_opponent = opponent  # whom the latest round's main games were against
        self.yardstick = yardstick
        self.observe = observe  # the run's headline takes the rewards paid as evidence of the game's shape
        self.yardstick_win_rates: dict[str, float] = {}
        self.yardstick_returns: dict[str, float] = {}
        self.episodes = episodes
        self.env_steps = env_steps  # eval.env_steps: each policy's games end after this many env steps (0: off)
        self.win_rates: dict[str, float] = {}
        self.returns: dict[str, float] = {}
        self.medians: dict[str, float] = {}
        self.best_win_rate: float | None = None
        self.lost_sampler_calls = 0
        self.env_steps_played = 0
        # The latest round's games cut short by its time limit or env-step bound: policy ->
        # opponent -> episodes played, of `asked` each (empty: the round played every game).
        self.partial: dict[str, dict[str, int]] = {}
        self.asked = 0
        self.round_s: float | None = None  # how long the latest round took, start to collection
        self._started_at = 0.0
        # (policy, or None: league games; its opponent; calls)
        self._pending: list[tuple[str | None, str, list[tuple[SamplerHandle, Pending[list[dict[str, Any]]]]]]] = []

    def yardstick_figures(self) -> dict[str, Any]:
        """``{"yardstick": {"opponent", "win_rate", "return"}}`` for a metrics row or the summary
        (each learning policy's latest figures against it); empty without a yardstick."""
        if not self.yardstick:
            return {}
        return {"yardstick": {"opponent": self.yardstick, "win_rate": dict(self.yardstick_win_rates), "return": dict(self.yardstick_returns)}}

    @property
    def running(self) -> bool:
        """Whether a round's games are still out."""
        return bool(self._pending)

    def start(
        self, samplers: Sequence[SamplerHandle], league: TrainingLeague, time_limit_s: float | None = None, episode_len: float | None = None
    ) -> None:
        """Send a round's games to the samplers (evaluation against the opponent split evenly);
        ``time_limit_s``: each sampler's evaluation stops after about that long (the run's time
        left), with the episodes finished by then. With ``env_steps``, each learning policy's
        games against the opponent end after that many env steps (split evenly too), the same
        way; the league's scheduled games keep their episode counts. ``episode_len``: about how
        many env steps an episode takes (from training); under an env-step bound a round then asks
        for no more episodes than half the bound finishes, so fewer env copies play whole games
        instead of every copy stopping in its first one."""
        per = max(1, self.episodes // len(samplers))
        steps = max(1, self.env_steps // len(samplers)) if self.env_steps else None
        if steps and episode_len:
            per = max(1, min(per, int(steps // (2 * episode_len))))
        self.asked = per * len(samplers)
        self._started_at = time.perf_counter()
        games = league.evaluation_matchups()
        # The calls a sampler plays one after the other share the time; in-process samplers
        # run one after the other too.
        self._round_opponent = TEAMMATES if self.together is not None and self.together() else self.opponent
        opponents = [self._round_opponent, *([self.yardstick] if self.yardstick else [])]
        planned: list[tuple[str, str, MatchupSource]] = []
        teamed: set[str] = set()  # learning policies whose team's games are planned already
        for pid in league.learning:
            for opponent in opponents:
                if opponent != TEAMMATES:
                    planned.append((pid, opponent, mix_source(league, pid, opponent)))
                elif pid not in teamed:  # one set of games per team: its members' figures are the team's
                    teamed |= set(league.teammates(pid))
                    planned.append((pid, opponent, league.teammates_source(pid)))
        turns = (len(planned) + bool(games)) * (1 if any(is_ray_actor(s) for s in samplers) else len(samplers))
        limit = None if time_limit_s is None else max(0.0, time_limit_s) / turns
        for pid, opponent, matchups in planned:
            self._pending.append((pid, opponent, [
                (s, submit(s, SamplerFace.evaluate, per, matchups, explore=self.explore, time_limit_s=limit, max_env_steps=steps,
                           openings=opponent == self.yardstick))
                for s in samplers
            ]))
        if games:  # the league's own games, split between samplers
            shares = [games[i :: len(samplers)] for i in range(len(samplers))]
            calls = [
                (s, submit(s, SamplerFace.evaluate, len(m), MatchupBatch(m), explore=self.explore, time_limit_s=limit))
                for s, m in zip(samplers, shares) if m
            ]
            self._pending.append((None, "", calls))

    def collect(self, league: TrainingLeague, block: bool) -> None:
        """Take a round's results once every call has arrived (or wait for them: ``block``)."""
        if not self._pending:
            return
        refs = [r for _, _, calls in self._pending for s, r in calls if is_ray_actor(s)]
        if refs and not block:
            import ray

            ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
            if len(ready) < len(refs):
                return
        self.partial = {}
        for pid, opponent, calls in self._pending:
            results, failed = resolve_lenient([r for _, r in calls], [s for s, _ in calls], default=[])
            self.lost_sampler_calls += failed
            episodes = [e for eps in results for e in eps]
            self.env_steps_played += sum(int(e["length"]) for e in episodes)
            if pid is not None and len(episodes) < self.asked:  # cut by the time limit or env-step bound
                self.partial.setdefault(pid, {})[opponent] = len(episodes)
            if self.observe is not None:
                self.observe(episodes)
            if pid is None:
                league.record(episodes)
            elif episodes and opponent != self._round_opponent:  # the yardstick's games: its own figures
                self.yardstick_win_rates[pid] = wins_of(pid, episodes)
                if (mean := mean_return_of(pid, episodes)) is not None:
                    self.yardstick_returns[pid] = round(mean, 5)
            elif episodes:  # every sampler of this evaluation lost: no result, not a 0
                if opponent != TEAMMATES:
                    self.win_rates[pid] = wins_of(pid, episodes)
                # A team's games give each of its learning policies its own seats' figures.
                for member in [p for p in league.learning if p == pid or opponent == TEAMMATES]:
                    mean, median = mean_return_of(member, episodes), median_return_of(member, episodes)
                    if mean is not None and median is not None:  # both None without a seat
                        self.returns[member] = round(mean, 5)
                        self.medians[member] = round(median, 5)
        self._pending = []
        self.round_s = time.perf_counter() - self._started_at
        if self.win_rates:
            worst = min(self.win_rates.values())
            self.best_win_rate = worst if self.best_win_rate is None else max(self.best_win_rate, worst)
