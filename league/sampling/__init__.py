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
from league.sampling.sampler import BOOKKEEPING_GROUP, Sampler, bookkeeping_group, make_remote_samplers

__all__ = [
    "Sampler",
    "make_remote_samplers",
    "BOOKKEEPING_GROUP",
    "bookkeeping_group",
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
