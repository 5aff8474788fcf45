"""The combination matrix: every algorithm under every league recipe, as ``league-train`` runs them.

The parts are unit-tested elsewhere; the defects found so far lived where they meet (a
snapshot retired while episodes still played it, a DQN iteration that was one gradient
step, exact evaluation that only knew actor-critic models). Each run here is a short
``league-train``-equivalent run on in-process samplers with intervals small enough that
snapshots are taken, evicted (where the recipe evicts) and evaluated, a checkpoint is
written, and the run is resumed from it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from league.checkpoint import periodic_name
from league.config import parse_run_config
from league.trainer import Trainer
from tests.run_helpers import composed_values

ALGOS: dict[str, dict[str, Any]] = {
    "ppo": {"train_batch_size": 64, "minibatch_size": 32, "num_epochs": 1},
    "a2c": {"train_batch_size": 64},
    "impala": {"train_batch_size": 64},
    "appo": {"train_batch_size": 64, "minibatch_size": 32},
    "dqn": {"train_batch_size": 16, "learning_starts": 32, "training_intensity": 2.0, "buffer_size": 2000,
            "target_update_interval": 50, "epsilon_steps": 500},
}  # fmt: skip
RECIPES = ("selfplay", "fsp", "pfsp", "psro", "alphastar")
ITERATIONS = 6


def _values(algo: str, recipe: str, env: str = "tictactoe", **extra: Any) -> dict[str, Any]:
    league: dict[str, Any] = {"recipe": recipe, "snapshot_steps": 40, "fixed_opponents": {}}  # a selfplay setting
    if recipe == "selfplay":
        league.update(max_snapshots=2, fixed_opponents={"random": 0.2})
    elif recipe == "alphastar":
        league.update(num_main_exploiters=1)
    values: dict[str, Any] = {
        "env": {"name": env},
        "algo": {"name": algo, "params": dict(ALGOS[algo])},
        "league": league,
        "sampler": {"num_samplers": 1, "num_envs": 4, "fragment_length": 16, "mode": "bulk_sync", "remote": False},
        "iteration": {"min_env_steps": 64},
        "eval": {"interval": 2, "episodes": 4},
        "stop": {"iterations": ITERATIONS, "time_s": 0, "env_steps": 0},
        "checkpoint": {"interval": 3, "keep_last": 2},
        "logging": {"tensorboard": False},
        "verbose": False,
    }
    for key, value in extra.items():
        values[key] = {**values[key], **value} if isinstance(value, dict) and isinstance(values.get(key), dict) else value
    return values


def _run(values: dict[str, Any], run_dir: Path) -> tuple[Trainer, dict[str, Any]]:
    trainer = Trainer(parse_run_config(values), run_dir)
    try:
        summary = trainer.train()
    finally:
        trainer.close()
    return trainer, summary


def _rows(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def _check_final_exploitability(trainer: Trainer, env: str) -> None:
    """The last row's exploitability of each learning player is its final weights' in the full
    game, as OpenSpiel's own best response computes it (shown the training env's observations)."""
    import pyspiel

    from league.envs import make_env
    from poker_helpers import league_table, openspiel_exploitability

    last = trainer.history[-1]["exploitability"]
    game, observe = pyspiel.load_game(env), make_env(env).observe
    weights = trainer.learner.get_weights(list(trainer.learning))
    for pid in trainer.learning:
        expected = openspiel_exploitability(game, league_table(game, trainer.algorithms[pid], weights[pid], observe))
        assert last[pid] == pytest.approx(expected, abs=1e-9), pid


def _check_run(trainer: Trainer, summary: dict[str, Any], run_dir: Path, recipe: str) -> None:
    rows = _rows(run_dir)
    assert summary["iterations"] == ITERATIONS and len(rows) == ITERATIONS
    # One clock: every iteration sampled at least iteration.min_env_steps, whatever the algorithm.
    steps = [0] + [r["env_steps"] for r in rows]
    assert all(b - a >= 64 for a, b in zip(steps, steps[1:])), steps
    assert summary["snapshots"], "no snapshot taken"
    assert summary["win_rates_vs_random"], "no evaluation"
    evaluated = [r["eval_env_steps"] for r in rows]  # finished evaluation games' env steps, counted
    assert evaluated == sorted(evaluated) and evaluated[-1] >= 4 * 5, evaluated  # a round: 4 games of 5+ moves
    assert all(r["episodes"] >= 0 and "counters" in r for r in rows)
    assert all(0.0 <= r["plan_idle_s"] <= r["time_s"] for r in rows)  # the plan's sleeps, within its wall time
    if recipe == "selfplay":
        assert rows[-1]["snapshots_evicted"] >= 1
        assert len(trainer.pool.snapshots) == 2
    assert (run_dir / "checkpoints" / periodic_name(3)).is_dir()


@pytest.mark.parametrize("recipe", RECIPES)
@pytest.mark.parametrize("algo", list(ALGOS))
def test_every_algorithm_under_every_recipe_trains_snapshots_evaluates_and_resumes(algo, recipe, tmp_path):
    values = _values(algo, recipe)
    trainer, summary = _run(values, tmp_path / "run")
    _check_run(trainer, summary, tmp_path / "run", recipe)
    resumed, again = _run(
        {**values, "resume": str(tmp_path / "run"), "stop": {"iterations": ITERATIONS + 1, "time_s": 0, "env_steps": 0}},
        tmp_path / "resumed",
    )
    assert again["start_iteration"] == ITERATIONS and again["iterations"] == ITERATIONS + 1
    assert set(again["snapshots"]) >= set(summary["snapshots"]) - {s for s in summary["snapshots"] if recipe == "selfplay"}


@pytest.mark.parametrize("recipe", ["psro", "selfplay"])
@pytest.mark.parametrize("algo", ["ppo", "dqn"])
def test_leduc_on_the_cpp_backend_trains_snapshots_and_logs_exact_exploitability(algo, recipe, tmp_path, monkeypatch):
    """env=leduc_poker samples the C++ game (backend auto) while OpenSpiel scores it exactly."""
    from league.envs.boards import BoardBatchedEnv

    built: list[str] = []
    original = BoardBatchedEnv.__init__

    def recording(self, name, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003
        built.append(name)
        original(self, name, *args, **kwargs)

    monkeypatch.setattr(BoardBatchedEnv, "__init__", recording)
    # PSRO as configs/env/leduc_poker.yaml runs it: the least exploitable mixture logged.
    meta = {"meta_strategy": "least_exploitable"} if recipe == "psro" else {}
    values = _values(algo, recipe, env="leduc_poker", league={"exploitability_interval": 2, **meta})
    trainer, summary = _run(values, tmp_path / "run")
    assert built and set(built) == {"leduc_poker"}
    rows = _rows(tmp_path / "run")
    logged = [v for r in rows for k, v in r.items() if k.startswith("exploitability")]
    assert logged and summary["snapshots"]
    _check_final_exploitability(trainer, "leduc_poker")
    if recipe == "psro":
        metas = [row["meta_strategy"] for row in logged if isinstance(row, dict) and "meta_strategy" in row]
        assert metas and all(b <= a + 1e-9 for a, b in zip(metas, metas[1:]))  # never rises as snapshots join


@pytest.mark.parametrize("algo", ["ppo", "dqn"])
def test_rps_logs_its_plugins_exact_exploitability_as_the_headline(algo, tmp_path):
    """Outside OpenSpiel, through the seam a game plug-in registers (league.games.rps)."""
    from league.envs import make_env
    from league.games.rps import RepeatedRpsExploitability

    values = _values(algo, "selfplay", env="rps", league={"exploitability_interval": 2},
                     eval={"interval": 2, "episodes": 4, "metric": "exploitability/main", "metric_mode": "min"})  # fmt: skip
    trainer, summary = _run(values, tmp_path / "run")
    _check_run(trainer, summary, tmp_path / "run", "selfplay")
    measured = [r["exploitability"]["main"] for r in _rows(tmp_path / "run") if "exploitability" in r]
    assert len(measured) == ITERATIONS // 2 and all(0.0 <= e <= 15.0 for e in measured)
    final = RepeatedRpsExploitability(make_env("rps")).exploitability(trainer.algorithms["main"], trainer.learner.get_weights(["main"])["main"])
    assert measured[-1] == pytest.approx(final, abs=1e-9)
    headline = trainer.history[-1]["headline"]
    assert (headline["metric"], headline["mode"], headline["value"]) == ("exploitability/main", "min", pytest.approx(final))
    assert headline["best"] == pytest.approx(min(measured))


@pytest.mark.parametrize("algo", ["ppo", "dqn"])
def test_leduc_holdem_logs_its_plugins_exact_exploitability_as_the_headline(algo, tmp_path):
    """PettingZoo's Leduc Hold'em as configs/env/leduc_holdem.yaml runs it (its preset's
    headline), scored from RLCard's tree by the poker plug-in (league.games.poker.leduc_holdem)."""
    from league.envs import make_env
    from league.games.poker.leduc_holdem import LeducHoldemExploitability

    values = _values(algo, "selfplay", env="leduc_holdem", league={"exploitability_interval": 2},
                     eval={"interval": 2, "episodes": 4, "metric": "exploitability/main", "metric_mode": "min"})  # fmt: skip
    trainer, summary = _run(values, tmp_path / "run")
    _check_run(trainer, summary, tmp_path / "run", "selfplay")
    measured = [r["exploitability"]["main"] for r in _rows(tmp_path / "run") if "exploitability" in r]
    assert len(measured) == ITERATIONS // 2 and all(0.0 < e < 7.0 for e in measured)
    final = LeducHoldemExploitability(make_env("leduc_holdem")).exploitability(
        trainer.algorithms["main"], trainer.learner.get_weights(["main"])["main"])
    assert measured[-1] == pytest.approx(final, abs=1e-9) and trainer.history[-1]["headline"]["value"] == pytest.approx(final)


@pytest.mark.parametrize(("recipe", "meta_strategy"), [("psro", "nash"), ("psro", "least_exploitable"), ("alphastar", "least_exploitable")])
@pytest.mark.parametrize("algo", ["ppo", "dqn"])
def test_kuhn_poker_logs_exact_exploitability(algo, recipe, meta_strategy, tmp_path):
    values = _values(algo, recipe, env="kuhn_poker", league={"exploitability_interval": 2, "meta_strategy": meta_strategy})
    trainer, summary = _run(values, tmp_path / "run")
    rows = _rows(tmp_path / "run")
    measured = [r for r in rows if any(k.startswith("exploitability") for k in r)]
    assert measured, "no exploitability logged"
    _check_final_exploitability(trainer, "kuhn_poker")
    metas = [r["exploitability"]["meta_strategy"] for r in measured if "meta_strategy" in r.get("exploitability", {})]
    assert metas
    if meta_strategy == "least_exploitable":
        assert all(b <= a + 1e-9 for a, b in zip(metas, metas[1:]))
    # The summary names the mixture: a weight per frozen player, summing to 1.
    weights = summary["meta_strategy"]
    assert set(summary["snapshots"]) <= set(weights) and sum(weights.values()) == pytest.approx(1.0)
    assert summary["snapshots"]


def test_ppo_vs_dqn_with_the_selfplay_league_file(tmp_path):
    values = _values("ppo", "selfplay", league={"fixed_opponents": {}})
    values["policies"] = {"ppo_0": {"algo": "ppo", "params": ALGOS["ppo"]}, "dqn_0": {"algo": "dqn", "params": ALGOS["dqn"]}}
    trainer, summary = _run(values, tmp_path / "run")
    assert set(summary["win_rates_vs_random"]) == {"ppo_0", "dqn_0"}
    counters = _rows(tmp_path / "run")[-1]["counters"]
    # Throttled broadcasts: at most one per policy per rollout fragment sampled, however
    # many DQN gradient steps were taken.
    fragments = counters["num_env_steps_sampled"] // 64
    assert counters["num_weight_broadcasts"] <= 2 * fragments + 2
    assert sum(trainer.payoff.counts("ppo_0", "dqn_0")) > 0


@pytest.mark.parametrize("recipe", ["fsp", "pfsp", "psro", "alphastar"])
def test_several_main_agents_per_recipe(recipe, tmp_path):
    values = _values("ppo", recipe, league={"num_main_agents": 2})
    trainer, summary = _run(values, tmp_path / "run")
    assert len(trainer.learning) >= 2
    assert {pid.split("@")[0] for pid in summary["snapshots"]} >= set(trainer.learning[:2])


@pytest.mark.parametrize("algo", list(ALGOS))
def test_every_algorithm_learns_in_bf16(algo, tmp_path):
    # learner.precision=bf16 (updates under torch.autocast) on the connect-four conv: every
    # algorithm's update, snapshots, evaluation and checkpoints, with finite losses throughout.
    values = _values(algo, "selfplay", env="connect_four", learner={"precision": "bf16"})
    values["algo"]["params"].update(model="conv")
    trainer, summary = _run(values, tmp_path / "run")
    _check_run(trainer, summary, tmp_path / "run", "selfplay")
    assert trainer.learner.precision == "bf16"
    losses = [v for row in _rows(tmp_path / "run") for k, v in row.items() if k.endswith("loss")]
    assert losses and all(math.isfinite(v) for v in losses)


@pytest.mark.parametrize("learner", ["in_process", pytest.param("actor", marks=pytest.mark.ray)])
def test_dqn_takes_several_gradient_steps_per_learner_call(learner, tmp_path, request):
    # With the learner a Ray actor (learner=gpu), one-step calls paid a round trip per
    # gradient step; steps_per_call batches them. Counters stay in gradient steps, and the
    # target refresh still lands every target_update_interval steps.
    extra: dict[str, Any] = {}
    if learner == "actor":
        request.getfixturevalue("ray_session")
        extra["learner"] = {"num_learners": 2, "num_cpus_per_learner": 0}  # a learner group: Ray actors
    values = _values("dqn", "selfplay", **extra)
    values["algo"]["params"].update(steps_per_call=4, target_update_interval=8)
    trainer, summary = _run(values, tmp_path / "run")
    _check_run(trainer, summary, tmp_path / "run", "selfplay")
    assert (type(trainer.learner).__name__ == "LearnerGroup") == (learner == "actor")
    counters = _rows(tmp_path / "run")[-1]["counters"]
    steps = counters["num_learner_updates/main"]
    assert steps > 0 and steps % 4 == 0
    assert counters["num_train_steps[main]"] == steps
    assert counters["num_target_updates"] == steps // 8
    # Rows replayed per row stored stays the configured ratio (within one call's draw).
    assert counters["num_agent_steps_trained"] <= 2.0 * counters["num_agent_steps_sampled/main"] + 4 * 16


@pytest.mark.parametrize(
    ("algo", "recipe"),
    # Every algorithm under selfplay and psro; the default job's PPO (with its distilled search) under every recipe.
    [(algo, recipe) for algo in ALGOS for recipe in ("selfplay", "psro")] + [("ppo", r) for r in RECIPES if r not in ("selfplay", "psro")],
)
def test_the_default_jobs_mirrored_conv_under_every_algorithm(algo, recipe, tmp_path):
    # The connect_four preset's model (the 4x4 conv averaged with its left-right mirror, reading
    # the threat planes) under every algorithm: every network, snapshot, evaluation and
    # checkpoint must carry the wrappers.
    from league.checkpoint import read_checkpoint
    from tests.run_helpers import composed_values

    board = composed_values("env=connect_four")["algo"]["params"]
    model = {key: board[key] for key in ("model", "model_kwargs")}
    assert model["model_kwargs"] == {"symmetry": "flip_lr", "input_features": "connect_four_threats"}
    values = _values(algo, recipe, env="connect_four")
    values["algo"]["params"].update(model)
    if algo == "ppo":  # the preset's PPO distils the four-ply search as well
        assert (board["aux_loss"], board["aux_loss_kwargs"]) == ("connect_four_search", {"depth": 4})
        values["algo"]["params"].update({k: board[k] for k in ("aux_loss", "aux_loss_coef", "aux_loss_kwargs")})
    if recipe == "selfplay":  # the preset's league shares
        league = composed_values("env=connect_four")["league"]
        assert (league["self_play_prob"], league["fixed_opponents"]) == (0.5, {"random": 0.05})
        values["league"].update(self_play_prob=league["self_play_prob"], fixed_opponents=league["fixed_opponents"])
    trainer, summary = _run(values, tmp_path / "run")
    _check_run(trainer, summary, tmp_path / "run", recipe)
    ckpt = read_checkpoint(tmp_path / "run" / "checkpoints" / periodic_name(3))
    weights = ckpt.policies[ckpt.league["learning"][0]]
    assert any(".base." in f".{key}" and "convs" in key for key in weights), sorted(weights)[:5]
    if algo == "ppo":
        losses = [v for row in _rows(tmp_path / "run") for k, v in row.items() if k.endswith("/aux_loss")]
        # Exactly 0 without the search; short games of a fresh policy hold wins and blunders to see.
        assert losses and all(math.isfinite(v) and v >= 0 for v in losses) and max(losses) > 0, losses


@pytest.mark.parametrize(("algo", "recipe"), [("ppo", r) for r in RECIPES] + [("dqn", "selfplay"), ("dqn", "psro")])
def test_matchups_drawn_in_blocks_under_every_recipe(algo, recipe, tmp_path):
    # sampler.matchup_draws: every num_envs episodes play k matchups drawn from the league's
    # source (selfplay's opponent sampling, a coordinator's matchup batches), also after the
    # league replaces the source and while snapshots are taken and evicted.
    from league.sampling.matchups import BlockedMatchups

    values = _values(algo, recipe, sampler={"matchup_draws": 1})
    trainer, summary = _run(values, tmp_path / "run")
    _check_run(trainer, summary, tmp_path / "run", recipe)
    assert all(isinstance(s._runner.matchups, BlockedMatchups) for s in trainer.samplers)


def test_liars_dice_preset_runs_psro_whose_headline_never_rises_as_snapshots_join(tmp_path):
    """``env=liars_dice`` as league-train composes it (the poker plug-in's PSRO preset), small:
    the headline is the least exploitable meta-strategy's exact exploitability, logged as
    snapshots join and never rising (each new player can only lower the least exploitable mix)."""
    values = composed_values(
        "env=liars_dice", "league.snapshot_steps=150", "league.exploitability_interval=2",
        "algo.params.train_batch_size=64", "algo.params.minibatch_size=32", "algo.params.num_epochs=1",
        "sampler.num_samplers=1", "sampler.num_envs=4", "sampler.fragment_length=16", "sampler.remote=false",
        "iteration.min_env_steps=64", f"stop.iterations={ITERATIONS}", "stop.time_s=0", "logging.tensorboard=false",
    )  # fmt: skip
    trainer, summary = _run(values, tmp_path / "run")
    assert (trainer.cfg.preset, trainer.cfg.league.recipe) == ("liars_dice", "psro")
    metas = [r["exploitability"]["meta_strategy"] for r in _rows(tmp_path / "run") if "meta_strategy" in r.get("exploitability", {})]
    assert len(metas) >= 2 and all(0.0 <= e <= 2.0 for e in metas)
    assert all(b <= a + 1e-9 for a, b in zip(metas, metas[1:]))
    headline = trainer.history[-1]["headline"]
    assert (headline["metric"], headline["mode"], headline["value"]) == ("exploitability/meta_strategy", "min", pytest.approx(metas[-1]))
    assert len(summary["snapshots"]) >= 2
