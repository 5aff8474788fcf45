"""No stale data: rows know which weights produced them, and only the right ones train a policy.

- weights versions travel with the weights and are stamped on every row;
- on-policy plans (PPO, A2C) drop rows of older weights, and count them;
- rows from before a reset or a restore never reach the new weights (DQN's replay included);
- PPO's last minibatch is never a handful of rows; oversized minibatches are refused;
- a truncated agent's bootstrap sees its real legal actions;
- V-trace bootstraps from the learner's value; a training thread never exposes half an update.
"""

from __future__ import annotations

import io
import threading
import time
from dataclasses import dataclass

import numpy as np
import pytest
import torch
from torch import nn

from league.algos import APPO, DQN, IMPALA, PPO, make_algorithm
from league.learn.algorithm import Algorithm, PolicyState, add_version_buffer
from league.algos.dqn import NEXT_ACTION_MASK, IntensityGatedReplay
from league.algos.sgd import minibatch_bounds
from league.algos.vtrace import chunk_ends, vtrace
from league.batch import Columns as C
from league.batch import MultiAgentBatch, SampleBatch
from league.envs import make_env
from league.envs.base import AgentSpec, MultiAgentEnv, TimeStep
from league.envs.gym_env import GymnasiumEnv
from league.flow import LocalIterator
from league.learn import Learner
from league.learn.learner_thread import LearnerThread
from league.learn.staleness import FreshRowsLearner, select_fresh_rows
from league.policy import Policy
from league.sampling import FixedMatchups, Sampler
from league.sampling.versioning import WEIGHTS_VERSION
from algo_helpers import LinearActorCritic
from tests.runner_oracle import EnvRunner

CARTPOLE = make_env("cartpole").spec("agent_0")
SMALL_PPO = {"model": "mlp", "model_kwargs": {"hidden": [16]}, "train_batch_size": 16, "minibatch_size": 16, "num_epochs": 1}


def _cartpole_sampler(algo: Algorithm, seed: int = 0) -> Sampler:
    return Sampler("cartpole", policies={"main": algo}, matchups=FixedMatchups({"agent_0": "main"}), num_envs=2, fragment_length=16, seed=seed)


def _assert_same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


# Versions --------------------------------------------------------------------------------
def test_rows_carry_the_version_of_the_weights_that_chose_them():
    algo = make_algorithm("ppo", CARTPOLE, SMALL_PPO)
    learner = Learner(seed=0)
    learner.add_policy("main", algo)
    sampler = _cartpole_sampler(algo)
    sampler.set_weights(learner.get_weights())
    before = sampler.sample()["main"]
    assert before[WEIGHTS_VERSION].dtype == np.int64 and set(before[WEIGHTS_VERSION]) == {0}

    learner.learn_on_batch(MultiAgentBatch({"main": before}, 32))
    weights = learner.get_weights()
    assert int(weights["main"][WEIGHTS_VERSION]) == 1  # the version travels inside the weights
    sampler.set_weights(weights)
    after = sampler.sample()["main"]
    # The pending row carried over from the last fragment was chosen by the old weights.
    assert set(after[WEIGHTS_VERSION]) <= {0, 1} and (after[WEIGHTS_VERSION] == 1).sum() >= len(after) - 2
    assert learner.policy_versions() == {"main": (1, 0)}


def test_select_fresh_rows_drops_stale_rows_and_other_epochs():
    batch = SampleBatch({WEIGHTS_VERSION: np.array([2, 3, 4, 5, 6, 7]), "x": np.arange(6)})
    found = select_fresh_rows(batch, version=6, epoch=3, max_lag=1)
    # 2: before the epoch; 7: not this lineage (newer than the learner); 3 and 4: lag > 1.
    assert list(found.batch["x"]) == [3, 4] and (found.stale, found.old_epoch) == (2, 2)
    assert found.lag_mean == pytest.approx(0.5)
    everything = select_fresh_rows(batch, version=7, epoch=0, max_lag=None)
    assert everything.batch is batch and everything.stale == everything.old_epoch == 0
    unversioned = SampleBatch({"x": np.arange(3)})
    assert select_fresh_rows(unversioned, 5, 5, 0).batch is unversioned  # nothing says whose rows they are


# On-policy plans ---------------------------------------------------------------------------
def test_ppo_plan_trains_only_on_rows_of_the_current_weights_and_counts_the_rest():
    algo = make_algorithm("ppo", CARTPOLE, SMALL_PPO)
    learner = Learner(seed=0)
    learner.add_policy("main", algo)
    sampler = _cartpole_sampler(algo)
    sampler.set_weights(learner.get_weights())
    # As with async sampling: a second fragment was sampled by the same weights while the
    # learner trained on the first one.
    first, in_flight = sampler.sample(), sampler.sample()

    def rollouts():
        yield first
        yield in_flight
        sampler.set_weights(learner.get_weights())  # the broadcast reaches the sampler
        yield sampler.sample()

    plan = algo.plan_fragment(LocalIterator.from_items(rollouts), learner, ["main"])
    trained = next(plan)
    assert trained.stats["main"]["rows_trained"] == len(first["main"])
    updated = learner.get_weights()["main"]

    stale = next(plan)
    assert stale.stats == {}  # one update old: not PPO's to learn from
    _assert_same(learner.get_weights()["main"], updated)

    fresh = next(plan)
    stats = fresh.stats["main"]
    assert stats["stale_rows_dropped"] >= len(in_flight["main"]) and stats["policy_lag_mean"] == 0.0
    assert stats["weights_version"] == 2.0 and stats["old_epoch_rows_dropped"] == 0.0
    assert PPO(CARTPOLE).config.max_policy_lag == 0


def test_a_larger_max_policy_lag_accepts_rows_that_many_updates_old():
    algo = make_algorithm("ppo", CARTPOLE, {**SMALL_PPO, "max_policy_lag": 1})
    learner = Learner(seed=0)
    learner.add_policy("main", algo)
    sampler = _cartpole_sampler(algo)
    sampler.set_weights(learner.get_weights())
    batches = [sampler.sample() for _ in range(3)]
    fresh = FreshRowsLearner(learner)
    assert fresh.learn_on_batch(batches[0])["main"]["policy_lag_mean"] == 0.0
    assert fresh.learn_on_batch(batches[1])["main"]["policy_lag_mean"] == 1.0  # one update old: accepted
    assert fresh.learn_on_batch(batches[2]) == {}  # two updates old: dropped


def test_a3c_gradients_come_from_fresh_rows_only():
    algo = make_algorithm("a2c", CARTPOLE, {"model": "mlp", "train_batch_size": 16, "plan": "a3c"})
    learner = Learner(seed=0)
    learner.add_policy("main", algo)
    sampler = _cartpole_sampler(algo)
    sampler.set_weights(learner.get_weights())
    first, in_flight = sampler.sample(), sampler.sample()
    plan = algo.plan_fragment(LocalIterator.from_items([first, in_flight]), learner, ["main"])
    next(plan)
    updated = learner.get_weights()["main"]
    second = next(plan)
    assert second.grads == {}  # nothing fresh: no gradient, no step
    _assert_same(learner.get_weights()["main"], updated)


# Resets and restores -----------------------------------------------------------------------
def test_rows_from_before_a_reset_never_train_the_reset_policy():
    algo = make_algorithm("ppo", CARTPOLE, {**SMALL_PPO, "max_policy_lag": 10})  # lag is not the reason here
    learner = Learner(seed=0)
    learner.add_policy("main", algo)
    initial = learner.get_state("main")  # what the league resets an exploiter to
    sampler = _cartpole_sampler(algo)
    sampler.set_weights(learner.get_weights())
    learner.learn_on_batch(sampler.sample(), drop_stale_rows=True)
    before_reset = sampler.sample()  # the trained player's games, still in flight

    learner.set_state("main", initial)  # CoordinatedLeague._reset
    reset = learner.get_weights()["main"]
    version, epoch = learner.policy_versions()["main"]
    assert version == epoch == 2  # a new epoch, above every version handed out before
    assert learner.learn_on_batch(before_reset, drop_stale_rows=True) == {}
    _assert_same(learner.get_weights()["main"], reset)

    sampler.set_weights(learner.get_weights())  # the league re-sends the reset weights
    stats = learner.learn_on_batch(sampler.sample(), drop_stale_rows=True)["main"]
    assert stats["old_epoch_rows_dropped"] >= len(before_reset["main"]) and stats["weights_epoch"] == 2.0

    # A reset to a snapshot's weights (set_weights) starts an epoch just the same.
    learner.set_weights({"main": reset})
    assert learner.policy_versions()["main"] == (4, 4)


def test_a_restored_learner_drops_what_the_dead_one_taught_the_samplers():
    algo = make_algorithm("ppo", CARTPOLE, {**SMALL_PPO, "max_policy_lag": 10})
    learner = Learner(seed=0)
    learner.add_policy("main", algo)
    sampler = _cartpole_sampler(algo)
    sampler.set_weights(learner.get_weights())
    learner.learn_on_batch(sampler.sample())
    checkpoint = learner.get_state("main")  # version 1
    for _ in range(2):
        learner.learn_on_batch(sampler.sample())
    sampler.set_weights(learner.get_weights())  # version 3, then the learner dies
    from_dead_learner = sampler.sample()

    restored = Learner(seed=0)
    restored.add_policy("main", algo)
    restored.set_state("main", checkpoint)
    assert restored.policy_versions()["main"] == (1, 1)  # the checkpoint's own version: resumes count alike
    assert restored.learn_on_batch(from_dead_learner, drop_stale_rows=True) == {}


def test_dqn_replay_of_a_reset_policy_is_emptied_and_old_rows_are_not_stored():
    spec = AgentSpec(obs_shape=(4,), num_actions=2, has_action_mask=False)
    algo = make_algorithm("dqn", spec, {"model": "mlp", "n_step": 1, "learning_starts": 1, "train_batch_size": 8})
    learner = Learner(seed=0)
    learner.add_policy("main", algo)
    initial = learner.get_state("main")
    sampler = _cartpole_sampler(algo)
    sampler.set_weights(learner.get_weights())
    buffer = algo.make_replay_buffer()
    view = IntensityGatedReplay(buffer, ["main"], min_size=8, training_intensity=1.0, learner=learner)
    view.add(sampler.sample())
    assert len(buffer) > 0
    assert FreshRowsLearner(learner).learn_on_batch(view.sample(8))["main"]["weights_version"] == 1.0
    replayed = MultiAgentBatch({"main": buffer.sample("main", 8)}, 8)  # pre-reset rows

    learner.set_state("main", initial)  # the league resets the DQN player
    epoch = learner.policy_versions()["main"][1]
    assert epoch == 2
    # Drawn before the view noticed: the learner itself refuses the old epoch's rows.
    reset = learner.get_weights()["main"]
    assert FreshRowsLearner(learner).learn_on_batch(replayed) == {}
    _assert_same(learner.get_weights()["main"], reset)

    old = sampler.sample()  # still acting with the pre-reset weights
    view.add(old)
    assert len(buffer) == 0 and view.buffer_resets == 1 and view.old_epoch_rows_dropped == len(old["main"])
    assert view.sample(8) is None  # waits for min_size fresh rows again

    sampler.set_weights(learner.get_weights())
    new = sampler.sample()
    view.add(new)
    assert len(buffer) == int((new["main"][WEIGHTS_VERSION] >= epoch).sum()) > 0
    assert (buffer["main"].stored()[WEIGHTS_VERSION] == epoch).all()


# Minibatches -------------------------------------------------------------------------------
def test_minibatch_bounds_fold_a_small_remainder_into_the_last_minibatch():
    assert minibatch_bounds(1030, 512) == [(0, 512), (512, 1030)]  # 6 rows never make a step alone
    assert minibatch_bounds(1300, 512) == [(0, 512), (512, 1024), (1024, 1300)]  # 276 >= 256: a step of its own
    assert minibatch_bounds(100, 512) == [(0, 100)]
    for rows in range(1, 200):
        bounds = minibatch_bounds(rows, 32)
        sizes = [b - a for a, b in bounds]
        assert bounds[0][0] == 0 and bounds[-1][1] == rows and all(b[1] == c[0] for b, c in zip(bounds, bounds[1:]))
        assert len(bounds) == 1 or min(sizes) >= 16 and max(sizes) < 48


def _ppo_batch(rows: int, seed: int = 0) -> SampleBatch:
    rng = np.random.default_rng(seed)
    actions = rng.integers(0, 2, rows)
    return SampleBatch(
        {
            C.OBS: rng.normal(size=(rows, 4)).astype(np.float32),
            C.ACTIONS: actions,
            C.ACTION_MASK: np.ones((rows, 2), np.int8),
            C.ACTION_LOGP: np.full(rows, np.log(0.5), np.float32),
            C.VF_PREDS: rng.normal(size=rows).astype(np.float32),
            C.ADVANTAGES: rng.normal(size=rows).astype(np.float32),
            C.VALUE_TARGETS: rng.normal(size=rows).astype(np.float32),
        }
    )


def test_ppo_never_steps_on_a_handful_of_rows():
    algo = make_algorithm("ppo", CARTPOLE, {"model": "mlp", "minibatch_size": 512, "num_epochs": 3})
    model = algo.make_model()
    stats = algo.learn(PolicyState(model, algo.make_optimizer(model), np.random.default_rng(0)), _ppo_batch(1030))
    assert stats["num_sgd_updates"] == 3 * 2  # not 3 * 3 with a 6-row third minibatch


def test_stacked_ppo_cuts_minibatches_as_ppo_does():
    algo = make_algorithm("ppo", CARTPOLE, {"model": "mlp", "model_kwargs": {"hidden": [8]}, "minibatch_size": 32, "num_epochs": 2})
    batch = MultiAgentBatch({"a": _ppo_batch(70, 1), "b": _ppo_batch(70, 2)}, 70)
    results = []
    for stacked in (True, False):
        learner = Learner(seed=0, stack_same_shaped=stacked)
        learner.add_policy("a", algo)
        learner.add_policy("b", algo)
        stats = learner.learn_on_batch(batch)
        results.append((learner.get_weights(), stats))
    (w_stacked, s_stacked), (w_single, s_single) = results
    assert s_stacked["a"]["num_sgd_updates"] == s_single["a"]["num_sgd_updates"] == 2 * 2
    for pid in "ab":
        for k in w_single[pid]:
            np.testing.assert_allclose(w_stacked[pid][k], w_single[pid][k], rtol=1e-4, atol=1e-6, err_msg=k)


@pytest.mark.parametrize("name", ["ppo", "appo", "impala"])
def test_a_minibatch_larger_than_the_train_batch_is_refused_at_config_time(name):
    with pytest.raises(ValueError, match=rf"{name}\.minibatch_size \(512\) is larger than {name}\.train_batch_size \(256\)"):
        make_algorithm(name, CARTPOLE, {"minibatch_size": 512, "train_batch_size": 256})
    make_algorithm(name, CARTPOLE, {"minibatch_size": 256, "train_batch_size": 256})  # equal is fine


def test_max_policy_lag_is_validated():
    with pytest.raises(ValueError, match=r"ppo\.max_policy_lag must be an integer >= 0"):
        PPO(CARTPOLE, {"max_policy_lag": -1})
    assert IMPALA(CARTPOLE).config.max_policy_lag > 0 and APPO(CARTPOLE, {"max_policy_lag": None}).max_policy_lag() is None
    assert DQN(CARTPOLE).max_policy_lag() is None  # replay: any age, but never another epoch


# Final masks of truncated agents -----------------------------------------------------------
class _TruncatingEnv(MultiAgentEnv):
    """One agent, three actions, truncated after two steps where only action 1 is legal."""

    possible_agents = ["a"]
    FINAL_MASK = np.array([0, 1, 0], np.int8)

    def __init__(self) -> None:
        self._t = 0

    def spec(self, agent: str) -> AgentSpec:
        return AgentSpec(obs_shape=(2,), num_actions=3, has_action_mask=True)

    def reset(self, seed: int | None = None) -> TimeStep:
        self._t = 0
        return TimeStep(obs={"a": np.zeros(2, np.float32)}, masks={"a": np.ones(3, np.int8)})

    def step(self, actions: dict[str, int]) -> TimeStep:
        self._t += 1
        obs = np.full(2, float(self._t), np.float32)
        if self._t < 2:
            return TimeStep(obs={"a": obs}, masks={"a": np.ones(3, np.int8)}, rewards={"a": 0.0})
        return TimeStep(
            obs={}, masks={}, rewards={"a": 1.0}, truncated={"a": True}, done=True,
            final_obs={"a": obs}, final_masks={"a": self.FINAL_MASK.copy()},
        )


@pytest.mark.parametrize("path", ["per_copy", "batched"])
def test_a_truncated_agent_bootstraps_with_its_real_legal_actions(path):
    """On the per-copy runner and on the sampler's training path (VectorizedEnv + BatchedRunner)."""
    from league.envs.batched import VectorizedEnv
    from league.sampling.batched_runner import BatchedRunner

    algo = make_algorithm("dqn", AgentSpec((2,), 3, True), {"model": "mlp", "n_step": 1})
    args = ({"q": algo.make_policy(seed=0)}, {"q": algo}, FixedMatchups({"a": "q"}), np.random.default_rng(0))
    runner = EnvRunner(_TruncatingEnv, 1, *args) if path == "per_copy" else BatchedRunner(VectorizedEnv(_TruncatingEnv, 1), *args)
    runner.step()
    runner.step()
    (chunk,) = runner.drain()["q"]
    assert chunk[C.TRUNCATEDS][-1]
    np.testing.assert_array_equal(chunk[NEXT_ACTION_MASK][-1], _TruncatingEnv.FINAL_MASK)


def test_adapters_report_final_masks_of_truncated_agents():
    env = make_env("tictactoe", max_episode_steps=3)
    ts = env.reset(seed=0)
    for _ in range(3):
        (agent,) = ts.obs
        move = int(np.flatnonzero(ts.masks[agent])[0])
        ts = env.step({agent: move})
    assert set(ts.truncated) == set(ts.final_masks) == set(env.possible_agents)
    legal = [m for m in ts.final_masks.values() if not m.all()]
    assert len(legal) == 1 and legal[0].sum() == 6  # the player to move: 6 empty cells; the other: all ones

    kuhn = make_env("kuhn_poker", max_episode_steps=1)
    ts = kuhn.reset(seed=0)
    ts = kuhn.step({"player_0": 0})
    np.testing.assert_array_equal(ts.final_masks["player_1"], [1, 1])  # to move: pass or bet
    np.testing.assert_array_equal(ts.final_masks["player_0"], [1, 1])  # not to move: nothing known illegal


def test_gymnasium_truncation_reports_the_mask_from_info():
    gym = pytest.importorskip("gymnasium")

    class MaskedCounter(gym.Env):
        observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
        action_space = gym.spaces.Discrete(3)

        def reset(self, seed=None, options=None):
            return np.zeros(1, np.float32), {"action_mask": np.ones(3, np.int8)}

        def step(self, action):
            return np.zeros(1, np.float32), 0.0, False, False, {"action_mask": np.array([1, 0, 1], np.int8)}

    env = GymnasiumEnv(MaskedCounter(), name="masked", max_episode_steps=1)
    env.reset(seed=0)
    ts = env.step({"agent_0": 0})
    np.testing.assert_array_equal(ts.final_masks["agent_0"], [1, 0, 1])


# IMPALA's bootstrap and the learner thread -------------------------------------------------
def test_vtrace_bootstraps_a_cut_chunk_from_the_learners_value():
    algo = IMPALA(AgentSpec((3,), 3, True), {"gamma": 0.9})
    model = LinearActorCritic()
    rng = np.random.default_rng(0)
    n = 5
    traj = SampleBatch(
        {
            C.OBS: rng.normal(size=(n, 3)).astype(np.float32),
            C.ACTIONS: rng.integers(0, 3, n),
            C.ACTION_MASK: np.ones((n, 3), np.int8),
            C.ACTION_LOGP: np.full(n, np.log(1 / 3), np.float32),
            C.REWARDS: rng.normal(size=n).astype(np.float32),
            C.TERMINATEDS: np.zeros(n, bool),
            C.TRUNCATEDS: np.zeros(n, bool),
            C.EPS_ID: np.zeros(n, np.int64),
            C.AGENT_INDEX: np.zeros(n, np.int32),
            C.T: np.arange(n, dtype=np.int32),
        }
    )
    after = np.array([[1.0, -2.0, 0.5]], np.float32)
    # The sampler's behaviour value of the next state is stale (123): it must not be used.
    batch = algo.postprocess_trajectory(traj, {C.OBS: after, C.VF_PREDS: np.array([123.0], np.float32)})
    t = {k: torch.from_numpy(np.asarray(v)) for k, v in batch.items()}
    ends = torch.from_numpy(chunk_ends(batch))
    targets, stats = algo.vtrace_targets(model, t, ends)

    with torch.no_grad():
        logits, values = model(t[C.OBS])
        logp = torch.log_softmax(logits, -1).gather(1, t[C.ACTIONS].long().unsqueeze(1)).squeeze(1)
        learner_value = model(torch.from_numpy(after))[1][0]
    expected = vtrace(t[C.ACTION_LOGP], logp, t[C.REWARDS], values, torch.full((n,), float(learner_value)), ends, gamma=0.9)
    np.testing.assert_allclose(targets[C.VALUE_TARGETS].numpy(), expected.vs.numpy(), rtol=1e-5, atol=1e-6)
    assert stats["bootstrap_value_shift"] == pytest.approx(float(learner_value) - 123.0)

    terminated = SampleBatch({**batch, C.TERMINATEDS: np.eye(n, dtype=bool)[-1]})
    t_term = {k: torch.from_numpy(np.asarray(v)) for k, v in terminated.items()}
    boot = algo.bootstrap_values(model, t_term, torch.from_numpy(chunk_ends(terminated)))
    assert float(boot.abs().sum()) == 0.0  # nothing after termination


@dataclass
class _TwoStepConfig:
    lr: float = 1e-3


class _TwoParams(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Parameter(torch.zeros(4))
        self.b = nn.Parameter(torch.zeros(4))


class _TwoStepAlgorithm(Algorithm):
    """An update that writes its two parameters one after the other, as an optimiser step does."""

    name = "two_step"
    config_class = _TwoStepConfig

    def make_model(self) -> nn.Module:
        return add_version_buffer(_TwoParams())

    def make_policy(self, seed: int | None = None, learns: bool = True) -> Policy:
        raise NotImplementedError

    def learn(self, state: PolicyState, batch: SampleBatch) -> dict[str, float]:
        with torch.no_grad():
            state.model.a.add_(1.0)
            time.sleep(0.002)  # a reader between the two writes would see half an update
            state.model.b.add_(1.0)
        return {"total_loss": 0.0}

    def plan_fragment(self, rollouts, learner, policy_ids):
        raise NotImplementedError


def test_reads_of_a_learner_trained_by_a_thread_never_see_half_an_update():
    learner = Learner(seed=0)
    learner.add_policy("p", _TwoStepAlgorithm(AgentSpec((1,), 2, False)))
    thread = LearnerThread(learner, ["p"], queue_size=64)
    item = MultiAgentBatch({"p": SampleBatch({"x": np.zeros(1, np.float32)})}, 1)
    stop = threading.Event()

    def feed() -> None:
        while not stop.is_set():
            try:
                thread.inqueue.put(item, timeout=0.01)
            except Exception:  # noqa: BLE001 - a full queue: try again
                pass

    feeder = threading.Thread(target=feed, daemon=True)
    with thread:
        feeder.start()
        reads = 0
        deadline = time.monotonic() + 60
        try:
            # Until both: 40 updates, and reads interleaved with them (the feeder keeps the
            # learner training meanwhile; a loaded machine can make either side the slow one).
            while (thread.num_batches < 40 or reads <= 10) and time.monotonic() < deadline:
                # What BroadcastWeights, a snapshot and a checkpoint read: the learner itself.
                weights = learner.get_weights(["p"])["p"]
                np.testing.assert_array_equal(weights["a"], weights["b"])
                state = torch.load(io.BytesIO(learner.get_state("p")), weights_only=True)["model"]
                torch.testing.assert_close(state["a"], state["b"])
                reads += 1
        finally:
            stop.set()
            feeder.join(5)
    assert thread.num_batches >= 40 and reads > 10 and thread.error is None
    assert int(learner.get_weights()["p"][WEIGHTS_VERSION]) == thread.num_batches
