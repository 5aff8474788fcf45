"""The ``tictactoe`` preset: the greedy policy stops losing to perfect play within about a
minute (docs/STRENGTH.md): PPO with a larger step and entropy bonus, exploring starts of up
to two random plies, 128 C++ boards x 32 steps per fragment, a 120 s budget."""

from __future__ import annotations

from league.presets import Preset

__all__ = ["PRESET"]

PRESET = Preset(
    name="tictactoe",
    envs=("tictactoe", "tictactoe_v3", "pettingzoo.classic.tictactoe_v3"),
    about="tic-tac-toe's self-play league: never loses to minimax after about a minute",
    values={
        "env": {"opening_plies": 2},
        # The MLP: its figures were measured with it (model: auto would pick the conv).
        "algo": {"name": "ppo", "params": {"lr": 0.001, "entropy_coef": 0.05, "model": "mlp"}},
        "sampler": {"num_envs": 128, "fragment_length": 32},
        "stop": {"time_s": 120},
    },
)
