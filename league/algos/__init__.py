"""Algorithms: each module holds one algorithm's config, loss/update, postprocessing and plan fragment."""

from __future__ import annotations

from typing import Any

from league.algos.a2c import A2C, A2CConfig
from league.learn.algorithm import Algorithm, PolicyState
from league.algos.dqn import DQN, DQNConfig
from league.algos.impala import APPO, IMPALA, APPOConfig, IMPALAConfig
from league.algos.ppo import PPO, PPOConfig
from league.algos.sac import SAC, SACConfig
from league.envs.base import AgentSpec

__all__ = [
    "Algorithm",
    "PolicyState",
    "PPO",
    "PPOConfig",
    "A2C",
    "A2CConfig",
    "IMPALA",
    "IMPALAConfig",
    "APPO",
    "APPOConfig",
    "DQN",
    "DQNConfig",
    "SAC",
    "SACConfig",
    "ALGORITHMS",
    "make_algorithm",
]

#: Registered algorithms by name.
ALGORITHMS: dict[str, type[Algorithm]] = {cls.name: cls for cls in (PPO, A2C, IMPALA, APPO, DQN, SAC)}


def make_algorithm(name: str, agent_spec: AgentSpec, config: dict[str, Any] | None = None) -> Algorithm:
    """The algorithm ``name`` for ``agent_spec``; unknown names raise ``ValueError`` listing the known ones."""
    if name not in ALGORITHMS:  # one registered by a plug-in (league.search.alphazero: alphazero)
        from league.registry import load_plugins

        load_plugins()
    try:
        cls = ALGORITHMS[name]
    except KeyError:
        raise ValueError(f"unknown algorithm '{name}'; known: {sorted(ALGORITHMS)}") from None
    return cls(agent_spec, config)
