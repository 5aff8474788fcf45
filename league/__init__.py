"""league: multi-agent league training for reinforcement learning.

The layers and who owns what: ``docs/ARCHITECTURE.md`` (checked by ``scripts/check_imports.py``).
"""

from league.batch import MultiAgentBatch, SampleBatch

__all__ = ["SampleBatch", "MultiAgentBatch", "Trainer", "run_config"]
__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    """``league.Trainer`` and ``league.run_config``, imported on first use (they pull in
    torch and every layer; ``import league`` alone stays light)."""
    if name == "Trainer":
        from league.trainer import Trainer

        return Trainer
    if name == "run_config":
        from league.config import run_config

        return run_config
    raise AttributeError(f"module 'league' has no attribute {name!r}")
