"""The driver-side state of a training run in a checkpoint, and restoring a run from one.

:mod:`league.checkpoint` defines the files; this module decides what the trainer puts
in ``league.json`` (counters, learning policy ids, the league's own state: the
self-play pool or the coordinator, the payoff table, evaluation win rates, the driver's RNG states) and how a resumed run reads it
back: :func:`load_resume_checkpoint` finds, validates and compatibility-checks the
checkpoint before anything starts; :func:`restore_league` rebuilds the league state.

What a resumed run gets back exactly: every learning policy's learner state (weights,
optimiser, update count, RNG, target networks), the snapshots with their weights, the
payoff table, the iteration and plan counters (env steps sampled, trained...),
evaluation win rates and the driver's torch/numpy RNG. What it does not, so that its
data differs from the uninterrupted run's: episodes in flight on samplers (a resumed
run starts new ones, its samplers seeded from ``(seed, iteration)``, so a resume is
itself reproducible), sampler-side policy state (DQN's epsilon step count restarts),
data held inside the plan (DQN replay buffers, PPO's partly filled batch), pending
evaluations and timers. Budgets: ``stop.iterations`` and ``stop.env_steps`` count the
whole run, ``stop.time_s`` this process only.
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from league.learn.algorithm import Algorithm
from league.checkpoint import Checkpoint, CheckpointError, check_compatible, find_checkpoint, read_checkpoint
from league.population.payoff import PayoffTable
from league.runtime.faces import LearnerFace

if TYPE_CHECKING:
    from league.leagues import TrainingLeague

__all__ = [
    "resume_config",
    "RestoredLeague",
    "load_resume_checkpoint",
    "league_state",
    "restore_league",
    "restore_learner",
    "sampler_seed",
    "driver_rng_state",
    "set_driver_rng_state",
]


def resume_config(values: Mapping[str, Any], overridden: Iterable[str]) -> dict[str, Any]:
    """The config a resumed run continues with: the checkpoint's own (``config.json`` of the
    checkpoint ``values["resume"]`` names), with only the ``overridden`` dotted keys (those the
    command line set; a config group such as ``env`` or ``algo``: its whole section) taken from
    ``values``, the composed config. Without ``resume``: ``values`` unchanged.

    So ``league-train resume=<run dir>`` alone continues the run it names, whatever game and
    settings the default config has; ``resume=<dir> stop.time_s=60`` changes only the budget,
    and a changed env or model is still refused by the compatibility check
    (:func:`load_resume_checkpoint`). Raises :class:`CheckpointError` when there is no such
    checkpoint or its config is unreadable."""
    resume = values.get("resume")
    if not resume:
        return dict(values)
    path = find_checkpoint(resume, values.get("checkpoint_dir") or "checkpoints")
    try:
        saved = json.loads((path / "config.json").read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise CheckpointError(f"{path / 'config.json'}: unreadable JSON ({err})") from None
    if not isinstance(saved, dict):
        raise CheckpointError(f"{path / 'config.json'}: not a JSON object")
    for key in sorted(set(overridden) - {"resume"}):
        parts, found, here = key.split("."), True, values
        for part in parts:
            if not isinstance(here, Mapping) or part not in here:
                found = False
                break
            here = here[part]
        target = saved
        for part in parts[:-1]:
            if not isinstance(target.get(part), dict):
                target[part] = {}
            target = target[part]
        if found:
            target[parts[-1]] = copy.deepcopy(here)
        else:  # a deletion (~key)
            target.pop(parts[-1], None)
    saved["resume"] = resume
    return saved


def load_resume_checkpoint(
    resume: str, checkpoint_dir: str, config: Mapping[str, Any], algorithms: Mapping[str, Algorithm]
) -> Checkpoint:
    """The checkpoint ``resume`` names (a checkpoint, or a run / checkpoints directory: its
    latest), read, validated and checked against this run's config and freshly built models."""
    checkpoint = read_checkpoint(find_checkpoint(resume, checkpoint_dir))
    shapes = {pid: {k: tuple(v.shape) for k, v in algo.make_model().state_dict().items()} for pid, algo in algorithms.items()}
    check_compatible(checkpoint, config, shapes)
    return checkpoint


def league_state(
    *,
    iteration: int,
    env_steps: int,
    learning: list[str],
    counters: Mapping[str, int],
    league: Mapping[str, Any],
    payoff: PayoffTable,
    win_rates: Mapping[str, float],
    best_win_rate: float | None,
    best_headline: float | None = None,
) -> dict[str, Any]:
    """The JSON-able ``league.json`` of a checkpoint (RNG states of this process included);
    ``league`` is the :meth:`~league.leagues.TrainingLeague.state` of the run's league;
    ``best_headline`` the run's best headline value so far (:mod:`league.run.headline`)."""
    return {
        "iteration": int(iteration),
        "env_steps": int(env_steps),
        "learning": list(learning),
        "counters": {k: int(v) for k, v in counters.items()},
        "pool": None,
        **league,
        "payoff": payoff.to_dict(),
        "win_rates": dict(win_rates),
        "best_win_rate": best_win_rate,
        "best_headline": best_headline,
        "rng": driver_rng_state(),
    }


@dataclass
class RestoredLeague:
    """League state read back from a checkpoint (the pool, if any, is restored in place)."""

    payoff: PayoffTable
    win_rates: dict[str, float]
    best_win_rate: float | None
    counters: dict[str, int]
    best_headline: float | None = None


def restore_league(checkpoint: Checkpoint, league: TrainingLeague) -> RestoredLeague:
    """Restore ``league`` (snapshots with weights, payoff, coordinator) and read the rest of ``league.json``.

    Raises :class:`CheckpointError` naming the file when the state is malformed.
    """
    saved = checkpoint.league
    try:
        league.load_state(saved, checkpoint.policies)
        payoff = league.payoff
        win_rates = {str(k): float(v) for k, v in (saved.get("win_rates") or {}).items()}
        best = saved.get("best_win_rate")
        best_headline = saved.get("best_headline")  # absent in checkpoints written before it was kept
        counters = {str(k): int(v) for k, v in (saved.get("counters") or {}).items()}
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise CheckpointError(f"{checkpoint.path / 'league.json'}: league state does not load: {err!r}") from None
    return RestoredLeague(payoff, win_rates, None if best is None else float(best), counters,
                          None if best_headline is None else float(best_headline))


def restore_learner(learner: LearnerFace, checkpoint: Checkpoint, policy_ids: list[str]) -> None:
    """Load each learning policy's saved learner state into ``learner`` (a Learner or LearnerGroup)."""
    for pid in policy_ids:
        try:
            learner.set_state(pid, checkpoint.learner_states[pid])
        except (RuntimeError, ValueError, KeyError) as err:
            raise CheckpointError(f"{checkpoint.path}: learner state of '{pid}' does not load: {err}") from None


def sampler_seed(seed: int, iteration: int) -> int:
    """Samplers' base seed for a run (re)started at ``iteration``: ``seed`` itself at 0, else a
    seed derived from both, so a resumed run does not replay the random streams already used."""
    if iteration == 0:
        return int(seed)
    return int(np.random.SeedSequence([int(seed), int(iteration)]).generate_state(1)[0])


def driver_rng_state() -> dict[str, Any]:
    """This process's global torch and numpy RNG states, JSON-able (raw bytes as base64)."""
    state = np.random.get_state(legacy=True)
    if isinstance(state, dict):  # only a global generator that is not MT19937 (numpy's is) gives a dict
        raise TypeError(f"numpy's global generator is {state.get('bit_generator')}, not MT19937")
    name, keys, pos, has_gauss, cached = state
    return {
        "torch": base64.b64encode(torch.get_rng_state().numpy().tobytes()).decode(),
        "numpy": [name, base64.b64encode(keys.astype("<u4").tobytes()).decode(), int(pos), int(has_gauss), float(cached)],
    }


def set_driver_rng_state(state: Mapping[str, Any] | None) -> None:
    """Restore :func:`driver_rng_state` output (None: leave the RNGs alone)."""
    if not state:
        return
    try:
        torch_state = np.frombuffer(base64.b64decode(state["torch"]), dtype=np.uint8).copy()
        torch.set_rng_state(torch.from_numpy(torch_state))
        name, keys, pos, has_gauss, cached = state["numpy"]
        np.random.set_state((name, np.frombuffer(base64.b64decode(keys), dtype="<u4").astype(np.uint32), pos, has_gauss, cached))
    except (KeyError, TypeError, ValueError, RuntimeError) as err:
        raise CheckpointError(f"saved driver RNG state does not load: {err!r}") from None
