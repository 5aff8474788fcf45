"""Faults a run must survive: sampler actors killed mid-run, envs that raise.

Sampler deaths use real :class:`~league.sampling.Sampler` actors (restartable, as
``make_remote_samplers`` makes them). Whether a fragment was played with the learner's
weights is checked from the data itself: every row's ``vf_preds`` must be what a policy
holding those weights predicts for the row's observation. A restarted sampler re-runs
``__init__`` and plays with its initial weights, which differ, so a fragment that slipped
through before the weights were re-sent fails the check.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from league.algos import make_algorithm
from league.batch import Columns as C
from league.batch import MultiAgentBatch
from league.envs import MultiAgentEnv, make_env, register_env
from league.flow import NUM_ENV_STEPS_SAMPLED, NUM_SAMPLER_RESTARTS, BroadcastWeights, ParallelRollouts, PlanError
from league.runtime.recovery import RestartingSamplers, on_sampler_restart
from league.sampling import FixedMatchups, Sampler

NUM_ENVS, FRAGMENT = 2, 8
AGENTS = ("player_1", "player_2")


def ppo():
    env = make_env("tictactoe")
    spec = env.spec(env.possible_agents[0])
    env.close()
    return make_algorithm("ppo", spec, {"model": "mlp"})


class FixedLearner:
    """The learner side of a weight broadcast: always the same weights."""

    def __init__(self, weights: dict) -> None:
        self.weights = weights

    def get_weights(self, policy_ids=None) -> dict:
        return {"main": self.weights}


class HangingSampler(Sampler):
    """A sampler whose first ``sample()`` ever (marked by a file) hangs until the test kills it."""

    def __init__(self, hang_marker: str | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self._hang_marker = hang_marker

    def sample(self) -> MultiAgentBatch:
        if self._hang_marker and not os.path.exists(self._hang_marker):
            Path(self._hang_marker).touch()
            time.sleep(600)
        return super().sample()


def start_samplers(ray, markers: list[str | None]) -> list:
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import tests/
    actor_cls = ray.remote(num_cpus=0, max_restarts=3)(HangingSampler)
    return [
        actor_cls.remote(hang_marker=m, env="tictactoe", policies={"main": ppo()}, seed=3, worker_index=i,
                         matchups=FixedMatchups({a: "main" for a in AGENTS}), num_envs=NUM_ENVS,
                         fragment_length=FRAGMENT)
        for i, m in enumerate(markers)
    ]


def kill_when_hanging(ray, actor, marker: Path) -> threading.Thread:
    """Kill ``actor`` (restartable) as soon as its hanging ``sample()`` has started."""

    def run() -> None:
        deadline = time.monotonic() + 120
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        ray.kill(actor, no_restart=False)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def wait_until_restarted(ray, actor, old_incarnation: str) -> None:
    """Return once a new process of ``actor`` answers (calls fail while Ray restarts it)."""
    deadline = time.monotonic() + 120
    while True:
        assert time.monotonic() < deadline, "the actor never came back"
        try:
            if ray.get(actor.incarnation.remote()) != old_incarnation:
                return
        except ray.exceptions.ActorUnavailableError:
            pass


def assert_played_with(batch: MultiAgentBatch, weights: dict) -> None:
    """Every row's value prediction is the one a policy holding ``weights`` makes."""
    policy = ppo().make_policy(seed=0)
    policy.set_weights(weights)
    rows = batch["main"]
    assert len(rows) > 0
    # Copies: arrays from Ray's object store are read-only, which torch warns about.
    out = policy.compute_actions(np.array(rows[C.OBS]), np.array(rows[C.ACTION_MASK]), explore=False)
    np.testing.assert_allclose(rows[C.VF_PREDS], out[C.VF_PREDS], rtol=1e-5, atol=1e-6)


@pytest.fixture
def learner_weights() -> dict:
    return ppo().make_policy(seed=12345).get_weights()


def prepare(ray, samplers: list, weights: dict) -> BroadcastWeights:
    initial = ray.get(samplers[0].get_weights.remote(["main"]))["main"]
    assert any(not np.array_equal(initial[k], weights[k]) for k in weights), "the check needs distinct weights"
    ray.get([s.set_weights.remote({"main": weights}) for s in samplers])
    # Registers the restart hook that re-sends the learner's weights; kept alive by the caller.
    return BroadcastWeights(FixedLearner(weights), samplers, ["main"])


@pytest.mark.ray
def test_bulk_sync_survives_a_sampler_killed_mid_sample_and_one_killed_idle(ray_session, tmp_path, learner_weights):
    ray = ray_session
    marker = tmp_path / "hang-0"
    samplers = start_samplers(ray, [str(marker), None])
    try:
        broadcast = prepare(ray, samplers, learner_weights)  # noqa: F841 - holds the restart hooks
        plan = ParallelRollouts(samplers, mode="bulk_sync")
        killer = kill_when_hanging(ray, samplers[0], marker)
        first = next(plan)
        killer.join()
        # The killed fragment is gone; the round still holds one fragment per sampler.
        assert first.env_steps == 2 * NUM_ENVS * FRAGMENT
        assert_played_with(first, learner_weights)
        assert plan.metrics.counters[NUM_SAMPLER_RESTARTS] == 1
        assert plan.metrics.info["sampler_restarts"] == {0: 1}

        # A death while idle: no request fails, only the new incarnation id tells.
        before = ray.get(samplers[1].incarnation.remote())
        ray.kill(samplers[1], no_restart=False)
        wait_until_restarted(ray, samplers[1], before)  # back, with its initial weights
        second = next(plan)
        assert_played_with(second, learner_weights)
        assert plan.metrics.info["sampler_restarts"] == {0: 1, 1: 1}
        assert plan.metrics.counters[NUM_ENV_STEPS_SAMPLED] == first.env_steps + second.env_steps

        ray.kill(samplers[0], no_restart=True)  # dead for good: a clear error, not a hang
        with pytest.raises(PlanError, match="SamplerDiedError: sampler 0 died and Ray will not restart it"):
            next(plan)
    finally:
        for s in samplers:
            ray.kill(s)


@pytest.mark.ray
def test_async_survives_a_sampler_killed_mid_sample(ray_session, tmp_path, learner_weights):
    ray = ray_session
    marker = tmp_path / "hang-0"
    samplers = start_samplers(ray, [str(marker), None])
    try:
        broadcast = prepare(ray, samplers, learner_weights)  # noqa: F841 - holds the restart hooks
        plan = ParallelRollouts(samplers, mode="async", num_async=2).zip_with_source_actor()
        killer = kill_when_hanging(ray, samplers[0], marker)
        yielded, from_restarted = 0, 0
        deadline = time.monotonic() + 180
        while from_restarted < 2:
            assert time.monotonic() < deadline, "the restarted sampler never delivered"
            actor, batch = next(plan)
            assert_played_with(batch, learner_weights)
            yielded += batch.env_steps
            from_restarted += actor == samplers[0]
        killer.join()
        assert plan.metrics.counters[NUM_SAMPLER_RESTARTS] == 1
        assert plan.metrics.counters[NUM_ENV_STEPS_SAMPLED] == yielded  # lost fragments are not counted
    finally:
        for s in samplers:
            ray.kill(s)


def test_restart_hooks_and_limits_are_checked():
    with pytest.raises(TypeError, match="Ray actor handle"):
        on_sampler_restart(object(), lambda s: None)
    for timeout in (0, -1.0, float("nan"), True, "5"):
        with pytest.raises(ValueError, match="restart_timeout_s"):
            RestartingSamplers([], restart_timeout_s=timeout)


# Envs that raise ------------------------------------------------------------------------
class FlakyTicTacToe(MultiAgentEnv):
    """Tic-tac-toe whose ``step`` raises on every ``fail_every``-th call in this process,
    and whose ``reset`` raises on the given reset call numbers."""

    steps = 0
    resets = 0

    def __init__(self, fail_every: int = 5, fail_resets: tuple[int, ...] = ()) -> None:
        self._env = make_env("tictactoe")
        self.possible_agents = self._env.possible_agents
        self.fail_every, self.fail_resets = fail_every, fail_resets

    def spec(self, agent):
        return self._env.spec(agent)

    def reset(self, seed=None):
        type(self).resets += 1
        if type(self).resets in self.fail_resets:
            raise RuntimeError("reset boom")
        return self._env.reset(seed)

    def step(self, actions):
        type(self).steps += 1
        if self.fail_every and type(self).steps % self.fail_every == 0:
            raise RuntimeError("step boom")
        return self._env.step(actions)

    def close(self):
        self._env.close()


class FlakyEnvSampler(Sampler):
    """A sampler that registers the flaky env in its own process (workers start empty)."""

    def __init__(self, **kwargs) -> None:
        register_env("flaky_tictactoe", FlakyTicTacToe, overwrite=True)
        super().__init__(env="flaky_tictactoe", **kwargs)


@pytest.mark.ray
def test_env_raising_in_step_and_in_reset_after_a_crash_is_survived_through_ray(ray_session):
    ray = ray_session
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    # Resets 1-2 start the two env copies; the first step crash (call 7, before any game can
    # end) replaces its env, whose reset (call 3) raises as well.
    env_kwargs = {"fail_every": 7, "fail_resets": (3,)}
    actor = ray.remote(num_cpus=0, max_restarts=3)(FlakyEnvSampler).remote(
        env_kwargs=env_kwargs, policies={"main": ppo()}, matchups=FixedMatchups({a: "main" for a in AGENTS}),
        num_envs=NUM_ENVS, fragment_length=10)
    try:
        plan = ParallelRollouts([actor], mode="bulk_sync")
        batches = [next(plan) for _ in range(4)]
        failures = ray.get(actor.num_env_failures.remote())
        assert failures >= 2  # step crashes, plus the replacement's failed reset
        steps = sum(b.env_steps for b in batches)
        assert steps == 4 * NUM_ENVS * 10 - (failures - 1)  # a failed reset takes no env step
        assert plan.metrics.counters[NUM_ENV_STEPS_SAMPLED] == steps
        assert plan.metrics.counters[NUM_SAMPLER_RESTARTS] == 0  # the actor itself never died
    finally:
        ray.kill(actor)


def test_env_raising_in_reset_at_an_episode_end_costs_an_episode_not_the_run():
    register_env("flaky_tictactoe", FlakyTicTacToe, overwrite=True)
    FlakyTicTacToe.resets = 0
    sampler = Sampler("flaky_tictactoe", env_kwargs={"fail_every": 0, "fail_resets": (4,)}, policies={"main": ppo()},
                      matchups=FixedMatchups({a: "main" for a in AGENTS}), num_envs=NUM_ENVS, fragment_length=20)
    for _ in range(3):
        sampler.sample()
    assert sampler.num_env_failures() == 1
