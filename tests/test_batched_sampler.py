"""The batched sampler path (BatchedRunner on a batched env): the PettingZoo path's own
credit, mask, schema and outcome tests run again on the C++ backend, then what only the
batched path has (backend equivalence, segment postprocessing, truncation, failures)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tests.test_sampler as pz_tests
from league.algos.postprocessing import compute_gae
from league.batch import Columns as C
from league.batch import MultiAgentBatch
from league.envs import make_env
from league.envs.batched import VectorizedEnv
from league.envs.boards import BoardBatchedEnv
from league.policy import RandomPolicyFactory
from league.sampling import FixedMatchups, OpponentSampling, Sampler
from league.sampling.batched_runner import BatchedRunner, segment_gae
from league.sampling.versioning import VersionedPolicy

_ORIGINAL_SAMPLER = pz_tests._sampler


@pytest.fixture
def cpp_backend(monkeypatch):
    """Makes test_sampler's ``_sampler`` build C++-backed samplers."""

    def sampler(env="connect_four", matchups=None, **kw):
        s = _ORIGINAL_SAMPLER(env, matchups, env_backend="cpp", **kw)
        assert isinstance(s._runner, BatchedRunner)
        return s

    monkeypatch.setattr(pz_tests, "_sampler", sampler)


SHARED = [
    pz_tests.test_schema_and_env_step_counts,
    pz_tests.test_aec_credit_every_episode_return_lands_on_the_agents_rows,
    pz_tests.test_moves_per_episode_equal_episode_length,
    pz_tests.test_actions_are_legal_under_recorded_masks,
    pz_tests.test_frozen_opponent_rows_are_dropped_and_outcomes_reported,
    pz_tests.test_evaluate_plays_exact_number_of_episodes_without_recording,
    pz_tests.test_policy_mapping_callable_is_per_episode,
    pz_tests.test_weights_round_trip_and_unknown_policy,
]


@pytest.mark.parametrize("test", SHARED, ids=[t.__name__ for t in SHARED])
def test_pettingzoo_path_tests_hold_on_the_cpp_backend(cpp_backend, test):
    test()


def _runner(env, matchups, seed=0, ppo_env="connect_four", factories=None):
    torch.manual_seed(0)  # the same initial weights in every runner a test compares
    factories = factories or {"main": pz_tests._ppo(ppo_env), "random": RandomPolicyFactory()}
    policies = {
        pid: VersionedPolicy(f.make_policy(seed=7 + k, learns=pid == "main")) for k, (pid, f) in enumerate(factories.items())
    }
    return BatchedRunner(env, policies, factories, matchups, np.random.default_rng(seed))


def _fragments(runner, steps, fragment):
    batches = []
    for _ in range(steps // fragment):
        for _ in range(fragment):
            runner.step()
        batches.append(MultiAgentBatch({p: type(c[0]).concat(c) for p, c in runner.drain().items()}, 0))
    return MultiAgentBatch.concat(batches)


@pytest.mark.parametrize("name", ["tictactoe", "connect_four"])
def test_cpp_and_pettingzoo_envs_give_identical_batches(name):
    """The same runner over the C++ game and over N PettingZoo copies: the same rows, bit for bit."""
    matchups = OpponentSampling("main", {"main": 0.5, "random": 0.5})
    n = 16
    a = _runner(BoardBatchedEnv(name, n), matchups, ppo_env=name)
    b = _runner(VectorizedEnv(lambda: make_env(name), n, name), matchups, ppo_env=name)
    ba, bb = _fragments(a, 120, 30)["main"], _fragments(b, 120, 30)["main"]
    assert set(ba.keys()) == set(bb.keys()) and len(ba) > 500
    for key in ba.keys():
        np.testing.assert_array_equal(ba[key], bb[key], err_msg=key)
    assert a.episode_stats == b.episode_stats


def test_segment_gae_equals_per_chunk_gae_bit_for_bit():
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 40, size=300)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    n = int(lengths.sum())
    rewards, values = rng.normal(size=n).astype(np.float32), rng.normal(size=n).astype(np.float32)
    boot = rng.normal(size=len(starts)).astype(np.float32)
    adv, targets = segment_gae(rewards, values, starts, boot, 0.99, 0.95)
    for j, (s, m) in enumerate(zip(starts, lengths)):
        ra, rt = compute_gae(rewards[s : s + m], values[s : s + m], float(boot[j]), 0.99, 0.95)
        np.testing.assert_array_equal(adv[s : s + m], ra)
        np.testing.assert_array_equal(targets[s : s + m], rt)


class _SegmentPPO:
    """PPO's factory plus a ``postprocess_segments`` doing its GAE over all chunks at once."""

    def __init__(self, factory):
        self.factory = factory
        self.calls = 0

    def make_policy(self, seed=None, learns=True):
        return self.factory.make_policy(seed=seed, learns=learns)

    def postprocess_segments(self, batch, starts, next_steps):
        self.calls += 1
        boot = np.array([0.0 if s is None else float(s[C.VF_PREDS][0]) for s in next_steps], np.float32)
        cfg = self.factory.config
        batch[C.ADVANTAGES], batch[C.VALUE_TARGETS] = segment_gae(
            batch[C.REWARDS], batch[C.VF_PREDS], starts, boot, cfg.gamma, cfg.lam
        )
        return batch


def test_postprocess_segments_is_used_and_matches_per_chunk_postprocessing():
    ppo = pz_tests._ppo()
    if getattr(ppo.config, "reward_scale", 1.0) != 1.0:
        pytest.skip("the test double does not scale rewards")
    matchups = FixedMatchups({"player_0": "main", "player_1": "main"})
    per_chunk = _runner(BoardBatchedEnv("connect_four", 8), matchups, factories={"main": ppo})
    segmented = _SegmentPPO(ppo)
    at_once = _runner(BoardBatchedEnv("connect_four", 8), matchups, factories={"main": segmented})
    a, b = _fragments(per_chunk, 100, 25)["main"], _fragments(at_once, 100, 25)["main"]
    assert segmented.calls == 4
    for key in (C.ADVANTAGES, C.VALUE_TARGETS, C.REWARDS, C.EPS_ID, C.T):
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)


def test_truncated_agents_bootstrap_from_their_final_observation():
    matchups = FixedMatchups({"player_0": "main", "player_1": "main"})
    env = VectorizedEnv(lambda: make_env("connect_four", max_episode_steps=5), 4, "c4")
    runner = _runner(env, matchups, factories={"main": pz_tests._ppo()})
    mb = _fragments(runner, 40, 20)["main"]
    # Every 5-move episode: 3 rows of player_0, 2 of player_1, each agent's last one truncated.
    assert mb[C.TRUNCATEDS].sum() > 0 and not mb[C.TERMINATEDS].any()
    for eps in np.unique(mb[C.EPS_ID]):
        for agent in (0, 1):
            sel = (mb[C.EPS_ID] == eps) & (mb[C.AGENT_INDEX] == agent)
            if mb[C.TRUNCATEDS][sel].any():
                assert mb[C.TRUNCATEDS][sel][-1] and mb[C.TRUNCATEDS][sel].sum() == 1
                np.testing.assert_array_equal(mb[C.T][sel], np.arange(sel.sum()))
    assert all(e["length"] == 5 for e in runner.episode_stats)


def test_a_failing_copy_voids_its_episode_only():
    pz_tests._FlakyEnv.fail_every = 7
    pz_tests._FlakyEnv.calls = 0
    env = VectorizedEnv(pz_tests._FlakyEnv, 3, "flaky")
    runner = _runner(env, FixedMatchups({"player_1": "main", "player_2": "main"}), factories={"main": pz_tests._ppo("tictactoe")})
    mb = _fragments(runner, 60, 20)["main"]
    assert runner.num_env_failures > 0
    finished = {e["episode_id"] for e in runner.episode_stats}
    for eps in np.unique(mb[C.EPS_ID]):
        sel = mb[C.EPS_ID] == eps
        if int(eps) in finished:
            assert mb[C.TERMINATEDS][sel].sum() == 2
        else:  # no rows of a void episode; only an unfinished one may be cut
            assert not mb[C.TERMINATEDS][sel].any()


def test_sampler_refuses_a_backend_the_env_lacks():
    with pytest.raises(ValueError, match="env.backend=cpp exists for"):
        Sampler("rps", policies={"main": RandomPolicyFactory()}, matchups=FixedMatchups({}), env_backend="cpp")
    with pytest.raises(ValueError, match="env.backend must be one of"):
        Sampler("tictactoe", policies={"main": RandomPolicyFactory()}, matchups=FixedMatchups({}), env_backend="jax")


def test_a_parallel_env_behind_the_generic_wrapper_credits_both_seats():
    """rps (both agents act every step) through VectorizedEnv: every episode's return lands
    on each agent's own rows, and every agent's last row ends the episode."""
    env = VectorizedEnv(lambda: make_env("rps", max_cycles=5), 6, "rps")
    spec = env.agent_spec
    from league.algos import make_algorithm

    ppo = make_algorithm("ppo", spec, {"model": "mlp"})
    runner = _runner(env, FixedMatchups({a: "main" for a in env.possible_agents}), factories={"main": ppo})
    mb = _fragments(runner, 60, 20)["main"]
    stats = {e["episode_id"]: e for e in runner.episode_stats}
    checked = 0
    for eps, ep in stats.items():
        for k, agent in enumerate(env.possible_agents):
            sel = (mb[C.EPS_ID] == eps) & (mb[C.AGENT_INDEX] == k)
            if not sel.any():
                continue
            assert mb[C.REWARDS][sel].sum() == pytest.approx(ep["returns"][agent])
            ended = mb[C.TERMINATEDS][sel] | mb[C.TRUNCATEDS][sel]
            assert ended[-1] and not ended[:-1].any()
            np.testing.assert_array_equal(mb[C.T][sel], np.arange(sel.sum()))
            checked += 1
    assert checked >= 20
