"""Every bad input to the replay buffers gets a clear ValueError/TypeError, never a crash."""

from __future__ import annotations

import math

import numpy as np
import pytest

from league.batch import MultiAgentBatch, SampleBatch
from league.replay import MultiAgentReplayBuffer, PrioritizedReplayBuffer, ReplayBuffer


def batch(n: int = 4, obs_dtype: type = np.float32, obs_dim: int = 3) -> SampleBatch:
    return SampleBatch({
        "obs": np.arange(n * obs_dim).reshape(n, obs_dim).astype(obs_dtype),
        "actions": np.arange(n, dtype=np.int64),
    })


@pytest.fixture
def prio() -> PrioritizedReplayBuffer:
    buf = PrioritizedReplayBuffer(10, alpha=0.6, seed=0)
    buf.add(batch(4))
    return buf


# -- construction -------------------------------------------------------------------
@pytest.mark.parametrize("capacity", [0, -1, -(2**40)])
def test_capacity_must_be_positive(capacity: int) -> None:
    with pytest.raises(ValueError, match="capacity must be a positive integer"):
        ReplayBuffer(capacity)
    with pytest.raises(ValueError, match="capacity"):
        PrioritizedReplayBuffer(capacity)


def test_capacity_has_a_sane_maximum() -> None:
    with pytest.raises(ValueError, match="maximum"):
        PrioritizedReplayBuffer(2**62)


def test_capacity_must_be_an_int() -> None:
    with pytest.raises(TypeError, match="capacity must be an int"):
        ReplayBuffer(2.5)  # type: ignore[arg-type]


@pytest.mark.parametrize("alpha", [-0.1, -1.0, math.nan, math.inf])
def test_alpha_must_be_finite_and_non_negative(alpha: float) -> None:
    with pytest.raises(ValueError, match="alpha"):
        PrioritizedReplayBuffer(10, alpha=alpha)


def test_alpha_must_be_a_number() -> None:
    with pytest.raises(TypeError, match="alpha"):
        PrioritizedReplayBuffer(10, alpha="0.6")  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", [-1, 2**64])
def test_seed_must_fit_64_bits(seed: int) -> None:
    with pytest.raises(ValueError, match="seed"):
        ReplayBuffer(10, seed=seed)


# -- schema -------------------------------------------------------------------------
def test_dtype_mismatch_names_the_column_and_both_schemas() -> None:
    buf = ReplayBuffer(10)
    buf.add(batch())
    with pytest.raises(TypeError, match=r"column 'obs' is float64\[\*, 3\] in the batch but float32\[\*, 3\]"):
        buf.add(batch(obs_dtype=np.float64))


def test_trailing_shape_mismatch_names_the_column_and_both_schemas() -> None:
    buf = ReplayBuffer(10)
    buf.add(batch())
    with pytest.raises(ValueError, match=r"column 'obs' is float32\[\*, 5\] in the batch but float32\[\*, 3\]"):
        buf.add(batch(obs_dim=5))


def test_missing_and_extra_columns_name_the_column_and_both_schemas() -> None:
    buf = ReplayBuffer(10)
    buf.add(batch())
    with pytest.raises(ValueError, match=r"column 'actions' is missing.*batch \{obs: float32\[\*, 3\]\}, buffer \{obs"):
        buf.add(SampleBatch({"obs": np.zeros((2, 3), np.float32)}))
    extra = batch().copy()
    extra["rewards"] = np.zeros(4, np.float32)
    with pytest.raises(ValueError, match=r"column 'rewards' is not in the buffer's schema.*rewards: float32\[\*\]"):
        buf.add(extra)
    assert len(buf) == 4  # nothing was written by the refused batches


def test_unequal_row_counts_in_a_plain_dict_are_refused() -> None:
    buf = ReplayBuffer(10)
    with pytest.raises(ValueError, match="rows"):
        buf.add({"obs": np.zeros((3, 2)), "actions": np.zeros(2)})
    assert buf.schema() == []  # a refused first batch fixes no schema


@pytest.mark.parametrize("value", [np.array(["a", "b"]), np.array([object(), object()]),
                                   np.array(["2020-01-01", "2020-01-02"], dtype="datetime64[D]")])
def test_non_numeric_columns_are_refused(value: np.ndarray) -> None:
    with pytest.raises(TypeError):
        ReplayBuffer(10).add({"x": value})


def test_non_array_values_are_converted_by_the_mapping_path_then_checked() -> None:
    buf = ReplayBuffer(10)
    buf.add({"x": [1.0, 2.0]})  # a list becomes float64
    with pytest.raises(TypeError, match="column 'x' is int64"):
        buf.add({"x": [1, 2]})


def test_non_contiguous_arrays_are_copied_into_place() -> None:
    buf = ReplayBuffer(10, seed=0)
    base = np.arange(40, dtype=np.float32).reshape(4, 10)
    strided = base[:, ::3]  # float32[4, 4], not contiguous
    fortran = np.asfortranarray(np.arange(16, dtype=np.int64).reshape(4, 4))
    buf.add(SampleBatch({"obs": strided, "ids": fortran}))
    stored = buf.stored()
    np.testing.assert_array_equal(stored["obs"], strided)
    np.testing.assert_array_equal(stored["ids"], fortran)
    buf.add(SampleBatch({"obs": base[::2, :4], "ids": fortran[::2]}))
    np.testing.assert_array_equal(buf.stored()["obs"][4:], base[::2, :4])


@pytest.mark.parametrize("name", ["batch_indexes", "weights"])
def test_reserved_column_names_are_refused(name: str) -> None:
    with pytest.raises(ValueError, match="reserved"):
        PrioritizedReplayBuffer(10).add({name: np.zeros(2)})


def test_wrong_batch_types_are_refused() -> None:
    with pytest.raises(TypeError, match="MultiAgentReplayBuffer"):
        ReplayBuffer(10).add(MultiAgentBatch({"p": batch()}, 4))
    with pytest.raises(TypeError, match="SampleBatch or a mapping"):
        ReplayBuffer(10).add([np.zeros(3)])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no columns"):
        ReplayBuffer(10).add(SampleBatch())


# -- sampling -----------------------------------------------------------------------
def test_sampling_an_empty_buffer_is_refused() -> None:
    with pytest.raises(ValueError, match="empty"):
        ReplayBuffer(10).sample(4)
    with pytest.raises(ValueError, match="empty"):
        PrioritizedReplayBuffer(10).sample(4)
    empty_first = ReplayBuffer(10)
    empty_first.add(batch(0))  # a schema but no rows
    with pytest.raises(ValueError, match="empty"):
        empty_first.sample(1)


@pytest.mark.parametrize("size", [0, -3])
def test_batch_size_must_be_positive(prio: PrioritizedReplayBuffer, size: int) -> None:
    with pytest.raises(ValueError, match="batch_size"):
        prio.sample(size)


def test_batch_size_must_be_an_int(prio: PrioritizedReplayBuffer) -> None:
    with pytest.raises(TypeError, match="batch_size"):
        prio.sample(2.0)  # type: ignore[arg-type]


@pytest.mark.parametrize("beta", [-0.01, 1.01, math.nan, math.inf])
def test_beta_must_be_in_unit_interval(prio: PrioritizedReplayBuffer, beta: float) -> None:
    with pytest.raises(ValueError, match=r"beta must be in \[0, 1\]"):
        prio.sample(2, beta=beta)


# -- priorities ---------------------------------------------------------------------
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, -1.0, 0.0])
def test_bad_priorities_are_refused_in_update_and_add(prio: PrioritizedReplayBuffer, bad: float) -> None:
    before = prio.leaf_values().copy()
    with pytest.raises(ValueError, match=r"priorities\[1\]"):
        prio.update_priorities([0, 1], [1.0, bad])
    with pytest.raises(ValueError, match=r"priorities\[2\]"):
        prio.add(batch(3), [1.0, 1.0, bad])
    np.testing.assert_array_equal(prio.leaf_values(), before)  # all-or-nothing
    assert len(prio) == 4


def test_priorities_that_overflow_after_alpha_are_refused() -> None:
    buf = PrioritizedReplayBuffer(10, alpha=3.0)
    buf.add(batch(2))
    with pytest.raises(ValueError, match="out of range"):
        buf.update_priorities([0], [1e120])
    with pytest.raises(ValueError, match="out of range"):
        buf.update_priorities([0], [1e-120])


@pytest.mark.parametrize("index", [-1, 4, 9, 10, 2**40])
def test_indexes_out_of_range_or_never_written(prio: PrioritizedReplayBuffer, index: int) -> None:
    with pytest.raises(ValueError, match="out of range.*holds 4 rows"):
        prio.update_priorities([0, index], [1.0, 1.0])


def test_never_written_slots_are_named_as_such(prio: PrioritizedReplayBuffer) -> None:
    with pytest.raises(ValueError, match="never been written"):
        prio.update_priorities([7], [1.0])


def test_index_and_priority_shapes_and_types(prio: PrioritizedReplayBuffer) -> None:
    with pytest.raises(TypeError, match="batch_indexes must be integers"):
        prio.update_priorities(np.array([0.0, 1.0]), [1.0, 1.0])
    with pytest.raises(TypeError, match="batch_indexes must be integers"):
        prio.update_priorities(np.array([True, False]), [1.0, 1.0])
    with pytest.raises(ValueError, match="1-D"):
        prio.update_priorities(np.zeros((2, 1), np.int64), [1.0, 1.0])
    with pytest.raises(ValueError, match="priorities has 3 entries but batch_indexes has 2"):
        prio.update_priorities([0, 1], [1.0, 1.0, 1.0])
    with pytest.raises(TypeError, match="priorities must be real numbers"):
        prio.update_priorities([0], ["high"])
    with pytest.raises(TypeError, match="priorities must be real numbers"):
        prio.update_priorities([0], [1 + 2j])
    with pytest.raises(ValueError, match="priorities has 2 entries but the batch has 3"):
        prio.add(batch(3), [1.0, 2.0])


def test_uniform_buffer_takes_no_priorities() -> None:
    buf = ReplayBuffer(10)
    with pytest.raises(TypeError):
        buf.add(batch(2), [1.0, 1.0])  # type: ignore[call-arg]
    # Every composed buffer has update_priorities(); a uniform sampler refuses it.
    with pytest.raises(TypeError, match="no priorities"):
        buf.update_priorities([0], [1.0])


# -- multi-agent --------------------------------------------------------------------
def test_multi_agent_errors() -> None:
    with pytest.raises(TypeError, match="buffer_class"):
        MultiAgentReplayBuffer(dict)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="capacity"):
        MultiAgentReplayBuffer(ReplayBuffer, capacity=0)
    buf = MultiAgentReplayBuffer(ReplayBuffer, capacity=10)
    with pytest.raises(TypeError, match="MultiAgentBatch"):
        buf.add(batch())  # type: ignore[arg-type]
    buf.add(MultiAgentBatch({"a": batch()}, 4))
    with pytest.raises(ValueError, match="no replay buffer for policy 'b'"):
        buf.sample("b", 2)
    with pytest.raises(TypeError, match="no priorities"):
        buf.update_priorities("a", [0], [1.0])
    with pytest.raises(ValueError, match="not in the batch"):
        buf.add(MultiAgentBatch({"a": batch()}, 4), priorities={"zzz": [1.0]})
