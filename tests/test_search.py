"""Search at play time (league.search): simulators agree with the envs, MCTS and PUCT take wins
and block losses, and ``league-eval search=N`` / ``opponents=[mcts]`` play through."""

from __future__ import annotations

import json
from dataclasses import asdict

import numpy as np
import pytest

from league.algos import make_algorithm
from league.checkpoint import write_checkpoint
from league.cli.eval import main as eval_main
from league.config import parse_run_config
from league.envs import make_env
from league.learn import Learner
from league.policy import RandomPolicy
from league.population.yardstick import play_matches
from league.search import GumbelPlayer, MCTSPlayer, PUCTPlayer, SIMULATORS, Simulator, simulator_for, uct_visits, puct_visits, policy_evaluator


def _random_games(env, sim: Simulator, games: int, seed: int) -> int:
    """Play ``games`` random games on ``env`` and ``sim`` side by side; every observation, mask,
    reward and ending must agree. Returns the positions compared."""
    rng = np.random.default_rng(seed)
    compared = 0
    first = None
    for game in range(games):
        ts = env.reset(seed=game)
        state = sim.initial_state()
        returns: dict[str, float] = {}
        while True:
            assert not sim.is_terminal(state)
            agent = next(iter(ts.obs))
            first = first or agent
            assert sim.current_player(state) == (0 if agent == first else 1)
            np.testing.assert_array_equal(sim.observation(state), ts.obs[agent])
            np.testing.assert_array_equal(sim.legal_mask(state), ts.masks[agent])
            assert sim.legal_actions(state) == list(np.flatnonzero(ts.masks[agent]))
            compared += 1
            action = int(rng.choice(sim.legal_actions(state)))
            ts = env.step({agent: action})
            sim.apply(state, action)
            for a, r in ts.rewards.items():
                returns[a] = returns.get(a, 0.0) + r
            if ts.done:
                break
        assert sim.is_terminal(state)
        order = [first, next(a for a in env.possible_agents if a != first)]
        np.testing.assert_array_equal(sim.returns(state), [returns.get(a, 0.0) for a in order])
    return compared


@pytest.mark.parametrize("name", ["connect_four", "tictactoe"])
def test_board_simulators_agree_with_the_cpp_envs(name):
    env = make_env(name, backend="cpp")
    try:
        assert _random_games(env, simulator_for(name), 200, seed=1) > 1000
    finally:
        env.close()


# The search's observations are the training env's on every game issue 37 tunes on (the
# batched env is checked against these copies in tests/test_openspiel_batched.py).
@pytest.mark.parametrize("game,kwargs", [
    ("tic_tac_toe", {}), ("hex", {"board_size": 5}), ("pentago", {}), ("clobber", {}), ("othello", {}),
    ("mnk", {"m": 7, "n": 7, "k": 4}),
])
def test_openspiel_simulator_matches_the_env(game, kwargs):
    env = make_env(f"openspiel:{game}", **kwargs)
    try:
        assert _random_games(env, simulator_for(f"openspiel:{game}", kwargs), 20, seed=2) > 100
    finally:
        env.close()


def test_core_names_no_game_and_errors_name_the_key():
    assert {"connect_four", "tictactoe"} <= set(SIMULATORS.names())
    with pytest.raises(ValueError, match="search: env 'rps' has no simulator"):
        simulator_for("rps")
    with pytest.raises(ValueError, match="opponents: cannot search env 'openspiel:kuhn_poker'.*imperfect"):
        simulator_for("openspiel:kuhn_poker", setting="opponents")
    with pytest.raises(ValueError, match="search must be an integer >= 0"):
        PUCTPlayer(RandomPolicy(0), simulator_for("tictactoe"), -1)


def _play(sim: Simulator, moves: list[int]):
    state = sim.initial_state()
    for m in moves:
        sim.apply(state, m)
    return state


# (env, moves so far, the move that wins at once or blocks the only threat)
WIN = [("tictactoe", [0, 3, 1, 4], 2), ("connect_four", [0, 6, 0, 6, 0, 5], 0)]
# tic-tac-toe [4, 0, 8, 2]: X (4, 8) has no line left open, O (0, 2) threatens 1.
BLOCK = [("tictactoe", [4, 0, 8, 2], 1), ("connect_four", [3, 0, 3, 0, 3], 3)]


@pytest.mark.parametrize("env,moves,best", WIN + BLOCK)
def test_uct_takes_wins_and_blocks_losses(env, moves, best):
    sim = simulator_for(env)
    visits = uct_visits(sim, _play(sim, moves), 1500, np.random.default_rng(0))
    assert int(np.argmax(visits)) == best


@pytest.mark.parametrize("env,moves,best", WIN + BLOCK)
def test_puct_with_a_uniform_prior_and_rollouts_takes_wins_and_blocks_losses(env, moves, best):
    sim = simulator_for(env)
    roots = [_play(sim, moves), _play(sim, moves)]
    for visits in puct_visits(sim, roots, policy_evaluator(RandomPolicy(0)), 800, np.random.default_rng(0)):
        assert int(np.argmax(visits)) == best


@pytest.mark.parametrize("player,env,moves,best", [(PUCTPlayer, *case) for case in WIN + BLOCK] + [(GumbelPlayer, *case) for case in WIN + BLOCK[:1]])
def test_search_players_with_a_uniform_prior_take_wins_and_block_losses(player, env, moves, best):
    # Each search player league-eval plays (search_method=puct|gumbel), greedy, over a policy
    # without a value head (random rollouts value its leaves). Not Gumbel's connect-four block:
    # below the root its deterministic rule keeps visiting a reply whose one rollout went well
    # (Q rescaled by the node's min and max), so with rollout values it found the block in 2 of
    # 10 seeds at 400 simulations; it is built for a learned value.
    sim = simulator_for(env)
    position = _play(sim, moves)
    obs, mask = sim.observation(position), sim.legal_mask(position)
    actions = player(RandomPolicy(0), sim, 400, seed=0).act_at([position, position], obs[None].repeat(2, 0), mask[None].repeat(2, 0))
    assert actions.tolist() == [best, best]


def test_puct_batches_one_forward_per_simulation_step():
    sim = simulator_for("connect_four")
    calls = []
    base = policy_evaluator(RandomPolicy(0))

    def counting(obs, masks):
        calls.append(len(obs))
        return base(obs, masks)

    puct_visits(sim, [_play(sim, [3]), _play(sim, [2, 4]), _play(sim, [])], counting, 10, np.random.default_rng(0))
    assert len(calls) == 11 and calls[0] == 3  # the roots, then one call per simulation over every game


def test_openspiel_mcts_player_is_openspiels_bot_and_beats_random():
    sim = simulator_for("openspiel:tic_tac_toe")
    record = play_matches("openspiel:tic_tac_toe", MCTSPlayer(sim, 200, seed=0), RandomPolicy(1), openings=4, opening_plies=1, seed=0)
    assert MCTSPlayer(sim, 10)._bot is not None
    assert record.total.losses == 0 and record.score > 0.8


def _tiny_checkpoint(tmp_path_factory, env_name: str):
    cfg = parse_run_config({"env": {"name": env_name}})
    env = make_env(env_name)
    spec = env.spec(env.possible_agents[0])
    env.close()
    learner = Learner(seed=0)
    learner.add_policy("main", make_algorithm("ppo", spec, cfg.algo.params))
    return write_checkpoint(
        tmp_path_factory.mktemp(env_name.replace(":", "_")) / "checkpoints", "final", iteration=1, env_steps=10,
        config=asdict(cfg), league={"learning": ["main"]}, policies={"main": learner.get_weights()["main"]},
        learner_states={"main": learner.get_state("main")},
    )


@pytest.mark.parametrize("extra,opponents,printed", [
    (["mcts_simulations=50", "search=8"], ["mcts", "random"], "search=8"),
    (["search=8", "search_method=gumbel"], ["random"], "search=8 (gumbel)"),
])
def test_league_eval_plays_search_and_mcts(tmp_path_factory, tmp_path, capsys, extra, opponents, printed):
    checkpoint = _tiny_checkpoint(tmp_path_factory, "tictactoe")
    out = tmp_path / "eval.json"
    argv = [f"checkpoint={checkpoint}", f"opponents=[{','.join(opponents)}]", *extra, "episodes=4", f"output={out}"]
    assert eval_main(argv) == 0
    result = json.loads(out.read_text())
    assert result["args"]["search"] == 8 and result["args"]["search_method"] == ("gumbel" if "gumbel" in printed else "puct")
    assert {(r["policy"], r["opponent"]) for r in result["results"]} == {("main", o) for o in opponents}
    assert all(r["wins"] + r["draws"] + r["losses"] == 4 for r in result["results"])
    assert printed in capsys.readouterr().out


@pytest.mark.parametrize("extra,message", [
    (["search=-1"], "search must be an integer >= 0"),
    (["search=4", "search_method=alphabeta"], "search_method: unknown search method 'alphabeta'; known: ['gumbel', 'puct']"),
    (["mcts_simulations=0"], "mcts_simulations must be an integer >= 1"),
    (["search=4", "episodes=3"], "episodes must be even"),
])
def test_league_eval_refuses_bad_search_arguments(tmp_path_factory, capsys, extra, message):
    checkpoint = _tiny_checkpoint(tmp_path_factory, "tictactoe")
    assert eval_main([f"checkpoint={checkpoint}", *extra]) == 2
    assert message in capsys.readouterr().err


def test_league_eval_refuses_search_on_a_game_without_a_simulator(tmp_path_factory, capsys):
    checkpoint = _tiny_checkpoint(tmp_path_factory, "openspiel:kuhn_poker")
    assert eval_main([f"checkpoint={checkpoint}", "search=4", "episodes=2"]) == 2
    err = capsys.readouterr().err
    assert "search:" in err and "imperfect" in err and "Traceback" not in err
    assert eval_main([f"checkpoint={checkpoint}", "opponents=[mcts]", "episodes=2"]) == 2
    assert "opponents:" in capsys.readouterr().err


@pytest.mark.parametrize("env,moves,best", WIN + BLOCK)
def test_puct_with_a_value_head_reads_wins_and_losses_from_the_tree(env, moves, best):
    sim = simulator_for(env)

    def neutral(obs, masks):  # a uniform prior and a value of 0 everywhere: only the tree's ends decide
        return masks / masks.sum(1, keepdims=True), np.zeros(len(obs))

    (visits,) = puct_visits(sim, [_play(sim, moves)], neutral, 400, np.random.default_rng(0))
    assert int(np.argmax(visits)) == best
