"""The sampler's one training path for any env: N copies behind ``VectorizedEnv`` driven by
``BatchedRunner``. Agents of different specs (observation shapes, action counts, Discrete,
Box and MultiDiscrete actions) give the per-copy ``EnvRunner``'s (tests/runner_oracle.py) columns, dtypes and
shapes (row for row on a deterministic env); env crashes, truncation bootstraps and the
env families (parallel, single-agent Gymnasium, OpenSpiel, images) run through it."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from league.algos import make_algorithm
from league.batch import Columns as C
from league.batch import MultiAgentBatch
from league.envs import MultiAgentEnv, make_env, register_env
from league.envs.base import AgentSpec, TimeStep
from league.envs.batched import EnvFailure, VectorizedEnv, stack_rows
from league.policy import RandomPolicyFactory
from league.sampling import FixedMatchups, FunctionMatchups, Sampler
from league.sampling.batched_runner import BatchedRunner
from league.sampling.versioning import VersionedPolicy
from tests.runner_oracle import EnvRunner
from tests.test_sampler import _FlakyEnv
from inference_helpers import sampler_inference  # noqa: F401  (used by name: sampler tests run through an inference server too, issue 36)


class _FourKinds(MultiAgentEnv):
    """A deterministic parallel game with four kinds of agents (the seed changes nothing):

    * ``hunter``: obs ``(3,)``, 4 Discrete actions, a mask that forbids one action per step;
    * ``runner_0``/``runner_1``: obs ``(2, 2)``, 2 Discrete actions; ``runner_1`` leaves
      (terminated) after step 2, before the episode ends;
    * ``pilot``: obs ``(1,)``, Box actions in ``[-1, 1]^2`` (all-ones mask, ignored);
    * ``picker``: obs ``(4,)``, MultiDiscrete ``(2, 3)`` (5 mask flags).

    The episode is truncated after ``LENGTH`` steps, with final observations.
    """

    LENGTH = 5
    possible_agents = ["hunter", "runner_0", "runner_1", "pilot", "picker"]
    SPECS = {
        "hunter": AgentSpec((3,), 4, True),
        "runner_0": AgentSpec((2, 2), 2, False),
        "runner_1": AgentSpec((2, 2), 2, False),
        "pilot": AgentSpec((1,), 2, False, action_low=(-1.0, -1.0), action_high=(1.0, 1.0)),
        "picker": AgentSpec((4,), 5, False, action_nvec=(2, 3)),
    }

    def __init__(self) -> None:
        self._t = 0
        self._live: list[str] = []
        self._acc = 0.0

    def spec(self, agent):
        return self.SPECS[agent]

    def _observe(self, agent):
        spec = self.SPECS[agent]
        obs = np.full(spec.obs_shape, self._t + 0.25 * self.possible_agents.index(agent) + 0.1 * self._acc, np.float32)
        mask = np.ones(spec.num_actions, np.int8)
        if agent == "hunter":
            mask[self._t % 4] = 0
        return obs, mask

    def _ts(self, ts: TimeStep) -> TimeStep:
        for agent in self._live:
            ts.obs[agent], ts.masks[agent] = self._observe(agent)
        return ts

    def reset(self, seed=None):
        self._t, self._acc = 0, 0.0
        self._live = list(self.possible_agents)
        return self._ts(TimeStep(obs={}, masks={}))

    def step(self, actions):
        if set(actions) != set(self._live):
            raise ValueError(f"expected actions for {self._live}, got {sorted(actions)}")
        rewards = {}
        for agent, act in actions.items():
            if agent == "pilot":
                assert isinstance(act, np.ndarray) and act.dtype == np.float32 and act.shape == (2,)
                r = float(-np.square(act).sum())
            elif agent == "picker":
                assert isinstance(act, np.ndarray) and act.shape == (2,) and act.dtype.kind == "i"
                assert 0 <= act[0] < 2 and 0 <= act[1] < 3
                r = float(act[0]) + 0.5 * float(act[1])
            else:
                assert isinstance(act, (int, np.integer)), (agent, act)
                if agent == "hunter":
                    assert act != self._t % 4, "a masked action"
                r = float(act == 1)
            rewards[agent] = r
            self._acc += r
        self._t += 1
        ts = TimeStep(obs={}, masks={}, rewards=rewards)
        if self._t == 2:
            ts.terminated["runner_1"] = True
            self._live.remove("runner_1")
        if self._t >= self.LENGTH:
            for agent in self._live:
                ts.truncated[agent] = True
                ts.final_obs[agent], ts.final_masks[agent] = self._observe(agent)
            self._live = []
            ts.done = True
            return ts
        return self._ts(ts)


_POLICY_OF = {"hunter": "hunter", "runner_0": "runner", "runner_1": "runner", "pilot": "pilot", "picker": "picker"}


def _four_kinds_policies():
    import torch

    torch.manual_seed(0)
    factories = {pid: make_algorithm("ppo", _FourKinds.SPECS[agent], {"model": "mlp"}) for agent, pid in _POLICY_OF.items()}
    policies = {pid: VersionedPolicy(f.make_policy(seed=3)) for pid, f in factories.items()}
    return factories, policies


def _cat(chunks):
    return type(chunks[0]).concat(chunks)


def _by_row_key(batch):
    order = np.lexsort((batch[C.T], batch[C.AGENT_INDEX], batch[C.EPS_ID]))
    return {k: batch[k][order] for k in batch.keys()}


def test_agents_of_four_kinds_give_envrunner_columns_row_for_row():
    """Different obs shapes and action counts, Discrete, Box and MultiDiscrete agents, an agent
    leaving early, truncation with final observations, chunks cut at fragment ends: the batched
    path's batches equal the per-copy runner's, column for column (dtype, shape, values)."""
    factories, policies = _four_kinds_policies()
    matchups = FixedMatchups(_POLICY_OF)
    n, fragment, fragments = 3, 4, 5
    per_copy = EnvRunner(_FourKinds, n, policies, factories, matchups, np.random.default_rng(0))
    env = VectorizedEnv(_FourKinds, n, "four_kinds")
    assert env.spec("pilot").continuous and env.spec("picker").action_nvec == (2, 3)
    with pytest.raises(ValueError, match="agents differ in spec"):
        env.agent_spec
    batched = BatchedRunner(env, policies, factories, matchups, np.random.default_rng(0))
    got = {"per_copy": defaultdict(list), "batched": defaultdict(list)}
    for _ in range(fragments):
        for name, runner in (("per_copy", per_copy), ("batched", batched)):
            for _ in range(fragment):
                runner.step(explore=False)
            for pid, chunks in runner.drain().items():
                got[name][pid].extend(chunks)
    assert sorted(got["per_copy"]) == sorted(got["batched"]) == sorted(set(_POLICY_OF.values()))
    for pid in got["per_copy"]:
        a, b = (_by_row_key(_cat(got[name][pid])) for name in ("per_copy", "batched"))
        assert set(a) == set(b), pid
        for key in a:
            assert a[key].dtype == b[key].dtype and a[key].shape == b[key].shape, (pid, key, a[key].dtype, b[key].dtype, a[key].shape, b[key].shape)
            np.testing.assert_array_equal(a[key], b[key], err_msg=f"{pid} {key}")
    pilot = _cat(got["batched"]["pilot"])
    assert pilot[C.ACTIONS].dtype == np.float32 and pilot[C.ACTIONS].shape[1:] == (2,)
    assert pilot[C.ACTION_MASK].shape[1:] == (2,) and pilot[C.TRUNCATEDS].any()
    picker = _cat(got["batched"]["picker"])
    assert picker[C.ACTIONS].dtype == np.int64 and picker[C.ACTIONS].shape[1:] == (2,)
    runner = _cat(got["batched"]["runner"])
    assert runner[C.OBS].shape[1:] == (2, 2) and runner[C.TERMINATEDS].any() and runner[C.TRUNCATEDS].any()
    assert per_copy.episode_stats == batched.episode_stats and len(batched.episode_stats) >= 9


def test_ragged_rows_stack_per_spec_and_a_policy_spanning_specs_is_refused():
    env = VectorizedEnv(_FourKinds, 2, "four_kinds")
    bs = env.reset(seed=0)
    assert bs.obs.dtype == object and bs.masks.dtype == object and len(bs.obs) == 2 * 5
    rows = np.flatnonzero(np.isin(bs.agent_index, [1, 2]))  # the runners: one spec
    assert stack_rows(bs.obs, rows).shape == (4, 2, 2) and stack_rows(bs.masks, rows).shape == (4, 2)
    factories, policies = _four_kinds_policies()
    spanning = {**_POLICY_OF, "pilot": "hunter"}  # the hunter's policy on the pilot's seat
    runner = BatchedRunner(env, policies, factories, FixedMatchups(spanning), np.random.default_rng(0))
    with pytest.raises(ValueError, match="policy 'hunter' plays agents of different specs"):
        runner.step()


def test_homogeneous_rows_stay_plain_arrays():
    env = VectorizedEnv(lambda: make_env("tictactoe"), 4, "ttt")
    bs = env.reset(seed=0)
    assert bs.obs.dtype == np.float32 and bs.obs.shape == (4, 3, 3, 2) and bs.masks.dtype == np.int8
    assert env.spec("player_1") == env.agent_spec


# The Sampler's training runner ------------------------------------------------------------
def _train_sampler(env, policies, matchups, **kw):
    s = Sampler(env, policies=policies, matchups=matchups, **{"num_envs": 3, "fragment_length": 20, "seed": 0, **kw})
    # OpenSpiel games step in one loop over their states (OpenSpielBatchedEnv: VectorizedEnv's outputs)
    generic = type(s._runner.env) is VectorizedEnv or type(s._runner.env).__name__ == "OpenSpielBatchedEnv"
    assert isinstance(s._runner, BatchedRunner) and generic
    return s


def _check_credit(s, batches):
    """Every finished episode's return per agent lands on that agent's rows, whose ``t`` run
    from 0 and whose last row (only) ends the episode."""
    stats = {e["episode_id"]: e for e in s.pop_episode_stats()}
    assert stats
    checked = 0
    agents = s._runner.env.possible_agents
    for pid, batch in MultiAgentBatch.concat(batches).policy_batches.items():
        for eps in np.unique(batch[C.EPS_ID]):
            if int(eps) not in stats:
                continue
            for k, agent in enumerate(agents):
                sel = (batch[C.EPS_ID] == eps) & (batch[C.AGENT_INDEX] == k)
                if not sel.any():
                    continue
                assert stats[int(eps)]["policies"][agent] == pid
                assert batch[C.REWARDS][sel].sum() == pytest.approx(stats[int(eps)]["returns"][agent], rel=1e-4, abs=1e-4)
                np.testing.assert_array_equal(batch[C.T][sel], np.arange(sel.sum()))
                ended = batch[C.TERMINATEDS][sel] | batch[C.TRUNCATEDS][sel]
                assert ended[-1] and not ended[:-1].any()
                checked += 1
    return checked


@pytest.mark.usefixtures("sampler_inference")
def test_sampler_trains_a_pettingzoo_board_game_through_the_batched_runner():
    from tests.test_sampler import EXPECTED_COLUMNS, _ppo

    s = _train_sampler("connect_four", {"main": _ppo()}, FixedMatchups({"player_0": "main", "player_1": "main"}))
    assert s.env.backend == "pettingzoo"
    batches = [s.sample() for _ in range(6)]
    assert set(batches[0]["main"].keys()) == EXPECTED_COLUMNS
    assert _check_credit(s, batches) >= 4


@pytest.mark.usefixtures("sampler_inference")
def test_sampler_trains_predators_and_prey_of_different_specs():
    """mpe2 simple_tag: adversaries and the good agent see different observation shapes."""
    pytest.importorskip("mpe2")
    env = make_env("mpe2.simple_tag_v3", max_cycles=10)
    specs = {a: env.spec(a) for a in env.possible_agents}
    assert len({s.obs_shape for s in specs.values()}) == 2
    policy_of = {a: "predator" if a.startswith("adversary") else "prey" for a in env.possible_agents}
    policies = {pid: make_algorithm("ppo", specs[next(a for a, p in policy_of.items() if p == pid)], {"model": "mlp"})
                for pid in set(policy_of.values())}
    s = _train_sampler("mpe2.simple_tag_v3", policies, FixedMatchups(policy_of), env_kwargs={"max_cycles": 10})
    batches = [s.sample() for _ in range(2)]
    for pid, batch in MultiAgentBatch.concat(batches).policy_batches.items():
        agent = next(a for a, p in policy_of.items() if p == pid)
        assert batch[C.OBS].shape[1:] == specs[agent].obs_shape and batch[C.ACTION_MASK].shape[1:] == (specs[agent].num_actions,)
    assert _check_credit(s, batches) >= 6


@pytest.mark.parametrize(
    "env, kwargs, module",
    [
        ("gymnasium:Pendulum-v1", {"max_episode_steps": 15}, "gymnasium"),  # one agent, Box actions
        ("mpe2.simple_spread_v3", {"continuous_actions": True, "max_cycles": 10}, "mpe2"),  # parallel, Box
    ],
)
@pytest.mark.usefixtures("sampler_inference")
def test_box_action_envs_train_through_the_batched_runner(env, kwargs, module):
    pytest.importorskip(module)
    probe = make_env(env, **kwargs)
    spec = probe.spec(probe.possible_agents[0])
    assert spec.continuous
    s = _train_sampler(env, {"main": make_algorithm("ppo", spec, {"model": "mlp"})},
                       FixedMatchups({a: "main" for a in probe.possible_agents}), env_kwargs=kwargs)
    batches = [s.sample() for _ in range(2)]
    mb = MultiAgentBatch.concat(batches)["main"]
    assert mb[C.ACTIONS].dtype == np.float32 and mb[C.ACTIONS].shape[1:] == (spec.num_actions,)
    assert mb[C.ACTION_MASK].dtype == np.int8 and mb[C.ACTION_MASK].shape[1:] == (spec.num_actions,)
    assert C.ACTION_LOGP in mb.keys() and mb[C.TRUNCATEDS].any()
    assert _check_credit(s, batches) >= 2


@pytest.mark.parametrize("env, module", [("gymnasium:CartPole-v1", "gymnasium"), ("kuhn_poker", "pyspiel"), ("rps", "pettingzoo")])
@pytest.mark.usefixtures("sampler_inference")
def test_discrete_families_train_through_the_batched_runner(env, module):
    pytest.importorskip(module)
    probe = make_env(env)
    spec = probe.spec(probe.possible_agents[0])
    s = _train_sampler(env, {"main": make_algorithm("ppo", spec, {"model": "mlp"}), "random": RandomPolicyFactory()},
                       FixedMatchups({a: "main" for a in probe.possible_agents}), frozen=("random",))
    batches = [s.sample() for _ in range(3)]
    assert sum(b.env_steps for b in batches) == 3 * 3 * 20
    assert _check_credit(s, batches) >= 2


@pytest.mark.usefixtures("sampler_inference")
def test_image_observations_train_through_the_batched_runner():
    pytest.importorskip("supersuit")
    pytest.importorskip("pymunk")
    kwargs = {"continuous": False, "max_cycles": 8, "n_pistons": 4,
              "preprocess": {"grayscale": True, "resize": [24, 24], "frame_stack": 2}}
    probe = make_env("pettingzoo.butterfly.pistonball_v6", **kwargs)
    spec = probe.spec(probe.possible_agents[0])
    assert spec.obs_shape == (24, 24, 2)
    s = _train_sampler("pettingzoo.butterfly.pistonball_v6", {"main": make_algorithm("ppo", spec, {"model": "mlp"})},
                       FixedMatchups({a: "main" for a in probe.possible_agents}), env_kwargs=kwargs, num_envs=2, fragment_length=8)
    mb = s.sample()["main"]
    # The frames reach the fragment as the env's bytes (a quarter of float32's memory).
    assert mb[C.OBS].shape[1:] == (24, 24, 2) and mb[C.OBS].dtype == np.uint8 and len(mb) > 0


# Crashes ------------------------------------------------------------------------------------
class _ResetFlaky(_FlakyEnv):
    """tictactoe whose every ``fail_every``-th reset raises (its steps never do)."""

    resets = 0
    fail_every = 3

    def reset(self, seed=None):
        type(self).resets += 1
        if type(self).resets % type(self).fail_every == 0:
            raise RuntimeError("reset boom")
        return self._env.reset(seed)

    def step(self, actions):
        return self._env.step(actions)


@pytest.mark.usefixtures("sampler_inference")
def test_a_copy_whose_reset_raises_is_replaced_and_its_finished_episode_counts():
    from tests.test_sampler import _ppo

    register_env("reset_flaky_ttt", _ResetFlaky, overwrite=True)
    _ResetFlaky.resets, _ResetFlaky.fail_every = 0, 3
    s = _train_sampler("reset_flaky_ttt", {"main": _ppo("tictactoe")}, FixedMatchups({"player_1": "main", "player_2": "main"}))
    batches = [s.sample() for _ in range(4)]
    assert s.num_env_failures() > 0
    assert sum(b.env_steps for b in batches) == 4 * 3 * 20  # a failed reset costs no step
    finished = {e["episode_id"] for e in s._runner.episode_stats}
    mb = MultiAgentBatch.concat(batches)["main"]
    for eps in finished:  # every finished episode was learned from, both agents ended
        assert mb[C.TERMINATEDS][mb[C.EPS_ID] == eps].sum() == 2
    assert _check_credit(s, batches) > 0


def test_an_env_that_never_resets_stops_with_env_failure():
    register_env("never_resets", _ResetFlaky, overwrite=True)
    _ResetFlaky.resets, _ResetFlaky.fail_every = 0, 1
    with pytest.raises(EnvFailure, match="env 'never_resets' failed 3 times in a row.*reset boom"):
        VectorizedEnv(lambda: make_env("never_resets"), 2, "never_resets", max_consecutive_failures=2).reset(seed=0)


def test_vectorized_env_takes_one_action_per_row_in_any_form():
    env = VectorizedEnv(_FourKinds, 2, "four_kinds")
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"one action per row of the last BatchStep \(10 rows\); got 3"):
        env.step(np.zeros(3, np.int64))
    with pytest.raises(ValueError, match="one action per row"):
        env.step(np.int64(0))
    per_row = {"hunter": 1, "runner_0": 0, "runner_1": 1, "pilot": np.zeros(2, np.float32), "picker": np.array([1, 2])}
    bs = env.step([per_row[a] for a in [_FourKinds.possible_agents[k] for k in [0, 1, 2, 3, 4] * 2]])
    assert not bs.done.any() and bs.rewards[:, 0].tolist() == [1.0, 1.0] and bs.rewards[:, 4].tolist() == [2.0, 2.0]


# Evaluation: per-copy quotas on the batched runner -------------------------------------------
def test_evaluation_quotas_give_the_per_copy_runners_episodes():
    """Each copy plays its quota of episodes and stops: the batched runner (record=False, the
    env's autoreset flags) finishes the per-copy oracle's episodes, in its order, with its
    per-seat returns and outcomes, and draws no matchup past the quotas."""
    factories, policies = _four_kinds_policies()
    quota = [3, 1, 2]
    drawn = {"per_copy": [], "batched": []}

    def matchups(name):
        return FunctionMatchups(lambda agent, episode: drawn[name].append((agent, episode)) or _POLICY_OF[agent])

    oracle = EnvRunner(_FourKinds, 3, policies, factories, matchups("per_copy"), np.random.default_rng(0), record=False,
                       start=False)
    oracle.quota = quota
    oracle.reset_all()
    while any(oracle.active):
        oracle.step(explore=False)
    runner = BatchedRunner(VectorizedEnv(_FourKinds, 3, "four_kinds"), policies, factories, matchups("batched"),
                           np.random.default_rng(0), record=False, start=False)
    assert not runner.active.any() and runner.step() == 0 and not drawn["batched"]  # nothing before reset_all
    runner.reset_all(quota)
    steps = 0
    while runner.active.any():
        steps += runner.step(explore=False)
    assert runner.episode_stats == oracle.episode_stats and len(runner.episode_stats) == 6
    assert steps == 6 * _FourKinds.LENGTH and runner.step() == 0
    assert drawn["batched"] == drawn["per_copy"] and len({e for _, e in drawn["batched"]}) == 6
    assert runner.episodes_completed.tolist() == quota and runner.policies_in_use() == set()
    with pytest.raises(ValueError, match="quota takes one episode count >= 1 per env copy"):
        runner.reset_all([1, 0, 1])


@pytest.mark.parametrize("backend", ["cpp", "pettingzoo"])
def test_sampler_evaluation_plays_a_matchup_batch_once(backend):
    """Quotas of 3, 3, 2 and 2 episodes on 4 copies: each of 10 different matchups is played
    once (the batch never wraps), with per-seat outcomes."""
    from league.envs.factory import EnvFactory
    from league.sampling import Matchup, MatchupBatch

    pids = ["a", "b", "c", "d", "e"]
    s = Sampler(EnvFactory("tictactoe", backend=backend), policies={p: RandomPolicyFactory() for p in pids},
                matchups=FixedMatchups({"player_1": "a", "player_2": "b"}), num_envs=4, seed=2)
    seats = [{"player_1": x, "player_2": y} for x in pids for y in pids if x < y]
    batch = MatchupBatch([Matchup(p) for p in seats])
    episodes = s.evaluate(10, batch)
    assert sorted(tuple(sorted(e["policies"].items())) for e in episodes) == sorted(tuple(sorted(p.items())) for p in seats)
    assert batch.wraps == 0
    assert all(sorted(e["outcome"].values()) in (["draw", "draw"], ["loss", "win"]) for e in episodes)
    assert len(s.evaluate(3, FixedMatchups({"player_1": "a", "player_2": "b"}))) == 3 and s.evaluate(0, batch) == []
