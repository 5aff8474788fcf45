"""The batched sampler path (BatchedRunner on a batched env): the PettingZoo path's own
credit, mask, schema and outcome tests run again on the C++ backend, then what only the
batched path has (backend equivalence, segment postprocessing, truncation, failures)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tests.test_sampler as pz_tests
from league.algos.postprocessing import compute_gae, segment_gae
from league.batch import Columns as C
from league.batch import MultiAgentBatch, SampleBatch
from league.envs import make_env
from league.envs.base import MultiAgentEnv
from league.envs.batched import VectorizedEnv
from league.envs.boards import BoardBatchedEnv
from league.envs.factory import EnvFactory
from league.policy import RandomPolicyFactory
from league.sampling import FixedMatchups, OpponentSampling, Sampler
from league.sampling.batched_runner import BatchedRunner
from league.sampling.versioning import VersionedPolicy
from inference_helpers import sampler_inference  # noqa: F401  (used by name: sampler tests run through an inference server too, issue 36)


_ORIGINAL_SAMPLER = pz_tests._sampler


@pytest.fixture
def cpp_backend(monkeypatch):
    """Makes test_sampler's ``_sampler`` build C++-backed samplers."""

    def sampler(env="connect_four", matchups=None, **kw):
        s = _ORIGINAL_SAMPLER(env, matchups, backend="cpp", **kw)
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
@pytest.mark.usefixtures("sampler_inference")
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


class _PerChunk:
    """A factory's sampler policy and per-chunk postprocessing only (no ``postprocess_segments``)."""

    def __init__(self, factory):
        self.factory = factory

    def make_policy(self, seed=None, learns=True):
        return self.factory.make_policy(seed=seed, learns=learns)

    def postprocess_trajectory(self, traj, next_step):
        return self.factory.postprocess_trajectory(traj, next_step)


class _CountSegments(_PerChunk):
    """The factory's own ``postprocess_segments`` (PPO's and A2C's: ``GAEActorCritic``), counted."""

    calls = 0

    def postprocess_segments(self, batch, starts, next_steps):
        self.calls += 1
        return self.factory.postprocess_segments(batch, starts, next_steps)


def test_postprocess_segments_is_used_and_matches_per_chunk_postprocessing():
    ppo = pz_tests._ppo()
    matchups = FixedMatchups({"player_0": "main", "player_1": "main"})
    per_chunk = _runner(BoardBatchedEnv("connect_four", 8), matchups, factories={"main": _PerChunk(ppo)})
    segmented = _CountSegments(ppo)
    at_once = _runner(BoardBatchedEnv("connect_four", 8), matchups, factories={"main": segmented})
    a, b = _fragments(per_chunk, 100, 25)["main"], _fragments(at_once, 100, 25)["main"]
    assert segmented.calls == 4
    for key in (C.ADVANTAGES, C.VALUE_TARGETS, C.REWARDS, C.EPS_ID, C.T):
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)


def _gae_algo(name, spec, reward_scale=0.37):
    from league.algos import make_algorithm

    config = {"model": "mlp", "reward_scale": reward_scale, "normalize_values": True, "gamma": 0.9, "lam": 0.8}
    return make_algorithm(name, spec, config)


def _cat(batches):
    return type(batches[0]).concat(batches)


@pytest.mark.parametrize("algo", ["ppo", "a2c"])
def test_ppo_and_a2c_segments_equal_per_chunk_gae_with_reward_scale(algo):
    """``GAEActorCritic.postprocess_segments`` on chunks of random lengths ending in termination
    (no next step) or with a value to bootstrap from: per-chunk ``postprocess_trajectory``'s
    columns bit for bit, i.e. ``compute_gae`` on rewards times ``reward_scale``."""
    factory = _gae_algo(algo, make_env("tictactoe").spec("player_1"))
    rng = np.random.default_rng(3)
    lengths = rng.integers(1, 12, size=60)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    n = int(lengths.sum())
    batch = SampleBatch({C.REWARDS: rng.choice([-1.0, 0.0, 0.5, 1.0], size=n).astype(np.float32),
                         C.VF_PREDS: rng.normal(size=n).astype(np.float32), C.T: np.arange(n)})
    next_steps = [None if rng.random() < 0.4 else {C.VF_PREDS: rng.normal(size=1).astype(np.float32)} for _ in starts]
    ends = np.append(starts[1:], n)
    per_chunk = _cat([factory.postprocess_trajectory(batch[s:e].copy(), step) for s, e, step in zip(starts, ends, next_steps)])
    at_once = factory.postprocess_segments(batch.copy(), starts, next_steps)
    for key in per_chunk.keys():
        np.testing.assert_array_equal(at_once[key], per_chunk[key], err_msg=key)
    np.testing.assert_array_equal(at_once[C.REWARDS], batch[C.REWARDS])  # the column keeps the env's rewards
    j = int(np.flatnonzero([s is not None for s in next_steps])[0])
    s, e = starts[j], ends[j]
    reference, _ = compute_gae(batch[C.REWARDS][s:e] * np.float32(0.37), batch[C.VF_PREDS][s:e],
                               float(next_steps[j][C.VF_PREDS][0]), 0.9, 0.8)
    np.testing.assert_array_equal(at_once[C.ADVANTAGES][s:e], reference)


def test_a_subclass_overriding_postprocess_trajectory_keeps_it_on_the_batched_path():
    from league.algos import PPO

    class Tagged(PPO):
        def postprocess_trajectory(self, traj, next_step):
            traj = super().postprocess_trajectory(traj, next_step)
            traj["tag"] = np.full(len(traj), len(traj), np.int64)
            return traj

    factory = Tagged(make_env("tictactoe").spec("player_1"), {"model": "mlp"})
    batch = SampleBatch({C.REWARDS: np.ones(5, np.float32), C.VF_PREDS: np.zeros(5, np.float32)})
    out = factory.postprocess_segments(batch, np.array([0, 2]), [None, {C.VF_PREDS: np.ones(1, np.float32)}])
    np.testing.assert_array_equal(out["tag"], [2, 2, 3, 3, 3])


def _cut_chunks(batch):
    """Chunks of one drain (rows of one agent in one episode) whose last row ends nothing."""
    keys = batch[C.EPS_ID] * 8 + batch[C.AGENT_INDEX]
    last = np.array([np.flatnonzero(keys == k)[-1] for k in np.unique(keys)])
    return int(np.count_nonzero(~(batch[C.TERMINATEDS][last] | batch[C.TRUNCATEDS][last])))


@pytest.mark.parametrize("algo", ["ppo", "a2c"])
def test_ppo_and_a2c_batched_path_gives_the_per_chunk_batches(algo):
    """The real factories with reward_scale != 1 and normalize_values (value statistics away from
    0/1, so vf_preds are denormalised returns): BatchedRunner through their ``postprocess_segments``
    gives the per-chunk path's batches bit for bit, over terminations, truncations
    (max_episode_steps=7) and chunks cut at fragment ends (11-step fragments)."""

    def env():
        return VectorizedEnv(lambda: make_env("tictactoe", max_episode_steps=7), 8, "ttt")

    factory = _gae_algo(algo, env().agent_spec)
    segmented = _CountSegments(factory)
    matchups = OpponentSampling("main", {"main": 0.5, "random": 0.5})
    runners = [_runner(env(), matchups, factories={"main": f, "random": RandomPolicyFactory()})
               for f in (_PerChunk(factory), segmented)]
    for r in runners:
        r._policies["main"].model.value_norm.mean.fill_(0.75)
        r._policies["main"].model.value_norm.var.fill_(6.0)
    drains = [[], []]
    for _ in range(8):
        for r, d in zip(runners, drains):
            for _ in range(11):
                r.step()
            d.append(_cat(r.drain()["main"]))
    assert segmented.calls == 8
    for x, y in zip(*drains):
        assert set(x.keys()) == set(y.keys())
        for key in x.keys():
            np.testing.assert_array_equal(x[key], y[key], err_msg=key)
    a = _cat(drains[1])
    assert len(a) > 200 and a[C.TERMINATEDS].any() and a[C.TRUNCATEDS].any() and np.abs(a[C.REWARDS]).sum() > 0
    assert sum(_cut_chunks(d) for d in drains[1]) > 0
    assert abs(float(a[C.VF_PREDS].mean()) - 0.75) < 0.5


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


def test_the_env_factory_refuses_a_backend_the_env_lacks():
    with pytest.raises(ValueError, match="env.backend=cpp exists for"):
        EnvFactory("rps", backend="cpp")
    with pytest.raises(ValueError, match="env.backend must be one of"):
        EnvFactory("tictactoe", backend="jax")
    with pytest.raises(ValueError, match="env_kwargs go into the EnvFactory"):
        Sampler(EnvFactory("tictactoe"), {"max_episode_steps": 3}, policies={"main": RandomPolicyFactory()},
                matchups=FixedMatchups({}))


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


# Stopping copies (the batched contract's autoreset flags) --------------------------------------
def _stopping_env(kind, n):
    if kind == "cpp":
        return BoardBatchedEnv("tictactoe", n, seed=1)
    return VectorizedEnv(lambda: make_env("tictactoe"), n, "ttt")


@pytest.mark.parametrize("kind", ["cpp", "vectorized"])
def test_a_copy_whose_autoreset_is_off_stops_at_its_episode_end(kind):
    """A copy with its flag off finishes its game (done, final rewards, terminated) and then has
    no rows, takes no action and reports nothing until ``reset``; the others play on."""
    n, rng = 4, np.random.default_rng(0)
    env = _stopping_env(kind, n)
    bs = env.reset(seed=3)
    assert bs.active.all() and bs.env_index.tolist() == list(range(n))
    env.set_autoreset(np.array([True, False, True, False]))
    games = np.zeros(n, np.int64)
    for _ in range(40):
        before = bs.active.copy()
        acts = np.array([rng.choice(np.flatnonzero(m)) for m in bs.masks], np.int64)
        bs = env.step(acts)
        assert not (bs.done[~before].any() or bs.rewards[~before].any() or bs.terminated[~before].any())
        assert bs.terminated[bs.done].all()
        games += bs.done
        assert bs.env_index.tolist() == np.flatnonzero(bs.active).tolist()  # one row per active copy
        assert len(bs.obs) == len(bs.masks) == len(bs.agent_index) == int(bs.active.sum())
    assert games[[1, 3]].tolist() == [1, 1] and (games[[0, 2]] >= 4).all()
    assert bs.active.tolist() == [True, False, True, False]
    if kind == "cpp":
        assert len(env.random_actions()) == 2
    with pytest.raises(ValueError, match="set_autoreset takes bool\\[4\\]"):
        env.set_autoreset(np.ones(3, bool))
    bs = env.reset(seed=4)  # every copy plays again, every flag on
    assert bs.active.all() and bs.env_index.tolist() == list(range(n))
    for _ in range(12):
        bs = env.step(np.array([rng.choice(np.flatnonzero(m)) for m in bs.masks], np.int64))
    assert bs.active.all()


def test_every_copy_stopped_leaves_no_rows():
    env = VectorizedEnv(lambda: make_env("tictactoe"), 2, "ttt")
    bs = env.reset(seed=0)
    env.set_autoreset(np.zeros(2, bool))
    for _ in range(9):
        if not bs.active.any():
            break
        bs = env.step(np.array([int(np.flatnonzero(m)[0]) for m in bs.masks], np.int64))
    assert not bs.active.any() and bs.obs.shape == (0, 3, 3, 2) and bs.masks.shape == (0, 9)
    cpp = BoardBatchedEnv("tictactoe", 2)
    bs = cpp.reset()
    cpp.set_autoreset(np.zeros(2, bool))
    for _ in range(9):
        bs = cpp.step(np.array([int(np.flatnonzero(m)[0]) for m in bs.masks], np.int64))
    assert not bs.active.any() and bs.obs.shape == (0, 3, 3, 2) and len(bs.env_index) == 0
    with pytest.raises(ValueError, match="int64\\[0\\]"):
        cpp.step(np.zeros(2, np.int64))  # one action per row: none


class _SeedLog(MultiAgentEnv):
    """Tic-tac-toe that records the seed of every reset and raises on chosen steps."""

    seeds: list[tuple[int, int | None]] = []
    built = 0
    fail_on_step: set[int] = set()

    def __init__(self) -> None:
        self._env = make_env("tictactoe")
        self.possible_agents = self._env.possible_agents
        self.copy = type(self).built
        type(self).built += 1
        self._steps = 0

    def spec(self, agent):
        return self._env.spec(agent)

    def reset(self, seed=None):
        type(self).seeds.append((self.copy, seed))
        return self._env.reset(seed)

    def step(self, actions):
        self._steps += 1
        if (self.copy, self._steps) in type(self).fail_on_step:
            raise RuntimeError("boom")
        return self._env.step(actions)


def test_each_copy_is_seeded_once_and_auto_resets_go_on_unseeded():
    """A copy's first episode takes a seed drawn from reset()'s; its auto-resets none (an env
    that rebuilds itself on a seeded reset, as PettingZoo's Atari envs load their ROM, pays
    that once), a copy built to replace a crashed one a seed again, and reset() reseeds all."""
    _SeedLog.seeds, _SeedLog.built, _SeedLog.fail_on_step = [], 0, {(1, 3)}
    env = VectorizedEnv(_SeedLog, 2, "seedlog")
    rng = np.random.default_rng(0)
    bs = env.reset(seed=5)
    assert [c for c, s in _SeedLog.seeds if s is not None] == [0, 1]
    for _ in range(40):  # several tic-tac-toe episodes per copy
        bs = env.step(np.asarray([int(rng.choice(np.flatnonzero(m))) for m in bs.masks]))
    assert env.num_env_failures == 1
    seeded = [c for c, s in _SeedLog.seeds if s is not None]
    assert seeded == [0, 1, 2], "only the replacement copy (built third) took a seed after reset()"
    assert sum(1 for _, s in _SeedLog.seeds if s is None) >= 6
    n = len(_SeedLog.seeds)
    env.reset(seed=5)
    assert all(s is not None for _, s in _SeedLog.seeds[n:]) and len(_SeedLog.seeds) == n + 2
    env.reset()  # no seed: every copy goes on from its own stream
    assert all(s is None for _, s in _SeedLog.seeds[n + 2:]) and len(_SeedLog.seeds) == n + 4


def test_a_runner_seeds_its_env_on_its_first_round_only():
    """Evaluation rounds (reset_all with quotas) after the first restart the copies unseeded."""
    _SeedLog.seeds, _SeedLog.built, _SeedLog.fail_on_step = [], 0, set()
    env = VectorizedEnv(_SeedLog, 2, "seedlog")
    runner = _runner(env, FixedMatchups({"player_1": "main", "player_2": "main"}), factories={"main": pz_tests._ppo("tictactoe")})
    for _ in range(3):
        runner.reset_all(quota=[1, 1])
        while runner.active.any():
            runner.step(explore=False)
    seeds = [s for _, s in _SeedLog.seeds]
    assert all(s is not None for s in seeds[:2]) and all(s is None for s in seeds[2:]) and len(seeds) >= 6
