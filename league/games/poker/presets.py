"""The presets of the small bluffing games (kuhn and leduc poker, liar's dice): PSRO whose
oracle is a PPO best response (many small updates, undiscounted returns: an episode is a few
bets, and chips won at the end are what counts), reset to its initial weights after each
snapshot; the league's product is the least exploitable mixture of its frozen players. With
20 large updates per best response (batch 2000, lr 1e-3) the oracle found about half of a
small best-response gain and PSRO stalled near 0.06 exploitability on kuhn
(benchmarks/README.md)."""

from __future__ import annotations

from typing import Any

from league.games.poker.leduc_holdem import ENVS as LEDUC_HOLDEM_ENVS
from league.presets import Preset

__all__ = ["KUHN", "LEDUC", "LEDUC_HOLDEM", "LIARS_DICE", "TEXAS_HOLDEM"]

_PPO_ORACLE: dict[str, Any] = {
    "lr": 0.003, "entropy_coef": 0.003, "gamma": 1.0, "lam": 1.0,
    "train_batch_size": 1000, "minibatch_size": 250, "num_epochs": 6,
}

_PSRO: dict[str, Any] = {
    "recipe": "psro",
    "fixed_opponents": {},
    "roles": {"main": {"self_play": 0.0, "reset_probability": 1.0, "noise_tolerance": 1.0}},
    "payoff_decay": 1.0,
    "meta_strategy": "least_exploitable",
}

_EXPLOITABILITY_HEADLINE: dict[str, Any] = {"metric": "exploitability/meta_strategy", "metric_mode": "min"}


def _psro_values(params: dict[str, Any], snapshot_steps: int, exploitability_interval: int, **sections: Any) -> dict[str, Any]:
    """A PSRO preset's values: the oracle's PPO ``params``, a snapshot every ``snapshot_steps``
    of its agent steps, exact exploitability every ``exploitability_interval`` iterations as
    the headline, and any other config ``sections`` as given."""
    return {
        "algo": {"name": "ppo", "params": params},
        "league": {**_PSRO, "snapshot_steps": snapshot_steps, "exploitability_interval": exploitability_interval},
        # The yardstick is exact exploitability, not games against random: the headline is the
        # league's product's, its meta-strategy mixture (lower is better).
        "eval": {"interval": 0, **_EXPLOITABILITY_HEADLINE},
        **sections,
    }


KUHN = Preset(
    name="kuhn_poker",
    envs=("kuhn_poker", "openspiel:kuhn_poker"),
    about="kuhn poker's PSRO league: exact exploitability near 0.004 within 10 minutes",
    values=_psro_values(dict(_PPO_ORACLE), 60_000, 4, stop={"time_s": 600, "env_steps": 0}),
)

LEDUC = Preset(
    name="leduc_poker",
    envs=("leduc_poker", "openspiel:leduc_poker"),
    about="leduc poker's PSRO league: exact exploitability near 0.18 within 30 minutes",
    # PSRO on leduc is limited by how many best responses it trains: 256 copies x 8 moves
    # per sampler call gave 16.9k env steps/s here against 12.9k with 32 x 64.
    values=_psro_values({**_PPO_ORACLE, "train_batch_size": 2000, "minibatch_size": 500}, 150_000, 10,
                        sampler={"num_envs": 256, "fragment_length": 8}, stop={"time_s": 1800, "env_steps": 0}),
)

LIARS_DICE = Preset(
    name="liars_dice",
    envs=("liars_dice", "openspiel:liars_dice"),
    about="liar's dice's PSRO league: the headline is the exact exploitability of its meta-strategy",
    # Self-play PPO (the generic league) turns deterministic within a minute and its main
    # player grows more exploitable (exact exploitability 0.46 -> 0.98 over 90 s, the entropy
    # 1.12 -> 0.22), while its win rate against random stays near 0.85 and hides it. Kuhn's
    # PSRO settings bring the league's meta-strategy from 0.56 to 0.24 in 240 s here (24,576
    # information states: the tree is walked in ~5 s, once per run). Measured every 16
    # iterations, not kuhn's 4: a measurement solves the meta-game again after each snapshot
    # (up to ~12 s with 20 snapshots), and at 4 the driver spent 31% of a 540 s run on it;
    # at 16 the runs end as low (0.136-0.167 against 0.148-0.160; benchmarks/README.md).
    values=_psro_values(dict(_PPO_ORACLE), 60_000, 16),
)

LEDUC_HOLDEM = Preset(
    name="leduc_holdem",
    envs=LEDUC_HOLDEM_ENVS,
    about="PettingZoo's Leduc Hold'em: the headline is the main policy's exact exploitability (big blinds a hand)",
    # OpenSpiel cannot walk it (another game than its leduc_poker), so the plug-in scores the
    # main policy from RLCard's own tree (league.games.poker.leduc_holdem): PSRO's exact
    # meta-game needs OpenSpiel, so the league is self-play. Its win rate against random
    # barely moved over 540 s (0.765 -> 0.771). Self-play cycles here: with the generic PPO
    # the main policy's exploitability fell from 1.08 to 0.50 big blinds a hand in a minute,
    # then rose to 0.75 as its entropy collapsed (0.19); rock-paper-scissors' larger entropy
    # bonus and smaller step keep it mixed (entropy ~0.5) and lower: 1.20 -> 0.43 in 215 s,
    # a rise to 0.73, then 0.26 at 540 s (0.66 -> 0.36, first -> last quarter). Entropy 0.03
    # or 0.05 with lr 3e-4 collapsed and rose like the generic (benchmarks/README.md).
    values={
        "algo": {"params": {"entropy_coef": 0.1, "lr": 0.0001}},
        "league": {"exploitability_interval": 5},
        "eval": {"metric": "exploitability/main", "metric_mode": "min"},
    },
)

TEXAS_HOLDEM = Preset(
    name="texas_holdem",
    envs=("texas_holdem", "pettingzoo.classic.texas_holdem_v4", "pettingzoo.classic.rlcard_envs.texas_holdem"),
    about="limit Texas Hold'em (any number of players): the headline is the chips a hand won against holdem_styles",
    # Its win rate against the uniform-random player is near 1 from the first minutes (three
    # players, 540 s: 0.986 -> 0.959, first -> last quarter), so the progress line and the
    # headline read scripted players' games instead (league.games.poker.holdem_styles), and in
    # chips, not hands won: a hand is won by whoever is left, so the uniform-random player
    # "wins" 44% of three-player hands against two rule players while losing 0.56 chips a hand.
    # One style alone ranked heads-up policies against head-to-head play (the rule player folds
    # to raises, so raising with any cards scores against it), so the yardstick is the mix of
    # three styles, one drawn per seat and hand (league.games.poker.holdem_styles).
    # Evaluated as it plays, sampling its actions: a poker policy is a mixed strategy, and
    # its greedy version is another player that flips between iterations (the same 240 s
    # three-player checkpoints against holdem_styles, 2000 hands each: greedy -0.76 / -0.58 /
    # -0.22 chips a hand, sampled -0.29 / -0.07 / +0.13). And 500 hands a round, not 100: a
    # hand's chips vary by ~8 heads-up and ~20 with three players, so 100-hand rounds read
    # +-0.8 / +-2 and a quarter of them could not tell a rising curve from a falling one
    # (13% of a heads-up run's env steps go to evaluation; benchmarks/README.md).
    # Entropy 0.03, not the generic 0.01: at 0.01 the three-player league's entropy fell from
    # 0.55 to 0.23 and it settled on calling 90% of the bets it faced whatever its cards, -0.49
    # -> -2.22 chips a hand over 540 s (heads-up +0.10 -> +0.30); at 0.03 its entropy held at
    # 0.55 and it stayed level, -0.41 -> -0.02 (a second seed -0.62 -> -0.76; heads-up -0.15 ->
    # +0.27, without a random member -0.18 -> +0.15). A wider snapshot pool
    # (snapshot_steps 80000) did not stop the fall (-0.48 -> -0.81); benchmarks/README.md.
    values={
        "algo": {"params": {"entropy_coef": 0.03}},
        "eval": {"yardstick": "holdem_styles", "metric": "return", "explore": True, "episodes": 500},
    },
)
