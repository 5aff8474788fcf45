"""Randomised add/sample/update_priorities sequences: C++ buffers vs the numpy oracle."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from replay_oracle import OracleReplay

from league.batch import SampleBatch
from league.replay import PrioritizedReplayBuffer, ReplayBuffer

PRIORITY = st.floats(min_value=1e-3, max_value=1e3, allow_nan=False, allow_infinity=False)


def rows(start: int, n: int) -> dict[str, np.ndarray]:
    """Rows whose every column encodes the row id, multi-dimensional and mixed dtypes."""
    ids = np.arange(start, start + n)
    return {
        "obs": (ids[:, None, None] + np.arange(6).reshape(3, 2) / 8).astype(np.float32),
        "action": (ids % 128).astype(np.int8),
        "done": ids % 3 == 0,
        "mask": ((ids[:, None] + np.arange(4)) % 256).astype(np.uint8),
        "value": ids.astype(np.float64) * 0.5,
    }


def assert_same_contents(buf: ReplayBuffer, oracle: OracleReplay) -> None:
    assert len(buf) == oracle.size
    if oracle.columns is None:
        return
    stored = buf.stored()
    expected = oracle.stored()
    assert list(stored.keys()) == list(expected)
    for name, column in expected.items():
        np.testing.assert_array_equal(stored[name], column, err_msg=name)


def assert_rows_match(sample: SampleBatch, oracle: OracleReplay) -> None:
    idx = sample["batch_indexes"]
    assert idx.dtype == np.int64
    assert ((idx >= 0) & (idx < oracle.size)).all()
    for name, column in oracle.stored().items():
        np.testing.assert_array_equal(sample[name], column[idx], err_msg=name)


@settings(max_examples=60, deadline=None)
@given(capacity=st.integers(1, 17), seed=st.integers(0, 2**64 - 1), data=st.data())
def test_uniform_buffer_matches_oracle(capacity: int, seed: int, data: st.DataObject) -> None:
    buf, oracle = ReplayBuffer(capacity, seed=seed), OracleReplay(capacity)
    next_id = 0
    ops = data.draw(st.lists(st.sampled_from(["add", "sample"]), max_size=20))
    for op in ops:
        if op == "add":
            n = data.draw(st.integers(0, 2 * capacity + 3))
            batch = rows(next_id, n)
            next_id += n
            buf.add(SampleBatch(batch))
            oracle.add(batch)
        elif oracle.size:
            n = data.draw(st.integers(1, 20))
            sample = buf.sample(n)
            assert len(sample) == n
            assert_rows_match(sample, oracle)
        assert_same_contents(buf, oracle)


def assert_same_priorities(buf: PrioritizedReplayBuffer, oracle: OracleReplay) -> None:
    np.testing.assert_allclose(buf.leaf_values(), oracle.leaves[: oracle.size], rtol=1e-12)
    assert buf.max_priority == oracle.max_priority
    if oracle.size:
        total, smallest = buf.tree_roots()
        np.testing.assert_allclose(total, oracle.total(), rtol=1e-9)
        assert smallest == oracle.min_leaf()


def assert_stratified(idx: np.ndarray, oracle: OracleReplay) -> None:
    """Draw j must come from a slot whose mass interval meets segment j of the total."""
    total, n = oracle.total(), len(idx)
    tol = 1e-9 * total
    for j, i in enumerate(idx):
        lo, hi = oracle.segment_bounds(int(i))
        assert hi > j * total / n - tol and lo < (j + 1) * total / n + tol, (j, i, lo, hi)
        assert oracle.leaves[i] > 0


@settings(max_examples=60, deadline=None)
@given(
    capacity=st.integers(1, 17),
    alpha=st.sampled_from([0.0, 0.6, 1.0, 2.0]),
    seed=st.integers(0, 2**64 - 1),
    data=st.data(),
)
def test_prioritized_buffer_matches_oracle(capacity: int, alpha: float, seed: int, data: st.DataObject) -> None:
    buf, oracle = PrioritizedReplayBuffer(capacity, alpha=alpha, seed=seed), OracleReplay(capacity, alpha)
    next_id = 0
    ops = data.draw(st.lists(st.sampled_from(["add", "add_with_priorities", "sample", "update"]), max_size=20))
    for op in ops:
        if op.startswith("add"):
            n = data.draw(st.integers(0, 2 * capacity + 3))
            batch = rows(next_id, n)
            next_id += n
            prio = None
            if op == "add_with_priorities":
                prio = np.array(data.draw(st.lists(PRIORITY, min_size=n, max_size=n)))
            buf.add(SampleBatch(batch), prio)
            oracle.add(batch, prio)
        elif op == "sample" and oracle.size:
            n = data.draw(st.integers(1, 20))
            beta = data.draw(st.sampled_from([0.0, 0.4, 1.0]))
            sample = buf.sample(n, beta=beta)
            assert_rows_match(sample, oracle)
            assert sample["weights"].dtype == np.float32
            np.testing.assert_allclose(sample["weights"], oracle.weights(sample["batch_indexes"], beta), rtol=1e-5)
            assert_stratified(sample["batch_indexes"], oracle)
        elif op == "update" and oracle.size:
            k = data.draw(st.integers(1, 10))
            idx = np.array(data.draw(st.lists(st.integers(0, oracle.size - 1), min_size=k, max_size=k)))
            prio = np.array(data.draw(st.lists(PRIORITY, min_size=k, max_size=k)))
            buf.update_priorities(idx, prio)
            oracle.update_priorities(idx, prio)
        assert_same_contents(buf, oracle)
        assert_same_priorities(buf, oracle)


def test_wraparound_keeps_the_newest_rows_in_ring_order() -> None:
    buf = ReplayBuffer(5, seed=0)
    buf.add(SampleBatch(rows(0, 3)))
    buf.add(SampleBatch(rows(3, 4)))  # ids 3..6: slots 3, 4, 0, 1
    np.testing.assert_array_equal(buf.stored()["value"], np.array([5, 6, 2, 3, 4]) * 0.5)
    buf.add(SampleBatch(rows(7, 12)))  # more than capacity: only ids 14..18 survive
    # ids 7..18 start at slot 2 (the write position), so id 18 lands in slot (2 + 11) % 5 = 3
    np.testing.assert_array_equal(buf.stored()["value"], np.array([15, 16, 17, 18, 14]) * 0.5)


def test_sampled_columns_keep_dtypes_and_trailing_shapes() -> None:
    buf = PrioritizedReplayBuffer(8, seed=3)
    buf.add(SampleBatch(rows(0, 8)))
    sample = buf.sample(5)
    assert sample["obs"].shape == (5, 3, 2) and sample["obs"].dtype == np.float32
    assert sample["mask"].shape == (5, 4) and sample["mask"].dtype == np.uint8
    assert sample["done"].dtype == np.bool_
    assert sample["obs"].flags.c_contiguous and sample["obs"].flags.writeable
