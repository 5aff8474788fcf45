"""Composed replay buffers: storage + sampler + writer.

- the reservoir writer keeps a uniform sample of the whole stream;
- the n-step writer matches a hand-computed example across episode ends, truncation and
  batch boundaries, and a per-trajectory oracle (``n_step_transitions``) on random streams;
- prioritized sampling frequencies follow ``p ** alpha`` on either storage;
- every composition saves and loads (file and state dict) into the same future;
- bad compositions and bad input are refused with clear errors, changing nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from league.batch import Columns as C
from league.batch import MultiAgentBatch, SampleBatch
from league.replay import (
    DISCOUNTS,
    N_STEP_RETURNS,
    NEXT_ACTION_MASK,
    ArrayStorage,
    MultiAgentReplayBuffer,
    NStepWriter,
    PrioritizedReplayBuffer,
    PrioritizedSampler,
    ReplayBuffer,
    ReplayFileError,
    ReservoirWriter,
    RingStorage,
    RingWriter,
    UniformSampler,
    n_step_transitions,
)

P_MIN = 1e-4  # fixed seeds make the statistical tests deterministic; the bound only guards the law


def steps(eps: int, agent: int, t0: int, rewards: list[float], end: str = "cut", final_obs: float | None = None,
          obs_dim: int = 2) -> SampleBatch:
    """Rows ``t0..`` of one agent's trajectory as a sampler's DQN postprocessing leaves them.

    ``obs`` encodes ``(eps, agent, t)``; ``next_obs`` is the next row's obs, zeros after
    termination, ``final_obs`` after truncation. ``end``: "cut" (more rows may follow),
    "terminated" or "truncated" (the last row ends the episode).
    """
    n = len(rewards)
    t = np.arange(t0, t0 + n)
    code = (eps * 100 + agent * 10 + t).astype(np.float32)
    obs = np.repeat(code[:, None], obs_dim, axis=1)
    next_obs = obs + 1
    done = np.zeros(n, bool)
    done[-1] = end != "cut"
    if end == "terminated":
        next_obs[-1] = 0.0
    elif end == "truncated" and final_obs is not None:
        next_obs[-1] = final_obs
    return SampleBatch({
        C.OBS: obs, C.ACTIONS: (t % 3).astype(np.int64), C.REWARDS: np.asarray(rewards, np.float32),
        C.TERMINATEDS: done & (end == "terminated"), C.TRUNCATEDS: done & (end == "truncated"),
        C.EPS_ID: np.full(n, eps, np.int64), C.AGENT_INDEX: np.full(n, agent, np.int32), C.T: t.astype(np.int32),
        C.NEXT_OBS: next_obs, NEXT_ACTION_MASK: np.ones((n, 3), np.int8),
    })


def cat(*parts: SampleBatch) -> SampleBatch:
    return SampleBatch.concat(list(parts))


def by_key(stored: SampleBatch) -> dict[tuple[int, int, int], dict[str, np.ndarray]]:
    """Stored transitions keyed by (eps_id, agent_index, t)."""
    keys = zip(stored[C.EPS_ID].tolist(), stored[C.AGENT_INDEX].tolist(), stored[C.T].tolist())
    out = {}
    for i, key in enumerate(keys):
        assert key not in out, f"row {key} stored twice"
        out[key] = {name: stored[name][i] for name in stored}
    return out


# ------------------------------------------------------------------------ n-step writer
def test_n_step_writer_by_hand_across_batches_episode_ends_and_truncation() -> None:
    n, gamma = 3, 0.5
    buf = ReplayBuffer(RingStorage(32), UniformSampler(), NStepWriter(n, gamma), seed=0)
    # Trajectory A (eps 1, agent 0): rewards 1..5, terminated at t=4, split over two batches.
    # Trajectory B (eps 2, agent 1): rewards 10..40, truncated at t=3 with final obs 555.
    # Trajectory C (eps 2, agent 0): one row, cut and never continued (flushed at the end).
    buf.add(cat(steps(1, 0, 0, [1, 2]), steps(2, 1, 0, [10, 20, 30])))
    assert len(buf) == 1 and buf.writer.pending_rows == 4  # only B's t=0 has its 3 rows
    buf.add(cat(steps(2, 1, 3, [40], "truncated", final_obs=555.0), steps(1, 0, 2, [3, 4, 5], "terminated"),
                steps(2, 0, 0, [7])))
    assert len(buf) == 9 and buf.writer.pending_rows == 1
    buf.flush()
    assert len(buf) == 10 and buf.writer.pending_rows == 0
    rows = by_key(buf.stored())
    expected = {  # key: (n-step return, discount, bootstrap obs)
        (1, 0, 0): (1 + 0.5 * 2 + 0.25 * 3, 0.125, 103.0),
        (1, 0, 1): (2 + 0.5 * 3 + 0.25 * 4, 0.125, 104.0),
        (1, 0, 2): (3 + 0.5 * 4 + 0.25 * 5, 0.0, 0.0),  # the window reaches the terminal state
        (1, 0, 3): (4 + 0.5 * 5, 0.0, 0.0),
        (1, 0, 4): (5.0, 0.0, 0.0),
        (2, 1, 0): (10 + 0.5 * 20 + 0.25 * 30, 0.125, 213.0),
        (2, 1, 1): (20 + 0.5 * 30 + 0.25 * 40, 0.125, 555.0),  # truncated: bootstrap from the final obs
        (2, 1, 2): (30 + 0.5 * 40, 0.25, 555.0),
        (2, 1, 3): (40.0, 0.5, 555.0),
        (2, 0, 0): (7.0, 0.5, 201.0),  # flushed: bootstraps from its own next state
    }
    assert set(rows) == set(expected)
    for key, (ret, disc, boot) in expected.items():
        row = rows[key]
        assert row[N_STEP_RETURNS] == pytest.approx(ret) and row[DISCOUNTS] == pytest.approx(disc), key
        np.testing.assert_array_equal(row[C.NEXT_OBS], [boot, boot], err_msg=str(key))
    assert buf.stored()[N_STEP_RETURNS].dtype == np.float32 and buf.stored()[DISCOUNTS].dtype == np.float32


def test_n_step_writer_closes_a_segment_at_a_gap_and_after_flush_after_writes() -> None:
    buf = ReplayBuffer(ArrayStorage(32), UniformSampler(), NStepWriter(3, 0.5, flush_after=2), seed=0)
    buf.add(steps(5, 0, 0, [1, 2]))
    buf.add(steps(5, 0, 4, [5, 6], "terminated"))  # t=2, 3 never arrive (dropped on the way)
    rows = by_key(buf.stored())
    assert rows[(5, 0, 0)][N_STEP_RETURNS] == pytest.approx(1 + 0.5 * 2)
    assert rows[(5, 0, 0)][DISCOUNTS] == pytest.approx(0.25) and rows[(5, 0, 0)][C.NEXT_OBS][0] == 502.0
    assert rows[(5, 0, 1)][DISCOUNTS] == pytest.approx(0.5)
    assert rows[(5, 0, 4)][N_STEP_RETURNS] == pytest.approx(5 + 0.5 * 6) and rows[(5, 0, 4)][DISCOUNTS] == 0.0
    # A trajectory nobody continues is written once flush_after writes passed without its rows.
    buf.add(steps(6, 0, 0, [1, 1]))
    assert buf.writer.pending_rows == 2
    buf.add(steps(7, 0, 0, [1], "terminated"))
    assert buf.writer.pending_rows == 2
    buf.add(steps(8, 0, 0, [1], "terminated"))
    assert buf.writer.pending_rows == 0 and (6, 0, 1) in by_key(buf.stored())


@pytest.mark.parametrize("seed", range(6))
def test_n_step_writer_matches_the_per_trajectory_oracle_on_random_streams(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, gamma = int(rng.integers(1, 5)), 0.9
    trajectories = []
    for k in range(int(rng.integers(1, 7))):
        length = int(rng.integers(1, 12))
        end = str(rng.choice(["terminated", "truncated", "cut"]))
        rewards = rng.normal(size=length).round(3).tolist()
        whole = steps(k // 2, k % 2, 0, rewards, end, final_obs=float(rng.integers(900, 999)))
        cuts = np.sort(rng.choice(np.arange(1, length), size=min(length - 1, int(rng.integers(0, 4))), replace=False))
        bounds = [0, *cuts.tolist(), length]
        trajectories.append((whole, end, [whole[a:b] for a, b in zip(bounds, bounds[1:])]))
    buf = ReplayBuffer(RingStorage(256), UniformSampler(), NStepWriter(n, gamma), seed=seed)
    queues = [list(chunks) for _, _, chunks in trajectories]
    while any(queues):  # random interleaving, each trajectory's chunks in order, several per batch
        batch = []
        for q in queues:
            if q and rng.random() < 0.6:
                batch.append(q.pop(0))
        if batch:
            buf.add(cat(*batch))
    buf.flush()
    rows = by_key(buf.stored())
    assert len(rows) == sum(len(whole) for whole, _, _ in trajectories)
    for whole, end, _ in trajectories:
        terminated = end == "terminated"
        expected = n_step_transitions(whole[C.OBS], whole[NEXT_ACTION_MASK], whole[C.REWARDS],
                                      None if terminated else whole[C.NEXT_OBS][-1:], None, n, gamma)
        for t in range(len(whole)):
            row = rows[(int(whole[C.EPS_ID][0]), int(whole[C.AGENT_INDEX][0]), t)]
            assert row[N_STEP_RETURNS] == pytest.approx(expected[N_STEP_RETURNS][t], rel=1e-5, abs=1e-6)
            assert row[DISCOUNTS] == pytest.approx(expected[DISCOUNTS][t], rel=1e-6)
            if expected[DISCOUNTS][t] > 0:
                np.testing.assert_array_equal(row[C.NEXT_OBS], expected[C.NEXT_OBS][t])


def test_n_step_writer_refuses_bad_input_and_changes_nothing() -> None:
    buf = ReplayBuffer(RingStorage(16), UniformSampler(), NStepWriter(3, 0.9), seed=0)
    buf.add(steps(1, 0, 0, [1, 2]))
    before = buf.writer.state_dict()
    with pytest.raises(ValueError, match=r"NStepWriter needs columns \[.*'eps_id'.*\]"):
        ReplayBuffer(RingStorage(4), writer=NStepWriter()).add({C.REWARDS: np.zeros(2, np.float32)})
    with pytest.raises(TypeError, match="no priorities"):
        buf.add(steps(1, 0, 2, [3]), [1.0])
    with pytest.raises(ValueError, match=r"rewards\[1\] = nan: rewards must be finite"):
        buf.add(steps(1, 0, 2, [3, np.nan]))
    wrong = steps(1, 0, 2, [3]).copy()
    wrong[C.OBS] = wrong[C.OBS].astype(np.float64)
    with pytest.raises(TypeError, match=r"column 'obs' is float64\[\*, 2\] in the batch but float32\[\*, 2\]"):
        buf.add(wrong)
    after = buf.writer.state_dict()
    assert after["writes"] == before["writes"] and len(buf) == 0 and buf.writer.pending_rows == 2
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        NStepWriter(0)
    with pytest.raises(ValueError, match="gamma"):
        NStepWriter(3, 1.5)


# ------------------------------------------------------------------------ reservoir writer
def test_reservoir_keeps_a_uniform_sample_of_the_stream() -> None:
    stream, capacity, runs = 2000, 100, 100
    inclusions = []
    for seed in range(runs):
        rng = np.random.default_rng(1000 + seed)
        buf = ReplayBuffer(ArrayStorage(capacity), UniformSampler(), ReservoirWriter(), seed=seed)
        start = 0
        while start < stream:
            size = min(int(rng.integers(1, 60)), stream - start)
            buf.add({"id": np.arange(start, start + size)})
            start += size
        kept = buf.stored()["id"]
        assert len(kept) == capacity and len(np.unique(kept)) == capacity and buf.writer.seen == stream
        inclusions.append(kept)
    counts = np.bincount(np.concatenate(inclusions) // 100, minlength=stream // 100)  # 20 bins of 100 ids
    assert stats.chisquare(counts).pvalue > P_MIN, counts
    # What a FIFO ring would keep (the last 100 ids) is nothing like it: the test has teeth.
    fifo = np.bincount(np.tile(np.arange(stream - capacity, stream), runs) // 100, minlength=stream // 100)
    assert stats.chisquare(fifo).pvalue < 1e-12


def test_reservoir_stores_everything_until_full_then_only_replaces() -> None:
    buf = ReplayBuffer(ArrayStorage(10), UniformSampler(), ReservoirWriter(), seed=0)
    buf.add({"id": np.arange(7)})
    np.testing.assert_array_equal(buf.stored()["id"], np.arange(7))
    buf.add({"id": np.arange(7, 500)})  # one batch much larger than the storage
    kept = buf.stored()["id"]
    assert len(kept) == 10 and len(np.unique(kept)) == 10 and buf.writer.seen == 500


def test_reservoir_needs_a_storage_that_writes_any_slot() -> None:
    with pytest.raises(TypeError, match="RingStorage only appends.*ArrayStorage"):
        ReplayBuffer(RingStorage(10), UniformSampler(), ReservoirWriter())


# ------------------------------------------------------------------------ prioritized sampler
@pytest.mark.parametrize("storage", [RingStorage, ArrayStorage])
def test_prioritized_frequencies_follow_priorities_to_the_alpha(storage: type) -> None:
    size, alpha = 40, 0.7
    priorities = np.random.default_rng(0).uniform(0.05, 5.0, size)
    buf = ReplayBuffer(storage(64), PrioritizedSampler(alpha), RingWriter(), seed=3)
    buf.add({"x": np.arange(size)}, priorities)
    draws = np.concatenate([buf.sample(997, beta=0.5)[C.BATCH_INDEXES] for _ in range(150)])
    observed = np.bincount(draws, minlength=size)
    expected = priorities**alpha / (priorities**alpha).sum()
    assert stats.chisquare(observed, expected * observed.sum()).pvalue > P_MIN
    assert stats.chisquare(observed, priorities / priorities.sum() * observed.sum()).pvalue < 1e-12
    sample = buf.sample(400, beta=1.0)
    np.testing.assert_array_equal(sample["x"], sample[C.BATCH_INDEXES])  # rows are the drawn slots
    leaves = priorities**alpha
    np.testing.assert_allclose(sample[C.WEIGHTS], leaves.min() / leaves[sample[C.BATCH_INDEXES]], rtol=1e-5)


def test_prioritized_updates_and_default_priorities_on_the_numpy_storage() -> None:
    buf = ReplayBuffer(ArrayStorage(8), PrioritizedSampler(alpha=1.0), RingWriter(), seed=1)
    buf.add({"x": np.arange(5)}, [1.0, 2.0, 3.0, 4.0, 5.0])
    buf.add({"x": np.arange(5, 10)})  # wraps onto slots 0, 1 with the largest priority so far
    np.testing.assert_array_equal(buf.stored()["x"], [8, 9, 2, 3, 4, 5, 6, 7])
    np.testing.assert_allclose(buf.leaf_values(), [5, 5, 3, 4, 5, 5, 5, 5])
    buf.update_priorities(np.array([2, 3]), np.array([0.5, 9.0]))
    np.testing.assert_allclose(buf.leaf_values(), [5, 5, 0.5, 9, 5, 5, 5, 5])
    assert buf.max_priority == 9.0 and buf.tree_roots() == pytest.approx((39.5, 0.5))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -1.0, 0.0])
def test_bad_priorities_are_refused_before_anything_is_written(bad: float) -> None:
    for storage in (RingStorage(8), ArrayStorage(8)):
        buf = ReplayBuffer(storage, PrioritizedSampler(0.6), RingWriter(), seed=0)
        buf.add({"x": np.arange(3)})
        leaves = buf.leaf_values().copy()
        with pytest.raises(ValueError, match=r"priorities\[1\]"):
            buf.add({"x": np.arange(2)}, [1.0, bad])
        with pytest.raises(ValueError, match=r"priorities\[1\]"):
            buf.update_priorities([0, 1], [1.0, bad])
        with pytest.raises(ValueError, match="priorities has 1 entries but the batch has 2"):
            buf.add({"x": np.arange(2)}, [1.0])
        assert len(buf) == 3
        np.testing.assert_array_equal(buf.leaf_values(), leaves)


# ------------------------------------------------------------------------ schema errors, both storages
@pytest.mark.parametrize("storage", [RingStorage, ArrayStorage])
def test_both_storages_refuse_schema_changes_in_the_same_words(storage: type) -> None:
    buf = ReplayBuffer(storage(10), seed=0)
    good = {"obs": np.zeros((4, 3), np.float32), "actions": np.arange(4)}
    buf.add(good)
    with pytest.raises(TypeError, match=r"column 'obs' is float64\[\*, 3\] in the batch but float32\[\*, 3\]"):
        buf.add({"obs": np.zeros((4, 3)), "actions": np.arange(4)})
    with pytest.raises(ValueError, match=r"column 'obs' is float32\[\*, 5\] in the batch but float32\[\*, 3\]"):
        buf.add({"obs": np.zeros((4, 5), np.float32), "actions": np.arange(4)})
    with pytest.raises(ValueError, match=r"column 'actions' is missing.*batch \{obs: float32\[\*, 3\]\}, buffer \{obs"):
        buf.add({"obs": np.zeros((2, 3), np.float32)})
    with pytest.raises(ValueError, match=r"column 'rewards' is not in the buffer's schema"):
        buf.add({**good, "rewards": np.zeros(4, np.float32)})
    with pytest.raises(ValueError, match="reserved"):
        ReplayBuffer(storage(10)).add({"batch_indexes": np.zeros(2)})
    with pytest.raises(ValueError, match="empty"):
        ReplayBuffer(storage(10)).sample(1)
    with pytest.raises(TypeError, match="Python objects"):
        bad = SampleBatch({"x": np.zeros(2)})
        bad["o"] = np.zeros(2, object)
        ReplayBuffer(storage(10)).add(bad)
    assert len(buf) == 4


def test_components_belong_to_one_buffer_and_must_be_components() -> None:
    storage = RingStorage(4)
    ReplayBuffer(storage)
    with pytest.raises(ValueError, match="already belongs to another buffer"):
        ReplayBuffer(storage)
    with pytest.raises(TypeError, match="sampler must be a Sampler"):
        ReplayBuffer(RingStorage(4), RingWriter())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="needs a storage"):
        ReplayBuffer()
    with pytest.raises(ValueError, match=r"beta must be in \[0, 1\]"):
        PrioritizedSampler(0.6, beta=1.5)
    with pytest.raises(TypeError, match="takes no beta"):
        ReplayBuffer(4).sample(1, beta=0.5)


# ------------------------------------------------------------------------ save / load
COMPOSITIONS = [
    ("ring", "uniform", "ring"), ("ring", "prioritized", "ring"), ("ring", "uniform", "n_step"),
    ("ring", "prioritized", "n_step"), ("array", "uniform", "ring"), ("array", "prioritized", "ring"),
    ("array", "uniform", "n_step"), ("array", "prioritized", "n_step"), ("array", "uniform", "reservoir"),
    ("array", "prioritized", "reservoir"),
]


def compose(kinds: tuple[str, str, str], seed: int = 7) -> ReplayBuffer:
    storage_kind, sampler_kind, writer_kind = kinds
    storage = RingStorage(13) if storage_kind == "ring" else ArrayStorage(13)
    sampler = UniformSampler() if sampler_kind == "uniform" else PrioritizedSampler(0.7, beta=0.5)
    writer = {"ring": RingWriter, "n_step": lambda: NStepWriter(3, 0.9), "reservoir": ReservoirWriter}[writer_kind]()
    return ReplayBuffer(storage, sampler, writer, seed=seed)


def feed(buf: ReplayBuffer, start: int) -> None:
    """Rows of two trajectories, the second cut (its last rows stay in an n-step writer)."""
    buf.add(cat(steps(start, 0, 0, [1, 2, 3, 4, 5, 6], "terminated"), steps(start + 1, 1, 0, [1, 2, 3, 4, 5])))


def assert_same(a: ReplayBuffer, b: ReplayBuffer) -> None:
    assert type(a) is type(b) and a.config() == b.config()
    assert len(a) == len(b) and a.stored() == b.stored() and a.writer.pending_rows == b.writer.pending_rows
    if a.sampler.prioritized:
        np.testing.assert_array_equal(a.leaf_values(), b.leaf_values())
        assert a.max_priority == b.max_priority


def exercise(buf: ReplayBuffer, round_: int) -> SampleBatch:
    s = buf.sample(6)
    if buf.sampler.prioritized:
        buf.update_priorities(s[C.BATCH_INDEXES], np.arange(1, 7) * (round_ + 1.0))
    return s


@pytest.mark.parametrize("kinds", COMPOSITIONS, ids="+".join)
def test_every_composition_round_trips_into_the_same_future(tmp_path: Path, kinds: tuple[str, str, str]) -> None:
    buf = compose(kinds)
    for start in (0, 10, 20):
        feed(buf, start)  # wraps the 13-row storage
    exercise(buf, 0)
    buf.save(tmp_path / "buf.npz")
    loaded = ReplayBuffer.load(tmp_path / "buf.npz")
    in_memory = compose(kinds, seed=99)  # another seed: the state brings the random streams along
    in_memory.load_state_dict(buf.state_dict())
    for other in (loaded, in_memory):
        assert_same(buf, other)
    with np.load(tmp_path / "buf.npz", allow_pickle=False) as f:
        version = json.loads(f["meta"].tobytes())["version"]
    assert version == (1 if kinds[0] == "ring" and kinds[2] == "ring" and kinds[1] == "uniform" else 2)
    for round_ in (1, 2):
        expected = exercise(buf, round_)
        assert exercise(loaded, round_) == expected and exercise(in_memory, round_) == expected
        for b in (buf, loaded, in_memory):
            feed(b, 100 * round_)
        assert_same(buf, loaded)
        assert_same(buf, in_memory)
    for b in (buf, loaded):
        b.flush()
    assert_same(buf, loaded)


def test_legacy_prioritized_composition_still_writes_format_version_1(tmp_path: Path) -> None:
    buf = ReplayBuffer(RingStorage(5), PrioritizedSampler(0.6), RingWriter(), seed=0)  # beta 0.4: the legacy default
    buf.add({"x": np.arange(3)})
    buf.save(tmp_path / "p.npz")
    loaded = ReplayBuffer.load(tmp_path / "p.npz")
    assert isinstance(loaded, PrioritizedReplayBuffer) and loaded.stored() == buf.stored()


def test_composed_files_refuse_the_prioritized_loader_and_tampering(tmp_path: Path) -> None:
    buf = compose(("ring", "prioritized", "n_step"))
    feed(buf, 0)
    buf.save(tmp_path / "c.npz")
    with pytest.raises(ReplayFileError, match="PrioritizedReplayBuffer.load reads 'prioritized'"):
        PrioritizedReplayBuffer.load(tmp_path / "c.npz")
    with np.load(tmp_path / "c.npz", allow_pickle=False) as f:
        arrays = {k: f[k] for k in f.files}
    meta = json.loads(arrays["meta"].tobytes())
    for change in ({"storage": {"kind": "ring", "capacity": 2}}, {"writer": {"kind": "nope"}}):
        bad = json.loads(json.dumps(meta))
        bad["state"]["config"].update(change)
        arrays["meta"] = np.frombuffer(json.dumps(bad).encode(), np.uint8)
        np.savez(tmp_path / "bad.npz", **arrays)
        with pytest.raises(ReplayFileError, match="bad.npz"):
            ReplayBuffer.load(tmp_path / "bad.npz")
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), np.uint8)
    arrays["stray"] = np.zeros(1)
    np.savez(tmp_path / "stray.npz", **arrays)
    with pytest.raises(ReplayFileError, match="not in the metadata"):
        ReplayBuffer.load(tmp_path / "stray.npz")
    with pytest.raises(ValueError, match="composition"):
        compose(("ring", "uniform", "n_step")).load_state_dict(buf.state_dict())


def test_multi_agent_composed_buffers_round_trip(tmp_path: Path) -> None:
    template = ReplayBuffer(RingStorage(50), PrioritizedSampler(0.6), NStepWriter(2, 0.9))
    multi = MultiAgentReplayBuffer(template, seed=4)
    multi.add(MultiAgentBatch({"a": steps(1, 0, 0, [1, 2, 3]), "b": steps(2, 1, 0, [1, 1], "truncated")}, 3))
    assert len(template) == 0 and multi["a"].config() == template.config()
    assert multi["a"].writer.pending_rows == 1 and len(multi["b"]) == 2
    multi.save(tmp_path / "m.npz")
    loaded = MultiAgentReplayBuffer.load(tmp_path / "m.npz")
    assert loaded.policy_ids() == ["a", "b"] and loaded.template == multi.template
    for pid in ("a", "b"):
        assert_same(multi[pid], loaded[pid])
        assert multi.sample(pid, 5, beta=0.3) == loaded.sample(pid, 5, beta=0.3)
    for m in (multi, loaded):
        m.add(MultiAgentBatch({"a": steps(1, 0, 3, [4], "terminated"), "c": steps(3, 0, 0, [2, 2])}, 1))
        m.flush()
    for pid in ("a", "b", "c"):
        assert_same(multi[pid], loaded[pid])
    assert multi.sample("c", 4, beta=0.3) == loaded.sample("c", 4, beta=0.3)  # per-policy seeds derive alike
    multi.forget("a")
    assert multi.policy_ids() == ["b", "c"]
    with pytest.raises(TypeError, match="only argument is seed"):
        MultiAgentReplayBuffer(template, capacity=3)
