"""Calling samplers and learners the same way whether they are Ray actors or local objects.

Operators accept either a Ray ``ActorHandle`` (methods are called with
``.method.remote(...)`` and awaited with ``ray.get``) or a plain Python object with the
same methods (called directly). Ray is only imported once an actor handle exists, so
plans over local objects never start or import Ray.

:func:`call`, :func:`submit` and :func:`call_all` take the method as a reference to it on
a face or class (``call(learner, LearnerFace.get_weights, ids)``), not as a string, so
the type checker checks the method's name, the arguments and the result
(:mod:`league.runtime.faces` explains the design).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeGuard, TypeVar, Union, cast, overload

from league.runtime.faces import Remote

if TYPE_CHECKING:
    from ray import ObjectRef
    from ray.actor import ActorHandle
    from typing_extensions import TypeIs

__all__ = [
    "Pending", "is_ray_actor", "is_actor_death", "call", "call_all", "submit", "submit_in_group", "resolve", "resolve_lenient", "share",
    "passed_on", "provides", "actor_handle", "check_same_kind",
]

T = TypeVar("T")
R = TypeVar("R")
V = TypeVar("V")
D = TypeVar("D")
P = ParamSpec("P")

#: What :func:`submit` returns: the result itself for a local object, an ``ObjectRef`` to it for an actor.
Pending = Union[R, "ObjectRef[R]"]


def is_ray_actor(obj: object) -> TypeIs[ActorHandle[Any]]:
    """Whether ``obj`` is a Ray actor handle (False whenever Ray was never imported)."""
    ray = sys.modules.get("ray")
    if ray is None:
        return False
    return isinstance(obj, ray.actor.ActorHandle)


def is_actor_death(err: BaseException) -> bool:
    """Whether ``err`` is Ray saying an actor is dead or unreachable (False if Ray was never imported).

    ``RayActorError`` covers ``ActorDiedError`` and ``ActorUnavailableError``.
    """
    if sys.modules.get("ray") is None:
        return False
    from ray.exceptions import RayActorError

    return isinstance(err, RayActorError)


def _name(method: Callable[..., Any]) -> str:
    """The name a method reference stands for (``LearnerFace.get_weights`` -> ``"get_weights"``)."""
    name = getattr(method, "__name__", None)
    if not isinstance(name, str):
        raise TypeError(f"expected a method reference such as LearnerFace.get_weights, got {method!r}")
    return name


def _method(obj: object, method: Callable[..., Any]) -> Any:
    name = _name(method)
    try:
        return getattr(obj, name)
    except AttributeError:
        kind = "actor" if is_ray_actor(obj) else type(obj).__name__
        raise TypeError(f"{kind} {obj!r} has no method '{name}'") from None


def submit(obj: Remote[T], method: Callable[Concatenate[T, P], R], *args: P.args, **kwargs: P.kwargs) -> Pending[R]:
    """Start ``obj.method(*args, **kwargs)``: an ``ObjectRef`` for actors, the result for local objects.

    ``method`` is a reference to the method on a face or class (``SamplerFace.set_weights``);
    the method that runs is ``obj``'s own of that name."""
    fn = _method(obj, method)
    if is_ray_actor(obj):
        return cast("ObjectRef[R]", fn.remote(*args, **kwargs))
    return cast(R, fn(*args, **kwargs))


def submit_in_group(
    obj: Remote[T], group: str | None, method: Callable[Concatenate[T, P], R], *args: P.args, **kwargs: P.kwargs
) -> Pending[R]:
    """:func:`submit`, run by an actor in its concurrency ``group`` (its own thread, beside the
    calls in flight in others) where ``group`` is given; the actor must have been made with that
    group (Ray kills an actor asked for one it lacks)."""
    if group is None or not is_ray_actor(obj):
        return submit(obj, method, *args, **kwargs)
    fn = _method(obj, method)
    return cast("ObjectRef[R]", fn.options(concurrency_group=group).remote(*args, **kwargs))


def resolve(pending: Sequence[Pending[R]], objs: Sequence[object]) -> list[R]:
    """Results of calls started by :func:`submit` on ``objs`` (waits for the remote ones together)."""
    refs = [p for p, o in zip(pending, objs) if is_ray_actor(o)]
    if not refs:
        return [cast(R, p) for p in pending]
    import ray

    remote_values = iter(ray.get(cast("list[ObjectRef[R]]", refs)))
    return [next(remote_values) if is_ray_actor(o) else cast(R, p) for p, o in zip(pending, objs)]


@overload
def resolve_lenient(pending: Sequence[Pending[R]], objs: Sequence[object], default: D) -> tuple[list[R | D], int]: ...
@overload
def resolve_lenient(pending: Sequence[Pending[R]], objs: Sequence[object]) -> tuple[list[R | None], int]: ...
def resolve_lenient(pending: Sequence[Pending[R]], objs: Sequence[object], default: object = None) -> tuple[list[Any], int]:
    """Like :func:`resolve`, but a call to an actor that died or is being restarted by Ray
    yields ``default`` instead of raising; returns the results and how many failed.

    For the driver's bookkeeping calls to samplers (episode stats, evaluation, league
    updates): a sampler lost with its node is restarted by Ray and gets the league's state
    back from its restart hooks; the plan itself notices a sampler that is gone for good.
    """
    results: list[Any] = list(pending)  # the remote ones are replaced below
    failed = 0
    if not any(is_ray_actor(o) for o in objs):
        return results, failed
    import ray

    for i, (ref, obj) in enumerate(zip(pending, objs)):
        if not is_ray_actor(obj):
            continue
        try:
            results[i] = ray.get(cast("ObjectRef[R]", ref))
        except Exception as err:
            if not is_actor_death(err):
                raise
            results[i] = default
            failed += 1
    return results, failed


def call(obj: Remote[T], method: Callable[Concatenate[T, P], R], *args: P.args, **kwargs: P.kwargs) -> R:
    """``obj.method(*args, **kwargs)``, waiting for the result if ``obj`` is an actor."""
    pending = submit(obj, method, *args, **kwargs)
    if is_ray_actor(obj):
        import ray

        return ray.get(cast("ObjectRef[R]", pending))
    return cast(R, pending)


def call_all(objs: Sequence[Remote[T]], method: Callable[Concatenate[T, P], R], *args: P.args, **kwargs: P.kwargs) -> list[R]:
    """Call ``method`` on every object; actors run in parallel. Results in ``objs`` order."""
    pending = [submit(o, method, *args, **kwargs) for o in objs]
    return resolve(pending, objs)


def share(value: V, objs: Sequence[object]) -> V:
    """``value`` stored once in the Ray object store if any of ``objs`` is an actor, else ``value``.

    Passing the returned reference to many actors ships the data once instead of once
    per call; local objects should still receive ``value`` itself. Typed as ``value``: an
    actor method given the reference as an argument receives the value (Ray resolves a
    top-level ``ObjectRef`` argument before the call).
    """
    if any(is_ray_actor(o) for o in objs):
        import ray

        return cast(V, ray.put(value))
    return value


def passed_on(pending: Pending[R]) -> R:
    """A :func:`submit` result given on as an argument of calls to actors, typed as its value.

    Ray resolves a top-level ``ObjectRef`` argument before an actor method runs, so the
    method receives the value; a local object would receive the reference itself, so only
    pass the result of an actor's call on to actors (or fetch it first)."""
    return cast(R, pending)


def provides(obj: object, method: Callable[Concatenate[T, P], Any]) -> TypeGuard[Remote[T]]:
    """Whether ``obj`` (a local object or an actor handle) has the optional method that
    ``method`` references (``provides(sampler, RestartsEpisodes.restart_episodes)``); narrows
    ``obj`` to that method's face."""
    return hasattr(obj, _name(method))


def actor_handle(started: object) -> ActorHandle[Any]:
    """The handle ``ray.remote(C).remote(...)`` returned, typed as a handle.

    Ray types that call's result ``ActorHandle[C] | type[C]`` (so that ``handle.method.remote``
    type-checks against ``C``'s methods); at run time it is always the handle. Calls through
    :func:`call` and :func:`submit` are typed by their method reference instead."""
    if not is_ray_actor(started):
        raise TypeError(f"expected a Ray actor handle, got {type(started).__name__}")
    return started


def check_same_kind(objs: Sequence[object], what: str) -> TypeGuard[Sequence[ActorHandle[Any]]]:
    """True if all ``objs`` are Ray actors, False if none is; ValueError naming ``what`` if mixed."""
    kinds = {is_ray_actor(o) for o in objs}
    if len(kinds) > 1:
        raise ValueError(f"{what} must be all Ray actors or all local objects, not a mix")
    return kinds == {True}
