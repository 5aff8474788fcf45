"""Run config validation: every bad key or name fails before Ray starts, naming what was wrong."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from league.config import RunConfig, parse_run_config
from league.envs import register_env
from league.envs.gym_env import GymnasiumEnv


def test_defaults_parse():
    # The default job (configs/config.yaml): connect-four self-play PPO against its snapshots and
    # the random player, 540 s on two Ray samplers, evaluated every 5 iterations.
    cfg = parse_run_config({})
    assert isinstance(cfg, RunConfig)
    assert (cfg.env.name, cfg.env.kwargs, cfg.algo.name, cfg.policies) == ("connect_four", {}, "ppo", {})
    assert (cfg.league.recipe, cfg.league.self_play_prob, cfg.league.fixed_opponents) == ("selfplay", 0.2, {"random": 0.2})
    assert (cfg.sampler.num_samplers, cfg.sampler.num_envs, cfg.sampler.fragment_length, cfg.sampler.remote) == (2, 32, 64, True)
    assert (cfg.stop.time_s, cfg.stop.env_steps, cfg.stop.iterations, cfg.stop.win_rate) == (540.0, 0, 0, 0.0)
    assert (cfg.eval.interval, cfg.eval.episodes, cfg.eval.opponent) == (5, 100, "random")
    assert (cfg.seed, cfg.resume, cfg.checkpoint_dir) == (0, None, "checkpoints")


def test_given_keys_replace_only_themselves():
    default = parse_run_config({})
    cfg = parse_run_config({"sampler": {"num_envs": 8}, "stop": {"iterations": 3}, "league": {"self_play_prob": 0.5}, "seed": 7})
    assert (cfg.sampler.num_envs, cfg.stop.iterations, cfg.league.self_play_prob, cfg.seed) == (8, 3, 0.5, 7)
    # Their sections' other keys, and every other section, keep the defaults.
    cfg.sampler.num_envs, cfg.stop.iterations, cfg.league.self_play_prob, cfg.seed = 32, 0, 0.2, 0
    assert cfg == default
    assert parse_run_config(dataclasses.asdict(default)) == default  # a parsed config parses to itself


@pytest.mark.parametrize(
    "values, message",
    [
        ({"bogus": 1}, r"unknown config key\(s\) \['bogus'\] at the top level"),
        ({"sampler": {"num_sampler": 2}}, r"\['sampler.num_sampler'\] at 'sampler'"),
        ({"algo": {"name": "muzero"}}, r"unknown algorithm 'muzero'"),
        ({"algo": {"name": "ppo", "params": {"lrr": 1}}}, r"unknown key\(s\) \['lrr'\] in algo config of 'ppo'"),
        ({"algo": {"name": "ppo", "params": {"gamma": 2.0}}}, r"ppo.gamma and ppo.lam must lie in \[0, 1\]"),
        ({"env": {"name": "no_such_env"}}, r"unknown env 'no_such_env'"),
        ({"env": {"name": "connect_four", "kwargs": {"colour": 1}}}, r"env 'connect_four' rejected env.kwargs"),
        ({"sampler": {"num_envs": 0}}, r"sampler.num_envs must be >= 1"),
        ({"sampler": {"mode": "eager"}}, r"sampler.mode must be"),
        ({"league": {"opponent_sampling": "elo"}}, r"league.opponent_sampling must be"),
        ({"league": {"self_play_prob": 1.5}}, r"league.self_play_prob must lie in \[0, 1\]"),
        ({"env": "connect_four"}, r"config 'env' must be a mapping"),
    ],
)
def test_bad_config_is_refused_with_a_message_naming_it(values, message):
    with pytest.raises(ValueError, match=message):
        parse_run_config(values)


def test_cli_refuses_unknown_key_before_starting_ray():
    out = subprocess.run(
        [sys.executable, "-m", "league.cli.train", "+algo.params.lrr=1"], capture_output=True, text=True, timeout=120
    )
    assert out.returncode != 0
    assert "unknown key(s) ['lrr']" in out.stderr
    assert "Started a local Ray instance" not in out.stdout + out.stderr


def test_cli_refuses_unknown_override_key():
    out = subprocess.run([sys.executable, "-m", "league.cli.train", "sampler.nonsense=3"], capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    assert "nonsense" in out.stderr


class _Screen(gym.Env):
    """A one-player env whose observation is a screen: blank, or showing the step count (up to
    ``frozen_after`` steps, then no more); its episodes last ``length`` steps."""

    def __init__(self, drawn: bool = True, length: int = 50, frozen_after: int | None = None) -> None:
        self.drawn, self.length, self.frozen_after, self.t = drawn, length, frozen_after, 0
        self.observation_space = spaces.Box(0.0, 1.0, (4, 4, 1), np.float32)
        self.action_space = spaces.Discrete(2)

    def _obs(self) -> np.ndarray:
        shown = self.t if self.frozen_after is None else min(self.t, self.frozen_after)
        return np.full((4, 4, 1), (shown / self.length) if self.drawn else 0.0, np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.t += 1
        return self._obs(), float(action), self.t >= self.length, False, {}


register_env("screen_test", lambda **kw: GymnasiumEnv(_Screen(**kw), name="screen_test"), overwrite=True)


@pytest.mark.parametrize(
    "kwargs, warned",
    [({"drawn": False}, True), ({"drawn": True}, False), ({"drawn": False, "length": 1}, False),
     ({"frozen_after": 1}, True), ({"frozen_after": 6}, False)],
    ids=["blank screen", "drawn screen", "one-step episodes", "frozen after a step", "still for the last steps only"],
)
def test_observations_that_never_change_are_warned_about_before_the_run(kwargs, warned):
    # PettingZoo 1.27's cooperative pong, without a render mode, never draws the screen its
    # observations are read from: every run trained on black frames until this check. Its
    # pistonball draws the screen once, at reset: behind a frame stack the first observations
    # differ (the stack fills), then none changes. A game of one-step episodes (a matrix game)
    # may see the same observation every time: not warned.
    values = {"env": {"name": "screen_test", "kwargs": kwargs}, "eval": {"interval": 0}}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parse_run_config(values)
    blind = [str(w.message) for w in caught if "stayed the same" in str(w.message)]
    assert bool(blind) == warned, blind
    if warned:
        assert "env 'screen_test'" in blind[0] and "env.kwargs.render_mode=rgb_array" in blind[0]


@pytest.mark.parametrize("name, needs", [("cooperative_pong", "pygame"), ("pistonball", "pymunk")])
def test_the_shipped_butterfly_envs_see_their_games_move(name, needs):
    pytest.importorskip(needs)
    pytest.importorskip("supersuit")
    from league.envs import make_env
    from run_helpers import composed_values

    values = composed_values(f"env={name}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parse_run_config(values)
    assert not [w for w in caught if "stayed the same" in str(w.message)]
    env = make_env(values["env"]["name"], **values["env"]["kwargs"])
    try:
        step = env.reset(seed=0)
        seen = []
        for t in range(6):
            step = env.step({agent: t % 3 for agent in step.obs})
            seen.append({agent: np.asarray(obs).copy() for agent, obs in step.obs.items()})
        assert all(np.asarray(obs).max() > 0.5 for obs in step.obs.values() if np.ndim(obs) >= 2)  # a screen: something drawn, bright
        assert any(not np.array_equal(seen[-1][a], seen[-2][a]) for a in seen[-1])  # and moving after the stack filled
    finally:
        env.close()
