"""Policy updates per second: K connect-four PPO policies in one learner vs K separate learners.

For K in ``--ks`` and each model (default MLP, conv), the same K batches are trained by

- ``separate``: K :class:`~league.learn.Learner` objects, one policy each, updated one
  after another (the baseline);
- ``shared_in_turn``: one learner hosting all K, without stacking (in turn on CPU, on
  CUDA streams on a GPU);
- ``shared_stacked``: one learner hosting all K, same-shaped policies updated as one
  vmapped model (the ``learn_stacked`` hook).

Models: ``mlp``, ``conv`` (the plain board conv), and ``default``: the default job's PPO as
its preset sets it (the conv averaged with its mirror, reading the threat planes, with the
distilled depth-4 search as auxiliary loss), the model an AlphaStar league of the default
game stacks under ``learner.stack_same_shaped=true`` (planes and search targets read once
per batch, outside ``vmap``).

Policies differ in learning rate (so they are genuinely different policies). The three
are measured interleaved, ``--repeats`` times each after a warm-up, and the median is
reported. Runs on CUDA when available (``--device`` to choose). Prints one JSON object
per (model, K) line::

    python benchmarks/bench_learner.py --ks 1,4,16
    python benchmarks/bench_learner.py --ks 2,4,16 --models default --repeats 5   # benchmarks/README.md's figures
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable

import numpy as np
import torch

from league.algos.ppo import PPO
from league.batch import Columns as C
from league.batch import MultiAgentBatch, SampleBatch
from league.envs.base import AgentSpec
from league.learn import Learner

SPEC = AgentSpec(obs_shape=(6, 7, 2), num_actions=7, has_action_mask=True)


def connect_four_batch(rows: int, seed: int) -> SampleBatch:
    """A postprocessed PPO batch shaped like connect four's: positions of uniformly random games
    (real boards, so a distilled search can read them), their legal actions, random targets."""
    from league.population.yardstick import random_play_positions

    rng = np.random.default_rng(seed)
    obs, mask = random_play_positions("connect_four", games=rows // 10 + 1, seed=seed)
    while len(obs) < rows:  # random games are about 20 plies; rarely short of the rows asked
        more = random_play_positions("connect_four", games=rows // 10 + 1, seed=seed + len(obs))
        obs, mask = np.concatenate([obs, more[0]]), np.concatenate([mask, more[1]])
    obs, mask = obs[:rows], mask[:rows].astype(np.float32)
    actions = np.array([rng.choice(np.flatnonzero(m)) for m in mask], dtype=np.int64)
    return SampleBatch(
        {
            C.OBS: obs,
            C.ACTIONS: actions,
            C.ACTION_MASK: mask,
            C.ACTION_LOGP: np.log(1.0 / mask.sum(1)).astype(np.float32),
            C.VF_PREDS: rng.normal(size=rows).astype(np.float32),
            C.ADVANTAGES: rng.normal(size=rows).astype(np.float32),
            C.VALUE_TARGETS: rng.normal(size=rows).astype(np.float32),
        }
    )


def model_params(model: str) -> dict[str, object]:
    """PPO parameters of ``model``: ``default`` is the default job's (its preset's), else ``{"model": model}``."""
    if model != "default":
        return {"model": model}
    from league.cli.train import composed_values

    return dict(composed_values()["algo"]["params"])


def make_runners(k: int, model: str, device: str, args: argparse.Namespace) -> dict[str, Callable[[], None]]:
    """One zero-argument training round per method, over the same K batches."""
    config = {**model_params(model), "num_epochs": args.epochs, "minibatch_size": args.minibatch, "train_batch_size": args.rows}
    algos = {f"p{i}": PPO(SPEC, {**config, "lr": 3e-4 * (1 + 0.1 * i)}) for i in range(k)}
    batch = MultiAgentBatch({pid: connect_four_batch(args.rows, i) for i, pid in enumerate(algos)}, args.rows)

    separate = []
    for i, (pid, algo) in enumerate(algos.items()):
        learner = Learner(device, seed=0)
        learner.add_policy(pid, algo, seed_offset=i)
        separate.append((learner, MultiAgentBatch({pid: batch[pid]}, args.rows)))
    in_turn = Learner(device, seed=0, stack_same_shaped=False)
    stacked = Learner(device, seed=0, stack_same_shaped=True)
    for pid, algo in algos.items():
        in_turn.add_policy(pid, algo)
        stacked.add_policy(pid, algo)

    def sync() -> None:
        if device.startswith("cuda"):
            torch.cuda.synchronize()

    def run_separate() -> None:
        for learner, own in separate:
            learner.learn_on_batch(own)
        sync()

    def run_in_turn() -> None:
        in_turn.learn_on_batch(batch)
        sync()

    def run_stacked() -> None:
        stats = stacked.learn_on_batch(batch)
        sync()
        # The policies the stacked learner really updated as one group (STACK_SIZE in their stats).
        STACKED_POLICIES[model] = sum(1 for s in stats.values() if s.get("stack_size", 1.0) > 1)

    return {"separate": run_separate, "shared_in_turn": run_in_turn, "shared_stacked": run_stacked}


#: Per model, how many of the K policies the last ``shared_stacked`` round updated stacked.
STACKED_POLICIES: dict[str, int] = {}


def measure(k: int, model: str, device: str, args: argparse.Namespace) -> dict[str, object]:
    """Median policy updates per second of each method, measured interleaved."""
    runners = make_runners(k, model, device, args)
    for run in runners.values():
        run()  # warm-up: allocator, kernels, lazy init
    times: dict[str, list[float]] = {name: [] for name in runners}
    for repeat in range(args.repeats):
        names = list(runners)
        names = names[repeat % len(names) :] + names[: repeat % len(names)]  # rotate: load drifts hit all alike
        for name in names:
            start = time.perf_counter()
            runners[name]()
            times[name].append(time.perf_counter() - start)
    rate = {name: k / statistics.median(ts) for name, ts in times.items()}
    steps = args.epochs * -(-args.rows // args.minibatch)
    return {
        "bench": "learner",
        "figure": "policy_updates_per_s",
        "device": torch.cuda.get_device_name() if device.startswith("cuda") else f"cpu x{torch.get_num_threads()} threads",
        "model": model,
        "K": k,
        "cores": os.cpu_count(),
        "load_avg_1m": round(os.getloadavg()[0], 2),  # other processes on the machine: read the figures by it
        "rows_per_policy": args.rows,
        "sgd_steps_per_update": steps,
        "repeats": args.repeats,
        **{name: round(r, 3) for name, r in rate.items()},
        "stacked_policies": STACKED_POLICIES.get(model, 0),  # K: every policy took the stacked path
        "speedup_stacked_vs_separate": round(rate["shared_stacked"] / rate["separate"], 2),
        "speedup_in_turn_vs_separate": round(rate["shared_in_turn"] / rate["separate"], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--ks", default="1,4,16", help="comma-separated policy counts")
    parser.add_argument("--models", default="mlp,conv", help="comma-separated: mlp, conv, default (the default job's PPO)")
    parser.add_argument("--rows", type=int, default=None, help="rows per policy per update (default 512 on CPU, 4096 on CUDA)")
    parser.add_argument("--epochs", type=int, default=None, help="PPO epochs (default 1 on CPU, 4 on CUDA)")
    parser.add_argument("--minibatch", type=int, default=None, help="PPO minibatch size (default 128 on CPU, 512 on CUDA)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (the learner config's num_threads)")
    args = parser.parse_args()
    on_gpu = args.device.startswith("cuda")
    args.rows = args.rows or (4096 if on_gpu else 512)
    args.epochs = args.epochs or (4 if on_gpu else 1)
    args.minibatch = args.minibatch or (512 if on_gpu else 128)
    torch.set_num_threads(args.threads)
    for model in args.models.split(","):
        for k in (int(x) for x in args.ks.split(",")):
            print(json.dumps(measure(k, model, args.device, args)), flush=True)


if __name__ == "__main__":
    main()
