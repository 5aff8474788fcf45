"""Run configs shared by tests (and the report render check).

* :func:`tiny_run_config`: tic-tac-toe self-play, one in-process sampler (no Ray), small PPO
  batches: a few iterations take seconds, validated.
* :func:`short_run_values`: the same kind of short in-process run for any env, as the config
  dict ``run_job`` takes.
* :func:`composed_values`: what ``league-train <overrides>`` composes from ``configs/``.

Sections given as overrides are merged into the defaults.
"""

from __future__ import annotations

from typing import Any

from league.config import RunConfig, parse_run_config


def _merge(values: dict[str, Any], sections: dict[str, Any]) -> dict[str, Any]:
    for key, value in sections.items():
        values[key] = {**values[key], **value} if isinstance(value, dict) and isinstance(values.get(key), dict) else value
    return values


def short_run_values(env: dict, batch: int = 128, **sections: Any) -> dict[str, Any]:
    """A short in-process run's config dict for ``env`` (one sampler, tiny PPO batches, quiet)."""
    values: dict[str, Any] = {
        "env": env,
        "algo": {"name": "ppo", "params": {"train_batch_size": batch, "minibatch_size": min(batch, 64), "num_epochs": 1}},
        "sampler": {"num_samplers": 1, "num_envs": 4, "fragment_length": 32, "remote": False},
        "iteration": {"min_env_steps": 128},
        "eval": {"interval": 1, "episodes": 4},
        "stop": {"iterations": 2, "time_s": 0, "env_steps": 0},
        "logging": {"tensorboard": False, "progress": False},
        "verbose": False,
    }
    return _merge(values, sections)


def composed_values(*overrides: str) -> dict[str, Any]:
    """The resolved config dict ``league-train <overrides>`` composes from ``configs/``."""
    from league.cli.train import composed_values as compose

    return compose(overrides)


def tiny_run_config(**overrides: Any) -> RunConfig:
    """The tiny run's validated config; ``section={...}`` overrides merge into that section."""
    values: dict[str, Any] = {
        "env": {"name": "tictactoe"},
        "algo": {"name": "ppo", "params": {"train_batch_size": 64, "minibatch_size": 32, "num_epochs": 2}},
        "sampler": {"num_samplers": 1, "num_envs": 2, "fragment_length": 16, "mode": "bulk_sync", "remote": False},
        "league": {"snapshot_steps": 1, "max_snapshots": 3},
        "iteration": {"min_env_steps": 0},
        "eval": {"interval": 1, "episodes": 4},
        "stop": {"iterations": 2, "time_s": 0, "env_steps": 0},
        "checkpoint": {"interval": 1, "keep_last": 5},
        "logging": {"tensorboard": False},
        "verbose": False,
    }
    return parse_run_config(_merge(values, overrides))
