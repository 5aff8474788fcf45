"""MultiAgentReplayBuffer: one buffer per policy, created on demand."""

from __future__ import annotations

import numpy as np

from league.batch import MultiAgentBatch, SampleBatch
from league.replay import MultiAgentReplayBuffer, PrioritizedReplayBuffer, ReplayBuffer


def rows(start: int, n: int, width: int = 3) -> SampleBatch:
    ids = np.arange(start, start + n)
    return SampleBatch({"obs": np.repeat(ids[:, None], width, axis=1).astype(np.float32), "id": ids})


def test_buffers_are_created_per_policy_on_demand() -> None:
    buf = MultiAgentReplayBuffer(ReplayBuffer, capacity=8, seed=0)
    assert buf.policy_ids() == [] and len(buf) == 0
    buf.add(MultiAgentBatch({"red": rows(0, 5)}, 5))
    buf.add(MultiAgentBatch({"red": rows(5, 5), "blue": rows(100, 2, width=7)}, 5))  # schemas are per policy
    assert buf.policy_ids() == ["red", "blue"]
    assert len(buf["red"]) == 8 and len(buf["blue"]) == 2 and len(buf) == 10
    assert buf["red"].capacity == 8
    sample = buf.sample("blue", 6)
    assert set(sample["id"]) <= {100, 101} and sample["obs"].shape == (6, 7)


def test_prioritized_per_policy_sample_and_update() -> None:
    buf = MultiAgentReplayBuffer(PrioritizedReplayBuffer, capacity=16, alpha=1.0, seed=1)
    buf.add(MultiAgentBatch({"a": rows(0, 4), "b": rows(10, 4)}, 4), priorities={"a": [1.0, 1.0, 1.0, 5.0]})
    assert isinstance(buf["a"], PrioritizedReplayBuffer)
    np.testing.assert_allclose(buf["a"].leaf_values(), [1, 1, 1, 5])
    np.testing.assert_allclose(buf["b"].leaf_values(), [1, 1, 1, 1])  # own max priority: still 1
    sample = buf.sample("a", 8, beta=1.0)
    assert "weights" in sample
    buf.update_priorities("b", np.array([0, 3]), np.array([2.0, 3.0]))
    np.testing.assert_allclose(buf["b"].leaf_values(), [2, 1, 1, 3])
    np.testing.assert_allclose(buf["a"].leaf_values(), [1, 1, 1, 5])  # untouched


def test_per_policy_seeds_are_distinct_and_reproducible() -> None:
    def draws(seed: int) -> tuple[np.ndarray, np.ndarray]:
        buf = MultiAgentReplayBuffer(ReplayBuffer, capacity=1000, seed=seed)
        buf.add(MultiAgentBatch({"a": rows(0, 1000), "b": rows(0, 1000)}, 1000))
        return buf.sample("a", 50)["id"], buf.sample("b", 50)["id"]

    a1, b1 = draws(5)
    a2, b2 = draws(5)
    np.testing.assert_array_equal(a1, a2)
    np.testing.assert_array_equal(b1, b2)
    assert not np.array_equal(a1, b1)
    assert not np.array_equal(draws(6)[0], a1)
