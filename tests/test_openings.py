"""Exploring starts (env.opening_plies): random openings in training episodes only."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from league import _core
from league.config import parse_run_config
from league.envs import make_env
from league.envs.boards import BoardBatchedEnv
from league.envs.factory import EnvFactory
from league.envs.openings import RandomOpenings
from league.policy import RandomPolicyFactory
from league.sampling import OpponentSampling, Sampler
from tests.run_helpers import composed_values, tiny_run_config


def _pieces(env: BoardBatchedEnv) -> list[int]:
    return [sum(c != 0 for c in env._core.cells(i)) for i in range(env.num_envs)]


@pytest.mark.parametrize(("name", "bound"), [("tictactoe", 4), ("connect_four", 6)])
def test_cpp_openings_cover_zero_to_k_moves_and_never_decide_a_game(name: str, bound: int) -> None:
    env = BoardBatchedEnv(name, 512, seed=3, opening_plies=bound)
    bs = env.reset()
    counts = _pieces(env)
    assert set(counts) == set(range(bound + 1))  # every opening length is drawn
    assert not bs.done.any() and not bs.rewards.any()
    # the player to move follows from the opening's length; masks match the occupied cells
    assert (bs.agent_index == np.array(counts) % 2).all()
    assert (bs.masks.sum(axis=1) <= env.agent_spec.num_actions).all()
    for _ in range(60):  # games restarted after the end open at random too
        bs = env.step(env.random_actions())
    assert len(set(_pieces(env))) > 3
    plain = BoardBatchedEnv(name, 64)
    plain.reset()
    assert set(_pieces(plain)) == {0}


def test_cpp_openings_past_the_bound_are_refused() -> None:
    with pytest.raises(ValueError, match="opening_plies must be in 0..4"):
        BoardBatchedEnv("tictactoe", 4, opening_plies=5)
    with pytest.raises(ValueError, match="opening_plies must be in 0..6 for this game \\(more random moves could decide it"):
        BoardBatchedEnv("connect_four", 4, opening_plies=7)
    with pytest.raises(ValueError, match="opening_plies must be an int"):
        BoardBatchedEnv("connect_four", 4, opening_plies=2.0)
    assert _core.ConnectFourBatch.max_opening_plies == 6


def test_wrapper_opens_pettingzoo_games_and_refuses_simultaneous_moves() -> None:
    env = RandomOpenings(make_env("tictactoe"), 4, seed=0)
    seen = set()
    for episode in range(200):
        ts = env.reset(seed=episode)
        agent = next(iter(ts.obs))
        seen.add(int(ts.obs[agent].sum()))  # pieces on the board
        assert not ts.done and not any(ts.rewards.values())
    assert seen == {0, 1, 2, 3, 4}
    with pytest.raises(ValueError, match="turn-based.*env.opening_plies=0"):
        RandomOpenings(make_env("rps"), 2, seed=0).reset(seed=0)
    with pytest.raises(ValueError, match="opening_plies must be an int >= 0"):
        RandomOpenings(make_env("tictactoe"), -1)


@pytest.mark.parametrize("backend", ["cpp", "pettingzoo"])
def test_training_episodes_open_at_random_and_evaluation_games_do_not(backend: str) -> None:
    sampler = Sampler(
        EnvFactory("tictactoe", backend=backend, opening_plies=4),
        policies={"a": RandomPolicyFactory(), "b": RandomPolicyFactory()},
        matchups=OpponentSampling("a", {"b": 1.0}), num_envs=16, fragment_length=32, seed=1,
    )
    for _ in range(4):
        sampler.sample()
    lengths = [ep["length"] for ep in sampler.pop_episode_stats()]
    # a decided game takes at least 5 moves from the empty board; an opening plays up to 4 of them
    assert min(lengths) < 5
    evaluation = sampler.evaluate(64, OpponentSampling("a", {"b": 1.0}))
    assert min(ep["length"] for ep in evaluation) >= 5
    # Asked for (as a run asks for its yardstick's games), evaluation games open the same way,
    # and the whole games after them still start from the empty board.
    opened = sampler.evaluate(64, OpponentSampling("a", {"b": 1.0}), openings=True)
    assert len(opened) == 64 and min(ep["length"] for ep in opened) < 5
    assert min(ep["length"] for ep in sampler.evaluate(64, OpponentSampling("a", {"b": 1.0}))) >= 5


def test_deterministic_players_replay_one_game_a_seat_unless_evaluation_opens_at_random() -> None:
    from league.population.scripted import scripted_factory

    spec = make_env("connect_four").spec("player_0")
    negamax = {"a": scripted_factory("negamax", spec, depth=1), "b": scripted_factory("negamax", spec, depth=2)}
    sampler = Sampler(EnvFactory("connect_four", backend="cpp", opening_plies=4), policies=negamax,
                      matchups=OpponentSampling("a", {"b": 1.0}), num_envs=8, fragment_length=8, seed=2)
    # A game: its length, each seat's return and who sat where.
    games = {opened: [(ep["length"], tuple(sorted(ep["returns"].items())), tuple(sorted(ep["policies"].items())))
                      for ep in sampler.evaluate(40, OpponentSampling("a", {"b": 1.0}), openings=opened)]
             for opened in (False, True)}  # fmt: skip
    assert len(set(games[False])) <= 2  # one game from each seat, however many are played
    assert len(set(games[True])) > 6


def test_a_runs_yardstick_games_open_at_random_and_its_other_games_do_not() -> None:
    from league.run.evaluation import EvaluationRounds
    from tests.test_eval_explore import _League

    asked: list[bool] = []

    class Recording:
        def evaluate(self, episodes, matchups, openings=False, **_):  # noqa: ANN001, ANN202
            asked.append(openings)
            return []

    league = _League()
    rounds = EvaluationRounds("random", episodes=4, yardstick="negamax")
    rounds.start([Recording()], league)  # type: ignore[list-item, arg-type]
    rounds.collect(league, block=True)  # type: ignore[arg-type]
    assert asked == [False, True, False]  # random, the yardstick, the league's games


def test_config_checks_opening_plies_against_the_env() -> None:
    assert tiny_run_config(env={"name": "tictactoe", "opening_plies": 4}).env.opening_plies == 4
    with pytest.raises(ValueError, match="over tictactoe's bound of 4"):
        tiny_run_config(env={"name": "tictactoe", "opening_plies": 9})
    with pytest.raises(ValueError, match="env.opening_plies must be an int >= 0"):
        tiny_run_config(env={"name": "tictactoe", "opening_plies": -1})
    with pytest.raises(ValueError, match="bound of 6 \\(a longer random opening could decide the game"):
        tiny_run_config(env={"name": "connect_four", "opening_plies": 8})
    # inherited by `env.name=<another env>` from a board game's env file: survived, said, switched off
    for other in ("rps", "cartpole"):
        with pytest.warns(UserWarning, match=f"opening_plies=2 ignored for env '{other}'"):
            assert tiny_run_config(env={"name": other, "opening_plies": 2}).env.opening_plies == 0


def test_env_tictactoe_brings_its_training_settings_and_any_algo_replaces_them() -> None:
    cfg = parse_run_config(composed_values("env=tictactoe"))
    assert cfg.env.opening_plies == 2 and cfg.algo.name == "ppo"
    assert (cfg.algo.params["lr"], cfg.algo.params["entropy_coef"]) == (0.001, 0.05)
    dqn = parse_run_config(composed_values("env=tictactoe", "algo=dqn"))  # no PPO key leaks into DQN's params
    assert dqn.algo.name == "dqn" and "entropy_coef" not in dqn.algo.params
    generic = parse_run_config(composed_values("env=tictactoe", "algo=ppo"))
    assert generic.algo.params["lr"] == 0.0003


def test_the_default_job_brings_connect_fours_training_settings() -> None:
    from league.algos import make_algorithm
    from league.algos.models import ConvModel, InputFeaturesModel
    from league.algos.symmetry import SymmetrizedModel
    from league.envs.base import AgentSpec

    cfg = parse_run_config(composed_values())
    assert cfg.preset == "connect_four"
    assert cfg.env.name == "connect_four" and cfg.env.opening_plies == 4 and cfg.league.snapshot_steps == 300_000
    assert cfg.sampler.matchup_draws == 2  # opponents drawn two per block of episodes (bench_pool.py)
    # half the games against itself, 5% against the random member (the connect_four preset);
    # `league=` on the command line replaces that league, other envs keep the plain one
    assert (cfg.league.recipe, cfg.league.self_play_prob, dict(cfg.league.fixed_opponents)) == ("selfplay", 0.5, {"random": 0.05})
    psro = parse_run_config(composed_values("league=psro")).league
    assert psro.recipe == "psro" and dict(psro.fixed_opponents) != {"random": 0.05}
    ttt = parse_run_config(composed_values("env=tictactoe")).league
    assert (ttt.self_play_prob, dict(ttt.fixed_opponents)) == (0.2, {"random": 0.2})
    assert (cfg.algo.name, cfg.algo.params["lr"], cfg.algo.params["entropy_coef"]) == ("ppo", 0.001, 0.05)
    # model auto: the line-seeing conv on connect four's boards, averaged with its left-right
    # mirror, reading the board's threat planes once per row, and a four-ply exact search distilled
    model = make_algorithm("ppo", AgentSpec((6, 7, 2), 7, True), cfg.algo.params).make_model()
    assert isinstance(model, InputFeaturesModel) and isinstance(model.base, SymmetrizedModel)
    assert isinstance(model.base.base, ConvModel)
    assert (cfg.algo.params["aux_loss"], cfg.algo.params["aux_loss_kwargs"]) == ("connect_four_search", {"depth": 4})


def test_env_name_over_the_default_board_game_file_runs_other_envs() -> None:
    # README: `league-train env.name=gymnasium:Acrobot-v1`: the env's own defaults, nothing of
    # connect four's preset, and nothing said about it
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cfg = parse_run_config(composed_values("env.name=gymnasium:CartPole-v1"))
    assert cfg.env.name == "gymnasium:CartPole-v1" and cfg.env.opening_plies == 0 and cfg.preset == "none"
    assert not [str(w.message) for w in caught if "connect" in str(w.message) or "ignored" in str(w.message)]
    assert cfg.algo.params["model_kwargs"] == {} and cfg.algo.params["aux_loss"] is None
    from league.algos import make_algorithm
    from league.algos.models import MLPModel
    from league.envs import make_env

    spec = make_env("gymnasium:CartPole-v1").spec("agent_0")  # model auto is an MLP here
    assert isinstance(make_algorithm(cfg.algo.name, spec, cfg.algo.params).make_model(), MLPModel)
    experiment = parse_run_config(composed_values("env=tictactoe", "+experiment=cartpole_ppo"))
    assert experiment.env.name == "cartpole" and experiment.env.opening_plies == 0


def test_a_symmetry_set_for_every_env_of_a_sweep_is_dropped_where_it_does_not_fit() -> None:
    with pytest.warns(UserWarning, match=r"symmetry=flip_lr ignored for env 'gymnasium:CartPole-v1'.*\[H, W, C\]"):
        cfg = parse_run_config(composed_values("env.name=gymnasium:CartPole-v1", "+algo.params.model_kwargs.symmetry=flip_lr"))
    assert "symmetry" not in cfg.algo.params["model_kwargs"]
