"""Stops that hold (issue 38): ``stop.time_s`` counts the run's setup and bounds an evaluation in
flight (its partial result recorded as such); a run with no stop criterion is refused; a short run
that finishes no training episode says so; an env-step bound asks for episodes it can finish; and
``resume=<run dir>`` continues with the checkpoint's own config unless the command line overrides it."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from league.cli.train import run_job
from league.config import parse_run_config
from league.envs import register_env
from league.envs.gym_env import GymnasiumEnv
from league.run import evaluation, state
from league.run.evaluation import EpisodeFeed
from league.trainer import Trainer
from run_helpers import composed_values, short_run_values


class SlowLong(gym.Env):
    """Slow to build (``build_s`` seconds, as Atari or pistonball copies are) and to step, with
    episodes of ``length`` steps, each rewarded 1, and observations of ``obs_size`` values."""

    action_space = spaces.Discrete(2)

    def __init__(self, length: int = 100, build_s: float = 0.0, step_s: float = 0.0, obs_size: int = 1) -> None:
        time.sleep(build_s)
        self.length, self.step_s, self.t = length, step_s, 0
        self.observation_space = spaces.Box(0.0, 1.0, (obs_size,), np.float32)

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(self.observation_space.shape, np.float32), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        time.sleep(self.step_s)
        self.t += 1
        return np.full(self.observation_space.shape, min(self.t / self.length, 1.0), np.float32), 1.0, self.t >= self.length, False, {}


register_env("slow_long", lambda **kw: GymnasiumEnv(SlowLong(**kw), name="slow_long"), overwrite=True)


def test_a_run_with_no_stop_criterion_is_refused_before_anything_starts(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        run_job(composed_values("stop.time_s=0", "env=tictactoe"), str(tmp_path / "run"))
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and not (tmp_path / "run").exists()
    assert "no stop criterion" in err and "stop.time_s, stop.env_steps, stop.iterations" in err and "stop.metric" in err
    # The Python API's budget may come with train(); without one it is refused before setup.
    trainer = Trainer("tictactoe")
    with pytest.raises(ValueError, match="no stop criterion"):
        trainer.train()
    with pytest.raises(ValueError, match="sets no budget"):
        trainer.train(time_s=0)
    assert trainer._run is None, "nothing was built"


def test_the_time_budget_counts_the_setup_and_bounds_an_evaluation_in_flight(tmp_path):
    # Each env copy takes 0.2 s to build (the setup builds about 12: some 2.5 s; 4 evaluation copies
    # 0.8 s more inside the round) and 1 ms a step; episodes never end within the budget.
    env = {"name": "slow_long", "kwargs": {"length": 100_000, "build_s": 0.2, "step_s": 0.001}}
    values = short_run_values(env, eval={"interval": 1, "episodes": 8, "env_steps": 0}, stop={"iterations": 0, "time_s": 5.0})
    trainer = Trainer(parse_run_config(values), tmp_path / "run")
    t0 = time.perf_counter()
    with pytest.warns(UserWarning, match=r"no training episode finished in this run \(\d+ s\)"):
        summary = trainer.train()
    wall = time.perf_counter() - t0
    trainer.close()
    assert wall <= 5.0 + 1.0, f"train(stop.time_s=5) took {wall:.1f} s"
    assert summary["iterations"] >= 1
    # The round started after the first iteration had the rest of the budget and ran out of it.
    assert summary["eval_partial"] == {"asked": 8, "played": {"main": {"random": 0}}}
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert rows[-1]["eval_partial"] == summary["eval_partial"]


def test_no_round_starts_that_the_time_left_has_no_room_for(tmp_path, monkeypatch):
    # A first round needs FIRST_ROUND_SHARE of the budget left (a round's time limit bounds its
    # steps, not the building of its env copies); at 0.99 no round fits after the setup.
    monkeypatch.setattr(state, "FIRST_ROUND_SHARE", 0.99)
    env = {"name": "slow_long", "kwargs": {"length": 100_000, "build_s": 0.05, "step_s": 0.001}}
    values = short_run_values(env, eval={"interval": 1, "episodes": 8, "env_steps": 0}, stop={"iterations": 0, "time_s": 3.0})
    trainer = Trainer(parse_run_config(values), tmp_path / "run")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        summary = trainer.train()
    trainer.close()
    assert summary["iterations"] >= 1 and summary["wall_time_s"] <= 3.0 + 0.5
    assert trainer.run.evaluation.round_s is None and summary["eval_partial"] == {}, "no round was started"


def test_evaluation_games_keep_to_a_tenth_of_the_stepping_under_a_time_budget(tmp_path):
    """A round eval.interval makes due waits while the evaluation games played are past
    EVAL_STEP_SHARE of all env steps (time-budgeted runs; without a budget eval.interval alone)."""
    assert state.evaluation_has_room(0, 0, 10.0)  # the first round
    assert state.evaluation_has_room(100, 900, 10.0) and not state.evaluation_has_room(101, 899, 10.0)
    assert state.evaluation_has_room(10**6, 1, 0.0)
    # Rounds of 50 games a policy every 128-step iteration would step several times the training.
    values = short_run_values({"name": "tictactoe"}, eval={"interval": 1, "episodes": 50}, stop={"iterations": 0, "time_s": 6.0})
    trainer = Trainer(parse_run_config(values), tmp_path / "run")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.train()
    trainer.close()
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    played = [r["eval_env_steps"] for r in rows]
    one_round = max(b - a for a, b in zip([0, *played], played))
    assert one_round > 0 and len(rows) > 10
    assert played[-1] <= state.EVAL_STEP_SHARE * (rows[-1]["env_steps"] + played[-1]) + one_round


def test_a_budget_spent_by_the_setup_is_named(tmp_path):
    env = {"name": "slow_long", "kwargs": {"length": 100, "build_s": 0.6}}
    values = short_run_values(env, sampler={"num_envs": 2}, stop={"iterations": 0, "time_s": 1.0})
    trainer = Trainer(parse_run_config(values), tmp_path / "run")
    with pytest.warns(UserWarning, match=r"stop.time_s=1 was spent before the first iteration"):
        summary = trainer.train()
    trainer.close()
    assert summary["iterations"] == 0


class _Quiet:
    """A sampler whose training episodes never end, and a league that records them."""

    def pop_episode_stats(self) -> list[dict[str, Any]]:
        return []

    def record(self, episodes: list[dict[str, Any]]) -> None:
        pass


def test_the_quiet_warning_fires_by_time_too(monkeypatch):
    monkeypatch.setattr(evaluation, "QUIET_SECONDS_WARNING", 0.0)
    feed, quiet = EpisodeFeed(), _Quiet()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        feed.next([quiet], quiet)  # nothing asked yet: nothing to judge
    with pytest.warns(UserWarning, match=r"no training episode finished in the first 0 s"):
        feed.next([quiet], quiet)  # one iteration, fewer than QUIET_ITERATIONS_WARNING
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        feed.next([quiet], quiet)  # said once per quiet spell


def test_an_env_step_bound_asks_for_episodes_it_can_finish(tmp_path):
    # 8 copies of 100-step episodes, a 450-step bound: all 8 copies would stop at 56 steps each
    # with nothing finished; at the training episodes' length the round asks for 2, on 2 copies.
    env = {"name": "slow_long", "kwargs": {"length": 100}}
    values = short_run_values(
        env, sampler={"num_envs": 8, "fragment_length": 128}, iteration={"min_env_steps": 1024},
        eval={"interval": 2, "episodes": 8, "env_steps": 450}, stop={"iterations": 2},
    )  # fmt: skip
    summary = run_job(values, str(tmp_path / "run"))
    assert summary["eval_return_mean"] == {"main": 100.0}
    assert summary["eval_partial"] == {}, "the 2 episodes asked for were played"


TINY = ["env=tictactoe", "sampler.remote=false", "sampler.num_samplers=1", "sampler.num_envs=4", "sampler.fragment_length=16",
        "iteration.min_env_steps=64", "algo.params.train_batch_size=64", "algo.params.minibatch_size=32", "algo.params.num_epochs=1",
        "eval.interval=1", "eval.episodes=4", "logging.tensorboard=false", "logging.progress=false", "verbose=false"]  # fmt: skip


def test_resume_takes_the_checkpoints_own_config_unless_overridden(tmp_path):
    first = tmp_path / "first"
    run_job(composed_values(*TINY, "stop.iterations=2", "stop.time_s=0"), str(first))
    alone = composed_values(f"resume={first}")  # the default config is connect four's
    assert alone["env"]["name"] == "tictactoe" and alone["sampler"]["num_envs"] == 4 and alone["stop"]["iterations"] == 2
    assert alone["resume"] == str(first)
    more = composed_values(f"resume={first}", "stop.iterations=3", "eval.episodes=6")
    assert (more["stop"]["iterations"], more["eval"]["episodes"], more["env"]["name"]) == (3, 6, "tictactoe")
    summary = run_job(more, str(tmp_path / "second"))
    assert (summary["start_iteration"], summary["iterations"]) == (2, 3)
    # An overridden env is checked against the checkpoint as before.
    with pytest.raises(SystemExit):
        run_job(composed_values(f"resume={first}", "env=connect_four"), str(tmp_path / "third"))


def test_league_train_refuses_a_resume_with_no_checkpoint(tmp_path):
    out = subprocess.run([sys.executable, "-m", "league.cli.train", f"resume={tmp_path / 'nope'}", f"hydra.run.dir={tmp_path / 'run'}"],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 2 and "league-train: cannot resume" in out.stderr and "no such checkpoint" in out.stderr


def test_league_train_ends_by_stop_time_s_counted_from_its_process_start(tmp_path):
    # The first job's budget counts from the process start: imports and the config check (seconds
    # on a busy machine) are in it, so the process exits within about a second of stop.time_s.
    # 12 s: at 6 s a loaded CI machine spent the whole budget on the setup (no iteration ran).
    budget = 12.0
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "league.cli.train", *TINY, f"stop.time_s={budget}", f"hydra.run.dir={tmp_path / 'run'}"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    wall = time.perf_counter() - t0
    assert out.returncode == 0, out.stderr[-2000:]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["iterations"] >= 1 and summary["wall_time_s"] <= budget + 1.0
    assert wall <= budget + 2.5, f"league-train stop.time_s={budget} ran {wall:.1f} s"


def test_fragments_of_a_slow_env_are_sized_to_the_time_budget():
    # 10 ms a step: 4 copies x 64 steps would be 2.6 s of one sample() call (5 s with the cores
    # shared), past max(2 s, a twentieth of stop.time_s=20); a run ends only between fragments.
    env = {"name": "slow_long", "kwargs": {"length": 1000, "step_s": 0.01}}
    with pytest.warns(UserWarning, match=r"sampler.num_envs x fragment_length 4 x 64 -> 4 x \d+: env 'slow_long' takes about"):
        cfg = parse_run_config(short_run_values(env, sampler={"fragment_length": 64}, stop={"iterations": 0, "time_s": 20.0}))
    assert 1 <= cfg.sampler.fragment_length <= 25 and cfg.sampler.num_envs == 4
    untimed = parse_run_config(short_run_values(env, sampler={"fragment_length": 64}, stop={"iterations": 2, "time_s": 0}))
    assert untimed.sampler.fragment_length == 64, "no time budget: nothing to fit"


def test_a_long_budget_bounds_fragments_and_batches_in_seconds_not_in_a_share():
    """At stop.time_s=1800 a twentieth is 90 s: pistonball's fragments and PPO batches took that
    and the run ended 32 s past its budget. The bound is at most MAX_FRAGMENT_S, at any budget."""
    from league.run.env_checks import MAX_FRAGMENT_S, fragment_bound_s

    assert fragment_bound_s(60) == 3.0 and fragment_bound_s(1800) == fragment_bound_s(36_000) == MAX_FRAGMENT_S <= 25
    env = {"name": "slow_long", "kwargs": {"length": 1000, "step_s": 0.01}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cfg = parse_run_config(short_run_values(env, sampler={"num_envs": 32, "fragment_length": 1000}, stop={"iterations": 0, "time_s": 3600.0}))
    step_s = 2 * 0.01  # the probe's step time, the cores shared
    assert cfg.sampler.num_envs * cfg.sampler.fragment_length * step_s <= MAX_FRAGMENT_S * 1.3  # the probe's noise


register_env(
    "slow_capped", lambda **kw: GymnasiumEnv(SlowLong(**kw), name="slow_capped", max_episode_steps=kw.get("length", 100)), overwrite=True
)


def test_a_slow_env_with_long_episodes_gets_fewer_copies_shorter_iterations_and_bounded_rounds():
    # 10 ms a step (20 ms with the cores shared), 200-step episodes, stop.time_s=60: 32 copies
    # would end their first episodes after 32 x 200 steps (over two minutes); at most 3 copies
    # end them in a fifth of the budget. Five 4000-step iterations before the first evaluation
    # would take 400 s: an iteration shrinks to what fits in a tenth of it, and a round's
    # env steps to what fits in a twentieth of it (at least one whole episode).
    env = {"name": "slow_capped", "kwargs": {"length": 200, "step_s": 0.01}}
    values = short_run_values(
        env, sampler={"num_envs": 32, "fragment_length": 8}, iteration={"min_env_steps": 4000},
        eval={"interval": 5, "env_steps": 20_000}, stop={"iterations": 0, "time_s": 60.0},
    )  # fmt: skip
    with pytest.warns(UserWarning, match=r"sampler.num_envs 32 -> [123] \(an episode lasts up to 200 steps\); "
                                         r"iteration.min_env_steps 4000 -> \d+ \(eval.interval=5\); (eval.interval 5 -> \d; )?"
                                         r"eval.env_steps 20000 -> \d+"):
        cfg = parse_run_config(values)
    assert 1 <= cfg.sampler.num_envs <= 3
    assert cfg.iteration.min_env_steps <= max(0.1 * 60 / 0.02 / 5, cfg.sampler.num_envs * cfg.sampler.fragment_length)
    assert cfg.iteration.min_env_steps % (cfg.sampler.num_envs * cfg.sampler.fragment_length) == 0, "whole rounds of fragments"
    assert 200 <= cfg.eval.env_steps <= max(200, 0.05 * 60 / 0.02)
    # The shortest iteration is a training step's batch (128 rows here, a row a step): 5 of them
    # are past a tenth of the budget, so evaluations come every iteration or two.
    assert cfg.eval.interval <= 2
    # Without a time budget, or with an unknown episode length, nothing is sized by episodes.
    untimed = parse_run_config(short_run_values(env, sampler={"num_envs": 32}, stop={"iterations": 2, "time_s": 0}))
    assert untimed.sampler.num_envs == 32
    uncapped = {"name": "slow_long", "kwargs": {"length": 200, "step_s": 0.01}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cfg = parse_run_config(short_run_values(uncapped, sampler={"num_envs": 32, "fragment_length": 1}, stop={"time_s": 60.0}))
    assert cfg.sampler.num_envs == 32


def test_a_slow_env_samples_while_the_learner_updates_unless_a_mode_was_chosen():
    # 5 ms a step (the probe's) and 4096 observation values: remote samplers keep sampling
    # through PPO's update, which then trains on rows up to one update old; a chosen mode,
    # in-process samplers, small observations, per-policy algorithms are left alone.
    env = {"name": "slow_long", "kwargs": {"length": 1000, "step_s": 0.005, "obs_size": 4096}}
    remote = {"num_samplers": 1, "num_envs": 4, "fragment_length": 32, "remote": True}
    with pytest.warns(UserWarning, match=r"sampler.mode auto -> async, algo.params.max_policy_lag 0 -> 1: env 'slow_long' takes about"):
        cfg = parse_run_config(short_run_values(env, sampler=remote))
    assert (cfg.sampler.mode, cfg.algo.params["max_policy_lag"]) == ("async", 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        left = [
            parse_run_config(short_run_values(env, sampler={**remote, "mode": "bulk_sync"})),
            parse_run_config(short_run_values(env)),  # in-process samplers
            parse_run_config(short_run_values({**env, "kwargs": {"length": 1000, "step_s": 0.0, "obs_size": 4096}}, sampler=remote)),
            parse_run_config(short_run_values({**env, "kwargs": {"length": 1000, "step_s": 0.005, "obs_size": 147}}, sampler=remote)),
        ]
    assert [(c.sampler.mode, c.algo.params.get("max_policy_lag", 0)) for c in left] == [("bulk_sync", 0), ("auto", 0)] + [("auto", 0)] * 2
    mixed = parse_run_config(short_run_values(env, sampler=remote, policies={"a": {"algo": "ppo"}, "b": {"algo": "ppo"}},
                                              league={"self_play_prob": 0.0}))  # fmt: skip
    assert mixed.sampler.mode == "auto" and all(pc.params.get("max_policy_lag", 0) == 0 for pc in mixed.policies.values())


def test_a_chosen_async_mode_trains_an_on_policy_learner_on_rows_one_update_old():
    # At max_policy_lag 0 the rows sampled during an update would be dropped (45% of pong's):
    # on any env, fast ones included, a chosen async mode makes it 1 and says so; a lag the
    # user set, off-policy learners and in-process samplers (nothing overlaps) are left alone.
    env = {"name": "slow_long", "kwargs": {"length": 100, "step_s": 0.0, "obs_size": 8}}
    remote = {"num_samplers": 1, "num_envs": 4, "fragment_length": 32, "remote": True, "mode": "async"}
    with pytest.warns(UserWarning, match=r"algo.params.max_policy_lag 0 -> 1: with sampler.mode=async the samplers sample while ppo"):
        cfg = parse_run_config(short_run_values(env, sampler=remote))
    assert (cfg.sampler.mode, cfg.algo.params["max_policy_lag"]) == ("async", 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        chosen = parse_run_config(short_run_values(env, sampler=remote, algo={"name": "ppo", "params": {"max_policy_lag": 3}}))
        dqn = parse_run_config(short_run_values(env, sampler=remote, algo={"name": "dqn", "params": {}}))
        local = parse_run_config(short_run_values(env, sampler={**remote, "remote": False}))
    assert chosen.algo.params["max_policy_lag"] == 3 and "max_policy_lag" not in dqn.algo.params
    assert local.algo.params.get("max_policy_lag", 0) == 0


def test_pongs_env_file_samples_while_ppo_updates():
    pytest.importorskip("pettingzoo.atari")
    from tests.run_helpers import composed_values

    with pytest.warns(UserWarning, match="max_policy_lag 0 -> 1"):
        cfg = parse_run_config(composed_values("env=pong"))
    assert (cfg.sampler.mode, cfg.algo.params["max_policy_lag"]) == ("async", 1)
    assert parse_run_config(composed_values("env=pong", "algo=dqn")).sampler.mode == "async"  # an env file's choice, not PPO's


def test_fast_envs_are_not_resized_by_a_time_budget():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any resizing warns
        cfg = parse_run_config(composed_values("env=tictactoe", "stop.time_s=30"))
    untimed = parse_run_config(composed_values("env=tictactoe", "stop.time_s=0", "stop.iterations=1"))
    sizes = lambda c: (c.sampler.num_envs, c.sampler.fragment_length, c.iteration.min_env_steps, c.eval.env_steps)  # noqa: E731
    assert sizes(cfg) == sizes(untimed)


def test_episode_limits_of_the_adapters():
    from league.envs import make_env

    assert make_env("gymnasium:CartPole-v1").episode_limit() == 500
    assert make_env("gymnasium:CartPole-v1", max_episode_steps=50).episode_limit() == 50
    assert make_env("tictactoe").episode_limit() is None, "no declared cap"
    pytest.importorskip("mpe2")
    assert make_env("mpe2.simple_spread_v3", max_cycles=40).episode_limit() == 40
    assert make_env("mpe2.simple_spread_v3", max_cycles=40, max_episode_steps=10).episode_limit() == 10
    pytest.importorskip("pymunk")  # pistonball: a parallel env's cycle is a step, an AEC env's one move per piston
    assert make_env("pettingzoo.butterfly.pistonball_v6", max_cycles=30).episode_limit() == 30
    assert make_env("pettingzoo.butterfly.pistonball_v6", max_cycles=30, api="aec").episode_limit() == 30 * 20


@pytest.mark.slow
def test_shipped_pistonball_finishes_and_evaluates_episodes_in_a_short_run(tmp_path):
    # env=pistonball as shipped (20 pistons, 48x48x2 frames, ~15-30 ms a step, 125-step
    # episodes) on a 60 s budget: the config check sizes copies, iterations and rounds to it, so
    # training episodes end, a round is evaluated, and the process ends within seconds of it.
    pytest.importorskip("supersuit")
    pytest.importorskip("pymunk")
    budget = 60
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "league.cli.train", "env=pistonball", f"stop.time_s={budget}", "logging=quiet",
         f"hydra.run.dir={tmp_path / 'run'}"],
        capture_output=True, text=True, timeout=budget + 180,
    )  # fmt: skip
    wall = time.perf_counter() - t0
    assert out.returncode == 0, out.stderr[-2000:]
    assert "sampler.num_envs 32 -> " in out.stderr, "the copies were sized to the budget"
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert sum(r["episodes"] for r in rows) > 0, "training episodes ended"
    assert summary["headline"]["value"] is not None, "an evaluation round played whole episodes"
    assert wall <= budget + 15, f"league-train stop.time_s={budget} ran {wall:.1f} s"


def test_the_time_budget_is_spent_once_less_than_a_training_step_is_left():
    # A training step waits for a whole batch (seconds on an image env): with 1 s of a 10 s
    # budget left, a 1.5 s step would end 0.5 s late, so the run stops now; a 0.8 s step fits.
    from league.config import StopConfig
    from league.run.budget import Budget
    from league.run.evaluation import EvaluationRounds
    from league.run.records import RunClock

    budget = Budget(StopConfig(env_steps=0, iterations=0, time_s=10.0, win_rate=0.0), start=time.perf_counter() - 9.0)
    clock, rounds = RunClock(), EvaluationRounds("random", 4)
    budget.record_step(0.8)
    assert not budget.reached(clock, rounds) and not budget.past_deadline(budget.step_s)
    budget.record_step(1.5)
    assert budget.reached(clock, rounds) and budget.past_deadline(budget.step_s)


def test_a_short_step_after_a_long_one_does_not_let_the_next_long_one_start_late():
    # Two policies sampled through the update: steps alternate short and long (cooperative pong
    # 6 s and 18 s); the budget keeps the longest of the latest few, so a short step in between
    # does not make the next long one look as if it fitted.
    from league.config import StopConfig
    from league.run.budget import Budget
    from league.run.evaluation import EvaluationRounds
    from league.run.records import RunClock

    budget = Budget(StopConfig(env_steps=0, iterations=0, time_s=10.0, win_rate=0.0), start=time.perf_counter() - 9.0)
    clock, rounds = RunClock(), EvaluationRounds("random", 4)
    budget.record_step(1.5)
    budget.record_step(0.2)
    assert budget.step_s == 1.5 and budget.reached(clock, rounds)
    for _ in range(Budget.RECENT_STEPS):  # a long step forgotten after a few short ones
        budget.record_step(0.2)
    assert budget.step_s == 0.2 and not budget.reached(clock, rounds)


def test_a_remote_samplers_episodes_are_fetched_beside_its_sample_in_flight(ray_session):
    # On pistonball a fragment takes 10-16 s: queued behind one, the end of a run's (and every
    # checkpoint's) fetch of the finished episodes waited as long, 17 s past stop.time_s. A
    # sampler from make_remote_samplers answers on its bookkeeping thread instead.
    from league.algos import make_algorithm
    from league.envs import make_env
    from league.sampling import FixedMatchups, make_remote_samplers

    env = make_env("tictactoe")
    algo = make_algorithm("ppo", env.spec(env.possible_agents[0]), {"model": "mlp"})
    matchups = FixedMatchups({a: "main" for a in env.possible_agents})
    env.close()
    sampler = make_remote_samplers(1, num_cpus=0, env="tictactoe", policies={"main": algo}, matchups=matchups, num_envs=1,
                                   fragment_length=4000, seed=0)[0]  # fmt: skip
    recorded: list[dict[str, Any]] = []

    class League:
        def record(self, episodes: list[dict[str, Any]]) -> None:
            recorded.extend(episodes)

    try:
        first = ray_session.get(sampler.sample.remote())  # tic-tac-toe games end every 5-9 steps
        feed, league = EpisodeFeed(), League()
        in_flight = sampler.sample.remote()
        feed.next([sampler], league)  # asks: the first fragment's episodes, and any of this one's so far
        feed.flush([sampler], league)
        ready, _ = ray_session.wait([in_flight], timeout=0)
        assert not ready, "the flush returned while the fragment was still being sampled"
        assert len(recorded) >= first.env_steps // 9, "the first fragment's episodes were fetched"
        assert ray_session.get(in_flight).env_steps == 4000, "the fragment in flight finished undisturbed"
        assert len(feed.next([sampler], league)) >= 4000 // 9 - 1, "and its episodes come with the next fetch"
    finally:
        ray_session.kill(sampler)
