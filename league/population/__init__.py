"""The league population: players, head-to-head payoffs, matchmaking, ratings, scripted players.

Pure logic, no Ray: a :class:`Population` of :class:`Player` records (learning players,
their frozen snapshots, scripted players) forms a family tree; a :class:`PayoffTable`
counts their results; matchmakers pick opponents from it (self-play, uniform FSP,
PFSP, Nash/PSRO); a :class:`RatingTable` tracks Elo or TrueSkill over time. Every
stateful piece round-trips through plain JSON-able dicts (``to_dict``/``from_dict``).

On top of these, :class:`Role` recipes (AlphaStar's main agents, main and league
exploiters, plain self-play, FSP, PFSP and PSRO) say whom each learning player trains
against and when it is snapshot or reset; a :class:`LeagueCoordinator` runs them (the
league layer, :mod:`league.leagues`, runs it as a Ray actor when samplers are actors),
and an :class:`EvaluationScheduler` picks the least-measured pairs for evaluation games. Exact exploitability in OpenSpiel games lives in
:mod:`league.population.exploitability` (imported on its own: it needs ``open_spiel``).
"""

from league.population.coordinator import LeagueCoordinator, ResetAction, SnapshotAction
from league.population.evaluation import EvaluationPair, EvaluationScheduler, beta_variance
from league.population.matchmaking import (
    PFSP_WEIGHTINGS,
    Matchmaker,
    NashMatchmaker,
    PFSPMatchmaker,
    SelfPlayMatchmaker,
    UniformFSPMatchmaker,
    pfsp_weights,
    solve_zero_sum,
)
from league.population.payoff import (
    OUTCOMES,
    PRIOR_WIN_RATE,
    Outcome,
    PayoffTable,
    outcome_from_returns,
)
from league.population.players import PLAYER_KINDS, Player, Population
from league.population.ratings import (
    Elo,
    Rating,
    RatingSystem,
    RatingTable,
    TrueSkill,
    elo_expected_score,
    elo_update,
    rating_system_from_dict,
)
from league.population.roles import (
    OpponentBranch,
    OpponentPool,
    Role,
    SnapshotRule,
    alphastar_roles,
    fictitious_self_play_role,
    league_exploiter_role,
    main_agent_role,
    main_exploiter_role,
    pfsp_role,
    pool_members,
    psro_role,
    self_play_role,
)
from league.population.scripted import SCRIPTED_PLAYERS, BoardSearchPolicy, scripted_factory

__all__ = [
    "BoardSearchPolicy",
    "SCRIPTED_PLAYERS",
    "scripted_factory",
    "Elo",
    "EvaluationPair",
    "EvaluationScheduler",
    "LeagueCoordinator",
    "OpponentBranch",
    "OpponentPool",
    "ResetAction",
    "Role",
    "SnapshotAction",
    "SnapshotRule",
    "alphastar_roles",
    "beta_variance",
    "fictitious_self_play_role",
    "league_exploiter_role",
    "main_agent_role",
    "main_exploiter_role",
    "pfsp_role",
    "pool_members",
    "psro_role",
    "self_play_role",
    "Matchmaker",
    "NashMatchmaker",
    "OUTCOMES",
    "Outcome",
    "PFSPMatchmaker",
    "PFSP_WEIGHTINGS",
    "PLAYER_KINDS",
    "PRIOR_WIN_RATE",
    "PayoffTable",
    "Player",
    "Population",
    "Rating",
    "RatingSystem",
    "RatingTable",
    "SelfPlayMatchmaker",
    "TrueSkill",
    "UniformFSPMatchmaker",
    "elo_expected_score",
    "elo_update",
    "outcome_from_returns",
    "pfsp_weights",
    "rating_system_from_dict",
    "solve_zero_sum",
]
