"""Sampling distributions, checked with chi-square tests over many draws (fixed seeds)."""

from __future__ import annotations

import numpy as np
from scipy import stats

from league.batch import SampleBatch
from league.replay import PrioritizedReplayBuffer, ReplayBuffer

# Fixed seeds make these deterministic; the threshold only guards against a wrong law.
P_MIN = 1e-4


def filled(buf: ReplayBuffer, n: int, **kwargs) -> ReplayBuffer:
    buf.add(SampleBatch({"x": np.arange(n, dtype=np.int64)}), **kwargs)
    return buf


def counts(draws: list[np.ndarray], size: int) -> np.ndarray:
    return np.bincount(np.concatenate(draws), minlength=size)


def test_uniform_sampling_is_uniform_over_stored_rows() -> None:
    size = 37  # not a power of two, and the ring has wrapped
    buf = ReplayBuffer(size, seed=11)
    filled(buf, 50)
    draws = [buf.sample(1000)["batch_indexes"] for _ in range(150)]
    observed = counts(draws, size)
    assert observed.shape == (size,)
    assert stats.chisquare(observed).pvalue > P_MIN


def test_uniform_sampling_only_sees_written_rows() -> None:
    buf = filled(ReplayBuffer(1000, seed=5), 10)
    idx = np.concatenate([buf.sample(500)["batch_indexes"] for _ in range(20)])
    assert idx.min() >= 0 and idx.max() <= 9
    assert stats.chisquare(np.bincount(idx, minlength=10)).pvalue > P_MIN


def test_prioritized_sampling_follows_priorities_to_the_alpha() -> None:
    size, alpha = 40, 0.7
    rng = np.random.default_rng(0)
    priorities = rng.uniform(0.05, 5.0, size)
    buf = filled(PrioritizedReplayBuffer(64, alpha=alpha, seed=3), size, priorities=priorities)
    draws = [buf.sample(997, beta=0.5)["batch_indexes"] for _ in range(150)]
    observed = counts(draws, size)
    expected_p = priorities**alpha / (priorities**alpha).sum()
    assert stats.chisquare(observed, expected_p * observed.sum()).pvalue > P_MIN
    # The same counts are far from what alpha = 1 (or uniform) would give: the test has teeth.
    wrong = priorities / priorities.sum()
    assert stats.chisquare(observed, wrong * observed.sum()).pvalue < 1e-12


def test_prioritized_sampling_after_updates_and_wraparound() -> None:
    buf = PrioritizedReplayBuffer(30, alpha=1.0, seed=9)
    filled(buf, 45)  # wrapped: slots hold rows 15..44, all with the default priority
    target = np.ones(30)
    target[:10] = 4.0  # ten slots four times as likely
    buf.update_priorities(np.arange(30), target)
    draws = [buf.sample(600, beta=0.4)["batch_indexes"] for _ in range(200)]
    observed = counts(draws, 30)
    assert stats.chisquare(observed, target / target.sum() * observed.sum()).pvalue > P_MIN


def test_stratified_sampling_draws_one_row_per_segment() -> None:
    # Equal priorities: segment j of a batch of `size` draws is exactly slot j.
    buf = filled(PrioritizedReplayBuffer(16, alpha=0.6, seed=1), 16)
    np.testing.assert_array_equal(buf.sample(16)["batch_indexes"], np.arange(16))
    # Two draws per slot.
    np.testing.assert_array_equal(buf.sample(32)["batch_indexes"], np.repeat(np.arange(16), 2))


def test_alpha_zero_is_uniform_and_all_weights_are_one() -> None:
    buf = filled(PrioritizedReplayBuffer(20, alpha=0.0, seed=2), 20, priorities=np.linspace(0.1, 100, 20))
    sample = buf.sample(20, beta=1.0)
    np.testing.assert_array_equal(sample["batch_indexes"], np.arange(20))
    np.testing.assert_array_equal(sample["weights"], np.ones(20, np.float32))


def test_importance_weights_are_normalised_by_the_lowest_priority() -> None:
    buf = filled(PrioritizedReplayBuffer(8, alpha=1.0, seed=4), 4, priorities=np.array([1.0, 2.0, 4.0, 8.0]))
    sample = buf.sample(400, beta=1.0)
    idx = sample["batch_indexes"]
    # (N P(i))^-1 / (N P_min)^-1 == p_min / p_i
    np.testing.assert_allclose(sample["weights"], 1.0 / np.array([1.0, 2.0, 4.0, 8.0])[idx], rtol=1e-6)
    assert sample["weights"].max() <= 1.0
