"""A PPO policy and a DQN policy learn connect four together, in one process, in one plan.

Both play each other and themselves (seats drawn per episode) from one shared rollout
stream; each trains with its own algorithm at its own pace. Afterwards each plays greedy
games against a uniformly random legal player.

    python examples/mixed_algorithms.py                 # 60 s of training
    python examples/mixed_algorithms.py --seconds 20 --games 100
"""

from __future__ import annotations

import argparse
import time

from league.algos import make_algorithm
from league.algos.compose import build_multi_policy_plan
from league.envs import make_env
from league.flow import ParallelRollouts
from league.learn import Learner
from league.policy import RandomPolicyFactory
from league.sampling import OpponentSampling, Sampler, UniformMatchups


def win_rate(games: list[dict], policy_id: str) -> float:
    """Fraction of ``games`` that ``policy_id`` won (draws are not wins)."""
    won = [e["outcome"][seat] == "win" for e in games for seat, pid in e["policies"].items() if pid == policy_id]
    return sum(won) / max(len(games), 1)


def main(seconds: float, games: int) -> dict[str, float]:
    """Train for ``seconds``, then print and return each policy's win rate against random play."""
    env = make_env("connect_four")
    spec = env.spec(env.possible_agents[0])
    algos = {
        "ppo": make_algorithm("ppo", spec, {"model": "mlp", "train_batch_size": 2048, "minibatch_size": 256, "lr": 5e-4}),
        "dqn": make_algorithm("dqn", spec, {"model": "mlp", "training_intensity": 4.0, "epsilon_steps": 20_000,
                                            "target_update_interval": 250}),
    }
    learner = Learner(seed=0)
    for pid, algo in algos.items():
        learner.add_policy(pid, algo)
    sampler = Sampler("connect_four", policies={**algos, "random": RandomPolicyFactory()}, frozen=("random",),
                      matchups=UniformMatchups(list(algos)), num_envs=16, fragment_length=32)
    sampler.set_weights(learner.get_weights())
    plan = build_multi_policy_plan(ParallelRollouts([sampler]), learner, [sampler], algos)
    print(plan)

    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        next(plan)  # one training step of whichever policy's batch is ready
    rates = {pid: win_rate(sampler.evaluate(games, OpponentSampling(pid, {"random": 1.0})), pid) for pid in algos}
    steps = plan.metrics.counters["num_env_steps_sampled"]
    for pid, rate in rates.items():
        print(f"{pid}: won {rate:.0%} of {games} greedy games against random play ({steps} env steps, {seconds:g} s)")
    return rates


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60.0, help="training time budget")
    parser.add_argument("--games", type=int, default=200, help="evaluation games per policy")
    args = parser.parse_args()
    main(args.seconds, args.games)
