"""A run's checkpoints and its summary: :class:`Checkpointer`.

Periodic checkpoints every ``checkpoint.interval`` iterations (``iter_<n>``), the oldest
pruned past ``checkpoint.keep_last``; with ``checkpoint.exact_resume`` the samplers are
rebuilt after each as a resume from it builds them (:meth:`~league.run.state.Run.restart_samplers`).
At the end of a ``train()`` call: the ``final`` checkpoint (best effort after a failure, whose
own error is the one to report) and ``summary.json`` naming every checkpoint written.
What a checkpoint holds is :func:`~league.run.records.write_run_checkpoint`'s.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

from league.checkpoint import periodic_name, prune_checkpoints
from league.config import RunConfig
from league.run import records
from league.run.state import Run

__all__ = ["Checkpointer"]


class Checkpointer:
    """Writes the checkpoints of the run configured by ``cfg`` in ``run_dir``, and its summary."""

    def __init__(self, cfg: RunConfig, run_dir: Path) -> None:
        self.cfg = cfg
        self.run_dir = run_dir
        self.paths: list[Path] = []  # the checkpoints this process wrote, oldest first (pruned ones dropped at the next save)

    @property
    def root(self) -> Path:
        """Where checkpoints go: ``checkpoint_dir``, relative to the run directory unless absolute."""
        d = Path(self.cfg.checkpoint_dir)
        return d if d.is_absolute() else self.run_dir / d

    def save(self, run: Run, name: str, flush: bool = True) -> Path:
        """Write checkpoint ``name`` under :attr:`root` (see :mod:`league.checkpoint`); ``flush``
        first records episodes already finished on the samplers, so the payoff is current."""
        if flush:
            run.episodes.flush(run.samplers, run.league)
        evaluation = run.evaluation
        path = records.write_run_checkpoint(
            self.root, name, run.clock, self.cfg, run.plan, run.league, run.learner, evaluation.win_rates, evaluation.best_win_rate,
            run.headlines.best,
        )
        self.paths = [p for p in self.paths if p != path and p.exists()] + [path]
        return path

    def periodic(self, run: Run) -> Path | None:
        """The periodic checkpoint if one is due at ``run``'s iteration (then the oldest past
        ``keep_last`` pruned, and with ``exact_resume`` the samplers rebuilt); its path, else None."""
        settings = self.cfg.checkpoint
        if not settings.interval or run.clock.iteration % settings.interval:
            return None
        path = self.save(run, periodic_name(run.clock.iteration))
        prune_checkpoints(self.root, settings.keep_last)
        if settings.exact_resume:
            run.restart_samplers()
        return path

    def summary(self, run: Run, elapsed: float) -> dict[str, Any]:
        """The run's summary after ``elapsed`` seconds of this call (:func:`~league.run.records.summary`)."""
        evaluation = run.evaluation
        returns = evaluation.returns
        extra = {
            "best_win_rate_vs_random": evaluation.best_win_rate,
            "eval_return_mean": dict(returns),
            "eval_return_median": dict(evaluation.medians),
            # The last round's games cut short by the time budget or eval.env_steps (empty: none).
            "eval_partial": {"asked": evaluation.asked, "played": evaluation.partial} if evaluation.partial else {},
            "final_return_mean": sum(returns.values()) / len(returns) if returns else None,
            "resumed_from": str(run.resumed_from) if run.resumed_from else None,
            "learner_restores": run.learner_restores,
            "headline": run.headline(run.clock.latest_row).as_dict(),
            **evaluation.yardstick_figures(),
        }
        return records.summary(run.clock, self.cfg, elapsed, run.league, evaluation.win_rates, extra)

    def finish(self, run: Run, elapsed: float, failed: bool = False) -> dict[str, Any]:
        """The end of a ``train()`` call: the summary, the ``final`` checkpoint (after a failure
        without flushing episodes, and only a warning if it cannot be written), then
        ``summary.json`` with every checkpoint's path; returns the summary."""
        summary = self.summary(run, elapsed)
        try:
            self.save(run, "final", flush=not failed)
        except Exception as err:
            if not failed:
                raise
            # The run's own error is the one to report; a final checkpoint is best effort.
            warnings.warn(f"no final checkpoint written after the failure: {err!r}", stacklevel=3)
        summary["checkpoints"] = [str(p) for p in self.paths]
        with open(self.run_dir / "summary.json", "w") as f:
            json.dump(summary, f, indent=2)
        return summary
