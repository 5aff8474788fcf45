"""Environment adapters: PettingZoo (AEC and parallel) and Gymnasium under one contract.

``make_env(name, **kwargs)`` builds any supported env as a :class:`MultiAgentEnv`;
:mod:`league.envs.base` documents the :class:`TimeStep` contract and the observation
preprocessing rule that every adapter implements.
"""

from league.envs.base import AgentSpec, MultiAgentEnv, TimeStep
from league.envs.gym_env import GYM_AGENT, GymnasiumEnv
from league.envs.pettingzoo_env import PettingZooAECEnv, PettingZooParallelEnv
from league.envs.preprocess import ObsPreprocessor, build_preprocessor
from league.envs.registry import make_env, register_env, registered_env_names

__all__ = [
    "AgentSpec",
    "MultiAgentEnv",
    "TimeStep",
    "GYM_AGENT",
    "GymnasiumEnv",
    "PettingZooAECEnv",
    "PettingZooParallelEnv",
    "ObsPreprocessor",
    "build_preprocessor",
    "make_env",
    "register_env",
    "registered_env_names",
]
