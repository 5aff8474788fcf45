"""V-trace target computation: the vectorised scan vs two loop formulations, same inputs.

- ``scan``: :func:`league.algos.vtrace.vtrace` (recursive doubling over the flat batch).
- ``per_row_loop``: the backward recursion as a Python loop over rows (Python floats):
  the baseline any vectorisation must beat.
- ``time_major_loop``: chunks padded to ``[num_chunks, max_len]`` and a Python loop over
  time with vectorised steps across chunks (the classic IMPALA layout); its cost grows
  with the longest chunk, which merging consecutive pieces can make long.

Rounds alternate the three so a busy machine slows them alike; the best round counts.
Prints one JSON object per (batch size, chunk layout):
``{"bench": "vtrace", "rows": ..., "chunks": ..., "max_chunk": ..., "scan_ms": ...,
"per_row_loop_ms": ..., "time_major_loop_ms": ..., "loop_over_scan": ...}``.

Usage: ``python benchmarks/bench_vtrace.py [--rounds 5] [--threads 1]``
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

import numpy as np
import torch

from league.algos.vtrace import vtrace

GAMMA, LAM, RHO_BAR, C_BAR = 0.99, 1.0, 1.0, 1.0


def make_inputs(lengths: list[int], seed: int = 0) -> dict[str, np.ndarray]:
    """Random behaviour/target log-probabilities, rewards, values for back-to-back chunks."""
    rng = np.random.default_rng(seed)
    n = sum(lengths)
    ends = np.zeros(n, bool)
    ends[np.cumsum(lengths) - 1] = True
    return {
        "blogp": np.log(rng.uniform(0.1, 1.0, n)).astype(np.float32),
        "tlogp": np.log(rng.uniform(0.1, 1.0, n)).astype(np.float32),
        "rewards": rng.normal(size=n).astype(np.float32),
        "values": rng.normal(size=n).astype(np.float32),
        "boot": np.repeat(rng.normal(size=len(lengths)), lengths).astype(np.float32),
        "ends": ends,
    }


def scan(d: dict[str, np.ndarray]) -> np.ndarray:
    """The library implementation (tensor conversion included)."""
    t = {k: torch.from_numpy(v) for k, v in d.items()}
    return vtrace(t["blogp"], t["tlogp"], t["rewards"], t["values"], t["boot"], t["ends"], GAMMA, LAM, RHO_BAR, C_BAR).vs.numpy()


def per_row_loop(d: dict[str, np.ndarray]) -> np.ndarray:
    """Backward recursion, one Python iteration per row (on Python floats: the fast loop)."""
    rho = np.exp(d["tlogp"] - d["blogp"]).tolist()
    r, v, boot, ends = (d[k].tolist() for k in ("rewards", "values", "boot", "ends"))
    n = len(r)
    vs = [0.0] * n
    acc = 0.0
    for i in range(n - 1, -1, -1):
        next_v = boot[i] if ends[i] else v[i + 1]
        if ends[i]:
            acc = 0.0
        delta = min(RHO_BAR, rho[i]) * (r[i] + GAMMA * next_v - v[i])
        acc = delta + GAMMA * LAM * min(C_BAR, rho[i]) * acc
        vs[i] = v[i] + acc
    return np.asarray(vs, np.float32)


def time_major_loop(d: dict[str, np.ndarray]) -> np.ndarray:
    """Pad chunks to ``[B, T]`` and loop backwards over ``T`` with vectorised steps."""
    ends = d["ends"]
    stops = np.flatnonzero(ends) + 1
    starts = np.concatenate([[0], stops[:-1]])
    lengths = stops - starts
    b, tmax = len(lengths), int(lengths.max())
    col = np.arange(len(ends)) - np.repeat(starts, lengths)
    row = np.repeat(np.arange(b), lengths)

    def pad(x: np.ndarray) -> np.ndarray:
        out = np.zeros((b, tmax), np.float32)
        out[row, col] = x
        return out

    rho = pad(np.exp(d["tlogp"] - d["blogp"]))
    r, v = pad(d["rewards"]), pad(d["values"])
    valid = np.zeros((b, tmax), bool)
    valid[row, col] = True
    boot = d["boot"][stops - 1]
    vs = np.zeros((b, tmax), np.float32)
    acc = np.zeros(b, np.float32)
    next_v = boot.copy()
    for t in range(tmax - 1, -1, -1):
        last = lengths - 1 == t  # rows whose chunk ends at this step restart the recursion
        nv = np.where(last, boot, next_v)
        acc = np.where(last, 0.0, acc)
        delta = np.minimum(RHO_BAR, rho[:, t]) * (r[:, t] + GAMMA * nv - v[:, t])
        acc = np.where(valid[:, t], delta + GAMMA * LAM * np.minimum(C_BAR, rho[:, t]) * acc, 0.0)
        vs[:, t] = v[:, t] + acc
        next_v = np.where(valid[:, t], v[:, t], next_v)
    return vs[row, col]


def best_ms(fn: Callable[[dict], np.ndarray], d: dict, budget_s: float) -> float:
    """Best mean time of repeated calls within ``budget_s``."""
    fn(d)
    reps, start = 0, time.perf_counter()
    while True:
        fn(d)
        reps += 1
        elapsed = time.perf_counter() - start
        if elapsed > budget_s:
            return 1000 * elapsed / reps


def main() -> None:
    """Run every layout and print one JSON line each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--budget-s", type=float, default=0.2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    layouts = {
        "4000 rows, chunks of 64": [64] * 62 + [32],
        "4000 rows, chunks of 1..64": list(np.random.default_rng(1).integers(1, 65, 120)),
        "4000 rows, 8 merged chunks of 500": [500] * 8,
        "32000 rows, chunks of 64": [64] * 500,
    }
    fns = {"scan": scan, "per_row_loop": per_row_loop, "time_major_loop": time_major_loop}
    for name, lengths in layouts.items():
        d = make_inputs([int(x) for x in lengths])
        reference = per_row_loop(d)
        for fn in (scan, time_major_loop):
            np.testing.assert_allclose(fn(d), reference, rtol=1e-3, atol=1e-3)
        best = {k: float("inf") for k in fns}
        for _ in range(args.rounds):
            for k, fn in fns.items():
                best[k] = min(best[k], best_ms(fn, d, args.budget_s))
        print(
            json.dumps(
                {
                    "bench": "vtrace",
                    "layout": name,
                    "rows": len(d["rewards"]),
                    "chunks": len(lengths),
                    "max_chunk": int(max(lengths)),
                    "threads": args.threads,
                    **{f"{k}_ms": round(v, 3) for k, v in best.items()},
                    "loop_over_scan": round(best["per_row_loop"] / best["scan"], 1),
                    "time_major_over_scan": round(best["time_major_loop"] / best["scan"], 1),
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
