"""Command lines: ``league-eval``, ``league-train resume=...`` and a two-job ``league-train -m`` sweep."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from dataclasses import asdict
from pathlib import Path

import pytest

from league.algos import make_algorithm
from league.checkpoint import find_checkpoint, read_checkpoint, write_checkpoint
from league.cli.eval import main as eval_main
from league.cli.eval import algorithm_params, parse_args
from league.cli.train import run_job
from league.config import parse_run_config
from league.envs import make_env
from league.leagues.builder import exploitability_measure
from league.learn import Learner
from league.population.scripted import scripted_factory

# A tiny run: tic-tac-toe, one in-process sampler, small PPO batches.
TINY = [
    "env=tictactoe",
    "sampler.num_samplers=1",
    "sampler.num_envs=2",
    "sampler.fragment_length=16",
    "sampler.mode=bulk_sync",
    "algo.params.train_batch_size=32",
    "algo.params.minibatch_size=32",
    "algo.params.num_epochs=1",
    "league.snapshot_steps=1",
    "iteration.min_env_steps=0",
    "eval.interval=0",
    "stop.time_s=0",
    "stop.env_steps=0",
    "logging=quiet",
    "verbose=false",
]


def _cli(args: list[str], timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "league.cli.train", *args], capture_output=True, text=True, timeout=timeout)


def _tiny_checkpoint(tmp_path_factory, env_name: str) -> Path:
    """A checkpoint of ``env_name`` with a learning policy and one snapshot (untrained weights)."""
    cfg = parse_run_config({"env": {"name": env_name}})
    env = make_env(env_name)
    spec = env.spec(env.possible_agents[0])
    env.close()
    learner = Learner(seed=0)
    learner.add_policy("main", make_algorithm("ppo", spec, cfg.algo.params))
    weights = learner.get_weights()["main"]
    return write_checkpoint(
        tmp_path_factory.mktemp(env_name) / "checkpoints",
        "final",
        iteration=3,
        env_steps=300,
        config=asdict(cfg),
        league={"learning": ["main"]},
        policies={"main": weights, "main@v1": {k: v * 0.5 for k, v in weights.items()}},
        learner_states={"main": learner.get_state("main")},
    )


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    """A tic-tac-toe checkpoint with a learning policy and one snapshot (untrained weights)."""
    return _tiny_checkpoint(tmp_path_factory, "tictactoe")


def test_league_eval_plays_every_pair_and_prints_a_table(checkpoint, tmp_path, capsys):
    out = tmp_path / "eval.json"
    status = eval_main(
        [f"checkpoint={checkpoint.parent.parent}", "opponents=[random,minimax,main@v1]", "episodes=6", "num_envs=3", f"output={out}"]
    )
    assert status == 0
    printed = capsys.readouterr().out
    assert "minimax" in printed and "Elo" in printed and "iteration 3" in printed
    result = json.loads(out.read_text())
    pairs = {(r["policy"], r["opponent"]): r for r in result["results"]}
    assert set(pairs) == {("main", "random"), ("main", "minimax"), ("main", "main@v1")}
    for r in pairs.values():
        assert r["wins"] + r["draws"] + r["losses"] == 6
        assert r["win_rate"] == pytest.approx((r["wins"] + 0.5 * r["draws"]) / 6)
    assert pairs[("main", "minimax")]["wins"] == 0  # perfect play never loses at tic-tac-toe
    assert set(result["elo"]) == {"main", "random", "minimax", "main@v1"}
    assert result["elo"]["minimax"] >= result["elo"]["main"]
    assert result["checkpoint"] == str(checkpoint)


@pytest.mark.parametrize(
    "argv, message",
    [
        ([], "checkpoint=<checkpoint or run directory> is required"),
        (["checkpoint"], "arguments are key=value pairs"),
        (["checkpoint=x", "opponent=random"], r"unknown argument\(s\) \['opponent'\]"),
        (["checkpoint=x", "episodes=0"], "episodes must be an integer >= 1"),
        (["checkpoint=x", "opponents=[]"], "opponents must be a non-empty list"),
        (["checkpoint=x", "opening_plies=-1"], "opening_plies must be an integer >= 0"),
        (["checkpoint=x", "opening_plies=1.5"], "opening_plies must be an integer >= 0"),
        (["checkpoint=x", "tactics=maybe"], "tactics must be true or false"),
        (["checkpoint=x", "opening_plies=2", "episodes=5"], "episodes must be even, got 5"),
    ],
)
def test_league_eval_argument_errors(argv, message):
    with pytest.raises(ValueError, match=message):
        parse_args(argv)


@pytest.mark.parametrize(
    "extra, message",
    [
        (["opponents=[negamax]"], "scripted player 'negamax' plays connect four only"),
        (["opponents=[stockfish]"], "unknown opponent 'stockfish'"),
        (["opponents=[main]"], "policy 'main' cannot be its own opponent"),
        (["policies=[main@v9]"], "policies ['main@v9'] are not in the checkpoint"),
        (["tactics=true"], "tactics=true: no tactics test fits env 'tictactoe' (registered: connect_four)"),
        (["opening_plies=9"], "opening_plies=9: 100 openings drawn on 'tictactoe' all ended the game"),
        (["policies=[meta_strategy]"], "meta_strategy is the mixture a league solves over its frozen players"),
        (["opponents=[meta_strategy]"], "this run is env 'tictactoe', league.recipe 'selfplay'"),
        (["exploitability=true"], "no exact exploitability for env 'tictactoe'"),
    ],
)
def test_league_eval_refuses_bad_matches(checkpoint, capsys, extra, message):
    assert eval_main([f"checkpoint={checkpoint}", "episodes=2", *extra]) == 2
    assert message in capsys.readouterr().err


def _eval_json(checkpoint: Path, tmp_path: Path, *argv: str) -> dict:
    out = tmp_path / "eval.json"
    assert eval_main([f"checkpoint={checkpoint}", *argv, f"output={out}"]) == 0
    return json.loads(out.read_text())


def test_league_eval_reports_each_seat(checkpoint, tmp_path, capsys):
    result = _eval_json(checkpoint, tmp_path, "opponents=[random,minimax]", "episodes=10", "num_envs=3")
    printed = capsys.readouterr().out
    assert "1st" in printed and "2nd" in printed and "first/second player" in printed
    assert result["seats"] == ["player_1", "player_2"] and result["turn_based"] is True
    for r in result["results"]:
        assert len(r["seats"]) == 2
        for key in ("wins", "draws", "losses"):
            assert sum(seat[key] for seat in r["seats"]) == r[key]
        assert sum(sum(seat.values()) for seat in r["seats"]) == 10
    minimax = next(r for r in result["results"] if r["opponent"] == "minimax")
    assert [seat["wins"] for seat in minimax["seats"]] == [0, 0]
    # tic-tac-toe pays +1 / 0 / -1: the mean return is wins less losses a game
    assert all(r["mean_return"] == pytest.approx((r["wins"] - r["losses"]) / 10) for r in result["results"])
    assert "mean" in printed and "return" in printed  # the column (its header wraps on a narrow console)


def test_league_eval_plays_each_opening_from_both_seats(checkpoint, tmp_path, capsys):
    argv = ("opponents=[random,main@v1]", "episodes=8", "opening_plies=2", "num_envs=3")
    result = _eval_json(checkpoint, tmp_path, *argv)
    assert "openings of 2 random plies" in capsys.readouterr().out
    assert result["args"]["opening_plies"] == 2
    for r in result["results"]:
        assert [sum(seat.values()) for seat in r["seats"]] == [4, 4]  # 4 openings, each from both seats
        assert r["wins"] + r["draws"] + r["losses"] == 8
    assert all(r["mean_return"] is None for r in result["results"])  # matches from openings: outcomes only
    # Greedy players and seeded openings: the same games again.
    assert _eval_json(checkpoint, tmp_path, *argv)["results"] == result["results"]
    assert set(result["elo"]) == {"main", "random", "main@v1"}


def test_league_eval_reports_holdems_chips_beside_its_hands_won(tmp_path_factory, tmp_path, capsys):
    checkpoint = _tiny_checkpoint(tmp_path_factory, "texas_holdem")
    # holdem_styles, the run's yardstick, is a mix: it is played as each of its three players.
    result = _eval_json(checkpoint, tmp_path, "opponents=[random,holdem_styles]", "episodes=40", "num_envs=4")
    printed = capsys.readouterr().out
    assert "mean" in printed and "return" in printed
    assert [r["opponent"] for r in result["results"]] == ["random", "holdem_rules", "holdem_station", "holdem_maniac"]
    for r in result["results"]:
        assert r["wins"] + r["draws"] + r["losses"] == 40 and isinstance(r["mean_return"], float)


def test_league_eval_scores_connect_four_tactics(tmp_path_factory, tmp_path, capsys):
    checkpoint = _tiny_checkpoint(tmp_path_factory, "connect_four")
    result = _eval_json(checkpoint, tmp_path, "opponents=[random]", "episodes=2", "opening_plies=2", "tactics=true")
    assert "Connect-four tactics" in capsys.readouterr().out
    tactics = result["tactics"]["connect_four"]["main"]
    assert tactics["win_positions"] == tactics["block_positions"] == 500
    # The figures are the checkpoint's own main policy scored on the seed's positions (greedy):
    # the yardstick run on those weights by hand gives them exactly.
    from league.checkpoint import read_checkpoint
    from league.games.connect_four.tactics import connect_four_tactics

    ckpt = read_checkpoint(checkpoint)
    env = make_env("connect_four")
    spec = env.spec(env.possible_agents[0])
    env.close()
    policy = make_algorithm("ppo", spec, ckpt.config["algo"]["params"]).make_policy(seed=0, learns=False)
    policy.set_weights(dict(ckpt.policies["main"]))
    assert tactics == connect_four_tactics(policy, 500, seed=result["args"]["seed"]).as_dict()


def test_league_eval_refuses_openings_on_simultaneous_moves(tmp_path_factory, capsys):
    checkpoint = _tiny_checkpoint(tmp_path_factory, "rps")
    assert eval_main([f"checkpoint={checkpoint}", "episodes=2", "opening_plies=1"]) == 2
    assert "opening_plies needs a two-player turn-based env; 'rps'" in capsys.readouterr().err


def test_invalid_config_exits_with_status_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        run_job({"checkpoint": {"keep_last": 0}}, str(tmp_path / "run"))
    assert exit_info.value.code == 2 and "checkpoint.keep_last >= 1" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_league_eval_refuses_a_missing_checkpoint(tmp_path, capsys):
    assert eval_main([f"checkpoint={tmp_path / 'nope'}"]) == 2
    assert "no such checkpoint or run directory" in capsys.readouterr().err


def test_train_then_resume_from_the_command_line_without_ray(tmp_path, capsys):
    first, second = tmp_path / "first", tmp_path / "second"
    local = [*TINY, "sampler.remote=false", "checkpoint.interval=1"]
    out = _cli([*local, "stop.iterations=2", f"hydra.run.dir={first}"])
    assert out.returncode == 0, out.stderr[-3000:]
    assert "Started a local Ray instance" not in out.stdout + out.stderr
    assert sorted(p.name for p in (first / "checkpoints").iterdir()) == ["final", "iter_00000001", "iter_00000002"]

    out = _cli([*local, "stop.iterations=3", f"resume={first}", f"hydra.run.dir={second}"])
    assert out.returncode == 0, out.stderr[-3000:]
    summary = json.loads((second / "summary.json").read_text())
    assert summary["iterations"] == 3 and summary["start_iteration"] == 2
    assert summary["resumed_from"] == str(first / "checkpoints" / "final")
    rows = [json.loads(line) for line in (second / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in rows] == [3]

    # A resume that does not fit: status 2 and a message, nothing written (in-process: the
    # job function the Hydra entry point calls).
    values = json.loads((first / "checkpoints" / "final" / "config.json").read_text())
    values.update(env={"name": "connect_four", "kwargs": {}}, resume=str(first))
    with pytest.raises(SystemExit) as exit_info:
        run_job(values, str(tmp_path / "third"))
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "cannot resume" in err and "env 'tictactoe'" in err
    assert not (tmp_path / "third").exists()


_KUHN_TINY = ["env=kuhn_poker", *[a for a in TINY if a != "env=tictactoe"], "sampler.remote=false"]


@pytest.mark.parametrize("recipe", ["psro", "alphastar"])  # alphastar: three learning policies' snapshots
def test_league_eval_plays_the_meta_strategy_of_a_league_run(recipe, tmp_path, capsys):
    # A few iterations on kuhn poker in-process (snapshots each), then the league's
    # meta-strategy as league-eval's player: the mixture the run solved, over its frozen players.
    run = tmp_path / recipe
    out = _cli([f"league={recipe}", *_KUHN_TINY, "stop.iterations=4", f"hydra.run.dir={run}"])
    assert out.returncode == 0, out.stderr[-3000:]
    solved = json.loads((run / "summary.json").read_text())["meta_strategy"]
    assert len(solved) >= 2
    result = _eval_json(run, tmp_path, "policies=[meta_strategy,main]", "opponents=[random,main@v0]", "episodes=40", "explore=true",
                        "exploitability=true")
    assert result["meta_strategy"] == pytest.approx(solved, abs=1e-6)
    # Its exact exploitability and the learning policy's (with the checkpoint's weights).
    exploitability = result["exploitability"]
    assert set(exploitability) == {"meta_strategy", "main"} and all(0.0 <= v < 2.0 for v in exploitability.values())
    ckpt = read_checkpoint(find_checkpoint(run))
    kuhn = make_env("kuhn_poker")
    name, params = algorithm_params(ckpt.config, "main")
    main = make_algorithm(name, kuhn.spec(kuhn.possible_agents[0]), params)
    measured = exploitability_measure("kuhn_poker", {}).exploitability(main, ckpt.policies["main"])
    assert exploitability["main"] == pytest.approx(measured, abs=1e-5)
    fresh = main.make_policy(seed=1).get_weights()
    assert measured != pytest.approx(exploitability_measure("kuhn_poker", {}).exploitability(main, fresh), abs=1e-4), "weights matter"
    assert "exploitability (a best response's gain a game): meta_strategy" in capsys.readouterr().out
    result = _eval_json(run, tmp_path, "policies=[meta_strategy]", "opponents=[random,main@v0]", "episodes=40", "explore=true")
    assert [(r["policy"], r["opponent"], r["wins"] + r["draws"] + r["losses"]) for r in result["results"]] == [
        ("meta_strategy", "random", 40), ("meta_strategy", "main@v0", 40)]
    assert "meta_strategy: main" in capsys.readouterr().out
    # And as an opponent of the learning policy.
    result = _eval_json(run, tmp_path, "policies=[main]", "opponents=[meta_strategy]", "episodes=10")
    assert [(r["policy"], r["opponent"]) for r in result["results"]] == [("main", "meta_strategy")]


def test_exact_exploitability_of_openspiel_games_and_of_plugin_measures():
    # Kuhn poker's uniform random policy: 0.4583 a hand (OpenSpiel's NashConv / 2);
    # rock-paper-scissors' (its plug-in's measure) is its equilibrium: 0.

    for name, expected in (("kuhn_poker", 0.458333), ("rps", 0.0)):
        env = make_env(name)
        uniform = scripted_factory("random", env.spec(env.possible_agents[0]))
        env.close()
        assert exploitability_measure(name, {}).exploitability(uniform, {}) == pytest.approx(expected, abs=1e-5)
    with pytest.raises(ValueError, match="no exact exploitability for env 'connect_four'"):
        exploitability_measure("connect_four", {})


def test_league_eval_help_describes_every_key(capsys):
    assert eval_main(["--help"]) == 0
    out = capsys.readouterr().out
    assert all(f"``{name}``" in out for name in asdict(parse_args(["checkpoint=x"])))


def test_league_eval_has_no_meta_strategy_before_the_first_snapshot(tmp_path, capsys):
    early = tmp_path / "early"
    out = _cli(["league=psro", *_KUHN_TINY, "league.snapshot_steps=100000", "stop.iterations=1", f"hydra.run.dir={early}"])
    assert out.returncode == 0, out.stderr[-3000:]
    assert eval_main([f"checkpoint={early}", "policies=[meta_strategy]", "episodes=2"]) == 2
    assert "league holds no frozen player yet" in capsys.readouterr().err


_SWEEP = textwrap.dedent(
    """
    import json, sys, time
    import ray
    from league.cli.train import main

    inits = []
    real_init = ray.init
    def counting_init(*args, **kwargs):
        inits.append(1)
        return real_init(*args, **kwargs)
    ray.init = counting_init
    sys.argv = ["league-train", "-m", *sys.argv[1:]]
    main()
    # Every job killed its actors: all CPUs come back (releases are asynchronous).
    deadline = time.monotonic() + 30
    while ray.available_resources().get("CPU", 0) < ray.cluster_resources()["CPU"] and time.monotonic() < deadline:
        time.sleep(0.2)
    print(json.dumps({"inits": len(inits), "free_cpus": ray.available_resources().get("CPU", 0), "cpus": ray.cluster_resources()["CPU"]}))
    """
)


@pytest.mark.ray
def test_multirun_sweep_reuses_one_ray_instance_and_leaks_no_actors(tmp_path):
    # Two samplers of 1 CPU each on a 2-CPU Ray: a leaked actor from job 0 would stall job 1.
    args = [*TINY, "sampler.num_samplers=2", "sampler.num_cpus=1", "ray.num_cpus=2", "stop.iterations=2", "seed=0,1"]
    out = subprocess.run(
        [sys.executable, "-c", _SWEEP, *args, f"hydra.sweep.dir={tmp_path}"], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["inits"] == 1 and report["free_cpus"] == report["cpus"] == 2
    seeds = []
    for job in ("0", "1"):
        summary = json.loads((tmp_path / job / "summary.json").read_text())
        assert summary["iterations"] == 2 and (tmp_path / job / "checkpoints" / "final" / "manifest.json").is_file()
        seeds.append(summary["config"]["seed"])
    assert seeds == [0, 1]


def test_multirun_sweeps_league_structure(tmp_path):
    # In-process samplers and coordinator: the sweep itself is what is tested, not Ray.
    args = [*TINY, "league=alphastar", "league.snapshot_steps=50", "league.num_league_exploiters=0", "league.scripted=[]"]
    args += ["sampler.remote=false", "stop.iterations=2", "league.num_main_exploiters=0,1", f"hydra.sweep.dir={tmp_path}"]
    out = _cli(["-m", *args], timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    players = []
    for job in ("0", "1"):
        summary = json.loads((tmp_path / job / "summary.json").read_text())
        assert summary["iterations"] == 2
        population = summary["league"]["population"]["players"]
        players.append(sorted(p["player_id"] for p in population if p["kind"] == "learning"))
    assert players == [["main"], ["main", "main_exploiter"]]


@pytest.mark.parametrize("columns", [80, 200])
def test_league_eval_shows_every_seat_in_full_on_a_narrow_console(columns, capsys, monkeypatch):
    """Three seats at 80 columns: per-seat results get a table of their own instead of "…" cells."""
    from league.cli.eval import PairResult, _print

    monkeypatch.setenv("COLUMNS", str(columns))
    seat = {"wins": 123, "draws": 0, "losses": 456}
    results = [PairResult("main_policy_v12", "holdem_rules", 1234, 0, 2345, [seat, seat, seat], -1.234)]
    info = {"checkpoint": "ckpt", "iteration": 3, "env_steps": 10, "env": "texas_holdem", "seats": ["player_0", "player_1", "player_2"]}
    _print(results, {"main_policy_v12": 1200.0}, info, explore=False)
    out = capsys.readouterr().out
    assert "…" not in out and max(len(line) for line in out.splitlines()[1:]) <= columns
    for value in ("main_policy_v12", "holdem_rules", "3579", "0.345", "-1.234", "123/0/456", "player_2"):
        assert value in out
    assert out.count("main_policy_v12") == (3 if columns == 80 else 2)  # two tables and the ratings, or one
