"""OpenSpiel games stepped N per call (``OpenSpielBatchedEnv``) vs N ``OpenSpielEnv`` copies behind
``VectorizedEnv`` (the path before issue 37), env only, in the sampler and in training.

Figures (one JSON object per line, each with ``cores`` and ``load_avg_1m``; the baseline is
measured in the same run, rounds alternating so a busy machine slows both alike):

* ``env_only``: random legal moves (``masked_uniform_actions`` over the step's masks, counted
  in the time) on one core, ``--num-envs`` copies, for hex 5x5, breakthrough 6x6, connect four,
  othello, clobber and mnk 7x7 k=4 (observation tensors). ``*_per_cpu_s``: steps per CPU second of
  this process (what the figure is judged on: it does not depend on how much of a core the
  process got on a shared machine); ``speedup``: the median over rounds of batched/vectorized
  CPU rates, each pair run back to back.
* ``sampler``: ``Sampler.sample()`` in this process on one core, PPO's MLP policy
  (``{"model": "mlp"}``: hidden (128, 128) tanh) on both seats, both recorded and GAE'd, at the
  sampler default (32 envs x 64 steps) and at 128 x 32 (the C++ board games' presets), on either env.
* ``learner``: PPO's update (``Learner.learn_on_batch``, one thread) on two 128 x 32 sampler
  fragments of hex 5x5, CPU us per row, with the MLP and PPO's default four epochs and with
  ``num_epochs=1``; with the sampler's CPU cost per env step it gives what 2 cores can train at
  when sampling and learning alternate (on-policy PPO's bulk_sync: two samplers side by side, then
  the update): ``bound_env_steps_per_s`` = 1 / (sampler us / 2 + learner us), per env.
* ``training`` (``--train SECONDS``): ``league-train env.name=openspiel:<game> ...
  algo.params.model=mlp eval.interval=0`` for SECONDS on either env (the default job's layout:
  two Ray samplers and the learner), env steps/s over the run and after its first iteration
  (``steady``), with the sampler default, with ``sampler.num_envs=128 sampler.fragment_length=32``,
  and with those and ``algo.params.num_epochs=1``: a learner that is not the bound (PPO's
  default four epochs over an MLP cost 40 us of CPU per row on hex 5x5 here, more than the
  sampler's 12; on-policy PPO samples and learns in turn, so the update's time adds to the
  samplers'). The vectorized run gets the old path through a
  ``sitecustomize`` on ``PYTHONPATH`` (Ray's workers inherit it) that has
  ``EnvFactory._openspiel_batched`` return None. ``cpu_us_per_env_step``: the CPU seconds
  every process of the run spent (from ``/proc``, polled) per env step after the first
  iteration; ``env_steps_per_2_cpu_s`` = 2 / that, what two fully used cores would train at
  (a figure that depends less on other processes' load; bulk_sync's turns leave cores idle,
  so a quiet machine does less); ``work_*``: the same counting only the driver (plan and
  learner) and the sampler actors, not Ray's own services (whose CPU is per second, not per
  step, so a run slowed by other load pays more of it per step).

Usage: ``python benchmarks/bench_openspiel.py [--seconds 1.0] [--rounds 3] [--quick] [--train 60]``;
the issue's training figure alone: ``--train 120 --train-only --train-game clobber --train-configs 3 4``
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
from collections.abc import Callable
from typing import Any

import numpy as np

from league.envs.batched import BatchedMultiAgentEnv, VectorizedEnv
from league.envs.factory import EnvFactory
from league.envs.openspiel_batched import OpenSpielBatchedEnv
from league.envs.openspiel_env import OpenSpielEnv
from league.policy import masked_uniform_actions

#: Game -> its parameters (every one on its observation tensor).
GAMES: dict[str, dict[str, Any]] = {
    "hex": {"board_size": 5},
    "breakthrough": {"rows": 6, "columns": 6},
    "connect_four": {},
    "othello": {},
    "clobber": {},
    "mnk": {"m": 7, "n": 7, "k": 4},
}

#: The target of issue 37 for training on a generic OpenSpiel board game.
TARGET_TRAINING = 50_000


def _context() -> dict[str, Any]:
    return {"cores": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2)}


def _rate(step: Callable[[], int], seconds: float) -> tuple[float, float]:
    """(steps per wall second, steps per CPU second) of ``step`` run for about ``seconds``."""
    step()  # warm-up
    steps, t0, c0 = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - t0 < seconds:
        steps += step()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return steps / wall, steps / max(cpu, 1e-9)


def _kwargs(game: str) -> dict[str, Any]:
    return {**GAMES[game], "observation": "observation"}


class Vectorized(EnvFactory):
    """The factory before issue 37: an OpenSpiel game as N OpenSpielEnv copies behind VectorizedEnv."""

    def _openspiel_batched(self, *args: Any, **kwargs: Any) -> None:
        return None


def _stepper(env: BatchedMultiAgentEnv, seed: int) -> Callable[[], int]:
    rng = np.random.default_rng(seed)
    state = {"bs": env.reset(seed=seed)}

    def step() -> int:
        actions = masked_uniform_actions(state["bs"].masks, rng)
        state["bs"] = env.step(actions)
        return len(actions)

    return step


def env_only(game: str, num_envs: int, seconds: float, rounds: int) -> dict[str, Any]:
    """Random legal moves, both envs, alternating rounds."""
    kwargs = _kwargs(game)
    vec = VectorizedEnv(lambda: OpenSpielEnv(game, **kwargs), num_envs, game)
    fast = OpenSpielBatchedEnv(OpenSpielEnv(game, **kwargs), num_envs)
    steppers = {"vectorized": _stepper(vec, 0), "batched": _stepper(fast, 0)}
    rates: dict[str, list[tuple[float, float]]] = {k: [] for k in steppers}
    for _ in range(rounds):
        for name, step in steppers.items():
            rates[name].append(_rate(step, seconds))
    out: dict[str, Any] = {"figure": "env_only", "game": game, "params": GAMES[game], "num_envs": num_envs}
    for name, rs in rates.items():
        out[f"{name}_steps_per_s"] = round(statistics.median(r[0] for r in rs))
        out[f"{name}_steps_per_cpu_s"] = round(statistics.median(r[1] for r in rs))
    out["speedup"] = round(statistics.median(b[1] / v[1] for v, b in zip(rates["vectorized"], rates["batched"])), 2)
    out["observer_path"] = fast._observer is not None
    return {**out, **_context()}


def sampler(game: str, num_envs: int, fragment: int, seconds: float, rounds: int) -> dict[str, Any]:
    """``Sampler.sample()`` env steps/s on one core on either env (PPO MLP self-play)."""
    import torch

    from league.algos import make_algorithm
    from league.sampling import FixedMatchups, Sampler

    torch.set_num_threads(1)
    name, kwargs = f"openspiel:{game}", _kwargs(game)
    samplers = {}
    for label, cls in (("vectorized", Vectorized), ("batched", EnvFactory)):
        factory = cls(name, kwargs)
        env = factory()
        ppo = make_algorithm("ppo", env.spec(env.possible_agents[0]), {"model": "mlp"})
        s = Sampler(factory, policies={"main": ppo}, matchups=FixedMatchups({a: "main" for a in env.possible_agents}),
                    num_envs=num_envs, fragment_length=fragment, seed=0)
        samplers[label] = s
    rates: dict[str, list[tuple[float, float]]] = {k: [] for k in samplers}
    for _ in range(rounds):
        for label, s in samplers.items():
            rates[label].append(_rate(lambda s=s: s.sample().env_steps, seconds))
    out: dict[str, Any] = {"figure": "sampler", "game": game, "num_envs": num_envs, "fragment_length": fragment,
                           "policy": "ppo mlp (128, 128), both seats"}
    for label, rs in rates.items():
        out[f"{label}_env_steps_per_s"] = round(statistics.median(r[0] for r in rs))
        out[f"{label}_env_steps_per_cpu_s"] = round(statistics.median(r[1] for r in rs))
    out["speedup"] = round(statistics.median(b[1] / v[1] for v, b in zip(rates["vectorized"], rates["batched"])), 2)
    return {**out, **_context()}


def learner(game: str, sampler_rows: list[dict[str, Any]], seconds: float) -> list[dict[str, Any]]:
    """PPO's update cost per row (CPU, one thread) and the alternating-sampling bound it sets."""
    import torch

    from league.algos import make_algorithm
    from league.batch import MultiAgentBatch, SampleBatch
    from league.learn import Learner
    from league.sampling import FixedMatchups, Sampler

    torch.set_num_threads(1)
    factory = EnvFactory(f"openspiel:{game}", _kwargs(game))
    env = factory()
    spec = env.spec(env.possible_agents[0])
    s = Sampler(factory, policies={"main": make_algorithm("ppo", spec, {"model": "mlp"})},
                matchups=FixedMatchups({a: "main" for a in env.possible_agents}), num_envs=128, fragment_length=32, seed=0)
    rows = SampleBatch.concat([s.sample().policy_batches["main"] for _ in range(2)])
    batch = MultiAgentBatch({"main": rows}, len(rows))
    sampled = {r["num_envs"]: r for r in sampler_rows if r["game"] == game}.get(128)
    out = []
    for epochs in (4, 1):
        learner = Learner("cpu", seed=0)
        learner.add_policy("main", make_algorithm("ppo", spec, {"model": "mlp", "num_epochs": epochs}), num_threads=1)
        learner.learn_on_batch(batch)  # warm-up
        n, c0, t0 = 0, time.process_time(), time.perf_counter()
        while time.perf_counter() - t0 < seconds or n == 0:
            learner.learn_on_batch(batch)
            n += len(rows)
        us = (time.process_time() - c0) / n * 1e6
        row: dict[str, Any] = {"figure": "learner", "game": game, "algo": f"ppo mlp (128, 128), {epochs} epochs, minibatch 512",
                               "rows": len(rows), "learner_cpu_us_per_row": round(us, 1)}
        if sampled is not None:
            for label in ("vectorized", "batched"):
                sampler_us = 1e6 / sampled[f"{label}_env_steps_per_cpu_s"]
                row[f"{label}_sampler_cpu_us_per_step"] = round(sampler_us, 1)
                row[f"{label}_bound_env_steps_per_s"] = round(1e6 / (sampler_us / 2 + us))
        out.append({**row, **_context()})
    return out


_SITECUSTOMIZE = '''
import sys


class _VectorizedOpenSpiel:
    """Has league.envs.factory.EnvFactory._openspiel_batched return None once it is imported."""

    def find_spec(self, name, path, target=None):
        if name != "league.envs.factory":
            return None
        import importlib.util

        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            module.EnvFactory._openspiel_batched = lambda self, *a, **k: None

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _VectorizedOpenSpiel())
'''


#: The training figures' overrides beyond the game, the MLP and no evaluation.
TRAINING_CONFIGS: tuple[tuple[str, ...], ...] = (
    (),
    ("sampler.num_envs=128", "sampler.fragment_length=32"),
    ("sampler.num_envs=128", "sampler.fragment_length=32", "algo.params.num_epochs=1"),
    # The 50k figure: one epoch, samplers stepping through the update (async, lag 1),
    # the preset's blocks of two matchups; and the same without them (the baseline).
    ("algo.params.num_epochs=1", "sampler.mode=async", "algo.params.max_policy_lag=1"),
    ("algo.params.num_epochs=1", "sampler.mode=async", "algo.params.max_policy_lag=1", "sampler.matchup_draws=0"),
)


def _tree_cpu_s(root: int) -> dict[int, tuple[float, bool]]:
    """By pid, the CPU seconds (user + system) so far of ``root`` and every process descended from
    it (Linux /proc), and whether it does the run's work: the driver (plan and learner) or a
    Ray sampler actor (``ray::Sampler...``), not Ray's own services."""
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        parents[int(entry)] = int(fields[1])
        cpu[int(entry)] = (int(fields[11]) + int(fields[12])) / tick
    tree, frontier = {root}, [root]
    while frontier:
        pid = frontier.pop()
        for child, parent in parents.items():
            if parent == pid and child not in tree:
                tree.add(child)
                frontier.append(child)
    out = {}
    for pid in tree:
        if pid not in cpu:
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                name = f.read().split(b"\0")[0].decode(errors="replace")
        except OSError:
            name = ""
        out[pid] = (cpu[pid], pid == root or name.startswith("ray::Sampler"))
    return out


def _metrics_steps(path: str) -> int:
    """The env steps of a run's last metrics row (0 before the first)."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
        return int(json.loads(lines[-1])["env_steps"]) if lines else 0
    except (OSError, ValueError, KeyError):
        return 0


def training(game: str, seconds: int, vectorized: bool, overrides: list[str]) -> dict[str, Any]:
    """One ``league-train`` run on the game with an MLP, evaluation off: env steps/s, and the CPU
    seconds every process of the run (driver, learner, Ray and its samplers) spent per env step
    after the first iteration (polled from /proc every half second)."""
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = os.path.join(tmp, "run")
        if vectorized:
            hook = os.path.join(tmp, "hook")
            os.makedirs(hook)
            with open(os.path.join(hook, "sitecustomize.py"), "w") as f:
                f.write(_SITECUSTOMIZE)
            env["PYTHONPATH"] = os.pathsep.join(p for p in (hook, env.get("PYTHONPATH")) if p)
        kwargs = [f"+env.kwargs.{k}={v}" for k, v in _kwargs(game).items()]
        cmd = [sys.executable, "-m", "league.cli.train", f"env.name=openspiel:{game}", *kwargs, "algo.params.model=mlp",
               "eval.interval=0", f"stop.time_s={seconds}", "logging=quiet", f"hydra.run.dir={run_dir}", *overrides]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        seen: dict[int, tuple[float, bool]] = {}  # pid -> its CPU seconds when last seen, whether a worker
        polls: list[tuple[int, float, float]] = []  # (env steps logged, CPU s of the tree, of its workers)
        metrics = os.path.join(run_dir, "metrics.jsonl")
        while proc.poll() is None:
            for pid, (cpu, work) in _tree_cpu_s(proc.pid).items():  # a worker stays one (Ray renames idle ones)
                seen[pid] = (cpu, work or seen.get(pid, (0.0, False))[1])
            polls.append((_metrics_steps(metrics), sum(c for c, _ in seen.values()), sum(c for c, w in seen.values() if w)))
            time.sleep(0.5)
        if proc.returncode:
            raise subprocess.CalledProcessError(proc.returncode, cmd)
        with open(metrics) as f:
            rows = [json.loads(line) for line in f]
    last, first = rows[-1], rows[0]
    steady = (last["env_steps"] - first["env_steps"]) / max(last["time_s"] - first["time_s"], 1e-9)
    start = next((p for p in polls if p[0] > 0), None)
    end = max(polls, default=None)
    cpu_us = work_us = None
    if start is not None and end is not None and end[0] > start[0]:
        cpu_us = round((end[1] - start[1]) / (end[0] - start[0]) * 1e6, 1)
        work_us = round((end[2] - start[2]) / (end[0] - start[0]) * 1e6, 1)
    return {"figure": "training", "game": game, "env": "vectorized" if vectorized else "batched",
            "overrides": " ".join(overrides) or "none (the preset preset=auto picks: board_game, 128 envs x 32 steps, two matchups a block, PPO 4 epochs)", "seconds": seconds,
            "env_steps": last["env_steps"], "env_steps_per_s": round(last["env_steps"] / last["time_s"]),
            "steady_env_steps_per_s": round(steady), "cpu_us_per_env_step": cpu_us,
            "env_steps_per_2_cpu_s": None if not cpu_us else round(2e6 / cpu_us),
            "work_cpu_us_per_env_step": work_us, "work_env_steps_per_2_cpu_s": None if not work_us else round(2e6 / work_us),
            "target_env_steps_per_s": TARGET_TRAINING, **_context()}


def main() -> None:
    """Print every figure as a JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="length of each timed round")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per figure")
    parser.add_argument("--num-envs", type=int, default=64, help="copies in the env-only figures")
    parser.add_argument("--games", nargs="+", default=list(GAMES), choices=list(GAMES))
    parser.add_argument("--quick", action="store_true", help="hex only, short rounds (a smoke test)")
    parser.add_argument("--train", type=int, default=0, help="seconds per training run (0: no training figures)")
    parser.add_argument("--train-configs", type=int, nargs="+", default=list(range(len(TRAINING_CONFIGS))),
                        help="which of TRAINING_CONFIGS to run (indices)")
    parser.add_argument("--train-game", default="hex", choices=list(GAMES), help="the game of the training figures")
    parser.add_argument("--train-only", action="store_true", help="only the training figures, batched env only")
    args = parser.parse_args()
    if args.train_only:
        for overrides in [TRAINING_CONFIGS[i] for i in args.train_configs]:
            print(json.dumps(training(args.train_game, args.train, False, list(overrides))), flush=True)
        return
    games = ["hex"] if args.quick else args.games
    seconds, rounds = (0.2, 1) if args.quick else (args.seconds, args.rounds)
    for game in games:
        print(json.dumps(env_only(game, args.num_envs, seconds, rounds)), flush=True)
    sampler_rows = []
    for game in games[:1] if args.quick else games[:2]:
        for num_envs, fragment in ((32, 64), (128, 32)):
            sampler_rows.append(sampler(game, num_envs, fragment, seconds, rounds))
            print(json.dumps(sampler_rows[-1]), flush=True)
    if "hex" in games:
        for row in learner("hex", sampler_rows, seconds):
            print(json.dumps(row), flush=True)
    if args.train:
        for overrides in [TRAINING_CONFIGS[i] for i in args.train_configs]:
            for vectorized in (True, False):
                print(json.dumps(training(args.train_game, args.train, vectorized, list(overrides))), flush=True)


if __name__ == "__main__":
    main()
