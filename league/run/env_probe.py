"""The config check's env probe: a few steps of random play before Ray starts, made once by
:func:`~league.config.parse_run_config` on the env it built: a kwarg the env stores unread
fails here and names itself, the step's time sizes a run with a time budget
(:func:`league.run.env_checks.fit_time_budget`), and observations that never change are
warned about.
"""

from __future__ import annotations

import statistics
import time
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from league.envs.base import MultiAgentEnv
    from league.run.schema import RunConfig

__all__ = ["PROBE_S", "PROBE_STEPS", "probe_env"]

#: At most this many random steps, and about this many seconds.
PROBE_STEPS, PROBE_S = 8, 0.25
#: Observations that stayed the same this many steps in a row, every agent's, at the end of the
#: probe are warned about: half its steps, so that a frame stack of up to four filling at the
#: start (its observations change while the screen does not) hides nothing.
STILL_STEPS = PROBE_STEPS // 2


def probe_env(cfg: RunConfig, env: MultiAgentEnv, specs: Mapping[str, Any]) -> tuple[float, int]:
    """Reset ``env`` and step it with uniformly random legal actions (a few steps, at most about
    :data:`PROBE_S` seconds), so that a kwarg the constructor stores without looking at
    (``env.kwargs.max_cycles=abc``) fails here, before Ray starts, and not in a sampler later: a
    ``TypeError``/``ValueError`` becomes a ``ValueError`` naming ``env.kwargs`` and the values its
    message points at. Returns the median seconds a step took (what :func:`fit_time_budget` reads) and
    how many agents acted at the first step (all of a parallel env's, one of a turn-based game's)."""
    from league.policy import RandomPolicy

    policies = {}
    for agent, spec in specs.items():
        bounds = (spec.action_low, spec.action_high) if spec.continuous else None
        policies[agent] = RandomPolicy(seed=0, action_bounds=bounds, action_nvec=spec.action_nvec)
    try:
        step = env.reset(seed=0)
        acting = len(step.obs)
        last_seen = {agent: np.asarray(obs) for agent, obs in step.obs.items()}
        still = 0  # steps in a row, within one episode, in which no agent's observation changed
        t0, steps, times = time.perf_counter(), 0, []
        while steps < PROBE_STEPS and (steps == 0 or time.perf_counter() - t0 < PROBE_S):
            t_step = time.perf_counter()
            actions: dict[str, Any] = {}
            for agent, obs in step.obs.items():
                spec = specs[agent]
                action = policies[agent].compute_actions(obs[None], step.masks[agent][None])["actions"][0]
                actions[agent] = action if spec.continuous or spec.action_nvec is not None else int(action)
            if not actions:
                break
            step = env.step(actions)
            times.append(time.perf_counter() - t_step)
            steps += 1
            still = 0 if _any_differs(last_seen, step.obs) else still + 1
            if step.done:
                still = 0
                step = env.reset()
            last_seen.update((agent, np.asarray(obs)) for agent, obs in step.obs.items())
        if still >= STILL_STEPS:
            _warn_blind(cfg, still)
        # The median step: a step or two descheduled by other work on the machine moves it little.
        return (statistics.median(times) if times else 0.0), acting
    except (TypeError, ValueError, RuntimeError) as err:
        cause: BaseException | None = err  # the adapters wrap an env's own error in a RuntimeError naming the env
        while cause is not None and not isinstance(cause, (TypeError, ValueError)):
            cause = cause.__cause__
        if cause is None:
            raise
        raise ValueError(
            f"env '{cfg.env.name}' failed its first reset and step with {_suspects(cfg.env.kwargs, cause)}: "
            f"{type(cause).__name__}: {cause}; fix or drop the env.kwargs named"
        ) from err


def _any_differs(last_seen: Mapping[str, np.ndarray], observations: Mapping[str, Any]) -> bool:
    """Whether any agent's observation differs from the one it saw last (an agent first seen now counts as a difference)."""
    return any(agent not in last_seen or not np.array_equal(last_seen[agent], np.asarray(obs)) for agent, obs in observations.items())


def _warn_blind(cfg: RunConfig, steps: int) -> None:
    """Warn that every observation stayed the same through the last ``steps`` steps of the probe's
    random play, within one episode: policies that see nothing change learn nothing (PettingZoo
    1.27's cooperative pong, without a render mode, never draws the screen its observations are
    read from: all black; its pistonball draws it once, at reset)."""
    warnings.warn(
        f"env '{cfg.env.name}': every agent's observation stayed the same through the last {steps} steps of random play "
        "(the config check's probe, within one episode), so its policies would learn from observations that say "
        "nothing; an env whose observations are its screen may draw it only with a render mode set "
        "(+env.kwargs.render_mode=rgb_array)",
        stacklevel=3,
    )


def _suspects(kwargs: Mapping[str, Any], err: BaseException) -> str:
    """The env kwargs an error's message points at (those whose value's type it names, e.g.
    ``'str'``), else all of them, as ``env.kwargs.<key>=<value>`` to fix."""
    message = str(err)
    named = {k: v for k, v in kwargs.items() if f"'{type(v).__name__}'" in message}
    # '>=' between 'int' and 'str': the command line gives a mistyped number as a string.
    shown = {k: v for k, v in named.items() if isinstance(v, str)} or named or kwargs
    if not shown:
        return "no env.kwargs (the env's own defaults)"
    return "env.kwargs " + ", ".join(f"{k}={v!r} ({type(v).__name__})" for k, v in shown.items())
