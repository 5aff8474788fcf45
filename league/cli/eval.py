"""``league-eval``: evaluation matches between a checkpoint's policies and fixed opponents.

::

    league-eval checkpoint=outputs/2025-01-01/12-00-00 opponents=[random,negamax] episodes=100

Arguments are ``key=value`` pairs (lists in brackets, as in Hydra overrides):

- ``checkpoint`` (required): a checkpoint directory, or a run directory (its latest one);
- ``opponents`` (default ``[random]``): ``random``; ``negamax`` (connect four, search depth
  ``depth``); ``minimax`` (tic-tac-toe); or any policy id stored in the checkpoint (a
  snapshot such as ``main@v3``, another learning policy);
- ``policies`` (default: the checkpoint's learning policies): who plays the opponents;
- ``episodes`` per pair (100), ``explore`` (false: every policy acts greedily, scripted
  players break ties by lowest action; true: policies sample, scripted players break
  ties at random), ``scripted_random_ties`` (false; true: scripted players break ties at
  random even when everyone else acts greedily: a greedy policy then meets a varied
  opponent), ``seed`` (0), ``num_envs`` (8), ``depth`` (4), ``output`` (a JSON file for
  the results, optional).

Games run in this process (no Ray) on a sampler's evaluation runner, seats drawn at
random per episode. The output is a table of wins/draws/losses per pair, with the win
rate counting a draw as half, and Elo ratings of every player from these games (K=32,
start 1200; the pairs' games are interleaved so no pair's games all count last).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from league.population.scripted import scripted_factory

if TYPE_CHECKING:
    from league.policy import PolicyFactory

__all__ = ["EvalArgs", "PairResult", "parse_args", "evaluate_checkpoint", "main"]


@dataclass
class EvalArgs:
    """Parsed ``league-eval`` arguments (see the module docstring)."""

    checkpoint: str = ""
    opponents: list[str] = field(default_factory=lambda: ["random"])
    policies: list[str] | None = None
    episodes: int = 100
    explore: bool = False
    seed: int = 0
    num_envs: int = 8
    depth: int = 4
    scripted_random_ties: bool = False
    output: str | None = None


@dataclass
class PairResult:
    """One policy's results against one opponent, from the policy's seat."""

    policy: str
    opponent: str
    wins: int
    draws: int
    losses: int

    @property
    def games(self) -> int:
        """Games played."""
        return self.wins + self.draws + self.losses

    @property
    def win_rate(self) -> float:
        """Share of games won, a draw counting half (0.0 without games)."""
        return (self.wins + 0.5 * self.draws) / self.games if self.games else 0.0


def parse_args(argv: Sequence[str]) -> EvalArgs:
    """``key=value`` arguments -> :class:`EvalArgs`; ValueError naming any bad key or value."""
    from omegaconf import OmegaConf

    known = {f.name for f in fields(EvalArgs)}
    for arg in argv:
        if "=" not in arg:
            raise ValueError(f"arguments are key=value pairs, got {arg!r} (keys: {sorted(known)})")
    try:
        values = OmegaConf.to_container(OmegaConf.from_dotlist(list(argv)))
    except Exception as err:  # OmegaConf's grammar errors have several types
        raise ValueError(f"cannot parse arguments {list(argv)}: {err}") from None
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"unknown argument(s) {unknown}; known: {sorted(known)}")
    args = EvalArgs(**values)
    if not args.checkpoint:
        raise ValueError("checkpoint=<checkpoint or run directory> is required")
    for name in ("opponents", "policies"):
        value = getattr(args, name)
        if isinstance(value, str):
            setattr(args, name, [value])
        elif value is not None and (not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value)):
            raise ValueError(f"{name} must be a non-empty list of names, got {value!r}")
    for name in ("episodes", "num_envs", "depth"):
        value = getattr(args, name)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    for name in ("explore", "scripted_random_ties"):
        if not isinstance(getattr(args, name), bool):
            raise ValueError(f"{name} must be true or false, got {getattr(args, name)!r}")
    return args


def _algorithm_params(config: dict[str, Any], policy_id: str) -> tuple[str, dict[str, Any]]:
    base = policy_id.split("@", 1)[0]  # a snapshot has its learning policy's algorithm
    policies = config.get("policies") or {}
    if policies:
        entry = policies[base]
        return entry["algo"], entry.get("params") or {}
    return config["algo"]["name"], config["algo"].get("params") or {}


def evaluate_checkpoint(
    checkpoint: str | Path,
    opponents: Sequence[str] = ("random",),
    policies: Sequence[str] | None = None,
    episodes: int = 100,
    explore: bool = False,
    seed: int = 0,
    num_envs: int = 8,
    depth: int = 4,
    scripted_random_ties: bool = False,
) -> tuple[list[PairResult], dict[str, float], dict[str, Any]]:
    """Play every (policy, opponent) pair; returns the results, Elo ratings and checkpoint info."""
    from league.algos import make_algorithm
    from league.checkpoint import find_checkpoint, read_checkpoint
    from league.envs import make_env
    from league.population.ratings import Elo, RatingTable
    from league.sampling import OpponentSampling, Sampler

    ckpt = read_checkpoint(find_checkpoint(checkpoint))
    env_cfg = ckpt.config.get("env") or {}
    env = make_env(env_cfg["name"], **(env_cfg.get("kwargs") or {}))
    try:
        spec = env.spec(env.possible_agents[0])
    finally:
        env.close()
    learning = list(ckpt.league.get("learning") or [])
    players = list(policies) if policies else learning
    unknown = [p for p in players if p not in ckpt.policies]
    if unknown:
        raise ValueError(f"policies {unknown} are not in the checkpoint; it holds {sorted(ckpt.policies)}")
    factories: dict[str, PolicyFactory] = {}
    for pid in dict.fromkeys([*players, *opponents]):
        if pid in ckpt.policies:
            name, params = _algorithm_params(ckpt.config, pid)
            factories[pid] = make_algorithm(name, spec, params)
        elif pid in ("random", "negamax", "minimax"):
            factories[pid] = scripted_factory(pid, spec, depth, scripted_random_ties)
        else:
            raise ValueError(f"unknown opponent '{pid}'; known: random, negamax, minimax, or a policy in the checkpoint {sorted(ckpt.policies)}")
    for pid in players:
        if pid in opponents:
            raise ValueError(f"policy '{pid}' cannot be its own opponent")
    sampler = Sampler(
        env_cfg["name"],
        env_cfg.get("kwargs") or {},
        policies=factories,
        matchups=OpponentSampling(players[0], {opponents[0]: 1.0}),
        num_envs=num_envs,
        fragment_length=1,
        seed=seed,
        frozen=tuple(factories),
    )
    sampler.set_weights({pid: ckpt.policies[pid] for pid in factories if pid in ckpt.policies})
    games: dict[tuple[str, str], list[str]] = {}
    for pid in players:
        for opp in opponents:
            stats = sampler.evaluate(episodes, OpponentSampling(pid, {opp: 1.0}), explore=explore)
            games[(pid, opp)] = [ep["outcome"][a] for ep in stats for a, p in ep["policies"].items() if p == pid]
    results = [PairResult(p, o, out.count("win"), out.count("draw"), out.count("loss")) for (p, o), out in games.items()]
    table = RatingTable(Elo())
    for step in range(max(len(out) for out in games.values())):
        for (p, o), out in games.items():
            if step < len(out):
                table.record(p, o, out[step], step)  # type: ignore[arg-type]
    elo = {pid: round(r.mu, 1) for pid, r in table.leaderboard()}
    info = {"checkpoint": str(ckpt.path), "iteration": ckpt.iteration, "env_steps": ckpt.env_steps, "env": env_cfg["name"]}
    return results, elo, info


def _print(results: list[PairResult], elo: dict[str, float], info: dict[str, Any], explore: bool, random_ties: bool = False) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    mode = ("sampling" if explore else "greedy") + (", scripted ties random" if random_ties and not explore else "")
    header = f"league-eval: {info['checkpoint']} (iteration {info['iteration']}, {info['env_steps']} env steps, {info['env']}, {mode})"
    console.print(header, soft_wrap=True, highlight=False, markup=False)
    table = Table()
    for column in ("policy", "opponent", "games", "wins", "draws", "losses", "win rate"):
        table.add_column(column, justify="left" if column in ("policy", "opponent") else "right")
    for r in results:
        table.add_row(r.policy, r.opponent, str(r.games), str(r.wins), str(r.draws), str(r.losses), f"{r.win_rate:.3f}")
    console.print(table)
    ratings = Table(title="Elo ratings", caption="K=32, start 1200")
    ratings.add_column("player")
    ratings.add_column("Elo", justify="right")
    for pid, value in elo.items():
        ratings.add_row(pid, f"{value:.1f}")
    console.print(ratings)


def main(argv: Sequence[str] | None = None) -> int:
    """Console-script entry point; returns the exit status (2 for bad arguments or checkpoints)."""
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
        results, elo, info = evaluate_checkpoint(
            args.checkpoint, args.opponents, args.policies, args.episodes, args.explore, args.seed, args.num_envs, args.depth,
            args.scripted_random_ties,
        )
    except ValueError as err:  # CheckpointError included
        print(f"league-eval: {err}", file=sys.stderr)
        return 2
    _print(results, elo, info, args.explore, args.scripted_random_ties)
    if args.output:
        payload = {**info, "args": asdict(args), "results": [{**asdict(r), "win_rate": r.win_rate} for r in results], "elo": elo}
        Path(args.output).write_text(json.dumps(payload, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
