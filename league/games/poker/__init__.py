"""Poker's plug-in (and liar's dice's, a bluffing game of the same size): the ``kuhn_poker``,
``leduc_poker`` and ``liars_dice`` presets, PSRO over exact meta-game payoffs with a PPO best
response reset after each snapshot, exact exploitability logged (docs/STRENGTH.md); limit
Texas Hold'em's scripted players (the rule-based ``holdem_rules``, a calling station and a
maniac) and their mix ``holdem_styles``, the yardstick its ``texas_holdem`` preset evaluates
against; PettingZoo's Leduc Hold'em's exact exploitability (:mod:`.leduc_holdem`) and the
``leduc_holdem`` preset that makes it the headline. Importing it registers them
(:mod:`league.games`)."""

from __future__ import annotations

from league.games.poker.holdem_rules import make_holdem_rules
from league.games.poker.holdem_styles import HOLDEM_STYLES, make_holdem_maniac, make_holdem_station
from league.games.poker import leduc_holdem
from league.games.poker.presets import KUHN, LEDUC, LEDUC_HOLDEM, LIARS_DICE, TEXAS_HOLDEM
from league.population.exploitability_measures import EXPLOITABILITY_MEASURES
from league.population.scripted import SCRIPTED_MIXES, SCRIPTED_PLAYERS
from league.presets import PRESETS

__all__ = ["KUHN", "LEDUC", "LEDUC_HOLDEM", "LIARS_DICE", "TEXAS_HOLDEM"]

PRESETS.register(KUHN.name, KUHN)
PRESETS.register(LEDUC.name, LEDUC)
PRESETS.register(LIARS_DICE.name, LIARS_DICE)
PRESETS.register(TEXAS_HOLDEM.name, TEXAS_HOLDEM)
PRESETS.register(LEDUC_HOLDEM.name, LEDUC_HOLDEM)
for _name in leduc_holdem.ENVS:
    EXPLOITABILITY_MEASURES.register(_name, leduc_holdem.LeducHoldemExploitability)
SCRIPTED_PLAYERS.register("holdem_rules", make_holdem_rules)
SCRIPTED_PLAYERS.register("holdem_station", make_holdem_station)
SCRIPTED_PLAYERS.register("holdem_maniac", make_holdem_maniac)
SCRIPTED_MIXES.register("holdem_styles", HOLDEM_STYLES)
