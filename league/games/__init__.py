"""Game plug-ins: what the project knows of particular games, outside the generic core.

One package per game family. Each registers, when imported, what it adds through the
core's declared seams, the same seams a user's own game uses:

* input features a model reads (:data:`league.algos.seams.INPUT_FEATURES`),
* auxiliary losses of the actor-critic algorithms (:data:`league.algos.seams.AUXILIARY_LOSSES`),
* scripted players (:data:`league.population.scripted.SCRIPTED_PLAYERS`),
* a preset of training settings (:data:`league.presets.PRESETS`), applied by ``league-train``
  and ``Trainer`` when the run's env is the preset's game,
* an exact exploitability measure outside OpenSpiel
  (:data:`league.population.exploitability_measures.EXPLOITABILITY_MEASURES`).

The packages are declared under the ``league.plugins`` entry-point group
(``pyproject.toml``), so a name resolves in every process without an import here;
:mod:`league.registry` loads them on the first miss. No generic layer imports this
package (``scripts/check_imports.py`` enforces it).

* :mod:`league.games.k_in_a_row`: what connect four and tic-tac-toe share (threat planes,
  the exact two-ply reading).
* :mod:`league.games.connect_four`: the exact search, negamax, tactics, its preset.
* :mod:`league.games.tictactoe`: minimax, its preset.
* :mod:`league.games.poker`: kuhn and leduc poker's and liar's dice's PSRO presets, limit
  Hold'em's scripted players and preset.
* :mod:`league.games.rps`: rock-paper-scissors' exact exploitability (through
  :data:`league.population.exploitability_measures.EXPLOITABILITY_MEASURES`) and preset.
* :mod:`league.games.cooperative_pong`, :mod:`league.games.pistonball`: PettingZoo's butterfly
  games as env modules of their own (``env.name=league.games.cooperative_pong``), their screens
  always drawn and each view read once, shrunk where it is drawn (:mod:`league.games.screens`);
  they register nothing: an env name reaches them as any user's module.
"""
