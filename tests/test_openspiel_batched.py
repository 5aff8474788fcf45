"""OpenSpielBatchedEnv against N OpenSpielEnv copies behind VectorizedEnv: every output of every
step the same (observations, masks, rewards, flags, final observations, failures), with the
same seeds and actions; and the sampler's batches the same on both."""

from __future__ import annotations

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel")

from league.envs.batched import BatchStep, EnvFailure, VectorizedEnv  # noqa: E402
from league.envs.factory import EnvFactory  # noqa: E402
from league.envs.openings import RandomOpenings  # noqa: E402
from league.envs.openspiel_batched import OpenSpielBatchedEnv  # noqa: E402
from league.envs.openspiel_env import OpenSpielEnv  # noqa: E402
from league.policy import masked_uniform_actions  # noqa: E402

FIELDS = ("env_index", "agent_index", "obs", "masks", "rewards", "terminated", "truncated", "done", "failed", "active")


def assert_same(a: BatchStep, b: BatchStep, where: object) -> None:
    for name in FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and x.shape == y.shape, (where, name, x.dtype, x.shape, y.dtype, y.shape)
        assert np.array_equal(x, y), (where, name)
    assert a.final_obs.keys() == b.final_obs.keys() == a.final_masks.keys() == b.final_masks.keys(), where
    for key in a.final_obs:
        assert np.array_equal(a.final_obs[key], b.final_obs[key]), (where, key)
        assert np.array_equal(a.final_masks[key], b.final_masks[key]), (where, key)
        assert a.final_masks[key].dtype == b.final_masks[key].dtype


def play_both(game: str, kwargs: dict, num_envs: int = 6, steps: int = 250, plies: int = 0, illegal: float = 0.0,
              stop_at: int | None = None, max_failures: int = 5) -> tuple[VectorizedEnv, OpenSpielBatchedEnv]:
    """Both envs from the same seeds, stepped with the same actions; every BatchStep compared."""
    opening_a, opening_b = np.random.default_rng(7), np.random.default_rng(7)

    def copy() -> OpenSpielEnv:
        return OpenSpielEnv(game, **kwargs)

    env_fn = (lambda: RandomOpenings(copy(), plies, seed=int(opening_a.integers(2**63)))) if plies else copy
    ref = VectorizedEnv(env_fn, num_envs, game, max_consecutive_failures=max_failures)
    fast = OpenSpielBatchedEnv(copy(), num_envs, game, max_consecutive_failures=max_failures, opening_plies=plies,
                               opening_rng=opening_b if plies else None)
    rng = np.random.default_rng(1)
    a, b = ref.reset(seed=3), fast.reset(seed=3)
    assert_same(a, b, "reset")
    for t in range(steps):
        if stop_at is not None and t == stop_at:
            flags = rng.random(num_envs) < 0.5
            ref.set_autoreset(flags)
            fast.set_autoreset(flags)
        if len(a.env_index) == 0:
            break
        actions = masked_uniform_actions(a.masks, rng)
        if illegal:
            bad = rng.random(len(actions)) < illegal
            actions[bad] = rng.integers(-1, a.masks.shape[1] + 1, int(bad.sum()))
        a, b = ref.step(actions), fast.step(actions.copy())
        assert_same(a, b, (game, t))
    assert ref.num_env_failures == fast.num_env_failures
    return ref, fast


@pytest.mark.parametrize("game,kwargs", [
    ("hex", {"board_size": 5, "observation": "observation"}),
    ("breakthrough", {"rows": 6, "columns": 6, "observation": "observation"}),
    ("connect_four", {"observation": "observation"}),
    ("othello", {"observation": "observation"}),
    ("clobber", {"observation": "observation"}),
    ("mnk", {"m": 5, "n": 5, "k": 4, "observation": "observation"}),
    ("pentago", {}),                          # 288 moves (a cell and a quadrant turn)
    ("kuhn_poker", {}),                       # chance deals, information-state tensor
    ("liars_dice", {}),
    ("goofspiel", {"num_cards": 4, "observation": "observation"}),  # simultaneous, turn-based conversion
])
def test_same_outputs_as_vectorized_copies(game: str, kwargs: dict) -> None:
    _, fast = play_both(game, kwargs)
    assert fast._observer is not None  # the fast observation path, checked equal


def test_openings_truncation_and_stopping_copies() -> None:
    play_both("breakthrough", {"rows": 6, "columns": 6, "observation": "observation"}, plies=4)
    play_both("kuhn_poker", {}, plies=2, stop_at=20)
    play_both("othello", {"observation": "observation", "max_episode_steps": 15}, plies=3)
    play_both("connect_four", {"observation": "observation"}, stop_at=10, steps=400)


def test_illegal_actions_fail_their_copy_as_vectorized_does() -> None:
    ref, fast = play_both("leduc_poker", {}, illegal=0.05)
    assert fast.num_env_failures > 0
    play_both("tic_tac_toe", {"observation": "observation"}, illegal=0.1, plies=2)
    with pytest.raises(EnvFailure):
        play_both("tic_tac_toe", {"observation": "observation"}, illegal=1.0, max_failures=3)


def test_observation_fallback_is_the_adapters_observe(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the observer does not give the adapter's observation, the adapter's own is used."""
    monkeypatch.setattr(OpenSpielBatchedEnv, "_observer_matches", lambda self: False)
    _, fast = play_both("hex", {"board_size": 4, "observation": "observation"}, steps=60)
    assert fast._observer is None
    _, fast = play_both("kuhn_poker", {}, steps=60, plies=1)
    assert fast._observer is None


def test_bad_actions_raise_like_vectorized() -> None:
    fast = OpenSpielBatchedEnv(OpenSpielEnv("tic_tac_toe", observation="observation"), 3)
    fast.reset(seed=0)
    for bad in (np.zeros(2, np.int64), 4, np.zeros((3, 2), np.int64)):
        with pytest.raises(ValueError, match="one action per row"):
            fast.step(bad)
    with pytest.raises(TypeError):
        OpenSpielBatchedEnv(RandomOpenings(OpenSpielEnv("tic_tac_toe"), 1), 2)  # type: ignore[arg-type]


def test_factory_builds_it_for_openspiel_games() -> None:
    rng = np.random.default_rng(0)
    env = EnvFactory("openspiel:hex", {"board_size": 4, "observation": "observation"}, opening_plies=2).batched(4, rng)
    assert isinstance(env, OpenSpielBatchedEnv) and env._plies == 2
    assert isinstance(EnvFactory("kuhn_poker").batched(2, rng, openings=False), OpenSpielBatchedEnv)
    assert not isinstance(EnvFactory("tictactoe").batched(2, rng), OpenSpielBatchedEnv)


class _Vectorized(EnvFactory):
    """The factory as it was: N OpenSpielEnv copies behind VectorizedEnv."""

    def _openspiel_batched(self, *args: object) -> None:
        return None


@pytest.mark.parametrize("name,kwargs,plies", [
    ("openspiel:hex", {"board_size": 4, "observation": "observation"}, 2),
    ("kuhn_poker", {}, 0),
])
def test_sampler_batches_are_the_same(name: str, kwargs: dict, plies: int) -> None:
    """The sampler's training fragments and its evaluation results, on either env."""
    torch = pytest.importorskip("torch")
    from league.algos import make_algorithm
    from league.sampling import FixedMatchups, Sampler

    batches, evaluations = [], []
    for cls in (_Vectorized, EnvFactory):
        torch.manual_seed(0)
        factory = cls(name, kwargs, opening_plies=plies)
        env = factory()
        ppo = make_algorithm("ppo", env.spec(env.possible_agents[0]), {"model": "mlp"})
        sampler = Sampler(factory, policies={"main": ppo}, matchups=FixedMatchups({a: "main" for a in env.possible_agents}),
                          num_envs=4, fragment_length=16, seed=0)
        batches.append([sampler.sample() for _ in range(3)])
        stats = sampler.evaluate(10, FixedMatchups({a: "main" for a in env.possible_agents}))
        evaluations.append([{k: v for k, v in e.items() if k != "episode_id"} for e in stats])
    assert evaluations[0] == evaluations[1] and len(evaluations[0]) == 10
    for a, b in zip(*batches):
        assert a.env_steps == b.env_steps and a.policy_batches.keys() == b.policy_batches.keys()
        for pid in a.policy_batches:
            x, y = a.policy_batches[pid], b.policy_batches[pid]
            assert sorted(x.keys()) == sorted(y.keys())
            for col in x.keys():
                u, v = np.asarray(x[col]), np.asarray(y[col])
                if col == "eps_id":  # a random base per sampler: the same episodes, numbered alike
                    u, v = u - u.min(), v - v.min()
                assert np.array_equal(u, v), (pid, col)


def test_a_python_game_uses_the_adapters_observe() -> None:
    pytest.importorskip("open_spiel.python.games")
    import open_spiel.python.games  # noqa: F401  - registers python_tic_tac_toe

    _, fast = play_both("python_tic_tac_toe", {"observation": "observation"}, steps=80)
    assert fast._observer is None
