"""The runtime layer: starting Ray for a run (:mod:`league.runtime.ray_start`)."""

from league.runtime.ray_start import start_ray

__all__ = ["start_ray"]
