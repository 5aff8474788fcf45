"""A feeder thread adds while a learner thread samples and updates priorities."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from league.batch import SampleBatch
from league.replay import ArrayStorage, MultiAgentReplayBuffer, PrioritizedReplayBuffer, PrioritizedSampler
from league.replay import ReplayBuffer, RingWriter

OBS = 512  # wide rows: a copy interrupted half-way would show up as a torn row


def rows(start: int, n: int) -> SampleBatch:
    """Every column of row k is derived from its id, so any torn row is detectable."""
    ids = np.arange(start, start + n)
    return SampleBatch({
        "obs": np.repeat(ids[:, None], OBS, axis=1).astype(np.float64),
        "next_obs": np.repeat(ids[:, None] + 1, OBS, axis=1).astype(np.float64),
        "id": ids.astype(np.int64),
    })


def assert_untorn(sample: SampleBatch) -> None:
    ids = sample["id"].astype(np.float64)[:, None]
    assert (sample["obs"] == ids).all()
    assert (sample["next_obs"] == ids + 1).all()


def run_pair(feed, learn, rounds: int = 300) -> None:
    """Run feeder and learner concurrently; re-raise the first failure of either."""
    errors: list[BaseException] = []
    started = threading.Barrier(2)

    def guarded(fn):
        def body() -> None:
            try:
                started.wait()
                for k in range(rounds):
                    fn(k)
            except BaseException as e:  # noqa: BLE001 -- reported to the main thread
                errors.append(e)
        return body

    threads = [threading.Thread(target=guarded(feed)), threading.Thread(target=guarded(learn))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a thread hung (deadlock?)"
    if errors:
        raise errors[0]


@pytest.mark.parametrize("storage", ["ring", "array"])
@pytest.mark.parametrize("chunk", [1, 37, 300])
def test_prioritized_feeder_and_learner(chunk: int, storage: str) -> None:
    if storage == "ring":
        buf = PrioritizedReplayBuffer(256, alpha=0.6, seed=0)  # small: constant overwriting
    else:  # the numpy storage: the buffer's own lock serialises its Python-side work
        buf = ReplayBuffer(ArrayStorage(256), PrioritizedSampler(0.6), RingWriter(), seed=0)
    buf.add(rows(0, 8))
    rng = np.random.default_rng(0)

    def feed(k: int) -> None:
        buf.add(rows(1000 + k * chunk, chunk), rng.uniform(0.1, 2.0, chunk) if k % 2 else None)

    def learn(k: int) -> None:
        sample = buf.sample(64, beta=0.4)
        assert_untorn(sample)
        buf.update_priorities(sample["batch_indexes"], np.abs(np.sin(sample["id"])) + 0.01)

    run_pair(feed, learn)
    total, smallest = buf.tree_roots()
    np.testing.assert_allclose(total, buf.leaf_values().sum(), rtol=1e-9)
    assert smallest == buf.leaf_values().min()
    assert_untorn(buf.stored())


def test_uniform_feeder_and_sampler() -> None:
    buf = ReplayBuffer(128, seed=1)
    buf.add(rows(0, 4))
    run_pair(lambda k: buf.add(rows(10 * k, 50)), lambda k: assert_untorn(buf.sample(128)))
    assert_untorn(buf.stored())


def test_multi_agent_buffers_created_concurrently() -> None:
    from league.batch import MultiAgentBatch

    buf = MultiAgentReplayBuffer(ReplayBuffer, capacity=1000, seed=2)
    run_pair(lambda k: buf.add(MultiAgentBatch({f"p{k % 7}": rows(k, 3)}, 3)),
             lambda k: buf.add(MultiAgentBatch({f"p{k % 5}": rows(k, 2)}, 2)), rounds=100)
    assert sorted(buf.policy_ids()) == [f"p{i}" for i in range(7)]
    assert len(buf) == 100 * 3 + 100 * 2
