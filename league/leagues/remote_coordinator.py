"""The league coordinator as a Ray actor: the Ray glue around the pure
:class:`~league.population.coordinator.LeagueCoordinator`.

:func:`make_remote_coordinator` starts one; :func:`remote_refill` is the picklable
``refill`` a :class:`~league.sampling.matchups.MatchupBatch` on a sampler uses to pull
its next batch of matchups from it. Ray is imported only when they are called.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from league.population.coordinator import LeagueCoordinator
from league.runtime.actors import actor_handle, call
from league.sampling.matchups import Matchup

if TYPE_CHECKING:
    from ray.actor import ActorHandle

__all__ = ["make_remote_coordinator", "remote_refill"]


class _RemoteRefill:
    """Picklable ``refill(k)`` that asks a coordinator actor for ``k`` matchups."""

    def __init__(self, coordinator: ActorHandle[Any]) -> None:
        self.coordinator = coordinator

    def __call__(self, k: int) -> list[Matchup]:
        return call(self.coordinator, LeagueCoordinator.next_matchups, k)


def remote_refill(coordinator: ActorHandle[Any]) -> Callable[[int], list[Matchup]]:
    """A :class:`~league.sampling.matchups.MatchupBatch` refill that pulls batches from a coordinator actor."""
    return _RemoteRefill(coordinator)


def make_remote_coordinator(num_cpus: float = 0, **kwargs: Any) -> ActorHandle[Any]:
    """A Ray actor running :class:`LeagueCoordinator` (kwargs as for its constructor).

    ``num_cpus=0`` by default: the coordinator is bookkeeping, it should not hold a core.
    """
    import ray

    # No task events: the GCS would keep a record of every refill and report call.
    # Ray's stubs of remote(**options) omit enable_task_events, one of its documented options.
    options = ray.remote(num_cpus=num_cpus, enable_task_events=False)  # type: ignore[call-overload]
    return actor_handle(options(LeagueCoordinator).remote(**kwargs))
