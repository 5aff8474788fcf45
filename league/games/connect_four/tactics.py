"""Connect four's tactics yardstick: immediate wins taken and single threats blocked.

``league-eval ... tactics=true`` (through :data:`TACTICS_TEST`, registered by the plug-in) and
``benchmarks/bench_strength.py`` report it beside the games against negamax (docs/STRENGTH.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from league.envs import make_env
from league.envs.base import AgentSpec
from league.games.connect_four.rules import CELL_BITS, RULES, drop_bit, has_four
from league.policy import Policy, masked_uniform_actions
from league.population.tactics import TacticsTest

__all__ = ["POSITIONS", "TACTICS_TEST", "TacticsRecord", "connect_four_tactics"]

#: Positions of each kind (win, block) that ``league-eval tactics=true`` scores.
POSITIONS = 500


@dataclass
class TacticsRecord:
    """Connect-four tactics on positions from random play."""

    wins_taken: int
    win_positions: int
    blocks_made: int
    block_positions: int

    @property
    def immediate_win_rate(self) -> float:
        """Share of win positions where the policy won at once."""
        return self.wins_taken / self.win_positions if self.win_positions else 0.0

    @property
    def block_rate(self) -> float:
        """Share of block positions where the policy blocked."""
        return self.blocks_made / self.block_positions if self.block_positions else 0.0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready rates and counts."""
        return {
            "immediate_win_rate": round(self.immediate_win_rate, 4), "block_rate": round(self.block_rate, 4),
            "win_positions": self.win_positions, "block_positions": self.block_positions,
        }


def connect_four_tactics(policy: Policy, positions: int = 500, seed: int = 0) -> TacticsRecord:
    """How often ``policy`` (greedy) takes an immediate win and blocks a single threat.

    Positions come from uniformly random play on connect four (the ``make_env`` adapter's
    observations: plane 0 the mover's pieces, plane 1 the opponent's). A *win* position
    is one where the player to move can win at once (any winning column counts as
    taken). A *block* position is one where it cannot, the opponent threatens to win at
    once in exactly one column, and blocking there does not hand the opponent the cell
    above it as a win (where it does, every move loses and none is the right one).
    ``positions`` of each kind are collected; consecutive positions of one game may
    share a threat.

    Raises:
        ValueError: ``positions`` < 1.
    """
    if isinstance(positions, bool) or not isinstance(positions, (int, np.integer)) or positions < 1:
        raise ValueError(f"positions must be an integer >= 1, got {positions!r}")
    rng = np.random.default_rng(seed)
    wins: list[tuple[np.ndarray, np.ndarray, set[int]]] = []
    blocks: list[tuple[np.ndarray, np.ndarray, set[int]]] = []
    env = make_env("connect_four")
    try:
        while len(wins) < positions or len(blocks) < positions:
            ts = env.reset(seed=int(rng.integers(2**31)))
            while not ts.done:
                agent = next(iter(ts.obs))
                obs, mask = ts.obs[agent], ts.masks[agent]
                mine = int(((obs[..., 0] > 0.5) * CELL_BITS).sum())
                theirs = int(((obs[..., 1] > 0.5) * CELL_BITS).sum())
                occupied = mine | theirs
                drops = {c: bit for c in range(7) if mask[c] and (bit := drop_bit(occupied, c))}
                winning = {c for c, bit in drops.items() if has_four(mine | bit)}
                threats = {c for c, bit in drops.items() if has_four(theirs | bit)}
                if winning:
                    if len(wins) < positions:
                        wins.append((obs, mask, winning))
                elif len(threats) == 1 and len(blocks) < positions:
                    (col,) = threats
                    above = drop_bit(occupied | drops[col], col)
                    if not (above and has_four(theirs | above)):
                        blocks.append((obs, mask, threats))
                ts = env.step({agent: int(masked_uniform_actions(mask[None], rng)[0])})
    finally:
        env.close()

    def hits(cases: list[tuple[np.ndarray, np.ndarray, set[int]]]) -> int:
        obs, masks = np.stack([c[0] for c in cases]), np.stack([c[1] for c in cases])
        actions = policy.compute_actions(obs, masks, explore=False)["actions"]
        return sum(int(a) in good for a, (_, _, good) in zip(actions, cases))

    return TacticsRecord(hits(wins), len(wins), hits(blocks), len(blocks))


def _fits(spec: AgentSpec) -> bool:
    return (tuple(spec.obs_shape), spec.num_actions) == (RULES.obs_shape, RULES.num_actions)


def _cells(figures: Mapping[str, Any]) -> dict[str, str]:
    return {
        "immediate wins": f"{figures['immediate_win_rate']:.3f} of {figures['win_positions']}",
        "blocks": f"{figures['block_rate']:.3f} of {figures['block_positions']}",
    }


#: Connect four's tactics test (:mod:`league.population.tactics`): :data:`POSITIONS` of each kind.
TACTICS_TEST = TacticsTest(
    title="Connect-four tactics (greedy, positions from random play)", fits=_fits,
    score=lambda policy, seed: connect_four_tactics(policy, POSITIONS, seed).as_dict(), cells=_cells,
)
