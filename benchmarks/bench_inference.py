"""Env steps/s of a ``league-train`` job with the samplers' forward passes local vs on an inference server.

Issue 36: ``sampler.inference=server`` puts every sampler's policies on one inference server
(``league/sampling/inference.py``; on a GPU box, on the GPU beside the learner). This runs the
same job once per inference mode, back to back in one call (the baseline in the same run),
each as ``league-train`` runs it (its own process, its own Ray), and prints one JSON object per
line:

* ``{"figure": "env_steps_per_s", "inference": "local" | "server", ...}`` per run: env steps/s
  after the first metrics row (Ray and actor start-up excluded) from the run's
  ``metrics.jsonl``, with the env steps, seconds, the last win rate against the random player,
  and where the plan's time went (each operator's seconds and the plan's idle seconds, waiting on
  samplers, as shares of the measured wall time).
* ``{"figure": "server_over_local", "ratio": ...}``: server env steps/s over local's.

Usage::

    python benchmarks/bench_inference.py [--time-s 90] [--device cpu|cuda|auto] [--modes local server]
        [--label default] [--override KEY=VALUE ...] [--dry-run]

``--override`` adds ``league-train`` overrides to every run (``learner=gpu``,
``algo.params.model=mlp``, ...). ``--dry-run``: tic-tac-toe, in-process samplers and a few
iterations per run (``--time-s`` of them, 2 to 8), to check the script end to end on any
machine (``--device`` still applies).

``scripts/gpu_check.sh`` runs it on the GPU machine, and then ``--record FIGURES.jsonl
--append-to FILE ...``: one object for the device run (:func:`gpu_record`: the device's name,
the date, the commit, ``default_env_steps_per_s``, ``mlp_env_steps_per_s``,
``stacked_speedup``, ``mix_ratio`` and the figures they come from) appended to each FILE
(``benchmarks/results/gpu.jsonl``) and printed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: The small job ``--dry-run`` trains instead of the default one.
DRY_RUN = ["env=tictactoe", "sampler.remote=false", "sampler.num_envs=4", "sampler.fragment_length=16",
           "algo.params.train_batch_size=256", "algo.params.minibatch_size=128", "iteration.min_env_steps=256",
           "eval.interval=0"]  # fmt: skip


def rate_after_first_row(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Env steps/s between a run's first and last metrics rows (its start-up excluded), and
    where that stretch's time went: each operator's seconds and the plan's idle seconds as a
    share of it (the operators' timers are cumulative, so the first row's are subtracted)."""
    if len(rows) < 2:
        raise ValueError(f"need at least 2 metrics rows to time a stretch, got {len(rows)} (run longer)")
    first, last = rows[0], rows[-1]
    wall = max(last["time_s"] - first["time_s"], 1e-9)
    shares = {
        name: round((op["time_s"] - first.get("operators", {}).get(name, {}).get("time_s", 0.0)) / wall, 3)
        for name, op in last.get("operators", {}).items()
    }
    shares["plan_idle"] = round((last.get("plan_idle_s", 0.0) - first.get("plan_idle_s", 0.0)) / wall, 3)
    return {
        "env_steps_per_s": round((last["env_steps"] - first["env_steps"]) / wall, 1),
        "env_steps": last["env_steps"],
        "time_s": last["time_s"],
        "iterations": last["iteration"],
        "win_rate_vs_random": last.get("win_rate_vs_random"),
        "time_shares": shares,
    }


def run_job(mode: str, device: str, time_s: float, overrides: list[str], workdir: Path, iterations: int = 0) -> dict[str, Any]:
    """One ``league-train`` run with ``sampler.inference=mode``, for ``time_s`` seconds (its
    start-up included), or ``iterations`` iterations when given; its figure (module docstring)."""
    run_dir = workdir / mode
    stop = [f"stop.iterations={iterations}", "stop.time_s=0"] if iterations else [f"stop.time_s={time_s}"]
    args = [sys.executable, "-m", "league.cli.train", "logging=quiet", *stop, f"hydra.run.dir={run_dir}",
            f"sampler.inference={mode}", *([f"sampler.inference_device={device}"] if mode == "server" else []), *overrides]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    t0 = time.perf_counter()
    done = subprocess.run(args, cwd=workdir, env=env, capture_output=True, text=True, timeout=(time_s or 300) + 300)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        return {"figure": "env_steps_per_s", "inference": mode, "error": f"league-train exit {done.returncode}", "tail": tail}
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    figure = {"figure": "env_steps_per_s", "inference": mode, "device": device if mode == "server" else "cpu"}
    return {**figure, **rate_after_first_row(rows), "process_wall_s": round(wall, 1)}


def _figure(figures: list[dict[str, Any]], job: str, inference: str) -> dict[str, Any] | None:
    return next((f for f in figures if f.get("job") == job and f.get("inference") == inference and "env_steps_per_s" in f), None)


def _rate(figure: dict[str, Any] | None) -> float | None:
    return None if figure is None else figure.get("env_steps_per_s")


def gpu_record(figures: list[dict[str, Any]], device: str, commit: str, date: str) -> dict[str, Any]:
    """The device run's one object from ``scripts/gpu_check.sh``'s figures (None where a figure
    is missing: its step failed or was skipped): the default job's env steps/s with server
    inference and its local baseline, the MLP job's, the stacked K=16 update's speedup over 16
    separate learners (``bench_learner``'s largest K, the default job's model where it was
    measured), and the PPO+DQN mix's env steps/s over PPO alone's."""
    stacked = [f for f in figures if f.get("bench") == "learner" and "speedup_stacked_vs_separate" in f]
    largest = max(stacked, key=lambda f: (int(f["K"]), f.get("model") == "default"), default=None)
    mix, alone = _rate(_figure(figures, "ppo_dqn_mix", "local")), _rate(_figure(figures, "ppo_alone", "local"))
    return {
        "device": device,
        "date": date,
        "commit": commit,
        "default_env_steps_per_s": _rate(_figure(figures, "default", "server")),
        "default_local_env_steps_per_s": _rate(_figure(figures, "default", "local")),
        "mlp_env_steps_per_s": _rate(_figure(figures, "mlp", "server")),
        "stacked_speedup": None if largest is None else largest["speedup_stacked_vs_separate"],
        "stacked_k": None if largest is None else int(largest["K"]),
        "stacked_model": None if largest is None else largest.get("model"),
        "mix_ratio": round(mix / alone, 3) if mix and alone else None,
        "dry_run": any(f.get("dry_run") for f in figures),
        "figures": figures,
    }


def _device_name() -> str:
    import torch

    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else f"cpu x{os.cpu_count()}"


def _commit() -> str:
    done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


def record(figures_file: Path, append_to: list[Path]) -> dict[str, Any]:
    """Read ``figures_file`` (one JSON object a line; other lines skipped), append the
    :func:`gpu_record` to each of ``append_to`` and return it."""
    figures = []
    for line in figures_file.read_text().splitlines():
        try:
            figures.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    date = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    row = gpu_record(figures, _device_name(), _commit(), date)
    for path in append_to:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a") as f:
            f.write(json.dumps(row) + "\n")
    return row


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line (see the module docstring)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--time-s", type=float, default=90.0, help="each run's stop.time_s")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda", "auto"], help="the server's device")
    p.add_argument("--modes", nargs="+", default=["local", "server"], choices=["local", "server"])
    p.add_argument("--label", default="default", help="the job's name in the output (e.g. mlp)")
    p.add_argument("--override", action="append", default=[], help="a league-train override for every run (repeatable)")
    p.add_argument("--dry-run", action="store_true", help="tic-tac-toe, in-process samplers, a few iterations per run")
    p.add_argument("--record", type=Path, help="no runs: gpu_check.sh's figures file -> the device run's object")
    p.add_argument("--append-to", type=Path, action="append", default=[], help="with --record: append the object here (repeatable)")
    args = p.parse_args(argv)
    if args.append_to and args.record is None:
        p.error("--append-to goes with --record")
    args.iterations = 0
    if args.dry_run:  # a few iterations: a run's time budget includes its start-up, slow on a busy machine
        args.iterations = max(2, min(int(args.time_s), 8))
        args.override = DRY_RUN + args.override
    if args.time_s <= 0:
        p.error(f"--time-s must be > 0, got {args.time_s}")
    return args


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    """Run the jobs and print (and return) one JSON object per figure."""
    args = parse_args(argv)
    if args.record is not None:
        row = record(args.record, args.append_to)
        print(json.dumps({k: v for k, v in row.items() if k != "figures"}), flush=True)
        return [row]
    common = {"job": args.label, "overrides": args.override, "dry_run": args.dry_run, "cpus": os.cpu_count()}
    figures: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench_inference_") as tmp:
        for mode in args.modes:
            figure = {**run_job(mode, args.device, args.time_s, args.override, Path(tmp), args.iterations), **common}
            figures.append(figure)
            print(json.dumps(figure), flush=True)
    rates = {f["inference"]: f.get("env_steps_per_s") for f in figures}
    if rates.get("local") and rates.get("server"):
        ratio = {"figure": "server_over_local", "ratio": round(rates["server"] / rates["local"], 3), **common}
        figures.append(ratio)
        print(json.dumps(ratio), flush=True)
    return figures


if __name__ == "__main__":
    main()
