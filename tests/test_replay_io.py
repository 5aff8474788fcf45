"""Save/load round trips (exact, including the random stream) and refusal of bad files."""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import numpy as np
import pytest

from league.batch import MultiAgentBatch, SampleBatch
from league.replay import MultiAgentReplayBuffer, PrioritizedReplayBuffer, ReplayBuffer, ReplayFileError


def rows(start: int, n: int) -> SampleBatch:
    ids = np.arange(start, start + n)
    return SampleBatch({
        "obs": (ids[:, None, None] * np.ones((1, 6, 7))).astype(np.float32),
        "actions": ids.astype(np.int64),
        "mask": (ids[:, None] % 2 == np.arange(7) % 2),
    })


def assert_same_buffer(a: ReplayBuffer, b: ReplayBuffer) -> None:
    assert type(a) is type(b)
    assert len(a) == len(b) and a.capacity == b.capacity
    assert a.stored() == b.stored()
    assert [(n, d, s) for n, d, s in a.schema()] == [(n, d, s) for n, d, s in b.schema()]
    if isinstance(a, PrioritizedReplayBuffer):
        np.testing.assert_array_equal(a.leaf_values(), b.leaf_values())
        assert a.tree_roots() == b.tree_roots()
        assert a.max_priority == b.max_priority and a.alpha == b.alpha


def test_uniform_round_trip_gives_the_same_future(tmp_path: Path) -> None:
    buf = ReplayBuffer(13, seed=7)
    buf.add(rows(0, 20))  # wrapped
    buf.sample(5)
    buf.save(tmp_path / "uniform.npz")
    loaded = ReplayBuffer.load(tmp_path / "uniform.npz")
    assert_same_buffer(buf, loaded)
    for start in (100, 200):
        assert buf.sample(9) == loaded.sample(9)
        buf.add(rows(start, 5))  # same write position: same slots overwritten
        loaded.add(rows(start, 5))
        assert_same_buffer(buf, loaded)


def test_prioritized_round_trip_gives_the_same_future(tmp_path: Path) -> None:
    buf = PrioritizedReplayBuffer(11, alpha=0.7, seed=3)
    buf.add(rows(0, 8), np.linspace(0.5, 3.0, 8))
    buf.add(rows(8, 6))  # wraps, default (max) priority
    s = buf.sample(4, beta=0.3)
    buf.update_priorities(s["batch_indexes"], [9.0, 0.1, 2.0, 5.5])
    path = tmp_path / "prio.npz"
    buf.save(path)
    loaded = PrioritizedReplayBuffer.load(path)
    assert_same_buffer(buf, loaded)
    for _ in range(3):
        a, b = buf.sample(7, beta=0.6), loaded.sample(7, beta=0.6)
        assert a == b
        buf.update_priorities(a["batch_indexes"], np.arange(1, 8))
        loaded.update_priorities(b["batch_indexes"], np.arange(1, 8))
    buf.add(rows(50, 3))
    loaded.add(rows(50, 3))
    assert_same_buffer(buf, loaded)


def test_base_class_load_returns_the_saved_kind(tmp_path: Path) -> None:
    buf = PrioritizedReplayBuffer(5, seed=1)
    buf.add(rows(0, 3))
    buf.save(tmp_path / "p.npz")
    assert isinstance(ReplayBuffer.load(tmp_path / "p.npz"), PrioritizedReplayBuffer)
    uniform = ReplayBuffer(5, seed=1)
    uniform.add(rows(0, 3))
    uniform.save(tmp_path / "u.npz")
    with pytest.raises(ReplayFileError, match="PrioritizedReplayBuffer.load reads 'prioritized'"):
        PrioritizedReplayBuffer.load(tmp_path / "u.npz")


def test_empty_buffers_round_trip(tmp_path: Path) -> None:
    for cls in (ReplayBuffer, PrioritizedReplayBuffer):
        buf = cls(4, seed=2)
        buf.save(tmp_path / "e.npz")
        loaded = cls.load(tmp_path / "e.npz")
        assert len(loaded) == 0 and loaded.schema() == []
        buf.add(rows(0, 3))
        loaded.add(rows(0, 3))
        assert buf.sample(3) == loaded.sample(3)


def test_schema_without_rows_round_trips(tmp_path: Path) -> None:
    buf = ReplayBuffer(4, seed=2)
    buf.add(rows(0, 0))
    buf.save(tmp_path / "s.npz")
    loaded = ReplayBuffer.load(tmp_path / "s.npz")
    with pytest.raises(TypeError, match="column 'actions'"):
        loaded.add(SampleBatch({"obs": np.zeros((1, 6, 7), np.float32), "actions": np.zeros(1, np.int32),
                                "mask": np.zeros((1, 7), bool)}))


def test_multi_agent_round_trip(tmp_path: Path) -> None:
    buf = MultiAgentReplayBuffer(PrioritizedReplayBuffer, capacity=9, alpha=0.5, seed=4)
    buf.add(MultiAgentBatch({"red": rows(0, 12), "blue": rows(100, 4)}, 12), priorities={"blue": [1.0, 2, 3, 4]})
    buf.save(tmp_path / "ma.npz")
    loaded = MultiAgentReplayBuffer.load(tmp_path / "ma.npz")
    assert loaded.policy_ids() == ["red", "blue"] and loaded.buffer_kwargs == buf.buffer_kwargs
    for pid in ("red", "blue"):
        assert_same_buffer(buf[pid], loaded[pid])
        assert buf.sample(pid, 5, beta=0.2) == loaded.sample(pid, 5, beta=0.2)
    buf.add(MultiAgentBatch({"green": rows(0, 2)}, 2))
    loaded.add(MultiAgentBatch({"green": rows(0, 2)}, 2))
    assert buf.sample("green", 4) == loaded.sample("green", 4)  # per-policy seeds derive the same way


def test_save_is_atomic_and_leaves_no_temporary_files(tmp_path: Path) -> None:
    buf = ReplayBuffer(4, seed=0)
    buf.add(rows(0, 2))
    buf.save(tmp_path / "x.npz")
    buf.save(tmp_path / "x.npz")  # overwrite
    assert sorted(os.listdir(tmp_path)) == ["x.npz"]


# -- bad files ----------------------------------------------------------------------
@pytest.fixture
def saved(tmp_path: Path) -> Path:
    buf = PrioritizedReplayBuffer(6, seed=0)
    buf.add(rows(0, 6))
    path = tmp_path / "good.npz"
    buf.save(path)
    return path


@pytest.mark.parametrize("keep", [0.0, 0.3, 0.9, 0.999])
def test_truncated_files_are_refused(saved: Path, tmp_path: Path, keep: float) -> None:
    data = saved.read_bytes()
    cut = tmp_path / "cut.npz"
    cut.write_bytes(data[: int(len(data) * keep)])
    with pytest.raises(ValueError, match="not a readable league replay file"):
        ReplayBuffer.load(cut)


def test_foreign_files_are_refused(tmp_path: Path) -> None:
    (tmp_path / "text.npz").write_text("hello, not a buffer")
    np.save(tmp_path / "array.npy", np.arange(3))
    np.savez(tmp_path / "other.npz", a=np.arange(3))
    np.savez(tmp_path / "wrongmeta.npz", meta=np.frombuffer(b'{"format": "something-else", "version": 1}', np.uint8))
    for name in ("text.npz", "array.npy", "other.npz", "wrongmeta.npz"):
        with pytest.raises(ValueError):
            ReplayBuffer.load(tmp_path / name)
    with pytest.raises(ValueError):
        ReplayBuffer.load(tmp_path / "does-not-exist.npz")


class _Boom:
    """Unpickling this would create a file: proof that load runs code from the file."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_loading_never_unpickles(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    with open(tmp_path / "evil.npz", "wb") as f:
        pickle.dump(_Boom(str(marker)), f)
    with pytest.raises(ValueError):
        ReplayBuffer.load(tmp_path / "evil.npz")
    # An object array (stored as a pickle inside the npz) in place of a column.
    meta = {"format": "league.replay", "version": 1, "kind": "uniform", "capacity": 4, "alpha": None, "size": 1,
            "next": 1, "rng": [1, 2, 3, 4], "max_priority": 1.0, "columns": ["x"]}
    column = np.empty(1, dtype=object)
    column[0] = _Boom(str(marker))
    np.savez(tmp_path / "evil2.npz", meta=np.frombuffer(json.dumps(meta).encode(), np.uint8), column_0=column)
    with pytest.raises(ValueError):
        ReplayBuffer.load(tmp_path / "evil2.npz")
    assert not marker.exists()


def _rewrite_meta(src: Path, dst: Path, **changes: object) -> None:
    with np.load(src, allow_pickle=False) as f:
        arrays = {k: f[k] for k in f.files}
    meta = json.loads(arrays["meta"].tobytes())
    meta.update(changes)
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), np.uint8)
    np.savez(dst, **arrays)


@pytest.mark.parametrize("changes", [
    {"size": 7}, {"size": 5}, {"next": 9}, {"capacity": 3}, {"rng": [0, 0, 0, 0]}, {"rng": [1, 2]},
    {"max_priority": -1.0}, {"columns": ["obs"]}, {"columns": "obs"}, {"version": 2}, {"kind": "other"},
    {"alpha": "x"}, {"alpha": None},
])
def test_inconsistent_metadata_is_refused(saved: Path, tmp_path: Path, changes: dict) -> None:
    bad = tmp_path / "bad.npz"
    _rewrite_meta(saved, bad, **changes)
    with pytest.raises(ValueError):
        PrioritizedReplayBuffer.load(bad)


def test_corrupt_priorities_are_refused(saved: Path, tmp_path: Path) -> None:
    with np.load(saved, allow_pickle=False) as f:
        arrays = {k: f[k] for k in f.files}
    arrays["leaf_values"] = arrays["leaf_values"].copy()
    arrays["leaf_values"][2] = np.nan
    np.savez(tmp_path / "nan.npz", **arrays)
    with pytest.raises(ValueError, match="priority"):
        PrioritizedReplayBuffer.load(tmp_path / "nan.npz")
