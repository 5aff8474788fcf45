"""Reading a run directory: ``metrics.jsonl`` rows and ``summary.json``, tolerant of damage.

A report is often made of a run that is still going or that crashed, so a truncated
last line, a missing ``summary.json`` or an unreadable payoff table become notes on
:class:`RunData` rather than errors. Only a path that is not a run directory at all
(missing, not a folder, or holding neither file) raises :class:`RunDirError`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from league.population.payoff import PayoffTable
from league.population.players import Population

__all__ = ["RunDirError", "RunData", "load_run", "METRICS_FILE", "SUMMARY_FILE"]

METRICS_FILE = "metrics.jsonl"
SUMMARY_FILE = "summary.json"


class RunDirError(ValueError):
    """The path given is not a readable run directory (the message names the path)."""


@dataclass
class RunData:
    """Everything a report is made of, as read from one run directory.

    Attributes:
        path: the run directory (resolved).
        rows: the metrics rows in file order (lines that were not JSON objects are left out).
        summary: ``summary.json`` as a dict, or None when it is missing or unreadable.
        config: the resolved run config (``summary["config"]``), or an empty dict.
        payoff: the run's payoff table, or None.
        population: the league's population (``summary["league"]["population"]``), or None
            for runs without a league coordinator (the self-play pool).
        league: the coordinator's state dict, or None.
        notes: what could not be read, one line each, shown at the top of the report.
    """

    path: Path
    rows: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] | None = None
    config: dict[str, Any] = field(default_factory=dict)
    payoff: PayoffTable | None = None
    population: Population | None = None
    league: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        """The run directory's name."""
        return self.path.name

    def last_row(self) -> dict[str, Any]:
        """The latest metrics row (an empty dict when there is none)."""
        return self.rows[-1] if self.rows else {}

    def config_value(self, dotted: str, default: Any = None) -> Any:
        """A config entry by dotted path (``"env.name"``), or ``default`` when absent."""
        node: Any = self.config
        for part in dotted.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return default
            node = node[part]
        return node


def load_run(run_dir: str | os.PathLike[str]) -> RunData:
    """Read ``run_dir`` into a :class:`RunData`.

    Raises:
        RunDirError: the path is missing, is not a directory, or holds neither
            ``metrics.jsonl`` rows nor a ``summary.json``.
    """
    path = Path(run_dir).expanduser()
    if not path.exists():
        raise RunDirError(f"run directory not found: {path}")
    if not path.is_dir():
        raise RunDirError(f"not a directory: {path}")
    run = RunData(path=path.resolve())
    metrics_path, summary_path = path / METRICS_FILE, path / SUMMARY_FILE
    if not metrics_path.is_file() and not summary_path.is_file():
        raise RunDirError(f"{path} is not a run directory: it holds neither {METRICS_FILE} nor {SUMMARY_FILE}")
    if metrics_path.is_file():
        run.rows = _read_rows(metrics_path, run.notes)
    else:
        run.notes.append(f"{METRICS_FILE} is missing: no curves over time")
    if summary_path.is_file():
        run.summary = _read_summary(summary_path, run.notes)
    else:
        run.notes.append(f"{SUMMARY_FILE} is missing (run in progress or stopped early): header from the last metrics row")
    if not run.rows and run.summary is None:
        raise RunDirError(f"{path} holds no metrics rows and no readable {SUMMARY_FILE}: nothing to report")
    summary = run.summary or {}
    config = summary.get("config")
    run.config = config if isinstance(config, dict) else {}
    league = summary.get("league")
    run.league = league if isinstance(league, dict) else None
    run.population = _read_population(run.league, run.notes)
    run.payoff = _read_payoff(summary, run.league, run.notes)
    return run


def _read_rows(metrics_path: Path, notes: list[str]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    bad = 0
    with open(metrics_path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                bad += 1  # typically the last line of a run killed mid-write
                continue
            if isinstance(row, dict):
                rows.append(row)
            else:
                bad += 1
    if bad:
        notes.append(f"{bad} line(s) of {METRICS_FILE} were not JSON objects and were skipped")
    if not rows:
        notes.append(f"{METRICS_FILE} holds no rows")
    return rows


def _read_summary(summary_path: Path, notes: list[str]) -> dict[str, Any] | None:
    try:
        summary = json.loads(summary_path.read_text(encoding="utf-8", errors="replace"))
    except json.JSONDecodeError as err:
        notes.append(f"{SUMMARY_FILE} is not valid JSON ({err}); ignored")
        return None
    if not isinstance(summary, dict):
        notes.append(f"{SUMMARY_FILE} is not a JSON object; ignored")
        return None
    return summary


def _read_population(league: dict[str, Any] | None, notes: list[str]) -> Population | None:
    if league is None or "population" not in league:
        return None
    try:
        return Population.from_dict(league["population"])
    except (ValueError, TypeError, KeyError) as err:
        notes.append(f"the league population in {SUMMARY_FILE} could not be read ({err}); no league family tree")
        return None


def _read_payoff(summary: dict[str, Any], league: dict[str, Any] | None, notes: list[str]) -> PayoffTable | None:
    data = summary.get("payoff")
    if data is None and league is not None:
        data = league.get("payoff")
    if data is None:
        return None
    try:
        return PayoffTable.from_dict(data)
    except (ValueError, TypeError, KeyError) as err:
        notes.append(f"the payoff table in {SUMMARY_FILE} could not be read ({err}); no heat map")
        return None
