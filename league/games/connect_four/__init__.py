"""Connect four's plug-in: threat planes (``connect_four_threats``), the distilled exact
search (``connect_four_search``), the ``negamax`` scripted player, the tactics yardstick, the
``connect_four`` preset and the board's simulator for searches at play time. Importing it registers them (:mod:`league.games`)."""

from __future__ import annotations

import functools

from league.algos.seams import AUXILIARY_LOSSES, INPUT_FEATURES
from league.games.connect_four.negamax import make_negamax
from league.games.connect_four.preset import PRESET
from league.games.connect_four.rules import RULES
from league.games.connect_four.search import ExactSearchLoss
from league.games.connect_four.tactics import TACTICS_TEST
from league.games.k_in_a_row import ThreatPlanes
from league.games.k_in_a_row_sim import simulator_maker
from league.population.scripted import SCRIPTED_PLAYERS
from league.population.tactics import TACTICS
from league.presets import PRESETS
from league.search.simulator import SIMULATORS

__all__ = ["RULES", "PRESET"]

INPUT_FEATURES.register("connect_four_threats", functools.partial(ThreatPlanes, RULES))
AUXILIARY_LOSSES.register("connect_four_search", ExactSearchLoss)
SCRIPTED_PLAYERS.register("negamax", make_negamax)
TACTICS.register("connect_four", TACTICS_TEST)
PRESETS.register(PRESET.name, PRESET)
SIMULATORS.register("connect_four", simulator_maker(RULES))
