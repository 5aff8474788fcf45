"""``league-eval``: evaluation matches between a checkpoint's policies and fixed opponents.

::

    league-eval checkpoint=outputs/2025-01-01/12-00-00 opponents=[random,negamax] episodes=100
    league-eval checkpoint=... opponents=[negamax] opening_plies=2 tactics=true
    league-eval checkpoint=... opponents=[negamax,mcts] opening_plies=2 search=64 mcts_simulations=1000

Arguments are ``key=value`` pairs (lists in brackets, as in Hydra overrides):

- ``checkpoint`` (required): a checkpoint directory, or a run directory (its latest one);
- ``opponents`` (default ``[random]``): ``random``; ``negamax`` (connect four, search depth
  ``depth``); ``minimax`` (tic-tac-toe); ``mcts`` (below); any other scripted player, a mix of them
  (``holdem_styles``: each of its players in turn); or any policy id stored in the checkpoint (a
  snapshot such as ``main@v3``, another learning policy);
- ``policies`` (default: the checkpoint's learning policies): who plays the opponents;
- ``meta_strategy``, as a policy or an opponent: the league's meta-strategy, the mixture of
  its frozen players that a league with an exact meta-game solves (PSRO and the other
  coordinated recipes on kuhn_poker / leduc_poker; ``league.meta_strategy``), played as one
  behaviour strategy (:mod:`league.cli.eval_meta`); its weights are printed and saved;
- ``episodes`` per pair (100), ``explore`` (default: the checkpoint's run's ``eval.explore``,
  false unless its preset says otherwise; false: every policy acts greedily, scripted
  players break ties by lowest action; true: policies sample, scripted players break
  ties at random), ``scripted_random_ties`` (false; true: scripted players break ties at
  random even when everyone else acts greedily: a greedy policy then meets a varied
  opponent), ``seed`` (0), ``num_envs`` (8: games played at once), ``depth`` (4),
  ``output`` (a JSON file for the results, optional);
- ``opening_plies`` (0): every game starts after this many uniformly random legal moves
  (nobody's; an opening that ends the game is drawn again). With ``opening_plies > 0``
  (two-player turn-based envs only) each opening is played twice, once with the policy
  in each seat, so ``episodes`` (then even) is games in total: ``episodes / 2`` openings,
  the same ones for every pair (they depend on ``seed`` only);
- ``tactics`` (false): also score each evaluated policy (greedy; the policy itself, without
  ``search``) on every tactics test a game plug-in registers for the checkpoint's board
  (:mod:`league.population.tactics`; connect four's: 500 positions from random play where it
  can win at once, the immediate-win rate, and 500 where it must block a single threat, the
  block rate); an env without one is refused;
- ``search`` (0: off): each evaluated policy plays with PUCT search of this many simulations
  per move (:mod:`league.search.puct`: its action distribution the prior, its value head the
  leaf value, or a random rollout for a policy without one), on any env with a simulator
  (every perfect-information ``openspiel:<game>``, and the envs game plug-ins register:
  ``connect_four``, ``tictactoe``);
- ``exploitability`` (false): also the exact exploitability of each evaluated policy (the
  policy itself, without ``search``; ``meta_strategy`` too): what a best response gains a game
  against it, above the game's value, averaged over the seats; on every OpenSpiel game small
  enough to walk (kuhn_poker, leduc_poker, liars_dice...) and the envs whose game plug-in
  registers a measure (``leduc_holdem``, ``rps``); another env is refused;
- ``search_method`` (``puct``): the search ``search`` plays: ``puct``, or ``gumbel`` (Gumbel
  AlphaZero's sequential halving over the same prior and value, :mod:`league.search.gumbel`);
- ``mcts``, as an opponent, on the same envs: UCT with random rollouts (OpenSpiel's own
  ``MCTSBot``, ``uct_c=2``, one rollout per leaf, solver on, on OpenSpiel games;
  :mod:`league.search.mcts`) of ``mcts_simulations`` (1000) simulations per move.

Games run in this process (no Ray): with ``opening_plies=0`` (and no search, no ``mcts``)
on a sampler's evaluation runner, seats drawn at random per episode; otherwise with
:func:`league.population.yardstick.play_matches` (a search needs each game's position;
with ``opening_plies=0`` every game then starts from the initial position, half of them
from each seat, and ``episodes`` must be even). The output is a table of
wins/draws/losses per pair, in all and per seat (first player, second player: seat 0 is
the agent that acts first after ``reset``), with the win rate counting a draw as half,
and Elo ratings of every player from these games (K=32, start 1200; the pairs' games are
interleaved so no pair's games all count last). The ``output`` JSON has the same, each
result's ``seats`` listing per-seat counts (the agent of each seat under ``seats`` at the
top), under ``tactics`` each test's figures per policy and under ``exploitability`` each
policy's when asked for. ``league-eval --help`` prints this text.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from league.cli.eval_meta import META_STRATEGY, meta_strategy_player
from league.population.payoff import OUTCOMES, is_outcome
from league.population.scripted import SCRIPTED_PLAYERS, scripted_factory, scripted_members, scripted_player_names
from league.population.tactics import TACTICS, tactics_for

if TYPE_CHECKING:
    from league.learn.algorithm import Algorithm
    from league.policy import PolicyFactory

__all__ = ["EvalArgs", "PairResult", "algorithm_params", "parse_args", "evaluate_checkpoint", "main"]


@dataclass
class EvalArgs:
    """Parsed ``league-eval`` arguments (see the module docstring)."""

    checkpoint: str = ""
    opponents: list[str] = field(default_factory=lambda: ["random"])
    policies: list[str] | None = None
    episodes: int = 100
    explore: bool | None = None  # None: the checkpoint's eval.explore
    seed: int = 0
    num_envs: int = 8
    depth: int = 4
    scripted_random_ties: bool = False
    output: str | None = None
    opening_plies: int = 0
    tactics: bool = False
    search: int = 0
    search_method: str = "puct"
    mcts_simulations: int = 1000
    exploitability: bool = False


#: The opponent name of the MCTS yardstick (:mod:`league.search.mcts`).
MCTS = "mcts"


@dataclass
class PairResult:
    """One policy's results against one opponent, from the policy's seat; ``seats`` holds
    ``{"wins", "draws", "losses"}`` per seat (index 0: the first player); ``mean_return``: its
    mean return a game (None where the games were played as matches from openings). Where a
    game is won by whoever is left, as a poker hand, the return says what the win rate does
    not: against Hold'em's rule player the random player "wins" 44% of the hands and loses chips."""

    policy: str
    opponent: str
    wins: int
    draws: int
    losses: int
    seats: list[dict[str, int]] = field(default_factory=list)
    mean_return: float | None = None

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

    from league.config import config_dict

    known = {f.name for f in fields(EvalArgs)}
    for arg in argv:
        if "=" not in arg:
            raise ValueError(f"arguments are key=value pairs, got {arg!r} (keys: {sorted(known)}; league-eval --help describes them)")
    try:
        values = config_dict(OmegaConf.to_container(OmegaConf.from_dotlist(list(argv))), "the arguments")
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
    # A scripted mix (a run's yardstick) is played as its players, each with its own figures.
    args.opponents = list(dict.fromkeys(m for o in args.opponents for m in scripted_members(o)))
    for name, low in (("episodes", 1), ("num_envs", 1), ("depth", 1), ("opening_plies", 0), ("search", 0), ("mcts_simulations", 1)):
        value = getattr(args, name)
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    for name in ("explore", "scripted_random_ties", "tactics", "exploitability"):
        if not isinstance(getattr(args, name), bool) and not (name == "explore" and args.explore is None):
            raise ValueError(f"{name} must be true or false, got {getattr(args, name)!r}")
    from league.search import SEARCH_PLAYERS

    SEARCH_PLAYERS.get(args.search_method, "search_method")  # refused, with the known names, before any game
    if args.opening_plies and args.episodes % 2:
        raise ValueError(f"with opening_plies > 0 each opening is played from both seats: episodes must be even, got {args.episodes}")
    if (args.search or MCTS in args.opponents) and args.episodes % 2:
        raise ValueError(f"with search or an {MCTS} opponent every opening is played from both seats: episodes must be even, "
                         f"got {args.episodes}")
    return args


def algorithm_params(config: dict[str, Any], policy_id: str) -> tuple[str, dict[str, Any]]:
    """The algorithm name and params a checkpoint's config gives policy ``policy_id`` (a snapshot
    ``pid@vN`` has its learning policy's; a ``policies:`` entry wins over ``algo``)."""
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
    explore: bool | None = None,
    seed: int = 0,
    num_envs: int = 8,
    depth: int = 4,
    scripted_random_ties: bool = False,
    opening_plies: int = 0,
    tactics: bool = False,
    search: int = 0,
    mcts_simulations: int = 1000,
    search_method: str = "puct",
    exploitability: bool = False,
) -> tuple[list[PairResult], dict[str, float], dict[str, Any]]:
    """Play every (policy, opponent) pair; returns the results, Elo ratings and checkpoint
    info (with ``seats``: the agent of each seat, ``turn_based``: whether it is a two-player
    turn-based game, and ``tactics`` when asked for). ``search``: the policies play with a
    search (``search_method``: ``puct`` or ``gumbel``) of that many simulations;
    ``mcts_simulations``: the ``mcts`` opponent's. ``explore``: policies sample their actions
    (None: as the checkpoint's run evaluated, its ``eval.explore``; ``info["explore"]`` says which).
    ``exploitability``: ``info["exploitability"]`` holds each policy's exact exploitability."""
    from league.algos import make_algorithm
    from league.checkpoint import find_checkpoint, read_checkpoint
    from league.cli import eval_games
    from league.leagues.builder import exploitability_measure
    from league.population.ratings import Elo, RatingTable
    from league.search import MCTSFactory, SearchFactory, simulator_for
    from league.search.player import check_simulations

    check_simulations(search)
    ckpt = read_checkpoint(find_checkpoint(checkpoint))
    env_cfg = ckpt.config.get("env") or {}
    if explore is None:
        explore = bool((ckpt.config.get("eval") or {}).get("explore", False))
    env_kwargs = env_cfg.get("kwargs") or {}
    spec, order, turn_based = eval_games.describe_env(env_cfg["name"], env_kwargs, seed)
    if opening_plies and not turn_based:
        raise ValueError(f"opening_plies needs a two-player turn-based env; {env_cfg['name']!r} has agents {order}, not one acting at a time")
    tactics_tests = tactics_for(spec, env_cfg["name"]) if tactics else {}
    measure = exploitability_measure(env_cfg["name"], env_kwargs) if exploitability else None  # refused before any game
    learning = list(ckpt.league.get("learning") or [])
    players = list(policies) if policies else learning
    unknown = [p for p in players if p not in ckpt.policies and p != META_STRATEGY]
    if unknown:
        raise ValueError(f"policies {unknown} are not in the checkpoint; it holds {sorted(ckpt.policies)} (or name {META_STRATEGY})")

    def algorithm(pid: str) -> Algorithm:
        name, params = algorithm_params(ckpt.config, pid)
        return make_algorithm(name, spec, params)

    factories: dict[str, PolicyFactory] = {}
    mixture: dict[str, float] | None = None
    for pid in dict.fromkeys([*players, *opponents]):
        if pid in ckpt.policies:
            factories[pid] = algorithm(pid)
        elif pid == META_STRATEGY:
            factories[pid], mixture = meta_strategy_player(ckpt, {lid: algorithm(lid) for lid in learning})
        elif pid == MCTS:
            factories[pid] = MCTSFactory(simulator_for(env_cfg["name"], env_kwargs, setting="opponents"), mcts_simulations)
        elif pid == "random" or pid in SCRIPTED_PLAYERS:
            factories[pid] = scripted_factory(pid, spec, depth, scripted_random_ties, setting="opponents")
        else:
            raise ValueError(f"unknown opponent '{pid}'; known: {', '.join(scripted_player_names())}, {MCTS}, {META_STRATEGY}, or a "
                             "policy in the "
                             f"checkpoint {sorted(ckpt.policies)}")
    for pid in players:
        if pid in opponents:
            raise ValueError(f"policy '{pid}' cannot be its own opponent")
    weights = {pid: ckpt.policies[pid] for pid in factories if pid in ckpt.policies}
    plain = dict(factories)  # what tactics score: the policies themselves
    if search:
        simulator = simulator_for(env_cfg["name"], env_kwargs, setting="search")
        factories.update({pid: SearchFactory(factories[pid], simulator, search, search_method) for pid in players})
    if opening_plies or search or MCTS in factories:
        if not turn_based:
            raise ValueError(f"search and {MCTS} need a two-player turn-based env; {env_cfg['name']!r} has agents {order}")
        games = eval_games.match_outcomes(env_cfg, factories, weights, players, opponents, episodes, opening_plies, explore, seed, num_envs)
    else:
        games = eval_games.sampler_outcomes(env_cfg, factories, weights, players, opponents, order, episodes, explore, seed, num_envs)
    results = []
    for (p, o), out in games.items():
        seats = [{k: sum(1 for s, r, _ in out if s == seat and r == outcome) for k, outcome in _COUNTS} for seat in range(len(order))]
        wins, draws, losses = (sum(seat[k] for seat in seats) for k, _ in _COUNTS)
        returns = [r for _, _, r in out if r is not None]
        mean_return = round(sum(returns) / len(returns), 5) if returns else None
        results.append(PairResult(p, o, wins, draws, losses, seats=seats, mean_return=mean_return))
    table = RatingTable(Elo())
    for step in range(max(len(out) for out in games.values())):
        for (p, o), out in games.items():
            if step < len(out):
                outcome = out[step][1]
                if not is_outcome(outcome):
                    raise ValueError(f"game {step} of {p} against {o}: outcome must be one of {OUTCOMES}, got {outcome!r}")
                table.record(p, o, outcome, step)
    elo = {pid: round(r.mu, 1) for pid, r in table.leaderboard()}
    info: dict[str, Any] = {
        "checkpoint": str(ckpt.path), "iteration": ckpt.iteration, "env_steps": ckpt.env_steps, "env": env_cfg["name"], "seats": order,
        "turn_based": turn_based, "explore": explore,
    }
    if mixture is not None:
        info["meta_strategy"] = mixture
    if tactics:
        info["tactics"] = eval_games.tactics(tactics_tests, plain, weights, players, seed)
    if measure is not None:
        info["exploitability"] = {pid: round(measure.exploitability(plain[pid], weights.get(pid, {})), 6) for pid in players}
    return results, elo, info


_COUNTS = (("wins", "win"), ("draws", "draw"), ("losses", "loss"))


def _seat_names(info: dict[str, Any]) -> list[str]:
    """Column names of the seats: first and second player, else the agents (simultaneous moves)."""
    return ["1st", "2nd"] if info.get("turn_based") else list(info.get("seats") or [])


def _cell_width(column: str, rows: list[list[str]], i: int) -> int:
    """Characters column ``i`` takes without cutting a value: its values and its header's longest word."""
    return max([len(row[i]) for row in rows] + [len(w) for w in column.split()])


def _table(columns: list[str], rows: list[list[str]], caption: str | None, wrap: bool = False) -> Any:
    """A rich table of ``rows`` under ``columns`` with every value in full (names left, figures
    right); ``wrap``: each column exactly as wide as its values, its header wrapped onto lines."""
    from rich.table import Table

    table = Table(caption=caption)
    for i, column in enumerate(columns):
        width = _cell_width(column, rows, i)
        left = column in ("policy", "opponent")
        table.add_column(column, justify="left" if left else "right", no_wrap=left, min_width=width,
                         width=width if wrap else None)  # fmt: skip
    for row in rows:
        table.add_row(*row)
    return table


def _column_groups(columns: list[str], rows: list[list[str]], width: int, keys: int = 2) -> list[list[int]]:
    """Column indices per table so that each fits ``width`` characters: every column in one table
    where it fits with headers wrapped, else the first ``keys`` columns (the pair) in every table
    and the others in order, as many as fit.

    Rich does not shrink a column below its values (``_table``), so a table wider than the
    console was cut at its edge: three seats' results at 80 columns lost their last columns.
    """
    cell = [3 + _cell_width(c, rows, i) for i, c in enumerate(columns)]  # padding and border
    if 1 + sum(cell) <= width:
        return [list(range(len(columns)))]
    base = 1 + sum(cell[:keys])
    groups: list[list[int]] = []
    for i in range(keys, len(columns)):
        if groups and base + sum(cell[j] for j in groups[-1][keys:]) + cell[i] <= width:
            groups[-1].append(i)
        else:
            groups.append([*range(keys), i])
    return groups


def _print(
    results: list[PairResult], elo: dict[str, float], info: dict[str, Any], explore: bool, random_ties: bool = False,
    opening_plies: int = 0, search: int = 0, mcts_simulations: int = 0, search_method: str = "puct",
) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    mode = ("sampling" if explore else "greedy") + (", scripted ties random" if random_ties and not explore else "")
    if opening_plies:
        mode += f", openings of {opening_plies} random plies"
    if search:
        mode += f", search={search}" + (f" ({search_method})" if search_method != "puct" else "")
    if any(r.opponent == MCTS for r in results):
        mode += f", {MCTS} of {mcts_simulations} simulations"
    header = f"league-eval: {info['checkpoint']} (iteration {info['iteration']}, {info['env_steps']} env steps, {info['env']}, {mode})"
    console.print(header, soft_wrap=True, highlight=False, markup=False)
    seats = _seat_names(info)
    caption = "1st/2nd: wins/draws/losses with the policy as the first/second player" if info.get("turn_based") else None
    returns = any(r.mean_return is not None for r in results)
    columns = ["policy", "opponent", "games", "wins", "draws", "losses", "win rate", *(["mean return"] if returns else []),
               *(f"{seat} W/D/L" for seat in seats)]  # fmt: skip
    rows = [
        [r.policy, r.opponent, str(r.games), str(r.wins), str(r.draws), str(r.losses), f"{r.win_rate:.3f}",
         *(["-" if r.mean_return is None else f"{r.mean_return:.3f}"] if returns else []),
         *(f"{s['wins']}/{s['draws']}/{s['losses']}" for s in r.seats)]
        for r in results
    ]  # fmt: skip
    groups = _column_groups(columns, rows, console.width)
    for part in groups:
        console.print(_table([columns[i] for i in part], [[row[i] for i in part] for row in rows], caption, wrap=len(groups) > 1))
    ratings = Table(title="Elo ratings", caption="K=32, start 1200")
    ratings.add_column("player")
    ratings.add_column("Elo", justify="right")
    for pid, value in elo.items():
        ratings.add_row(pid, f"{value:.1f}")
    console.print(ratings)
    if "meta_strategy" in info:
        weights = ", ".join(f"{pid} {w:.3f}" for pid, w in info["meta_strategy"].items() if w > 0)
        console.print(f"{META_STRATEGY}: {weights}", soft_wrap=True, highlight=False, markup=False)
    if "exploitability" in info:
        figures = ", ".join(f"{pid} {value:.4f}" for pid, value in info["exploitability"].items())
        console.print(f"exploitability (a best response's gain a game): {figures}", soft_wrap=True, highlight=False, markup=False)
    for name, figures in info.get("tactics", {}).items():
        test = TACTICS.get(name, "tactics")
        cells = {pid: test.cells(f) for pid, f in figures.items()}
        tactics = Table(title=test.title)
        for column in ["policy", *next(iter(cells.values()), {})]:
            tactics.add_column(column, justify="left" if column == "policy" else "right")
        for pid, row in cells.items():
            tactics.add_row(pid, *row.values())
        console.print(tactics)


def main(argv: Sequence[str] | None = None) -> int:
    """Console-script entry point; returns the exit status (2 for bad arguments or checkpoints)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if any(arg in ("-h", "--help") for arg in argv):
        print(__doc__)
        return 0
    try:
        args = parse_args(argv)
        results, elo, info = evaluate_checkpoint(
            args.checkpoint, args.opponents, args.policies, args.episodes, args.explore, args.seed, args.num_envs, args.depth,
            args.scripted_random_ties, args.opening_plies, args.tactics, args.search, args.mcts_simulations, args.search_method,
            args.exploitability,
        )
    except ValueError as err:  # CheckpointError included
        print(f"league-eval: {err}", file=sys.stderr)
        return 2
    _print(results, elo, info, info["explore"], args.scripted_random_ties, args.opening_plies, args.search, args.mcts_simulations,
           args.search_method)
    if args.output:
        payload = {**info, "args": asdict(args), "results": [{**asdict(r), "win_rate": r.win_rate} for r in results], "elo": elo}
        Path(args.output).write_text(json.dumps(payload, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
