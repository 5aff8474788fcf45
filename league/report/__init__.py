"""``league-report``: a self-contained HTML report of one training run.

:func:`write_report` reads a run directory (``metrics.jsonl``, ``summary.json``) and
writes one HTML file with inline CSS and SVG: the run's header, learning curves,
learner statistics, ratings, exploitability, the payoff heat map, the family tree of
snapshots and the config. Parts whose data a run lacks are skipped with a note.

Modules: :mod:`~league.report.data` (reading the run), :mod:`~league.report.series`
(curves from metrics rows), :mod:`~league.report.family` (the family tree model),
:mod:`~league.report.plots` (matplotlib charts as SVG), :mod:`~league.report.tree_svg`
(the tree drawing), :mod:`~league.report.payoff_view` (the heat map),
:mod:`~league.report.markup` (page markup) and :mod:`~league.report.build` (the sections).
"""

from league.report.build import render_report, write_report
from league.report.data import RunData, RunDirError, load_run

__all__ = ["RunData", "RunDirError", "load_run", "render_report", "write_report"]
