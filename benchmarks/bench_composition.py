"""Mixing algorithms costs no throughput, and a DQN league runs for as long as asked.

Every run is ``league-train`` itself (a subprocess, the configs in ``configs/`` plus the
overrides printed with each figure), so each figure is reproducible from the command line.

Figures (one JSON object per line):

* ``mixed_throughput``, per env (``tictactoe``, ``connect_four``) and config, the configs
  of one env run back to back in this script (``--repeats`` runs them again, in
  alternating order): ``policies=ppo_vs_dqn`` (a PPO and a DQN policy playing each other), its
  PPO-only twin ``policies=ppo_vs_ppo`` (the baseline), and the default PPO self-play
  league. Env steps/s after a warm-up (``--warmup-s``), learner updates per second per
  policy (one PPO update = all epochs on one train batch; one DQN update = one gradient
  step), and weight broadcasts sent (and coalesced) per second.
* ``mixed_vs_ppo``: per env, the ratio of ``ppo_vs_dqn``'s env steps/s to
  ``ppo_vs_ppo``'s (target >= 0.8), and the same for ``ppo_vs_dqn_intensity8`` (DQN
  replaying 8 rows per row sampled, its own default, instead of the mix's 2).
* ``dqn_learner_bound``: one DQN training step of ``ppo_vs_dqn_intensity8``'s DQN timed in this
  process (one core), and the env steps/s at which that core keeps up with DQN's replay
  ratio given the share of env steps DQN acted in: a ceiling of the mixed run. With PPO in
  the mix the samplers run bulk_sync (PPO is on-policy), so DQN's steps add to the
  sampling time instead of overlapping it, and the run stays well below that ceiling.
* ``mixed_strength`` (with ``--strength-seconds``), per env: ``ppo_vs_dqn`` at DQN's replay
  ratio 2 (the mix's) and at 8, each trained that long, then every learning policy's greedy games
  (``league-eval``) against perfect minimax on tic-tac-toe (400 games) and depth-2 negamax
  from varied openings on connect four (200 games); scripted players break ties at
  random. What a replay ratio buys per wall-clock second when the learner is the bound.
* ``dqn_selfplay``: ``league-train algo=dqn`` (the default connect-four league) for
  ``--dqn-minutes``: whether it finished, iterations, env steps, its last greedy win rate
  against the uniform-random player, snapshots taken and evicted, and a curve of
  ``(time_s, env_steps, win_rate_vs_random)`` rows.

Usage: ``python benchmarks/bench_composition.py [--seconds 90] [--dqn-minutes 10]
[--skip-mixed] [--skip-dqn] [--strength-seconds 240]``. Run nothing else timed beside it (2 cores).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

MIXED_CONFIGS = {
    "ppo_vs_dqn": ["policies=ppo_vs_dqn"],
    "ppo_vs_ppo": ["policies=ppo_vs_ppo"],
    "ppo_selfplay": [],
    # The same mix with DQN replaying 8 rows per row sampled (DQN's own default) instead of
    # the mix's 2: bound by the DQN learner's arithmetic (see dqn_learner_bound).
    "ppo_vs_dqn_intensity8": ["policies=ppo_vs_dqn", "policies.dqn_0.params.training_intensity=8"],
}
TARGET_RATIO = 0.8


def league_train(overrides: list[str], run_dir: Path) -> tuple[list[dict[str, Any]], dict[str, Any] | None, str]:
    """Run ``league-train`` with ``overrides`` into ``run_dir``; its rows, summary and stderr tail."""
    command = [sys.executable, "-m", "league.cli.train", *overrides, "logging=quiet", f"hydra.run.dir={run_dir}"]
    done = subprocess.run(command, capture_output=True, text=True)
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()] if (run_dir / "metrics.jsonl").exists() else []
    summary_path = run_dir / "summary.json"
    summary = json.loads(summary_path.read_text()) if done.returncode == 0 and summary_path.exists() else None
    return rows, summary, done.stderr[-2000:]


def _rate(rows: list[dict[str, Any]], key: Any, warmup_s: float) -> float | None:
    """Per-second growth of ``key(row)`` between the first row after the warm-up and the last row."""
    after = [r for r in rows if r["time_s"] >= warmup_s]
    if len(after) < 2:
        return None
    first, last = after[0], after[-1]
    return round((key(last) - key(first)) / max(last["time_s"] - first["time_s"], 1e-9), 2)


def throughput(env: str, name: str, seconds: float, warmup_s: float, root: Path) -> dict[str, Any]:
    """One ``mixed_throughput`` figure."""
    overrides = [f"env={env}", *MIXED_CONFIGS[name], f"stop.time_s={seconds}", "stop.env_steps=0"]
    rows, summary, err = league_train(overrides, root / f"{env}_{name}")
    if summary is None:
        return {"figure": "mixed_throughput", "env": env, "config": name, "error": err}
    counters = rows[-1]["counters"]
    policies = sorted(k.split("/", 1)[1] for k in counters if k.startswith("num_learner_updates/"))
    return {
        "figure": "mixed_throughput",
        "env": env,
        "config": name,
        "overrides": overrides,
        "env_steps_per_s": _rate(rows, lambda r: r["env_steps"], warmup_s),
        "updates_per_s": {p: _rate(rows, lambda r, p=p: r["counters"].get(f"num_learner_updates/{p}", 0), warmup_s) for p in policies},
        "broadcasts_per_s": _rate(rows, lambda r: r["counters"].get("num_weight_broadcasts", 0), warmup_s),
        "broadcasts": counters.get("num_weight_broadcasts", 0),
        "broadcasts_coalesced": counters.get("num_weight_broadcasts_coalesced", 0),
        "env_steps": rows[-1]["env_steps"],
        "dqn_rows_per_env_step": round(counters["num_agent_steps_sampled/dqn_0"] / rows[-1]["env_steps"], 4)
        if "num_agent_steps_sampled/dqn_0" in counters else None,
        "iterations": rows[-1]["iteration"],
        "win_rate_vs_random": rows[-1]["win_rate_vs_random"],
    }


def dqn_learner_bound(env: str, mixed: dict[str, Any], training_intensity: float | None = None, steps: int = 300) -> dict[str, Any]:
    """The ``dqn_learner_bound`` figure: how fast one core can train ``policies=ppo_vs_dqn``'s
    DQN (its params from ``configs/policies/ppo_vs_dqn.yaml`` over ``configs/algo/dqn.yaml``),
    timed in this process (replay draw, gradient step, priority update, on ``env``'s agent
    spec), and the env steps/s that allows at its ``training_intensity`` given the share
    of env steps the DQN policy acted in during the mixed run (``mixed``), at the config's
    replay ratio or ``training_intensity``."""
    import numpy as np
    import torch
    from omegaconf import OmegaConf

    from league.algos import make_algorithm
    from league.batch import Columns as C
    from league.batch import MultiAgentBatch, SampleBatch
    from league.envs import make_env
    from league.flow.replay_ops import UpdatePriorities
    from league.learn import Learner
    from league.replay import NEXT_ACTION_MASK

    configs = Path(__file__).resolve().parents[1] / "configs"
    params = OmegaConf.to_container(OmegaConf.merge(
        OmegaConf.load(configs / "algo" / "dqn.yaml").params, OmegaConf.load(configs / "policies" / "ppo_vs_dqn.yaml").dqn_0.params,
    ))  # fmt: skip
    if training_intensity is not None:
        params["training_intensity"] = training_intensity
    game = make_env(env)
    spec = game.spec(game.possible_agents[0])
    game.close()
    torch.set_num_threads(1)
    algo = make_algorithm("dqn", spec, params)
    learner = Learner(seed=0)
    learner.add_policy("dqn", algo)
    buffer = algo.make_replay_buffer()
    rng, n = np.random.default_rng(0), 20_000
    obs = (rng.random((n, *spec.obs_shape)) < 0.3).astype(np.float32)
    rows = {C.OBS: obs, C.ACTIONS: rng.integers(0, spec.num_actions, n), C.ACTION_MASK: np.ones((n, spec.num_actions), np.int8),
            C.REWARDS: rng.normal(size=n).astype(np.float32), C.NEXT_OBS: obs[::-1].copy(),
            NEXT_ACTION_MASK: np.ones((n, spec.num_actions), np.int8), C.TERMINATEDS: np.zeros(n, bool),
            C.TRUNCATEDS: np.zeros(n, bool), C.EPS_ID: np.repeat(np.arange(n // 10), 10),
            C.AGENT_INDEX: np.zeros(n, np.int64), C.T: np.tile(np.arange(10), n // 10)}  # fmt: skip
    buffer.add(MultiAgentBatch({"dqn": SampleBatch(rows)}, n))
    priorities = UpdatePriorities(buffer, ["dqn"], params["priority_eps"])
    size = params["train_batch_size"]

    def train_step() -> None:
        batch = MultiAgentBatch({"dqn": buffer.sample("dqn", size, beta=params["beta"])}, size)
        priorities((batch, learner.learn_on_batch(batch)), None)

    for _ in range(20):
        train_step()
    start = time.perf_counter()
    for _ in range(steps):
        train_step()
    ms = (time.perf_counter() - start) / steps * 1e3
    rows_per_s = size / ms * 1e3 / params["training_intensity"]  # sampled DQN rows one core keeps up with
    share = mixed.get("dqn_rows_per_env_step")
    return {
        "figure": "dqn_learner_bound", "env": env, "ms_per_train_step": round(ms, 3), "train_batch_size": size,
        "training_intensity": params["training_intensity"], "max_dqn_rows_per_s": round(rows_per_s),
        "dqn_rows_per_env_step": share,
        "max_env_steps_per_s": round(rows_per_s / share) if share else None,
        "measured_env_steps_per_s": mixed.get("env_steps_per_s"),
    }  # fmt: skip


#: The yardstick per env of ``mixed_strength`` (league-eval arguments): perfect minimax on
#: tic-tac-toe; depth-2 negamax on connect four from varied openings (two random plies,
#: each opening played in both seats). Scripted players break ties at random.
STRENGTH_YARDSTICKS = {
    "tictactoe": ["opponents=[minimax]", "episodes=400"],
    "connect_four": ["opponents=[negamax]", "depth=2", "opening_plies=2", "episodes=200"],
}


def mixed_strength(env: str, name: str, seconds: float, root: Path) -> dict[str, Any]:
    """One ``mixed_strength`` figure: ``MIXED_CONFIGS[name]`` on ``env`` for ``seconds``,
    then each learning policy's greedy games against ``STRENGTH_YARDSTICKS[env]``."""
    overrides = [f"env={env}", *MIXED_CONFIGS[name], f"stop.time_s={seconds:g}", "stop.env_steps=0"]
    run_dir = root / f"strength_{env}_{name}"
    rows, summary, err = league_train(overrides, run_dir)
    if summary is None:
        return {"figure": "mixed_strength", "env": env, "config": name, "error": err}
    output = run_dir / "eval.json"
    command = [sys.executable, "-m", "league.cli.eval", f"checkpoint={run_dir}", *STRENGTH_YARDSTICKS[env],
               "scripted_random_ties=true", f"output={output}"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        return {"figure": "mixed_strength", "env": env, "config": name, "error": done.stderr[-2000:]}
    results = json.loads(output.read_text())["results"]
    counters = rows[-1]["counters"]
    return {
        "figure": "mixed_strength", "env": env, "config": name, "overrides": overrides, "env_steps": rows[-1]["env_steps"],
        "updates": {k.split("/", 1)[1]: v for k, v in counters.items() if k.startswith("num_learner_updates/")},
        "yardstick": STRENGTH_YARDSTICKS[env],
        "results": {r["policy"]: {"wins": r["wins"], "draws": r["draws"], "losses": r["losses"], "seats": r["seats"]} for r in results},
    }  # fmt: skip


def dqn_selfplay(minutes: float, root: Path) -> dict[str, Any]:
    """The ``dqn_selfplay`` figure."""
    overrides = ["algo=dqn", f"stop.time_s={minutes * 60:g}", "stop.env_steps=0"]
    rows, summary, err = league_train(overrides, root / "dqn_selfplay")
    last = rows[-1] if rows else {}
    return {
        "figure": "dqn_selfplay",
        "overrides": overrides,
        "completed": summary is not None,
        "error": None if summary is not None else err,
        "iterations": last.get("iteration"),
        "env_steps": last.get("env_steps"),
        "time_s": last.get("time_s"),
        "win_rate_vs_random": (summary or {}).get("final_win_rate_vs_random"),
        "best_win_rate_vs_random": (summary or {}).get("best_win_rate_vs_random"),
        "snapshots_held": last.get("snapshots"),
        "snapshots_evicted": last.get("snapshots_evicted"),
        "curve": [(r["time_s"], r["env_steps"], r["win_rate_vs_random"].get("main")) for r in rows if r["win_rate_vs_random"]][::5],
    }


def main() -> None:
    """Run the figures and print them as JSON lines."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=90.0, help="stop.time_s of each throughput run")
    parser.add_argument("--warmup-s", type=float, default=20.0)
    parser.add_argument("--envs", nargs="+", default=["tictactoe", "connect_four"])
    parser.add_argument("--dqn-minutes", type=float, default=10.0)
    parser.add_argument("--configs", nargs="+", default=list(MIXED_CONFIGS), choices=list(MIXED_CONFIGS),
                        help="which mixed_throughput configs to run (ratios need ppo_vs_ppo among them)")
    parser.add_argument("--repeats", type=int, default=1, help="run each env's configs this many times, alternating")
    parser.add_argument("--skip-mixed", action="store_true")
    parser.add_argument("--skip-dqn", action="store_true")
    parser.add_argument("--strength-seconds", type=float, default=0.0,
                        help="> 0: also train ppo_vs_dqn at each replay ratio this long on tic-tac-toe and play minimax")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench_composition_"))
    start = time.perf_counter()
    if not args.skip_mixed:
        for env in args.envs:
            runs: dict[str, list[dict[str, Any]]] = {name: [] for name in args.configs}
            for repeat in range(args.repeats):
                # Alternate the order between repeats so neither config always runs first.
                for name in args.configs if repeat % 2 == 0 else args.configs[::-1]:
                    figure = throughput(env, name, args.seconds, args.warmup_s, root / f"r{repeat}")
                    runs[name].append(figure)
                    print(json.dumps({**figure, "repeat": repeat}), flush=True)
            rates = {name: [f["env_steps_per_s"] for f in figures if f.get("env_steps_per_s")] for name, figures in runs.items()}
            ppo = rates.get("ppo_vs_ppo")
            for name in ("ppo_vs_dqn", "ppo_vs_dqn_intensity8"):
                mixed = rates.get(name)
                ratio = round(sum(mixed) / sum(ppo), 3) if mixed and ppo and len(mixed) == len(ppo) else None
                if name in rates:
                    print(json.dumps({"figure": "mixed_vs_ppo", "env": env, "config": name, "ratio": ratio, "target": TARGET_RATIO,
                                      "per_repeat": [round(m / p, 3) for m, p in zip(mixed or [], ppo or [])],
                                      "met": ratio is not None and ratio >= TARGET_RATIO}), flush=True)  # fmt: skip
            if runs.get("ppo_vs_dqn_intensity8"):
                print(json.dumps(dqn_learner_bound(env, runs["ppo_vs_dqn_intensity8"][0], training_intensity=8.0)), flush=True)
    if args.strength_seconds > 0:
        for env in args.envs:
            for name in ("ppo_vs_dqn", "ppo_vs_dqn_intensity8"):
                print(json.dumps(mixed_strength(env, name, args.strength_seconds, root)), flush=True)
    if not args.skip_dqn:
        print(json.dumps(dqn_selfplay(args.dqn_minutes, root)), flush=True)
    print(json.dumps({"figure": "bench_composition_wall_s", "seconds": round(time.perf_counter() - start, 1), "run_root": str(root)}))


if __name__ == "__main__":
    main()
