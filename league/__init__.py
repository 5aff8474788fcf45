"""league: multi-agent league training for reinforcement learning.

The layers and who owns what: ``docs/ARCHITECTURE.md`` (checked by ``scripts/check_imports.py``).
"""

from typing import TYPE_CHECKING

from league.batch import MultiAgentBatch, SampleBatch

__all__ = ["SampleBatch", "MultiAgentBatch", "Trainer", "run_config"]
__version__ = "0.1.0"

if TYPE_CHECKING:
    # What the lazy __getattr__ below returns, as the type checker sees it (it does not see
    # __getattr__ itself: a module __getattr__ would type every other name of the package too).
    from league.config import run_config
    from league.trainer import Trainer
else:

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
