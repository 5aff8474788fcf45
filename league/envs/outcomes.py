"""Who won an episode, read from its returns, with ties that survive rounding.

An episode's outcome per agent is ``win`` for the best return, ``loss`` below it and
``draw`` when every return ties. Returns are sums of float rewards, and rewards that cancel
(a shaped reward's potential differences, costs and refunds) need not sum to exactly the same
value on both sides when they are added in different orders or rounded to float32 by the env:
a drawn game with potential-shaped rewards summed to +-1e-8 and was scored as decided.
So returns within :data:`TIE_TOLERANCE` of each other, relative to their size (at least 1),
tie; a real difference that small is below any reward an env means.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

__all__ = ["Outcome", "TIE_TOLERANCE", "episode_outcomes", "outcome_from_returns", "returns_tie"]

Outcome = Literal["win", "draw", "loss"]

#: Relative difference (to the larger of 1 and the returns' magnitude) under which two returns
#: tie: well above float32 rounding over a few thousand rewards, far below any real margin.
TIE_TOLERANCE = 1e-5


def returns_tie(a: float, b: float) -> bool:
    """Whether returns ``a`` and ``b`` tie (differ by at most :data:`TIE_TOLERANCE`, relative)."""
    return abs(a - b) <= TIE_TOLERANCE * max(1.0, abs(a), abs(b))


def outcome_from_returns(return_a: float, return_b: float) -> Outcome:
    """``"win"``/``"draw"``/``"loss"`` for player a, comparing two episode returns."""
    if returns_tie(return_a, return_b):
        return "draw"
    return "win" if return_a > return_b else "loss"


def episode_outcomes(returns: Mapping[str, float]) -> dict[str, Outcome]:
    """Each agent's outcome: ``win`` for the best return (ties with it included), ``loss``
    below it, ``draw`` for everyone when every return ties with the best."""
    best = max(returns.values())
    winners = {a for a, r in returns.items() if returns_tie(r, best)}
    everyone = len(winners) == len(returns)
    return {a: "draw" if everyone else "win" if a in winners else "loss" for a in returns}
