"""Starting (or joining) Ray for a run, from its ``ray`` config section."""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["start_ray", "check_resources", "RayResourcesError"]


def start_ray(ray_cfg: Any) -> bool:
    """Make sure Ray runs for this process; returns whether this call started or joined it.

    With ``ray_cfg.address`` unset, a Ray of this run's own (``address="local"``): Ray's own
    default would join a cluster that ``ray start`` left running on the machine. It listens
    on 127.0.0.1 only when ``ray_cfg.loopback_only`` (Ray reads that switch once, when first
    imported: a process that imported Ray already keeps what it has). With an address
    (``auto``, ``host:port``) it joins that cluster. A Ray already initialised is kept.
    """
    if ray_cfg.loopback_only and ray_cfg.address is None and "ray" not in sys.modules:
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    import ray

    if ray.is_initialized():
        return False
    ray.init(
        address=ray_cfg.address or "local",
        num_cpus=ray_cfg.num_cpus if ray_cfg.address is None else None,
        include_dashboard=ray_cfg.include_dashboard,
        log_to_driver=True,
    )
    return True


class RayResourcesError(ValueError):
    """The run's actors ask Ray for more CPUs or GPUs than its cluster has."""


def check_resources(cpus: float, gpus: float, parts: str, joined: bool) -> None:
    """Refuse a run whose actors ask Ray for more CPUs or GPUs than its whole cluster has.

    Ray would otherwise queue the actors that do not fit forever, and the run would hang
    without a word before its first iteration. ``parts`` says who asks for what (it goes
    into the message); ``joined``: a cluster the run joined (``ray.address``), whose
    autoscaler may still add nodes, gets a warning instead of the error.
    """
    import warnings

    import ray

    total = ray.cluster_resources()
    have_cpus, have_gpus = float(total.get("CPU", 0.0)), float(total.get("GPU", 0.0))
    short = [f"{need:g} {kind} but the cluster has {have:g}" for kind, need, have in (("CPUs", cpus, have_cpus), ("GPUs", gpus, have_gpus)) if need > have + 1e-9]
    if not short:
        return
    message = (
        f"this run's Ray actors ask for {' and '.join(short)} ({parts}), so Ray would wait for them forever; "
        "lower sampler.num_samplers, sampler.num_cpus, learner.num_learners or learner.num_cpus_per_learner "
        "(fractions are fine: 0.5 shares a core), give the local Ray more with ray.num_cpus, or run on a machine "
        "or cluster that has them"
    )
    if joined:
        warnings.warn(message + " (joined cluster: waiting in case its autoscaler adds nodes)", stacklevel=2)
        return
    raise RayResourcesError(message)
