"""One learner update of the default job in fp32 against ``learner.precision=bf16``.

The PPO update that ``league-train`` (connect four: the mirrored 4x4 conv, the distilled
search, four epochs of 512-row minibatches) runs once per iteration, on a batch shaped
like one iteration's rows, with the algorithm's parameters composed from ``configs/``
exactly as ``league-train <overrides>`` composes them. Both precisions are timed
interleaved (``--repeats`` rounds after a warm-up, the mean reported) in one process
with ``learner.num_threads`` threads, so the fp32 baseline shares the machine state.

As in a run, each round's batch has a different number of rows (``--rows`` plus 13 per
round), so the last minibatch's shape changes from update to update; ``--fixed-rows``
times the same batch every round instead. The difference matters on CPU: oneDNN builds
its bfloat16 kernels per shape, so a new shape costs a kernel build
(benchmarks/results/strength_history.md has the figures). ``--device cuda`` times both
precisions on the GPU instead (the learner
on ``cuda``, each update timed to its last kernel); it is refused by name where CUDA is
absent. One JSON object::

    python benchmarks/bench_precision.py
    python benchmarks/bench_precision.py --fixed-rows
    python benchmarks/bench_precision.py --device cuda
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import torch

from bench_learner import connect_four_batch
from league.algos import make_algorithm
from league.cli.train import composed_values
from league.batch import MultiAgentBatch
from league.envs.base import AgentSpec
from league.learn import Learner
from league.learn.learner import PRECISIONS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--override", action="append", default=[], help="a league-train override (repeatable)")
    parser.add_argument("--rows", type=int, default=4868, help="rows per update (one default-job iteration's)")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--fixed-rows", action="store_true", help="the same batch every round (default: sizes vary as in a run)")
    parser.add_argument("--device", default="cpu", help="the learner's device: cpu (default), cuda or cuda:N")
    args = parser.parse_args()
    try:
        device = torch.device(args.device)
    except RuntimeError as err:
        parser.error(f"--device {args.device}: not a torch device ({err})")
    if device.type not in ("cpu", "cuda"):
        parser.error(f"--device {args.device}: must be cpu, cuda or cuda:N")
    if device.type == "cuda" and not torch.cuda.is_available():
        parser.error(f"--device {args.device}: CUDA is not available here (torch.cuda.is_available() is False)")
    cfg = composed_values(args.override)
    if cfg["env"]["name"] != "connect_four":
        parser.error("the batch is connect four's: keep env=connect_four")
    spec = AgentSpec(obs_shape=(6, 7, 2), num_actions=7, has_action_mask=True)
    threads = cfg["learner"]["num_threads"]
    torch.set_num_threads(threads)
    sizes = [args.rows + (0 if args.fixed_rows else 13 * i) for i in range(args.repeats + 1)]
    batches = [MultiAgentBatch({"main": connect_four_batch(rows, i)}, rows) for i, rows in enumerate(sizes)]
    learners = {}
    for precision in PRECISIONS:
        learner = Learner(args.device, seed=0, precision=precision)
        learner.add_policy("main", make_algorithm(cfg["algo"]["name"], spec, cfg["algo"]["params"]))
        learner.learn_on_batch(batches[0])  # warm-up: allocator, kernels
        learners[precision] = learner
    # On CUDA an update ends at its last kernel, not when the host has queued it.
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    times: dict[str, list[float]] = {p: [] for p in PRECISIONS}
    for repeat, batch in enumerate(batches[1:]):
        for precision in PRECISIONS[repeat % 2 :] + PRECISIONS[: repeat % 2]:  # alternate the order
            sync()
            start = time.perf_counter()
            learners[precision].learn_on_batch(batch)
            sync()
            times[precision].append(time.perf_counter() - start)
    # The mean, not the median: a kernel built for a new shape is a real cost of a run.
    ms = {p: statistics.fmean(t) * 1000 for p, t in times.items()}
    print(json.dumps({
        "bench": "precision", "figure": "update_ms", "overrides": args.override, "algo": cfg["algo"]["name"],
        "device": args.device, "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "rows": args.rows, "fixed_rows": args.fixed_rows, "threads": threads, "repeats": args.repeats,
        "cores": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2), **{p: round(v, 1) for p, v in ms.items()},
        "speedup_bf16": round(ms["fp32"] / ms["bf16"], 2),
    }), flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
