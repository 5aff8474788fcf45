"""Surviving sampler actors that die and are restarted by Ray.

A sampler actor created with ``max_restarts`` (see ``make_remote_samplers``) comes back
after its process dies, but Ray re-runs its ``__init__``: the weights, league snapshots
and matchups sent to it since are gone, and its next fragments would be played with
freshly initialised policies. :class:`RestartingSamplers` is how
:func:`~league.flow.sources.ParallelRollouts` requests fragments from Ray actors so that
no such fragment reaches the plan (this module knows nothing of plans: the flow layer
wraps it in a source stage that counts the restarts into the plan's metrics):

- a request whose actor died is lost: its fragment is discarded (never counted) and the
  sampler is asked again;
- a restart is noticed either by such a loss or, for samplers with an ``incarnation()``
  method (:class:`~league.sampling.Sampler` has one), by a changed incarnation id after
  a fragment; the latter also catches a death while the sampler sat idle (e.g. during a
  long learner step), which no request saw;
- before the sampler is asked again, every hook registered with
  :func:`on_sampler_restart` for it runs (``BroadcastWeights`` registers one that re-sends
  the learner's current weights), then the sampler's ``restart_episodes()`` if it has
  one: episodes begun before the weights came back would still hand over rows played
  with the initial ones. Ray runs one caller's calls to an actor in order, so all of
  this reaches the new process before the new ``sample()``, and a fragment is used only
  if those calls succeeded on the same process life that produced it.

While Ray restarts an actor, calls to it fail ("the actor is restarting"); those are
retried, hooks included, without counting another restart. A sampler that Ray reports
dead for good (``ActorDiedError``: restarts exhausted), or that has not delivered a usable
fragment ``restart_timeout_s`` seconds after its restart was noticed, raises
:class:`SamplerDiedError`.
"""

from __future__ import annotations

import inspect
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from league.runtime.actors import is_ray_actor, provides, submit
from league.runtime.faces import HasIncarnation, RestartsEpisodes, SamplerFace

if TYPE_CHECKING:
    from ray.actor import ActorHandle

__all__ = ["SamplerDiedError", "on_sampler_restart", "RestartingSamplers"]

RestartHook = Callable[[Any], Any]

# sampler handle -> hook getters. Weak keys: a registry entry never keeps an actor alive
# (Ray ends an actor when its last handle goes); bound-method hooks are held weakly too,
# so the operators of a dropped plan are neither kept alive nor called.
_hooks: weakref.WeakKeyDictionary[Any, list[Callable[[], RestartHook | None]]] = weakref.WeakKeyDictionary()


class SamplerDiedError(RuntimeError):
    """A sampler actor is gone for good: Ray will not restart it, or it keeps dying."""


def on_sampler_restart(sampler: ActorHandle[Any], hook: RestartHook) -> None:
    """Run ``hook(sampler)`` whenever a ``ParallelRollouts`` source finds ``sampler`` restarted.

    The hook re-sends what the restart lost (weights, added policies, matchups) and
    returns the ObjectRef(s) of the calls it made (one, a list, or None); the source uses
    the sampler's next fragment only once they succeeded. Hooks run in registration
    order, before the sampler is asked for data again. Bound methods are held weakly.
    """
    if not is_ray_actor(sampler):
        raise TypeError(f"on_sampler_restart needs a Ray actor handle, got {type(sampler).__name__}")
    if not callable(hook):
        raise TypeError(f"on_sampler_restart needs a callable hook, got {type(hook).__name__}")
    getter = weakref.WeakMethod(hook) if inspect.ismethod(hook) else (lambda: hook)
    _hooks.setdefault(sampler, []).append(getter)


def _run_hooks(sampler: Any) -> list[Any]:
    """Run the hooks of ``sampler``; the ObjectRefs of the calls they made."""
    import ray

    refs: list[Any] = []
    for getter in list(_hooks.get(sampler, ())):
        hook = getter()
        if hook is None:
            _hooks[sampler].remove(getter)
            continue
        out = hook(sampler)
        refs.extend(r for r in (out if isinstance(out, (list, tuple)) else [out]) if isinstance(r, ray.ObjectRef))
    return refs


class _Life:
    """What the driver knows about one sampler actor's current process."""

    def __init__(self, actor: ActorHandle[Any], index: int) -> None:
        self.actor = actor
        self.index = index
        self.has_incarnation = provides(actor, HasIncarnation.incarnation)
        self.can_restart_episodes = provides(actor, RestartsEpisodes.restart_episodes)
        self.trusted: str | None = None  # incarnation id whose state the plan set (or first saw)
        self.generation = 0  # bumped at each restart noticed
        self.restore: tuple[list[Any], Any] | None = None  # (hook refs, incarnation ref) of this generation
        self.needs_restore = False
        self.recovering_since: float | None = None  # monotonic time the current restart was noticed


class _Request(NamedTuple):
    life: _Life
    generation: int
    trusted: str | None
    restore: tuple[list[Any], Any] | None
    sample: Any
    check: Any  # incarnation() sent right after sample(): ready only once sample() ran

    @property
    def last_ref(self) -> Any:
        return self.sample if self.check is None else self.check


class RestartingSamplers:
    """``sample()`` requests to Ray sampler actors that survive their restarts (module doc)."""

    def __init__(self, samplers: Sequence[ActorHandle[Any]], restart_timeout_s: float = 300.0) -> None:
        if isinstance(restart_timeout_s, bool) or not isinstance(restart_timeout_s, (int, float)) or not restart_timeout_s > 0:
            raise ValueError(f"restart_timeout_s must be a number > 0, got {restart_timeout_s!r}")
        self.lives = [_Life(actor, i) for i, actor in enumerate(samplers)]
        self.restart_timeout_s = float(restart_timeout_s)
        self.restarts: dict[int, int] = {}  # sampler index -> restarts noticed
        self._unreported = 0

    def request(self, life: _Life) -> _Request:
        """Ask ``life``'s actor for one fragment, re-sending lost state first if it restarted."""
        if life.needs_restore:
            refs = _run_hooks(life.actor)
            if life.can_restart_episodes:
                refs.append(submit(life.actor, RestartsEpisodes.restart_episodes))
            life.restore = (refs, submit(life.actor, HasIncarnation.incarnation) if life.has_incarnation else None)
            life.needs_restore = False
        sample = submit(life.actor, SamplerFace.sample)
        check = submit(life.actor, HasIncarnation.incarnation) if life.has_incarnation else None
        return _Request(life, life.generation, life.trusted, life.restore, sample, check)

    def collect(self, req: _Request) -> Any:
        """The request's fragment, or None if it must not be used (the sampler restarted)."""
        import ray
        from ray.exceptions import ActorDiedError, RayActorError

        life = req.life
        try:
            batch = ray.get(req.sample)
            token = None if req.check is None else ray.get(req.check)
            restored = None
            if req.restore is not None:
                ray.get(req.restore[0])
                restored = None if req.restore[1] is None else ray.get(req.restore[1])
        except ActorDiedError as err:
            raise SamplerDiedError(f"sampler {life.index} died and Ray will not restart it: {err}") from err
        except RayActorError:
            self._lost(req)
            return None
        if req.restore is not None:
            usable = token == restored  # hooks and sample ran on the same process life
        else:
            usable = req.trusted is None or token == req.trusted  # else: it restarted while idle
        if not usable:
            self._lost(req)
            return None
        if req.generation == life.generation:
            life.trusted, life.restore, life.recovering_since = token, None, None
        return batch

    def _lost(self, req: _Request) -> None:
        """A request's fragment cannot be used: note a restart, and re-send lost state next time."""
        life = req.life
        if req.generation != life.generation:
            return  # sent before the current recovery began: already handled
        now = time.monotonic()
        if life.recovering_since is None:  # the trusted process is gone: a new restart
            life.recovering_since = now
            self.restarts[life.index] = self.restarts.get(life.index, 0) + 1
            self._unreported += 1
        elif now - life.recovering_since > self.restart_timeout_s:
            raise SamplerDiedError(
                f"sampler {life.index} delivered no usable fragment in the {self.restart_timeout_s:g} s "
                "since its restart was noticed; giving up on it"
            )
        life.generation += 1
        life.needs_restore = True

    def rounds(self, poll_s: float | None = None) -> Iterator[list[Any] | None]:
        """One fragment per sampler per item (a lost one is asked again within the round).

        With ``poll_s``, yields ``None`` while the round is still out (each wait at most
        ``poll_s`` seconds), so the driver can do other work meanwhile (an off-policy
        learner training while the samplers sample); the next round is requested only when
        the consumer asks for it, so every fragment of a round sees the weights sent before.
        """
        import ray

        while True:
            pending = [self.request(life) for life in self.lives]
            got: dict[int, Any] = {}
            while pending:
                refs = [r.last_ref for r in pending]
                if poll_s is not None:
                    ready, _ = ray.wait(refs, num_returns=len(refs), timeout=poll_s)
                    if len(ready) < len(refs):
                        yield None
                        continue
                ray.wait(refs, num_returns=len(pending))
                retry = []
                for req in pending:
                    batch = self.collect(req)
                    if batch is None:
                        retry.append(self.request(req.life))
                    else:
                        got[req.life.index] = batch
                pending = retry
            yield [got[i] for i in sorted(got)]

    def stream(self, num_async: int, poll_s: float, last: Any) -> Iterator[Any]:
        """Fragments as they arrive, ``num_async`` requests in flight per sampler; sets ``last.actor``.

        Yields ``None`` when no usable fragment arrived within ``poll_s`` seconds.
        """
        import ray

        pending: dict[Any, _Request] = {}
        for life in self.lives:
            for _ in range(num_async):
                req = self.request(life)
                pending[req.last_ref] = req
        while True:
            # Oldest requests first, so that a fast actor cannot starve the others' results.
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=poll_s)
            if not ready:
                yield None
                continue
            req = pending.pop(ready[0])
            batch = self.collect(req)
            again = self.request(req.life)
            pending[again.last_ref] = again
            if batch is None:
                yield None
                continue
            last.actor = req.life.actor
            yield batch

    def pop_new_restarts(self) -> int:
        """Restarts noticed since the previous call (the per-sampler totals are :attr:`restarts`)."""
        new, self._unreported = self._unreported, 0
        return new
