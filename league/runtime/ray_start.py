"""Starting (or joining) Ray for a run, from its ``ray`` config section."""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["start_ray"]


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
