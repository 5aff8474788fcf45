"""Search at play time (issue 37): a checkpoint's greedy policy against the same policy with
PUCT search of N simulations per move (``league-eval ... search=N``), and what a move costs.

For each checkpoint given and each N (N=0: the greedy policy itself, the baseline, same run),
``league-eval``'s own :func:`~league.cli.eval.evaluate_checkpoint` plays the opponents from
random openings of ``--opening-plies`` plies, each opening from both seats: on connect four
negamax at depths ``--depths`` (2 by default), on an OpenSpiel game the MCTS yardstick
(``opponents=[mcts]``: OpenSpiel's ``MCTSBot``, ``uct_c=2``, one random rollout per leaf,
solver on) of ``--mcts-simulations`` simulations. ``ms_per_move`` is the wall time of
``PUCTPlayer.act_at`` over positions of random games, divided by the positions: at
``--batch`` positions per call (games searched in lock-step, one forward pass per simulation
step over all of them) and at 1.

One JSON object per figure (``score``: wins plus half the draws, per game).

    python benchmarks/bench_search_play.py --connect-four RUN --openspiel RUN2 [--n 0 16 64] [--openings 50]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

import numpy as np


def _emit(**figure: Any) -> None:
    print(json.dumps({**figure, "cores": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2)}), flush=True)


def _policy(checkpoint: str) -> tuple[Any, dict[str, Any]]:
    """The checkpoint's first learning policy (greedy) and its env config."""
    from league.algos import make_algorithm
    from league.checkpoint import find_checkpoint, read_checkpoint
    from league.cli.eval import algorithm_params
    from league.cli.eval_games import describe_env

    ckpt = read_checkpoint(find_checkpoint(checkpoint))
    env_cfg = ckpt.config["env"]
    spec, _, _ = describe_env(env_cfg["name"], env_cfg.get("kwargs") or {}, 0)
    pid = ckpt.league["learning"][0]
    name, params = algorithm_params(ckpt.config, pid)
    policy = make_algorithm(name, spec, params).make_policy(seed=0, learns=False)
    policy.set_weights(dict(ckpt.policies[pid]))
    return policy, env_cfg


def move_ms(checkpoint: str, simulations: int, batch: int, positions: int = 64, seed: int = 0) -> float:
    """ms per move of the checkpoint's policy with ``simulations`` PUCT simulations, ``batch`` positions per call."""
    from league.search import simulator_for

    policy, env_cfg = _policy(checkpoint)
    return policy_move_ms(policy, simulator_for(env_cfg["name"], env_cfg.get("kwargs") or {}), simulations, batch, positions, seed)


def random_positions(sim: Any, positions: int, seed: int = 0) -> list[Any]:
    """``positions`` non-terminal positions of random games, 0-11 plies in."""
    from league.policy import masked_uniform_actions

    rng = np.random.default_rng(seed)
    states: list[Any] = []
    while len(states) < positions:
        state = sim.initial_state()
        for _ in range(int(rng.integers(0, 12))):
            sim.apply(state, int(masked_uniform_actions(sim.legal_mask(state)[None], rng)[0]))
            if sim.is_terminal(state):
                break
        if not sim.is_terminal(state):
            states.append(state)
    return states


def policy_move_ms(policy: Any, sim: Any, simulations: int, batch: int, positions: int = 64, seed: int = 0, method: str = "puct") -> float:
    """ms per move of ``policy`` with ``simulations`` simulations of search ``method`` (``puct``,
    ``gumbel``: ``SEARCH_PLAYERS``) on ``sim``'s random positions (:func:`random_positions`),
    ``batch`` positions per ``act_at`` call."""
    from league.search.player import SEARCH_PLAYERS

    states = random_positions(sim, positions, seed)
    player = SEARCH_PLAYERS.get(method, "method")(policy, sim, simulations, seed=seed)
    start = time.perf_counter()
    for i in range(0, positions, batch):
        chunk = states[i:i + batch]
        obs = np.stack([sim.observation(s) for s in chunk])
        masks = np.stack([sim.legal_mask(s) for s in chunk])
        player.act_at(chunk, obs, masks)
    return 1000 * (time.perf_counter() - start) / positions


def main() -> None:
    """Parse the arguments, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connect-four", help="a connect-four checkpoint or run directory")
    parser.add_argument("--openspiel", help="an openspiel:<game> checkpoint or run directory")
    parser.add_argument("--n", type=int, nargs="+", default=[0, 16, 64], help="simulations per move (0: no search)")
    parser.add_argument("--openings", type=int, default=50, help="openings, each played from both seats")
    parser.add_argument("--opening-plies", type=int, default=2)
    parser.add_argument("--depths", type=int, nargs="+", default=[2], help="negamax depths (connect four)")
    parser.add_argument("--mcts-simulations", type=int, nargs="+", default=[100], help="the MCTS yardstick's simulations")
    parser.add_argument("--batch", type=int, default=16, help="positions per call for ms_per_move")
    args = parser.parse_args()

    from league.cli.eval import evaluate_checkpoint

    jobs: list[tuple[str, str, list[str], dict[str, Any]]] = []
    if args.connect_four:
        jobs += [(args.connect_four, f"negamax{d}", ["negamax"], {"depth": d}) for d in args.depths]
    if args.openspiel:
        jobs += [(args.openspiel, f"mcts{m}", ["mcts"], {"mcts_simulations": m}) for m in args.mcts_simulations]
    for checkpoint, label, opponents, extra in jobs:
        for n in args.n:
            start = time.perf_counter()
            results, _, info = evaluate_checkpoint(
                checkpoint, opponents, episodes=2 * args.openings, opening_plies=args.opening_plies, num_envs=2 * args.openings,
                search=n, **extra,
            )
            r = results[0]
            _emit(figure="search_vs_yardstick", env=info["env"], checkpoint=info["checkpoint"], env_steps=info["env_steps"],
                  opponent=label, search=n, games=r.games, wins=r.wins, draws=r.draws, losses=r.losses, score=round(r.win_rate, 4),
                  seats=r.seats, opening_plies=args.opening_plies, wall_s=round(time.perf_counter() - start, 1))
    for checkpoint in filter(None, (args.connect_four, args.openspiel)):
        for n in args.n:
            if n == 0:
                continue
            for batch in (args.batch, 1):
                _emit(figure="search_ms_per_move", checkpoint=checkpoint, search=n, batch=batch,
                      ms_per_move=round(move_ms(checkpoint, n, batch, positions=max(16, args.batch)), 2))


if __name__ == "__main__":
    main()
