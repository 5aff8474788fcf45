"""DQN: n-step transitions by hand (sampler postprocessing + the buffer's n-step writer),
double-Q targets against numpy, masking, exploration, target network, prioritized replay
through the plan, and a short CartPole learning run."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from league.learn.algorithm import PolicyState
from league.algos.dqn import DISCOUNTS, DQN, N_STEP_RETURNS, NEXT_ACTION_MASK, TD_ERROR, UpdatePriorities
from league.algos.q_models import QNetwork, build_q_model, masked_argmax, masked_max
from league.algos.q_policy import EpsilonGreedyQPolicy
from league.algos.schedules import ConstantSchedule, LinearSchedule, PiecewiseLinearSchedule
from league.batch import Columns as C
from league.batch import MultiAgentBatch, SampleBatch
from league.envs import make_env
from league.envs.base import AgentSpec
from league.flow import BroadcastWeights, ParallelRollouts, TrainResult
from league.flow.metrics import PlanMetrics
from league.learn import Learner
from league.replay import MultiAgentReplayBuffer, NStepWriter, PrioritizedReplayBuffer, ReplayBuffer, RingStorage
from league.replay import n_step_transitions
from league.sampling import FixedMatchups, Sampler
from algo_helpers import SOLVED_RETURN, SOLVED_WINDOW, train_until_solved

SPEC = AgentSpec(obs_shape=(2,), num_actions=3, has_action_mask=True)


def _chunk(rewards):
    n = len(rewards)
    return SampleBatch({
        C.OBS: np.arange(n * 2, dtype=np.float32).reshape(n, 2), C.ACTIONS: np.zeros(n, np.int64),
        C.ACTION_MASK: np.tile(np.array([1, 0, 1], np.int8), (n, 1)), C.REWARDS: np.asarray(rewards, np.float32),
    })


def _n_step(algo, chunk, next_step):
    """One agent's chunk through the sampler's postprocessing and the replay buffer's n-step
    writer (as DQN composes it), then flushed: the transitions as stored, in time order."""
    out = algo.postprocess_trajectory(chunk, next_step)
    n = len(out)
    out[C.TERMINATEDS] = np.arange(n) == n - 1 if next_step is None else np.zeros(n, bool)
    out[C.TRUNCATEDS] = np.zeros(n, bool)
    out[C.EPS_ID], out[C.AGENT_INDEX], out[C.T] = np.zeros(n, np.int64), np.zeros(n, np.int32), np.arange(n)
    buffer = ReplayBuffer(RingStorage(16), writer=NStepWriter(algo.config.n_step, algo.config.gamma), seed=0)
    buffer.add(out)
    buffer.flush()  # a cut chunk's last rows wait for the trajectory's next rows; flushed, they bootstrap early
    return buffer.stored()


# n-step transitions ------------------------------------------------------------------
def test_n_step_terminated_chunk_by_hand():
    algo = DQN(SPEC, {"n_step": 2, "gamma": 0.5})
    out = _n_step(algo, _chunk([1.0, 2.0, 3.0, 4.0]), None)
    np.testing.assert_allclose(out[N_STEP_RETURNS], [1 + 0.5 * 2, 2 + 0.5 * 3, 3 + 0.5 * 4, 4])
    # Rows 2 and 3 reach the terminal state: nothing to bootstrap from.
    np.testing.assert_allclose(out[DISCOUNTS], [0.25, 0.25, 0.0, 0.0])
    np.testing.assert_array_equal(out[C.NEXT_OBS][:2], out[C.OBS][2:4])
    np.testing.assert_array_equal(out[NEXT_ACTION_MASK][:2], out[C.ACTION_MASK][2:4])
    assert out[N_STEP_RETURNS].dtype == np.float32 and out[DISCOUNTS].dtype == np.float32


def test_n_step_cut_chunk_bootstraps_from_next_step_with_shortened_horizon():
    algo = DQN(SPEC, {"n_step": 3, "gamma": 0.5})
    next_step = {C.OBS: np.array([[10.0, 11.0]], np.float32), C.ACTION_MASK: np.array([[0, 1, 0]], np.int8)}
    out = _n_step(algo, _chunk([1.0, 2.0, 3.0, 4.0]), next_step)
    np.testing.assert_allclose(
        out[N_STEP_RETURNS], [1 + 0.5 * 2 + 0.25 * 3, 2 + 0.5 * 3 + 0.25 * 4, 3 + 0.5 * 4, 4]
    )
    np.testing.assert_allclose(out[DISCOUNTS], [0.125, 0.125, 0.25, 0.5])
    np.testing.assert_array_equal(out[C.NEXT_OBS][0], out[C.OBS][3])
    np.testing.assert_array_equal(out[C.NEXT_OBS][1:], np.tile([10.0, 11.0], (3, 1)))
    np.testing.assert_array_equal(out[NEXT_ACTION_MASK][0], [1, 0, 1])
    np.testing.assert_array_equal(out[NEXT_ACTION_MASK][1:], np.tile([0, 1, 0], (3, 1)))


def test_n_step_longer_than_chunk_and_missing_next_mask_means_all_legal():
    cols = n_step_transitions(
        np.zeros((2, 2), np.float32), np.zeros((2, 3), np.int8), np.array([1.0, 1.0], np.float32),
        np.ones((1, 2), np.float32), None, n=5, gamma=0.9,
    )
    np.testing.assert_allclose(cols[N_STEP_RETURNS], [1.9, 1.0], rtol=1e-6)
    np.testing.assert_allclose(cols[DISCOUNTS], [0.81, 0.9], rtol=1e-6)
    np.testing.assert_array_equal(cols[NEXT_ACTION_MASK], np.ones((2, 3)))


@pytest.mark.parametrize("seed", range(5))
def test_n_step_matches_a_loop(seed):
    rng = np.random.default_rng(seed)
    steps, n, gamma = int(rng.integers(1, 12)), int(rng.integers(1, 6)), 0.9
    terminated = bool(rng.integers(2))
    obs = rng.normal(size=(steps, 2)).astype(np.float32)
    masks = rng.integers(0, 2, (steps, 3)).astype(np.int8)
    rewards = rng.normal(size=steps).astype(np.float32)
    nxt_obs, nxt_mask = rng.normal(size=(1, 2)).astype(np.float32), np.array([[1, 1, 0]], np.int8)
    cols = n_step_transitions(obs, masks, rewards, None if terminated else nxt_obs, nxt_mask, n, gamma)
    all_obs, all_masks = np.concatenate([obs, nxt_obs]), np.concatenate([masks, nxt_mask])
    for t in range(steps):
        k = min(n, steps - t)
        assert cols[N_STEP_RETURNS][t] == pytest.approx(sum(gamma**i * rewards[t + i] for i in range(k)), rel=1e-5)
        done = terminated and t + k == steps
        assert cols[DISCOUNTS][t] == pytest.approx(0.0 if done else gamma**k, rel=1e-6)
        if not done:
            np.testing.assert_array_equal(cols[C.NEXT_OBS][t], all_obs[t + k])
            np.testing.assert_array_equal(cols[NEXT_ACTION_MASK][t], all_masks[t + k])


# Q-values, targets and masking ------------------------------------------------------
class _LinearQ(nn.Module):
    """q = obs @ w: small enough to compute targets by hand."""

    def __init__(self, w) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.tensor(w, dtype=torch.float32))

    def forward(self, obs):
        return obs @ self.w


ONLINE_W = [[1.0, 0.0, 2.0], [0.0, 1.0, -1.0]]
TARGET_W = [[0.5, 3.0, 1.0], [2.0, 0.0, 0.0]]


def _batch():
    return {
        C.OBS: torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]),
        C.ACTIONS: torch.tensor([2, 0, 1]),
        N_STEP_RETURNS: torch.tensor([1.0, -0.5, 2.0]),
        DISCOUNTS: torch.tensor([0.9, 0.81, 0.0]),
        C.NEXT_OBS: torch.tensor([[2.0, 1.0], [0.0, 2.0], [1.0, -1.0]]),
        NEXT_ACTION_MASK: torch.tensor([[1, 1, 1], [1, 0, 1], [1, 1, 1]], dtype=torch.int8),
    }


def _np_targets(mb, double_q):
    online, target = np.array(ONLINE_W), np.array(TARGET_W)
    nxt = mb[C.NEXT_OBS].numpy()
    mask = mb[NEXT_ACTION_MASK].numpy() > 0
    chooser = nxt @ (online if double_q else target)
    a = np.where(mask, chooser, -np.inf).argmax(1)
    return mb[N_STEP_RETURNS].numpy() + mb[DISCOUNTS].numpy() * (nxt @ target)[np.arange(3), a]


@pytest.mark.parametrize("double_q", [True, False])
def test_td_targets_match_numpy(double_q):
    algo = DQN(SPEC, {"double_q": double_q, "loss": "mse"})
    mb = _batch()
    loss, td, _ = algo.loss(_LinearQ(ONLINE_W), _LinearQ(TARGET_W), mb)
    q = (mb[C.OBS].numpy() @ np.array(ONLINE_W))[np.arange(3), mb[C.ACTIONS].numpy()]
    expected_td = q - _np_targets(mb, double_q)
    np.testing.assert_allclose(td.numpy(), expected_td, rtol=1e-6)
    assert loss.item() == pytest.approx(np.mean(0.5 * expected_td**2), rel=1e-6)
    # On this batch double-Q and max-Q targets differ, so the test tells them apart.
    assert not np.allclose(_np_targets(mb, True), _np_targets(mb, False))


def test_importance_weights_and_huber():
    algo = DQN(SPEC, {"loss": "huber", "huber_delta": 1.0})
    mb = _batch()
    mb[C.WEIGHTS] = torch.tensor([0.5, 0.25, 0.125])
    loss, td, _ = algo.loss(_LinearQ(ONLINE_W), _LinearQ(TARGET_W), mb)
    x = np.abs(td.numpy())
    huber = np.where(x <= 1, 0.5 * x**2, x - 0.5)
    assert loss.item() == pytest.approx(np.mean(huber * np.array([1.0, 0.5, 0.25])), rel=1e-6)


def test_illegal_next_actions_never_leak_into_targets():
    algo = DQN(SPEC, {"double_q": True, "loss": "mse"})
    mb = _batch()
    mb[NEXT_ACTION_MASK] = torch.tensor([[1, 0, 0], [0, 0, 1], [0, 1, 0]], dtype=torch.int8)
    online = _LinearQ(ONLINE_W)

    class _HugeOnIllegal(nn.Module):
        """Target net whose illegal actions are worth 1e30 on the next states."""

        def forward(self, obs):
            q = _LinearQ(TARGET_W)(obs)
            if obs.shape == mb[C.NEXT_OBS].shape and torch.equal(obs, mb[C.NEXT_OBS]):
                q = torch.where(mb[NEXT_ACTION_MASK].bool(), q, torch.full_like(q, 1e30))
            return q

    _, td, _ = algo.loss(online, _HugeOnIllegal(), mb)
    legal = mb[NEXT_ACTION_MASK].numpy().argmax(1)  # one legal action per row
    q = (mb[C.OBS].numpy() @ np.array(ONLINE_W))[np.arange(3), mb[C.ACTIONS].numpy()]
    nxt_v = (mb[C.NEXT_OBS].numpy() @ np.array(TARGET_W))[np.arange(3), legal]
    targets = mb[N_STEP_RETURNS].numpy() + mb[DISCOUNTS].numpy() * nxt_v
    np.testing.assert_allclose(td.numpy(), q - targets, rtol=1e-6)
    assert np.abs(td.numpy()).max() < 100


def test_masked_argmax_and_max_ignore_huge_illegal_values():
    q = torch.tensor([[1e30, 1.0, 2.0], [5.0, 1e30, -3.0]])
    mask = torch.tensor([[0, 1, 1], [0, 0, 1]], dtype=torch.int8)
    assert masked_argmax(q, mask).tolist() == [2, 2]
    assert masked_max(q, mask).tolist() == [2.0, -3.0]


def test_dueling_head_mean_over_actions_is_the_value():
    model = build_q_model("mlp", (4,), 5, dueling=True)
    obs = torch.randn(8, 4)
    _, value = model.body(obs)
    torch.testing.assert_close(model(obs).mean(-1), value)
    plain = QNetwork(model.body, dueling=False)
    adv, value = model.body(obs)
    torch.testing.assert_close(plain(obs), adv + value[:, None])


# The sampler-side policy and exploration ----------------------------------------------
class _ConstQ(nn.Module):
    """The same Q-values for every observation; the illegal action 0 looks best by far."""

    def forward(self, obs):
        return torch.tensor([1e30, 1.0, 2.0, 0.5]).expand(len(obs), 4)


def _mask(n, rng):
    m = rng.integers(0, 2, (n, 4)).astype(np.int8)
    m[:, 0] = 0
    m[np.arange(n), rng.integers(1, 4, n)] = 1  # at least one legal action per row
    return m


def test_policy_never_picks_an_illegal_action():
    rng = np.random.default_rng(0)
    for eps in (0.0, 0.5, 1.0):
        policy = EpsilonGreedyQPolicy(_ConstQ(), ConstantSchedule(eps), seed=1)
        for explore in (True, False):
            mask = _mask(500, rng)
            out = policy.compute_actions(np.zeros((500, 3), np.float32), mask, explore)
            assert mask[np.arange(500), out[C.ACTIONS]].all()
            np.testing.assert_array_equal(out[C.ACTION_MASK], mask)


def test_epsilon_zero_is_greedy_and_one_is_uniform_over_legal_actions():
    mask = np.tile(np.array([0, 1, 1, 1], np.int8), (3000, 1))
    obs = np.zeros((3000, 3), np.float32)
    greedy = EpsilonGreedyQPolicy(_ConstQ(), ConstantSchedule(0.0), seed=0).compute_actions(obs, mask)
    assert (greedy[C.ACTIONS] == 2).all()
    uniform = EpsilonGreedyQPolicy(_ConstQ(), ConstantSchedule(1.0), seed=0).compute_actions(obs, mask)
    counts = np.bincount(uniform[C.ACTIONS], minlength=4)
    assert counts[0] == 0 and (np.abs(counts[1:] - 1000) < 150).all(), counts


def test_linear_and_piecewise_schedules():
    s = LinearSchedule(1.0, 0.1, 100)
    assert [s(0), s(50), s(100), s(10_000), s(-5)] == pytest.approx([1.0, 0.55, 0.1, 0.1, 1.0])
    assert s.final_value == 0.1 and LinearSchedule(1.0, 0.2, 0)(0) == 0.2
    p = PiecewiseLinearSchedule([(0, 0.0), (10, 1.0), (30, 0.0)])
    assert [p(5), p(10), p(20), p(99)] == pytest.approx([0.5, 1.0, 0.5, 0.0])
    with pytest.raises(ValueError, match="strictly increasing"):
        PiecewiseLinearSchedule([(0, 1.0), (0, 2.0)])
    with pytest.raises(ValueError, match="duration"):
        LinearSchedule(1.0, 0.0, -1)


def test_policy_epsilon_follows_its_exploring_steps():
    algo = DQN(SPEC, {"epsilon_start": 1.0, "epsilon_final": 0.1, "epsilon_steps": 100})
    policy = algo.make_policy(seed=0)
    obs, mask = np.zeros((10, 2), np.float32), np.ones((10, 3), np.int8)
    assert policy.epsilon == 1.0
    for _ in range(5):
        policy.compute_actions(obs, mask, explore=True)
    assert policy.epsilon == pytest.approx(0.55)
    policy.compute_actions(obs, mask, explore=False)  # greedy calls (evaluation) do not count
    assert policy.epsilon == pytest.approx(0.55)
    policy.set_weights(algo.make_policy(seed=1).get_weights())  # new weights keep the count
    assert policy.epsilon == pytest.approx(0.55)
    for _ in range(20):
        policy.compute_actions(obs, mask, explore=True)
    assert policy.epsilon == pytest.approx(0.1)
    # A snapshot (does not learn) plays with the final epsilon from the start.
    assert algo.make_policy(seed=0, learns=False).epsilon == pytest.approx(0.1)


# Learner side: target network and learn -----------------------------------------------
def _replay_like_batch(n, rng, weights=True):
    cols = {
        C.OBS: rng.normal(size=(n, 2)).astype(np.float32),
        C.ACTIONS: rng.integers(0, 3, n),
        N_STEP_RETURNS: rng.normal(size=n).astype(np.float32),
        DISCOUNTS: np.full(n, 0.9, np.float32),
        C.NEXT_OBS: rng.normal(size=(n, 2)).astype(np.float32),
        NEXT_ACTION_MASK: np.ones((n, 3), np.int8),
    }
    if weights:
        cols[C.WEIGHTS] = np.ones(n, np.float32)
    return SampleBatch(cols)


def _online_and_target(learner: Learner, pid: str = "q") -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """The online and target networks' parameters, as the learner's public state holds them
    (``get_state``: the model and the algorithm's module extras, DQN's target network)."""
    import io

    state = torch.load(io.BytesIO(learner.get_state(pid)), weights_only=True)
    names = [k for k, v in state["model"].items() if v.is_floating_point()]
    return [state["model"][k] for k in names], [state["extra"]["target_model"][k] for k in names]


@pytest.mark.parametrize("tau", [1.0, 0.25])
def test_target_network_moves_only_on_update_target(tau):
    algo = DQN(SPEC, {"lr": 1e-2, "tau": tau})
    learner = Learner(seed=0)
    learner.add_policy("q", algo)
    online, initial = _online_and_target(learner)
    assert all(torch.equal(a, b) for a, b in zip(initial, online))
    batch = MultiAgentBatch({"q": _replay_like_batch(32, np.random.default_rng(0))}, 32)
    for _ in range(3):
        learner.learn_on_batch(batch)
    online, target = _online_and_target(learner)
    assert not all(torch.equal(a, b) for a, b in zip(online, initial))
    assert all(torch.equal(a, b) for a, b in zip(target, initial))
    learner.update_target(["q"])
    _, target = _online_and_target(learner)
    for t, o, i in zip(target, online, initial):
        torch.testing.assert_close(t, tau * o + (1 - tau) * i)


def test_learn_returns_td_errors_only_for_weighted_batches():
    algo = DQN(SPEC)
    model = algo.make_model()
    state = PolicyState(model, algo.make_optimizer(model), np.random.default_rng(0), algo.init_extra_state(model))
    rng = np.random.default_rng(0)
    stats = algo.learn(state, _replay_like_batch(16, rng))
    assert stats[TD_ERROR].shape == (16,) and stats[TD_ERROR].dtype == np.float32 and (stats[TD_ERROR] >= 0).all()
    assert all(isinstance(v, float) for k, v in stats.items() if k != TD_ERROR)
    assert TD_ERROR not in algo.learn(state, _replay_like_batch(16, rng, weights=False))


def test_steps_per_call_takes_the_steps_one_step_calls_take_on_the_slices():
    # A learner actor (learner=gpu) paid a Ray round trip per DQN step: 109 steps/s on an H100.
    rng = np.random.default_rng(0)
    batch = _replay_like_batch(32, rng)
    one, four = DQN(SPEC, {"lr": 1e-2}), DQN(SPEC, {"lr": 1e-2, "steps_per_call": 4, "target_update_interval": 500})
    states = []
    for algo in (one, four):
        torch.manual_seed(0)
        model = algo.make_model()
        states.append(PolicyState(model, algo.make_optimizer(model), np.random.default_rng(0), algo.init_extra_state(model)))
    per_step = [one.learn(states[0], batch[np.arange(i * 8, (i + 1) * 8)]) for i in range(4)]
    joined = four.learn(states[1], batch)
    for a, b in zip(states[0].model.parameters(), states[1].model.parameters()):
        torch.testing.assert_close(a, b)
    np.testing.assert_array_equal(joined[TD_ERROR], np.concatenate([s[TD_ERROR] for s in per_step]))
    assert joined["gradient_steps"] == 4.0 and joined["loss"] == pytest.approx(np.mean([s["loss"] for s in per_step]))
    # Rows dropped before the update (a past epoch's) leave slices at most one row apart.
    uneven = four.learn(states[1], _replay_like_batch(30, rng))
    assert uneven["gradient_steps"] == 4.0 and uneven[TD_ERROR].shape == (30,)


@pytest.mark.parametrize(("params", "message"), [
    ({"steps_per_call": 0}, "dqn.steps_per_call must be an integer >= 1"),
    ({"steps_per_call": 3}, r"target_update_interval \(500\) must be a multiple of dqn.steps_per_call \(3\)"),
])  # fmt: skip
def test_steps_per_call_config_is_checked(params, message):
    with pytest.raises(ValueError, match=message):
        DQN(SPEC, params)


# Prioritized replay and the plan --------------------------------------------------------
def test_update_priorities_writes_abs_td_errors_and_strips_them_from_stats():
    buffer = MultiAgentReplayBuffer(PrioritizedReplayBuffer, capacity=16, alpha=0.5, seed=0)
    buffer.add(MultiAgentBatch({"q": SampleBatch({"x": np.arange(8, dtype=np.float32)})}, 8))
    replayed = buffer.sample("q", 4)
    idx = replayed[C.BATCH_INDEXES]
    td = np.array([-2.0, 0.5, 3.0, 1.0], np.float32)[: len(idx)]
    stats = {"q": {"loss": 1.0, TD_ERROR: td}}
    op = UpdatePriorities(buffer, ["q"], eps=0.01)
    op(TrainResult(MultiAgentBatch({"q": replayed}, 4), stats), PlanMetrics())
    assert stats == {"q": {"loss": 1.0}}
    leaves = buffer["q"].leaf_values()
    # A slot drawn twice keeps the later write.
    expected = {int(i): (abs(float(e)) + 0.01) ** 0.5 for i, e in zip(idx, td)}
    for i, v in expected.items():
        assert leaves[i] == pytest.approx(v, rel=1e-6)
    untouched = np.setdiff1d(np.arange(8), idx)
    np.testing.assert_allclose(leaves[untouched], 1.0)


def _cartpole(algo, num_envs=2, fragment_length=8, seed=0):
    sampler = Sampler(
        "cartpole", policies={"main": algo}, matchups=FixedMatchups({"agent_0": "main"}),
        num_envs=num_envs, fragment_length=fragment_length, seed=seed,
    )
    learner = Learner(seed=seed)
    learner.add_policy("main", algo)
    sampler.set_weights(learner.get_weights())
    return sampler, learner


SMALL = {"model": "mlp", "learning_starts": 32, "train_batch_size": 16, "replay_seed": 0,
         "training_intensity": 4.0, "target_update_interval": 2, "model_kwargs": {"hidden": (16,)}}


def test_plan_prints_its_operators_and_updates_priorities():
    spec = make_env("cartpole").spec("agent_0")
    algo = DQN(spec, SMALL)
    sampler, learner = _cartpole(algo)
    buffer = algo.make_replay_buffer()
    plan = algo.plan_fragment(ParallelRollouts([sampler], mode="bulk_sync"), learner, ["main"], buffer=buffer)
    text = str(plan)
    order = ["DQN(round_robin", "StoreToReplayBuffer", "Replay(batch_size=16", "TrainOneStep",
             "UpdatePriorities", "CountTrainSteps", "UpdateTargetNetwork"]
    positions = [text.index(name) for name in order]
    assert positions == sorted(positions), text
    result = next(plan)
    assert isinstance(result, TrainResult)
    assert len(buffer["main"]) >= 32  # trained only once learning_starts rows were stored
    leaves = buffer["main"].leaf_values()
    replayed = result.batch["main"][C.BATCH_INDEXES]
    assert not np.allclose(leaves[replayed], 1.0)  # new rows enter at priority 1; replayed ones moved
    assert (np.delete(leaves, replayed) == 1.0).all()
    assert TD_ERROR not in result.stats["main"] and TD_ERROR not in plan.metrics.learner_stats["main"]
    for _ in range(4):
        next(plan)
    counters = plan.metrics.counters
    assert counters["num_train_steps[main]"] == 5
    assert counters["num_target_updates"] == 2  # after updates 2 and 4


@pytest.mark.parametrize("prioritized", [True, False])
def test_replay_buffer_is_the_configured_composition(prioritized):
    algo = DQN(SPEC, {"buffer_size": 123, "n_step": 4, "gamma": 0.9, "alpha": 0.5, "beta": 0.3,
                      "prioritized_replay": prioritized, "replay_seed": 0})
    buffer = algo.make_replay_buffer()
    sampler = {"kind": "prioritized", "alpha": 0.5, "beta": 0.3} if prioritized else {"kind": "uniform"}
    assert buffer.template == {
        "storage": {"kind": "ring", "capacity": 123}, "sampler": sampler,
        "writer": {"kind": "n_step", "n": 4, "gamma": 0.9, "inner": {"kind": "ring"}, "flush_after": 1000},
    }


def test_uniform_replay_plan_trains_without_priorities():
    spec = make_env("cartpole").spec("agent_0")
    algo = DQN(spec, {**SMALL, "prioritized_replay": False})
    sampler, learner = _cartpole(algo)
    plan = algo.plan_fragment(ParallelRollouts([sampler], mode="bulk_sync"), learner, ["main"])
    assert "UpdatePriorities" not in str(plan)
    result = next(plan)
    assert set(result.stats["main"]) >= {"loss", "mean_q"} and TD_ERROR not in result.stats["main"]


def test_bad_config_is_rejected():
    with pytest.raises(ValueError, match="unknown key.*'epsilon'"):
        DQN(SPEC, {"epsilon": 0.1})
    with pytest.raises(ValueError, match="dqn.n_step must be positive"):
        DQN(SPEC, {"n_step": 0})
    with pytest.raises(ValueError, match="dqn.gamma must lie in"):
        DQN(SPEC, {"gamma": 1.5})
    with pytest.raises(ValueError, match="dqn.loss must be"):
        DQN(SPEC, {"loss": "l1"})
    with pytest.raises(ValueError, match="dqn.tau"):
        DQN(SPEC, {"tau": 0.0})
    with pytest.raises(ValueError, match="integer"):
        DQN(SPEC, {"epsilon_steps": 10.5})


# Learning --------------------------------------------------------------------------


@pytest.mark.slow
def test_dqn_learns_cartpole_in_process():
    # One pull is one gradient step. Seeds 0-5 solve in 3.2k-7.5k steps (26k-60k env steps,
    # 15-45 s on 2 busy cores); 20 greedy episodes right after average 328-435.
    torch.manual_seed(0)
    spec = make_env("cartpole").spec("agent_0")
    algo = DQN(spec, {
        "model": "mlp", "model_kwargs": {"hidden": (128, 128)}, "lr": 1e-3, "n_step": 3,
        "learning_starts": 500, "epsilon_steps": 5000, "epsilon_final": 0.01, "target_update_interval": 50,
        "training_intensity": 8.0, "replay_seed": 0,
    })
    sampler, learner = _cartpole(algo, num_envs=4, fragment_length=8)
    plan = algo.plan_fragment(ParallelRollouts([sampler], mode="bulk_sync"), learner, ["main"]).for_each(
        BroadcastWeights(learner, [sampler], ["main"])
    )
    returns, steps = train_until_solved(plan, sampler, max_items=12_000)
    first, last = np.mean(returns[:SOLVED_WINDOW]), np.mean(returns[-SOLVED_WINDOW:])
    assert first < 50 and last >= SOLVED_RETURN, (steps, first, last)
