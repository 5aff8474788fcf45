"""Board games in C++ (league.envs.boards) vs numpy vs PettingZoo, and the batched sampler;
Leduc poker in C++ vs OpenSpiel through the adapter.

Figures (one JSON object per line, each with ``cores`` and ``load_avg_1m``: figures taken
while other processes load the machine say so there):

* ``env_only``: random legal moves on one core, for tic-tac-toe and connect four:
  ``cpp`` (``BoardBatchedEnv``, N copies per call), ``numpy`` (a batched numpy
  implementation written here, the issue's reference design: boards ``[N, cells]``,
  vectorised win check over every line, the same float32 observation planes, int8 masks
  and auto-reset) and ``pettingzoo`` (one env through the project's adapter, ``make_env``).
  Actions of the batched ones come from the same vectorised random-legal-move draw
  (``masked_uniform_actions``), counted in the time. ``speedup_vs_numpy`` pairs each cpp
  round with the numpy round run right after it (median over rounds); target >= 5 on
  connect four.
* ``sampler``: ``Sampler.sample()`` on one core, PPO's MLP policy (configs/algo/ppo.yaml)
  on both seats (self-play, both recorded), on the cpp backend (``BatchedRunner``) with
  ``postprocess_segments`` (PPO's own: GAE over all chunks at once, ``segment_gae``) and
  with per-chunk postprocessing (a benchmark wrapper that hides it), and the
  PettingZoo backend (the same ``BatchedRunner`` over ``VectorizedEnv``: N PettingZoo
  copies behind the batched contract) for reference. Target: >= 200k env steps/s
  on connect four.

* ``sampler_time_split``: where league-train's samplers (32 envs x 64 steps, the sampler
  default, and 128 x 32, what the board games' env files use; connect four, cpp backend)
  spend their time, by cProfile: the C++ env step, policy
  forwards, GAE, and the rest (row bookkeeping, batch assembly).

* ``poker_env_only``: random legal moves in leduc poker on one core, ``cpp`` (N copies per
  call, deals drawn in C++) against ``openspiel`` (one OpenSpiel game through the
  project's adapter, ``make_env(..., backend="pettingzoo")``); and ``sampler`` rows for
  leduc on both backends, at env=leduc_poker's 256 copies x 8 moves (cpp) and the sampler
  default 32 x 64 (both).

Usage: ``python benchmarks/bench_boards.py [--seconds 1.0] [--rounds 3] [--quick]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable

import numpy as np

from league.envs import make_env
from league.envs.boards import BoardBatchedEnv
from league.envs.factory import EnvFactory
from league.policy import masked_uniform_actions


def _context() -> dict:
    return {"cores": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2)}


def _rate(step: Callable[[], int], seconds: float) -> tuple[float, float]:
    """(steps per wall second, steps per CPU second) of ``step`` run for about ``seconds``."""
    step()  # warm-up
    steps, t0, c0 = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - t0 < seconds:
        steps += step()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return steps / wall, steps / max(cpu, 1e-9)


# ----------------------------------------------------------------------------- numpy games
class NumpyBoards:
    """Batched tic-tac-toe / connect four in numpy with the C++ games' outputs."""

    def __init__(self, game: str, n: int) -> None:
        self.game, self.n = game, n
        if game == "tictactoe":
            self.rows, self.cols, self.actions = 3, 3, 9
            lines = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]
        else:
            self.rows, self.cols, self.actions = 6, 7, 7
            lines = []
            for r in range(6):
                for c in range(7):
                    for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
                        cells = [(r + k * dr, c + k * dc) for k in range(4)]
                        if all(0 <= rr < 6 and 0 <= cc < 7 for rr, cc in cells):
                            lines.append(tuple(rr * 7 + cc for rr, cc in cells))
        self.lines = np.array(lines)
        self.cells = self.rows * self.cols
        self.board = np.zeros((n, self.cells), np.int8)
        self.heights = np.zeros((n, self.cols), np.int64)
        self.player = np.zeros(n, np.int8)
        self.moves = np.zeros(n, np.int64)
        self.idx = np.arange(n)

    def observe(self) -> tuple[np.ndarray, np.ndarray]:
        """Float32 planes of the player to move and int8 masks."""
        mine = (self.player + 1)[:, None]
        obs = np.stack([self.board == mine, (self.board != 0) & (self.board != mine)], axis=-1)
        obs = obs.astype(np.float32).reshape(self.n, self.rows, self.cols, 2)
        mask = (self.board == 0) if self.game == "tictactoe" else (self.heights < self.rows)
        return obs, mask.astype(np.int8)

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """One move per copy; returns obs, mask, rewards [N, 2], done."""
        piece = self.player + 1
        if self.game == "tictactoe":
            cell = actions
        else:
            cell = (self.rows - 1 - self.heights[self.idx, actions]) * self.cols + actions
            self.heights[self.idx, actions] += 1
        self.board[self.idx, cell] = piece
        self.moves += 1
        win = (self.board[:, self.lines] == piece[:, None, None]).all(axis=2).any(axis=1)
        done = win | (self.moves == self.cells)
        rewards = np.zeros((self.n, 2), np.float32)
        rewards[self.idx[win], self.player[win]] = 1.0
        rewards[self.idx[win], 1 - self.player[win]] = -1.0
        self.player = 1 - self.player
        if done.any():
            self.board[done] = 0
            self.heights[done] = 0
            self.player[done] = 0
            self.moves[done] = 0
        obs, mask = self.observe()
        return obs, mask, rewards, done


def adapter_stepper(game: str, rng: np.random.Generator) -> Callable[[], int]:
    """One random legal move at a time in one copy of ``game`` through the project's adapter
    (``make_env(..., backend="pettingzoo")``), restarting finished games; returns 1 a call."""
    env = make_env(game, backend="pettingzoo")
    state = [env.reset(seed=0)]

    def step() -> int:
        ts = state[0]
        (agent,) = ts.obs
        ts = env.step({agent: int(masked_uniform_actions(ts.masks[agent][None], rng)[0])})
        state[0] = env.reset() if ts.done else ts
        return 1

    return step


def env_only(game: str, n: int, seconds: float, rounds: int) -> list[dict]:
    """cpp vs numpy (paired rounds) vs PettingZoo through the adapter."""
    rng = np.random.default_rng(0)
    cpp = BoardBatchedEnv(game, n)
    masks = [cpp.reset().masks]

    def cpp_step() -> int:  # moves drawn in C++ (BoardBatchedEnv.random_actions)
        cpp.step(cpp.random_actions())
        return n

    def cpp_numpy_draw_step() -> int:  # moves drawn as for numpy: the same harness cost
        masks[0] = cpp.step(masked_uniform_actions(masks[0], rng)).masks
        return n

    npy = NumpyBoards(game, n)
    np_mask = [npy.observe()[1]]

    def numpy_step() -> int:
        np_mask[0] = npy.step(masked_uniform_actions(np_mask[0], rng))[1]
        return n

    pz_step = adapter_stepper(game, rng)

    results, ratios, same_draw = {"cpp": [], "cpp_numpy_draw": [], "numpy": [], "pettingzoo": []}, [], []
    for _ in range(rounds):
        c, n_ = _rate(cpp_step, seconds), _rate(numpy_step, seconds)
        results["cpp"].append(c)
        results["numpy"].append(n_)
        ratios.append(c[0] / n_[0])
        results["cpp_numpy_draw"].append(_rate(cpp_numpy_draw_step, seconds))
        same_draw.append(results["cpp_numpy_draw"][-1][0] / n_[0])
        results["pettingzoo"].append(_rate(pz_step, seconds))
    out = []
    for impl, rates in results.items():
        row = {"figure": "env_only", "game": game, "impl": impl, "num_envs": 1 if impl == "pettingzoo" else n,
               "steps_per_s": round(statistics.median(r[0] for r in rates)),
               "steps_per_cpu_s": round(statistics.median(r[1] for r in rates))}
        if impl == "cpp_numpy_draw":
            row["speedup_vs_numpy"] = round(statistics.median(same_draw), 2)
        if impl == "cpp":
            row["speedup_vs_numpy"] = round(statistics.median(ratios), 2)
            row["speedup_vs_pettingzoo"] = round(row["steps_per_s"] / statistics.median(r[0] for r in results["pettingzoo"]), 1)
            row["target_speedup_vs_numpy"] = 5.0 if game == "connect_four" else None
        out.append({**row, **_context()})
    return out


def poker_env_only(n: int, seconds: float, rounds: int) -> list[dict]:
    """Leduc poker: the C++ batch vs OpenSpiel's game through the adapter, random legal moves."""
    rng = np.random.default_rng(0)
    cpp = BoardBatchedEnv("leduc_poker", n, seed=0)
    cpp.reset()

    def cpp_step() -> int:
        cpp.step(cpp.random_actions())
        return n

    adapter_step = adapter_stepper("leduc_poker", rng)

    rates = {"cpp": [], "openspiel": []}
    for _ in range(rounds):
        rates["cpp"].append(_rate(cpp_step, seconds))
        rates["openspiel"].append(_rate(adapter_step, seconds))
    medians = {impl: statistics.median(r[0] for r in rs) for impl, rs in rates.items()}
    return [
        {"figure": "poker_env_only", "game": "leduc_poker", "impl": impl, "num_envs": n if impl == "cpp" else 1,
         "steps_per_s": round(medians[impl]), "steps_per_cpu_s": round(statistics.median(r[1] for r in rates[impl])),
         **({"speedup_vs_openspiel": round(medians["cpp"] / medians["openspiel"], 1)} if impl == "cpp" else {}),
         **_context()}
        for impl in rates
    ]


# -------------------------------------------------------------------------------- sampler
class PerChunkGAE:
    """PPO's factory without ``postprocess_segments``: GAE chunk by chunk (``postprocess_trajectory``),
    the path factories without the batched method take."""

    def __init__(self, factory) -> None:
        self.factory = factory

    def __getattr__(self, name):
        if name in ("postprocess_segments", "factory"):
            raise AttributeError(name)
        return getattr(self.factory, name)

    def make_policy(self, seed=None, learns=True):
        """PPO's sampler policy."""
        return self.factory.make_policy(seed=seed, learns=learns)

    def postprocess_trajectory(self, traj, next_step):
        """PPO's GAE columns for one chunk."""
        return self.factory.postprocess_trajectory(traj, next_step)


def sampler(game: str, backend: str, segments: bool, num_envs: int, fragment: int, seconds: float) -> dict:
    """Env steps/s of ``Sampler.sample()`` on one core."""
    import torch

    from league.algos import make_algorithm
    from league.policy import RandomPolicyFactory
    from league.sampling import FixedMatchups, Sampler

    torch.set_num_threads(1)
    env = make_env(game, backend="pettingzoo")
    ppo = make_algorithm("ppo", env.spec(env.possible_agents[0]), {"model": "mlp"})
    factory = ppo if segments else PerChunkGAE(ppo)
    s = Sampler(EnvFactory(game, backend=backend), policies={"main": factory, "random": RandomPolicyFactory()},
                frozen=("random",), matchups=FixedMatchups({a: "main" for a in env.possible_agents}), num_envs=num_envs,
                fragment_length=fragment, seed=0)
    rate, per_cpu = _rate(lambda: s.sample().env_steps, seconds)
    return {"figure": "sampler", "game": game, "backend": backend, "postprocess": "segments" if segments else "per_chunk",
            "num_envs": num_envs, "fragment_length": fragment, "env_steps_per_s": round(rate),
            "env_steps_per_cpu_s": round(per_cpu), "target_env_steps_per_s": 200_000 if game == "connect_four" else None,
            **_context()}


def time_split(game: str, num_envs: int, fragment: int, seconds: float) -> dict:
    """Where a sampler's time goes on the cpp backend (cProfile of ``Sampler.sample()``, one core):
    the env step (C++), policy forwards, GAE and the rest (row bookkeeping, batch assembly)."""
    import cProfile
    import pstats

    import torch

    from league.algos import make_algorithm
    from league.sampling import FixedMatchups, Sampler

    torch.set_num_threads(1)
    env = make_env(game, backend="pettingzoo")
    ppo = make_algorithm("ppo", env.spec(env.possible_agents[0]), {"model": "mlp"})
    s = Sampler(EnvFactory(game, backend="cpp"), policies={"main": ppo},
                matchups=FixedMatchups({a: "main" for a in env.possible_agents}), num_envs=num_envs,
                fragment_length=fragment, seed=0)
    s.sample()
    profile, steps, t0 = cProfile.Profile(), 0, time.perf_counter()
    profile.enable()
    while time.perf_counter() - t0 < seconds:
        steps += s.sample().env_steps
    profile.disable()
    wall = time.perf_counter() - t0
    stats = pstats.Stats(profile).stats  # (file, line, name) -> (calls, ncalls, tottime, cumtime, callers)

    def cumulative(name: str, module: str) -> float:
        return sum(v[3] for k, v in stats.items() if k[2] == name and module in k[0])

    parts = {"env_step": cumulative("step", "boards.py"), "policy_forward": cumulative("compute_actions", "versioning.py"),
             "gae": cumulative("postprocess_segments", "actor_critic.py")}
    total = sum(v[2] for v in stats.values())
    parts["bookkeeping_and_rest"] = max(total - sum(parts.values()), 0.0)
    return {"figure": "sampler_time_split", "game": game, "num_envs": num_envs, "fragment_length": fragment,
            "env_steps_per_s_profiled": round(steps / wall),
            **{f"share_{k}": round(v / total, 3) for k, v in parts.items()}, **_context()}


def main() -> None:
    """Print every figure as a JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="fewer configurations")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    for game in ("connect_four", "tictactoe"):
        for row in env_only(game, 1024, args.seconds, args.rounds):
            print(json.dumps(row), flush=True)
    grid = [(256, 64)] if args.quick else [(128, 64), (256, 64), (512, 32)]
    for game in ("connect_four", "tictactoe"):
        for num_envs, fragment in grid:
            for segments in (True, False):
                print(json.dumps(sampler(game, "cpp", segments, num_envs, fragment, args.seconds * 2)), flush=True)
        print(json.dumps(sampler(game, "pettingzoo", False, 16, 64, args.seconds * 2)), flush=True)
    for row in poker_env_only(1024, args.seconds, args.rounds):
        print(json.dumps(row), flush=True)
    for backend, num_envs, fragment in (("cpp", 256, 8), ("cpp", 32, 64), ("pettingzoo", 32, 64)):
        print(json.dumps(sampler("leduc_poker", backend, True, num_envs, fragment, args.seconds * 2)), flush=True)
    # configs/sampler/default.yaml (32 envs x 64 steps) and the board games' env files (128 x 32)
    for num_envs, fragment in ((32, 64), (128, 32)):
        print(json.dumps(sampler("connect_four", "cpp", True, num_envs, fragment, args.seconds * 2)), flush=True)
        print(json.dumps(time_split("connect_four", num_envs, fragment, args.seconds * 3)), flush=True)


if __name__ == "__main__":
    main()
