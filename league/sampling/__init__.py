"""Samplers: env copies stepped in lock-step with batched inference, on Ray or in-process."""

from league.envs.batched import EnvFailure
from league.sampling.matchups import (
    BlockedMatchups,
    FixedMatchups,
    FunctionMatchups,
    Matchup,
    MatchupBatch,
    MatchupSource,
    OpponentSampling,
    PoolMatchups,
    UniformMatchups,
)
from league.sampling.sampler import Sampler, make_remote_samplers

__all__ = [
    "Sampler",
    "make_remote_samplers",
    "EnvFailure",
    "Matchup",
    "MatchupBatch",
    "MatchupSource",
    "FixedMatchups",
    "FunctionMatchups",
    "OpponentSampling",
    "UniformMatchups",
    "PoolMatchups",
    "BlockedMatchups",
]
