"""Tests of league.flow: operator semantics with local fakes, plus a few with real Ray actors."""

from __future__ import annotations

import queue
import sys

import numpy as np
import pytest

from league.batch import MultiAgentBatch, SampleBatch
from league.flow import (
    NOT_READY,
    PLAN_IDLE,
    NUM_AGENT_STEPS_SAMPLED,
    NUM_AGENT_STEPS_STORED,
    NUM_AGENT_STEPS_TRAINED,
    NUM_ENV_STEPS_SAMPLED,
    NUM_ENV_STEPS_TRAINED,
    NUM_TARGET_UPDATES,
    NUM_WEIGHT_BROADCASTS,
    ApplyGradients,
    BroadcastWeights,
    ComputeGradients,
    ConcatBatches,
    Concurrently,
    Dequeue,
    Enqueue,
    Gradients,
    LocalIterator,
    ParallelIterator,
    ParallelRollouts,
    PlanError,
    PlanStalledError,
    Replay,
    SelectExperiences,
    StandardizeFields,
    StandardMetricsReporting,
    StoreToReplayBuffer,
    TrainOneStep,
    TrainResult,
    UpdateTargetNetwork,
    WaitUntilTimestepsElapsed,
)


# Fakes ---------------------------------------------------------------------------------
def make_batch(env_steps: int, rows: dict[str, int], value: float = 0.0, seed: int = 0) -> MultiAgentBatch:
    """A MultiAgentBatch with ``rows[pid]`` rows per policy (obs filled with ``value``)."""
    rng = np.random.default_rng(seed)
    return MultiAgentBatch(
        {
            pid: SampleBatch(
                {
                    "obs": np.full((n, 2), value, dtype=np.float32),
                    "advantages": (rng.normal(size=n) * 5 + 3).astype(np.float32),
                }
            )
            for pid, n in rows.items()
        },
        env_steps,
    )


class FakeSampler:
    """Produces batches of ``env_steps`` steps with ``rows`` rows per policy."""

    def __init__(self, env_steps: int = 3, rows: dict[str, int] | None = None, value: float = 0.0) -> None:
        self.env_steps = env_steps
        self.rows = rows or {"p0": 3, "p1": 2}
        self.value = value
        self.num_samples = 0
        self.weights: dict | None = None
        self.fail_with: Exception | None = None

    def sample(self) -> MultiAgentBatch:
        if self.fail_with is not None:
            raise self.fail_with
        self.num_samples += 1
        return make_batch(self.env_steps, self.rows, self.value, seed=self.num_samples)

    def set_weights(self, weights: dict) -> None:
        self.weights = weights

    def pop_episode_stats(self) -> list[dict]:
        return [{"episode_len": 4, "returns": {"a": 1.0, "b": -1.0}, "policies": {"a": "p0", "b": "p1"}}]


class FakeLearner:
    """Records every call; returns per-policy stats and versioned weights."""

    def __init__(self) -> None:
        self.learn_calls: list[tuple[MultiAgentBatch, list[str] | None, dict]] = []
        self.target_updates: list[list[str] | None] = []
        self.applied: list = []
        self.version = 0
        self.fail_with: Exception | None = None

    def learn_on_batch(self, batch: MultiAgentBatch, policy_ids: list[str] | None, **kwargs: int) -> dict:
        if self.fail_with is not None:
            raise self.fail_with
        self.learn_calls.append((batch, policy_ids, kwargs))
        self.version += 1
        return {pid: {"loss": float(len(batch[pid]))} for pid in (policy_ids or batch.policy_ids())}

    def get_weights(self, policy_ids: list[str] | None) -> dict:
        return {pid: {"w": np.full(3, float(self.version))} for pid in (policy_ids or ["p0", "p1"])}

    def update_target(self, policy_ids: list[str] | None) -> None:
        self.target_updates.append(policy_ids)

    def compute_gradients(self, batch: MultiAgentBatch) -> dict:
        return {"g": np.ones(2) * batch.env_steps}

    def apply_gradients(self, grads: dict) -> dict:
        self.applied.append(grads)
        return {"p0": {"grad_norm": float(grads["g"].sum())}}


class FakeBuffer:
    """Replay storage with add/sample/len."""

    def __init__(self) -> None:
        self.added: list = []

    def add(self, batch) -> None:
        self.added.append(batch)

    def __len__(self) -> int:
        return sum(len(b) for b in self.added)

    def sample(self, batch_size: int) -> SampleBatch:
        return SampleBatch({"x": np.arange(batch_size)})


def items(values, name: str = "Items") -> LocalIterator:
    return LocalIterator.from_items(list(values), name=name)


def pull(plan: LocalIterator, n: int) -> list:
    return [next(plan) for _ in range(n)]


# Sources and transforms ----------------------------------------------------------------
def test_bulk_sync_rollouts_concat_all_samplers_and_count_steps():
    samplers = [FakeSampler(3, value=1.0), FakeSampler(3, value=2.0)]
    plan = ParallelRollouts(samplers, mode="bulk_sync")
    batch = next(plan)
    assert isinstance(batch, MultiAgentBatch)
    assert batch.env_steps == 6 and len(batch["p0"]) == 6 and len(batch["p1"]) == 4
    assert sorted(set(batch["p0"]["obs"][:, 0].tolist())) == [1.0, 2.0]
    next(plan)
    assert plan.metrics.counters[NUM_ENV_STEPS_SAMPLED] == 12
    assert plan.metrics.counters[NUM_AGENT_STEPS_SAMPLED] == 20
    assert [s.num_samples for s in samplers] == [2, 2]


def test_async_rollouts_with_local_samplers_alternate_and_zip_source():
    samplers = [FakeSampler(2, value=1.0), FakeSampler(5, value=2.0)]
    plan = ParallelRollouts(samplers, mode="async").zip_with_source_actor()
    got = pull(plan, 4)
    assert [s for s, _ in got] == [samplers[0], samplers[1], samplers[0], samplers[1]]
    assert [b.env_steps for _, b in got] == [2, 5, 2, 5]
    assert plan.metrics.counters[NUM_ENV_STEPS_SAMPLED] == 14


def test_raw_mode_returns_parallel_iterator():
    raw = ParallelRollouts([FakeSampler(), FakeSampler()], mode="raw")
    assert isinstance(raw, ParallelIterator)
    first = next(raw.gather_sync())
    assert len(first) == 2 and all(isinstance(b, MultiAgentBatch) for b in first)


def test_select_experiences_keeps_only_named_policies():
    plan = ParallelRollouts([FakeSampler(3)]).for_each(SelectExperiences(["p1"]))
    batch = next(plan)
    assert batch.policy_ids() == ["p1"] and batch.env_steps == 3 and len(batch["p1"]) == 2
    with pytest.raises(TypeError, match="list of policy ids"):
        SelectExperiences("p1")


def test_concat_batches_env_steps_sizes_and_operator_counts():
    plan = ParallelRollouts([FakeSampler(3)]).combine(ConcatBatches(8))
    outs = pull(plan, 2)
    # 3 + 3 + 3 >= 8: every output concatenates three samples.
    assert [b.env_steps for b in outs] == [9, 9]
    assert [len(b["p0"]) for b in outs] == [9, 9] and [len(b["p1"]) for b in outs] == [6, 6]
    stats = plan.metrics.operators["ConcatBatches"]
    assert (stats.items_in, stats.items_out) == (6, 2)
    assert plan.metrics.operators["ParallelRollouts"].items_out == 6


def test_concat_batches_counts_agent_steps():
    plan = ParallelRollouts([FakeSampler(3, rows={"p0": 3, "p1": 2})]).combine(ConcatBatches(10, count="agent_steps"))
    batch = next(plan)
    # 5 rows per sample: two samples reach 10 agent steps.
    assert batch.agent_steps() == 10 and batch.env_steps == 6


def test_standardize_fields_gives_zero_mean_unit_std_without_mutating_input():
    original = make_batch(5, {"p0": 50, "p1": 40})
    before = {pid: b["advantages"].copy() for pid, b in original.policy_batches.items()}
    out = StandardizeFields(["advantages"])(original, None)
    for pid in ("p0", "p1"):
        adv = out[pid]["advantages"]
        assert adv.dtype == np.float32
        assert abs(float(adv.mean())) < 1e-5 and abs(float(adv.std()) - 1.0) < 1e-4
        np.testing.assert_array_equal(original[pid]["advantages"], before[pid])
        assert out[pid] is not original[pid]
        assert out[pid]["obs"] is original[pid]["obs"]  # untouched columns are shared, not copied
    assert out.env_steps == 5


def test_standardize_fields_missing_column_names_policy_and_column():
    plan = ParallelRollouts([FakeSampler()]).for_each(StandardizeFields(["returns"]))
    with pytest.raises(PlanError, match="policy 'p0' has no column 'returns'"):
        next(plan)


def test_operator_applied_with_wrong_method_is_rejected():
    with pytest.raises(TypeError, match=r"use|\.combine\(ConcatBatches"):
        ParallelRollouts([FakeSampler()]).for_each(ConcatBatches(4))


# Merging and splitting ---------------------------------------------------------------
def test_concurrently_round_robin_with_weights_2_1():
    a = items([f"a{i}" for i in range(6)])
    b = items([f"b{i}" for i in range(3)])
    plan = Concurrently([a, b], mode="round_robin", round_robin_weights=[2, 1])
    assert list(plan) == ["a0", "a1", "b0", "a2", "a3", "b1", "a4", "a5", "b2"]


def test_concurrently_output_indexes_still_pulls_other_branches():
    seen = []
    a = items(range(4)).for_each(lambda x: seen.append(x) or x)
    b = items(["b0", "b1"])
    plan = Concurrently([a, b], mode="round_robin", output_indexes=[1])
    assert list(plan) == ["b0", "b1"]
    assert seen == [0, 1, 2, 3]


def test_round_robin_branch_with_nothing_ready_ends_its_turn():
    # A replay branch that is still filling must not block the storing branch.
    buffer = FakeBuffer()
    store = ParallelRollouts([FakeSampler(3)]).for_each(SelectExperiences(["p0"])).for_each(
        lambda b: buffer.add(b["p0"]) or b
    )
    replay = Replay(buffer, batch_size=8)
    plan = Concurrently([store, replay], mode="round_robin", output_indexes=[1])
    batch = next(plan)
    assert len(batch) == 8
    assert len(buffer) == 9  # three stores of 3 rows before the replay had 8


def test_star_weight_drains_what_is_ready():
    q: queue.Queue = queue.Queue()
    for i in range(3):
        q.put(f"q{i}")
    a = items(["a0", "a1", "a2"])
    plan = Concurrently([a, Dequeue(q, name="inbox")], mode="round_robin", round_robin_weights=[1, "*"])
    assert pull(plan, 6) == ["a0", "q0", "q1", "q2", "a1", "a2"]


def test_async_union_does_not_wait_for_a_branch_with_nothing_ready():
    slow = items([NOT_READY, NOT_READY, NOT_READY, "a0", "a1"])
    fast = items(["b0", "b1", "b2"])
    plan = slow.union(fast)
    assert list(plan) == ["b0", "b1", "b2", "a0", "a1"]
    with pytest.raises(ValueError, match="round_robin"):
        Concurrently([items([1]), items([2])], mode="async", round_robin_weights=[1, 2])


def test_time_slept_waiting_for_a_source_is_the_plans_not_an_operators():
    plan = items([NOT_READY] * 20 + ["a0"], name="Slow")
    assert next(plan) == "a0"
    idle = plan.metrics.timers[PLAN_IDLE]
    assert idle.count == 20 and idle.total_s >= 0.02  # 1e-4 * (1 + ... + 20) seconds at least
    assert plan.metrics.operators["Slow"].not_ready == 20
    assert plan.metrics.operators["Slow"].time_s < idle.total_s  # the source itself was quick


def test_duplicate_copies_see_every_item():
    a, b = items(range(5)).duplicate(2)
    merged = Concurrently([a.for_each(lambda x: ("a", x)), b.for_each(lambda x: ("b", x))])
    out = list(merged)
    assert [x for tag, x in out if tag == "a"] == list(range(5))
    assert [x for tag, x in out if tag == "b"] == list(range(5))


def test_duplicate_is_bounded_by_back_pressure():
    a, b = items(range(100)).duplicate(2, max_buffer=3)
    assert [a.try_next() for _ in range(3)] == [0, 1, 2]
    assert a.try_next() is NOT_READY  # copy 1 is 3 items behind: copy 0 must wait
    with pytest.raises(PlanStalledError, match="copy 1"):
        next(a)  # b is not part of a's plan, so waiting would never end
    assert next(b) == 0
    assert next(a) == 3
    # Pulled together, a weight far above the bound still makes progress.
    plan = Concurrently([a, b], mode="round_robin", round_robin_weights=[10, 1])
    out = list(plan)
    assert len(out) == (100 - 4) + (100 - 1)


# Inspectability ------------------------------------------------------------------------
def test_plan_error_names_operator_and_path_and_chains_original():
    learner = FakeLearner()
    learner.fail_with = ValueError("loss is nan")
    plan = ParallelRollouts([FakeSampler(3), FakeSampler(3)]).combine(ConcatBatches(4)).for_each(TrainOneStep(learner))
    with pytest.raises(PlanError) as info:
        next(plan)
    err = info.value
    assert str(err) == (
        "in operator TrainOneStep (path: ParallelRollouts -> ConcatBatches -> TrainOneStep): "
        "ValueError: loss is nan"
    )
    assert err.operator == "TrainOneStep" and isinstance(err.__cause__, ValueError)


def test_plan_error_from_source_and_from_branch():
    sampler = FakeSampler()
    sampler.fail_with = RuntimeError("env crashed")
    with pytest.raises(PlanError, match=r"in operator ParallelRollouts \(path: ParallelRollouts\): RuntimeError"):
        next(ParallelRollouts([sampler]))
    a, b = items([1, 2]).duplicate(2)
    plan = Concurrently([a, b.for_each(lambda x: 1 / 0)])
    with pytest.raises(PlanError, match=r"for_each\(<lambda>\) \(path: Items -> Duplicate\[1\] -> for_each\(<lambda>\)\)"):
        list(plan)


def test_print_linear_plan():
    learner = FakeLearner()
    plan = (
        ParallelRollouts([FakeSampler(), FakeSampler()], mode="bulk_sync")
        .for_each(SelectExperiences(["p0"]))
        .combine(ConcatBatches(4000))
        .for_each(StandardizeFields(["advantages"]))
        .for_each(TrainOneStep(learner, ["p0"], num_epochs=4))
    )
    assert str(plan) == (
        "ParallelRollouts(2 samplers, bulk_sync) -> SelectExperiences(['p0']) -> ConcatBatches(4000) -> "
        "StandardizeFields(['advantages']) -> TrainOneStep(policies=['p0'], num_epochs=4)"
    )
    assert repr(plan) == str(plan)


def test_print_branching_plan_as_tree():
    learner = FakeLearner()
    buffer = FakeBuffer()
    store, train = ParallelRollouts([FakeSampler()]).duplicate(2)
    store = store.for_each(StoreToReplayBuffer(buffer))
    train = Concurrently([train, Replay(buffer, 32)], mode="async").for_each(TrainOneStep(learner))
    plan = Concurrently([store, train], mode="round_robin", output_indexes=[1])
    plan = plan.filter(WaitUntilTimestepsElapsed(100))
    assert str(plan) == "\n".join(
        [
            "Concurrently(round_robin, output_indexes=[1])",
            "  [0] ParallelRollouts(1 samplers, bulk_sync) -> Duplicate(copy 0 of 2) -> StoreToReplayBuffer(FakeBuffer)",
            "  [1] Concurrently(async)",
            "        [0] (same upstream as copy 0) -> Duplicate(copy 1 of 2)",
            "        [1] Replay(batch_size=32)",
            "      -> TrainOneStep(policies=all)",
            "-> WaitUntilTimestepsElapsed(100)",
        ]
    )


def test_plan_can_be_stepped_one_item_at_a_time():
    calls = []
    plan = items(range(10)).for_each(lambda x: calls.append(x) or x * 2)
    assert calls == []  # lazy: nothing runs before the first pull
    assert next(plan) == 0 and calls == [0]
    assert next(plan) == 2 and calls == [0, 1]
    assert list(plan.take(2)) == [4, 6]


# Training operators and metrics ------------------------------------------------------
def test_train_one_step_records_counters_timers_and_passes_settings():
    learner = FakeLearner()
    plan = ParallelRollouts([FakeSampler(3)]).for_each(TrainOneStep(learner, ["p0"], num_epochs=3, minibatch_size=4))
    result = next(plan)
    assert isinstance(result, TrainResult) and result.stats == {"p0": {"loss": 3.0}}
    batch, policy_ids, kwargs = learner.learn_calls[0]
    assert policy_ids == ["p0"] and kwargs == {"num_epochs": 3, "minibatch_size": 4}
    next(plan)
    m = plan.metrics
    assert m.counters[NUM_ENV_STEPS_TRAINED] == 6
    assert m.counters[NUM_AGENT_STEPS_TRAINED] == 6  # only p0's 3 rows per batch
    assert m.timers["learn"].count == 2
    assert m.learner_stats == {"p0": {"loss": 3.0}}
    assert m.operators["TrainOneStep"].items_in == 2 and m.operators["TrainOneStep"].time_s > 0
    # Default settings pass no extra keyword arguments.
    next(ParallelRollouts([FakeSampler()]).for_each(TrainOneStep(learner)))
    assert learner.learn_calls[-1][2] == {}


def test_each_plan_owns_its_metrics():
    one = ParallelRollouts([FakeSampler(3)])
    two = ParallelRollouts([FakeSampler(5)])
    next(one), next(two), next(two)
    assert one.metrics is not two.metrics
    assert one.metrics.counters[NUM_ENV_STEPS_SAMPLED] == 3
    assert two.metrics.counters[NUM_ENV_STEPS_SAMPLED] == 10


def test_wait_until_timesteps_elapsed_lets_items_through_every_n_steps():
    source = ParallelRollouts([FakeSampler(3)])
    plan = source.filter(WaitUntilTimestepsElapsed(10)).for_each(lambda b: plan.metrics.counters[NUM_ENV_STEPS_SAMPLED])
    # 3 steps per sample: first pass at 12 (>= 10), next at 24 (12 more).
    assert pull(plan, 3) == [12, 24, 36]


def test_update_target_network_every_n_trained_steps():
    learner = FakeLearner()
    plan = (
        ParallelRollouts([FakeSampler(3)])
        .for_each(TrainOneStep(learner))
        .for_each(UpdateTargetNetwork(learner, ["p0"], every_n_steps=6))
    )
    pull(plan, 5)  # trained 3, 6, 9, 12, 15
    assert learner.target_updates == [["p0"], ["p0"]]
    assert plan.metrics.counters[NUM_TARGET_UPDATES] == 2


def test_compute_and_apply_gradients():
    learner = FakeLearner()
    plan = ParallelRollouts([FakeSampler(3)]).for_each(ComputeGradients(learner)).for_each(ApplyGradients(learner))
    out = next(plan)
    assert isinstance(out, Gradients) and out.env_steps == 3 and out.agent_steps == 5
    np.testing.assert_array_equal(learner.applied[0]["g"], [3.0, 3.0])
    assert plan.metrics.counters[NUM_ENV_STEPS_TRAINED] == 3
    assert plan.metrics.learner_stats == {"p0": {"grad_norm": 6.0}}


def test_broadcast_weights_to_local_samplers():
    learner = FakeLearner()
    samplers = [FakeSampler(), FakeSampler()]
    plan = ParallelRollouts(samplers).for_each(TrainOneStep(learner)).for_each(BroadcastWeights(learner, samplers, ["p0"]))
    next(plan)
    for s in samplers:
        assert list(s.weights) == ["p0"]
        np.testing.assert_array_equal(s.weights["p0"]["w"], np.full(3, 1.0))
    assert plan.metrics.counters[NUM_WEIGHT_BROADCASTS] == 1


def test_store_to_replay_buffer_per_policy_and_whole():
    per_policy = {"p0": FakeBuffer()}
    whole = FakeBuffer()
    plan = ParallelRollouts([FakeSampler(3)]).for_each(StoreToReplayBuffer(per_policy)).for_each(StoreToReplayBuffer(whole))
    batch = next(plan)
    assert isinstance(batch, MultiAgentBatch)
    assert len(per_policy["p0"].added) == 1 and isinstance(per_policy["p0"].added[0], SampleBatch)
    assert whole.added == [batch]
    assert plan.metrics.counters[NUM_AGENT_STEPS_STORED] == 3 + 5
    with pytest.raises(TypeError, match="add"):
        StoreToReplayBuffer(object())


def test_replay_from_per_policy_buffers_waits_until_filled():
    class PerPolicyBuffer:
        def __init__(self) -> None:
            self.buffers = {"p0": FakeBuffer()}

        def __getitem__(self, pid: str) -> FakeBuffer:
            return self.buffers[pid]

        def sample(self, pid: str, batch_size: int) -> SampleBatch:
            return self.buffers[pid].sample(batch_size)

    storage = PerPolicyBuffer()
    plan = Replay(storage, batch_size=4, policy_ids=["p0"])
    assert plan.try_next() is NOT_READY
    storage.buffers["p0"].add(SampleBatch({"x": np.arange(4)}))
    batch = next(plan)
    assert isinstance(batch, MultiAgentBatch) and batch.env_steps == 4 and len(batch["p0"]) == 4


def test_enqueue_dequeue_and_empty_queue_timeout():
    q: queue.Queue = queue.Queue(maxsize=4)
    list(items(range(3)).for_each(Enqueue(q, name="to_learner")))
    assert list(Dequeue(q, name="to_learner").take(3)) == [0, 1, 2]
    with pytest.raises(PlanError, match="queue 'to_learner' stayed empty for more than 0.05 s"):
        next(Dequeue(q, name="to_learner", timeout_s=0.05))


def test_standard_metrics_reporting():
    learner = FakeLearner()
    samplers = [FakeSampler(3), FakeSampler(3)]
    train = ParallelRollouts(samplers).for_each(TrainOneStep(learner))
    plan = StandardMetricsReporting(train, samplers, min_env_steps=10)
    report = next(plan)
    # 6 env steps per sample: the second sample reaches 10.
    assert report["iteration"] == 1
    assert report[NUM_ENV_STEPS_SAMPLED] == 12 and report["env_steps_sampled_this_iter"] == 12
    assert report[NUM_ENV_STEPS_TRAINED] == 12 and report["env_steps_sampled_per_s"] > 0
    assert report["learner"] == {"p0": {"loss": 6.0}, "p1": {"loss": 4.0}}
    assert report["episodes"]["episodes_this_iter"] == 2
    assert report["episodes"]["policy_return_mean"] == {"p0": 1.0, "p1": -1.0}
    assert len(report["episode_stats"]) == 2
    assert report["operators"]["TrainOneStep"]["items_in"] == 2
    assert report["timers"]["learn"]["count"] == 2
    second = next(plan)
    assert second["iteration"] == 2 and second["counters_this_iter"][NUM_ENV_STEPS_SAMPLED] == 12


def test_bad_arguments_are_rejected_clearly():
    with pytest.raises(ValueError, match="mode"):
        ParallelRollouts([FakeSampler()], mode="sync")
    with pytest.raises(ValueError, match="weights"):
        Concurrently([items([1]), items([2])], round_robin_weights=[1])
    with pytest.raises(ValueError, match="min_batch_size"):
        ConcatBatches(0)
    with pytest.raises(PlanError, match="TypeError: TrainOneStep expects a MultiAgentBatch, got int"):
        next(items([1, 2]).for_each(TrainOneStep(FakeLearner())))


# Real Ray actors -----------------------------------------------------------------------
def _remote_classes(ray):
    # Ray workers cannot import this test module: ship its classes by value.
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])

    @ray.remote(num_cpus=0)
    class RaySampler(FakeSampler):
        def get_weights(self):
            return self.weights

        def break_sampling(self, message: str) -> None:
            self.fail_with = KeyError(message)

    return RaySampler


@pytest.mark.ray
def test_ray_parallel_rollouts_bulk_sync_async_and_remote_errors(ray_session):
    ray = ray_session
    RaySampler = _remote_classes(ray)
    samplers = [RaySampler.remote(2, value=1.0), RaySampler.remote(5, value=2.0)]
    try:
        bulk = ParallelRollouts(samplers, mode="bulk_sync")
        batch = next(bulk)
        assert batch.env_steps == 7 and sorted(set(batch["p0"]["obs"][:, 0].tolist())) == [1.0, 2.0]

        plan = ParallelRollouts(samplers, mode="async", num_async=2).zip_with_source_actor()
        got = pull(plan, 6)
        steps_of = {samplers[0]: 2, samplers[1]: 5}
        assert all(b.env_steps == steps_of[s] for s, b in got)
        assert plan.metrics.counters[NUM_ENV_STEPS_SAMPLED] == sum(b.env_steps for _, b in got)

        broken = RaySampler.remote()
        ray.get(broken.break_sampling.remote("no env"))
        with pytest.raises(PlanError, match=r"in operator ParallelRollouts .*KeyError"):
            next(ParallelRollouts([broken]))
        ray.kill(broken)
    finally:
        for s in samplers:
            ray.kill(s)


@pytest.mark.ray
def test_ray_broadcast_weights_puts_weights_once(ray_session, monkeypatch):
    ray = ray_session
    RaySampler = _remote_classes(ray)
    samplers = [RaySampler.remote(), RaySampler.remote()]
    try:
        learner = FakeLearner()
        learner.version = 7
        puts = []
        real_put = ray.put
        monkeypatch.setattr(ray, "put", lambda value, **kw: puts.append(value) or real_put(value, **kw))
        op = BroadcastWeights(learner, samplers, ["p0"], wait=True)
        op(None, LocalIterator.from_items([]).metrics)
        assert len(puts) == 1
        for weights in ray.get([s.get_weights.remote() for s in samplers]):
            np.testing.assert_array_equal(weights["p0"]["w"], np.full(3, 7.0))
    finally:
        for s in samplers:
            ray.kill(s)
