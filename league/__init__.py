"""league: multi-agent league training for reinforcement learning.

Layers, bottom up: ``league._core`` (C++: concat, replay) -> ``league.batch`` /
``league.replay`` -> ``league.envs`` -> ``league.sampling`` -> ``league.algos`` /
``league.learn`` -> ``league.flow`` -> ``league.population`` -> ``league.cli``.
"""

from league.batch import MultiAgentBatch, SampleBatch

__all__ = ["SampleBatch", "MultiAgentBatch"]
__version__ = "0.1.0"
