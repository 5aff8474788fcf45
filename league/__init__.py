"""league: multi-agent league training for reinforcement learning.

The layers and who owns what: ``docs/ARCHITECTURE.md`` (checked by ``scripts/check_imports.py``).
"""

from league.batch import MultiAgentBatch, SampleBatch

__all__ = ["SampleBatch", "MultiAgentBatch"]
__version__ = "0.1.0"
