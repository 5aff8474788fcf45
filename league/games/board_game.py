"""The ``board_game`` preset: defaults for a kind of game, not for one game.

``preset=auto`` applies it to every env without a preset of its own that is a two-player
zero-sum game of perfect information with turns (:func:`is_two_player_board_game`): any
such ``openspiel:<game>`` (clobber, pentago, othello, mnk, hex, breakthrough, ...), and a
user's env whose plug-in registers a simulator for it (``league.search.SIMULATORS``: a
search can play it, so it is one of these). The values were chosen by measurement across
several such games, none of them tuned for on its own (``benchmarks/bench_any_game.py``;
the table is in benchmarks/README.md): against the generic defaults, within 150 s on two
cores, they made 1.5-1.9x the env steps on each of clobber, mnk, pentago and othello and
scored higher against OpenSpiel's MCTS-100 on mnk (1.0 against 0.625), pentago (0.94 / 0.83)
and othello (0.34 / 0.31); clobber stayed weak under both (0.1 / 0.18, 40 games). After 540 s
against MCTS-1000: hex 7x7 1.0, mnk 0.85, pentago 0.85, othello 0.2; with the two changes
below made since (two matchups per block, two epochs): mnk 0.85, othello 0.625.

* PPO with a larger step and entropy bonus (self-play otherwise settles into few lines) and
  two epochs per batch, as connect four's preset has (on two cores the update is the clock once
  the samplers draw few matchups, below): at 540 s othello 8.56M env steps instead of 5.97M and
  0.625 against MCTS-1000 instead of 0.20; connect four through the generic path 12.5M instead
  of 8.5M, 0.455 / 0.39 against depth-2 / depth-3 negamax instead of 0.407 / 0.477 (one seed
  each; two epochs with every episode drawing its own opponent had scored 0.16 / 0.40 there,
  othello 0.40, pentago 0.90, mnk 0.80; benchmarks/README.md);
* exploring starts (``env.opening_plies``: up to 4 random plies open each training game);
* a league that plays its latest self in half the games, snapshots 300k agent steps apart,
  the random member in 5%;
* 128 env copies x 32 steps per fragment (OpenSpiel's batched env steps many states per
  call), each block of them drawing two matchups (``sampler.matchup_draws``: a step runs a
  forward pass for a few policies, not one per snapshot its copies would draw one by one;
  every episode's opponent is still drawn as the league says; 540 s: openspiel:connect_four
  1.30x the env steps and 0.36 -> 0.41 against depth-2 negamax, othello 1.12x and as strong),
  and two threads for the update that runs while samplers wait.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from league.presets import PRESETS, Preset

__all__ = ["PRESET", "is_two_player_board_game"]

def is_two_player_board_game(env_name: str, env_kwargs: Mapping[str, Any]) -> bool:
    """Whether env ``env_name`` (built with ``env_kwargs``) is a two-player zero-sum game of
    perfect information with turns: an OpenSpiel game of that type, or an env with a
    registered simulator (a search plays only those). False for anything that cannot be
    told (a game that does not load: the run's own checks report it)."""
    from league.envs.openspiel_env import game_params
    from league.envs.registry import openspiel_game_of
    from league.search.simulator import SIMULATORS

    game_name = openspiel_game_of(env_name)
    if game_name is None:
        return env_name in SIMULATORS
    import pyspiel

    params = game_params(env_kwargs)
    try:
        game = pyspiel.load_game(game_name, params) if params else pyspiel.load_game(game_name)
    except Exception:  # noqa: BLE001 - not loadable: not this preset's to judge
        return False
    kind = game.get_type()
    return (
        game.num_players() == 2
        and kind.dynamics == pyspiel.GameType.Dynamics.SEQUENTIAL
        and kind.information == pyspiel.GameType.Information.PERFECT_INFORMATION
        and kind.utility in (pyspiel.GameType.Utility.ZERO_SUM, pyspiel.GameType.Utility.CONSTANT_SUM)
    )


PRESET = Preset(
    name="board_game",
    envs=(),
    matches=is_two_player_board_game,
    about="two-player zero-sum games of perfect information without a preset of their own (any such openspiel:<game>)",
    values={
        "env": {"opening_plies": 4},
        "algo": {"name": "ppo", "params": {"lr": 0.001, "entropy_coef": 0.05, "num_epochs": 2}},
        "league": {"recipe": "selfplay", "snapshot_steps": 300_000, "self_play_prob": 0.5, "fixed_opponents": {"random": 0.05}},
        "learner": {"num_threads": 2, "num_threads_while_sampling": 1},
        "sampler": {"num_envs": 128, "fragment_length": 32, "matchup_draws": 2},
    },
)

PRESETS.register(PRESET.name, PRESET)
