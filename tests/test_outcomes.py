"""Outcomes from returns: ties within rounding are draws, everywhere the league reads them."""

from __future__ import annotations

import numpy as np

from league.envs.outcomes import TIE_TOLERANCE, episode_outcomes, outcome_from_returns, returns_tie
from league.sampling.batched_runner import episode_record


def test_a_drawn_game_with_cancelling_float32_rewards_is_a_draw() -> None:
    # Potential-based shaping: each side's rewards telescope to 0, but summed in float32 in a
    # different order for each side they end a few ulps apart (the chess run's +-1e-8).
    rng = np.random.default_rng(0)
    potentials = rng.uniform(-1, 1, size=200).astype(np.float32) * np.float32(0.1)
    steps = np.diff(np.concatenate([[0.0], potentials, [0.0]]).astype(np.float32))
    white = black = np.float32(0.0)
    for reward in steps:  # accumulated step by step in float32, as an env's scorer would
        white = np.float32(white + reward)
    for reward in steps[::-1]:
        black = np.float32(black + reward)
    white, black = float(white), float(black)
    assert white != black  # a strict comparison would decide this drawn game
    record = episode_record(0, 200, {"white": white, "black": black}, {"white": "p", "black": "q"})
    assert record["outcome"] == {"white": "draw", "black": "draw"}
    assert outcome_from_returns(white, black) == "draw"


def test_real_margins_still_decide() -> None:
    assert outcome_from_returns(1.0, -1.0) == "win" and outcome_from_returns(-1.0, 1.0) == "loss"
    assert outcome_from_returns(0.0, 1e-3) == "loss"
    assert outcome_from_returns(1000.0, 1000.5) == "loss"  # the tolerance at that size is 0.01
    assert episode_outcomes({"a": 1.0, "b": 0.0, "c": 0.0}) == {"a": "win", "b": "loss", "c": "loss"}
    assert episode_outcomes({"a": 1.0, "b": 1.0 - 1e-9, "c": 0.0}) == {"a": "win", "b": "win", "c": "loss"}
    assert episode_outcomes({"a": -2.0, "b": -2.0}) == {"a": "draw", "b": "draw"}


def test_the_tolerance_is_relative_to_the_returns_size() -> None:
    assert returns_tie(1e6, 1e6 + 1.0)  # 1 in 1e6 is rounding at that size
    assert not returns_tie(1e6, 1e6 + 100.0)
    assert returns_tie(0.0, TIE_TOLERANCE / 2) and not returns_tie(0.0, 2 * TIE_TOLERANCE)
