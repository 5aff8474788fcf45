"""Throughput of league's C++ core: replay add/sample/update and batch concat.

Prints one JSON object per figure. Each figure is measured in one run against
* ``numpy``: the naive baseline (per-column fancy indexing / slice assignment,
  ``np.concatenate``; for prioritized replay a cumsum + searchsorted over all priorities),
* ``copy_ceiling``: one ``np.copyto`` of the same number of bytes, contiguous
  (what the memory system allows; not reachable by a random gather),
* ``cpprb`` where it applies and is installed.
Variants are interleaved, each repeated ``--repeats`` times; medians are reported.
Ratios between variants of one run matter more than absolute numbers on a shared machine.

    python benchmarks/bench_core.py [--capacity 1000000] [--repeats 5] [--only sample,concat]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from collections.abc import Callable

import numpy as np

from league.batch import SampleBatch
from league.replay import PrioritizedReplayBuffer, ReplayBuffer

try:
    import cpprb
except ImportError:  # the comparison is optional
    cpprb = None

OBS_DIM, CHUNK, BATCH = 84, 256, 256
ALPHA, BETA = 0.6, 0.4
ENV_DICT = {
    "obs": {"shape": OBS_DIM, "dtype": np.float32},
    "next_obs": {"shape": OBS_DIM, "dtype": np.float32},
    "action": {"dtype": np.int64},
    "reward": {"dtype": np.float32},
    "done": {"dtype": np.bool_},
}


def transitions(n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """n stored rows of the benchmark schema."""
    return {
        "obs": rng.random((n, OBS_DIM), dtype=np.float32),
        "next_obs": rng.random((n, OBS_DIM), dtype=np.float32),
        "action": rng.integers(0, 18, n).astype(np.int64),
        "reward": rng.random(n, dtype=np.float32),
        "done": rng.random(n) < 0.01,
    }


def row_bytes(cols: dict[str, np.ndarray]) -> int:
    return sum(v.nbytes // len(v) for v in cols.values())


def measure(variants: dict[str, tuple[Callable[[], object], int]], repeats: int) -> dict[str, float]:
    """Median calls/s per variant; each entry is (one call, calls per timed block)."""
    rates: dict[str, list[float]] = {k: [] for k in variants}
    for fn, _ in variants.values():
        fn()  # warm-up
    for _ in range(repeats):
        for name, (fn, calls) in variants.items():
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            rates[name].append(calls / (time.perf_counter() - start))
    return {k: statistics.median(v) for k, v in rates.items()}


def emit(figure: str, unit: str, rates: dict[str, float], target: float | None = None, **extra: object) -> None:
    record: dict[str, object] = {"figure": figure, "unit": unit}
    record.update({k: round(v, 1) for k, v in rates.items()})
    for base in ("cpprb", "numpy"):
        if base in rates:
            record[f"league_vs_{base}"] = round(rates["league"] / rates[base], 2)
    if target is not None:
        record["target_vs_cpprb" if "cpprb" in rates else "target_vs_numpy"] = target
    record.update(extra)
    print(json.dumps(record), flush=True)


class NumpyRing:
    """The naive baseline: preallocated numpy columns, slice assignment, fancy indexing."""

    def __init__(self, capacity: int, cols: dict[str, np.ndarray]) -> None:
        self.capacity, self.next, self.size = capacity, 0, 0
        self.store = {k: np.empty((capacity,) + v.shape[1:], v.dtype) for k, v in cols.items()}
        self.rng = np.random.default_rng(0)

    def add(self, cols: dict[str, np.ndarray]) -> None:
        n = len(next(iter(cols.values())))
        idx = (self.next + np.arange(n)) % self.capacity if self.next + n > self.capacity else None
        for k, v in cols.items():
            if idx is None:
                self.store[k][self.next : self.next + n] = v
            else:
                self.store[k][idx] = v
        self.next = (self.next + n) % self.capacity
        self.size = min(self.size + n, self.capacity)

    def sample(self, n: int) -> dict[str, np.ndarray]:
        idx = self.rng.integers(0, self.size, n)
        out = {k: v[idx] for k, v in self.store.items()}
        out["batch_indexes"] = idx
        return out


class NumpyPrioritized(NumpyRing):
    """Naive prioritized baseline: O(N) cumsum + searchsorted per sample."""

    def __init__(self, capacity: int, cols: dict[str, np.ndarray]) -> None:
        super().__init__(capacity, cols)
        self.p = np.zeros(capacity)

    def add(self, cols: dict[str, np.ndarray]) -> None:
        n = len(next(iter(cols.values())))
        self.p[(self.next + np.arange(n)) % self.capacity] = 1.0
        super().add(cols)

    def sample_update(self, n: int, priorities: np.ndarray) -> None:
        cum = np.cumsum(self.p[: self.size])
        mass = (np.arange(n) + self.rng.random(n)) * (cum[-1] / n)
        idx = np.minimum(np.searchsorted(cum, mass, side="right"), self.size - 1)
        out = {k: v[idx] for k, v in self.store.items()}
        out["weights"] = (self.p[idx] / self.p[: self.size].min()) ** -BETA
        self.p[idx] = priorities**ALPHA


def copier(nbytes: int) -> Callable[[], None]:
    src, dst = np.ones(nbytes, np.uint8), np.empty(nbytes, np.uint8)
    return lambda: np.copyto(dst, src)


def fill(add: Callable[[], object], capacity: int) -> None:
    for _ in range(capacity // CHUNK + 1):
        add()


def bench_uniform(capacity: int, repeats: int, rng: np.random.Generator) -> None:
    cols = transitions(CHUNK, rng)
    batch = SampleBatch(cols)
    one = batch[0:1]
    one_cols = {k: v[0:1] for k, v in cols.items()}
    one_cpprb = {k: v[0] for k, v in cols.items()}
    league, naive = ReplayBuffer(capacity, seed=0), NumpyRing(capacity, cols)
    fill(lambda: league.add(batch), capacity)
    fill(lambda: naive.add(cols), capacity)
    chunk_v = {"league": (lambda: league.add(batch), 400), "numpy": (lambda: naive.add(cols), 400),
               "copy_ceiling": (copier(CHUNK * row_bytes(cols)), 400)}
    single_v = {"league": (lambda: league.add(one), 20000), "numpy": (lambda: naive.add(one_cols), 20000),
                "copy_ceiling": (copier(row_bytes(cols)), 20000)}
    sample_v = {"league": (lambda: league.sample(BATCH), 2000), "numpy": (lambda: naive.sample(BATCH), 2000),
                "copy_ceiling": (copier(BATCH * row_bytes(cols)), 2000)}
    if cpprb is not None:
        ref = cpprb.ReplayBuffer(capacity, ENV_DICT)
        fill(lambda: ref.add(**cols), capacity)
        chunk_v["cpprb"] = (lambda: ref.add(**cols), 400)
        single_v["cpprb"] = (lambda: ref.add(**one_cpprb), 20000)
        sample_v["cpprb"] = (lambda: ref.sample(BATCH), 2000)
    emit("uniform_add_chunk256", "chunks/s", measure(chunk_v, repeats), 1.5, capacity=capacity, rows=CHUNK)
    emit("uniform_add_single_row", "adds/s", measure(single_v, repeats), 5.0, capacity=capacity)
    emit("uniform_sample", "batches/s", measure(sample_v, repeats), 1.7, capacity=capacity, batch=BATCH)


def bench_prioritized(capacity: int, repeats: int, rng: np.random.Generator) -> None:
    cols = transitions(CHUNK, rng)
    batch = SampleBatch(cols)
    priorities = [rng.random(BATCH) + 1e-3 for _ in range(16)]
    league = PrioritizedReplayBuffer(capacity, alpha=ALPHA, seed=0)
    fill(lambda: league.add(batch), capacity)
    naive = NumpyPrioritized(capacity, cols)
    fill(lambda: naive.add(cols), capacity)
    step = iter(range(1 << 62))

    def league_round() -> None:
        s = league.sample(BATCH, BETA)
        league.update_priorities(s["batch_indexes"], priorities[next(step) & 15])

    add_v = {"league": (lambda: league.add(batch), 400), "numpy": (lambda: naive.add(cols), 400),
             "copy_ceiling": (copier(CHUNK * row_bytes(cols)), 400)}
    round_v = {"league": (league_round, 2000),
               "numpy": (lambda: naive.sample_update(BATCH, priorities[next(step) & 15]), 20),
               "copy_ceiling": (copier(BATCH * row_bytes(cols)), 2000)}
    if cpprb is not None:
        ref = cpprb.PrioritizedReplayBuffer(capacity, ENV_DICT, alpha=ALPHA)
        fill(lambda: ref.add(**cols), capacity)

        def cpprb_round() -> None:
            s = ref.sample(BATCH, beta=BETA)
            ref.update_priorities(s["indexes"], priorities[next(step) & 15])

        round_v["cpprb"] = (cpprb_round, 2000)
        add_v["cpprb"] = (lambda: ref.add(**cols), 400)
    emit("prioritized_sample_update_round", "rounds/s", measure(round_v, repeats), 2.5, capacity=capacity,
         batch=BATCH, alpha=ALPHA, beta=BETA)
    emit("prioritized_add_chunk256", "chunks/s", measure(add_v, repeats), None, capacity=capacity, rows=CHUNK)


def bench_concat(repeats: int, rng: np.random.Generator) -> None:
    parts = []
    for _ in range(64):
        cols = transitions(200, rng)
        cols["logp"] = rng.random(200, dtype=np.float32)
        cols["vf_preds"] = rng.random(200, dtype=np.float32)
        parts.append(SampleBatch(cols))
    nbytes = sum(p.nbytes for p in parts)
    names = list(parts[0].keys())

    def naive() -> dict[str, np.ndarray]:
        return {k: np.concatenate([p[k] for p in parts]) for k in names}

    rates = measure({"league": (lambda: SampleBatch.concat(parts), 200), "numpy": (naive, 200),
                     "copy_ceiling": (copier(nbytes), 200)}, repeats)
    emit("concat_64x200", "GB/s", {k: v * nbytes / 1e9 for k, v in rates.items()}, 1.0, bytes=nbytes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--capacity", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", default="uniform,prioritized,concat")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    only = set(args.only.split(","))
    if "uniform" in only:
        bench_uniform(args.capacity, args.repeats, rng)
        gc.collect()
    if "prioritized" in only:
        bench_prioritized(args.capacity, args.repeats, rng)
        gc.collect()
    if "concat" in only:
        bench_concat(args.repeats, rng)


if __name__ == "__main__":
    main()
