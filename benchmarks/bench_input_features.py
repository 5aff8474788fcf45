"""The default job's PPO update with the model's input features (connect four's threat planes)
read once per update, as PPO does (``InputFeaturesModel.input_features``), against reading them
in every minibatch of every epoch (the baseline: the model computing its planes in each forward).

Same batches (connect-four positions of random games, shaped like one iteration's rows, sizes
varying as in a run), the algorithm's parameters composed from ``configs/`` as ``league-train``
composes them (the ``connect_four`` preset's: ``model_kwargs.input_features=connect_four_threats``),
the two timed interleaved over ``--repeats`` rounds after a warm-up, the mean
reported; on CUDA each update is timed to its last kernel. One JSON object::

    python benchmarks/bench_input_features.py
    python benchmarks/bench_input_features.py --device cuda
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import time
from unittest import mock

import torch

from bench_learner import connect_four_batch
from league.algos import make_algorithm
from league.batch import MultiAgentBatch
from league.cli.train import composed_values
from league.envs.base import AgentSpec
from league.learn import Learner

MODES = ("once", "per_minibatch")


def reading(mode: str) -> contextlib.AbstractContextManager:
    """PPO as it is (``once``), or handing the model its raw boards so that it reads the planes
    in every forward (``per_minibatch``, the baseline)."""
    if mode == "once":
        return contextlib.nullcontext()
    return mock.patch("league.algos.ppo.input_features", lambda model, obs: obs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=4868, help="rows per update (one default-job iteration's)")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    args = parser.parse_args()
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        parser.error(f"--device {args.device}: CUDA is not available here (torch.cuda.is_available() is False)")
    cfg = composed_values([])
    torch.set_num_threads(cfg["learner"]["num_threads"])
    spec = AgentSpec(obs_shape=(6, 7, 2), num_actions=7, has_action_mask=True)
    sizes = [args.rows + 13 * i for i in range(args.repeats + 1)]
    batches = [MultiAgentBatch({"main": connect_four_batch(rows, i)}, rows) for i, rows in enumerate(sizes)]
    learners = {}
    for mode in MODES:
        learners[mode] = Learner(args.device, seed=0)
        learners[mode].add_policy("main", make_algorithm("ppo", spec, cfg["algo"]["params"]))
    sync = torch.cuda.synchronize if args.device.startswith("cuda") else (lambda: None)
    times: dict[str, list[float]] = {mode: [] for mode in MODES}
    for repeat, batch in enumerate(batches):
        for mode in MODES[repeat % 2 :] + MODES[: repeat % 2]:  # alternate the order
            with reading(mode):
                sync()
                start = time.perf_counter()
                learners[mode].learn_on_batch(batch)
                sync()
            if repeat:  # the first round warms up allocator and kernels
                times[mode].append(time.perf_counter() - start)
    ms = {mode: statistics.fmean(t) * 1000 for mode, t in times.items()}
    print(json.dumps({
        "bench": "input_features", "figure": "update_ms", "device": args.device,
        "device_name": torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu",
        "rows": args.rows, "repeats": args.repeats, "threads": cfg["learner"]["num_threads"],
        "once_ms": round(ms["once"], 1), "per_minibatch_ms": round(ms["per_minibatch"], 1),
        "speedup": round(ms["per_minibatch"] / ms["once"], 2),
        "cores": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2),
    }), flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
