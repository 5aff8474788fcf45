"""Mixed algorithms: a learning policy of one algorithm plays a frozen policy of another.

Connect four, in-process samplers. Per pair (learning algorithm, frozen algorithm) the
run checks that rollout and trained batches hold the learning policy only, that the
frozen policy acted in every episode with legal moves only (its actions are recorded
against the masks it was shown), and that its weights never moved while the learning
policy's did. Also: the plan's merge mode, and a smoke run of examples/mixed_algorithms.py.
"""

from __future__ import annotations

import gc
import importlib.util
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest

from league.algos import make_algorithm
from league.algos.compose import build_multi_policy_plan
from league.batch import Columns as C
from league.batch import MultiAgentBatch, SampleBatch
from league.envs import make_env
from league.flow import ParallelRollouts, TrainResult
from league.learn import Learner
from league.policy import Policy, PolicyFactory
from league.sampling import FunctionMatchups, OpponentSampling, Sampler

LEARNING, FROZEN = "learning", "frozen"

# Small settings so one training step comes quickly; the algorithms' logic is unchanged.
PARAMS = {
    "ppo": {"model": "mlp", "train_batch_size": 128, "minibatch_size": 64, "num_epochs": 1},
    "a2c": {"model": "mlp", "train_batch_size": 128},
    "impala": {"model": "mlp", "train_batch_size": 128},
    "dqn": {"model": "mlp", "learning_starts": 64, "train_batch_size": 32, "training_intensity": 2.0,
            "target_update_interval": 4, "replay_seed": 0},
}


class _RecordingPolicy(Policy):
    """Delegates to ``inner`` and keeps every (mask, action) pair it produced."""

    def __init__(self, inner: Policy, log: list[tuple[np.ndarray, np.ndarray]]) -> None:
        self.inner, self.log, self.learns = inner, log, inner.learns

    def compute_actions(self, obs: np.ndarray, action_mask: np.ndarray, explore: bool = True) -> dict[str, np.ndarray]:
        out = self.inner.compute_actions(obs, action_mask, explore)
        self.log.append((action_mask.copy(), np.asarray(out[C.ACTIONS]).copy()))
        return out

    def get_weights(self) -> dict[str, np.ndarray]:
        return self.inner.get_weights()

    def set_weights(self, weights: dict[str, np.ndarray]) -> None:
        self.inner.set_weights(weights)


class _RecordingFactory(PolicyFactory):
    """The frozen algorithm as the sampler sees it, with its policy's moves recorded."""

    def __init__(self, algorithm: PolicyFactory) -> None:
        self.algorithm = algorithm
        self.log: list[tuple[np.ndarray, np.ndarray]] = []

    def make_policy(self, seed: int | None = None, learns: bool = True) -> Policy:
        return _RecordingPolicy(self.algorithm.make_policy(seed=seed, learns=learns), self.log)

    def postprocess_trajectory(self, traj: SampleBatch, next_step: Mapping[str, np.ndarray] | None) -> SampleBatch:
        return self.algorithm.postprocess_trajectory(traj, next_step)


def _alternate_seats(agent: str, episode_index: int) -> str:
    """The learning policy takes ``player_0`` in even episodes and ``player_1`` in odd ones.

    Such a matchup lets every seat learn, so only the sampler's ``frozen`` list keeps the
    frozen policy's rows out of the batches.
    """
    return LEARNING if (agent == "player_0") == (episode_index % 2 == 0) else FROZEN


def _copy(weights: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {k: v.copy() for k, v in weights.items()}


@pytest.mark.parametrize(
    ("learning_algo", "frozen_algo"), [("ppo", "dqn"), ("dqn", "ppo"), ("impala", "a2c")]
)
def test_learning_policy_plays_a_frozen_policy_of_another_algorithm(learning_algo: str, frozen_algo: str) -> None:
    env = make_env("connect_four")
    spec = env.spec(env.possible_agents[0])
    learning = make_algorithm(learning_algo, spec, PARAMS[learning_algo])
    frozen = make_algorithm(frozen_algo, spec, PARAMS[frozen_algo])
    recorder = _RecordingFactory(frozen)

    learner = Learner(seed=0)
    learner.add_policy(LEARNING, learning)
    learner.add_policy(FROZEN, frozen, frozen=True)
    sampler = Sampler(
        "connect_four",
        policies={LEARNING: learning, FROZEN: recorder},
        frozen=(FROZEN,),
        matchups=FunctionMatchups(_alternate_seats),
        num_envs=4,
        fragment_length=32,
        seed=0,
    )
    sampler.set_weights(learner.get_weights())
    start = {pid: _copy(w) for pid, w in learner.get_weights().items()}

    rollout_policies: list[set[str]] = []

    def spy(batch: MultiAgentBatch) -> MultiAgentBatch:
        rollout_policies.append(set(batch.policy_ids()))
        return batch

    rollouts = ParallelRollouts([sampler], mode="bulk_sync").for_each(spy, name="Spy")
    plan = build_multi_policy_plan(rollouts, learner, [sampler], {LEARNING: learning})
    results = [next(plan) for _ in range(3)]

    # Only the learning policy's rows were recorded, and only it was trained.
    assert rollout_policies and all(p == {LEARNING} for p in rollout_policies), rollout_policies
    for result in results:
        if isinstance(result, TrainResult):
            assert result.batch.policy_ids() == [LEARNING]
        assert set(result.stats) == {LEARNING}
    assert set(plan.metrics.learner_stats) == {LEARNING}

    # The frozen policy took a seat in every episode, both seats over the run, and only ever made legal moves.
    episodes = sampler.pop_episode_stats()
    assert episodes and all(sorted(e["policies"].values()) == [FROZEN, LEARNING] for e in episodes)
    assert {seat for e in episodes for seat, pid in e["policies"].items() if pid == FROZEN} == {"player_0", "player_1"}
    assert sum(len(actions) for _, actions in recorder.log) > 0
    for masks, actions in recorder.log:
        assert masks[np.arange(len(actions)), actions].all()

    # Its weights stayed where they started, on the learner and on the sampler; the learning policy's moved.
    after, on_sampler = learner.get_weights(), sampler.get_weights([FROZEN])[FROZEN]
    for name, value in start[FROZEN].items():
        np.testing.assert_array_equal(after[FROZEN][name], value)
        np.testing.assert_array_equal(on_sampler[name], value)
    assert any(not np.array_equal(after[LEARNING][k], v) for k, v in start[LEARNING].items())

    del plan, results
    gc.collect()  # an IMPALA fragment's learner thread stops when its plan is collected


def test_merge_mode_is_validated_and_shown_in_the_plan() -> None:
    spec = make_env("connect_four").spec("player_0")
    algos = {pid: make_algorithm("ppo", spec, PARAMS["ppo"]) for pid in ("a", "b")}
    sampler = Sampler("connect_four", policies=algos, matchups=OpponentSampling("a", {"b": 1.0}), num_envs=1)
    learner = Learner(seed=0)
    for pid, algo in algos.items():
        learner.add_policy(pid, algo)
    rollouts = ParallelRollouts([sampler], mode="bulk_sync")
    plan = build_multi_policy_plan(rollouts, learner, [sampler], algos, mode="round_robin")
    assert "PerPolicyFragments(round_robin)" in str(plan)
    with pytest.raises(ValueError, match="mode must be one of"):
        build_multi_policy_plan(rollouts, learner, [sampler], algos, mode="parallel")


def test_example_script_trains_both_policies_and_reports_win_rates(capsys: pytest.CaptureFixture[str]) -> None:
    path = Path(__file__).resolve().parents[1] / "examples" / "mixed_algorithms.py"
    spec = importlib.util.spec_from_file_location("mixed_algorithms_example", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    rates = example.main(seconds=1.0, games=4)
    assert set(rates) == {"ppo", "dqn"} and all((4 * r).is_integer() for r in rates.values()), rates  # shares of 4 games
    out = capsys.readouterr().out
    assert "PerPolicyFragments" in out
    for pid, rate in rates.items():  # the printed figure is the returned one
        assert f"{pid}: won {rate:.0%} of 4 greedy games against random play" in out
