"""league.games.cooperative_pong and league.games.pistonball: PettingZoo's butterfly games, their
screens always drawn and read where they are drawn."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("pygame")
pytest.importorskip("pymunk")

from pettingzoo.butterfly import cooperative_pong_v6, pistonball_v6  # noqa: E402

from league.games import cooperative_pong, pistonball  # noqa: E402

_LUMINANCE = np.array([0.299, 0.587, 0.114], dtype=np.float32)  # SuperSuit's grayscale


def _play_both(ours, theirs, episodes: int, seed: int = 0, seen=lambda obs: obs) -> int:
    """Step both AEC envs with the same random moves; assert every observation (``seen`` of
    theirs), reward and end agrees; returns the agent steps compared."""
    rng, steps = np.random.default_rng(seed), 0
    for episode in range(episodes):
        ours.reset(seed=episode)
        theirs.reset(seed=episode)
        for _ in theirs.agent_iter():
            obs_a, reward_a, term_a, trunc_a, _ = theirs.last()
            obs_b, reward_b, term_b, trunc_b, _ = ours.last()
            assert np.array_equal(seen(obs_a), obs_b), (episode, steps)
            assert (reward_a, term_a, trunc_a) == (reward_b, term_b, trunc_b), (episode, steps)
            move = None if term_a or trunc_a else int(rng.integers(3))
            theirs.step(move)
            ours.step(move)
            steps += 1
    return steps


@pytest.mark.parametrize("kwargs", [{}, {"bounce_randomness": True, "cake_paddle": False, "max_cycles": 50}])
def test_it_plays_pettingzoos_game_with_pettingzoos_observations(kwargs):
    # PettingZoo draws the screen it observes only with a render mode; ours draws it always.
    theirs = cooperative_pong_v6.env(render_mode="rgb_array", **kwargs)
    ours = cooperative_pong.env(**kwargs)
    assert _play_both(ours, theirs, episodes=4) > 100
    assert ours.observation_space("paddle_0") == theirs.observation_space("paddle_0")


def test_a_shrunk_grayscale_screen_is_the_observation_and_its_space():
    ours = cooperative_pong.env(observation_size=[48, 32], grayscale=True)
    ours.reset(seed=0)
    obs = ours.observe("paddle_1")
    assert obs.shape == (32, 48) and obs.dtype == np.uint8 and ours.observation_space("paddle_1").shape == (32, 48)
    assert obs.max() > 200  # the paddles and the ball, white on black
    gray = cooperative_pong.env(grayscale=True)  # full size: SuperSuit's luminance, value for value
    full = cooperative_pong.env(render_mode="rgb_array")
    gray.reset(seed=3)
    full.reset(seed=3)
    expected = (full.observe("paddle_0").astype(np.float32) @ _LUMINANCE).astype(np.uint8)
    assert np.array_equal(gray.observe("paddle_0"), expected)


def test_a_pickled_env_keeps_its_own_kwargs():
    import pickle

    copy = pickle.loads(pickle.dumps(cooperative_pong.raw_env(observation_size=[32, 24], grayscale=True, max_cycles=7)))
    copy.reset(seed=0)
    assert copy.observe("paddle_0").shape == (24, 32) and copy.env.max_cycles == 7


def test_each_agent_gets_its_own_copy_of_a_frame():
    ours = cooperative_pong.env(observation_size=[16, 16])
    ours.reset(seed=0)
    first = ours.observe("paddle_0")
    first[:] = 7
    assert not np.array_equal(ours.observe("paddle_1"), first)


def test_render_returns_the_frame_only_when_a_mode_asks_for_it():
    theirs = cooperative_pong_v6.env(render_mode="rgb_array")
    ours = cooperative_pong.env(render_mode="rgb_array", observation_size=[48, 48])
    theirs.reset(seed=1)
    ours.reset(seed=1)
    assert np.array_equal(ours.render(), theirs.render())  # the full screen, whatever the observations
    quiet = cooperative_pong.env()
    quiet.reset(seed=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert quiet.render() is None
    assert any("render mode" in str(w.message) for w in caught)


def test_cooperative_pong_read_as_its_state_follows_the_ball_and_the_paddles():
    ours = cooperative_pong.env(obs_type="state")
    ours.reset(seed=0)
    first = ours.observe("paddle_0")
    assert ours.observation_space("paddle_0").contains(first) and len(first) == len(cooperative_pong.STATE_FIELDS)
    assert np.allclose(first[[0, 1, 4, 5]], 0.5, atol=0.02)  # the ball and both paddles start mid-screen
    assert np.isclose(np.hypot(first[2], first[3]), 1.0)  # the velocity over the ball's speed
    for _ in range(3):
        ours.step(1)  # the left paddle up
        ours.step(2)  # the right paddle down
    state = ours.observe("paddle_1")
    assert state[4] < first[4] and state[5] > first[5]
    assert np.allclose(state[:2] - first[:2], 3 * first[2:4] * np.array([9 / 480, 9 / 280]), atol=0.01)  # three frames of flight
    assert np.array_equal(ours.observe("paddle_0"), state)  # both paddles see the same numbers


@pytest.mark.parametrize("kwargs, message", [({"obs_type": "ram"}, "obs_type must be one of"),
                                             ({"obs_type": "state", "grayscale": True}, "drop them with obs_type=state")])
def test_cooperative_pong_refuses_an_unknown_or_mixed_obs_type(kwargs, message):
    with pytest.raises(ValueError, match=message):
        cooperative_pong.env(**kwargs)


@pytest.mark.parametrize("size", [[48], [0, 48], [48.5, 48], [True, 48], "48x48"])
@pytest.mark.parametrize("game", [cooperative_pong, pistonball])
def test_a_bad_observation_size_is_refused_by_name(game, size):
    with pytest.raises(ValueError, match="observation_size must be \\[width, height\\]"):
        game.env(observation_size=size)


def test_the_env_file_builds_it_through_make_env_with_frames_stacked():
    pytest.importorskip("supersuit")
    from league.envs import make_env

    env = make_env("league.games.cooperative_pong", max_cycles=20, observation_size=[48, 48], grayscale=True,
                   preprocess={"frame_stack": 2})  # fmt: skip
    try:
        step = env.reset(seed=0)
        assert {a: o.shape for a, o in step.obs.items()} == {"paddle_0": (48, 48, 2), "paddle_1": (48, 48, 2)}
        for _ in range(25):
            step = env.step({agent: 0 for agent in env.possible_agents})
            if step.done:
                break
        assert step.done
    finally:
        env.close()


@pytest.mark.parametrize("gray", [False, True])
def test_pistonball_plays_pettingzoos_game_with_its_views_drawn(gray):
    # PettingZoo's views move only with a render mode set; ours always do, and read gray they
    # are SuperSuit's luminance of PettingZoo's, value for value.
    theirs = pistonball_v6.env(render_mode="rgb_array", continuous=False, max_cycles=12)
    ours = pistonball.env(continuous=False, max_cycles=12, grayscale=gray)
    seen = (lambda obs: (obs.astype(np.float32) @ _LUMINANCE).astype(np.uint8)) if gray else (lambda obs: obs)
    assert _play_both(ours, theirs, episodes=2, seen=seen) > 400


def test_pistonball_views_move_without_a_render_mode_and_render_says_none():
    ours = pistonball.env(continuous=False, observation_size=[48, 48], grayscale=True)
    ours.reset(seed=0)
    first = ours.observe("piston_10")
    for _ in range(20 * 10):  # ten cycles, every piston moving up
        ours.step(2)
    view = ours.observe("piston_10")
    assert view.shape == (48, 48) and ours.observation_space("piston_10").shape == (48, 48)
    assert not np.array_equal(view, first)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert ours.render() is None
    assert any("render mode" in str(w.message) for w in caught)
    framed = pistonball.env(continuous=False, render_mode="rgb_array")
    framed.reset(seed=0)
    assert framed.render().shape == (560, 880, 3)
