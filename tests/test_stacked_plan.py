"""Stacked PPO updates reached from the plan (issue 36): ``learner.stack_same_shaped`` groups
same-config PPO policies into one fragment, those whose batches fill after the same rollout
reach the learner in one call, and the learner updates them as one vmapped model; the result
equals the policies updated one by one on the same batches (the learner-level equivalence is
``tests/test_learner.py::test_stacked_update_equals_one_by_one``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from league.algos import make_algorithm
from league.algos.compose import build_multi_policy_plan, stack_groups
from league.batch import Columns as C
from league.batch import MultiAgentBatch, SampleBatch
from league.config import parse_run_config
from league.envs.base import AgentSpec
from league.flow import ConcatPolicyBatches, LocalIterator, PlanMetrics
from league.learn import Learner
from league.trainer import Trainer

BOARD = AgentSpec(obs_shape=(3, 3, 2), num_actions=9, has_action_mask=True)
PPO_SMALL = {"model": "mlp", "model_kwargs": {"hidden": [16]}, "train_batch_size": 48, "minibatch_size": 16, "num_epochs": 2}


def _rows(n: int, seed: int) -> SampleBatch:
    rng = np.random.default_rng(seed)
    mask = (rng.random((n, BOARD.num_actions)) < 0.7).astype(np.float32)
    mask[np.arange(n), rng.integers(0, BOARD.num_actions, n)] = 1.0
    return SampleBatch(
        {
            C.OBS: rng.normal(size=(n, *BOARD.obs_shape)).astype(np.float32),
            C.ACTIONS: np.array([rng.choice(np.flatnonzero(m)) for m in mask], dtype=np.int64),
            C.ACTION_MASK: mask,
            C.ACTION_LOGP: np.log(1.0 / mask.sum(1)).astype(np.float32),
            C.VF_PREDS: rng.normal(size=n).astype(np.float32),
            C.ADVANTAGES: rng.normal(size=n).astype(np.float32),
            C.VALUE_TARGETS: rng.normal(size=n).astype(np.float32),
        }
    )


class _Receiver:
    """A sampler as BroadcastWeights sees one."""

    def set_weights(self, weights: Any) -> None:
        self.weights = weights


def test_concat_policy_batches_outputs_each_policy_when_full_and_cuts_those_full_together():
    op = ConcatPolicyBatches(["a", "b", "c"], min_batch_size=10)
    metrics = PlanMetrics()
    assert op(MultiAgentBatch({"a": _rows(6, 0), "b": _rows(4, 1)}, 5), metrics) == []
    (out,) = op(MultiAgentBatch({"a": _rows(7, 2), "b": _rows(3, 3), "c": _rows(2, 4)}, 5), metrics)
    # a (13 rows) is full alone: all of its rows, env steps since its last output
    assert out.policy_ids() == ["a"] and len(out["a"]) == 13 and out.env_steps == 10
    (out,) = op(MultiAgentBatch({"a": _rows(12, 5), "b": _rows(5, 6), "c": _rows(9, 7)}, 5), metrics)
    # a (12), b (12) and c (11) full together: cut to the shortest, the earliest rows kept
    assert out.policy_ids() == ["a", "b", "c"] and {len(out[p]) for p in "abc"} == {11}
    assert metrics.counters["num_agent_steps_cut_to_stack"] == 2
    assert out.env_steps == 5 + 15 + 15
    np.testing.assert_array_equal(out["b"][C.OBS][:4], _rows(4, 1)[C.OBS])
    assert op(MultiAgentBatch({"b": _rows(9, 8)}, 5), metrics) == []  # buffers emptied on output


def test_stack_groups_follow_the_algorithms_stack_key():
    algos = {
        "main": make_algorithm("ppo", BOARD, {**PPO_SMALL, "lr": 1e-3}),
        "dqn": make_algorithm("dqn", BOARD, {"model": "mlp"}),
        "exploiter": make_algorithm("ppo", BOARD, {**PPO_SMALL, "lr": 3e-4}),  # only lr differs: one group
        "other": make_algorithm("ppo", BOARD, {**PPO_SMALL, "clip_param": 0.3}),
    }
    assert stack_groups(algos) == [["main", "exploiter"], ["dqn"], ["other"]]


def _train(stack: bool, items: list[MultiAgentBatch]) -> tuple[dict[str, Any], PlanMetrics, list[dict[str, Any]]]:
    algos = {f"p{i}": make_algorithm("ppo", BOARD, {**PPO_SMALL, "lr": lr}) for i, lr in enumerate((1e-3, 3e-4, 2e-3))}
    learner = Learner(seed=3, stack_same_shaped=stack)
    for pid, algo in algos.items():
        learner.add_policy(pid, algo)
    plan = build_multi_policy_plan(LocalIterator.from_items(items), learner, [_Receiver()], algos, stack=True)
    stats = [dict(result.stats) for result in plan]
    return learner.get_weights(), plan.metrics, stats


def test_the_stacked_plan_equals_the_same_plan_updating_one_by_one():
    # p0 and p1 fill together (one stacked update of two), p2 later alone, then all three together.
    sizes = [{"p0": 50, "p1": 50, "p2": 10}, {"p0": 10, "p1": 10, "p2": 40}, {"p0": 40, "p1": 45, "p2": 50}]
    items = [MultiAgentBatch({p: _rows(n, 10 * i + j) for j, (p, n) in enumerate(s.items())}, 64) for i, s in enumerate(sizes)]
    w_one, m_one, _ = _train(False, items)
    w_stacked, m_stacked, stats = _train(True, items)
    for pid in w_one:
        for name in w_one[pid]:
            np.testing.assert_allclose(w_stacked[pid][name], w_one[pid][name], rtol=1e-4, atol=1e-5, err_msg=f"{pid}.{name}")
    assert m_stacked.counters["num_stacked_updates"] == 2 + 3 and m_one.counters["num_stacked_updates"] == 0
    assert m_stacked.counters["num_stacked_updates/p2"] == 1
    assert [sorted(s) for s in stats] == [["p0", "p1"], ["p2"], ["p0", "p1", "p2"]]
    assert stats[0]["p0"]["stack_size"] == 2.0 and "stack_size" not in stats[1]["p2"]
    assert m_stacked.counters["num_agent_steps_cut_to_stack"] == 5  # p1's 55 rows cut to 50
    for counter in ("num_agent_steps_cut_to_stack", "num_agent_steps_trained", "num_env_steps_trained"):
        assert m_stacked.counters[counter] == m_one.counters[counter], counter


def _connect_four_rows(n: int, seed: int) -> SampleBatch:
    """Real connect-four positions (the distilled search reads them) with random PPO targets."""
    from league.population.yardstick import random_play_positions

    obs, mask = random_play_positions("connect_four", games=n // 8 + 1, seed=seed)
    rows = _rows(n, seed)
    mask = mask[:n].astype(np.float32)
    rows[C.OBS], rows[C.ACTION_MASK] = obs[:n].astype(np.float32), mask
    rows[C.ACTIONS] = np.array([np.flatnonzero(m)[seed % int(m.sum())] for m in mask], dtype=np.int64)
    rows[C.ACTION_LOGP] = np.log(1.0 / mask.sum(1)).astype(np.float32)
    return rows


def test_the_default_connect_four_model_stacks_and_equals_one_by_one():
    # The default job's PPO (its preset): flip_lr symmetry, threat planes, the distilled depth-4 search.
    from league.cli.train import composed_values

    import league.games  # noqa: F401  (the plug-ins: planes and search)

    params = {**composed_values()["algo"]["params"], "minibatch_size": 16, "num_epochs": 2}
    assert params["model_kwargs"]["input_features"] and params["aux_loss"] == "connect_four_search"
    spec = AgentSpec(obs_shape=(6, 7, 2), num_actions=7, has_action_mask=True)
    batch = MultiAgentBatch({f"p{i}": _connect_four_rows(40, i) for i in range(3)}, 40)
    out = {}
    for stack in (False, True):
        learner = Learner(seed=5, stack_same_shaped=stack)
        for i, lr in enumerate((1e-3, 5e-4, 2e-3)):
            learner.add_policy(f"p{i}", make_algorithm("ppo", spec, {**params, "lr": lr}))
        stats = [learner.learn_on_batch(batch) for _ in range(2)]
        out[stack] = (learner.get_weights(), stats)
    (w0, s0), (w1, s1) = out[False], out[True]
    assert all(s["stack_size"] == 3.0 for s in s1[0].values()) and "stack_size" not in s0[0]["p0"]
    for pid in w0:
        for name in w0[pid]:
            np.testing.assert_allclose(w1[pid][name], w0[pid][name], rtol=1e-4, atol=1e-5, err_msg=f"{pid}.{name}")
    for a, b in zip(s0, s1):
        for pid in a:
            assert set(a[pid]) == set(b[pid]) - {"stack_size"}
            for key in a[pid]:
                assert b[pid][key] == pytest.approx(a[pid][key], rel=1e-4, abs=1e-5), (pid, key)


def _alphastar(tmp_path: Path, stack: bool) -> list[dict[str, Any]]:
    values = {
        "env": {"name": "tictactoe"},
        "algo": {"name": "ppo", "params": {"train_batch_size": 32, "minibatch_size": 16, "num_epochs": 1}},
        "league": {"recipe": "alphastar", "num_main_exploiters": 1, "num_league_exploiters": 1, "snapshot_steps": 200, "fixed_opponents": {}},
        "learner": {"stack_same_shaped": stack},
        "sampler": {"num_samplers": 1, "num_envs": 8, "fragment_length": 16, "mode": "bulk_sync", "remote": False},
        "iteration": {"min_env_steps": 128},
        "eval": {"interval": 0},
        "stop": {"iterations": 3, "time_s": 0, "env_steps": 0},
        "checkpoint": {"interval": 0},
        "logging": {"tensorboard": False},
        "verbose": False,
    }
    trainer = Trainer(parse_run_config(values), tmp_path)
    try:
        trainer.train()
    finally:
        trainer.close()
    return [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("stack", [True, False])
def test_an_alphastar_league_train_run_takes_the_stacked_path_when_asked(tmp_path, stack):
    counters = _alphastar(tmp_path, stack)[-1]["counters"]
    learning = ("main", "main_exploiter", "league_exploiter")
    assert all(counters[f"num_learner_updates/{pid}"] > 0 for pid in learning), counters
    if stack:
        assert counters["num_stacked_updates"] >= 2, counters
    else:
        assert counters.get("num_stacked_updates", 0) == 0, counters


def test_bench_learner_stacks_the_default_model_and_the_record_reads_it():
    # benchmarks/bench_learner.py --models default (what scripts/gpu_check.sh measures as
    # stacked_speedup): every policy took the stacked path; the GPU record prefers that model.
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    cmd = [sys.executable, str(root / "benchmarks" / "bench_learner.py"), "--ks", "2", "--models", "default",
           "--repeats", "1", "--rows", "32", "--minibatch", "16", "--device", "cpu"]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=True)
    (figure,) = [json.loads(line) for line in out.stdout.splitlines()]
    assert figure["model"] == "default" and figure["K"] == 2 and figure["stacked_policies"] == 2
    assert figure["separate"] > 0 and figure["shared_stacked"] > 0
    sys.path.insert(0, str(root / "benchmarks"))
    import bench_inference

    conv = {**figure, "model": "conv", "speedup_stacked_vs_separate": 9.0}
    record = bench_inference.gpu_record([conv, figure], "cpu", "abc", "today")
    assert (record["stacked_model"], record["stacked_speedup"]) == ("default", figure["speedup_stacked_vs_separate"])
