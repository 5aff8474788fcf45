"""The runtime layer: where code runs, below every dataflow operator.

- :mod:`league.runtime.actors`: calling samplers and learners the same way whether they
  are Ray actors or local objects (:func:`call`, :func:`submit`, :func:`resolve`,
  :func:`share`, ...), typed by method reference (``call(learner, LearnerFace.get_weights)``);
  Ray is imported only once an actor handle exists.
- :mod:`league.runtime.faces`: the learner, sampler and plan faces, and the handles
  (:data:`~league.runtime.faces.Remote`) they are called through.
- :mod:`league.runtime.recovery`: sampler actors that Ray restarts are noticed, their lost
  fragments dropped, and their state re-sent by hooks (:func:`on_sampler_restart`).
- :mod:`league.runtime.ray_start`: starting or joining Ray for a run (:func:`start_ray`).

Importing this package never imports Ray.
"""

from league.runtime.actors import (
    Pending,
    actor_handle,
    call,
    call_all,
    check_same_kind,
    is_actor_death,
    is_ray_actor,
    passed_on,
    provides,
    resolve,
    resolve_lenient,
    share,
    submit,
)
from league.runtime.ray_start import start_ray
from league.runtime.recovery import RestartingSamplers, SamplerDiedError, on_sampler_restart

__all__ = [
    "Pending",
    "actor_handle",
    "call",
    "call_all",
    "check_same_kind",
    "is_actor_death",
    "is_ray_actor",
    "passed_on",
    "provides",
    "resolve",
    "resolve_lenient",
    "share",
    "submit",
    "start_ray",
    "RestartingSamplers",
    "SamplerDiedError",
    "on_sampler_restart",
]
