"""A PPO policy and a DQN policy learn connect four together, in one process, in one plan.

They play each other and a uniformly random player (20% of games), from one shared
rollout stream; each trains with its own algorithm at its own batch size. Afterwards each
plays greedy games against the random player, and the run is saved as a checkpoint.

    python examples/mixed_algorithms.py                 # 60 s of training
    python examples/mixed_algorithms.py --seconds 20 --games 100
"""

from __future__ import annotations

import argparse
import tempfile

from league import Trainer
from league.algos import DQNConfig, PPOConfig


def main(seconds: float, games: int, run_dir: str | None = None) -> dict[str, float]:
    """Train for ``seconds``, then print and return each policy's win rate against random play."""
    trainer = Trainer(
        "connect_four",
        policies={"ppo": PPOConfig(train_batch_size=2048, minibatch_size=256, lr=5e-4),
                  "dqn": DQNConfig(training_intensity=4.0, epsilon_steps=20_000, target_update_interval=250)},
        opponents={"random": 0.2},
        run_dir=run_dir or tempfile.mkdtemp(prefix="mixed_algorithms_"),
        sampler={"num_envs": 16, "fragment_length": 32},
        iteration={"min_env_steps": 512},
    )  # fmt: skip
    print(trainer.plan)  # the operator graph
    try:
        summary = trainer.train(time_s=seconds)
        rates = {pid: r["random"] for pid, r in trainer.evaluate(games, opponents=["random"]).items()}
        for pid, rate in rates.items():
            print(f"{pid}: won {rate:.0%} of {games} greedy games against random play ({summary['env_steps']} env steps, {seconds:g} s)")
        print(f"checkpoint: {trainer.save()}")
    finally:
        trainer.close()
    return rates


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60.0, help="training time budget")
    parser.add_argument("--games", type=int, default=200, help="evaluation games per policy")
    args = parser.parse_args()
    main(args.seconds, args.games)
