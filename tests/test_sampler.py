"""Sampler (in-process, no Ray): batch schema and counts, AEC credit, masks, dropped seats, env crashes."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from league.algos import make_algorithm
from league.batch import Columns as C
from league.batch import MultiAgentBatch, SampleBatch
from league.envs import MultiAgentEnv, make_env, register_env
from league.envs.factory import EnvFactory
from league.policy import RandomPolicyFactory
from league.sampling import EnvFailure, FixedMatchups, OpponentSampling, Sampler
from league.sampling.versioning import WEIGHTS_VERSION
from inference_helpers import sampler_inference  # noqa: F401  (the fixture below)

# Every test here runs with local forward passes and through an inference server (issue 36).
pytestmark = pytest.mark.usefixtures("sampler_inference")

EXPECTED_COLUMNS = {
    C.OBS, C.ACTIONS, C.ACTION_MASK, C.REWARDS, C.TERMINATEDS, C.TRUNCATEDS, C.EPS_ID,
    C.AGENT_INDEX, C.T, C.ACTION_LOGP, C.VF_PREDS, C.ADVANTAGES, C.VALUE_TARGETS,
    WEIGHTS_VERSION,  # which weights chose each action (league.sampling.versioning)
}


def _ppo(env_name: str = "connect_four"):
    env = make_env(env_name)
    spec = env.spec(env.possible_agents[0])
    env.close()
    return make_algorithm("ppo", spec, {"model": "mlp"})


def _all_main(env_name: str) -> FixedMatchups:
    env = make_env(env_name)
    return FixedMatchups({a: "main" for a in env.possible_agents})


def _sampler(env="connect_four", matchups=None, backend="pettingzoo", **kw) -> Sampler:
    return Sampler(
        EnvFactory(env, backend=backend),
        policies={"main": _ppo(env), "random": RandomPolicyFactory()},
        frozen=("random",),
        matchups=matchups or _all_main(env),
        **{"num_envs": 4, "fragment_length": 25, "seed": 1, **kw},
    )


def _collect(s: Sampler, n: int) -> tuple[SampleBatch, list[dict], int]:
    batches = [s.sample() for _ in range(n)]
    steps = sum(b.env_steps for b in batches)
    return MultiAgentBatch.concat(batches)["main"], s.pop_episode_stats(), steps


def test_schema_and_env_step_counts():
    s = _sampler()
    b = s.sample()
    assert b.env_steps == 4 * 25
    mb = b["main"]
    assert set(mb.keys()) == EXPECTED_COLUMNS
    assert mb[C.OBS].dtype == np.float32 and mb[C.OBS].shape[1:] == (6, 7, 2)
    assert mb[C.ACTION_MASK].dtype == np.int8 and mb[C.ACTION_MASK].shape[1:] == (7,)
    assert mb[C.ACTIONS].dtype == np.int64 and mb[C.REWARDS].dtype == np.float32
    # Self-play on both seats: every env step is one agent step, and at most one pending
    # row per (env, agent) is held back at the fragment's end.
    assert 100 - 2 * 4 <= len(mb) <= 100


def test_aec_credit_every_episode_return_lands_on_the_agents_rows():
    s = _sampler()
    mb, stats, steps = _collect(s, 12)
    finished = {e["episode_id"]: e for e in stats}
    assert finished, "expected some finished episodes"
    rows = defaultdict(list)
    for i in range(len(mb)):
        rows[(int(mb[C.EPS_ID][i]), int(mb[C.AGENT_INDEX][i]))].append(i)
    checked = 0
    for (eps, agent_idx), idx in rows.items():
        if eps not in finished:
            continue
        ep = finished[eps]
        agent = f"player_{agent_idx}"
        idx = np.array(idx)
        # t is contiguous from 0: no row lost across fragment boundaries.
        np.testing.assert_array_equal(mb[C.T][idx], np.arange(len(idx)))
        assert mb[C.REWARDS][idx].sum() == pytest.approx(ep["returns"][agent])
        # Connect four pays only at the end; the final reward (also after the
        # opponent's winning move) is credited to this agent's last action.
        assert (mb[C.REWARDS][idx][:-1] == 0).all()
        assert mb[C.TERMINATEDS][idx][-1] and not mb[C.TERMINATEDS][idx][:-1].any()
        checked += 1
    assert checked >= 10
    assert sum(e["length"] for e in stats) <= steps


def test_moves_per_episode_equal_episode_length():
    s = _sampler(num_envs=2, fragment_length=50)
    mb, stats, _ = _collect(s, 6)
    per_eps = defaultdict(int)
    for e in mb[C.EPS_ID]:
        per_eps[int(e)] += 1
    for ep in stats:
        assert per_eps[ep["episode_id"]] == ep["length"]  # both seats learn: every move is a row


def test_actions_are_legal_under_recorded_masks():
    s = _sampler("tictactoe")
    mb, _, _ = _collect(s, 5)
    assert mb[C.ACTION_MASK][np.arange(len(mb)), mb[C.ACTIONS]].all()


def test_frozen_opponent_rows_are_dropped_and_outcomes_reported():
    s = _sampler(matchups=OpponentSampling("main", {"random": 1.0}))
    mb, stats, _ = _collect(s, 8)
    assert stats
    moves_of_main = 0
    for ep in stats:
        assert sorted(ep["policies"].values()) == ["main", "random"]
        assert set(ep["outcome"].values()) <= {"win", "loss", "draw"}
        main_agent = next(a for a, p in ep["policies"].items() if p == "main")
        idx = int(main_agent.split("_")[1])
        moves_of_main += int(((mb[C.EPS_ID] == ep["episode_id"]) & (mb[C.AGENT_INDEX] == idx)).sum())
    # Only main's moves were recorded: about half of all moves.
    assert moves_of_main == pytest.approx(sum(e["length"] for e in stats) / 2, abs=len(stats))


def test_evaluate_plays_exact_number_of_episodes_without_recording():
    s = _sampler(matchups=OpponentSampling("main", {"random": 1.0}))
    eps = s.evaluate(9, OpponentSampling("main", {"random": 1.0}))
    assert len(eps) == 9
    assert s.pop_episode_stats() == []


def test_policy_mapping_callable_is_per_episode():
    from league.sampling import FunctionMatchups

    calls = []

    def mapping(agent: str, episode: int) -> str:
        calls.append((agent, episode))
        return "main"

    s = _sampler(matchups=FunctionMatchups(mapping), num_envs=2, fragment_length=30)
    s.sample()
    episodes = {e for _, e in calls}
    assert len(calls) == 2 * len(episodes)  # one call per agent per episode, not per step


def test_weights_round_trip_and_unknown_policy():
    s = _sampler()
    w = _ppo().make_policy(seed=3).get_weights()
    s.set_weights({"main": w})
    with pytest.raises(KeyError, match="no policy 'ghost'"):
        s.set_weights({"ghost": w})


class _FlakyEnv(MultiAgentEnv):
    """Wraps a real env; its step raises on chosen calls."""

    calls = 0
    fail_every = 7

    def __init__(self, **kwargs):
        self._env = make_env("tictactoe")
        self.possible_agents = self._env.possible_agents

    def spec(self, agent):
        return self._env.spec(agent)

    def reset(self, seed=None):
        return self._env.reset(seed)

    def step(self, actions):
        type(self).calls += 1
        if type(self).fail_every and type(self).calls % type(self).fail_every == 0:
            raise RuntimeError("boom")
        return self._env.step(actions)

    def close(self):
        self._env.close()


def test_crashing_env_costs_its_episode_not_the_run():
    register_env("flaky_ttt", _FlakyEnv, overwrite=True)
    _FlakyEnv.fail_every = 7
    s = Sampler(
        "flaky_ttt",
        policies={"main": _ppo("tictactoe")},
        matchups=_all_main("tictactoe"),
        num_envs=2,
        fragment_length=20,
    )
    mb, stats, steps = _collect(s, 5)
    assert s.num_env_failures() > 0
    assert steps == 5 * 2 * 20 - s.num_env_failures()  # failed steps are not counted
    finished = {e["episode_id"] for e in stats}
    for eps in np.unique(mb[C.EPS_ID]):
        sel = mb[C.EPS_ID] == eps
        if int(eps) in finished:
            assert mb[C.TERMINATEDS][sel].sum() == 2  # complete episodes end for both agents


def test_env_failing_every_step_stops_with_clear_error():
    register_env("broken_ttt", _FlakyEnv, overwrite=True)
    _FlakyEnv.fail_every = 1
    s = Sampler(
        "broken_ttt",
        policies={"main": _ppo("tictactoe")},
        matchups=_all_main("tictactoe"),
        num_envs=1,
        fragment_length=20,
        max_consecutive_env_failures=3,
    )
    with pytest.raises(EnvFailure, match="env 'broken_ttt' failed 4 times in a row.*boom"):
        s.sample()


def test_evaluation_survives_a_crashing_env_and_plays_its_quota():
    """A copy whose env raises during evaluation is replaced and its episode voided: the
    evaluation still returns exactly the episodes asked for, each a whole game."""
    register_env("flaky_eval_ttt", _FlakyEnv, overwrite=True)
    _FlakyEnv.fail_every, _FlakyEnv.calls = 7, 0
    s = Sampler("flaky_eval_ttt", policies={"main": _ppo("tictactoe"), "random": RandomPolicyFactory()}, frozen=("random",),
                matchups=_all_main("tictactoe"), num_envs=3, fragment_length=5, seed=0)
    before = _FlakyEnv.calls
    eps = s.evaluate(12, OpponentSampling("main", {"random": 1.0}))
    assert (_FlakyEnv.calls - before) // 7 >= 5  # every 7th step raised
    assert len(eps) == 12 and all(e["length"] >= 5 and sorted(e["policies"].values()) == ["main", "random"] for e in eps)
    ids = sorted(e["episode_id"] for e in eps)
    assert len(set(ids)) == 12 and ids[-1] - ids[0] + 1 > 12  # the voided episodes' ids are missing
