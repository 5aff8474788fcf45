"""Calling samplers and learners the same way whether they are Ray actors or local objects.

Operators accept either a Ray ``ActorHandle`` (methods are called with
``.method.remote(...)`` and awaited with ``ray.get``) or a plain Python object with the
same methods (called directly). Ray is only imported once an actor handle exists, so
plans over local objects never start or import Ray.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["is_ray_actor", "is_actor_death", "call", "call_all", "submit", "resolve", "resolve_lenient", "share", "check_same_kind"]


def is_ray_actor(obj: object) -> bool:
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


def _method(obj: object, method: str) -> Any:
    try:
        return getattr(obj, method)
    except AttributeError:
        kind = "actor" if is_ray_actor(obj) else type(obj).__name__
        raise TypeError(f"{kind} {obj!r} has no method '{method}'") from None


def submit(obj: object, method: str, *args: Any, **kwargs: Any) -> Any:
    """Start ``obj.method(*args, **kwargs)``: an ``ObjectRef`` for actors, the result for local objects."""
    fn = _method(obj, method)
    if is_ray_actor(obj):
        return fn.remote(*args, **kwargs)
    return fn(*args, **kwargs)


def resolve(pending: Sequence[Any], objs: Sequence[object]) -> list[Any]:
    """Results of calls started by :func:`submit` on ``objs`` (waits for the remote ones together)."""
    refs = [p for p, o in zip(pending, objs) if is_ray_actor(o)]
    if not refs:
        return list(pending)
    import ray

    remote_values = iter(ray.get(refs))
    return [next(remote_values) if is_ray_actor(o) else p for p, o in zip(pending, objs)]


def resolve_lenient(pending: Sequence[Any], objs: Sequence[object], default: Any = None) -> tuple[list[Any], int]:
    """Like :func:`resolve`, but a call to an actor that died or is being restarted by Ray
    yields ``default`` instead of raising; returns the results and how many failed.

    For the driver's bookkeeping calls to samplers (episode stats, evaluation, league
    updates): a sampler lost with its node is restarted by Ray and gets the league's state
    back from its restart hooks; the plan itself notices a sampler that is gone for good.
    """
    results = list(pending)
    failed = 0
    if not any(is_ray_actor(o) for o in objs):
        return results, failed
    import ray

    for i, (ref, obj) in enumerate(zip(pending, objs)):
        if not is_ray_actor(obj):
            continue
        try:
            results[i] = ray.get(ref)
        except Exception as err:
            if not is_actor_death(err):
                raise
            results[i] = default
            failed += 1
    return results, failed


def call(obj: object, method: str, *args: Any, **kwargs: Any) -> Any:
    """``obj.method(*args, **kwargs)``, waiting for the result if ``obj`` is an actor."""
    pending = submit(obj, method, *args, **kwargs)
    if is_ray_actor(obj):
        import ray

        return ray.get(pending)
    return pending


def call_all(objs: Sequence[object], method: str, *args: Any, **kwargs: Any) -> list[Any]:
    """Call ``method`` on every object; actors run in parallel. Results in ``objs`` order."""
    pending = [submit(o, method, *args, **kwargs) for o in objs]
    return resolve(pending, objs)


def share(value: Any, objs: Sequence[object]) -> Any:
    """``value`` stored once in the Ray object store if any of ``objs`` is an actor, else ``value``.

    Passing the returned reference to many actors ships the data once instead of once
    per call; local objects should still receive ``value`` itself.
    """
    if any(is_ray_actor(o) for o in objs):
        import ray

        return ray.put(value)
    return value


def check_same_kind(objs: Sequence[object], what: str) -> bool:
    """True if all ``objs`` are Ray actors, False if none is; ValueError naming ``what`` if mixed."""
    kinds = {is_ray_actor(o) for o in objs}
    if len(kinds) > 1:
        raise ValueError(f"{what} must be all Ray actors or all local objects, not a mix")
    return kinds == {True}
