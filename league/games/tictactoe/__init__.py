"""Tic-tac-toe's plug-in: threat planes (``tictactoe_threats``), the distilled two-ply
reading (``tictactoe_search``), the perfect ``minimax`` scripted player, the
``tictactoe`` preset and the board's simulator for searches at play time. Importing it registers them (:mod:`league.games`)."""

from __future__ import annotations

import functools

from league.algos.seams import AUXILIARY_LOSSES, INPUT_FEATURES
from league.games.k_in_a_row import BoardRules, ThreatPlanes, TwoPlySearchLoss
from league.games.k_in_a_row_sim import simulator_maker
from league.games.tictactoe.minimax import make_minimax
from league.games.tictactoe.preset import PRESET
from league.population.scripted import SCRIPTED_PLAYERS
from league.presets import PRESETS
from league.search.simulator import SIMULATORS

__all__ = ["RULES", "PRESET"]

#: Tic-tac-toe as a k-in-a-row game.
RULES = BoardRules(name="tictactoe", rows=3, cols=3, k=3, gravity=False)

INPUT_FEATURES.register("tictactoe_threats", functools.partial(ThreatPlanes, RULES))
AUXILIARY_LOSSES.register("tictactoe_search", functools.partial(TwoPlySearchLoss, RULES))
SCRIPTED_PLAYERS.register("minimax", make_minimax)
PRESETS.register(PRESET.name, PRESET)
SIMULATORS.register("tictactoe", simulator_maker(RULES))
