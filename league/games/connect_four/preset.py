"""The ``connect_four`` preset: the default job's recipe (docs/STRENGTH.md has its figures).

* PPO with a larger step and entropy bonus than the generic defaults, which keep self-play
  from collapsing into one line of play, and two epochs over each batch instead of four:
  the update is the run's clock on two cores, and at two epochs the 540 s job makes about
  1.55x the env steps, which it turns into as much strength as four epochs on fewer (within
  run-to-run noise; benchmarks/results/strength_history.md, 2026-11-29);
* the conv model (one 4x4 layer sees every line of four) averaged with its left-right
  mirror, reading connect four's threat planes (``connect_four_threats``);
* an exact four-ply search distilled into the policy (``connect_four_search``, depth 4: it
  sees the double threats the mover can make and those it must not allow);
* exploring starts (``env.opening_plies``), a league that plays itself in half the games and
  the random member in 5%, snapshots 300k agent steps apart;
* evaluation against negamax at depth 2 as well as random (``eval.yardstick``): the headline;
* 128 C++ boards x 32 steps per fragment, two matchups per block of episodes, and two
  threads for the update that runs while samplers wait (bulk-synchronous PPO).
"""

from __future__ import annotations

from league.presets import Preset

__all__ = ["PRESET"]

PRESET = Preset(
    name="connect_four",
    envs=("connect_four", "connect_four_v3", "pettingzoo.classic.connect_four_v3"),
    about="connect four's self-play league: about 0.73 / 0.71 against negamax depths 2 / 3 after 540 s on 2 cores",
    values={
        "env": {"opening_plies": 4},
        "algo": {
            "name": "ppo",
            "params": {
                "lr": 0.001,
                "entropy_coef": 0.05,
                "num_epochs": 2,
                "model": "auto",
                "model_kwargs": {"symmetry": "flip_lr", "input_features": "connect_four_threats"},
                "aux_loss": "connect_four_search",
                "aux_loss_coef": 1.0,
                "aux_loss_kwargs": {"depth": 4},
            },
        },
        # The progress line's and final line's win rate is against negamax at depth 2
        # (league.negamax_depth): the random player is beaten within a minute, this one not for long.
        "eval": {"yardstick": "negamax"},
        "league": {"recipe": "selfplay", "snapshot_steps": 300_000, "self_play_prob": 0.5, "fixed_opponents": {"random": 0.05}},
        "learner": {"num_threads": 2, "num_threads_while_sampling": 1},
        "sampler": {"num_envs": 128, "fragment_length": 32, "matchup_draws": 2},
    },
)
