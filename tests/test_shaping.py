"""Potential-based reward shaping (league.envs.shaping) and chess's material potential."""

from __future__ import annotations

import numpy as np
import pytest

from league.envs import make_env
from league.envs.shaping import POTENTIALS, QUANTUM, register_potential


def _first_value(obs: np.ndarray) -> float:
    return float(np.asarray(obs).ravel()[0])


register_potential("first_value_test", _first_value)


def _play(env, seed: int, steps: int | None = None):
    """Random legal moves from ``reset(seed)``: each TimeStep, and the agents' summed rewards."""
    rng, out, totals = np.random.default_rng(seed), [], {}
    ts = env.reset(seed=seed)
    out.append(ts)
    while not ts.done and (steps is None or len(out) <= steps):
        ts = env.step({a: int(rng.choice(np.flatnonzero(ts.masks[a]))) for a in ts.obs})
        out.append(ts)
        for agent, r in ts.rewards.items():
            totals[agent] = totals.get(agent, 0.0) + r
    return out, totals


@pytest.mark.parametrize("name, kwargs", [("tictactoe", {}), ("rps", {"max_cycles": 7})])
def test_shaped_rewards_add_the_potentials_difference_and_keep_the_episodes_total(name, kwargs):
    plain, shaped = make_env(name, **kwargs), make_env(name, **kwargs, shaping={"potential": "first_value_test", "scale": 2.0})
    for seed in range(5):
        plain_steps, plain_totals = _play(plain, seed)
        shaped_steps, shaped_totals = _play(shaped, seed)
        assert len(plain_steps) == len(shaped_steps)
        last: dict[str, float] = {a: 2.0 * _first_value(o) for a, o in plain_steps[0].obs.items()}
        for before, after in zip(plain_steps[1:], shaped_steps[1:]):
            for agent in set(before.rewards) | set(after.rewards):
                expected = before.rewards.get(agent, 0.0)
                if agent in before.obs and agent in last:  # its next observation: gamma (1) x phi(o') - phi(o)
                    expected += 2.0 * _first_value(before.obs[agent]) - last[agent]
                elif agent in before.terminated and agent in last:  # the end: phi 0
                    expected -= last[agent]
                elif agent in before.truncated and agent in last:  # cut short: toward its final observation
                    expected += 2.0 * _first_value(before.final_obs[agent]) - last[agent]
                assert after.rewards.get(agent, 0.0) == pytest.approx(expected)
            for agent in (*before.terminated, *before.truncated):
                last.pop(agent, None)
            last.update({a: 2.0 * _first_value(o) for a, o in before.obs.items()})
        # Over an episode that ends (not cut short): the env's own return, less phi of each
        # agent's first observation.
        if not plain_steps[-1].truncated:
            firsts: dict[str, float] = {}
            for ts in plain_steps:
                for agent, obs in ts.obs.items():
                    firsts.setdefault(agent, 2.0 * _first_value(obs))
            for agent, total in plain_totals.items():
                assert shaped_totals[agent] == pytest.approx(total - firsts[agent])


def test_a_truncated_agent_is_shaped_toward_its_final_observation():
    env = make_env("rps", max_cycles=50, max_episode_steps=3, shaping={"potential": "first_value_test", "gamma": 0.5})
    steps, _ = _play(env, 0)
    assert steps[-1].done and steps[-1].truncated
    before = steps[-2].obs
    plain_steps, _ = _play(make_env("rps", max_cycles=50, max_episode_steps=3), 0)
    for agent in steps[-1].truncated:
        final = _first_value(steps[-1].final_obs[agent])
        assert steps[-1].rewards[agent] == pytest.approx(plain_steps[-1].rewards.get(agent, 0.0) + 0.5 * final - _first_value(before[agent]))


@pytest.mark.parametrize(
    "shaping, message",
    [
        ("chess_material", r"env.kwargs.shaping must be a mapping"),
        ({"potential": "no_such_potential"}, r"unknown reward potential 'no_such_potential'; known: \[.*first_value_test"),
        ({"scale": 1.0}, r"env.kwargs.shaping needs a potential"),
        ({"potential": "first_value_test", "gamma": 1.5}, r"env.kwargs.shaping.gamma must be a number in \[0, 1\], got 1.5"),
        ({"potential": "first_value_test", "scale": "big"}, r"env.kwargs.shaping.scale must be a number, got 'big'"),
        ({"potential": "first_value_test", "sclae": 1}, r"unknown key\(s\) \['sclae'\]"),
    ],
)
def test_bad_shaping_is_refused_naming_the_key(shaping, message):
    with pytest.raises(ValueError, match=message):
        make_env("tictactoe", shaping=shaping)


def test_chess_material_pays_a_capture_to_the_capturer_and_charges_the_captured():
    pytest.importorskip("chess")
    assert "chess_material" in POTENTIALS.names()  # the plug-in is declared, found without an import
    env = make_env("chess", shaping={"potential": "chess_material"})
    # 1. e4 d5 2. exd5: white takes a pawn; 2... Qxd5: black takes it back.
    ts = env.reset(seed=0)
    moves = ["e2e4", "d7d5", "e4d5", "d8d5"]
    rewards = []
    for uci in moves:
        agent = next(iter(ts.obs))
        ts = env.step({agent: _action_of(env, ts, uci)})
        rewards.append(dict(ts.rewards))
    pawn = round(1.0 / 39.0 / QUANTUM) * QUANTUM  # potentials lie on a grid of 2^-10
    # White's capture is paid when white next observes (after black's recapture: net 0); black's
    # reward for its first move (d5) counts white's capture against it as black observes again.
    assert rewards[2].get("player_1", 0.0) == pytest.approx(-pawn)
    assert rewards[3].get("player_0", 0.0) == pytest.approx(pawn - pawn)
    env.close()


def _action_of(env, ts, uci: str) -> int:
    """The action of the legal move ``uci`` (long algebraic) for the agent to move."""
    from pettingzoo.classic.chess import chess_utils

    board = env.env.env.unwrapped.board  # ShapedRewards -> the PettingZoo adapter -> chess_v6
    agent = next(iter(ts.obs))
    player = 0 if agent == "player_0" else 1
    legal = [int(a) for a in np.flatnonzero(ts.masks[agent]) if str(chess_utils.action_to_move(board, int(a), player)) == uci]
    assert len(legal) == 1, (uci, legal)
    return legal[0]


def test_shaped_chess_games_sum_to_the_games_own_result_in_float32():
    # Evaluation gives a game to the strictly highest return: before the potentials were put on a
    # grid, drawn chess games summed to +-1e-8 in float32 and read as decided.
    pytest.importorskip("chess")
    shaped, plain = make_env("chess", shaping={"potential": "chess_material"}), make_env("chess")
    for seed in range(4):
        totals = []
        for env in (shaped, plain):
            rng, ts = np.random.default_rng(seed), env.reset(seed=seed)
            total = {agent: np.float32(0.0) for agent in env.possible_agents}
            while not ts.done:
                ts = env.step({a: int(rng.choice(np.flatnonzero(ts.masks[a]))) for a in ts.obs})
                for agent, r in ts.rewards.items():
                    total[agent] += np.float32(r)
            totals.append(total)
        assert totals[0] == totals[1], seed
