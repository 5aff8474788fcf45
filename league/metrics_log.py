"""Per-iteration metrics on disk: ``metrics.jsonl`` (one JSON object per line) and TensorBoard.

The trainer hands :meth:`MetricsLogger.log` one row per iteration (a dict, possibly
nested: per-operator timers, win rates per policy). The JSON lines file gets the row as
is; TensorBoard gets every numeric leaf as a scalar whose tag is the key path joined
with ``/`` (``operators/TrainOneStep/mean_ms``), at global step ``env_steps``, so
curves of runs with different iteration sizes line up. A resumed run writes into its
own run directory; its rows continue the saved iteration and env step counts.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

import numpy as np

__all__ = ["MetricsLogger", "scalar_leaves", "episode_metrics"]


def scalar_leaves(row: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    """Every finite numeric leaf of a nested mapping, keyed by its ``/``-joined path.

    Booleans, strings, ``None`` and non-finite numbers are left out.
    """
    out: dict[str, float] = {}
    for key, value in row.items():
        tag = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(scalar_leaves(value, f"{tag}/"))
        elif isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_)):
            if math.isfinite(float(value)):
                out[tag] = float(value)
    return out


def episode_metrics(episodes: list[Mapping[str, Any]], policy_ids: list[str]) -> dict[str, float]:
    """Per policy in ``policy_ids``: mean return and share of wins over its seats in
    ``episodes`` (sampler episode stats); policies without a seat there are left out."""
    out = {}
    for pid in policy_ids:
        seats = [(ep, a) for ep in episodes for a, p in ep["policies"].items() if p == pid]
        if seats:
            out[f"{pid}/episode_return_mean"] = round(float(np.mean([ep["returns"][a] for ep, a in seats])), 5)
            out[f"{pid}/train_win_share"] = round(sum(ep["outcome"][a] == "win" for ep, a in seats) / len(seats), 5)
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


class MetricsLogger:
    """Appends rows to ``<run_dir>/metrics.jsonl`` and, if asked, to TensorBoard event files
    under ``<run_dir>/tensorboard``.

    When TensorBoard is requested but its package is missing, a warning says so once and
    only the JSON lines are written.
    """

    def __init__(self, run_dir: str | os.PathLike[str], tensorboard: bool = True, step_key: str = "env_steps") -> None:
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.jsonl_path = self.run_dir / "metrics.jsonl"
        self.step_key = step_key
        self._jsonl: TextIO | None = open(self.jsonl_path, "a")
        self._writer: Any = None
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError as err:  # torch ships the writer, the tensorboard package is separate
                warnings.warn(f"TensorBoard logging is off: {err} (pip install tensorboard)", stacklevel=2)
            else:
                self._writer = SummaryWriter(log_dir=str(self.run_dir / "tensorboard"))

    @property
    def tensorboard_dir(self) -> Path | None:
        """Where event files go (None when TensorBoard logging is off)."""
        return Path(self._writer.log_dir) if self._writer is not None else None

    def log(self, row: Mapping[str, Any]) -> None:
        """Write one row (flushed, so ``tail -f`` and TensorBoard see it at once)."""
        if self._jsonl is None:
            raise RuntimeError("MetricsLogger is closed")
        self._jsonl.write(json.dumps(row, default=_plain) + "\n")
        self._jsonl.flush()
        if self._writer is not None:
            step = int(row.get(self.step_key, 0) or 0)
            for tag, value in scalar_leaves(row).items():
                if tag != self.step_key:
                    self._writer.add_scalar(tag, value, global_step=step)
            self._writer.flush()

    def close(self) -> None:
        """Flush and close both outputs (idempotent)."""
        if self._jsonl is not None:
            self._jsonl.close()
            self._jsonl = None
        if self._writer is not None:
            self._writer.close()
            self._writer = None
