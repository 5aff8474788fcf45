"""SampleBatch / MultiAgentBatch: construction, row selection and the C++ concat."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from league.batch import MultiAgentBatch, SampleBatch


def board_batch(n: int, start: int = 0) -> SampleBatch:
    """Connect-four-like rows: float32[N, 6, 7, 2] boards and int8[N, 7] action masks."""
    ids = np.arange(start, start + n)
    return SampleBatch({
        "obs": (ids[:, None, None, None] + np.zeros((1, 6, 7, 2))).astype(np.float32),
        "action_mask": ((ids[:, None] + np.arange(7)) % 2).astype(np.int8),
        "actions": ids.astype(np.int64),
        "rewards": ids.astype(np.float32) / 10,
    })


# -- construction -------------------------------------------------------------------
def test_construction_errors() -> None:
    with pytest.raises(TypeError, match="column names must be str"):
        SampleBatch({1: np.zeros(3)})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="dtype object"):
        SampleBatch({"x": np.array([object()])})
    with pytest.raises(ValueError, match="scalar"):
        SampleBatch({"x": np.float32(1.0)})
    with pytest.raises(ValueError, match="column 'b' has 2 rows but column 'a' has 3"):
        SampleBatch({"a": np.zeros(3), "b": np.zeros(2)})


def test_construction_converts_sequences_and_counts_rows() -> None:
    b = SampleBatch({"x": [1, 2, 3], "y": np.zeros((3, 2))})
    assert isinstance(b["x"], np.ndarray) and len(b) == 3 and b.count == 3
    assert list(b) == ["x", "y"] and "x" in b and "z" not in b
    assert len(SampleBatch()) == 0


def test_setitem_checks_row_count() -> None:
    b = board_batch(4)
    b["extra"] = np.ones(4)
    assert b["extra"].shape == (4,)
    with pytest.raises(ValueError, match="4 rows"):
        b["bad"] = np.ones(5)
    with pytest.raises(ValueError):
        b["scalar"] = 3.0


# -- row selection ------------------------------------------------------------------
def test_slices_are_views_with_the_right_count() -> None:
    b = board_batch(10)
    s = b[2:8:2]
    assert len(s) == 3
    np.testing.assert_array_equal(s["actions"], [2, 4, 6])
    assert np.shares_memory(s["obs"], b["obs"])
    assert len(b[8:100]) == 2 and len(b[5:2]) == 0


def test_index_and_mask_selection_copies() -> None:
    b = board_batch(6)
    picked = b[np.array([5, 0, 5])]
    np.testing.assert_array_equal(picked["actions"], [5, 0, 5])
    assert picked["obs"].shape == (3, 6, 7, 2) and not np.shares_memory(picked["obs"], b["obs"])
    masked = b[b["actions"] % 2 == 0]
    np.testing.assert_array_equal(masked["actions"], [0, 2, 4])
    with pytest.raises(TypeError, match="1-D integer array"):
        b[np.array([[0, 1]])]
    with pytest.raises(TypeError, match="1-D integer array"):
        b[np.array([0.5])]


def test_copy_select_shuffle_minibatches() -> None:
    b = board_batch(10)
    c = b.copy()
    c["actions"][0] = 99
    assert b["actions"][0] == 0
    assert list(b.select(["actions"]).keys()) == ["actions"]
    shuffled = b.shuffle(np.random.default_rng(0))
    assert sorted(shuffled["actions"]) == list(range(10))
    sizes = [len(m) for m in b.minibatches(4)]
    assert sizes == [4, 4, 2]
    seen = np.concatenate([m["actions"] for m in b.minibatches(3, np.random.default_rng(1))])
    assert sorted(seen) == list(range(10))
    with pytest.raises(ValueError, match="minibatch size"):
        list(b.minibatches(0))


# -- concat -------------------------------------------------------------------------
def test_concat_multi_dimensional_columns() -> None:
    parts = [board_batch(3, 0), board_batch(5, 3), board_batch(1, 8)]
    out = SampleBatch.concat(parts)
    assert len(out) == 9
    assert out["obs"].shape == (9, 6, 7, 2) and out["obs"].dtype == np.float32
    assert out["action_mask"].shape == (9, 7) and out["action_mask"].dtype == np.int8
    for name in out:
        np.testing.assert_array_equal(out[name], np.concatenate([p[name] for p in parts]), err_msg=name)
    assert out == board_batch(9)


def test_concat_copies_and_skips_empty_batches() -> None:
    a = board_batch(2)
    out = SampleBatch.concat([SampleBatch(), a, SampleBatch()])
    assert out == a and not np.shares_memory(out["obs"], a["obs"])
    assert len(SampleBatch.concat([])) == 0
    zero_rows = board_batch(0)
    assert len(SampleBatch.concat([zero_rows, a, zero_rows])) == 2


def test_concat_non_contiguous_inputs() -> None:
    base = np.arange(120, dtype=np.float64).reshape(10, 12)
    parts = [
        SampleBatch({"x": base[::2, ::3], "y": np.asfortranarray(base[:5, :4])}),
        SampleBatch({"x": base[1::2, 1::3], "y": base[5:, 8:]}),
    ]
    out = SampleBatch.concat(parts)
    np.testing.assert_array_equal(out["x"], np.concatenate([base[::2, ::3], base[1::2, 1::3]]))
    np.testing.assert_array_equal(out["y"], np.concatenate([base[:5, :4], base[5:, 8:]]))
    assert out["x"].flags.c_contiguous


def test_concat_dtype_mismatch_names_column_and_both_schemas() -> None:
    a, b = board_batch(2), board_batch(3)
    b["rewards"] = b["rewards"].astype(np.float64)
    with pytest.raises(ValueError, match=r"column 'rewards' has float64\[3\] in batch 1 but float32\[2\] in batch 0"):
        SampleBatch.concat([a, b])


def test_concat_trailing_shape_mismatch_names_column_and_both_schemas() -> None:
    a, b = board_batch(2), board_batch(3)
    b["action_mask"] = np.zeros((3, 6), np.int8)
    with pytest.raises(ValueError, match=r"column 'action_mask' has int8\[3, 6\] in batch 1 but int8\[2, 7\]"):
        SampleBatch.concat([a, b])


def test_concat_missing_and_extra_columns() -> None:
    a, b = board_batch(2), board_batch(3)
    with pytest.raises(ValueError, match="column 'rewards' is in batch 0 but missing from batch 1"):
        SampleBatch.concat([a, b.select(["obs", "action_mask", "actions"])])
    b["logp"] = np.zeros(3, np.float32)
    with pytest.raises(ValueError, match="column 'logp' is in batch 1 but not in batch 0"):
        SampleBatch.concat([a, b])


_DTYPES = st.sampled_from([np.float32, np.float64, np.int8, np.int64, np.uint8, np.bool_])


@settings(max_examples=60, deadline=None)
@given(
    dtypes=st.lists(_DTYPES, min_size=1, max_size=4),
    trailing=st.lists(st.lists(st.integers(1, 3), max_size=3), min_size=4, max_size=4),
    rows=st.lists(st.integers(0, 6), min_size=1, max_size=6),
    data=st.data(),
)
def test_concat_matches_numpy(dtypes: list, trailing: list, rows: list[int], data: st.DataObject) -> None:
    parts = []
    for n in rows:
        cols = {}
        for i, dt in enumerate(dtypes):
            arr = data.draw(hnp.arrays(dt, (n, *trailing[i])))
            if data.draw(st.booleans()) and arr.ndim >= 2:
                arr = np.asfortranarray(arr)  # same values, non-C layout
            cols[f"c{i}"] = arr
        parts.append(SampleBatch(cols))
    out = SampleBatch.concat(parts)
    assert len(out) == sum(rows)
    for name in parts[0]:
        expected = np.concatenate([p[name] for p in parts])
        assert out[name].dtype == expected.dtype and out[name].shape == expected.shape
        np.testing.assert_array_equal(out[name], expected)


# -- MultiAgentBatch ----------------------------------------------------------------
def test_multi_agent_batch_construction_errors() -> None:
    with pytest.raises(TypeError, match="policy 'a' batch must be a SampleBatch"):
        MultiAgentBatch({"a": {"x": np.zeros(2)}}, 2)  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="env_steps"):
        MultiAgentBatch({}, -1)


def test_multi_agent_batch_counts_select_and_concat() -> None:
    m1 = MultiAgentBatch({"a": board_batch(3), "b": board_batch(2)}, 3)
    m2 = MultiAgentBatch({"a": board_batch(4, 3)}, 4)
    assert m1.agent_steps() == 5 and len(m1) == 3 and m1.policy_ids() == ["a", "b"]
    assert "a" in m1 and "c" not in m1 and m1["b"] == board_batch(2)
    assert m1.select(["b"]).policy_ids() == ["b"] and m1.select(["b"]).env_steps == 3
    merged = MultiAgentBatch.concat([m1, m2])
    assert merged.env_steps == 7 and merged["a"] == board_batch(7) and len(merged["b"]) == 2
