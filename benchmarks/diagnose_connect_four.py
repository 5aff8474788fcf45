"""Why a connect-four checkpoint misses tactics: where, how confidently, and what its value knows.

Reads one checkpoint's first learning policy (greedy, as ``bench_strength`` measures it) and
collects positions from uniformly random play (the adapter's observations: plane 0 the
mover's pieces, plane 1 the opponent's; row 5 the bottom). Prints one JSON object per figure:

* ``wins_by_line``: immediate wins taken, by the line the winning move completes
  (vertical, horizontal, diagonal, or several at once);
* ``win_probability``: the probability the policy puts on the winning columns (quantiles);
* ``win_or_block``: where the mover can win and the opponent threatens too, how often
  it wins, blocks, or does neither;
* ``value_by_position``: the value head on positions where the mover can win now, where
  only the opponent threatens, and where neither can (quantiles);
* ``lookahead``: the raw greedy policy against short searches of its own value
  (:class:`ValueLookahead`: an immediate win is taken; at one ply any other move scores
  minus the value of the position it leaves the opponent, at two plies its worst reply),
  alone and with the policy's log-probability as a prior, all scored against negamax
  depths 2 and 3 from varied openings and on the tactics yardstick. If a lookahead is no
  stronger, the value knows no more than the policy, and distilling such a search into the
  policy would not teach it anything;
* ``endgame_oracle``: the policy as it is until at most N empty cells are left, the game's exact
  best moves from there on (:class:`EndgameOracle`; N = 16, 20, 24), against negamax depths 2
  and 3 from the same openings: what the best endgame play could add, so how many games are
  already lost (or drawn) when N cells are left, in the middle game;
* ``losing_moves``: the policy's own moves in those games against negamax, read by the C++
  core's exact search (wins and losses only) at horizons of 2, 4, 6, 8 and 10 plies: how
  many moves first show as losing by force at each horizon while another move did not
  (``blunders``), and how many passed up a forced win first seen there
  (``missed_wins``). Two plies are the tactics above; four are double threats allowed;
* ``games_by_seat``: those games' wins, draws and losses per seat, with their lengths in
  plies: a seat's games lost early (tactics) or late, as the board fills (zugzwang).

    python benchmarks/diagnose_connect_four.py RUN_DIR/checkpoints/final
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROWS, COLS = 6, 7
#: (name, row step, column step) of the four line directions.
DIRECTIONS = (("vertical", 1, 0), ("horizontal", 0, 1), ("diagonal", 1, 1), ("anti-diagonal", 1, -1))


def fours(board: np.ndarray, drow: int, dcol: int) -> np.ndarray:
    """``bool[B]``: some line of four along ``(drow, dcol)`` on ``board`` ``bool[B, 6, 7]``."""
    hits = np.zeros(len(board), dtype=bool)
    for r in range(ROWS - 3 * drow):
        for c in range(max(0, -3 * dcol), COLS - max(0, 3 * dcol)):
            hits |= board[:, r, c] & board[:, r + drow, c + dcol] & board[:, r + 2 * drow, c + 2 * dcol] & board[:, r + 3 * drow, c + 3 * dcol]
    return hits


def drops(obs: np.ndarray, mask: np.ndarray, plane: int) -> tuple[np.ndarray, np.ndarray]:
    """For each column: the board after ``plane``'s player drops a piece there ``bool[B, 7, 6, 7]``
    (all of ``plane``'s pieces) and which directions that completes ``bool[B, 7, 4]`` (legal columns only)."""
    occupied = obs.sum(-1) > 0.5
    landing = ROWS - 1 - occupied.sum(1)  # [B, 7]: the row a piece dropped in each column lands on
    own = np.repeat((obs[..., plane] > 0.5)[:, None], COLS, 1)
    for c in range(COLS):
        rows = np.flatnonzero(landing[:, c] >= 0)
        own[rows, c, landing[rows, c], c] = True
    flat = own.reshape(-1, ROWS, COLS)
    lines = np.stack([fours(flat, dr, dc) for _, dr, dc in DIRECTIONS], -1).reshape(len(obs), COLS, len(DIRECTIONS))
    return own, lines & (mask[..., None] > 0) & (landing[..., None] >= 0)


def children(obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The opponent's observation after each move ``float32[B, 7, 6, 7, 2]`` and whether the move wins ``bool[B, 7]``."""
    own, lines = drops(obs, mask, 0)
    kids = np.stack([np.repeat(obs[:, None, ..., 1], COLS, 1), own.astype(np.float32)], -1)  # planes swapped: the opponent moves next
    return kids, lines.any(-1)


#: The policy's weight in the lookaheads that take it as a prior (``ValueLookahead.policy_weight``):
#: log-probabilities a tenth of the value's scale, so the value decides where it sees a difference.
LOOKAHEAD_PRIOR = 0.1

#: Horizons (plies) at which ``losing_moves`` reads each move.
HORIZONS = (2, 4, 6, 8, 10)


def losing_moves(obs: np.ndarray, masks: np.ndarray, actions: np.ndarray, horizons: tuple[int, ...] = HORIZONS) -> dict[str, Any]:
    """Per horizon, the moves ``actions`` that first show as a forced loss while another legal
    move did not (``blunders``), and that first pass up a forced win (``missed_wins``)."""
    from league import _core
    from league.games.connect_four.rules import bitboards, column_bits

    mine, theirs = bitboards(obs)
    legal = column_bits(masks)
    first_blunder = np.full(len(obs), -1)
    first_miss = np.full(len(obs), -1)
    for h in horizons:
        scores = np.empty((len(obs), COLS), np.int64)
        _core.connect_four_exact_scores(mine, theirs, legal, h, scores, threads=os.cpu_count() or 1)
        scores = np.where(masks > 0, scores, np.iinfo(np.int64).min)
        chosen, best = scores[np.arange(len(obs)), actions], scores.max(1)
        first_blunder[(first_blunder < 0) & (chosen < 0) & (best >= 0)] = h
        first_miss[(first_miss < 0) & (best > 0) & (chosen <= 0)] = h
    return {"moves": int(len(obs)), "blunders": {str(h): int((first_blunder == h).sum()) for h in horizons},
            "missed_wins": {str(h): int((first_miss == h).sum()) for h in horizons}}


class MoveRecorder:
    """A policy that keeps every position it was asked about and the move it chose."""

    learns = False

    def __init__(self, policy: Any) -> None:
        self.policy = policy
        self.moves: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def compute_actions(self, obs: np.ndarray, action_mask: np.ndarray, explore: bool = False) -> dict[str, np.ndarray]:
        """The wrapped policy's actions, recorded with their positions."""
        out = self.policy.compute_actions(obs, action_mask, explore=explore)
        self.moves.append((np.asarray(obs, np.float32), np.asarray(action_mask), np.asarray(out["actions"])))
        return out

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(obs, masks, actions)`` of every recorded move."""
        return tuple(np.concatenate(parts) for parts in zip(*self.moves))  # type: ignore[return-value]


class ValueLookahead:
    """Greedy on a short search of the policy's own value: a winning move is always taken; at one ply
    any other move scores minus the value of the opponent's position after it; at two plies
    the least, over the opponent's replies, of -1 for a reply that wins and else the value of
    the mover's position after it. A full board is a draw (0). ``policy_weight`` > 0 adds that
    multiple of the policy's log-probability (the policy as a prior that breaks near-ties)."""

    learns = False

    def __init__(self, policy: Any, plies: int = 1, policy_weight: float = 0.0) -> None:
        if plies not in (1, 2):
            raise ValueError(f"plies must be 1 or 2, got {plies}")
        self.policy, self.plies, self.policy_weight = policy, plies, policy_weight

    def _values(self, boards: np.ndarray) -> np.ndarray:
        import torch

        with torch.inference_mode():
            _, values = self.policy.model(torch.from_numpy(boards.reshape(-1, ROWS, COLS, 2)))
        return values.numpy().reshape(boards.shape[:-3])

    def compute_actions(self, obs: np.ndarray, action_mask: np.ndarray, explore: bool = False) -> dict[str, np.ndarray]:
        """The lookahead's best legal column per row (``explore`` is ignored)."""
        import torch

        obs = np.asarray(obs, dtype=np.float32)
        kids, wins = children(obs, action_mask)
        full = kids.reshape(len(obs), COLS, -1).sum(-1) >= ROWS * COLS
        if self.plies == 1:
            q = -self._values(kids)
        else:
            flat = kids.reshape(-1, ROWS, COLS, 2)
            replies = (flat.sum(-1)[:, 0] == 0).astype(np.int8)  # [B * 7, 7]: columns still open
            grandkids, reply_wins = children(flat, replies)
            # children swaps the planes again: a grandchild is seen from the mover's side, as its value is.
            leaf = np.where(reply_wins, -1.0, self._values(grandkids))
            q = np.where(replies > 0, leaf, np.inf).min(1).reshape(len(obs), COLS)
        q = np.where(full, 0.0, q)
        q = np.where(wins, np.inf, q)  # a win is taken whatever the prior says
        if self.policy_weight:
            from league.algos.distributions import masked_log_probs

            with torch.inference_mode():
                logits, _ = self.policy.model(torch.from_numpy(obs))
                log_probs = masked_log_probs(logits, torch.from_numpy(np.asarray(action_mask)) > 0).numpy()
            q = q + self.policy_weight * log_probs
        return {"actions": np.where(action_mask > 0, q, -np.inf).argmax(1)}


class EndgameOracle:
    """The policy's greedy move until at most ``empty_cells`` cells are empty, then the policy's most
    likely move among the game's exact best ones (solved to the end by the C++ core:
    :func:`league.games.connect_four.search.endgame_moves`)."""

    learns = False

    def __init__(self, policy: Any, empty_cells: int) -> None:
        self.policy, self.empty_cells = policy, empty_cells

    def compute_actions(self, obs: np.ndarray, action_mask: np.ndarray, explore: bool = False) -> dict[str, np.ndarray]:
        """The column played per row (``explore`` is ignored)."""
        from league.games.connect_four.search import endgame_moves

        obs = np.asarray(obs, dtype=np.float32)
        probs = self.policy.action_probabilities(obs, action_mask)
        solved, best, _ = endgame_moves(obs, action_mask, self.empty_cells)
        probs[solved] = np.where(best, probs[solved] + 1.0, 0.0)  # a best move, the policy's first among them
        return {"actions": np.where(np.asarray(action_mask) > 0, probs, -1.0).argmax(1)}


#: Empty cells from which :class:`EndgameOracle` plays perfectly, in the ``endgame_oracle`` figure.
ORACLE_EMPTY_CELLS = (16, 20, 24)


def quantiles(x: np.ndarray) -> dict[str, float]:
    """Mean and the 10/25/50/75/90% quantiles, rounded."""
    qs = np.quantile(x, [0.1, 0.25, 0.5, 0.75, 0.9]) if len(x) else [float("nan")] * 5
    return {"n": int(len(x)), "mean": round(float(np.mean(x)), 4) if len(x) else None,
            **{f"q{p}": round(float(v), 4) for p, v in zip((10, 25, 50, 75, 90), qs)}}


def diagnose(policy: Any, spec: Any, games: int, openings: int, seed: int) -> list[dict[str, Any]]:
    """The figures above for ``policy``."""
    import torch

    from league.population.scripted import scripted_factory
    from league.games.connect_four.tactics import connect_four_tactics
    from league.population.yardstick import play_matches, random_play_positions

    obs, masks = random_play_positions("connect_four", games, seed)
    _, my_lines = drops(obs, masks, 0)
    _, their_lines = drops(obs, masks, 1)
    wins, threats = my_lines.any(-1), their_lines.any(-1)
    can_win, threatened = wins.any(1), threats.any(1)
    chosen = policy.compute_actions(obs, masks, explore=False)["actions"]
    took = wins[np.arange(len(obs)), chosen]
    figures: list[dict[str, Any]] = []

    def taken(where: np.ndarray) -> dict[str, Any]:
        return {"positions": int(where.sum()), "taken": round(float(took[where].mean()), 4) if where.any() else None}

    directions = my_lines.any(1)  # [B, 4]: the lines some winning move completes
    by_line = {name: taken(can_win & (directions.sum(1) == 1) & directions[:, i]) for i, (name, _, _) in enumerate(DIRECTIONS)}
    by_line.update(several=taken(directions.sum(1) > 1), all=taken(can_win))
    figures.append({"figure": "wins_by_line", **by_line})

    probs = policy.action_probabilities(obs[can_win], masks[can_win])
    figures.append({"figure": "win_probability", **quantiles((probs * wins[can_win]).sum(1))})

    both = can_win & threatened
    blocked = threats[np.arange(len(obs)), chosen] & ~took
    figures.append({"figure": "win_or_block", "positions": int(both.sum()), "won": int(took[both].sum()),
                    "blocked": int(blocked[both].sum()), "other": int((both & ~took & ~blocked).sum())})

    with torch.inference_mode():
        _, values = policy.model(torch.from_numpy(obs))
    values = values.numpy()
    figures.append({"figure": "value_by_position", "mover_can_win": quantiles(values[can_win]),
                    "opponent_threat_only": quantiles(values[threatened & ~can_win]),
                    "neither": quantiles(values[~can_win & ~threatened])})

    recorders = {depth: MoveRecorder(policy) for depth in (2, 3)}
    matches: dict[int, Any] = {}
    players = (("policy", policy), ("one_ply_lookahead", ValueLookahead(policy)),
               ("one_ply_lookahead_prior", ValueLookahead(policy, 1, LOOKAHEAD_PRIOR)),
               ("two_ply_lookahead_prior", ValueLookahead(policy, 2, LOOKAHEAD_PRIOR)))
    for name, player in players:
        row: dict[str, Any] = {"figure": "lookahead", "player": name}
        for depth in (2, 3):
            opponent = scripted_factory("negamax", spec, depth=depth, random_ties=True).make_policy(seed=seed)
            played = recorders[depth] if name == "policy" else player
            match = play_matches("connect_four", played, opponent, openings=openings, opening_plies=2, seed=seed)
            row[f"negamax{depth}"] = match.as_dict()["score"]
            if name == "policy":
                matches[depth] = match
        tactics = connect_four_tactics(player, positions=500, seed=seed).as_dict()
        row.update(wins_taken=tactics["immediate_win_rate"], blocks=tactics["block_rate"])
        figures.append(row)
    for cells in ORACLE_EMPTY_CELLS:
        row = {"figure": "endgame_oracle", "empty_cells": cells}
        for depth in (2, 3):
            opponent = scripted_factory("negamax", spec, depth=depth, random_ties=True).make_policy(seed=seed)
            match = play_matches("connect_four", EndgameOracle(policy, cells), opponent, openings=openings, opening_plies=2, seed=seed)
            row[f"negamax{depth}"] = match.as_dict()["score"]
        figures.append(row)
    for depth, recorder in recorders.items():
        figures.append({"figure": "losing_moves", "opponent": f"negamax{depth}", **losing_moves(*recorder.arrays())})
    for depth, match in matches.items():
        figures.append({"figure": "games_by_seat", "opponent": f"negamax{depth}", "seats": games_by_seat(match.games)})
    return figures


def games_by_seat(games: list[Any]) -> list[dict[str, Any]]:
    """Per seat (0: the policy moves first), its wins, draws and losses and their lengths in plies
    (quantiles): whether a seat's games are lost early, in tactics, or late, as the board fills."""
    seats = []
    for seat in (0, 1):
        row: dict[str, Any] = {}
        for outcome in ("win", "draw", "loss"):
            plies = np.array([g.plies for g in games if g.seat == seat and g.outcome == outcome], dtype=float)
            row[outcome] = {"games": int(len(plies)), "plies": quantiles(plies) if len(plies) else None}
        seats.append(row)
    return seats


def main() -> None:
    """Print one JSON line per figure for the checkpoint named."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("--games", type=int, default=400, help="uniformly random games whose positions are read")
    parser.add_argument("--openings", type=int, default=100, help="openings per negamax depth (two games each)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_strength import load_policy

    policy, spec, info = load_policy(args.checkpoint)
    print(json.dumps({"figure": "checkpoint", "path": str(args.checkpoint), **info}), flush=True)
    for figure in diagnose(policy, spec, args.games, args.openings, args.seed):
        print(json.dumps(figure), flush=True)


if __name__ == "__main__":
    main()
