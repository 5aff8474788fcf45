"""Presets and defaults: one source of each, the same run from ``league-train`` and Python.

No Ray: configs are composed and validated only.
"""

from __future__ import annotations

import dataclasses
import warnings

import pytest

from league.algos import ALGORITHMS
from league.config import PYTHON_DEFAULTS, RunConfig, parse_run_config, run_config
from league.presets import PRESETS, Preset, apply_preset, resolve_preset
from tests.run_helpers import composed_values

SHIPPED = ("connect_four", "tictactoe", "kuhn_poker", "leduc_poker", "liars_dice", "leduc_holdem")
#: The env name each shipped preset's env file runs, where it is not the file's name.
ENV_NAMES = {"liars_dice": "openspiel:liars_dice"}


def _diff(yaml: dict, default: dict, path: str = "") -> list[str]:
    """Keys whose value in ``yaml`` differs from ``default`` (keys ``yaml`` lacks are the dataclass's)."""
    out = []
    for key, value in yaml.items():
        if key not in default:
            out.append(f"{path}{key}: in the YAML only")
        elif isinstance(value, dict) and isinstance(default[key], dict) and key != "params":
            out += _diff(value, default[key], f"{path}{key}.")
        elif key != "params" and value != default[key]:
            out.append(f"{path}{key}: YAML {value!r}, dataclass {default[key]!r}")
    return out


def test_the_yaml_defaults_are_the_dataclass_defaults():
    # preset=none: what configs/ composes is exactly the dataclasses' defaults, key by key
    # (a default the recipe resolves, league.fixed_opponents, compared once resolved).
    values = composed_values("preset=none")
    default = dataclasses.asdict(RunConfig())
    default["preset"] = "none"
    assert _diff({**values, "league": {**values["league"], "fixed_opponents": None}}, default) == []
    assert parse_run_config(values).league == parse_run_config(default).league


@pytest.mark.parametrize("env_file", ["kuhn_poker", "leduc_poker", "liars_dice"])
def test_the_poker_presets_headline_is_the_meta_strategys_exact_exploitability(env_file):
    cfg = parse_run_config(composed_values(f"env={env_file}"))
    assert (cfg.eval.metric, cfg.eval.metric_mode, cfg.eval.interval) == ("exploitability/meta_strategy", "min", 0)
    assert (cfg.preset, cfg.league.recipe) == (env_file, "psro")
    assert cfg.league.exploitability_interval > 0  # what the headline reads
    with pytest.raises(ValueError, match="eval.metric_mode must be 'max' .* or 'min' .*, got 'sideways'"):
        parse_run_config(composed_values(f"env={env_file}", "eval.metric_mode=sideways"))


@pytest.mark.parametrize("env_file", ["connect_four", "tictactoe", "pistonball", "simple_spread", "pong"])
def test_every_env_key_takes_an_override_without_a_plus(env_file):
    # The env section's keys are in configs/config.yaml, so each env file has them all.
    values = composed_values(f"env={env_file}", "env.opening_plies=2", "env.backend=pettingzoo")
    assert set(dataclasses.asdict(RunConfig().env)) <= set(values["env"])
    assert (values["env"]["opening_plies"], values["env"]["backend"]) == (2, "pettingzoo")


@pytest.mark.parametrize("algo", sorted(ALGORITHMS))
def test_each_algorithm_file_lists_its_config_defaults(algo):
    params = composed_values("preset=none", f"algo={algo}")["algo"]["params"]
    defaults = dataclasses.asdict(ALGORITHMS[algo].config_class())
    assert {k: v for k, v in params.items() if v != defaults.get(k, "missing")} == {}
    assert set(params) == set(defaults)  # every key is listed, so every key can be overridden


@pytest.mark.parametrize("name", SHIPPED)
def test_league_train_and_the_python_api_build_the_same_run(name):
    # The Python API differs from league-train only in PYTHON_DEFAULTS (where and how quietly it runs).
    env_file = name
    overrides = [f"env={env_file}"] + [
        f"{section}.{key}={value}" for section, keys in PYTHON_DEFAULTS.items() for key, value in keys.items()
    ]
    cli = parse_run_config(composed_values(*overrides))
    api = run_config(ENV_NAMES.get(name, name))
    assert cli.preset == api.preset == name
    for section in ("env", "league", "sampler", "learner", "iteration", "eval", "stop", "checkpoint"):
        assert getattr(cli, section) == getattr(api, section), section
    # The YAML lists every hyperparameter, Python only the preset's: the algorithm's configs agree.
    config_class = ALGORITHMS[cli.algo.name].config_class
    assert cli.algo.name == api.algo.name
    assert config_class(**cli.algo.params) == config_class(**api.algo.params)


def test_the_default_job_is_connect_fours_preset():
    cfg = parse_run_config(composed_values())
    assert cfg.preset == "connect_four"
    assert cfg.algo.params["aux_loss"] == "connect_four_search" and cfg.algo.params["aux_loss_kwargs"] == {"depth": 4}
    assert cfg.algo.params["model_kwargs"] == {"symmetry": "flip_lr", "input_features": "connect_four_threats"}
    assert (cfg.league.self_play_prob, cfg.league.fixed_opponents, cfg.league.snapshot_steps) == (0.5, {"random": 0.05}, 300_000)
    assert (cfg.sampler.num_envs, cfg.sampler.matchup_draws, cfg.env.opening_plies) == (128, 2, 4)


def test_the_users_overrides_outrank_the_preset():
    values = composed_values("algo.params.lr=0.0007", "league.fixed_opponents.random=0")
    assert values["algo"]["params"]["lr"] == 0.0007
    assert values["algo"]["params"]["aux_loss"] == "connect_four_search"  # the rest of the preset stays
    assert values["league"]["fixed_opponents"] == {"random": 0}
    # A group chosen on the command line replaces the preset's whole section.
    dqn = composed_values("algo=dqn")["algo"]
    assert dqn["name"] == "dqn" and "aux_loss" not in dqn["params"]
    psro = composed_values("league=psro")["league"]
    assert psro["recipe"] == "psro" and psro["self_play_prob"] != 0.5
    assert composed_values("preset=none")["algo"]["params"]["aux_loss"] is None


def test_python_arguments_outrank_the_preset():
    cfg = run_config("connect_four", opponents={"random": 0.3}, algo={"name": "ppo", "params": {"lr": 0.002}}, league={"self_play_prob": 0.1})
    assert cfg.league.fixed_opponents == {"random": 0.3} and cfg.league.self_play_prob == 0.1
    # A section passed as a dict replaces the preset's keys it names only.
    assert cfg.algo.params["lr"] == 0.002
    assert run_config("connect_four", preset="none").algo.params == {}


def test_another_game_gets_the_generic_defaults_and_no_word_of_connect_four():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails
        cfg = parse_run_config(composed_values("env.name=openspiel:hex", "+env.kwargs.board_size=5"))
        other = parse_run_config(composed_values("env.name=openspiel:phantom_ttt"))
    # Hex gets the defaults of its kind of game (board_game), nothing of connect four's.
    assert cfg.preset == "board_game"
    assert cfg.algo.params["aux_loss"] is None and cfg.algo.params["model_kwargs"] == {}
    assert cfg.league.self_play_prob == 0.5 and cfg.sampler.matchup_draws == 2 and cfg.env.opening_plies == 4
    assert other.preset == "none" and other.league.self_play_prob == 0.2 and other.env.opening_plies == 0


def test_a_preset_named_for_another_game_is_refused_by_the_model():
    with pytest.raises(ValueError, match="connect_four"):
        parse_run_config(composed_values("env=tictactoe", "preset=connect_four"))


def test_each_recipe_has_its_own_fixed_members_unless_named():
    # league.fixed_opponents null: selfplay's random member, none for a coordinated recipe,
    # from league-train and Python alike
    assert parse_run_config(composed_values("preset=none")).league.fixed_opponents == {"random": 0.2}
    assert parse_run_config(composed_values("preset=none", "league=psro")).league.fixed_opponents == {}
    assert run_config("tictactoe", preset="none").league.fixed_opponents == {"random": 0.2}
    assert run_config("tictactoe", league={"recipe": "psro"}).league.fixed_opponents == {}
    assert run_config("tictactoe", opponents={}).league.fixed_opponents == {}


def test_an_unknown_preset_lists_the_known_ones():
    with pytest.raises(ValueError, match="unknown preset 'nope'.*connect_four"):
        composed_values("preset=nope")


def test_apply_preset_merges_mappings_and_replaces_the_rest():
    preset = Preset("test_game_x", envs=("test_game_x",), values={"league": {"fixed_opponents": {}, "roles": {"main": {"a": 1}}},
                                                                  "algo": {"params": {"lr": 1.0}}})
    PRESETS.register(preset.name, preset)
    values = {"env": {"name": "test_game_x"}, "league": {"fixed_opponents": {"random": 0.2}, "roles": {"main": {"b": 2}}},
              "algo": {"params": {"lr": 3.0, "gamma": 0.9}}}
    out = apply_preset(values, touched={"algo.params.lr"})
    assert out["preset"] == "test_game_x"
    assert out["league"] == {"fixed_opponents": {}, "roles": {"main": {"a": 1, "b": 2}}}
    assert out["algo"]["params"] == {"lr": 3.0, "gamma": 0.9}
    assert values["league"]["fixed_opponents"] == {"random": 0.2}  # the input is not modified
    assert resolve_preset("auto", "something_else") is None


@pytest.mark.parametrize(("env", "kwargs", "picked"), [
    ("openspiel:clobber", {}, "board_game"),
    ("openspiel:mnk", {"m": 7, "n": 7, "k": 4}, "board_game"),
    ("openspiel:hex", {"board_size": 7, "observation": "observation", "seat_planes": False}, "board_game"),
    ("openspiel:phantom_ttt", {}, None),  # imperfect information
    ("openspiel:liars_dice", {}, "liars_dice"),  # the poker plug-in's PSRO preset
    ("pettingzoo.classic.leduc_holdem_v4", {}, "leduc_holdem"),  # scored by the poker plug-in's own tree
    ("openspiel:goofspiel", {"players": 2}, None),  # simultaneous moves
    ("openspiel:no_such_game", {}, None),  # the run's own checks report it
    ("simple_spread", {}, None),
    ("connect_four", {}, "connect_four"),  # a game's own preset comes first
])  # fmt: skip
def test_auto_picks_the_board_game_preset_for_two_player_zero_sum_perfect_information_games(env, kwargs, picked):
    preset = resolve_preset("auto", env, kwargs)
    assert (preset.name if preset is not None else None) == picked


def test_an_env_with_a_registered_simulator_gets_the_board_game_preset():
    from league.search.simulator import SIMULATORS

    SIMULATORS.register("test_user_board_x", lambda kwargs: None)  # a plug-in's declaration: a search can play it
    preset = resolve_preset("auto", "test_user_board_x")
    assert preset is not None and preset.name == "board_game"


def test_the_board_game_preset_reaches_league_train_under_the_users_keys():
    values = composed_values("env.name=openspiel:clobber", "algo.params.entropy_coef=0.02")
    assert values["preset"] == "board_game"
    assert values["algo"]["params"]["lr"] == 0.001 and values["algo"]["params"]["entropy_coef"] == 0.02
    assert values["env"]["opening_plies"] == 4 and values["sampler"]["num_envs"] == 128 and values["sampler"]["matchup_draws"] == 2
    assert values["algo"]["params"]["num_epochs"] == 2 and values["league"]["fixed_opponents"] == {"random": 0.05}
    assert composed_values("env.name=openspiel:clobber", "preset=none")["algo"]["params"]["lr"] == 0.0003
