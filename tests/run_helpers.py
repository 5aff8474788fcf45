"""A tiny in-process training run's config, shared by tests (and the report render check).

Tic-tac-toe self-play, one in-process sampler (no Ray), small PPO batches: a few
iterations take seconds. Sections given as overrides are merged into the defaults.
"""

from __future__ import annotations

from typing import Any

from league.config import RunConfig, parse_run_config


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
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(values.get(key), dict):
            values[key] = {**values[key], **value}
        else:
            values[key] = value
    return parse_run_config(values)
