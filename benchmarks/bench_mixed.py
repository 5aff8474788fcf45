"""A PPO and a DQN policy trained together on connect four: throughput of the asynchronous
schedule against an alternating one, and how fast both beat a uniformly random player.

Both policies play each other and themselves (``UniformMatchups``: seats drawn per
episode) from one shared rollout stream of Ray sampler actors; the driver hosts one
``Learner`` with both policies. The plan is :func:`league.algos.compose.build_multi_policy_plan`
in two schedules, same samplers, fragments, configs and seeds:

* ``alternating``: ``ParallelRollouts(mode="bulk_sync")`` and the fragments merged
  ``round_robin``: every sampler produces one fragment while the driver waits, then the
  driver trains (each policy's fragment in its turn) while the samplers wait.
* ``async``: ``ParallelRollouts(mode="async", num_async=2)`` and the fragments merged
  ``async`` (the default plan): samplers keep sampling while the driver trains.

Figures (one JSON object per line):

* ``mixed_throughput``, one per run: ``--seconds`` of measurement after a warm-up that
  lasts ``--warmup-s`` and until both policies have trained at least once. Env steps
  sampled per second, learner updates per second per policy (one PPO update = all its
  epochs on one train batch; one DQN update = one gradient step on a replayed batch),
  agent steps trained per second, and the same per CPU-second of the driver plus the
  sampler actors. Runs come in ``--repeats`` pairs, each pair both schedules back to
  back, the order alternating from pair to pair.
* ``schedule_speedup``: per pair async / alternating, for env steps/s and for total
  updates/s; the medians over pairs are the figures (target >= 1.2).
* ``mixed_win_rate``, per schedule (``alternating`` first, then ``async``): a fresh run
  trained until both policies win at least ``--target`` of ``--eval-games`` greedy games
  against the random player (random seat; draws are not wins) at the same evaluation,
  and for at least ``--min-train-s`` (to show where the curve goes on), or for
  ``--max-train-s``. Evaluations run every ``--eval-every-s`` seconds of training, in the
  driver, off the clock (training time excludes them); ``curve`` lists them all. Per
  policy, ``time_to_target_s`` is the training time of its first evaluation at or above
  the target (a multiple of ``--eval-every-s``), ``both_at_target_s`` that of the first
  evaluation where both policies were (``null``: never). For scale, the same evaluation
  plays a scripted player that always drops into the centre column (the lowest legal
  column once it is full): ``center_column_win_rate_vs_random``. Beating random play 80%
  of the time is a low bar in connect four: that player alone gets close to 90%.

Ray is started once (``num_cpus=2``, workers at nice 0, see ``bench_sampler.start_ray``)
and shut down at the end; every actor is killed after its run.

Usage: ``python benchmarks/bench_mixed.py [--seconds 30] [--repeats 3] [--num-samplers 1]
[--min-train-s 60] [--max-train-s 480] [--skip-throughput] [--skip-win-rate]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from typing import Any

import numpy as np

from league.policy import Policy, PolicyFactory

TARGET_SPEEDUP = 1.2
ENV = "connect_four"
RANDOM = "random"
#: Policy id -> (algorithm, params). MLP models; DQN replays 4 rows per stored row.
POLICIES: dict[str, tuple[str, dict[str, Any]]] = {
    "ppo": ("ppo", {"model": "mlp", "lr": 5e-4, "train_batch_size": 2048, "minibatch_size": 256, "num_epochs": 4}),
    "dqn": ("dqn", {"model": "mlp", "lr": 5e-4, "training_intensity": 4.0, "train_batch_size": 64,
                    "learning_starts": 1000, "epsilon_steps": 20_000, "target_update_interval": 250}),
}
SAMPLER = {"num_envs": 16, "fragment_length": 32}
SCHEDULES = {"alternating": ("bulk_sync", "round_robin"), "async": ("async", "async")}
CENTER = "center_column"


class CenterColumnPolicy(Policy):
    """A scripted reference player: the centre column while legal, else the lowest legal column."""

    def compute_actions(self, obs: np.ndarray, action_mask: np.ndarray, explore: bool = True) -> dict[str, np.ndarray]:
        """Column 3 where legal, otherwise the first legal column."""
        mask = np.asarray(action_mask, dtype=bool)
        return {"actions": np.where(mask[:, 3], 3, mask.argmax(axis=1)).astype(np.int64)}


class CenterColumnFactory(PolicyFactory):
    """Factory of :class:`CenterColumnPolicy` (never learns)."""

    def make_policy(self, seed: int | None = None, learns: bool = False) -> Policy:
        """The stateless policy."""
        return CenterColumnPolicy()


class MixedRun:
    """Learner, Ray samplers and the plan of one run in one schedule."""

    def __init__(self, schedule: str, num_samplers: int, seed: int) -> None:
        import torch

        from league.algos import make_algorithm
        from league.algos.compose import build_multi_policy_plan
        from league.envs import make_env
        from league.flow import ParallelRollouts
        from league.learn import Learner
        from league.policy import RandomPolicyFactory
        from league.sampling import UniformMatchups, make_remote_samplers

        torch.manual_seed(seed)
        env = make_env(ENV)
        spec = env.spec(env.possible_agents[0])
        self.algos = {pid: make_algorithm(name, spec, params) for pid, (name, params) in POLICIES.items()}
        self.learner = Learner(seed=seed)
        for pid, algo in self.algos.items():
            self.learner.add_policy(pid, algo)
        self.samplers = make_remote_samplers(
            num_samplers, num_cpus=1, env=ENV, policies={**self.algos, RANDOM: RandomPolicyFactory()},
            frozen=(RANDOM,), matchups=UniformMatchups(list(self.algos)), seed=seed, **SAMPLER,
        )
        import ray

        ray.get([s.set_weights.remote(self.learner.get_weights()) for s in self.samplers])
        source_mode, merge_mode = SCHEDULES[schedule]
        kwargs = {"num_async": 2} if source_mode == "async" else {}
        rollouts = ParallelRollouts(self.samplers, mode=source_mode, **kwargs)
        self.plan = build_multi_policy_plan(rollouts, self.learner, self.samplers, self.algos, mode=merge_mode)
        self.updates = {pid: 0 for pid in self.algos}

    def step(self) -> None:
        """One item of the plan: one policy's training step."""
        result = next(self.plan)
        for pid in result.stats:
            self.updates[pid] += 1

    def cpu_seconds(self) -> float:
        """CPU time of the driver plus every sampler actor so far."""
        import ray

        actors = ray.get([s.__ray_call__.remote(lambda _self: time.process_time()) for s in self.samplers])
        return time.process_time() + float(sum(actors))

    def counters(self) -> dict[str, float]:
        """Env steps sampled, agent steps trained and updates per policy, now."""
        c = self.plan.metrics.counters
        return {"env_steps": c["num_env_steps_sampled"], "agent_steps_trained": c["num_agent_steps_trained"],
                **{f"updates[{pid}]": n for pid, n in self.updates.items()}}

    def close(self) -> None:
        """Kill the sampler actors."""
        import ray

        for s in self.samplers:
            ray.kill(s)


def measure_throughput(schedule: str, args: argparse.Namespace, seed: int) -> dict[str, Any]:
    """Warm up, then run the plan for ``args.seconds``; rates over that window only."""
    run = MixedRun(schedule, args.num_samplers, seed)
    try:
        start = time.perf_counter()
        while time.perf_counter() - start < args.warmup_s or min(run.updates.values()) == 0:
            run.step()
        c0, cpu0, t0 = run.counters(), run.cpu_seconds(), time.perf_counter()
        while time.perf_counter() - t0 < args.seconds:
            run.step()
        wall = time.perf_counter() - t0
        c1, cpu = run.counters(), run.cpu_seconds() - cpu0
    finally:
        run.close()
    delta = {k: c1[k] - c0[k] for k in c1}
    updates = {pid: delta[f"updates[{pid}]"] for pid in POLICIES}
    total_updates = sum(updates.values())
    return {
        "figure": "mixed_throughput",
        "schedule": schedule,
        "source_mode": SCHEDULES[schedule][0],
        "merge_mode": SCHEDULES[schedule][1],
        "seconds": round(wall, 2),
        "warmup_s": round(t0 - start, 2),
        "env_steps": delta["env_steps"],
        "env_steps_per_s": round(delta["env_steps"] / wall, 1),
        "updates_per_s": {pid: round(n / wall, 2) for pid, n in updates.items()},
        "total_updates_per_s": round(total_updates / wall, 2),
        "agent_steps_trained_per_s": round(delta["agent_steps_trained"] / wall, 1),
        "cpu_s": round(cpu, 2),
        "env_steps_per_cpu_s": round(delta["env_steps"] / max(cpu, 1e-9), 1),
        "total_updates_per_cpu_s": round(total_updates / max(cpu, 1e-9), 2),
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }


def throughput_figures(args: argparse.Namespace) -> list[dict[str, Any]]:
    """``args.repeats`` pairs of runs (order alternating), then the paired speedups."""
    pairs = []
    for r in range(args.repeats):
        order = ("alternating", "async") if r % 2 == 0 else ("async", "alternating")
        pair = {}
        for schedule in order:
            pair[schedule] = fig = measure_throughput(schedule, args, seed=args.seed + r)
            print(json.dumps({**fig, "repeat": r, **args.common}), flush=True)
        pairs.append(pair)
    env_ratios = [p["async"]["env_steps_per_s"] / p["alternating"]["env_steps_per_s"] for p in pairs]
    upd_ratios = [p["async"]["total_updates_per_s"] / p["alternating"]["total_updates_per_s"] for p in pairs]
    cpu_ratios = [p["async"]["env_steps_per_cpu_s"] / p["alternating"]["env_steps_per_cpu_s"] for p in pairs]
    speedup = statistics.median(env_ratios)
    return [{
        "figure": "schedule_speedup",
        "env_steps_speedup": round(speedup, 3),
        "updates_speedup": round(statistics.median(upd_ratios), 3),
        "env_steps_per_cpu_s_ratio": round(statistics.median(cpu_ratios), 3),
        "per_pair_env_steps_speedup": [round(x, 3) for x in env_ratios],
        "per_pair_updates_speedup": [round(x, 3) for x in upd_ratios],
        "target": TARGET_SPEEDUP,
        "meets_target": speedup >= TARGET_SPEEDUP,
        **args.common,
    }]


def win_rate(games: list[dict[str, Any]], policy_id: str) -> float:
    """Fraction of ``games`` that ``policy_id`` won (draws are not wins)."""
    wins = sum(e["outcome"][seat] == "win" for e in games for seat, pid in e["policies"].items() if pid == policy_id)
    return wins / max(len(games), 1)


def _first_time_both_at(curve: list[dict[str, Any]], target: float) -> float | None:
    """Training time of the first evaluation where every policy won at least ``target``."""
    return next((p["train_s"] for p in curve if min(p[pid] for pid in POLICIES) >= target), None)


def win_rate_figure(schedule: str, args: argparse.Namespace) -> dict[str, Any]:
    """Train in ``schedule`` until both policies beat random play ``args.target`` of the time (see module docstring)."""
    from league.policy import RandomPolicyFactory
    from league.sampling import OpponentSampling, Sampler, UniformMatchups

    wall_start = time.perf_counter()
    run = MixedRun(schedule, args.num_samplers, args.seed)
    # A local sampler, used only for evaluation: greedy games with the learner's current weights.
    judge = Sampler(ENV, policies={**run.algos, RANDOM: RandomPolicyFactory(), CENTER: CenterColumnFactory()},
                    frozen=(*run.algos, RANDOM, CENTER), matchups=UniformMatchups(list(run.algos)), num_envs=16,
                    seed=args.seed + 1000)
    center = win_rate(judge.evaluate(args.eval_games, OpponentSampling(CENTER, {RANDOM: 1.0})), CENTER)
    curve: list[dict[str, Any]] = []
    reached: dict[str, float | None] = {pid: None for pid in POLICIES}
    train_s = 0.0
    try:
        while train_s < args.max_train_s:
            t0 = time.perf_counter()
            while time.perf_counter() - t0 < args.eval_every_s:
                run.step()
            train_s += time.perf_counter() - t0
            judge.set_weights(run.learner.get_weights(list(run.algos)))
            rates = {pid: win_rate(judge.evaluate(args.eval_games, OpponentSampling(pid, {RANDOM: 1.0})), pid)
                     for pid in run.algos}
            point = {"train_s": round(train_s, 1), "env_steps": run.counters()["env_steps"], **rates}
            curve.append(point)
            print(json.dumps({"figure": "mixed_win_rate_progress", "schedule": schedule, **point}), flush=True)
            for pid, rate in rates.items():
                if reached[pid] is None and rate >= args.target:
                    reached[pid] = round(train_s, 1)
            if _first_time_both_at(curve, args.target) is not None and train_s >= args.min_train_s:
                break
        updates = dict(run.updates)
    finally:
        run.close()
    final = {pid: curve[-1][pid] for pid in POLICIES}
    return {
        "figure": "mixed_win_rate",
        "schedule": schedule,
        "target": args.target,
        "eval_games": args.eval_games,
        "final_win_rate_vs_random": final,
        "time_to_target_s": reached,
        "both_at_target_s": _first_time_both_at(curve, args.target),
        "best_win_rate_vs_random": {pid: max(p[pid] for p in curve) for pid in POLICIES},
        "center_column_win_rate_vs_random": center,
        "train_s": round(train_s, 1),
        "wall_time_s_incl_setup_and_eval": round(time.perf_counter() - wall_start, 1),
        "env_steps": curve[-1]["env_steps"],
        "updates": updates,
        "curve": curve,
        "policies": {pid: {"algo": name, **params} for pid, (name, params) in POLICIES.items()},
        "load_avg_1m": round(os.getloadavg()[0], 2),
        **args.common,
    }


def main() -> None:
    """Throughput pairs, then the win-rate run, one JSON line per figure."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="measured time per throughput run")
    parser.add_argument("--warmup-s", type=float, default=10.0, help="unmeasured time before it")
    parser.add_argument("--repeats", type=int, default=3, help="pairs of throughput runs")
    parser.add_argument("--num-samplers", type=int, default=1, help="Ray sampler actors (1 CPU each)")
    parser.add_argument("--target", type=float, default=0.8, help="win rate against random play to reach")
    parser.add_argument("--eval-games", type=int, default=200, help="greedy games per policy per evaluation")
    parser.add_argument("--eval-every-s", type=float, default=5.0, help="training seconds between evaluations")
    parser.add_argument("--min-train-s", type=float, default=60.0, help="least training time per win-rate run")
    parser.add_argument("--max-train-s", type=float, default=480.0, help="training time cap per win-rate run")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--skip-win-rate", action="store_true")
    args = parser.parse_args()

    import ray
    import torch
    from bench_sampler import start_ray

    torch.set_num_threads(1)  # the driver's learner: one core of two, the samplers have the rest
    args.common = {"cores": os.cpu_count(), "num_samplers": args.num_samplers, "driver_torch_threads": 1,
                   **SAMPLER, **start_ray()}
    try:
        if not args.skip_throughput:
            for fig in throughput_figures(args):
                print(json.dumps(fig), flush=True)
        if not args.skip_win_rate:
            for schedule in ("alternating", "async"):
                print(json.dumps(win_rate_figure(schedule, args)), flush=True)
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
