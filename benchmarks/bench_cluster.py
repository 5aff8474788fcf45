"""Training throughput on a two-node Ray cluster vs a one-node cluster, same run.

Both clusters are started on this machine with ``ray start`` (see ``tests/test_cluster.py``,
whose ``LocalCluster`` helper this script uses) and the same ``league-train`` job runs
against each as a subprocess (``ray.address=<head>``): the default self-play PPO league
(connect four unless ``--env``), 2 samplers of 1 CPU each, no evaluation, stopped after
``--iterations`` iterations.

* ``one_node``: a head with 2 CPUs; both samplers run on it.
* ``two_nodes``: a head with 1 CPU and a second node with 1 CPU; the samplers cannot both
  fit on one node, so one runs on each.

Figures (one JSON object per line): ``cluster_one_node`` and ``cluster_two_nodes`` (the
trainer's own ``env_steps_per_s`` from ``summary.json``: time from the first iteration,
Ray and actor start-up excluded; with ``--repeats`` > 1 the runs alternate and every
rate is listed, the median reported), then ``cluster_two_vs_one`` (ratio of the medians).

Both "nodes" share one machine's cores, so two nodes cannot add compute here: the honest
expectation is a ratio near 1 (a little below from cross-node object transfers). On real
separate machines the samplers' share of the work would scale with the nodes instead.
Ray workers run at nice 0 (``RAY_worker_niceness``, as in the other benchmarks).

Usage: ``python benchmarks/bench_cluster.py [--iterations 15] [--env connect_four] [--repeats 1]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_cluster import LocalCluster, read_json, train_command  # noqa: E402

# name -> per-node CPU counts; the samplers ask for 1 CPU each.
LAYOUTS = {"one_node": [2], "two_nodes": [1, 1]}


def run_once(layout: list[int], env: str, iterations: int, root: Path, timeout_s: float) -> dict[str, Any]:
    """One training job on a fresh cluster of ``layout``; the summary's figures."""
    root.mkdir(parents=True)
    with LocalCluster(root, worker_niceness=int(os.environ.get("RAY_worker_niceness", "0"))) as cluster:
        for i, cpus in enumerate(layout):
            cluster.start_node(f"n{i}", num_cpus=cpus)
        run_dir = root / "run"
        overrides = [f"env={env}", "sampler.num_samplers=2", "sampler.num_cpus=1", "eval.interval=0", "checkpoint.interval=0",
                     "stop.env_steps=0", "stop.time_s=0", f"stop.iterations={iterations}", "logging=quiet", "verbose=false",
                     f"ray.address={cluster.address}"]  # fmt: skip
        t0 = time.perf_counter()
        done = subprocess.run(train_command(run_dir, overrides), env=cluster.env, capture_output=True, text=True, timeout=timeout_s)
        wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"league-train failed ({done.returncode}):\n{done.stderr[-3000:]}")
    summary = read_json(run_dir / "summary.json")
    return {"env_steps_per_s": summary["env_steps_per_s"], "env_steps": summary["env_steps"],
            "train_time_s": summary["wall_time_s"], "process_wall_s": round(wall, 1)}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    """Run both layouts (alternating when repeated) and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iterations", type=int, default=15)
    parser.add_argument("--env", default="connect_four")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--timeout-s", type=float, default=600.0)
    args = parser.parse_args(argv)
    if args.iterations < 1 or args.repeats < 1:
        raise ValueError(f"--iterations and --repeats must be >= 1, got {args.iterations} and {args.repeats}")

    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in LAYOUTS}
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as tmp:
        for r in range(args.repeats):
            for name, layout in LAYOUTS.items():
                runs[name].append(run_once(layout, args.env, args.iterations, Path(tmp) / f"{name}_{r}", args.timeout_s))
    common = {"env": args.env, "iterations": args.iterations, "samplers": 2, "cores": os.cpu_count(),
              "load_avg_1m": round(os.getloadavg()[0], 2), "ray_worker_niceness": int(os.environ.get("RAY_worker_niceness", "0"))}  # fmt: skip
    medians = {}
    for name, layout in LAYOUTS.items():
        rates = [r["env_steps_per_s"] for r in runs[name]]
        medians[name] = statistics.median(rates)
        line = {"figure": f"cluster_{name}", "node_cpus": layout, "env_steps_per_s": medians[name], "runs": runs[name], **common}
        print(json.dumps(line), flush=True)
    ratio = medians["two_nodes"] / medians["one_node"]
    note = ("both nodes share this machine's cores, so a second node adds no compute: a ratio near 1 is the expected, "
            "honest result; on separate machines sampler throughput would scale with the nodes")  # fmt: skip
    print(json.dumps({"figure": "cluster_two_vs_one", "ratio": round(ratio, 3), "note": note, **common}), flush=True)


if __name__ == "__main__":
    main()
