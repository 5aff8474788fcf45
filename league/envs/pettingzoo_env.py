"""PettingZoo environments under the :class:`~league.envs.base.MultiAgentEnv` contract.

:class:`PettingZooAECEnv` adapts a turn-based (AEC) env: one agent acts per ``step``,
and the adapter steps ``None`` for dead agents itself, so the caller never sees one.
:class:`PettingZooParallelEnv` adapts a parallel env: every live agent acts per step.

Reward accounting (AEC): the reward of a move is what ``env.rewards`` holds right after
it, for every agent (PettingZoo's own rule, the one its ``aec_to_parallel`` uses); it is
reported in that step's ``TimeStep.rewards``. ``env.last()`` is never called: reading
the env's dicts directly is several times cheaper than ``last()`` per agent.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from league.envs.base import AgentSpec, MultiAgentEnv, TimeStep, informative_mask
from league.envs.preprocess import ObsPreprocessor, build_preprocessor

__all__ = ["PettingZooAECEnv", "PettingZooParallelEnv"]


class _PettingZooBase(MultiAgentEnv):
    """Per-agent preprocessors, step limit and error wrapping shared by both adapters."""

    def __init__(self, env: Any, name: str | None, max_episode_steps: int | None, byte_images: bool = False) -> None:
        if max_episode_steps is not None and (
            isinstance(max_episode_steps, bool)
            or not isinstance(max_episode_steps, (int, np.integer))
            or max_episode_steps < 1
        ):
            raise ValueError(f"max_episode_steps must be a positive int or None, got {max_episode_steps!r}")
        self.env = env
        self.name = name or str((getattr(env, "metadata", None) or {}).get("name", type(env).__name__))
        self.max_episode_steps = None if max_episode_steps is None else int(max_episode_steps)
        self.possible_agents = list(env.possible_agents)
        try:
            self._pre: dict[str, ObsPreprocessor] = {
                agent: build_preprocessor(env.observation_space(agent), env.action_space(agent), agent, byte_images)
                for agent in self.possible_agents
            }
        except (TypeError, ValueError) as err:
            raise type(err)(f"env {self.name}: {err}") from err
        # Plain dicts of the per-step pieces: one lookup each in the hot loop.
        self._transform = {agent: pre.transform for agent, pre in self._pre.items()}
        self._start = {agent: pre.action_start for agent, pre in self._pre.items()}
        self._steps = 0
        self._ended: set[str] = set()
        self._episode_agents: set[str] = set()

    def spec(self, agent: str) -> AgentSpec:
        """Preprocessed spaces of ``agent`` (see :mod:`league.envs.preprocess`)."""
        try:
            return self._pre[agent].spec
        except KeyError:
            raise ValueError(
                f"env {self.name}: unknown agent {agent!r}; possible agents: {self.possible_agents}"
            ) from None

    def close(self) -> None:
        """Close the wrapped env."""
        self.env.close()

    #: env steps per ``max_cycles`` cycle: 1 for the parallel API (every agent acts at every
    #: step), the number of agents for the AEC API (one agent's move a step).
    _steps_per_cycle = 1

    def episode_limit(self) -> int | None:
        """The adapter's ``max_episode_steps`` or the env's ``max_cycles`` (PettingZoo's
        convention, on the env or inside it: SuperSuit and PettingZoo wrappers are looked
        through), whichever ends an episode first; None without either."""
        cycles = _max_cycles(self.env)
        if cycles:  # max_cycles counts frames; a SuperSuit frame skip makes a step several
            cycles = -(-cycles // _frames_per_step(self.env))
        limits = [n for n in (self.max_episode_steps, cycles and cycles * self._steps_per_cycle) if n]
        return min(limits) if limits else None

    def _env_error(self, where: str, err: Exception) -> RuntimeError:
        return RuntimeError(f"env {self.name} raised in {where}: {type(err).__name__}: {err}")

    def _end_leftovers(self, ts: TimeStep) -> None:
        # An agent the env dropped without flagging it still has to see the episode end.
        for agent in self._episode_agents - self._ended:
            ts.terminated[agent] = True
        self._ended.update(self._episode_agents)


def _max_cycles(env: Any) -> int | None:
    """``max_cycles`` of a PettingZoo env: on it, or on what it wraps (``unwrapped``, ``env``,
    ``aec_env``, ``par_env``: wrappers, SuperSuit's and the parallel/AEC converters, and the
    game object some raw envs keep), a few levels deep; None where none holds a positive int."""
    frontier, seen = [env], set()
    for _ in range(4):
        found: list[Any] = []
        for obj in frontier:
            if obj is None or id(obj) in seen:
                continue
            seen.add(id(obj))
            value = getattr(obj, "__dict__", {}).get("max_cycles")
            if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value > 0:
                return int(value)
            found.extend(getattr(obj, "__dict__", {}).get(k) for k in ("env", "aec_env", "par_env"))
            try:
                found.append(obj.unwrapped)
            except Exception:  # noqa: BLE001 - an env without unwrapped (or one that raises) has no more to look through
                pass
        frontier = found
    return None


def _frames_per_step(env: Any) -> int:
    """Frames one step of ``env`` plays: the product of SuperSuit's frame skips among its
    wrappers (``num_frames``: an int, or a ``(low, high)`` range whose low end is taken), 1 without."""
    try:
        from supersuit.generic_wrappers.frame_skip import frame_skip_aec, frame_skip_par
    except ImportError:  # without SuperSuit no env holds its frame skip
        return 1
    frames, obj = 1, env
    for _ in range(32):
        if obj is None:
            break
        if isinstance(obj, (frame_skip_aec, frame_skip_par)):
            skip = obj.__dict__.get("num_frames", 1)
            frames *= int(skip[0] if isinstance(skip, tuple) else skip)
        inner = obj.__dict__
        obj = inner.get("env") or inner.get("aec_env") or inner.get("par_env")
    return max(1, frames)


class PettingZooAECEnv(_PettingZooBase):
    """A PettingZoo AEC (turn-based) env: ``TimeStep.obs`` always holds exactly one agent.

    Args:
        env: a PettingZoo ``AECEnv`` (wrapped or not), e.g. ``connect_four_v3.env()``.
        name: used in error messages; defaults to ``env.metadata["name"]``.
        max_episode_steps: truncate every live agent after this many ``step`` calls
            (moves, not cycles); None leaves truncation to the env.
        byte_images: ``uint8`` Box observations stay bytes (see :func:`build_preprocessor`).
    """

    def __init__(self, env: Any, name: str | None = None, max_episode_steps: int | None = None,
                 byte_images: bool = False) -> None:  # fmt: skip
        super().__init__(env, name, max_episode_steps, byte_images)
        self._raw = env.unwrapped
        self._current: str | None = None
        self._steps_per_cycle = max(1, len(self.possible_agents))

    def reset(self, seed: int | None = None) -> TimeStep:
        """Reset (seeded when ``seed`` is given) and return the first agent to act."""
        try:
            self.env.reset(seed=seed)
            self._steps = 0
            self._ended = set()
            self._episode_agents = set(self._raw.agents)
            ts = TimeStep(obs={}, masks={})
            self._settle(ts)
        except Exception as err:
            self._current = None
            raise self._env_error("reset", err) from err
        return ts

    def step(self, actions: dict[str, int]) -> TimeStep:
        """Play the current agent's action; the result names the next agent to act."""
        agent = self._current
        if agent is None:
            raise RuntimeError(f"env {self.name}: step() called before reset() or after the episode ended")
        if len(actions) != 1 or agent not in actions:
            raise ValueError(
                f"env {self.name}: it is {agent!r}'s turn, step() takes exactly one action "
                f"for it; got actions for {sorted(actions)}"
            )
        raw = self._raw
        try:
            self.env.step(self._pre[agent].env_action(actions[agent]))
            self._steps += 1
            ts = TimeStep(obs={}, masks={}, rewards={a: float(r) for a, r in raw.rewards.items()})
            self._settle(ts)
        except Exception as err:
            self._current = None
            raise self._env_error("step", err) from err
        return ts

    def _settle(self, ts: TimeStep) -> None:
        """Record agents that ended, then either end the episode or find the next actor."""
        raw = self._raw
        env = self.env
        ended = self._ended
        terminations = raw.terminations
        truncations = raw.truncations
        any_live = False
        for agent in raw.agents:
            if agent in ended:
                continue
            if terminations[agent]:
                ts.terminated[agent] = True
                ended.add(agent)
            elif truncations[agent]:
                ts.truncated[agent] = True
                ended.add(agent)
                self._record_final(ts, agent)
            else:
                any_live = True
        if any_live and self.max_episode_steps is not None and self._steps >= self.max_episode_steps:
            for agent in raw.agents:
                if agent not in ended:
                    ts.truncated[agent] = True
                    ended.add(agent)
                    self._record_final(ts, agent)
            any_live = False
        if not any_live:
            # Whole episode over: the dead-agent steps PettingZoo wants would only
            # delete bookkeeping that the next reset() rebuilds anyway.
            self._end_leftovers(ts)
            ts.done = True
            self._current = None
            return
        agent = raw.agent_selection
        max_dead_steps = len(raw.agents)
        dead_steps = 0
        while raw.terminations[agent] or raw.truncations[agent]:
            env.step(None)  # PettingZoo's required step for a dead agent
            agent = raw.agent_selection
            dead_steps += 1
            if dead_steps > max_dead_steps:
                raise RuntimeError(f"stepping dead agents never reached a live one (stuck on {agent!r})")
        if agent not in self._episode_agents:
            self._episode_agents.add(agent)
        self._current = agent
        ts.obs[agent], ts.masks[agent] = self._observe(agent)

    def _observe(self, agent: str) -> tuple[np.ndarray, np.ndarray]:
        # Through the wrappers, so TerminateIllegalWrapper caches the mask it checks.
        return self._transform[agent](self.env.observe(agent), self._raw.infos.get(agent))

    def _record_final(self, ts: TimeStep, agent: str) -> None:
        """A truncated agent's last observation and its legal actions there."""
        obs, mask = self._observe(agent)
        ts.final_obs[agent] = obs
        ts.final_masks[agent] = informative_mask(mask)


class PettingZooParallelEnv(_PettingZooBase):
    """A PettingZoo ``ParallelEnv``: every live agent acts at every step.

    Args:
        env: a PettingZoo ``ParallelEnv``, e.g. ``rps_v2.parallel_env()``.
        name: used in error messages; defaults to ``env.metadata["name"]``.
        max_episode_steps: truncate every live agent after this many ``step`` calls;
            None leaves truncation to the env.
        byte_images: ``uint8`` Box observations stay bytes (see :func:`build_preprocessor`).
    """

    def __init__(self, env: Any, name: str | None = None, max_episode_steps: int | None = None,
                 byte_images: bool = False) -> None:  # fmt: skip
        super().__init__(env, name, max_episode_steps, byte_images)
        self._acting: list[str] = []

    def reset(self, seed: int | None = None) -> TimeStep:
        """Reset (seeded when ``seed`` is given) and return every live agent."""
        try:
            obs, infos = self.env.reset(seed=seed)
            self._steps = 0
            self._ended = set()
            self._episode_agents = set(self.env.agents)
            ts = TimeStep(obs={}, masks={})
            self._settle(ts, obs, infos)
        except Exception as err:
            self._acting = []
            raise self._env_error("reset", err) from err
        return ts

    def step(self, actions: dict[str, int]) -> TimeStep:
        """Apply one action per live agent (exactly the agents of the last ``TimeStep.obs``)."""
        acting = self._acting
        if not acting:
            raise RuntimeError(f"env {self.name}: step() called before reset() or after the episode ended")
        try:
            if len(actions) != len(acting):
                raise KeyError
            joint = {agent: self._pre[agent].env_action(actions[agent]) for agent in acting}
        except KeyError:
            raise ValueError(
                f"env {self.name}: step() takes one action for each of {acting}; "
                f"got actions for {sorted(actions)}"
            ) from None
        try:
            obs, rewards, terminations, truncations, infos = self.env.step(joint)
            self._steps += 1
            ts = TimeStep(obs={}, masks={}, rewards={a: float(r) for a, r in rewards.items()})
            ended = self._ended
            for agent in acting:
                if terminations.get(agent, False):
                    ts.terminated[agent] = True
                    ended.add(agent)
                elif truncations.get(agent, False):
                    ts.truncated[agent] = True
                    ended.add(agent)
                    if agent in obs:
                        self._record_final(ts, agent, obs[agent], infos.get(agent))
            self._settle(ts, obs, infos)
        except Exception as err:
            self._acting = []
            raise self._env_error("step", err) from err
        return ts

    def _record_final(self, ts: TimeStep, agent: str, raw_obs: Any, info: Any) -> None:
        """A truncated agent's last observation and its legal actions there (mask from the
        observation or ``info``, as for any step)."""
        obs, mask = self._transform[agent](raw_obs, info)
        ts.final_obs[agent] = obs
        ts.final_masks[agent] = informative_mask(mask)

    def _settle(self, ts: TimeStep, obs: dict[str, Any], infos: dict[str, Any]) -> None:
        """Apply the step limit, then either end the episode or list the next actors."""
        ended = self._ended
        live = [agent for agent in self.env.agents if agent not in ended]
        if live and self.max_episode_steps is not None and self._steps >= self.max_episode_steps:
            for agent in live:
                ts.truncated[agent] = True
                ended.add(agent)
                if agent in obs:
                    self._record_final(ts, agent, obs[agent], infos.get(agent))
            live = []
        self._acting = live
        if not live:
            self._end_leftovers(ts)
            ts.done = True
            return
        transform = self._transform
        for agent in live:
            ts.obs[agent], ts.masks[agent] = transform[agent](obs[agent], infos.get(agent))
        self._episode_agents.update(live)
