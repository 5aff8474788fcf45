"""Poker's plug-in: the ``kuhn_poker`` and ``leduc_poker`` presets, PSRO over exact meta-game
payoffs with a PPO best response reset after each snapshot, exact exploitability logged
(docs/STRENGTH.md). Importing it registers them (:mod:`league.games`)."""

from __future__ import annotations

from league.games.poker.presets import KUHN, LEDUC
from league.presets import PRESETS

__all__ = ["KUHN", "LEDUC"]

PRESETS.register(KUHN.name, KUHN)
PRESETS.register(LEDUC.name, LEDUC)
