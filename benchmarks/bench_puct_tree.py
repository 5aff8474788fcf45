"""The search trees in C++ against the pure-Python trees they replaced (issue 37), in the same run.

``--tree cpp`` is the search as shipped: :func:`league.search.puct.puct_visits` (the forest of
``csrc/search_tree.h``, ``league._core.PUCTForest``) and :func:`league.search.gumbel.gumbel_search`
(``csrc/gumbel_tree.h``, ``GumbelForest``); ``--tree python`` swaps in the old Python trees, kept
as the tests' oracles (``tests/puct_oracle.py``, ``tests/gumbel_oracle.py``: a ``_Node`` per
node, numpy selection per node, Python backup) wherever the search is called (``PUCTPlayer``,
``GumbelPlayer``, ``algo=alphazero``, PPO's search target). Each pair gives the same visits
(``tests/test_puct_forest.py``, ``tests/test_gumbel_forest.py``), so only the time differs.
``--search puct gumbel`` picks the searches. Figures, one JSON line each:

* ``alphazero_env_steps_per_s``: self-play env steps/s on 128 C++ tic-tac-toe boards of an
  AlphaZero policy (``algo.params.search``) of ``--speed-simulations`` simulations per move,
  and of PPO beside it (as ``bench_alphazero.speed``), in windows of ``--seconds`` taken in
  turn (PPO, each tree) for ``--rounds`` rounds; the best window of each is the figure, every
  window is listed;
* ``search_ms_per_move``: ms per move of ``PUCTPlayer`` or ``GumbelPlayer`` (an untrained PPO
  policy's prior and value head) at N simulations on random positions, ``--batch`` positions
  per call and 1 (``bench_search_play.policy_move_ms``), on connect four and hex 5x5.

Run it under ``nice -n 19`` with ``OMP_NUM_THREADS=1`` beside other work (each line records
the load average)::

    python benchmarks/bench_puct_tree.py [--search puct gumbel] [--tree python cpp] [--n 16 64 256] [--seconds 5 --rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

GAMES = (("connect_four", {}), ("openspiel:hex", {"board_size": 5}))


def _emit(**figure: Any) -> None:
    print(json.dumps({**figure, "cores": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2)}), flush=True)


@contextmanager
def search_tree(tree: str) -> Iterator[None]:
    """``cpp``: the searches as shipped; ``python``: the old Python trees wherever a search is called."""
    if tree == "cpp":
        yield
        return
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import gumbel_oracle
    import puct_oracle

    import league.search.alphazero as alphazero
    import league.search.gumbel as gumbel
    import league.search.puct as puct
    import league.search.targets as targets

    swaps = [(m, name, oracle) for name, oracle in (("puct_visits", puct_oracle.puct_visits), ("gumbel_search", gumbel_oracle.gumbel_search))
             for m in (puct, gumbel, alphazero, targets) if hasattr(m, name)]  # fmt: skip
    saved = [getattr(m, name) for m, name, _ in swaps]
    for m, name, oracle in swaps:
        setattr(m, name, oracle)
    try:
        yield
    finally:
        for (m, name, _), original in zip(swaps, saved):
            setattr(m, name, original)


def untrained_policy(env_name: str, env_kwargs: dict[str, Any]) -> Any:
    """A freshly initialised PPO policy for the env (the search's cost hardly depends on training)."""
    from league.algos import make_algorithm
    from league.cli.eval_games import describe_env

    spec, _, _ = describe_env(env_name, env_kwargs, 0)
    return make_algorithm("ppo", spec, {}).make_policy(seed=0, learns=False)


def interleaved_speed(trees: list[str], seconds: float, rounds: int, num_envs: int = 128, simulations: int = 16,
                      fragment_length: int = 8, search: str = "puct") -> dict[str, list[float]]:
    """Self-play env steps/s on ``num_envs`` C++ tic-tac-toe boards (as ``bench_alphazero.speed``):
    PPO, and AlphaZero of ``simulations`` per move with each tree, in windows of ``seconds``
    taken in turn for ``rounds`` rounds (a loaded machine slows them alike). Per config, each window's figure."""
    from league.algos import make_algorithm
    from league.envs.boards import BoardBatchedEnv
    from league.envs.factory import EnvFactory
    from league.sampling import Sampler
    from league.sampling.matchups import FixedMatchups
    from league.search import AlphaZero  # registers algo=alphazero

    assert AlphaZero.name == "alphazero"
    spec = BoardBatchedEnv("tictactoe", 1).agent_spec
    samplers = {}
    alphazero = {"model": "mlp", "num_simulations": simulations, "search": search}
    for name, params in (("ppo", {"model": "mlp"}), ("alphazero", alphazero)):
        samplers[name] = Sampler(
            EnvFactory("tictactoe", backend="cpp"), policies={"main": make_algorithm(name, spec, params)},
            matchups=FixedMatchups({"player_1": "main", "player_2": "main"}), num_envs=num_envs, fragment_length=fragment_length,
        )
        samplers[name].sample()  # warm-up
    configs = [("ppo", "cpp")] + [("alphazero", tree) for tree in trees]
    out: dict[str, list[float]] = {f"{name}_{tree}" if name == "alphazero" else name: [] for name, tree in configs}
    for _ in range(rounds):
        for name, tree in configs:
            with search_tree(tree):
                steps, start = 0, time.perf_counter()
                while time.perf_counter() - start < seconds:
                    steps += samplers[name].sample().env_steps
            out[f"{name}_{tree}" if name == "alphazero" else name].append(round(steps / (time.perf_counter() - start), 1))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", nargs="+", default=["python", "cpp"], choices=["python", "cpp"])
    parser.add_argument("--search", nargs="+", default=["puct", "gumbel"], choices=["puct", "gumbel"])
    parser.add_argument("--n", type=int, nargs="+", default=[16, 64, 256], help="simulations per move for ms_per_move")
    parser.add_argument("--batch", type=int, default=16, help="positions per call for ms_per_move")
    parser.add_argument("--positions", type=int, default=16, help="positions timed per figure")
    parser.add_argument("--seconds", type=float, default=5.0, help="seconds of sampling per env steps/s window")
    parser.add_argument("--speed-simulations", type=int, default=16)
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--skip-moves", action="store_true")
    parser.add_argument("--rounds", type=int, default=3, help="env steps/s windows per config, configs in turn (the best is reported)")
    args = parser.parse_args()

    from bench_search_play import policy_move_ms

    from league.search import simulator_for

    for search in args.search:
        if not args.skip_speed:
            windows = interleaved_speed(args.tree, args.seconds, args.rounds, simulations=args.speed_simulations, search=search)
            best = {config: max(figures) for config, figures in windows.items()}
            for tree in args.tree:
                _emit(figure="alphazero_env_steps_per_s", search=search, tree=tree, env="tictactoe", num_envs=128,
                      simulations=args.speed_simulations, alphazero=best[f"alphazero_{tree}"], ppo=best["ppo"],
                      slowdown=round(best["ppo"] / best[f"alphazero_{tree}"], 1), windows=windows[f"alphazero_{tree}"],
                      ppo_windows=windows["ppo"])
        for env_name, kwargs in [] if args.skip_moves else GAMES:
            policy, sim = untrained_policy(env_name, kwargs), simulator_for(env_name, kwargs)
            for n in args.n:
                for batch in (args.batch, 1):
                    for tree in args.tree:
                        with search_tree(tree):
                            ms = policy_move_ms(policy, sim, n, batch, positions=args.positions, method=search)
                        _emit(figure="search_ms_per_move", search=search, tree=tree, env=env_name, env_kwargs=kwargs, simulations=n,
                              batch=batch, ms_per_move=round(ms, 2))


if __name__ == "__main__":
    np.set_printoptions(precision=3)
    time.perf_counter()
    main()
