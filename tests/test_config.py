"""Run config validation: every bad key or name fails before Ray starts, naming what was wrong."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from league.config import RunConfig, parse_run_config


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
