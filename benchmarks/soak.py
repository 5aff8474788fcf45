"""Memory soak: a small ``league-train`` run for a long time, its memory sampled as it goes.

Runs ``python -m league.cli.train`` (tic-tac-toe self-play PPO, one Ray sampler actor
with 8 envs, a checkpoint every 50 iterations, quiet logging; ``--override`` adds or
replaces Hydra overrides; ``--env KEY=VALUE`` sets environment variables of the run, e.g.
Ray's) for ``--duration`` seconds and, every ``--interval`` seconds,
reads from ``/proc`` the memory of the driver and of every process descending from it
(Ray's GCS, raylet and agents, and the sampler worker). Linux only; no psutil needed.

One JSON object per line:

* ``soak_sample``: ``t_s`` since launch; ``driver_rss_mb``; ``workers_rss_mb`` (all
  descendants together); ``total_rss_mb``; ``total_pss_mb`` (proportional set size:
  shared pages, e.g. Ray's object store mapped by several processes, are split between
  them instead of counted once per process, so this is the better "how much memory does
  the run use" figure); ``num_procs``; ``by_process`` (RSS per process name);
  ``env_steps`` and ``iteration`` from the run's latest ``metrics.jsonl`` row.
* ``soak_summary`` (at the end), over the samples taken once training had begun
  (``training_from_t_s``): first, last and max of each figure; over the second half of
  them (the first half includes start-up and filling caches and pools): the
  growth (last minus first sample of that half) and the least-squares slope in MB/hour;
  ``within_bound``: second-half growth of ``total_rss_mb`` below ``--bound-mb``; the
  training process's exit code, env steps, cores and load average.

Usage (on a shared machine, at low priority)::

    nice -n 10 python benchmarks/soak.py --duration 3600 --interval 30 > soak.jsonl

The training run's own output goes to ``<run dir>/train.log`` (``--run-dir``, default a
fresh directory under the system temp dir). ``--table soak.jsonl [--every 300]`` prints
a finished soak's curve as a Markdown table instead of running one.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

#: Hydra overrides of the soak run; ``stop.time_s`` and ``hydra.run.dir`` are added per run.
BASE_OVERRIDES = (
    "env=tictactoe",
    "sampler.num_samplers=1",
    "sampler.num_envs=8",
    "sampler.num_cpus=1",
    "stop.env_steps=0",
    "checkpoint.interval=50",
    "logging=quiet",
    "ray.num_cpus=2",
)
#: Extra seconds the training process gets past ``--duration`` (start-up, final checkpoint).
GRACE_S = 300.0
_PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


# /proc reading -------------------------------------------------------------------
def _children_map() -> dict[int, list[int]]:
    """Parent pid -> child pids, for every process this user can see."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:  # exited meanwhile
            continue
        # The name field may hold spaces and parentheses: the fields after the last ')' are fixed.
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    return children


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` in the process tree (not ``pid`` itself)."""
    children = _children_map()
    out, todo = [], list(children.get(pid, []))
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def process_memory(pid: int) -> dict[str, Any] | None:
    """``{"name", "rss_mb", "pss_mb"}`` of one process, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            rss_kb = int(f.read().split()[1]) * _PAGE_KB
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
        pss_kb = rss_kb  # if smaps_rollup is unreadable, RSS is the upper bound
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        pss_kb = int(line.split()[1])
                        break
        except OSError:
            pass
    except (OSError, ValueError, IndexError):
        return None
    return {"name": _process_name(argv), "rss_mb": rss_kb / 1024, "pss_mb": pss_kb / 1024}


def _process_name(argv: list[bytes]) -> str:
    """A short stable name: Ray workers by their title (``ray::Sampler``), others by program."""
    first = argv[0].decode(errors="replace") if argv and argv[0] else "?"
    if first.startswith("ray::"):
        return first.split(".", 1)[0].split()[0]  # "ray::Sampler.sample" -> "ray::Sampler"
    words = [a.decode(errors="replace") for a in argv if a]
    for word in words[1:3]:  # python interpreters: name them by their script
        if word.endswith(".py"):
            return Path(word).name
    return Path(first).name


def last_metrics_row(path: Path) -> dict[str, Any]:
    """The last complete JSON line of ``metrics.jsonl`` (empty if none yet)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 65536))
            lines = f.read().splitlines()
    except OSError:
        return {}
    for line in reversed(lines):
        try:
            return json.loads(line)
        except ValueError:
            continue  # a line being written, or cut by the seek
    return {}


def sample(driver: int, started: float, metrics_path: Path) -> dict[str, Any] | None:
    """One ``soak_sample`` record, or None once the driver is gone."""
    own = process_memory(driver)
    if own is None:
        return None
    others = [m for m in (process_memory(p) for p in descendants(driver)) if m is not None]
    by_process: dict[str, float] = {}
    for m in others:
        by_process[m["name"]] = by_process.get(m["name"], 0.0) + m["rss_mb"]
    workers_rss = sum(m["rss_mb"] for m in others)
    row = last_metrics_row(metrics_path)
    return {
        "figure": "soak_sample",
        "t_s": round(time.monotonic() - started, 1),
        "driver_rss_mb": round(own["rss_mb"], 1),
        "workers_rss_mb": round(workers_rss, 1),
        "total_rss_mb": round(own["rss_mb"] + workers_rss, 1),
        "total_pss_mb": round(own["pss_mb"] + sum(m["pss_mb"] for m in others), 1),
        "num_procs": 1 + len(others),
        "by_process": {k: round(v, 1) for k, v in sorted(by_process.items())},
        "env_steps": row.get("env_steps"),
        "iteration": row.get("iteration"),
    }


# Summary ------------------------------------------------------------------------
def slope_per_hour(ts: list[float], ys: list[float]) -> float | None:
    """Least-squares slope of ``ys`` over ``ts`` (seconds), in units per hour."""
    n = len(ts)
    if n < 2:
        return None
    mt, my = sum(ts) / n, sum(ys) / n
    var = sum((t - mt) ** 2 for t in ts)
    if var == 0:
        return None
    return 3600.0 * sum((t - mt) * (y - my) for t, y in zip(ts, ys)) / var


def summarize(samples: list[dict[str, Any]], bound_mb: float) -> dict[str, Any]:
    """First/last/max per figure, and growth and slope over the second half of the run."""
    out: dict[str, Any] = {"figure": "soak_summary", "num_samples": len(samples)}
    # Samples before the first metrics row show Ray starting, not the run: left out.
    samples = [s for s in samples if s["env_steps"] is not None] or samples
    if not samples:
        return out
    out["training_from_t_s"] = samples[0]["t_s"]
    half_t = (samples[0]["t_s"] + samples[-1]["t_s"]) / 2
    second = [s for s in samples if s["t_s"] >= half_t]
    for key in ("driver_rss_mb", "workers_rss_mb", "total_rss_mb", "total_pss_mb"):
        values = [s[key] for s in samples]
        slope = slope_per_hour([s["t_s"] for s in second], [s[key] for s in second])
        out[key] = {
            "first": values[0],
            "last": values[-1],
            "max": max(values),
            "second_half_growth": round(second[-1][key] - second[0][key], 1),
            "second_half_slope_mb_per_h": None if slope is None else round(slope, 1),
        }
    out["bound_mb"] = bound_mb
    out["within_bound"] = out["total_rss_mb"]["second_half_growth"] < bound_mb
    out["duration_s"] = samples[-1]["t_s"]
    out["env_steps"] = next((s["env_steps"] for s in reversed(samples) if s["env_steps"] is not None), None)
    out["iterations"] = next((s["iteration"] for s in reversed(samples) if s["iteration"] is not None), None)
    return out


def markdown_table(path: Path, every_s: float, bound_mb: float) -> str:
    """A Markdown table of a soak's samples (one row per ``every_s`` seconds) and its summary (recomputed)."""
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    samples = [r for r in records if r.get("figure") == "soak_sample" and r.get("env_steps") is not None]
    lines = [
        "| t (min) | env steps | driver RSS MB | workers RSS MB | total RSS MB | total PSS MB | sampler RSS MB | gcs_server RSS MB |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    next_t = None
    for i, r in enumerate(samples):
        if next_t is not None and r["t_s"] < next_t and i != len(samples) - 1:
            continue
        next_t = r["t_s"] + every_s
        procs = r["by_process"]
        lines.append(
            f"| {r['t_s'] / 60:.1f} | {r['env_steps']:,} | {r['driver_rss_mb']} | {r['workers_rss_mb']} | {r['total_rss_mb']} "
            f"| {r['total_pss_mb']} | {procs.get('ray::Sampler', '-')} | {procs.get('gcs_server', '-')} |"
        )
    summary = summarize([r for r in records if r.get("figure") == "soak_sample"], bound_mb)
    ended = next((r for r in records if r.get("figure") == "soak_summary"), {})
    summary["exit_code"] = ended.get("exit_code")
    lines += ["", "Summary: `" + json.dumps(summary) + "`"]
    return "\n".join(lines)


# Running ------------------------------------------------------------------------
def launch(duration_s: float, run_dir: Path, extra: list[str], env: dict[str, str]) -> subprocess.Popen:
    """Start the training run (its own session, so it can be stopped as a group) with ``env`` added."""
    run_dir.mkdir(parents=True, exist_ok=True)
    overrides = [*BASE_OVERRIDES, f"stop.time_s={duration_s:g}", f"hydra.run.dir={run_dir}", *extra]
    log = open(run_dir / "train.log", "w")  # noqa: SIM115 - handed to the child
    return subprocess.Popen(
        [sys.executable, "-m", "league.cli.train", *overrides],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env={**os.environ, **env},
    )


def stop(proc: subprocess.Popen) -> None:
    """Ask the run to end (Ctrl-C), then end its process group if it does not."""
    for sig, wait_s in ((signal.SIGINT, 60), (signal.SIGTERM, 30), (signal.SIGKILL, 10)):
        if proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait_s)
        except subprocess.TimeoutExpired:
            continue


def main() -> None:
    """Parse arguments, run the soak, print samples and the summary."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=3600.0, help="seconds of training (stop.time_s)")
    parser.add_argument("--interval", type=float, default=30.0, help="seconds between memory samples")
    parser.add_argument("--bound-mb", type=float, default=100.0, help="allowed second-half growth of total RSS")
    parser.add_argument("--run-dir", type=Path, default=None, help="Hydra run directory (default: a new temp dir)")
    parser.add_argument("--override", action="append", default=[], help="extra Hydra override (repeatable)")
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE for the run's environment (repeatable)")
    parser.add_argument("--table", type=Path, default=None, help="print a Markdown table of this soak output and exit")
    parser.add_argument("--every", type=float, default=300.0, help="with --table: seconds between table rows")
    args = parser.parse_args()
    if args.table is not None:
        print(markdown_table(args.table, args.every, args.bound_mb))
        return
    if args.duration <= 0 or args.interval <= 0:
        parser.error("--duration and --interval must be positive")
    if any("=" not in item for item in args.env):
        parser.error(f"--env takes KEY=VALUE, got {args.env}")
    env = dict(item.split("=", 1) for item in args.env)
    run_dir = args.run_dir or Path(tempfile.mkdtemp(prefix="league_soak_"))
    started = time.monotonic()
    proc = launch(args.duration, run_dir.resolve(), args.override, env)
    print(json.dumps({"figure": "soak_start", "pid": proc.pid, "run_dir": str(run_dir), "duration_s": args.duration,
                      "interval_s": args.interval, "env": env, "cores": os.cpu_count(), "load_avg_1m": os.getloadavg()[0]}), flush=True)
    samples: list[dict[str, Any]] = []
    deadline = started + args.duration + GRACE_S
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            record = sample(proc.pid, started, run_dir / "metrics.jsonl")
            if record is not None:
                samples.append(record)
                print(json.dumps(record), flush=True)
            try:
                proc.wait(args.interval)
            except subprocess.TimeoutExpired:
                pass
    finally:
        stop(proc)
    summary = summarize(samples, args.bound_mb)
    summary.update(exit_code=proc.returncode, run_dir=str(run_dir), cores=os.cpu_count(), load_avg_1m=os.getloadavg()[0])
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
