"""A sampler's cost as the league's pool grows, with and without matchups drawn in blocks.

Every policy in play is one forward pass per step, so a sampler whose episodes draw their
opponents one by one from a pool of N frozen snapshots runs about N passes per step. With
``sampler.matchup_draws: k`` every ``num_envs`` episodes play k matchups drawn for them
(:class:`~league.sampling.matchups.BlockedMatchups`), and a step runs about 2k passes.

One in-process :class:`~league.sampling.Sampler` as the default job builds it (the composed
``league-train`` config with the ``connect_four`` preset applied: connect four on the C++ core,
the mirrored conv PPO reading the threat planes, its ``num_envs`` x ``fragment_length``,
exploring starts), playing ``main``, the league's fixed members and N snapshots (the rest,
uniform) in the preset's shares (50% ``main``, 5% uniform random). For each N: ms per
fragment with every episode drawing its own matchup (the baseline, same run) and with
``--draws`` k, and the speedup. One JSON object per pool size.

    python benchmarks/bench_pool.py [--pools 1 5 10 15 20] [--draws 2] [--fragments 5]
"""

from __future__ import annotations

import argparse
import json
import os
import time

import torch

from league.algos import make_algorithm
from league.cli.train import composed_values
from league.envs.base import AgentSpec
from league.envs.factory import EnvFactory
from league.population.scripted import scripted_factory
from league.sampling import OpponentSampling, Sampler


def fragment_ms(cfg: dict, pool: int, draws: int, fragments: int) -> float:
    """Mean ms per ``sample()`` of one sampler with ``pool`` snapshots and ``matchup_draws=draws``."""
    spec = AgentSpec(obs_shape=(6, 7, 2), num_actions=7, has_action_mask=True)
    algo = make_algorithm(cfg["algo"]["name"], spec, cfg["algo"]["params"])
    snapshots = [f"main@v{i}" for i in range(pool)]
    league = cfg["league"]
    fixed = dict(league["fixed_opponents"])  # the league's scripted members and their shares, whichever they are
    share = (1.0 - league["self_play_prob"] - sum(fixed.values())) / pool
    opponents = {"main": league["self_play_prob"], **fixed, **dict.fromkeys(snapshots, share)}
    scripted = {pid: scripted_factory(pid, spec, league["negamax_depth"]) for pid in fixed}
    env = EnvFactory(cfg["env"]["name"], cfg["env"]["kwargs"], cfg["env"]["backend"], cfg["env"]["opening_plies"])
    sampler = Sampler(
        env, policies={"main": algo, **scripted, **dict.fromkeys(snapshots, algo)},
        frozen=(*fixed, *snapshots), matchups=OpponentSampling("main", opponents), num_envs=cfg["sampler"]["num_envs"],
        fragment_length=cfg["sampler"]["fragment_length"], seed=0, matchup_draws=draws,
    )  # fmt: skip
    weights = {k: v.numpy() for k, v in algo.make_model().state_dict().items()}
    sampler.set_weights(dict.fromkeys(["main", *snapshots], weights))
    sampler.sample()  # warm-up: episodes of every block in play, kernels built
    start = time.perf_counter()
    for _ in range(fragments):
        sampler.sample()
    return (time.perf_counter() - start) / fragments * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pools", type=int, nargs="+", default=[1, 5, 10, 15, 20], help="snapshots in the pool")
    parser.add_argument("--draws", type=int, default=2, help="sampler.matchup_draws measured against 0")
    parser.add_argument("--fragments", type=int, default=5, help="timed fragments per measurement")
    args = parser.parse_args()
    torch.set_num_threads(1)  # a sampler is a one-core worker
    cfg = composed_values([])
    steps = cfg["sampler"]["num_envs"] * cfg["sampler"]["fragment_length"]
    for pool in args.pools:
        ms = {draws: fragment_ms(cfg, pool, draws, args.fragments) for draws in (0, args.draws)}
        print(json.dumps({
            "bench": "pool", "figure": "fragment_ms", "env": cfg["env"]["name"], "snapshots": pool, "env_steps": steps,
            "draws": args.draws, "ms_each_episode_draws": round(ms[0], 1), "ms_blocked": round(ms[args.draws], 1),
            "speedup": round(ms[0] / ms[args.draws], 2), "cores": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2),
        }), flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
